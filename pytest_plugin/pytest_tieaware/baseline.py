"""Baseline files of ``tie_check.against_baseline``, in a folder named after the test module, as
pytest-regressions lays out its data: ``<test module dir>/<test module stem>/<slug>-<hash>[.<device>].json``,
where the hash is of the test's node id within the module, the check's name and (when keyed by device)
the device, exactly."""
from __future__ import annotations

import hashlib
import json
import platform
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tieaware.arguments import is_finite, is_limit
from tieaware.errors import InputError
from tieaware.outputs import atomic_output

if TYPE_CHECKING:
    from tieaware.report import EvaluationReport, MetricResult

#: a baseline tolerance: one number for the three statistics, or {"expected"|"range"|"bias": number}
Tolerance = float | Mapping[str, float]

#: 3: "test", "name", "device" and "relevance_level" stored; 2: "std" renamed "tie_std". 1 and 2 are read too.
SCHEMA_VERSION = 3
READABLE_VERSIONS = (1, 2, SCHEMA_VERSION)
COMPARED_STATISTICS = ("expected", "range", "bias")  # in every version
DEFAULT_TOLERANCE = 1e-6
HASH_LENGTH = 12  # hex digits of sha256: 48 bits
SLUG_LENGTH = 80
STORED_STATISTICS = ("expected", "oblivious", "min", "max", "range", "bias", "tie_std",
                     "n_queries", "n_queries_with_ties")


def check_id(node: pytest.Item) -> str:
    """The test's node id after its module: ``TestA::test_x[1]`` of ``dir/test_m.py::TestA::test_x[1]``."""
    chain = node.listchain()
    files = [i for i, part in enumerate(chain) if isinstance(part, pytest.File)]
    return "::".join(part.name for part in chain[files[-1] + 1 if files else -1:])


def baseline_path(node: pytest.Item, name: str, device: str | None = None) -> Path:
    """The baseline file of check `name` in test `node` (on `device`, when baselines are keyed by
    device): a readable slug of them, then the first HASH_LENGTH hex digits of sha256 over the exact
    node id within the module, the name and the device, so checks whose slugs coincide (classes,
    parametrize ids, punctuation) get different files."""
    if not isinstance(name, str) or not name:
        raise InputError(f"against_baseline needs a non-empty name (it names the baseline file), got {name!r}")
    module = Path(node.path)
    test = check_id(node)
    key = f"{test}\0{name}" if device is None else f"{test}\0{name}\0{device}"
    digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:HASH_LENGTH]
    slug = _slug(f"{test}_{name}")[:SLUG_LENGTH]
    on = "" if device is None else "." + _slug(device)[:SLUG_LENGTH]
    return module.parent / module.stem / f"{slug}-{digest}{on}.json"


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", text).strip("_")


def device_label(device: object = None) -> str:
    """The device part of a baseline's key. ``None``: this machine's, the name of the current CUDA device
    when torch (already imported: this never imports it) sees one, else ``cpu <architecture>``. A
    ``torch.device`` or a string: ``cpu`` -> ``cpu <architecture>``; ``cuda[:N]`` -> ``cuda <device name>``
    when torch sees that device; anything else as given (``"mps"``, ``"tpu v5e"``)."""
    torch = sys.modules.get("torch")
    cuda = torch.cuda if torch is not None and torch.cuda.is_available() else None
    if device is None:
        return f"cuda {cuda.get_device_name(cuda.current_device())}" if cuda is not None else _cpu()
    text = str(device)
    kind, _, index = text.partition(":")
    if kind == "cpu" and not index:
        return _cpu()
    if kind == "cuda" and cuda is not None and (not index or index.isdigit() and int(index) < cuda.device_count()):
        return f"cuda {cuda.get_device_name(int(index) if index else cuda.current_device())}"
    if not text.strip():
        raise InputError(f"device must name a device, got {device!r}")
    return text


def _cpu() -> str:
    return f"cpu {platform.machine() or 'unknown'}"


def legacy_baseline_path(node: pytest.Item, name: str) -> Path:
    """Where tieaware's plugin kept this check's baseline before names carried a hash
    (``<test name>_<name>.json``, non-word characters as ``_``): a name that several checks can share."""
    module = Path(node.path)
    return module.parent / module.stem / (re.sub(r"\W", "_", node.name) + "_" + re.sub(r"\W", "_", name) + ".json")


def baseline_text(results: EvaluationReport, oblivious_order: str, relevance_level: float, dtype: str | None, test: str,
                  name: str, device: str | None = None) -> str:
    """What a baseline file holds for these results: the check it belongs to (``test``: node id within
    the module; ``name``; ``device`` when keyed by device, else null), what defines the numbers (tie
    order, relevance level) and the summary statistics of each metric."""
    content = {
        "schema_version": SCHEMA_VERSION,
        "test": test,
        "name": name,
        "device": device,
        "oblivious_order": oblivious_order,
        "relevance_level": relevance_level,
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


def read_baseline(path: Path, test: str, name: str, device: str | None = None) -> dict[str, Any]:
    """The content of the baseline file of check `name` in `test` (node id within the module) on
    `device` (None: not keyed by device), checked:
    ``content["metrics"]`` maps each metric to its stored statistics.

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
    owner = (content.get("test", test), content.get("name", name), content.get("device"))  # versions 1, 2: no keys
    if owner != (test, name, device):
        def check(test: object, name: object, device: object) -> str:
            return f"check {name!r} in {test!r}" + ("" if device is None else f" on device {device!r}")
        raise BaselineFileError(path, f"is the baseline of {check(*owner)}, not of {check(test, name, device)}")
    if not isinstance(content.get("oblivious_order"), str):
        raise BaselineFileError(path, f"has oblivious_order {content.get('oblivious_order')!r}, not a tie order name")
    level = content.get("relevance_level", 1)  # versions 1 and 2 do not store it
    if not is_finite(level):
        raise BaselineFileError(path, f"has relevance_level {level!r}, not a finite number")
    metrics = content.get("metrics")
    if not isinstance(metrics, dict):
        raise BaselineFileError(path, f"has no \"metrics\" object (got {metrics!r:.60})")
    for metric, stored in metrics.items():
        if not isinstance(stored, dict):
            raise BaselineFileError(path, f"metric {metric!r}: expected an object of statistics, got {stored!r:.60}")
        for key in COMPARED_STATISTICS:
            value = stored.get(key)
            if not is_finite(value):
                found = "missing" if key not in stored else f"{value!r:.60}, not a finite number"
                raise BaselineFileError(path, f"metric {metric!r}: {key!r} is {found}")
    return content


def write_atomically(path: Path, text: str) -> None:
    """Write `text` to `path` (UTF-8) under a temporary name in the same folder, then rename it over
    `path`: readers see the old file or the new one, never a part (also when the run is killed)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_output(path) as temporary:
        temporary.write_text(text, encoding="utf-8", newline="")


def tolerances(tolerance: Tolerance) -> dict[str, float]:
    """{"expected", "range", "bias"} -> tolerance, from one number >= 0 for all three or a mapping
    that sets some of them (the others DEFAULT_TOLERANCE)."""
    if isinstance(tolerance, Mapping):
        unknown = sorted(set(tolerance) - set(COMPARED_STATISTICS), key=str)
        if unknown:
            raise InputError(f"tolerance: unknown statistic(s) {unknown}; use {', '.join(COMPARED_STATISTICS)}")
        out: dict[str, Any] = {key: tolerance.get(key, DEFAULT_TOLERANCE) for key in COMPARED_STATISTICS}
    else:
        out = dict.fromkeys(COMPARED_STATISTICS, tolerance)
    for key, value in out.items():
        if not is_limit(value):
            raise InputError(f"tolerance of {key} must be a number >= 0, got {value!r}")
    return {key: float(value) for key, value in out.items()}


def baseline_changes(result: MetricResult, stored: dict[str, Any] | None,
                     tolerance: dict[str, float]) -> tuple[list[str], list[str]]:
    """(regressions, improvements) of one metric against its stored statistics, each beyond its
    tolerance: Range and |Bias| growing or E[M] dropping are regressions; the reverse improvements."""
    if stored is None:
        return ["no baseline value for this metric (rerun with --tie-update-baseline)"], []
    regressions, improvements = [], []
    range_now, range_then = result.range, stored["range"]
    if range_now > range_then + tolerance["range"]:
        regressions.append(f"range {range_now:.6g} grew past baseline {range_then:.6g}")
    elif range_now < range_then - tolerance["range"]:
        improvements.append(f"range {range_now:.6g} shrank from baseline {range_then:.6g}")
    bias_now, bias_then = abs(result.bias), abs(stored["bias"])
    if bias_now > bias_then + tolerance["bias"]:
        regressions.append(f"|bias| {bias_now:.6g} grew past baseline {bias_then:.6g}")
    elif bias_now < bias_then - tolerance["bias"]:
        improvements.append(f"|bias| {bias_now:.6g} shrank from baseline {bias_then:.6g}")
    expected_now, expected_then = result.expected, stored["expected"]
    if expected_now < expected_then - tolerance["expected"]:
        regressions.append(f"expected {expected_now:.6g} dropped below baseline {expected_then:.6g}")
    elif expected_now > expected_then + tolerance["expected"]:
        improvements.append(f"expected {expected_now:.6g} rose from baseline {expected_then:.6g}")
    return regressions, improvements
