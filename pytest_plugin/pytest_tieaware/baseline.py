"""Baseline files of ``tie_check.against_baseline``, in a folder named after the test module, as
pytest-regressions lays out its data: ``<test module dir>/<test module stem>/<slug>-<hash>.json``,
where the hash is of the test's node id within the module and the check's name, exactly."""
from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest

SCHEMA_VERSION = 3  # 3: "test" and "name" stored; 2: "std" renamed "tie_std"; versions 1 and 2 are read too
HASH_LENGTH = 12  # hex digits of sha256: 48 bits
SLUG_LENGTH = 80
STORED_STATISTICS = ("expected", "oblivious", "min", "max", "range", "bias", "tie_std",
                     "n_queries", "n_queries_with_ties")


def check_id(node: pytest.Item) -> str:
    """The test's node id after its module: ``TestA::test_x[1]`` of ``dir/test_m.py::TestA::test_x[1]``."""
    chain = node.listchain()
    files = [i for i, part in enumerate(chain) if isinstance(part, pytest.File)]
    return "::".join(part.name for part in chain[files[-1] + 1 if files else -1:])


def baseline_path(node: pytest.Item, name: str) -> Path:
    """The baseline file of check `name` in test `node`: a readable slug of both, then the first
    HASH_LENGTH hex digits of sha256 over the exact node id within the module and the name, so checks
    whose slugs coincide (classes, parametrize ids, punctuation) get different files."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"against_baseline needs a non-empty name (it names the baseline file), got {name!r}")
    module = Path(node.path)
    test = check_id(node)
    digest = hashlib.sha256(f"{test}\0{name}".encode("utf-8", "surrogatepass")).hexdigest()[:HASH_LENGTH]
    slug = re.sub(r"[^A-Za-z0-9]+", "_", f"{test}_{name}").strip("_")[:SLUG_LENGTH]
    return module.parent / module.stem / f"{slug}-{digest}.json"


def legacy_baseline_path(node: pytest.Item, name: str) -> Path:
    """Where tieaware's plugin kept this check's baseline before names carried a hash
    (``<test name>_<name>.json``, non-word characters as ``_``): a name that several checks can share."""
    module = Path(node.path)
    return module.parent / module.stem / (re.sub(r"\W", "_", node.name) + "_" + re.sub(r"\W", "_", name) + ".json")


def baseline_text(results, oblivious_order: str, dtype: str | None, test: str, name: str) -> str:
    """What a baseline file holds for these results: the check it belongs to (``test``: node id within
    the module; ``name``) and the summary statistics of each metric."""
    content = {
        "schema_version": SCHEMA_VERSION,
        "test": test,
        "name": name,
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
    if not isinstance(content, dict) or content.get("schema_version") not in (1, 2, SCHEMA_VERSION):
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
