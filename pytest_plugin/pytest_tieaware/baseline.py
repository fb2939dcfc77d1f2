"""Baseline files of ``tie_check.against_baseline``, in a folder named after the test module, as
pytest-regressions lays out its data: ``<test module dir>/<test module stem>/<slug>-<hash>.json``,
where the hash is of the test's node id within the module and the check's name, exactly."""
from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import re
import tempfile
from pathlib import Path

import pytest

from tieaware.errors import InputError

SCHEMA_VERSION = 3  # 3: "test" and "name" stored; 2: "std" renamed "tie_std"; versions 1 and 2 are read too
READABLE_VERSIONS = (1, 2, SCHEMA_VERSION)
COMPARED_STATISTICS = ("expected", "range", "bias")  # in every version
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


class BaselineFileError(InputError):
    """A baseline file that cannot be compared against: unreadable, not UTF-8 JSON, or not the layout
    `baseline_text` writes. The message names the file, what is wrong and how to repair it."""

    def __init__(self, path: Path, problem: str):
        super().__init__(f"tie baseline {path} {problem}; fix or delete it, or rerun with --tie-update-baseline")


def read_baseline(path: Path, test: str, name: str) -> dict[str, dict]:
    """{metric: stored statistics} of the baseline file of check `name` in `test` (node id within the module).

    Raises:
        BaselineFileError: the file is not UTF-8, not JSON, of another schema_version, not the layout
            written here (a statistic missing or not a finite number), or the file of another check.
    """
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as error:
        raise BaselineFileError(path, f"is not UTF-8 text (byte {error.object[error.start]:#04x} at offset "
                                f"{error.start})") from None
    except OSError as error:
        raise BaselineFileError(path, f"cannot be read ({error.strerror or error})") from None
    try:
        content = json.loads(text)
    except json.JSONDecodeError as error:
        raise BaselineFileError(path, f"is not valid JSON ({error})") from None
    if not isinstance(content, dict):
        raise BaselineFileError(path, f"holds a JSON {type(content).__name__}, not an object")
    version = content.get("schema_version")
    if isinstance(version, bool) or version not in READABLE_VERSIONS:
        raise BaselineFileError(path, f"has schema_version {version!r}, expected one of {READABLE_VERSIONS}")
    owner = (content.get("test", test), content.get("name", name))  # versions 1 and 2 do not say
    if owner != (test, name):
        raise BaselineFileError(path, f"is the baseline of check {owner[1]!r} in {owner[0]!r}, not of check "
                                f"{name!r} in {test!r}")
    metrics = content.get("metrics")
    if not isinstance(metrics, dict):
        raise BaselineFileError(path, f"has no \"metrics\" object (got {metrics!r:.60})")
    for metric, stored in metrics.items():
        if not isinstance(stored, dict):
            raise BaselineFileError(path, f"metric {metric!r}: expected an object of statistics, got {stored!r:.60}")
        for key in COMPARED_STATISTICS:
            value = stored.get(key)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                found = "missing" if key not in stored else f"{value!r:.60}, not a finite number"
                raise BaselineFileError(path, f"metric {metric!r}: {key!r} is {found}")
    return metrics


def write_atomically(path: Path, text: str) -> None:
    """Write `text` to `path` (UTF-8) under a temporary name in the same folder, then rename it over
    `path`: readers see the old file or the new one, never a part (also when the run is killed)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="") as file:
            file.write(text)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


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
