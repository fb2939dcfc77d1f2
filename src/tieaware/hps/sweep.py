"""Precision sweep: the paper's Table 1 on your own model and collection.

One model is run in several precision regimes; each run is scored tie-aware (tieaware.evaluate) next to
the fp32 reference, and its tie census (tieaware.census) is reported. A BiEncoder can also be swept over
quantized retrieval (int8 / uint8 codes, binary Hamming) with and without fp32 rescoring.
"""
from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import ranx
import torch

from ..display import text_table
from ..errors import InputError
from ..registry import DEFAULT_KS
from ._common import DTYPE_NAMES, MODE_SUFFIX, CandidatesLike, ModelLike, Scorer, parse_dtype, resolve_device
from .quantize import SCHEMES, parse_mode

if TYPE_CHECKING:
    from ..inputs import QrelsLike

REFERENCE = "fp32"
QUANTIZED_REGIMES = ("int8", "int8+rescore", "binary", "binary+rescore")
"""Quantized retrieval regimes of a BiEncoder (fp32 model): int8 codes and binary Hamming, without and with
rescoring of the top rescore_k by the fp32 query. Also valid: 'uint8', 'ubinary', '<scheme>+rescore_full'
(rescoring with the fp32 document embeddings) and a dtype prefix ('bf16+binary+rescore')."""


@dataclass
class SweepResult:
    """metrics: index (regime, metric), columns fp32 (E[M] of the fp32 reference run), obl (M_obl, the
    value under the oblivious tie order), expected (E[M]), range (max - min over tie orderings), bias
    (obl - expected). census: index (regime, k), tieaware.census columns plus tied_share (share of the
    top-k documents whose score ties with another retrieved document). runs: the ranx Run of each regime
    (``run.metadata`` says what produced its scores; also in ``schemes``). seconds: wall time of each
    dtype's scoring pass (shared by the regimes of that dtype). timing: per regime, encode_s (the dtype
    pass' encoding time, shared), search_ms (scoring, top-k and rescoring per query, after encoding) and
    ms_per_query (query encoding + search_ms per query; corpus encoding excluded)."""

    metrics: pd.DataFrame
    census: pd.DataFrame
    runs: dict[str, ranx.Run]
    seconds: dict[str, float]
    timing: pd.DataFrame | None = None
    schemes: dict[str, dict] | None = None

    def summary(self, metrics: Sequence[str] | None = None, k: int | None = None) -> pd.DataFrame:
        """One row per regime: E[M], Range, Bias of each metric (default: all), the census at 10 and at k
        (default: the largest census cutoff): unique scores, mean tie-group size at k, share of queries
        with a tie group straddling 10 and k, tied share at k, and the time per query."""
        metrics = list(metrics or dict.fromkeys(self.metrics.index.get_level_values("metric")))
        ks = sorted(set(self.census.index.get_level_values("k")))
        k = k or ks[-1]
        columns = {}
        for metric in metrics:
            table = self.metrics.xs(metric, level="metric")
            for stat, label in (("expected", "E[M]"), ("range", "Range"), ("bias", "Bias")):
                columns[f"{metric} {label}"] = table[stat]
        census = self.census
        for cut in dict.fromkeys([c for c in (10, k) if c in ks]):
            columns[f"unique@{cut}"] = census.xs(cut, level="k")["unique_scores"]
        if k in ks:
            columns[f"group@{k}"] = census.xs(k, level="k")["mean_tie_group_size"]
        for cut in dict.fromkeys([c for c in (10, k) if c in ks]):
            columns[f"straddle@{cut}"] = census.xs(cut, level="k")["straddling_share"]
        if k in ks:
            columns[f"tied@{k}"] = census.xs(k, level="k")["tied_share"]
        if self.timing is not None:
            columns["search ms/q"] = self.timing["search_ms"]
            columns["ms/q"] = self.timing["ms_per_query"]
        frame = pd.DataFrame(columns)
        return frame.loc[list(self.runs)].rename_axis("regime")

    def __str__(self) -> str:
        census = self.census[["unique_scores", "mean_tie_group_size"]].unstack("k")
        census.columns = [f"{stat}@{k}" for stat, k in census.columns]
        timing = ", ".join(f"{dtype} {s:.1f} s" for dtype, s in self.seconds.items())
        parts = [
            text_table(self.metrics),
            text_table(census, 2),
            text_table(self.summary()),
        ]
        if self.schemes:
            parts.append("\n".join(f"{regime}: {info.get('scores', '')}" for regime, info in self.schemes.items()))
        parts.append(f"scoring wall time: {timing}")
        return "\n\n".join(parts)


def parse_regime(regime: str) -> tuple[torch.dtype, str]:
    """'bf16' -> (bfloat16, 'none'); 'bf16+hps' -> (bfloat16, 'upcast'); 'bf16+hps_head' -> (bfloat16, 'head');
    quantized retrieval (BiEncoder): 'int8' -> (float32, 'int8'); 'binary+rescore' -> (float32,
    'binary+rescore'); 'bf16+binary+rescore_full' -> (bfloat16, 'binary+rescore_full')."""
    if not isinstance(regime, str):
        raise InputError(f"unknown regime {regime!r}: use e.g. 'fp32', 'bf16', 'bf16+hps', 'binary+rescore'")
    head, plus, suffix = regime.partition("+")
    if head.lower() in SCHEMES:
        dtype, rest = torch.float32, regime
    else:
        dtype, rest = parse_dtype(head), suffix
    if rest.partition("+")[0].lower() in SCHEMES:
        try:
            parse_mode(rest.lower())
        except InputError:
            raise InputError(f"unknown regime {regime!r}: a quantized regime is '<scheme>', '<scheme>+rescore' or "
                             f"'<scheme>+rescore_full', optionally after a dtype ('bf16+binary')") from None
        return dtype, rest.lower()
    modes = {value: mode for mode, value in MODE_SUFFIX.items()} | {"+logits": "upcast", "+head": "head"}
    if (plus + suffix) not in modes:
        raise InputError(f"unknown regime {regime!r}: use e.g. 'fp32', 'bf16', 'bf16+hps', 'bf16+hps_head', "
                         f"'int8', 'binary+rescore'")
    return dtype, modes[plus + suffix]


def tied_share(run: ranx.Run, ks: Sequence[int]) -> pd.Series:
    """Per cutoff k, the mean over queries of the share of the top-k documents (score descending) whose
    score equals the score of another document of the run."""
    shares: dict[int, list[float]] = {k: [] for k in ks}
    for _, docs in run.to_dict().items():
        scores = np.sort(np.fromiter(docs.values(), dtype=np.float64, count=len(docs)))[::-1]
        if not len(scores):
            continue
        values, counts = np.unique(scores, return_counts=True)
        tied = counts[np.searchsorted(values, scores)] > 1
        for k in ks:
            shares[k].append(float(tied[:k].mean()))
    return pd.Series({k: float(np.mean(v)) if v else np.nan for k, v in shares.items()}, name="tied_share")


def default_regimes(device: str | torch.device | None) -> tuple[str, ...]:
    """fp32, bf16 without / with HPS / with HPS of the head; fp16 too on a CUDA device."""
    regimes: tuple[str, ...] = (REFERENCE, "bf16", "bf16+hps", "bf16+hps_head")
    if resolve_device(device).type == "cuda":
        regimes += ("fp16", "fp16+hps", "fp16+hps_head")
    return regimes


def sweep(scorer_class: type[Scorer], model: ModelLike, queries: Mapping[str, str], corpus: Mapping[str, str],
          qrels: QrelsLike, *, tokenizer: Any = None, candidates: CandidatesLike | None = None, k: int | None = 100,
          metrics: Sequence[str] = ("ndcg@10", "mrr@10", "map@100"), regimes: Sequence[str] | None = None,
          census_ks: Sequence[int] = DEFAULT_KS, oblivious: str = "trec_eval",
          make_comparable: bool = False, device: str | torch.device | None = None, show_progress: bool = True,
          **scorer_kwargs: Any) -> SweepResult:
    """Run `scorer_class` (BiEncoder, CrossEncoder or YesNoReranker) with `model` in each regime and
    evaluate tie-aware. Without candidates a BiEncoder searches the corpus (top-k with ties); with
    candidates the scorer reranks them (cut at k with ties; k=None keeps all). Regimes sharing a dtype
    share one forward pass. A path is loaded per dtype; a loaded model is scored as the scorers score it
    (a converted copy per dtype that differs from its own; the model itself is never changed).

    Regimes: 'fp32', 'bf16', 'bf16+hps', 'bf16+hps_head' (fp16 likewise); for a BiEncoder also quantized
    retrieval, e.g. QUANTIZED_REGIMES = ('int8', 'int8+rescore', 'binary', 'binary+rescore'), which share
    the fp32 forward pass (scorer_kwargs ranges= / rescore_k= / keep_full= apply to them).

    Args:
        scorer_class: `BiEncoder`, `CrossEncoder` or `YesNoReranker`.
        model, tokenizer: a loaded model (and its tokenizer) or a local model path.
        queries, corpus: ``{id: text}``.
        qrels: the judgments, in any form `tieaware.evaluate` reads.
        candidates: a run to rerank; None lets a BiEncoder search the corpus.
        k: keep the top k per query plus every document tied with the k-th (None: all).
        metrics, oblivious, make_comparable: as `tieaware.evaluate`.
        regimes: the regimes to run (default `default_regimes`: fp32, bf16, bf16+hps, bf16+hps_head,
            and the fp16 ones on a CUDA device).
        census_ks: the cutoffs of the tie census.
        device, show_progress, scorer_kwargs: passed to each scorer.

    Returns:
        A `SweepResult`: print it for the tables; ``summary()`` gives one row per regime.
    """
    import tieaware

    for name in ("quantize", "hps", "dtype"):
        if name in scorer_kwargs:
            raise InputError(f"sweep sets {name}= itself from the regimes: name regimes such as 'bf16+hps' or "
                             f"'binary+rescore' instead of passing {name}=")
    metrics = [metrics] if isinstance(metrics, str) else list(metrics)
    regimes = list(regimes or default_regimes(device))
    if REFERENCE not in regimes:
        regimes.insert(0, REFERENCE)
    modes_by_dtype: dict[torch.dtype, list[str]] = {}
    regime_of: dict[tuple[torch.dtype, str], list[str]] = {}
    for regime in regimes:
        dtype, mode = parse_regime(regime)
        if parse_mode(mode) is not None and not hasattr(scorer_class, "search_modes"):
            raise InputError(f"regime {regime!r}: quantized retrieval needs a BiEncoder, not {scorer_class.__name__}")
        if (dtype, mode) not in regime_of:
            modes_by_dtype.setdefault(dtype, []).append(mode)
        regime_of.setdefault((dtype, mode), []).append(regime)

    runs, seconds, timing = {}, {}, {}
    for dtype, modes in modes_by_dtype.items():
        scorer = scorer_class(model, tokenizer, dtype=dtype, device=device,
                              show_progress=show_progress, **scorer_kwargs)
        start = time.perf_counter()
        if candidates is None:
            if not hasattr(scorer, "search_modes"):
                raise InputError(f"{scorer_class.__name__} cannot search a corpus: pass candidates=")
            dtype_runs = scorer.search_modes(queries, corpus, k, modes)
        else:
            dtype_runs = scorer.rerank_modes(queries, corpus, candidates, modes, k)
        seconds[DTYPE_NAMES[dtype]] = elapsed = time.perf_counter() - start
        found = getattr(scorer, "timings", None) if candidates is None else None
        for mode, run in dtype_runs.items():
            for regime in regime_of[dtype, mode]:
                runs[regime] = run
                if found:
                    n = max(1, len(queries))  # found: no candidates, every query was searched
                    search = found["search"].get(mode, 0.0)  # quantizing the corpus is indexing: excluded
                    timing[regime] = dict(encode_s=found["encode_queries"] + found["encode_docs"],
                                          search_ms=1e3 * search / n,
                                          ms_per_query=1e3 * (found["encode_queries"] + search) / n)
                else:
                    n = max(1, len(run.to_dict()))
                    timing[regime] = dict(encode_s=elapsed, search_ms=np.nan, ms_per_query=1e3 * elapsed / n)
        del scorer

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
    ks = tuple(census_ks)
    censuses = {}
    for regime in regimes:
        frame = tieaware.census(runs[regime], ks=ks)
        frame["tied_share"] = tied_share(runs[regime], list(frame.index)).to_numpy()
        censuses[regime] = frame
    census = pd.concat(censuses, names=["regime"])
    census.index = census.index.set_names(["regime", "k"])
    timing_frame = pd.DataFrame.from_dict(timing, orient="index").loc[regimes].rename_axis("regime")
    schemes = {regime: dict(runs[regime].metadata) for regime in regimes}
    return SweepResult(metrics=table, census=census, runs={r: runs[r] for r in regimes}, seconds=seconds,
                       timing=timing_frame, schemes=schemes)
