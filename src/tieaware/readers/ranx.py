"""A ranx ``Run`` as `RankedLists`: copied chunk by chunk holding the GIL, grouped without it.

The Run's typed dicts are read by `readers.typed_dicts` (jitted, holding the GIL: another thread
may change them); each copied chunk is grouped on worker threads without the GIL
(`kernels.groups.group_chunk`). A Run changed by another thread between two kernels raises
`typed_dicts.ChangedWhileReadError`, and `readers.pairs` reads a `typed_dicts.frozen` copy.
"""
from __future__ import annotations

import numpy as np

from .. import threads
from ..errors import InputError
from ..kernels.groups import SEED, group_chunk
from ..kernels.tiebreak import RANX_ARGSORT_NEGATED
from . import typed_dicts
from .judgments import Judgments
from .lists import ListsBuilder, RankedLists, chunk_ranges


def from_ranx_run(qrels, run, query_ids: list, make_comparable: bool, run_keys: tuple) -> RankedLists:
    """`run_keys`: the Run's own keys as a typed list and its CSR offsets (`typed_dicts.queries`),
    which are `query_ids` unless ``make_comparable``. The judgments are read first (`Judgments`); the
    Run in chunks of whole queries (about `CHUNK_DOCS` documents), each copied holding the GIL
    (`typed_dicts.run_chunk`) while worker threads group the chunks before without it
    (`kernels.groups.group_chunk`, one chunk in flight per thread: `threads.pipelined`)."""
    if make_comparable:
        typed_ids = typed_dicts.typed(query_ids)
        offsets = typed_dicts.run_sizes(run.run, typed_ids)
    else:
        typed_ids, offsets = run_keys
    judged = Judgments(qrels, query_ids)
    qrel_offsets = judged.offsets
    judgments = judged.chunk(0, len(query_ids))
    n_ret = np.diff(offsets)
    groups = ListsBuilder(n_ret, qrel_offsets)
    ranges = chunk_ranges(offsets)
    works = [groups.work() for _ in range(min(threads.n_threads(), len(ranges)))]

    def copied(i: int, lo: int, hi: int) -> tuple:
        *chunk, was_changed = typed_dicts.run_chunk(run.run, typed_ids, lo, hi, offsets, SEED)
        if was_changed:
            raise typed_dicts.ChangedWhileReadError()
        return (offsets, lo, hi, *chunk, qrel_offsets, judgments.codes, judgments.lo, judgments.hi, judgments.grades,
                works[i % len(works)], groups.out, groups.n_members, groups.n_groups, groups.first_nan,
                groups.room[lo], SEED)

    # chunk i takes the scratch of chunk i - len(works), done by then (`threads.pipelined`)
    calls = (copied(i, lo, hi) for i, (lo, hi) in enumerate(ranges))
    parts = list(threads.pipelined(group_chunk, calls, len(works) if len(works) > 1 else 0))
    bad = np.flatnonzero(groups.first_nan >= 0)
    if bad.size:
        q = int(bad[0])
        doc = typed_dicts.doc_id(run.run, query_ids[q], int(groups.first_nan[q]))
        raise InputError(f"Run score is NaN for query {query_ids[q]!r}, document {doc!r} "
                         f"({bad.size} queries have NaN scores).")

    run_td = run.run  # not the Run: the cache holds these lists while the Run lives, and no longer

    def all_scores() -> np.ndarray:
        return typed_dicts.run_scores(run_td, typed_ids, offsets)

    return groups.lists(query_ids, n_ret, qrel_offsets, judgments.grades, ranges,
                        ranx_order=None if run.sorted else RANX_ARGSORT_NEGATED, all_scores=all_scores,
                        run_fingerprint=None if make_comparable else typed_dicts.joined(SEED, parts))
