"""`RankedLists`: the judged tie groups every metric kernel reads, and how readers build them.

Per query the tie groups that hold a judged document, their judged members best-first with
each member's rank in input order and in trec_eval's order, and the qrels' grades (for R, N and
the ideal DCG), filled by `kernels.groups.query_groups` one query at a time through a
`ListsBuilder`. Of the run's size only the scores of a run read as arrays (a TREC file's columns, a
ranx Run's copy) are kept, for ranx's tie order (`RankedLists.all_scores`); Python dicts are read again
for it. The readers that fill them: `readers.dicts` (Python dicts, in chunks of whole queries of about
`CHUNK_DOCS` documents, `chunk_ranges`, so memory grows with the chunk, not the run),
`readers.columns` (a TREC file's columns) and `readers.ranx` (a ranx Run's copy, by ranges of
queries on threads); `readers.pairs` picks the reader for a qrels/run pair.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType

import numpy as np

from ..errors import InputError
from ..kernels.groups import Scratch, group_arrays, group_slots, scratch
from ..kernels.tiebreak import ambiguous_groups, ranx_ranks

#: the orders inside a tie group that `RankedLists.tool_rank` computes ("ir_measures" and "torchmetrics"
#: pick one per metric, `tieaware.engine.tool_order`); "torch_topk@k" (k a cutoff) is one more, per k
TIE_ORDERS = ("trec_eval", "ranx", "input", "docid_ascending", "torch_argsort", "torch_topk",
              "numpy_argsort_reversed")
#: documents of Python dicts read per chunk (whole queries), few enough that a chunk's arrays stay in
#: the CPU caches
CHUNK_DOCS = 1 << 16


def torch_module() -> ModuleType:
    """torch, imported on demand (the torch tie orders run its sort); an `InputError` when missing."""
    try:
        import torch
    except ImportError:
        raise InputError("oblivious='torchmetrics' runs torch's own sort: install torch.") from None
    return torch


@dataclass(eq=False)
class RankedLists:
    """Runs and qrels as judged tie groups; see the module docstring and `kernels.groups`.

    Judged members M (best-first inside each group, groups by score descending, queries in
    order) and group slots (those of query q start at ``mem_offsets[q]``) are CSR by query.

    Attributes:
        query_ids: evaluated queries, in the run's order.
        n_ret: (Q,) documents retrieved per query.
        qrel_offsets, qrel_rel: (Q+1,) and the qrels' grades per query, descending.
        n_groups: (Q,) judged tie groups per query.
        mem_offsets: (Q+1,) judged retrieved documents before each query.
        mem_rel, mem_index, mem_input_rank, mem_trec_rank: (M,) each judged member's grade, index in
            its query's input order, and rank inside its group in input order and in trec_eval's
            order (documents of the group with a greater id).
        grp_above, grp_size, grp_mem_start, grp_mem_end: (M,) per group slot: documents above it,
            documents in it, and where its members start and end.
        ranx_order: how ranx orders this input (`kernels.tiebreak` modes, or None when the run's
            own order already is ranx's).
        all_scores: () -> (n,) every score in the run's order, read again or kept (ranx's tie order only).
    """

    query_ids: list
    n_ret: np.ndarray
    qrel_offsets: np.ndarray
    qrel_rel: np.ndarray
    n_groups: np.ndarray
    mem_offsets: np.ndarray
    mem_rel: np.ndarray
    mem_index: np.ndarray
    mem_input_rank: np.ndarray
    mem_trec_rank: np.ndarray
    grp_above: np.ndarray
    grp_size: np.ndarray
    grp_mem_start: np.ndarray
    grp_mem_end: np.ndarray
    ranx_order: int | None
    all_scores: Callable[[], np.ndarray]
    _tool_ranks: dict = field(default_factory=dict, repr=False)

    def tool_rank(self, oblivious: str) -> np.ndarray:
        """Rank of each judged document inside its tie group under one of `TIE_ORDERS`."""
        if oblivious.split("@")[0] not in TIE_ORDERS:
            raise InputError(f"tie order must be one of {TIE_ORDERS}, got {oblivious!r}.")
        if oblivious == "ranx" and self.ranx_order is None:
            oblivious = "input"
        if oblivious == "input":
            return self.mem_input_rank
        if oblivious == "trec_eval":
            return self.mem_trec_rank
        if oblivious not in self._tool_ranks:
            if oblivious == "docid_ascending":  # ids are distinct inside a query: the others have a smaller id
                used = group_slots(self.n_groups, self.mem_offsets)
                member_size = np.repeat(self.grp_size[used], self.grp_mem_end[used] - self.grp_mem_start[used])
                self._tool_ranks[oblivious] = member_size - 1 - self.mem_trec_rank
            elif oblivious.startswith(("torch_", "numpy_")):
                self._tool_ranks[oblivious] = self._sorted_ranks(oblivious)
            else:
                ranks, ambiguous, offsets = self._input_ranks_and_ambiguous()
                ranx_ranks(offsets, self.all_scores(), self.n_groups, self.mem_offsets, self.grp_above,
                           self.grp_mem_start, self.grp_mem_end, self.mem_index, ambiguous, self.ranx_order, ranks)
                self._tool_ranks[oblivious] = ranks
        return self._tool_ranks[oblivious]

    def _input_ranks_and_ambiguous(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """What a tool order starts from: a copy of the input ranks (to overwrite in the ambiguous
        groups), the groups whose order the tool decides (`ambiguous_groups`), the run's CSR offsets."""
        ambiguous = ambiguous_groups(self.n_groups, self.mem_offsets, self.grp_size, self.grp_mem_start,
                                     self.grp_mem_end, self.mem_rel)
        offsets = np.zeros(len(self.query_ids) + 1, np.int64)
        np.cumsum(self.n_ret, out=offsets[1:])
        return self.mem_input_rank.copy(), ambiguous, offsets

    def _sorted_ranks(self, order: str) -> np.ndarray:
        """Ranks inside tie groups under a torch order (`tieaware.engine.torchmetrics_order`) or numpy's
        reversed argsort, found by running that sort on each query with an ambiguous group (float32 scores
        in input order, as torchmetrics casts them and sentence-transformers' CrossEncoder.predict returns
        them)."""
        ranks, ambiguous, offsets = self._input_ranks_and_ambiguous()
        scores = None
        cutoff = int(order.split("@")[1]) if "@" in order else None
        for q in range(len(self.query_ids)):
            lo = int(self.mem_offsets[q])
            hi = lo + int(self.n_groups[q])
            if not ambiguous[lo:hi].any():
                continue
            if scores is None:
                scores = self.all_scores().astype(np.float32)
            q_scores = scores[offsets[q]:offsets[q + 1]]
            if order == "numpy_argsort_reversed":
                ranking = np.argsort(q_scores)[::-1]
            elif order == "torch_argsort":
                ranking = torch_module().from_numpy(q_scores.copy()).argsort(descending=True).numpy()
            else:
                n = q_scores.size
                tensor = torch_module().from_numpy(q_scores.copy())
                top = tensor.topk(n if cutoff is None else min(cutoff, n), sorted=True).indices.numpy()
                not_top = np.ones(n, np.bool_)
                not_top[top] = False
                rest = np.flatnonzero(not_top)
                ranking = np.concatenate([top, rest[np.argsort(-q_scores[rest], kind="stable")]])
            position = np.empty(ranking.size, np.int64)
            position[ranking] = np.arange(ranking.size)
            for g in range(lo, hi):
                members = slice(int(self.grp_mem_start[g]), int(self.grp_mem_end[g]))
                rank = position[self.mem_index[members]] - self.grp_above[g]
                if rank.min() < 0 or rank.max() >= self.grp_size[g]:
                    raise InputError(f"query {self.query_ids[q]!r}: scores that differ as float64 are equal as "
                                     "float32, as the tool reads them; this tie order needs float32 scores.")
                ranks[members] = rank
        return ranks


class ListsBuilder:
    """The outputs `kernels.groups.query_groups` fills and its scratch (`work`).

    Query q has room for min(retrieved, judged) members from ``room[q]``, so ranges of queries are
    read independently (on threads, `tieaware.threads`), each writing its members in query order
    from ``room`` of its first query; `close_gaps` then moves them next to each other. (The dict
    reader's chunks, read one after the other, write theirs end to end: one range, nothing to move.)"""

    def __init__(self, n_ret: np.ndarray, qrel_offsets: np.ndarray):
        n_judged = np.diff(qrel_offsets)
        self.room = np.zeros(n_ret.size + 1, np.int64)
        np.cumsum(np.minimum(n_ret, n_judged), out=self.room[1:])
        capacity = int(self.room[-1])
        self.out = group_arrays(capacity)
        self.n_members, self.n_groups, self.first_nan = (np.zeros(n_ret.size, np.int64) for _ in range(3))
        self._longest = int(n_ret.max(initial=0)), int(n_judged.max(initial=0))

    def work(self) -> Scratch:
        """Scratch for one range read at a time."""
        return scratch(*self._longest)

    def close_gaps(self, ranges) -> np.ndarray:
        """Move each range's members (written from ``room[lo]``) to follow the previous range's, and
        shift its groups' member bounds alike; returns the members' CSR offsets."""
        mem_offsets = np.zeros(self.n_members.size + 1, np.int64)
        np.cumsum(self.n_members, out=mem_offsets[1:])
        for lo, hi in ranges:
            source, target = int(self.room[lo]), int(mem_offsets[lo])
            n = int(mem_offsets[hi]) - target
            if source != target:  # numpy copies overlapping slices correctly
                for a in self.out:
                    a[target:target + n] = a[source:source + n]
                used = group_slots(self.n_groups[lo:hi], mem_offsets[lo:hi + 1])
                for bound in (self.out.grp_mem_start, self.out.grp_mem_end):  # member indices
                    bound[used] -= source - target
        return mem_offsets

    def lists(self, query_ids, n_ret, qrel_offsets, qrel_rel, ranges, **rest) -> RankedLists:
        """The `RankedLists` of the ranges read (`close_gaps`), with the other fields given."""
        mem_offsets = self.close_gaps(ranges)
        used = int(mem_offsets[-1])
        return RankedLists(query_ids, n_ret, qrel_offsets, qrel_rel, self.n_groups, mem_offsets,
                           **{name: a[:used] for name, a in self.out._asdict().items()}, **rest)


def chunk_ranges(offsets: np.ndarray) -> list[tuple[int, int]]:
    """Ranges (first, last) of whole queries of about `CHUNK_DOCS` documents (CSR `offsets`), in order."""
    ranges = []
    first = 0
    while first < offsets.size - 1:
        last = max(first + 1, int(np.searchsorted(offsets, offsets[first] + CHUNK_DOCS, side="right")) - 1)
        ranges.append((first, last))
        first = last
    return ranges
