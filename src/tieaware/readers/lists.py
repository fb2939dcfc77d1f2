"""`RankedLists`: the judged tie groups every metric kernel reads.

Built once per (qrels, run) pair from `inputs` by `kernels.groups.query_groups`,
one query at a time: per query the tie groups that hold a judged document, their
judged members best-first with each member's rank in input order and in
trec_eval's order, and the qrels' grades (for R, N and the ideal DCG). No array
of the size of the run is kept: the run is read again only for ranx's tie order
or to name a document in an error. For ranx objects the result is cached on the
``Run`` (weakly, never stored in it), so evaluating several metrics in several
calls converts once.

ranx ``Run``/``Qrels`` are read by jitted loops over their numba typed dicts
(`typed_dicts`, holding the GIL; a Run or Qrels another thread changes between two of those
kernels is read again from a copy taken in one, `typed_dicts.frozen`); Python dicts by C-level operations (the values by
``struct.pack_into``, the ids joined and encoded as UTF-32 code points). Both are read in chunks of
about `CHUNK_DOCS` documents (a Python qrels dict's judgments beside a dict run's chunks), so
memory grows with the chunk, not the run. No Python loop touches every document. The group kernels
release the GIL: a chunk is grouped on a worker thread while the next chunk is read (`tieaware.threads`);
results do not depend on the number of threads.
"""
from __future__ import annotations

import math
import os
import struct
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import chain
from typing import NamedTuple

import numpy as np

from .. import threads
from ..errors import InputError, QueryMismatchError
from ..inputs import _is_dataframe, is_ranx_qrels, is_ranx_run, load_qrels, load_run, string_keys
from ..kernels.groups import SEED, Scratch, argsort_segments, group_arrays, group_slots, read_chunk, scratch
from ..kernels.tiebreak import RANX_ARGSORT_NEGATED, RANX_ARGSORT_REVERSED, ambiguous_groups, ranx_ranks
from . import typed_dicts

#: the orders inside a tie group that `RankedLists.tool_rank` computes ("ir_measures" and "torchmetrics"
#: pick one per metric, `tieaware.engine.tool_order`); "torch_topk@k" (k a cutoff) is one more, per k
TIE_ORDERS = ("trec_eval", "ranx", "input", "docid_ascending", "torch_argsort", "torch_topk",
              "numpy_argsort_reversed")
#: documents of Python dicts read per chunk (whole queries), few enough that a chunk's arrays stay in
#: the CPU caches
CHUNK_DOCS = 1 << 16


def torch_module():
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
        all_scores: () -> (n,) every score in the run's order, read again (ranx's tie order only).
        run_fingerprint: `typed_dicts.fingerprint` of the ranx Run read (None otherwise).
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
    run_fingerprint: int | None = None
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
                ranks = self.mem_input_rank.copy()
                ambiguous = ambiguous_groups(self.n_groups, self.mem_offsets, self.grp_size, self.grp_mem_start,
                                             self.grp_mem_end, self.mem_rel)
                offsets = np.zeros(len(self.query_ids) + 1, np.int64)
                np.cumsum(self.n_ret, out=offsets[1:])
                ranx_ranks(offsets, self.all_scores(), self.n_groups, self.mem_offsets, self.grp_above,
                           self.grp_mem_start, self.grp_mem_end, self.mem_index, ambiguous, self.ranx_order, ranks)
                self._tool_ranks[oblivious] = ranks
        return self._tool_ranks[oblivious]

    def _sorted_ranks(self, order: str) -> np.ndarray:
        """Ranks inside tie groups under a torch order (`tieaware.engine.torchmetrics_order`) or numpy's
        reversed argsort, found by running that sort on each query with an ambiguous group (float32 scores
        in input order, as torchmetrics casts them and sentence-transformers' CrossEncoder.predict returns
        them)."""
        ranks = self.mem_input_rank.copy()
        ambiguous = ambiguous_groups(self.n_groups, self.mem_offsets, self.grp_size, self.grp_mem_start,
                                     self.grp_mem_end, self.mem_rel)
        offsets = np.zeros(len(self.query_ids) + 1, np.int64)
        np.cumsum(self.n_ret, out=offsets[1:])
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


class _Groups:
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
        mem_offsets = self.close_gaps(ranges)
        used = int(mem_offsets[-1])
        return RankedLists(query_ids, n_ret, qrel_offsets, qrel_rel, self.n_groups, mem_offsets,
                           **{name: a[:used] for name, a in self.out._asdict().items()}, **rest)


def _separated_ids(per_query: list) -> np.ndarray:
    """The ids (keys) of the dicts in `per_query`, in order, each followed by NUL, as Unicode code
    points: one ``str.join`` per dict and one UTF-32 encoding, all C-level. (Read-only, as
    np.frombuffer's, even when empty: numba would compile `read_chunk` again for a writable array.)"""
    parts = ["\0".join(docs) for docs in per_query if docs]
    parts.append("")  # a NUL after the last id too, without copying the text once more
    return np.frombuffer("\0".join(parts).encode("utf-32-le", "surrogatepass"), np.uint32)


def _id_codes(per_query: list, n: int, separated: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The n ids (keys) of the dicts in `per_query`, in order, as Unicode code points: (codes, lo, hi),
    id i being codes[lo[i]:hi[i]]. With `separated`, the codes of `_separated_ids` and lo, hi left
    for `read_chunk` to fill (it finds the NULs on the worker thread, beside the ids' hashes, instead of
    the main thread, which reads the next chunk meanwhile); otherwise found here, by the NULs or, when an id
    holds NUL itself, by the ids' lengths."""
    if separated:
        return _separated_ids(per_query), np.empty(n, np.int64), np.empty(n, np.int64)
    codes = _separated_ids(per_query)
    hi = np.flatnonzero(codes == 0)
    if hi.size == n:
        lo = np.empty_like(hi)
        lo[:1] = 0
        lo[1:] = hi[:-1] + 1
        return codes, lo, hi
    ids = list(chain.from_iterable(per_query))  # an id holds NUL itself: lay them end to end
    lengths = np.fromiter(map(len, ids), np.int64, n)
    hi = np.cumsum(lengths)
    codes = np.frombuffer("".join(ids).encode("utf-32-le", "surrogatepass"), np.uint32)
    return codes, hi - lengths, hi


def _string_id_codes(kind: str, query_ids: list, per_query: list, n: int, separated: bool = False) -> tuple:
    """`_id_codes`; ids that are not strings (ints, numpy ints) are read as strings (`string_keys`,
    which also names an id written both ways), only when joining them fails."""
    try:
        return _id_codes(per_query, n, separated)
    except TypeError:
        return _id_codes([string_keys(docs, f"{kind} dict", q) for q, docs in zip(query_ids, per_query)], n, separated)


def _value_problem(value) -> str | None:
    """Why a score or grade cannot be used, or None: the value rule of every container. Numbers are
    ints, floats and what has ``__float__`` (numpy's); bools are the numbers 0 and 1, as Python, numpy
    and ``struct`` read them; None, NaN and anything else are not."""
    if value is None:
        return "is None, not a number"
    if not isinstance(value, (int, float)) and not hasattr(value, "__float__"):
        return f"is not a number: {value!r}"
    try:
        number = float(value)
    except OverflowError:
        return f"is too large for a float64: {str(value)[:20]}... ({len(str(value))} digits)"
    except (TypeError, ValueError):
        return f"is not a number: {value!r}"
    if math.isnan(number):
        return "is NaN"
    return None


def _name_bad_value(kind: str, query_ids: list, per_query: list, finite: bool):
    """Raise an `InputError` naming the first query/document whose value is unusable."""
    for qid, docs in zip(query_ids, per_query):
        for doc, value in docs.items():
            problem = _value_problem(value)
            if problem is None and finite and not math.isfinite(float(value)):
                problem = f"is {float(value)}; grades must be finite"
            if problem is not None:
                raise InputError(f"{kind} for query {qid!r}, document {doc!r} {problem}.")


def _float_values(kind: str, query_ids: list, per_query: list, total: int, finite: bool) -> np.ndarray:
    """All values of per_query's inner dicts as float64, in order; NaN, None, non-numbers (and,
    for grades, +/-inf) raise an `InputError` naming query and document.

    ``struct.pack_into`` writes each dict's values into the array in one C call (CPython's
    ``PyFloat_AsDouble`` per value, as ``float()``), about half the time of ``np.fromiter``."""
    values = np.empty(total, np.float64)
    offset = 0
    try:
        for docs in per_query:
            if docs:
                struct.pack_into(f"{len(docs)}d", values, offset, *docs.values())  # type: ignore[arg-type]
                offset += 8 * len(docs)
    except (struct.error, TypeError, ValueError, OverflowError):
        _name_bad_value(kind, query_ids, per_query, finite)
        raise
    bad = ~np.isfinite(values) if finite else np.isnan(values)
    if bad.any():
        _name_bad_value(kind, query_ids, per_query, finite)
    return values


def _check_ranx_grades(qrels, query_ids: list, grades: np.ndarray) -> None:
    """Name the first unusable grade (NaN, +/-inf) of `query_ids` in a ranx Qrels, if `grades` hold one
    (ranx builds int64 grades; a typed dict of floats put in a Qrels by hand can hold them)."""
    if not np.isfinite(grades).all():
        _name_bad_value("Relevance", query_ids, [dict(qrels.qrels[q]) if q in qrels.qrels else {} for q in query_ids],
                        finite=True)


def _ranx_judgments(qrels, query_ids: list) -> tuple:
    """(offsets, codes, lo, hi, grades) of `query_ids`' judgments in a ranx Qrels, read in numba (ids as
    `_id_codes`); unusable grades are named."""
    offsets, codes, lo, hi, grades = typed_dicts.qrels_arrays(qrels.qrels, typed_dicts.typed(query_ids))
    codes.setflags(write=False)  # as the dict reader's: read_chunk compiles for one layout of its arguments
    _check_ranx_grades(qrels, query_ids, grades)
    return offsets, codes, lo, hi, grades


def _best_first(offsets: np.ndarray, lo: np.ndarray, hi: np.ndarray, grades: np.ndarray) -> tuple:
    """Each query's judgments (CSR by offsets: id bounds lo, hi and grades) reordered by grade,
    descending. The group kernels find judged ids through a hash table, in any order; the grades
    then come out of the read in the order R, N and the ideal DCG read them."""
    order = argsort_segments(-grades, offsets)
    return lo[order], hi[order], grades[order]


class JudgmentChunk(NamedTuple):
    """The judgments of a range of queries as the group kernels read them: CSR offsets from 0, the ids
    as code points codes[lo:hi] (`_id_codes`) and the grades, each query's `_best_first`."""

    offsets: np.ndarray
    codes: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    grades: np.ndarray


class _Judgments:
    """The judgments of `query_ids` in a ranx Qrels or a qrels dict, read by ranges of queries.

    A ranx Qrels is read all at once (one kernel, so it is read as it is at one moment); a qrels
    dict range by range beside a dict run's chunks (`chunk`), so the reader's worker thread starts
    on the first chunk at once, and each range's grades are sorted while the worker groups the
    chunk before."""

    def __init__(self, qrels, query_ids: list):
        self.query_ids = query_ids
        if is_ranx_qrels(qrels):
            offsets, codes, lo, hi, grades = _ranx_judgments(qrels, query_ids)
            self._ranx: tuple | None = (codes, lo, hi, grades)
        else:
            self._ranx = None
            empty: dict = {}
            self._per_query = [qrels.get(q, empty) for q in query_ids]
            offsets = np.zeros(len(query_ids) + 1, np.int64)
            np.cumsum([len(docs) for docs in self._per_query], out=offsets[1:])
        #: (Q+1,) CSR offsets of the judgments of every query
        self.offsets = offsets

    def chunk(self, first: int, last: int) -> JudgmentChunk:
        """The judgments of queries first..last-1, each query's best-first."""
        a, b = int(self.offsets[first]), int(self.offsets[last])
        local = self.offsets[first:last + 1] - a
        if self._ranx is not None:
            codes, lo, hi, grades = self._ranx
            codes, lo, hi, unsorted = codes, lo[a:b], hi[a:b], grades[a:b]
        else:
            ids, per_query = self.query_ids[first:last], self._per_query[first:last]
            codes, lo, hi = _string_id_codes("qrels", ids, per_query, b - a)
            unsorted = _float_values("Relevance", ids, per_query, b - a, finite=True)
        return JudgmentChunk(local, codes, *_best_first(local, lo, hi, unsorted))


def _chunks(offsets: np.ndarray) -> list[tuple[int, int]]:
    """Ranges (first, last) of whole queries of about `CHUNK_DOCS` documents (CSR `offsets`), in order."""
    ranges = []
    first = 0
    while first < offsets.size - 1:
        last = max(first + 1, int(np.searchsorted(offsets, offsets[first] + CHUNK_DOCS, side="right")) - 1)
        ranges.append((first, last))
        first = last
    return ranges


def _from_dicts(qrels, run: dict, query_ids: list, ranx_order: int) -> RankedLists:
    """Chunks of whole queries (about `CHUNK_DOCS` documents) read into arrays by C-level Python calls
    (`_chunk_arrays`, `_Judgments.chunk`, holding the GIL) while a worker thread runs `read_chunk`
    (no GIL) on the chunk before (`threads.pipelined`, one chunk in flight: memory stays that of two
    chunks). `ranx_order`: how ranx orders the run's ties (`ranked_lists`)."""
    judged = _Judgments(qrels, query_ids)
    qrel_offsets = judged.offsets
    grades = np.empty(int(qrel_offsets[-1]), np.float64)  # the qrels' grades, each query's best-first
    empty: dict = {}
    runs = [run.get(q, empty) for q in query_ids]
    n_ret = np.fromiter(map(len, runs), np.int64, len(runs))
    offsets = np.zeros(len(query_ids) + 1, np.int64)
    np.cumsum(n_ret, out=offsets[1:])
    groups = _Groups(n_ret, qrel_offsets)
    work = groups.work()
    ranges = _chunks(offsets)

    cursor = np.zeros(1, np.int64)  # chunks are read in order, each continuing where the one before ended

    def arguments(first: int, last: int, separated: bool = True) -> tuple:
        judgments = judged.chunk(first, last)
        grades[qrel_offsets[first]:qrel_offsets[last]] = judgments.grades
        return (offsets[first:last + 1] - offsets[first],
                *_chunk_arrays(query_ids, runs, offsets, first, last, separated), separated,
                *judgments, first, work, groups.out, groups.n_members, groups.n_groups,
                groups.first_nan, cursor, SEED)

    workers = 1 if len(ranges) > 1 and threads.n_threads() > 1 else 0
    calls = (arguments(first, last) for first, last in ranges)
    for (first, last), done in zip(ranges, threads.pipelined(read_chunk, calls, workers)):
        if not done:  # an id of this chunk holds NUL itself: read it again with the ids' bounds given
            read_chunk(*arguments(first, last, separated=False))

    def all_scores() -> np.ndarray:
        return _float_values("Run score", query_ids, runs, int(offsets[-1]), finite=False)

    return groups.lists(query_ids, n_ret, qrel_offsets, grades, [(0, len(query_ids))],
                        ranx_order=ranx_order, all_scores=all_scores)


def _chunk_arrays(query_ids: list, runs: list, offsets: np.ndarray, first: int, last: int, separated: bool) -> tuple:
    """(scores, codes, lo, hi) of queries first..last-1 (ids as `_string_id_codes`)."""
    n_chunk = int(offsets[last] - offsets[first])
    codes, lo, hi = _string_id_codes("run", query_ids[first:last], runs[first:last], n_chunk, separated)
    return _float_values("Run score", query_ids[first:last], runs[first:last], n_chunk, finite=False), codes, lo, hi


def _read_ranx_run(qrels, run, make_comparable: bool) -> RankedLists:
    run_ids, typed_ids, offsets = typed_dicts.queries(run.run)  # read in numba, once
    return _from_ranx_run(qrels, run, _query_ids(qrels, run_ids, make_comparable), make_comparable,
                          (typed_ids, offsets))


def _from_ranx_run(qrels, run, query_ids: list, make_comparable: bool, run_keys: tuple) -> RankedLists:
    """`run_keys`: the Run's own keys as a typed list and its CSR offsets (`typed_dicts.queries`),
    which are `query_ids` unless ``make_comparable``. The judgments are read first (`_Judgments`); the
    Run in chunks of whole queries (about `CHUNK_DOCS` documents), each copied holding the GIL
    (`typed_dicts.run_chunk`) while worker threads group the chunks before without it
    (`typed_dicts.group_chunk`, one chunk in flight per thread: `threads.pipelined`)."""
    if make_comparable:
        typed_ids = typed_dicts.typed(query_ids)
        offsets = typed_dicts.run_sizes(run.run, typed_ids)
    else:
        typed_ids, offsets = run_keys
    judged = _Judgments(qrels, query_ids)
    qrel_offsets = judged.offsets
    judgments = judged.chunk(0, len(query_ids))
    n_ret = np.diff(offsets)
    groups = _Groups(n_ret, qrel_offsets)
    ranges = _chunks(offsets)
    works = [groups.work() for _ in range(min(threads.n_threads(), len(ranges)))]

    def copied(i: int, lo: int, hi: int) -> tuple:
        *chunk, was_changed = typed_dicts.run_chunk(run.run, typed_ids, lo, hi, offsets, SEED)
        if was_changed:
            raise typed_dicts.ChangedWhileReadError()
        return (offsets, lo, hi, *chunk, qrel_offsets, judgments.codes, judgments.lo, judgments.hi, judgments.grades,
                works[i % len(works)], groups.out, groups.n_members, groups.n_groups, groups.first_nan,
                groups.room[lo], SEED)

    # chunk i takes the scratch of chunk i - len(works), done by then (`threads.pipelined`)
    calls = (copied(i, lo, hi) for i, (lo, hi) in enumerate(ranges))
    parts = list(threads.pipelined(typed_dicts.group_chunk, calls, len(works) if len(works) > 1 else 0))
    bad = np.flatnonzero(groups.first_nan >= 0)
    if bad.size:
        q = int(bad[0])
        doc = typed_dicts.doc_id(run.run, query_ids[q], int(groups.first_nan[q]))
        raise InputError(f"Run score is NaN for query {query_ids[q]!r}, document {doc!r} "
                         f"({bad.size} queries have NaN scores).")

    run_td = run.run  # not the Run: the cache holds these lists while the Run lives, and no longer

    def all_scores() -> np.ndarray:
        return typed_dicts.run_scores(run_td, typed_ids, offsets)

    return groups.lists(query_ids, n_ret, qrel_offsets, judgments.grades, ranges,
                        ranx_order=None if run.sorted else RANX_ARGSORT_NEGATED, all_scores=all_scores,
                        run_fingerprint=None if make_comparable else typed_dicts.joined(SEED, parts))


# ------------------------------------------------------------------ assembling
def _query_ids(qrels, run_ids: list, make_comparable: bool) -> list:
    """The evaluated queries: the run's (`run_ids`, in its order); with ``make_comparable`` those
    with qrels, then the qrels' queries the run lacks. A mismatch otherwise raises."""
    qrels_ids = typed_dicts.queries(qrels.qrels)[0] if is_ranx_qrels(qrels) else list(qrels.keys())
    qrels_set = set(qrels_ids)
    run_set = set(run_ids)
    if make_comparable:
        return [q for q in run_ids if q in qrels_set] + [q for q in qrels_ids if q not in run_set]
    if qrels_set != run_set:
        raise QueryMismatchError([q for q in qrels_ids if q not in run_set], [q for q in run_ids if q not in qrels_set])
    return run_ids


_CACHE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def ranked_lists(qrels, run, make_comparable: bool = False, from_file: bool | None = None) -> RankedLists:
    """Build the arrays for a qrels/run pair.

    ranx's tie order (``oblivious="ranx"``) is that of ``ranx.evaluate`` on the object given: a
    dict's ties as ranx sorts a dict (reversed ``argsort(scores)``); a Run's in its own order. For a
    run from a file or DataFrame (`from_file`; None: a path or DataFrame given as `run`) it is that of
    the Run ranx reads from it, ``Run.from_file`` / ``Run.from_df`` (``argsort(-scores)`` over each
    query's lines in file order), which a ranx user evaluates, not a dict.

    For a ranx ``Qrels``/``Run`` pair the conversion is cached per ``Run`` (weakly,
    never stored in it) and served again only while both objects hold the same
    query ids, doc ids, scores and grades in the same order (`typed_dicts.fingerprint`,
    a fraction of a conversion's cost), since ranx's ``add_score`` and similar
    methods change them in place.
    """
    if from_file is None:
        from_file = isinstance(run, (str, os.PathLike)) or _is_dataframe(run)
    qrels = load_qrels(qrels, doc_ids=False)  # the dict readers check doc ids on their way (`string_keys`)
    run = load_run(run, doc_ids=False)
    cacheable = is_ranx_run(run) and is_ranx_qrels(qrels)
    if cacheable:
        key = (id(qrels), run.sorted, make_comparable)
        per_run = _CACHE.setdefault(run, {})
        hit = per_run.get(key)
        qrels_hash = typed_dicts.fingerprint(qrels.qrels, SEED)
        if hit is not None and hit[0]() is qrels and hit[1] == qrels_hash \
                and hit[2] == typed_dicts.fingerprint(run.run, SEED):
            return hit[3]
    if is_ranx_run(run):
        try:
            lists = _read_ranx_run(qrels, run, make_comparable)
        except typed_dicts.ChangedWhileReadError:  # another thread changed them between two kernels: read
            lists = _read_ranx_run(typed_dicts.frozen(qrels) if cacheable else qrels,  # a copy taken at once
                                   typed_dicts.frozen(run), make_comparable)
    else:
        lists = _from_dicts(qrels, run, _query_ids(qrels, list(run.keys()), make_comparable),
                            RANX_ARGSORT_NEGATED if from_file else RANX_ARGSORT_REVERSED)
    if cacheable:
        run_hash = lists.run_fingerprint
        per_run.clear()
        per_run[key] = (weakref.ref(qrels), qrels_hash,
                        typed_dicts.fingerprint(run.run, SEED) if run_hash is None else run_hash, lists)
    return lists


def run_scores(run) -> tuple[list, np.ndarray, np.ndarray]:
    """(query ids, CSR offsets, scores in the run's order) of a run alone."""
    run = load_run(run)
    if is_ranx_run(run):
        query_ids, typed_ids, offsets = typed_dicts.queries(run.run)
        return query_ids, offsets, typed_dicts.run_scores(run.run, typed_ids, offsets)
    query_ids = list(run.keys())
    offsets = np.zeros(len(query_ids) + 1, np.int64)
    per_query = [run[q] for q in query_ids]
    np.cumsum([len(docs) for docs in per_query], out=offsets[1:])
    return query_ids, offsets, _float_values("Run score", query_ids, per_query, int(offsets[-1]), finite=False)
