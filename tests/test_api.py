"""The evaluate() contract: drop-in behaviour, input forms, errors, no mutation."""
import copy
import json
import math
import pickle
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
import ranx

import tieaware
from tieaware import InputError, UnknownMetricError
from tieaware.metrics import parse_metric

QRELS = {"q1": {"d1": 2, "d2": 0, "d3": 1}, "q2": {"d5": 1}}
RUN = {"q1": {"d1": 0.5, "d2": 0.5, "d3": 0.2, "d4": 0.9}, "q2": {"d5": 0.3, "d6": 0.3, "d7": 0.3}}


def test_single_metric_is_a_float_with_statistics():
    res = tieaware.evaluate(QRELS, RUN, "mrr")
    # q1: d4 (unjudged) first, then {d1 relevant, d2 not} tied at ranks 2-3 -> RR in {1/2, 1/3}
    # q2: d5 among 3 tied -> RR in {1, 1/2, 1/3}
    assert res.per_query.loc["q1", "expected"] == pytest.approx((1 / 2 + 1 / 3) / 2)
    assert res.per_query.loc["q2", "expected"] == pytest.approx((1 + 1 / 2 + 1 / 3) / 3)
    assert float(res) == res.expected
    assert res.min == pytest.approx((1 / 3 + 1 / 3) / 2) and res.max == pytest.approx((1 / 2 + 1) / 2)
    assert res.range == pytest.approx(res.max - res.min)
    # trec_eval order: doc id descending inside ties -> d2 before d1, d7 d6 d5
    assert res.oblivious == pytest.approx((1 / 3 + 1 / 3) / 2)
    assert res.bias == pytest.approx(res.oblivious - res.expected)
    assert res.oblivious_order == "trec_eval"
    assert list(res.per_query.columns) == ["expected", "oblivious", "min", "max", "range", "bias", "variance"]
    assert res.n_queries_with_ties == 2


def test_float_behaviour_matches_ranx_usage():
    res = tieaware.evaluate(QRELS, RUN, "ndcg@3")
    assert f"{res:.3f}" == f"{float(res):.3f}"
    assert res + 1 == float(res) + 1 and res * 2 == 2 * float(res)
    assert res < float(res) + 1e-9 and res == float(res)
    assert json.loads(json.dumps({"ndcg@3": res})) == {"ndcg@3": float(res)}
    assert repr(res) == repr(float(res))
    clone = pickle.loads(pickle.dumps(res))
    assert clone == res and clone.range == res.range and clone.per_query.equals(res.per_query)


def test_several_metrics_give_a_dict_keyed_by_the_names_given():
    names = ["ndcg@3", "ndcg_cut.3", "nDCG@3", "P.2", "precision@2"]
    rep = tieaware.evaluate(QRELS, RUN, names)
    assert list(rep) == names
    assert rep["ndcg@3"] == rep["ndcg_cut.3"] == rep["nDCG@3"]
    assert rep["P.2"] == rep["precision@2"]
    frame = rep.to_dataframe()
    assert list(frame.index) == names and frame.loc["P.2", "expected"] == rep["P.2"].expected
    assert json.loads(rep.to_json())[0]["metric"] == "ndcg@3"
    assert "ndcg@3" in rep.table()
    assert rep.per_query().loc[("P.2", "q1"), "expected"] == rep["P.2"].per_query.loc["q1", "expected"]


def test_return_mean_false_and_return_std_follow_ranx():
    per_query = tieaware.evaluate(QRELS, RUN, "mrr", return_mean=False)
    assert isinstance(per_query, np.ndarray) and per_query.shape == (2,)
    both = tieaware.evaluate(QRELS, RUN, ["mrr"], return_std=True)
    assert set(both["mrr"]) == {"mean", "std"}
    assert both["mrr"]["std"] == pytest.approx(np.std(per_query))


@pytest.mark.parametrize("form", ["dict", "ranx", "trec", "json", "dataframe", "parquet"])
def test_every_input_form_gives_the_same_numbers(tmp_path, form):
    if form == "dict":
        qrels, run = QRELS, RUN
    elif form == "ranx":
        qrels, run = ranx.Qrels(QRELS), ranx.Run(RUN)
    elif form == "trec":
        qrels, run = tmp_path / "qrels.txt", tmp_path / "run.txt"
        qrels.write_text("".join(f"{q} 0 {d} {r}\n" for q, docs in QRELS.items() for d, r in docs.items()))
        run.write_text("".join(f"{q} Q0 {d} 0 {s!r} tag\n" for q, docs in RUN.items() for d, s in docs.items()))
        qrels, run = str(qrels), run  # str and Path both work
    elif form == "json":
        qrels, run = tmp_path / "qrels.json", tmp_path / "run.json"
        qrels.write_text(json.dumps(QRELS))
        run.write_text(json.dumps(RUN))
    else:
        qdf = pd.DataFrame([(q, d, r) for q, docs in QRELS.items() for d, r in docs.items()],
                           columns=["q_id", "doc_id", "score"])
        rdf = pd.DataFrame([(q, d, s) for q, docs in RUN.items() for d, s in docs.items()],
                           columns=["q_id", "doc_id", "score"])
        qrels, run = qdf, rdf
        if form == "parquet":
            qdf.to_parquet(tmp_path / "qrels.parquet")
            rdf.to_parquet(tmp_path / "run.parquet")
            qrels, run = tmp_path / "qrels.parquet", tmp_path / "run.parquet"
    reference = tieaware.evaluate(QRELS, RUN, ["ndcg@3", "map", "bpref"])
    # one tie order for all forms (by default ranx objects get ranx's: tests/test_oblivious_default.py)
    got = tieaware.evaluate(qrels, run, ["ndcg@3", "map", "bpref"], oblivious="trec_eval")
    for name in reference:
        pd.testing.assert_frame_equal(got[name].per_query, reference[name].per_query)


def test_user_objects_are_not_mutated():
    qrels, run = copy.deepcopy(QRELS), copy.deepcopy(RUN)
    tieaware.evaluate(qrels, run, ["ndcg@3", "map"], make_comparable=True)
    assert qrels == QRELS and run == RUN and list(run["q1"]) == list(RUN["q1"])
    ranx_run = ranx.Run(copy.deepcopy(RUN))
    ranx_qrels = ranx.Qrels(copy.deepcopy(QRELS))
    tieaware.evaluate(ranx_qrels, ranx_run, "ndcg@3", make_comparable=True)
    assert ranx_run.to_dict() == RUN and ranx_run.mean_scores == {} and dict(ranx_run.scores) == {}


def test_ranx_run_conversion_is_cached_per_object():
    from tieaware.readers.pairs import ranked_lists

    qrels, run = ranx.Qrels(QRELS), ranx.Run(RUN)
    assert ranked_lists(qrels, run) is ranked_lists(qrels, run)
    assert ranked_lists(ranx.Qrels(QRELS), run) is not ranked_lists(qrels, run)


def test_a_dropped_ranx_run_and_its_cached_conversion_are_freed():
    """The cache holds a Run weakly and nothing in its entry refers back to the Run: once the caller
    drops it, the Run and its conversion go (a loop evaluating new Runs keeps no memory)."""
    import gc
    import weakref

    from tieaware.readers.pairs import ranked_lists

    qrels, run = ranx.Qrels(QRELS), ranx.Run(RUN)
    tieaware.evaluate(qrels, run, ["ndcg@3", "P@2"], oblivious="ranx")  # reads the run's scores again
    run_ref, lists_ref = weakref.ref(run), weakref.ref(ranked_lists(qrels, run))
    del run
    gc.collect()
    assert run_ref() is None and lists_ref() is None


def test_metrics_of_one_level_share_flags_that_the_cached_conversion_does_not_keep(monkeypatch):
    from tieaware import engine
    from tieaware.kernels.families import common
    from tieaware.readers.pairs import ranked_lists

    made = []
    real = common.gains
    monkeypatch.setattr(common, "gains", lambda rel, p: made.append(p.relevance_level) or real(rel, p))
    qrels, run = ranx.Qrels(QRELS), ranx.Run(RUN)
    shared = tieaware.evaluate(qrels, run, ["P@2", "recall@3", "map", "mrr", "P(rel=2)@2"], oblivious="trec_eval")
    assert made == [1.0, 2.0]  # once per relevance level, not once per metric
    assert all(not judged.shared_flags for judged in engine._KEPT[ranked_lists(qrels, run)].judged.values())
    for name, result in shared.items():  # each alone, as it would be computed without sharing
        assert tieaware.evaluate(QRELS, RUN, name).per_query.equals(result.per_query)


def test_save_results_in_run_on_request():
    run = ranx.Run(RUN)
    res = tieaware.evaluate(ranx.Qrels(QRELS), run, "map", save_results_in_run=True)
    assert run.mean_scores["map"] == res.expected
    assert run.scores["map"]["q1"] == res.per_query.loc["q1", "expected"]


def test_query_set_mismatch_is_named_and_make_comparable_aligns():
    run = {"q1": RUN["q1"], "q9": {"x": 1.0}}
    with pytest.raises(InputError, match=r"q2.*\n?.*q9|make_comparable=True"):
        tieaware.evaluate(QRELS, run, "map")
    with pytest.raises(InputError) as info:
        tieaware.evaluate(QRELS, run, "map")
    assert "'q2'" in str(info.value) and "'q9'" in str(info.value) and "make_comparable=True" in str(info.value)
    res = tieaware.evaluate(QRELS, run, "map", make_comparable=True)
    assert list(res.per_query.index) == ["q1", "q2"]
    assert res.per_query.loc["q2", "expected"] == 0.0


def test_empty_run_for_a_query_scores_zero():
    res = tieaware.evaluate(QRELS, {"q1": RUN["q1"], "q2": {}}, ["map", "ndcg@3", "P.3"])
    for name in res:
        assert res[name].per_query.loc["q2"].abs().sum() == 0.0


def test_nan_score_names_query_and_document():
    with pytest.raises(InputError, match=r"'q2'.*'d6'.*NaN"):
        tieaware.evaluate(QRELS, {"q1": RUN["q1"], "q2": {"d5": 0.3, "d6": math.nan}}, "map")


def test_infinities_are_ordinary_tied_values():
    run = {"q1": {"d1": math.inf, "d2": math.inf, "d3": -math.inf, "d4": 0.0}, "q2": RUN["q2"]}
    res = tieaware.evaluate(QRELS, run, "mrr")
    assert res.per_query.loc["q1", "expected"] == pytest.approx(0.75)  # d1 relevant, tied with d2 at the top


def test_non_numeric_values_are_named():
    with pytest.raises(InputError, match=r"'q1'.*'d3'.*'high'"):
        tieaware.evaluate({"q1": {"d1": 1, "d3": "high"}}, {"q1": {"d1": 1.0}}, "map")
    with pytest.raises(InputError, match=r"'q1'.*'d2'"):
        tieaware.evaluate({"q1": {"d1": 1}}, {"q1": {"d1": 1.0, "d2": "x"}}, "map")


def test_bad_files_name_the_line(tmp_path):
    run = tmp_path / "run.trec"
    run.write_text("q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 zero t\n")
    with pytest.raises(InputError, match=r"run.trec:2: score 'zero' is not a number"):
        tieaware.read_trec_run(run)
    run.write_text("q1 Q0 d1 1 0.5 t\nq1 Q0 d1 2 0.4 t\n")
    with pytest.raises(InputError, match=r"run.trec:2: document 'd1' appears twice for query 'q1'"):
        tieaware.read_trec_run(run)
    run.write_text("q1 0 d1 1\n")
    with pytest.raises(InputError, match=r"run.trec:1: .*4.*qrels file given as the run"):
        tieaware.read_trec_run(run)
    qrels = tmp_path / "qrels.trec"
    qrels.write_text("q1 0 d1 yes\n")
    with pytest.raises(InputError, match=r"qrels.trec:1: relevance 'yes' is not an integer grade"):
        tieaware.read_trec_qrels(qrels)
    with pytest.raises(InputError, match="does not exist"):
        tieaware.evaluate(tmp_path / "missing.trec", run, "map")
    with pytest.raises(InputError, match="Cannot read run of type int"):
        tieaware.evaluate(QRELS, 42, "map")


def test_negative_judgments_are_not_relevant_and_ignored_by_bpref():
    qrels = {"q": {"a": 1, "n": -1, "z": 0}}
    run = {"q": {"n": 3.0, "z": 2.0, "a": 1.0}}
    rep = tieaware.evaluate(qrels, run, ["P.1", "bpref", "ndcg_cut.1"])
    assert rep["P.1"] == 0.0 and rep["ndcg_cut.1"] == 0.0
    assert rep["bpref"] == 0.0  # 'z' (judged 0) ranks above 'a'; 'n' (-1) does not count


@pytest.mark.parametrize("name,family,k,level,gain,floor", [
    ("ndcg@10", "ndcg", 10, 1, "linear", 1), ("ndcg_cut.10", "ndcg", 10, 1, "linear", None),
    ("ndcg_cut_10", "ndcg", 10, 1, "linear", None), ("nDCG@10", "ndcg", 10, 1, "linear", None),
    ("map@100-l2", "ap", 100, 2, "binary", None), ("map_cut.100", "ap", 100, 1, "binary", None),
    ("AP@100", "ap", 100, 1, "binary", None), ("P.10", "precision", 10, 1, "binary", None),
    ("P_10", "precision", 10, 1, "binary", None), ("P@10", "precision", 10, 1, "binary", None),
    ("P(rel=2)@10", "precision", 10, 2, "binary", None), ("recall.100", "recall", 100, 1, "binary", None),
    ("R@100", "recall", 100, 1, "binary", None), ("recip_rank", "rr", None, 1, "binary", None),
    ("RR@10", "rr", 10, 1, "binary", None), ("mrr@10", "rr", 10, 1, "binary", None),
    ("Rprec", "rprec", None, 1, "binary", None), ("r-precision", "rprec", None, 1, "binary", None),
    ("bpref", "bpref", None, 1, "binary", None), ("Bpref", "bpref", None, 1, "binary", None),
    ("success.10", "success", 10, 1, "binary", None), ("Success@10", "success", 10, 1, "binary", None),
    ("hit_rate@10", "success", 10, 1, "binary", None), ("hits@10", "hits", 10, 1, "binary", None),
    ("ndcg_burges@5", "ndcg", 5, 1, "exp", 1), ("dcg@5", "dcg", 5, 1, "linear", 1),
    ("f1@10", "f1", 10, 1, "binary", None), ("rbp.95", "rbp", None, 1, "linear", 1),
    ("RBP(p=0.8)", "rbp", None, 1, "linear", None), ("RBP(rel=2,p=0.8)", "rbp", None, 2, "binary", None),
    ("map", "ap", None, 1, "binary", None), ("ndcg", "ndcg", None, 1, "linear", None),
])
def test_metric_names_in_three_syntaxes(name, family, k, level, gain, floor):
    spec = parse_metric(name)
    assert (spec.family, spec.k, spec.relevance_level, spec.gain, spec.gain_floor) == (family, k, level, gain, floor)


def test_relevance_level_keyword_and_suffix():
    assert parse_metric("map", relevance_level=2).relevance_level == 2
    assert parse_metric("map-l3", relevance_level=2).relevance_level == 3
    assert parse_metric("rbp.8").persistence == pytest.approx(0.8)


@pytest.mark.parametrize("name,message", [
    ("ndcg@0", "positive"), ("P.0", "positive"), ("ndcg@x", "not an integer"), ("Judged", "needs a cutoff"),
    ("Rprec@5", "takes no cutoff"), ("nope@10", "Supported"), ("RBP(p=2)", r"\(0, 1\)"), ("P(foo)@5", "key=value"),
])
def test_bad_metric_names(name, message):
    with pytest.raises(UnknownMetricError, match=message):
        tieaware.evaluate(QRELS, RUN, name)


def test_unknown_oblivious_order():
    with pytest.raises(ValueError, match="oblivious must be None or one of"):
        tieaware.evaluate(QRELS, RUN, "map", oblivious="lucene")


def test_evaluate_loads_neither_torch_nor_pandas():
    """pandas (~0.15 s of a first evaluate) is imported only when a per-query table is asked for."""
    code = "import sys, tieaware; r = tieaware.evaluate({'q': {'d': 1}}, {'q': {'d': 1.0}}, ['map', 'P@1']); " \
           "assert float(r['map']) == 1.0 and r['P@1'].n_queries_with_ties == 0; " \
           "assert 'torch' not in sys.modules and 'transformers' not in sys.modules; " \
           "assert 'pandas' not in sys.modules; r['map'].per_query; assert 'pandas' in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_per_query_table_is_built_from_the_statistics_read_without_it():
    """`MetricResult.per_query_values` (no DataFrame) and the lazily built ``per_query`` agree column by column,
    the means are those of its columns, and a pickled result keeps both."""
    from tieaware.report import PER_QUERY_COLUMNS

    for res in tieaware.evaluate(QRELS, RUN, ["ndcg@3", "mrr", "P@2"]).values():
        frame = res.per_query
        assert res.query_ids == tuple(frame.index) == ("q1", "q2")
        for column in PER_QUERY_COLUMNS:
            assert np.array_equal(res.per_query_values(column), frame[column].to_numpy()), column
        for column in ("expected", "oblivious", "min", "max"):
            assert getattr(res, column) == frame[column].mean(), column
        assert res.tie_std == math.sqrt(frame["variance"].sum()) / 2
        clone = pickle.loads(pickle.dumps(res))
        assert clone == res and clone.min == res.min and clone.per_query.equals(frame)
        res.per_query_values("expected")[:] = -1.0  # a copy: the result is unchanged
        assert res.per_query_values("expected").min() >= 0
    with pytest.raises(KeyError, match="unknown per-query statistic 'std'"):
        res.per_query_values("std")


def test_census_counts_ties():
    run = {"q1": {"a": 3.0, "b": 2.0, "c": 2.0, "d": 1.0}, "q2": {"x": 1.0, "y": 1.0}}
    frame = tieaware.census(run, ks=(1, 2, 3))
    assert frame.loc[1, "unique_scores"] == 1.0
    assert frame.loc[2, "unique_scores"] == pytest.approx((2 + 1) / 2)
    assert frame.loc[2, "mean_tie_group_size"] == pytest.approx((1.0 + 2.0) / 2)
    assert frame.loc[2, "straddling_share"] == pytest.approx(0.5)  # q1: b|c straddle rank 2
    assert frame.loc[3, "largest_group"] == 2
    with pytest.raises(ValueError, match="positive"):
        tieaware.census(run, ks=(0,))


def test_tie_std_is_the_tie_noise_and_std_a_deprecated_alias():
    res = tieaware.evaluate(QRELS, RUN, "mrr")
    assert res.tie_std == pytest.approx(math.sqrt(res.per_query["variance"].sum()) / 2)
    with pytest.warns(DeprecationWarning, match="tie_std"):
        assert res.std == res.tie_std
    spread = tieaware.evaluate(QRELS, RUN, "mrr", return_std=True)["std"]  # ranx: spread across queries
    assert spread == pytest.approx(np.std(res.per_query["expected"]))
