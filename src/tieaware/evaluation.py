"""`evaluate`: a drop-in for ``ranx.evaluate`` that reports what tie order does."""
from __future__ import annotations

import dataclasses
import math
import os
import warnings

import numpy as np

from .arguments import check_oblivious, is_count, is_finite
from .errors import InputError, QueryValueError
from .inputs import QrelsLike, RunLike, is_ranx_qrels, is_ranx_run, load_qrels, load_run, without_identical_ids
from .kernels.families import Judged, family_stats
from .metrics import MetricsLike, MetricSpec, metric_keys, parse_metrics
from .outputs import check_outputs
from .ranked_lists import TIE_AVERAGED_NDCG, RankedLists, ranked_lists, tool_order
from .report import EvaluationReport, MetricResult
from .threads import limited


def tie_order(spec: MetricSpec, oblivious: str) -> str:
    """The order inside tie groups (`TIE_ORDERS`) that tool `oblivious` uses for this metric."""
    return tool_order(oblivious, spec.family, spec.k)


def judged_lists(lists: RankedLists, order: str = "trec_eval") -> Judged:
    """The arrays every metric family reads, with `order` (one of `TIE_ORDERS`) as the tool's tie order."""
    return Judged.build(lists.n_ret, lists.n_groups, lists.mem_offsets, lists.grp_above, lists.grp_size,
                        lists.grp_mem_start, lists.grp_mem_end, lists.mem_rel, lists.tool_rank(order),
                        lists.qrel_offsets, lists.qrel_rel)


def metric_stats(lists: RankedLists | Judged, spec: MetricSpec, oblivious: str = "trec_eval") -> np.ndarray:
    """Per-query (E, Var, min, max, oblivious) of one metric: array (Q, 5).

    Dispatches on ``spec.family`` (`tieaware.registry.FAMILIES`); a `Judged`
    (from `judged_lists`) already carries its tie order, and ``oblivious`` is then ignored.
    """
    if spec.judged_only:
        raise InputError(f"{spec.name}: judged_only removes documents from the run; evaluate it with "
                         "tieaware.evaluate (per_query_tables), not on ranked lists built from the whole run.")
    judged = lists if isinstance(lists, Judged) else judged_lists(lists, tie_order(spec, oblivious))
    if spec.grade_map is not None:
        judged = judged.regraded(dict(spec.grade_map))
    return family_stats(spec.family, judged, spec)


def evaluate(qrels: QrelsLike, run: RunLike, metrics: MetricsLike, return_mean: bool = True,
             return_std: bool = False, threads: int = 0, save_results_in_run: bool = False,
             make_comparable: bool = False, *, oblivious: str = "trec_eval", relevance_level: float = 1,
             stream: bool | int = False, per_query_out: str | os.PathLike | None = None,
             ignore_identical_ids: bool = False) -> MetricResult | EvaluationReport | dict:
    """Tie-aware evaluation; the same call as ``ranx.evaluate``.

    For every query and metric it computes, exactly and without sampling, the
    expected value E[M] over all orderings of documents with equal scores, the
    worst and best orderings (min, max), the variance over orderings, and the
    value M_obl under the tie order a tool would use (``oblivious``).

    Differences from ranx: the number returned is E[M], not the value under
    ranx's arbitrary tie order (that one is ``.oblivious`` with
    ``oblivious="ranx"``); conventions are trec_eval's, so tie-free results
    equal pytrec_eval's (P@k divides by k, R counts unretrieved relevant
    documents, negative grades are non-relevant and ignored by bpref); and
    ``save_results_in_run`` is off by default (see below).

    Args:
        qrels: ranx ``Qrels``, ``{qid: {docid: grade}}``, a TREC qrels path or open file, a DataFrame
            or records (`tieaware.inputs`).
        run: ranx ``Run``, ``{qid: {docid: score}}``, a run file's path or an open file (TREC,
            ``qid<TAB>docid<TAB>score``, sentence-transformers predictions ``.jsonl``, JSON, Parquet),
            a DataFrame or records (`tieaware.inputs`).
        metrics: a name or a list of names in ranx, trec_eval or ir_measures syntax
            (``"ndcg@10"``, ``"ndcg_cut.10"``, ``"nDCG@10"``); see `tieaware.metrics`.
        return_mean: False gives, per metric, a numpy array of per-query E[M]
            (query order: the run's), as ranx does.
        return_std: True gives ``{"mean": MetricResult, "std": std over queries}`` per metric, as ranx.
        threads: threads reading the run, as in ranx (0: every CPU available, at most
            ``NUMBA_NUM_THREADS``); results do not depend on it. Plain Python threads run
            kernels that release the GIL (`tieaware.threads`), so calls from several Python
            threads at once are safe and numba's global settings are never changed.
        save_results_in_run: False (the default; ranx's is True): the run is never modified. True:
            as ranx does, E[M] is written into a ranx ``Run``: the mean in ``run.mean_scores[name]``,
            per query in ``run.scores[name][query_id]`` and, with ``return_std``, the spread across
            queries in ``run.std_scores[name]``; a run that is not a ranx ``Run`` raises `InputError`.
        make_comparable: score queries in the qrels but not in the run as empty
            (0) and drop run queries without qrels, instead of raising.
        oblivious: whose tie order gives ``.oblivious``: "trec_eval" (pytrec_eval,
            MTEB: score desc, doc id desc), "ranx" (ranx.evaluate on this same object; for a
            file path or a DataFrame, on the Run ranx reads from it, ``Run.from_file`` or
            ``Run.from_df``, whose ties are ordered unlike a dict's),
            "input" (first given first), or "ir_measures" (its default pipeline: trec_eval's
            order, except doc id ascending for RR@k and Judged@k and input order for RBP;
            see `tieaware.ranked_lists.ir_measures_order`), "sentence_transformers" (its
            InformationRetrievalEvaluator: score desc, doc id ascending),
            "sentence_transformers_reranking" (its CrossEncoderRerankingEvaluator's MRR and
            nDCG; see `tieaware.ranked_lists.tool_order`), "mteb" (trec_eval's
            order) or "torchmetrics" (its retrieval metrics on the CPU, each metric's own torch
            operation; see `tieaware.ranked_lists.torchmetrics_order`).
        relevance_level: judgments >= this are relevant unless the name sets its own.
        stream: for a TREC run file larger than memory: read it in chunks of whole queries
            (True: 1,000 queries or about 65,536 documents a chunk; an int: that many queries), so
            memory grows with the chunk, not the run. Results equal the in-memory path exactly. A
            file not grouped by query is partitioned by query first (`tieaware.streaming`).
        ignore_identical_ids: BEIR's convention (``EvaluateRetrieval.evaluate``'s default): a
            retrieved document whose id equals its query's id is dropped before ranking
            (`tieaware.inputs.without_identical_ids`; the run given is not changed, where BEIR pops
            them from it). False (the default): every document counts, as trec_eval counts it.
        per_query_out: a path; per-query rows (metric, query, statistics) are written there
            as TSV (``.parquet``: Parquet) with the metric names, relevance level, tie order,
            ``ignore_identical_ids`` and tieaware version, for `tieaware.streaming.merge` of sharded
            evaluations; the file appears only once complete, and a path that is the qrels or run
            file is an error.

    Returns:
        One `MetricResult` (a float) for one metric name, else an
        `EvaluationReport` (a dict keyed by the names given; a name that expands,
        such as trec_eval's ``P`` or ``P.5,10``, gives one entry per member).

    Examples:
        >>> qrels = {"q1": {"d1": 1}}
        >>> run = {"q1": {"d1": 0.5, "d2": 0.5}}
        >>> res = evaluate(qrels, run, "mrr")
        >>> round(float(res), 2), res.min, res.max
        (0.75, 0.5, 1.0)
    """
    _check_arguments(oblivious, relevance_level, threads)
    check_outputs([per_query_out], [qrels, run])
    keys, single = metric_keys(metrics)
    specs = parse_metrics(keys, relevance_level)
    with limited(threads):
        if stream:
            from .streaming import evaluate_stream

            query_ids, tables, *_ = evaluate_stream(qrels, run, specs, make_comparable, oblivious,
                                                    chunk_queries=None if stream is True else stream,
                                                    ignore_identical_ids=ignore_identical_ids)
        else:
            query_ids, tables = per_query_tables(qrels, run, specs, make_comparable, oblivious,
                                                 ignore_identical_ids)
        results = {spec.name: MetricResult.from_table(spec.name, query_ids, tables[spec.name], oblivious,
                                                      spec.aggregate) for spec in specs}
    if per_query_out is not None:
        from .streaming import write_per_query

        write_per_query(per_query_out, {name: r.per_query for name, r in results.items()}, oblivious=oblivious,
                        relevance_level=relevance_level, ignore_identical_ids=ignore_identical_ids)
    if not query_ids:
        warnings.warn("No queries to evaluate (empty qrels and run): every result is NaN.", RuntimeWarning,
                      stacklevel=2)
    if save_results_in_run:
        _save_in_run(run, results, return_std)
    if not return_mean:
        out = {name: r.per_query_values("expected") for name, r in results.items()}
    elif return_std:
        out = {name: {"mean": r, "std": _query_std(r.per_query_values("expected"))} for name, r in results.items()}
    else:
        out = EvaluationReport(results)
    return next(iter(out.values())) if single else out


def per_query_tables(qrels, run, specs: list[MetricSpec], make_comparable: bool, oblivious: str,
                     ignore_identical_ids: bool = False, from_file: bool | None = None):
    """(query ids, {metric name: per-query table (Q, 5), `metric_stats`' columns}) of one qrels/run
    pair held in memory (`from_file`: as `ranked_lists`), or of a run already read into `RankedLists`
    (by `streaming` from a file). The tables are read-only: they are cached
    with a ranx Run's conversion. ``ignore_identical_ids``: BEIR's convention
    (`tieaware.inputs.without_identical_ids`)."""
    if ignore_identical_ids:
        run = without_identical_ids(run)
    if any(spec.judged_only for spec in specs):
        return _with_judged_only(qrels, run, specs, make_comparable, oblivious)
    lists = run if isinstance(run, RankedLists) else ranked_lists(qrels, run, make_comparable, from_file)
    tables = {}
    this_call = {}  # per tie order, the kept `Judged` with flags shared by this call's metrics only
    for spec in specs:
        if oblivious == "sentence_transformers_reranking" and spec.family == "ap":
            raise InputError(f"{spec.name}: sentence-transformers' reranking MAP is sklearn's average_precision_score, "
                             "which gives tied relevant documents the precision at their group's end: no tie "
                             "order gives it (TieAwareRerankingEvaluator reports it beside E[AP]).")
        averaged = oblivious in TIE_AVERAGED_NDCG and spec.family == "ndcg"  # the tool's nDCG is E[nDCG]
        order = "input" if averaged else tie_order(spec, oblivious)
        key = (dataclasses.replace(spec, name=""), order, averaged)
        if key not in lists.stats:  # kept with the lists: a cached ranx Run evaluated again reuses them
            if order not in this_call:
                if order not in lists.judged:
                    lists.judged[order] = judged_lists(lists, order)
                this_call[order] = dataclasses.replace(lists.judged[order], shared_flags={})
            stats = _finite_stats(lists, this_call[order], spec)
            if averaged:
                stats[:, 4] = stats[:, 0]
            stats.setflags(write=False)
            lists.stats[key] = stats
        tables[spec.name] = lists.stats[key]
    return lists.query_ids, tables


def _with_judged_only(qrels, run, specs: list[MetricSpec], make_comparable: bool, oblivious: str):
    """`per_query_tables` of specs some of which are ``judged_only`` (ir_measures' parameter, trec_eval's
    -J): those are computed on the run without its unjudged documents (a new dict, the query set and
    order kept), the others on the run as given."""
    qrels = load_qrels(qrels)
    qrels = qrels.to_dict() if is_ranx_qrels(qrels) else qrels
    run = load_run(run)
    judged_run = {q: {d: s for d, s in docs.items() if d in qrels.get(q, ())}
                  for q, docs in (run.to_dict() if is_ranx_run(run) else run).items()}
    plain = [spec for spec in specs if not spec.judged_only]
    only = [dataclasses.replace(spec, judged_only=False) for spec in specs if spec.judged_only]
    query_ids, tables = per_query_tables(qrels, judged_run, only, make_comparable, oblivious)
    if plain:
        plain_ids, plain_tables = per_query_tables(qrels, run, plain, make_comparable, oblivious)
        assert plain_ids == query_ids  # the same queries in the same order: only documents were removed
        tables.update(plain_tables)
    return query_ids, {spec.name: tables[spec.name] for spec in specs}


def _check_arguments(oblivious, relevance_level, threads) -> None:
    check_oblivious(oblivious)
    if not is_finite(relevance_level):
        raise InputError(f"relevance_level must be a finite number, got {relevance_level!r}.")
    if not is_count(threads):
        raise InputError(f"threads must be an integer >= 0 (0: all CPUs), got {threads!r}.")


def _finite_stats(lists: RankedLists, judged: Judged, spec: MetricSpec) -> np.ndarray:
    """`metric_stats`, naming the query id of a family's `QueryValueError`, and refusing a non-finite
    value (no mean may skip a query silently)."""
    try:
        stats = metric_stats(judged, spec)
    except QueryValueError as error:
        raise InputError(f"{spec.name}: query {lists.query_ids[error.query]!r} {error.reason}") from None
    bad = np.flatnonzero(~np.isfinite(stats).all(axis=1))
    if bad.size:
        raise InputError(f"{spec.name} is not finite for query {lists.query_ids[bad[0]]!r} ({bad.size} queries): "
                         "the gains overflow float64 (e.g. 2^grade - 1 for grades >= 1024 in *_burges); "
                         "use smaller grades or a linear gain.")
    return stats


def _query_std(values: np.ndarray) -> float:
    """ranx's ``return_std``: the spread of per-query E[M] across queries; NaN over no queries."""
    return float(values.std()) if values.size else math.nan


def _save_in_run(run, results: dict, return_std: bool) -> None:
    if not is_ranx_run(run):
        raise InputError("save_results_in_run=True needs a ranx Run.")
    for name, r in results.items():
        values = r.per_query_values("expected")
        run.mean_scores[name] = r.expected
        run.scores[name] = dict(zip(r.query_ids, values.tolist()))
        if return_std:
            run.std_scores[name] = _query_std(values)
