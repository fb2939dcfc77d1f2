"""What every family reads, and how one family kernel gives all five statistics.

A *group structure* lists, per query, judged tie groups in score order: group
n has c_n documents above it, g_n documents in it (judged or not) and judged
members whose per-document values (relevance flags, gains or grades) lie
contiguously in a value array. Each family has one kernel that, in one pass over
such a structure, returns E[M] and Var[M] over the orderings inside the groups
(see `docs/formulas.md`).

The other three statistics come from the same kernel, with no per-family point
function: a fixed ordering is a structure whose groups each hold one judged
document (g = 1) at its rank under that ordering, and E[M] of a structure without
ties is M itself. `Judged` therefore holds four structures:

* ``tied``: the judged tie groups of `kernels.groups`,
* ``worst``: worst-first inside every group (judgment ascending): M_min,
* ``best``: best-first inside every group (judgment descending): M_max,
* ``tool``: a tool's tie order (`kernels.tiebreak`): the oblivious value M_obl.

Best-first gives the maximum and worst-first the minimum of every metric here,
since each is non-decreasing in the judgment at each rank and favours better
judgments at higher ranks.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from ...metrics import MetricSpec
from .. import INNER, kernel
from ..groups import argsort_segments, group_slots

BINARY, LINEAR, EXP = "binary", "linear", "exp"
#: trec_eval 10's rbp: the grade over the query's top grade when that exceeds 1 (per query: `rbp.rbp`)
SCALED = "scaled"


class Groups(NamedTuple):
    """A group structure. Group slots of query q are offsets[q] .. offsets[q] + counts[q] - 1 and its
    judged members start at offsets[q]; slot i has above[i] documents above it, size[i] documents in
    it, and its members end (exclusive) at end[i]. A query's groups are in rank order, so above is
    non-decreasing within it: a kernel stops at the first group past the cutoff. These are a family
    kernel's first five arguments."""

    counts: np.ndarray  # not `count`, which would shadow tuple.count
    offsets: np.ndarray
    above: np.ndarray
    size: np.ndarray
    end: np.ndarray


@dataclass(frozen=True)
class Judged:
    """The judged documents of a run under the four structures (module docstring), plus the qrels.

    Attributes:
        tied: the judged tie groups, `Groups`.
        orders: worst-first, best-first and the tool's order, each a (`Groups`, perm) pair of
            one-document groups: its position i holds judged member perm[i] of ``tied`` (perm None:
            member i, as best-first, the members' own order).
        mem_rel: (M,) judgment of each judged member of ``tied`` (best-first within groups).
        n_ret: (Q,) documents retrieved per query.
        qrel_offsets, qrel_rel: the qrels' judgments per query, CSR, descending.
        largest_group: judged members of the largest tie group (scratch sizes).
    """

    tied: Groups
    orders: tuple
    mem_rel: np.ndarray
    n_ret: np.ndarray
    qrel_offsets: np.ndarray
    qrel_rel: np.ndarray
    largest_group: int
    #: binary relevance flags per level, in the four structures (`relevant`); `tieaware.evaluation` gives
    #: each evaluate call its own (a copy of the kept `Judged`), so a cached ranx Run keeps none
    shared_flags: dict = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def build(cls, n_ret, n_groups, mem_offsets, grp_above, grp_size, grp_mem_start, grp_mem_end, mem_rel,
              tool_rank, qrel_offsets, qrel_rel) -> Judged:
        """From the arrays of `readers.lists.RankedLists` and a tool's rank of each member in its group."""
        i64 = np.int64
        tied = Groups(*(np.ascontiguousarray(a, i64) for a in (n_groups, mem_offsets, grp_above, grp_size,
                                                              grp_mem_end)))
        n_members = int(tied.offsets[-1])
        starts = np.ascontiguousarray(grp_mem_start, i64)
        worst, worst_above, best_above = (np.empty(n_members, i64) for _ in range(3))
        tool_key = np.empty(n_members)
        largest = _one_per_group(*tied, starts, np.ascontiguousarray(tool_rank, i64), worst, worst_above,
                                 best_above, tool_key)
        tool = argsort_segments(tool_key, tied.offsets)  # groups are contiguous, in score order
        tool_above = tool_key[tool].astype(i64)
        members, ones, end = np.diff(tied.offsets), np.ones(n_members, i64), np.arange(1, n_members + 1, dtype=i64)
        orders = tuple((Groups(members, tied.offsets, above, ones, end), perm) for perm, above in (
            (worst, worst_above), (None, best_above), (tool, tool_above)))
        return cls(tied, orders, np.ascontiguousarray(mem_rel, np.float64), np.asarray(n_ret, i64),
                   np.asarray(qrel_offsets, i64), np.ascontiguousarray(qrel_rel, np.float64), largest)

    def regraded(self, grade_map: dict) -> Judged:
        """The same lists with every judgment g replaced by grade_map.get(g, g) (ir_measures' nDCG(gains=...)
        maps the qrels so): members re-sorted best-first within their groups, qrels descending, the
        tool's order kept document for document. Worst- and best-first orders depend on the group
        structure alone and carry over."""
        def mapped(grades):
            return np.array([grade_map.get(g, g) for g in grades.tolist()], np.float64)

        rel = mapped(self.mem_rel)
        ends = self.tied.end[group_slots(self.tied.counts, self.tied.offsets)]  # non-decreasing, slot by slot
        group_of = np.searchsorted(ends, np.arange(rel.size), side="right")  # each member's group
        order = np.lexsort((-rel, group_of)).astype(np.int64)  # new position -> old member
        position = np.empty_like(order)
        position[order] = np.arange(order.size, dtype=np.int64)
        tool_groups, tool_perm = self.orders[2]
        orders = (self.orders[0], self.orders[1], (tool_groups, position[tool_perm]))
        qrel = mapped(self.qrel_rel)
        query = np.repeat(np.arange(self.qrel_offsets.size - 1), np.diff(self.qrel_offsets))
        qrel = qrel[np.lexsort((-qrel, query))]
        return Judged(self.tied, orders, rel[order], self.n_ret, self.qrel_offsets, qrel, self.largest_group)

    def in_orders(self, values: np.ndarray) -> tuple:
        """Per-member `values` laid out for the four structures: (tied, worst-first, best-first, tool)."""
        return (values, *(values if perm is None else np.ascontiguousarray(values[perm]) for _, perm in self.orders))

    def relevant(self, level: float) -> tuple:
        """`in_orders` of the binary flags rel >= level (`gains`' binary gain), computed once per level
        for all the metrics of a call that use them (P, R, RR, AP, ... at one level)."""
        key = float(level)
        if key not in self.shared_flags:
            self.shared_flags[key] = self.in_orders(gains(self.mem_rel, MetricSpec("", "", relevance_level=key)))
        return self.shared_flags[key]

    @property
    def n_queries(self) -> int:
        return self.n_ret.shape[0]

    def cutoffs(self, k: int | None) -> np.ndarray:
        """(Q,) k, or each query's list length when k is None."""
        return self.n_ret.copy() if k is None else np.full(self.n_queries, int(k), np.int64)

    def _count(self, flags: np.ndarray) -> np.ndarray:
        """(Q,) per query, the qrels' judgments whose flag is set: where the set flags' indices cross the
        queries' offsets (no per-judgment count or query id to build)."""
        return np.diff(np.searchsorted(np.flatnonzero(flags), self.qrel_offsets))

    def n_relevant(self, level: float) -> np.ndarray:
        """(Q,) R: documents in the qrels judged >= level, retrieved or not."""
        return self._count(self.qrel_rel >= level)

    def n_nonrelevant(self, level: float) -> np.ndarray:
        """(Q,) N: documents in the qrels judged 0 <= judgment < level (trec_eval's judged non-relevant)."""
        return self._count((self.qrel_rel >= 0.0) & (self.qrel_rel < level))


@kernel
def _one_per_group(count, offsets, above, size, end, start, tool_rank, worst, worst_above, best_above, tool_key):
    """The worst-first and best-first orderings of `Judged` as groups of one document: per member
    position i, its member (worst-first: its group's members reversed; best-first: i itself) and the
    documents ranked above it (worst-first puts the group's unjudged documents before its judged
    ones); and each member's 0-based rank in its query under the tool's order (documents above its
    group plus its `tool_rank`), as float64: sorting a query's members by it gives the tool's
    ordering. Fills worst, worst_above, best_above and tool_key (allocated by the caller: a kernel
    that allocates compiles numpy's constructors too); returns the judged members of the largest group."""
    largest = 0
    for q in range(count.shape[0]):
        for s in range(offsets[q], offsets[q] + count[q]):
            lo, hi = start[s], end[s]
            largest = max(largest, hi - lo)
            for i in range(lo, hi):
                worst[i] = hi - 1 - (i - lo)
                worst_above[i] = above[s] + size[s] - (hi - lo) + (i - lo)
                best_above[i] = above[s] + i - lo
                tool_key[i] = above[s] + tool_rank[i]
    return largest


@kernel(inline="always")
def top_slots(cutoff, above, size):
    """A group's t_n: how many of its `size` slots, below `above` documents, fall in the top `cutoff`."""
    return min(max(cutoff - above, 0), size)


@kernel(**INNER)
def count_relevant(relevant, start, stop):
    """Members start..stop-1 with a non-zero relevance flag (a group's r_n)."""
    r = 0
    for j in range(start, stop):
        if relevant[j] != 0.0:
            r += 1
    return r


def gains(rel: np.ndarray, p: MetricSpec) -> np.ndarray:
    """Gain of each judgment: binary 1 if rel >= level; linear rel; exp 2^rel - 1; grades <= 0
    or below the floor gain 0 (non-binary). Non-decreasing in rel, so best-first stays best-first."""
    if p.gain == BINARY:
        return (rel >= p.relevance_level).astype(np.float64)
    floor = -np.inf if p.gain_floor is None else float(p.gain_floor)
    counted = (rel > 0.0) & (rel >= floor)
    if p.gain == LINEAR:
        return np.where(counted, rel, 0.0)
    if p.gain == EXP:
        with np.errstate(over="ignore"):
            return np.where(counted, np.power(2.0, rel) - 1.0, 0.0)
    raise ValueError(f"unknown gain {p.gain!r}; known: {BINARY}, {LINEAR}, {EXP}")


def all_orders(kernel, judged: Judged, values: tuple, *args) -> np.ndarray:
    """Per query (expected, variance, min, max, oblivious), unnormalised: `kernel` (a family's
    E/Var kernel: ``kernel(*groups, values, *args, out)``) on the tied structure and on the three
    orderings, `values` being the members' values in each (`Judged.in_orders`, `Judged.relevant`).
    Where min == max no tie matters, and E is exactly that value with variance 0."""
    out = np.empty((judged.n_queries, 5))
    moments = np.empty((judged.n_queries, 2))
    kernel(*judged.tied, values[0], *args, moments)
    out[:, :2] = moments
    for column, (groups, _), ordered in zip(range(2, 5), judged.orders, values[1:]):
        kernel(*groups, ordered, *args, moments)
        out[:, column] = moments[:, 0]
    exact = out[:, 2] == out[:, 3]
    out[exact, 0] = out[exact, 3]
    out[:, 1] = np.where(exact, 0.0, np.maximum(out[:, 1], 0.0))
    return out


def relevant_retrieved(judged: Judged, level: float) -> np.ndarray:
    """(Q,) retrieved documents judged >= level, per query (float64)."""
    member_query = np.repeat(np.arange(judged.n_queries), np.diff(judged.tied.offsets))
    return np.bincount(member_query, weights=judged.mem_rel >= level, minlength=judged.n_queries)


def constant(values: np.ndarray) -> np.ndarray:
    """stats (Q, 5) of a value no tie order moves: E = min = max = oblivious = values, variance 0."""
    out = np.zeros((values.shape[0], 5))
    out[:, [0, 2, 3, 4]] = np.asarray(values, np.float64)[:, None]
    return out


def scaled(stats: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """stats (Q, 5) of M -> of scale * M (the variance by scale^2). Overflowed gains (inf, NaN) pass
    through silently: `tieaware.evaluate` names the query."""
    with np.errstate(invalid="ignore", over="ignore"):
        stats[:, [0, 2, 3, 4]] *= scale[:, None]
        stats[:, 1] *= scale * scale
    return stats


def inverse(denominator: np.ndarray) -> np.ndarray:
    """1 / denominator, and 0 where it is 0 (a metric with nothing to divide by is 0, as in trec_eval)."""
    denominator = np.asarray(denominator, np.float64)
    return np.divide(1.0, denominator, out=np.zeros_like(denominator), where=denominator > 0)
