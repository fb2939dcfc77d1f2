"""A ranx ``Run`` as `RankedLists`: its copy (`typed_dicts.copied_items`) grouped by ranges of queries
on worker threads (`kernels.groups.read_chunk`, which releases the GIL)."""
from __future__ import annotations

import numpy as np

from .. import threads
from ..errors import InputError
from ..kernels.groups import SEED, read_chunk
from .judgments import JudgmentChunk
from .lists import ListsBuilder, RankedLists, chunk_ranges


def from_ranx_copy(judgments: JudgmentChunk, run, query_ids: list, ranx_order: int | None) -> RankedLists:
    """`RankedLists` of `query_ids` (a query the Run lacks retrieves nothing) from the copy of a ranx
    Run's typed dict (`typed_dicts.TypedDictCopy`), with `judgments` of the same queries; a NaN score is
    named. `ranx_order`: how ranx orders the Run's ties (None: in its own order, a sorted Run). Each
    range of queries (`chunk_ranges`) writes its members from its own room (`ListsBuilder.room`), so
    ranges run at once, one per thread."""
    offsets, picked = run.picked(query_ids)
    scores, id_lo, id_hi = (run.values, run.id_lo, run.id_hi) if picked is None else \
        (run.values[picked], run.id_lo[picked], run.id_hi[picked])
    nan = np.flatnonzero(np.isnan(scores))
    if nan.size:
        queries = np.searchsorted(offsets, nan, side="right") - 1
        doc = run.doc_id(int(nan[0] if picked is None else picked[nan[0]]))
        raise InputError(f"Run score is NaN for query {query_ids[int(queries[0])]!r}, document {doc!r} "
                         f"({np.unique(queries).size} queries have NaN scores).")
    n_ret = np.diff(offsets)
    groups = ListsBuilder(n_ret, judgments.offsets)
    ranges = chunk_ranges(offsets)
    works = [groups.work() for _ in range(min(threads.n_threads(), len(ranges)))]

    def arguments(i: int, first: int, last: int) -> tuple:
        a, b = int(offsets[first]), int(offsets[last])
        ja, jb = int(judgments.offsets[first]), int(judgments.offsets[last])
        return (offsets[first:last + 1] - a, scores[a:b], run.codes, id_lo[a:b], id_hi[a:b], False,
                judgments.offsets[first:last + 1] - ja, judgments.codes, judgments.lo[ja:jb], judgments.hi[ja:jb],
                judgments.grades[ja:jb], first, works[i % len(works)], groups.out, groups.n_members, groups.n_groups,
                groups.first_nan, groups.room[first:first + 1].copy(), SEED)

    # range i takes the scratch of range i - len(works), done by then (`threads.pipelined`)
    calls = (arguments(i, first, last) for i, (first, last) in enumerate(ranges))
    for _ in threads.pipelined(read_chunk, calls, len(works) if len(works) > 1 else 0):
        pass
    return groups.lists(query_ids, n_ret, judgments.offsets, judgments.grades, ranges, ranx_order=ranx_order,
                        all_scores=lambda: scores)
