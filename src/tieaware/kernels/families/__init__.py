"""Metric families: per query E[M], Var[M], min, max and the oblivious value, one module each.

================  =====================================  ==========================
family            module                                 kernel (E and Var)
================  =====================================  ==========================
hits, precision,  `hits`: Hits@k, scaled                 `hits.hits_moments`
recall, f1, rprec
success           `success`                              `success.success_moments`
rr                `rr`                                   `rr.rr_moments`
ap                `ap`                                   `ap.ap_moments`
dcg, ndcg         `dcg`                                  `dcg.weighted_moments`
rbp               `rbp`: DCG's kernel, geometric weights `dcg.weighted_moments`
err               `err`: DP over a group's prefix counts `err.err_moments`
bpref             `bpref`                                `bpref.bpref_moments`
judged            `judged`: Hits of judged documents     `hits.hits_moments`
set_p, ...        `sets`: trec_eval's set measures       none (tie-independent)
num_* (counts)    `counts`: trec_eval's counts (sums)    none; at k: `hits.hits_moments`
================  =====================================  ==========================

Each module holds the closed forms, a line or two of derivation, references, and
one jitted kernel: a single pass over the judged tie groups giving E and Var; the
extremes and the oblivious value are the same kernel run on tie-free orderings
(`common`). A call compiles only the kernels of the families it asks for; each is
a `tieaware.kernels.kernel` with fixed argument types (int64 / float64 arrays), so the
compiled code is written once to numba's cache and loaded by later processes.
Formulas with derivations: `docs/formulas.md`.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from . import ap, bpref, counts, dcg, err, hits, judged, rbp, rr, sets, success
from .common import Judged, Params

#: family name (`tieaware.metrics.FAMILIES`) -> function(judged, params) -> (Q, 5) array of
#: expected, variance, min, max, oblivious
FAMILIES: dict[str, Callable[[Judged, Params], np.ndarray]] = {
    "hits": hits.hits,
    "precision": hits.precision,
    "recall": hits.recall,
    "f1": hits.f1,
    "rprec": hits.rprec,
    "success": success.success,
    "rr": rr.rr,
    "ap": ap.ap,
    "dcg": dcg.dcg,
    "ndcg": dcg.ndcg,
    "rbp": rbp.rbp,
    "err": err.err,
    "bpref": bpref.bpref,
    "judged": judged.judged,
    "set_p": sets.set_measure("p"),
    "set_recall": sets.set_measure("recall"),
    "set_relative_p": sets.set_measure("relative_p"),
    "set_map": sets.set_measure("map"),
    "set_f": sets.set_measure("f"),
    "num_q": counts.num_q,
    "num_ret": counts.num_ret,
    "num_rel": counts.num_rel,
    "num_rel_ret": counts.num_rel_ret,
}


def family_stats(family: str, judged: Judged, params: Params) -> np.ndarray:
    """Per query (expected, variance, min, max, oblivious) of one metric: array (Q, 5).

    Raises:
        ValueError: `family` is not one of `FAMILIES`.
    """
    stats = FAMILIES.get(family)
    if stats is None:
        raise ValueError(f"unknown metric family {family!r}; known: {', '.join(FAMILIES)}")
    return stats(judged, params)


__all__ = ["FAMILIES", "Judged", "Params", "family_stats"]
