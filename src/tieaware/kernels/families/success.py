"""Success@k: 1 if a relevant document is in the top k, else 0.

No relevant document reaches the top k exactly when, in every group n cut by
the cutoff or above it, none of its t_n top-k slots holds one of its r_n relevant
documents; within one group that has probability C(g_n - r_n, t_n) / C(g_n, t_n)
(hypergeometric, zero successes), and groups are independent:

    E[S]   = 1 - prod_{n: t_n > 0} C(g_n - r_n, t_n) / C(g_n, t_n)
           = 1 - prod_n prod_{i < t_n} (g_n - r_n - i) / (g_n - i)
    Var[S] = E[S] (1 - E[S])        (S is 0 or 1)

The product is taken factor by factor, so large groups cannot overflow.
Derivation: `docs/formulas.md`, "Success".

References:
    W. Yang et al., "Reliable Evaluation Protocol for Low-Precision Retrieval",
    arXiv 2508.03306, 2025.
"""
from __future__ import annotations

import numpy as np

from ...metrics import MetricSpec
from .. import kernel
from .common import Judged, all_orders, count_relevant, top_slots


@kernel
def success_moments(count, offsets, above, size, end, relevant, cutoff, out):
    """out[q] = (E[Success@k], Var) of every query q; arguments as `hits.hits_moments`."""
    for q in range(count.shape[0]):
        none_found = 1.0  # P(no relevant document in the top k)
        start = offsets[q]
        for gi in range(offsets[q], offsets[q] + count[q]):
            g = size[gi]
            t = top_slots(cutoff[q], above[gi], g)
            if t == 0:
                break  # this group and every later one lie past the cutoff
            r = count_relevant(relevant, start, end[gi])
            start = end[gi]
            if r > 0:
                if t > g - r:  # more top-k slots than non-relevant documents
                    none_found = 0.0
                else:
                    for i in range(t):
                        none_found *= (g - r - i) / (g - i)
        expected = 1.0 - none_found
        out[q, 0] = expected
        out[q, 1] = expected * (1.0 - expected)


def success(judged: Judged, p: MetricSpec) -> np.ndarray:
    """Success@k. Returns (Q, 5): expected, variance, min, max, oblivious."""
    return all_orders(success_moments, judged, judged.relevant(p.relevance_level), judged.cutoffs(p.k))
