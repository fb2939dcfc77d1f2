"""MetricResult where ranx code expects ranx.evaluate's numpy.float64; save_results_in_run as in ranx."""
import copy
import json
import pickle

import numpy as np
import pytest
import ranx

import tieaware
from tieaware.errors import InputError

QRELS = {"q1": {"d1": 1, "d3": 2}, "q2": {"d2": 1}}
RUN = {"q1": {"d1": 0.9, "d2": 0.5, "d3": 0.5}, "q2": {"d1": 0.4, "d2": 0.4, "d9": 0.1}}


@pytest.fixture()
def result():
    return tieaware.evaluate(QRELS, RUN, "ndcg@2")


def test_numpy_float_seams(result):
    theirs = ranx.evaluate(QRELS, {"q1": {"d1": 0.9, "d2": 0.5, "d3": 0.4}, "q2": {"d2": 0.4, "d1": 0.3}}, "ndcg@2")
    assert isinstance(theirs, np.float64) and isinstance(result, float)
    assert type(result.item()) is float and result.item() == result.expected == type(theirs.item())(result)
    array = np.asarray(result)
    assert array.dtype == np.float64 and array.shape == () and float(array) == result.expected
    assert type(np.float64(result)) is np.float64 and np.float64(result) == result.expected
    assert np.asarray([result, result]).dtype == np.float64
    assert float(np.mean([result, theirs])) == pytest.approx((result.expected + float(theirs)) / 2)


def test_json_and_copies_keep_the_value(result):
    assert json.loads(json.dumps(result)) == result.expected
    assert json.loads(json.dumps({"ndcg@2": result})) == {"ndcg@2": result.expected}
    for clone in (pickle.loads(pickle.dumps(result)), copy.deepcopy(result), copy.copy(result)):
        assert clone == result and (clone.min, clone.max, clone.name) == (result.min, result.max, result.name)


def test_arithmetic_gives_plain_floats(result):
    for value in (result + 1, 1 + result, result - result, result * 2, result / 2, -result, abs(result),
                  result ** 2, round(result, 3), max(result, 0.0) * 1):
        assert type(value) is float
    assert result + 1 == result.expected + 1


def test_save_results_in_run_writes_as_ranx_with_std():
    mine, theirs = ranx.Run(RUN), ranx.Run(RUN)
    qrels = ranx.Qrels(QRELS)
    report = tieaware.evaluate(qrels, mine, ["map", "ndcg@2"], return_std=True, save_results_in_run=True)
    ranx.evaluate(qrels, theirs, ["map", "ndcg@2"], return_std=True)  # ranx saves by default
    assert mine.mean_scores.keys() == theirs.mean_scores.keys() == mine.std_scores.keys() == theirs.std_scores.keys()
    for name in ("map", "ndcg@2"):
        assert mine.mean_scores[name] == report[name]["mean"].expected
        assert mine.std_scores[name] == pytest.approx(report[name]["std"])
        assert set(mine.scores[name]) == set(theirs.scores[name]) == {"q1", "q2"}
    # q2: d1 and d2 tie, d2 alone relevant: E[AP] = 0.75 is saved; ranx saves the AP of its own tie order
    assert mine.scores["map"]["q2"] == pytest.approx(0.75) and theirs.scores["map"]["q2"] in (0.5, 1.0)


def test_save_results_is_off_by_default_and_needs_a_run():
    run = ranx.Run(RUN)
    tieaware.evaluate(ranx.Qrels(QRELS), run, "map")
    assert run.mean_scores == {} and run.std_scores == {} and not run.scores
    with pytest.raises(InputError, match="needs a ranx Run"):
        tieaware.evaluate(QRELS, RUN, "map", save_results_in_run=True)
