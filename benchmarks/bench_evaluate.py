"""Speed and peak memory of tieaware.evaluate against ranx and pytrec_eval, measured in one run.

Synthetic runs with bf16-rounded scores (benchmarks/synthetic.py); the five metrics ndcg@10,
mrr@10, map@100, recall@100, precision@10. tieaware computes expected, min, max, oblivious
(trec_eval order) and variance of each; ranx and pytrec_eval compute one value each. Every tool
runs in its own subprocess on the same data:

* time: median of the warm calls (numba's compile or cache load is the separate "first call");
* peak memory: the process's peak RSS minus that of a process that only builds the same data
  (dicts, or dicts plus ranx objects for the rows that start from ranx objects);
* the Python floor: one pass over every (doc id, score) of the run dicts, nothing else.

    python benchmarks/bench_evaluate.py                          # 1,000 x 100 and 10,000 x 1,000
    python benchmarks/bench_evaluate.py --sizes 1000x1000 --repeats 5
    python benchmarks/bench_evaluate.py --linear 1000 10000 50000   # tieaware from dicts: time per query
    python benchmarks/bench_evaluate.py --sizes 10000x1000 --markdown docs/benchmarks.md
    python benchmarks/bench_evaluate.py --compare 10 --sizes 10000x1000   # compare of 10 runs vs evaluating them

Prints medians and ratios measured in this same run, and the machine it ran on; `--markdown PATH`
also writes them as a table into PATH (its section of docs/benchmarks.md).
"""
import argparse
import copy
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import _report  # noqa: E402

ROWS = {  # tool -> (label, data it starts from)
    "floor": ("Python floor: iterate the run dicts", "dicts"),
    "pytrec_eval": ("pytrec_eval (dicts)", "dicts"),
    "ranx_build": ("ranx: Qrels/Run from dicts + evaluate", "dicts"),
    "tieaware_dict": ("tieaware.evaluate (dicts)", "dicts"),
    "ranx": ("ranx.evaluate (existing Run)", "ranx"),
    "tieaware_run": ("tieaware.evaluate (new ranx Run)", "ranx"),
    "tieaware_cached": ("tieaware.evaluate (same Run again)", "ranx"),
}


def _peak_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _timed(fn, repeats):
    """(first call s, median of the warm calls s)."""
    start = time.perf_counter()
    fn()
    first = time.perf_counter() - start
    warm = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        warm.append(time.perf_counter() - start)
    return first, statistics.median(warm)


def worker(tool: str, n_queries: int, n_docs: int, repeats: int) -> dict:
    sys.path.insert(0, str(HERE))
    import synthetic

    qrels, run = synthetic.make(n_queries, n_docs)
    if tool == "data_ranx" or ROWS.get(tool, ("", ""))[1] == "ranx":
        import ranx

        ranx_qrels, ranx_run = ranx.Qrels(qrels), ranx.Run(run)
    if tool in ("data", "data_ranx"):
        return {"tool": tool, "peak_mb": _peak_mb()}
    if tool == "floor":
        def job():
            for docs in run.values():
                for _ in docs.items():
                    pass
    elif tool == "pytrec_eval":
        import pytrec_eval

        def job():
            pytrec_eval.RelevanceEvaluator(qrels, synthetic.PYTREC_MEASURES).evaluate(run)
    elif tool == "ranx_build":
        import ranx

        def job():
            ranx.evaluate(ranx.Qrels(qrels), ranx.Run(run), synthetic.METRICS, save_results_in_run=False)
    elif tool == "ranx":
        def job():
            ranx.evaluate(ranx_qrels, ranx_run, synthetic.METRICS, save_results_in_run=False)
    elif tool == "tieaware_dict":
        import tieaware

        def job():
            tieaware.evaluate(qrels, run, synthetic.METRICS)
    elif tool == "tieaware_run":
        import tieaware

        def job():  # a new Run object over the same typed dicts each call: nothing cached. (Not ranx.Run():
            # its first call compiles ranx's empty typed dicts, ~1 s and ~4 MB charged to this row.)
            tieaware.evaluate(ranx_qrels, copy.copy(ranx_run), synthetic.METRICS)
    elif tool == "tieaware_cached":
        import tieaware

        def job():  # the same Run: its conversion and statistics are cached, checked against a fingerprint
            tieaware.evaluate(ranx_qrels, ranx_run, synthetic.METRICS)
    elif tool.startswith("compare"):  # compare_N / evaluate_N: N runs, each the base run with 10% of scores moved
        import numpy as np

        import tieaware

        rng = np.random.default_rng(1)
        runs = {}
        for r in range(int(tool.rsplit("_", 1)[1])):
            moved = {q: rng.random(len(docs)) < 0.1 for q, docs in run.items()}
            runs[f"run{r}"] = {q: {d: s + 0.0078125 * r * moved[q][i] for i, (d, s) in enumerate(docs.items())}
                               for q, docs in run.items()}
        metrics = ["ndcg@10", "map@100", "P@10"]
        if tool.startswith("compare_evaluate"):
            def job():
                for one in runs.values():
                    tieaware.evaluate(qrels, one, metrics)
        else:
            def job():
                tieaware.compare(qrels, runs, metrics)
    else:
        raise SystemExit(f"unknown tool {tool}")
    first, warm = _timed(job, repeats)
    return {"tool": tool, "first_s": first, "warm_s": warm, "peak_mb": _peak_mb()}


def _run_worker(tool: str, n_queries: int, n_docs: int, repeats: int) -> dict:
    done = subprocess.run([sys.executable, __file__, "--worker", tool, str(n_queries), str(n_docs), str(repeats)],
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def compare_tools(n_queries: int, n_docs: int, repeats: int) -> str:
    """Run every tool on one size, print the table and ratios; return them as markdown."""
    base = {kind: _run_worker(f"data{'' if kind == 'dicts' else '_ranx'}", n_queries, n_docs, 0)["peak_mb"]
            for kind in ("dicts", "ranx")}
    rows = {tool: _run_worker(tool, n_queries, n_docs, repeats) for tool in ROWS}
    for tool, row in rows.items():
        row["above_data_mb"] = row["peak_mb"] - base[ROWS[tool][1]]
    print(f"\n== {n_queries:,} queries x {n_docs:,} docs, bf16 scores; median of {repeats} warm calls")
    print(f"{'tool':40s} {'first call s':>12s} {'warm s':>8s} {'peak MB above data':>19s}")
    for tool, (label, _) in ROWS.items():
        row = rows[tool]
        print(f"{label:40s} {row['first_s']:12.3f} {row['warm_s']:8.3f} {row['above_data_mb']:19.0f}")
    ours, cached, dicts = rows["tieaware_run"], rows["tieaware_cached"], rows["tieaware_dict"]
    print(f"speed-up vs ranx.evaluate on the same ranx objects:  {rows['ranx']['warm_s'] / ours['warm_s']:.1f}x "
          f"(new Run), {rows['ranx']['warm_s'] / cached['warm_s']:.1f}x (same Run again)")
    trec_ratio = rows["pytrec_eval"]["warm_s"] / dicts["warm_s"]
    print(f"speed-up vs pytrec_eval, both from dicts:            {trec_ratio:.1f}x")
    print(f"speed-up vs ranx incl. building Qrels/Run:           {rows['ranx_build']['warm_s'] / dicts['warm_s']:.1f}x")
    print(f"tieaware from dicts / Python floor:                  {dicts['warm_s'] / rows['floor']['warm_s']:.1f}x")
    print(f"peak memory above data, tieaware (dicts) vs pytrec_eval / ranx incl. build: "
          f"{dicts['above_data_mb']:.0f} / {rows['pytrec_eval']['above_data_mb']:.0f} / "
          f"{rows['ranx_build']['above_data_mb']:.0f} MB")
    print(f"peak memory above data, tieaware (ranx objects) vs ranx.evaluate: "
          f"{ours['above_data_mb']:.0f} / {rows['ranx']['above_data_mb']:.0f} MB")
    table = _report.table(
        [f"{n_queries:,} queries x {n_docs:,} docs", "first call s", "warm s", "peak MB above data"],
        [[label, f"{rows[tool]['first_s']:.3f}", f"{rows[tool]['warm_s']:.3f}",
          f"{round(rows[tool]['above_data_mb']):d}"] for tool, (label, _) in ROWS.items()])
    ratios = [
        f"tieaware.evaluate on a new ranx `Run` is {rows['ranx']['warm_s'] / ours['warm_s']:.1f}x faster than "
        f"`ranx.evaluate` on it ({rows['ranx']['warm_s'] / cached['warm_s']:.1f}x on the same `Run` again)",
        f"from dicts it is {trec_ratio:.1f}x faster than pytrec_eval and "
        f"{rows['ranx_build']['warm_s'] / dicts['warm_s']:.1f}x faster than ranx including building its objects, "
        f"at {dicts['warm_s'] / rows['floor']['warm_s']:.1f}x the Python floor",
    ]
    return (f"Median of {repeats} warm calls; memory is the peak RSS above a process that only builds the "
            f"same data.\n\n{table}\n\n" + "".join(f"- {line}\n" for line in ratios))


def compare_runs(n_runs: int, n_queries: int, n_docs: int, repeats: int) -> str:
    """`tieaware.compare` of n_runs runs (ndcg@10, map@100, P@10; Student's t-test, every tie-aware pair
    statistic) against evaluating the same runs one by one, printed; returned as markdown."""
    compared = _run_worker(f"compare_{n_runs}", n_queries, n_docs, repeats)
    evaluated = _run_worker(f"compare_evaluate_{n_runs}", n_queries, n_docs, repeats)
    ratio = compared["warm_s"] / evaluated["warm_s"]
    print(f"\n== {n_runs} runs of {n_queries:,} queries x {n_docs:,} docs, 3 metrics; median of {repeats} warm calls")
    print(f"evaluate each run:  {evaluated['warm_s']:8.3f} s")
    print(f"compare (all pairs): {compared['warm_s']:8.3f} s  ({ratio:.2f}x evaluating the runs)")
    table = _report.table([f"{n_runs} runs x {n_queries:,} queries x {n_docs:,} docs", "warm s"],
                          [["tieaware.evaluate of each run", f"{evaluated['warm_s']:.3f}"],
                           ["tieaware.compare (every pair, every statistic)", f"{compared['warm_s']:.3f}"]])
    return (f"ndcg@10, map@100, P@10; median of {repeats} warm calls.\n\n{table}\n\n"
            f"- compare takes {ratio:.2f}x the time of evaluating its runs\n")


def linear(sizes: list[int], n_docs: int, repeats: int) -> str:
    """Time per query of tieaware from dicts at each size, printed; returned as markdown."""
    print(f"\n== tieaware.evaluate from dicts, x {n_docs:,} docs: time per query (median of {repeats})")
    per_query, rows = {}, []
    for n_queries in sizes:
        row = _run_worker("tieaware_dict", n_queries, n_docs, repeats)
        per_query[n_queries] = row["warm_s"] / n_queries
        print(f"{n_queries:>8,} queries  {row['warm_s']:8.3f} s  {per_query[n_queries] * 1e6:8.1f} us/query")
        rows.append([f"{n_queries:,}", f"{row['warm_s']:.3f}", f"{per_query[n_queries] * 1e6:.1f}"])
    growth = max(per_query.values()) / min(per_query.values())
    print(f"largest / smallest time per query: {growth:.2f}x")
    table = _report.table([f"queries (x {n_docs:,} docs)", "warm s", "µs per query"], rows)
    return (f"tieaware.evaluate from dicts, median of {repeats} warm calls.\n\n{table}\n\n"
            f"Largest / smallest time per query: {growth:.2f}x.\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", nargs="+", default=["1000x100", "10000x1000"])
    parser.add_argument("--linear", nargs="+", type=int, metavar="QUERIES",
                        help="only the growth check: tieaware from dicts at these query counts x --docs")
    parser.add_argument("--docs", type=int, default=1000)
    parser.add_argument("--compare", type=int, metavar="RUNS",
                        help="only tieaware.compare of RUNS runs against evaluating them, at each --sizes")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--markdown", metavar="PATH", help="also write the tables into PATH's section")
    parser.add_argument("--worker", nargs=4, metavar=("TOOL", "Q", "N", "REPEATS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        tool, q, n, reps = args.worker
        print(json.dumps(worker(tool, int(q), int(n), int(reps))))
        return
    print(f"machine: {_report.machine()}")
    if args.compare:
        name, title = "bench_evaluate-compare", "Comparing runs (bench_evaluate.py --compare)"
        body = "\n".join(compare_runs(args.compare, *map(int, size.split("x")), args.repeats) for size in args.sizes)
    elif args.linear:
        name, title = "bench_evaluate-linear", "Linear growth (bench_evaluate.py --linear)"
        body = linear(args.linear, args.docs, args.repeats)
    else:
        name, title = "bench_evaluate", "Throughput and memory (bench_evaluate.py)"
        body = "\n".join(compare_tools(*map(int, size.split("x")), args.repeats) for size in args.sizes)
        body = ("Synthetic bf16-rounded runs; ndcg@10, mrr@10, map@100, recall@100, precision@10 "
                "(tieaware: E, min, max, oblivious value and variance of each; the others one value). "
                "Each tool in its own process.\n\n" + body)
    if args.markdown:
        _report.write_section(args.markdown, name, title, body)


if __name__ == "__main__":
    main()
