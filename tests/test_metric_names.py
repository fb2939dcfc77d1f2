"""Every name `evaluate` accepts is accepted by every entry point, keyed the same way
(`tieaware.metrics.metric_keys`): expanded trec_eval names, groups, ir_measures measure objects."""
import warnings

import pytest

import tieaware
from tieaware.metrics import metric_keys
from tieaware.testing import TieInstabilityError, assert_tie_stable, check_tie_stability

ir_measures = pytest.importorskip("ir_measures")

QRELS = {"q1": {"d1": 1, "d3": 2}, "q2": {"d2": 1}}
RUN = {"q1": {f"d{i}": 0.5 for i in range(1, 7)}, "q2": {"d1": 0.9, "d2": 0.8}}  # q1: all six tie
OTHER = {"q1": {"d1": 0.9, "d2": 0.5, "d3": 0.4, "d4": 0.4}, "q2": {"d1": 0.8, "d2": 0.8}}

#: every kind of name: plain, a trec_eval cutoff list, a family with default cutoffs, a group,
#: measure objects alone and in lists, and mixes
NAMES = ["ndcg@10", "P.1,2", "P", "success", "official", ["P.1,2", "recip_rank"],
         ir_measures.nDCG @ 10, ir_measures.RR, [ir_measures.P @ 1, "map", ir_measures.R @ 2], ("ndcg_cut.5,10",)]
IDS = ["plain", "cutoff-list", "family", "success", "group", "list", "measure", "measure-no-cutoff",
       "measure-list", "tuple"]


def _evaluate(metrics):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # 'official' names what it leaves out
        return tieaware.evaluate(QRELS, RUN, metrics)


def _same(got, want):
    """Same type (one MetricResult or a report) and the same numbers under the same keys."""
    if isinstance(want, tieaware.MetricResult):
        assert isinstance(got, tieaware.MetricResult) and got.name == want.name
        assert (got.expected, got.range, got.oblivious) == (want.expected, want.range, want.oblivious)
        return
    assert list(got) == list(want)
    for key in want:
        assert (got[key].expected, got[key].range) == (want[key].expected, want[key].range), key


@pytest.mark.parametrize("metrics", NAMES, ids=IDS)
def test_assert_tie_stable_and_check_tie_stability(metrics):
    want = _evaluate(metrics)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _same(assert_tie_stable(QRELS, RUN, metrics, max_range=1), want)
        stability = check_tie_stability(QRELS, RUN, metrics, max_range=0)
    keys = list(want) if isinstance(want, dict) else [want.name]
    assert list(stability.results) == list(stability.limits) == list(stability.violations) == keys
    assert not stability.passed  # q1's ties move at least one metric of each
    with pytest.raises(TieInstabilityError), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_tie_stable(QRELS, RUN, metrics, max_range=0)


@pytest.mark.parametrize("metrics", NAMES, ids=IDS)
def test_limits_keyed_by_the_names_as_given(metrics):
    """A {metric: limit} mapping takes the names as the user wrote them (a measure object too)."""
    given = metrics if isinstance(metrics, (list, tuple)) else [metrics]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        stability = check_tie_stability(QRELS, RUN, metrics, max_range={name: 0 for name in given})
        loose = check_tie_stability(QRELS, RUN, metrics, max_range={name: 1 for name in given})
    assert all(stability.limits[key] == {"max_range": 0.0} for key in stability.results)
    assert not stability.passed and loose.passed


@pytest.mark.parametrize("metrics", NAMES, ids=IDS)
def test_compare(metrics):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = tieaware.compare(QRELS, {"a": RUN, "b": OTHER}, metrics, stat_test=None)
    want = _evaluate(metrics)
    keys = list(want) if isinstance(want, dict) else [want.name]
    assert report.metrics == keys
    for key in keys:
        assert report.results["a"][key].expected == (want[key] if isinstance(want, dict) else want).expected
    assert set(report.pairs.index.get_level_values("metric")) == set(keys)


@pytest.mark.parametrize("metrics", NAMES, ids=IDS)
def test_tie_check_fixture(metrics, tie_check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _same(tie_check.assert_stable(QRELS, RUN, metrics, max_range=1), _evaluate(metrics))


def test_metric_keys_is_what_evaluate_keys_by():
    for metrics in NAMES:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            keys, single = metric_keys(metrics)
        result = _evaluate(metrics)
        assert single == isinstance(result, tieaware.MetricResult)
        assert keys == ([result.name] if single else list(result))


def test_tie_metrics_option_and_baselines_take_every_kind_of_name(pytester):
    """--tie-metrics keeps a trec_eval cutoff list whole; against_baseline keys by the expanded names."""
    pytester.makepyfile(f'''
        import ir_measures
        QRELS, RUN = {QRELS!r}, {RUN!r}

        def test_option(tie_check):
            report = tie_check.assert_stable(QRELS, RUN, max_range=1)
            assert list(report) == ["P.1", "P.2", "success_1", "success_5", "success_10"]

        def test_baseline(tie_check):
            one = tie_check.against_baseline("a", QRELS, RUN, ir_measures.nDCG @ 10)
            assert one.name == "nDCG@10"
            assert list(tie_check.against_baseline("b", QRELS, RUN, "P.1,2")) == ["P.1", "P.2"]
    ''')
    first = pytester.inline_run("-p", "no:cacheprovider", "--tie-metrics", "P.1,2 success")
    first.assertoutcome(passed=1, failed=1)  # the baselines are written the first time
    pytester.inline_run("-p", "no:cacheprovider", "--tie-metrics", "P.1,2 success").assertoutcome(passed=1, failed=1)
    pytester.inline_run("-p", "no:cacheprovider", "--tie-metrics", "P.1,2,success").assertoutcome(passed=2)
