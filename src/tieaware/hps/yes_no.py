"""Causal LMs as pointwise yes/no rerankers (Qwen3-Reranker style) with High-Precision Scoring."""
from __future__ import annotations

from typing import Any

import numpy as np
import torch

from ..errors import InputError
from ..logprobs.scores import yes_probability
from ._common import ModelLike, Scorer, eval_mode, length_sorted_batches

# Qwen3-Reranker's prompt (Zhang et al. 2025, model card); {instruction}, {query}, {document} are filled in.
QWEN3_RERANKER_TEMPLATE = (
    "<|im_start|>system\nJudge whether the Document meets the requirements based on the Query and the "
    'Instruct provided. Note that the answer can only be "yes" or "no".<|im_end|>\n<|im_start|>user\n'
    "<Instruct>: {instruction}\n<Query>: {query}\n<Document>: {document}<|im_end|>\n"
    "<|im_start|>assistant\n<think>\n\n</think>\n\n"
)
DEFAULT_INSTRUCTION = "Given a web search query, retrieve relevant passages that answer the query"


#: config attributes with which a causal LM transforms its LM head's output (named in `_check_head`'s error)
LOGIT_TRANSFORMS = ("final_logit_softcapping", "logit_scale", "logits_scaling", "lm_head_multiplier")


class PromptReranker(Scorer):
    """A causal LM scored at the answer slot of a prompt: `template` filled with {query}, {document} and
    optionally {instruction} (and the subclass' own fields); only the document is truncated so the prompt
    fits max_length; batches are left-padded (position ids follow the mask), so the last position is the
    answer slot of every row. Subclasses read the LM-head rows of their answer tokens there."""

    auto_class_name = "AutoModelForCausalLM"

    def __init__(self, model: ModelLike, tokenizer: Any = None, *, template: str,
                 instruction: str = DEFAULT_INSTRUCTION, **kwargs: Any) -> None:
        if template.count("{document}") != 1 or "{query}" not in template:
            raise InputError("template needs {query} and exactly one {document}")
        super().__init__(model, tokenizer, **kwargs)
        before, after = template.split("{document}")
        self._before, self._after, self.instruction = before, after, instruction
        self._head_checked = False  # `_check_head` runs once, on the first batch
        self.pad_id = self.tokenizer.pad_token_id
        if self.pad_id is None:
            self.pad_id = self.tokenizer.eos_token_id
        if self.pad_id is None:
            raise InputError("the tokenizer has neither a pad nor an eos token to pad with")

    def _template_fields(self) -> dict:
        """Fields besides {query} and {instruction} that the template may hold."""
        return {}

    def _prompts(self, query_texts, doc_texts) -> list[list[int]]:
        """Token ids of before(query) + document + after(query), the document cut to fit max_length."""
        def encode(texts):
            return self.tokenizer(list(texts), add_special_tokens=False)["input_ids"]

        fill = [dict(self._template_fields(), query=q, instruction=self.instruction) for q in query_texts]
        befores = encode(self._before.format(**f) for f in fill)
        afters = encode(self._after.format(**f) for f in fill)
        prompts = []
        for before, doc, after, query in zip(befores, encode(doc_texts), afters, query_texts):
            room = self.max_length - len(before) - len(after)
            if room < 1:
                raise InputError(f"max_length={self.max_length} leaves no room for the document "
                                 f"after the prompt of query {query[:60]!r}")
            prompts.append(before + doc[:room] + after)
        return prompts

    def _left_padded(self, prompts) -> dict[str, torch.Tensor]:
        width = max(map(len, prompts))
        input_ids = torch.full((len(prompts), width), self.pad_id, dtype=torch.long)
        attention_mask = torch.zeros((len(prompts), width), dtype=torch.long)
        for row, ids in enumerate(prompts):
            input_ids[row, width - len(ids):] = torch.tensor(ids)
            attention_mask[row, width - len(ids):] = 1
        position_ids = (attention_mask.cumsum(1) - 1).clamp(min=0)
        return {name: t.to(self.device) for name, t in
                dict(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids).items()}

    def _answer_logits(self, token_ids, modes, query_texts, doc_texts):
        """Yield (batch indices, {mode: logits of `token_ids` at the answer slot}): 'none' and 'upcast' get
        the model-dtype logits, 'head' the LM-head rows applied in fp32 to the model-dtype hidden state."""
        lm_head = self.model.get_output_embeddings()
        rows_fp32 = lm_head.weight[token_ids].float()
        bias_fp32 = None if lm_head.bias is None else lm_head.bias[token_ids].float()
        lengths = [len(q) + len(d) for q, d in zip(query_texts, doc_texts)]
        with self._progress(len(query_texts), "pair") as bar, eval_mode(self.model):
            for batch in length_sorted_batches(lengths, self.batch_size):
                prompts = self._prompts([query_texts[i] for i in batch], [doc_texts[i] for i in batch])
                inputs = self._left_padded(prompts)
                hidden = self.model.base_model(**inputs).last_hidden_state[:, -1]
                if not self._head_checked:
                    self._check_head(inputs, lm_head, token_ids)
                logits = {}
                if {"none", "upcast"} & set(modes):
                    logits["none"] = logits["upcast"] = lm_head(hidden)[:, token_ids]
                if "head" in modes:
                    logits["head"] = torch.nn.functional.linear(hidden.float(), rows_fp32, bias_fp32)
                yield batch, logits
                bar.update(len(batch))


    def _check_head(self, inputs: dict, lm_head: torch.nn.Module, token_ids) -> None:
        check_lm_head(self.model, inputs, lm_head, token_ids)
        self._head_checked = True


class YesNoReranker(PromptReranker):
    """Score = P(yes) = softmax([z_no, z_yes])[1], z = the LM-head logits of the two tokens at the last
    prompt position (computed as exp(log_softmax), as the Qwen3-Reranker reference code does; in float64
    from the fp32 logits under hps='head' and 'logits', with `tieaware.logprobs`' arithmetic).

    The prompt is `template` with {query}, {document} and optionally {instruction} (see PromptReranker).
    hps='head' (default) computes the two logits in fp32 from the model-dtype last hidden state with the
    two LM-head rows in fp32 (every mode reads logits as lm_head(last hidden state), checked once against
    the model's own forward pass: a model that transforms them, such as Gemma 2's soft cap, is refused);
    hps='logits' (or True, the paper's HPS) upcasts the two model-dtype logits before the softmax;
    hps='none' runs it all in the model dtype. See Scorer for the common arguments.
    """

    def __init__(self, model: ModelLike, tokenizer: Any = None, *, template: str = QWEN3_RERANKER_TEMPLATE,
                 instruction: str = DEFAULT_INSTRUCTION, yes_token: str = "yes", no_token: str = "no",
                 **kwargs: Any) -> None:
        super().__init__(model, tokenizer, template=template, instruction=instruction, **kwargs)
        yes_id, no_id = self._token_id(yes_token), self._token_id(no_token)
        self.token_ids = [no_id, yes_id]  # softmax order [no, yes]

    def _token_id(self, token: str) -> int:
        token_id = self.tokenizer.convert_tokens_to_ids(token)
        if token_id is None or (token_id == self.tokenizer.unk_token_id and token != self.tokenizer.unk_token):
            raise InputError(f"the tokenizer has no token {token!r}; pass yes_token=/no_token= as it spells them")
        return token_id

    @staticmethod
    def _p_yes(no_yes_logits: torch.Tensor) -> torch.Tensor:
        """exp(log_softmax([z_no, z_yes]))[1], in the dtype of the logits."""
        return torch.log_softmax(no_yes_logits, dim=-1)[:, 1].exp()

    @torch.inference_mode()
    def _score_pairs(self, query_texts, doc_texts, modes) -> dict[str, np.ndarray]:
        scores = {mode: np.empty(len(query_texts)) for mode in modes}
        for batch, logits in self._answer_logits(self.token_ids, modes, query_texts, doc_texts):
            for mode in modes:
                if mode == "none":
                    scores[mode][batch] = self._p_yes(logits[mode]).double().cpu().numpy()
                else:
                    scores[mode][batch] = yes_probability(logits[mode].double().cpu().numpy())
        return scores


def check_lm_head(model: Any, inputs: dict, lm_head: torch.nn.Module, token_ids) -> None:
    """Refuse a model whose logits are not lm_head(last hidden state) (Gemma 2's soft cap, Cohere's
    logit_scale, Granite's logits_scaling): every mode reads the answer tokens' LM-head rows, so its
    scores would not be the model's. Compared on the first row of `inputs` with the model's own forward
    pass, to a tolerance of a few roundings of the model dtype."""
    row = {name: t[:1] for name, t in inputs.items()}
    try:
        own = model(**row, logits_to_keep=1).logits[:, -1, token_ids].float()
    except TypeError:  # a model without logits_to_keep
        own = model(**row).logits[:, -1, token_ids].float()
    hidden = model.base_model(**row).last_hidden_state[:, -1]  # the same pass: only the head differs
    ours = lm_head(hidden)[:, token_ids].float()
    eps = torch.finfo(hidden.dtype).eps
    difference = (own - ours).abs().max().item()
    if difference > max(4 * eps, 1e-4) * max(1.0, own.abs().max().item()):
        config = getattr(model, "config", None)
        known = [f"{name}={getattr(config, name)!r}" for name in LOGIT_TRANSFORMS
                 if getattr(config, name, None) not in (None, 1, 1.0)]
        raise InputError(f"{type(model).__name__} does not compute its logits as lm_head(last hidden "
                         f"state) (they differ by {difference:.3g} at the answer slot"
                         f"{'; its config sets ' + ', '.join(known) if known else ''}): the answer tokens' "
                         "LM-head rows would not give the model's scores, so this model cannot be scored here")
