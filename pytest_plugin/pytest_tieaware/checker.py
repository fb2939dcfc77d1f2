"""The object behind the ``tie_check`` fixture. tieaware (and with it numba) is imported by a check,
not when this module loads."""
from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import pytest

from .baseline import (
    DEFAULT_TOLERANCE,
    BaselineFileError,
    Tolerance,
    baseline_changes,
    baseline_path,
    baseline_text,
    check_id,
    device_label,
    legacy_baseline_path,
    read_baseline,
    tolerances,
    write_atomically,
)
from .settings import resolve
from .summary import strict_json, text_table

if TYPE_CHECKING:
    from tieaware.inputs import QrelsLike, RunLike
    from tieaware.metrics import MetricsLike
    from tieaware.report import EvaluationReport, MetricResult
    from tieaware.testing import Limit, TieStability

#: Key of the rows this fixture appends to ``item.user_properties`` as JSON text (how they cross
#: pytest-xdist, and what ``--junitxml`` writes as the property's value).
USER_PROPERTY = "tie_stability"


class TieCheck:
    """Tie-stability checks whose results land in the "tie stability" summary and the ``--tie-json`` report.

    Settings come from the call, else the test's ``tie_stability`` marker, else the command line
    (``--tie-max-range`` ...), else the ini file (``tie_max_range`` ...).
    """

    def __init__(self, node: pytest.Item, defaults: dict[str, Any], update_baseline: bool, baseline_key: str = "none"):
        self._node = node
        self._defaults = defaults
        self._update_baseline = update_baseline
        self._key_by_device = baseline_key == "device"

    def assert_stable(self, qrels: QrelsLike, run: RunLike, metrics: MetricsLike = None, *,
                      max_range: Limit = None, max_abs_bias: Limit = None, max_std: Limit = None,
                      oblivious: str | None = None, relevance_level: float = 1, make_comparable: bool = False,
                      dtype: object = None) -> MetricResult | EvaluationReport:
        """`tieaware.testing.assert_tie_stable` with the limits, metrics and tie order this test's
        marker, the command line or the ini file set (the call wins). ``dtype`` labels the check in
        the report (e.g. "bf16" or a torch dtype). A limit of ``math.inf`` switches off one set elsewhere.
        The check is recorded like every `assert_tie_stable` call during the test."""
        __tracebackhide__ = True
        from tieaware.testing import assert_tie_stable

        settings = resolve({"metrics": metrics, "max_range": max_range, "max_abs_bias": max_abs_bias,
                            "max_std": max_std, "oblivious": oblivious}, self._node, self._defaults)
        return assert_tie_stable(
            qrels, run, self._metric_names(settings), max_range=settings.get("max_range"),
            max_abs_bias=settings.get("max_abs_bias"), max_std=settings.get("max_std"),
            oblivious=settings.get("oblivious", "trec_eval"), relevance_level=relevance_level,
            make_comparable=make_comparable, dtype=dtype)

    def against_baseline(self, name: str, qrels: QrelsLike, run: RunLike, metrics: MetricsLike = None, *,
                         tolerance: Tolerance = DEFAULT_TOLERANCE, oblivious: str | None = None,
                         relevance_level: float = 1, make_comparable: bool = False, dtype: object = None,
                         device: object = None) -> MetricResult | EvaluationReport:
        """Compare with the stored baseline ``<module stem>/<test>_<name>-<hash>.json`` next to the test
        file (the hash is of this test's node id and ``name``: one file per check).

        Keyed by device (``<...>-<hash>.<device>.json``, one file per device) when ``device`` is given
        (a string or ``torch.device``: where the run was scored) or ``--tie-baseline-key device`` is set
        (then the device not given is this machine's: its CUDA device's name, else ``cpu <architecture>``).

        No file yet: write it and fail saying so (or, when a file of the name older versions gave the
        check exists, fail naming it without writing). Later runs fail on regressions only: a metric's
        range or |bias| grown, or its expected value dropped, by more than ``tolerance`` (a number, or
        ``{"expected": ..., "range": ..., "bias": ...}``, unset ones 1e-6); changes the other way are
        reported as improvements in the summary. A file stored under another tie order or relevance
        level fails.
        With ``--tie-update-baseline`` a file that differs is rewritten and the test fails saying so.
        """
        __tracebackhide__ = True
        from tieaware import evaluate
        from tieaware.metrics import metric_keys
        from tieaware.report import EvaluationReport
        from tieaware.testing import TieInstabilityError

        tolerance = tolerances(tolerance)
        settings = resolve({"metrics": metrics, "oblivious": oblivious}, self._node, self._defaults)
        names, single = metric_keys(self._metric_names(settings))
        order = settings.get("oblivious", "trec_eval")
        device = device_label(device) if device is not None or self._key_by_device else None
        path = baseline_path(self._node, name, device)
        shown_path = os.path.relpath(path, self._node.config.rootpath)
        # a list of metric names gives an EvaluationReport
        results = cast(EvaluationReport, evaluate(qrels, run, names, oblivious=order, relevance_level=relevance_level,
                                                  make_comparable=make_comparable))
        text = baseline_text(results, order, relevance_level, _dtype_label(dtype), check_id(self._node), name,
                             device)

        legacy = legacy_baseline_path(self._node, name)
        if device is None and not path.is_file() and not self._update_baseline and legacy.is_file():
            pytest.fail(f"tie baseline not found:\n- {path}\n{legacy} has the name older versions of tieaware gave "
                        f"this check, which other checks can share, so it is not read. Rename it to {path.name} "
                        "if it belongs to this check, or rerun with --tie-update-baseline to write the new file "
                        "from this run (then delete the old one).", pytrace=False)
        if path.exists() and not path.is_file():
            raise BaselineFileError(path, "is not a regular file")
        if not path.is_file() or (self._update_baseline and path.read_bytes() != text.encode("utf-8")):
            action = "rewritten" if path.is_file() else "written"
            banner = {"rewritten": "tie baseline differs and --tie-update-baseline is set, rewritten:",
                      "written": "tie baseline not found in data directory, written:"}[action]
            write_atomically(path, text)
            for result in results.values():
                self._record("baseline", result, {"tolerance": tolerance}, f"baseline {action}",
                             [f"baseline {action}"], dtype, shown_path)
            pytest.fail(f"{banner}\n- {path}\nRun the test again to compare against it.", pytrace=False)

        content = read_baseline(path, check_id(self._node), name, device)
        for key, now in (("oblivious_order", order), ("relevance_level", relevance_level)):
            if content.get(key, now) != now:  # versions 1 and 2 store no relevance_level
                pytest.fail(f"tie baseline {path} was stored with {key} {content[key]!r}; this check uses {now!r}, "
                            "so its numbers mean something else: rerun with --tie-update-baseline to store "
                            "this check's", pytrace=False)
        stored = content["metrics"]
        violations: dict[str, list[str]] = {}
        for metric, result in results.items():
            violations[metric], improvements = baseline_changes(result, stored.get(metric), tolerance)
            limits = {"tolerance": tolerance}
            limit = "no baseline"
            if metric in stored:
                base = stored[metric]
                limits.update(baseline_range=base["range"], baseline_bias=base["bias"],
                              baseline_expected=base["expected"])
                limit = (f"range<={base['range'] + tolerance['range']:.4f}, "
                         f"|bias|<={abs(base['bias']) + tolerance['bias']:.4f}, "
                         f"E>={base['expected'] - tolerance['expected']:.4f}")
            self._record("baseline", result, limits, limit, violations[metric], dtype, shown_path, improvements)
        if any(violations.values()):
            raise TieInstabilityError(_baseline_message(path, tolerance, results, stored, violations),
                                      results, violations)
        return results[names[0]] if single else results

    def _metric_names(self, settings: dict[str, Any]) -> MetricsLike:
        names: MetricsLike = settings.get("metrics")
        if not names:
            from tieaware.errors import InputError

            raise InputError("no metrics to check: pass metrics=..., or set them with "
                             "@pytest.mark.tie_stability(metrics=[...]), --tie-metrics or the tie_metrics ini key")
        return names

    def _record(self, check: str, result: MetricResult, limits: dict[str, Any], limit: str, violations: list[str],
                dtype: object,
                baseline: str | None = None, improvements: Sequence[str] = ()) -> None:
        self._node.user_properties.append(
            (USER_PROPERTY, strict_json(check_row(self._node.nodeid, check, result, limits, limit, violations,
                                                  _dtype_label(dtype), baseline, improvements))))


def check_row(test: str, check: str, result: MetricResult, limits: dict[str, Any], limit: str, violations: list[str],
              dtype: str | None,
              baseline: str | None = None, improvements: Sequence[str] = ()) -> dict[str, Any]:
    """One report row: the test's node id, the metric's statistics, its limits, pass/fail and, for a
    baseline check, what improved on the baseline."""
    return {"test": test, "check": check, **result.to_dict(), "limits": limits, "limit": limit,
            "passed": not violations, "violations": list(violations), "improvements": list(improvements),
            "dtype": dtype, "baseline": baseline}


def record_limit_checks(item: pytest.Item, stability: TieStability) -> None:
    """Append one row per metric of a `tieaware.testing.TieStability` to the test's user_properties."""
    for name, result in stability.results.items():
        item.user_properties.append(
            (USER_PROPERTY, strict_json(check_row(item.nodeid, "limits", result, stability.limits[name],
                                                  stability.limit_text(name), stability.violations[name],
                                                  stability.dtype))))


def _dtype_label(dtype: object) -> str | None:
    """'bf16' stays 'bf16'; torch.bfloat16 becomes 'bfloat16'."""
    return None if dtype is None else str(dtype).removeprefix("torch.")


def _baseline_message(path: Path, tolerance: dict[str, float], results: EvaluationReport, stored: dict[str, Any],
                      violations: dict[str, list[str]]) -> str:
    rows = []
    for metric, result in results.items():
        base = stored.get(metric, {})
        rows.append([metric, base.get("expected", "-"), result.expected, base.get("range", "-"), result.range,
                     base.get("bias", "-"), result.bias,
                     "FAIL: " + "; ".join(violations[metric]) if violations[metric] else "ok"])
    table = text_table(["metric", "baseline expected", "expected", "baseline range", "range", "baseline bias",
                        "bias", "status"], rows)
    return f"tie baseline check failed against {path} (tolerance {_tolerance_text(tolerance)}):\n{table}"


def _tolerance_text(tolerance: dict[str, float]) -> str:
    """'1e-06' when the three are equal, else 'expected 0.01, range 1e-06, bias 1e-06'."""
    if len(set(tolerance.values())) == 1:
        return f"{tolerance['expected']:g}"
    return ", ".join(f"{key} {value:g}" for key, value in tolerance.items())
