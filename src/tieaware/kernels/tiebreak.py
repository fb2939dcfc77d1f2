"""Where a tool's own tie order puts each judged document inside its tie group.

The oblivious value M_obl is the metric under the order a tool really uses.
Only groups whose order can change a metric need it ("ambiguous" groups: more
than one document and not all of them judged alike); elsewhere any order gives
the same value. Tool orders reproduced here (docs/formulas.md, "Oblivious value and bias"):

* ``input``: stable, first given first; its ranks come from `groups.query_groups`.
* ranx: numba's ``np.argsort`` (quicksort, not stable) on the query's scores, as
  ranx runs it: ``argsort(-scores)`` when it sorts a ``Run``, reversed
  ``argsort(scores)`` when it is given a dict (``ranx.utils.descending_sort``).
* trec_eval: score descending, then document id descending (``strcmp``); its ranks
  come from `groups.query_groups`, which compares ids while it builds the groups.

`ranx_ranks` is a single-threaded numba kernel (`tieaware.kernels.kernel`); `ambiguous_groups` is numpy.
"""
import numpy as np

from . import kernel
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


@kernel
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
