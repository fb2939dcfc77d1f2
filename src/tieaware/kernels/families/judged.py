"""Judged@k: the share of the top k that has a judgment (ir_measures' ``Judged@k``).

It is Hits@k with "judged" in place of "relevant": inside group n the judged
members j_n among its g_n documents land in the t_n top-k slots hypergeometrically,

    E[J]   = sum_n t_n j_n / g_n
    Var[J] = sum_n t_n (1 - t_n/g_n) j_n (1 - j_n/g_n) / (g_n - 1)      (g_n > 1)

and Judged@k = J / min(k, n) for n retrieved documents (ir_measures divides by
the list length when it is shorter than k). Judged members first in every group
gives the maximum, last the minimum (the `worst` and `best` orderings of
`common` put them there). Derivation: `docs/formulas.md`, "Hits".

References:
    ir_measures' ``Judged`` measure (after OpenNIR's judgment rate).
    F. McSherry and M. Najork, ECIR 2008 (the hypergeometric group step).
"""
from __future__ import annotations

import numpy as np

from ...metrics import MetricSpec
from .common import Judged, all_orders, inverse, scaled
from .hits import hits_moments


def judged(judged_lists: Judged, p: MetricSpec) -> np.ndarray:
    """Judged@k. Returns (Q, 5): expected, variance, min, max, oblivious."""
    cutoff = judged_lists.cutoffs(p.k)
    flags = np.ones(judged_lists.mem_rel.shape[0])  # every member of a judged group has a judgment
    stats = all_orders(hits_moments, judged_lists, judged_lists.in_orders(flags), cutoff)
    return scaled(stats, inverse(np.minimum(cutoff, judged_lists.n_ret)))
