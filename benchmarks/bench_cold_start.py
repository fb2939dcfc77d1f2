"""A newcomer's first minutes: import time, and the first `tieaware.evaluate` with an empty numba cache.

Every measurement runs in a fresh subprocess; "cold" ones get an empty
NUMBA_CACHE_DIR (a new temporary folder), "warm" ones a folder that an earlier
process filled. Data: Cranfield with the bf16 all-MiniLM-L6-v2 run (225
queries), read into dicts first, so only `evaluate` is timed.

    python benchmarks/bench_cold_start.py               # medians of 3
    python benchmarks/bench_cold_start.py --repeats 1 --qrels Q --run R
    python benchmarks/bench_cold_start.py --markdown docs/benchmarks.md   # also write the table there

Prints:

* ``import tieaware``: wall time, and the total that ``python -X importtime`` reports;
* whether ranx, scipy, matplotlib, torch, numba or pandas are loaded after it;
* the first evaluate of ndcg@10 and of five metrics (ndcg@10, mrr@10, map@100,
  recall@100, precision@10), cold (compiling; wall and CPU time, which is less
  sensitive to other load on the machine) and warm (loading the cache; this
  includes importing numba and pandas, which `import tieaware` defers), and a
  later call in the same process;
* ``tieaware warmup``, cold and warm.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _report  # noqa: E402

FIVE = ["ndcg@10", "mrr@10", "map@100", "recall@100", "precision@10"]
HEAVY = ("ranx", "scipy", "matplotlib", "torch", "numba", "pandas")


def _default_files() -> tuple[str, str]:
    """The Cranfield qrels and bf16 run bundled with the package."""
    from tieaware.datasets import cranfield

    data = cranfield()
    return str(data.qrels), str(data.runs["bf16"])


def _python(code: str, cache_dir: str | None = None, *flags: str) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.pop("NUMBA_CACHE_DIR", None)
    if cache_dir is not None:
        env["NUMBA_CACHE_DIR"] = cache_dir
    done = subprocess.run([sys.executable, *flags, "-c", code], capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise RuntimeError(f"subprocess failed:\n{done.stderr[-3000:]}")
    return done


def _last_json(done: subprocess.CompletedProcess):
    return json.loads(done.stdout.strip().splitlines()[-1])


def _import_time() -> dict:
    code = ("import sys, time, json; t = time.perf_counter(); import tieaware; wall = time.perf_counter() - t; "
            f"print(json.dumps([wall, {{m: m in sys.modules for m in {HEAVY!r}}}]))")
    wall, loaded = _last_json(_python(code))
    total_us = None
    for line in _python("import tieaware", None, "-X", "importtime").stderr.splitlines():
        parts = [p.strip() for p in line.split("|")]
        if len(parts) == 3 and parts[2] == "tieaware":
            total_us = int(parts[1])
    return {"wall": wall, "importtime": None if total_us is None else total_us / 1e6, "loaded": loaded}


def _evaluate(metrics: list, qrels: str, run: str, cache_dir: str) -> tuple[float, float, float]:
    """(first evaluate, its CPU time, median of 5 later ones) in a new process."""
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
    return tuple(_last_json(_python(code, cache_dir)))


def _warmup(cache_dir: str) -> float:
    t = time.perf_counter()
    _python("import sys; from tieaware.cli import main; sys.exit(main(['warmup']))", cache_dir)
    return time.perf_counter() - t


def main(argv=None) -> None:
    qrels_default, run_default = _default_files()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--qrels", default=qrels_default)
    parser.add_argument("--run", default=run_default)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--markdown", metavar="PATH", help="also write the table into PATH's section")
    args = parser.parse_args(argv)
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cpus; data: {args.qrels}, {args.run}", flush=True)

    imports = [_import_time() for _ in range(args.repeats)]
    wall = statistics.median(i["wall"] for i in imports)
    total = [i["importtime"] for i in imports if i["importtime"] is not None]
    print(f"import tieaware: {wall:.3f} s wall, -X importtime total "
          f"{statistics.median(total) if total else float('nan'):.3f} s (medians of {args.repeats})")
    loaded = imports[-1]["loaded"]
    print("loaded after import tieaware: " + ", ".join(f"{m} {'yes' if v else 'no'}" for m, v in loaded.items()))

    rows = []
    with tempfile.TemporaryDirectory(prefix="tieaware-bench-") as tmp:
        for label, metrics in (("ndcg@10", ["ndcg@10"]), ("five metrics", FIVE)):
            cold, warm = [], []
            for i in range(args.repeats):
                cache = os.path.join(tmp, f"{label.replace(' ', '_')}-{i}")
                cold.append(_evaluate(metrics, args.qrels, args.run, cache))
                warm.append(_evaluate(metrics, args.qrels, args.run, cache))  # the same, now filled, cache
            rows.append((label, statistics.median(c[0] for c in cold), statistics.median(c[1] for c in cold),
                         statistics.median(w[0] for w in warm), statistics.median(w[2] for w in warm)))
            print(f"  measured {label}", file=sys.stderr, flush=True)
        warmups = []
        try:
            for i in range(args.repeats):
                cache = os.path.join(tmp, f"warmup-{i}")
                warmups.append((_warmup(cache), _warmup(cache)))
        except RuntimeError as exc:  # a tieaware without the warmup command
            print(f"  tieaware warmup failed: {str(exc).strip().splitlines()[-1]}", file=sys.stderr)

    print(f"\nfirst evaluate, medians of {args.repeats} processes each (seconds):")
    print(f"{'':<14}{'cold cache':>12}{'(cpu)':>8}{'warm cache':>12}{'later call':>12}")
    for label, cold, cpu, warm, later in rows:
        print(f"{label:<14}{cold:12.2f}{cpu:8.2f}{warm:12.2f}{later:12.3f}")
    if warmups:
        print(f"tieaware warmup (whole process): cold {statistics.median(w[0] for w in warmups):.2f} s, "
              f"warm {statistics.median(w[1] for w in warmups):.2f} s")
    if args.markdown:
        heavy = ", ".join(m for m, v in loaded.items() if v) or "none"
        table = [["`import tieaware`", f"{wall:.3f}", "", f"heavy modules loaded: {heavy}"]]
        for label, cold, cpu, warm, later in rows:
            table.append([f"first `evaluate`, {label}", f"{cold:.2f}", f"{warm:.2f}",
                          f"CPU {cpu:.2f} s (empty cache); later calls {later:.3f} s"])
        if warmups:
            table.append(["`tieaware warmup` (whole process)", f"{statistics.median(w[0] for w in warmups):.2f}",
                          f"{statistics.median(w[1] for w in warmups):.2f}", "every kernel family and tie order"])
        body = (f"Fresh processes; \"empty cache\" is a new NUMBA_CACHE_DIR, \"filled cache\" one an earlier "
                f"process filled. Data: {Path(args.qrels).name} and {Path(args.run).name} read into dicts first. "
                f"Medians of {args.repeats} processes, seconds.\n\n"
                + _report.table(["step", "empty cache s", "filled cache s", "note"], table))
        _report.write_section(args.markdown, "bench_cold_start", "Cold start (bench_cold_start.py)", body)


if __name__ == "__main__":
    main()
