"""`python -m tieaware` runs the console script."""
import json
import subprocess
import sys

import tieaware


def test_python_dash_m_tieaware_is_the_cli(tmp_path):
    qrels = tmp_path / "qrels"
    run = tmp_path / "run"
    qrels.write_text("q1 0 d1 1\n")
    run.write_text("q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 0.5 t\n")
    done = subprocess.run([sys.executable, "-m", "tieaware", "eval", str(qrels), str(run), "-m", "mrr", "-o", "json"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    [row] = json.loads(done.stdout)
    assert (row["metric"], row["expected"], row["min"], row["max"]) == ("mrr", 0.75, 0.5, 1.0)
    version = subprocess.run([sys.executable, "-m", "tieaware", "--version"], capture_output=True, text=True,
                             timeout=60)
    assert version.stdout.strip() == f"tieaware {tieaware.__version__}"


def test_console_script_is_run_which_freezes_the_collector_and_keeps_exit_work(tmp_path):
    """The console script is `cli.run`: `main`'s exit code and output, then the objects frozen out of the
    collector (`gc.freeze`) before the interpreter exits; atexit handlers still run and the output is whole."""
    from importlib.metadata import entry_points

    [script] = [point for point in entry_points(group="console_scripts") if point.name == "tieaware"]
    assert script.value == "tieaware.cli:run"
    qrels, run, table = tmp_path / "qrels", tmp_path / "run", tmp_path / "per_query.tsv"
    qrels.write_text("q1 0 d1 1\n")
    run.write_text("q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 0.5 t\n")
    code = ("import atexit, gc, sys, tieaware.cli; atexit.register(print, 'atexit ran'); "
            "sys.argv = ['tieaware', *sys.argv[1:]]; rc = tieaware.cli.run(); "
            "print('frozen', gc.get_freeze_count() > 0); sys.exit(rc)")
    done = subprocess.run([sys.executable, "-c", code, "eval", str(qrels), str(run), "-m", "mrr", "-o", "json",
                           "--per-query-out", str(table)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    body, frozen, ran = done.stdout.rsplit("\n", 3)[:3]
    assert json.loads(body)[0]["expected"] == 0.75
    assert (frozen, ran) == ("frozen True", "atexit ran")
    assert table.read_text().splitlines()[-1].startswith("#sha256\t")
