"""A qrels/run pair as `RankedLists`: the reader for each input kind, and the cache per ranx Run.

Python dicts, files and DataFrames are read by `readers.dicts` (after `readers.load` loads and
checks them); ranx objects are copied into flat arrays (`readers.typed_dicts`, imported, with
numba, when one is given), a Qrels read then as `judgments.QrelsColumns`, a Run by `readers.ranx`.
For ranx objects the result is cached on the ``Run`` (weakly, never stored in it), so evaluating
several metrics in several calls groups once.
"""
from __future__ import annotations

import os
import weakref

import numpy as np

from ..errors import QueryMismatchError
from ..kernels.tiebreak import RANX_ARGSORT_NEGATED, RANX_ARGSORT_REVERSED
from .dict_arrays import float_values
from .dicts import from_dicts
from .judgments import judgment_chunk, ranx_qrels_columns
from .kinds import is_dataframe, is_ranx_qrels, is_ranx_run
from .lists import RankedLists
from .load import load_qrels, load_run
from .ranx import from_ranx_copy


def evaluated_queries(qrels, run_ids: list, make_comparable: bool) -> list:
    """The evaluated queries: the run's (`run_ids`, in its order); with ``make_comparable`` those
    with qrels, then the qrels' queries the run lacks. A mismatch otherwise raises."""
    qrels_ids = list(qrels.keys())
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

    ranx objects are copied first (`typed_dicts.copied_items`, each in one kernel, so as it is at one
    moment). For a ranx ``Qrels``/``Run`` pair the result is cached per ``Run`` (weakly, never stored
    in it) and served again only while both objects hold the query ids, doc ids, scores and grades
    they were copied with, in the same order (`typed_dicts.fingerprint`, one pass without a copy),
    since ranx's ``add_score`` and similar methods change them in place.
    """
    if from_file is None:
        from_file = isinstance(run, (str, os.PathLike)) or is_dataframe(run)
    qrels = load_qrels(qrels, doc_ids=False)  # the dict readers check doc ids on their way (`string_keys`)
    run = load_run(run, doc_ids=False)
    qrels_items = run_items = None
    if is_ranx_qrels(qrels) and is_ranx_run(run):
        from . import typed_dicts

        key = (id(qrels), run.sorted, make_comparable)
        per_run = _CACHE.setdefault(run, {})
        hit = per_run.get(key)
        if hit is not None and hit[0]() is qrels and \
                hit[1] == (typed_dicts.fingerprint(qrels.qrels), typed_dicts.fingerprint(run.run)):
            return hit[2]
    if is_ranx_qrels(qrels) or is_ranx_run(run):
        from .typed_dicts import copied_items

        qrels_items = copied_items(qrels.qrels) if is_ranx_qrels(qrels) else None
        run_items = copied_items(run.run) if is_ranx_run(run) else None
    judged = ranx_qrels_columns(qrels_items) if qrels_items is not None else qrels
    if run_items is None:
        return from_dicts(judged, run, evaluated_queries(judged, list(run.keys()), make_comparable),
                          RANX_ARGSORT_NEGATED if from_file else RANX_ARGSORT_REVERSED)
    query_ids = evaluated_queries(judged, run_items.query_ids, make_comparable)
    lists = from_ranx_copy(judgment_chunk(judged, query_ids), run_items, query_ids,
                           None if run.sorted else RANX_ARGSORT_NEGATED)
    if qrels_items is not None:  # and the run's: cacheable, keyed by the contents as copied
        per_run.clear()
        per_run[key] = (weakref.ref(qrels), (qrels_items.fingerprint, run_items.fingerprint), lists)
    return lists


def run_scores(run) -> tuple[list, np.ndarray, np.ndarray]:
    """(query ids, CSR offsets, scores in the run's order) of a run alone."""
    run = load_run(run)
    if is_ranx_run(run):
        from .typed_dicts import copied_items

        items = copied_items(run.run)
        return items.query_ids, items.offsets, items.values
    query_ids = list(run.keys())
    offsets = np.zeros(len(query_ids) + 1, np.int64)
    per_query = [run[q] for q in query_ids]
    np.cumsum([len(docs) for docs in per_query], out=offsets[1:])
    return query_ids, offsets, float_values("Run score", query_ids, per_query, int(offsets[-1]), finite=False)
