"""Average precision AP@k = (1/R) sum over relevant documents at rank j <= k of precision@j.

Group n (c_n above, g_n documents, r_n relevant, t_n slots in the top k, R_n
relevant in the groups above) contributes X_n = sum_{u < t_n} [slot u relevant] *
(R_n + 1 + relevant among its slots before u) / (c_n + u + 1). A slot is relevant
with probability p_n = r_n/g_n and, given that, each other slot with probability
(r_n - 1)/(g_n - 1), so

    E[AP] = (1/R) sum_n p_n sum_{u < t_n} (R_n + 1 + u (r_n - 1)/(g_n - 1)) / (c_n + u + 1)

(the u-term is 0 when g_n = 1; McSherry & Najork). A group's contribution
depends only on its own order, so variances add over groups; each group's
variance has a closed form in O(t_n) (`_group_variance`).
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


@kernel(inline="always")
def _add(total, error, x):
    """Neumaier's compensated total + x: (the new total, the running error the sum lost so far)."""
    new = total + x
    if abs(total) >= abs(x):
        error += (total - new) + x
    else:
        error += (x - new) + total
    return new, error


@kernel(**INNER)
def _group_variance(c, g, r, t, rel_above):
    """Var of one group's AP numerator X = sum_{u < t} Y_u, Y_u = I_u w_u (B + N_u), over its orders.

    I_u: slot u is relevant, N_u: relevant among slots 0..u-1, w_u = 1/(c + u + 1), B = rel_above + 1;
    0 < r < g. With q_m = r(r-1)..(r-m+1) / (g(g-1)..(g-m+1)) the chance that m given slots are all
    relevant, counting the relevant slots before u (and between u and v) gives, for u < v,

        E[I_u (B + N_u)] = B q_1 + u q_2,   E[I_u (B + N_u)^2] = B^2 q_1 + (2B + 1) u q_2 + u(u - 1) q_3,
        E[I_u I_v (B + N_u)(B + N_v)] = B(B + 1) q_2 + (B(u + v - 1) + 2u) q_3 + u(v - 2) q_4,

    so Var Y_u = w_u^2 (d0 + d1 u + d2 u^2) and Cov(Y_u, Y_v) = w_u w_v (e0 + e1 u + e2 v + e3 u v),
    each coefficient a multiple of the group's non-relevant count g - r, written without a difference of
    nearly equal terms (docs/formulas.md, "Average precision"). Then

        Var X = sum_v w_v^2 (d0 + d1 v + d2 v^2) + 2 sum_v w_v ((e0 + e2 v) S0_v + (e1 + e3 v) S1_v),

    S0_v = sum_{u < v} w_u and S1_v = sum_{u < v} u w_u: one pass over the t slots, Neumaier-summed.
    """
    gf = float(g)
    rf = float(r)
    b = rel_above + 1.0
    nonrel = gf - rf
    q1 = rf / gf
    d0 = b * b * q1 * nonrel / gf
    e0 = -b * b * q1 * nonrel / (gf * (gf - 1.0))
    d1 = d2 = e1 = e2 = e3 = 0.0
    if r >= 2:  # so g >= 3
        q2 = q1 * (rf - 1.0) / (gf - 1.0)
        d1 = q2 * nonrel * (2.0 * b / gf + 1.0 / (gf - 2.0))
        d2 = q2 * nonrel * ((rf - 2.0) * (gf - 2.0) - 2.0) / (gf * (gf - 1.0) * (gf - 2.0))
        e0 += b * q2 * nonrel / (gf - 2.0)
        e2 = -2.0 * b * q2 * nonrel / (gf * (gf - 2.0))
        e1 = e2
        e3 = -q2 * q2  # q_4 = 0
        if r >= 3:  # so g >= 4
            q3 = q2 * (rf - 2.0) / (gf - 2.0)
            e1 += 2.0 * q3 * nonrel / (gf - 3.0)
            e3 = -q2 * nonrel * (4.0 * rf * gf - 6.0 * (gf + rf - 1.0)) / (gf * (gf - 1.0) * (gf - 2.0) * (gf - 3.0))
    diagonal = diagonal_error = pairs = pairs_error = 0.0
    s0 = s0_error = s1 = s1_error = 0.0
    for u in range(t):
        w = 1.0 / (c + u + 1.0)
        diagonal, diagonal_error = _add(diagonal, diagonal_error, w * w * (d0 + u * (d1 + u * d2)))
        term = w * ((e0 + e2 * u) * (s0 + s0_error) + (e1 + e3 * u) * (s1 + s1_error))
        pairs, pairs_error = _add(pairs, pairs_error, term)
        s0, s0_error = _add(s0, s0_error, w)
        s1, s1_error = _add(s1, s1_error, u * w)
    return (diagonal + diagonal_error) + 2.0 * (pairs + pairs_error)


@kernel
def ap_moments(count, offsets, above, size, end, relevant, cutoff, out):
    """out[q] = (E, Var) of the AP@k numerator (AP times R) of every query q; arguments as
    `hits.hits_moments`."""
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
                    variance += _group_variance(c, g, r, t, rel_above)
            rel_above += r
        out[q, 0] = expected
        out[q, 1] = variance


def ap(judged: Judged, p: MetricSpec) -> np.ndarray:
    """AP@k (MAP is its mean), divided by R as trec_eval. Returns (Q, 5): expected, variance, min,
    max, oblivious."""
    stats = all_orders(ap_moments, judged, judged.relevant(p.relevance_level), judged.cutoffs(p.k))
    return scaled(stats, inverse(judged.n_relevant(p.relevance_level)))
