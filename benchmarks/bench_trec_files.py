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

``--everyday`` measures the files one evaluates every day instead (or as well, with ``--lines``): a
DL19-size run (43 queries x 1,000 documents, scores with three decimals, so ties, and ~9,000 graded
judgments, grades 0-3) and a one-query run (1 x 1,000), on ``-m ndcg_cut.10 -m map -m recip_rank``
(ranx: ndcg@10, map, mrr). `tieaware eval` runs twice in each turn: the first run after install (a new,
empty ``NUMBA_CACHE_DIR``, so any compile is paid; Python's bytecode written beforehand, as pip does)
and warm (a ``NUMBA_CACHE_DIR`` an earlier run filled). Each tool's median wall time, its min-max and
its median peak RSS, with the ratios to trec_eval and to the Python + pytrec_eval process; ``--markdown``
writes them into the ``bench_trec_files_everyday`` section.

    python benchmarks/bench_trec_files.py                              # 1M and 3M lines
    python benchmarks/bench_trec_files.py --lines 10000000 --trec-eval-src ~/trec_eval
    python benchmarks/bench_trec_files.py --lines 100000000            # tieaware eval alone
    python benchmarks/bench_trec_files.py --everyday --repeat 5 --trec-eval-src ~/trec_eval   # DL19, 1 query
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
#: the everyday rows' metrics (trec_eval's names), and ranx's name of each
EVERYDAY_METRICS = ("ndcg_cut.10", "map", "recip_rank")
RANX_NAMES = {"ndcg_cut.10": "ndcg@10", "map": "map", "recip_rank": "mrr"}
#: the everyday files: (label, queries of 1,000 documents, share of each query's documents judged)
EVERYDAY = (("DL19-size", 43, 0.21), ("one query", 1, 0.21))
FIRST, WARM = "tieaware eval, first run after install", "tieaware eval, warm"
PYTHON = "Python parse + pytrec_eval"

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
res = pytrec_eval.RelevanceEvaluator(qrels, set(sys.argv[3].split(","))).evaluate(run)
print({m: sum(r[m] for r in res.values()) / len(res) for m in next(iter(res.values()))})
"""
RANX = """
import sys
from ranx import Qrels, Run, evaluate
qrels, run = Qrels.from_file(sys.argv[1], kind="trec"), Run.from_file(sys.argv[2], kind="trec")
print(evaluate(qrels, run, sys.argv[3].split(",")))
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


def write_files(folder: Path, lines: int, seed: int = 0, scores: str = "two-decimals",
                judged: float = 0.05) -> tuple[Path, Path]:
    """run.trec (``lines // 1000`` queries x 1,000 documents) and qrels.trec (a share ``judged`` of the
    documents, 5% by default, grades 0-3), written a query at a time. ``scores``: "two-decimals" (bf16-like
    ties), "three-decimals" (fewer ties) or "repr" (fp32 scores as Python's ``f"{score}"`` writes them,
    up to 17 significant digits, hardly a tie)."""
    decimals = {"two-decimals": 2, "three-decimals": 3}.get(scores)
    rng = np.random.default_rng(seed)
    run_path, qrels_path = folder / f"run{lines}.trec", folder / f"qrels{lines}.trec"
    ranks = [str(r) for r in range(1, DOCS + 1)]
    with open(run_path, "w") as run, open(qrels_path, "w") as qrels:
        for q in range(max(1, lines // DOCS)):
            docs = rng.choice(20 * DOCS, DOCS, replace=False)
            grades = rng.integers(0, 4, DOCS)
            exact = 0.5 + 0.08 * grades + 0.1 * rng.standard_normal(DOCS)
            written = np.round(exact, decimals) if decimals else exact.astype(np.float32).astype(np.float64)
            order = np.argsort(-written, kind="stable")
            names = [f"d{d}" for d in docs[order].tolist()]
            values = [f"{s:.{decimals}f}" if decimals else f"{s}" for s in written[order].tolist()]
            run.write("".join(f"q{q} Q0 {d} {r} {s} synth\n" for d, r, s in zip(names, ranks, values)))
            chosen = rng.random(DOCS) < judged
            qrels.write("".join(f"q{q} 0 d{d} {g}\n" for d, g in zip(docs[chosen].tolist(), grades[chosen].tolist())))
    return qrels_path, run_path


def fill(command: list, qrels: Path, run: Path, small: Path) -> list:
    """The command with its {qrels}, {run} and {small} arguments filled in."""
    names = {"{qrels}": str(qrels), "{run}": str(run), "{small}": str(small)}
    return [names.get(part, part) for part in command]


def bytecode_env(**extra: str) -> dict:
    """This environment, writing Python's bytecode (as pip compiles an installed package's; an editable
    install under PYTHONDONTWRITEBYTECODE would compile every module each run), with ``extra`` set."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    return {**env, **extra}


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


def tools(trec_eval: Path | None, tieaware_only: bool, metrics: tuple = METRICS, readers: bool = True) -> dict:
    """Each tool's command on ``metrics`` (trec_eval's names); ``readers``: with the two run readers."""
    python = sys.executable
    options = sum((["-m", m] for m in metrics), [])
    tieaware = [python, "-m", "tieaware", "eval", "{qrels}", "{run}", *options, "-o", "trec"]
    if tieaware_only:
        return {"tieaware eval": tieaware}
    chosen = {}
    if trec_eval is not None:
        chosen["trec_eval"] = [str(trec_eval), *options, "{qrels}", "{run}"]
    chosen.update({PYTHON: [python, "-c", PYTREC, "{qrels}", "{run}", ",".join(metrics)],
                   "ranx from_file + evaluate": [python, "-c", RANX, "{qrels}", "{run}",
                                                 ",".join(RANX_NAMES[m] for m in metrics)],
                   "tieaware eval": tieaware})
    if readers:
        chosen.update({"read_trec_run into dicts": [python, "-c", READ_NEW, "{qrels}", "{run}", "{small}"],
                       "the line-by-line reader it replaced": [python, "-c", READ_OLD, "{qrels}", "{run}",
                                                               "{small}"]})
    return chosen


def take_turns(chosen: dict, qrels: Path, run: Path, small: Path, repeat: int, envs: dict | None = None) -> dict:
    """``repeat`` turns, each running every tool once (so a change in the machine's load falls on all of
    them): {name: [(seconds, MB, stdout) of each turn]}. ``envs``: {name: a function giving the
    environment of each of its runs}; the others run in this one's."""
    runs: dict = {name: [] for name in chosen}
    for _ in range(repeat):
        for name, command in chosen.items():
            env = envs[name]() if envs and name in envs else None
            runs[name].append(measure(fill(command, qrels, run, small), env))
    return runs


def load() -> str:
    return f"{os.getloadavg()[0]:.1f}" if hasattr(os, "getloadavg") else "?"


def one_size(lines: int, folder: Path, trec_eval: Path | None, small_run: Path, args) -> str:
    """Run every tool on a file of `lines` lines; print the table and return it as markdown."""
    qrels, run = write_files(folder, lines, scores=args.scores)
    size = run.stat().st_size / 2 ** 20
    chosen = tools(trec_eval, lines > args.tieaware_only_above)
    load_before = load()
    runs = take_turns(chosen, qrels, run, small_run, args.repeat)
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


def tied_share(run: Path) -> float:
    """The share of the run's documents whose score another document of their query also has (a query at
    a time, so that this script's memory, the floor of every peak RSS, stays as it is)."""
    tied = total = 0
    query, counts = None, {}
    with open(run) as handle:
        for line in [*handle, "end Q0 - 0 - -"]:
            cols = line.split()
            if cols[0] != query:
                tied += sum(n for n in counts.values() if n > 1)
                query, counts = cols[0], {}
            counts[cols[4]] = counts.get(cols[4], 0) + 1
            total += 1
    return tied / (total - 1)


def everyday_size(label: str, queries: int, judged: float, folder: Path, trec_eval: Path | None, small_run: Path,
                  args) -> str:
    """The everyday rows of one file: every tool on EVERYDAY_METRICS, `tieaware eval` first run after install
    and warm; print the table and return it as markdown."""
    qrels, run = write_files(folder, queries * DOCS, scores="three-decimals", judged=judged)
    with open(qrels) as handle:
        judgments = sum(1 for _ in handle)
    chosen = tools(trec_eval, False, EVERYDAY_METRICS, readers=False)
    tieaware = chosen.pop("tieaware eval")
    chosen.update({FIRST: tieaware, WARM: tieaware})
    warm = bytecode_env(NUMBA_CACHE_DIR=str(folder / f"numba-cache-warm-{queries}"))
    measure(fill(tieaware, qrels, run, small_run), warm)  # the earlier run that fills the warm cache
    empty = folder / f"numba-cache-first-{queries}"
    empty.mkdir()
    envs = {FIRST: lambda: {**os.environ, "NUMBA_CACHE_DIR": tempfile.mkdtemp(dir=empty)},
            WARM: lambda: {**os.environ, "NUMBA_CACHE_DIR": warm["NUMBA_CACHE_DIR"]}}
    tied = tied_share(run)
    floor = measure(["true"])[1]  # Linux counts this script's memory in a child's peak RSS
    load_before = load()
    runs = take_turns(chosen, qrels, run, small_run, args.repeat, envs)
    load_after = load()
    title = (f"{label}: {queries:,} quer{'y' if queries == 1 else 'ies'} x {DOCS:,} documents, scores with three "
             f"decimals ({tied:.0%} of the documents tied), {judgments:,} judgments (grades 0-3); peak RSS floor "
             f"(`true`) {floor:.0f} MB; load average {load_before} before, {load_after} after")
    print(f"\n{title}")
    results = {name: (statistics.median(r[0] for r in done), min(r[0] for r in done), max(r[0] for r in done),
                      statistics.median(r[1] for r in done)) for name, done in runs.items()}
    bases = [(base, results[base]) for base in ("trec_eval", PYTHON) if base in results]
    short = {"trec_eval": "trec_eval", PYTHON: "Python"}
    headers = ["tool", "time (ms)", "min-max (ms)", "peak RSS (MB)"]
    headers += [f"{what} / {short[base]}" for base, _ in bases for what in ("time", "RSS")]
    print(f"{headers[0]:<40}" + "".join(f"{h:>{max(len(h) + 2, 12)}}" for h in headers[1:]))
    rows = []
    for name, (seconds, fastest, slowest, rss) in results.items():
        ratios = [f"{value:,.2f}" for _, base in bases for value in (seconds / base[0], rss / base[3])]
        row = [name, f"{seconds * 1e3:,.0f}", f"{fastest * 1e3:,.0f}-{slowest * 1e3:,.0f}", f"{rss:,.0f}", *ratios]
        print(f"{row[0]:<40}" + "".join(f"{cell:>{max(len(h) + 2, 12)}}" for cell, h in zip(row[1:], headers[1:])))
        rows.append(row)
    run.unlink()
    qrels.unlink()
    return f"{title}:\n\n" + _report.table(headers, rows) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lines", type=int, nargs="+",
                        help="sizes in lines (default 1000000 3000000, none with --everyday)")
    parser.add_argument("--everyday", action="store_true",
                        help="the everyday files: DL19-size (43 queries x 1,000) and one query, tieaware eval "
                             "first run after install and warm; only these unless --lines is given")
    parser.add_argument("--repeat", "--repeats", type=int, default=3,
                        help="runs per tool and size; the median is printed")
    parser.add_argument("--scores", choices=list(SCORES), default="two-decimals",
                        help="two-decimal scores (bf16-like ties) or fp32 scores written by Python's repr")
    parser.add_argument("--trec-eval", type=Path, help="a trec_eval binary")
    parser.add_argument("--trec-eval-src", type=Path, help="trec_eval's source folder, built with make")
    parser.add_argument("--tieaware-only-above", type=int, default=20_000_000, metavar="LINES")
    parser.add_argument("--folder", type=Path, help="where to write the files (default: a temporary folder)")
    parser.add_argument("--markdown", metavar="PATH", help="also write the tables into PATH's section")
    args = parser.parse_args()
    if args.lines is None:
        args.lines = [] if args.everyday else [1_000_000, 3_000_000]
    with tempfile.TemporaryDirectory(prefix="bench-trec-files-", dir=args.folder) as tmp:
        folder = Path(tmp)
        trec_eval = args.trec_eval
        if trec_eval is None and args.trec_eval_src is not None:
            trec_eval = build_trec_eval(args.trec_eval_src, folder)
        if trec_eval is None:
            print("trec_eval: skipped (give --trec-eval BINARY or --trec-eval-src DIR to build it from source)")
        small_qrels, small_run = write_files(folder, 2 * DOCS, seed=1)
        # compile the numba caches once, and write the Python bytecode an installed package has
        warming = [*([tools(trec_eval, False)] if args.lines else []),
                   *([tools(trec_eval, False, EVERYDAY_METRICS, readers=False)] if args.everyday else [])]
        for chosen in warming:
            for command in chosen.values():
                measure(fill(command, small_qrels, small_run, small_run), bytecode_env())
        if args.lines:
            print(f"{_report.cores()} CPUs; median of {args.repeat} runs; metrics {', '.join(METRICS)}")
        tables = [one_size(lines, folder, trec_eval, small_run, args) for lines in args.lines]
        if args.everyday:
            print(f"\n{_report.cores()} CPUs; median of {args.repeat} runs, and min-max; metrics "
                  f"{', '.join(EVERYDAY_METRICS)}")
        everyday = [everyday_size(*size, folder, trec_eval, small_run, args)
                    for size in (EVERYDAY if args.everyday else ())]
    if args.markdown and everyday:
        ratios = " and" if trec_eval else ""
        body = (f"The files one evaluates every day: a DL19-size run (43 queries x {DOCS:,} documents) and a one-query "
                f"run, scores with three decimals, graded qrels (grades 0-3). Each tool in a process of its own on "
                f"`-m {' -m '.join(EVERYDAY_METRICS)}` (ranx: {', '.join(RANX_NAMES[m] for m in EVERYDAY_METRICS)}), "
                f"wall time (median of {args.repeat} runs taken in turns, and min-max) and median peak RSS of the "
                f"process; ratios to{' trec_eval (built from source)' + ratios if trec_eval else ''} the Python "
                "process that parses the files into dicts and runs pytrec_eval. `tieaware eval` runs twice in each "
                "turn: the first run after install (an empty `NUMBA_CACHE_DIR`, Python's bytecode already written, "
                "as pip does) and warm (a `NUMBA_CACHE_DIR` an earlier run filled); ranx's numba cache is warm. Linux "
                "counts this script's memory in a child's peak RSS: the floor, the peak RSS of `true`, is in each "
                "title, and a tool at the floor used less."
                "\n\n" + "\n".join(everyday))
        _report.write_section(args.markdown, "bench_trec_files_everyday",
                              "TREC files on the command line, everyday sizes (bench_trec_files.py)", body)
    if args.markdown and tables:
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
