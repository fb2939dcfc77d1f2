"""A newcomer's first minutes: import time, the first `tieaware.evaluate` with an empty numba cache,
and what the pytest plugin's checks add to a CI job.

Every measurement runs in a fresh subprocess, from a temporary folder outside the checkout; "empty
cache" ones get an empty NUMBA_CACHE_DIR (a new temporary folder), "filled cache" ones a folder that
an earlier process filled. Data: Cranfield with the bf16 all-MiniLM-L6-v2 run (225 queries).

    python benchmarks/bench_cold_start.py               # this interpreter's tieaware, medians of 3
    python benchmarks/bench_cold_start.py --install     # pip install . into a fresh venv, measure that
    python benchmarks/bench_cold_start.py --repeats 1 --qrels Q --run R
    python benchmarks/bench_cold_start.py --install --markdown docs/benchmarks.md   # also write the tables there

With ``--install`` the script creates a virtual environment in a temporary folder, times ``pip install
<checkout>`` into it (a regular, non-editable install that compiles the kernels ahead of time; pip's
cache as it is), adds pytest and pytest-xdist, checks that the venv's tieaware is the one imported,
and runs everything below with that venv's python.

Prints:

* ``import tieaware``: wall time, and the total that ``python -X importtime`` reports;
* the first evaluate of ndcg@10 and of five metrics (ndcg@10, mrr@10, map@100, recall@100,
  precision@10) on dicts read before the clock starts, empty cache (wall and CPU time, which is less
  sensitive to other load on the machine) and filled cache, and a later call in the same process;
* the first call after install as a user meets it: a process that imports tieaware, reads the files
  and evaluates the five metrics, timed whole from the parent (interpreter start and exit included)
  and by phase inside, (a) as installed (kernels compiled ahead of time), (b) with TIEAWARE_JIT=1
  (numba's JIT, what every user had before), (c) on ranx Qrels/Run objects read with
  ``ranx.Qrels.from_file``/``ranx.Run.from_file``, tieaware's part apart from ranx's import and object
  construction; with the heavy modules each loaded and the numba cache files each wrote;
* ``tieaware warmup``, empty and filled cache;
* plugin sessions: ``python -m pytest -q FILE`` on a model-CI-like test file that checks the bundled
  fp32 and bf16 runs with `tieaware.testing.assert_tie_stable`, against the same file whose tests only
  read the data, serial and with ``-n 2``, empty cache: "checks add X s".
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _report  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
FIVE = ["ndcg@10", "mrr@10", "map@100", "recall@100", "precision@10"]
HEAVY = ("numba", "pandas", "pyarrow", "ranx", "scipy", "matplotlib", "torch")
# the target of the issue: the checks may add at most this much to a pytest session right after install
CHECKS_TARGET_S = 3.0
# the folders numba names (NUMBA_CACHE_DIR/<folder>_<sha1 of its path>) for the target's tieaware sources (`_probe`)
TIEAWARE_CACHE_FOLDERS: set[str] = set()


class Target:
    """The interpreter every measurement runs, and the folder it runs in (outside the checkout)."""

    def __init__(self, python: str, cwd: str, installed: bool):
        self.python, self.cwd, self.installed = python, cwd, installed

    def env(self, cache_dir: str | None, extra: dict | None = None) -> dict:
        env = dict(os.environ)
        for name in ("NUMBA_CACHE_DIR", "TIEAWARE_JIT", "PYTEST_ADDOPTS", "PYTEST_PLUGINS"):
            env.pop(name, None)
        if self.installed:  # the venv's tieaware, never a checkout on the path
            env.pop("PYTHONPATH", None)
        if cache_dir is not None:
            env["NUMBA_CACHE_DIR"] = cache_dir
        env.update(extra or {})
        return env

    def run(self, args: list[str], cache_dir: str | None = None, extra: dict | None = None,
            cwd: str | None = None, check: bool = True) -> tuple[subprocess.CompletedProcess, float]:
        """(the finished process, its wall time seen from here: start to exit)."""
        t = time.perf_counter()
        done = subprocess.run([self.python, *args], capture_output=True, text=True, cwd=cwd or self.cwd,
                              env=self.env(cache_dir, extra))
        wall = time.perf_counter() - t
        if check and done.returncode != 0:
            raise RuntimeError(f"subprocess {args[:3]} failed ({done.returncode}):\n"
                               f"{(done.stdout + done.stderr)[-3000:]}")
        return done, wall

    def python_c(self, code: str, cache_dir: str | None = None, *flags: str, extra: dict | None = None):
        return self.run([*flags, "-c", code], cache_dir, extra)


def _last_json(done: subprocess.CompletedProcess):
    return json.loads(done.stdout.strip().splitlines()[-1])


def _cache_files(cache_dir: str) -> tuple[int, int]:
    """numba cache index files (one a function) in cache_dir: (tieaware's, others' such as ranx's)."""
    ours = other = 0
    for path in Path(cache_dir).rglob("*.nbi"):
        if path.relative_to(cache_dir).parts[0] in TIEAWARE_CACHE_FOLDERS:
            ours += 1
        else:
            other += 1
    return ours, other


def _pair(files: tuple[int, int]) -> str:
    return f"{files[0]}/{files[1]}"


def _heavy(loaded: dict) -> str:
    return ", ".join(m for m, v in loaded.items() if v) or "none"


# ---------------------------------------------------------------------------------------------- install

def _install(tmp: str) -> tuple[Target, dict]:
    """A fresh venv with `pip install <checkout>`: its Target and the timings."""
    venv = os.path.join(tmp, "venv")
    subprocess.run([sys.executable, "-m", "venv", venv], check=True)
    python = os.path.join(venv, "bin", "python")
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    print(f"pip install {REPO} into a fresh venv ({venv}) ...", file=sys.stderr, flush=True)
    t = time.perf_counter()
    done = subprocess.run([python, "-m", "pip", "install", str(REPO)], capture_output=True, text=True, env=env,
                          cwd=tmp)
    pip_s = time.perf_counter() - t
    if done.returncode != 0:
        raise RuntimeError(f"pip install failed:\n{(done.stdout + done.stderr)[-5000:]}")
    t = time.perf_counter()
    done = subprocess.run([python, "-m", "pip", "install", "pytest", "pytest-xdist"], capture_output=True, text=True,
                          env=env, cwd=tmp)
    if done.returncode != 0:
        raise RuntimeError(f"pip install pytest pytest-xdist failed:\n{(done.stdout + done.stderr)[-3000:]}")
    pytest_s = time.perf_counter() - t
    return Target(python, tmp, installed=True), {"pip_s": pip_s, "pytest_s": pytest_s}


def _probe(target: Target) -> dict:
    """What the target imports: tieaware's file, version, compiled module, data files, library versions."""
    code = f"""
import hashlib, importlib.util, json, os, sys
from importlib import metadata
import tieaware
from tieaware.datasets import cranfield
from tieaware.kernels import backend
data = cranfield()
versions = {{}}
for name in ("numpy", "numba", "pandas", "ranx", "pytest", "pytest-xdist"):
    try:
        versions[name] = metadata.version(name)
    except metadata.PackageNotFoundError:
        pass
print(json.dumps({{"file": tieaware.__file__, "version": tieaware.__version__, "prefix": sys.prefix,
                  "compiled": backend.COMPILED is not None, "note": backend.COMPILED_NOTE,
                  "qrels": str(data.qrels), "run": str(data.runs["bf16"]), "versions": versions,
                  "pytest": importlib.util.find_spec("pytest") is not None,
                  "xdist": importlib.util.find_spec("xdist") is not None,
                  "cache folders": [os.path.basename(d) + "_" + hashlib.sha1(d.encode()).hexdigest()
                                    for d, _, _ in os.walk(os.path.dirname(os.path.abspath(tieaware.__file__)))],
                  "loaded": {{m: m in sys.modules for m in {HEAVY!r}}}}}))
"""
    return _last_json(target.python_c(code)[0])


# ------------------------------------------------------------------------------------ the measurements

def _import_time(target: Target) -> dict:
    code = ("import sys, time, json; t = time.perf_counter(); import tieaware; wall = time.perf_counter() - t; "
            f"print(json.dumps([wall, {{m: m in sys.modules for m in {HEAVY!r}}}]))")
    wall, loaded = _last_json(target.python_c(code)[0])
    total_us = None
    for line in target.python_c("import tieaware", None, "-X", "importtime")[0].stderr.splitlines():
        parts = [p.strip() for p in line.split("|")]
        if len(parts) == 3 and parts[2] == "tieaware":
            total_us = int(parts[1])
    return {"wall": wall, "importtime": None if total_us is None else total_us / 1e6, "loaded": loaded}


def _evaluate(target: Target, metrics: list, qrels: str, run: str, cache_dir: str) -> tuple[float, float, float]:
    """(first evaluate, its CPU time, median of 5 later ones) in a new process, dicts read first."""
    code = f"""
import json, statistics, time
import tieaware
from tieaware.inputs import read_trec_qrels, read_trec_run
qrels, run = read_trec_qrels({qrels!r}), read_trec_run({run!r})
t, cpu = time.perf_counter(), time.process_time()
tieaware.evaluate(qrels, run, {metrics!r})
first, cpu = time.perf_counter() - t, time.process_time() - cpu
later = []
for _ in range(5):
    t = time.perf_counter(); tieaware.evaluate(qrels, run, {metrics!r}); later.append(time.perf_counter() - t)
print(json.dumps([first, cpu, statistics.median(later)]))
"""
    return tuple(_last_json(target.python_c(code, cache_dir)[0]))


# the first call after install as a user writes it; phases timed inside, the whole process from outside
FIRST_CALL = {
    "dicts": """
t = time.perf_counter(); qrels = tieaware.read_trec_qrels(Q); run = tieaware.read_trec_run(R)
phases["read"] = time.perf_counter() - t
""",
    "ranx": """
t = time.perf_counter(); import ranx; phases["import ranx"] = time.perf_counter() - t
kind = lambda path: "gz" if path.endswith(".gz") else "trec"
t = time.perf_counter(); qrels = ranx.Qrels.from_file(Q, kind=kind(Q)); run = ranx.Run.from_file(R, kind=kind(R))
phases["ranx objects"] = time.perf_counter() - t
""",
}


def _first_call(target: Target, kind: str, qrels: str, run: str, cache_dir: str, jit: bool) -> dict:
    code = f"""
import time
start = time.perf_counter()
import json, sys
Q, R, FIVE = {qrels!r}, {run!r}, {FIVE!r}
phases = {{}}
t = time.perf_counter(); import tieaware; phases["import tieaware"] = time.perf_counter() - t
{FIRST_CALL[kind]}
t, cpu = time.perf_counter(), time.process_time()
tieaware.evaluate(qrels, run, FIVE)
phases["evaluate"], phases["evaluate cpu"] = time.perf_counter() - t, time.process_time() - cpu
phases["in process"] = time.perf_counter() - start
phases["cpu"] = time.process_time()
print(json.dumps([phases, {{m: m in sys.modules for m in {HEAVY!r}}}]))
"""
    done, wall = target.python_c(code, cache_dir, extra={"TIEAWARE_JIT": "1"} if jit else None)
    phases, loaded = _last_json(done)
    return {"process": wall, **phases, "loaded": loaded, "cache files": _cache_files(cache_dir)}


def _warmup(target: Target, cache_dir: str) -> tuple[float, str]:
    """(the whole process's wall time, warmup's own "done in ..." line and its steps of a second or more)."""
    done, wall = target.python_c("import sys; from tieaware.cli import main; sys.exit(main(['warmup']))", cache_dir)
    lines = done.stdout.splitlines()
    said = next((line for line in lines if line.startswith("done in")), "")
    slow = []
    for line in lines:  # a step: "  12.34 s  label"
        seconds, _, label = line.strip().partition(" s  ")
        try:
            if label and float(seconds) >= 1:
                slow.append(f"{label} {float(seconds):.1f} s")
        except ValueError:
            continue
    return wall, said + (f" (steps of 1 s or more: {'; '.join(slow)})" if slow else "")


# ------------------------------------------------------------------------------------- plugin sessions

# identical but for the body of the two tests; the fixture records the heavy modules of each process
PLUGIN_TEST = '''"""A model-CI job: the bundled runs {what}."""
import gzip
import json
import os
import sys

import pytest

import tieaware.datasets
{imports}

@pytest.fixture(autouse=True, scope="module")
def _heavy_modules():
    yield
    with open(os.path.join(os.environ["BENCH_MODULES_DIR"], str(os.getpid())), "w") as out:
        json.dump({{m: m in sys.modules for m in {heavy!r}}}, out)


def _read(path):
    with gzip.open(path, "rt") as lines:
        return [line.split() for line in lines]


def test_fp32():
    data = tieaware.datasets.cranfield()
{fp32}


def test_bf16():
    data = tieaware.datasets.cranfield()
{bf16}
'''
PLUGIN_FILES = {
    "without checks": dict(what="are read", imports="",
                           fp32="    assert _read(data.qrels) and _read(data.runs['fp32'])",
                           bf16="    assert _read(data.qrels) and _read(data.runs['bf16'])"),
    "with checks": dict(
        what="are checked with the plugin", imports="from tieaware.testing import assert_tie_stable",
        fp32="    assert_tie_stable(data.qrels, data.runs['fp32'], ['ndcg@10', 'mrr@10'], max_range=0.005)",
        bf16="    assert_tie_stable(data.qrels, data.runs['bf16'], ['ndcg@10', 'mrr@10'], max_range=0.05)"),
}
PLUGIN_MODES = {"serial": [], "-n 2": ["-n", "2"]}


def _pytest(target: Target, tmp: str, label: str, mode: str, cache_dir: str) -> dict:
    """`python -m pytest -q FILE` in a fresh folder holding only FILE: wall time, heavy modules loaded."""
    folder = tempfile.mkdtemp(prefix="session-", dir=tmp)
    test_file = os.path.join(folder, "test_model_ties.py")
    Path(test_file).write_text(PLUGIN_TEST.format(heavy=HEAVY, **PLUGIN_FILES[label]), encoding="utf-8")
    modules = os.path.join(folder, "modules")
    os.mkdir(modules)
    done, wall = target.run(["-m", "pytest", "-q", *PLUGIN_MODES[mode], test_file], cache_dir,
                            extra={"BENCH_MODULES_DIR": modules}, cwd=folder, check=False)
    if done.returncode != 0 or "2 passed" not in done.stdout:
        raise RuntimeError(f"pytest {label} {mode} failed ({done.returncode}):\n{(done.stdout + done.stderr)[-3000:]}")
    loaded = dict.fromkeys(HEAVY, False)
    for name in os.listdir(modules):  # one file a process that ran tests (each xdist worker)
        for module, there in json.loads(Path(modules, name).read_text()).items():
            loaded[module] = loaded[module] or there
    shutil.rmtree(folder)
    return {"wall": wall, "loaded": loaded, "cache files": _cache_files(cache_dir)}


# ----------------------------------------------------------------------------------------------- main

def _median(values) -> float:
    values = list(values)
    return statistics.median(values) if values else float("nan")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--install", action="store_true",
                        help="pip install the checkout into a fresh venv and measure that install")
    parser.add_argument("--qrels", help="qrels file (default: the bundled Cranfield qrels)")
    parser.add_argument("--run", help="run file (default: the bundled Cranfield bf16 run)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--markdown", metavar="PATH", help="also write the tables into PATH's section")
    args = parser.parse_args(argv)
    load_before = os.getloadavg()
    loads = [load_before[0]]

    with tempfile.TemporaryDirectory(prefix="tieaware-bench-") as tmp:
        work = os.path.join(tmp, "work")  # every process's working folder, outside the checkout
        os.mkdir(work)
        install = None
        if args.install:
            target, install = _install(tmp)
            target.cwd = work
        else:
            target = Target(sys.executable, work, installed=False)
        probe = _probe(target)
        TIEAWARE_CACHE_FOLDERS.update(probe["cache folders"])
        qrels, run = args.qrels or probe["qrels"], args.run or probe["run"]
        print(f"python {target.python}: tieaware {probe['version']} from {probe['file']}")
        if args.install:
            if not Path(probe["file"]).resolve().is_relative_to(Path(probe["prefix"]).resolve()):
                raise RuntimeError(f"the venv imports tieaware from {probe['file']}, not from its own install")
            print(f"pip install . into a fresh venv: {install['pip_s']:.1f} s (pytest and pytest-xdist then "
                  f"{install['pytest_s']:.1f} s)")
        print("kernels compiled ahead of time: " + ("yes" if probe["compiled"] else f"no ({probe['note']})"))
        print("versions: " + ", ".join(f"{k} {v}" for k, v in probe["versions"].items()))
        print(f"{os.cpu_count()} cpus; data: {qrels}, {run}; load average {load_before[0]:.2f}", flush=True)
        plugin = probe["pytest"] and probe["xdist"]
        if not plugin:
            print("  no pytest and pytest-xdist in this interpreter: plugin sessions not measured "
                  "(--install adds them)", file=sys.stderr)

        imports, evaluates, firsts, warmups, sessions = [], {}, {}, [], {}
        first_cases = {"as installed": ("dicts", False), "TIEAWARE_JIT=1": ("dicts", True),
                       "ranx objects": ("ranx", False)}

        def cache(name: str) -> str:
            return tempfile.mkdtemp(prefix=name.replace(" ", "_").replace("=", "").replace("@", "") + "-", dir=tmp)

        for i in range(args.repeats):  # each repeat measures everything once, so drifting load hits all alike
            imports.append(_import_time(target))
            for label, metrics in (("ndcg@10", ["ndcg@10"]), ("five metrics", FIVE)):
                c = cache(label)
                evaluates.setdefault(label, []).append((_evaluate(target, metrics, qrels, run, c),
                                                        _evaluate(target, metrics, qrels, run, c)))
            for label, (kind, jit) in first_cases.items():
                c = cache(label)
                firsts.setdefault(label, []).append((_first_call(target, kind, qrels, run, c, jit),
                                                     _first_call(target, kind, qrels, run, c, jit)))
            try:
                c = cache("warmup")
                (cold, said), (warm, _) = _warmup(target, c), _warmup(target, c)
                warmups.append((cold, warm, said))
            except RuntimeError as exc:  # a tieaware without the warmup command
                print(f"  tieaware warmup failed: {str(exc).strip().splitlines()[-1]}", file=sys.stderr)
            if plugin:
                for mode in PLUGIN_MODES:
                    for label in PLUGIN_FILES:
                        sessions.setdefault((mode, label), []).append(_pytest(target, tmp, label, mode,
                                                                              cache("pytest")))
            loads.append(os.getloadavg()[0])
            print(f"  repeat {i + 1}/{args.repeats} done, load average {loads[-1]:.2f}", file=sys.stderr, flush=True)

    n = args.repeats
    wall = _median(i["wall"] for i in imports)
    total = _median(i["importtime"] for i in imports if i["importtime"] is not None)
    loaded = imports[-1]["loaded"]
    print(f"\nimport tieaware: {wall:.3f} s wall, -X importtime total {total:.3f} s (medians of {n}); "
          f"heavy modules loaded: {_heavy(loaded)}")

    rows = {label: (_median(c[0] for c, _ in pairs), _median(c[1] for c, _ in pairs), _median(w[0] for _, w in pairs),
                    _median(w[2] for _, w in pairs)) for label, pairs in evaluates.items()}
    print(f"\nfirst evaluate on dicts read before the clock, medians of {n} processes each (seconds):")
    print(f"{'':<14}{'empty cache':>12}{'(cpu)':>8}{'filled cache':>14}{'later call':>12}")
    for label, (cold, cpu, warm, later) in rows.items():
        print(f"{label:<14}{cold:12.2f}{cpu:8.2f}{warm:14.2f}{later:12.3f}")

    def first(label: str, state: int, key: str) -> float:
        return _median(pair[state][key] for pair in firsts[label])

    print(f"\nfirst call after install: one process imports tieaware, reads the files, evaluates five metrics;\n"
          f"'process' is its wall time from the parent (interpreter start to exit), the rest are phases inside;\n"
          f"medians of {n} processes (seconds); cache files: numba index files written (tieaware/others)")
    header = (f"{'path':<16}{'cache':<8}{'process':>9}{'import':>8}{'read':>7}{'ranx':>7}{'evaluate':>10}"
              f"{'(cpu)':>7}  {'cache files':<12}heavy modules loaded")
    print(header)
    first_rows = []
    for label in first_cases:
        for state, name in ((0, "empty"), (1, "filled")):
            pairs = firsts[label]
            read = first(label, state, "read") if "read" in pairs[0][state] else float("nan")
            ranx_s = (first(label, state, "import ranx") + first(label, state, "ranx objects")
                      if "ranx objects" in pairs[0][state] else float("nan"))
            files = pairs[-1][state]["cache files"] if state == 0 else (0, 0)
            if state == 1:  # files the second process added to the filled cache
                files = tuple(b - a for a, b in zip(pairs[-1][0]["cache files"], pairs[-1][1]["cache files"]))
            row = dict(label=label, state=name, process=first(label, state, "process"),
                       imp=first(label, state, "import tieaware"), read=read, ranx=ranx_s,
                       evaluate=first(label, state, "evaluate"), cpu=first(label, state, "evaluate cpu"),
                       files=files, loaded=pairs[-1][state]["loaded"])
            first_rows.append(row)
            print(f"{label:<16}{name:<8}{row['process']:9.2f}{row['imp']:8.3f}{read:7.2f}{ranx_s:7.2f}"
                  f"{row['evaluate']:10.2f}{row['cpu']:7.2f}  {_pair(files):<12}{_heavy(row['loaded'])}")
    by = {(r["label"], r["state"]): r for r in first_rows}
    jit_ratio = by[("TIEAWARE_JIT=1", "empty")]["process"] / by[("as installed", "empty")]["process"]
    jit_eval_ratio = by[("TIEAWARE_JIT=1", "empty")]["evaluate"] / by[("as installed", "empty")]["evaluate"]
    ranx_tieaware = {s: by[("ranx objects", s)]["imp"] + by[("ranx objects", s)]["evaluate"]
                     for s in ("empty", "filled")}
    print(f"first call, empty cache: JIT / as installed = {jit_ratio:.1f}x for the whole process, "
          f"{jit_eval_ratio:.1f}x for evaluate alone")
    print(f"ranx objects: tieaware's part (import tieaware + evaluate) {ranx_tieaware['empty']:.2f} s empty cache, "
          f"{ranx_tieaware['filled']:.2f} s filled; ranx's own: "
          f"import ranx {first('ranx objects', 0, 'import ranx'):.2f} s "
          f"+ Qrels/Run.from_file {first('ranx objects', 0, 'ranx objects'):.2f} s empty cache, "
          f"{first('ranx objects', 1, 'import ranx'):.2f} + {first('ranx objects', 1, 'ranx objects'):.2f} s filled")

    if warmups:
        print(f"tieaware warmup (whole process): empty cache {_median(w[0] for w in warmups):.2f} s, "
              f"filled cache {_median(w[1] for w in warmups):.2f} s; it said (empty cache): {warmups[-1][2]}")

    added = {}
    if sessions:
        print(f"\nplugin sessions: python -m pytest -q FILE (2 tests), fresh process, empty NUMBA_CACHE_DIR, "
              f"medians of {n} (seconds)")
        print(f"{'':<8}{'without checks':>16}{'with checks':>13}{'checks add':>12}  heavy modules (with checks)")
        for mode in PLUGIN_MODES:
            without = _median(s["wall"] for s in sessions[(mode, "without checks")])
            with_ = _median(s["wall"] for s in sessions[(mode, "with checks")])
            added[mode] = (without, with_, with_ - without)
            print(f"{mode:<8}{without:16.2f}{with_:13.2f}{with_ - without:12.2f}  "
                  f"{_heavy(sessions[(mode, 'with checks')][-1]['loaded'])}; numba cache files "
                  f"{_pair(sessions[(mode, 'with checks')][-1]['cache files'])}")
        print(f"target: checks add <= {CHECKS_TARGET_S:.0f} s: " + ", ".join(
            f"{mode} {'met' if a[2] <= CHECKS_TARGET_S else 'MISSED'} ({a[2]:.2f} s)" for mode, a in added.items()))
    load = f"load average {min(loads):.2f}-{max(loads):.2f} (1-minute, sampled before and after each repeat)"
    print(load)

    if args.markdown:
        table = [["`import tieaware`", f"{wall:.3f}", "", _heavy(loaded), ""]]
        for label, (cold, cpu, warm, later) in rows.items():
            table.append([f"first `evaluate`, {label} (dicts read first)", f"{cold:.2f}", f"{warm:.2f}", "",
                          f"CPU {cpu:.2f} s (empty cache); later calls {later:.3f} s"])
        for label in first_cases:
            empty, filled = by[(label, "empty")], by[(label, "filled")]
            note = (f"evaluate {empty['evaluate']:.2f} s (CPU {empty['cpu']:.2f}) / {filled['evaluate']:.2f} s; "
                    f"numba cache files written {_pair(empty['files'])} (tieaware/other)")
            if label == "ranx objects":
                note = (f"tieaware's part (import + evaluate) {ranx_tieaware['empty']:.2f} / "
                        f"{ranx_tieaware['filled']:.2f} s, ranx's (import + from_file) {empty['ranx']:.2f} / "
                        f"{filled['ranx']:.2f} s; " + note)
            elif label == "TIEAWARE_JIT=1":
                note = f"{jit_ratio:.1f}x the process as installed, {jit_eval_ratio:.1f}x its evaluate; " + note
            table.append([f"first call, whole process, five metrics: {label}", f"{empty['process']:.2f}",
                          f"{filled['process']:.2f}", _heavy(empty["loaded"]), note])
        if warmups:
            table.append(["`tieaware warmup` (whole process)", f"{_median(w[0] for w in warmups):.2f}",
                          f"{_median(w[1] for w in warmups):.2f}", "",
                          "compiles the kernels numba's JIT serves" + (
                              " (with the compiled kernels: none)" if probe["compiled"] else "")
                          + f"; empty cache: {warmups[-1][2]}"])
        installed = (f"`pip install .` into a fresh venv (pip's cache as it was): {install['pip_s']:.0f} s; "
                     "every process below runs that venv's python from a folder outside the checkout. "
                     if install else "The interpreter that ran the script, from a folder outside the checkout. ")
        versions = ", ".join(f"{k} {v}" for k, v in probe["versions"].items())
        body = (installed + f"Its tieaware {probe['version']} ({versions}); kernels compiled ahead of time: "
                + ("yes" if probe["compiled"] else f"no ({probe['note']})") + ".\n\n"
                "Fresh processes; \"empty cache\" is a new NUMBA_CACHE_DIR, \"filled cache\" one an earlier process "
                f"filled. Data: {Path(qrels).name} and {Path(run).name}. \"First call\" rows time a whole process "
                "that imports tieaware, reads the files (tieaware's readers, or ranx.Qrels/Run.from_file) and "
                "evaluates ndcg@10, mrr@10, map@100, recall@100, precision@10, from interpreter start to exit. "
                f"Medians of {n} processes, seconds; {load}.\n\n"
                + _report.table(["step", "empty cache s", "filled cache s", "heavy modules loaded", "note"], table))
        if sessions:
            session_rows = []
            for mode, (without, with_, extra) in added.items():
                session_rows.append([mode, f"{without:.2f}", f"{with_:.2f}", f"{extra:.2f}",
                                     "met" if extra <= CHECKS_TARGET_S else "missed",
                                     _heavy(sessions[(mode, "with checks")][-1]["loaded"])])
            body += ("\n\nPlugin sessions: `python -m pytest -q FILE`, a fresh process with an empty NUMBA_CACHE_DIR "
                     "and a file of two tests: with checks, `assert_tie_stable` on the bundled fp32 run "
                     "(ndcg@10, mrr@10, max_range=0.005) and on the bf16 run (max_range=0.05); without, the same "
                     f"tests only read the two files. Target: the checks add at most {CHECKS_TARGET_S:.0f} s.\n\n"
                     + _report.table(["pytest", "without checks s", "with checks s", "checks add s", "target",
                                      "heavy modules (with checks)"], session_rows))
        _report.write_section(args.markdown, "bench_cold_start", "Cold start (bench_cold_start.py)", body)


if __name__ == "__main__":
    main()
