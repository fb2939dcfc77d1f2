"""Tie census of a run: how many distinct scores the top k holds (paper, Appendix C)."""
import numpy as np
from numba import njit, prange


@njit(cache=True, parallel=True)
def census_table(offsets, scores, ks):
    """Per query and cutoff: (unique scores in the top k, documents in the top k,
    1 if a tie group straddles rank k, size of the largest group reaching the top k).

    Returns an array (Q, len(ks), 4).
    """
    n_queries = offsets.shape[0] - 1
    out = np.zeros((n_queries, ks.shape[0], 4))
    for q in prange(n_queries):
        ranked = -np.sort(-scores[offsets[q]:offsets[q + 1]])
        n = ranked.shape[0]
        for a in range(ks.shape[0]):
            top = min(ks[a], n)
            if top == 0:
                continue
            unique = 0
            largest = 0
            i = 0
            while i < top:
                j = i
                while j < n and ranked[j] == ranked[i]:
                    j += 1
                unique += 1
                largest = max(largest, j - i)
                i = j
            out[q, a, 0] = unique
            out[q, a, 1] = top
            out[q, a, 2] = 1.0 if top < n and ranked[top - 1] == ranked[top] else 0.0
            out[q, a, 3] = largest
    return out
