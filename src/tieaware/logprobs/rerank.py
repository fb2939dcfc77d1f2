"""`run_from_rerank`: the responses of rerank and score endpoints -> a ranx Run, with the precision grid
the scores lie on (a server that scores in bf16 returns values of 8 significant bits, which tie)."""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import ranx

from ..arguments import is_number
from ..errors import InputError, InputTypeError, MissingIdError
from ..readers.ids import id_string
from ..score_runs import build_run, report_ties
from .responses import field, is_list

GRID_TIES = {
    "bf16": ("every score is exactly representable in bf16 (8 significant bits), so the server most likely "
             "returned bf16-rounded scores, which tie: score in fp32, or compute the head in fp32 (vLLM pooling "
             "models do by default, head_dtype), or evaluate tie-aware"),
    "fp16": ("every score is exactly representable in fp16 (11 significant bits), so the server most likely "
             "returned fp16-rounded scores, which tie: score in fp32 or compute the head in fp32, or evaluate "
             "tie-aware"),
    None: "the endpoint returned equal scores (not all on a bf16 or fp16 grid): evaluate tie-aware",
}


def score_grid(scores: np.ndarray) -> str | None:
    """'bf16' when every score is exactly a bf16 value, else 'fp16' when every one is an fp16 value, else None."""
    as_fp32 = scores.astype(np.float32)
    if not np.array_equal(as_fp32.astype(np.float64), scores):
        return None
    if not np.any(as_fp32.view(np.uint32) & 0xFFFF):  # bf16 is the upper half of an fp32
        return "bf16"
    with np.errstate(over="ignore"):
        return "fp16" if np.array_equal(scores.astype(np.float16).astype(np.float64), scores) else None


def results(response, where: str) -> list[tuple[int, float]]:
    """(index, score) pairs: ``results[{index, relevance_score}]`` (Cohere, Jina, vLLM /rerank) or
    ``data[{index, score}]`` (vLLM /score)."""
    items, key = field(response, "results"), "relevance_score"
    if items is None and not isinstance(response, Sequence):
        items, key = field(response, "data"), "score"
    if not is_list(items):
        raise InputTypeError(f"{where}: expected a rerank response {{'results': [{{'index', 'relevance_score'}}]}} "
                             f"or a score response {{'data': [{{'index', 'score'}}]}}, not {type(response).__name__}")
    found = []
    for item in items:
        index, value = field(item, "index"), field(item, key)
        if not isinstance(index, (int, np.integer)) or isinstance(index, bool):
            raise InputError(f"{where}: result index {index!r} is not an integer")
        if not is_number(value) or np.isnan(value):
            raise InputError(f"{where}: the {key} of result {index} is {value!r}")
        found.append((int(index), float(value)))
    return found


def run_from_rerank(responses: Mapping, documents: Mapping[str, Sequence], *, k: int | None = None,
                    name: str = "rerank") -> ranx.Run:
    """A run from the responses of rerank and score endpoints: Cohere's and Jina's rerank and vLLM's
    ``/rerank`` (``{"results": [{"index", "relevance_score", ...}]}``) and vLLM's ``/score`` (``{"data":
    [{"index", "score", ...}]}``), as the JSON the server returns or the client's object.

    Args:
        responses: ``{qid: response}``, one response per query.
        documents: ``{qid: [docid, ...]}``, the ids of the documents in the order the request sent them:
            a result's ``index`` is the position of its document there. A document the response leaves out
            (``top_n``) is left out of the run.
        k: keep each query's top k plus every document tied with the k-th; name: the run's name.

    Returns:
        a ranx Run; ``run.metadata["score_grid"]`` is ``"bf16"`` when every score of the run is exactly a
        bf16 value, ``"fp16"`` when an fp16 value, else None; ``run.metadata["tie_census"]`` the tie
        census. When documents tie, a `TieWarning` names their share and the grid (scores rounded to bf16
        by the server) or, off the grids, that the endpoint returned equal scores.

    Raises:
        InputError: an index outside the request's documents or given twice, a score that is not a number,
            a query without documents or response, document ids equal as strings; each names the query.
        InputTypeError: a response of another shape.

    Examples:
        >>> from tieaware.logprobs import run_from_rerank
        >>> response = {"results": [{"index": 1, "relevance_score": 0.92578125},
        ...                         {"index": 0, "relevance_score": 0.3359375}]}
        >>> run = run_from_rerank({"q1": response}, {"q1": ["d1", "d2"]})
        >>> run["q1"], run.metadata["score_grid"]
        ({'d2': 0.92578125, 'd1': 0.3359375}, 'bf16')
    """
    if not isinstance(responses, Mapping) or not isinstance(documents, Mapping):
        raise InputTypeError("responses and documents must be {qid: response} and {qid: [docid, ...]}")
    if not responses:
        raise InputError("no rerank response to read")
    scored = {}
    for qid, response in responses.items():
        query = id_string(qid, "rerank responses: query")
        if query in scored:
            raise InputError(f"rerank responses: query id {qid!r} appears twice once ids are read as strings")
        where = f"query {query!r}"
        docids = documents.get(qid, documents.get(query))
        if docids is None:
            raise MissingIdError(f"{where}: no documents= entry (the ids of the documents sent in the request)")
        if isinstance(docids, (str, bytes)) or not isinstance(docids, Sequence):
            raise InputTypeError(f"{where}: documents must be a list of document ids")
        ids = [id_string(d, f"rerank documents, {where}: document") for d in docids]
        if len(set(ids)) != len(ids):
            raise InputError(f"{where}: a document id appears twice in documents (ids are read as strings)")
        found = results(response, where)
        indices = [index for index, _ in found]
        if not found:
            raise InputError(f"{where}: the response holds no result")
        bad = [index for index in indices if not 0 <= index < len(ids)]
        if bad:
            raise InputError(f"{where}: result index {bad[0]} lies outside the {len(ids)} documents of the request")
        if len(set(indices)) != len(indices):
            raise InputError(f"{where}: a result index appears twice")
        scored[query] = ([ids[index] for index in indices], np.array([value for _, value in found]))
    all_scores = np.concatenate([values for _, values in scored.values()])
    grid = score_grid(all_scores)
    run = build_run(scored, name, k, {"source": "rerank endpoint", "score_grid": grid})
    report_ties(run, k, None, GRID_TIES[grid])
    return run
