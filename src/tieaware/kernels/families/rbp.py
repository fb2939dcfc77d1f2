"""Rank-biased precision RBP(p) = (1 - p) sum_j p^(j-1) gain_j (Moffat & Zobel 2008).

A user reads rank j + 1 after rank j with probability p. RBP is linear in the
gains with position weights w_j = (1 - p) p^(j-1), so its E and Var over tie
orderings are those of `dcg.weighted_moments` with these weights (a cutoff k
sets w_j = 0 past k):

    E[RBP] = sum_n gbar_n S_w(n),   S_w(n) = (1 - p) sum_{j in n's top-k slots} p^(j-1)

Gains: ``linear`` (the grade; ir_measures' ``RBP``, ranx-style ``rbp.95``) or
``binary`` at a level (``RBP(rel=2)``). Derivation: `docs/formulas.md`, "RBP".

References:
    A. Moffat and J. Zobel, "Rank-Biased Precision for Measurement of Retrieval
    Effectiveness", ACM TOIS 27(1), 2008.
"""
from __future__ import annotations

import numpy as np

from .common import Judged, Params
from .dcg import longest, weighted


def rbp(judged: Judged, p: Params) -> np.ndarray:
    """RBP with persistence p.persistence. Returns (Q, 5): expected, variance, min, max, oblivious."""
    weight = np.zeros(longest(judged) + 2)
    ranks = np.arange(1, weight.size)
    weight[1:] = (1.0 - p.persistence) * np.power(p.persistence, ranks - 1.0)
    return weighted(judged, p, weight)
