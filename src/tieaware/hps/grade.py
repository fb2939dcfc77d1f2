"""Causal LMs prompted for an integer relevance grade (ERank, LLM-as-judge style) with High-Precision
Scoring, and the same scores from log-probabilities computed elsewhere (`run_from_logprobs`)."""
from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import ranx
import torch

from ..arguments import is_number
from ..errors import InputError, InputTypeError, MissingFileError
from ._common import ModelLike, build_run, report_ties
from .yes_no import DEFAULT_INSTRUCTION, PromptReranker

#: how a grade distribution becomes a score
GRADE_SCORES = ("expected", "erank", "argmax")
DEFAULT_GRADES = tuple(range(11))
ARGMAX_TIES = ("score='argmax' gives integer grades, which tie by design: score='expected' (sum_s s P(s)) "
               "separates the documents within a grade")

# ERank-style prompt (Cai et al. 2025) answering directly: the answer slot is the grade's first token.
GRADE_TEMPLATE = (
    "<|im_start|>system\nJudge how relevant the Document is to the Query. {instruction}. Answer with one "
    "integer relevance score from {min_grade} to {max_grade}, where {max_grade} means highly relevant and "
    "{min_grade} irrelevant.<|im_end|>\n<|im_start|>user\n<Query>: {query}\n<Document>: {document}"
    "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
)


def check_grades(grades) -> np.ndarray:
    """Two or more distinct integer grades -> int64 array, in the given order."""
    try:
        values = [int(g) for g in grades]
    except (TypeError, ValueError):
        raise InputError(f"grades must be integers, got {grades!r}") from None
    if any(isinstance(g, (bool, np.bool_)) or int(g) != g for g in grades):
        raise InputError(f"grades must be integers, got {grades!r}")
    if len(values) < 2 or len(set(values)) != len(values):
        raise InputError(f"grades must be two or more distinct integers, got {values}")
    return np.asarray(values, dtype=np.int64)


def check_score(score: str) -> str:
    if score not in GRADE_SCORES:
        raise InputError(f"unknown score {score!r}: use one of {GRADE_SCORES}")
    return score


def grade_scores(logits: np.ndarray, grades: np.ndarray, score: str) -> np.ndarray:
    """Logits (or log-probabilities: any per-row shift gives the same) of the grade tokens, shape
    (n, len(grades)) -> float64 scores. P(s) = softmax over the grade tokens (the probability renormalised
    over the grades); 'expected': sum_s s P(s); 'erank': s* P(s*) with s* = argmax_s P(s) (ERank's
    s x P(s)); 'argmax': s* (the lowest grade among equally probable ones)."""
    z = np.asarray(logits, dtype=np.float64)
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    if score == "expected":
        return p @ grades.astype(np.float64)
    best = p.argmax(axis=1)
    if score == "argmax":
        return grades[best].astype(np.float64)
    return grades[best] * p[np.arange(len(p)), best]


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
        return ARGMAX_TIES if self.score == "argmax" else super()._tie_cause(mode)


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


def grade_of(token: str, grades: Mapping[str, int]) -> int | None:
    """The grade a reported token spells ('5', ' 5', 'Ġ5', '▁5'), else None."""
    return grades.get(token.strip().lstrip("Ġ▁").strip())


def read_logprob_records(path: Path) -> dict[str, dict[str, dict[str, float]]]:
    """A JSONL file of {"qid": ..., "docid": ..., "logprobs": {token: logprob}} lines -> nested records."""
    if not path.is_file():
        raise MissingFileError(f"log-probability file not found: {path}")
    records: dict[str, dict[str, dict[str, float]]] = {}
    with open(path, encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                raise InputError(f"{path}:{number}: not a JSON line ({error.msg})") from None
            if not isinstance(record, dict) or not {"qid", "docid", "logprobs"} <= set(record):
                raise InputError(f'{path}:{number}: a record is {{"qid": ..., "docid": ..., "logprobs": '
                                 '{token: logprob, ...}}')
            docs = records.setdefault(str(record["qid"]), {})
            docid = str(record["docid"])
            if docid in docs:
                raise InputError(f"{path}:{number}: query {record['qid']!r}, doc {docid!r} appears twice")
            docs[docid] = record["logprobs"]
    return records


def run_from_logprobs(records: Mapping[str, Mapping[str, Mapping[str, float]]] | str | os.PathLike[str], *,
                      grades: Iterable[int] = DEFAULT_GRADES, score: str = "expected", k: int | None = None,
                      name: str = "logprobs") -> ranx.Run:
    """Grade-reranker scores from log-probabilities computed elsewhere (vLLM, an API's top log-probs, a
    model that reasoned before answering): the formulas of `GradeReranker`, so the same log-probs give
    the same scores.

    Args:
        records: ``{qid: {docid: {token: logprob}}}`` (the log-probs of the answer's grade token), or a
            path to a JSONL file with one ``{"qid": ..., "docid": ..., "logprobs": {token: logprob}}`` per
            line. Tokens are matched to grades after stripping whitespace and a leading 'Ġ' / '▁' (several
            spellings of one grade add up); other tokens are ignored; a grade missing from a top-k list has
            probability 0.
        grades: the integer grades (default 0..10); score: 'expected', 'erank' or 'argmax' (GradeReranker).
        k: keep each query's top k plus every document tied with the k-th; name: the run's name.

    Returns:
        a ranx Run; ``run.metadata`` holds score, grades and the tie census (`report_ties`).

    Raises:
        InputError: a pair with no grade token, a log-prob that is not a number, NaN, +inf or above 0
            (probabilities given for log-probabilities), a bad JSONL line (named by file:line).
    """
    grades, score = check_grades(grades), check_score(score)
    if isinstance(records, (str, os.PathLike)):
        records = read_logprob_records(Path(records))
    if not isinstance(records, Mapping):
        raise InputTypeError(f"records must be {{qid: {{docid: {{token: logprob}}}}}} or a JSONL path, "
                             f"not {type(records).__name__}")
    column = {str(int(g)): i for i, g in enumerate(grades)}
    scored = {}
    for qid, docs in records.items():
        if not isinstance(docs, Mapping):
            raise InputTypeError(f"query {qid!r}: expected {{docid: {{token: logprob}}}}, got {type(docs).__name__}")
        docids = [str(d) for d in docs]
        logits = np.full((len(docids), len(grades)), -np.inf)
        for row, (docid, tokens) in enumerate(docs.items()):
            if not isinstance(tokens, Mapping):
                raise InputTypeError(f"query {qid!r}, doc {docid!r}: expected {{token: logprob}}")
            for token, logprob in tokens.items():
                if not is_number(logprob) or np.isnan(logprob) or logprob == np.inf:
                    raise InputError(f"query {qid!r}, doc {docid!r}: log-prob of {token!r} is {logprob!r}")
                if logprob > 0:
                    raise InputError(f"query {qid!r}, doc {docid!r}: log-prob of {token!r} is {logprob!r}: above 0, "
                                     "so not a log-probability (probabilities? give their logarithms)")
                col = grade_of(str(token), column)
                if col is not None:
                    logits[row, col] = np.logaddexp(logits[row, col], float(logprob))
            if np.isneginf(logits[row]).all():
                raise InputError(f"query {qid!r}, doc {docid!r}: no grade token among {list(tokens)[:12]} "
                                 f"(grades {grades.tolist()})")
        scored[str(qid)] = (docids, grade_scores(logits, grades, score) if docids else np.empty(0))
    run = build_run(scored, name, k, {"score": score, "grades": grades.tolist(), "source": "log-probabilities"})
    report_ties(run, k, None, ARGMAX_TIES if score == "argmax" else
                "the grade probabilities tie (top log-probs too few or too rounded to tell the documents apart?)")
    return run
