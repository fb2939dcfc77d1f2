"""Qrels and runs as ir_measures / ir_datasets records, read once (a list, iterator or generator).

``Qrel``/``TrecQrel`` (``query_id, doc_id, relevance``) for qrels, ``ScoredDoc`` (``query_id,
doc_id, score``) for runs, recognised by those attribute names; ids by the id rule (`readers.ids`).
"""
from __future__ import annotations

from operator import attrgetter

from ..errors import InputError
from .ids import id_string, put_value

#: the attribute that holds a record's value, per kind
RECORD_VALUE = {"qrels": "relevance", "run": "score"}


def from_records(records, kind: str) -> dict:
    """``{qid: {docid: value}}`` from ir_measures/ir_datasets records, read once (a generator
    works). Integer ids become strings; a document twice for a query is an error naming the record."""
    value_field = RECORD_VALUE[kind]
    fields = attrgetter("query_id", "doc_id", value_field)
    out: dict = {}
    for index, record in enumerate(records):
        try:
            qid, docid, value = fields(record)
        except AttributeError:
            raise InputError(_record_error(record, index, kind)) from None
        if type(qid) is not str:
            qid = id_string(qid, f"{kind} record {index}: query")
        if type(docid) is not str:
            docid = id_string(docid, f"{kind} record {index} (query {qid!r}): document")
        put_value(out, qid, docid, value, f"{kind} record {index}")
    return out


def _record_error(record, index: int, kind: str) -> str:
    """What a record lacks, with a hint when it is the other kind's record or a tensor."""
    value_field = RECORD_VALUE[kind]
    other = "run" if kind == "qrels" else "qrels"
    has = list(getattr(record, "_fields", ())) or [n for n in ("query_id", "doc_id", "relevance", "score")
                                                   if hasattr(record, n)]
    hint = ""
    if hasattr(record, "query_id") and hasattr(record, "doc_id") and hasattr(record, RECORD_VALUE[other]):
        hint = f" It has {RECORD_VALUE[other]!r}: were {other} records given as the {kind}?"
    elif type(record).__module__.split(".")[0] in ("torch", "numpy"):
        hint = " Flat (indexes, preds, target) arrays or tensors go to tieaware.evaluate_arrays."
    return (f"{kind} record {index} is a {type(record).__name__} {record!r}: {kind} records need the attributes "
            f"query_id, doc_id and {value_field} (ir_measures' {'Qrel' if kind == 'qrels' else 'ScoredDoc'}, "
            f"ir_datasets' {'TrecQrel' if kind == 'qrels' else 'GenericScoredDoc'}){f'; it has {has}' if has else ''}."
            + hint)
