"""trec_eval's counts: num_q, num_ret, num_rel and num_rel_ret, per query.

With n retrieved, R judged >= the level in the qrels and h of those retrieved:

    num_q = 1,  num_ret = n,  num_rel = R,  num_rel_ret = h

summed over queries, not averaged (`tieaware.metrics.MetricSpec.aggregate`). No tie
order moves them: E = min = max = oblivious, variance 0. At a cutoff k (trec_eval -M k)
num_ret = min(n, k), still fixed, and num_rel_ret = Hits@k, whose tie-aware E, Var,
min and max are `hits.hits`'.

References:
    trec_eval 10, ``m_num_q.c``, ``m_num_ret.c``, ``m_num_rel.c``, ``m_num_rel_ret.c``.
"""
from __future__ import annotations

import numpy as np

from ...metrics import MetricSpec
from . import hits
from .common import Judged, constant, relevant_retrieved


def num_q(judged: Judged, p: MetricSpec) -> np.ndarray:
    """1 per query."""
    return constant(np.ones(judged.n_queries))


def num_ret(judged: Judged, p: MetricSpec) -> np.ndarray:
    """Documents retrieved, min(n, k) at a cutoff k."""
    return constant(judged.n_ret if p.k is None else np.minimum(judged.n_ret, p.k))


def num_rel(judged: Judged, p: MetricSpec) -> np.ndarray:
    """R: documents in the qrels judged >= the level, retrieved or not."""
    return constant(judged.n_relevant(p.relevance_level))


def num_rel_ret(judged: Judged, p: MetricSpec) -> np.ndarray:
    """Relevant documents retrieved; at a cutoff k, Hits@k (tie-aware)."""
    if p.k is None:
        return constant(relevant_retrieved(judged, p.relevance_level))
    return hits.hits(judged, p)
