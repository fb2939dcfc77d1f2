"""Tie-aware objectives for tuning rank fusion: ranx's ``optimize_fusion`` with E[M] (or the worst
tie order, or E[M] less a penalty on the range) in place of the value under one arbitrary tie order.

Fusion creates ties (RRF gives bit-identical scores to documents with mirrored ranks), so the
value ``ranx.optimize_fusion`` maximises, ``ranx.evaluate`` under ranx's tie order, can pick a
parameter for how ties happen to fall. ranx takes the objective only as a metric name passed to
its own ``evaluate``, with no hook to plug another in, so `optimize_fusion` here walks ranx's own
search grid (`trial_params`: ranx's RRF ``k`` range and its weight grid, from ranx's
``get_possible_weights``/``get_trial_configs``), fuses each trial with ``ranx.fuse`` and scores it
with `tieaware.evaluate`. On a tie (equal objective) the later trial wins, as in ranx.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from .arguments import is_finite
from .errors import InputError
from .evaluation import evaluate
from .report import MetricResult

if TYPE_CHECKING:
    import ranx

    from .inputs import QrelsLike

#: ranx fusion methods tuned over ranx's weight grid (``params={"weights": ...}``)
WEIGHT_METHODS = ("wsum", "wmnz", "w_bordafuse", "w_condorcet", "mixed")
#: what `optimize_fusion` maximises: E[M], the worst tie order, E[M] - penalty * range, or the
#: value ranx.evaluate reports (ranx's tie order; ranx's own objective, for comparison)
OBJECTIVES = ("expected", "min", "penalized", "oblivious")


def trial_params(method: str, n_runs: int, **kwargs: Any) -> list[dict[str, Any]]:
    """The parameters ``ranx.optimize_fusion`` tries for ``method``, in its order.

    RRF: ``{"k": k}`` for k in ``range(min_k, max_k + 1, step)`` (ranx's defaults 10, 100, 10);
    weighted methods (`WEIGHT_METHODS`): ``{"weights": w}`` for each tuple of multiples of ``step``
    (default 0.1) summing to 1, from ranx's own grid functions.

    Raises:
        InputError: another method, or a keyword the method's grid does not take.
    """
    from ranx.fusion_optimization.optimize_weights import get_possible_weights, get_trial_configs

    if method == "rrf":
        _only(kwargs, ("min_k", "max_k", "step"), method)
        min_k, max_k, step = kwargs.get("min_k", 10), kwargs.get("max_k", 100), kwargs.get("step", 10)
        return [{"k": k} for k in range(min_k, max_k + 1, step)]
    if method in WEIGHT_METHODS:
        _only(kwargs, ("step",), method)
        return [{"weights": w} for w in get_trial_configs(get_possible_weights(kwargs.get("step", 0.1)), n_runs)]
    raise InputError(f"optimize_fusion tunes 'rrf' and the weighted methods {WEIGHT_METHODS}, got {method!r}.")


def _only(kwargs: Mapping[str, object], allowed: tuple[str, ...], method: str) -> None:
    unknown = sorted(set(kwargs) - set(allowed))
    if unknown:
        raise InputError(f"{method}: unknown search option(s) {unknown}; it takes {list(allowed)}.")


def objective_value(result: MetricResult, objective: str = "expected", penalty: float = 1.0) -> float:
    """The value `optimize_fusion` maximises for one `MetricResult` (see `OBJECTIVES`)."""
    if objective == "expected":
        return result.expected
    if objective == "min":
        return result.min
    if objective == "penalized":
        return result.expected - penalty * result.range
    if objective == "oblivious":
        return result.oblivious
    raise InputError(f"objective must be one of {OBJECTIVES}, got {objective!r}.")


def optimize_fusion(qrels: QrelsLike, runs: Sequence[ranx.Run], norm: str | None = "min-max", method: str = "wsum",
                    metric: str = "ndcg", return_optimization_report: bool = False, rounding_digits: int = 3,
                    show_percentages: bool = False, *, objective: str = "expected", penalty: float = 1.0,
                    relevance_level: float = 1, **kwargs: Any) -> dict[str, Any] | tuple[dict[str, Any], Any]:
    """``ranx.optimize_fusion`` with a tie-aware objective; the same call and return.

    Args:
        qrels: ranx ``Qrels`` (or anything `tieaware.evaluate` reads).
        runs: the ranx ``Run`` objects to fuse (two or more).
        norm, method: as in ranx (``method``: "rrf" or one of `WEIGHT_METHODS`).
        metric: one metric name (ranx syntax as in ranx; any syntax tieaware reads).
        return_optimization_report, rounding_digits, show_percentages: as in ranx; the report's
            values are the objective's.
        objective: "expected" (E[M], default), "min" (the worst tie order), "penalized"
            (E[M] - penalty * range) or "oblivious" (ranx.evaluate's value: ranx's own objective).
        penalty: weight of the range in "penalized" (>= 0).
        relevance_level: as in `tieaware.evaluate`.
        **kwargs: ranx's search options: ``min_k``, ``max_k``, ``step`` (RRF), ``step`` (weights).

    Returns:
        ``{"k": k}`` or ``{"weights": w}``, the best trial; with ``return_optimization_report`` a
        pair (best, ranx ``OptimizationReport``), whose ``metric_results`` attribute maps each
        trial's key (``str(k)``, ``str(weights)``) to its `MetricResult` (E, min, max, ...).

    Raises:
        InputError: fewer than two runs, an unknown method, objective or search option.
    """
    import ranx
    from ranx.data_structures import OptimizationReport

    if objective not in OBJECTIVES:
        raise InputError(f"objective must be one of {OBJECTIVES}, got {objective!r}.")
    if not (is_finite(penalty) and penalty >= 0):  # inf * 0 ties is NaN: no trial would ever win
        raise InputError(f"penalty must be a number >= 0 and finite, got {penalty!r}.")
    if not isinstance(metric, str):
        raise InputError(f"optimize_fusion tunes one metric, given by name; got {metric!r}.")
    if len(runs) < 2:
        raise InputError(f"optimize_fusion needs two or more runs, got {len(runs)}.")
    trials = trial_params(method, len(runs), **kwargs)
    best_value, best = -math.inf, trials[0]
    values: dict[str, float] = {}
    results: dict[str, MetricResult] = {}
    for params in trials:
        fused = ranx.fuse(runs, norm=norm, method=method, params=params)
        # one metric name gives a MetricResult
        result = cast(MetricResult, evaluate(qrels, fused, metric, oblivious="ranx", relevance_level=relevance_level))
        key = str(next(iter(params.values())))
        results[key] = result
        values[key] = value = objective_value(result, objective, penalty)
        if value >= best_value:
            best_value, best = value, params
    if not return_optimization_report:
        return dict(best)
    report = OptimizationReport(method=method, configs=list(values), results=list(values.values()), metric=metric,
                                rounding_digits=rounding_digits, show_percentages=show_percentages)
    report.metric_results = results
    return dict(best), report
