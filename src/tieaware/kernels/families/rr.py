"""Reciprocal rank RR@k: 1/rank of the first relevant document if it is in the top k, else 0.

Only the first group holding a relevant document matters (groups above it hold
none, groups below it come later). With c documents above that group, g in it
and r of them relevant, the first relevant document sits at offset u (0-based)
inside the group with the negative-hypergeometric probability

    P(u) = C(g - u - 1, r - 1) / C(g, r),   P(0) = r/g,   P(u+1) = P(u) (g - u - r)/(g - u - 1),

so, summing over the offsets that stay inside the cutoff (u <= min(g - r, k - c - 1)),

    E[RR]   = sum_u P(u) / (c + u + 1)
    Var[RR] = sum_u P(u) / (c + u + 1)^2 - E[RR]^2.

Derivation: `docs/formulas.md`, "Reciprocal rank".

References:
    F. McSherry and M. Najork, "Computing Information Retrieval Performance
    Measures Efficiently in the Presence of Tied Scores", ECIR 2008.
    W. Yang et al., "Reliable Evaluation Protocol for Low-Precision Retrieval",
    arXiv 2508.03306, 2025.
"""
from __future__ import annotations

import numpy as np

from ...metrics import MetricSpec
from .. import kernel
from .common import Judged, all_orders, count_relevant, top_slots


@kernel
def rr_moments(count, offsets, above, size, end, relevant, cutoff, out):
    """out[q] = (E[RR@k], Var) of every query q; arguments as `hits.hits_moments`."""
    for q in range(count.shape[0]):
        expected = 0.0
        variance = 0.0
        start = offsets[q]
        for gi in range(offsets[q], offsets[q] + count[q]):
            c = above[gi]
            g = size[gi]
            t = top_slots(cutoff[q], c, g)
            if t == 0:
                break  # this group and every later one lie past the cutoff
            r = count_relevant(relevant, start, end[gi])
            start = end[gi]
            if r == 0:
                continue
            p_first = r / g  # P(first relevant at offset u), updated by its ratio
            second = 0.0
            for u in range(min(g - r, t - 1) + 1):
                rank = c + u + 1.0
                expected += p_first / rank
                second += p_first / (rank * rank)
                if g - u - 1 > 0:
                    p_first *= (g - u - r) / (g - u - 1)
            variance = second - expected * expected
            break  # the first group with a relevant document decides
        out[q, 0] = expected
        out[q, 1] = variance


def rr(judged: Judged, p: MetricSpec) -> np.ndarray:
    """RR@k (MRR is its mean). Returns (Q, 5): expected, variance, min, max, oblivious."""
    return all_orders(rr_moments, judged, judged.relevant(p.relevance_level), judged.cutoffs(p.k))
