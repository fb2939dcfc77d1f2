"""The judgments of the evaluated queries, from a ranx Qrels or a qrels dict, as the group kernels read them."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..kernels.groups import argsort_segments
from .dict_arrays import float_values, name_bad_value, string_id_codes
from .kinds import is_ranx_qrels


def _check_ranx_grades(qrels, query_ids: list, grades: np.ndarray) -> None:
    """Name the first unusable grade (NaN, +/-inf) of `query_ids` in a ranx Qrels, if `grades` hold one
    (ranx builds int64 grades; a typed dict of floats put in a Qrels by hand can hold them)."""
    if not np.isfinite(grades).all():
        name_bad_value("Relevance", query_ids, [dict(qrels.qrels[q]) if q in qrels.qrels else {} for q in query_ids],
                       finite=True)


def _ranx_judgments(qrels, query_ids: list) -> tuple:
    """(offsets, codes, lo, hi, grades) of `query_ids`' judgments in a ranx Qrels, read in numba (ids as
    `id_codes`); unusable grades are named."""
    from . import typed_dicts  # numba's typed-dict kernels: imported when a ranx Qrels is given

    offsets, codes, lo, hi, grades = typed_dicts.qrels_arrays(qrels.qrels, typed_dicts.typed(query_ids))
    codes.setflags(write=False)  # as the dict reader's: read_chunk compiles for one layout of its arguments
    _check_ranx_grades(qrels, query_ids, grades)
    return offsets, codes, lo, hi, grades


def best_first(offsets: np.ndarray, lo: np.ndarray, hi: np.ndarray, grades: np.ndarray) -> tuple:
    """Each query's judgments (CSR by offsets: id bounds lo, hi and grades) reordered by grade,
    descending. The group kernels find judged ids through a hash table, in any order; the grades
    then come out of the read in the order R, N and the ideal DCG read them."""
    order = argsort_segments(-grades, offsets)
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
            codes, lo, hi = string_id_codes("qrels", ids, per_query, b - a)
            unsorted = float_values("Relevance", ids, per_query, b - a, finite=True)
        return JudgmentChunk(local, codes, *best_first(local, lo, hi, unsorted))
