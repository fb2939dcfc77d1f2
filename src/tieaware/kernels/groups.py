"""Tie groups of the judged documents, in one pass over each query's scores.

Every metric here depends on a ranked list only through the documents that are
judged (present in the qrels): an unjudged document has gain 0, is never
relevant, and bpref ignores it. So instead of sorting all n retrieved documents,
each query keeps only the score groups that hold a judged document ("judged
groups"), each with

* ``above`` (c): documents with a strictly higher score,
* ``size`` (g): documents with exactly this score, judged or not,
* its judged members, sorted by judgment descending (best-first order).

Cost: O(J log J) to sort the J judged documents (numpy, before the kernel),
then O(n log J) per query for n retrieved documents (a binary search of each
score among the judged scores), instead of O(n log n).

The kernel is plain ``@njit(cache=True)``, single-threaded: it compiles in well
under a second, involves no numba threading layer (so evaluate may be called from
several Python threads at once), and allocates nothing (the wrapper does).
"""
import numpy as np
from numba import njit


def slot_dtype(n_members: int) -> type:
    """int32 for per-document arrays of member or group-slot indices (half the memory of
    int64 at 10M documents), int64 only when there are 2^31 judged documents or more."""
    return np.int32 if n_members < 2**31 - 1 else np.int64


def group_slots(n_groups: np.ndarray, mem_offsets: np.ndarray) -> np.ndarray:
    """The used group slots, in order: offsets[q] .. offsets[q] + n_groups[q] - 1 for each query q."""
    n_groups = np.asarray(n_groups, np.int64)
    first = np.cumsum(n_groups) - n_groups  # index of each query's first group among all groups
    return np.repeat(mem_offsets[:-1] - first, n_groups) + np.arange(int(n_groups.sum()), dtype=np.int64)


@njit(cache=True)
def _first_at_or_below(distinct, lo, hi, s):
    """Binary search: the first b in [lo, hi) with distinct[b] <= s (distinct descending there), else hi."""
    while lo < hi:
        mid = (lo + hi) // 2
        if distinct[mid] <= s:
            hi = mid
        else:
            lo = mid + 1
    return lo


@njit(cache=True)
def _fill_groups(offsets, scores, rel, judged_sorted, mem_offsets, member_of_doc, distinct,
                 n_groups, first_nan, mem_rel, mem_index, mem_input_rank, grp_above, grp_size,
                 grp_mem_start, grp_mem_end, doc_slot):
    """Fill the outputs of `judged_groups` (allocated, zeroed, by it); see there.

    judged_sorted: global indices of the judged documents, per query by score then judgment,
    both descending; member_of_doc: scratch (n,); distinct: scratch (M,).
    """
    for q in range(offsets.shape[0] - 1):
        lo = offsets[q]
        hi = offsets[q + 1]
        mem_lo = mem_offsets[q]
        mem_hi = mem_offsets[q + 1]
        nan_at = -1
        for i in range(lo, hi):
            if np.isnan(scores[i]):
                nan_at = i - lo
                break
        if nan_at >= 0:
            first_nan[q] = nan_at
            continue
        if mem_hi == mem_lo:
            continue
        # distinct judged scores, descending (stored from distinct[mem_lo]); member -> group
        n_grp = 0
        for m in range(mem_lo, mem_hi):
            doc = judged_sorted[m]
            s = scores[doc]
            if n_grp == 0 or s != distinct[mem_lo + n_grp - 1]:
                distinct[mem_lo + n_grp] = s
                grp_mem_start[mem_lo + n_grp] = m
                n_grp += 1
            mem_rel[m] = rel[doc]
            mem_index[m] = doc - lo
            member_of_doc[doc] = m
            grp_mem_end[mem_lo + n_grp - 1] = m + 1
        n_groups[q] = n_grp
        # one pass over all documents: group sizes, documents strictly above each group, input ranks.
        # grp_above first counts the documents strictly between group b-1 and group b, then sums up.
        for i in range(lo, hi):
            s = scores[i]
            slot = _first_at_or_below(distinct, mem_lo, mem_lo + n_grp, s)
            if slot == mem_lo + n_grp:  # below every judged group
                continue
            if distinct[slot] == s:  # in this group
                doc_slot[i] = slot
                if member_of_doc[i] >= 0:
                    mem_input_rank[member_of_doc[i]] = grp_size[slot]
                grp_size[slot] += 1
            else:  # strictly above this group, below the one before it
                grp_above[slot] += 1
        running = 0
        for b in range(mem_lo, mem_lo + n_grp):
            running += grp_above[b]
            grp_above[b] = running
            running += grp_size[b]


def judged_groups(offsets, scores, rel, judged, mem_offsets):
    """Judged groups of every query.

    Args:
        offsets: (Q+1,) CSR offsets of each query's documents (input order).
        scores, rel, judged: per retrieved document; rel is the judgment (0 if unjudged).
        mem_offsets: (Q+1,) cumulative count of judged documents per query.

    Returns:
        n_groups (Q,), first_nan (Q,), and per judged member (M,): rel (best-first
        within group), index in the query's input order, rank inside its group in
        input order; per group slot (M,): above, size, start and end of its members.
        Group slots of query q start at mem_offsets[q]. Per document (n,): its group
        slot (int32 unless there are 2^31 members), or -1 outside every judged group. A query with a NaN score has no
        groups and first_nan its first NaN's index (else -1).
    """
    offsets = np.ascontiguousarray(offsets, np.int64)
    scores = np.ascontiguousarray(scores, np.float64)
    rel = np.ascontiguousarray(rel, np.float64)
    mem_offsets = np.ascontiguousarray(mem_offsets, np.int64)
    n_queries = offsets.shape[0] - 1
    n_docs = scores.shape[0]
    n_members = int(mem_offsets[-1])
    # judged documents, per query by score desc, then judgment desc, then input order (stable)
    judged_at = np.flatnonzero(judged)
    query_of = np.repeat(np.arange(n_queries, dtype=np.int64), np.diff(mem_offsets))
    judged_sorted = judged_at[np.lexsort((-rel[judged_at], -scores[judged_at], query_of))].astype(np.int64)
    index_type = slot_dtype(n_members)
    member_of_doc = np.full(n_docs, -1, index_type)
    distinct = np.zeros(n_members, np.float64)
    n_groups = np.zeros(n_queries, np.int64)
    first_nan = np.full(n_queries, -1, np.int64)
    mem_rel = np.zeros(n_members, np.float64)
    mem_index, mem_input_rank, grp_above, grp_size, grp_mem_start, grp_mem_end = (
        np.zeros(n_members, np.int64) for _ in range(6))
    doc_slot = np.full(n_docs, -1, index_type)
    _fill_groups(offsets, scores, rel, judged_sorted, mem_offsets, member_of_doc, distinct, n_groups, first_nan,
                 mem_rel, mem_index, mem_input_rank, grp_above, grp_size, grp_mem_start, grp_mem_end, doc_slot)
    return (n_groups, first_nan, mem_rel, mem_index, mem_input_rank,
            grp_above, grp_size, grp_mem_start, grp_mem_end, doc_slot)
