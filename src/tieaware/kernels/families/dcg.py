"""DCG@k and nDCG@k: sum over ranks j <= k of gain_j / log2(j + 1); nDCG divides by the ideal DCG.

DCG is linear in the gains with position weights w_j (0 past k). Inside group n
each of its g_n documents is equally likely to take each of its slots, so with
gbar_n the group's mean gain and S_w = sum of its slots' weights inside the cutoff

    E[DCG] = sum_n gbar_n S_w(n)                      (McSherry & Najork 2008)

and, for a linear permutation statistic sum_j w_j a_pi(j) over g items,
Var = (sum_j (w_j - wbar)^2)(sum_i (a_i - abar)^2)/(g - 1), summed over groups:

    Var[DCG] = sum_n (S_w2 - S_w^2/g_n)(S_a2 - S_a^2/g_n)/(g_n - 1)    (g_n > 1)

where the slot sums run over all g_n slots (weight 0 past k) and S_a, S_a2 are the
sums of the group's gains and squared gains. `weighted_moments` evaluates this for
any weights; RBP (`rbp`) is the same statistic with geometric weights. Gains:
``linear`` (the grade; ranx's ``ndcg``, trec_eval's ``ndcg_cut``) or ``exp``
(2^grade - 1, ``ndcg_burges``). IDCG uses the qrels' best gains at the same
cutoff. Derivation: `docs/formulas.md`, "DCG".

References:
    K. Järvelin and J. Kekäläinen, "Cumulated Gain-Based Evaluation of IR
    Techniques", ACM TOIS 20(4), 2002.
    F. McSherry and M. Najork, "Computing Information Retrieval Performance
    Measures Efficiently in the Presence of Tied Scores", ECIR 2008.
    W. Yang et al., "Reliable Evaluation Protocol for Low-Precision Retrieval",
    arXiv 2508.03306, 2025.
"""
from __future__ import annotations

import numpy as np

from ...metrics import MetricSpec
from .. import kernel
from .common import Judged, all_orders, gains, inverse, scaled, top_slots


@kernel
def weighted_moments(count, offsets, above, size, end, gain, cutoff, weight, weight_cum, weight2_cum, out):
    """out[q] = (E, Var) of sum over ranks j <= cutoff[q] of weight[j] * gain at j, for every query q.

    Group slots and members as in `common.Groups`; gain (M,) per judged member;
    weight[j] for 1-based rank j (weight[0] unused), weight_cum / weight2_cum the cumulative
    sums of weight and weight^2 (a single slot reads weight itself, so tie-free values are exact).
    """
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
            sum_a = 0.0
            sum_a2 = 0.0
            for j in range(start, end[gi]):
                sum_a += gain[j]
                sum_a2 += gain[j] * gain[j]
            start = end[gi]
            if sum_a == 0.0:
                continue
            if t == 1:
                sum_w = weight[c + 1]
                sum_w2 = sum_w * sum_w
            else:
                sum_w = weight_cum[c + t] - weight_cum[c]
                sum_w2 = weight2_cum[c + t] - weight2_cum[c]
            expected += sum_a / g * sum_w
            if g > 1:
                variance += (sum_w2 - sum_w * sum_w / g) * (sum_a2 - sum_a * sum_a / g) / (g - 1)
        out[q, 0] = expected
        out[q, 1] = variance


def longest(judged: Judged) -> int:
    """The deepest rank any list or any ideal list reaches."""
    return int(max(judged.n_ret.max(initial=0), np.diff(judged.qrel_offsets).max(initial=0)))


def weighted(judged: Judged, p: MetricSpec, weight: np.ndarray) -> np.ndarray:
    """(Q, 5) statistics of sum_{j <= k} weight[j] gain_j (weight[0] = 0, one entry per rank)."""
    return all_orders(weighted_moments, judged, judged.in_orders(gains(judged.mem_rel, p)), judged.cutoffs(p.k), weight,
                      np.cumsum(weight), np.cumsum(weight * weight))


def ideal(judged: Judged, p: MetricSpec, weight: np.ndarray) -> np.ndarray:
    """(Q,) the weighted sum of the qrels' best gains at the same cutoff (IDCG for DCG weights): the
    qrels' grades are descending per query and gains non-decreasing in the grade, so these are the
    first min(k, n_q) of the n_q judgments of each query q (only those are read)."""
    offsets = judged.qrel_offsets
    taken = np.diff(offsets) if p.k is None else np.minimum(np.diff(offsets), p.k)
    first = np.cumsum(taken) - taken  # where each query's taken judgments start among all taken
    rank = np.arange(int(taken.sum())) - np.repeat(first, taken)  # 0-based rank within its query
    terms = gains(judged.qrel_rel[np.repeat(offsets[:-1], taken) + rank], p) * weight[rank + 1]
    return np.bincount(np.repeat(np.arange(judged.n_queries), taken), weights=terms, minlength=judged.n_queries)


def discounts(judged: Judged) -> np.ndarray:
    """weight[j] = 1/log2(j + 1) for ranks j >= 1 (weight[0] = 0)."""
    weight = np.zeros(longest(judged) + 2)
    weight[1:] = 1.0 / np.log2(np.arange(2, weight.size + 1))
    return weight


def dcg(judged: Judged, p: MetricSpec) -> np.ndarray:
    """DCG@k. Returns (Q, 5): expected, variance, min, max, oblivious."""
    return weighted(judged, p, discounts(judged))


def ndcg(judged: Judged, p: MetricSpec) -> np.ndarray:
    """nDCG@k = DCG@k / IDCG@k; 0 when the query has no positive gain in the qrels."""
    weight = discounts(judged)
    return scaled(weighted(judged, p, weight), inverse(ideal(judged, p, weight)))
