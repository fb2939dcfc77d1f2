"""Metric values of a run under chosen orders of its tied documents: every order, or random ones.

A tie order is, for each judged document, its rank inside its tie group (`RankedLists.tool_rank`'s
form); the kernels' fifth statistic (the "tool's" value) under that rank is the metric under that
order, so no point function is written twice (`tieaware.kernels.families.common`). Unjudged
documents of a group are interchangeable: the orders that differ for the metrics are the
placements of the judged members among the group's slots (s! / (s - m)! for s documents, m judged),
all equally likely under a uniformly random order.

Used by `tieaware.comparison` for the exact distribution of a comparison over tie orders (small
cases, `TieOrderValues.enumerate`; any size for the counting families, `TieOrderValues.count_law`)
and for Monte Carlo with exact samplers (`TieOrderValues.sample`).
"""
from __future__ import annotations

import itertools
import math
from typing import NamedTuple

import numpy as np

from .engine import metric_stats
from .inputs import without_identical_ids
from .kernels.families import Judged
from .kernels.groups import group_slots
from .metrics import MetricSpec
from .registry import family

#: Orders of one query enumerated at most (the kernels then run that many times over the run).
ORDERS_PER_QUERY = 720


#: Judged documents (times copies) evaluated in one kernel call at most when sampling.
BATCH_MEMBERS = 2_000_000

class CountLaw(NamedTuple):
    """Per query, the number of relevant documents in the top k under a uniformly random tie order:
    ``fixed`` of them in the groups wholly inside the top k, plus X, hypergeometric, from the one group
    the cutoff crosses: ``drawn`` of its ``size`` documents fall inside, ``relevant`` of them are
    relevant (all 0 where no group crosses the cutoff). P(X = x) = C(r, x) C(s - r, n - x) / C(s, n).
    The metric is that count times ``unit`` (1/k for precision, 1 for hits), or with ``indicator``
    whether it is positive (success)."""

    fixed: np.ndarray
    size: np.ndarray
    relevant: np.ndarray
    drawn: np.ndarray
    unit: float
    indicator: bool


def _concatenated_ranges(starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """np.concatenate([np.arange(a, b) for a, b in zip(starts, ends)]), vectorised."""
    lengths = np.asarray(ends, np.int64) - np.asarray(starts, np.int64)
    before = np.cumsum(lengths) - lengths
    return np.repeat(np.asarray(starts, np.int64) - before, lengths) + np.arange(int(lengths.sum()), dtype=np.int64)


class _Stacked:
    """The ranked lists of the queries `selected` (indices, repeats allowed: each copy its own query),
    with their tied groups: one kernel call gives the metrics of every copy under its own tie order."""

    def __init__(self, lists, selected: np.ndarray) -> None:
        selected = np.asarray(selected, np.int64)
        self.lists, self.selected = lists, selected
        mem_offsets, qrel_offsets = np.asarray(lists.mem_offsets, np.int64), np.asarray(lists.qrel_offsets, np.int64)
        self.members = _concatenated_ranges(mem_offsets[selected], mem_offsets[selected + 1])
        lengths = mem_offsets[selected + 1] - mem_offsets[selected]
        self.mem_offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        shift = np.repeat(self.mem_offsets[:-1] - mem_offsets[selected], lengths)
        qrels = _concatenated_ranges(qrel_offsets[selected], qrel_offsets[selected + 1])
        self.qrel_offsets = np.concatenate([[0], np.cumsum(qrel_offsets[selected + 1] - qrel_offsets[selected])])
        self.qrel_rel = np.asarray(lists.qrel_rel)[qrels]
        self.n_ret, self.n_groups = np.asarray(lists.n_ret)[selected], np.asarray(lists.n_groups)[selected]
        self.grp_above = np.asarray(lists.grp_above)[self.members]
        self.grp_size = np.asarray(lists.grp_size)[self.members]
        self.grp_mem_start = np.asarray(lists.grp_mem_start)[self.members] + shift
        self.grp_mem_end = np.asarray(lists.grp_mem_end)[self.members] + shift
        self.mem_rel = np.asarray(lists.mem_rel)[self.members]
        slots = group_slots(self.n_groups, self.mem_offsets)
        counts = self.grp_mem_end[slots] - self.grp_mem_start[slots]
        keep = (self.grp_size[slots] > 1) & (counts > 0)
        self.tied_slots = slots[keep]
        self.copy_of_slot = np.repeat(np.arange(selected.size), self.n_groups)[keep]

    def values(self, specs: list[MetricSpec], ranks: np.ndarray) -> dict[str, np.ndarray]:
        """{metric name: value per copy} under the order giving each judged member its `ranks`."""
        judged = Judged.build(self.n_ret, self.n_groups, self.mem_offsets, self.grp_above, self.grp_size,
                              self.grp_mem_start, self.grp_mem_end, self.mem_rel, ranks, self.qrel_offsets,
                              self.qrel_rel)
        return {spec.name: metric_stats(judged, spec)[:, 4] for spec in specs}

    def random_ranks(self, rng: np.random.Generator) -> np.ndarray:
        """Ranks of one uniformly random order of every tied group (its documents sorted on uniform keys:
        the judged members are the group's first documents)."""
        sizes = self.grp_size[self.tied_slots]
        doc_start = np.concatenate([[0], np.cumsum(sizes)])
        group_of_doc = np.repeat(np.arange(sizes.size), sizes)
        starts, ends = self.grp_mem_start[self.tied_slots], self.grp_mem_end[self.tied_slots]
        member = _concatenated_ranges(starts, ends)
        group_of_member = np.repeat(np.arange(sizes.size), ends - starts)
        order = np.lexsort((rng.random(group_of_doc.size), group_of_doc))
        position = np.empty(order.size, np.int64)
        position[order] = np.arange(order.size)
        ranks = np.asarray(self.lists.mem_trec_rank, np.int64)[self.members]
        ranks[member] = position[doc_start[group_of_member] + member - starts[group_of_member]] - \
            doc_start[group_of_member]
        return ranks


class TieOrderValues:
    """Per-query values of metrics under tie orders of one run (query order: `query_ids`)."""

    def __init__(self, lists, specs: list[MetricSpec]) -> None:
        self.specs = [spec for spec in specs if not spec.judged_only]
        self.lists = lists
        self.query_ids = list(self.lists.query_ids)

    @staticmethod
    def read_lists(qrels, run, make_comparable: bool, ignore_identical_ids: bool = False):
        """The `RankedLists` of a qrels/run pair as `tieaware.evaluate` reads them (`evaluate` takes them
        as its run, so that a comparison reads each run once)."""
        from .readers.pairs import ranked_lists

        return ranked_lists(qrels, without_identical_ids(run) if ignore_identical_ids else run, make_comparable)

    def count_law(self, name: str, queries: np.ndarray) -> CountLaw | None:
        """The `CountLaw` of metric `name` for the `queries` (indices into `query_ids`), or None where its
        family is not a function of that count (`tieaware.registry.Family.counts`) or maps grades
        (``grade_map``). Every order of a group is equally likely, so the documents of the crossing group
        inside the cutoff are a uniformly random subset of it: the relevant ones among them are
        hypergeometric."""
        spec = next((spec for spec in self.specs if spec.name == name), None)
        counts = family(spec.family).counts if spec is not None else None
        if spec is None or counts is None or spec.grade_map is not None or \
                counts == "per_k" and spec.k is None:  # C / k without a cutoff is C over the list's length
            return None
        queries = np.asarray(queries, np.int64)
        lists = self.lists
        first, n_groups = np.asarray(lists.mem_offsets, np.int64)[queries], np.asarray(lists.n_groups)[queries]
        slots = _concatenated_ranges(first, first + n_groups)  # group j of query q: slot mem_offsets[q] + j
        owner = np.repeat(np.arange(queries.size), n_groups)
        above = np.asarray(lists.grp_above, np.int64)[slots]
        size = np.asarray(lists.grp_size, np.int64)[slots]
        relevant_before = np.concatenate([[0], np.cumsum(np.asarray(lists.mem_rel) >= spec.relevance_level)])
        relevant = relevant_before[np.asarray(lists.grp_mem_end, np.int64)[slots]] - \
            relevant_before[np.asarray(lists.grp_mem_start, np.int64)[slots]]
        cutoff = spec.k if spec.k is not None else np.iinfo(np.int64).max // 2
        inside = above + size <= cutoff
        crossing = ~inside & (above < cutoff)  # at most one group a query: its sum is that group's value

        def per_query(where: np.ndarray, values: np.ndarray) -> np.ndarray:
            """Per query, the sum of `values` over its groups selected by `where`."""
            return np.bincount(owner[where], weights=values[where], minlength=queries.size).astype(np.int64)

        return CountLaw(per_query(inside, relevant), per_query(crossing, size), per_query(crossing, relevant),
                        per_query(crossing, cutoff - above), unit=1 / spec.k if counts == "per_k" and spec.k else 1.0,
                        indicator=counts == "positive")

    def sample(self, n_samples: int, rng: np.random.Generator,
               queries: np.ndarray | None = None) -> dict[str, np.ndarray]:
        """{metric name: (n_samples, len(queries)) values} of the `queries` (indices into `query_ids`;
        None: all), each row under one uniformly random tie order of the run."""
        queries = np.arange(len(self.query_ids)) if queries is None else np.asarray(queries, np.int64)
        out = {spec.name: np.empty((n_samples, queries.size)) for spec in self.specs}
        if queries.size == 0:
            return out
        members = int((np.asarray(self.lists.mem_offsets)[queries + 1] - np.asarray(self.lists.mem_offsets)[queries])
                      .sum())
        batch = max(1, min(n_samples, BATCH_MEMBERS // max(members, 1)))
        done = 0
        while done < n_samples:
            copies = min(batch, n_samples - done)
            stacked = _Stacked(self.lists, np.tile(queries, copies))
            for name, values in stacked.values(self.specs, stacked.random_ranks(rng)).items():
                out[name][done:done + copies] = values.reshape(copies, queries.size)
            done += copies
        return out

    def enumerate(self, queries: np.ndarray,
                  limit: int = ORDERS_PER_QUERY) -> dict[str, dict[int, np.ndarray]] | None:
        """{metric name: {query index: its value under each of its distinct-placement orders}} for
        the `queries` (indices into `query_ids`), each order equally likely; None when a query has
        more than `limit` orders."""
        queries = np.asarray(queries, np.int64)
        single = _Stacked(self.lists, queries)
        placements: list[list[tuple[np.ndarray, list[tuple[int, ...]]]]] = [[] for _ in queries]
        for slot, copy in zip(single.tied_slots, single.copy_of_slot):
            start, end = int(single.grp_mem_start[slot]), int(single.grp_mem_end[slot])
            size, m = int(single.grp_size[slot]), end - start
            if math.perm(size, m) > limit:
                return None
            placements[copy].append((np.arange(start, end) - int(single.mem_offsets[copy]),
                                     list(itertools.permutations(range(size), m))))
        counts = [math.prod(len(options) for _, options in groups) for groups in placements]
        if any(count > limit for count in counts):
            return None
        stacked = _Stacked(self.lists, np.repeat(queries, counts))
        ranks = np.asarray(self.lists.mem_trec_rank, np.int64)[stacked.members]
        copy = 0
        for groups, count in zip(placements, counts):
            for j in range(count):
                index, base = j, int(stacked.mem_offsets[copy])
                for members, options in groups:
                    index, pick = divmod(index, len(options))
                    ranks[base + members] = options[pick]
                copy += 1
        ends = np.cumsum(counts)
        return {name: {int(q): values[end - count:end] for q, count, end in zip(queries, counts, ends)}
                for name, values in stacked.values(self.specs, ranks).items()}
