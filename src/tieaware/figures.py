"""Metric@k curves with their tie spread (the paper's Figures 3 and 5), drawn with matplotlib.

Top row: E[M] per run against the cutoff k (line), the [min, max] interval over
tie orderings (a bar, runs side by side) and the oblivious value a tool reports
(x). Bottom row: the same bars and markers minus E[M] (E[M] itself is the dash
at 0), so spreads of a few thousandths stay visible.
Needs the ``plot`` extra (``pip install 'tieaware[plot]'``). This module only
draws: the metric@k numbers come from `tieaware.comparison` (`compare_at_k`,
`plot_at_k`), which imports this module, never the reverse. Its public face is
`tieaware.plot`.
"""
from __future__ import annotations

import os
import re
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from .errors import InputError, UnknownMetricError
from .metrics import parse_metric
from .outputs import atomic_output

if TYPE_CHECKING:
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    from .report import EvaluationReport

class PlottedReport(Protocol):
    """What `plot_report` reads of a `tieaware.comparison.ComparisonReport` (a protocol, as comparison
    imports this module)."""

    metrics: list[str]
    run_names: list[str]
    results: dict[str, EvaluationReport]
    oblivious_order: str


#: Horizontal factor between neighbouring runs' bars on the log k axis.
DODGE = 1.07


def _matplotlib() -> tuple[type[Figure], type[Line2D]]:
    """matplotlib's Figure and Line2D (no pyplot: no global state, no GUI backend)."""
    try:
        from matplotlib.figure import Figure
        from matplotlib.lines import Line2D
    except ImportError:
        raise ImportError("tieaware plots need matplotlib: pip install 'tieaware[plot]'") from None
    return Figure, Line2D


def check_image_path(path: str | os.PathLike[str]) -> None:
    """Refuse, before any work, an image path whose suffix names no format matplotlib writes
    (``FigureCanvasBase.get_supported_filetypes``); no suffix means matplotlib's default, PNG.

    Raises:
        InputError: naming the path and the formats matplotlib writes.
        ImportError: matplotlib is not installed.
    """
    _matplotlib()
    from matplotlib.backend_bases import FigureCanvasBase

    suffix = Path(path).suffix.lower().lstrip(".")
    formats = FigureCanvasBase.get_supported_filetypes()
    if suffix and suffix not in formats:
        raise InputError(f"image {str(path)!r}: matplotlib writes no {suffix!r} files; use one of "
                         f"{', '.join(sorted(formats))}.")


def _families(metrics: list[str]) -> dict[str, list[tuple[int, str]]]:
    """{label like 'ndcg@k': [(k, metric name), ...] sorted by k} for the metrics with a cutoff."""
    groups: dict[Any, list[tuple[int, str]]] = {}
    labels: dict[Any, str] = {}
    for name in metrics:
        spec = parse_metric(name)
        if spec.k is None:
            continue
        key = replace(spec, name="", k=None)
        labels.setdefault(key, re.sub(rf"([@._]){spec.k}(?!\d)", r"\1k", name, count=1))
        groups.setdefault(key, []).append((spec.k, name))
    return {labels[key]: sorted(members) for key, members in groups.items()}


def plot_report(report: PlottedReport, path: str | os.PathLike[str] | None = None, *, title: str | None = None,
                dpi: int = 150) -> Figure:
    """Draw a `ComparisonReport`'s metrics that have a cutoff, one column per metric family.

    Args:
        report: from `tieaware.compare`, with metrics such as ndcg@1, ndcg@3, ... ndcg@100.
        path: PNG (or any format matplotlib writes) to save to; None only returns the figure.
        title: figure title; default names the oblivious tie order.
        dpi: resolution of the saved file.

    Returns:
        The matplotlib ``Figure``.

    Raises:
        InputError: ``path``'s suffix names no format matplotlib writes (`check_image_path`).
    """
    Figure, Line2D = _matplotlib()
    if path is not None:
        check_image_path(path)
    families = _families(report.metrics)
    if not families:
        raise UnknownMetricError(f"Nothing to plot: none of {report.metrics} has a cutoff k.")
    figure = Figure(figsize=(4.6 * len(families) + 2.8, 6.0), layout="constrained")
    axes = figure.subplots(2, len(families), sharex="col", squeeze=False, height_ratios=(3, 2))
    n_runs = len(report.run_names)
    for column, (label, members) in enumerate(families.items()):
        ks = np.array([k for k, _ in members], dtype=float)
        top, bottom = axes[0, column], axes[1, column]
        for i, run in enumerate(report.run_names):
            color = f"C{i % 10}"
            results = [report.results[run][name] for _, name in members]
            expected = np.array([r.expected for r in results])
            low, high = np.array([r.min for r in results]), np.array([r.max for r in results])
            oblivious = np.array([r.oblivious for r in results])
            x = ks * DODGE ** (i - (n_runs - 1) / 2)  # side by side on the log axis
            top.plot(ks, expected, "-", color=color, lw=1.4, label=run)
            for ax, shift in ((top, 0.0), (bottom, expected)):
                ax.vlines(x, low - shift, high - shift, color=color, lw=3.5, alpha=0.45)
                ax.plot(x, oblivious - shift, "x", color=color, ms=6, mew=1.6)
            bottom.plot(x, np.zeros_like(x), "_", color=color, ms=8, mew=1.6)
        top.set_ylabel(label)
        bottom.axhline(0.0, color="0.3", lw=0.6, zorder=0)
        bottom.set_ylabel(f"{label} - E[M]")
        bottom.set_xlabel("cutoff k")
        bottom.set_xscale("log")
        bottom.set_xticks(ks, [str(int(k)) for k in ks])
        bottom.minorticks_off()
        for ax in (top, bottom):
            ax.grid(True, alpha=0.3)
    handles = axes[0, 0].get_legend_handles_labels()[0]
    handles += [Line2D([], [], color="0.3", marker="x", ls="", mew=1.6, label=f"{report.oblivious_order}'s tie order"),
                Line2D([], [], color="0.3", lw=3.5, alpha=0.45, label="[min, max] over tie orders")]
    figure.legend(handles=handles, loc="outside right center", fontsize="small")
    figure.suptitle(title or f"E[M] (line), [min, max] over tie orders (bar), {report.oblivious_order}'s tie order (x)")
    if path is not None:
        from matplotlib import rcParams

        with atomic_output(path) as temporary:  # the format from the target's name, not the temporary's
            figure.savefig(temporary, dpi=dpi, format=Path(path).suffix.lstrip(".") or rcParams["savefig.format"])
    return figure
