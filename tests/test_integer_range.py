"""Scores and grades beyond what int64 or float64 hold: read exactly, or refused naming the row or the
query and document, at every array and mapping entry point (`evaluate_arrays`, tensors, DataFrames,
dicts, torchmetrics), never wrapped or rounded into a wrong number."""
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tieaware
from tieaware import InputError, evaluate_arrays

BIG = 2 ** 53
QRELS = {"q1": {"d1": 1, "d2": 0}}


# ------------------------------------------------------------------ grades beyond int64
@pytest.mark.parametrize("target", [np.array([1e19, 0.0]), np.array([2 ** 63, 0], np.uint64),
                                    np.array([2 ** 64 - 2048, 0], np.uint64), [2 ** 63, 0]])
def test_grades_beyond_int64_stay_relevant(target):
    """int64 wrapped 1e19 and uint64 2**63 to negative grades: MRR 0 instead of 1."""
    result = evaluate_arrays([0, 0], [0.9, 0.1], target, ["mrr", "P@1", "ndcg@2"])
    assert result["mrr"].expected == result["P@1"].expected == 1.0
    assert result["ndcg@2"].expected == 1.0


def test_grades_float64_cannot_hold_are_refused_naming_the_row():
    with pytest.raises(InputError, match=r"target at row 1 \(query 7; 1 such rows\) is 18446744073709551615"):
        evaluate_arrays([7, 7], [0.9, 0.1], np.array([0, 2 ** 64 - 1], np.uint64), "mrr")
    with pytest.raises(InputError, match=r"Relevance for query 'q1', document 'd1' is 18446744073709551615.*float64"):
        tieaware.evaluate({"q1": {"d1": 2 ** 64 - 1, "d2": 0}}, {"q1": {"d1": 0.9, "d2": 0.1}}, "mrr")


# ------------------------------------------------------------------ integer scores beyond 2**53
INEXACT_SCORES = [np.array([BIG + 1, BIG], np.int64), np.array([BIG + 1, BIG], np.uint64), [BIG + 1, BIG],
                  np.array([-BIG - 3, -BIG - 4], np.int64)]


@pytest.mark.parametrize("preds", INEXACT_SCORES, ids=["int64", "uint64", "list", "negative"])
def test_integer_scores_float64_would_tie_are_refused_naming_the_row(preds):
    """Cast to float64, BIG + 1 and BIG tie: E[MRR] 0.75 instead of 1.0."""
    with pytest.raises(InputError, match=r"preds at row 0 \(query 3; 1 such rows\) is -?90071992547409\d\d, which "
                                         r"float64 .* cannot hold.*false ties.*rankdata"):
        evaluate_arrays([3, 3], preds, [1, 0], "mrr")


def test_integer_scores_float64_holds_are_read_exactly():
    assert evaluate_arrays([0, 0], np.array([BIG + 2, BIG], np.int64), [1, 0], "mrr").expected == 1.0
    assert evaluate_arrays([0, 0], np.array([2 ** 63, 2 ** 62], np.uint64), [0, 1], "mrr").expected == 0.5
    assert tieaware.evaluate(QRELS, {"q1": {"d1": BIG + 2, "d2": BIG}}, "mrr").expected == 1.0
    assert tieaware.evaluate(QRELS, {"q1": {"d1": 1e300, "d2": 2.0 ** 60, "d3": float("inf")}}, "mrr").expected == 0.5


def test_long_double_scores_float64_would_round_are_refused():
    preds = np.array([np.longdouble(1) + np.longdouble(2) ** -60, 1], np.longdouble)
    if preds[0] == preds[1]:
        pytest.skip("long double is float64 on this platform")
    with pytest.raises(InputError, match=r"preds at row 0 \(query 0; 1 such rows\)"):
        evaluate_arrays([0, 0], preds, [1, 0], "mrr")


@pytest.mark.parametrize("scores", [{"d1": BIG + 1, "d2": BIG}, {"d1": np.int64(BIG + 1), "d2": np.int64(BIG)},
                                    {"d1": np.uint64(2 ** 64 - 1), "d2": np.uint64(2 ** 64 - 2)}],
                         ids=["int", "numpy int64", "numpy uint64"])
def test_dict_scores_float64_would_tie_are_refused_naming_query_and_document(scores):
    with pytest.raises(InputError, match=r"Run score for query 'q1', document 'd1' is .*false ties"):
        tieaware.evaluate(QRELS, {"q1": scores}, "mrr")


def test_dataframe_integer_scores_are_refused_naming_query_and_document():
    run = pd.DataFrame({"q_id": ["q1", "q1"], "doc_id": ["d1", "d2"], "score": np.array([BIG + 1, BIG], np.int64)})
    with pytest.raises(InputError, match=r"Run score for query 'q1', document 'd1' is 9007199254740993"):
        tieaware.evaluate(QRELS, run, "mrr")
    qrels = pd.DataFrame({"q_id": ["q1", "q1"], "doc_id": ["d1", "d2"],
                          "relevance": np.array([2 ** 64 - 1, 0], np.uint64)})
    with pytest.raises(InputError, match=r"Relevance for query 'q1', document 'd1' is 18446744073709551615"):
        tieaware.evaluate(qrels, {"q1": {"d1": 0.9, "d2": 0.1}}, "mrr")


def test_tensors_and_torchmetrics_refuse_what_float64_or_int64_cannot_hold():
    torch = pytest.importorskip("torch")
    pytest.importorskip("torchmetrics")
    from tieaware.integrations.torchmetrics import TieAwareRetrieval

    with pytest.raises(InputError, match=r"preds at row 0 \(query 0; 1 such rows\)"):
        evaluate_arrays(torch.tensor([0, 0]), torch.tensor([BIG + 1, BIG]), torch.tensor([1, 0]), "mrr")
    metric = TieAwareRetrieval(["mrr"])
    with pytest.raises(InputError, match=r"preds at row 0 of this update \(1 such rows\) is 9007199254740993"):
        metric.update(torch.tensor([BIG + 1, BIG]), torch.tensor([1, 0]), torch.tensor([0, 0]))
    if hasattr(torch, "uint64"):
        assert evaluate_arrays(torch.tensor([0, 0]), torch.tensor([0.9, 0.1]),
                               torch.tensor([2 ** 63, 0], dtype=torch.uint64), "mrr").expected == 1.0
        with pytest.raises(InputError, match=r"target at row 0 of this update is 9223372036854775808, beyond int64"):
            metric.update(torch.tensor([0.9, 0.1]), torch.tensor([2 ** 63, 0], dtype=torch.uint64),
                          torch.tensor([0, 0]))
    metric.update(torch.tensor([BIG + 2, BIG]), torch.tensor([1, 0]), torch.tensor([0, 0]))
    assert float(metric.compute()["mrr/expected"]) == 1.0


# ------------------------------------------------------------------ refuse, or equal the exact ranking
_WIDE = st.one_of(st.integers(-2 ** 63, 2 ** 63 - 1), st.integers(BIG - 8, BIG + 8), st.integers(-BIG - 8, -BIG + 8),
                  st.integers(2 ** 62 - 4, 2 ** 62 + 4), st.integers(-3, 3))


@settings(max_examples=60, deadline=None)
@given(rows=st.lists(st.tuples(st.integers(0, 2), _WIDE, st.integers(0, 2)), min_size=1, max_size=12))
def test_int64_scores_are_refused_or_read_as_their_exact_order(rows):
    """Every int64 score array either raises, exactly when float64 cannot hold one of its values, or
    gives the numbers of its dense ranks (the same order and ties, small enough for any float)."""
    indexes, scores, target = (np.array(column, np.int64) for column in zip(*rows))
    metrics = ["mrr", "ndcg@3", "map", "P@2"]
    inexact = any(int(float(s)) != s for s in scores.tolist())
    if inexact:
        with pytest.raises(InputError, match="cannot hold"):
            evaluate_arrays(indexes, scores, target, metrics)
        return
    ranks = np.unique(scores, return_inverse=True)[1].astype(np.float64)
    got, expected = evaluate_arrays(indexes, scores, target, metrics), evaluate_arrays(indexes, ranks, target, metrics)
    for metric in metrics:
        assert (got[metric].expected, got[metric].min, got[metric].max) == \
            (expected[metric].expected, expected[metric].min, expected[metric].max)


@settings(max_examples=50, deadline=None)
@given(rows=st.lists(st.tuples(st.integers(0, 2), st.floats(-1, 1), st.integers(0, 2 ** 64 - 1)), min_size=1,
                     max_size=12), as_float=st.booleans())
def test_huge_grades_are_refused_or_relevant(rows, as_float):
    """A uint64 (or float) grade of any size is relevant when positive, or refused when float64 cannot
    hold it; never wrapped to a negative grade."""
    indexes, scores, grades = zip(*rows)
    indexes, scores, target = np.array(indexes), np.array(scores), np.array(grades, np.uint64)
    if as_float:
        target = target.astype(np.float64)
    metrics = ["mrr", "P@2", "recall@3"]
    if not as_float and any(int(float(g)) != g for g in target.tolist()):
        with pytest.raises(InputError, match="cannot hold"):
            evaluate_arrays(indexes, scores, target, metrics)
        return
    got, binary = evaluate_arrays(indexes, scores, target, metrics), evaluate_arrays(indexes, scores, target > 0,
                                                                                     metrics)
    for metric in metrics:
        assert got[metric].expected == binary[metric].expected


def test_float_grades_in_dicts_are_linear_gains_for_ndcg_and_binary_at_the_level():
    """What docs/evaluate.md says of float grades (MTEB#5516's ndcg_float_at_k): exact linear gains."""
    import math

    qrels, run = {"q": {"a": 0.5, "b": 1.5}}, {"q": {"a": 0.9, "b": 0.8}}
    report = tieaware.evaluate(qrels, run, ["ndcg_cut.2", "nDCG@2", "ndcg@2", "P@1"])
    linear = (0.5 + 1.5 / math.log2(3)) / (1.5 + 0.5 / math.log2(3))
    assert report["ndcg_cut.2"].expected == pytest.approx(linear, abs=1e-15) == report["nDCG@2"].expected
    assert report["ndcg@2"].expected == pytest.approx(1 / math.log2(3), abs=1e-15)  # ranx: 0.5 < level 1 gains 0
    assert report["P@1"].expected == 0.0
