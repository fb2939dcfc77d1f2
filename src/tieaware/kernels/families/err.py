"""Expected reciprocal rank ERR@k (Chapelle et al. 2009), as gdeval (ir_measures' ``ERR@k``) computes it.

A user scans down the list and stops at rank j, satisfied, with probability R_j;
ERR is the expected reciprocal of the stopping rank, over ranks j <= k:

    ERR@k = sum_{j <= k} R_j / j prod_{i < j} (1 - R_i),   R = (2^grade - 1) / 2^4,

grades <= 0 and unjudged documents giving R = 0 (gdeval.pl, MAX_JUDGMENT = 4; it
refuses grades above 4 and non-integer grades, and so does `tieaware.evaluate`).

Every member of an earlier tie group precedes group n whatever the order, so
ERR = sum_n C_n X_n with the deterministic C_n = prod over the members of earlier
groups of (1 - R) and X_n the group's own sum (positions c_n + u + 1, u < t_n =
min(max(k - c_n, 0), g_n)). Groups permute independently:

    E[ERR] = sum_n C_n E[X_n],   Var[ERR] = sum_n C_n^2 Var[X_n].

E[X_n] and E[X_n^2] come from a dynamic programme over the prefix counts a_v of
each distinct positive R value v among the group's g_n documents (the non-relevant
and unjudged ones share R = 0): the prefix product prod_v (1 - v)^a_v is fixed by
the counts, the next document has value v with probability (n_v - a_v) / (g_n - u),
and each state carries its probability and the probability-weighted sums of the
partial X and X^2. Layer u (u documents drawn) holds at most
prod_v (min(n_v, t_n) + 1) states, v over the at most 4 positive values gdeval's
integer grades 1..4 give: time O(t_n prod_v (min(n_v, t_n) + 1)), polynomial but up to
O(t_n^5): ERR@1000 over one group of 1,000 documents with 40 judged per grade would take
minutes. A group whose programme needs more than `MAX_DP_STEPS` steps (`dp_steps`, a few
seconds' work) is refused before any is done: a `QueryValueError` names the query and the
alternatives (a smaller cutoff; more ``MAX_DP_STEPS`` to wait for it).
Best-first is the maximum: swapping adjacent values x, y at weights w_j > w_{j+1}
under prefix product P changes ERR by P (x - y)(w_j - w_{j+1}) and leaves later
prefix products alone. Derivation: `docs/formulas.md`, "ERR".

References:
    O. Chapelle, D. Metzler, Y. Zhang and P. Grinspan, "Expected Reciprocal Rank
    for Graded Relevance", CIKM 2009.
    TREC 2010 Web track, gdeval.pl (shipped with ir_measures).
"""
from __future__ import annotations

import numpy as np

from ...errors import QueryValueError
from ...metrics import MetricSpec
from .. import INNER, kernel
from .common import Judged, all_orders, top_slots

#: gdeval's MAX_JUDGMENT: the top grade, R = (2^grade - 1) / 2^MAX_GRADE.
MAX_GRADE = 4
#: the most steps (`dp_steps`) the exact programme of one tie group may take, seconds of work; a
#: group that needs more is an error naming the query. Raise it (read at each call) to wait longer.
MAX_DP_STEPS = 500_000_000


@kernel(**INNER)
def dp_steps(values, start, stop, t):
    """Steps of `group_moments` for members start..stop-1 (sorted descending) and t slots: t layers
    of prod_v (min(n_v, t) + 1) states with one step per value kind (0 included); a float, as it may
    pass int64."""
    states = 1.0
    kinds = 1.0
    run = 0
    for j in range(start, stop):
        if values[j] > 0.0:
            run += 1
            if j + 1 == stop or values[j + 1] != values[j]:
                states *= min(run, t) + 1.0
                kinds += 1.0
                run = 0
    return t * states * kinds


@kernel(**INNER)
def group_moments(values, start, stop, g, c, t):
    """(E[X], E[X^2]) of X = sum_{u < t} values_pi(u) / (c + u + 1) prod_{v < u} (1 - values_pi(v)) over
    the uniform orderings pi of a group of g documents: members start..stop-1 of `values` (sorted
    descending, so equal values are contiguous), the other g - (stop - start) valued 0.

    One layer per drawn document u; a state is the vector of counts drawn of each positive value
    (the count of zeros is u minus their sum), so a layer holds prod_v (min(n_v, t) + 1) states."""
    kinds = 0  # distinct positive values
    for j in range(start, stop):
        if values[j] > 0.0 and (j == start or values[j] != values[j - 1]):
            kinds += 1
    value = np.zeros(kinds)
    n = np.zeros(kinds, np.int64)
    kind = -1
    for j in range(start, stop):
        if values[j] > 0.0:
            if j == start or values[j] != values[j - 1]:
                kind += 1
                value[kind] = values[j]
            n[kind] += 1
    zeros = g - n.sum()
    stride = np.ones(kinds + 1, np.int64)
    for i in range(kinds):
        stride[i + 1] = stride[i] * (min(n[i], t) + 1)
    states = stride[kinds]
    prob = np.zeros(states)
    first = np.zeros(states)  # sum over paths to the state of P(path) * partial X
    second = np.zeros(states)  # ... of P(path) * partial X^2
    prob[0] = 1.0
    counts = np.zeros(kinds, np.int64)
    for u in range(t):
        next_prob = np.zeros(states)
        next_first = np.zeros(states)
        next_second = np.zeros(states)
        for state in range(states):
            p = prob[state]
            if p == 0.0:
                continue
            rest = state
            drawn = 0
            prefix = 1.0
            for i in range(kinds - 1, -1, -1):
                counts[i] = rest // stride[i]
                rest -= counts[i] * stride[i]
                drawn += counts[i]
                prefix *= (1.0 - value[i]) ** counts[i]
            left = g - u
            if zeros > u - drawn:  # the next document is valued 0: X unchanged
                share = (zeros - (u - drawn)) / left
                next_prob[state] += share * p
                next_first[state] += share * first[state]
                next_second[state] += share * second[state]
            for i in range(kinds):
                if counts[i] == n[i]:
                    continue
                share = (n[i] - counts[i]) / left  # P(the next document has value i)
                gain = value[i] * prefix / (c + u + 1.0)
                target = state + stride[i]
                next_prob[target] += share * p
                next_first[target] += share * (first[state] + p * gain)
                next_second[target] += share * (second[state] + 2.0 * gain * first[state] + p * gain * gain)
        prob, first, second = next_prob, next_first, next_second
    return first.sum(), second.sum()


@kernel
def err_moments(count, offsets, above, size, end, value, cutoff, max_steps, refused, out):
    """out[q] = (E[ERR@k], Var) of every query q; groups as `common.Groups`, value (M,) each judged
    member's R (best-first within groups). A query with a group over `max_steps` (`dp_steps`) is
    left out: refused[q] is set to that group's steps (else left as it is)."""
    for q in range(count.shape[0]):
        expected = 0.0
        variance = 0.0
        carried = 1.0  # C_n: prod of (1 - R) over the members of earlier groups
        start = offsets[q]
        for gi in range(offsets[q], offsets[q] + count[q]):
            c = above[gi]
            g = size[gi]
            t = top_slots(cutoff[q], c, g)
            if t == 0:
                break  # this group and every later one lie past the cutoff
            if end[gi] > start and value[start] > 0.0:  # best-first: the group holds a positive R
                if g == 1:
                    mean = value[start] / (c + 1.0)
                    square = mean * mean
                else:
                    steps = dp_steps(value, start, end[gi], t)
                    if steps > max_steps:
                        refused[q] = steps
                        break
                    mean, square = group_moments(value, start, end[gi], g, c, t)
                expected += carried * mean
                variance += carried * carried * max(square - mean * mean, 0.0)
                for j in range(start, end[gi]):
                    carried *= 1.0 - value[j]
            start = end[gi]
        out[q, 0] = expected
        out[q, 1] = variance


def satisfaction(grades: np.ndarray) -> np.ndarray:
    """gdeval's R = (2^grade - 1) / 2^4 of each grade; 0 for grades <= 0."""
    return np.where(grades > 0.0, (np.power(2.0, np.minimum(grades, MAX_GRADE)) - 1.0) / 2.0 ** MAX_GRADE, 0.0)


def _refuse_unusable_grades(judged: Judged) -> None:
    """Raise `QueryValueError` for the first query whose qrels hold a grade gdeval refuses (above
    `MAX_GRADE`: R = (2^grade - 1)/16 would pass 1; or not an integer)."""
    grades = judged.qrel_rel
    bad = np.flatnonzero((grades > MAX_GRADE) | (grades != np.floor(grades)))
    if bad.size:
        query = int(np.searchsorted(judged.qrel_offsets, bad[0], side="right")) - 1
        raise QueryValueError(query, f"has grade {grades[bad[0]]:g} in the qrels; ERR (as gdeval computes it) "
                                     f"takes integer grades up to {MAX_GRADE}.")


def err(judged: Judged, p: MetricSpec) -> np.ndarray:
    """ERR@k. Returns (Q, 5): expected, variance, min, max, oblivious. Grades gdeval refuses, and a
    tie group whose exact programme would take over `MAX_DP_STEPS` steps, raise `QueryValueError`."""
    _refuse_unusable_grades(judged)
    refused = np.zeros(judged.n_queries)
    out = all_orders(err_moments, judged, judged.in_orders(satisfaction(judged.mem_rel)), judged.cutoffs(p.k),
                     float(MAX_DP_STEPS), refused)
    if refused.any():
        query = int(np.flatnonzero(refused)[0])
        raise QueryValueError(query, f"has a tie group whose exact ERR needs about {refused[query]:.2g} steps "
                                     f"(several graded documents of each grade tied within the cutoff; the limit, "
                                     f"tieaware.kernels.families.err.MAX_DP_STEPS, is {MAX_DP_STEPS:.2g}, seconds of "
                                     "work). Evaluate ERR at a smaller cutoff (gdeval's is 20), break the ties, "
                                     "or raise MAX_DP_STEPS to wait for it.")
    return out
