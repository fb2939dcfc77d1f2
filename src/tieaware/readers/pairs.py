"""A qrels/run pair as `RankedLists`: the reader for each input kind, and the cache per ranx Run.

Python dicts, files and DataFrames are read by `readers.dicts` (after `readers.load` loads and
checks them), ranx objects by `readers.ranx` (imported, with numba, when one is given). For ranx
objects the result is cached on the ``Run`` (weakly, never stored in it), so evaluating several
metrics in several calls converts once.
"""
from __future__ import annotations

import os
import weakref

import numpy as np

from ..errors import QueryMismatchError
from ..kernels.groups import SEED
from ..kernels.tiebreak import RANX_ARGSORT_NEGATED, RANX_ARGSORT_REVERSED
from .dict_arrays import float_values
from .dicts import from_dicts
from .kinds import is_dataframe, is_ranx_qrels, is_ranx_run
from .lists import RankedLists
from .load import load_qrels, load_run


def evaluated_queries(qrels, run_ids: list, make_comparable: bool) -> list:
    """The evaluated queries: the run's (`run_ids`, in its order); with ``make_comparable`` those
    with qrels, then the qrels' queries the run lacks. A mismatch otherwise raises."""
    if is_ranx_qrels(qrels):
        from .typed_dicts import queries

        qrels_ids = queries(qrels.qrels)[0]
    else:
        qrels_ids = list(qrels.keys())
    qrels_set = set(qrels_ids)
    run_set = set(run_ids)
    if make_comparable:
        return [q for q in run_ids if q in qrels_set] + [q for q in qrels_ids if q not in run_set]
    if qrels_set != run_set:
        raise QueryMismatchError([q for q in qrels_ids if q not in run_set], [q for q in run_ids if q not in qrels_set])
    return run_ids


def _read_ranx_run(qrels, run, make_comparable: bool) -> RankedLists:
    from . import typed_dicts
    from .ranx import from_ranx_run

    run_ids, typed_ids, offsets = typed_dicts.queries(run.run)  # read in numba, once
    return from_ranx_run(qrels, run, evaluated_queries(qrels, run_ids, make_comparable), make_comparable,
                         (typed_ids, offsets))


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
        from_file = isinstance(run, (str, os.PathLike)) or is_dataframe(run)
    qrels = load_qrels(qrels, doc_ids=False)  # the dict readers check doc ids on their way (`string_keys`)
    run = load_run(run, doc_ids=False)
    cacheable = is_ranx_run(run) and is_ranx_qrels(qrels)
    if is_ranx_run(run) or is_ranx_qrels(qrels):
        from . import typed_dicts
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
        lists = from_dicts(qrels, run, evaluated_queries(qrels, list(run.keys()), make_comparable),
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
        from . import typed_dicts

        query_ids, typed_ids, offsets = typed_dicts.queries(run.run)
        return query_ids, offsets, typed_dicts.run_scores(run.run, typed_ids, offsets)
    query_ids = list(run.keys())
    offsets = np.zeros(len(query_ids) + 1, np.int64)
    per_query = [run[q] for q in query_ids]
    np.cumsum([len(docs) for docs in per_query], out=offsets[1:])
    return query_ids, offsets, float_values("Run score", query_ids, per_query, int(offsets[-1]), finite=False)
