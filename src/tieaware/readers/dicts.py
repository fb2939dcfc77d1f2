"""A run of Python dicts as `RankedLists`: read chunk by chunk, grouped on a worker thread.

Each chunk of whole queries is turned into arrays by C-level calls (`readers.dict_arrays`),
holding the GIL, while a worker thread groups the chunk before with `kernels.groups.read_chunk`,
which releases it (`threads.pipelined`); results do not depend on the number of threads.
"""
from __future__ import annotations

import numpy as np

from .. import threads
from ..kernels.groups import SEED, read_chunk
from .dict_arrays import float_values, string_id_codes
from .judgments import Judgments
from .lists import ListsBuilder, RankedLists, chunk_ranges


def from_dicts(qrels, run: dict, query_ids: list, ranx_order: int) -> RankedLists:
    """Chunks of whole queries (about `CHUNK_DOCS` documents) read into arrays by C-level Python calls
    (`_chunk_arrays`, `Judgments.chunk`, holding the GIL) while a worker thread runs `read_chunk`
    (no GIL) on the chunk before (`threads.pipelined`, one chunk in flight: memory stays that of two
    chunks). `ranx_order`: how ranx orders the run's ties (`ranked_lists`)."""
    judged = Judgments(qrels, query_ids)
    qrel_offsets = judged.offsets
    grades = np.empty(int(qrel_offsets[-1]), np.float64)  # the qrels' grades, each query's best-first
    empty: dict = {}
    runs = [run.get(q, empty) for q in query_ids]
    n_ret = np.fromiter(map(len, runs), np.int64, len(runs))
    offsets = np.zeros(len(query_ids) + 1, np.int64)
    np.cumsum(n_ret, out=offsets[1:])
    groups = ListsBuilder(n_ret, qrel_offsets)
    work = groups.work()
    ranges = chunk_ranges(offsets)

    cursor = np.zeros(1, np.int64)  # chunks are read in order, each continuing where the one before ended

    def arguments(first: int, last: int, separated: bool = True) -> tuple:
        judgments = judged.chunk(first, last)
        grades[qrel_offsets[first]:qrel_offsets[last]] = judgments.grades
        return (offsets[first:last + 1] - offsets[first],
                *_chunk_arrays(query_ids, runs, offsets, first, last, separated), separated,
                *judgments, first, work, groups.out, groups.n_members, groups.n_groups,
                groups.first_nan, cursor, SEED)

    workers = 1 if len(ranges) > 1 and threads.n_threads() > 1 else 0
    calls = (arguments(first, last) for first, last in ranges)
    for (first, last), done in zip(ranges, threads.pipelined(read_chunk, calls, workers)):
        if not done:  # an id of this chunk holds NUL itself: read it again with the ids' bounds given
            read_chunk(*arguments(first, last, separated=False))

    def all_scores() -> np.ndarray:
        return float_values("Run score", query_ids, runs, int(offsets[-1]), finite=False)

    return groups.lists(query_ids, n_ret, qrel_offsets, grades, [(0, len(query_ids))],
                        ranx_order=ranx_order, all_scores=all_scores)


def _chunk_arrays(query_ids: list, runs: list, offsets: np.ndarray, first: int, last: int, separated: bool) -> tuple:
    """(scores, codes, lo, hi) of queries first..last-1 (ids as `string_id_codes`)."""
    n_chunk = int(offsets[last] - offsets[first])
    codes, lo, hi = string_id_codes("run", query_ids[first:last], runs[first:last], n_chunk, separated)
    return float_values("Run score", query_ids[first:last], runs[first:last], n_chunk, finite=False), codes, lo, hi
