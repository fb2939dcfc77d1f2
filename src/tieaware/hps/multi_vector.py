"""Multi-vector (late-interaction, ColBERT-style) encoders with High-Precision Scoring: sentence-transformers'
MultiVectorEncoder scored by MaxSim."""
from __future__ import annotations

import copy
import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import ranx
import torch

from ..errors import InputError, InputTypeError
from ._common import DTYPE_NAMES, ModelLike, Scorer, eval_mode, length_sorted_batches, local_folder, own_copy
from ._sentence_transformers import sentence_transformers_kind

#: the features of a sentence-transformers batch that the transformers model takes
MODEL_INPUTS = ("input_ids", "attention_mask", "token_type_ids", "position_ids")
TASKS = ("query", "document")


class MultiVectorEncoder(Scorer):
    """score(q, d) = sum_i max_j <q_i, d_j>: MaxSim (Khattab & Zaharia 2020, ColBERT) over the token
    embeddings q_i of the query and d_j of the document that the model's scoring mask keeps (its
    MultiVectorMask: skiplist, query expansion); divided by the number of query tokens for a model whose
    similarity is 'meanmaxsim'.

    model: a loaded sentence-transformers MultiVectorEncoder (Transformer -> Dense* -> MultiVectorMask? ->
    Normalize?), or a local folder / hub id it loads (needs sentence-transformers). Its own preprocess builds
    the inputs: query and document prompts, tasks, lengths and query expansion, as encode_query /
    encode_document do. hps='head' (default): the Transformer's last hidden state (model dtype) cast to fp32,
    the modules after it (projection, mask, normalisation) run on fp32 copies, MaxSim in fp32; 'logits' (or
    True, the paper's HPS): the pipeline's model-dtype token embeddings cast to fp32, MaxSim in fp32;
    'none' (or False): all in the model dtype, MaxSim's dot products, maxima and sum included.
    sentence-transformers' own similarity takes the maxima of model-dtype dot products and sums them in
    fp32. The model is never changed: the modules after the Transformer are copied (to the model dtype
    and to fp32) and the Transformer's model is copied when its dtype or device differs. max_length is
    the model's own (query_length / document_length); passing one is an error. See Scorer for the
    common arguments.
    """

    sentence_transformers_class = "MultiVectorEncoder"

    def __init__(self, model: ModelLike, tokenizer: Any = None, **kwargs: Any) -> None:
        if kwargs.get("max_length") is not None:
            raise InputError("MultiVectorEncoder truncates as the model does (its query and document lengths): "
                             "set them on the sentence-transformers model instead of max_length")
        if isinstance(model, (str, os.PathLike)):
            model = load_multi_vector(model, kwargs.get("device"))
        elif sentence_transformers_kind(model) is None:
            raise InputTypeError(f"MultiVectorEncoder takes a sentence-transformers MultiVectorEncoder (loaded, or a "
                                 f"folder / hub id to load), not {type(model).__name__}")
        if tokenizer is not None:
            raise InputError("MultiVectorEncoder tokenizes with the model's own preprocess: tokenizer= does not apply")
        super().__init__(model, tokenizer, **kwargs)
        self.pipeline = self.model_settings["pipeline"]
        self.similarity = self.model_settings["similarity"]
        tail = self.model_settings["tail"]
        self.tail_model_dtype = [own_copy(module, self.dtype, self.device) for module in tail]
        self.tail_fp32 = [copy.deepcopy(module).to(device=self.device, dtype=torch.float32) for module in tail]
        prompts = getattr(self.pipeline, "prompts", None) or {}
        self.prompts = {task: prompts[task] if task in prompts else self.pipeline._resolve_prompt(None, None)
                        for task in TASKS}

    def search(self, queries: Mapping[str, str], corpus: Mapping[str, str], k: int = 100, *,
               name: str | None = None) -> ranx.Run:
        """Exact MaxSim of every query against every document (each text encoded once) -> ranx Run cut at k,
        keeping every document tied with the k-th; tie census and TieWarning as for `rerank`."""
        return self.rerank(queries, corpus, {qid: list(corpus) for qid in queries}, k=k, name=name)

    def encode(self, texts: Sequence[str], *, is_query: bool = False) -> list[torch.Tensor]:
        """Each text's scored token embeddings, [tokens, dim] (in input order, on self.device), as this
        scorer's hps mode leaves them: model dtype for hps='none', fp32 otherwise."""
        return self._encode(list(texts), "query" if is_query else "document", (self.mode,))[self.mode]

    def _metadata(self, mode: str) -> dict:
        info = super()._metadata(mode)
        info["scores"] = (f"{self.similarity} in " + DTYPE_NAMES.get(self.dtype, str(self.dtype)) if mode == "none"
                          else f"fp32 {self.similarity}")
        return info

    def _run_tail(self, features: dict, modules: list[torch.nn.Module], task: str) -> dict:
        """The modules after the Transformer, as sentence-transformers runs them (task to those that take it)."""
        for module in modules:
            wants_task = "task" in getattr(module, "forward_kwargs", ())
            features = module(features, task=task) if wants_task else module(features)
        return features

    @torch.inference_mode()
    def _encode(self, texts: list[str], task: str, modes: Sequence[str]) -> dict[str, list[torch.Tensor]]:
        """{mode: per text, its scored token embeddings} from one forward pass per batch."""
        out: dict[str, list[Any]] = {mode: [None] * len(texts) for mode in modes}
        with self._progress(len(texts), "text", task + "s") as bar, eval_mode(self.model):
            for batch in length_sorted_batches([len(t) for t in texts], self.batch_size):
                features = self.pipeline.preprocess([texts[i] for i in batch], prompt=self.prompts[task], task=task)
                tensors = {name: value.to(self.device) for name, value in features.items()
                           if isinstance(value, torch.Tensor)}
                hidden = self.model(**{name: tensors[name] for name in MODEL_INPUTS if name in tensors}
                                    ).last_hidden_state
                pipelines = {}
                if {"none", "upcast"} & set(modes):
                    pipelines["none"] = self._run_tail({**tensors, "token_embeddings": hidden},
                                                       self.tail_model_dtype, task)
                if "head" in modes:
                    pipelines["head"] = self._run_tail({**tensors, "token_embeddings": hidden.float()},
                                                       self.tail_fp32, task)
                for mode in modes:
                    result = pipelines["head" if mode == "head" else "none"]
                    embeddings, mask = result["token_embeddings"], result["attention_mask"].bool()
                    for row, index in enumerate(batch):
                        if not mask[row].any():
                            raise InputError(f"{task} {texts[index][:60]!r} has no token left to score after the "
                                             "model's scoring mask")
                        kept = embeddings[row][mask[row]]
                        out[mode][index] = kept.float() if mode == "upcast" else kept
                bar.update(len(batch))
        return out

    def _score_pairs(self, query_texts, doc_texts, modes) -> dict[str, np.ndarray]:
        """MaxSim of each (query, document) pair, each distinct text encoded once."""
        queries = list(dict.fromkeys(query_texts))
        docs = list(dict.fromkeys(doc_texts))
        query_emb = self._encode(queries, "query", modes)
        doc_emb = self._encode(docs, "document", modes)
        query_row = {text: row for row, text in enumerate(queries)}
        doc_row = {text: row for row, text in enumerate(docs)}
        pairs_of: dict[int, list[int]] = {}
        for pair, text in enumerate(query_texts):
            pairs_of.setdefault(query_row[text], []).append(pair)
        scores = {mode: np.empty(len(query_texts)) for mode in modes}
        for row, pairs in pairs_of.items():
            rows = [doc_row[doc_texts[pair]] for pair in pairs]
            for mode in modes:
                values = maxsim(query_emb[mode][row], [doc_emb[mode][r] for r in rows])
                if self.similarity == "meanmaxsim":
                    values = values / len(query_emb[mode][row])
                scores[mode][pairs] = values.double().cpu().numpy()
        return scores


@torch.inference_mode()
def maxsim(query: torch.Tensor, docs: list[torch.Tensor]) -> torch.Tensor:
    """sum_i max_j <query_i, doc_j> for each document, computed in the dtype of the embeddings (the dot
    products, the maxima and the sum); padding tokens never win a maximum."""
    width = max(len(doc) for doc in docs)
    padded = query.new_zeros((len(docs), width, query.shape[-1]))
    mask = torch.zeros((len(docs), width), dtype=torch.bool, device=query.device)
    for row, doc in enumerate(docs):
        padded[row, :len(doc)] = doc
        mask[row, :len(doc)] = True
    sims = torch.einsum("id,ntd->nit", query, padded)
    sims = sims.masked_fill(~mask[:, None, :], float("-inf"))
    return sims.max(dim=-1).values.sum(dim=-1)


def load_multi_vector(model: str | os.PathLike[str], device) -> Any:
    """A sentence-transformers MultiVectorEncoder loaded from a local folder or a hub id."""
    folder = local_folder(model)
    try:
        from sentence_transformers import MultiVectorEncoder as Loader
    except ImportError as error:
        raise ImportError("loading a MultiVectorEncoder needs sentence-transformers >= 6: "
                          "pip install 'sentence-transformers>=6'") from error
    return Loader(str(folder if folder is not None else model), device=None if device is None else str(device))
