"""Who is told of tie-stability checks: a pure-Python registry (importing it loads no numba), so the
pytest plugin can listen to every `tieaware.testing.check_tie_stability` call without importing
tieaware's kernels in test sessions that never check anything."""
from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

#: what a check reports: `tieaware.testing.TieStability`, left generic here so that this module
#: imports nothing of tieaware (testing.py imports it)
Stability = TypeVar("Stability")

#: Callables told of every check, with its `tieaware.testing.TieStability`.
OBSERVERS: list[Callable[[Any], object]] = []


@contextmanager
def observe_checks(observer: Callable[[Stability], object]) -> Iterator[None]:
    """Call ``observer(stability)`` after every `check_tie_stability` / `assert_tie_stable` inside
    the ``with`` block (the pytest plugin records each test's checks this way).

    Args:
        observer: called with each check's `TieStability`.

    Returns:
        A context manager; the observer is removed when the block ends.
    """
    OBSERVERS.append(observer)
    try:
        yield
    finally:
        OBSERVERS.remove(observer)


def notify(stability: object) -> None:
    """Tell every observer of one finished check."""
    for observer in list(OBSERVERS):
        observer(stability)
