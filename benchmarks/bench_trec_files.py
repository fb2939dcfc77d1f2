"""TREC files on the command line: `tieaware eval` beside trec_eval, Python + pytrec_eval and ranx.

Writes a synthetic run (queries x 1,000 documents, scores with two decimals, so bf16-like ties) and its
qrels, then runs each tool in a process of its own on ``-m ndcg_cut.10 -m map`` and prints the wall time
and peak RSS of each process (``os.wait4``) side by side, with the ratios to trec_eval:

* trec_eval, built from its source with ``make`` when ``--trec-eval-src DIR`` (a checkout of
  https://github.com/usnistgov/trec_eval) or ``--trec-eval BINARY`` is given; skipped with a message
  otherwise (pip has no trec_eval);
* Python: the files parsed line by line into dicts, then pytrec_eval;
* ranx: ``Qrels.from_file`` / ``Run.from_file`` and ``ranx.evaluate``;
* ``tieaware eval QRELS RUN -m ndcg_cut.10 -m map -o trec``;
* ``tieaware.read_trec_run`` into dicts, beside the line-by-line Python reader it replaced.

The numba and ranx caches (and Python's bytecode) are warmed on a small file first; the tools take
turns (each repeat runs every tool once), so a change in the machine's load falls on all of them. Sizes above
``--tieaware-only-above`` lines run `tieaware eval` alone. The load average is printed before and after
each size; ``--markdown PATH`` also writes the tables into PATH's ``bench_trec_files`` section
(``bench_trec_files_alone`` when every size runs `tieaware eval` alone, ``_repr`` added with
``--scores repr``). Linux
counts a child's peak RSS from the memory of the process that started it (this script's, ~40 MB), so
that is the floor of every figure.

    python benchmarks/bench_trec_files.py                              # 1M and 3M lines
    python benchmarks/bench_trec_files.py --lines 10000000 --trec-eval-src ~/trec_eval
    python benchmarks/bench_trec_files.py --lines 100000000            # tieaware eval alone
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _report  # noqa: E402

METRICS = ("ndcg_cut.10", "map")
DOCS = 1_000

PYTREC = """
import sys, pytrec_eval
def read(path, column):
    out = {}
    with open(path) as handle:
        for line in handle:
            cols = line.split()
            out.setdefault(cols[0], {})[cols[2]] = float(cols[4]) if column == 4 else int(cols[3])
    return out
qrels, run = read(sys.argv[1], 3), read(sys.argv[2], 4)
res = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "map"}).evaluate(run)
print(sum(r["ndcg_cut_10"] for r in res.values()) / len(res), sum(r["map"] for r in res.values()) / len(res))
"""
RANX = """
import sys
from ranx import Qrels, Run, evaluate
qrels, run = Qrels.from_file(sys.argv[1], kind="trec"), Run.from_file(sys.argv[2], kind="trec")
print(evaluate(qrels, run, ["ndcg@10", "map"]))
"""
READ_NEW = """
import sys, time, tieaware
tieaware.read_trec_run(sys.argv[3])  # the scan loaded from numba's cache
start = time.perf_counter()
run = tieaware.read_trec_run(sys.argv[2])
print(time.perf_counter() - start)
"""
# the reader tieaware had before the compiled scan: per line a decode, split, checks, float and dict insert
READ_OLD = """
import math, sys, time
start = time.perf_counter()
def score(text, where):
    value = float(text)
    if "_" in text or not text.isascii() or math.isnan(value):
        raise ValueError(where)
    return value
out = {}
with open(sys.argv[2], "rb") as handle:
    for line_no, raw in enumerate(handle, 1):
        cols = raw.decode("utf-8").split()
        if not cols or cols[0].startswith("#"):
            continue
        where = f"{sys.argv[2]}:{line_no}"
        if len(cols) < 6:
            raise ValueError(where)
        docs = out.get(cols[0])
        if docs is None:
            docs = out[cols[0]] = {}
        if cols[2] in docs:
            raise ValueError(where)
        docs[cols[2]] = score(cols[4], where)
print(time.perf_counter() - start)
"""


READERS = ("read_trec_run into dicts", "the line-by-line reader it replaced")
#: score formats: (how the docs describe the run's scores, the tables' label, its docs section's suffix)
SCORES = {"two-decimals": ("scores with two decimals, so bf16-like ties", "", ""),
          "repr": ("fp32 scores as Python's repr writes them, up to 17 significant digits",
                   ", scores as repr writes them", "_repr")}


def write_files(folder: Path, lines: int, seed: int = 0, scores: str = "two-decimals") -> tuple[Path, Path]:
    """run.trec (``lines // 1000`` queries x 1,000 documents) and qrels.trec (~5% of the documents judged,
    grades 0-3), written a query at a time. ``scores``: "two-decimals" (bf16-like ties) or "repr" (fp32
    scores as Python's ``f"{score}"`` writes them, up to 17 significant digits, hardly a tie)."""
    rng = np.random.default_rng(seed)
    run_path, qrels_path = folder / f"run{lines}.trec", folder / f"qrels{lines}.trec"
    ranks = [str(r) for r in range(1, DOCS + 1)]
    with open(run_path, "w") as run, open(qrels_path, "w") as qrels:
        for q in range(max(1, lines // DOCS)):
            docs = rng.choice(20 * DOCS, DOCS, replace=False)
            grades = rng.integers(0, 4, DOCS)
            exact = 0.5 + 0.08 * grades + 0.1 * rng.standard_normal(DOCS)
            two_decimals = scores == "two-decimals"
            written = np.round(exact, 2) if two_decimals else exact.astype(np.float32).astype(np.float64)
            order = np.argsort(-written, kind="stable")
            names = [f"d{d}" for d in docs[order].tolist()]
            values = [f"{s:.2f}" if two_decimals else f"{s}" for s in written[order].tolist()]
            run.write("".join(f"q{q} Q0 {d} {r} {s} synth\n" for d, r, s in zip(names, ranks, values)))
            judged = rng.random(DOCS) < 0.05
            qrels.write("".join(f"q{q} 0 d{d} {g}\n" for d, g in zip(docs[judged].tolist(), grades[judged].tolist())))
    return qrels_path, run_path


def fill(command: list, qrels: Path, run: Path, small: Path) -> list:
    """The command with its {qrels}, {run} and {small} arguments filled in."""
    names = {"{qrels}": str(qrels), "{run}": str(run), "{small}": str(small)}
    return [names.get(part, part) for part in command]


def measure(command: list, env: dict | None = None) -> tuple[float, float, str]:
    """(wall seconds, peak RSS in MB, stdout) of one process (environment ``env``, or this one's)."""
    start = time.perf_counter()
    with tempfile.TemporaryFile() as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.PIPE, env=env)
        _, status, usage = os.wait4(process.pid, 0)
        seconds = time.perf_counter() - start
        process.returncode = os.waitstatus_to_exitcode(status)
        err = process.stderr.read().decode()
        process.stderr.close()
        out.seek(0)
        text = out.read().decode()
    if process.returncode != 0:
        raise RuntimeError(f"{command[:3]} failed: {err[-2000:]}")
    return seconds, usage.ru_maxrss / 1024, text


def build_trec_eval(source: Path, folder: Path) -> Path | None:
    if shutil.which("make") is None or shutil.which("cc") is None:
        print("trec_eval: skipped (no C compiler or make)")
        return None
    build = folder / "trec_eval_build"
    shutil.copytree(source, build)
    subprocess.run(["make", "-s", "-C", str(build)], check=True, capture_output=True)
    return build / "trec_eval"


def tools(trec_eval: Path | None, tieaware_only: bool) -> dict:
    python = sys.executable
    tieaware = [python, "-m", "tieaware", "eval", "{qrels}", "{run}", *sum((["-m", m] for m in METRICS), []),
                "-o", "trec"]
    if tieaware_only:
        return {"tieaware eval": tieaware}
    chosen = {}
    if trec_eval is not None:
        chosen["trec_eval"] = [str(trec_eval), *sum((["-m", m] for m in METRICS), []), "{qrels}", "{run}"]
    chosen.update({"Python parse + pytrec_eval": [python, "-c", PYTREC, "{qrels}", "{run}"],
                   "ranx from_file + evaluate": [python, "-c", RANX, "{qrels}", "{run}"],
                   "tieaware eval": tieaware,
                   "read_trec_run into dicts": [python, "-c", READ_NEW, "{qrels}", "{run}", "{small}"],
                   "the line-by-line reader it replaced": [python, "-c", READ_OLD, "{qrels}", "{run}", "{small}"]})
    return chosen


def load() -> str:
    return f"{os.getloadavg()[0]:.1f}" if hasattr(os, "getloadavg") else "?"


def one_size(lines: int, folder: Path, trec_eval: Path | None, small_run: Path, args) -> str:
    """Run every tool on a file of `lines` lines; print the table and return it as markdown."""
    qrels, run = write_files(folder, lines, scores=args.scores)
    size = run.stat().st_size / 2 ** 20
    chosen = tools(trec_eval, lines > args.tieaware_only_above)
    load_before = load()
    runs: dict = {name: [] for name in chosen}
    for _ in range(args.repeat):  # the tools take turns
        for name, command in chosen.items():
            runs[name].append(measure(fill(command, qrels, run, small_run)))
    load_after = load()
    results = {name: (statistics.median(r[0] for r in done), statistics.median(r[1] for r in done))
               for name, done in runs.items()}
    reading = {name: statistics.median(float(r[2]) for r in runs[name]) for name in READERS if name in runs}
    title = (f"{lines:,} lines ({lines // DOCS:,} queries x {DOCS:,} documents{SCORES[args.scores][1]}, "
             f"{size:,.0f} MB), load average "
             f"{load_before} before, {load_after} after")
    print(f"\n{title}")
    base = results.get("trec_eval")
    ratio_headers = f"{'time ratio':>12}{'RSS ratio':>12}" if base else ""
    print(f"{'tool':<38}{'time (s)':>10}{'peak RSS (MB)':>15}{ratio_headers}")
    rows = []
    for name, (seconds, rss) in results.items():
        ratios = [f"{seconds / base[0]:.3f}", f"{rss / base[1]:.3f}"] if base else []
        print(f"{name:<38}{seconds:>10.2f}{rss:>15,.0f}" + "".join(f"{r:>12}" for r in ratios))
        rows.append([name, f"{seconds:.2f}", f"{rss:,.0f}", *ratios])
    headers = ["tool", "time (s)", "peak RSS (MB)"] + (["time / trec_eval", "RSS / trec_eval"] if base else [])
    text = f"{title}:\n\n" + _report.table(headers, rows) + "\n"
    if len(reading) == 2:
        old, new = (reading[name] for name in READERS[::-1])
        line = (f"Reading the run into dicts, timed in the process: `read_trec_run` {new:.2f} s, the line-by-line "
                f"reader {old:.2f} s: {old / new:.2f}x.")
        print(line)
        text += f"\n{line}\n"
    run.unlink()
    qrels.unlink()
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lines", type=int, nargs="+", default=[1_000_000, 3_000_000])
    parser.add_argument("--repeat", type=int, default=3, help="runs per tool and size; the median is printed")
    parser.add_argument("--scores", choices=list(SCORES), default="two-decimals",
                        help="two-decimal scores (bf16-like ties) or fp32 scores written by Python's repr")
    parser.add_argument("--trec-eval", type=Path, help="a trec_eval binary")
    parser.add_argument("--trec-eval-src", type=Path, help="trec_eval's source folder, built with make")
    parser.add_argument("--tieaware-only-above", type=int, default=20_000_000, metavar="LINES")
    parser.add_argument("--folder", type=Path, help="where to write the files (default: a temporary folder)")
    parser.add_argument("--markdown", metavar="PATH", help="also write the tables into PATH's section")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-trec-files-", dir=args.folder) as tmp:
        folder = Path(tmp)
        trec_eval = args.trec_eval
        if trec_eval is None and args.trec_eval_src is not None:
            trec_eval = build_trec_eval(args.trec_eval_src, folder)
        if trec_eval is None:
            print("trec_eval: skipped (give --trec-eval BINARY or --trec-eval-src DIR to build it from source)")
        small_qrels, small_run = write_files(folder, 2 * DOCS, seed=1)
        # compile the numba caches once, and write the Python bytecode an installed package has (pip
        # compiles it; an editable install under PYTHONDONTWRITEBYTECODE would compile every module each run)
        writes_bytecode = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
        for command in tools(trec_eval, False).values():
            measure(fill(command, small_qrels, small_run, small_run), writes_bytecode)
        print(f"{_report.cores()} CPUs; median of {args.repeat} runs; metrics {', '.join(METRICS)}")
        tables = [one_size(lines, folder, trec_eval, small_run, args) for lines in args.lines]
    if args.markdown:
        described, label, suffix = SCORES[args.scores]
        body = (f"A synthetic run (queries x {DOCS:,} documents, {described}) and its qrels; each tool in a process "
                f"of its own on `-m {' -m '.join(METRICS)}`, wall time and peak RSS of the process, median of "
                f"{args.repeat} runs taken in turns{'; ratios to trec_eval (built from source)' if trec_eval else ''}"
                ".\n\n" + "\n".join(tables))
        alone = all(lines > args.tieaware_only_above for lines in args.lines)  # a section of its own
        _report.write_section(args.markdown, "bench_trec_files" + ("_alone" if alone else "") + suffix,
                              f"TREC files on the command line{', tieaware eval alone' if alone else ''}{label} "
                              "(bench_trec_files.py)", body)


if __name__ == "__main__":
    main()
