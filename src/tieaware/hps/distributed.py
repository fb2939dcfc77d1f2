"""Rerank on Ray Data: the same scores as in-process `rerank`, computed by a pool of actors.

The driver forms the batches exactly as the in-process scorers do (all pairs, sorted by length,
cut every ``batch_size``), and Ray Data maps each batch through a scorer built once per actor
(``num_gpus=1`` per actor on a GPU cluster, CPU actors otherwise). A batch is the unit of work,
so a pair is scored in the same company of pairs whatever the number of actors, and the result
equals in-process scoring score for score (on the same kind of device and thread count).
Ray retries the batches of an actor that dies; the driver checks that every batch came back
exactly once before it assembles the run, cut at k without splitting a tie group.

    import ray; ray.init()                      # a laptop; ray.init(address="auto") on a cluster
    run = rerank_on_ray("cross-encoder", "path/to/model", queries, corpus, "bm25.trec",
                        dtype="bf16", concurrency=4, num_gpus=1, trec_out="run.trec")

Needs the ``ray`` extra: pip install 'tieaware[hps,ray]'.
"""
from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import ranx
import torch

from ..display import progress
from ..errors import InputError, InputTypeError
from ._common import (
    DEFAULT_HPS,
    DTYPE_NAMES,
    HPS_NAMES,
    CandidatesLike,
    ModelLike,
    Scorer,
    build_run,
    checked_candidates,
    length_sorted_batches,
    mode_suffix,
    parse_dtype,
    parse_hps,
    report_ties,
    tie_cause,
)

#: scorers whose scores are pairwise (query, document), by the names the CLI uses
PAIRWISE_SCORERS = ("cross-encoder", "yes-no", "grade")


def _scorer_class(scorer: str | type[Scorer]) -> type[Scorer]:
    from .cross_encoder import CrossEncoder
    from .grade import GradeReranker
    from .yes_no import YesNoReranker

    classes = {"cross-encoder": CrossEncoder, "yes-no": YesNoReranker, "grade": GradeReranker}
    if isinstance(scorer, str):
        if scorer not in classes:
            raise InputError(f"scorer {scorer!r}: Ray reranking takes one of {PAIRWISE_SCORERS} "
                             "(a bi-encoder scores texts, not pairs)")
        return classes[scorer]
    if not (isinstance(scorer, type) and issubclass(scorer, (CrossEncoder, YesNoReranker, GradeReranker))):
        raise InputTypeError(f"scorer must be one of {PAIRWISE_SCORERS}, CrossEncoder, YesNoReranker or GradeReranker "
                             f"(or a subclass), not {scorer!r}")
    return scorer


class _BatchScorer:
    """A Ray Data actor: builds the scorer once, then scores one batch of pairs per call."""

    def __init__(self, scorer_class, model, options: dict):
        self.scorer = scorer_class(model, **options)

    def __call__(self, rows: dict) -> dict:
        (query_texts,), (doc_texts,) = rows["query_texts"], rows["doc_texts"]  # batch_size=1: one batch a call
        return {"batch": rows["batch"], "scores": self.scorer.score_pairs(list(query_texts), list(doc_texts))[None]}


def rerank_on_ray(scorer: str | type[Scorer], model: ModelLike, queries: Mapping[str, str], corpus: Mapping[str, str],
                  candidates: CandidatesLike, *,
                  k: int | None = None, name: str | None = None, concurrency: int = 2, num_gpus: float = 0,
                  num_cpus: float = 1, parquet_out: str | os.PathLike | None = None,
                  trec_out: str | os.PathLike | None = None, show_progress: bool = True,
                  **options: Any) -> ranx.Run:
    """Rerank each query's candidates on a Ray actor pool; returns the ranx Run `rerank` would.

    Args:
        scorer: "cross-encoder", "yes-no" or "grade" (or `CrossEncoder` / `YesNoReranker` / `GradeReranker`).
        model: a local model directory (or a hub name the workers can reach), loaded once per actor.
        queries, corpus: ``{id: text}``.
        candidates: ranx Run, ``{qid: {docid: score}}``, ``{qid: [docid, ...]}`` or a TREC run path.
        k: keep the top k per query plus every document tied with the k-th.
        concurrency: number of actors; num_gpus / num_cpus: resources each actor reserves.
        parquet_out: a folder to write ``q_id, doc_id, score`` to as a Parquet dataset (one file per block).
        trec_out: a TREC run file to write (trec_eval's order, exact float scores).
        show_progress: a tqdm bar of scored pairs.
        **options: the scorer's own arguments (dtype, hps, batch_size, max_length, positive_index, ...).

    Uses the running Ray instance, or starts a local one (``ray.init()``; set ``RAY_ADDRESS`` or call
    ``ray.init(address=...)`` first to use a cluster).
    """
    try:
        import ray
    except ImportError as error:
        raise ImportError("rerank_on_ray needs Ray Data: pip install 'tieaware[ray]'") from error

    scorer_class = _scorer_class(scorer)
    if not isinstance(model, (str, os.PathLike)):
        raise InputTypeError("model must be a local path or hub name that every actor loads, "
                             f"not a loaded {type(model).__name__}")
    if concurrency < 1:
        raise InputError(f"concurrency must be >= 1, got {concurrency}")
    batch_size = options.get("batch_size", 32)
    mode = parse_hps(options.get("hps", DEFAULT_HPS))
    dtype: torch.dtype | None = parse_dtype(options.get("dtype"))
    candidates = checked_candidates(queries, corpus, candidates)
    qids = [qid for qid, docids in candidates.items() for _ in docids]
    docids = [docid for docs in candidates.values() for docid in docs]
    query_texts = [queries[q] for q in qids]
    doc_texts = [corpus[d] for d in docids]
    batches = list(length_sorted_batches([len(q) + len(d) for q, d in zip(query_texts, doc_texts)], batch_size))
    items = [{"batch": b, "query_texts": [query_texts[i] for i in rows], "doc_texts": [doc_texts[i] for i in rows]}
             for b, rows in enumerate(batches)]

    if not ray.is_initialized():
        ray.init(log_to_driver=False)
    actor_options = dict(options, show_progress=False)
    dataset = ray.data.from_items(items, override_num_blocks=len(items)).map_batches(
        _BatchScorer, fn_constructor_args=(scorer_class, str(model), actor_options), batch_size=1,
        concurrency=concurrency, num_gpus=num_gpus, num_cpus=num_cpus)  # Ray Data restarts a dead actor and retries

    flat = np.full(len(qids), np.nan)
    seen = np.zeros(len(batches), np.int64)
    with progress(total=len(qids), unit="pair", desc="Ray rerank", show=show_progress) as bar:
        for row in dataset.iter_rows():
            b = int(row["batch"])
            scores = np.asarray(row["scores"], dtype=np.float64)
            if seen[b] or scores.shape != batches[b].shape:
                raise RuntimeError(f"batch {b} came back {'twice' if seen[b] else 'with the wrong size'}")
            seen[b] = 1
            flat[batches[b]] = scores
            bar.update(len(scores))
    missing = np.flatnonzero(seen == 0)
    if missing.size:
        raise RuntimeError(f"{missing.size} of {len(batches)} batches never came back from the actors")

    bounds = np.cumsum([0] + [len(docs) for docs in candidates.values()])
    scored = {qid: (docs, flat[bounds[i]:bounds[i + 1]]) for i, (qid, docs) in enumerate(candidates.items())}
    hps = HPS_NAMES[mode]
    dtype_name = "fp32" if dtype is None else DTYPE_NAMES.get(dtype, "fp32")
    run_tag = name or f"{Path(str(model)).name.replace(' ', '_')}_{dtype_name}{mode_suffix(mode)}"
    run = build_run(scored, run_tag, k, {"hps": hps, "ray_actors": concurrency})
    report_ties(run, k, corpus, tie_cause(dtype or torch.float32, mode))
    if trec_out is not None:
        from ..outputs import write_trec_run

        with open(trec_out, "w", encoding="utf-8") as handle:
            write_trec_run(run.to_dict(), run_tag, handle)
    if parquet_out is not None:
        import pandas as pd

        frame = pd.DataFrame([(q, d, s) for q, docs in run.to_dict().items() for d, s in docs.items()],
                             columns=["q_id", "doc_id", "score"])
        ray.data.from_pandas(frame).write_parquet(str(parquet_out))
    return run
