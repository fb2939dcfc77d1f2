"""Baseline files of ``tie_check.against_baseline``, laid out as pytest-regressions lays out its data:
``<test module dir>/<test module stem>/<test name>_<name>.json``."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

SCHEMA_VERSION = 2  # 2: "std" renamed "tie_std"; version 1 files are read too
STORED_STATISTICS = ("expected", "oblivious", "min", "max", "range", "bias", "tie_std",
                     "n_queries", "n_queries_with_ties")


def baseline_path(node: pytest.Item, name: str) -> Path:
    """The baseline file of check `name` in test `node`; non-word characters become ``_``."""
    if not name:
        raise ValueError("against_baseline needs a non-empty name (it names the baseline file)")
    module = Path(node.path)
    basename = re.sub(r"\W", "_", node.name) + "_" + re.sub(r"\W", "_", name)
    return module.parent / module.stem / f"{basename}.json"


def baseline_text(results, oblivious_order: str, dtype: str | None) -> str:
    """What a baseline file holds for these results: the summary statistics of each metric."""
    content = {
        "schema_version": SCHEMA_VERSION,
        "oblivious_order": oblivious_order,
        "dtype": dtype,
        "metrics": {name: {key: result.to_dict()[key] for key in STORED_STATISTICS}
                    for name, result in results.items()},
    }
    return json.dumps(content, indent=2, sort_keys=True) + "\n"


def read_baseline(path: Path) -> dict[str, dict]:
    """{metric: stored statistics} of a baseline file; errors say how to repair it."""
    repair = "fix or delete it, or rerun with --tie-update-baseline"
    try:
        content = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise ValueError(f"tie baseline {path} is not valid JSON ({error}); {repair}") from None
    if not isinstance(content, dict) or content.get("schema_version") not in (1, SCHEMA_VERSION):
        found = content.get("schema_version") if isinstance(content, dict) else None
        raise ValueError(f"tie baseline {path} has schema_version {found!r}, expected {SCHEMA_VERSION}; {repair}")
    return content["metrics"]


def baseline_violations(result, stored: dict | None, tolerance: float) -> list[str]:
    """Why one metric fails its baseline: the range grew, or the expected value moved, beyond tolerance."""
    if stored is None:
        return ["no baseline value for this metric (rerun with --tie-update-baseline)"]
    reasons = []
    if result.range > stored["range"] + tolerance:
        reasons.append(f"range {result.range:.6g} grew past baseline {stored['range']:.6g}")
    if abs(result.expected - stored["expected"]) > tolerance:
        reasons.append(f"expected {result.expected:.6g} moved from baseline {stored['expected']:.6g}")
    return reasons
