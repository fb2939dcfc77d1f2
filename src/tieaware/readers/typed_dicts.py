"""Reading ranx ``Run``/``Qrels`` objects: jitted passes over their numba typed dicts.

ranx keeps a run as ``Dict[str, Dict[UnicodeCharSeq(W), float64]]`` (W: its
longest doc id) and qrels likewise with int64 grades. Calling into such dicts
from Python costs a call into numba per lookup, so every pass over them runs in numba:

* `run_chunk`: one pass over the items of a chunk of queries, copying the
  scores and the ids' code points into flat arrays; `kernels.groups.group_chunk`
  then hashes the copy and builds its judged groups with `kernels.groups.query_groups`
  (shared with the reader of Python dicts), the judgments read before by
  `qrels_arrays`. Ids are read as code points, never turned into strings (a
  typed-dict lookup by string builds a numba string); code point order is the order
  trec_eval's ``strcmp`` gives their UTF-8 bytes.
* `queries` and `typed`: query ids between Python and numba. A typed dict or
  list is never iterated, sized or built from Python (but to name a bad value
  in an error message): numba compiles those methods at run time, per dict type
  and uncached (compiled again per dict type in every new process); ids cross as
  code points (`key_codes`, `typed_keys`).
* `fingerprint`: a hash of every id and value, so a cached conversion is
  served only while the objects still hold the same data (ranx's ``add_score``
  and friends mutate the typed dicts in place); `kernels.groups.group_chunk` returns
  its parts for the Run on the way.

No kernel that reads a typed dict releases the GIL: a typed dict read without
it could be changed meanwhile by Python code on another thread
(``Run.add_score``), and numba's dicts free their storage when they grow, which
aborted the process. Holding it, a kernel sees the dict as it is between two
Python steps; a dict changed between two kernels (sizes read by `run_sizes`,
items by `run_chunk` or `run_scores`) is noticed by comparing sizes, and the
readers report it (`changed`) instead of writing past arrays sized before;
`tieaware.readers.pairs` then reads a `frozen` copy. So the GIL-holding part is
a plain copy: `kernels.groups.group_chunk` works on it without the GIL, on worker
threads, while the next chunk is copied; each chunk hashes from 0 and `joined` combines the
parts into the hash one pass (`fingerprint`) gives. The typed-dict readers compile once per
doc-id width (numba specialises on the dict types, as ranx's own kernels do);
`kernels.groups.group_chunk` and the group kernels take plain arrays and ship compiled
(`tieaware.kernels.ahead_of_time`).
"""
from __future__ import annotations

import copy

import numpy as np
from numba import types
from numba.extending import overload
from numba.typed import List

from ..errors import InputError
from ..kernels import kernel
from ..kernels.groups import ODD, code_at, fold, hashed_item, id_hash
from ..kernels.numba_compat import (
    PY_UNICODE_1BYTE_KIND,
    PY_UNICODE_2BYTE_KIND,
    PY_UNICODE_4BYTE_KIND,
    empty_string,
    set_code_point,
)


class ChangedWhileReadError(InputError):
    """A ranx Run or Qrels changed while tieaware read it: Python code on another thread changed it
    (``add_score``, ``add``) during the evaluation. `tieaware.readers.pairs` then reads a `frozen` copy."""

    def __init__(self):
        super().__init__("The ranx Run or Qrels changed while tieaware read it: another thread changed it "
                         "during the evaluation. Evaluate a copy, or wait for the changes to finish.")


@kernel
def run_sizes(run_td, query_ids):
    """(Q+1,) CSR offsets of the queries' inner dicts (0 for a query not in the dict); Run or Qrels."""
    offsets = np.zeros(len(query_ids) + 1, np.int64)
    for i in range(len(query_ids)):
        offsets[i + 1] = offsets[i]
        if query_ids[i] in run_td:
            offsets[i + 1] += len(run_td[query_ids[i]])
    return offsets


@kernel(inline="always")
def changed(td, qid, size):
    """True when query `qid` of `td` no longer holds the `size` items read before (absent: 0)."""
    return len(td[qid]) != size if qid in td else size != 0


@kernel
def _scores(run_td, query_ids, offsets):
    """(every value of `query_ids` in the dict's order, False), or (an empty array, True) when the
    dict no longer has the sizes `offsets` were read from (`changed`)."""
    scores = np.empty(offsets[-1], np.float64)
    for i in range(len(query_ids)):
        if changed(run_td, query_ids[i], offsets[i + 1] - offsets[i]):
            return scores[:0], True
        if offsets[i + 1] > offsets[i]:
            j = offsets[i]
            for s in run_td[query_ids[i]].values():
                scores[j] = s
                j += 1
    return scores, False


def run_scores(run_td, query_ids, offsets) -> np.ndarray:
    """Every value of a Run (scores) or Qrels (grades) for `query_ids`, in the dict's own order; an
    `InputError` when the dict changed since `offsets` were read (another thread changing the Run)."""
    scores, was_changed = _scores(run_td, query_ids, offsets)
    if was_changed:
        raise ChangedWhileReadError()
    return scores


@kernel(inline="always")
def _appended(codes, used, key):
    """`codes` with `key`'s code points written after the first `used`: itself, or a copy twice the
    size needed when it has no room."""
    n = len(key)
    if used + n > codes.shape[0]:
        grown = np.empty(2 * (used + n), np.uint32)
        for t in range(used):  # an element loop: a slice assignment costs seconds of compiling
            grown[t] = codes[t]
        codes = grown
    for t in range(n):
        codes[used + t] = code_at(key, t)
    return codes


@kernel
def keys_and_sizes(td):
    """The keys of a Run's or Qrels' dict in its order, and CSR offsets (Q+1,) of their inner dicts."""
    keys = List.empty_list(types.unicode_type)
    offsets = np.zeros(len(td) + 1, np.int64)
    for key, inner in td.items():
        offsets[len(keys) + 1] = offsets[len(keys)] + len(inner)
        keys.append(key)
    return keys, offsets


@kernel
def key_codes(keys):
    """The code points of a typed list of str laid end to end, and where each one ends."""
    ends = np.empty(len(keys), np.int64)
    total = 0
    for i in range(len(keys)):
        total += len(keys[i])
        ends[i] = total
    codes = np.empty(total, np.uint32)
    c = 0
    for i in range(len(keys)):
        key = keys[i]
        for t in range(len(key)):
            codes[c] = code_at(key, t)
            c += 1
    return codes, ends


@kernel
def typed_keys(codes, ends):
    """The typed list of str whose code points `key_codes` gives. Each str gets the narrowest kind
    that holds its code points, as CPython's do: numba hashes a str's raw data, so only then does
    it find the key in a typed dict."""
    keys = List.empty_list(types.unicode_type)
    start = 0
    for i in range(ends.shape[0]):
        widest = 0
        for c in range(start, ends[i]):
            widest = max(widest, codes[c])
        if widest < 256:
            kind = PY_UNICODE_1BYTE_KIND
        elif widest < 65536:
            kind = PY_UNICODE_2BYTE_KIND
        else:
            kind = PY_UNICODE_4BYTE_KIND
        key = empty_string(kind, ends[i] - start, 1 if widest < 128 else 0)
        for c in range(start, ends[i]):
            set_code_point(key, c - start, codes[c])
        keys.append(key)
        start = ends[i]
    return keys


@kernel
def _copied(td):
    """A copy of a Run's or Qrels' typed dict, inner dicts too, taken in one kernel (holding the GIL)."""
    out = td.copy()
    for key, inner in td.items():
        out[key] = inner.copy()
    return out


def frozen(obj):
    """A copy of a ranx Run or Qrels over a copy of its typed dict taken at one moment (`_copied`),
    which no other thread changes; for a Run another thread kept changing between two kernels."""
    out = copy.copy(obj)
    if hasattr(obj, "run"):
        out.run = _copied(obj.run)
    else:
        out.qrels = _copied(obj.qrels)
    return out


def queries(td) -> tuple[list, List, np.ndarray]:
    """(the keys of a Run's or Qrels' dict as Python str, the same as a typed list, CSR offsets
    (Q+1,) of their inner dicts), in the dict's order."""
    keys, offsets = keys_and_sizes(td)
    codes, ends = key_codes(keys)
    text = codes.tobytes().decode("utf-32-le", "surrogatepass")
    starts = np.zeros_like(ends)
    starts[1:] = ends[:-1]
    return [text[a:b] for a, b in zip(starts.tolist(), ends.tolist())], keys, offsets


def typed(ids: list) -> List:
    """Python str ids as a numba typed list (built in numba: `typed_keys`)."""
    codes = np.frombuffer("".join(ids).encode("utf-32-le", "surrogatepass"), np.uint32)
    return typed_keys(codes, np.cumsum(np.fromiter(map(len, ids), np.int64, len(ids))))


@kernel
def qrels_arrays(qrels_td, query_ids):
    """Judgments of `query_ids` (CSR offsets (Q+1,)), their ids as code points codes[lo:hi], and grades;
    one pass over the judgments (the code point array grows when ids are longer than 8 on average).
    For a Qrels beside a Run or a run of Python dicts: one kernel, so a Qrels is read as it is at one moment."""
    offsets = run_sizes(qrels_td, query_ids)
    codes = np.empty(8 * offsets[-1] + 16, np.uint32)
    lo = np.empty(offsets[-1], np.int64)
    hi = np.empty(offsets[-1], np.int64)
    grades = np.empty(offsets[-1], np.float64)
    j = 0
    c = 0
    for i in range(len(query_ids)):
        if offsets[i + 1] == offsets[i]:
            continue
        for key, grade in qrels_td[query_ids[i]].items():
            lo[j] = c
            codes = _appended(codes, c, key)
            c += len(key)
            hi[j] = c
            grades[j] = grade
            j += 1
    return offsets, codes[:c], lo, hi, grades


def id_width(td):
    """The most code points a doc id of a Run's or Qrels' typed dict holds (its UnicodeCharSeq
    width), or 0 when its ids are str of any length."""


@overload(id_width)
def _id_width_impl(td):
    key = td.value_type.key_type
    width = key.count if isinstance(key, types.UnicodeCharSeq) else 0
    return lambda td: width


@kernel
def run_chunk(run_td, query_ids, q_lo, q_hi, offsets, seed):
    """A copy of queries q_lo..q_hi-1 of a Run's typed dict, for `kernels.groups.group_chunk`: (scores, codes, id_lo,
    id_hi) per document in the dict's order, id i being codes[id_lo[i]:id_hi[i]]; per query
    whether the dict holds it and its id's `id_hash`; and whether the dict no longer has the sizes
    `offsets` were read from (then it stops there: `changed`). A plain pass holding the GIL (see
    above): the hashing and grouping run on the copy without it. The codes get room for every id
    at its type's width (`id_width`; pages never written cost no memory), so the loop never grows
    them (half its time with `_appended`'s check)."""
    n = offsets[q_hi] - offsets[q_lo]
    width = id_width(run_td)
    scores = np.empty(n, np.float64)
    id_lo = np.empty(n, np.int64)
    id_hi = np.empty(n, np.int64)
    codes = np.empty(width * n if width > 0 else 8 * n + 16, np.uint32)
    present = np.zeros(q_hi - q_lo, np.bool_)
    qid_hash = np.zeros(q_hi - q_lo, np.uint64)
    j = 0
    c = 0
    for q in range(q_lo, q_hi):
        qid = query_ids[q]
        if changed(run_td, qid, offsets[q + 1] - offsets[q]):
            return scores, codes[:c], id_lo, id_hi, present, qid_hash, True
        if qid not in run_td:
            continue
        present[q - q_lo] = True
        qid_hash[q - q_lo] = id_hash(qid, 0, len(qid), seed)
        for key, s in run_td[qid].items():
            if width > 0:
                for t in range(len(key)):
                    codes[c + t] = code_at(key, t)
            else:
                codes = _appended(codes, c, key)
            id_lo[j] = c
            c += len(key)
            id_hi[j] = c
            scores[j] = s
            j += 1
    return scores, codes[:c], id_lo, id_hi, present, qid_hash, False


@kernel
def _hashed_items(td, seed):
    """`fingerprint` from 0 of every query of `td` in its order: (hash, values folded), in one pass."""
    h = np.uint64(0)
    folded = 0
    bits = np.empty(1, np.float64)
    as_int = bits.view(np.uint64)
    for qid, inner in td.items():
        h = fold(fold(h, id_hash(qid, 0, len(qid), seed)), np.uint64(len(inner)))
        folded += 2 + len(inner)
        for key, value in inner.items():
            h = fold(h, hashed_item(id_hash(key, 0, len(key), seed), value, bits, as_int))
    return h, folded


def joined(seed, parts) -> int:
    """The fingerprint from `seed` of parts computed from 0 in order: folding n values into h from
    h0 gives h0 * ODD^n + (their hash from 0), modulo 2^64."""
    h = int(seed)
    for part, folded, *_ in parts:
        h = (h * pow(int(ODD), int(folded), 1 << 64) + int(part)) & ((1 << 64) - 1)
    return h


def fingerprint(td, seed) -> int:
    """A polynomial hash from `seed` folding in, in iteration order, every query id (`id_hash`) and
    its size, and each (id, value) (`kernels.groups.hashed_item`): any change of an id, a value or the order shows (but
    for a 64-bit hash's chance; ids cannot be built to collide without the seed). One kernel, holding
    the GIL, so the dict is hashed as it is at one moment; `kernels.groups.group_chunk` returns the parts of the same
    hash for a Run read in its own order (`joined`)."""
    return joined(seed, [_hashed_items(td, seed)])


@kernel
def without_own_ids(td):
    """A copy of a Run's typed dict without the documents whose id is their query's (BEIR's
    ``ignore_identical_ids``), and how many queries held one: their inner dicts are copied without it
    (insertion order kept), the others shared. One kernel, holding the GIL (see above)."""
    out = td.copy()
    dropped = 0
    for qid, inner in td.items():
        if qid in inner:
            kept = inner.copy()
            kept.pop(qid)
            out[qid] = kept
            dropped += 1
    return out, dropped


@kernel
def doc_id(run_td, qid, index):
    """The id of the index-th document of a query, for error messages."""
    i = 0
    for key in run_td[qid].keys():
        if i == index:
            return str(key)
        i += 1
    return ""
