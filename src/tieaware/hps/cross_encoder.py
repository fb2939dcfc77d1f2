"""Cross-encoder rerankers with High-Precision Scoring: sequence-classification models, and
sentence-transformers CrossEncoders with a LogitScore head (causal LMs scored by answer-token logits)."""
from __future__ import annotations

from collections.abc import Callable
from contextlib import contextmanager
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from ..errors import InputError
from ._common import Scorer, eval_mode, length_sorted_batches
from .yes_no import check_lm_head

ACTIVATIONS = ("sigmoid", "identity")
#: an activation: one of ACTIVATIONS, or a callable applied to the logits
Activation = str | Callable[[torch.Tensor], torch.Tensor]


class CrossEncoder(Scorer):
    """Rerank (query, document) pairs with a sequence-classification model.

    score = activation(z) for one logit: sigmoid(z) (activation='sigmoid', the default) or z itself
    ('identity'); softmax(z)[positive_index] for two or more (default index 1 with two labels; three or
    more need positive_index). hps='head' (default) applies the final classifier Linear in fp32 to its
    (model-dtype) input, so z itself is not rounded to the model dtype; hps='logits' (or True, the paper's
    HPS) upcasts the model-dtype z before the activation; hps='none' runs it in the model dtype.
    activation defaults to the model's own: a loaded
    sentence-transformers CrossEncoder's activation_fn (Sigmoid, Identity, or any other callable, applied
    as is), or the activation_fn a local folder's config_sentence_transformers.json / config.json names;
    so scores equal CrossEncoder.predict (with two or more labels: predict(apply_softmax=True)[:, index]).

    A loaded sentence-transformers CrossEncoder with a LogitScore head (a causal LM: Qwen3-Reranker,
    mxbai-rerank-v2, ...): z = logit(true token) - logit(false token) at the last prompt position (the
    true token's logit alone when LogitScore has no false token), score = activation(z) with the model's
    activation_fn. The prompts are built by the model's own preprocess (its chat template, default prompt
    and truncation; max_length, when given, overrides the truncation length). hps='head' (default)
    computes the answer tokens' LM-head rows in fp32 from the model-dtype last hidden state (as
    YesNoReranker; a model whose logits are not lm_head(hidden state) is refused); hps='logits' upcasts
    the two model-dtype logits before the difference (sentence-transformers' predict upcasts after it, so
    its scores keep the model dtype's rounding of z); hps='none' runs it all in the model dtype.
    See Scorer for the common arguments.
    """

    auto_class_name = "AutoModelForSequenceClassification"
    sentence_transformers_class = "CrossEncoder"

    def __init__(self, model: Any, tokenizer: Any = None, *, positive_index: int | None = None,
                 activation: Activation | None = None, **kwargs: Any) -> None:
        if activation is not None and activation not in ACTIVATIONS and not callable(activation):
            raise InputError(f"unknown activation {activation!r}: use one of {ACTIVATIONS} or a callable")
        max_length_given = kwargs.get("max_length")
        super().__init__(model, tokenizer, **kwargs)
        self.answer_token_ids: tuple[int, int | None] | None = self.model_settings.get("answer_token_ids")
        if self.answer_token_ids is not None:
            if tokenizer is not None:
                raise InputError("a LogitScore cross-encoder builds its prompts with its own preprocess and "
                                 "tokenizer: tokenizer= does not apply")
            self._init_logit_score(positive_index, activation, max_length_given)
            return
        num_labels = self.model.config.num_labels
        if activation is None:
            activation = self.model_settings.get("activation")
        if num_labels > 1 and activation is not None:
            raise InputError(f"the model has {num_labels} labels: the score is softmax(z)[positive_index], "
                             f"activation={activation!r} does not apply")
        self.activation: Activation = activation if activation is not None else "sigmoid"
        if num_labels == 1:
            if positive_index not in (None, 0):
                raise InputError(f"the model has one logit; positive_index={positive_index} does not fit")
        elif positive_index is None:
            if num_labels > 2:
                raise InputError(f"the model has {num_labels} labels: pass positive_index= "
                                 f"(labels: {self.model.config.id2label})")
            positive_index = 1
        elif not 0 <= positive_index < num_labels:
            raise InputError(f"positive_index={positive_index} is out of range for {num_labels} labels")
        self.positive_index = positive_index
        if self.mode == "head":
            classifier_head(self.model, num_labels)  # fail at construction, not after a first batch

    def _init_logit_score(self, positive_index: int | None, activation: Activation | None,
                          max_length: int | None) -> None:
        """Settings of a LogitScore cross-encoder: one score per pair, the model's own prompts."""
        if positive_index not in (None, 0):
            raise InputError(f"a LogitScore cross-encoder gives one logit; positive_index={positive_index} "
                             "does not fit")
        self.positive_index = None
        self.activation = activation if activation is not None else self.model_settings["activation"]
        self.pipeline = self.model_settings["pipeline"]
        self.prompt = self.pipeline._resolve_prompt(None, None)  # predict's default: the default prompt, if any
        self.processing_kwargs = None if max_length is None else {"text": {"max_length": max_length,
                                                                           "truncation": True}}
        true_id, false_id = self.answer_token_ids  # type: ignore[misc]
        self.token_ids = [true_id] if false_id is None else [true_id, false_id]
        vocabulary = self.model.get_output_embeddings().weight.shape[0]
        if not all(0 <= token_id < vocabulary for token_id in self.token_ids):
            raise InputError(f"LogitScore's token ids {self.token_ids} are outside the LM head's {vocabulary} rows")
        self._head_checked = False

    def _probability(self, logits: torch.Tensor) -> torch.Tensor:
        """The activation (one logit) / softmax computed in the dtype of `logits`."""
        if logits.shape[-1] == 1:
            if not isinstance(self.activation, str):
                return self.activation(logits)[:, 0]
            if self.activation == "sigmoid":
                return torch.sigmoid(logits[:, 0])
            return logits[:, 0]  # "identity", the one other name __init__ lets through
        return torch.softmax(logits, dim=-1)[:, self.positive_index]

    @torch.inference_mode()
    def _score_pairs(self, query_texts, doc_texts, modes) -> dict[str, np.ndarray]:
        if self.answer_token_ids is not None:
            return self._score_logit_pairs(query_texts, doc_texts, modes)
        scores = {mode: np.empty(len(query_texts)) for mode in modes}
        head = classifier_head(self.model, self.model.config.num_labels) if "head" in modes else None
        lengths = [len(q) + len(d) for q, d in zip(query_texts, doc_texts)]
        with self._progress(len(query_texts), "pair") as bar, eval_mode(self.model):
            for batch in length_sorted_batches(lengths, self.batch_size):
                inputs = self.tokenizer([query_texts[i] for i in batch], [doc_texts[i] for i in batch],
                                        padding=True, truncation=True, max_length=self.max_length,
                                        return_tensors="pt").to(self.device)
                if {"none", "upcast"} & set(modes):
                    logits = self.model(**inputs).logits
                    if "none" in modes:
                        scores["none"][batch] = self._probability(logits).double().cpu().numpy()
                    if "upcast" in modes:
                        scores["upcast"][batch] = self._probability(logits.float()).double().cpu().numpy()
                if head is not None:
                    with fp32_linear(head):
                        logits = self.model(**inputs).logits
                    scores["head"][batch] = self._probability(logits).double().cpu().numpy()
                bar.update(len(batch))
        return scores

    def _score_logit_pairs(self, query_texts, doc_texts, modes) -> dict[str, np.ndarray]:
        """LogitScore: z = z_true - z_false (or z_true) at the last position of the model's own left-padded
        prompts; 'none' in the model dtype, 'upcast' from the model-dtype logits cast to fp32, 'head' from
        the answer tokens' LM-head rows in fp32 applied to the model-dtype hidden state."""
        scores = {mode: np.empty(len(query_texts)) for mode in modes}
        lm_head = self.model.get_output_embeddings()
        rows_fp32 = lm_head.weight[self.token_ids].float()
        bias_fp32 = None if lm_head.bias is None else lm_head.bias[self.token_ids].float()
        lengths = [len(q) + len(d) for q, d in zip(query_texts, doc_texts)]
        with self._progress(len(query_texts), "pair") as bar, eval_mode(self.model):
            for batch in length_sorted_batches(lengths, self.batch_size):
                features = self.pipeline.preprocess([[query_texts[i], doc_texts[i]] for i in batch],
                                                    prompt=self.prompt, processing_kwargs=self.processing_kwargs)
                inputs = {name: value.to(self.device) for name, value in features.items()
                          if isinstance(value, torch.Tensor)}
                if not self._head_checked:
                    check_lm_head(self.model, inputs, lm_head, self.token_ids)
                    self._head_checked = True
                hidden = self.model.base_model(**inputs).last_hidden_state[:, -1]
                logits = {}
                if {"none", "upcast"} & set(modes):
                    logits["none"] = lm_head(hidden)[:, self.token_ids]
                    logits["upcast"] = logits["none"].float()
                if "head" in modes:
                    logits["head"] = F.linear(hidden.float(), rows_fp32, bias_fp32)
                for mode in modes:
                    z = logits[mode][:, :1] if len(self.token_ids) == 1 else logits[mode][:, :1] - logits[mode][:, 1:]
                    scores[mode][batch] = self._probability(z).double().cpu().numpy()
                bar.update(len(batch))
        return scores


def classifier_head(model: torch.nn.Module, num_labels: int) -> torch.nn.Linear:
    """The final classifier Linear: the last Linear module with num_labels outputs."""
    heads = [m for m in model.modules() if isinstance(m, torch.nn.Linear) and m.out_features == num_labels]
    if not heads:
        raise InputError(f"hps='head' needs the classifier Linear ({num_labels} outputs); none found in "
                         f"{type(model).__name__}: pass hps='logits' (fp32 after the logits)")
    return heads[-1]


@contextmanager
def fp32_linear(linear: torch.nn.Linear):
    """While active, `linear` computes in fp32 from its input: F.linear(x.float(), W.float(), b.float())."""
    weight = linear.weight.float()
    bias = None if linear.bias is None else linear.bias.float()
    handle = linear.register_forward_hook(lambda module, args, output: F.linear(args[0].float(), weight, bias))
    try:
        yield
    finally:
        handle.remove()
