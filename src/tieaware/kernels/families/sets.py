"""trec_eval's set measures: the retrieved list as an unordered set.

With n retrieved, R relevant in the qrels and h relevant retrieved (trec_eval
``m_set_*.c``):

    set_P = h / n,  set_recall = h / R,  set_relative_P = h / min(n, R),
    set_map = (h / n) (h / R),  set_F = 2 set_P set_recall / (set_P + set_recall)

(0 where a denominator is 0). No order enters, so tie order cannot move them:
E = min = max = oblivious and the variance is 0. They are here because users
run them beside the others.

References:
    trec_eval 10, ``m_set_P.c``, ``m_set_recall.c``, ``m_set_relative_P.c``,
    ``m_set_map.c``, ``m_set_F.c`` (beta = 1).
"""
from __future__ import annotations

import numpy as np

from ...metrics import MetricSpec
from .common import Judged, constant, inverse, relevant_retrieved


def set_measure(kind: str):
    """The family function of one set measure: "p", "recall", "relative_p", "map" or "f"."""
    def stats(judged: Judged, p: MetricSpec) -> np.ndarray:
        hits = relevant_retrieved(judged, p.relevance_level)
        n_ret = judged.n_ret.astype(np.float64)
        n_rel = judged.n_relevant(p.relevance_level).astype(np.float64)
        precision, recall = hits * inverse(n_ret), hits * inverse(n_rel)
        values = {"p": lambda: precision, "recall": lambda: recall,
                  "relative_p": lambda: hits * inverse(np.minimum(n_ret, n_rel)),
                  "map": lambda: precision * recall,
                  "f": lambda: 2.0 * precision * recall * inverse(precision + recall)}[kind]()
        return constant(values)

    stats.__name__ = f"set_{kind}"
    stats.__doc__ = f"trec_eval's set_{kind} (see the module docstring); tie-independent."
    return stats


set_p, set_recall, set_relative_p = set_measure("p"), set_measure("recall"), set_measure("relative_p")
set_map, set_f = set_measure("map"), set_measure("f")
