"""BEIR's convention (`ignore_identical_ids`): checked against BEIR's own EvaluateRetrieval.evaluate."""
import copy
import json

import numpy as np
import pytest
import ranx
from beir.retrieval.evaluation import EvaluateRetrieval
from builders import unicode_keyed_run

import tieaware
from tieaware.cli import main
from tieaware.datasets import cranfield
from tieaware.inputs import without_identical_ids, write_trec_run
from tieaware.readers.typed_dicts import holds_own_ids

KS = [1, 3, 5, 10, 100]
FAMILIES = {"NDCG": "ndcg_cut", "MAP": "map_cut", "Recall": "recall", "P": "P"}
FILES = cranfield()
QRELS = tieaware.read_trec_qrels(FILES.qrels)


def beir(qrels: dict, run: dict, ignore: bool) -> dict:
    """BEIR's four tables as {trec_eval name: value} (BEIR rounds to 5 decimals), on a copy (BEIR pops)."""
    tables = EvaluateRetrieval.evaluate(qrels, copy.deepcopy(run), KS, ignore_identical_ids=ignore)
    out = {}
    for table in tables:
        for key, value in table.items():
            family, k = key.split("@")
            out[f"{FAMILIES[family]}.{k}"] = value
    return out


@pytest.mark.parametrize("tag", ["fp32", "bf16"])
@pytest.mark.parametrize("ignore", [True, False])
def test_equal_to_beirs_numbers_on_cranfield(tag, ignore):
    run = tieaware.read_trec_run(FILES.runs[tag])
    assert sum(q in docs for q, docs in run.items()) == 12  # Cranfield's ids overlap: the convention matters
    theirs = beir(QRELS, run, ignore)
    mine = tieaware.evaluate(QRELS, run, list(theirs), ignore_identical_ids=ignore)
    for name, value in theirs.items():  # BEIR runs pytrec_eval: trec_eval's tie order; it rounds to 5 decimals
        assert abs(mine[name].oblivious - value) <= 5e-6 + 1e-12, name
    if ignore:  # the convention moves the numbers here, so the test above could fail
        plain = tieaware.evaluate(QRELS, run, "ndcg_cut.100")
        assert plain.oblivious != mine["ndcg_cut.100"].oblivious


TIED_QRELS = {"q1": {"q1": 2, "a": 1, "b": 1}, "q2": {"c": 1}}
TIED_RUN = {"q1": {"q1": 0.9, "a": 0.5, "b": 0.5, "c": 0.5}, "q2": {"q2": 0.7, "c": 0.7, "a": 0.1}}
HAND_FILTERED = {"q1": {"a": 0.5, "b": 0.5, "c": 0.5}, "q2": {"c": 0.7, "a": 0.1}}


@pytest.mark.parametrize("metric", ["ndcg@2", "mrr", "map", "P@1", "recall@2"])
def test_same_as_the_run_filtered_by_hand_and_the_caller_run_untouched(metric):
    run = copy.deepcopy(TIED_RUN)
    mine = tieaware.evaluate(TIED_QRELS, run, metric, ignore_identical_ids=True)
    by_hand = tieaware.evaluate(TIED_QRELS, HAND_FILTERED, metric)
    assert mine.per_query.equals(by_hand.per_query)
    assert run == TIED_RUN  # BEIR pops from the caller's dict; we do not
    plain = tieaware.evaluate(TIED_QRELS, TIED_RUN, metric)
    assert plain.per_query.loc["q2", "expected"] != mine.per_query.loc["q2", "expected"] or metric == "recall@2"
    beir_copy = copy.deepcopy(TIED_RUN)
    EvaluateRetrieval.evaluate(TIED_QRELS, beir_copy, [1])
    assert beir_copy == HAND_FILTERED  # what BEIR does to the dict it is given


def test_ranx_run_keeps_ranx_order_and_is_not_changed():
    qrels = ranx.Qrels(TIED_QRELS)
    run = ranx.Run(TIED_RUN, name="mine")
    popped = ranx.Run(TIED_RUN, name="popped")
    for q in ("q1", "q2"):
        popped.run[q].pop(q)  # what BEIR would do to the Run's own tables
    before = run.to_dict()
    for metric in ("ndcg@2", "mrr", "map"):
        mine = tieaware.evaluate(qrels, run, metric, oblivious="ranx", ignore_identical_ids=True)
        theirs = ranx.evaluate(qrels, popped, metric, save_results_in_run=False)
        assert mine.oblivious == pytest.approx(theirs, abs=1e-12)
        assert mine.per_query.equals(tieaware.evaluate(qrels, popped, metric, oblivious="ranx").per_query)
    assert run.to_dict() == before
    filtered = without_identical_ids(run)
    assert filtered.name == "mine" and filtered.to_dict() == HAND_FILTERED
    untouched = ranx.Run(HAND_FILTERED)
    assert without_identical_ids(untouched) is untouched


@pytest.mark.parametrize("build", [ranx.Run, unicode_keyed_run])
def test_a_ranx_run_holds_own_ids_exactly_where_its_dict_does(build):
    """`holds_own_ids`, which spares the kernel compiled per dict type, against the dict: ids of 0-3 code
    points (non-ASCII and empty ids too; a 3-point id in each query keeps one width), the same ids for
    queries and documents so that both answers come up."""
    rng = np.random.default_rng(5)
    alphabet = ["q", "é", "\U0001d11e"]
    answers = set()
    for _ in range(60):
        run = {}
        for _ in range(rng.integers(1, 4)):
            docs = {"".join(rng.choice(alphabet, rng.integers(0, 4))): 0.5 for _ in range(rng.integers(1, 5))}
            run["".join(rng.choice(alphabet, rng.integers(0, 3)))] = docs | {"ééé": 0.25}
        expected = any(q in docs for q, docs in run.items())
        assert holds_own_ids(build(run).run) == expected, run
        answers.add(expected)
    assert answers == {True, False}


def test_a_ranx_run_without_own_ids_comes_back_without_the_per_type_kernel(monkeypatch):
    from tieaware.readers import typed_dicts

    def refuse(td):
        raise AssertionError("without_own_ids compiles for each dict type: this run needs no copy")

    monkeypatch.setattr(typed_dicts, "without_own_ids", refuse)
    run = ranx.Run(HAND_FILTERED)
    assert without_identical_ids(run) is run
    assert tieaware.evaluate(TIED_QRELS, run, "mrr", ignore_identical_ids=True).per_query.equals(
        tieaware.evaluate(TIED_QRELS, run, "mrr").per_query)


def test_stream_and_compare_follow_the_option(tmp_path):
    path = tmp_path / "run.trec"
    with open(path, "w") as handle:
        write_trec_run(TIED_RUN, "tied", handle)
    expected = tieaware.evaluate(TIED_QRELS, HAND_FILTERED, ["ndcg@2", "mrr"])
    streamed = tieaware.evaluate(TIED_QRELS, str(path), ["ndcg@2", "mrr"], stream=1, ignore_identical_ids=True)
    for name in expected:
        assert streamed[name].per_query.equals(expected[name].per_query)
    report = tieaware.compare(TIED_QRELS, {"tied": TIED_RUN, "filtered": HAND_FILTERED}, ["ndcg@2"],
                              ignore_identical_ids=True, stat_test=None)
    assert report.results["tied"]["ndcg@2"].expected == report.results["filtered"]["ndcg@2"].expected


def test_cli_option(tmp_path, capsys):
    run_path, qrels_path = tmp_path / "run.trec", tmp_path / "qrels"
    with open(run_path, "w") as handle:
        write_trec_run(TIED_RUN, "tied", handle)
    qrels_path.write_text("".join(f"{q} 0 {d} {g}\n" for q, docs in TIED_QRELS.items() for d, g in docs.items()))
    expected = tieaware.evaluate(TIED_QRELS, HAND_FILTERED, ["ndcg@2", "map"])
    for extra in ([], ["-M", "1"], ["--stream"]):
        capsys.readouterr()
        assert main(["eval", str(qrels_path), str(run_path), "-m", "ndcg@2", "-m", "map", "-o", "json",
                     "--ignore-identical-ids", *extra]) == 0
        rows = {row["metric"]: row for row in json.loads(capsys.readouterr().out)}
        if extra == ["-M", "1"]:  # identical ids dropped first, then the top 1 kept with its tie group
            cut = {"q1": HAND_FILTERED["q1"], "q2": {"c": 0.7}}  # cut first, q1 would keep 'q1' alone: AP 0
            assert rows["map"]["expected"] == tieaware.evaluate(TIED_QRELS, cut, "map").expected > 0.5
        else:
            assert rows["ndcg@2"]["expected"] == expected["ndcg@2"].expected
            assert rows["map"]["expected"] == expected["map"].expected
    other = tmp_path / "other.trec"
    other.write_bytes(run_path.read_bytes())
    assert main(["compare", str(qrels_path), str(run_path), str(other), "-m", "ndcg@2", "-o", "json",
                 "--stat-test", "none", "--ignore-identical-ids"]) == 0
    assert json.dumps(expected["ndcg@2"].expected) in capsys.readouterr().out
