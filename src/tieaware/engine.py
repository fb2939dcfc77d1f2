"""The evaluation engine: per-query statistics of metrics on judged tie groups.

It sits between the readers (`tieaware.readers.pairs` turns a qrels/run pair into `RankedLists`)
and the entry points that call it (`tieaware.evaluation.evaluate`, `tieaware.streaming`,
`tieaware.comparison` through evaluate), and owns:

* tie order: which order inside tie groups each tool (`OBLIVIOUS_ORDERS`) uses for a metric
  (`tool_order`, `tie_order`);
* judged lists: the arrays every metric family reads, built for one tie order (`judged_lists`);
* metric statistics: per query E, Var, min, max and the tool's value (`metric_stats`);
* per-query tables of a qrels/run pair (`per_query_tables`), kept per `RankedLists` here (never
  on the lists themselves), so that a ranx Run whose conversion the reader cached and that is
  evaluated again reuses them.
"""
from __future__ import annotations

import dataclasses
import weakref

import numpy as np

from .errors import InputError, QueryValueError
from .inputs import is_ranx_qrels, is_ranx_run, load_qrels, load_run, without_identical_ids
from .kernels.families import Judged, family_stats
from .metrics import MetricSpec
from .readers.lists import RankedLists
from .registry import family

#: the tools whose nDCG averages the gains of tied documents (sklearn's rule): their nDCG is E[nDCG]
TIE_AVERAGED_NDCG = ("torchmetrics", "sentence_transformers_reranking")


def ir_measures_order(name: str, k: int | None) -> str:
    """The tie order ir_measures' default pipeline (ir_measures 0.3-0.4) applies to a metric family.

    It hands each measure to the first provider that supports it: pytrec_eval (trec_eval's
    order: score desc, doc id desc) for most; its msmarco provider for RR with a cutoff and its
    judged provider for Judged@k, both sorting by (-score, doc id): doc id ascending; cwl_eval
    for RBP, a stable sort by score: input order; gdeval for ERR@k and nDCG(dcg='exp-log2')@k,
    trec_eval's order. Each family's is in its `tieaware.registry.Family`.
    """
    return family(name).tie_order_of_ir_measures(k)


def torchmetrics_order(name: str, k: int | None) -> str:
    """The tie order of torchmetrics' (1.x) retrieval metric for a family, on the CPU.

    Its RR, AP and precision take ``preds.topk(min(k, n), sorted=True)`` of each query's float32
    scores ("torch_topk@k"; "torch_topk" for no cutoff), the others
    ``torch.argsort(preds, descending=True)`` ("torch_argsort"): both unstable, so reproduced by
    running the same torch operation (`RankedLists.tool_rank`); the family's is in its
    `tieaware.registry.Family`. Its nDCG averages the gains of tied documents (sklearn's
    ``_tie_average_dcg``): that is E[nDCG], which `per_query_tables` reports as its oblivious value.
    On a GPU torch runs other kernels, whose tie order is not reproduced.
    """
    op = family(name).torchmetrics_op
    return op if op == "torch_argsort" or k is None else f"{op}@{k}"


def tool_order(tool: str, family: str, k: int | None) -> str:
    """The order inside tie groups (`readers.lists.TIE_ORDERS`) that `tool` (one of `OBLIVIOUS_ORDERS`)
    uses for a metric.

    sentence-transformers' ``InformationRetrievalEvaluator`` (6.x) sorts by (-score, corpus id):
    doc id ascending (as strings: given integer corpus ids it compares numbers, which is not reproduced);
    its ``CrossEncoderRerankingEvaluator`` ranks for MRR by
    ``np.argsort(scores)[::-1]`` (numpy's unstable sort, its tie order depending on the CPU's sort
    routines, so reproduced by running it on the float32 scores in input order); its nDCG is
    sklearn's tie-averaged ``ndcg_score`` (E[nDCG]) and its MAP sklearn's ``average_precision_score``,
    which is no tie order (`per_query_tables` refuses it). MTEB (2.x) evaluates with pytrec_eval
    and sorts by (score, doc id) descending for its MRR: trec_eval's order."""
    if tool == "ir_measures":
        return ir_measures_order(family, k)
    if tool == "torchmetrics":
        return torchmetrics_order(family, k)
    return {"sentence_transformers": "docid_ascending", "mteb": "trec_eval",
            "sentence_transformers_reranking": "numpy_argsort_reversed"}.get(tool, tool)


def tie_order(spec: MetricSpec, oblivious: str) -> str:
    """The order inside tie groups (`readers.lists.TIE_ORDERS`) that tool `oblivious` uses for this metric."""
    return tool_order(oblivious, spec.family, spec.k)


def judged_lists(lists: RankedLists, order: str = "trec_eval") -> Judged:
    """The arrays every metric family reads, with `order` (one of `readers.lists.TIE_ORDERS`) as the
    tool's tie order."""
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


@dataclasses.dataclass
class _Kept:
    """What the engine keeps per `RankedLists` while they live: per tie order its `Judged`, per
    (metric without its name, tie order, tie-averaged) the read-only per-query statistics."""

    judged: dict = dataclasses.field(default_factory=dict)
    stats: dict = dataclasses.field(default_factory=dict)


_KEPT: weakref.WeakKeyDictionary[RankedLists, _Kept] = weakref.WeakKeyDictionary()


def per_query_tables(qrels, run, specs: list[MetricSpec], make_comparable: bool, oblivious: str,
                     ignore_identical_ids: bool = False, from_file: bool | None = None) -> tuple[list, dict]:
    """(query ids, {metric name: per-query table (Q, 5), `metric_stats`' columns}) of one qrels/run
    pair held in memory (`from_file`: as `ranked_lists`), or of a run already read into `RankedLists`
    (by `streaming` from a file). The tables are read-only: they are kept
    as long as the lists, which the reader caches with a ranx Run's conversion. ``ignore_identical_ids``:
    BEIR's convention (`tieaware.inputs.without_identical_ids`)."""
    if ignore_identical_ids:
        run = without_identical_ids(run)
    if any(spec.judged_only for spec in specs):
        return _with_judged_only(qrels, run, specs, make_comparable, oblivious)
    if isinstance(run, RankedLists):
        lists = run
    else:  # the pair readers and ranx's typed-dict kernels: not imported for runs read from TREC files
        from .readers.pairs import ranked_lists

        lists = ranked_lists(qrels, run, make_comparable, from_file)
    kept = _KEPT.setdefault(lists, _Kept())
    tables = {}
    this_call: dict = {}  # per tie order, the kept `Judged` with flags shared by this call's metrics only
    for spec in specs:
        if oblivious == "sentence_transformers_reranking" and spec.family == "ap":
            raise InputError(f"{spec.name}: sentence-transformers' reranking MAP is sklearn's average_precision_score, "
                             "which gives tied relevant documents the precision at their group's end: no tie "
                             "order gives it (TieAwareRerankingEvaluator reports it beside E[AP]).")
        averaged = oblivious in TIE_AVERAGED_NDCG and spec.family == "ndcg"  # the tool's nDCG is E[nDCG]
        order = "input" if averaged else tie_order(spec, oblivious)
        key = (dataclasses.replace(spec, name=""), order, averaged)
        if key not in kept.stats:
            if order not in this_call:
                if order not in kept.judged:
                    kept.judged[order] = judged_lists(lists, order)
                this_call[order] = dataclasses.replace(kept.judged[order], shared_flags={})
            stats = _finite_stats(lists, this_call[order], spec)
            if averaged:
                stats[:, 4] = stats[:, 0]
            stats.setflags(write=False)
            kept.stats[key] = stats
        tables[spec.name] = kept.stats[key]
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
