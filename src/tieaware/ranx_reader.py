"""Reading ranx ``Run``/``Qrels`` objects: jitted passes over their numba typed dicts.

ranx keeps a run as ``Dict[str, Dict[UnicodeCharSeq(W), float64]]`` (W: its
longest doc id) and qrels likewise with int64 grades. Calling into such dicts
from Python costs about 1 µs per lookup, so everything here runs in numba, one
pass per query over its documents:

* `read_run`: every score in the Run's own order, and for each retrieved
  judged document its grade, its position, and its rank inside its set of
  equal scores in trec_eval's order (document id descending). Ids are read as
  UnicodeCharSeq code points, never turned into strings (a typed-dict lookup by
  string costs ~0.5 µs); code point order is the order trec_eval's ``strcmp``
  gives their UTF-8 bytes.
* `fingerprint`: a hash of every id and value, so a cached conversion is
  served only while the objects still hold the same data (ranx's ``add_score``
  and friends mutate the typed dicts in place); `read_run` returns the Run's
  on the way.

These functions compile once per doc-id width pair (numba specialises on the
dict types, as ranx's own kernels do); nothing else in tieaware depends on it.
"""
from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.cpython.charseq import unicode_charseq_get_code
from numba.cpython.unicode import _get_code_point
from numba.extending import overload
from numba.typed import List

_FNV_OFFSET = np.uint64(0xCBF29CE484222325)
_FNV_PRIME = np.uint64(0x100000001B3)
_FIBONACCI = np.uint64(0x9E3779B97F4A7C15)  # 2^64 / golden ratio: multiplicative hashing


def _code_at(text, index):
    """The code point at `index` of a unicode string or a UnicodeCharSeq (no copy)."""


@overload(_code_at)
def _code_at_impl(text, index):
    if isinstance(text, types.UnicodeCharSeq):
        return lambda text, index: unicode_charseq_get_code(text, index)
    if isinstance(text, types.UnicodeType):
        return lambda text, index: _get_code_point(text, index)
    return None


@njit(cache=True)
def run_sizes(run_td, query_ids):
    """(Q+1,) CSR offsets of the queries' inner dicts (0 for a query not in the dict); Run or Qrels."""
    offsets = np.zeros(len(query_ids) + 1, np.int64)
    for i in range(len(query_ids)):
        offsets[i + 1] = offsets[i]
        if query_ids[i] in run_td:
            offsets[i + 1] += len(run_td[query_ids[i]])
    return offsets


@njit(cache=True)
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


@njit(cache=True, inline="always")
def _mix(h, x):
    return (h ^ np.uint64(x)) * _FNV_PRIME


@njit(cache=True, inline="always")
def _id_hash(key):
    """FNV-1a over the id's code points (cheap: no string object is built)."""
    h = _FNV_OFFSET
    for c in range(len(key)):
        h = _mix(h, _code_at(key, c))
    return h


@njit(cache=True, inline="always")
def _float_bits(bits, as_int, value):
    bits[0] = value
    return as_int[0]


@njit(cache=True, inline="always")
def _id_digest(key):
    """(`_id_hash`, 8-code-point prefix, prefix_ok, whole) of an id in one pass over its code points.

    The prefix packs the first 8 code points big-endian, one byte each, zero-padded: when both
    ids' prefixes are ``prefix_ok`` (those code points < 256) and differ, they order the ids as
    strcmp does; when both ids are ``whole`` (prefix_ok and at most 8 code points) equal prefixes
    mean equal ids. Otherwise the ids themselves must be compared.
    """
    n = len(key)
    h = _FNV_OFFSET
    prefix = np.uint64(0)
    ok = True
    for c in range(n):
        code = _code_at(key, c)
        h = _mix(h, code)
        if c < 8:
            if code > 255:
                ok = False
            prefix = (prefix << np.uint64(8)) | np.uint64(code & 0xFF)
    if n < 8:
        prefix = prefix << np.uint64(8 * (8 - n))
    return h, prefix, ok, ok and n <= 8


@njit(cache=True)
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


@njit(cache=True)
def read_run(run_td, qrels_td, query_ids, offsets):
    """Scores and judged documents of every query, and the Run's fingerprint.

    Per query, the judged ids go into a small open-addressing table keyed by a
    code-point hash, and one pass over the Run's items writes the scores, finds
    the judged documents and keeps each id's 8-code-point prefix (`_id_digest`).
    Then, for each judged document, the documents with the same score and a
    greater id (trec_eval's tie order) are counted from the prefixes; only a
    query where two prefixes cannot decide goes over its ids a second time.

    Returns:
        scores (n,): in the Run's order.
        judged_pos (M,): global index of each retrieved judged document, increasing.
        judged_rel (M,): its grade.
        judged_trec_rank (M,): documents with the same score and a greater id.
        fingerprint: the Run's `fingerprint` when ``query_ids`` are its queries in its order.
    """
    scores = np.empty(offsets[-1], np.float64)
    capacity = 0
    longest = 0
    for i in range(len(query_ids)):
        longest = max(longest, offsets[i + 1] - offsets[i])
        if query_ids[i] in qrels_td and query_ids[i] in run_td:
            capacity += len(qrels_td[query_ids[i]])
    judged_pos = np.empty(capacity, np.int64)
    judged_rel = np.empty(capacity, np.float64)
    judged_trec_rank = np.empty(capacity, np.int64)
    prefix = np.empty(longest, np.uint64)  # per document of the current query
    prefix_ok = np.empty(longest, np.bool_)
    whole = np.empty(longest, np.bool_)
    n_judged = 0
    bits = np.empty(1, np.float64)
    as_int = bits.view(np.uint64)
    run_hash = _FNV_OFFSET
    for i in range(len(query_ids)):
        qid = query_ids[i]
        if qid not in run_td:
            continue
        docs = run_td[qid]
        lo = offsets[i]
        if qid not in qrels_td or len(qrels_td[qid]) == 0:
            run_hash = _mix_query(run_hash, qid, docs, bits, as_int)
            j = lo
            for s in docs.values():
                scores[j] = s
                j += 1
            continue
        run_hash = _mix(_mix(run_hash, _id_hash(qid)), len(docs))
        judgments = qrels_td[qid]
        n_keys = len(judgments)
        key_codes, key_length = _key_codes(judgments)
        key_rel = np.empty(n_keys, np.float64)
        key_hash = np.empty(n_keys, np.uint64)
        bits_used = 2
        while (1 << bits_used) < 2 * n_keys:
            bits_used += 1
        size = 1 << bits_used
        shift = np.uint64(64 - bits_used)
        table = np.full(size, -1, np.int64)
        a = 0
        for key, grade in judgments.items():
            key_rel[a] = grade
            h = _id_hash(key)
            key_hash[a] = h
            slot = np.int64((h * _FIBONACCI) >> shift)  # high bits: FNV's low bits cluster
            while table[slot] >= 0:
                slot = (slot + 1) & (size - 1)
            table[slot] = a
            a += 1
        key_pos = np.full(n_keys, -1, np.int64)
        j = 0
        for doc, s in docs.items():
            scores[lo + j] = s
            h, prefix[j], prefix_ok[j], whole[j] = _id_digest(doc)
            run_hash = _mix(_mix(run_hash, h), _float_bits(bits, as_int, s))
            slot = np.int64((h * _FIBONACCI) >> shift)  # high bits: FNV's low bits cluster
            while table[slot] >= 0:
                row = table[slot]
                if key_hash[row] == h and _compare_id(doc, len(doc), key_codes, row, key_length[row]) == 0:
                    key_pos[row] = lo + j
                    break
                slot = (slot + 1) & (size - 1)
            j += 1
        found = np.flatnonzero(key_pos >= 0)
        if found.size == 0:
            continue
        found = found[np.argsort(key_pos[found])]  # by position in the Run
        found_local = key_pos[found] - lo
        found_score = scores[key_pos[found]]
        by_score = np.argsort(found_score, kind="mergesort")
        wanted = found_score[by_score]
        found_trec = np.zeros(found.size, np.int64)
        undecided = False
        for j in range(len(docs)):
            s = scores[lo + j]
            w = np.searchsorted(wanted, s)
            while w < wanted.size and wanted[w] == s:  # a judged document has this score: compare ids
                f = by_score[w]
                m = found_local[f]
                if m != j:
                    if prefix_ok[j] and prefix_ok[m] and prefix[j] != prefix[m]:
                        if prefix[j] > prefix[m]:
                            found_trec[f] += 1
                    elif not (whole[j] and whole[m]):
                        undecided = True
                w += 1
        if undecided:  # ids sharing 8 code points, or beyond byte range: compare them whole
            found_trec[:] = 0
            j = lo
            for doc in docs.keys():
                s = scores[j]
                w = np.searchsorted(wanted, s)
                n = len(doc) if w < wanted.size and wanted[w] == s else 0
                while w < wanted.size and wanted[w] == s:
                    f = by_score[w]
                    row = found[f]
                    if key_pos[row] != j and _compare_id(doc, n, key_codes, row, key_length[row]) > 0:
                        found_trec[f] += 1
                    w += 1
                j += 1
        for f in range(found.size):
            judged_pos[n_judged] = key_pos[found[f]]
            judged_rel[n_judged] = key_rel[found[f]]
            judged_trec_rank[n_judged] = found_trec[f]
            n_judged += 1
    return scores, judged_pos[:n_judged], judged_rel[:n_judged], judged_trec_rank[:n_judged], run_hash


@njit(cache=True)
def _key_codes(judgments):
    """Code points of a query's judged ids, one row each, and their lengths."""
    lengths = np.empty(len(judgments), np.int64)
    a = 0
    for key in judgments.keys():
        lengths[a] = len(key)
        a += 1
    codes = np.zeros((len(judgments), lengths.max() if a else 0), np.uint32)
    a = 0
    for key in judgments.keys():
        for c in range(lengths[a]):
            codes[a, c] = _code_at(key, c)
        a += 1
    return codes, lengths


@njit(cache=True, inline="always")
def _compare_id(doc, n, codes, row, length):
    """-1, 0 or 1 as the id `doc` (n code points) sorts before, equal to or after row
    `row` of `codes` (code point order: the order of the ids' UTF-8 bytes under strcmp)."""
    for c in range(min(n, length)):
        a = _code_at(doc, c)
        b = codes[row, c]
        if a != b:
            return 1 if a > b else -1
    return (n > length) - (n < length)


@njit(cache=True)
def qrels_grades(qrels_td, query_ids):
    """(Q+1,) CSR offsets and each query's grades, sorted descending."""
    offsets = run_sizes(qrels_td, query_ids)
    grades = run_scores(qrels_td, query_ids, offsets)
    for i in range(len(query_ids)):
        grades[offsets[i]:offsets[i + 1]] = -np.sort(-grades[offsets[i]:offsets[i + 1]])
    return offsets, grades


@njit(cache=True, inline="always")
def _mix_query(h, qid, inner, bits, as_int):
    h = _mix(_mix(h, _id_hash(qid)), len(inner))
    for key, value in inner.items():
        h = _mix(_mix(h, _id_hash(key)), _float_bits(bits, as_int, value))
    return h


@njit(cache=True)
def fingerprint(td):
    """FNV-1a over every (query id, size) and each (id, value) in iteration order, ids
    through `_id_hash` and values through their float64 bits: any change of an id, a value
    or the order shows. `read_run` returns the same hash of a Run read in its own order."""
    h = _FNV_OFFSET
    bits = np.empty(1, np.float64)
    as_int = bits.view(np.uint64)
    for qid, inner in td.items():
        h = _mix_query(h, qid, inner, bits, as_int)
    return h


@njit(cache=True)
def doc_id(run_td, qid, index):
    """The id of the index-th document of a query, for error messages."""
    i = 0
    for key in run_td[qid].keys():
        if i == index:
            return str(key)
        i += 1
    return ""
