"""The id and value rules of every container: ids as strings, scores and grades as numbers, each
unusable one named (query and document), never a silently wrong number."""
import math
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
import ranx

import tieaware
from tieaware import InputError


# ---------------------------------------------------------------- id types
def test_integer_ids_match_string_ids_in_every_container():
    assert tieaware.evaluate({"q1": {101: 1}}, {"q1": {"101": .9}}, "recall@10") == 1.0
    assert tieaware.evaluate({"q1": {"101": 1}}, {"q1": {101: .9}}, "recall@10") == 1.0
    assert tieaware.evaluate({1: {"101": 1}}, {"1": {"101": .9}}, "recall@10") == 1.0
    qrels_df = pd.DataFrame({"q_id": [1, 1], "doc_id": [101, 102], "score": [1, 0]})  # as pd.read_csv gives
    run_df = pd.DataFrame({"q_id": ["1", "1"], "doc_id": ["101", "102"], "score": [0.2, 0.9]})
    from_frames = tieaware.evaluate(qrels_df, run_df, "mrr")
    from_ranx = tieaware.evaluate(ranx.Qrels({"1": {"101": 1, "102": 0}}), ranx.Run({"1": {"101": .2, "102": .9}}),
                                  "mrr")
    assert float(from_frames) == float(from_ranx) == 0.5


def test_an_id_written_both_as_int_and_as_str_is_an_error():
    with pytest.raises(InputError, match="appears twice"):
        tieaware.evaluate({"q1": {1: 1, "1": 0}}, {"q1": {"1": .5}}, "mrr")


# ------------------------------------------------------- non-finite values
@pytest.mark.parametrize("grade", [math.inf, -math.inf, math.nan, None])
def test_unusable_grades_name_query_and_document(grade):
    with pytest.raises(InputError, match=r"'q2', document 'd1'"):
        tieaware.evaluate({"q1": {"d1": 1}, "q2": {"d1": grade}}, {"q1": {"d1": 1.}, "q2": {"d1": 1.}}, "ndcg@10")


def test_none_score_is_called_none():
    with pytest.raises(InputError, match="'q1', document 'd1' is None"):
        tieaware.evaluate({"q1": {"d1": 1}}, {"q1": {"d1": None}}, "ndcg@10")


def test_huge_integer_score_is_named():
    with pytest.raises(InputError, match="too large for a float64"):
        tieaware.evaluate({"q1": {"d1": 1}}, {"q1": {"d1": 10 ** 400}}, "ndcg@10")


@pytest.mark.parametrize("kind,qrels,run", [
    ("Run score", {"q1": {"d1": 1}}, {"q1": {"d2": 0.1, "d1": "0.5"}}),
    ("Relevance", {"q1": {"d1": "1"}}, {"q1": {"d1": 0.5}}),
])
def test_numbers_written_as_strings_are_named_not_parsed(kind, qrels, run):
    with pytest.raises(InputError, match=f"{kind} for query 'q1', document 'd1' is not a number: '"):
        tieaware.evaluate(qrels, run, "mrr")


def test_numeric_scores_of_any_type_are_read_as_float_reads_them():
    scores = [np.float32(0.1), Decimal("0.7"), Fraction(1, 3), 1, np.float16(0.5), np.int64(2)]
    run = {"q1": {f"d{i}": s for i, s in enumerate(scores)}}
    as_floats = {"q1": {d: float(s) for d, s in run["q1"].items()}}
    qrels = {"q1": {"d0": 1, "d2": 2, "d4": 1}}
    metrics = ["ndcg@3", "map", "mrr"]
    assert tieaware.evaluate(qrels, run, metrics).to_json() == tieaware.evaluate(qrels, as_floats, metrics).to_json()


def test_overflowing_gain_is_an_error_not_a_skipped_query():
    with pytest.raises(InputError, match="not finite for query 'q1'"):
        tieaware.evaluate({"q1": {"d1": 2000}, "q2": {"d1": 1}}, {"q1": {"d1": 1.}, "q2": {"d1": 1.}},
                          "ndcg_burges@10")


def test_inf_scores_are_ordinary_values_that_tie():
    res = tieaware.evaluate({"q1": {"d1": 1}}, {"q1": {"d1": math.inf, "d2": math.inf, "d3": -math.inf}}, "mrr")
    assert res.expected == pytest.approx(0.75) and res.range == 0.5
