"""pytest11 entry point of tieaware: fixture ``tie_check``, marker ``tie_stability``, ``--tie-*`` options,
a "tie stability" terminal summary and a ``--tie-json`` report.

Every `tieaware.testing.assert_tie_stable` / `check_tie_stability` call a test makes is recorded,
through the fixture or not. Loading this module imports neither tieaware's kernels (numba) nor
torch; the first check does. Check rows travel in ``report.user_properties`` as JSON text (so
``--junitxml`` shows them as JSON) and are collected where reports arrive, so the summary and the
JSON report are complete under pytest-xdist.
``--tie-disable`` (or ``-p no:tieaware``) switches the plugin off.
"""
from __future__ import annotations

import functools
import json
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

from .baseline import write_atomically
from .checker import USER_PROPERTY, TieCheck, record_limit_checks
from .settings import BASELINE_KEYS, OPTIONS, PARSERS, baseline_key, marker_problem, session_defaults
from .summary import improvement_lines, json_report, strict_json, summary_table

MARKER_HELP = ("tie_stability(max_range=None, max_abs_bias=None, max_std=None, metrics=None, oblivious=None): "
               "limits, metrics and tie order of this test's tie_check checks (overrides --tie-* options and ini keys)")
DEFAULTS_KEY = pytest.StashKey[dict[str, Any]]()
BASELINE_KEY = pytest.StashKey[str]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("tieaware", "tie-aware retrieval evaluation")
    for key, (flag, ini_key, help_text) in OPTIONS.items():
        metavar = {"metrics": "NAMES", "oblivious": "ORDER"}.get(key, "NUMBER")
        group.addoption(flag, dest=ini_key, type=PARSERS[key], default=None, metavar=metavar,
                        help=f"{help_text} (ini: {ini_key})")
        # tie_metrics: a list in TOML (pyproject.toml), lines of names in an ini file
        if key == "metrics":
            parser.addini(ini_key, help_text, type="linelist", default=[])
        else:
            parser.addini(ini_key, help_text, type="string", default="")
    group.addoption("--tie-update-baseline", action="store_true", default=False,
                    help="rewrite tie_check.against_baseline files that differ "
                    "(like pytest-regressions' --force-regen)")
    group.addoption("--tie-baseline-key", choices=BASELINE_KEYS, default=None,
                    help="device: one baseline file per device (this machine's CUDA device name, else "
                    "'cpu <architecture>'; a check's device= argument names its own); none: one file "
                    "(default; ini: tie_baseline_key)")
    parser.addini("tie_baseline_key", "none or device: key tie baselines by device", type="string", default="none")
    group.addoption("--tie-json", metavar="PATH", default=None,
                    help="write every tie check's row and the environment to PATH as JSON")
    group.addoption("--tie-disable", action="store_true", default=False,
                    help="switch tieaware's plugin off: no recording, summary or report; tie_check tests skip")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", MARKER_HELP)
    if config.getoption("tie_disable"):
        return
    config.stash[DEFAULTS_KEY] = session_defaults(config)
    config.stash[BASELINE_KEY] = baseline_key(config)
    config.pluginmanager.register(TieCheckRecorder(), "tieaware-tie-check-recorder")
    if not hasattr(config, "workerinput"):  # pytest-xdist workers send their rows to the controller
        config.pluginmanager.register(TieStabilityReport(config), "tieaware-tie-stability-report")


def pytest_report_header(config: pytest.Config) -> str:
    if config.getoption("tie_disable"):
        return "tieaware: disabled (--tie-disable)"
    defaults = config.stash[DEFAULTS_KEY]
    if not defaults:
        return "tieaware: no default tie limits (set them per check, by marker, --tie-* options or tie_* ini keys)"
    shown = ", ".join(f"{key}={','.join(value) if isinstance(value, list) else value}"
                      for key, value in defaults.items())
    return f"tieaware: default tie settings {shown} (markers and calls override)"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A ``tie_stability`` marker with a typo (argument, limit, metric name, tie order) is a usage
    error naming the test, before any test runs."""
    for item in items:
        problem = marker_problem(item)
        if problem:
            raise pytest.UsageError(f"{item.nodeid}: {problem}")


@pytest.fixture
def tie_check(request: pytest.FixtureRequest) -> TieCheck:
    """Tie-stability checks with this test's settings: ``tie_check.assert_stable(qrels, run,
    metrics, max_range=...)`` and ``tie_check.against_baseline(name, qrels, run, metrics, tolerance=...)``."""
    config = request.config
    if config.getoption("tie_disable"):
        pytest.skip("tieaware tie checks are disabled (--tie-disable)")
    return TieCheck(request.node, config.stash[DEFAULTS_KEY], config.getoption("tie_update_baseline"),
                    config.stash[BASELINE_KEY])


class TieCheckRecorder:
    """Records every tie check a test makes (fixture or plain `assert_tie_stable`) in its user_properties."""

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Generator[None, None, None]:
        from tieaware.check_observers import observe_checks  # pure Python: loads no numba

        with observe_checks(functools.partial(record_limit_checks, item)):
            yield


class TieStabilityReport:
    """Collects check rows from test reports (local or from xdist workers); prints and writes them."""

    def __init__(self, config: pytest.Config):
        self.rows: list[dict[str, Any]] = []
        json_path = config.getoption("tie_json")
        self.json_path = Path(config.invocation_params.dir, json_path) if json_path else None

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        # user_properties accumulate over setup, call and teardown: the teardown report holds them all once.
        if report.when == "teardown":
            self.rows.extend(json.loads(value) for name, value in report.user_properties
                             if name == USER_PROPERTY and isinstance(value, str))

    def pytest_sessionfinish(self) -> None:
        if self.json_path is not None:
            write_atomically(self.json_path, strict_json(json_report(self.rows), indent=2) + "\n")

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if self.rows:
            terminalreporter.write_sep("=", "tie stability")
            for line in summary_table(self.rows).splitlines():
                terminalreporter.write_line(line, red=line.endswith("FAIL"))
            improved = improvement_lines(self.rows)
            if improved:
                terminalreporter.write_line("tie baselines improved on (not failures; --tie-update-baseline "
                                            "stores the new values):")
                for line in improved:
                    terminalreporter.write_line(f"  {line}", green=True)
        if self.json_path is not None:
            terminalreporter.write_line(f"tie stability JSON: {self.json_path}")
