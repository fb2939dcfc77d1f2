"""ir_measures' nDCG(gains={grade: gain}): the qrels' grades mapped, then nDCG with gain = grade; parity
with ir_measures: test_parity.py; brute force over tie orders: test_brute_force.py."""
import math

import pytest

import tieaware
from tieaware.errors import UnknownMetricError
from tieaware.metrics import parse_metric


def test_non_monotone_map_reorders_best_first_by_hand():
    """Grades 1 and 2 tied, gains {1: 3, 2: 0}: the grade-1 document is now the better one."""
    qrels = {"q": {"a": 1, "b": 2}}
    run = {"q": {"a": 1.0, "b": 1.0}}
    row = tieaware.evaluate(qrels, run, "nDCG(gains={1:3,2:0})@2").per_query.loc["q"]
    low = 3 / math.log2(3) / 3
    assert (row["min"], row["max"]) == pytest.approx((low, 1.0))
    assert row["expected"] == pytest.approx((1 + low) / 2)
    assert row["variance"] == pytest.approx(((1 - low) / 2) ** 2)
    assert row["oblivious"] == pytest.approx(low)  # trec_eval's order: b (id descending) first
    # the unmapped grades in the same call: b is the better one
    assert tieaware.evaluate(qrels, run, "nDCG@2").per_query.loc["q", "oblivious"] == 1.0


def test_negative_mapped_gain_counts_zero_and_unlisted_grades_keep_theirs():
    """As pytrec_eval after ir_measures' mapping: a grade mapped below 0 gains 0; grade 3 is not listed."""
    qrels = {"q": {"a": 1, "b": 3}}
    run = {"q": {"a": 2.0, "b": 1.0}}
    value = tieaware.evaluate(qrels, run, "nDCG(gains={1:-2})@2").expected
    assert value == pytest.approx(3 / math.log2(3) / 3)


def test_measure_objects_and_spacing():
    ir_measures = pytest.importorskip("ir_measures")
    qrels = {"q": {"a": 1, "b": 2}}
    run = {"q": {"a": 2.0, "b": 1.0}}
    report = tieaware.evaluate(qrels, run, [ir_measures.nDCG(gains={1: 5, 2: 1}) @ 2, "nDCG(gains={1: 5, 2: 1})@2"])
    assert report["nDCG(gains={1:5,2:1})@2"].expected == report["nDCG(gains={1: 5, 2: 1})@2"].expected == 1.0
    assert parse_metric("nDCG(gains={2:1.5})").grade_map == ((2, 1.5),)


@pytest.mark.parametrize("name,message", [
    ("nDCG(gains={a:1})@5", "not integer_grade:gain"), ("nDCG(gains={1.5:1})@5", "not integer_grade:gain"),
    ("nDCG(gains={})@5", "maps no grade"), ("nDCG(dcg='exp-log2',gains={1:2})@5", "only with dcg='log2'"),
    ("P(gains={1:2})@5", "P takes no parameter gains"), ("ndcg.1=3,2=9", "gain pairs are not implemented yet"),
])
def test_bad_gain_maps_are_refused(name, message):
    with pytest.raises(UnknownMetricError, match=message):
        parse_metric(name)
