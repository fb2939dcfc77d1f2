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


#: every integer of at most this magnitude is a float64 (a 53-bit significand); beyond, some are not
EXACT_INTEGERS = 2 ** 53


def held_exactly(value) -> bool:
    """Whether ``float(value)`` equals ``value`` exactly: Python compares ints, Fractions, Decimals and
    numpy's long doubles with a float exactly; numpy's integers are compared as Python ints (numpy itself
    would compare them after rounding to float64)."""
    if type(value) is float:
        return True
    if isinstance(value, np.integer):
        value = int(value)
    return bool(value == float(value))


def inexact_message(kind: str, value) -> str:
    """Why a value beyond `EXACT_INTEGERS` that float64 cannot hold is refused, and what to do."""
    remedy = ("rank-transform the scores first (scipy.stats.rankdata(scores, method='dense') keeps their order "
              "and ties) or give them as floats" if "score" in kind.lower() else
              "give grades below 2**53 (or as floats)")
    return (f"is {value!r}, which float64 (what tieaware computes in) cannot hold: it would be read as "
            f"{float(value)!r}, so distinct values could become false ties; {remedy}.")


def inexact_rows(values: np.ndarray) -> np.ndarray:
    """The positions of the values of a numpy array that float64 cannot hold exactly: 64-bit integers
    beyond 2**53 that are not multiples of their spacing there, and long doubles that are not float64s."""
    if values.dtype.kind == "f":
        return np.flatnonzero(values.astype(np.float64) != values) if values.dtype.itemsize > 8 else \
            np.empty(0, np.int64)
    if values.dtype.kind not in "iu" or values.dtype.itemsize < 8:
        return np.empty(0, np.int64)
    beyond = values > EXACT_INTEGERS
    if values.dtype.kind == "i":
        beyond |= values < -EXACT_INTEGERS
    rows = np.flatnonzero(beyond)
    return rows[[not held_exactly(values[row]) for row in rows.tolist()]] if rows.size else rows


def _refuse_inexact(kind: str, query_ids: list, per_query: list, values: np.ndarray) -> None:
    """Raise an `InputError` naming the first query/document whose value (an int, a numpy integer, a
    long double) its float64 in ``values`` does not equal, looked for only in the queries whose float64s
    reach 2**53 (where float64 stops holding every integer; a value below rounds to one below)."""
    beyond = np.flatnonzero(np.isfinite(values) & (np.abs(values) >= EXACT_INTEGERS))
    if not beyond.size:
        return
    ends = np.cumsum(np.fromiter(map(len, per_query), np.int64, len(per_query)))
    for q in np.unique(np.searchsorted(ends, beyond, side="right")).tolist():
        for doc, value in per_query[q].items():
            if type(value) is not float and abs(float(value)) >= EXACT_INTEGERS and not held_exactly(value):
                raise InputError(f"{kind} for query {query_ids[q]!r}, document {doc!r} {inexact_message(kind, value)}")


def float_values(kind: str, query_ids: list, per_query: list, total: int, finite: bool) -> np.ndarray:
    """All values of per_query's inner dicts as float64, in order; NaN, None, non-numbers (and,
    for grades, +/-inf) raise an `InputError` naming query and document, as does an integer (or a
    long double) beyond 2**53 that float64 cannot hold exactly (`held_exactly`): distinct scores
    would become false ties.

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
    if total and (values.max() >= EXACT_INTEGERS or values.min() <= -EXACT_INTEGERS):
        _refuse_inexact(kind, query_ids, per_query, values)
    return values
