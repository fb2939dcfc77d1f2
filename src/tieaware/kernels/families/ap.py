"""Average precision AP@k = (1/R) sum over relevant documents at rank j <= k of precision@j.

Group n (c_n above, g_n documents, r_n relevant, t_n slots in the top k, R_n
relevant in the groups above) contributes sum_{u < t_n} [slot u relevant] *
(R_n + 1 + relevant among its slots before u) / (c_n + u + 1). A slot is relevant
with probability p_n = r_n/g_n and, given that, each other slot with probability
(r_n - 1)/(g_n - 1), so

    E[AP] = (1/R) sum_n p_n sum_{u < t_n} (R_n + 1 + u (r_n - 1)/(g_n - 1)) / (c_n + u + 1)

(the u-term is 0 when g_n = 1; McSherry & Najork). A group's contribution
depends only on its own order, so variances add over groups; each group's first
two moments come from an exact recursion over its slots (`_group_moments`).
Derivation: `docs/formulas.md`, "Average precision".

References:
    F. McSherry and M. Najork, "Computing Information Retrieval Performance
    Measures Efficiently in the Presence of Tied Scores", ECIR 2008.
    W. Yang et al., "Reliable Evaluation Protocol for Low-Precision Retrieval",
    arXiv 2508.03306, 2025.
"""
from __future__ import annotations

import numpy as np

from ...metrics import MetricSpec
from .. import INNER, kernel
from .common import Judged, all_orders, count_relevant, inverse, scaled, top_slots


@kernel(**INNER)
def _group_moments(c, g, r, t, rel_above, work):
    """First two moments of one group's AP numerator sum_{relevant slot u < t} prec@(c + u + 1).

    Sequential draws without replacement: state s = relevant among the first
    slots; slot u+1 is relevant with probability (r - s)/(g - u) and then adds
    (rel_above + s + 1)/(c + u + 1). Exact, O(t * min(t, r)). work: (3, >= min(t, r) + 2)
    scratch rows for P(s), E[sum; s], E[sum^2; s].
    """
    top = min(t, r)
    prob = work[0]
    m1 = work[1]
    m2 = work[2]
    for s in range(top + 2):
        prob[s] = 0.0
        m1[s] = 0.0
        m2[s] = 0.0
    prob[0] = 1.0
    for u in range(t):
        for s in range(min(u, r), -1, -1):
            p = prob[s]
            if p == 0.0:
                continue
            q = (r - s) / (g - u)
            if q > 0.0:
                v = (rel_above + s + 1.0) / (c + u + 1.0)
                prob[s + 1] += q * p
                m1[s + 1] += q * (m1[s] + v * p)
                m2[s + 1] += q * (m2[s] + 2.0 * v * m1[s] + v * v * p)
            prob[s] = (1.0 - q) * p
            m1[s] *= 1.0 - q
            m2[s] *= 1.0 - q
    first = 0.0
    second = 0.0
    for s in range(top + 2):
        first += m1[s]
        second += m2[s]
    return first, second


@kernel
def ap_moments(count, offsets, above, size, end, relevant, cutoff, work, out):
    """out[q] = (E, Var) of the AP@k numerator (AP times R) of every query q; arguments as
    `hits.hits_moments`; work: scratch (3, >= judged members of the largest group + 2)."""
    for q in range(count.shape[0]):
        expected = 0.0
        variance = 0.0
        rel_above = 0.0
        start = offsets[q]
        for gi in range(offsets[q], offsets[q] + count[q]):
            c = above[gi]
            g = size[gi]
            t = top_slots(cutoff[q], c, g)
            if t == 0:
                break  # this group and every later one lie past the cutoff
            r = count_relevant(relevant, start, end[gi])
            start = end[gi]
            if r > 0:
                for u in range(t):
                    inner = (r - 1.0) / (g - 1.0) * u if g > 1 else 0.0
                    expected += r / g * (rel_above + 1.0 + inner) / (c + u + 1.0)
                if r < g:
                    first, second = _group_moments(c, g, r, t, rel_above, work)
                    variance += second - first * first
            rel_above += r
        out[q, 0] = expected
        out[q, 1] = variance


def ap(judged: Judged, p: MetricSpec) -> np.ndarray:
    """AP@k (MAP is its mean), divided by R as trec_eval. Returns (Q, 5): expected, variance, min,
    max, oblivious."""
    work = np.empty((3, judged.largest_group + 2))
    stats = all_orders(ap_moments, judged, judged.relevant(p.relevance_level), judged.cutoffs(p.k), work)
    return scaled(stats, inverse(judged.n_relevant(p.relevance_level)))
