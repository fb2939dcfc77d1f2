"""`RankedLists`: the compact array form every metric kernel reads.

Built once per (qrels, run) pair from `inputs`: flat float64 scores and judgments
in the run's own document order, CSR offsets per query, the qrels' grades per
query (for R, N and the ideal DCG), and the judged tie groups of
`kernels.groups`. For ranx objects it is cached on the ``Run`` (weakly, never
stored in it), so evaluating several metrics in several calls converts once.

ranx ``Run``/``Qrels`` are read by jitted loops over their numba typed dicts;
Python dicts by C-level dict operations; no Python loop touches every document.
"""
from __future__ import annotations

import math
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import chain, repeat
from operator import itemgetter

import numpy as np
from numba import types as nbtypes
from numba.typed import Dict as TypedDict

from . import ranx_reader
from .errors import InputError, QueryMismatchError
from .inputs import is_ranx_qrels, is_ranx_run, load_qrels, load_run
from .kernels.groups import group_slots, judged_groups
from .kernels.tiebreak import (
    RANX_ARGSORT_NEGATED,
    RANX_ARGSORT_REVERSED,
    ambiguous_groups,
    ambiguous_members,
    ranx_ranks,
    trec_eval_ranks,
)

#: the tools whose tie order `evaluate(..., oblivious=...)` reproduces
OBLIVIOUS_ORDERS = ("trec_eval", "ranx", "input", "ir_measures")
#: the orders inside a tie group that `RankedLists.tool_rank` computes ("ir_measures" picks one per metric)
TIE_ORDERS = ("trec_eval", "ranx", "input", "docid_ascending")


def ir_measures_order(family: str, k: int | None) -> str:
    """The tie order ir_measures' default pipeline (ir_measures 0.3-0.4) applies to a metric family.

    It hands each measure to the first provider that supports it: pytrec_eval (trec_eval's
    order: score desc, doc id desc) for most; its msmarco provider for RR with a cutoff and its
    judged provider for Judged@k, both sorting by (-score, doc id): doc id ascending; cwl_eval
    for RBP, a stable sort by score: input order; gdeval for ERR@k and nDCG(dcg='exp-log2')@k,
    trec_eval's order.
    """
    if family == "judged" or family == "rr" and k is not None:
        return "docid_ascending"
    if family == "rbp":
        return "input"
    return "trec_eval"


@dataclass
class RankedLists:
    """Runs and qrels as arrays; see the module docstring.

    Attributes:
        query_ids: evaluated queries, in the run's order.
        offsets: (Q+1,) CSR offsets into scores/rel/judged.
        scores, rel, judged: per retrieved document, in the run's order.
        qrel_offsets, qrel_rel: (Q+1,) and the qrels' grades per query, descending.
        ranx_order: how ranx orders this input (`kernels.tiebreak` modes, or None
            when the run's own order already is ranx's).
        doc_id: global document index -> its id (for error messages).
        doc_ids_utf8: sorted global indices -> (NUL-terminated UTF-8 ids, offsets), to
            order ties by id as trec_eval does (dict runs).
        judged_trec_rank: per retrieved judged document, in global order, how many
            documents with the same score have a greater id (ranx runs: computed
            while reading, see `ranx_reader.read_run`).
        run_fingerprint: `ranx_reader.fingerprint` of the ranx Run read (None otherwise).

    Derived in ``__post_init__`` by `kernels.groups.judged_groups` (judged members M,
    group slots of query q from ``mem_offsets[q]``):
        n_ret: (Q,) documents retrieved per query.
        mem_offsets: (Q+1,) judged retrieved documents before each query.
        n_groups: (Q,) judged tie groups per query.
        mem_rel, mem_index, mem_input_rank: (M,) each judged member's grade (best-first
            inside its group), index in its query's input order, rank in its group in
            input order.
        grp_above, grp_size, grp_mem_start, grp_mem_end: (M,) per group slot: documents
            above it, documents in it, and where its members start and end.
        doc_slot: (n,) each document's group slot, or -1 outside every judged group.
    """

    query_ids: list
    offsets: np.ndarray
    scores: np.ndarray
    rel: np.ndarray
    judged: np.ndarray
    qrel_offsets: np.ndarray
    qrel_rel: np.ndarray
    ranx_order: int | None
    doc_id: Callable[[int], str]
    doc_ids_utf8: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]] | None = None
    judged_trec_rank: np.ndarray | None = None
    run_fingerprint: int | None = None
    n_ret: np.ndarray = field(init=False, repr=False)
    mem_offsets: np.ndarray = field(init=False, repr=False)
    n_groups: np.ndarray = field(init=False, repr=False)
    mem_rel: np.ndarray = field(init=False, repr=False)
    mem_index: np.ndarray = field(init=False, repr=False)
    mem_input_rank: np.ndarray = field(init=False, repr=False)
    grp_above: np.ndarray = field(init=False, repr=False)
    grp_size: np.ndarray = field(init=False, repr=False)
    grp_mem_start: np.ndarray = field(init=False, repr=False)
    grp_mem_end: np.ndarray = field(init=False, repr=False)
    doc_slot: np.ndarray = field(init=False, repr=False)
    _tool_ranks: dict = field(default_factory=dict, repr=False)

    def __post_init__(self):
        # judged documents before each query (M-sized work, no n-sized cumulative sum)
        self.mem_offsets = np.searchsorted(np.flatnonzero(self.judged), self.offsets).astype(np.int64)
        (self.n_groups, first_nan, self.mem_rel, self.mem_index, self.mem_input_rank,
         self.grp_above, self.grp_size, self.grp_mem_start, self.grp_mem_end, self.doc_slot) = judged_groups(
            self.offsets, self.scores, self.rel, self.judged, self.mem_offsets)
        bad = np.flatnonzero(first_nan >= 0)
        if bad.size:
            q = bad[0]
            doc = self.doc_id(int(self.offsets[q] + first_nan[q]))
            raise InputError(f"Run score is NaN for query {self.query_ids[q]!r}, document {doc!r} "
                             f"({bad.size} queries have NaN scores).")
        self.n_ret = np.diff(self.offsets)

    def tool_rank(self, oblivious: str) -> np.ndarray:
        """Rank of each judged document inside its tie group under one of `TIE_ORDERS`."""
        if oblivious not in TIE_ORDERS:
            raise InputError(f"tie order must be one of {TIE_ORDERS}, got {oblivious!r}.")
        if oblivious == "ranx" and self.ranx_order is None:
            oblivious = "input"
        if oblivious == "input":
            return self.mem_input_rank
        if oblivious == "docid_ascending" and oblivious not in self._tool_ranks:
            # ids are distinct inside a query: the members with a smaller id are the others
            used = group_slots(self.n_groups, self.mem_offsets)
            member_size = np.repeat(self.grp_size[used], self.grp_mem_end[used] - self.grp_mem_start[used])
            self._tool_ranks[oblivious] = member_size - 1 - self.tool_rank("trec_eval")
        if oblivious not in self._tool_ranks:
            ranks = self.mem_input_rank.copy()
            ambiguous = ambiguous_groups(self.n_groups, self.mem_offsets, self.grp_size, self.grp_mem_start,
                                         self.grp_mem_end, self.mem_rel)
            if oblivious == "ranx":
                ranx_ranks(self.offsets, self.scores, self.n_groups, self.mem_offsets, self.grp_above,
                           self.grp_mem_start, self.grp_mem_end, self.mem_index, ambiguous, self.ranx_order,
                           ranks)
            elif self.judged_trec_rank is not None:
                member_query = np.repeat(np.arange(len(self.query_ids)), np.diff(self.mem_offsets))
                mem_doc = self.offsets[member_query] + self.mem_index
                ranks = self.judged_trec_rank[np.searchsorted(np.flatnonzero(self.judged), mem_doc)]
            elif ambiguous.any():
                slots, slot_offsets, doc_index = ambiguous_members(self.doc_slot, ambiguous)
                by_index = np.argsort(doc_index)
                id_bytes, id_offsets = self.doc_ids_utf8(doc_index[by_index])
                id_row = np.empty_like(by_index)
                id_row[by_index] = np.arange(by_index.size)
                member_query = np.repeat(np.arange(len(self.query_ids)), np.diff(self.mem_offsets))
                mem_doc = self.offsets[member_query] + self.mem_index
                trec_eval_ranks(slots, slot_offsets, doc_index, id_row, id_bytes, id_offsets, mem_doc,
                                self.grp_mem_start, self.grp_mem_end, ranks)
            self._tool_ranks[oblivious] = ranks
        return self._tool_ranks[oblivious]


# ---------------------------------------------------------------- Python dicts
def _utf8_ids(ids: list) -> tuple[np.ndarray, np.ndarray]:
    """NUL-terminated UTF-8 bytes of the ids, concatenated, and their (n+1,) offsets
    (terminators make a plain byte comparison behave as C's strcmp)."""
    try:
        texts = "\0".join(ids)
    except TypeError:  # non-string ids (e.g. ints in a dict run)
        ids = [str(d) for d in ids]
        texts = "\0".join(ids)
    buf = np.frombuffer((texts + "\0").encode("utf-8"), np.uint8)
    offsets = np.zeros(len(ids) + 1, np.int64)
    ends = np.flatnonzero(buf == 0)
    if ends.size == len(ids):
        offsets[1:] = ends + 1
        return buf, offsets
    encoded = [t.encode("utf-8") + b"\0" for t in ids]  # an id holds NUL itself
    np.cumsum([len(e) for e in encoded], out=offsets[1:])
    return np.frombuffer(b"".join(encoded), np.uint8), offsets


def _value_problem(value) -> str | None:
    """Why a score or grade cannot be used, or None."""
    if value is None:
        return "is None, not a number"
    if isinstance(value, bool) or not isinstance(value, (int, float)) and not hasattr(value, "__float__"):
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
    for grades, +/-inf) raise an `InputError` naming query and document."""
    try:
        values = np.fromiter(chain.from_iterable(docs.values() for docs in per_query), np.float64, total)
    except (TypeError, ValueError, OverflowError):
        _name_bad_value(kind, query_ids, per_query, finite)
        raise
    bad = ~np.isfinite(values) if finite else np.isnan(values)
    if bad.any():
        _name_bad_value(kind, query_ids, per_query, finite)
    return values


def _qrels_csr(qrels: dict, query_ids: list) -> tuple[np.ndarray, np.ndarray]:
    """Each query's grades, sorted descending, CSR; unusable grades are named."""
    empty: dict = {}
    judgments = [qrels.get(q, empty) for q in query_ids]
    offsets = np.zeros(len(query_ids) + 1, np.int64)
    np.cumsum([len(docs) for docs in judgments], out=offsets[1:])
    grades = _float_values("Relevance", query_ids, judgments, int(offsets[-1]), finite=True)
    query_of = np.repeat(np.arange(len(query_ids)), np.diff(offsets))
    return offsets, grades[np.lexsort((-grades, query_of))]


def _from_dicts(qrels: dict, run: dict, query_ids: list) -> RankedLists:
    qrel_offsets, qrel_rel = _qrels_csr(qrels, query_ids)
    empty: dict = {}
    runs = [run.get(q, empty) for q in query_ids]
    offsets = np.zeros(len(query_ids) + 1, np.int64)
    np.cumsum([len(docs) for docs in runs], out=offsets[1:])
    total = int(offsets[-1])
    scores = _float_values("Run score", query_ids, runs, total, finite=False)

    def grades(qid, docs):
        judgments = qrels.get(qid)
        if not judgments:
            return repeat(math.nan, len(docs))
        marks = dict.fromkeys(docs, math.nan)  # C-level; the Python loop runs over the judgments only
        for doc, grade in judgments.items():
            if doc in marks:
                marks[doc] = grade
        return marks.values()

    rel = np.fromiter(chain.from_iterable(map(grades, query_ids, runs)), np.float64, total)
    judged = ~np.isnan(rel)  # grades were validated by _qrels_csr, so NaN marks "unjudged"
    rel[~judged] = 0.0

    def doc_ids_utf8(indices: np.ndarray):
        query_of = np.searchsorted(offsets, indices, side="right") - 1
        bounds = np.flatnonzero(np.diff(query_of, prepend=-1, append=-1))
        ids: list = []
        for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
            q = int(query_of[a])
            local = (indices[a:b] - offsets[q]).tolist()
            picked = itemgetter(*local)(list(runs[q]))
            ids.extend(picked if len(local) > 1 else (picked,))
        return _utf8_ids(ids)

    def doc_id(index: int) -> str:
        q = int(np.searchsorted(offsets, index, side="right") - 1)
        return str(list(runs[q])[index - offsets[q]])

    return RankedLists(query_ids, offsets, scores, rel, judged, qrel_offsets, qrel_rel,
                       RANX_ARGSORT_REVERSED, doc_id, doc_ids_utf8)


# ------------------------------------------------------------ ranx typed dicts
def _typed_unicode_qrels(qrels: dict):
    """A Python qrels dict as a numba typed dict with unicode keys (small: qrels only)."""
    inner_type = nbtypes.DictType(nbtypes.unicode_type, nbtypes.float64)
    out = TypedDict.empty(nbtypes.unicode_type, inner_type)
    for qid, docs in qrels.items():
        inner = TypedDict.empty(nbtypes.unicode_type, nbtypes.float64)
        values = _float_values("Relevance", [qid], [docs], len(docs), finite=True)
        for doc, grade in zip(docs, values.tolist()):
            inner[doc] = grade
        out[qid] = inner
    return out


def _from_ranx_run(qrels, run, make_comparable: bool) -> RankedLists:
    qrels_td = qrels.qrels if is_ranx_qrels(qrels) else _typed_unicode_qrels(qrels)
    typed_ids = ranx_reader.query_order(run.run, qrels_td, make_comparable)
    query_ids = list(typed_ids)
    offsets = ranx_reader.run_sizes(run.run, typed_ids)
    scores, judged_pos, judged_rel, judged_trec_rank, run_hash = ranx_reader.read_run(
        run.run, qrels_td, typed_ids, offsets)
    rel = np.zeros(scores.size)
    rel[judged_pos] = judged_rel
    judged = np.zeros(scores.size, np.bool_)
    judged[judged_pos] = True
    qrel_offsets, qrel_rel = ranx_reader.qrels_grades(qrels_td, typed_ids)
    if not np.isfinite(qrel_rel).all():
        _name_bad_value("Relevance", query_ids, [dict(qrels_td[q]) if q in qrels_td else {} for q in query_ids],
                        finite=True)

    def doc_id(index: int) -> str:
        q = int(np.searchsorted(offsets, index, side="right") - 1)
        return ranx_reader.doc_id(run.run, query_ids[q], index - offsets[q])

    ranx_order = None if run.sorted else RANX_ARGSORT_NEGATED
    return RankedLists(query_ids, offsets, scores, rel, judged, qrel_offsets, qrel_rel, ranx_order, doc_id,
                       judged_trec_rank=judged_trec_rank, run_fingerprint=None if make_comparable else run_hash)


# ------------------------------------------------------------------ assembling
def _query_ids(qrels, run, make_comparable: bool) -> list:
    run_ids = list(run.run.keys()) if is_ranx_run(run) else list(run.keys())
    qrels_ids = list(qrels.qrels.keys()) if is_ranx_qrels(qrels) else list(qrels.keys())
    qrels_set = set(qrels_ids)
    run_set = set(run_ids)
    if make_comparable:
        return [q for q in run_ids if q in qrels_set] + [q for q in qrels_ids if q not in run_set]
    if qrels_set != run_set:
        raise QueryMismatchError([q for q in qrels_ids if q not in run_set], [q for q in run_ids if q not in qrels_set])
    return run_ids


_CACHE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def ranked_lists(qrels, run, make_comparable: bool = False) -> RankedLists:
    """Build the arrays for a qrels/run pair.

    For a ranx ``Qrels``/``Run`` pair the conversion is cached per ``Run`` (weakly,
    never stored in it) and served again only while both objects hold the same
    query ids, doc ids, scores and grades in the same order (`ranx_reader.fingerprint`,
    a fraction of a conversion's cost), since ranx's ``add_score`` and similar
    methods change them in place.
    """
    qrels = load_qrels(qrels)
    run = load_run(run)
    cacheable = is_ranx_run(run) and is_ranx_qrels(qrels)
    if cacheable:
        key = (id(qrels), run.sorted, make_comparable)
        per_run = _CACHE.setdefault(run, {})
        hit = per_run.get(key)
        qrels_hash = ranx_reader.fingerprint(qrels.qrels)
        if hit is not None and hit[0]() is qrels and hit[1] == qrels_hash \
                and hit[2] == ranx_reader.fingerprint(run.run):
            return hit[3]
    query_ids = _query_ids(qrels, run, make_comparable)  # raises on a mismatch
    if is_ranx_run(run):
        lists = _from_ranx_run(qrels, run, make_comparable)
        assert lists.query_ids == query_ids
    else:
        if is_ranx_qrels(qrels):
            qrels = qrels.to_dict()
        lists = _from_dicts(qrels, run, query_ids)
    if cacheable:
        run_hash = lists.run_fingerprint
        per_run.clear()
        per_run[key] = (weakref.ref(qrels), qrels_hash,
                        ranx_reader.fingerprint(run.run) if run_hash is None else run_hash, lists)
    return lists


def run_scores(run) -> tuple[list, np.ndarray, np.ndarray]:
    """(query ids, CSR offsets, scores in the run's order) of a run alone."""
    run = load_run(run)
    if is_ranx_run(run):
        typed_ids = ranx_reader.query_order(run.run, run.run, False)
        offsets = ranx_reader.run_sizes(run.run, typed_ids)
        return list(typed_ids), offsets, ranx_reader.run_scores(run.run, typed_ids, offsets)
    query_ids = list(run.keys())
    offsets = np.zeros(len(query_ids) + 1, np.int64)
    per_query = [run[q] for q in query_ids]
    np.cumsum([len(docs) for docs in per_query], out=offsets[1:])
    return query_ids, offsets, _float_values("Run score", query_ids, per_query, int(offsets[-1]), finite=False)
