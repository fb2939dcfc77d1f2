"""Tie-aware objectives for tuning rank fusion: ranx's ``optimize_fusion`` with E[M] (or the worst
tie order, or E[M] less a penalty on the range) in place of the value under one arbitrary tie order.

Fusion creates ties (RRF gives bit-identical scores to documents with mirrored ranks), so the
value ``ranx.optimize_fusion`` maximises, ``ranx.evaluate`` under ranx's tie order, can pick a
parameter for how ties happen to fall. ranx takes the objective only as a metric name passed to
its own ``evaluate``, with no hook to plug another in, so `optimize_fusion` here walks ranx's own
search grid (`trial_params`: ranx's RRF ``k`` range and its weight grid, from ranx's
``get_possible_weights``/``get_trial_configs``), fuses each trial with ``ranx.fuse`` (or `fuse`'s
mean ranks, ``ties="mean_rank"``) and scores it with `tieaware.evaluate`. On a tie (equal
objective) the later trial wins, as in ranx.

Fusion inherits ties too: ranx ranks documents with equal scores by an arbitrary order, and a
rank-based method (RRF, Borda, ...) turns it into distinct fused scores. `fuse` is ``ranx.fuse``
with the same methods and names and, by default, a mean rank for tied documents instead.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence, Sized
from typing import TYPE_CHECKING, Any, cast

from .arguments import is_count, is_finite
from .errors import InputError
from .evaluation import evaluate
from .report import MetricResult

if TYPE_CHECKING:
    import numpy as np
    import ranx

    from .inputs import QrelsLike

#: ranx fusion methods tuned over ranx's weight grid (``params={"weights": ...}``)
WEIGHT_METHODS = ("wsum", "wmnz", "w_bordafuse", "w_condorcet", "mixed")
#: what `optimize_fusion` maximises: E[M], the worst tie order, E[M] - penalty * range, or the
#: value ranx.evaluate reports (ranx's tie order; ranx's own objective, for comparison)
OBJECTIVES = ("expected", "min", "penalized", "oblivious")

#: ranx.fuse's fusion methods, by ranx's names
METHODS = ("anz", "bayesfuse", "bordafuse", "condorcet", "gmnz", "isr", "log_isr", "logn_isr", "mapfuse", "max",
           "med", "min", "mixed", "mnz", "posfuse", "probfuse", "rbc", "rrf", "segfuse", "slidefuse", "sum",
           "w_bordafuse", "w_condorcet", "wmnz", "wsum")
#: ranx.fuse's normalisations (``norm=``)
NORMS = (None, "borda", "max", "min-max", "min_max", "min-max-inverted", "min_max_inverted", "rank", "sum", "zmuv")
#: methods whose per-run score is a function of a document's rank in the run, not of its score
RANK_METHODS = ("bayesfuse", "bordafuse", "isr", "log_isr", "logn_isr", "mapfuse", "posfuse", "probfuse", "rbc",
                "rrf", "segfuse", "slidefuse", "w_bordafuse")
#: methods that order candidates by pairwise majority votes between ranks (Python's sort of the candidates)
VOTE_METHODS = ("condorcet", "w_condorcet")
#: normalisations that are functions of the rank
RANK_NORMS = ("rank", "borda")
#: what `fuse` does with documents tied in an input run: give them their mean rank, or keep ranx's order
TIES = ("mean_rank", "ranx")
#: parameters holding one entry per run
PER_RUN_PARAMS = ("weights", "map_scores", "probs", "log_odds")
_INVERTED = ("min-max-inverted", "min_max_inverted")
#: segfuse's segment bounds (ranx: 0, then 10 * 2**(k - 1) - 5 for k = 1..10)
_SEGMENT_BOUNDS = [0] + [10 * 2 ** (k - 1) - 5 for k in range(1, 11)]


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
                    relevance_level: float = 1, ties: str = "ranx",
                    **kwargs: Any) -> dict[str, Any] | tuple[dict[str, Any], Any]:
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
        ties: how each trial fuses, as `fuse` takes it: "ranx" (default: ``ranx.fuse``, the fusion
            ranx.optimize_fusion tunes and ranx.fuse then applies with the pick) or "mean_rank"
            (`fuse`'s default: documents tied in an input run share their mean rank).
        **kwargs: ranx's search options: ``min_k``, ``max_k``, ``step`` (RRF), ``step`` (weights).

    Returns:
        ``{"k": k}`` or ``{"weights": w}``, the best trial; with ``return_optimization_report`` a
        pair (best, ranx ``OptimizationReport``), whose ``metric_results`` attribute maps each
        trial's key (``str(k)``, ``str(weights)``) to its `MetricResult` (E, min, max, ...).

    Raises:
        InputError: fewer than two runs, an unknown method, objective, ``ties`` or search option.
    """
    from ranx.data_structures import OptimizationReport

    if objective not in OBJECTIVES:
        raise InputError(f"objective must be one of {OBJECTIVES}, got {objective!r}.")
    if not (is_finite(penalty) and penalty >= 0):  # inf * 0 ties is NaN: no trial would ever win
        raise InputError(f"penalty must be a number >= 0 and finite, got {penalty!r}.")
    if not isinstance(metric, str):
        raise InputError(f"optimize_fusion tunes one metric, given by name; got {metric!r}.")
    if len(runs) < 2:
        raise InputError(f"optimize_fusion needs two or more runs, got {len(runs)}.")
    if not isinstance(ties, str) or ties not in TIES:
        raise InputError(f"ties must be one of {TIES}, got {ties!r}.")
    trials = trial_params(method, len(runs), **kwargs)
    best_value, best = -math.inf, trials[0]
    values: dict[str, float] = {}
    results: dict[str, MetricResult] = {}
    for params in trials:
        fused = fuse(runs, norm=norm, method=method, params=params, ties=ties)
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



def fuse(runs: Sequence[ranx.Run | Mapping[str, Mapping[str, float]]], norm: str | None = "min-max",
         method: str = "wsum", params: Mapping[str, Any] | None = None, *, ties: str = "mean_rank") -> ranx.Run:
    """``ranx.fuse`` (same methods, names and parameters) without the tie order ranx makes up.

    ranx ranks a run's documents by their position in its dict, sorted by score (numba's quicksort of
    the negated scores, stable for nothing), so documents with equal scores get distinct ranks in an
    order set by how the run was built, and a rank-based method (`RANK_METHODS`, the ``rank`` and
    ``borda`` normalisations) hands that order on as distinct fused scores. With
    ``ties="mean_rank"`` (default) a document's rank is its fractional rank: documents tied in a run
    share the mean of the positions their group occupies (c + (g - 1) / 2 for g documents below c
    others; Kendall's mid-rank), and each method's rank function is evaluated there: its formula
    (RRF 1 / (k + r + 1), Borda, ISR, RBC (1 - phi) phi^r, MAPFuse, rank/borda normalisation), or,
    for the per-position tables of posfuse, probfuse, segfuse, slidefuse and bayesfuse, the mean of
    the two positions around a half-integer rank. Tied documents then get equal per-run scores, the
    fused run no longer depends on the input's order within ties, and on tie-free runs the result is
    ranx's, score for score. Score-based methods and normalisations never see ranks, so they are
    ranx's own under either option. ``ties="ranx"`` is ``ranx.fuse`` itself.

    Ranks come from the scores (ascending for ``min-max-inverted``, which ranks by the inverted
    score); after ``norm="borda"`` the documents a run lacks are tied below its own. condorcet and
    w_condorcet sort candidates by pairwise votes with Python's sort, whose outcome depends on the
    candidates' (set) order where votes split; with ``ties="mean_rank"`` they run only on tie-free
    runs. The parameters of the trained methods (``posfuse_train`` ...) are ranx's, learnt under
    ranx's tie order.

    Args:
        runs: two or more ranx ``Run`` objects, or ``{query: {doc: score}}`` dicts, over the same queries.
        norm: ranx's normalisation (`NORMS`).
        method: ranx's fusion method (`METHODS`).
        params: the method's parameters, as in ranx (``{"k": 60}``, ``{"weights": [...]}``, ...).
        ties: "mean_rank" or "ranx" (`TIES`).

    Returns:
        The fused ranx ``Run``. The runs given are not modified.

    Raises:
        InputError: fewer than two runs, runs over different queries, a score that is not finite, an
            unknown norm, method, ties option or parameter, a missing parameter, a per-run parameter
            (weights, ...) without one entry per run, or a vote method on tied runs under "mean_rank".

    Examples:
        >>> from tieaware.fusion import fuse
        >>> a = {"q1": {"d1": 0.9, "d2": 0.5, "d3": 0.5}}   # d2 and d3 tie
        >>> b = {"q1": {"d1": 0.1, "d2": 0.3, "d3": 0.2}}
        >>> fused = fuse([a, b], norm=None, method="rrf", params={"k": 60})
        >>> round(fused["q1"]["d2"] - fused["q1"]["d3"], 6)   # d2 ahead of d3 only because b says so
        0.000264
    """
    import ranx

    ranx_runs = _as_ranx_runs(runs)
    if norm not in NORMS:
        raise InputError(f"norm must be one of {NORMS}, got {norm!r}.")
    if not isinstance(method, str) or method not in METHODS:
        raise InputError(f"method must be one of ranx's fusion methods {METHODS}, got {method!r}.")
    if not isinstance(ties, str) or ties not in TIES:
        raise InputError(f"ties must be one of {TIES}, got {ties!r}.")
    arguments = _method_arguments(method, params, len(ranx_runs))
    if ties == "ranx" or (method not in RANK_METHODS + VOTE_METHODS and norm not in RANK_NORMS):
        return ranx.fuse(ranx_runs, norm=norm, method=method, params=dict(params or {}))
    lists = [_ranked_lists(run, index, ascending=norm in _INVERTED) for index, run in enumerate(ranx_runs)]
    if method in VOTE_METHODS:
        _refuse_ties(lists, method)
        return ranx.fuse(ranx_runs, norm=norm, method=method, params=dict(params or {}))
    normalized = _normalize(ranx_runs, lists, norm)
    if method not in RANK_METHODS:
        from ranx.fusion import fusion_switch

        return fusion_switch(method)([_to_run(scores) for _, scores in normalized], **arguments)
    return _rank_fusion(method, normalized, arguments)


def _as_ranx_runs(runs: Any) -> list[ranx.Run]:
    """The runs as ranx ``Run`` objects (dicts converted, Runs as given), over the same queries."""
    import ranx

    if isinstance(runs, (str, bytes, Mapping)) or not isinstance(runs, Sequence):
        raise InputError(f"fuse takes a list of runs, got {type(runs).__name__}.")
    if len(runs) < 2:
        raise InputError(f"fuse needs two or more runs, got {len(runs)}.")
    out = []
    for index, run in enumerate(runs):
        if isinstance(run, Mapping):
            run = ranx.Run({str(q): {str(d): s for d, s in docs.items()} for q, docs in run.items()})
        elif not isinstance(run, ranx.Run):
            raise InputError(f"run #{index} must be a ranx Run or a {{query: {{doc: score}}}} dict, "
                             f"got {type(run).__name__}.")
        out.append(run)
    first = set(out[0].keys())
    for index, run in enumerate(out[1:], start=1):
        queries = set(run.keys())
        if queries != first:
            only = sorted(queries ^ first)[:5]
            raise InputError(f"runs #0 and #{index} have different queries, e.g. {only}; fuse needs the same queries.")
    return out


def _method_arguments(method: str, params: Mapping[str, Any] | None, n_runs: int) -> dict[str, Any]:
    """``params`` checked against ranx's signature of ``method``, with its defaults filled in."""
    import inspect

    from ranx.fusion import fusion_switch

    if params is not None and not isinstance(params, Mapping):
        raise InputError(f"params must be a dict of {method}'s parameters, got {type(params).__name__}.")
    given = dict(params or {})
    signature = inspect.signature(fusion_switch(method)).parameters
    accepted = [name for name in signature if name != "runs"]
    unknown = sorted(set(given) - set(accepted))
    if unknown:
        raise InputError(f"{method} takes the parameters {accepted}, got unknown {unknown}.")
    missing = [name for name in accepted if signature[name].default is inspect.Parameter.empty and name not in given]
    if missing:
        raise InputError(f"{method} needs the parameter(s) {missing} in params.")
    arguments = {name: given.get(name, signature[name].default) for name in accepted}
    for name in PER_RUN_PARAMS:
        if name in arguments:
            value = arguments[name]
            count = len(value) if isinstance(value, Sized) and not isinstance(value, str) else None
            if count != n_runs:
                raise InputError(f"{method}: params[{name!r}] needs one entry per run ({n_runs}), got {value!r}.")
    for name in ("k", "phi", "sigma", "gamma", "w"):
        if name in arguments and not is_finite(arguments[name]):
            raise InputError(f"{method}: params[{name!r}] must be a finite number, got {arguments[name]!r}.")
    if method == "logn_isr" and not 0 <= arguments["sigma"] <= 1:
        raise InputError(f"logn_isr: params['sigma'] must be in [0, 1], got {arguments['sigma']!r}.")
    if method == "slidefuse" and not is_count(arguments["w"]):
        raise InputError(f"slidefuse: params['w'] must be an integer >= 0, got {arguments['w']!r}.")
    return arguments


#: one run's queries: query id -> (doc ids, scores, mean ranks); ranks are 0-based
RankedRun = dict[str, tuple[list[str], "np.ndarray", "np.ndarray"]]


def _ranked_lists(run: ranx.Run, index: int, ascending: bool) -> RankedRun:
    """Per query of ``run``: its doc ids, scores and mean ranks (by score descending, or ascending)."""
    import numpy as np

    out = {}
    for query, docs in run.to_dict().items():
        ids = list(docs)
        scores = np.fromiter(docs.values(), dtype=np.float64, count=len(ids))
        bad = np.flatnonzero(~np.isfinite(scores))
        if len(bad):
            raise InputError(f"run #{index}, query {query!r}: document {ids[bad[0]]!r} has score "
                             f"{float(scores[bad[0]])!r}; fuse needs finite scores.")
        out[query] = (ids, scores, mean_ranks(scores if ascending else -scores))
    return out


def mean_ranks(keys: np.ndarray) -> np.ndarray:
    """0-based fractional ranks of ``keys`` in ascending order: equal keys share the mean of their positions.

    Args:
        keys: the values to rank (negated scores, for ranks by score descending).

    Returns:
        One rank per key: a group of g equal keys above c smaller ones ranks c + (g - 1) / 2
        (Kendall's mid-rank, 0-based; ``scipy.stats.rankdata(keys, "average") - 1``).

    Examples:
        >>> import numpy as np
        >>> mean_ranks(np.array([-0.9, -0.5, -0.5, -0.1])).tolist()
        [0.0, 1.5, 1.5, 3.0]
    """
    import numpy as np

    order = np.argsort(keys, kind="stable")
    ordered = keys[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    ends = np.r_[starts[1:], len(keys)]
    ranks = np.empty(len(keys))
    ranks[order] = np.repeat((starts + ends - 1) / 2.0, ends - starts)
    return ranks


def _refuse_ties(lists: list[RankedRun], method: str) -> None:
    """Raise where a run has tied documents: the vote methods cannot take a mean rank."""
    for index, ranked in enumerate(lists):
        for query, (ids, _, ranks) in ranked.items():
            tied = [doc for doc, rank in zip(ids, ranks) if (ranks == rank).sum() > 1]
            if tied:
                raise InputError(f"{method} with ties='mean_rank': run #{index}, query {query!r} has tied documents "
                                 f"{tied[:4]}; {method} orders candidates by pairwise votes, which give tied "
                                 f"documents no consistent order. Pass ties='ranx' for ranx's result.")


#: one run after normalisation: per query (doc ids, mean ranks), and per query {doc: normalised score}
Normalized = tuple[dict[str, tuple[list[str], "np.ndarray"]], dict[str, dict[str, float]]]


def _normalize(runs: list[ranx.Run], lists: list[RankedRun], norm: str | None) -> list[Normalized]:
    """Each run's ranked documents and scores after ranx's normalisation ``norm``, ranks as mean ranks.

    ``rank``: 1 - r / n; ``borda``: 1 - r / C for the run's documents and 0.5 - (n - 1) / (2 C) for the
    other candidates, ranked below the run's (mean rank (n + C - 1) / 2) (ranx's borda_norm; C
    candidates in all runs); the others are ranx's own functions of the scores.
    """
    import numpy as np
    from ranx.normalization import norm_switch

    out: list[Normalized] = []
    candidates = {query: sorted({doc for ranked in lists for doc in ranked[query][0]}) for query in lists[0]}
    for run, ranked in zip(runs, lists):
        positions, scores = {}, {}
        normalized = {} if norm in (None, *RANK_NORMS) else norm_switch(norm)(run).to_dict()
        for query, (ids, raw, ranks) in ranked.items():
            n = len(ids)
            if norm == "borda":
                present = set(ids)
                absent = [doc for doc in candidates[query] if doc not in present]
                count = len(candidates[query])
                values = np.r_[1 - ranks / count, np.full(len(absent), 0.5 - (n - 1) / (2 * count))]
                ids, ranks = ids + absent, np.r_[ranks, np.full(len(absent), (n + count - 1) / 2)]
            elif norm == "rank":
                values = 1 - ranks / n
            elif norm is None:
                values = raw
            else:
                values = np.array([normalized[query][doc] for doc in ids])
            positions[query] = (ids, ranks)
            scores[query] = dict(zip(ids, values.tolist()))
        out.append((positions, scores))
    return out


def _to_run(scores: Mapping[str, Mapping[str, float]]) -> ranx.Run:
    import ranx

    return ranx.Run.from_dict(dict(scores))


def _rank_fusion(method: str, normalized: list[Normalized], arguments: dict[str, Any]) -> ranx.Run:
    """Each run's per-document score from its mean ranks (ranx's function of the rank), combined by
    ranx's own combiner for ``method`` (comb_sum, comb_mnz, wsum, ...)."""
    import numpy as np
    import ranx
    from numba.typed import List as TypedList
    from ranx.fusion import comb_mnz, comb_sum, wsum
    from ranx.fusion.bayesfuse import sum_odds
    from ranx.fusion.log_isr import _log_comb_mnz_parallel
    from ranx.fusion.logn_isr import _norm_log_comb_mnz_parallel

    name = arguments.pop("name")
    per_run = []
    for index, (positions, scores) in enumerate(normalized):
        run_scores = {}
        for query, (ids, ranks) in positions.items():
            values = np.array([scores[query][doc] for doc in ids])
            n_candidates = len({doc for other, _ in normalized for doc in other[query][0]})
            own = _rank_scores(method, arguments, index, ranks, values, n_candidates)
            run_scores[query] = dict(zip(ids, own.tolist()))
            if method in ("bordafuse", "w_bordafuse"):  # candidates the run lacks share the remaining points
                absent = {doc for other, _ in normalized for doc in other[query][0]} - set(ids)
                points = (n_candidates - len(ids) + 1) / 2
                run_scores[query].update(dict.fromkeys(absent, points))
        per_run.append(_to_run(run_scores))
    if method in ("isr", "log_isr", "logn_isr"):
        fused = ranx.Run()
        typed = TypedList([run.run for run in per_run])
        if method == "isr":
            fused = comb_mnz(per_run)
        elif method == "log_isr":
            fused.run = _log_comb_mnz_parallel(typed)
        else:
            fused.run = _norm_log_comb_mnz_parallel(typed, arguments["sigma"])
        fused.sort()
    elif method == "w_bordafuse":
        fused = wsum(per_run, arguments["weights"])
    elif method == "bayesfuse":
        fused = sum_odds(per_run)
    else:
        return comb_sum(per_run, name)
    fused.name = name
    return fused


def _rank_scores(method: str, arguments: Mapping[str, Any], index: int, ranks: np.ndarray, values: np.ndarray,
                 n_candidates: int) -> np.ndarray:
    """Run ``index``'s score of each document from its mean rank r (0-based) as ranx defines it per
    method; tables indexed by position are read at the two positions around a half-integer rank."""
    scores: np.ndarray
    if method == "rrf":
        scores = 1 / (arguments["k"] + ranks + 1)
    elif method in ("isr", "log_isr", "logn_isr"):
        scores = 1 / (ranks + 1) ** 2
    elif method == "rbc":
        scores = (1 - arguments["phi"]) * _power(arguments["phi"], ranks)
    elif method == "mapfuse":
        scores = arguments["map_scores"][index] / (ranks + 1)
    elif method in ("bordafuse", "w_bordafuse"):
        scores = n_candidates - ranks
    else:
        scores = _table_scores(method, arguments, index, ranks, values)
    return scores


def _table_scores(method: str, arguments: Mapping[str, Any], index: int, ranks: np.ndarray,
                  values: np.ndarray) -> np.ndarray:
    """The methods whose score is a table indexed by position (posfuse, probfuse, segfuse, slidefuse,
    bayesfuse), read at the mean ranks (`_at_ranks`)."""
    import numpy as np

    n = len(ranks)
    if method == "posfuse":
        probs = np.asarray(arguments["probs"][index], dtype=np.float64)
        table = np.zeros(n)
        table[:min(n, len(probs))] = probs[:n]
    elif method == "probfuse":
        segment_probs = np.asarray(arguments["probs"][index], dtype=np.float64)
        size, table = math.ceil(n / len(segment_probs)), np.zeros(n)
        for k, prob in enumerate(segment_probs):
            table[k * size:(k + 1) * size] = prob / (k + 1)
    elif method == "segfuse":
        segment_probs = np.asarray(arguments["probs"][index], dtype=np.float64)
        table = np.zeros(n)
        for k, prob in enumerate(segment_probs[:len(_SEGMENT_BOUNDS) - 1]):
            table[_SEGMENT_BOUNDS[k]:_SEGMENT_BOUNDS[k + 1]] = prob
        return np.asarray(_at_ranks(table, ranks) * (values + 1), dtype=np.float64)
    elif method == "slidefuse":
        table = _sliding_means(np.asarray(arguments["probs"][index], dtype=np.float64), n, arguments["w"])
    else:  # bayesfuse
        log_odds = np.asarray(arguments["log_odds"][index], dtype=np.float64)
        if n > len(log_odds):
            raise InputError(f"bayesfuse: params['log_odds'][{index}] has {len(log_odds)} positions, a query of "
                             f"run #{index} has {n} documents.")
        table = log_odds[:n]
    return _at_ranks(table, ranks)


def _at_ranks(table: np.ndarray, ranks: np.ndarray) -> np.ndarray:
    """``table`` (one value per position) at each rank; the mean of the two positions around a
    half-integer rank (mean ranks are integers or halves)."""
    import numpy as np

    low, high = np.floor(ranks).astype(np.int64), np.ceil(ranks).astype(np.int64)
    return np.asarray(np.where(low == high, table[low], (table[low] + table[high]) / 2), dtype=np.float64)


def _power(base: float, ranks: np.ndarray) -> np.ndarray:
    """base ** r: at integer r by squaring, as numba computes ``float ** int`` in ranx's rbc (so tie-free
    runs give ranx's scores bit for bit), at half-integer r by ``pow``."""
    import numpy as np

    whole = ranks == np.floor(ranks)
    result = np.asarray(np.power(base, ranks), dtype=np.float64)
    exponents = ranks[whole].astype(np.int64)
    powers, factor = np.ones(len(exponents)), np.full(len(exponents), float(base))
    while exponents.any():
        odd = (exponents & 1).astype(bool)
        powers[odd] *= factor[odd]
        exponents >>= 1
        factor *= factor
    result[whole] = powers
    return result


def _sliding_means(probs: np.ndarray, n: int, w: int) -> np.ndarray:
    """slidefuse's table: at position p, the mean of probs[a..b], a = max(p - w, 0), b = min(p + w, n - 1),
    summed left to right as ranx does (positions past ``probs`` add nothing, but count)."""
    import numpy as np

    positions = np.arange(n)
    low, high = np.maximum(positions - w, 0), np.minimum(positions + w, n - 1)
    total = np.zeros(n)
    for offset in range(-w, w + 1):
        at = positions + offset
        inside = (at >= low) & (at <= high) & (at < len(probs))
        total[inside] += probs[at[inside]]
    return np.asarray(total / (high - low + 1), dtype=np.float64)
