"""Python dicts as flat arrays: ids as Unicode code points and values as float64, by C-level calls.

The readers of Python dicts (`readers.dicts`, `readers.judgments`) turn each chunk of
``{doc_id: value}`` dicts into arrays without a Python loop over the documents: the ids joined
and encoded as UTF-32 code points (code point order is the order ``strcmp`` gives their UTF-8
bytes), the values written by ``struct.pack_into``. A value that is not a usable number is named
(query and document) in an `InputError`.
"""
from __future__ import annotations

import math
import struct
from itertools import chain

import numpy as np

from ..errors import InputError
from .ids import string_keys


def separated_ids(per_query: list) -> np.ndarray:
    """The ids (keys) of the dicts in `per_query`, in order, each followed by NUL, as Unicode code
    points: one ``str.join`` per dict and one UTF-32 encoding, all C-level. (Read-only, as
    np.frombuffer's, even when empty: numba would compile `read_chunk` again for a writable array.)"""
    parts = ["\0".join(docs) for docs in per_query if docs]
    parts.append("")  # a NUL after the last id too, without copying the text once more
    return np.frombuffer("\0".join(parts).encode("utf-32-le", "surrogatepass"), np.uint32)


def id_codes(per_query: list, n: int, separated: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The n ids (keys) of the dicts in `per_query`, in order, as Unicode code points: (codes, lo, hi),
    id i being codes[lo[i]:hi[i]]. With `separated`, the codes of `separated_ids` and lo, hi left
    for `read_chunk` to fill (it finds the NULs on the worker thread, beside the ids' hashes, instead of
    the main thread, which reads the next chunk meanwhile); otherwise found here, by the NULs or, when an id
    holds NUL itself, by the ids' lengths."""
    if separated:
        return separated_ids(per_query), np.empty(n, np.int64), np.empty(n, np.int64)
    codes = separated_ids(per_query)
    hi = np.flatnonzero(codes == 0)
    if hi.size == n:
        lo = np.empty_like(hi)
        lo[:1] = 0
        lo[1:] = hi[:-1] + 1
        return codes, lo, hi
    ids = list(chain.from_iterable(per_query))  # an id holds NUL itself: lay them end to end
    lengths = np.fromiter(map(len, ids), np.int64, n)
    hi = np.cumsum(lengths)
    codes = np.frombuffer("".join(ids).encode("utf-32-le", "surrogatepass"), np.uint32)
    return codes, hi - lengths, hi


def string_id_codes(kind: str, query_ids: list, per_query: list, n: int, separated: bool = False) -> tuple:
    """`id_codes`; ids that are not strings (ints, numpy ints) are read as strings (`string_keys`,
    which also names an id written both ways), only when joining them fails."""
    try:
        return id_codes(per_query, n, separated)
    except TypeError:
        return id_codes([string_keys(docs, f"{kind} dict", q) for q, docs in zip(query_ids, per_query)], n, separated)


def value_problem(value) -> str | None:
    """Why a score or grade cannot be used, or None: the value rule of every container. Numbers are
    ints, floats and what has ``__float__`` (numpy's); bools are the numbers 0 and 1, as Python, numpy
    and ``struct`` read them; None, NaN and anything else are not."""
    if value is None:
        return "is None, not a number"
    if not isinstance(value, (int, float)) and not hasattr(value, "__float__"):
        return f"is not a number: {value!r}"
    try:
        number = float(value)
    except OverflowError:
        return f"is too large for a float64: {str(value)[:20]}... ({len(str(value))} digits)"
    except (TypeError, ValueError):
        return f"is not a number: {value!r}"
    if math.isnan(number):
        return "is NaN"
    return None


def name_bad_value(kind: str, query_ids: list, per_query: list, finite: bool):
    """Raise an `InputError` naming the first query/document whose value is unusable."""
    for qid, docs in zip(query_ids, per_query):
        for doc, value in docs.items():
            problem = value_problem(value)
            if problem is None and finite and not math.isfinite(float(value)):
                problem = f"is {float(value)}; grades must be finite"
            if problem is not None:
                raise InputError(f"{kind} for query {qid!r}, document {doc!r} {problem}.")


def float_values(kind: str, query_ids: list, per_query: list, total: int, finite: bool) -> np.ndarray:
    """All values of per_query's inner dicts as float64, in order; NaN, None, non-numbers (and,
    for grades, +/-inf) raise an `InputError` naming query and document.

    ``struct.pack_into`` writes each dict's values into the array in one C call (CPython's
    ``PyFloat_AsDouble`` per value, as ``float()``), about half the time of ``np.fromiter``."""
    values = np.empty(total, np.float64)
    offset = 0
    try:
        for docs in per_query:
            if docs:
                struct.pack_into(f"{len(docs)}d", values, offset, *docs.values())  # type: ignore[arg-type]
                offset += 8 * len(docs)
    except (struct.error, TypeError, ValueError, OverflowError):
        name_bad_value(kind, query_ids, per_query, finite)
        raise
    bad = ~np.isfinite(values) if finite else np.isnan(values)
    if bad.any():
        name_bad_value(kind, query_ids, per_query, finite)
    return values
