"""Qrels and runs in the forms users have them, read without converting by hand.

Accepted for both: ranx ``Qrels``/``Run``; pytrec_eval-style dicts
``{qid: {docid: relevance}}`` / ``{qid: {docid: score}}``; a path (``str`` or
``Path``) to a TREC file (qrels ``qid iter docid rel``, run ``qid Q0 docid rank
score tag``), a ranx-style ``.json`` file or a ``.parquet`` file; a pandas
DataFrame with ranx's column names (``q_id``, ``doc_id``, ``score``) or
ir_measures' (``query_id``, ``doc_id``, ``relevance``/``score``).

Everything here reads; nothing modifies the caller's objects. Errors name the
file line, query or document at fault.
"""
from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pandas as pd

from .errors import InputError

try:  # ranx is a dependency, but keep the import local to what needs it
    from ranx import Qrels as RanxQrels
    from ranx import Run as RanxRun
except ImportError:  # pragma: no cover
    RanxQrels = RanxRun = ()

_RUN_COLUMNS = ("qid Q0 docid rank score tag", 6)
_QRELS_COLUMNS = ("qid iter docid rel", 4)


def _number(text: str, what: str, where: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise InputError(f"{where}: {what} {text!r} is not a number.") from None
    if math.isnan(value):
        raise InputError(f"{where}: {what} is NaN.")
    return value


def read_trec_run(path) -> dict:
    """Read a TREC run file into ``{qid: {docid: score}}`` (line order kept).

    The rank column and fields after the sixth are ignored, as trec_eval does;
    scores decide the order.
    """
    return _read_trec(path, kind="run")


def read_trec_qrels(path) -> dict:
    """Read a TREC qrels file into ``{qid: {docid: relevance}}``."""
    return _read_trec(path, kind="qrels")


def _read_trec(path, kind: str) -> dict:
    layout, n_cols = _RUN_COLUMNS if kind == "run" else _QRELS_COLUMNS
    other_layout, other_cols = _QRELS_COLUMNS if kind == "run" else _RUN_COLUMNS
    other_kind = "qrels" if kind == "run" else "run"
    out: dict = {}
    try:
        handle = open(path, encoding="utf-8")
    except OSError as exc:
        raise InputError(f"Cannot read {kind} file {str(path)!r}: {exc.strerror}.") from None
    with handle:
        for line_no, line in enumerate(handle, 1):
            cols = line.split()
            if not cols:
                continue
            where = f"{path}:{line_no}"
            if len(cols) != n_cols and not (kind == "run" and len(cols) > n_cols):  # trec_eval ignores trailing run fields
                hint = ""
                if len(cols) == other_cols:
                    hint = f" It looks like a {other_kind} line ({other_layout}): was a {other_kind} file given as the {kind}?"
                raise InputError(f"{where}: a TREC {kind} line has {n_cols} columns ({layout}), "
                                 f"this one has {len(cols)}: {line.strip()!r}.{hint}")
            qid, docid = cols[0], cols[2]
            value = _number(cols[4] if kind == "run" else cols[3], "score" if kind == "run" else "relevance", where)
            docs = out.get(qid)
            if docs is None:
                docs = out[qid] = {}
            if docid in docs:
                raise InputError(f"{where}: document {docid!r} appears twice for query {qid!r}.")
            docs[docid] = value if kind == "run" else _as_grade(value)
    if not out:
        raise InputError(f"{kind} file {str(path)!r} holds no {kind} lines.")
    return out


def _as_grade(value: float):
    return int(value) if float(value).is_integer() else value


def _from_dataframe(df: pd.DataFrame, kind: str) -> dict:
    value_names = ("score",) if kind == "run" else ("score", "relevance", "rel")
    q_col = next((c for c in ("q_id", "query_id", "qid") if c in df.columns), None)
    d_col = next((c for c in ("doc_id", "docid", "docno") if c in df.columns), None)
    v_col = next((c for c in value_names if c in df.columns), None)
    if q_col is None or d_col is None or v_col is None:
        raise InputError(f"A {kind} DataFrame needs columns q_id, doc_id and {'/'.join(value_names)} "
                         f"(ranx's names; query_id works too); it has {list(df.columns)}.")
    out: dict = {}
    for row, (qid, docid, value) in enumerate(zip(df[q_col].tolist(), df[d_col].tolist(), df[v_col].tolist())):
        docs = out.setdefault(qid, {})
        if docid in docs:
            raise InputError(f"{kind} DataFrame row {row}: document {docid!r} appears twice for query {qid!r}.")
        docs[docid] = value
    return out


def _from_file(path: Path, kind: str) -> dict:
    suffix = path.suffix.lower()
    if suffix == ".json":
        try:
            with open(path, encoding="utf-8") as handle:
                data = json.load(handle)
        except (OSError, ValueError) as exc:
            raise InputError(f"Cannot read {kind} JSON file {str(path)!r}: {exc}.") from None
        if not isinstance(data, dict):
            raise InputError(f"{kind} JSON file {str(path)!r} must hold an object {{qid: {{docid: value}}}}.")
        return data
    if suffix in (".parquet", ".parq"):
        return _from_dataframe(pd.read_parquet(path), kind)
    return _read_trec(path, kind)


def load_qrels(qrels):
    """Qrels as a ranx ``Qrels`` (kept as is) or a ``{qid: {docid: grade}}`` dict."""
    return _load(qrels, "qrels", RanxQrels)


def load_run(run):
    """A run as a ranx ``Run`` (kept as is) or a ``{qid: {docid: score}}`` dict."""
    return _load(run, "run", RanxRun)


def _load(obj, kind: str, ranx_type):
    if isinstance(obj, ranx_type):
        return obj
    if isinstance(obj, dict):
        for qid, docs in obj.items():
            if not isinstance(docs, dict):
                raise InputError(f"{kind} query {qid!r}: expected a dict {{docid: value}}, got {type(docs).__name__}.")
        return obj
    if isinstance(obj, (str, os.PathLike)):
        path = Path(obj)
        if not path.is_file():
            raise InputError(f"{kind} file {str(path)!r} does not exist.")
        return _from_file(path, kind)
    if isinstance(obj, pd.DataFrame):
        return _from_dataframe(obj, kind)
    raise InputError(f"Cannot read {kind} of type {type(obj).__name__}: give a ranx {ranx_type.__name__}, "
                     f"a dict {{qid: {{docid: value}}}}, a TREC file path or a pandas DataFrame.")
