"""Inputs as IR users already have them: ir_measures / ir_datasets records, ir_measures measure
objects, PyTerrier DataFrames, integer ids, MTEB predictions, JSON files; and docs/ecosystem.md's
examples run as written."""
import json
import re
from pathlib import Path

import pandas as pd
import pytest

import tieaware
from tieaware.datasets import cranfield
from tieaware.errors import InputError
from tieaware.inputs import load_mteb_predictions, load_qrels, load_run

ir_measures = pytest.importorskip("ir_measures")
ROOT = Path(__file__).resolve().parents[1]
CRANFIELD = cranfield()


def _dict_qrels():
    return tieaware.read_trec_qrels(CRANFIELD.qrels)


def _dict_run(name="bf16"):
    return tieaware.read_trec_run(CRANFIELD.runs[name])


def _tie_free(run: dict) -> dict:
    """The run with each query's scores replaced by distinct ones in trec_eval's order."""
    out = {}
    for qid, docs in run.items():
        ranked = sorted(docs.items(), key=lambda item: (item[1], item[0]), reverse=True)
        out[qid] = {doc: float(len(ranked) - i) for i, (doc, _) in enumerate(ranked)}
    return out


def _qrel_records(qrels: dict):
    return [ir_measures.Qrel(q, d, r) for q, docs in qrels.items() for d, r in docs.items()]


def _run_records(run: dict):
    return [ir_measures.ScoredDoc(q, d, s) for q, docs in run.items() for d, s in docs.items()]


def _assert_same_report(a, b):
    assert list(a) == list(b)
    for name in a:
        pd.testing.assert_frame_equal(a[name].per_query, b[name].per_query)


def _raises_input_error(call, builtin=ValueError, match=None):
    """The error is a TieawareError and the built-in it stands for."""
    with pytest.raises(tieaware.TieawareError, match=match) as caught:
        call()
    assert isinstance(caught.value, InputError) and isinstance(caught.value, builtin)
    return str(caught.value)


METRICS = ["ndcg@10", "map", "mrr@10", "precision@5"]


# ------------------------------------------------------------ 1. records
def test_ir_measures_records_give_the_dict_numbers():
    qrels, run = _dict_qrels(), _dict_run()
    expected = tieaware.evaluate(qrels, run, METRICS)
    from_lists = tieaware.evaluate(_qrel_records(qrels), _run_records(run), METRICS)
    from_generators = tieaware.evaluate((r for r in _qrel_records(qrels)), iter(_run_records(run)), METRICS)
    _assert_same_report(from_lists, expected)
    _assert_same_report(from_generators, expected)


def test_ir_measures_readers_are_read_once():
    """ir_measures.read_trec_qrels / read_trec_run are generators: each record is read once."""
    reads = 0

    def counted(records):
        nonlocal reads
        for record in records:
            reads += 1
            yield record

    qrels = ir_measures.read_trec_qrels(str(CRANFIELD.qrels))
    run = ir_measures.read_trec_run(str(CRANFIELD.runs["bf16"]))
    report = tieaware.evaluate(counted(qrels), counted(run), METRICS)
    dict_qrels, dict_run = _dict_qrels(), _dict_run()
    assert reads == sum(map(len, dict_qrels.values())) + sum(map(len, dict_run.values()))
    _assert_same_report(report, tieaware.evaluate(dict_qrels, dict_run, METRICS))


def test_ir_datasets_namedtuples_are_records():
    from ir_datasets.formats import GenericScoredDoc, TrecQrel

    qrels = [TrecQrel("1", "a", 2, "0"), TrecQrel("1", "b", 0, "0")]
    run = [GenericScoredDoc("1", "a", 0.5), GenericScoredDoc("1", "b", 0.5)]
    assert load_qrels(qrels) == {"1": {"a": 2, "b": 0}}
    assert load_run(run) == {"1": {"a": 0.5, "b": 0.5}}
    assert tieaware.evaluate(qrels, run, "mrr").max == 1.0


def test_integer_ids_in_records_become_strings():
    assert load_run([ir_measures.ScoredDoc(1, 7, 0.5)]) == {"1": {"7": 0.5}}


def test_empty_records_are_an_empty_table():
    assert load_run([]) == {} and load_qrels(iter(())) == {}


@pytest.mark.parametrize("kind,records,match", [
    ("run", [ir_measures.ScoredDoc("1", "a", 0.5), ir_measures.ScoredDoc("1", "a", 0.2)],
     r"run record 1: document 'a' appears twice for query '1'"),
    ("qrels", [ir_measures.Qrel("1", "a", 1), ir_measures.Qrel("1", "a", 2)],
     r"qrels record 1: document 'a' appears twice for query '1'"),
    ("run", [ir_measures.Qrel("1", "a", 1)], r"run record 0 is a Qrel.*were qrels records given as the run"),
    ("qrels", [ir_measures.ScoredDoc("1", "a", 0.5)], r"qrels record 0 is a ScoredDoc.*were run records given"),
    ("run", [("1", "a", 0.5)], r"run record 0 is a tuple.*query_id, doc_id and score"),
    ("run", [ir_measures.ScoredDoc(1.5, "a", 0.5)], r"query id 1.5 is a float"),
])
def test_bad_records_are_named(kind, records, match):
    load = load_run if kind == "run" else load_qrels
    _raises_input_error(lambda: load(iter(records)), match=match)


def test_bad_record_values_raise_what_the_dict_path_raises():
    qrels = [ir_measures.Qrel("1", "a", 1)]
    for score in (float("nan"), "x", None):
        run_records = [ir_measures.ScoredDoc("1", "a", score)]
        from_dict = _raises_input_error(lambda s=score: tieaware.evaluate({"1": {"a": 1}}, {"1": {"a": s}}, "mrr"))
        assert _raises_input_error(lambda r=run_records: tieaware.evaluate(qrels, r, "mrr")) == from_dict


def test_unreadable_object_names_records_among_the_choices():
    message = _raises_input_error(lambda: load_run(3.5))
    assert "ir_measures/ir_datasets records (query_id, doc_id, score)" in message


# ------------------------------------------------------- 2. measure objects
MEASURES = [ir_measures.nDCG @ 10, ir_measures.P(rel=2) @ 5, ir_measures.AP, ir_measures.RR @ 10,
            ir_measures.R @ 100, ir_measures.Success @ 3, ir_measures.Judged @ 10, ir_measures.Rprec,
            ir_measures.Bpref, ir_measures.AP(rel=2)]


def test_measure_objects_are_metric_names_keyed_by_their_str():
    qrels, run = _dict_qrels(), _tie_free(_dict_run("fp32"))
    report = tieaware.evaluate(qrels, run, MEASURES)
    assert list(report) == [str(m) for m in MEASURES]
    theirs = ir_measures.calc_aggregate(MEASURES, qrels, run)
    for measure in MEASURES:
        result = report[str(measure)]
        assert result.expected == pytest.approx(theirs[measure], abs=1e-9), measure
        assert result.min == result.max == result.expected  # tie-free: one ordering
    single = tieaware.evaluate(qrels, run, ir_measures.nDCG @ 10)
    assert isinstance(single, tieaware.MetricResult) and float(single) == report["nDCG@10"].expected


def test_measure_objects_with_ties_reproduce_ir_measures_under_its_own_order():
    qrels, run = _dict_qrels(), _dict_run("bf16")
    measures = [ir_measures.nDCG @ 10, ir_measures.RR @ 10, ir_measures.P(rel=2) @ 5, ir_measures.AP]
    report = tieaware.evaluate(qrels, run, measures, oblivious="ir_measures")
    theirs = ir_measures.calc_aggregate(measures, qrels, run)
    for measure in measures:
        assert report[str(measure)].oblivious == pytest.approx(theirs[measure], abs=1e-9), measure
    assert report["RR@10"].min < report["RR@10"].max  # the bf16 run's ties do matter here


def test_unsupported_measure_object_is_an_unknown_metric():
    with pytest.raises(tieaware.UnknownMetricError, match="infAP"):
        tieaware.evaluate({"1": {"a": 1}}, {"1": {"a": 0.5}}, [ir_measures.infAP])


# ------------------------------------------------------------ 3. PyTerrier
def test_pyterrier_results_and_qrels_frames():
    """PyTerrier results carry qid, docid (Terrier's internal number), docno, rank, score; its qrels
    qid, docno, label. docno is the document id, docid is not."""
    qrels, run = _dict_qrels(), _dict_run()
    results = pd.DataFrame([(q, i, d, s) for q, docs in run.items() for i, (d, s) in enumerate(docs.items())],
                           columns=["qid", "docid", "docno", "score"])
    results["rank"] = results.groupby("qid")["score"].rank(ascending=False, method="first").astype(int) - 1
    results["query"] = "some text"
    pt_qrels = pd.DataFrame([(q, d, g) for q, docs in qrels.items() for d, g in docs.items()],
                            columns=["qid", "docno", "label"])
    _assert_same_report(tieaware.evaluate(pt_qrels, results, METRICS), tieaware.evaluate(qrels, run, METRICS))


def test_dataframe_without_a_value_column_is_named():
    frame = pd.DataFrame({"qid": ["1"], "docno": ["a"], "rank": [0]})
    _raises_input_error(lambda: load_run(frame), match=r"value column \(score\)")


# ------------------------------------------------------ 4. integer ids
def test_integer_query_ids_on_one_side_match_strings_on_the_other():
    as_strings = tieaware.evaluate({"1": {"7": 1, "8": 0}}, {"1": {"7": 0.2, "8": 0.9}}, "mrr")
    for qrels, run in [({"1": {"7": 1, "8": 0}}, {1: {7: 0.2, 8: 0.9}}),
                       ({1: {7: 1, 8: 0}}, {"1": {"7": 0.2, "8": 0.9}}),
                       ({1: {"7": 1, "8": 0}}, {"1": {7: 0.2, "8": 0.9}})]:
        assert float(tieaware.evaluate(qrels, run, "mrr")) == float(as_strings) == 0.5


def test_mixed_document_id_types_in_one_run_query_all_become_strings():
    """A run query whose first id is a string and a later one an int: the int still matches."""
    assert load_run({"1": {"a": 0.1, 2: 0.5}}) == {"1": {"a": 0.1, "2": 0.5}}
    assert float(tieaware.evaluate({"1": {"2": 1}}, {"1": {"a": 0.1, 2: 0.5}}, "ndcg@1")) == 1.0


def test_ids_equal_once_strings_are_an_error():
    _raises_input_error(lambda: load_run({"1": {"7": 0.1, 7: 0.5}}), match="appears twice once ids are read")
    _raises_input_error(lambda: load_qrels({1: {"a": 1}, "1": {"b": 1}}), match="appears twice once ids are read")


def test_int_ids_do_not_mutate_the_caller_dict():
    run = {1: {7: 0.2}}
    load_run(run)
    assert run == {1: {7: 0.2}}


# ---------------------------------------------------------------- 5. MTEB
PREDICTIONS = {"mteb_model_meta": {"model_name": "org/model", "revision": "abc"},
               "default": {"test": {"1": {"a": 0.5, "b": 0.5}, "2": {"c": 0.1}}}}


def test_mteb_predictions_file_and_dict(tmp_path):
    path = tmp_path / "SciFact_predictions.json"
    path.write_text(json.dumps(PREDICTIONS))
    expected = {"1": {"a": 0.5, "b": 0.5}, "2": {"c": 0.1}}
    assert load_mteb_predictions(path) == expected
    assert tieaware.load_mteb_predictions(str(path), subset="default", split="test") == expected
    assert load_mteb_predictions(PREDICTIONS) == expected
    report = tieaware.evaluate({"1": {"a": 1}, "2": {"c": 1}}, load_mteb_predictions(path), "mrr")
    assert (report.min, report.max) == (0.75, 1.0)


def test_mteb_several_splits_need_a_choice():
    predictions = {**PREDICTIONS, "default": {"test": {"1": {"a": 1.0}}, "dev": {"2": {"b": 1.0}}}}
    message = _raises_input_error(lambda: load_mteb_predictions(predictions), match="choose one with split=")
    assert "['dev', 'test']" in message
    assert load_mteb_predictions(predictions, split="dev") == {"2": {"b": 1.0}}
    _raises_input_error(lambda: load_mteb_predictions(predictions, split="train"), match="has no split 'train'")
    two_subsets = {**predictions, "fr": {"test": {}}}
    _raises_input_error(lambda: load_mteb_predictions(two_subsets, split="test"), match="2 subsets")


@pytest.mark.parametrize("bad,match", [
    ({"default": {"test": {}}}, "expected MTEB's"),
    ([1, 2], "got list"),
    ({"mteb_model_meta": {}, "default": [1]}, "subset 'default' maps to list"),
    ({"mteb_model_meta": {}, "default": {"test": {"1": {"a": "high"}}}}, r"document 'a' maps to 'high'"),
    ({"mteb_model_meta": {}, "default": {"test": {"1": [0.5]}}}, r"query '1' maps to list"),
])
def test_mteb_wrong_structure_is_named(bad, match):
    _raises_input_error(lambda: load_mteb_predictions(bad), match=match)


def test_mteb_file_that_is_missing_or_not_json(tmp_path):
    _raises_input_error(lambda: load_mteb_predictions(tmp_path / "none.json"), builtin=FileNotFoundError)
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    _raises_input_error(lambda: load_mteb_predictions(broken), match="not valid JSON")


def test_mteb_predictions_given_as_a_run_point_to_the_loader(tmp_path):
    path = tmp_path / "SciFact_predictions.json"
    path.write_text(json.dumps(PREDICTIONS))
    for run in (PREDICTIONS, path):
        message = _raises_input_error(lambda r=run: tieaware.evaluate({"1": {"a": 1}}, r, "mrr"),
                                      match="holds MTEB predictions")
        assert "load_mteb_predictions" in message and "'default': ['test']" in message


# ------------------------------------------------------------ 6. JSON shape
@pytest.mark.parametrize("content,match", [
    ([["1", "a", 0.5]], r"is a list; a run is \{query_id: \{doc_id: score\}\}"),
    ({"1": [0.5]}, r"query '1' maps to list; a run is \{query_id: \{doc_id: score\}\}"),
    ({"1": {"a": "0.5"}}, r"query '1', document 'a' maps to '0.5' \(str\); a run is"),
    ({"1": {"a": None}}, r"document 'a' maps to None"),
])
def test_json_run_shape_is_checked(tmp_path, content, match):
    path = tmp_path / "run.json"
    path.write_text(json.dumps(content))
    message = _raises_input_error(lambda: load_run(path), match=match)
    assert str(path) in message


def test_json_qrels_shape_is_checked(tmp_path):
    path = tmp_path / "qrels.json"
    path.write_text(json.dumps({"1": {"a": "relevant"}}))
    _raises_input_error(lambda: load_qrels(path), match=r"qrels are \{query_id: \{doc_id: relevance\}\}")
    path.write_text(json.dumps({"1": {"a": 2, "b": 0.5}}))
    assert load_qrels(path) == {"1": {"a": 2, "b": 0.5}}


# ------------------------------------------------------ docs/ecosystem.md
def _doc_blocks():
    text = (ROOT / "docs" / "ecosystem.md").read_text(encoding="utf-8")
    return re.findall(r"^## (.+?)$|^```python\n(.*?)^```", text, re.M | re.S)


def _examples():
    section, out = None, []
    for heading, code in _doc_blocks():
        if heading:
            section = heading
        else:
            out.append(pytest.param(code, id=f"{section}-{len(out)}"))
    return out


@pytest.mark.parametrize("code", _examples())
def test_docs_ecosystem_examples_run(code, tmp_path, monkeypatch):
    """Each example runs as written, in a fresh namespace and an empty folder."""
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "docs/ecosystem.md", "exec"), {"__name__": "__main__"})
