"""Runs from scores computed elsewhere, with numpy and ranx only (no torch, no transformers):
`run_from_logprobs` reads the answer tokens' log-probabilities that vLLM or an OpenAI-compatible server
returns (grade rerankers such as ERank, yes/no rerankers such as Qwen3-Reranker and Rank1) and scores
them with the formulas of `tieaware.hps.GradeReranker` / `YesNoReranker`; `run_from_rerank` reads the
responses of rerank and score endpoints (Cohere, Jina, vLLM)."""
from __future__ import annotations

import json
import os
import warnings
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import ranx

from ..arguments import is_number
from ..errors import InputError, InputTypeError, MissingFileError
from ..readers.ids import id_string
from ..score_runs import TieWarning, build_run, report_ties
from .rerank import run_from_rerank
from .responses import VERY_UNLIKELY, positions, select
from .scores import (
    ARGMAX_TIES,
    DEFAULT_GRADES,
    ERANK_ZERO_TIES,
    check_answers,
    check_grades,
    check_score,
    fold_token,
    grade_scores,
    yes_probability,
)

__all__ = ["MissingTokenWarning", "TieWarning", "run_from_logprobs", "run_from_rerank"]

KINDS = ("grade", "yes_no")
PRECISION_TIES = "the answer probabilities tie (top log-probs too few or too rounded to tell the documents apart?)"


class MissingTokenWarning(UserWarning):
    """Some pairs lack a grade or answer token in their top log-probs, and ``missing=`` stood in for it;
    the message names the share of pairs.

    Examples:
        >>> import warnings
        >>> from tieaware.logprobs import MissingTokenWarning, run_from_logprobs
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     run = run_from_logprobs({"q1": {"d1": {"yes": -0.01, "Yes": -5.2}}}, kind="yes_no")
        >>> [w.category.__name__ for w in caught], round(run["q1"]["d1"], 4)
        (['MissingTokenWarning'], 0.9945)
    """


def run_from_logprobs(records, *, kind: str = "grade", grades: Iterable[int] | None = None,
                      score: str | None = None, answers: str | tuple[Iterable[str], Iterable[str]] = "yes_no",
                      position: int | str | None = None, missing: float | str = "min", tokenizer: Any = None,
                      k: int | None = None, name: str = "logprobs") -> ranx.Run:
    """Reranker scores from the log-probabilities of the answer token computed elsewhere (vLLM, an
    OpenAI-compatible server, a model that reasoned before answering), with the formulas of
    `tieaware.hps.GradeReranker` (``kind="grade"``) and `tieaware.hps.YesNoReranker` (``kind="yes_no"``):
    the same log-probs give the same scores.

    Args:
        records: the responses of the (query, document) pairs: ``{qid: {docid: response}}``, an iterable
            of ``(qid, docid, response)``, or a path to a JSONL file with one ``{"qid": ..., "docid": ...,
            "response": ...}`` (or ``"logprobs": {token: logprob}``) per line. A response is ``{token:
            logprob}`` (the top log-probs of the answer token); a vLLM ``RequestOutput`` / ``CompletionOutput``
            (token ids read through each Logprob's ``decoded_token``, else `tokenizer`); or an
            OpenAI-compatible chat completion or completion, as the client's object or the JSON the server
            returns. Ids are strings or integers (``1`` reads as ``"1"``; ``1`` and ``"1"`` for one query
            are an error, as in `tieaware.evaluate`).
        kind: ``"grade"``: P(s) = the softmax over the grade tokens' log-probs; ``score="expected"``
            (default) sum_s s P(s), ``"erank"`` s* P(s*) with s* = argmax_s P(s), ``"argmax"`` s*.
            ``"yes_no"``: P(yes) = exp(lp_yes) / (exp(lp_yes) + exp(lp_no)), the two-way softmax.
        grades: the integer grades (default 0..10), for ``kind="grade"``.
        score: ``"expected"`` (default), ``"erank"`` or ``"argmax"``, for ``kind="grade"``.
        answers: for ``kind="yes_no"``: ``"yes_no"`` (default), ``"true_false"`` (Rank1-style models) or
            (positive tokens, negative tokens). Tokens match after whitespace, a leading 'Ġ' / '▁' and case
            are removed ("Yes", " yes", "YES", "Ġyes", "▁yes" are "yes"; grades likewise, "5", " 5",
            "Ġ5"); the spellings of one answer or grade add up (log-sum-exp).
        position: the generated position holding the answer: None (default) the last one; an int an index;
            a str a marker such as ``"</think>"``: the first position after the marker's first occurrence
            in the generated text that is not whitespace alone (the marker is matched on the tokens'
            concatenated text, so it may span tokens).
        missing: the log-prob of a grade or answer token absent from a position's top log-probs (and of
            OpenAI's -9999.0, "very unlikely"): ``"min"`` (default) the smallest log-prob listed there,
            which every unlisted token's log-prob is at most (an upper bound: the absent token keeps the
            largest probability the data allow, rather than 0, which would tie every document whose list
            lacks the "no" token at P(yes) = 1); or a number, ``float("-inf")`` for probability 0. A
            `MissingTokenWarning` names the share of pairs where it was used.
        tokenizer: reads vLLM token ids that have no ``decoded_token`` (``decode``, else
            ``convert_ids_to_tokens``).
        k: keep each query's top k plus every document tied with the k-th; name: the run's name.

    Returns:
        a ranx Run; ``run.metadata`` holds kind, score, grades or answers, position, missing and
        missing_share, and the tie census (a `TieWarning` names ties among different documents and their
        cause, such as erank's documents of most likely grade 0, all at exactly 0).

    Raises:
        InputError: no pair to score; a pair with no grade token (``kind="grade"``) or neither answer
            (``"yes_no"``); a log-prob that is not a number, NaN, +inf or above 0; a response without
            log-probs; a marker not generated; ids equal as strings; a bad JSONL line (named by file:line).
            Each names the query and document.
        InputTypeError: records or a response of an unknown shape.

    Examples:
        >>> from tieaware.logprobs import run_from_logprobs
        >>> run = run_from_logprobs({"q1": {"d1": {"yes": -0.1, "no": -2.4}, "d2": {"Yes": -1.2, " no": -0.4}}},
        ...                         kind="yes_no")
        >>> round(run["q1"]["d1"], 4), round(run["q1"]["d2"], 4)
        (0.9089, 0.31)
    """
    if kind not in KINDS:
        raise InputError(f"unknown kind {kind!r}: use one of {KINDS}")
    if kind == "yes_no" and (grades is not None or score is not None):
        raise InputError("grades= and score= are for kind='grade'; kind='yes_no' scores P(yes)")
    if position is not None and not isinstance(position, (int, str)) or isinstance(position, bool):
        raise InputTypeError(f"position must be None, an int or a marker str, not {position!r}")
    if position == "":
        raise InputError("position='' marks nothing: give the marker text, such as '</think>'")
    if not (missing == "min" or is_number(missing) and not np.isnan(missing) and float(missing) <= 0):
        raise InputError(f"missing must be 'min' or a log-prob <= 0 (float('-inf') for probability 0), not {missing!r}")
    if kind == "grade":
        grade_values = check_grades(DEFAULT_GRADES if grades is None else grades)
        grade_score = check_score(score or "expected")
        columns = {str(int(g)): i for i, g in enumerate(grade_values)}
        described = f"a grade token (grades {grade_values.tolist()})"
    else:
        positive, negative = check_answers(answers)
        columns = {**{token: 0 for token in negative}, **{token: 1 for token in positive}}  # softmax order [no, yes]
        described = f"an answer token {positive + negative}"
    table = pairs_by_query(records)
    scored, filled, zero_ties, total = {}, 0, 0, 0
    for qid, rows in table.items():
        z = np.full((len(rows), max(columns.values()) + 1), -np.inf)
        for row, (_, response, where) in enumerate(rows):
            top = select(positions(response, where, tokenizer), position, where)
            filled += answer_logprobs(top, columns, z[row], missing, where, described)
        if kind == "grade":
            values = grade_scores(z, grade_values, grade_score)
            if grade_score == "erank" and 0 in grade_values:
                zeros = int(np.sum(grade_values[z.argmax(axis=1)] == 0))  # documents whose erank score is 0
                zero_ties += zeros if zeros > 1 else 0
        else:
            values = yes_probability(z)
        scored[qid] = ([docid for docid, _, _ in rows], values)
        total += len(rows)
    if filled:
        warnings.warn(f"{name}: {filled / total:.1%} of the pairs ({filled} of {total}) lack {described} in their "
                      f"top log-probs; missing={missing!r} gave it "
                      f"{'the smallest log-prob listed there' if missing == 'min' else f'log-prob {missing}'}",
                      MissingTokenWarning, stacklevel=2)
    metadata: dict[str, Any] = {"kind": kind, "position": position, "missing": missing,
                                "missing_share": filled / total, "source": "log-probabilities"}
    if kind == "grade":
        metadata.update(score=grade_score, grades=grade_values.tolist())
    else:
        metadata.update(answers=[list(positive), list(negative)])
    run = build_run(scored, name, k, metadata)
    cause = ARGMAX_TIES if kind == "grade" and grade_score == "argmax" else \
        ERANK_ZERO_TIES if zero_ties else PRECISION_TIES
    report_ties(run, k, None, cause)
    return run


def answer_logprobs(top, columns: Mapping[str, int], row: np.ndarray, missing, where: str, described: str) -> bool:
    """Fill `row` (the columns' log-probs, -inf at first) from the (token, log-prob) pairs of one position,
    spellings of one column merged by log-sum-exp; absent columns get `missing`. True when one did."""
    listed = []
    for token, logprob in top:
        if not is_number(logprob) or np.isnan(logprob) or logprob == np.inf:
            raise InputError(f"{where}: log-prob of {token!r} is {logprob!r}")
        if logprob > 0:
            raise InputError(f"{where}: log-prob of {token!r} is {logprob!r}: above 0, so not a log-probability "
                             "(probabilities? give their logarithms)")
        if logprob <= VERY_UNLIKELY:
            continue
        listed.append(float(logprob))
        column = columns.get(fold_token(token))
        if column is not None:
            row[column] = np.logaddexp(row[column], float(logprob))
    absent = np.isneginf(row)
    if absent.all():
        listed_tokens = [token for token, _ in top][:12]
        raise InputError(f"{where}: not one {described.split(' ', 1)[1]} among {listed_tokens}")
    if not absent.any():
        return False
    row[absent] = min(listed) if missing == "min" else float(missing)
    return True


def pairs_by_query(records) -> dict[str, list[tuple[str, Any, str]]]:
    """{qid: [(docid, response, where), ...]} from any form of `records`; ids by the rule of `evaluate`."""
    if isinstance(records, (str, os.PathLike)):
        triples: Iterable = read_jsonl(Path(records))
    elif isinstance(records, Mapping):
        triples = nested_triples(records)
    elif isinstance(records, Iterable):
        triples = listed_triples(records)
    else:
        raise InputTypeError(f"records must be {{qid: {{docid: response}}}}, (qid, docid, response) triples or a "
                             f"JSONL path, not {type(records).__name__}")
    table: dict[str, dict[str, tuple[Any, str]]] = {}
    for qid, docid, response, place in triples:
        query = id_string(qid, f"{place}log-prob records: query")
        doc = id_string(docid, f"{place}log-prob records, query {query!r}: document")
        docs = table.setdefault(query, {})
        if doc in docs:
            raise InputError(f"{place}log-prob records: query {query!r}, document {doc!r} appears twice "
                             "(ids are read as strings)")
        docs[doc] = (response, f"{place}query {query!r}, doc {doc!r}")
    if not any(table.values()):
        raise InputError("log-prob records hold no (query, document) pair to score")
    return {qid: [(docid, response, where) for docid, (response, where) in docs.items()]
            for qid, docs in table.items()}


def nested_triples(records: Mapping) -> Iterator[tuple[Any, Any, Any, str]]:
    seen: set[str] = set()
    for qid, docs in records.items():
        if not isinstance(docs, Mapping):
            raise InputTypeError(f"query {qid!r}: expected {{docid: response}}, got {type(docs).__name__}")
        if not docs:
            raise InputError(f"query {qid!r} holds no documents to score")
        query = id_string(qid, "log-prob records: query")
        if query in seen:
            raise InputError(f"log-prob records: query id {qid!r} appears twice once ids are read as strings")
        seen.add(query)
        for docid, response in docs.items():
            yield qid, docid, response, ""


def listed_triples(records: Iterable) -> Iterator[tuple[Any, Any, Any, str]]:
    for number, item in enumerate(records):
        if isinstance(item, (str, bytes, Mapping)) or not isinstance(item, Iterable) or len(item := tuple(item)) != 3:
            raise InputTypeError(f"records item #{number}: expected (qid, docid, response), got {item!r:.80}")
        yield (*item, "")


def read_jsonl(path: Path) -> Iterator[tuple[Any, Any, Any, str]]:
    """Lines of {"qid", "docid", "response" (any shape) or "logprobs" ({token: logprob})}; errors name file:line."""
    if not path.is_file():
        raise MissingFileError(f"log-probability file not found: {path}")
    with open(path, encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                raise InputError(f"{path}:{number}: not a JSON line ({error.msg})") from None
            if not isinstance(record, dict) or not {"qid", "docid"} <= set(record) or \
                    ("response" in record) == ("logprobs" in record):
                raise InputError(f'{path}:{number}: a record is {{"qid": ..., "docid": ..., "response": ...}} '
                                 '(or "logprobs": {token: logprob, ...} instead of "response")')
            yield record["qid"], record["docid"], record.get("response", record.get("logprobs")), f"{path}:{number}: "
