"""`evaluate`: a drop-in for ``ranx.evaluate`` that reports what tie order does."""
from __future__ import annotations

import math
import os
import warnings

import numpy as np

from .arguments import is_count, is_finite, resolve_oblivious
from .engine import per_query_tables
from .errors import InputError
from .inputs import QrelsLike, RunLike, is_ranx_run
from .metrics import MetricsLike, metric_keys, parse_metrics
from .outputs import check_outputs
from .report import EvaluationReport, MetricResult
from .threads import limited


def evaluate(qrels: QrelsLike, run: RunLike, metrics: MetricsLike, return_mean: bool = True,
             return_std: bool = False, threads: int = 0, save_results_in_run: bool = False,
             make_comparable: bool = False, *, oblivious: str | None = None, relevance_level: float = 1,
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
        oblivious: whose tie order gives ``.oblivious`` (and ``.bias``); None (default): the tool the
            inputs come from, "ranx" when the qrels or the run is a ranx object, else "trec_eval"
            (`tieaware.arguments.resolve_oblivious`); the result's ``oblivious_order`` says which.
            "trec_eval" (pytrec_eval, MTEB: score desc, doc id desc), "ranx" (ranx.evaluate on this
            same object; for a file path or a DataFrame, on the Run ranx reads from it,
            ``Run.from_file`` or ``Run.from_df``, whose ties are ordered unlike a dict's),
            "input" (first given first), or "ir_measures" (its default pipeline: trec_eval's
            order, except doc id ascending for RR@k and Judged@k and input order for RBP;
            see `tieaware.engine.ir_measures_order`), "sentence_transformers" (its
            InformationRetrievalEvaluator: score desc, doc id ascending),
            "sentence_transformers_reranking" (its CrossEncoderRerankingEvaluator's MRR and
            nDCG; see `tieaware.engine.tool_order`), "mteb" (trec_eval's
            order) or "torchmetrics" (its retrieval metrics on the CPU, each metric's own torch
            operation; see `tieaware.engine.torchmetrics_order`).
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

    Raises:
        InputError: data that cannot be evaluated, named by query, document or file line (a NaN or
            infinite score, a malformed file: `MissingFileError` when it does not exist); a run whose
            queries differ from the qrels' without ``make_comparable`` (`QueryMismatchError`); an
            ``oblivious`` order, ``relevance_level`` or ``threads`` out of range; ``save_results_in_run``
            with a run that is not a ranx ``Run``.
        UnknownMetricError: a metric name in none of the syntaxes; the message lists them.

    Examples:
        >>> qrels = {"q1": {"d1": 1}}
        >>> run = {"q1": {"d1": 0.5, "d2": 0.5}}
        >>> res = evaluate(qrels, run, "mrr")
        >>> round(float(res), 2), res.min, res.max
        (0.75, 0.5, 1.0)
    """
    oblivious = _check_arguments(oblivious, relevance_level, threads, qrels, run)
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
    out: dict
    if not return_mean:
        out = {name: r.per_query_values("expected") for name, r in results.items()}
    elif return_std:
        out = {name: {"mean": r, "std": _query_std(r.per_query_values("expected"))} for name, r in results.items()}
    else:
        out = EvaluationReport(results)
    return next(iter(out.values())) if single else out


def _check_arguments(oblivious, relevance_level, threads, qrels, run) -> str:
    """Raise on an argument out of range; the tool order ``oblivious`` resolves to."""
    oblivious = resolve_oblivious(oblivious, qrels, run)
    if not is_finite(relevance_level):
        raise InputError(f"relevance_level must be a finite number, got {relevance_level!r}.")
    if not is_count(threads):
        raise InputError(f"threads must be an integer >= 0 (0: all CPUs), got {threads!r}.")
    return oblivious


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
