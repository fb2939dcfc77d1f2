"""MTEB retrieval predictions: ``{"mteb_model_meta": {...}, subset: {split: {query_id: {doc_id: score}}}}``.

`load_mteb_predictions` reads one subset and split as a run; `refuse_predictions` names the
subsets and splits when such a file is given where a run is expected.
"""
from __future__ import annotations

import json
import os
from collections.abc import Mapping

from ..errors import InputError
from .mappings import checked_mapping, checked_numbers
from .raw_files import checked_path
from .text import read_text

#: The key that marks an MTEB predictions file (see `load_mteb_predictions`).
MTEB_META = "mteb_model_meta"


def load_mteb_predictions(predictions, subset: str | None = None, split: str | None = None) -> dict:
    """The run ``{query_id: {doc_id: score}}`` of one subset and split of MTEB retrieval predictions.

    ``mteb.evaluate(..., prediction_folder=...)`` writes ``{Task}_predictions.json`` as
    ``{"mteb_model_meta": {...}, subset: {split: {query_id: {doc_id: score}}}}``; give its path
    (plain or compressed) or the parsed dict. ``subset`` and ``split`` default to the only
    one there is; with several, an error lists them. MTEB keeps each query's ``top_k``
    documents with ``torch.topk``, which cuts through tie groups: save predictions with a
    ``top_k`` deeper than the deepest cutoff evaluated (docs/ecosystem.md).

    Args:
        predictions: the path of a ``{Task}_predictions.json`` file, or its parsed dict.
        subset: the subset to read (default: the only one).
        split: the split to read (default: the only one).

    Returns:
        The run ``{query_id: {doc_id: score}}``.

    Raises:
        InputError: the subset or split is missing or ambiguous (the message lists those there
            are), or the file is not MTEB predictions.

    Examples:
        >>> import tieaware
        >>> predictions = {"mteb_model_meta": {}, "default": {"test": {"q1": {"d1": 0.5, "d2": 0.5}}}}
        >>> tieaware.load_mteb_predictions(predictions)
        {'q1': {'d1': 0.5, 'd2': 0.5}}
    """
    if isinstance(predictions, (str, os.PathLike)):
        path = checked_path(predictions, "MTEB predictions")
        what = f"MTEB predictions file {str(path)!r}"
        try:
            predictions = json.loads(read_text(path, "MTEB predictions"))
        except ValueError as exc:
            if isinstance(exc, InputError):
                raise
            raise InputError(f"{what} is not valid JSON ({exc}).") from None
    else:
        what = "MTEB predictions"
    if not isinstance(predictions, Mapping) or MTEB_META not in predictions:
        got = type(predictions).__name__ if not isinstance(predictions, Mapping) else \
            f"keys {sorted(map(str, predictions))[:5]}"
        raise InputError(f"{what}: expected MTEB's {{{MTEB_META!r}: {{...}}, subset: {{split: "
                         f"{{query_id: {{doc_id: score}}}}}}}}, got {got}.")
    subsets = {k: v for k, v in predictions.items() if k != MTEB_META}
    subset = _pick(subsets, subset, "subset", what)
    splits = subsets[subset]
    if not isinstance(splits, Mapping):
        raise InputError(f"{what}: subset {subset!r} maps to {type(splits).__name__}, expected {{split: run}}.")
    split = _pick(splits, split, "split", f"{what} subset {subset!r}")
    where = f"{what} [{subset!r}][{split!r}]"
    return checked_numbers(checked_mapping(splits[split], "run", where), "run", where)


def _pick(choices: Mapping, chosen, level: str, what: str):
    if chosen is None:
        if len(choices) == 1:
            return next(iter(choices))
        raise InputError(f"{what} holds {len(choices)} {level}s {sorted(map(str, choices))}: choose one with "
                         f"{level}=...")
    if chosen not in choices:
        raise InputError(f"{what} has no {level} {chosen!r}; it has {sorted(map(str, choices))}.")
    return chosen


def _choices(predictions: Mapping) -> str:
    """``'default': ['dev', 'test']`` for each subset of MTEB predictions."""
    return "; ".join(f"{subset!r}: {sorted(map(str, splits)) if isinstance(splits, Mapping) else '?'}"
                     for subset, splits in predictions.items() if subset != MTEB_META)


def refuse_predictions(obj, what: str) -> None:
    """An `InputError` when `obj` is MTEB predictions given as qrels or a run: it names the subsets and
    splits there are and `load_mteb_predictions`."""
    if isinstance(obj, Mapping) and MTEB_META in obj:
        raise InputError(f"{what} holds MTEB predictions ({MTEB_META!r}, then subset and split levels: "
                         f"{_choices(obj)}); read the run with tieaware.inputs.load_mteb_predictions(path, "
                         "subset=..., split=...).")
