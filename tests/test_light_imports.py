"""The light paths (the command line on TREC files, `evaluate` on dicts or TREC paths, the readers,
`assert_tie_stable`) import no module of `FORBIDDEN`: each runs in a fresh interpreter, prints the
numbers it got, and the test compares them with an in-process `tieaware.evaluate` on the same data."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import tieaware
from tieaware.kernels import backend
from tieaware.report import SUMMARY_COLUMNS

#: modules no light path may import (tabulate: it reads its package metadata on import; `display.plain_table`
#: lays out its tables); numba too where the kernels compiled ahead of time serve
#: (`tieaware.kernels.backend`), which also shows that no call on these paths fell back to the JIT
FORBIDDEN = ("pandas", "pyarrow", "tabulate") + (() if backend.COMPILED is None else ("numba", "llvmlite"))

CRANFIELD = Path(tieaware.__file__).resolve().parent / "datasets" / "cranfield"
QRELS = str(CRANFIELD / "qrels.trec.gz")
RUN = str(CRANFIELD / "runs" / "minilm-bf16.trec.gz")
METRICS = ("ndcg_cut.10", "map", "recip_rank")  # on Cranfield: printed as {metric: expected}
QRELS_DICT = {"q1": {"d1": 1, "d2": 0, "d3": 2}, "q2": {"d4": 1}, "q3": {"d5": 1, "d6": 1}}
RUN_DICT = {"q1": {"d1": 0.5, "d2": 0.5, "d3": 0.2, "d7": 0.9}, "q2": {"d4": 0.3, "d8": 0.3, "d9": 0.1},
            "q3": {"d5": 0.7, "d6": 0.1, "d10": 0.7}}
SMALL_METRICS = ("ndcg@10", "map", "mrr")  # on the dicts: printed as {"metric statistic": value}

# What every snippet starts with: the data above, `show` (the numbers, one JSON line) and `cli`
# (the stdout of ``python -m tieaware eval QRELS RUN -m METRIC ...``, which must exit 0).
PRELUDE = f"""
import contextlib, csv, io, json, runpy, sys
QRELS, RUN, METRICS, SMALL_METRICS = {QRELS!r}, {RUN!r}, {METRICS!r}, {SMALL_METRICS!r}
QRELS_DICT, RUN_DICT, STATISTICS = {QRELS_DICT!r}, {RUN_DICT!r}, {tuple(SUMMARY_COLUMNS)!r}

def show(values):
    print(json.dumps(values))

def cli(*options):
    sys.argv = ["tieaware", "eval", QRELS, RUN, *(arg for metric in METRICS for arg in ("-m", metric)), *options]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            runpy.run_module("tieaware", run_name="__main__")
        except SystemExit as stop:
            assert stop.code == 0, stop.code
    return out.getvalue()
"""
EPILOGUE = f"\nprint(json.dumps([name for name in {FORBIDDEN!r} if name in sys.modules]))\n"

# light path -> snippet that prints its numbers with `show`
PATHS = {
    "cli table": "show({row[1]: float(row[2]) for row in (line.split() for line in cli().splitlines()[1:])})",
    # per-query rows have a query; the means have none, so one field less
    "cli table -q": "rows = [line.split() for line in cli('-q').splitlines()[1:]]\n"
                    "assert len(rows) == 226 * len(METRICS), len(rows)\n"
                    "show({row[1]: float(row[2]) for row in rows if len(row) == 9})",
    "cli -o trec": "lines = [line.split('\\t') for line in cli('-o', 'trec').splitlines()]\n"
                   "assert {query for name, query, value in lines} == {'all'}\n"
                   "show({name.strip().replace('cut_', 'cut.'): float(value) for name, query, value in lines})",
    "cli -o json": "show({row['metric']: row['expected'] for row in json.loads(cli('-o', 'json'))})",
    "cli -o tsv": "rows = csv.DictReader(io.StringIO(cli('-o', 'tsv')), delimiter='\\t')\n"
                  "show({row['metric']: float(row['expected']) for row in rows})",
    "evaluate dicts": "import tieaware\n"
                      "result = tieaware.evaluate(QRELS_DICT, RUN_DICT, 'ndcg@10')\n"
                      "assert float(result) == result.expected\n"
                      "show({f'ndcg@10 {statistic}': getattr(result, statistic) for statistic in STATISTICS})",
    "report table": "import tieaware\n"
                    "table = tieaware.evaluate(QRELS_DICT, RUN_DICT, list(SMALL_METRICS)).table()\n"
                    "rows = [line.split() for line in table.splitlines()[1:]]\n"
                    "show({f'{row[0]} {s}': float(value) for row in rows for s, value in zip(STATISTICS, row[1:])})",
    "evaluate paths": "import tieaware\n"
                      "report = tieaware.evaluate(QRELS, RUN, list(METRICS))\n"
                      "show({name: float(result) for name, result in report.items()})",
    "read_trec_run and read_trec_qrels": "import tieaware\n"
                                         "qrels, run = tieaware.read_trec_qrels(QRELS), tieaware.read_trec_run(RUN)\n"
                                         "report = tieaware.evaluate(qrels, run, list(METRICS))\n"
                                         "show({name: float(result) for name, result in report.items()})",
    "assert_tie_stable": "from tieaware.testing import assert_tie_stable\n"
                         "report = assert_tie_stable(QRELS_DICT, RUN_DICT, list(SMALL_METRICS), max_range=1.0)\n"
                         "try:\n"
                         "    assert_tie_stable(QRELS_DICT, RUN_DICT, 'mrr', max_range=0.0)\n"
                         "except AssertionError as error:\n"
                         "    assert 'queries with the widest mrr range' in str(error), str(error)\n"
                         "else:\n"
                         "    raise AssertionError('max_range=0 passed')\n"
                         "show({f'{name} range': result.range for name, result in report.items()})",
}


@pytest.fixture(scope="module")
def reference() -> dict:
    """The numbers every snippet may print, from `tieaware.evaluate` in this process."""
    values = {name: float(result) for name, result in tieaware.evaluate(QRELS, RUN, list(METRICS)).items()}
    for name, result in tieaware.evaluate(QRELS_DICT, RUN_DICT, list(SMALL_METRICS)).items():
        values.update({f"{name} {statistic}": getattr(result, statistic) for statistic in SUMMARY_COLUMNS})
    return values


@pytest.mark.parametrize("path", PATHS)
def test_light_path_imports_nothing_forbidden(path, reference):
    source = str(Path(tieaware.__file__).resolve().parents[1])  # this tieaware, not another one installed
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [source, os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run([sys.executable, "-c", PRELUDE + PATHS[path] + EPILOGUE], capture_output=True, text=True,
                          env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    *_, printed, loaded = proc.stdout.splitlines()
    assert json.loads(loaded) == [], f"{path} imported {loaded} (python -X importtime shows by what)"
    values = json.loads(printed)
    assert values and set(values) <= set(reference), sorted(values)
    assert values == pytest.approx({key: reference[key] for key in values}, abs=5e-5)  # tables print 4 decimals
