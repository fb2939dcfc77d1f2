"""Rank-biased precision RBP(p) = (1 - p) sum_j p^(j-1) gain_j (Moffat & Zobel 2008).

A user reads rank j + 1 after rank j with probability p. RBP is linear in the
gains with position weights w_j = (1 - p) p^(j-1), so its E and Var over tie
orderings are those of `dcg.weighted_moments` with these weights (a cutoff k
sets w_j = 0 past k):

    E[RBP] = sum_n gbar_n S_w(n),   S_w(n) = (1 - p) sum_{j in n's top-k slots} p^(j-1)

Gains: ``linear`` (the grade; ir_measures' ``RBP``, ranx-style ``rbp.95``),
``binary`` at a level (``RBP(rel=2)``) or ``scaled`` (trec_eval 10's ``rbp``,
m_rbp.c: the grade divided by the query's top grade in the qrels when that exceeds
1, so gains lie in [0, 1]; a per-query factor, applied to the linear statistics).
Derivation: `docs/formulas.md`, "RBP".

References:
    A. Moffat and J. Zobel, "Rank-Biased Precision for Measurement of Retrieval
    Effectiveness", ACM TOIS 27(1), 2008.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ...metrics import MetricSpec
from .common import LINEAR, SCALED, Judged, inverse, scaled
from .dcg import longest, weighted


def rbp(judged: Judged, p: MetricSpec) -> np.ndarray:
    """RBP with persistence p.persistence. Returns (Q, 5): expected, variance, min, max, oblivious."""
    weight = np.zeros(longest(judged) + 2)
    ranks = np.arange(1, weight.size)
    weight[1:] = (1.0 - p.persistence) * np.power(p.persistence, ranks - 1.0)
    if p.gain != SCALED:
        return weighted(judged, p, weight)
    linear = weighted(judged, dataclasses.replace(p, gain=LINEAR), weight)
    return scaled(linear, inverse(np.maximum(top_grades(judged), 1.0)))


def top_grades(judged: Judged) -> np.ndarray:
    """(Q,) each query's highest grade in the qrels (0 for a query without qrels)."""
    starts, stops = judged.qrel_offsets[:-1], judged.qrel_offsets[1:]
    first = np.minimum(starts, max(judged.qrel_rel.size - 1, 0))
    return np.where(stops > starts, judged.qrel_rel[first] if judged.qrel_rel.size else 0.0, 0.0)
