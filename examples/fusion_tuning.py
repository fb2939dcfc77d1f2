"""Tune rank fusion by E[M] beside ranx's own objective, on the Cranfield runs bundled with tieaware.

Fuses the all-MiniLM-L6-v2 fp32 and bf16 runs (tieaware.datasets.cranfield) with RRF and with a
min-max weighted sum, and tunes each twice over ranx's own search grid: with ranx.optimize_fusion
(which maximises the value ranx.evaluate reports, under one arbitrary order of tied documents)
and with tieaware.fusion.optimize_fusion (E[M] over all tie orders; also the worst order, and
E[M] - range). Prints each trial's numbers and the picks, flagging where the objectives disagree.

On these runs RRF ranks alike at every k of ranx's grid, with ties (a range) at each; the weighted
sum differs: for recall@10 and precision@10 ranx picks the bf16 run alone (weights 0, 1), whose
tie order happens to favour it, where E[M] or the worst tie order picks weights (0.6, 0.4).

Run from the repository root:
    python examples/fusion_tuning.py [METRIC ...]     (default: ndcg@10 recall@10 precision@10)
"""
from __future__ import annotations

import sys

import ranx

import tieaware
from tieaware.datasets import cranfield
from tieaware.fusion import optimize_fusion, trial_params

METHODS = {"rrf": None, "wsum": "min-max"}  # method -> ranx normalisation
OBJECTIVES = ("expected", "min", "penalized")


def label(params: dict) -> str:
    value = next(iter(params.values()))
    return f"k={value}" if "k" in params else "w=(" + ", ".join(f"{float(w):.1f}" for w in value) + ")"


def main(metrics: list[str]) -> None:
    data = cranfield()
    qrels = ranx.Qrels(tieaware.read_trec_qrels(data.qrels))
    runs = [ranx.Run(tieaware.read_trec_run(data.runs[tag]), name=tag) for tag in ("fp32", "bf16")]
    for method, norm in METHODS.items():
        for metric in metrics:
            ranx_pick = ranx.optimize_fusion(qrels, runs, norm=norm, method=method, metric=metric,
                                             show_progress=False)
            picks = {}
            for objective in OBJECTIVES:
                picks[objective], report = optimize_fusion(qrels, runs, norm=norm, method=method, metric=metric,
                                                           objective=objective, return_optimization_report=True)
            print(f"\n== {method} ({norm or 'no'} normalisation), {metric}: each trial under ranx's tie order, "
                  "E[M] and its range")
            for params, result in zip(trial_params(method, len(runs)), report.metric_results.values()):
                print(f"  {label(params):>14}  ranx {result.oblivious:.5f}  E[M] {result.expected:.5f}  "
                      f"[{result.min:.5f}, {result.max:.5f}]")
            print(f"  ranx.optimize_fusion picks {label(ranx_pick)}")
            for objective, pick in picks.items():
                verdict = "the same" if label(pick) == label(ranx_pick) else "DIFFERENT from ranx's pick"
                print(f"  tie-aware objective {objective:9} picks {label(pick):16} {verdict}")


if __name__ == "__main__":
    main(sys.argv[1:] or ["ndcg@10", "recall@10", "precision@10"])
