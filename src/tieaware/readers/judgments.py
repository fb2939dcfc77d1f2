"""The judgments of the evaluated queries, from a qrels dict or columns (read from a TREC qrels file
or copied from a ranx Qrels), as the group kernels read them."""
from __future__ import annotations

from collections.abc import Iterator, Mapping
from functools import cached_property
from typing import NamedTuple

import numpy as np

from ..errors import InputError
from ..kernels.groups import argsort_segments
from .dict_arrays import float_values, string_id_codes


def best_first(offsets: np.ndarray, lo: np.ndarray, hi: np.ndarray, grades: np.ndarray) -> tuple:
    """Each query's judgments (CSR by offsets: id bounds lo, hi and grades) reordered by grade,
    descending. The group kernels find judged ids through a hash table, in any order; the grades
    then come out of the read in the order R, N and the ideal DCG read them."""
    order = argsort_segments(np.negative(grades, dtype=np.float64), offsets)  # float keys: one compiled sort
    return lo[order], hi[order], grades[order]


class JudgmentChunk(NamedTuple):
    """The judgments of a range of queries as the group kernels read them: CSR offsets from 0, the ids
    as code points codes[lo:hi] (`id_codes`) and the grades, each query's `best_first`."""

    offsets: np.ndarray
    codes: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    grades: np.ndarray


class Judgments:
    """The judgments of `query_ids` in `QrelsColumns` or a qrels dict, read by ranges of queries.

    Columns are gathered all at once (`QrelsColumns.for_queries`); a qrels dict range by range beside a
    dict run's chunks (`chunk`), so the reader's worker thread starts on the first chunk at once, and
    each range's grades are sorted while the worker groups the chunk before."""

    def __init__(self, qrels, query_ids: list):
        self.query_ids = query_ids
        if isinstance(qrels, QrelsColumns):
            offsets, *gathered = qrels.for_queries(query_ids)
            self._gathered: list | None = gathered
        else:
            self._gathered = None
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
        if self._gathered is not None:
            codes, lo, hi, grades = self._gathered
            return JudgmentChunk(local, codes, lo[a:b], hi[a:b], grades[a:b])  # best-first already
        ids, per_query = self.query_ids[first:last], self._per_query[first:last]
        codes, lo, hi = string_id_codes("qrels", ids, per_query, b - a)
        unsorted = float_values("Relevance", ids, per_query, b - a, finite=True)
        return JudgmentChunk(local, codes, *best_first(local, lo, hi, unsorted))


class QrelsColumns(Mapping):
    """Qrels held as columns, as a TREC qrels file's reader (and `ranx_qrels_columns`) gives them: query
    ``query_ids[k]`` holds the judgments ``offsets[k]:offsets[k + 1]``, judgment i of document
    ``codes[lo[i]:hi[i]]`` (Unicode code points, read-only) with grade ``grades[i]`` (given best first
    within each query, as `best_first` orders them), its documents distinct. `for_queries` gathers the
    judgments of a run's queries for the group kernels without a Python object per judgment; as a read-only mapping
    ``{qid: {docid: grade}}`` (ids in the file's order of first appearance, each query's documents best
    first) it also serves the readers of dicts."""

    def __init__(self, query_ids: list, offsets: np.ndarray, codes: np.ndarray, lo: np.ndarray, hi: np.ndarray,
                 grades: np.ndarray):
        self.query_ids = query_ids
        self._row = {qid: k for k, qid in enumerate(query_ids)}
        self.offsets = offsets
        self.codes = codes
        self.codes.setflags(write=False)  # as the dict reader's: read_chunk compiles for one layout
        self.lo, self.hi, self.grades = lo, hi, grades

    def for_queries(self, query_ids: list) -> JudgmentChunk:
        """The judgments of `query_ids` (each a query of these qrels), in that order."""
        rows = np.fromiter((self._row[q] for q in query_ids), np.int64, len(query_ids))
        counts = self.offsets[rows + 1] - self.offsets[rows]
        local = np.zeros(len(query_ids) + 1, np.int64)
        np.cumsum(counts, out=local[1:])
        picked = np.repeat(self.offsets[rows] - local[:-1], counts) + np.arange(int(local[-1]))
        return JudgmentChunk(local, self.codes, self.lo[picked], self.hi[picked],
                             self.grades[picked].astype(np.float64))  # the kernels' gains

    def __getitem__(self, qid) -> dict:
        k = self._row[qid]
        a, b = int(self.offsets[k]), int(self.offsets[k + 1])
        return {self._text[lo:hi]: grade for lo, hi, grade in
                zip(self.lo[a:b].tolist(), self.hi[a:b].tolist(), self.grades[a:b].tolist())}

    def to_dict(self) -> dict:
        """``{qid: {docid: grade}}``, new dicts."""
        return {qid: self[qid] for qid in self.query_ids}

    @cached_property
    def _text(self) -> str:
        return self.codes.tobytes().decode("utf-32-le")

    def __contains__(self, qid) -> bool:
        return qid in self._row

    def __iter__(self) -> Iterator:
        return iter(self.query_ids)

    def __len__(self) -> int:
        return len(self.query_ids)


def judgment_chunk(qrels, query_ids: list) -> JudgmentChunk:
    """The judgments of `query_ids` (each a query of `qrels`: `QrelsColumns` or a qrels dict), in that
    order, as the group kernels read them."""
    if isinstance(qrels, QrelsColumns):
        return qrels.for_queries(query_ids)
    return Judgments(qrels, query_ids).chunk(0, len(query_ids))


def ranx_qrels_columns(items) -> QrelsColumns:
    """A ranx Qrels' copy (`typed_dicts.TypedDictCopy`) as `QrelsColumns`, each query's judgments best
    first; a grade that is not finite (a typed dict put in a Qrels by hand can hold one) is named."""
    bad = np.flatnonzero(~np.isfinite(items.values))
    if bad.size:
        i = int(bad[0])
        query = items.query_ids[int(np.searchsorted(items.offsets, i, side="right")) - 1]
        problem = "is NaN" if np.isnan(items.values[i]) else f"is {items.values[i]}; grades must be finite"
        raise InputError(f"Relevance for query {query!r}, document {items.doc_id(i)!r} {problem}.")
    return QrelsColumns(items.query_ids, items.offsets, items.codes,
                        *best_first(items.offsets, items.id_lo, items.id_hi, items.values))
