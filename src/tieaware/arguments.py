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
from .readers.kinds import is_ranx_qrels, is_ranx_run
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


def resolve_oblivious(oblivious: Any, qrels: Any, *runs: Any) -> str:
    """The tool order ``oblivious`` names, checked; None: the tool the inputs come from.

    ``oblivious=None`` (the default of `tieaware.evaluate` and `tieaware.compare`) is "ranx" when the
    qrels or any run is a ranx ``Qrels``/``Run`` (a ranx user's number: `evaluate`'s "ranx" order is
    ranx's for the run as given, a ``Run``'s or a dict's), else "trec_eval" (dicts, files, DataFrames
    and records: the order of trec_eval, pytrec_eval, MTEB and ir_measures' default measures).

    Args:
        oblivious: None or a tool's order, as `tieaware.evaluate` takes it.
        qrels, runs: the inputs as the user gave them (before any conversion).

    Returns:
        The name of the order, one of `tieaware.registry.OBLIVIOUS_ORDERS`.

    Raises:
        InputError: ``oblivious`` is neither None nor one of `tieaware.registry.OBLIVIOUS_ORDERS`.

    Examples:
        >>> resolve_oblivious(None, {"q1": {"d1": 1}}, {"q1": {"d1": 0.5}})
        'trec_eval'
        >>> resolve_oblivious("input", {"q1": {"d1": 1}}, {"q1": {"d1": 0.5}})
        'input'
    """
    check_oblivious(oblivious, allow_none=True)
    if oblivious is not None:
        return str(oblivious)
    return "ranx" if is_ranx_qrels(qrels) or any(is_ranx_run(run) for run in runs) else "trec_eval"
