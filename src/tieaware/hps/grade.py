"""Causal LMs prompted for an integer relevance grade (ERank, LLM-as-judge style) with High-Precision
Scoring; the same scores from log-probabilities computed elsewhere: `tieaware.logprobs.run_from_logprobs`."""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import torch

from ..errors import InputError
from ..logprobs.scores import ARGMAX_TIES, DEFAULT_GRADES, ERANK_ZERO_TIES, check_grades, check_score, grade_scores
from ._common import ModelLike
from .yes_no import DEFAULT_INSTRUCTION, PromptReranker

# ERank-style prompt (Cai et al. 2025) answering directly: the answer slot is the grade's first token.
GRADE_TEMPLATE = (
    "<|im_start|>system\nJudge how relevant the Document is to the Query. {instruction}. Answer with one "
    "integer relevance score from {min_grade} to {max_grade}, where {max_grade} means highly relevant and "
    "{min_grade} irrelevant.<|im_end|>\n<|im_start|>user\n<Query>: {query}\n<Document>: {document}"
    "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
)


def torch_grade_scores(logits: torch.Tensor, grades: np.ndarray, score: str) -> torch.Tensor:
    """`grade_scores` computed in the dtype of `logits` (hps='none': every step in the model dtype)."""
    p = torch.softmax(logits, dim=-1)
    values = torch.as_tensor(grades, device=logits.device).to(logits.dtype)
    if score == "expected":
        return (p * values).sum(-1)
    best = p.argmax(-1)
    if score == "argmax":
        return values[best]
    return values[best] * p.gather(-1, best[:, None])[:, 0]


class GradeReranker(PromptReranker):
    """Score a (query, document) pair from the grade a causal LM gives it at the answer slot.

    P(s) = softmax over the grade tokens' logits at the last prompt position (renormalised over the
    grades). score='expected' (default): sum_s s P(s), in [min grade, max grade]; 'erank': s* P(s*) with
    s* = argmax_s P(s), the ERank paper's s x P(s); 'argmax': s*, the grade alone (integer scores that tie
    by design). grades: the integers the model answers with (default 0..10); each must be a single token
    of the tokenizer (a grade split into several tokens, e.g. "10" -> "1", "0", is refused: the first
    position alone cannot tell "1" from "10"). template: {query}, {document}, optionally {instruction},
    {min_grade}, {max_grade}; the default (ERank style) asks for the grade directly after the prompt.

    hps='head' (default): the grade tokens' LM-head rows applied in fp32 to the model-dtype last hidden
    state, then softmax and score in float64; 'logits' (or True, the paper's HPS): the model-dtype logits
    of the grade tokens, then softmax and score in float64; 'none': every step in the model dtype.
    See PromptReranker and Scorer for the common arguments.
    """

    def __init__(self, model: ModelLike, tokenizer: Any = None, *, grades: Iterable[int] = DEFAULT_GRADES,
                 score: str = "expected", template: str = GRADE_TEMPLATE, instruction: str = DEFAULT_INSTRUCTION,
                 **kwargs: Any) -> None:
        self.grades, self.score = check_grades(grades), check_score(score)
        super().__init__(model, tokenizer, template=template, instruction=instruction, **kwargs)
        self.token_ids = grade_token_ids(self.tokenizer, self.grades)

    def _template_fields(self) -> dict:
        return {"min_grade": int(self.grades.min()), "max_grade": int(self.grades.max())}

    @torch.inference_mode()
    def _score_pairs(self, query_texts, doc_texts, modes) -> dict[str, np.ndarray]:
        scores = {mode: np.empty(len(query_texts)) for mode in modes}
        for batch, logits in self._answer_logits(self.token_ids, modes, query_texts, doc_texts):
            for mode in modes:
                if mode == "none":
                    scores[mode][batch] = torch_grade_scores(logits[mode], self.grades, self.score).double().cpu()
                else:
                    scores[mode][batch] = grade_scores(logits[mode].double().cpu().numpy(), self.grades, self.score)
        return scores

    def _metadata(self, mode: str) -> dict:
        return dict(super()._metadata(mode), score=self.score, grades=self.grades.tolist())

    def _tie_cause(self, mode: str) -> str:
        if self.score == "argmax":
            return ARGMAX_TIES
        cause = super()._tie_cause(mode)
        return f"{ERANK_ZERO_TIES}; or {cause}" if self.score == "erank" else cause


def grade_token_ids(tokenizer, grades: np.ndarray) -> list[int]:
    """The token id of each grade; an InputError naming the tokenizer when a grade is not one token."""
    pieces = {int(g): tokenizer(str(int(g)), add_special_tokens=False)["input_ids"] for g in grades}
    split = {g: tokenizer.convert_ids_to_tokens(ids) for g, ids in pieces.items() if len(ids) != 1}
    name = getattr(tokenizer, "name_or_path", "") or type(tokenizer).__name__
    if split:
        raise InputError(f"tokenizer {name!r} does not spell every grade as one token ({split}): the grade "
                         f"is read at one answer position, so pass grades= that are single tokens "
                         f"(e.g. range(10) instead of range(11))")
    ids = [pieces[int(g)][0] for g in grades]
    if len(set(ids)) != len(ids) or tokenizer.unk_token_id in ids:
        raise InputError(f"tokenizer {name!r} maps grades {grades.tolist()} to ids {ids}: "
                         "they must be distinct, known tokens")
    return ids
