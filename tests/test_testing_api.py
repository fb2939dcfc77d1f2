"""tieaware.testing: assert_tie_stable, check_tie_stability and the failure message."""
import math

import pytest

from tieaware.report import EvaluationReport, MetricResult
from tieaware.testing import TieInstabilityError, assert_tie_stable, check_tie_stability

# q1: relevant d1 tied with d2 at the top -> RR in {1, 1/2}; q2: no ties, RR 1/2.
# Means: E[MRR] 0.625, min 0.5, max 0.75, range 0.25; trec_eval puts d2 (id desc) first -> 0.5, bias -0.125.
QRELS = {"q1": {"d1": 1, "d3": 2}, "q2": {"d2": 1}}
RUN = {"q1": {"d1": 0.5, "d2": 0.5, "d3": 0.4, "d4": 0.4}, "q2": {"d1": 0.9, "d2": 0.8}}
RUN_NO_TIES = {"q1": {"d1": 0.5, "d2": 0.45, "d3": 0.4, "d4": 0.35}, "q2": {"d1": 0.9, "d2": 0.8}}


def test_passing_check_returns_the_results():
    single = assert_tie_stable(QRELS, RUN, "mrr@10", max_range=0.25, max_abs_bias=0.125)
    assert isinstance(single, MetricResult)
    assert (single.expected, single.range, single.bias) == pytest.approx((0.625, 0.25, -0.125))
    several = assert_tie_stable(QRELS, RUN_NO_TIES, ["mrr@10", "ndcg@10"], max_range=0.0, max_abs_bias=0.0,
                                max_std=0.0)
    assert isinstance(several, EvaluationReport) and list(several) == ["mrr@10", "ndcg@10"]


def test_failure_is_an_assertion_error_carrying_results_and_reasons():
    with pytest.raises(AssertionError) as caught:
        assert_tie_stable(QRELS, RUN, ["mrr@10", "ndcg@10"], max_range=0.2)
    error = caught.value
    assert isinstance(error, TieInstabilityError)
    assert error.violations == {"mrr@10": ["range 0.25 > 0.2"], "ndcg@10": []}
    assert error.results["mrr@10"].expected == pytest.approx(0.625)


def test_message_tables_every_metric():
    with pytest.raises(TieInstabilityError) as caught:
        assert_tie_stable(QRELS, RUN, ["mrr@10", "P@1"], max_range={"mrr@10": 0.1}, max_abs_bias=0.2)
    lines = str(caught.value).splitlines()
    assert lines[0] == "tie order moves 2 of 2 metrics past their limits"
    assert lines[1].split() == ["metric", "expected", "obl[trec_eval]", "min", "max", "range", "bias", "limit",
                                "queries", "with", "ties", "status"]
    mrr = next(line for line in lines if line.strip().startswith("mrr@10")).split()
    assert mrr[:7] == ["mrr@10", "0.6250", "0.5000", "0.5000", "0.7500", "0.2500", "-0.1250"]
    assert " ".join(mrr[7:]) == "range<=0.1, |bias|<=0.2 1/2 FAIL: range 0.25 > 0.1"
    p1 = next(line for line in lines if line.strip().startswith("P@1")).split()
    assert " ".join(p1[7:]) == "|bias|<=0.2 1/2 FAIL: |bias| 0.25 > 0.2"


def test_message_lists_the_five_widest_queries_in_order():
    # query qN: the relevant doc tied with N non-relevant ones at the top, so RR's range is N/(N+1).
    qrels = {f"q{n}": {"rel": 1} for n in range(8)}
    run = {f"q{n}": {"rel": 1.0, **{f"d{i}": 1.0 for i in range(n)}} for n in range(8)}
    with pytest.raises(TieInstabilityError) as caught:
        assert_tie_stable(qrels, run, "mrr", max_range=0.1)
    message = str(caught.value)
    assert "7/8" in message  # q0 has no tie
    listed = message.split("queries with the widest mrr range:")[1].splitlines()[2:]
    assert [line.split()[0] for line in listed] == ["q7", "q6", "q5", "q4", "q3"]
    assert listed[0].split()[-1] == f"{7 / 8:.4f}"


def test_passing_metrics_list_no_worst_queries():
    with pytest.raises(TieInstabilityError) as caught:
        assert_tie_stable(QRELS, RUN, ["mrr@10", "ndcg@10"], max_range={"mrr@10": 0.1})
    assert "widest mrr@10" in str(caught.value) and "widest ndcg@10" not in str(caught.value)


def test_limits_per_metric_inf_and_none():
    stability = check_tie_stability(QRELS, RUN, ["mrr@10", "ndcg@10"], max_range={"mrr@10": 0.3},
                                    max_abs_bias=math.inf)
    assert stability.passed
    assert stability.limits == {"mrr@10": {"max_range": 0.3}, "ndcg@10": {}}
    assert stability.limit_text("mrr@10") == "range<=0.3" and stability.limit_text("ndcg@10") == "-"


def test_std_limit():
    stability = check_tie_stability(QRELS, RUN, "mrr@10", max_std=0.1)
    assert stability.violations == {"mrr@10": ["tie_std 0.125 > 0.1"]}  # sqrt(Var_q1 = 1/16) / 2 queries


def test_limits_on_a_count_bound_its_sum_over_queries():
    """num_rel_ret.1 sums over queries: three queries, each a coin flip between a relevant and a non-relevant
    document at rank 1, give a range of 3 and a tie_std of sqrt(3/4); hits@1, the same counts averaged,
    1 and sqrt(3/4) / 3."""
    qrels = {f"q{i}": {"a": 1, "b": 0} for i in range(3)}
    run = {f"q{i}": {"a": 0.5, "b": 0.5} for i in range(3)}
    stability = check_tie_stability(qrels, run, ["num_rel_ret.1", "hits@1"], max_range=2, max_std=0.5)
    assert stability.violations == {
        "num_rel_ret.1": ["range (of the sum over queries) 3 > 2",
                          f"tie_std (of the sum over queries) {math.sqrt(0.75):.6g} > 0.5"],
        "hits@1": []}
    with pytest.raises(TieInstabilityError, match=r"range \(of the sum over queries\) 3 > 2"):
        assert_tie_stable(qrels, run, "num_rel_ret.1", max_range=2)
    assert assert_tie_stable(qrels, run, "num_rel_ret.1", max_range=3).range == 3


def test_oblivious_order_is_passed_through():
    # "input" keeps d1 (relevant) first: RR 1 on q1, bias +0.125.
    result = assert_tie_stable(QRELS, RUN, "mrr@10", oblivious="input", max_abs_bias=0.125)
    assert result.bias == pytest.approx(0.125) and result.oblivious_order == "input"


@pytest.mark.parametrize("limits, words", [
    ({"max_range": -0.1}, "max_range for 'mrr@10' must be a number >= 0, got -0.1"),
    ({"max_abs_bias": "0.1"}, "max_abs_bias for 'mrr@10' must be a number >= 0, got '0.1'"),
    ({"max_std": math.nan}, "max_std for 'mrr@10' must be a number >= 0"),
    ({"max_range": {"ndcg@10": 0.1}}, "max_range names metrics that are not checked: ['ndcg@10']"),
])
def test_bad_limits_say_what_is_wrong(limits, words):
    with pytest.raises(ValueError) as caught:
        assert_tie_stable(QRELS, RUN, "mrr@10", **limits)
    assert words in str(caught.value)
