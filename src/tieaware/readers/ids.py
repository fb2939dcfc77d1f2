"""The id rule of every container: ids are strings, as trec_eval reads them, and each document
appears once per query.

A ``str`` is kept; an integer (Python's or numpy's, not a bool) becomes ``str(int)``, so a run keyed
by ``1`` matches qrels keyed by ``"1"``; floats (even ``1.0``), bools and missing ids are errors
naming container, query and document, so the same data gives the same number whatever container
it came in.
"""
from __future__ import annotations

from collections.abc import Mapping

from ..errors import InputError


def id_string(value, where: str) -> str:
    """The id rule of every container (dicts, records, DataFrames, files): a ``str`` as it is; an
    integer (Python's or numpy's, not a bool) as ``str(int(value))``, so a run keyed by ``1`` matches
    qrels keyed by ``"1"``. Anything else is an `InputError` naming `where` (container, query and
    document): a float even when integral (``1.0`` would read as ``"1.0"`` and match no ``"1"``;
    converting it silently would hide ids that lost their type on the way), a bool, None, NaN."""
    if isinstance(value, str):
        return value if type(value) is str else str.__str__(value)
    kind = getattr(getattr(value, "dtype", None), "kind", None) if type(value).__module__ == "numpy" else None
    if isinstance(value, int) and not isinstance(value, bool) or kind in ("i", "u"):
        return str(int(value))
    try:
        missing = value is None or bool(value != value)  # None, NaN
    except (TypeError, ValueError):  # pandas' NA has no truth value; an array has no single one
        missing = type(value).__name__ == "NAType"
    if missing:
        problem = "is missing; ids are strings or integers"
    elif isinstance(value, float) or kind == "f":
        problem = (f"is a float: ids are strings or integers, and a float id reads as {str(value)!r}, matching no "
                   "integer id; convert the ids to int or str first (a DataFrame column: .astype(int) or .astype(str))")
    else:
        problem = f"is a {type(value).__name__}; ids are strings or integers"
    raise InputError(f"{where} id {value!r} {problem}.")


def all_strings(keys) -> bool:
    """True when every key is a ``str``: ``str.join`` stops at the first that is not, in C (a tenth of
    a Python loop's cost)."""
    try:
        "".join(keys)
    except TypeError:
        return False
    return True


def string_keys(docs: Mapping, what: str, qid: str) -> Mapping:
    """The inner dict itself when all its ids are strings, else a copy with ids by `id_string`
    (so a run ``{"a": 0.5, 2: 0.1}`` matches qrels document ``"2"``); `what` names the container
    (``"run dict"``); a collision such as ``1`` and ``"1"`` is an error."""
    if not docs:
        return docs
    if isinstance(docs, dict) and all_strings(docs):
        return docs
    out = {}
    for doc, value in docs.items():
        key = doc if type(doc) is str else id_string(doc, f"{what}, query {qid!r}: document")
        if key in out:
            raise InputError(f"{what}, query {qid!r}: document id {doc!r} appears twice once ids are read "
                             "as strings.")
        out[key] = value
    return out


def put_value(table: dict, qid: str, docid: str, value, where: str) -> None:
    """``table[qid][docid] = value``; a document given twice for one query is an error naming ``where``."""
    docs = table.get(qid)
    if docs is None:
        docs = table[qid] = {}
    if docid in docs:
        raise InputError(f"{where}: document {docid!r} appears twice for query {qid!r}.")
    docs[docid] = value
