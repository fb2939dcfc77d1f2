"""Reading ranx ``Run``/``Qrels`` objects: one kernel pass copies a typed dict into flat arrays.

ranx keeps a run as ``Dict[str, Dict[UnicodeCharSeq(W), float64]]`` (W: its longest doc id) and
qrels likewise with int64 grades. `copied_items` copies a whole dict, in its order, into the arrays
every other reader of tieaware reads (ids as Unicode code points, values as float64, CSR by query;
code point order is the order trec_eval's ``strcmp`` gives their UTF-8 bytes). The same pass hashes
the dict (`fingerprint`, which the cache of conversions checks; alone, without the copy, for a cache
hit); everything after (grouping, ranx's tie order) runs on the copy.

The pass is `kernels.numba_dicts.read_dict`, which reads numba's C layout of the dict and so serves
every id width with code compiled once, ahead of time. Where that layout is not the one it knows
(another numba), or for another dict type, `_items` reads the dict through numba's own API: calling
into such dicts from Python costs a call into numba per lookup, and numba compiles every function
that takes one again for each dict type (each W), so it is one jitted kernel, compiled per type.

Either pass is one kernel holding the GIL: a typed dict read without it could be changed meanwhile by
Python code on another thread (``Run.add_score``), and numba's dicts free their storage when they
grow, which aborted the process. Holding it, the kernel sees the dict as it is between two Python
steps, so a Run changed by another thread is read either before or after the change, never half.
"""
from __future__ import annotations

import warnings
from typing import NamedTuple

import numba
import numpy as np
from numba import types
from numba.extending import overload

from ..kernels import kernel
from ..kernels.groups import SEED, code_at, id_hash, mix64
from ..kernels.numba_dicts import fold, read_dict


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


def id_width(td):
    """The most code points a doc id of a Run's or Qrels' typed dict holds (its UnicodeCharSeq
    width), or 0 when its ids are str of any length."""


@overload(id_width)
def _id_width_impl(td):
    key = td.value_type.key_type
    width = key.count if isinstance(key, types.UnicodeCharSeq) else 0
    return lambda td: width


def _written(codes, used, key):
    """`codes` with `key`'s code points written after the first `used`: in place for a UnicodeCharSeq
    key (`_items` made room for every id at its width), else through `_appended`. Chosen when
    numba types the call, so each dict type compiles one of the two."""


@overload(_written)
def _written_impl(codes, used, key):
    if isinstance(key, types.UnicodeCharSeq):
        def in_place(codes, used, key):
            for t in range(len(key)):
                codes[used + t] = code_at(key, t)
            return codes
        return in_place
    return lambda codes, used, key: _appended(codes, used, key)


@kernel
def _items(td, seed, copy):
    """The dict's fingerprint and, with `copy`, its contents: every query id's code points (`qcodes`,
    ending at `qends`), CSR offsets (Q+1,) of the queries' inner dicts, and per document its id
    codes[id_lo:id_hi] and value, all in the dict's order (without `copy`, empty arrays). The codes get
    room for every id at its type's width (`id_width`), so the loop never grows them (`_written`).

    The fingerprint is `read_dict`'s: a polynomial hash (`fold`) of, in order, every query id's
    `id_hash` and size, and per document `mix64` of its id's hash xor its value's float64 bits (mixed,
    so that round values trading places change it too): any change of an id, a value or the order
    shows, but for a 64-bit hash's chance; ids cannot be built to collide without the seed."""
    n_queries = len(td)
    offsets = np.zeros(n_queries + 1 if copy else 1, np.int64)
    q_total = 0
    if copy:
        q = 0
        for qid, inner in td.items():
            offsets[q + 1] = offsets[q] + len(inner)
            q_total += len(qid)
            q += 1
    n = offsets[-1]
    width = id_width(td)
    qcodes = np.empty(q_total, np.uint32)
    qends = np.empty(n_queries if copy else 0, np.int64)
    codes = np.empty(width * n if width > 0 else 8 * n + 16, np.uint32)
    id_lo = np.empty(n, np.int64)
    id_hi = np.empty(n, np.int64)
    values = np.empty(n, np.float64)
    bits = np.empty(1, np.float64)
    as_int = bits.view(np.uint64)
    h = np.uint64(n_queries)
    qc = 0
    c = 0
    j = 0
    q = 0
    for qid, inner in td.items():
        h = fold(fold(h, id_hash(qid, 0, len(qid), seed)), np.uint64(len(inner)))
        if copy:
            for t in range(len(qid)):
                qcodes[qc + t] = code_at(qid, t)
            qc += len(qid)
            qends[q] = qc
            q += 1
        for key, value in inner.items():
            bits[0] = value
            h = fold(h, mix64(id_hash(key, 0, len(key), seed) ^ as_int[0]))
            if copy:
                codes = _written(codes, c, key)
                id_lo[j] = c
                c += len(key)
                id_hi[j] = c
                values[j] = value
                j += 1
    return h, qcodes, qends, offsets, codes[:c], id_lo, id_hi, values


class TypedDictCopy(NamedTuple):
    """A ranx Run's or Qrels' typed dict as flat arrays (`copied_items`): query ``query_ids[k]`` holds
    documents ``offsets[k]:offsets[k + 1]``, document i with id ``codes[id_lo[i]:id_hi[i]]`` (code
    points, read-only) and value ``values[i]`` (score or grade, float64), in the dict's order; and the
    dict's `fingerprint` as copied."""

    query_ids: list
    offsets: np.ndarray
    codes: np.ndarray
    id_lo: np.ndarray
    id_hi: np.ndarray
    values: np.ndarray
    fingerprint: int

    def doc_id(self, i: int) -> str:
        """The id of document i (for error messages)."""
        return self.codes[self.id_lo[i]:self.id_hi[i]].tobytes().decode("utf-32-le", "surrogatepass")

    def picked(self, query_ids: list) -> tuple[np.ndarray, np.ndarray | None]:
        """(CSR offsets (len(query_ids)+1,), the documents of `query_ids` in that order, or None when
        they are the dict's own queries in its order): a query the dict lacks has none."""
        if query_ids == self.query_ids:
            return self.offsets, None
        row = {qid: k for k, qid in enumerate(self.query_ids)}
        rows = np.fromiter((row.get(q, -1) for q in query_ids), np.int64, len(query_ids))
        present, rows = rows >= 0, np.maximum(rows, 0)
        counts = np.where(present, self.offsets[rows + 1] - self.offsets[rows], 0)
        local = np.zeros(len(query_ids) + 1, np.int64)
        np.cumsum(counts, out=local[1:])
        return local, np.repeat(self.offsets[rows] - local[:-1], counts) + np.arange(int(local[-1]))


def _layout(td) -> tuple[int, int, bool] | None:
    """(address holding the dict's ``NB_Dict*``, doc id width (0: str ids), int64 values) for `read_dict`,
    or None for a dict of another type than ranx's (`_items` reads it)."""
    dict_type, opaque = getattr(td, "_dict_type", None), getattr(td, "_opaque", None)
    inner = getattr(dict_type, "value_type", None)
    if opaque is None or dict_type is None or dict_type.key_type != types.unicode_type \
            or not isinstance(inner, types.DictType):
        return None
    if isinstance(inner.key_type, types.UnicodeCharSeq):
        width = inner.key_type.count
    elif inner.key_type == types.unicode_type:
        width = 0
    else:
        return None
    if inner.value_type not in (types.float64, types.int64):
        return None
    return int(opaque.data), width, inner.value_type == types.int64


_layout_warned = False


def _read(td, copy: bool) -> tuple:
    """`read_dict`'s arrays (without its status) of a typed dict, else `_items`'s: for another dict type,
    or, with a warning once a process, where numba's layout is not the one `read_dict` reads."""
    global _layout_warned
    layout = _layout(td)
    if layout is not None:
        status, *arrays = read_dict(*layout, SEED, copy)
        if status == 0:
            return tuple(arrays)
        if not _layout_warned:
            _layout_warned = True
            warnings.warn(f"tieaware: numba {numba.__version__} lays out typed dicts otherwise than tieaware "
                          "reads them: ranx objects are read through numba's API, compiled on first use",
                          RuntimeWarning, stacklevel=4)
    return _items(td, SEED, copy)


def copied_items(td) -> TypedDictCopy:
    """A ranx Run's or Qrels' typed dict (``run.run``, ``qrels.qrels``) as a `TypedDictCopy`, read in one
    kernel (`_read`), so at one moment."""
    h, qcodes, qends, offsets, codes, id_lo, id_hi, values = _read(td, True)
    text = qcodes.tobytes().decode("utf-32-le", "surrogatepass")
    starts = np.zeros_like(qends)
    starts[1:] = qends[:-1]
    codes.setflags(write=False)  # as the other readers': the group kernels are compiled for read-only ids
    return TypedDictCopy([text[a:b] for a, b in zip(starts.tolist(), qends.tolist())], offsets, codes, id_lo, id_hi,
                         values, int(h))


def fingerprint(td) -> int:
    """The fingerprint `copied_items` gives, without the copy (one pass, holding the GIL)."""
    return int(_read(td, False)[0])


def holds_own_ids(td) -> bool:
    """Whether a query of a Run's typed dict holds a document whose id is its own, what `without_own_ids`
    drops: read from the `copied_items` arrays, so it compiles nothing for the dict's type."""
    items = copied_items(td)
    lengths = items.id_hi - items.id_lo
    for k, qid in enumerate(items.query_ids):
        lo = int(items.offsets[k])
        same_length = lo + np.flatnonzero(lengths[lo:items.offsets[k + 1]] == len(qid))
        if same_length.size:
            own = np.frombuffer(qid.encode("utf-32-le", "surrogatepass"), "<u4")
            if (items.codes[items.id_lo[same_length, None] + np.arange(len(qid))] == own).all(axis=1).any():
                return True
    return False


@kernel
def without_own_ids(td):
    """A copy of a Run's typed dict without the documents whose id is their query's (BEIR's
    ``ignore_identical_ids``; compiled per dict type, so `holds_own_ids` asks first), and how many
    queries held one: their inner dicts are copied without it (insertion order kept), the others
    shared. One kernel, holding the GIL (see above)."""
    out = td.copy()
    dropped = 0
    for qid, inner in td.items():
        if qid in inner:
            kept = inner.copy()
            kept.pop(qid)
            out[qid] = kept
            dropped += 1
    return out, dropped
