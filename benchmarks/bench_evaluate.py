"""Speed and peak memory of tieaware.evaluate against ranx and pytrec_eval.

Synthetic runs with bf16-rounded scores (benchmarks/synthetic.py); the five
metrics ndcg@10, mrr@10, map@100, recall@100, precision@10. tieaware computes
expected, min, max, oblivious (trec_eval order) and variance for each; ranx and
pytrec_eval compute one value each. Every tool runs in its own subprocess on the
same data, so peak RSS (above the data already in memory) is comparable.

    python benchmarks/bench_evaluate.py                 # 1,000 x 100 and 10,000 x 1,000
    python benchmarks/bench_evaluate.py --sizes 1000x100 --repeats 5

Prints medians of the repeated ("warm") timings, first-call times (numba cache
load or compile), and ratios measured in this same run.
"""
import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _rss_mb(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field):
            return int(line.split()[1]) / 1024
    return float("nan")


def _reset_peak():
    Path("/proc/self/clear_refs").write_text("5")


def _timed(fn, repeats):
    """(first call s, median warm s, peak RSS MB above the data during the warm calls)."""
    first_start = time.perf_counter()
    fn()
    first = time.perf_counter() - first_start
    base = _rss_mb("VmRSS")  # after the first call: compiled or loaded kernels are not per-data memory
    _reset_peak()
    warm = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        warm.append(time.perf_counter() - start)
    return first, statistics.median(warm), _rss_mb("VmHWM") - base


def worker(tool: str, n_queries: int, n_docs: int, repeats: int) -> dict:
    sys.path.insert(0, str(HERE))
    import synthetic

    qrels, run = synthetic.make(n_queries, n_docs)
    out = {"tool": tool}
    if tool == "pytrec_eval":
        import pytrec_eval

        def job():
            pytrec_eval.RelevanceEvaluator(qrels, synthetic.PYTREC_MEASURES).evaluate(run)
    elif tool == "ranx":
        import ranx

        start = time.perf_counter()
        ranx_qrels, ranx_run = ranx.Qrels(qrels), ranx.Run(run)
        out["build_run_s"] = time.perf_counter() - start

        def job():
            ranx.evaluate(ranx_qrels, ranx_run, synthetic.METRICS, save_results_in_run=False)
    elif tool in ("tieaware_dict", "tieaware_run"):
        import tieaware

        if tool == "tieaware_run":
            import ranx

            ranx_qrels, ranx_run = ranx.Qrels(qrels), ranx.Run(run)
            tieaware.evaluate(ranx.Qrels({"q": {"d": 1}}), ranx.Run({"q": {"d": 1.0}}), "map")  # load kernels
            def job():  # a fresh Run object each time: nothing cached from earlier calls
                run_copy = ranx.Run()
                run_copy.run, run_copy.sorted = ranx_run.run, ranx_run.sorted
                tieaware.evaluate(ranx_qrels, run_copy, synthetic.METRICS)

            start = time.perf_counter()
            tieaware.evaluate(ranx_qrels, ranx_run, synthetic.METRICS)
            tieaware.evaluate(ranx_qrels, ranx_run, synthetic.METRICS)
            out["cached_same_run_s"] = time.perf_counter() - start
        else:
            def job():
                tieaware.evaluate(qrels, run, synthetic.METRICS)
    else:
        raise SystemExit(f"unknown tool {tool}")
    out["first_s"], out["warm_s"], out["peak_mb_above_data"] = _timed(job, repeats)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", nargs="+", default=["1000x100", "10000x1000"])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--worker", nargs=4, metavar=("TOOL", "Q", "N", "REPEATS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        tool, q, n, reps = args.worker
        print(json.dumps(worker(tool, int(q), int(n), int(reps))))
        return
    for size in args.sizes:
        n_queries, n_docs = map(int, size.split("x"))
        rows = {}
        for tool in ("ranx", "pytrec_eval", "tieaware_dict", "tieaware_run"):
            done = subprocess.run([sys.executable, __file__, "--worker", tool, str(n_queries), str(n_docs),
                                   str(args.repeats)], capture_output=True, text=True, check=True)
            rows[tool] = json.loads(done.stdout.strip().splitlines()[-1])
        ranx_row, trec_row = rows["ranx"], rows["pytrec_eval"]
        ours_dict, ours_run = rows["tieaware_dict"], rows["tieaware_run"]
        print(f"\n== {n_queries:,} queries x {n_docs:,} docs, bf16 scores; median of {args.repeats} warm runs")
        print(f"{'tool':34s} {'first call s':>12s} {'warm s':>8s} {'peak MB':>8s}")
        print(f"{'ranx Run(dict) construction':34s} {ranx_row['build_run_s']:12.2f}")
        for label, row in [("ranx.evaluate (same Run)", ranx_row), ("pytrec_eval (dicts)", trec_row),
                           ("tieaware.evaluate (dicts)", ours_dict),
                           ("tieaware.evaluate (fresh ranx Run)", ours_run)]:
            print(f"{label:34s} {row['first_s']:12.2f} {row['warm_s']:8.3f} {row['peak_mb_above_data']:8.0f}")
        print(f"{'tieaware, same Run twice (cached)':34s} {ours_run['cached_same_run_s']:12.3f}")
        print(f"speed-up vs ranx.evaluate, fresh Run object:  {ranx_row['warm_s'] / ours_run['warm_s']:.1f}x")
        print(f"speed-up vs ranx incl. building its Run:      "
              f"{(ranx_row['warm_s'] + ranx_row['build_run_s']) / ours_dict['warm_s']:.1f}x (tieaware from dicts)")
        print(f"speed-up vs pytrec_eval, both from dicts:     {trec_row['warm_s'] / ours_dict['warm_s']:.1f}x")
        print(f"peak memory vs ranx.evaluate:                 "
              f"{ours_run['peak_mb_above_data'] / max(ranx_row['peak_mb_above_data'], 1):.2f}x (Run), "
              f"{ours_dict['peak_mb_above_data'] / max(ranx_row['peak_mb_above_data'], 1):.2f}x (dicts)")


if __name__ == "__main__":
    main()
