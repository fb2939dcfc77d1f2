"""Qrels and runs in the forms users have them, read without converting by hand.

Accepted for both: ranx ``Qrels``/``Run``; pytrec_eval-style dicts
``{qid: {docid: relevance}}`` / ``{qid: {docid: score}}``; a path (``str`` or
``Path``) to a TREC file (qrels ``qid iter docid rel``, run ``qid Q0 docid rank
score tag``), a ranx-style ``.json`` file, a ``.parquet`` file or a ranx ``.lz4``
file; a pandas DataFrame with ranx's column names (``q_id``, ``doc_id``,
``score``), ir_measures' (``query_id``, ``doc_id``, ``relevance``/``score``) or
PyTerrier's (``qid``, ``docno``, ``label``/``score``); ir_measures / ir_datasets
records (a list, iterator or generator of ``Qrel``/``TrecQrel`` with ``query_id,
doc_id, relevance`` or ``ScoredDoc`` with ``query_id, doc_id, score``, recognised
by those names and read once). MTEB predictions files: `load_mteb_predictions`.

Files may be gzip, bzip2 or xz compressed (recognised by their first bytes,
whatever their name) and may start with a UTF-8 byte-order mark. TREC files
follow trec_eval: blank lines and ``#`` comment lines are skipped, fields after
the sixth of a run line are ignored, and grades are integers (a fractional or
exponent-written grade, which trec_eval's ``atol`` would silently truncate, is
an error here). Scores must be numbers as C's ``atof`` reads them the same way
(no ``0_4``, no non-ASCII digits); ``inf``/``-inf`` are ordinary scores.

Ids are strings, as trec_eval reads them; one rule for every container
(`id_string`): integer query or document ids in dicts, records and DataFrames
(numpy, nullable and categorical columns alike) are converted with ``str`` (a
run keyed by ``1`` matches qrels keyed by ``"1"``); float (even ``1.0``), bool
and missing ids are errors naming the container, query and document, so the
same data gives the same number whatever container it came in. (ranx objects
hold string ids only.) Values follow one rule too: scores and grades are numbers,
bools being 0 and 1 as Python and numpy read them; None and NaN are errors.

ranx is imported only when a ranx object is passed (it is recognised through
``sys.modules``, so reading a dict never imports ranx).

Also the text files HPS scores (`read_texts`: BEIR JSONL, MS MARCO TSV, JSON) and the
one writer, `write_trec_run` (trec_eval's order, scores that round-trip exactly).

Nothing here modifies the caller's objects. Errors name the file and line, query or
document at fault.
"""
from __future__ import annotations

import bz2
import gzip
import io
import json
import lzma
import math
import os
import sys
from collections.abc import Iterable, Mapping
from operator import attrgetter
from pathlib import Path
from typing import IO, Union

from .errors import InputError, MissingFileError

#: Anything `load_qrels` accepts: a ranx ``Qrels``, ``{qid: {docid: grade}}``, a path, a DataFrame, records.
QrelsLike = Union["ranx.Qrels", Mapping, str, os.PathLike, "pd.DataFrame", Iterable]  # noqa: F821
#: Anything `load_run` accepts: a ranx ``Run``, ``{qid: {docid: score}}``, a path, a DataFrame, records.
RunLike = Union["ranx.Run", Mapping, str, os.PathLike, "pd.DataFrame", Iterable]  # noqa: F821

_RUN_COLUMNS = ("qid Q0 docid rank score tag", 6)
_EXPECTED = {"run": "a run is {query_id: {doc_id: score}} with numbers as scores",
             "qrels": "qrels are {query_id: {doc_id: relevance}} with numbers as grades"}
#: The key that marks an MTEB predictions file (see `load_mteb_predictions`).
MTEB_META = "mteb_model_meta"
_QRELS_COLUMNS = ("qid iter docid rel", 4)
_MAGIC = ((b"\x1f\x8b", gzip.open, "gzip"), (b"BZh", bz2.open, "bzip2"), (b"\xfd7zXZ\x00", lzma.open, "xz"))
_DECOMPRESSION_ERRORS = (OSError, EOFError, lzma.LZMAError, ValueError)


# ------------------------------------------------------------------- ranx
def is_ranx_qrels(obj) -> bool:
    """True for a ranx ``Qrels``, without importing ranx when nobody has."""
    ranx = sys.modules.get("ranx")
    return ranx is not None and isinstance(obj, ranx.Qrels)


def is_ranx_run(obj) -> bool:
    """True for a ranx ``Run``, without importing ranx when nobody has."""
    ranx = sys.modules.get("ranx")
    return ranx is not None and isinstance(obj, ranx.Run)


def _is_dataframe(obj) -> bool:
    pd = sys.modules.get("pandas")
    return pd is not None and isinstance(obj, pd.DataFrame)


# ------------------------------------------------------------- raw files
def _checked_path(path, kind: str) -> Path:
    path = Path(path)
    if path.is_dir():
        raise MissingFileError(f"{kind} path {str(path)!r} is a directory, not a file.")
    if not path.exists():
        raise MissingFileError(f"{kind} file {str(path)!r} does not exist.")
    return path


def _open_binary(path: Path, kind: str) -> IO[bytes]:
    """The file's bytes, decompressed when its first bytes say gzip, bzip2 or xz."""
    try:
        with open(path, "rb") as probe:
            head = probe.read(6)
        for magic, opener, _ in _MAGIC:
            if head.startswith(magic):
                return opener(path, "rb")
        return open(path, "rb")
    except OSError as exc:
        raise InputError(f"Cannot read {kind} file {str(path)!r}: {exc.strerror or exc}.") from None


def _compression(path: Path) -> str:
    with open(path, "rb") as probe:
        head = probe.read(6)
    return next((name for magic, _, name in _MAGIC if head.startswith(magic)), "")


def _decode(raw: bytes, path: Path, line_no: int, kind: str) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}:{line_no}: {kind} file is not valid UTF-8 (byte 0x{raw[exc.start]:02x} at "
                         f"column {exc.start + 1}).") from None


def iter_lines(path, kind: str = "text"):
    """``(line number, line)`` of a UTF-8 text file, plain or compressed; a leading
    byte-order mark is dropped. Undecodable bytes and broken archives raise an
    `InputError` naming the file (and the line)."""
    path = _checked_path(path, kind)
    line_no = 0
    with _open_binary(path, kind) as handle:
        try:
            for line_no, raw in enumerate(handle, 1):
                text = _decode(raw, path, line_no, kind)
                if line_no == 1 and text.startswith("\ufeff"):
                    text = text[1:]
                yield line_no, text
        except _DECOMPRESSION_ERRORS as exc:
            if isinstance(exc, InputError):
                raise
            raise InputError(f"{path}: cannot decompress the {kind} file ({_compression(path) or 'plain'} data) "
                             f"after line {line_no}: {exc}.") from None


def read_text(path, kind: str = "text") -> str:
    """The whole decoded text of a plain or compressed UTF-8 file (see `iter_lines`)."""
    return "".join(line for _, line in iter_lines(path, kind))


def open_text(path, kind: str = "text") -> io.StringIO:
    """A text handle on a plain or compressed UTF-8 file (see `iter_lines`)."""
    return io.StringIO(read_text(path, kind))


def file_stem(path) -> str:
    """A file's name without its compression suffix and its format suffix (``bf16.trec.gz`` -> ``bf16``)."""
    path = Path(path)
    if path.suffix.lower() in (".gz", ".bz2", ".xz"):
        path = path.with_suffix("")
    return path.stem


# ------------------------------------------------------------ TREC files
# ------------------------------------------------------------ texts and runs written
def read_texts(path, with_title: bool = False) -> dict:
    """``{id: text}`` from a JSONL file (BEIR: ``_id``/``id``, ``text``, optional ``title``), a TSV file
    (``id<TAB>text``, MS MARCO style) or a JSON object ``{id: text}``, plain or gzip/bzip2/xz compressed
    (``corpus.jsonl.gz``: the format is the suffix before the compression suffix). An empty text falls
    back to the title; ``with_title`` puts the title first."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"Text file {str(path)!r} does not exist.")
    suffixes = [s.lower() for s in path.suffixes]
    while suffixes and suffixes[-1] in (".gz", ".bz2", ".xz"):
        suffixes.pop()
    suffix = suffixes[-1] if suffixes else ""
    if suffix == ".json":
        try:
            with open_text(path, "text") as handle:
                data = json.load(handle)
        except ValueError as exc:
            if isinstance(exc, InputError):
                raise
            raise InputError(f"{path}: not valid JSON ({exc}).") from None
        if not isinstance(data, dict):
            raise InputError(f"{path}: a .json text file holds one object {{id: text}}.")
        return {str(k): str(v) for k, v in data.items()}
    texts = {}
    jsonl = suffix == ".jsonl"
    with open_text(path, "text") as handle:
        for line_no, line in enumerate(handle, 1):
            if not line.strip():
                continue
            where = f"{path}:{line_no}"
            if jsonl:
                try:
                    record = json.loads(line)
                except ValueError:
                    raise InputError(f"{where}: not a JSON object.") from None
                key = next((k for k in ("_id", "id", "docid", "qid") if k in record), None)
                if key is None or "text" not in record and "title" not in record:
                    raise InputError(f"{where}: a JSONL record needs an id (_id or id) and a text.")
                title, text = record.get("title") or "", record.get("text") or ""
                texts[str(record[key])] = f"{title} {text}".strip() if with_title else (text or title)
            else:
                doc_id, tab, text = line.rstrip("\n").partition("\t")
                if not tab:
                    raise InputError(f"{where}: a TSV text line is id<TAB>text.")
                texts[doc_id] = text
    return texts


def write_trec_run(run: dict, name: str, handle) -> int:
    """Write ``{qid: {docid: score}}`` as a TREC run in trec_eval's order (score desc, doc id desc) with
    scores as ``repr(float)``, which round-trips every float exactly; returns the number of lines."""
    lines = 0
    for qid, docs in run.items():
        ranked = sorted(docs.items(), key=lambda item: (item[1], item[0]), reverse=True)
        for rank, (docid, score) in enumerate(ranked, 1):
            handle.write(f"{qid} Q0 {docid} {rank} {float(score)!r} {name}\n")
        lines += len(ranked)
    return lines


def _has_foreign_characters(text: str) -> bool:
    """Python's ``float``/``int`` accept ``_`` separators and non-ASCII digits; C's atof/atol do not."""
    return "_" in text or not text.isascii()


def _score(text: str, where: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = None
    if value is None or _has_foreign_characters(text):
        raise InputError(f"{where}: score {text!r} is not a number.")
    if math.isnan(value):
        raise InputError(f"{where}: score is NaN.")
    return value


def _grade(text: str, where: str) -> int:
    """A TREC qrels grade: an integer (``2`` or ``2.0``), as trec_eval's ``atol`` reads it."""
    if not _has_foreign_characters(text):
        try:
            return int(text)
        except ValueError:
            pass
        head, dot, tail = text.partition(".")
        if dot and tail.strip("0") == "" and head.lstrip("+-").isdigit():
            return int(head)
    try:
        value = float(text)
    except ValueError:
        value = None
    if value is not None and not _has_foreign_characters(text) and math.isfinite(value):
        raise InputError(f"{where}: relevance {text!r} is not an integer. TREC qrels grades are integers "
                         f"(trec_eval would silently read it as {_atol(text)}); give a dict or DataFrame "
                         "for fractional gains.")
    raise InputError(f"{where}: relevance {text!r} is not an integer grade.")


def _atol(text: str) -> int:
    digits = ""
    for ch in text.lstrip("+-"):
        if not ch.isdigit():
            break
        digits += ch
    return int(text[0] + digits) if digits and text[0] in "+-" else int(digits or 0)


def read_trec_run(path) -> dict:
    """Read a TREC run file (plain or compressed) into ``{qid: {docid: score}}``, line order kept.

    The rank column and fields after the sixth are ignored, as trec_eval does;
    scores decide the order.
    """
    return _read_trec(path, kind="run")


def read_trec_qrels(path) -> dict:
    """Read a TREC qrels file (plain or compressed) into ``{qid: {docid: grade}}``; grades are integers."""
    return _read_trec(path, kind="qrels")


def _read_trec(path, kind: str) -> dict:
    layout, n_cols = _RUN_COLUMNS if kind == "run" else _QRELS_COLUMNS
    out: dict = {}
    for line_no, line in iter_lines(path, kind):
        cols = line.split()
        if not cols or cols[0].startswith("#"):
            continue
        where = f"{path}:{line_no}"
        if len(cols) != n_cols and not (kind == "run" and len(cols) > n_cols):  # trec_eval ignores trailing run fields
            raise InputError(f"{where}: a TREC {kind} line has {n_cols} columns ({layout}), this one has "
                             f"{len(cols)}: {line.strip()!r}.{_layout_hint(kind, len(cols))}")
        value = _score(cols[4], where) if kind == "run" else _grade(cols[3], where)
        put_value(out, cols[0], cols[2], value, where)
    if not out:
        raise InputError(f"{kind} file {str(path)!r} holds no {kind} lines.")
    return out


def put_value(table: dict, qid: str, docid: str, value, where: str) -> None:
    """``table[qid][docid] = value``; a document given twice for one query is an error naming ``where``."""
    docs = table.get(qid)
    if docs is None:
        docs = table[qid] = {}
    if docid in docs:
        raise InputError(f"{where}: document {docid!r} appears twice for query {qid!r}.")
    docs[docid] = value


def _layout_hint(kind: str, n_cols: int) -> str:
    if kind == "run" and n_cols == 4:
        return (" It looks like a qrels line (qid iter docid rel), or a run without the Q0 and tag columns "
                "(qid docid rank score): was a qrels file given as the run? Write runs as 'qid Q0 docid rank "
                "score tag'.")
    if kind == "qrels" and n_cols >= 6:
        return " It looks like a run line (qid Q0 docid rank score tag): was a run file given as the qrels?"
    return ""


# ------------------------------------------------------ other containers
_RECORD_VALUE = {"qrels": "relevance", "run": "score"}


def _is_records(obj) -> bool:
    """An iterable that is not a mapping, a path or text: a list, iterator or generator of records."""
    return isinstance(obj, Iterable) and not isinstance(obj, (Mapping, str, bytes, os.PathLike))


def _from_records(records, kind: str) -> dict:
    """``{qid: {docid: value}}`` from ir_measures/ir_datasets records, read once (a generator
    works): ``Qrel``/``TrecQrel`` (``query_id, doc_id, relevance``) for qrels, ``ScoredDoc``
    (``query_id, doc_id, score``) for runs, recognised by those attribute names. Integer ids
    become strings; a document twice for a query is an error naming the record."""
    value_field = _RECORD_VALUE[kind]
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
    value_field = _RECORD_VALUE[kind]
    other = "run" if kind == "qrels" else "qrels"
    has = list(getattr(record, "_fields", ())) or [n for n in ("query_id", "doc_id", "relevance", "score")
                                                   if hasattr(record, n)]
    hint = ""
    if hasattr(record, "query_id") and hasattr(record, "doc_id") and hasattr(record, _RECORD_VALUE[other]):
        hint = f" It has {_RECORD_VALUE[other]!r}: were {other} records given as the {kind}?"
    return (f"{kind} record {index} is a {type(record).__name__} {record!r}: {kind} records need the attributes "
            f"query_id, doc_id and {value_field} (ir_measures' {'Qrel' if kind == 'qrels' else 'ScoredDoc'}, "
            f"ir_datasets' {'TrecQrel' if kind == 'qrels' else 'GenericScoredDoc'}){f'; it has {has}' if has else ''}."
            + hint)


def _from_dataframe(df, kind: str) -> dict:
    value_names = ("score",) if kind == "run" else ("relevance", "label", "rel", "score")
    q_col = next((c for c in ("q_id", "query_id", "qid") if c in df.columns), None)
    # docno before docid: PyTerrier results carry both, docid being Terrier's internal number
    d_col = next((c for c in ("doc_id", "docno", "docid") if c in df.columns), None)
    v_col = next((c for c in value_names if c in df.columns), None)
    if q_col is None or d_col is None or v_col is None:
        raise InputError(f"A {kind} DataFrame needs a query column (q_id, query_id or qid), a document column "
                         f"(doc_id, docno or docid) and a value column ({', '.join(value_names)}); "
                         f"it has {list(df.columns)}.")
    out: dict = {}
    qids = _id_column(df, q_col, f"{kind} DataFrame", "query")
    docids = _id_column(df, d_col, f"{kind} DataFrame", "document")
    for row, (qid, docid, value) in enumerate(zip(qids, docids, df[v_col].tolist())):
        put_value(out, qid, docid, value, f"{kind} DataFrame row {row}")
    return out


def _id_column(df, col: str, what: str, role: str) -> list:
    """The ids of DataFrame column `col` as strings, by `id_string`'s rule whatever the dtype: numpy
    and nullable integers as ``str(int)``, strings as they are, categoricals by their categories; a
    float, bool or missing id is an error naming the column and row."""
    import pandas as pd

    series = df[col]
    dtype = series.dtype
    where = f"{what} column {col!r}"
    if isinstance(dtype, pd.CategoricalDtype):
        categories = _id_column(pd.DataFrame({col: dtype.categories}), col, where + " (its categories)", role)
        codes = series.cat.codes.to_numpy()
        if (codes < 0).any():
            row = int((codes < 0).argmax())
            raise InputError(f"{where}, row {row}: the {role} id is missing (NaN); ids are strings or integers.")
        return [categories[c] for c in codes.tolist()]
    if dtype.kind in "iu":  # numpy or nullable integers: C-level conversion, after naming a missing one
        missing = series.isna().to_numpy()
        if missing.any():
            row = int(missing.argmax())
            raise InputError(f"{where}, row {row}: the {role} id is missing ({series.iloc[row]!r}); ids are "
                             "strings or integers.")
        return series.astype("int64" if dtype.kind == "i" else "uint64").astype(str).tolist()
    if dtype.kind in "fcb":
        why = "" if dtype.kind == "b" else " (a float id 1.0 would read as '1.0' and match no '1')"
        raise InputError(f"{where} holds {dtype} {role} ids; ids are strings or integers{why}. Convert the "
                         f"column first: df[{col!r}].astype(int) or .astype(str).")
    ids = series.tolist()
    if _all_strings(ids):
        return ids
    return [doc if type(doc) is str else id_string(doc, f"{where}, row {row}: {role}")
            for row, doc in enumerate(ids)]


def _from_json(path: Path, kind: str) -> dict:
    try:
        data = json.loads(read_text(path, kind))
    except ValueError as exc:
        raise InputError(f"Cannot read {kind} JSON file {str(path)!r}: {exc}.") from None
    what = f"{kind} JSON file {str(path)!r}"
    return _checked_numbers(_checked_mapping(data, kind, what), kind, what)


def _checked_numbers(table: dict, kind: str, what: str) -> dict:
    """``table`` itself when every value is a JSON number, else an error naming the first that is not."""
    for qid, docs in table.items():
        for docid, value in docs.items():
            if type(value) not in (int, float, bool):  # JSON's numbers; true and false are 1 and 0
                raise InputError(f"{what}: query {qid!r}, document {docid!r} maps to {value!r} "
                                 f"({type(value).__name__}); {_EXPECTED[kind]}.")
    return table


def _from_lz4(path: Path, kind: str) -> dict:
    try:
        from ranx.io import load_lz4
    except ImportError:  # pragma: no cover - ranx is a dependency
        raise InputError(f"{path}: reading .lz4 files needs ranx (pip install ranx).") from None
    try:
        data = load_lz4(str(path))
    except Exception as exc:  # lz4/orjson raise their own types
        raise InputError(f"Cannot read {kind} LZ4 file {str(path)!r}: {exc}.") from None
    return _checked_mapping(data, kind, f"{kind} LZ4 file {str(path)!r}")


def _from_file(path: Path, kind: str) -> dict:
    suffixes = [s.lower() for s in path.suffixes]
    while suffixes and suffixes[-1] in (".gz", ".bz2", ".xz"):
        suffixes.pop()
    suffix = suffixes[-1] if suffixes else ""
    if suffix == ".json":
        return _from_json(path, kind)
    if suffix == ".lz4":
        return _from_lz4(path, kind)
    if suffix in (".parquet", ".parq"):
        import pandas as pd

        return _from_dataframe(pd.read_parquet(path), kind)
    return _read_trec(path, kind)


def _checked_mapping(obj, kind: str, what: str, doc_ids: bool = True) -> dict:
    """``{qid: {docid: value}}`` with string ids; anything else is named. ``doc_ids=False`` leaves
    the inner dicts' keys to the caller (`string_keys`), which reads them anyway."""
    if not isinstance(obj, Mapping):
        raise InputError(f"{what} is a {type(obj).__name__}; {_EXPECTED[kind]}.")
    if MTEB_META in obj:
        raise InputError(f"{what} holds MTEB predictions ({MTEB_META!r}, then subset and split levels: "
                         f"{_mteb_choices(obj)}); read the run with tieaware.inputs.load_mteb_predictions(path, "
                         "subset=..., split=...).")
    out = {}
    for qid, docs in obj.items():
        if not isinstance(docs, Mapping):
            raise InputError(f"{what}: query {qid!r} maps to {type(docs).__name__}; {_EXPECTED[kind]}.")
        key = qid if type(qid) is str else id_string(qid, f"{what}: query")
        if key in out:
            raise InputError(f"{what}: query id {qid!r} appears twice once ids are read as strings.")
        out[key] = string_keys(docs, what, key) if doc_ids or type(docs) is not dict else docs
    return out


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


def _all_strings(keys) -> bool:
    """True when every key is a ``str``: ``str.join`` stops at the first that is not, in C
    (about 15 ns an id, a tenth of a Python loop's cost)."""
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
    if isinstance(docs, dict) and _all_strings(docs):
        return docs
    out = {}
    for doc, value in docs.items():
        key = doc if type(doc) is str else id_string(doc, f"{what}, query {qid!r}: document")
        if key in out:
            raise InputError(f"{what}, query {qid!r}: document id {doc!r} appears twice once ids are read "
                             "as strings.")
        out[key] = value
    return out


# ------------------------------------------------------------------ MTEB
def load_mteb_predictions(predictions, subset: str | None = None, split: str | None = None) -> dict:
    """The run ``{query_id: {doc_id: score}}`` of one subset and split of MTEB retrieval predictions.

    ``mteb.evaluate(..., prediction_folder=...)`` writes ``{Task}_predictions.json`` as
    ``{"mteb_model_meta": {...}, subset: {split: {query_id: {doc_id: score}}}}``; give its path
    (plain or compressed) or the parsed dict. ``subset`` and ``split`` default to the only
    one there is; with several, an error lists them. MTEB keeps each query's ``top_k``
    documents with ``torch.topk``, which cuts through tie groups: save predictions with a
    ``top_k`` deeper than the deepest cutoff evaluated (docs/ecosystem.md).
    """
    if isinstance(predictions, (str, os.PathLike)):
        path = _checked_path(predictions, "MTEB predictions")
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
    subset = _mteb_pick(subsets, subset, "subset", what)
    splits = subsets[subset]
    if not isinstance(splits, Mapping):
        raise InputError(f"{what}: subset {subset!r} maps to {type(splits).__name__}, expected {{split: run}}.")
    split = _mteb_pick(splits, split, "split", f"{what} subset {subset!r}")
    where = f"{what} [{subset!r}][{split!r}]"
    return _checked_numbers(_checked_mapping(splits[split], "run", where), "run", where)


def _mteb_pick(choices: Mapping, chosen, level: str, what: str):
    if chosen is None:
        if len(choices) == 1:
            return next(iter(choices))
        raise InputError(f"{what} holds {len(choices)} {level}s {sorted(map(str, choices))}: choose one with "
                         f"{level}=...")
    if chosen not in choices:
        raise InputError(f"{what} has no {level} {chosen!r}; it has {sorted(map(str, choices))}.")
    return chosen


def _mteb_choices(predictions: Mapping) -> str:
    """``'default': ['dev', 'test']`` for each subset of MTEB predictions."""
    return "; ".join(f"{subset!r}: {sorted(map(str, splits)) if isinstance(splits, Mapping) else '?'}"
                     for subset, splits in predictions.items() if subset != MTEB_META)


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
        return _checked_mapping(obj, kind, f"{kind} dict", doc_ids)
    if isinstance(obj, (str, os.PathLike)):
        return _from_file(_checked_path(obj, kind), kind)
    if _is_dataframe(obj):
        return _from_dataframe(obj, kind)
    if _is_records(obj):
        return _from_records(obj, kind)
    ranx_type = "Run" if kind == "run" else "Qrels"
    raise InputError(f"Cannot read {kind} of type {type(obj).__name__}: give a ranx {ranx_type}, "
                     f"a dict {{qid: {{docid: value}}}}, a TREC file path, a pandas DataFrame or "
                     f"ir_measures/ir_datasets records (query_id, doc_id, {_RECORD_VALUE[kind]}).")


__all__ = ["QrelsLike", "RunLike", "file_stem", "iter_lines", "load_mteb_predictions", "load_qrels", "load_run",
           "open_text", "read_text",
           "read_trec_qrels", "read_trec_run", "is_ranx_qrels", "is_ranx_run"]
