"""The rules every public argument check of tieaware applies, in one place.

A bool is never a number here (``threads=True`` is a mistake, not 1), numpy scalars are numbers
like Python's (``numbers`` ABCs, so this module imports no numpy), and NaN passes no bound. Callers
keep their own messages, which name the argument and what it means.
"""
from __future__ import annotations

import math
import numbers
from typing import Any

from .errors import InputError
from .registry import OBLIVIOUS_ORDERS


def is_int(value: Any) -> bool:
    """An integer, Python's or numpy's, not a bool."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def is_number(value: Any) -> bool:
    """A real number, Python's or numpy's (NaN and infinities included), not a bool."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def is_count(value: Any, minimum: int = 0) -> bool:
    """An integer (`is_int`) >= minimum."""
    return is_int(value) and value >= minimum


def is_finite(value: Any) -> bool:
    """A finite number (`is_number`)."""
    return is_number(value) and math.isfinite(value)


def is_limit(value: Any) -> bool:
    """A number >= 0, infinity included (a limit that checks nothing), NaN not."""
    return is_number(value) and value >= 0


def check_oblivious(oblivious: Any, *, allow_none: bool = False) -> None:
    """Raise `InputError` unless ``oblivious`` names a tool order `evaluate` reproduces
    (`tieaware.registry.OBLIVIOUS_ORDERS`), or is None where ``allow_none``."""
    if oblivious is None and allow_none:
        return
    if not isinstance(oblivious, str) or oblivious not in OBLIVIOUS_ORDERS:
        either = "None or one of" if allow_none else "one of"
        raise InputError(f"oblivious must be {either} {OBLIVIOUS_ORDERS}, got {oblivious!r}.")
