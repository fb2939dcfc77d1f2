"""bpref = (1/R) sum over retrieved relevant documents d of f(judged non-relevant ranked above d),
f(m) = 1 - min(m, R) / min(N, R), and f = 1 when min(N, R) = 0 (trec_eval's convention).

Unjudged documents do not enter bpref, so only the relative order of a group's
r_n relevant and s_n judged non-relevant documents matters, and it is uniform.
With NR_n judged non-relevant in the groups above, the number of the group's
non-relevant ranked before a given relevant one is uniform on 0..s_n, so

    E[bpref] = (1/R) sum_n r_n/(s_n + 1) sum_{x=0}^{s_n} f(NR_n + x).

A group's contribution depends only on its own order, so variances add; each
group's first two moments come from an exact recursion over the interleavings
(`_group_moments`). Negative judgments are neither relevant nor judged
non-relevant (trec_eval ignores them). Derivation: `docs/formulas.md`, "bpref".

References:
    C. Buckley and E. M. Voorhees, "Retrieval Evaluation with Incomplete
    Information", SIGIR 2004.
    trec_eval 9.0.8, ``m_bpref.c``.
"""
from __future__ import annotations

import numpy as np

from ...metrics import MetricSpec
from .. import INNER, kernel
from .common import Judged, all_orders, inverse, scaled


@kernel(**INNER)
def _f(nonrel_above, n_rel, n_nonrel):
    """trec_eval's bpref term: 1 - min(m, R) / min(N, R); 1 when min(N, R) = 0."""
    denom = min(n_nonrel, n_rel)
    if denom == 0:
        return 1.0
    return 1.0 - min(nonrel_above, n_rel) / denom


@kernel(**INNER)
def _group_moments(r, s, nonrel_above, n_rel, n_nonrel, work):
    """First two moments of one group's bpref numerator: r relevant and s judged
    non-relevant in uniformly random relative order; placing a relevant after b
    non-relevant adds f(nonrel_above + b). Exact, O(r * s). work: (6, >= s + 1) scratch:
    P(b), E[sum; b], E[sum^2; b] after this step and after the next."""
    for row in range(3):
        for b in range(s + 1):
            work[row, b] = 0.0
    work[0, 0] = 1.0
    for step in range(r + s):
        cur = 3 * (step % 2)  # rows of this step; the next step's are the other three
        nxt = 3 - cur
        for row in range(nxt, nxt + 3):
            for b in range(s + 1):
                work[row, b] = 0.0
        for b in range(min(step, s) + 1):
            a = step - b
            p = work[cur, b]
            if a > r or p == 0.0:
                continue
            m1 = work[cur + 1, b]
            m2 = work[cur + 2, b]
            left = r + s - step
            if a < r:  # next is relevant
                q = (r - a) / left
                v = _f(nonrel_above + b, n_rel, n_nonrel)
                work[nxt, b] += q * p
                work[nxt + 1, b] += q * (m1 + v * p)
                work[nxt + 2, b] += q * (m2 + 2.0 * v * m1 + v * v * p)
            if b < s:  # next is non-relevant
                q = (s - b) / left
                work[nxt, b + 1] += q * p
                work[nxt + 1, b + 1] += q * m1
                work[nxt + 2, b + 1] += q * m2
    last = 3 * ((r + s) % 2)
    first = 0.0
    second = 0.0
    for b in range(s + 1):
        first += work[last + 1, b]
        second += work[last + 2, b]
    return first, second


@kernel(**INNER)
def _judged_counts(rel, start, stop, level):
    """(relevant, judged non-relevant) among members start..stop-1: rel >= level, 0 <= rel < level."""
    r = 0
    s = 0
    for j in range(start, stop):
        if rel[j] >= level:
            r += 1
        elif rel[j] >= 0.0:
            s += 1
    return r, s


@kernel
def bpref_moments(count, offsets, above, size, end, rel, level, n_rel, n_nonrel, work, out):
    """out[q] = (E, Var) of the bpref numerator (bpref times R) of every query q.

    Group slots and members as in `common.Groups`; rel (M,) the members' judgments;
    relevant: rel >= level, judged non-relevant: 0 <= rel < level; n_rel, n_nonrel (Q,): R and N;
    work: scratch (6, >= judged members of the largest group + 1).
    """
    for q in range(count.shape[0]):
        expected = 0.0
        variance = 0.0
        nonrel_above = np.int64(0)  # typed int64 from the start: no extra compile for a literal 0
        start = offsets[q]
        for gi in range(offsets[q], offsets[q] + count[q]):
            r, s = _judged_counts(rel, start, end[gi], level)
            start = end[gi]
            if r > 0:
                total = 0.0
                for x in range(s + 1):
                    total += _f(nonrel_above + x, n_rel[q], n_nonrel[q])
                expected += r / (s + 1.0) * total
                if s > 0:
                    first, second = _group_moments(r, s, nonrel_above, n_rel[q], n_nonrel[q], work)
                    variance += second - first * first
            nonrel_above += s
        out[q, 0] = expected
        out[q, 1] = variance


def bpref(judged: Judged, p: MetricSpec) -> np.ndarray:
    """bpref (no cutoff). Returns (Q, 5): expected, variance, min, max, oblivious."""
    n_rel = judged.n_relevant(p.relevance_level)
    work = np.empty((6, judged.largest_group + 1))
    stats = all_orders(bpref_moments, judged, judged.in_orders(judged.mem_rel), float(p.relevance_level), n_rel,
                       judged.n_nonrelevant(p.relevance_level), work)
    return scaled(stats, inverse(n_rel))
