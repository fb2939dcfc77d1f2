"""`census`: how tied a run is at each cutoff (Yang et al., arXiv 2508.03306, Appendix C)."""
from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from .arguments import is_count
from .errors import InputError
from .kernels.census import census_table
from .readers.pairs import run_scores
from .registry import DEFAULT_KS

if TYPE_CHECKING:
    from .inputs import RunLike


def census(run: RunLike, ks: int | Iterable[int] = DEFAULT_KS) -> pd.DataFrame:
    """Tie statistics of a run's top k, averaged over queries.

    Args:
        run: ranx ``Run``, ``{qid: {docid: score}}``, a TREC run path or a DataFrame.
        ks: cutoffs.

    Returns:
        DataFrame indexed by k with columns
        ``unique_scores`` (mean number of distinct scores among the top k),
        ``mean_tie_group_size`` (mean of top-k size / distinct scores; 1.0 means no ties),
        ``straddling_share`` (share of queries whose k-th document ties with the (k+1)-th,
        so any cut at k drops tied candidates), ``largest_group`` (largest tie group
        reaching the top k, over all queries).

    Raises:
        InputError: a cutoff that is not a positive integer, a NaN score, a run that cannot be read.

    Examples:
        >>> import tieaware
        >>> table = tieaware.census({"q1": {"d1": 0.5, "d2": 0.5, "d3": 0.1}}, ks=[1, 2])
        >>> table["straddling_share"].tolist(), table["largest_group"].tolist()
        ([1.0, 0.0], [2, 2])
    """
    given: list[Any] = [ks] if isinstance(ks, int) or np.isscalar(ks) else list(ks)
    if not given or not all(is_count(k, 1) for k in given):
        raise InputError(f"census cutoffs must be positive integers, got {given}.")
    cutoffs = np.asarray(sorted({int(k) for k in given}), np.int64)
    query_ids, offsets, scores = run_scores(run)
    if np.isnan(scores).any():
        q = int(np.searchsorted(offsets, np.flatnonzero(np.isnan(scores))[0], side="right") - 1)
        raise InputError(f"Run scores of query {query_ids[q]!r} include NaN.")
    table = census_table(offsets, scores, cutoffs)
    nonempty = table[:, :, 1] > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        group_size = np.where(nonempty, table[:, :, 1] / np.maximum(table[:, :, 0], 1), np.nan)
        frame: pd.DataFrame = pd.DataFrame({
            "unique_scores": np.nanmean(np.where(nonempty, table[:, :, 0], np.nan), axis=0),
            "mean_tie_group_size": np.nanmean(group_size, axis=0),
            "straddling_share": table[:, :, 2].mean(axis=0) if len(query_ids) else np.nan,
            "largest_group": table[:, :, 3].max(axis=0, initial=0),
        }, index=pd.Index(cutoffs, name="k"))
    frame["largest_group"] = frame["largest_group"].astype(int)
    return frame
