"""pytest plugin (pytest_tieaware): fixture, marker, options, baselines, summary, JSON report, xdist.

Inner sessions run in-process (pytester) except where a fresh interpreter is the point.
"""
import json
import os
import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest


@pytest.fixture(scope="module", autouse=True)
def modules_loaded_before_inner_runs():
    """pytester's in-process runs drop the modules first imported inside them. Load out here, once,
    tieaware with its compiled kernels (numba breaks when imported twice in one process) and
    hypothesis (its pytest plugin imports it lazily: ~2 s per inner run otherwise)."""
    import hypothesis  # noqa: F401

    from tieaware.testing import check_tie_stability

    check_tie_stability({"q": {"a": 1}}, {"q": {"a": 1.0, "b": 1.0}}, "mrr")


# MRR@10 of RUN: E 0.625, range 0.25 (q1's relevant d1 ties with d2), trec_eval bias -0.125, std 0.125.
DATA = '''
QRELS = {"q1": {"d1": 1, "d3": 2}, "q2": {"d2": 1}}
RUN = {"q1": {"d1": 0.5, "d2": 0.5, "d3": 0.4, "d4": 0.4}, "q2": {"d1": 0.9, "d2": 0.8}}
'''
# Same q1; q2's two docs tie too: E[MRR] 0.75, range 0.5.
MORE_TIES = {"q1": {"d1": 0.5, "d2": 0.5, "d3": 0.4, "d4": 0.4}, "q2": {"d1": 0.8, "d2": 0.8}}
# Same q1; q2's relevant doc moves to rank 1: E[MRR] 0.875, range 0.25.
BETTER_Q2 = {"q1": {"d1": 0.5, "d2": 0.5, "d3": 0.4, "d4": 0.4}, "q2": {"d1": 0.7, "d2": 0.8}}
# q1's relevant d1 falls below d2, no ties left: E[MRR] 0.5, range 0, bias 0.
WORSE_Q1 = {"q1": {"d1": 0.4, "d2": 0.5, "d3": 0.3, "d4": 0.3}, "q2": {"d1": 0.9, "d2": 0.8}}


def outcome(reprec, test: str) -> str:
    """'passed' / 'failed' / 'skipped' of one test's call (or of its setup when that failed)."""
    reports = [r for r in reprec.getreports("pytest_runtest_logreport")
               if r.nodeid.endswith("::" + test) and (r.when == "call" or r.failed)]
    return reports[0].outcome


def test_loading_the_plugin_imports_neither_numba_nor_torch():
    code = ("import pytest_tieaware.plugin, sys; "
            "assert 'numba' not in sys.modules and 'torch' not in sys.modules, "
            "sorted(m for m in ('numba', 'torch', 'tieaware') if m in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_oblivious_choices_match_the_core():
    from pytest_tieaware.settings import OBLIVIOUS_ORDERS
    from tieaware.engine import OBLIVIOUS_ORDERS as CORE_ORDERS

    assert OBLIVIOUS_ORDERS == CORE_ORDERS


def test_split_metric_names_keeps_parameters_together():
    from pytest_tieaware.settings import split_metric_names

    assert split_metric_names("ndcg@10, mrr@10\nP(rel=2,judged_only=1)@5") == [
        "ndcg@10", "mrr@10", "P(rel=2,judged_only=1)@5"]
    assert split_metric_names("P.5,10, ndcg@10,mrr@10,P.1,2,3 P") == ["P.5,10", "ndcg@10", "mrr@10", "P.1,2,3", "P"]


def test_passing_and_failing_checks_with_the_message_table(pytester):
    pytester.makepyfile(DATA + '''
def test_ok(tie_check):
    result = tie_check.assert_stable(QRELS, RUN, "mrr@10", max_range=0.25)
    assert round(result, 3) == 0.625

def test_too_wide(tie_check):
    tie_check.assert_stable(QRELS, RUN, ["mrr@10", "ndcg@10"], max_range=0.2)
''')
    result = pytester.runpytest()
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([
        "E   *tie order moves 1 of 2 metrics past their limits",
        "E   *metric*expected*obl[[]trec_eval[]]*min*max*range*bias*limit*queries with ties*status",
        "E   *mrr@10*0.6250*0.5000*0.5000*0.7500*0.2500*-0.1250*range<=0.2*1/2*FAIL: range 0.25 > 0.2",
        "E   *ndcg@10*range<=0.2*1/2*ok",
        "E   *queries with the widest mrr@10 range:",
        "E   *q1*0.7500*0.5000*0.5000*1.0000*0.5000",
    ])
    # the traceback ends in the test, not inside the plugin
    result.stdout.fnmatch_lines(["test_passing_and_failing_checks_with_the_message_table.py:9: TieInstabilityError"])


LIMITS_FILE = DATA + '''
import pytest

def test_unmarked(tie_check):
    tie_check.assert_stable(QRELS, RUN, "mrr@10")

@pytest.mark.tie_stability(max_range=0.3)
def test_marker_loose(tie_check):
    tie_check.assert_stable(QRELS, RUN, "mrr@10")

@pytest.mark.tie_stability(max_range=0.2)
def test_marker_strict(tie_check):
    tie_check.assert_stable(QRELS, RUN, "mrr@10")

@pytest.mark.tie_stability(max_range=0.3)
def test_call_beats_marker(tie_check):
    tie_check.assert_stable(QRELS, RUN, "mrr@10", max_range=0.2)
'''


def test_ini_limit_applies_and_marker_and_call_override_it(pytester):
    pytester.makeini("[pytest]\ntie_max_range = 0.2\n")
    pytester.makepyfile(LIMITS_FILE)
    reprec = pytester.inline_run()
    assert {test: outcome(reprec, test) for test in
            ("test_unmarked", "test_marker_loose", "test_marker_strict", "test_call_beats_marker")} == {
        "test_unmarked": "failed", "test_marker_loose": "passed",
        "test_marker_strict": "failed", "test_call_beats_marker": "failed"}


def test_command_line_beats_ini_and_marker_beats_command_line(pytester):
    pytester.makeini("[pytest]\ntie_max_range = 0.2\n")
    pytester.makepyfile(LIMITS_FILE)
    reprec = pytester.inline_run("--tie-max-range", "0.3")
    assert outcome(reprec, "test_unmarked") == "passed"
    assert outcome(reprec, "test_marker_strict") == "failed"


def recorded_rows(reprec, test: str) -> list[dict]:
    """The rows one test's checks put in its user_properties (its teardown report holds them all)."""
    report = next(r for r in reprec.getreports("pytest_runtest_logreport")
                  if r.nodeid.endswith("::" + test) and r.when == "teardown")
    return [json.loads(value) for name, value in report.user_properties if name == "tie_stability"]


SETTINGS_FILE = DATA + '''
import pytest

def test_default(tie_check):
    tie_check.assert_stable(QRELS, RUN)

@pytest.mark.tie_stability(metrics="mrr@10", max_abs_bias=0.2, oblivious="trec_eval")
def test_marked(tie_check):
    tie_check.assert_stable(QRELS, RUN)
'''


def test_metrics_bias_and_order_from_marker_command_line_and_ini(pytester):
    pytester.makeini("[pytest]\ntie_metrics = ndcg@10 mrr@10\ntie_oblivious = input\ntie_max_abs_bias = 0.1\n")
    pytester.makepyfile(SETTINGS_FILE)

    def settings(reprec, test):
        rows = recorded_rows(reprec, test)
        return [row["metric"] for row in rows], rows[0]["oblivious_order"], rows[0]["limits"]

    from_ini = pytester.inline_run()
    assert settings(from_ini, "test_default") == (["ndcg@10", "mrr@10"], "input", {"max_abs_bias": 0.1})
    assert outcome(from_ini, "test_default") == "failed"  # MRR under "input": bias +0.125
    assert "FAIL: |bias| 0.125 > 0.1" in from_ini.matchreport("test_default").longreprtext
    assert settings(from_ini, "test_marked") == (["mrr@10"], "trec_eval", {"max_abs_bias": 0.2})
    assert outcome(from_ini, "test_marked") == "passed"

    from_cli = pytester.inline_run("--tie-metrics", "P@1", "--tie-oblivious", "ranx", "--tie-max-abs-bias", "0.3")
    assert settings(from_cli, "test_default") == (["P@1"], "ranx", {"max_abs_bias": 0.3})
    assert outcome(from_cli, "test_default") == "passed"
    assert settings(from_cli, "test_marked") == (["mrr@10"], "trec_eval", {"max_abs_bias": 0.2})


@pytest.mark.parametrize("pyproject", [
    '[tool.pytest.ini_options]\ntie_metrics = ["ndcg@10", "mrr@10"]\ntie_max_range = 0.3\n',
    '[tool.pytest.ini_options]\ntie_metrics = "ndcg@10, mrr@10"\ntie_max_range = "0.3"\n',
    '[tool.pytest.ini_options]\ntie_metrics = """\nndcg@10\nmrr@10\n"""\ntie_max_range = 0.3\n',
    '[tool.pytest.ini_options]\ntie_metrics = ["ndcg@10 mrr@10"]\ntie_max_range = 0.3\n',
    pytest.param('[tool.pytest]\ntie_metrics = ["ndcg@10", "mrr@10"]\ntie_max_range = "0.3"\n',
                 marks=pytest.mark.skipif(pytest.version_tuple < (9,), reason="[tool.pytest] is new in pytest 9")),
], ids=["toml list", "string", "lines", "list of one string", "pytest 9 table"])
def test_tie_metrics_in_pyproject_toml_as_a_list_or_a_string(pytester, pyproject):
    pytester.makepyprojecttoml(pyproject)
    pytester.makepyfile(SETTINGS_FILE)
    reprec = pytester.inline_run()
    rows = recorded_rows(reprec, "test_default")
    assert [row["metric"] for row in rows] == ["ndcg@10", "mrr@10"]
    assert rows[0]["limits"] == {"max_range": 0.3}
    assert outcome(reprec, "test_default") == "passed"


def test_infinite_limit_in_the_call_switches_a_limit_off(pytester):
    pytester.makepyfile(DATA + '''
import math

def test_unlimited(tie_check):
    tie_check.assert_stable(QRELS, RUN, "mrr@10", max_range=math.inf)
''')
    reprec = pytester.inline_run("--tie-max-range", "0.1")
    assert outcome(reprec, "test_unlimited") == "passed"
    assert recorded_rows(reprec, "test_unlimited")[0]["limit"] == "-"


def test_check_without_metrics_says_where_to_set_them(pytester):
    pytester.makepyfile(DATA + '''
def test_no_metrics(tie_check):
    tie_check.assert_stable(QRELS, RUN, max_range=1)
''')
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*no metrics to check: pass metrics=*--tie-metrics or the tie_metrics ini key"])


def test_bad_settings_are_usage_errors_naming_the_option(pytester):
    pytester.makepyfile("def test_nothing(): pass")
    result = pytester.runpytest("--tie-max-range", "wide")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--tie-max-range: expected a number >= 0, got 'wide'"])
    result = pytester.runpytest("--tie-oblivious", "random")
    result.stderr.fnmatch_lines(["*--tie-oblivious: expected one of trec_eval, ranx, input, ir_measures, *"
                                 ", got 'random'"])
    pytester.makeini("[pytest]\ntie_max_abs_bias = -1\n")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*ini option tie_max_abs_bias: expected a number >= 0, got '-1'"])


def test_unknown_marker_argument_is_an_error(pytester):
    pytester.makepyfile(DATA + '''
import pytest

@pytest.mark.tie_stability(max_rang=0.1)
def test_typo(tie_check):
    tie_check.assert_stable(QRELS, RUN, "mrr@10")
''')
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*test_unknown_marker_argument_is_an_error.py::test_typo: tie_stability marker: unknown argument(s) "
         "[[]'max_rang'[]]; use max_range,*"])


@pytest.mark.parametrize("marker,message", [
    ("metrics=['ndcg@10', 'ndgc@10']", "Unknown metric 'ndgc@10'"),
    ("max_range=-1", "max_range must be a number >= 0"),
    ("oblivious='pytrec'", "oblivious must be one of"),
])
def test_marker_typos_are_collection_errors_naming_the_test(pytester, marker, message):
    pytester.makepyfile(test_marked=DATA + f'''
import pytest

@pytest.mark.tie_stability({marker})
def test_model(tie_check):
    tie_check.assert_stable(QRELS, RUN, "mrr@10")

def test_other():
    pass
''')
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*test_marked.py::test_model: *{message}*"])
    assert "passed" not in result.stdout.str()


def baseline_test(run: str, tolerance=1e-6) -> str:
    return DATA + f'''
RUN_NOW = {run}

def test_model(tie_check):
    tie_check.against_baseline("minilm bf16", QRELS, RUN_NOW, ["mrr@10", "ndcg@10"], tolerance={tolerance})
'''


def test_baseline_lifecycle(pytester):
    def run_with(run: str, *args, tolerance=1e-6):  # a number, or a {statistic: number} dict
        pytester.makepyfile(test_model=baseline_test(run, tolerance))
        return pytester.runpytest(*args)

    first = run_with("RUN")
    first.assert_outcomes(failed=1)
    [baseline] = (pytester.path / "test_model").iterdir()
    assert re.fullmatch(r"test_model_minilm_bf16-[0-9a-f]{12}\.json", baseline.name)
    first.stdout.fnmatch_lines(["tie baseline not found in data directory, written:", f"- {baseline}"])
    stored = json.loads(baseline.read_text())
    assert (stored["schema_version"], stored["test"], stored["name"]) == (3, "test_model", "minilm bf16")
    assert stored["metrics"]["mrr@10"]["range"] == 0.25 and stored["metrics"]["mrr@10"]["expected"] == 0.625

    run_with("RUN").assert_outcomes(passed=1)

    grown = run_with(repr(MORE_TIES))  # range grows; E[M] rises and |bias| shrinks: improvements, not failures
    grown.assert_outcomes(failed=1)
    grown.stdout.fnmatch_lines([
        f"E   *tie baseline check failed against *{baseline.name} (tolerance 1e-06):",
        "E   *mrr@10*0.6250*0.7500*0.2500*0.5000*-0.1250*0.0000*FAIL: range 0.5 grew past baseline 0.25",
    ])
    grown.stdout.fnmatch_lines(["tie baselines improved on (not failures; *",
                                "  test_model.py::test_model mrr@10: |bias| 0 shrank from baseline 0.125; "
                                "expected 0.75 rose from baseline 0.625"])
    run_with(repr(MORE_TIES), tolerance=0.3).assert_outcomes(passed=1)

    better = run_with(repr(BETTER_Q2))  # E[M] rises, range and bias stay
    better.assert_outcomes(passed=1)
    better.stdout.fnmatch_lines(["test_model.py::test_model*mrr@10*0.8750*0.2500*-0.1250*"
                                 "range<=0.2500, |bias|<=0.1250, E>=0.6250*improved",
                                 "tie baselines improved on (not failures; *",
                                 "  test_model.py::test_model mrr@10: expected 0.875 rose from baseline 0.625",
                                 "  test_model.py::test_model ndcg@10: expected 0.831* rose from baseline 0.647*"])

    worse = run_with(repr(WORSE_Q1))  # E[M] drops; range and |bias| shrink
    worse.assert_outcomes(failed=1)
    worse.stdout.fnmatch_lines(
        ["E   *mrr@10*0.6250*0.5000*0.2500*0.0000*FAIL: expected 0.5 dropped below baseline 0.625"])
    worse.stdout.fnmatch_lines(["  test_model.py::test_model mrr@10: range 0 shrank from baseline 0.25; "
                                "|bias| 0 shrank from baseline 0.125"])
    run_with(repr(WORSE_Q1), tolerance={"expected": 0.2}).assert_outcomes(passed=1)
    run_with(repr(WORSE_Q1), tolerance={"range": 0.2}).assert_outcomes(failed=1)

    updated = run_with(repr(MORE_TIES), "--tie-update-baseline")
    updated.assert_outcomes(failed=1)
    updated.stdout.fnmatch_lines(["tie baseline differs and --tie-update-baseline is set, rewritten:"])
    assert json.loads(baseline.read_text())["metrics"]["mrr@10"]["range"] == 0.5
    run_with(repr(MORE_TIES), "--tie-update-baseline").assert_outcomes(passed=1)  # nothing differs now
    run_with(repr(MORE_TIES)).assert_outcomes(passed=1)


def stats(expected, range_, bias):
    from types import SimpleNamespace

    return SimpleNamespace(expected=expected, range=range_, bias=bias)


@pytest.mark.parametrize("now,regressions,improvements", [
    ((0.5, 0.2, -0.1), [], []),
    ((0.5, 0.2 + 2e-6, -0.1), ["range 0.200002 grew past baseline 0.2"], []),
    ((0.5, 0.2 - 2e-6, -0.1), [], ["range 0.199998 shrank from baseline 0.2"]),
    ((0.5, 0.2, 0.1), [], []),  # |bias| is compared: the sign flips, the size stays
    ((0.5, 0.2, 0.1 + 2e-6), ["|bias| 0.100002 grew past baseline 0.1"], []),
    ((0.5, 0.2, -0.1 - 2e-6), ["|bias| 0.100002 grew past baseline 0.1"], []),
    ((0.5, 0.2, 0.05), [], ["|bias| 0.05 shrank from baseline 0.1"]),
    ((0.5 - 2e-6, 0.2, -0.1), ["expected 0.499998 dropped below baseline 0.5"], []),
    ((0.5 + 2e-6, 0.2, -0.1), [], ["expected 0.500002 rose from baseline 0.5"]),
    ((0.4, 0.3, 0.0), ["range 0.3 grew past baseline 0.2", "expected 0.4 dropped below baseline 0.5"],
     ["|bias| 0 shrank from baseline 0.1"]),
])
def test_baseline_changes_fail_regressions_only(now, regressions, improvements):
    from pytest_tieaware.baseline import baseline_changes, tolerances

    stored = {"expected": 0.5, "range": 0.2, "bias": -0.1}
    assert baseline_changes(stats(*now), stored, tolerances(1e-6)) == (regressions, improvements)
    assert baseline_changes(stats(*now), stored, tolerances(1)) == ([], [])


def test_tolerance_per_statistic():
    from pytest_tieaware.baseline import baseline_changes, tolerances
    from tieaware.errors import InputError

    assert tolerances({"expected": 0.1}) == {"expected": 0.1, "range": 1e-6, "bias": 1e-6}
    stored = {"expected": 0.5, "range": 0.2, "bias": -0.1}
    assert baseline_changes(stats(0.45, 0.25, -0.1), stored, tolerances({"expected": 0.1})) == (
        ["range 0.25 grew past baseline 0.2"], [])
    for bad, message in [(-1, "tolerance of expected must be a number >= 0, got -1"),
                         (float("nan"), "got nan"), (True, "got True"), ("0.1", "got '0.1'"),
                         ({"expected": -0.1}, "tolerance of expected must be a number >= 0, got -0.1"),
                         ({"mean": 0.1}, "unknown statistic(s) ['mean']; use expected, range, bias")]:
        with pytest.raises(InputError, match=re.escape(message)):
            tolerances(bad)


def test_baseline_of_another_tie_order_is_refused(pytester):
    pytester.makepyfile(test_model=baseline_test("RUN"))
    pytester.runpytest().assert_outcomes(failed=1)
    result = pytester.runpytest("--tie-oblivious", "input")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*was stored with oblivious_order 'trec_eval'; this check uses 'input', *"])
    pytester.runpytest("--tie-oblivious", "input", "--tie-update-baseline").assert_outcomes(failed=1)
    pytester.runpytest("--tie-oblivious", "input").assert_outcomes(passed=1)


def test_baseline_of_another_relevance_level_is_refused(pytester, monkeypatch):
    pytester.makepyfile(test_model=DATA + '''
import os

def test_model(tie_check):
    level = int(os.environ.get("LEVEL", "1"))
    tie_check.against_baseline("bf16", QRELS, RUN, "ndcg@10", relevance_level=level)
''')
    pytester.runpytest().assert_outcomes(failed=1)
    pytester.runpytest().assert_outcomes(passed=1)
    [baseline] = (pytester.path / "test_model").iterdir()
    assert json.loads(baseline.read_text())["relevance_level"] == 1
    monkeypatch.setenv("LEVEL", "2")  # at level 2 only q1's d3 is relevant: other numbers
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*was stored with relevance_level 1; this check uses 2, *"])
    pytester.runpytest("--tie-update-baseline").assert_outcomes(failed=1)
    pytester.runpytest().assert_outcomes(passed=1)
    content = json.loads(baseline.read_text())
    del content["relevance_level"]  # as versions 1 and 2 wrote it: no level to compare
    baseline.write_text(json.dumps(content))
    pytester.runpytest().assert_outcomes(passed=1)
    for bad in ("2", True, None):
        baseline.write_text(json.dumps(dict(content, relevance_level=bad)))
        result = pytester.runpytest()
        result.assert_outcomes(failed=1)
        assert f"has relevance_level {bad!r}, not a finite number" in result.stdout.str()


def device_test(run: str, device: str | None) -> str:
    return DATA + f'''
def test_model(tie_check):
    tie_check.against_baseline("bf16", QRELS, {run}, "mrr@10", device={device!r})
'''


def test_baselines_keyed_by_device(pytester):
    """One file per device, each kept; a device given by the call keys the file without the option."""
    def run(run: str, device, *args):
        pytester.makepyfile(test_model=device_test(run, device))
        return pytester.runpytest(*args)

    folder = pytester.path / "test_model"
    run("RUN", "gpu a").assert_outcomes(failed=1)
    [gpu_a] = folder.iterdir()
    assert re.fullmatch(r"test_model_bf16-[0-9a-f]{12}\.gpu_a\.json", gpu_a.name)
    assert json.loads(gpu_a.read_text())["device"] == "gpu a"
    run("RUN", "gpu a").assert_outcomes(passed=1)
    run(repr(MORE_TIES), "gpu b").assert_outcomes(failed=1)  # its own file, written
    run(repr(MORE_TIES), "gpu b").assert_outcomes(passed=1)
    run("RUN", "gpu a").assert_outcomes(passed=1)  # not overwritten by gpu b's
    [gpu_b] = set(folder.iterdir()) - {gpu_a}
    assert json.loads(gpu_b.read_text())["metrics"]["mrr@10"]["range"] == 0.5

    gpu_b.write_bytes(gpu_a.read_bytes())  # a file copied to another device's name is refused
    result = run(repr(MORE_TIES), "gpu b")
    result.assert_outcomes(failed=1)
    assert (f"tie baseline {gpu_b} is the baseline of check 'bf16' in 'test_model' on device 'gpu a', "
            "not of check 'bf16' in 'test_model' on device 'gpu b'") in result.stdout.str()

    from pytest_tieaware.baseline import device_label  # this machine's, as the plugin names it

    here = device_label()
    assert here.startswith(("cpu ", "cuda ")) and device_label("cpu").startswith("cpu ")
    for args in (["--tie-baseline-key", "device"], ["-o", "tie_baseline_key=device"]):
        for file in folder.iterdir():
            file.unlink()
        run("RUN", None, *args).assert_outcomes(failed=1)
        [keyed] = folder.iterdir()
        assert json.loads(keyed.read_text())["device"] == here
        assert keyed.name.endswith("." + re.sub(r"[^A-Za-z0-9]+", "_", here).strip("_") + ".json")
        run("RUN", None, *args).assert_outcomes(passed=1)
    run("RUN", None).assert_outcomes(failed=1)  # not keyed: another file
    result = run("RUN", None, "-o", "tie_baseline_key=cpu")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*ini option tie_baseline_key: expected one of none, device, got 'cpu'"])


def test_device_labels(monkeypatch):
    """CUDA devices by name (torch as already imported, here a stand-in), CPUs by architecture."""
    import platform
    from types import SimpleNamespace

    from pytest_tieaware.baseline import device_label
    from tieaware.errors import InputError

    cuda = SimpleNamespace(is_available=lambda: True, current_device=lambda: 1, device_count=lambda: 2,
                           get_device_name=lambda index: f"Fake GPU {index}")
    monkeypatch.setitem(sys.modules, "torch", SimpleNamespace(cuda=cuda))
    cpu = f"cpu {platform.machine() or 'unknown'}"
    assert [device_label(device) for device in (None, "cuda", "cuda:0", "cuda:1", "cuda:2", "cpu", "cpu:0", "mps")] \
        == ["cuda Fake GPU 1", "cuda Fake GPU 1", "cuda Fake GPU 0", "cuda Fake GPU 1", "cuda:2", cpu, "cpu:0", "mps"]
    cuda.is_available = lambda: False
    assert (device_label(), device_label("cuda:0")) == (cpu, "cuda:0")
    with pytest.raises(InputError, match="device must name a device, got ' '"):
        device_label(" ")


COLLIDING_FILE = DATA + f'''
import pytest

RUNS = {{"a": RUN, "more ties": {MORE_TIES!r}, "better q2": {BETTER_Q2!r}}}

class TestFirst:
    def test_model(self, tie_check):
        tie_check.against_baseline("bf16", QRELS, RUNS["a"], "mrr@10")

class TestSecond:
    def test_model(self, tie_check):
        tie_check.against_baseline("bf16", QRELS, RUNS["more ties"], "mrr@10")

@pytest.mark.parametrize("case,run", [("a-b", "a"), ("a_b", "more ties"), ("a b", "better q2")])
def test_param(tie_check, case, run):
    tie_check.against_baseline("bf16", QRELS, RUNS[run], "mrr@10")

def test_names(tie_check):
    tie_check.against_baseline("bf 16", QRELS, RUNS["a"], "mrr@10")
    tie_check.against_baseline("bf-16", QRELS, RUNS["better q2"], "mrr@10")
'''


def test_checks_whose_names_normalise_alike_keep_their_own_baselines(pytester):
    """Same function in two classes, parametrize ids and check names that old names mapped to one file."""
    pytester.makepyfile(test_colliding=COLLIDING_FILE)
    pytester.runpytest().assert_outcomes(failed=6)  # every check writes its file; test_names stops at its first
    pytester.runpytest("--tie-update-baseline").assert_outcomes(passed=5, failed=1)  # test_names' second
    pytester.runpytest().assert_outcomes(passed=6)
    stored = {}
    for path in (pytester.path / "test_colliding").iterdir():
        content = json.loads(path.read_text())
        stored[content["test"], content["name"]] = content["metrics"]["mrr@10"]["expected"]
    assert stored == {("TestFirst::test_model", "bf16"): 0.625, ("TestSecond::test_model", "bf16"): 0.75,
                      ("test_param[a-b-a]", "bf16"): 0.625, ("test_param[a_b-more ties]", "bf16"): 0.75,
                      ("test_param[a b-better q2]", "bf16"): 0.875,
                      ("test_names", "bf 16"): 0.625, ("test_names", "bf-16"): 0.875}


def test_baseline_under_the_old_name_is_named_not_read(pytester):
    pytester.makepyfile(test_model=baseline_test("RUN"))
    pytester.runpytest().assert_outcomes(failed=1)
    [new] = (pytester.path / "test_model").iterdir()
    old = new.with_name("test_model_minilm_bf16.json")
    new.rename(old)
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["tie baseline not found:", f"- {new}",
                                 f"{old} has the name older versions of tieaware gave this check, *"])
    assert not new.exists()
    pytester.runpytest("--tie-update-baseline").assert_outcomes(failed=1)
    assert new.is_file()
    pytester.runpytest().assert_outcomes(passed=1)


def edited(edit):
    """A mutation of a baseline file's bytes that edits its parsed JSON content."""
    def mutate(data: bytes) -> bytes:
        content = json.loads(data)
        edit(content)
        return json.dumps(content).encode()
    return mutate


def set_mrr(key, value):
    return edited(lambda content: content["metrics"]["mrr@10"].__setitem__(key, value))


BAD_BASELINES = {
    "truncated": (lambda data: data[:len(data) // 2], "is not valid JSON (Expecting"),
    "empty": (lambda data: b"", "is not valid JSON (Expecting value: line 1 column 1 (char 0))"),
    "binary": (lambda data: b"\x89PNG\r\n\x1a\n\xff" + data, "is not UTF-8 text (byte 0x89 at offset 0)"),
    "latin-1": (lambda data: data.replace(b'"trec_eval"', b'"trec_eval\xe9"'),
                "is not UTF-8 text (byte 0xe9 at offset"),
    "list": (lambda data: b"[1, 2]", "holds a JSON list, not an object"),
    "no schema_version": (edited(lambda content: content.pop("schema_version")),
                          "has schema_version None, expected one of (1, 2, 3)"),
    "schema_version as text": (edited(lambda content: content.update(schema_version="3")),
                               "has schema_version '3', expected one of (1, 2, 3)"),
    "schema_version true": (edited(lambda content: content.update(schema_version=True)),
                            "has schema_version True"),
    "no metrics": (edited(lambda content: content.pop("metrics")), 'has no "metrics" object (got None)'),
    "metrics as list": (edited(lambda content: content.update(metrics=[])), 'has no "metrics" object (got [])'),
    "metric as number": (edited(lambda content: content["metrics"].update({"mrr@10": 0.5})),
                         "metric 'mrr@10': expected an object of statistics, got 0.5"),
    "range missing": (edited(lambda content: content["metrics"]["mrr@10"].pop("range")),
                      "metric 'mrr@10': 'range' is missing"),
    "expected as text": (set_mrr("expected", "0.625"), "metric 'mrr@10': 'expected' is '0.625', not a finite number"),
    "bias null": (set_mrr("bias", None), "metric 'mrr@10': 'bias' is None, not a finite number"),
    "range NaN": (set_mrr("range", float("nan")), "metric 'mrr@10': 'range' is nan, not a finite number"),
    "range true": (set_mrr("range", True), "metric 'mrr@10': 'range' is True, not a finite number"),
    "another check's": (edited(lambda content: content.update(test="TestOther::test_model")),
                        "is the baseline of check 'minilm bf16' in 'TestOther::test_model', not of check "
                        "'minilm bf16' in 'test_model'"),
}


@pytest.mark.parametrize("damage", BAD_BASELINES)
def test_bad_baseline_file_is_a_failure_naming_it_and_updating_repairs_it(pytester, damage):
    mutate, problem = BAD_BASELINES[damage]
    pytester.makepyfile(test_model=baseline_test("RUN"))
    pytester.runpytest().assert_outcomes(failed=1)
    [baseline] = (pytester.path / "test_model").iterdir()
    baseline.write_bytes(mutate(baseline.read_bytes()))
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert f"BaselineFileError: tie baseline {baseline} {problem}" in out
    assert "; fix or delete it, or rerun with --tie-update-baseline" in out
    updated = pytester.runpytest("--tie-update-baseline")
    updated.assert_outcomes(failed=1)
    updated.stdout.fnmatch_lines(["tie baseline differs and --tie-update-baseline is set, rewritten:"])
    pytester.runpytest().assert_outcomes(passed=1)
    assert [path.name for path in baseline.parent.iterdir()] == [baseline.name]  # no temporary file left


def baseline_contents():
    """Bytes a baseline file might hold: garbage, any JSON, and JSON close to the layout written."""
    from hypothesis import strategies as st

    scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5)
    anything = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3)
                            | st.dictionaries(st.text(max_size=5), inner, max_size=3), max_leaves=8)
    statistic = st.sampled_from(["expected", "range", "bias", "tie_std"])
    metric = st.dictionaries(statistic, scalars, max_size=4) | anything
    near = st.fixed_dictionaries(
        {"schema_version": st.sampled_from([1, 2, 3, "3", True, None, 4.0]),
         "oblivious_order": st.just("trec_eval") | scalars,
         "metrics": st.dictionaries(st.sampled_from(["mrr@10", "ndcg@10"]), metric, max_size=2) | anything},
        optional={"test": st.sampled_from(["test_x", "TestA::test_x"]), "name": st.sampled_from(["n", "m"]),
                  "relevance_level": scalars})
    as_json = (anything | near).map(lambda value: json.dumps(value).encode())
    return st.binary(max_size=64) | as_json | as_json.map(lambda data: data[:len(data) // 2])


def test_any_baseline_file_is_read_or_refused_with_its_name(tmp_path):
    """Fuzz: whatever bytes a baseline file holds, reading it gives finite statistics or a BaselineFileError."""
    import math

    from hypothesis import given, settings

    from pytest_tieaware.baseline import COMPARED_STATISTICS, BaselineFileError, read_baseline

    path = tmp_path / "check.json"

    @settings(max_examples=300, deadline=None)
    @given(baseline_contents())
    def read(data):
        path.write_bytes(data)
        try:
            content = read_baseline(path, "test_x", "n")
        except BaselineFileError as error:
            assert str(error).startswith(f"tie baseline {path} ")
            return
        assert isinstance(content["oblivious_order"], str)
        assert math.isfinite(content.get("relevance_level", 1)) and not isinstance(content.get("relevance_level"), bool)
        for stored in content["metrics"].values():
            assert all(math.isfinite(stored[key]) and not isinstance(stored[key], bool)
                       for key in COMPARED_STATISTICS)

    read()


def test_baseline_path_that_is_a_folder_is_named(pytester):
    pytester.makepyfile(test_model=baseline_test("RUN"))
    pytester.runpytest().assert_outcomes(failed=1)
    [baseline] = (pytester.path / "test_model").iterdir()
    baseline.unlink()
    baseline.mkdir()
    result = pytester.runpytest("--tie-update-baseline")
    result.assert_outcomes(failed=1)
    assert f"tie baseline {baseline} is not a regular file" in result.stdout.str()


def test_baselines_are_written_by_renaming_a_complete_file(tmp_path, monkeypatch):
    from pytest_tieaware import baseline as module

    target = tmp_path / "data" / "check.json"
    module.write_atomically(target, "old\n")
    renamed = []
    real_replace = os.replace

    def replace(source, destination):
        assert Path(source).parent == target.parent and Path(source).read_text() == "new\n"
        assert target.read_text() == "old\n"  # untouched until the rename
        renamed.append(Path(destination))
        real_replace(source, destination)

    monkeypatch.setattr(os, "replace", replace)  # the rename atomic_output makes
    module.write_atomically(target, "new\n")
    assert renamed == [target] and target.read_text() == "new\n"

    def fail(source, destination):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(OSError, match="disk full"):
        module.write_atomically(target, "newer\n")
    assert target.read_text() == "new\n" and sorted(tmp_path.joinpath("data").iterdir()) == [target]


NAMES_FILE = DATA + '''
import ir_measures
import pytest

@pytest.mark.tie_stability(metrics="P.1,2")
def test_marker_list(tie_check):
    results = tie_check.against_baseline("list", QRELS, RUN)
    assert sorted(results) == ["P.1", "P.2"]

@pytest.mark.tie_stability(metrics=["success", "official"])
def test_marker_groups(tie_check):
    assert {"success_1", "P_5", "P_1000", "map", "recip_rank"} <= set(tie_check.against_baseline("groups", QRELS, RUN))

def test_object_and_one_name(tie_check):
    assert round(tie_check.against_baseline("object", QRELS, RUN, ir_measures.RR@10), 3) == 0.625
    assert round(tie_check.against_baseline("name", QRELS, RUN, "mrr@10"), 3) == 0.625
    report = tie_check.against_baseline("names", QRELS, RUN, [ir_measures.RR@10, "P.1,2"])
    assert sorted(report) == ["P.1", "P.2", "RR@10"]
'''


def test_baselines_take_the_metric_names_evaluate_takes(pytester):
    """Names that expand (P.1,2, success, official) and ir_measures objects: in markers (not a usage error)
    and in against_baseline, whose results are keyed as evaluate keys them."""
    pytester.makepyfile(test_names=NAMES_FILE)
    pytester.runpytest("-W", "ignore::UserWarning").assert_outcomes(failed=3)  # files written
    for _ in range(2):  # test_object_and_one_name writes its second, then its third file
        pytester.runpytest("-W", "ignore::UserWarning").assert_outcomes(failed=1, passed=2)
    pytester.runpytest("-W", "ignore::UserWarning").assert_outcomes(passed=3)
    reprec = pytester.inline_run("-W", "ignore::UserWarning", "--tie-metrics", "P.1,2 mrr@10")
    assert outcome(reprec, "test_marker_list") == "passed"


SUMMARY_FILE = DATA + '''
import pytest

def test_ok(tie_check):
    tie_check.assert_stable(QRELS, RUN, ["mrr@10", "ndcg@10"], max_range=0.3, dtype="bf16")

@pytest.mark.tie_stability(max_range=0.2)
def test_wide(tie_check):
    tie_check.assert_stable(QRELS, RUN, "mrr@10")

@pytest.mark.parametrize("case", range(4))
def test_many(tie_check, case):
    tie_check.assert_stable(QRELS, RUN, "mrr@10", max_abs_bias=0.2)

def test_without_checks():
    pass
'''
SUMMARY_LINES = [
    "*= tie stability =*",
    "test*metric*expected*range*bias*limit*result",
    "test_summary.py::test_ok*mrr@10*0.6250*0.2500*-0.1250*range<=0.3*pass",
    "test_summary.py::test_ok*ndcg@10*0.6473*0.0965*-0.0482*range<=0.3*pass",
    "test_summary.py::test_wide*mrr@10*0.6250*0.2500*-0.1250*range<=0.2*FAIL",
]
ROW_KEYS = {"test", "check", "metric", "expected", "oblivious", "min", "max", "range", "bias", "tie_std",
            "oblivious_order", "n_queries", "n_queries_with_ties", "limits", "limit", "passed", "violations",
            "improvements", "dtype", "baseline"}


def check_json_report(path, n_rows: int) -> list[dict]:
    report = json.loads(path.read_text())
    assert report["schema"] == "tieaware-pytest" and report["schema_version"] == 3
    environment = report["environment"]
    for package in ("tieaware", "ranx", "numba", "pytest"):
        assert environment[package] == metadata.version(package)
    assert environment["python"] == ".".join(map(str, sys.version_info[:3]))
    assert "torch" in environment and environment["dtypes"] == ["bf16"]
    assert report["counts"] == {"rows": n_rows, "passed": n_rows - 1, "failed": 1}
    assert all(set(row) == ROW_KEYS for row in report["rows"])
    return report["rows"]


def test_terminal_summary_and_json_report(pytester):
    pytester.makepyfile(test_summary=SUMMARY_FILE)
    result = pytester.runpytest("--tie-json", "reports/ties.json")
    result.assert_outcomes(passed=6, failed=1)
    result.stdout.fnmatch_lines(SUMMARY_LINES + [f"tie stability JSON: {pytester.path / 'reports' / 'ties.json'}"])
    rows = check_json_report(pytester.path / "reports" / "ties.json", n_rows=7)
    wide = next(row for row in rows if row["test"].endswith("test_wide"))
    assert wide["passed"] is False and wide["violations"] == ["range 0.25 > 0.2"]
    assert wide["limits"] == {"max_range": 0.2} and wide["check"] == "limits" and wide["dtype"] is None
    assert (wide["expected"], wide["range"], wide["bias"], wide["n_queries_with_ties"]) == (0.625, 0.25, -0.125, 1)


def test_junit_xml_properties_are_json_rows(pytester):
    import xml.etree.ElementTree as ElementTree

    pytester.makepyfile(test_summary=SUMMARY_FILE)
    pytester.runpytest("--junitxml", "junit.xml").assert_outcomes(passed=6, failed=1)
    rows = {}
    for case in ElementTree.parse(pytester.path / "junit.xml").iter("testcase"):
        for prop in case.iter("property"):
            assert prop.get("name") == "tie_stability"
            row = json.loads(prop.get("value"))
            assert set(row) == ROW_KEYS
            rows.setdefault(case.get("name"), []).append(row)
    assert sorted(rows) == ["test_many[0]", "test_many[1]", "test_many[2]", "test_many[3]", "test_ok", "test_wide"]
    [wide] = rows["test_wide"]
    assert (wide["metric"], wide["passed"], wide["violations"], wide["limits"]) == (
        "mrr@10", False, ["range 0.25 > 0.2"], {"max_range": 0.2})


def test_rows_are_strict_json():
    from pytest_tieaware.summary import strict_json

    row = {"bias": float("nan"), "limits": {"max_range": float("inf")}, "values": [float("-inf"), 1.5], "n": 2}
    assert json.loads(strict_json(row)) == {"bias": None, "limits": {"max_range": None}, "values": [None, 1.5],
                                            "n": 2}


def test_no_section_without_checks(pytester):
    pytester.makepyfile("def test_plain(): pass")
    result = pytester.runpytest()
    assert "tie stability" not in result.stdout.str()


def test_xdist_rows_reach_the_controller(pytester):
    pytester.makepyfile(test_summary=SUMMARY_FILE)
    result = pytester.runpytest_subprocess("-n", "2", "--tie-json", "ties.json")
    result.assert_outcomes(passed=6, failed=1)
    result.stdout.fnmatch_lines(["*2 workers*"])
    result.stdout.fnmatch_lines(SUMMARY_LINES[:2])
    # workers finish in any order: look for every row on its own
    for line in SUMMARY_LINES[2:] + [f"test_summary.py::test_many[[]{case}[]]*mrr@10*pass" for case in range(4)]:
        result.stdout.fnmatch_lines([line])
    rows = check_json_report(pytester.path / "ties.json", n_rows=7)
    assert sorted(row["test"] for row in rows) == sorted(
        ["test_summary.py::test_ok"] * 2 + ["test_summary.py::test_wide"]
        + [f"test_summary.py::test_many[{case}]" for case in range(4)])


PLAIN_FILE = DATA + '''
from tieaware.testing import assert_tie_stable, check_tie_stability

def test_plain_pass():
    assert_tie_stable(QRELS, RUN, ["mrr@10", "ndcg@10"], max_range=0.3, dtype="bf16")

def test_plain_fail():
    assert_tie_stable(QRELS, RUN, "mrr@10", max_range=0.2)

def test_plain_check_never_raises():
    assert not check_tie_stability(QRELS, RUN, "mrr@10", max_abs_bias=0.01).passed
'''


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]])
def test_plain_assert_tie_stable_calls_are_recorded(pytester, xdist):
    pytester.makepyfile(test_plain=PLAIN_FILE)
    run = pytester.runpytest_subprocess if xdist else pytester.runpytest
    result = run(*xdist, "--tie-json", "ties.json")
    result.assert_outcomes(passed=2, failed=1)
    for line in ["*= tie stability =*", "test_plain.py::test_plain_pass*mrr@10*0.6250*0.2500*range<=0.3*pass",
                 "test_plain.py::test_plain_fail*mrr@10*range<=0.2*FAIL",
                 "test_plain.py::test_plain_check_never_raises*mrr@10*|bias|<=0.01*FAIL"]:
        result.stdout.fnmatch_lines([line])
    report = json.loads((pytester.path / "ties.json").read_text())
    rows = report["rows"]
    assert report["counts"] == {"rows": 4, "passed": 2, "failed": 2}
    assert all(set(row) == ROW_KEYS for row in rows)
    failing = next(row for row in rows if row["test"].endswith("test_plain_fail"))
    assert failing["violations"] == ["range 0.25 > 0.2"] and failing["limits"] == {"max_range": 0.2}
    assert {row["dtype"] for row in rows if row["test"].endswith("test_plain_pass")} == {"bf16"}


def test_checks_accept_what_evaluate_accepts(pytester):
    pytester.makepyfile(DATA + '''
import pytest
from tieaware.testing import assert_tie_stable

EXTRA_RUN = dict(RUN, extra={"d1": 0.5})  # a query the qrels do not have

def test_make_comparable_and_level(tie_check):
    res = assert_tie_stable(QRELS, EXTRA_RUN, "mrr@10", make_comparable=True, relevance_level=1, max_range=1)
    fixture = tie_check.assert_stable(QRELS, EXTRA_RUN, "mrr@10", make_comparable=True, max_range=1)
    assert float(res) == float(fixture)
    strict = assert_tie_stable(QRELS, EXTRA_RUN, "mrr@10", make_comparable=True, relevance_level=99)
    assert float(strict) == 0.0
''')
    pytester.runpytest().assert_outcomes(passed=1)


def test_disable_switches_the_plugin_off(pytester):
    pytester.makepyfile(test_plain=PLAIN_FILE + '''

def test_fixture(tie_check):
    tie_check.assert_stable(QRELS, RUN, "mrr@10", max_range=0)
''')
    result = pytester.runpytest("--tie-disable", "--tie-json", "ties.json")
    result.assert_outcomes(passed=2, failed=1, skipped=1)
    assert "tie stability" not in result.stdout.str() and not (pytester.path / "ties.json").exists()
    result.stdout.fnmatch_lines(["tieaware: disabled (--tie-disable)"])


def test_report_header_shows_the_active_settings(pytester):
    pytester.makepyfile("def test_plain(): pass")
    result = pytester.runpytest("--tie-max-range", "0.005", "--tie-metrics", "ndcg@10,mrr@10")
    result.stdout.fnmatch_lines(["tieaware: default tie settings max_range=0.005, metrics=ndcg@10,mrr@10*"])
