"""Hits@k and what is Hits scaled: precision, recall, F1, R-precision.

Hits@k H counts the relevant documents in the top k. Inside group n the t_n of
its g_n slots that fall in the top k receive a uniformly random t_n-subset of
its documents, so the relevant among them are hypergeometric(g_n, r_n, t_n):

    E[H]   = sum_n t_n r_n / g_n
    Var[H] = sum_n t_n (1 - t_n/g_n) r_n (1 - r_n/g_n) / (g_n - 1)      (g_n > 1)

Groups permute independently, so the sums run over groups; the groups fully
above the cutoff add a constant r_n, the ones below it nothing. Then P@k = H/k
(k even when fewer documents were retrieved, as trec_eval), R@k = H/R, F1@k =
2H/(k + R), R-precision = H(k = R)/R. Derivation: `docs/formulas.md`, "Hits".

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
from .common import Judged, all_orders, count_relevant, inverse, scaled, top_slots


@kernel
def hits_moments(count, offsets, above, size, end, relevant, cutoff, out):
    """out[q] = (E[H], Var[H]) of every query q; relevant: 1.0 per relevant judged member, else 0.0.

    Group slots and members as in `common.Groups`; cutoff (Q,): k per query.
    """
    for q in range(count.shape[0]):
        expected = 0.0
        variance = 0.0
        start = offsets[q]
        for gi in range(offsets[q], offsets[q] + count[q]):
            g = size[gi]
            t = top_slots(cutoff[q], above[gi], g)
            if t == 0:
                break  # this group and every later one lie past the cutoff
            r = count_relevant(relevant, start, end[gi])
            start = end[gi]
            expected += t * r / g
            if g > 1:
                variance += (t - t * t / g) * (r - r * r / g) / (g - 1)
        out[q, 0] = expected
        out[q, 1] = variance


def _hits(judged: Judged, cutoff: np.ndarray, level: float) -> np.ndarray:
    return all_orders(hits_moments, judged, judged.relevant(level), cutoff)


def hits(judged: Judged, p: MetricSpec) -> np.ndarray:
    """Hits@k: relevant documents in the top k. Returns (Q, 5): expected, variance, min, max, oblivious."""
    return _hits(judged, judged.cutoffs(p.k), p.relevance_level)


def precision(judged: Judged, p: MetricSpec) -> np.ndarray:
    """P@k = Hits@k / k (k: the list length when no cutoff is given)."""
    cutoff = judged.cutoffs(p.k)
    return scaled(_hits(judged, cutoff, p.relevance_level), inverse(cutoff))


def recall(judged: Judged, p: MetricSpec) -> np.ndarray:
    """R@k = Hits@k / R."""
    return scaled(_hits(judged, judged.cutoffs(p.k), p.relevance_level), inverse(judged.n_relevant(p.relevance_level)))


def f1(judged: Judged, p: MetricSpec) -> np.ndarray:
    """F1@k = 2 P R / (P + R) = 2 Hits@k / (k + R); 0 when R = 0."""
    cutoff = judged.cutoffs(p.k)
    n_rel = judged.n_relevant(p.relevance_level)
    return scaled(_hits(judged, cutoff, p.relevance_level), np.where(n_rel > 0, 2.0 * inverse(cutoff + n_rel), 0.0))


def rprec(judged: Judged, p: MetricSpec) -> np.ndarray:
    """R-precision = Hits@R / R."""
    n_rel = judged.n_relevant(p.relevance_level)
    return scaled(_hits(judged, n_rel, p.relevance_level), inverse(n_rel))
