"""Fusion study on Cranfield: rank fusion itself creates exact score ties, and tie order can flip conclusions.

Fuses a BM25 run (built here with bm25s) with the all-MiniLM-L6-v2 runs bundled in tieaware.datasets (fp32, and bf16
whose scores already tie) using ranx.fuse, counts the ties each fusion creates with tieaware.census, and
compares the runs tie-aware with tieaware.compare: per pair of runs the difference with its interval, the
Holm-corrected p-value, whether significance holds under every tie order, and how likely one random tie order
reverses the difference (docs/comparison.md).

RRF gives a document 1/(k + r1) + 1/(k + r2): two documents whose ranks are swapped between the two input
runs (r1, r2) = (a, b) and (b, a), or that each appear in only one run at the same rank, get bit-identical
scores, so exact ties are systematic, not rare. Borda counts tie the same way.

Run from the repository root (needs bm25s: pip install bm25s):
    python examples/fusion_study.py [--data CRANFIELD_FOLDER] [--plot fusion_ndcg_at_k.png]
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pandas as pd
import ranx

import tieaware
from tieaware.comparison import compare, plot_at_k
from tieaware.datasets import cranfield
from tieaware.inputs import open_text

METRICS = ["ndcg@10", "precision@10", "mrr@10", "map@100"]
DEPTH = 100


def read_jsonl(path: Path) -> dict:
    """{_id: text} from a BEIR-style JSONL file, plain or gzipped (the title when the text is empty)."""
    texts = {}
    with open_text(path) as handle:
        for line in handle:
            record = json.loads(line)
            texts[record["_id"]] = record.get("text") or record.get("title", "")
    return texts


def top_with_ties(doc_ids: list, scores: np.ndarray, depth: int) -> dict:
    """The `depth` best positive scores plus every document tied with the last one kept."""
    positive = scores > 0
    if positive.sum() > depth:
        positive &= scores >= np.sort(scores)[-depth]
    return {doc_ids[i]: float(scores[i]) for i in np.flatnonzero(positive)}


def bm25_run(corpus: dict, queries: dict, depth: int = DEPTH) -> dict:
    """BM25 (bm25s defaults: Lucene variant, k1=1.5, b=0.75, English stop words, no stemming)."""
    import bm25s

    doc_ids = list(corpus)
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize([corpus[d] for d in doc_ids], stopwords="en", show_progress=False),
                    show_progress=False)
    run = {}
    for qid, text in queries.items():
        tokens = bm25s.tokenize([text], stopwords="en", return_ids=False, show_progress=False)[0]
        token_ids = retriever.get_tokens_ids(tokens)
        scores = retriever.get_scores_from_ids(token_ids) if token_ids else np.zeros(len(doc_ids))
        run[qid] = top_with_ties(doc_ids, np.asarray(scores, dtype=np.float64), depth)
    return run


def fused_runs(bm25: ranx.Run, dense: dict) -> dict:
    """Several ranx.fuse methods over BM25 + each dense run."""
    out = {}
    for tag, run in dense.items():
        pair = [bm25, run]
        out[f"rrf(bm25,{tag})"] = ranx.fuse(pair, method="rrf", norm=None, params={"k": 60})
        out[f"borda(bm25,{tag})"] = ranx.fuse(pair, method="bordafuse", norm=None)
        out[f"wsum(bm25,{tag})"] = ranx.fuse(pair, method="wsum", norm="min-max", params={"weights": [0.5, 0.5]})
        out[f"combmnz(bm25,{tag})"] = ranx.fuse(pair, method="mnz", norm="min-max")
    return out


def show_first_tie(fused: ranx.Run, inputs: list, depth: int = 10) -> None:
    """Print the first tie group in the top `depth` of a fused run, with each doc's rank in every input."""
    rankings = [{qid: sorted(docs, key=docs.get, reverse=True) for qid, docs in run.to_dict().items()}
                for run in inputs]
    for qid, docs in fused.to_dict().items():
        top = sorted(docs.items(), key=lambda item: -item[1])[:depth]
        scores = [score for _, score in top]
        tied = [(doc, score) for doc, score in top if scores.count(score) > 1]
        if tied:
            print(f"query {qid}: documents with bit-identical fused scores in the top {depth}")
            for doc, score in tied:
                ranks = [str(ranking[qid].index(doc) + 1) if doc in ranking[qid] else "-" for ranking in rankings]
                print(f"  doc {doc:>5}  ranks in ({', '.join(run.name for run in inputs)}) = "
                      f"({', '.join(ranks)})  fused score {score!r}")
            return


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=None,
                        help="a Cranfield folder laid out like tieaware.datasets' (default: the bundled data)")
    parser.add_argument("--plot", type=Path, help="also draw nDCG@k curves of the fused runs to this PNG")
    args = parser.parse_args()

    data = cranfield(args.data)
    qrels = ranx.Qrels(tieaware.read_trec_qrels(data.qrels))
    queries = read_jsonl(data.queries)
    corpus = read_jsonl(data.corpus)
    bm25 = ranx.Run(bm25_run(corpus, queries), name="bm25")
    dense = {tag: ranx.Run(tieaware.read_trec_run(data.runs[tag]), name=f"minilm-{tag}") for tag in ("fp32", "bf16")}
    fused = fused_runs(bm25, dense)
    runs = {"bm25": bm25, **{run.name: run for run in dense.values()}, **fused}

    print("== Tie census at k = 10 and 100 (mean over 225 queries) ==")
    rows = {}
    for name, run in runs.items():
        table = tieaware.census(run, ks=(10, 100))
        rows[name] = {"unique@10": table.loc[10, "unique_scores"], "group@10": table.loc[10, "mean_tie_group_size"],
                      "straddle@10": table.loc[10, "straddling_share"],
                      "unique@100": table.loc[100, "unique_scores"], "largest": table.loc[100, "largest_group"]}
    print(pd.DataFrame.from_dict(rows, orient="index").to_string(float_format="{:.3f}".format))

    print("\n== Where RRF ties come from ==")
    show_first_tie(fused["rrf(bm25,fp32)"], [bm25, dense["fp32"]])

    print("\n== Tie-aware comparison: every run (trec_eval's tie order, paired t-test on E[M], Holm) ==")
    report = compare(qrels, runs, METRICS, oblivious="trec_eval", stat_test="student", max_p=0.01,
                     correction="holm")
    print(report)
    verdicts = report.pairs.groupby(level="metric", sort=False)["verdict"].value_counts().unstack(fill_value=0)
    print("\nVerdicts per metric (robust: significant under every tie order):")
    print(verdicts.to_string())

    print("\n== Largest |bias| = |trec_eval value - E[M]| per metric ==")
    summary = report.summary_frame()
    for metric in METRICS:
        worst = summary.xs(metric, level="metric")["bias"].abs().idxmax()
        row = summary.loc[(worst, metric)]
        print(f"{metric:>12}: {worst:<24} E[M] {row['expected']:.4f}  trec_eval {row['oblivious']:.4f}  "
              f"range [{row['min']:.4f}, {row['max']:.4f}]")

    if args.plot:
        shown = {name: fused[name]
                 for name in ("rrf(bm25,fp32)", "rrf(bm25,bf16)", "borda(bm25,fp32)", "borda(bm25,bf16)")}
        plot_at_k(qrels, shown, "ndcg", path=args.plot, title="Fused Cranfield runs: nDCG@k with tie spread")
        print(f"\nwrote {args.plot}")


if __name__ == "__main__":
    main()
