"""numba's typed dicts (ranx's ``Run.run``, ``Qrels.qrels``) read through their C layout: one kernel,
`read_dict`, reads a dict of any id width, so it is compiled ahead of time once for all of them and
nothing compiles when a ranx object is evaluated.

numba keeps a typed dict in C structs (``numba/cext/dictobject.c``). The Python object's
``_opaque`` MemInfo holds the address of an ``NB_Dict {used, keys}``; ``keys`` points to an
``NB_DictKeys {size, usable, nentries, key_size, val_size, entry_size, entry_offset, methods[5],
indices[]}``, whose ``nentries`` entries of ``entry_size`` bytes start at ``indices + entry_offset``,
in insertion order: ``{hash, key, value}``, the value after the key's size rounded up to 8 bytes, and
hash -1 (``DKIX_EMPTY``) for a deleted entry. A ``unicode_type`` key is numba's string struct
``{data, length, kind, is_ascii, hash, meminfo, parent}`` (48 bytes; ``length`` code points of
``kind`` bytes at ``data``); a ``UnicodeCharSeq(W)`` key is W UTF-32 code points, NUL-padded (its
length ends at its last non-NUL, as numba's ``len``); a ``DictType`` value is ``{meminfo, NB_Dict*}``.

`read_dict` checks every size it relies on, the string kinds, and that the live entries number
``used``, never writing an array past the size those give: on a layout other than this one (a numba
release that changes it) it returns status 1 and `tieaware.readers.typed_dicts` reads the dict
through numba's API.
"""
import numpy as np

from . import kernel
from .backend import JitOnly
from .groups import code_at, id_hash, mix64
from .memory import MemoryText

#: the value of a given type at a memory address (an LLVM load)
loaded = JitOnly("tieaware.kernels.intrinsics", "loaded")

_I64, _I32, _U32, _F64 = np.int64(0), np.int32(0), np.uint32(0), np.float64(0)  # the types `loaded` reads
_INDICES = 96  # NB_DictKeys: 7 fields and 5 method pointers before indices[]
_STRING = 48  # numba's string struct
_DICT_VALUE = 16  # a DictType value: meminfo, NB_Dict*
_EMPTY = -1  # DKIX_EMPTY: a deleted entry's hash

#: the fingerprint's polynomial base (FNV's 64-bit prime)
BASE = np.uint64(0x100000001B3)


@kernel(inline="always")
def fold(h, x):
    """One step of a polynomial hash: h * BASE + x, modulo 2^64."""
    return h * BASE + x


@kernel(inline="always")
def _aligned(size):
    """`size` rounded up to 8 bytes (dictobject.c's ``aligned_size``)."""
    return (size + 7) // 8 * 8


@kernel(inline="always")
def _table(nb_dict, key_size, value_size):
    """(address of entry 0, entries, entry size, live entries ``used``) of the ``NB_Dict`` at address
    `nb_dict`; entries -1 when its key, value or entry size is not what `key_size` and `value_size`
    give, or ``used`` exceeds its entries or its entries its index size."""
    used = loaded(nb_dict, _I64)
    keys = loaded(nb_dict + 8, _I64)
    n_entries = loaded(keys + 16, _I64)
    entry_size = loaded(keys + 40, _I64)
    if loaded(keys + 24, _I64) != key_size or loaded(keys + 32, _I64) != value_size \
            or entry_size != 8 + _aligned(key_size) + _aligned(value_size) \
            or used < 0 or n_entries < used or n_entries > loaded(keys, _I64):
        return 0, -1, 0, 0
    return keys + _INDICES + loaded(keys + 48, _I64), n_entries, entry_size, used


@kernel(inline="always")
def _key_text(key, width):
    """The code points of the key at address `key`: a UnicodeCharSeq(`width`)'s in place, a string's
    (`width` 0) at its data pointer, of its kind."""
    if width > 0:
        return MemoryText(key, np.int64(4))
    return MemoryText(loaded(key, _I64), np.int64(loaded(key + 16, _I32)))


@kernel(inline="always")
def _key_length(key, width):
    """Code points of the key at address `key`: of a UnicodeCharSeq(`width`) up to its last non-NUL, of
    a string (`width` 0) its length; -1 for a string whose kind is not 1, 2 or 4 bytes."""
    if width > 0:
        n = width
        while n > 0 and loaded(key + 4 * (n - 1), _U32) == 0:
            n -= 1
        return n
    kind = loaded(key + 16, _I32)
    length = loaded(key + 8, _I64)
    return length if (kind == 1 or kind == 2 or kind == 4) and length >= 0 else -1


@kernel(inline="always")
def _failed():
    """`read_dict`'s answer for memory not laid out as this module reads it."""
    none = np.empty(0, np.int64)
    return 1, np.uint64(0), np.empty(0, np.uint32), none, none, np.empty(0, np.uint32), none, none, \
        np.empty(0, np.float64)


@kernel
def read_dict(payload, width, integer_values, seed, copy):
    """(status, fingerprint, query codes, query ends, offsets, codes, id_lo, id_hi, values) of the typed
    dict ``Dict[unicode_type, Dict[K, V]]`` whose ``NB_Dict*`` is stored at address `payload`: K a
    UnicodeCharSeq(`width`), or a string for `width` 0; V int64 (`integer_values`) or float64.

    Status 0: the arrays of ``readers.typed_dicts.TypedDictCopy`` (query ids' code points ending at
    ``query ends``, CSR offsets of the queries, each document's id codes[id_lo:id_hi] and value as
    float64, in the dict's order; empty without `copy`) and its fingerprint: a polynomial hash
    (`fold`) of the number of queries and, in order, each query id's `id_hash` and size, and per
    document `mix64` of its id's hash xor its value's float64 bits. Status 1: the memory does not
    have the layout this module reads (a size, a string kind or a count of live entries is not what
    it should be), checked before any array is written past its size; the arrays are dropped. Run
    holding the GIL, so that no Python thread changes the dict meanwhile."""
    outer_first, outer_entries, outer_size, n_queries = _table(loaded(payload, _I64), _STRING, _DICT_VALUE)
    if outer_entries < 0:
        return _failed()
    key_size = 4 * width if width > 0 else _STRING
    n = 0
    q_total = 0
    c_total = 0
    live = 0
    for i in range(outer_entries):  # the queries' headers, and str doc ids' lengths: sizes to allocate
        entry = outer_first + i * outer_size
        if loaded(entry, _I64) == _EMPTY:
            continue
        live += 1
        length = _key_length(entry + 8, 0)
        first, entries, size, used = _table(loaded(entry + 8 + _STRING + 8, _I64), key_size, 8)
        if length < 0 or entries < 0:
            return _failed()
        q_total += length
        n += used
        for k in range(entries if width == 0 else 0):
            inner = first + k * size
            if loaded(inner, _I64) != _EMPTY:
                length = _key_length(inner + 8, 0)
                if length < 0:
                    return _failed()
                c_total += length
    if live != n_queries:
        return _failed()
    if width > 0:
        c_total = width * n
    offsets = np.zeros(n_queries + 1 if copy else 1, np.int64)
    qcodes = np.empty(q_total if copy else 0, np.uint32)
    qends = np.empty(n_queries if copy else 0, np.int64)
    codes = np.empty(c_total if copy else 0, np.uint32)
    id_lo = np.empty(n if copy else 0, np.int64)
    id_hi = np.empty(n if copy else 0, np.int64)
    values = np.empty(n if copy else 0, np.float64)
    bits = np.empty(1, np.float64)
    as_int = bits.view(np.uint64)
    value_at = 8 + _aligned(key_size)
    h = np.uint64(n_queries)
    qc = 0
    c = 0
    j = 0
    q = 0
    for i in range(outer_entries):
        entry = outer_first + i * outer_size
        if loaded(entry, _I64) == _EMPTY:
            continue
        length = _key_length(entry + 8, 0)
        text = _key_text(entry + 8, 0)
        first, entries, size, used = _table(loaded(entry + 8 + _STRING + 8, _I64), key_size, 8)
        h = fold(fold(h, id_hash(text, 0, length, seed)), np.uint64(used))
        if copy:
            for t in range(length):
                qcodes[qc + t] = code_at(text, t)
            qc += length
            qends[q] = qc
            offsets[q + 1] = offsets[q] + used
            q += 1
        seen = 0
        for k in range(entries):
            inner = first + k * size
            if loaded(inner, _I64) == _EMPTY:
                continue
            seen += 1
            if seen > used:  # more live entries than the dict counts: not this layout
                return _failed()
            length = _key_length(inner + 8, width)
            text = _key_text(inner + 8, width)
            value = np.float64(loaded(inner + value_at, _I64)) if integer_values else loaded(inner + value_at, _F64)
            bits[0] = value
            h = fold(h, mix64(id_hash(text, 0, length, seed) ^ as_int[0]))
            if copy:
                for t in range(length):
                    codes[c + t] = code_at(text, t)
                id_lo[j] = c
                c += length
                id_hi[j] = c
                values[j] = value
                j += 1
        if seen != used:
            return _failed()
    return 0, h, qcodes[:qc], qends, offsets, codes[:c], id_lo, id_hi, values
