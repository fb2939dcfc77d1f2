"""Cross-encoder (sequence-classification) rerankers with High-Precision Scoring."""
from __future__ import annotations

from collections.abc import Callable
from contextlib import contextmanager
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from ..errors import InputError
from ._common import Scorer, eval_mode, length_sorted_batches

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
    See Scorer for the common arguments.
    """

    auto_class_name = "AutoModelForSequenceClassification"
    sentence_transformers_class = "CrossEncoder"

    def __init__(self, model: Any, tokenizer: Any = None, *, positive_index: int | None = None,
                 activation: Activation | None = None, **kwargs: Any) -> None:
        if activation is not None and activation not in ACTIVATIONS and not callable(activation):
            raise InputError(f"unknown activation {activation!r}: use one of {ACTIVATIONS} or a callable")
        super().__init__(model, tokenizer, **kwargs)
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
