"""The object behind the ``tie_check`` fixture. tieaware (and with it numba) is imported by a check,
not when this module loads."""
from __future__ import annotations

import math
import os

import pytest

from .baseline import baseline_path, baseline_text, baseline_violations, read_baseline
from .settings import resolve
from .summary import text_table

#: Key of the rows this fixture appends to ``item.user_properties`` (how they cross pytest-xdist).
USER_PROPERTY = "tie_stability"


class TieCheck:
    """Tie-stability checks whose results land in the "tie stability" summary and the ``--tie-json`` report.

    Settings come from the call, else the test's ``tie_stability`` marker, else the command line
    (``--tie-max-range`` ...), else the ini file (``tie_max_range`` ...).
    """

    def __init__(self, node: pytest.Item, defaults: dict, update_baseline: bool):
        self._node = node
        self._defaults = defaults
        self._update_baseline = update_baseline

    def assert_stable(self, qrels, run, metrics=None, *, max_range=None, max_abs_bias=None, max_std=None,
                      oblivious: str | None = None, relevance_level: float = 1, make_comparable: bool = False,
                      dtype=None):
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

    def against_baseline(self, name: str, qrels, run, metrics=None, *, tolerance: float = 1e-6,
                         oblivious: str | None = None, relevance_level: float = 1, make_comparable: bool = False,
                         dtype=None):
        """Compare with the stored baseline ``<module stem>/<test>_<name>.json`` next to the test file.

        No file yet: write it and fail saying so. Later runs fail when a metric's range grows past
        the stored one + ``tolerance`` or its expected value moves by more than ``tolerance``.
        With ``--tie-update-baseline`` a file that differs is rewritten and the test fails saying so.
        """
        __tracebackhide__ = True
        from tieaware import evaluate
        from tieaware.metrics import metric_keys
        from tieaware.testing import TieInstabilityError

        if isinstance(tolerance, bool) or not isinstance(tolerance, (int, float)) \
                or math.isnan(tolerance) or tolerance < 0:
            from tieaware.errors import InputError

            raise InputError(f"tolerance must be a number >= 0, got {tolerance!r}")
        settings = resolve({"metrics": metrics, "oblivious": oblivious}, self._node, self._defaults)
        names, single = metric_keys(self._metric_names(settings))
        order = settings.get("oblivious", "trec_eval")
        path = baseline_path(self._node, name)
        shown_path = os.path.relpath(path, self._node.config.rootpath)
        results = evaluate(qrels, run, names, oblivious=order,
                           relevance_level=relevance_level, make_comparable=make_comparable)
        text = baseline_text(results, order, _dtype_label(dtype))

        if not path.is_file() or (self._update_baseline and path.read_text(encoding="utf-8") != text):
            action = "rewritten" if path.is_file() else "written"
            banner = {"rewritten": "tie baseline differs and --tie-update-baseline is set, rewritten:",
                      "written": "tie baseline not found in data directory, written:"}[action]
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            for result in results.values():
                self._record("baseline", result, {"tolerance": float(tolerance)}, f"baseline {action}",
                             [f"baseline {action}"], dtype, shown_path)
            pytest.fail(f"{banner}\n- {path}\nRun the test again to compare against it.", pytrace=False)

        stored = read_baseline(path)
        violations = {}
        for metric, result in results.items():
            violations[metric] = baseline_violations(result, stored.get(metric), tolerance)
            limits = {"tolerance": float(tolerance)}
            limit = "no baseline"
            if metric in stored:
                limits.update(baseline_range=stored[metric]["range"], baseline_expected=stored[metric]["expected"])
                limit = (f"range<={stored[metric]['range']:.4f}, E={stored[metric]['expected']:.4f}"
                         f" (tol {tolerance:g})")
            self._record("baseline", result, limits, limit, violations[metric], dtype, shown_path)
        if any(violations.values()):
            raise TieInstabilityError(_baseline_message(path, tolerance, results, stored, violations),
                                      results, violations)
        return results[names[0]] if single else results

    def _metric_names(self, settings: dict):
        names = settings.get("metrics")
        if not names:
            from tieaware.errors import InputError

            raise InputError("no metrics to check: pass metrics=..., or set them with "
                             "@pytest.mark.tie_stability(metrics=[...]), --tie-metrics or the tie_metrics ini key")
        return names

    def _record(self, check: str, result, limits: dict, limit: str, violations: list[str], dtype,
                baseline: str | None = None) -> None:
        self._node.user_properties.append(
            (USER_PROPERTY, check_row(self._node.nodeid, check, result, limits, limit, violations,
                                      _dtype_label(dtype), baseline)))


def check_row(test: str, check: str, result, limits: dict, limit: str, violations: list[str], dtype: str | None,
              baseline: str | None = None) -> dict:
    """One report row: the test's node id, the metric's statistics, its limits and pass/fail."""
    return {"test": test, "check": check, **result.to_dict(), "limits": limits, "limit": limit,
            "passed": not violations, "violations": list(violations), "dtype": dtype, "baseline": baseline}


def record_limit_checks(item: pytest.Item, stability) -> None:
    """Append one row per metric of a `tieaware.testing.TieStability` to the test's user_properties."""
    for name, result in stability.results.items():
        item.user_properties.append(
            (USER_PROPERTY, check_row(item.nodeid, "limits", result, stability.limits[name],
                                      stability.limit_text(name), stability.violations[name], stability.dtype)))


def _dtype_label(dtype) -> str | None:
    """'bf16' stays 'bf16'; torch.bfloat16 becomes 'bfloat16'."""
    return None if dtype is None else str(dtype).removeprefix("torch.")


def _baseline_message(path, tolerance: float, results, stored: dict, violations: dict) -> str:
    rows = []
    for metric, result in results.items():
        base = stored.get(metric, {})
        rows.append([metric, base.get("expected", "-"), result.expected, base.get("range", "-"), result.range,
                     "FAIL: " + "; ".join(violations[metric]) if violations[metric] else "ok"])
    table = text_table(["metric", "baseline expected", "expected", "baseline range", "range", "status"], rows)
    return f"tie baseline check failed against {path} (tolerance {tolerance:g}):\n{table}"
