"""The arithmetic that turns the answer tokens' log-probabilities (or logits: a shift per row changes
nothing) into scores. One source for `tieaware.logprobs` (log-probs computed elsewhere) and the torch
scorers `tieaware.hps.GradeReranker` / `YesNoReranker`, so the same log-probs give the same scores."""
from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from ..errors import InputError

#: how a grade distribution becomes a score
GRADE_SCORES = ("expected", "erank", "argmax")
DEFAULT_GRADES = tuple(range(11))
ARGMAX_TIES = ("score='argmax' gives integer grades, which tie by design: score='expected' (sum_s s P(s)) "
               "separates the documents within a grade")
ERANK_ZERO_TIES = ("score='erank' is s* P(s*), exactly 0 for every document whose most likely grade s* is 0, "
                   "so those documents all tie: score='expected' (sum_s s P(s)) separates them")
#: the answer tokens of a yes/no reranker: (positive spellings, negative spellings), matched by `fold_token`
ANSWER_PRESETS = {"yes_no": (("yes",), ("no",)), "true_false": (("true",), ("false",))}


def fold_token(token: str) -> str:
    """A reported token as an answer spelling: surrounding whitespace, a leading 'Ġ' / '▁' (byte-level BPE
    and SentencePiece spaces) and case removed, so 'Yes', ' yes', 'YES', 'Ġyes' and '▁yes' are all 'yes'."""
    return token.strip().lstrip("Ġ▁").strip().casefold()


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


def check_answers(answers: str | tuple[Iterable[str], Iterable[str]]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """A preset name of `ANSWER_PRESETS` or (positive spellings, negative spellings) -> folded spellings."""
    if isinstance(answers, str):
        if answers not in ANSWER_PRESETS:
            raise InputError(f"unknown answers {answers!r}: use one of {tuple(ANSWER_PRESETS)} or a pair "
                             "(positive tokens, negative tokens)")
        answers = ANSWER_PRESETS[answers]
    try:
        positive, negative = ([fold_token(t) for t in ([side] if isinstance(side, str) else side)]
                              for side in answers)
    except (TypeError, ValueError, AttributeError):
        raise InputError(f"answers must be a preset name or (positive tokens, negative tokens), got {answers!r}") \
            from None
    if not positive or not negative or set(positive) & set(negative) or not all(positive + negative):
        raise InputError(f"answers need non-empty, disjoint positive and negative tokens, got {answers!r}")
    return tuple(positive), tuple(negative)


def grade_scores(logits: np.ndarray, grades: np.ndarray, score: str) -> np.ndarray:
    """Logits (or log-probabilities: any per-row shift gives the same) of the grade tokens, shape
    (n, len(grades)) -> float64 scores. P(s) = softmax over the grade tokens (the probability renormalised
    over the grades); 'expected': sum_s s P(s); 'erank': s* P(s*) with s* = argmax_s P(s) (ERank's
    s x P(s), Cai et al. 2025); 'argmax': s* (the lowest grade among equally probable ones)."""
    z = np.asarray(logits, dtype=np.float64)
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    if score == "expected":
        return p @ grades.astype(np.float64)
    best = p.argmax(axis=1)
    if score == "argmax":
        return grades[best].astype(np.float64)
    return grades[best] * p[np.arange(len(p)), best]


def yes_probability(no_yes: np.ndarray) -> np.ndarray:
    """Logits (or log-probabilities) of the [no, yes] answers, shape (n, 2) -> P(yes) in float64:
    exp(log_softmax([z_no, z_yes])[1]), the two-way softmax of the Qwen3-Reranker reference code."""
    z = np.asarray(no_yes, dtype=np.float64)
    top = z.max(axis=1)
    log_total = top + np.log(np.exp(z[:, 0] - top) + np.exp(z[:, 1] - top))
    return np.exp(z[:, 1] - log_total)
