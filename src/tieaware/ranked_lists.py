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
from dataclasses import dataclass, field
from itertools import chain, repeat
from operator import itemgetter

import numpy as np
from numba import njit
from numba import types as nbtypes
from numba.typed import Dict as TypedDict
from numba.typed import List as TypedList

from .errors import InputError
from .inputs import RanxQrels, RanxRun, load_qrels, load_run
from .kernels.groups import judged_groups
from .kernels.tiebreak import (RANX_ARGSORT_NEGATED, RANX_ARGSORT_REVERSED, ambiguous_groups,
                               ambiguous_members, ranx_ranks, trec_eval_ranks)

OBLIVIOUS_ORDERS = ("trec_eval", "ranx", "input")


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
    """

    query_ids: list
    offsets: np.ndarray
    scores: np.ndarray
    rel: np.ndarray
    judged: np.ndarray
    qrel_offsets: np.ndarray
    qrel_rel: np.ndarray
    ranx_order: int | None
    doc_ids_utf8: object  # callable(sorted global doc indices) -> (NUL-terminated UTF-8 bytes, offsets)
    _tool_ranks: dict = field(default_factory=dict, repr=False)

    def __post_init__(self):
        judged_before = np.zeros(self.judged.size + 1, np.int64)
        np.cumsum(self.judged, out=judged_before[1:])
        self.mem_offsets = judged_before[self.offsets]  # judged documents before each query
        (self.n_groups, first_nan, self.mem_rel, self.mem_index, self.mem_input_rank,
         self.grp_above, self.grp_size, self.grp_mem_start, self.grp_mem_end, self.doc_slot) = judged_groups(
            self.offsets, self.scores, self.rel, self.judged, self.mem_offsets)
        bad = np.flatnonzero(first_nan >= 0)
        if bad.size:
            q = bad[0]
            doc = self._doc_id(self.offsets[q] + first_nan[q])
            raise InputError(f"Run score is NaN for query {self.query_ids[q]!r}, document {doc!r} "
                             f"({bad.size} queries have NaN scores).")
        self.n_ret = np.diff(self.offsets)

    def _doc_id(self, index: int) -> str:
        buf, offs = self.doc_ids_utf8(np.array([index], np.int64))
        return bytes(buf[offs[0]:offs[1] - 1]).decode("utf-8")  # without the NUL terminator

    def tool_rank(self, oblivious: str) -> np.ndarray:
        """Rank of each judged document inside its tie group under a tool's order."""
        if oblivious not in OBLIVIOUS_ORDERS:
            raise ValueError(f"oblivious must be one of {OBLIVIOUS_ORDERS}, got {oblivious!r}.")
        if oblivious == "ranx" and self.ranx_order is None:
            oblivious = "input"
        if oblivious == "input":
            return self.mem_input_rank
        if oblivious not in self._tool_ranks:
            ranks = self.mem_input_rank.copy()
            ambiguous = ambiguous_groups(self.n_groups, self.mem_offsets, self.grp_size, self.grp_mem_start,
                                         self.grp_mem_end, self.mem_rel)
            if oblivious == "ranx":
                ranx_ranks(self.offsets, self.scores, self.n_groups, self.mem_offsets, self.grp_above,
                           self.grp_mem_start, self.grp_mem_end, self.mem_index, ambiguous, self.ranx_order,
                           ranks)
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


def _float_array(values: list, kind: str, qid, docs: dict) -> np.ndarray:
    try:
        return np.array(values, dtype=np.float64)
    except (TypeError, ValueError):
        for doc, value in docs.items():
            try:
                float(value)
            except (TypeError, ValueError):
                raise InputError(f"{kind} for query {qid!r}, document {doc!r} is not a number: {value!r}.") from None
        raise


def _qrels_csr(qrels: dict, query_ids: list) -> tuple[np.ndarray, np.ndarray]:
    """Each query's grades, sorted descending, CSR; non-numeric or NaN grades are named."""
    empty: dict = {}
    judgments = [qrels.get(q, empty) for q in query_ids]
    offsets = np.zeros(len(query_ids) + 1, np.int64)
    np.cumsum([len(docs) for docs in judgments], out=offsets[1:])
    try:
        grades = np.fromiter(chain.from_iterable(docs.values() for docs in judgments), np.float64, int(offsets[-1]))
    except (TypeError, ValueError):
        for qid, docs in zip(query_ids, judgments):
            _float_array(list(docs.values()), "Relevance", qid, docs)
        raise
    nan = np.flatnonzero(np.isnan(grades))
    if nan.size:
        q = int(np.searchsorted(offsets, nan[0], side="right") - 1)
        doc = list(judgments[q])[nan[0] - offsets[q]]
        raise InputError(f"Relevance for query {query_ids[q]!r}, document {doc!r} is NaN.")
    query_of = np.repeat(np.arange(len(query_ids)), np.diff(offsets))
    return offsets, grades[np.lexsort((-grades, query_of))]


def _from_dicts(qrels: dict, run: dict, query_ids: list) -> RankedLists:
    qrel_offsets, qrel_rel = _qrels_csr(qrels, query_ids)
    empty: dict = {}
    runs = [run.get(q, empty) for q in query_ids]
    offsets = np.zeros(len(query_ids) + 1, np.int64)
    np.cumsum([len(docs) for docs in runs], out=offsets[1:])
    total = int(offsets[-1])
    try:
        scores = np.fromiter(chain.from_iterable(docs.values() for docs in runs), np.float64, total)
    except (TypeError, ValueError):
        for qid, docs in zip(query_ids, runs):
            _float_array(list(docs.values()), "Run score", qid, docs)
        raise

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

    return RankedLists(query_ids, offsets, scores, rel, judged, qrel_offsets, qrel_rel,
                       RANX_ARGSORT_REVERSED, doc_ids_utf8)


# ------------------------------------------------------------ ranx typed dicts
@njit(cache=True)
def _typed_sizes(run_td, query_ids):
    out = np.zeros(len(query_ids), np.int64)
    for i in range(len(query_ids)):
        if query_ids[i] in run_td:
            out[i] = len(run_td[query_ids[i]])
    return out


@njit(cache=True)
def _typed_scores(run_td, query_ids, offsets, scores):
    """Scores in the Run's own order."""
    for i in range(len(query_ids)):
        if query_ids[i] in run_td:
            j = offsets[i]
            for s in run_td[query_ids[i]].values():
                scores[j] = s
                j += 1


@njit(cache=True)
def _typed_judgments(run_td, qrels_td, query_ids, offsets, scores, rel, judged):
    """Grades of the judged documents, found by looking each qrels document up in
    the run (J hash lookups per query, not n); string compares only on score matches."""
    for i in range(len(query_ids)):
        qid = query_ids[i]
        if qid not in run_td or qid not in qrels_td:
            continue
        docs = run_td[qid]
        lo = offsets[i]
        found_docs = TypedList.empty_list(nbtypes.unicode_type)
        found_scores = TypedList.empty_list(nbtypes.float64)
        found_grades = TypedList.empty_list(nbtypes.float64)
        for doc, grade in qrels_td[qid].items():
            name = str(doc)
            if name in docs:
                found_docs.append(name)
                found_scores.append(docs[name])
                found_grades.append(grade)
        if len(found_docs) == 0:
            continue
        by_score = np.argsort(np.asarray(found_scores))
        wanted = np.asarray(found_scores)[by_score]
        j = lo
        for doc in docs.keys():
            s = scores[j]
            w = np.searchsorted(wanted, s)
            if w < wanted.shape[0] and wanted[w] == s:  # a judged document has this score: which one?
                name = str(doc)
                while w < wanted.shape[0] and wanted[w] == s:
                    f = by_score[w]
                    if found_docs[f] == name:
                        rel[j] = found_grades[f]
                        judged[j] = True
                        break
                    w += 1
            j += 1


@njit(cache=True)
def _typed_qrels(qrels_td, query_ids):
    sizes = np.zeros(len(query_ids) + 1, np.int64)
    for i in range(len(query_ids)):
        if query_ids[i] in qrels_td:
            sizes[i + 1] = len(qrels_td[query_ids[i]])
    offsets = np.cumsum(sizes)
    grades = np.empty(offsets[-1], np.float64)
    for i in range(len(query_ids)):
        if query_ids[i] in qrels_td:
            j = offsets[i]
            for g in qrels_td[query_ids[i]].values():
                grades[j] = g
                j += 1
            grades[offsets[i]:offsets[i + 1]] = -np.sort(-grades[offsets[i]:offsets[i + 1]])
    return offsets, grades


@njit(cache=True)
def _typed_ids_utf8(run_td, query_ids, query_of, local_index):
    """NUL-terminated UTF-8 bytes of the requested documents (sorted by query, then local index)."""
    lengths = np.zeros(query_of.shape[0] + 1, np.int64)
    for fill in range(2):
        if fill == 1:
            offsets = np.cumsum(lengths)
            buf = np.empty(offsets[-1], np.uint8)
        r = 0
        while r < query_of.shape[0]:
            q = query_of[r]
            i = 0
            for doc in run_td[query_ids[q]].keys():
                if r < query_of.shape[0] and query_of[r] == q and local_index[r] == i:
                    n = 0
                    for ch in str(doc):
                        o = ord(ch)
                        k = 1 if o < 0x80 else 2 if o < 0x800 else 3 if o < 0x10000 else 4
                        if fill == 1:
                            at = offsets[r] + n
                            if k == 1:
                                buf[at] = o
                            else:
                                buf[at] = (0xF0, 0xE0, 0xC0)[4 - k] | (o >> (6 * (k - 1)))
                                for b in range(1, k):
                                    buf[at + b] = 0x80 | ((o >> (6 * (k - 1 - b))) & 0x3F)
                        n += k
                    if fill == 1:
                        buf[offsets[r] + n] = 0
                    else:
                        lengths[r + 1] = n + 1
                    r += 1
                i += 1
    return buf, offsets


def _typed_unicode_qrels(qrels: dict):
    """A Python qrels dict as a numba typed dict with unicode keys (small: qrels only)."""
    inner_type = nbtypes.DictType(nbtypes.unicode_type, nbtypes.float64)
    out = TypedDict.empty(nbtypes.unicode_type, inner_type)
    for qid, docs in qrels.items():
        inner = TypedDict.empty(nbtypes.unicode_type, nbtypes.float64)
        values = _float_array(list(docs.values()), "Relevance", qid, docs)
        for doc, grade in zip(docs, values.tolist()):
            inner[str(doc)] = grade
        out[str(qid)] = inner
    return out


def _typed_query_ids(query_ids: list):
    return TypedList(query_ids) if query_ids else TypedList.empty_list(nbtypes.unicode_type)


def _ranx_run_scores(run: RanxRun, typed_ids) -> tuple[np.ndarray, np.ndarray]:
    offsets = np.zeros(len(typed_ids) + 1, np.int64)
    np.cumsum(_typed_sizes(run.run, typed_ids), out=offsets[1:])
    scores = np.empty(offsets[-1])
    _typed_scores(run.run, typed_ids, offsets, scores)
    return offsets, scores


def _from_ranx_run(qrels, run: RanxRun, query_ids: list) -> RankedLists:
    typed_ids = _typed_query_ids(query_ids)
    qrels_td = qrels.qrels if isinstance(qrels, RanxQrels) else _typed_unicode_qrels(qrels)
    offsets, scores = _ranx_run_scores(run, typed_ids)
    rel = np.zeros(offsets[-1])
    judged = np.zeros(offsets[-1], np.bool_)
    _typed_judgments(run.run, qrels_td, typed_ids, offsets, scores, rel, judged)
    qrel_offsets, qrel_rel = _typed_qrels(qrels_td, typed_ids)

    def doc_ids_utf8(indices: np.ndarray):
        query_of = np.searchsorted(offsets, indices, side="right") - 1
        return _typed_ids_utf8(run.run, typed_ids, query_of, indices - offsets[query_of])

    ranx_order = None if run.sorted else RANX_ARGSORT_NEGATED
    return RankedLists(query_ids, offsets, scores, rel, judged, qrel_offsets, qrel_rel, ranx_order,
                       doc_ids_utf8)


# ------------------------------------------------------------------ assembling
def _query_ids(qrels, run, make_comparable: bool) -> list:
    run_ids = list(run.run.keys()) if isinstance(run, RanxRun) else list(run.keys())
    qrels_ids = list(qrels.qrels.keys()) if isinstance(qrels, RanxQrels) else list(qrels.keys())
    qrels_set = set(qrels_ids)
    run_set = set(run_ids)
    if make_comparable:
        return [q for q in run_ids if q in qrels_set] + [q for q in qrels_ids if q not in run_set]
    if qrels_set != run_set:
        parts = []
        missing = [q for q in qrels_ids if q not in run_set]
        extra = [q for q in run_ids if q not in qrels_set]
        if missing:
            parts.append(f"{len(missing)} in the qrels but not in the run (e.g. {missing[:5]})")
        if extra:
            parts.append(f"{len(extra)} in the run but not in the qrels (e.g. {extra[:5]})")
        raise InputError("Qrels and run query ids do not match: " + "; ".join(parts) +
                         ". Pass `make_comparable=True` to score queries missing from the run as empty "
                         "and drop those not in the qrels.")
    return run_ids


_CACHE: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def ranked_lists(qrels, run, make_comparable: bool = False) -> RankedLists:
    """Build (or fetch from the per-Run cache) the arrays for a qrels/run pair."""
    qrels = load_qrels(qrels)
    run = load_run(run)
    cacheable = isinstance(run, RanxRun) and isinstance(qrels, RanxQrels)
    if cacheable:
        key = (id(qrels), id(qrels.qrels), id(run.run), run.sorted, make_comparable)
        per_run = _CACHE.setdefault(run, {})
        hit = per_run.get(key)
        if hit is not None and hit[0]() is qrels:
            return hit[1]
    query_ids = _query_ids(qrels, run, make_comparable)
    if isinstance(run, RanxRun):
        lists = _from_ranx_run(qrels, run, query_ids)
    else:
        if isinstance(qrels, RanxQrels):
            qrels = qrels.to_dict()
        lists = _from_dicts(qrels, run, query_ids)
    if cacheable:
        per_run.clear()
        per_run[key] = (weakref.ref(qrels), lists)
    return lists


def run_scores(run) -> tuple[list, np.ndarray, np.ndarray]:
    """(query ids, CSR offsets, scores in the run's order) of a run alone."""
    run = load_run(run)
    if isinstance(run, RanxRun):
        query_ids = list(run.run.keys())
        offsets, scores = _ranx_run_scores(run, _typed_query_ids(query_ids))
        return query_ids, offsets, scores
    query_ids = list(run.keys())
    offsets = np.zeros(len(query_ids) + 1, np.int64)
    np.cumsum([len(run[q]) for q in query_ids], out=offsets[1:])
    values: list = []
    for qid in query_ids:
        values.extend(run[qid].values())
    try:
        scores = np.array(values, dtype=np.float64)
    except (TypeError, ValueError):
        for qid in query_ids:
            _float_array(list(run[qid].values()), "Run score", qid, run[qid])
        raise
    return query_ids, offsets, scores
