"""The session's check rows as a terminal section and as a JSON report. Pure Python."""
from __future__ import annotations

import platform
from collections.abc import Sequence
from datetime import datetime, timezone
from importlib import metadata
from typing import Any

from tieaware.display import fixed, plain_table

SCHEMA = "tieaware-pytest"
SCHEMA_VERSION = 3  # 3: rows carry "improvements", baseline limits a tolerance per statistic; 2: "tie_std"
PACKAGES = ("tieaware", "ranx", "numba", "numpy", "pytest", "torch")
SUMMARY_COLUMNS = ("test", "metric", "expected", "range", "bias", "limit", "result")


def strict_json(value: object, **options: Any) -> str:
    """`value` as strict JSON (RFC 8259 has no NaN or Infinity): non-finite floats become null.
    `tieaware.report.strict_json`, imported on first use so that loading the plugin imports no numpy."""
    from tieaware.report import strict_json as report_strict_json

    return report_strict_json(value, **options)


def text_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """Fixed-width table: floats with 4 decimals (`fixed`: no ``-0.0000``) and right-aligned, everything
    else left-aligned."""
    cells = [[fixed(value) if isinstance(value, float) else str(value) for value in row] for row in rows]
    right = [any(isinstance(row[i], float) for row in rows) for i in range(len(headers))]
    return plain_table(headers, cells, right=right)


def summary_table(rows: list[dict[str, Any]]) -> str:
    """One line per (test, metric): expected, range, bias, limit, pass / improved / FAIL."""
    return text_table(SUMMARY_COLUMNS, [
        [row["test"], row["metric"], row["expected"], row["range"], row["bias"], row["limit"],
         ("improved" if row["improvements"] else "pass") if row["passed"] else "FAIL"] for row in rows])


def improvement_lines(rows: list[dict[str, Any]]) -> list[str]:
    """One line per baseline check that improved on its stored baseline (passed or not)."""
    return [f"{row['test']} {row['metric']}: {'; '.join(row['improvements'])}" for row in rows if row["improvements"]]


def environment(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Python and package versions (None: not installed) and the dtype labels the checks gave."""
    versions: dict[str, str | list[str] | None] = {"python": platform.python_version(),
                                                   "platform": platform.platform()}
    for package in PACKAGES:
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = None
    versions["dtypes"] = sorted({row["dtype"] for row in rows if row["dtype"] is not None})
    return versions


def json_report(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The JSON document of ``--tie-json``."""
    failed = sum(not row["passed"] for row in rows)
    return {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "environment": environment(rows),
        "counts": {"rows": len(rows), "passed": len(rows) - failed, "failed": failed},
        "rows": rows,
    }
