"""Where a tool's own tie order puts each judged document inside its tie group.

The oblivious value M_obl is the metric under the order a tool really uses.
Only groups whose order can change a metric need it ("ambiguous" groups: more
than one document and not all of them judged alike); elsewhere any order gives
the same value. Tool orders reproduced here (docs/formulas.md, "Oblivious value and bias"):

* ``input``: stable, first given first; its ranks come from `groups.judged_groups`.
* ranx: numba's ``np.argsort`` (quicksort, not stable) on the query's scores, as
  ranx runs it: ``argsort(-scores)`` when it sorts a ``Run``, reversed
  ``argsort(scores)`` when it is given a dict (``ranx.utils.descending_sort``).
* trec_eval: score descending, then document id descending (``strcmp``).

Kernels are single-threaded ``@njit(cache=True)``; the bookkeeping around them
(`ambiguous_groups`, most of `ambiguous_members`) is numpy, which costs no compilation.
"""
import numpy as np
from numba import njit

from .groups import group_slots

RANX_ARGSORT_NEGATED, RANX_ARGSORT_REVERSED = 0, 1


def ambiguous_groups(n_groups, mem_offsets, grp_size, grp_mem_start, grp_mem_end, mem_rel):
    """Per group slot: True where the order inside the group can change a metric
    (more than one document, and not all of them judged with one grade)."""
    out = np.zeros(grp_size.shape[0], np.bool_)
    slots = group_slots(n_groups, mem_offsets)
    if slots.size == 0:
        return out
    start, end, size = grp_mem_start[slots], grp_mem_end[slots], grp_size[slots]
    # members are contiguous, group after group, so reduceat over the starts spans each group
    alike = (end - start == size) & (np.minimum.reduceat(mem_rel, start) == np.maximum.reduceat(mem_rel, start))
    out[slots] = (size > 1) & ~alike
    return out


@njit(cache=True)
def ranx_ranks(offsets, scores, n_groups, mem_offsets, grp_above, grp_mem_start, grp_mem_end, mem_index,
               ambiguous, mode, tool_rank):
    """Fill tool_rank (rank inside the group) with ranx's order, for queries with an ambiguous group."""
    for q in range(n_groups.shape[0]):
        g_lo = mem_offsets[q]
        g_hi = g_lo + n_groups[q]
        needed = False
        for gi in range(g_lo, g_hi):
            needed = needed or ambiguous[gi]
        if not needed:
            continue
        q_scores = scores[offsets[q]:offsets[q + 1]]
        if mode == RANX_ARGSORT_NEGATED:
            order = np.argsort(-q_scores)
        else:
            order = np.argsort(q_scores)[::-1]
        position = np.empty(order.shape[0], np.int64)
        for i in range(order.shape[0]):
            position[order[i]] = i
        for gi in range(g_lo, g_hi):
            for m in range(grp_mem_start[gi], grp_mem_end[gi]):
                tool_rank[m] = position[mem_index[m]] - grp_above[gi]


@njit(cache=True)
def _place_by_slot(doc_rank, cursor, doc_index):
    """Counting sort: document i goes to doc_index[cursor[doc_rank[i]]++] (doc_rank -1: nowhere)."""
    for i in range(doc_rank.shape[0]):
        a = doc_rank[i]
        if a >= 0:
            doc_index[cursor[a]] = i
            cursor[a] += 1


def ambiguous_members(doc_slot, ambiguous):
    """Every document (global index) of every ambiguous group.

    Returns (slots (S,), slot_offsets (S+1,), doc_index (D,)): the S ambiguous
    group slots and, CSR by slot, their documents in input order.
    """
    slots = np.flatnonzero(ambiguous).astype(np.int64)
    rank_of_slot = np.full(ambiguous.shape[0] + 1, -1, doc_slot.dtype)  # slot -1 (in no group) reads the last: -1
    rank_of_slot[slots] = np.arange(slots.size)
    doc_rank = rank_of_slot[doc_slot]
    slot_offsets = np.zeros(slots.size + 1, np.int64)
    np.cumsum(np.bincount(doc_rank[doc_rank >= 0], minlength=slots.size), out=slot_offsets[1:])
    doc_index = np.empty(slot_offsets[-1], np.int64)
    _place_by_slot(doc_rank, slot_offsets[:-1].copy(), doc_index)
    return slots, slot_offsets, doc_index


@njit(cache=True)
def _bytes_greater(buf, a_lo, a_hi, b_lo, b_hi):
    """strcmp(a, b) > 0 on UTF-8 bytes."""
    n = min(a_hi - a_lo, b_hi - b_lo)
    for i in range(n):
        if buf[a_lo + i] != buf[b_lo + i]:
            return buf[a_lo + i] > buf[b_lo + i]
    return a_hi - a_lo > b_hi - b_lo


@njit(cache=True)
def trec_eval_ranks(slots, slot_offsets, doc_index, id_row, id_bytes, id_offsets, mem_doc, grp_mem_start,
                    grp_mem_end, tool_rank):
    """Fill tool_rank with trec_eval's order (document id descending) inside ambiguous groups.

    id_bytes/id_offsets: a table of NUL-terminated UTF-8 ids; row id_row[x] holds
    the id of document doc_index[x]; mem_doc[m]: global index of judged member m.
    """
    for a in range(slots.shape[0]):
        gi = slots[a]
        lo, hi = slot_offsets[a], slot_offsets[a + 1]
        for m in range(grp_mem_start[gi], grp_mem_end[gi]):
            me = lo
            while doc_index[me] != mem_doc[m]:
                me += 1
            mine = id_row[me]
            rank = 0
            for x in range(lo, hi):
                other = id_row[x]
                if _bytes_greater(id_bytes, id_offsets[other], id_offsets[other + 1], id_offsets[mine],
                                  id_offsets[mine + 1]):
                    rank += 1
            tool_rank[m] = rank
