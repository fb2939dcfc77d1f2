"""Evaluation beyond memory: a synthetic TREC run file evaluated in memory and streamed.

Writes a run of Q queries x N documents (bf16-rounded scores, so ties) and its qrels to a
temporary folder, then in two fresh processes evaluates it with `tieaware.evaluate(qrels,
path, ...)` (the whole run read into dicts) and with ``stream=True`` (whole queries, 1,000
at a time), and prints each one's wall time and peak RSS above the interpreter with
tieaware loaded, their ratios, and whether the numbers are identical.

    python benchmarks/bench_streaming.py                      # 20,000 x 1,000 (20 million lines)
    python benchmarks/bench_streaming.py --queries 2000 --markdown docs/benchmarks.md   # also write the table
"""
import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _report  # noqa: E402
from synthetic import METRICS, bf16_round  # noqa: E402


def _peak_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM"):
            return int(line.split()[1]) / 1024
    return float("nan")


def write_files(folder: Path, n_queries: int, n_docs: int, seed: int = 0) -> tuple[Path, Path]:
    """run.trec and qrels.trec: per query n_docs documents, ~5% judged (grades 0-3)."""
    rng = np.random.default_rng(seed)
    run_path, qrels_path = folder / "run.trec", folder / "qrels.trec"
    ranks = np.arange(1, n_docs + 1)
    with open(run_path, "w") as run, open(qrels_path, "w") as qrels:
        for q in range(n_queries):
            docs = rng.choice(10 * n_docs, n_docs, replace=False)
            grades = rng.integers(0, 4, n_docs)
            scores = bf16_round(0.5 + 0.08 * grades + 0.1 * rng.standard_normal(n_docs)).tolist()
            run.write("".join(f"q{q} Q0 d{d} {r} {s!r} synth\n" for d, r, s in zip(docs.tolist(), ranks, scores)))
            judged = rng.random(n_docs) < 0.05
            qrels.write("".join(f"q{q} 0 d{d} {g}\n" for d, g in zip(docs[judged], grades[judged])))
    return qrels_path, run_path


def worker(mode: str, qrels_path: str, run_path: str) -> dict:
    import tieaware

    tieaware.evaluate({"q": {"a": 1}}, {"q": {"a": 1.0}}, METRICS)  # kernels loaded before the baseline
    baseline = _peak_mb()
    start = time.perf_counter()
    report = tieaware.evaluate(qrels_path, run_path, METRICS, stream=(mode == "stream"))
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "peak_mb_above_interpreter": _peak_mb() - baseline,
            "means": {name: [r.expected, r.min, r.max, r.oblivious] for name, r in report.items()}}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queries", type=int, default=20_000)
    parser.add_argument("--docs", type=int, default=1_000)
    parser.add_argument("--markdown", metavar="PATH", help="also write the table into PATH's section")
    parser.add_argument("--worker", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(*args.worker)))
        return
    with tempfile.TemporaryDirectory(prefix="tieaware-stream-bench-") as folder:
        start = time.perf_counter()
        qrels_path, run_path = write_files(Path(folder), args.queries, args.docs)
        size_mb = run_path.stat().st_size / 2 ** 20
        print(f"wrote {args.queries * args.docs:,} run lines ({size_mb:.0f} MB) "
              f"in {time.perf_counter() - start:.0f} s")
        rows = {}
        for mode in ("memory", "stream"):
            done = subprocess.run([sys.executable, __file__, "--worker", mode, str(qrels_path), str(run_path)],
                                  capture_output=True, text=True, check=True)
            rows[mode] = json.loads(done.stdout.strip().splitlines()[-1])
    print(f"{'path':10s} {'seconds':>9s} {'peak MB above interpreter':>26s}")
    for mode, row in rows.items():
        print(f"{mode:10s} {row['seconds']:9.1f} {row['peak_mb_above_interpreter']:26.0f}")
    time_ratio = rows["stream"]["seconds"] / rows["memory"]["seconds"]
    memory_ratio = rows["stream"]["peak_mb_above_interpreter"] / rows["memory"]["peak_mb_above_interpreter"]
    identical = rows["stream"]["means"] == rows["memory"]["means"]
    print(f"stream / memory: time {time_ratio:.2f}x, peak memory {memory_ratio:.2f}x; identical numbers: {identical}")
    if args.markdown:
        labels = {"memory": "in memory (dicts)", "stream": "`stream=True`"}
        table = _report.table(
            ["path", "s", "peak MB above the interpreter"],
            [[labels[mode], f"{row['seconds']:.1f}", f"{row['peak_mb_above_interpreter']:.0f}"]
             for mode, row in rows.items()])
        body = (f"A TREC run file of {args.queries:,} queries x {args.docs:,} documents "
                f"({args.queries * args.docs:,} lines, {size_mb:.0f} MB), five metrics, each path in a fresh "
                f"process.\n\n{table}\n\nstream / memory: time {time_ratio:.2f}x, peak memory "
                f"{memory_ratio:.2f}x; identical numbers: {identical}.\n")
        _report.write_section(args.markdown, "bench_streaming", "Runs larger than memory (bench_streaming.py)", body)


if __name__ == "__main__":
    main()
