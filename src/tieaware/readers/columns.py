"""A run given as columns, as a TREC file's reader gives them (`readers.trec_files`), as `RankedLists`."""
from __future__ import annotations

import numpy as np

from ..kernels.groups import SEED, read_chunk
from ..kernels.tiebreak import RANX_ARGSORT_NEGATED
from .judgments import JudgmentChunk
from .lists import ListsBuilder, RankedLists


def from_columns(judgments: JudgmentChunk, query_ids: list, n_ret: np.ndarray, scores: np.ndarray,
                 codes: np.ndarray, id_lo: np.ndarray, id_hi: np.ndarray) -> RankedLists:
    """`RankedLists` of a run given as columns: query ``query_ids[q]`` holds ``n_ret[q]`` documents in
    order, document i with score ``scores[i]`` and id ``codes[id_lo[i]:id_hi[i]]`` (code points;
    ``codes`` read-only), ids distinct within a query; ``judgments``: those of the same queries
    (`judgments.judgment_chunk`). ranx's tie order is that of ``Run.from_file``."""
    offsets = np.zeros(len(query_ids) + 1, np.int64)
    np.cumsum(n_ret, out=offsets[1:])
    groups = ListsBuilder(n_ret, judgments.offsets)
    read_chunk(offsets, scores, codes, id_lo, id_hi, False, *judgments, 0, groups.work(), groups.out,
               groups.n_members, groups.n_groups, groups.first_nan, np.zeros(1, np.int64), SEED)
    return groups.lists(query_ids, n_ret, judgments.offsets, judgments.grades, [(0, len(query_ids))],
                        ranx_order=RANX_ARGSORT_NEGATED, all_scores=lambda: scores)
