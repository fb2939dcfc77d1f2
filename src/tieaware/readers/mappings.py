"""Qrels and runs as mappings ``{qid: {docid: value}}`` (Python dicts, parsed JSON or LZ4), checked.

Ids become strings by the id rule (`readers.ids`); anything not shaped as a mapping of mappings is
an error naming the container and query.
"""
from __future__ import annotations

from collections.abc import Mapping

from ..errors import InputError
from .ids import id_string, string_keys

#: what a run or qrels mapping holds, for error messages
EXPECTED = {"run": "a run is {query_id: {doc_id: score}} with numbers as scores",
            "qrels": "qrels are {query_id: {doc_id: relevance}} with numbers as grades"}


def checked_mapping(obj, kind: str, what: str, doc_ids: bool = True) -> dict:
    """``{qid: {docid: value}}`` with string ids; anything else is named. ``doc_ids=False`` leaves
    the inner dicts' keys to the caller (`string_keys`), which reads them anyway."""
    if not isinstance(obj, Mapping):
        raise InputError(f"{what} is a {type(obj).__name__}; {EXPECTED[kind]}.")
    out = {}
    for qid, docs in obj.items():
        if not isinstance(docs, Mapping):
            raise InputError(f"{what}: query {qid!r} maps to {type(docs).__name__}; {EXPECTED[kind]}.")
        key = qid if type(qid) is str else id_string(qid, f"{what}: query")
        if key in out:
            raise InputError(f"{what}: query id {qid!r} appears twice once ids are read as strings.")
        out[key] = string_keys(docs, what, key) if doc_ids or type(docs) is not dict else docs
    return out


def checked_numbers(table: dict, kind: str, what: str) -> dict:
    """``table`` itself when every value is a JSON number, else an error naming the first that is not."""
    for qid, docs in table.items():
        for docid, value in docs.items():
            if type(value) not in (int, float, bool):  # JSON's numbers; true and false are 1 and 0
                raise InputError(f"{what}: query {qid!r}, document {docid!r} maps to {value!r} "
                                 f"({type(value).__name__}); {EXPECTED[kind]}.")
    return table
