"""Metric@k curves with their tie spread: the public face of `tieaware.figures`.

`plot_report` draws a `ComparisonReport` (`tieaware.compare_at_k` gives one);
`tieaware.comparison.plot_at_k` evaluates and draws in one call. Needs the
``plot`` extra (``pip install 'tieaware[plot]'``).
"""
from __future__ import annotations

import warnings
from typing import Any

from .figures import DODGE, check_image_path, plot_report

__all__ = ["DODGE", "check_image_path", "plot_report"]

#: names that moved to `tieaware.comparison`, still served here with a DeprecationWarning
_MOVED = ("plot_at_k", "metric_at_k", "DEFAULT_KS")


def __getattr__(name: str) -> Any:
    """Deprecated aliases: ``plot_at_k``, ``metric_at_k`` and ``DEFAULT_KS`` live in `tieaware.comparison`."""
    if name in _MOVED:
        from . import comparison  # imported on first use: comparison loads pandas; it never imports this module

        warnings.warn(f"tieaware.plot.{name} moved to tieaware.comparison.{name}", DeprecationWarning, stacklevel=2)
        return getattr(comparison, name)
    raise AttributeError(f"module 'tieaware.plot' has no attribute {name!r}")
