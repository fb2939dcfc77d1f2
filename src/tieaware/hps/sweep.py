"""Precision sweep: the paper's Table 1 on your own model and collection.

One model is run in several precision regimes; each run is scored tie-aware (tieaware.evaluate) next to
the fp32 reference, and its tie census (tieaware.census) is reported.
"""
from __future__ import annotations

import copy
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pandas as pd
import ranx
import torch

from ._common import DTYPE_NAMES, MODE_SUFFIX, parse_dtype, resolve_device

REFERENCE = "fp32"


@dataclass
class SweepResult:
    """metrics: index (regime, metric), columns fp32 (E[M] of the fp32 reference run), obl (M_obl, the
    value under the oblivious tie order), expected (E[M]), range (max - min over tie orderings), bias
    (obl - expected). census: index (regime, k), tieaware.census columns. runs: the ranx Run of each
    regime. seconds: wall time of each dtype's scoring pass (shared by the regimes of that dtype)."""

    metrics: pd.DataFrame
    census: pd.DataFrame
    runs: dict[str, ranx.Run]
    seconds: dict[str, float]

    def __str__(self) -> str:
        census = self.census[["unique_scores", "mean_tie_group_size"]].unstack("k")
        timing = ", ".join(f"{dtype} {s:.1f} s" for dtype, s in self.seconds.items())
        return "\n\n".join([
            self.metrics.to_string(float_format=lambda v: f"{v:.4f}".replace("-0.0000", "0.0000")),
            census.to_string(float_format="{:.2f}".format),
            f"scoring wall time: {timing}",
        ])


def parse_regime(regime: str) -> tuple[torch.dtype, str]:
    """'bf16' -> (bfloat16, 'none'); 'bf16+hps' -> (bfloat16, 'upcast'); 'bf16+hps_head' -> (bfloat16, 'head')."""
    dtype_name, plus, suffix = regime.partition("+")
    modes = {value: mode for mode, value in MODE_SUFFIX.items()}
    if plus + suffix not in modes:
        raise ValueError(f"unknown regime {regime!r}: use e.g. 'fp32', 'bf16', 'bf16+hps', 'bf16+hps_head'")
    return parse_dtype(dtype_name), modes[plus + suffix]


def default_regimes(device) -> tuple[str, ...]:
    """fp32, bf16 without / with HPS / with HPS of the head; fp16 too on a CUDA device."""
    regimes = (REFERENCE, "bf16", "bf16+hps", "bf16+hps_head")
    if resolve_device(device).type == "cuda":
        regimes += ("fp16", "fp16+hps", "fp16+hps_head")
    return regimes


def sweep(scorer_class, model, queries: Mapping[str, str], corpus: Mapping[str, str], qrels, *,
          tokenizer=None, candidates=None, k: int | None = 100,
          metrics: Sequence[str] = ("ndcg@10", "mrr@10", "map@100"), regimes: Sequence[str] | None = None,
          census_ks: Sequence[int] = (1, 3, 5, 10, 20, 50, 100), oblivious: str = "trec_eval",
          make_comparable: bool = False, device=None, show_progress: bool = True,
          **scorer_kwargs) -> SweepResult:
    """Run `scorer_class` (BiEncoder, CrossEncoder or YesNoReranker) with `model` in each regime and
    evaluate tie-aware. Without candidates a BiEncoder searches the corpus (top-k with ties); with
    candidates the scorer reranks them (cut at k with ties; k=None keeps all). Regimes sharing a dtype
    share one forward pass. A loaded model is deep-copied per dtype, a path is loaded per dtype.
    Returns a SweepResult (print it for the tables)."""
    import tieaware

    metrics = [metrics] if isinstance(metrics, str) else list(metrics)
    regimes = list(regimes or default_regimes(device))
    if REFERENCE not in regimes:
        regimes.insert(0, REFERENCE)
    modes_by_dtype: dict[torch.dtype, list[str]] = {}
    for regime in regimes:
        dtype, mode = parse_regime(regime)
        modes_by_dtype.setdefault(dtype, []).append(mode)

    runs, seconds = {}, {}
    for dtype, modes in modes_by_dtype.items():
        model_copy = model if isinstance(model, (str, os.PathLike)) else copy.deepcopy(model)
        scorer = scorer_class(model_copy, tokenizer, dtype=dtype, device=device,
                              show_progress=show_progress, **scorer_kwargs)
        start = time.perf_counter()
        if candidates is None:
            if not hasattr(scorer, "_search_runs"):
                raise ValueError(f"{scorer_class.__name__} cannot search a corpus: pass candidates=")
            dtype_runs = scorer._search_runs(queries, corpus, k, modes)
        else:
            dtype_runs = scorer._rerank_runs(queries, corpus, candidates, modes, k)
        seconds[DTYPE_NAMES[dtype]] = time.perf_counter() - start
        for mode, run in dtype_runs.items():
            runs[DTYPE_NAMES[dtype] + MODE_SUFFIX[mode]] = run
        del scorer, model_copy

    def evaluate(run):
        return tieaware.evaluate(qrels, run, metrics, oblivious=oblivious, make_comparable=make_comparable)

    reference = evaluate(runs[REFERENCE])
    rows = {}
    for regime in regimes:
        for metric, result in evaluate(runs[regime]).items():
            rows[regime, metric] = dict(fp32=float(reference[metric].expected), obl=float(result.oblivious),
                                        expected=float(result.expected), range=float(result.range),
                                        bias=float(result.bias))
    table = pd.DataFrame.from_dict(rows, orient="index").rename_axis(["regime", "metric"])
    census = pd.concat({regime: tieaware.census(runs[regime], ks=tuple(census_ks)) for regime in regimes},
                       names=["regime"])
    census.index = census.index.set_names(["regime", "k"])
    return SweepResult(metrics=table, census=census, runs={r: runs[r] for r in regimes}, seconds=seconds)
