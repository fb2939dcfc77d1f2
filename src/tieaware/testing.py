"""Test helpers: fail a test when the order of tied scores alone can move a metric too far.

    from tieaware.testing import assert_tie_stable

    def test_model_has_no_spurious_ties():
        assert_tie_stable(qrels, run, ["ndcg@10", "mrr@10"], max_range=0.01, max_abs_bias=0.005)

Limits are a number for every metric or a ``{metric: number}`` mapping; a limit left out is not
checked. They apply to each metric's aggregate over queries (`MetricResult.aggregate`): the mean,
or the sum for trec_eval's counts (``num_q``, ``num_ret``, ``num_rel``, ``num_rel_ret``). The pytest plugin
(fixture ``tie_check``) wraps these helpers and adds markers, options, baselines and a report.
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from .arguments import is_limit
from .check_observers import notify, observe_checks
from .display import columns_table
from .errors import InputError
from .evaluation import evaluate
from .metrics import expand_names, metric_keys
from .report import EvaluationReport, MetricResult

if TYPE_CHECKING:
    from .inputs import QrelsLike, RunLike
    from .metrics import MetricsLike

#: a limit: one number for every metric, ``{metric: number}``, or None (not checked)
Limit = float | Mapping[Any, float] | None

#: Limit keyword -> (statistic it bounds, how the message names it).
LIMITS = {"max_range": ("range", "range"), "max_abs_bias": ("bias", "|bias|"), "max_std": ("tie_std", "tie_std")}
WORST_QUERIES = 5
#: Slack on every limit, for float round-off in aggregates over queries (``max_abs_bias=0`` must hold
#: on a run whose ties cannot matter).
ROUNDOFF = 1e-12


class TieInstabilityError(AssertionError):
    """A metric moves too far under the order of tied documents.

    Attributes:
        results: the `EvaluationReport` of every metric checked.
        violations: ``{metric: [reason, ...]}``, empty lists for the metrics that passed.
    """

    def __init__(self, message: str, results: EvaluationReport, violations: dict[str, list[str]]):
        super().__init__(message)
        self.results = results
        self.violations = violations


@dataclass(frozen=True)
class TieStability:
    """Outcome of `check_tie_stability`.

    Attributes:
        results: `EvaluationReport`, one `MetricResult` per metric.
        limits: ``{metric: {limit keyword: value}}`` holding only the limits that were set.
        violations: ``{metric: [reason, ...]}``; a metric passed when its list is empty.
    """

    results: EvaluationReport
    limits: dict[str, dict[str, float]]
    violations: dict[str, list[str]]
    dtype: str | None = None

    @property
    def passed(self) -> bool:
        return not any(self.violations.values())

    def limit_text(self, metric: str) -> str:
        """The limits of one metric in words, e.g. ``range<=0.01, |bias|<=0.005`` (``-`` when none)."""
        limits = self.limits[metric]
        return ", ".join(f"{LIMITS[key][1]}<={value:g}" for key, value in limits.items()) or "-"

    def message(self) -> str:
        """A table of every metric, then the queries with the widest range for each failing one."""
        failing = [metric for metric, reasons in self.violations.items() if reasons]
        order = next(iter(self.results.values())).oblivious_order
        headers = ["metric", "expected", f"obl[{order}]", "min", "max", "range", "bias", "limit", "queries with ties",
                   "status"]
        rows = []
        for metric, result in self.results.items():
            reasons = self.violations[metric]
            rows.append([metric, result.expected, result.oblivious, result.min, result.max, result.range, result.bias,
                         self.limit_text(metric), f"{result.n_queries_with_ties}/{result.n_queries}",
                         "FAIL: " + "; ".join(reasons) if reasons else "ok"])
        lines = [f"tie order moves {len(failing)} of {len(rows)} metrics past their limits",
                 columns_table(headers, list(zip(*rows)))]
        for metric in failing:
            result = self.results[metric]
            table: dict[str, list[Any]] = {"query_id": list(result.query_ids)}
            for c in ("expected", "oblivious", "min", "max", "range"):
                table[c] = result.per_query_values(c).tolist()
            spread = table["range"]
            worst = sorted((i for i, value in enumerate(spread) if value > 0), key=lambda i: -spread[i])[:WORST_QUERIES]
            if worst:
                columns = [[column[i] for i in worst] for column in table.values()]
                lines += ["", f"queries with the widest {metric} range:", columns_table(list(table), columns)]
        return "\n".join(lines)


def check_tie_stability(qrels: QrelsLike, run: RunLike, metrics: MetricsLike, *, max_range: Limit = None,
                        max_abs_bias: Limit = None, max_std: Limit = None, oblivious: str = "trec_eval",
                        relevance_level: float = 1, make_comparable: bool = False,
                        dtype: object = None) -> TieStability:
    """Evaluate with `tieaware.evaluate` and hold each metric to its limits; never raises on a breach.

    Args:
        qrels, run, metrics, oblivious, relevance_level, make_comparable: as `tieaware.evaluate`
            (names that expand, such as ``P.5,10`` or ``official``, are checked one by one).
        max_range: largest allowed ``max - min`` of the aggregate over queries, the mean (the sum for
            trec_eval's counts, ``num_rel_ret.10`` ...): what tie order alone can do.
        max_abs_bias: largest allowed ``|oblivious - expected|`` (how far the tool's number is off).
        max_std: largest allowed ``tie_std``, the standard deviation of that aggregate over tie orderings.
            Each limit is a number >= 0, a ``{metric: number}`` mapping (keyed by names or measure
            objects as ``metrics`` takes them), or None or ``math.inf`` (not checked).
        dtype: a label for reports (e.g. ``"bf16"`` or ``torch.bfloat16``); not used in the check.

    Returns:
        A `TieStability`: the results, the limits that were set and the violations per metric.
    """
    names = metric_keys(metrics)[0]
    given = {"max_range": max_range, "max_abs_bias": max_abs_bias, "max_std": max_std}
    limits = _limits_of(given, names)
    # a list of metric names gives an EvaluationReport
    results = cast(EvaluationReport, evaluate(qrels, run, names, oblivious=oblivious, relevance_level=relevance_level,
                                              make_comparable=make_comparable))
    violations: dict[str, list[str]] = {}
    for name, result in results.items():
        violations[name] = []
        for key, bound in limits[name].items():
            statistic, label = LIMITS[key]
            value = abs(getattr(result, statistic))
            if value > bound + ROUNDOFF:
                of = " (of the sum over queries)" if result.aggregate == "sum" else ""
                violations[name].append(f"{label}{of} {value:.6g} > {bound:g}")
    stability = TieStability(results, limits, violations, None if dtype is None else str(dtype).removeprefix("torch."))
    notify(stability)
    return stability


def assert_tie_stable(qrels: QrelsLike, run: RunLike, metrics: MetricsLike, *, max_range: Limit = None,
                      max_abs_bias: Limit = None, max_std: Limit = None, oblivious: str = "trec_eval",
                      relevance_level: float = 1, make_comparable: bool = False,
                      dtype: object = None) -> MetricResult | EvaluationReport:
    """Assert that no metric moves more under tie order than its limits allow.

    Under pytest with tieaware's plugin, every call is recorded in the "tie stability" summary and
    the ``--tie-json`` report.

    Args:
        qrels, run, metrics, max_range, max_abs_bias, max_std, oblivious, relevance_level, make_comparable, dtype:
            as `check_tie_stability`.

    Returns:
        What `tieaware.evaluate` returns: a `MetricResult` for one metric name, else an
        `EvaluationReport`.

    Raises:
        TieInstabilityError: (an AssertionError) a limit is exceeded; its message tables every
            metric (expected, oblivious, min, max, range, bias, limit, queries with ties) and the
            five queries with the widest range of each failing metric.
    """
    __tracebackhide__ = True  # pytest shows the test's line, not this one
    names, single = metric_keys(metrics)
    stability = check_tie_stability(qrels, run, names, max_range=max_range, max_abs_bias=max_abs_bias,
                                    max_std=max_std, oblivious=oblivious, relevance_level=relevance_level,
                                    make_comparable=make_comparable, dtype=dtype)
    if not stability.passed:
        raise TieInstabilityError(stability.message(), stability.results, stability.violations)
    return stability.results[names[0]] if single else stability.results


__all__ = ["TieInstabilityError", "TieStability", "assert_tie_stable", "check_tie_stability", "observe_checks"]


def _limits_of(given: dict[str, Limit], metrics: list[str]) -> dict[str, dict[str, float]]:
    """The limits that apply to each metric, validated: {metric: {keyword: value}}. A ``{metric: limit}``
    mapping is expanded once (names such as ``P.5,10`` stand for several metrics)."""
    per_metric: dict[str, Limit] = {}
    for key, limit in given.items():
        if isinstance(limit, Mapping):
            limit = {name: value for named, value in limit.items() for name in expand_names(named)}
            unknown = sorted(set(limit) - set(metrics))
            if unknown:
                raise InputError(f"{key} names metrics that are not checked: {unknown} (checked: {metrics})")
        per_metric[key] = limit
    limits: dict[str, dict[str, float]] = {}
    for metric in metrics:
        limits[metric] = {}
        for key, limit in per_metric.items():
            value = limit.get(metric) if isinstance(limit, Mapping) else limit
            if value is None:
                continue
            if not is_limit(value):
                raise InputError(f"{key} for {metric!r} must be a number >= 0, got {value!r}")
            if value != math.inf:  # an infinite limit switches the check off
                limits[metric][key] = float(value)
    return limits

