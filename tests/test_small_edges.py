"""Small edges, each a clear error or a correct value: cutoffs past int64, non-finite gains in
``nDCG(gains=...)``, bool values, and which tie order ``oblivious="ranx"`` means for a file."""
import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tieaware
from tieaware.errors import UnknownMetricError
from tieaware.metrics import MAX_CUTOFF, parse_metric

#: one family with a cutoff in each syntax
CUTOFF_SYNTAXES = ["ndcg@{k}", "ndcg_cut.{k}", "ndcg_cut_{k}", "nDCG@{k}", "P@{k}", "P.{k}", "P_{k}",
                   "recall@{k}", "map@{k}", "RR@{k}", "ERR@{k}", "Judged@{k}", "nDCG(gains={{0:0,1:2}})@{k}",
                   "ndcg@{k}-l2", "P(rel=2)@{k}"]


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(CUTOFF_SYNTAXES), st.integers(MAX_CUTOFF + 1, 10 ** 40))
def test_a_cutoff_past_2_to_the_53_is_a_clear_error(syntax, k):
    name = syntax.format(k=k)
    with pytest.raises(UnknownMetricError, match=rf"cutoff k must be at most 2\^53 \({MAX_CUTOFF}\), got {k}"):
        parse_metric(name)
    with pytest.raises(UnknownMetricError):
        tieaware.evaluate({"q": {"a": 1}}, {"q": {"a": 1.0}}, name)


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(CUTOFF_SYNTAXES), st.one_of(st.integers(1, 10 ** 6), st.integers(MAX_CUTOFF - 10, MAX_CUTOFF)))
def test_cutoffs_up_to_2_to_the_53_are_read_as_they_are(syntax, k):
    assert parse_metric(syntax.format(k=k)).k == k


def test_the_largest_cutoff_gives_the_exact_value():
    """P@k divides by k: at k = 2^53 the value is that of a cutoff no run reaches, 1/k."""
    assert float(tieaware.evaluate({"q": {"a": 1}}, {"q": {"a": 1.0}}, f"P@{MAX_CUTOFF}")) == 1 / MAX_CUTOFF


@pytest.mark.parametrize("bad", ["nan", "inf", "-inf", "NaN", "1e400"])
@pytest.mark.parametrize("where", ["gain", "grade"])
def test_a_non_finite_gain_or_grade_in_a_gain_map_is_refused(bad, where):
    entry = f"1:{bad}" if where == "gain" else f"{bad}:1"
    name = f"nDCG(gains={{0:0,{entry},2:3}})@10"
    with pytest.raises(UnknownMetricError, match=f"gains entry '{entry}' is not integer_grade:gain with a finite gain"):
        tieaware.evaluate({"q": {"a": 1}}, {"q": {"a": 1.0}}, name)


# ---------------------------------------------------------------- one value rule
def _containers(table: dict, kind: str, tmp_path):
    """The table in each container, its values kept as they are (bools stay bools)."""
    import json

    import ir_measures
    import pandas as pd

    rows = [(q, d, v) for q, docs in table.items() for d, v in docs.items()]
    value = "score" if kind == "run" else "relevance"
    make = ir_measures.ScoredDoc if kind == "run" else ir_measures.Qrel
    yield "dict", table
    yield "records", [make(q, d, v) for q, d, v in rows]
    for dtype in ("bool", "boolean", "object"):
        q, d, v = zip(*rows)
        yield f"DataFrame {dtype}", pd.DataFrame({"query_id": q, "doc_id": d, value: pd.Series(v, dtype=dtype)})
    path = tmp_path / f"{kind}.json"
    path.write_text(json.dumps(table))
    yield "JSON file", path


BOOL_TABLES = st.dictionaries(st.sampled_from(["q1", "q2", "q3"]),
                              st.dictionaries(st.sampled_from("abcdefgh"), st.booleans(), min_size=1),
                              min_size=1)


@settings(max_examples=15, deadline=None)
@given(BOOL_TABLES, st.data())
def test_bools_are_0_and_1_in_every_container(tmp_path_factory, run, data):
    """Scores and grades given as bools read as the numbers 0 and 1 wherever they come from."""
    tmp_path = tmp_path_factory.mktemp("bools")
    qrels = {q: {d: data.draw(st.booleans()) for d in docs} | {"z": True} for q, docs in run.items()}
    as_numbers = tieaware.evaluate({q: {d: int(g) for d, g in docs.items()} for q, docs in qrels.items()},
                                   {q: {d: float(s) for d, s in docs.items()} for q, docs in run.items()},
                                   ["ndcg@3", "map", "P@2"], oblivious="input")
    for name, container in _containers(run, "run", tmp_path):
        got = tieaware.evaluate(qrels, container, ["ndcg@3", "map", "P@2"], oblivious="input")
        for metric in as_numbers:
            assert got[metric].per_query.equals(as_numbers[metric].per_query), (name, metric)
    for name, container in _containers(qrels, "qrels", tmp_path):
        got = tieaware.evaluate(container, run, ["ndcg@3", "map", "P@2"], oblivious="input")
        for metric in as_numbers:
            assert got[metric].per_query.equals(as_numbers[metric].per_query), (name, metric)


def test_a_missing_bool_is_not_a_number():
    import pandas as pd

    frame = pd.DataFrame({"query_id": ["q", "q"], "doc_id": ["a", "b"], "score": pd.Series([True, None],
                                                                                            dtype="boolean")})
    with pytest.raises(tieaware.TieawareError, match="query 'q', document 'b' is not a number: <NA>"):
        tieaware.evaluate({"q": {"a": 1}}, frame, "ndcg")


# ------------------------------------------- oblivious="ranx" for a file or DataFrame
#: metrics whose values ranx and tieaware compute alike (tests/test_parity.py)
RANX_METRICS = ["ndcg@5", "ndcg@10", "precision@3", "recall@5", "mrr", "map", "map@5", "hits@3", "r-precision"]


def _ranx_values(ranx, qrels: dict, run, metrics) -> dict:
    """{metric: {query: value}} of ranx.evaluate on a Run ranx built."""
    ranx_qrels = ranx.Qrels(qrels)
    values = ranx.evaluate(ranx_qrels, run, metrics, return_mean=False, save_results_in_run=False)
    return {m: dict(zip(run.keys(), values[m])) for m in metrics}


LINES = st.lists(st.tuples(st.sampled_from(["q1", "q2", "q3"]), st.integers(0, 14), st.sampled_from([0.5, 0.25, 1.0]),
                           st.integers(0, 2)), min_size=3, max_size=60, unique_by=lambda line: line[:2])


@settings(max_examples=40, deadline=None)
@given(LINES)
def test_oblivious_ranx_for_a_path_or_dataframe_is_ranx_reading_it(tmp_path_factory, lines):
    """A ranx user reads a run file with Run.from_file (a DataFrame with Run.from_df), which orders
    ties unlike ranx.evaluate on a dict: that Run's order is what oblivious="ranx" means for them."""
    ranx = pytest.importorskip("ranx")
    import pandas as pd

    path = tmp_path_factory.mktemp("ranx") / "run.txt"
    path.write_text("".join(f"{q} Q0 d{d} 0 {s} tag\n" for q, d, s, _ in lines))
    qrels = {}
    for q, d, _, grade in lines:
        qrels.setdefault(q, {})[f"d{d}"] = grade
    for q in qrels:
        qrels[q]["unretrieved"] = 1  # every query has a relevant document
    theirs = _ranx_values(ranx, qrels, ranx.Run.from_file(str(path), kind="trec"), RANX_METRICS)
    frame = pd.DataFrame({"q_id": pd.Series([q for q, *_ in lines], dtype=object),  # as Run.from_df wants
                          "doc_id": pd.Series([f"d{d}" for _, d, *_ in lines], dtype=object),
                          "score": [s for _, _, s, _ in lines]})
    from_df = _ranx_values(ranx, qrels, ranx.Run.from_df(frame), RANX_METRICS)
    for run, want in ((path, theirs), (str(path), theirs), (frame, from_df)):
        ours = tieaware.evaluate(qrels, run, RANX_METRICS, oblivious="ranx")
        for metric in RANX_METRICS:
            got = ours[metric].per_query["oblivious"].to_dict()
            assert got == pytest.approx(want[metric], abs=1e-12), (type(run).__name__, metric)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a file not grouped by query is partitioned first
        streamed = tieaware.evaluate(qrels, path, RANX_METRICS, oblivious="ranx", stream=1)
    for metric in RANX_METRICS:
        assert streamed[metric].per_query["oblivious"].to_dict() == pytest.approx(theirs[metric], abs=1e-12)
