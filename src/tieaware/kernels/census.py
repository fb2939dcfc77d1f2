"""Tie census of a run: how many distinct scores the top k holds (paper, Appendix C)."""
import numpy as np

from . import kernel


@kernel
def _census_sorted(offsets, ranked, ks, out):
    """Fill out (Q, len(ks), 4) from each query's scores sorted descending (ranked, CSR by offsets)."""
    for q in range(offsets.shape[0] - 1):
        lo = offsets[q]
        n = offsets[q + 1] - lo
        for a in range(ks.shape[0]):
            top = min(ks[a], n)
            if top == 0:
                continue
            unique = 0
            largest = 0
            i = 0
            while i < top:
                j = i
                while j < n and ranked[lo + j] == ranked[lo + i]:
                    j += 1
                unique += 1
                largest = max(largest, j - i)
                i = j
            out[q, a, 0] = unique
            out[q, a, 1] = top
            out[q, a, 2] = 1.0 if top < n and ranked[lo + top - 1] == ranked[lo + top] else 0.0
            out[q, a, 3] = largest


def census_table(offsets, scores, ks):
    """Per query and cutoff: (unique scores in the top k, documents in the top k,
    1 if a tie group straddles rank k, size of the largest group reaching the top k).

    Returns an array (Q, len(ks), 4).
    """
    offsets = np.ascontiguousarray(offsets, np.int64)
    scores = np.ascontiguousarray(scores, np.float64)
    ks = np.ascontiguousarray(ks, np.int64)
    n_queries = offsets.shape[0] - 1
    query_of = np.repeat(np.arange(n_queries), np.diff(offsets))
    ranked = scores[np.lexsort((-scores, query_of))]  # per query, score descending
    out = np.zeros((n_queries, ks.shape[0], 4))
    _census_sorted(offsets, ranked, ks, out)
    return out
