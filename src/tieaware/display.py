"""What tieaware shows people: fixed-point numbers, text tables and progress bars, one helper each.

Every table the library prints (reports, the CLI, the pytest plugin, the precision sweep) goes
through `fixed` and `plain_table` (the layout of tabulate's "plain" format), columns of values through `columns_table`
and a DataFrame through `text_table`, so tiny negative noise never shows as ``-0.0000``
(`ComparisonReport.to_table` keeps ranx's layout and rounding); every progress bar is `progress`,
drawn on stderr only when asked and only on a terminal unless forced.
"""
from __future__ import annotations

import math
import sys
import unicodedata
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd
    from tqdm import tqdm

DIGITS = 4


def fixed(value: float, digits: int = DIGITS, width: int = 0) -> str:
    """Fixed-point text, right-aligned to `width`, without a "-0.0000" for tiny negative noise:
    ``fixed(-1e-12) == "0.0000"``."""
    return f"{round(float(value), digits) + 0.0:{width}.{digits}f}"


def text_table(frame: pd.DataFrame, digits: int = DIGITS, *, index: bool = True) -> str:
    """A DataFrame as `columns_table` text (`frame_columns`: the index levels first unless ``index=False``)."""
    return columns_table(*frame_columns(frame, index=index), digits)


def frame_columns(frame: pd.DataFrame, *, index: bool = True) -> tuple[list[str], list[list[Any]]]:
    """(headers, columns as lists of Python values) of a DataFrame: the index levels first (headed by
    their names) unless ``index=False``, then the columns."""
    levels = range(frame.index.nlevels) if index else range(0)
    headers = ["" if name is None else str(name) for name in frame.index.names[:len(levels)]]
    headers += [str(column) for column in frame.columns]
    columns = [frame.index.get_level_values(level).tolist() for level in levels]
    columns += [frame.iloc[:, position].tolist() for position in range(frame.shape[1])]
    return headers, columns


def columns_table(headers: Sequence[str], columns: Sequence[Sequence[Any]], digits: int = DIGITS) -> str:
    """Columns of values as `plain_table` text: floats through `fixed` (NaN as ``NaN``), numbers
    right-aligned, text left-aligned."""
    cells = [[_cell(value, digits) for value in column] for column in columns]
    right = [any(_is_number(value) for value in column) and all(_is_number(value) or value is None for value in column)
             for column in columns]
    return plain_table(headers, list(zip(*cells)), right=right)


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _cell(value: object, digits: int) -> str:
    if isinstance(value, float):
        return "NaN" if math.isnan(value) else fixed(value, digits)
    return str(value)


def plain_table(headers: Sequence[str], rows: Iterable[Sequence[str]], *,
                right: Sequence[bool] | None = None) -> str:
    """Text cells as columns two spaces apart, each left-aligned (right-aligned where ``right`` says so,
    header included), trailing spaces dropped, the cells' text as given less leading and trailing blanks;
    every row as long as `headers`, a cell on one line.

    The layout of tabulate's "plain" format with the header given as a row (tests/test_display.py
    compares the two), written out here because importing tabulate reads its package metadata, a cost
    ``tieaware eval`` paid whenever it printed a table. Columns are as wide as their cells show on a
    terminal (`display_width`), which tabulate measured only where wcwidth was installed."""
    cells = [[str(cell).strip() for cell in row] for row in (headers, *rows)]
    shown = [[display_width(cell) for cell in line] for line in cells]
    widths = [max(line[c] for line in shown) for c in range(len(headers))]
    right_aligned = [right is not None and right[c] for c in range(len(headers))]
    lines = ["  ".join(" " * (width - used) + cell if to_right else cell + " " * (width - used)
                       for cell, used, width, to_right in zip(line, used_by, widths, right_aligned)).rstrip()
             for line, used_by in zip(cells, shown)]
    if not lines[-1]:  # as tabulate's text read back line by line: a blank last row leaves no line
        lines.pop()
    return "\n".join(lines)


def display_width(text: str) -> int:
    """Columns `text` takes on a terminal: 2 for each wide or full-width (East Asian) character, 0 for
    each combining one, 1 for any other (Unicode's East Asian Width, UAX #11)."""
    if text.isascii():
        return len(text)
    return sum(0 if unicodedata.combining(char) else 2 if unicodedata.east_asian_width(char) in "WF" else 1
               for char in text)


def progress(items: Iterable[Any] | None = None, *, total: int | None = None, unit: str = "it", desc: str | None = None,
             show: bool | None = None, delay: float = 0.0, leave: bool = True) -> tqdm[Any]:
    """A tqdm bar on stderr. ``show``: True draws it, False never, None only when stderr is a terminal;
    ``delay``: seconds before it appears (short loops stay silent); ``leave``: keep it when done."""
    from tqdm.auto import tqdm

    enabled = sys.stderr.isatty() if show is None else show
    return tqdm(items, total=total, unit=unit, desc=desc, delay=delay, disable=not enabled, leave=leave)
