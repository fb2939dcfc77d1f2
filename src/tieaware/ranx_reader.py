"""Reading ranx ``Run``/``Qrels`` objects: jitted passes over their numba typed dicts.

ranx keeps a run as ``Dict[str, Dict[UnicodeCharSeq(W), float64]]`` (W: its
longest doc id) and qrels likewise with int64 grades. Calling into such dicts
from Python costs about 1 µs per lookup, so everything here runs in numba:

* `read_run`: one pass per query over its items, copying the scores and the
  ids' code points into per-query scratch, then `kernels.groups.query_groups`
  (shared with the reader of Python dicts) builds the judged groups. Ids are
  read as code points, never turned into strings (a typed-dict lookup by string
  costs ~0.5 µs); code point order is the order trec_eval's ``strcmp`` gives
  their UTF-8 bytes.
* `fingerprint`: a hash of every id and value, so a cached conversion is
  served only while the objects still hold the same data (ranx's ``add_score``
  and friends mutate the typed dicts in place); `read_run` returns the Run's
  on the way.

These functions compile once per doc-id width (numba specialises on the dict
types, as ranx's own kernels do); the group kernels they call take plain arrays
and compile once.
"""
from __future__ import annotations

import numpy as np
from numba import types
from numba.typed import List

from .kernels import kernel
from .kernels.groups import code_at, fold, id_hash, id_key, mix64, query_groups


@kernel
def run_sizes(run_td, query_ids):
    """(Q+1,) CSR offsets of the queries' inner dicts (0 for a query not in the dict); Run or Qrels."""
    offsets = np.zeros(len(query_ids) + 1, np.int64)
    for i in range(len(query_ids)):
        offsets[i + 1] = offsets[i]
        if query_ids[i] in run_td:
            offsets[i + 1] += len(run_td[query_ids[i]])
    return offsets


@kernel
def run_scores(run_td, query_ids, offsets):
    """Every value of a Run (scores) or Qrels (grades) for `query_ids`, in the dict's own order."""
    scores = np.empty(offsets[-1], np.float64)
    for i in range(len(query_ids)):
        if query_ids[i] in run_td:
            j = offsets[i]
            for s in run_td[query_ids[i]].values():
                scores[j] = s
                j += 1
    return scores


@kernel(inline="always")
def _item(key_hash, value, bits, as_int):
    """What the fingerprint folds in for one (id, value): `mix64` of the id's hash xor the value's
    float64 bits. Mixed, since round values (integer grades, 0.5) differ only in a few high bits:
    folded raw, two of them trading places could cancel out."""
    bits[0] = value
    return mix64(key_hash ^ as_int[0])


@kernel
def query_order(run_td, qrels_td, make_comparable):
    """The evaluated query ids, as `tieaware.ranked_lists` orders them: the Run's order; with
    ``make_comparable`` its queries that have qrels, then the qrels' queries it lacks."""
    out = List.empty_list(types.unicode_type)
    for k in run_td.keys():
        if not make_comparable or k in qrels_td:
            out.append(k)
    if make_comparable:
        for k in qrels_td.keys():
            if k not in run_td:
                out.append(k)
    return out


@kernel
def qrels_arrays(qrels_td, query_ids):
    """Judgments of `query_ids` (CSR offsets (Q+1,)), their ids as code points codes[lo:hi], and grades."""
    offsets = run_sizes(qrels_td, query_ids)
    n_codes = 0
    for i in range(len(query_ids)):
        if query_ids[i] in qrels_td:
            for key in qrels_td[query_ids[i]].keys():
                n_codes += len(key)
    codes = np.empty(n_codes, np.uint32)
    lo = np.empty(offsets[-1], np.int64)
    hi = np.empty(offsets[-1], np.int64)
    grades = np.empty(offsets[-1], np.float64)
    j = 0
    c = 0
    for i in range(len(query_ids)):
        if query_ids[i] in qrels_td:
            for key, grade in qrels_td[query_ids[i]].items():
                lo[j] = c
                for t in range(len(key)):
                    codes[c] = code_at(key, t)
                    c += 1
                hi[j] = c
                grades[j] = grade
                j += 1
    return offsets, codes, lo, hi, grades


@kernel
def read_run(run_td, query_ids, offsets, qrel_offsets, jcodes, j_lo, j_hi, j_grade, work, out, n_members, n_groups,
             first_nan, seed):
    """Fill the judged groups of every query (`kernels.groups.query_groups`, members written in query
    order from 0); returns the Run's `fingerprint` from `seed` when ``query_ids`` are its queries in
    its order."""
    longest = 1
    for i in range(len(query_ids)):
        longest = max(longest, offsets[i + 1] - offsets[i])
    scores = np.empty(longest, np.float64)
    id_lo = np.empty(longest, np.int64)
    id_hi = np.empty(longest, np.int64)
    doc_hash = np.empty(longest, np.uint64)
    doc_key = np.empty(longest, np.uint64)
    codes = np.empty(16 * longest, np.uint32)
    bits = np.empty(1, np.float64)
    as_int = bits.view(np.uint64)
    h = seed
    cursor = np.int64(0)  # typed, not a literal (`tieaware.kernels.INNER`): the stages compile once
    for q in range(len(query_ids)):
        qid = query_ids[q]
        n_members[q], n_groups[q], first_nan[q] = 0, 0, -1
        if qid not in run_td:
            continue
        docs = run_td[qid]
        h = fold(fold(h, id_hash(qid, 0, len(qid), seed)), np.uint64(len(docs)))
        j = 0
        c = 0
        for key, s in docs.items():
            n = len(key)
            if c + n > codes.shape[0]:
                grown = np.empty(2 * (c + n), np.uint32)
                for t in range(c):  # an element loop: a slice assignment costs seconds of compiling
                    grown[t] = codes[t]
                codes = grown
            for t in range(n):
                codes[c + t] = code_at(key, t)
            id_lo[j] = c
            c += n
            id_hi[j] = c
            scores[j] = s
            doc_hash[j] = id_hash(codes, id_lo[j], c, seed)
            doc_key[j] = id_key(codes, id_lo[j], c)
            h = fold(h, _item(doc_hash[j], s, bits, as_int))
            j += 1
        a, b = qrel_offsets[q], qrel_offsets[q + 1]
        members, groups, nan_at = query_groups(scores[:j], codes, id_lo[:j], id_hi[:j], doc_hash[:j], doc_key[:j],
                                               jcodes, j_lo[a:b], j_hi[a:b], j_grade[a:b], work, out, cursor, seed)
        n_members[q], n_groups[q], first_nan[q] = members, groups, nan_at
        cursor += members
    return h


@kernel
def fingerprint(td, seed):
    """A polynomial hash from `seed` folding in, in iteration order, every query id (`id_hash`) and
    its size, and each (id, value) (`_item`): any change of an id, a value or the order shows (but
    for a 64-bit hash's chance; ids cannot be built to collide without the seed). `read_run`
    returns the same hash of a Run read in its own order."""
    h = seed
    bits = np.empty(1, np.float64)
    as_int = bits.view(np.uint64)
    for qid, inner in td.items():
        h = fold(fold(h, id_hash(qid, 0, len(qid), seed)), np.uint64(len(inner)))
        for key, value in inner.items():
            h = fold(h, _item(id_hash(key, 0, len(key), seed), value, bits, as_int))
    return h


@kernel
def doc_id(run_td, qid, index):
    """The id of the index-th document of a query, for error messages."""
    i = 0
    for key in run_td[qid].keys():
        if i == index:
            return str(key)
        i += 1
    return ""
