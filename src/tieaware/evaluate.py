"""`evaluate`: a drop-in for ``ranx.evaluate`` that reports what tie order does."""
from __future__ import annotations

from contextlib import contextmanager

import numba
import numpy as np

from .kernels.stats import FAMILY_CODES, GAIN_CODES, metric_table
from .metrics import MetricSpec, parse_metrics
from .ranked_lists import OBLIVIOUS_ORDERS, RankedLists, ranked_lists
from .report import EvaluationReport, MetricResult, per_query_frame


@contextmanager
def _numba_threads(threads: int):
    if threads <= 0:
        yield
        return
    before = numba.get_num_threads()
    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    try:
        yield
    finally:
        numba.set_num_threads(before)


def _discounts(lists: RankedLists) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """1/log2(r+1) per rank r >= 1 (index 0 unused) and the cumulative sums of it and its square."""
    longest = int(max(lists.n_ret.max(initial=0), np.diff(lists.qrel_offsets).max(initial=0))) + 1
    per_rank = np.zeros(longest + 1)
    per_rank[1:] = 1.0 / np.log2(np.arange(2, longest + 2))
    return per_rank, np.cumsum(per_rank), np.cumsum(per_rank ** 2)


def metric_stats(lists: RankedLists, spec: MetricSpec, oblivious: str = "trec_eval") -> np.ndarray:
    """Per-query (E, Var, min, max, oblivious) of one metric: array (Q, 5)."""
    disc_rank, disc_cum, disc2_cum = _discounts(lists)
    floor = -np.inf if spec.gain_floor is None else float(spec.gain_floor)
    return metric_table(
        FAMILY_CODES[spec.family], spec.k or 0, GAIN_CODES[spec.gain], float(spec.relevance_level), floor,
        float(spec.persistence), lists.n_ret, lists.n_groups, lists.mem_offsets, lists.grp_above,
        lists.grp_size, lists.grp_mem_end, lists.mem_rel, lists.tool_rank(oblivious), lists.qrel_offsets,
        lists.qrel_rel, disc_rank, disc_cum, disc2_cum)


def evaluate(qrels, run, metrics, return_mean: bool = True, return_std: bool = False, threads: int = 0,
             save_results_in_run: bool = False, make_comparable: bool = False, *,
             oblivious: str = "trec_eval", relevance_level: int = 1):
    """Tie-aware evaluation; the same call as ``ranx.evaluate``.

    For every query and metric it computes, exactly and without sampling, the
    expected value E[M] over all orderings of documents with equal scores, the
    worst and best orderings (min, max), the variance over orderings, and the
    value M_obl under the tie order a tool would use (``oblivious``).

    Differences from ranx: the number returned is E[M], not the value under
    ranx's arbitrary tie order (that one is ``.oblivious`` with
    ``oblivious="ranx"``); conventions are trec_eval's, so tie-free results
    equal pytrec_eval's (P@k divides by k, R counts unretrieved relevant
    documents, negative grades are non-relevant and ignored by bpref); results
    are not written into the run unless ``save_results_in_run=True``.

    Args:
        qrels: ranx ``Qrels``, ``{qid: {docid: grade}}``, a TREC qrels path or a DataFrame.
        run: ranx ``Run``, ``{qid: {docid: score}}``, a TREC run path or a DataFrame.
        metrics: a name or a list of names in ranx, trec_eval or ir_measures syntax
            (``"ndcg@10"``, ``"ndcg_cut.10"``, ``"nDCG@10"``); see `tieaware.metrics`.
        return_mean: False gives, per metric, a numpy array of per-query E[M]
            (query order: the run's), as ranx does.
        return_std: True gives ``{"mean": MetricResult, "std": std over queries}`` per metric, as ranx.
        threads: numba threads for this call (0: numba's default).
        save_results_in_run: write E[M] into a ranx ``Run``'s ``mean_scores``/``scores`` as ranx does.
        make_comparable: score queries in the qrels but not in the run as empty
            (0) and drop run queries without qrels, instead of raising.
        oblivious: whose tie order gives ``.oblivious``: "trec_eval" (pytrec_eval,
            ir_measures, MTEB: score desc, doc id desc), "ranx" (ranx.evaluate on this
            same object), or "input" (first given first).
        relevance_level: judgments >= this are relevant unless the name sets its own.

    Returns:
        One `MetricResult` (a float) for one metric name, else an
        `EvaluationReport` (a dict keyed by the names given).

    Examples:
        >>> qrels = {"q1": {"d1": 1}}
        >>> run = {"q1": {"d1": 0.5, "d2": 0.5}}
        >>> res = evaluate(qrels, run, "mrr")
        >>> round(float(res), 2), res.min, res.max
        (0.75, 0.5, 1.0)
    """
    if oblivious not in OBLIVIOUS_ORDERS:
        raise ValueError(f"oblivious must be one of {OBLIVIOUS_ORDERS}, got {oblivious!r}.")
    specs = parse_metrics(metrics, relevance_level)
    with _numba_threads(threads):
        lists = ranked_lists(qrels, run, make_comparable)
        results = {spec.name: MetricResult(spec.name, per_query_frame(lists.query_ids, metric_stats(lists, spec, oblivious)),
                                           oblivious)
                   for spec in specs}
    if save_results_in_run:
        _save_in_run(run, results)
    if not return_mean:
        out = {name: r.per_query["expected"].to_numpy() for name, r in results.items()}
    elif return_std:
        out = {name: {"mean": r, "std": float(r.per_query["expected"].std(ddof=0))} for name, r in results.items()}
    else:
        out = EvaluationReport(results)
    return next(iter(out.values())) if isinstance(metrics, str) else out


def _save_in_run(run, results: dict) -> None:
    from .inputs import RanxRun

    if not isinstance(run, RanxRun):
        raise ValueError("save_results_in_run=True needs a ranx Run.")
    for name, r in results.items():
        run.mean_scores[name] = r.expected
        run.scores[name] = r.per_query["expected"].to_dict()
