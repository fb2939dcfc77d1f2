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
