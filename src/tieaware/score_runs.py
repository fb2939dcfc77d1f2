"""Scores -> ranx Run: each query cut at k without splitting a tie group (`build_run`), and the tie
census of the run with a `TieWarning` naming the cause (`report_ties`). numpy and ranx only, so the
log-probability and rerank-endpoint readers (`tieaware.logprobs`) use it without torch."""
from __future__ import annotations

import warnings
from collections.abc import Mapping

import numpy as np
import ranx

from .errors import InputError
from .tie_census import census


def kth_largest_rows(scores: np.ndarray, k: int) -> np.ndarray:
    """The k-th largest value of each row of a 2-D array (each row's smallest when it has fewer than k)."""
    n = scores.shape[1]
    if k >= n:
        return scores.min(axis=1)
    return np.partition(scores, n - k, axis=1)[:, n - k]


def keep_top_k_with_ties(scores: np.ndarray, k: int | None) -> np.ndarray:
    """Indices of the k best scores plus every score tied with the k-th (all when k is None or >= len)."""
    if k is not None and k < 1:
        raise InputError(f"k must be >= 1, got {k}")
    if k is None or len(scores) <= k:
        return np.arange(len(scores))
    return np.flatnonzero(scores >= kth_largest_rows(scores[None], k)[0])


def build_run(scored: Mapping[str, tuple], name: str, k: int | None = None,
              metadata: Mapping | None = None) -> ranx.Run:
    """{qid: (docids, float64 scores)} -> ranx Run, each query cut at k without splitting a tie group.
    Scores stay full float64 (bf16/fp16/fp32 values are exact in it); NaN is an error naming the pair.
    metadata (what produced the scores) is copied into ``run.metadata``."""
    run = {}
    for qid, (docids, scores) in scored.items():
        scores = np.asarray(scores, dtype=np.float64)
        nan = np.flatnonzero(np.isnan(scores))
        if len(nan):
            raise InputError(f"NaN score for query {qid!r}, doc {docids[nan[0]]!r} "
                             "(an fp16 overflow? try bf16 or fp32)")
        run[qid] = {docids[i]: float(scores[i]) for i in keep_top_k_with_ties(scores, k)}
    run = ranx.Run(run, name=name)
    run.metadata.update(metadata or {})
    return run


class TieWarning(UserWarning):
    """Documents of different text tie among a run's top k (see ``run.metadata['tie_census']``); the
    message names their share and the cause.

    Examples:
        >>> import warnings
        >>> from tieaware.logprobs import TieWarning, run_from_rerank
        >>> response = {"data": [{"index": 0, "score": 0.5}, {"index": 1, "score": 0.5}]}
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     run = run_from_rerank({"q1": response}, {"q1": ["d1", "d2"]})
        >>> [w.category.__name__ for w in caught]
        ['TieWarning']
    """


def report_ties(run: ranx.Run, k: int | None, texts: Mapping[str, str] | None, cause: str) -> dict:
    """Tie census of each query's top k (all documents when k is None; the run keeps every document tied
    with the k-th) -> ``run.metadata['tie_census']``: k, tieaware.census's columns at k, tied_share (share
    of those documents whose score equals another's) and tied_different_text_share (the same, counting only
    tie groups holding two different texts; every group when `texts` is None). Ties of identical texts are
    what any precision gives; any other tie is reported by a TieWarning naming the share and `cause`."""
    scores = run.to_dict()
    depth = k or max((len(docs) for docs in scores.values()), default=1)
    table = census(scores, ks=(depth,)).loc[depth]
    total = tied = different = queries = 0
    for docs in scores.values():
        values = np.fromiter(docs.values(), dtype=np.float64, count=len(docs))
        top = values >= (kth_largest_rows(values[None], depth)[0] if len(values) else 0)
        groups: dict[float, list[str]] = {}
        for docid, score in zip(np.array(list(docs))[top], values[top]):
            groups.setdefault(float(score), []).append(docid)
        total += int(top.sum())
        tied += sum(len(group) for group in groups.values() if len(group) > 1)
        unexplained = sum(len(group) for group in groups.values() if len(group) > 1 and
                          (texts is None or len({texts[d] for d in group}) > 1))
        different += unexplained
        queries += unexplained > 0
    info = {"k": depth, **{name: float(value) for name, value in table.items()},
            "tied_share": tied / max(total, 1), "tied_different_text_share": different / max(total, 1)}
    run.metadata["tie_census"] = info
    if different:
        other = "another document (texts unknown)" if texts is None else "a document of different text"
        warnings.warn(f"{run.name}: {different / total:.1%} of the top-{depth} documents ({different} of {total}, "
                      f"in {queries} of {len(scores)} queries) tie with {other}: {cause}. "
                      "Census in run.metadata['tie_census'].", TieWarning, stacklevel=3)
    return info
