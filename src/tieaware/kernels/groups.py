"""Tie groups of the judged documents, in one pass over each query's scores.

Every metric here depends on a ranked list only through the documents that are
judged (present in the qrels): an unjudged document has gain 0, is never
relevant, and bpref ignores it. So instead of sorting all n retrieved documents,
each query keeps only the score groups that hold a judged document ("judged
groups"), each with

* ``above`` (c): documents with a strictly higher score,
* ``size`` (g): documents with exactly this score, judged or not,
* its judged members, sorted by judgment descending (best-first order).

Cost: O(n log J) per query for n retrieved and J judged documents (a binary
search of each score among the J judged scores), instead of O(n log n).
"""
import numpy as np
from numba import njit, prange


@njit(cache=True)
def _insertion_argsort_desc(primary, secondary, idx):
    """Sort `idx` in place by (primary desc, secondary desc); stable; for short arrays."""
    for i in range(1, idx.shape[0]):
        cur = idx[i]
        j = i - 1
        while j >= 0 and (primary[idx[j]] < primary[cur]
                          or (primary[idx[j]] == primary[cur] and secondary[idx[j]] < secondary[cur])):
            idx[j + 1] = idx[j]
            j -= 1
        idx[j + 1] = cur


@njit(cache=True)
def _query_groups(scores, rel, judged, lo, hi, mem_lo,
                  mem_rel, mem_index, mem_input_rank, grp_above, grp_size, grp_mem_start, grp_mem_end,
                  doc_slot):
    """Judged groups of one query (documents lo..hi-1); members written from mem_lo.

    Returns (number of groups, local index of the first NaN score or -1).
    """
    n = hi - lo
    for i in range(n):
        if np.isnan(scores[lo + i]):
            return 0, i
    n_judged = 0
    for i in range(n):
        if judged[lo + i]:
            n_judged += 1
    if n_judged == 0:
        return 0, -1
    order = np.empty(n_judged, np.int64)  # the judged documents, sorted below
    j = 0
    for i in range(n):
        if judged[lo + i]:
            order[j] = i
            j += 1
    q_scores = scores[lo:hi]
    q_rel = rel[lo:hi]
    if n_judged < 64:
        _insertion_argsort_desc(q_scores, q_rel, order)
    else:  # score desc, then judgment desc
        keyed = np.argsort(-q_rel[order], kind="mergesort")
        order = order[keyed]
        keyed = np.argsort(-q_scores[order], kind="mergesort")
        order = order[keyed]

    # distinct judged scores, descending; member -> group
    distinct = np.empty(n_judged, np.float64)
    n_groups = 0
    for j in range(n_judged):
        s = q_scores[order[j]]
        m = mem_lo + j
        if n_groups == 0 or s != distinct[n_groups - 1]:
            distinct[n_groups] = s
            grp_mem_start[mem_lo + n_groups] = m
            n_groups += 1
        mem_rel[m] = q_rel[order[j]]
        mem_index[m] = order[j]
        grp_mem_end[mem_lo + n_groups - 1] = m + 1
    distinct = distinct[:n_groups]

    # one pass over all documents: group sizes, documents above, input ranks
    above_hist = np.zeros(n_groups + 1, np.int64)
    sizes = np.zeros(n_groups, np.int64)
    member_slot = np.empty(n, np.int64)
    for j in range(n_judged):
        member_slot[order[j]] = j
    neg = -distinct  # ascending, for searchsorted
    for i in range(n):
        s = q_scores[i]
        b = np.searchsorted(neg, -s)  # first group whose score <= s
        if b < n_groups and distinct[b] == s:  # in group b, so above groups b+1...
            doc_slot[lo + i] = mem_lo + b
            if judged[lo + i]:
                mem_input_rank[mem_lo + member_slot[i]] = sizes[b]
            sizes[b] += 1
            above_hist[b + 1] += 1
        else:  # strictly above groups b...
            above_hist[b] += 1
    running = 0
    for b in range(n_groups):
        running += above_hist[b]
        grp_above[mem_lo + b] = running
        grp_size[mem_lo + b] = sizes[b]
    return n_groups, -1


@njit(cache=True, parallel=True)
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
        slot, or -1 outside every judged group.
    """
    n_queries = offsets.shape[0] - 1
    n_members = mem_offsets[-1]
    mem_rel = np.zeros(n_members, np.float64)
    mem_index = np.zeros(n_members, np.int64)
    mem_input_rank = np.zeros(n_members, np.int64)
    grp_above = np.zeros(n_members, np.int64)
    grp_size = np.zeros(n_members, np.int64)
    grp_mem_start = np.zeros(n_members, np.int64)
    grp_mem_end = np.zeros(n_members, np.int64)
    doc_slot = np.full(scores.shape[0], -1, np.int64)
    n_groups = np.zeros(n_queries, np.int64)
    first_nan = np.full(n_queries, -1, np.int64)
    for q in prange(n_queries):
        n_groups[q], first_nan[q] = _query_groups(
            scores, rel, judged, offsets[q], offsets[q + 1], mem_offsets[q],
            mem_rel, mem_index, mem_input_rank, grp_above, grp_size, grp_mem_start, grp_mem_end, doc_slot)
    return (n_groups, first_nan, mem_rel, mem_index, mem_input_rank,
            grp_above, grp_size, grp_mem_start, grp_mem_end, doc_slot)
