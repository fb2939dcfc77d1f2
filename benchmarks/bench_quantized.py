"""Speed of quantized exact search (tieaware.hps.quantize) against fp32 exact search, on synthetic embeddings.

Same data in the same run: `--docs` (100,000) unit-norm 384-dim documents and `--queries` (1,000) queries.
Every method returns the exact top k (100) of each query with every document tied with the k-th:

* fp32: numpy (BLAS) matmul by blocks of queries + per-row partition (the tie-preserving cut)
* binary: QuantizedIndex Hamming search (query sign bits, XOR + np.bitwise_count on 64-bit words,
  per-row histogram cut)
* binary + rescore: the same, then the top rescore_k (4k) rescored as fp32 query . {-1,+1} doc
* binary + rescore_full: ... rescored with the fp32 documents
* int8 / int8 + rescore: integer dot product of int8 codes (exact via BLAS), rescoring with dequantized docs
* faiss IndexBinaryFlat (if faiss-cpu is installed): the plain top k, no ties kept, for reference

The methods run interleaved in rotating order, `--repeats` times after a warm-up; the table gives the
median wall seconds for all queries, ms per query and the ratio to fp32, and the fastest run of each
(on a shared machine the minimum is the least disturbed measurement). Index building (quantizing the
corpus) is timed once, separately. Not a test: run on demand.

    python benchmarks/bench_quantized.py [--docs 100000] [--queries 1000] [--dim 384] [--k 100] [--repeats 5]
    python benchmarks/bench_quantized.py --threads 1     # one core for BLAS, faiss and the Hamming blocks
    python benchmarks/bench_quantized.py --markdown docs/benchmarks.md   # also write the table there
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

if __name__ == "__main__" and "--threads" in sys.argv:  # BLAS reads these when numpy is first imported
    _threads = sys.argv[sys.argv.index("--threads") + 1]
    for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[_var] = _threads

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _report  # noqa: E402

from tieaware.hps.quantize import QuantizedIndex, top_rows_with_ties  # noqa: E402


def fp32_search(queries: np.ndarray, docs: np.ndarray, k: int, block: int = 2**24):
    """Exact fp32 top-k with ties: BLAS matmul by blocks of queries, per-row partition cut."""
    hits = []
    per_block = max(1, block // len(docs))
    for start in range(0, len(queries), per_block):
        scores = queries[start:start + per_block] @ docs.T
        for row, top in enumerate(top_rows_with_ties(scores, k)):
            hits.append((top, scores[row, top]))
    return hits


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=1_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--k", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--noise", type=float, default=0.08, help="query = source doc + N(0, noise^2) per dim")
    parser.add_argument("--threads", type=int, default=None,
                        help="threads for BLAS, faiss and the Hamming blocks (default: every CPU)")
    parser.add_argument("--markdown", metavar="PATH", help="also write the table into PATH's section")
    args = parser.parse_args()

    rng = np.random.default_rng(args.seed)
    docs = rng.standard_normal((args.docs, args.dim), dtype=np.float32)
    docs /= np.linalg.norm(docs, axis=1, keepdims=True)
    # each query is a noisy copy of one document (its source), so there is one true neighbour to find
    source = rng.integers(0, args.docs, args.queries)
    queries = docs[source] + rng.standard_normal((args.queries, args.dim), dtype=np.float32) * args.noise
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    k = args.k

    start = time.perf_counter()
    binary = QuantizedIndex(docs, "binary", keep_full=True, threads=args.threads)
    binary_index_s = time.perf_counter() - start
    start = time.perf_counter()
    int8 = QuantizedIndex(docs, "int8")
    int8_index_s = time.perf_counter() - start

    methods = {
        "fp32 (numpy matmul + top-k)": lambda: fp32_search(queries, docs, k),
        "binary (Hamming)": lambda: binary.search(queries, k),
        "binary + rescore (fp32 q . ±1 d)": lambda: binary.search(queries, k, rescore="quantized"),
        "binary + rescore_full (fp32 q . fp32 d)": lambda: binary.search(queries, k, rescore="full"),
        "int8 (integer dot)": lambda: int8.search(queries, k),
        "int8 + rescore (fp32 q . dequantized d)": lambda: int8.search(queries, k, rescore="quantized"),
    }
    try:
        import faiss

        if args.threads:
            faiss.omp_set_num_threads(args.threads)
        faiss_index = faiss.IndexBinaryFlat(args.dim)
        faiss_index.add(np.packbits(docs > 0, axis=1))
        query_bits = np.packbits(queries > 0, axis=1)
        methods["faiss IndexBinaryFlat (top k, ties cut)"] = lambda: faiss_index.search(query_bits, k)
    except ImportError:
        faiss = None

    results = {name: method() for name, method in methods.items()}  # warm-up, and the results to compare
    times = {name: [] for name in methods}
    names = list(methods)
    for repeat in range(args.repeats):
        for name in names[repeat % len(names):] + names[:repeat % len(names)]:
            start = time.perf_counter()
            methods[name]()
            times[name].append(time.perf_counter() - start)

    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"{args.queries} queries x {args.docs:,} docs, dim {args.dim}, top {k} with ties; median of "
          f"{args.repeats}; numpy {np.__version__}, {os.cpu_count()} CPUs, {binary.threads} Hamming threads, "
          f"load average {load:.1f}"
          + (f", faiss {faiss.__version__} ({faiss.omp_get_max_threads()} threads)" if faiss else ""))
    print(f"index build: binary {binary_index_s:.2f} s, int8 {int8_index_s:.2f} s; memory: fp32 "
          f"{docs.nbytes / 2**20:.1f} MiB, int8 {int8.codes.nbytes / 2**20:.1f} MiB, binary "
          f"{binary.codes.nbytes / 2**20:.1f} MiB\n")
    base = statistics.median(times[names[0]])
    best = min(times[names[0]])
    rows = []
    for name in names:
        median = statistics.median(times[name])
        rows.append([name, f"{median:.3f}", f"{1e3 * median / args.queries:.3f}", f"{median / base:.2f}",
                     f"{min(times[name]):.3f}", f"{min(times[name]) / best:.2f}"])
    table = _report.table(["method", "median s", "ms / query", "/ fp32", "min s", "min / fp32 min"], rows)
    print(table)
    if args.markdown:
        body = (f"{args.queries:,} queries x {args.docs:,} unit-norm documents, dim {args.dim}, exact top {k} "
                f"with ties; median of {args.repeats} interleaved runs; {binary.threads} Hamming threads.\n\n"
                f"{table}\n")
        _report.write_section(args.markdown, "bench_quantized", "Quantised search (bench_quantized.py)", body,
                              names=("tieaware", "numpy", "faiss-cpu"))
    for plain_name, rescored_name in (("binary (Hamming)", "binary + rescore (fp32 q . ±1 d)"),
                                      ("int8 (integer dot)", "int8 + rescore (fp32 q . dequantized d)")):
        plain, rescored = statistics.median(times[plain_name]), statistics.median(times[rescored_name])
        print(f"rescoring overhead, {plain_name.split(' (')[0]}: {rescored - plain:.3f} s "
              f"({1e3 * (rescored - plain) / args.queries:.3f} ms / query, x{rescored / plain:.2f})")

    print(f"\nsynthetic data has no relevance structure beyond the document each query was drawn from; "
          f"found@{k}: share of queries whose source document is kept; ties: census of the top {k}")
    for name in names:
        if name.startswith("faiss"):
            continue
        hits = results[name]
        found = np.mean([source[q] in set(rows.tolist()) for q, (rows, _) in enumerate(hits)])
        unique = np.mean([len(np.unique(np.sort(scores)[::-1][:k])) for _, scores in hits])
        kept = np.mean([len(rows) for rows, _ in hits])
        print(f"  {name}: found@{k} {found:.3f}, docs kept per query {kept:.1f} (ties at the k-th), "
              f"unique scores in the top {k} {unique:.1f}")
    if faiss is not None:
        distances, _ = results["faiss IndexBinaryFlat (top k, ties cut)"]
        ours = results["binary (Hamming)"]
        same = all(np.array_equal(np.sort(args.dim - d), np.sort(s)[::-1][:k][::-1]) for d, (_, s) in
                   zip(distances, ours))
        print(f"  faiss Hamming top-{k} distances equal ours: {same}")


if __name__ == "__main__":
    main()
