"""Which reader reads an input: `load_qrels` / `load_run` by container, `file_format` by a path's suffix.

A ranx object is kept as it is; everything else becomes ``{qid: {docid: value}}`` with string ids:
a mapping (`readers.mappings`), a path (`file_format`: TREC by `readers.trec_files`, the others by
`readers.files` and `readers.dataframes`), a DataFrame (`readers.dataframes`), an open file
(`readers.files.spilled`), records (`readers.records`).
"""
from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Union

from ..errors import InputError
from .dataframes import from_dataframe, from_parquet
from .files import first_line_fields, from_json, from_jsonl_predictions, from_lz4, read_tsv_run, spilled
from .kinds import is_dataframe, is_file_object, is_ranx_qrels, is_ranx_run, is_records
from .mappings import checked_mapping
from .mteb import refuse_predictions
from .raw_files import STDIN, checked_path
from .records import RECORD_VALUE, from_records
from .text import format_suffix

if TYPE_CHECKING:
    import pandas as pd
    import ranx

#: Anything `load_qrels` accepts: a ranx ``Qrels``, ``{qid: {docid: grade}}``, a path, a DataFrame, records.
QrelsLike = Union["ranx.Qrels", Mapping, str, os.PathLike, "pd.DataFrame", Iterable]
#: Anything `load_run` accepts: a ranx ``Run``, ``{qid: {docid: score}}``, a path, a DataFrame, records.
RunLike = Union["ranx.Run", Mapping, str, os.PathLike, "pd.DataFrame", Iterable]

#: `file_format`'s formats as errors name them
FORMAT_NAMES = {"trec": "TREC", "tsv": "TSV qid<TAB>docid<TAB>score", "json": "JSON", "jsonl": "JSONL predictions",
                "lz4": "LZ4", "parquet": "Parquet"}


def load_qrels(qrels, doc_ids: bool = True):
    """Qrels as a ranx ``Qrels`` (kept as is) or a ``{qid: {docid: grade}}`` dict with string ids
    (``doc_ids=False``: as in `load_run`)."""
    return _load(qrels, "qrels", doc_ids)


def load_run(run, doc_ids: bool = True):
    """A run as a ranx ``Run`` (kept as is) or a ``{qid: {docid: score}}`` dict with string ids
    (``doc_ids=False``: the doc ids of a dict of dicts are left to the caller, `string_keys`)."""
    return _load(run, "run", doc_ids)


def _load(obj, kind: str, doc_ids: bool = True):
    if is_ranx_qrels(obj) if kind == "qrels" else is_ranx_run(obj):
        return obj
    if is_ranx_run(obj) or is_ranx_qrels(obj):
        other = "Run" if kind == "qrels" else "Qrels"
        raise InputError(f"A ranx {other} was given as the {kind}.")
    if isinstance(obj, Mapping):
        refuse_predictions(obj, f"{kind} dict")
        return checked_mapping(obj, kind, f"{kind} dict", doc_ids)
    if isinstance(obj, (str, os.PathLike)):
        return from_file(checked_path(obj, kind), kind)
    if is_dataframe(obj):
        return from_dataframe(obj, kind)
    if is_file_object(obj):
        with spilled(obj, kind) as path:
            return from_file(path, kind)
    if is_records(obj):
        return from_records(obj, kind)
    ranx_type = "Run" if kind == "run" else "Qrels"
    raise InputError(f"Cannot read {kind} of type {type(obj).__name__}: give a ranx {ranx_type}, "
                     f"a dict {{qid: {{docid: value}}}}, a TREC file path, a pandas DataFrame or "
                     f"ir_measures/ir_datasets records (query_id, doc_id, {RECORD_VALUE[kind]}).")


def file_format(path) -> str:
    """How a qrels or run path is read, by its suffix before any compression suffix: "json", "jsonl",
    "lz4", "parquet", else "tsv" for a regular file whose first line is three tab-separated fields, else
    "trec"."""
    form = {".json": "json", ".jsonl": "jsonl", ".lz4": "lz4", ".parquet": "parquet", ".parq": "parquet"}.get(
        format_suffix(path), "trec")
    if form == "trec" and str(path) != STDIN and Path(path).is_file() and first_line_fields(Path(path)) == 3:
        return "tsv"  # qid<TAB>docid<TAB>score: a TREC line has six columns (a pipe is never peeked at)
    return form


def from_file(path: Path, kind: str) -> dict:
    """Qrels or a run from a file, by the reader of its `file_format`."""
    form = file_format(path)
    if form == "json":
        return from_json(path, kind)
    if form == "jsonl":
        return from_jsonl_predictions(path, kind)
    if form == "lz4":
        return from_lz4(path, kind)
    if form == "parquet":
        return from_parquet(path, kind)
    if form == "tsv" and kind == "run":
        return read_tsv_run(path, third_column="auto")
    return read_trec_file(path, kind)


def read_trec_file(path, kind: str) -> dict:
    """``{qid: {docid: value}}`` of a TREC run or qrels file (`readers.trec_files`)."""
    from .trec_files import read_trec  # numpy and the compiled scan, imported when a TREC file is read

    return read_trec(path, kind)[0]
