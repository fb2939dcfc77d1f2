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

import numpy as np

from ...metrics import MetricSpec
from ...registry import family
from .common import Judged


def family_stats(name: str, judged: Judged, spec: MetricSpec) -> np.ndarray:
    """Per query (expected, variance, min, max, oblivious) of one metric: array (Q, 5), by the kernel
    the family's `tieaware.registry.Family` names.

    Raises:
        ValueError: `name` is not a family of `tieaware.registry.FAMILIES`.
    """
    return family(name).stats()(judged, spec)


__all__ = ["Judged", "family_stats"]
