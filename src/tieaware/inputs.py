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
Runs also as sentence-transformers' ``write_predictions`` ``.jsonl`` and as
``qid<TAB>docid<TAB>score`` lines (`read_tsv_run`: a first line of three
tab-separated fields; a TREC run line has six columns). An open file or
``io.StringIO`` is read where a path is (`_from_file_object`).

Files may be gzip, bzip2 or xz compressed (recognised by their first bytes,
whatever their name) and may start with a UTF-8 byte-order mark; they are read
once, so a FIFO, process substitution or ``-`` (standard input) works as a path.
TREC files are read by `tieaware.trec_files` and follow trec_eval: columns are
split on ASCII whitespace, blank lines and ``#`` comment lines are skipped,
fields after the sixth of a run line are ignored, and grades are integers (a fractional or
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

import io
import json
import math
import os
import sys
from collections.abc import Iterable, Mapping
from operator import attrgetter
from pathlib import Path
from typing import TYPE_CHECKING, Union

from .errors import InputError
from .raw_files import DECOMPRESSION_ERRORS as _DECOMPRESSION_ERRORS
from .raw_files import STDIN as _STDIN
from .raw_files import checked_path as _checked_path
from .raw_files import open_binary as _open_binary

if TYPE_CHECKING:
    import pandas as pd
    import ranx

#: Anything `load_qrels` accepts: a ranx ``Qrels``, ``{qid: {docid: grade}}``, a path, a DataFrame, records.
QrelsLike = Union["ranx.Qrels", Mapping, str, os.PathLike, "pd.DataFrame", Iterable]
#: Anything `load_run` accepts: a ranx ``Run``, ``{qid: {docid: score}}``, a path, a DataFrame, records.
RunLike = Union["ranx.Run", Mapping, str, os.PathLike, "pd.DataFrame", Iterable]

_EXPECTED = {"run": "a run is {query_id: {doc_id: score}} with numbers as scores",
             "qrels": "qrels are {query_id: {doc_id: relevance}} with numbers as grades"}
#: The key that marks an MTEB predictions file (see `load_mteb_predictions`).
MTEB_META = "mteb_model_meta"


# ------------------------------------------------------------------- ranx
def is_ranx_qrels(obj) -> bool:
    """True for a ranx ``Qrels``, without importing ranx when nobody has."""
    ranx = sys.modules.get("ranx")
    return ranx is not None and isinstance(obj, ranx.Qrels)


def is_ranx_run(obj) -> bool:
    """True for a ranx ``Run``, without importing ranx when nobody has."""
    ranx = sys.modules.get("ranx")
    return ranx is not None and isinstance(obj, ranx.Run)


def is_dataframe(obj) -> bool:
    pd = sys.modules.get("pandas")
    return pd is not None and isinstance(obj, pd.DataFrame)


# ------------------------------------------------------------- raw files
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
    with _open_binary(path, kind) as (handle, compression):
        try:
            for line_no, raw in enumerate(handle, 1):
                text = _decode(raw, path, line_no, kind)
                if line_no == 1 and text.startswith("\ufeff"):
                    text = text[1:]
                yield line_no, text
        except _DECOMPRESSION_ERRORS as exc:
            if isinstance(exc, InputError):
                raise
            raise InputError(f"{path}: cannot decompress the {kind} file ({compression or 'plain'} data) "
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


def read_trec_run(path) -> dict:
    """Read a TREC run file (plain or compressed) into ``{qid: {docid: score}}``, line order kept.

    The rank column and fields after the sixth are ignored, as trec_eval does;
    scores decide the order.

    Args:
        path: a ``qid Q0 docid rank score tag`` file, plain or gzip/bzip2/xz-compressed.

    Returns:
        ``{qid: {docid: score}}`` with float scores.

    Raises:
        InputError: a malformed line, named by file and line number (a missing file is a
            `MissingFileError`, also a `FileNotFoundError`).

    Examples:
        >>> import tieaware
        >>> with open("run.txt", "w") as f:
        ...     print("q1 Q0 d1 1 0.5 bm25", file=f)
        ...     print("q1 Q0 d2 2 0.5 bm25", file=f)
        >>> tieaware.read_trec_run("run.txt")
        {'q1': {'d1': 0.5, 'd2': 0.5}}
    """
    return _read_trec(path, kind="run")


def read_trec_qrels(path) -> dict:
    """Read a TREC qrels file (plain or compressed) into ``{qid: {docid: grade}}``; grades are integers.

    Args:
        path: a ``qid iter docid grade`` file, plain or gzip/bzip2/xz-compressed.

    Returns:
        ``{qid: {docid: grade}}`` with integer grades.

    Raises:
        InputError: a malformed line or a fractional grade, named by file and line number (a
            missing file is a `MissingFileError`, also a `FileNotFoundError`).

    Examples:
        >>> import tieaware
        >>> with open("qrels.txt", "w") as f:
        ...     print("q1 0 d1 1", file=f)
        ...     print("q1 0 d2 0", file=f)
        >>> tieaware.read_trec_qrels("qrels.txt")
        {'q1': {'d1': 1, 'd2': 0}}
    """
    return _read_trec(path, kind="qrels")


def _read_trec(path, kind: str) -> dict:
    from .trec_files import read_trec  # numpy and the compiled scan, imported when a TREC file is read

    return read_trec(path, kind)[0]


def put_value(table: dict, qid: str, docid: str, value, where: str) -> None:
    """``table[qid][docid] = value``; a document given twice for one query is an error naming ``where``."""
    docs = table.get(qid)
    if docs is None:
        docs = table[qid] = {}
    if docid in docs:
        raise InputError(f"{where}: document {docid!r} appears twice for query {qid!r}.")
    docs[docid] = value


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
    elif type(record).__module__.split(".")[0] in ("torch", "numpy"):
        hint = " Flat (indexes, preds, target) arrays or tensors go to tieaware.evaluate_arrays."
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


def file_format(path) -> str:
    """How a qrels or run path is read, by its suffix before any compression suffix: "json", "jsonl",
    "lz4", "parquet", else "tsv" for a regular file whose first line is three tab-separated fields, else
    "trec"."""
    suffixes = [s.lower() for s in Path(path).suffixes]
    while suffixes and suffixes[-1] in (".gz", ".bz2", ".xz"):
        suffixes.pop()
    suffix = suffixes[-1] if suffixes else ""
    form = {".json": "json", ".jsonl": "jsonl", ".lz4": "lz4", ".parquet": "parquet", ".parq": "parquet"}.get(
        suffix, "trec")
    if form == "trec" and str(path) != _STDIN and Path(path).is_file() and _first_line_fields(Path(path)) == 3:
        return "tsv"  # qid<TAB>docid<TAB>score: a TREC line has six columns (a pipe is never peeked at)
    return form


#: `file_format`'s formats as errors name them
FORMAT_NAMES = {"trec": "TREC", "tsv": "TSV qid<TAB>docid<TAB>score", "json": "JSON", "jsonl": "JSONL predictions",
                "lz4": "LZ4", "parquet": "Parquet"}


def _from_file(path: Path, kind: str) -> dict:
    form = file_format(path)
    if form == "json":
        return _from_json(path, kind)
    if form == "jsonl":
        return _from_jsonl_predictions(path, kind)
    if form == "lz4":
        return _from_lz4(path, kind)
    if form == "parquet":
        import pandas as pd

        return _from_dataframe(pd.read_parquet(path), kind)
    if form == "tsv" and kind == "run":
        return read_tsv_run(path, third_column="auto")
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


# ------------------------------------------- other run files and file objects
def _first_line_fields(path: Path) -> int | None:
    """Tab-separated fields of the first line that is not blank or a ``#`` comment, when it holds no
    other whitespace inside a field; None otherwise (a TREC file: space-separated columns)."""
    for _, line in iter_lines(path, "run"):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        fields = line.rstrip("\r\n").split("\t")
        return len(fields) if len(line.split()) == len(fields) else None
    return None


#: C's isspace: what separates TREC columns, never part of an id
_ASCII_SPACE = " \t\n\r\x0b\x0c"


def read_tsv_run(path, third_column: str = "score") -> dict:
    """A run of ``qid<TAB>docid<TAB>value`` lines (MS MARCO style), plain or compressed, into
    ``{qid: {docid: score}}``.

    Args:
        path: the file.
        third_column: "score" (higher is better), "rank" (MS MARCO's ``qid pid rank``: 1 is
            best; read as score = -rank), or "auto" (what `evaluate` does for a path whose first
            line has three tab-separated fields: "score", unless every query's values are the
            integers 1, 2, ..., n in file order with some n >= 2; such a file is an error asking
            for "score" or "rank", since ranks read as scores would reverse the ranking).

    A TREC run line has six columns, so a three-field line is never read as TREC. Blank and
    ``#`` lines are skipped; any other line must hold three tab-separated fields. Spaces around
    a field are not part of it (ids hold no whitespace, as in TREC files).

    Raises:
        InputError: a line that is not three fields, a bad number (naming file:line), a document
            twice for a query, or "auto" on ranks.
    """
    from .trec_files import _score as score_text  # C's atof rules, as for TREC runs

    if third_column not in ("score", "rank", "auto"):
        raise InputError(f"third_column must be 'score', 'rank' or 'auto', got {third_column!r}.")
    path = _checked_path(path, "run")
    out: dict = {}
    ranks_so_far = third_column == "auto"
    for line_no, line in iter_lines(path, "run"):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        where = f"{path}:{line_no}"
        fields = line.rstrip("\r\n").split("\t")
        if len(fields) != 3 or len(line.split()) != 3:
            raise InputError(f"{where}: a tab-separated run line is qid<TAB>docid<TAB>score, this one is "
                             f"{line.strip()!r}.")
        qid, docid, text = (field.strip(_ASCII_SPACE) for field in fields)  # ids hold no whitespace, as in TREC
        value = score_text(text, where)
        if ranks_so_far:
            ranks_so_far = value == len(out.get(qid, ())) + 1
        put_value(out, qid, docid, -value if third_column == "rank" else value, where)
    if not out:
        raise InputError(f"run file {str(path)!r} holds no run lines.")
    if ranks_so_far and max(map(len, out.values())) >= 2:
        raise InputError(f"run file {str(path)!r}: the third column holds ranks 1, 2, ..., n for every query "
                         "(MS MARCO's qid<TAB>pid<TAB>rank), which read as scores would reverse the ranking; "
                         "read it with tieaware.inputs.read_tsv_run(path, third_column='rank') (or 'score' if "
                         "they are scores).")
    return out


def _from_jsonl_predictions(path: Path, kind: str) -> dict:
    """A run from sentence-transformers' ``write_predictions`` JSONL (``InformationRetrievalEvaluator``):
    one line per query, ``{"query_id": ..., "query": ..., "results": [{"corpus_id": ..., "score": ...}]}``."""
    if kind != "run":
        raise InputError(f"{path}: a .jsonl file is read as sentence-transformers predictions (a run), not as {kind}.")
    out: dict = {}
    for line_no, line in iter_lines(path, kind):
        if not line.strip():
            continue
        where = f"{path}:{line_no}"
        try:
            record = json.loads(line)
        except ValueError:
            raise InputError(f"{where}: not a JSON object.") from None
        results = record.get("results") if isinstance(record, dict) else None
        if "query_id" not in (record if isinstance(record, dict) else ()) or not isinstance(results, list):
            raise InputError(f"{where}: a predictions line is {{\"query_id\": ..., \"results\": [{{\"corpus_id\": "
                             "..., \"score\": ...}}, ...]}} (sentence-transformers' write_predictions).")
        qid = id_string(record["query_id"], f"run {where} query")
        if qid in out:
            raise InputError(f"{where}: query {qid!r} appears twice.")
        out[qid] = {}
        for hit in results:
            if not isinstance(hit, dict) or "corpus_id" not in hit or type(hit.get("score")) not in (int, float):
                raise InputError(f"{where}: query {qid!r}: a result is {{\"corpus_id\": ..., \"score\": number}}, "
                                 f"got {hit!r}.")
            if math.isnan(hit["score"]):
                raise InputError(f"{where}: query {qid!r}, document {hit['corpus_id']!r}: score is NaN.")
            put_value(out, qid, id_string(hit["corpus_id"], f"run {where} document"), float(hit["score"]), where)
    if not out:
        raise InputError(f"run file {str(path)!r} holds no predictions.")
    return out


def _from_file_object(handle, kind: str) -> dict:
    """Qrels or a run from an open file (text or binary, plain or compressed) or ``io.StringIO``,
    read from its position to its end, in the format its name's suffixes give (else TREC, or the
    three-column run `read_tsv_run` reads). Errors name the object instead of a file."""
    import tempfile

    data = handle.read()
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")
    if not isinstance(data, bytes):
        raise InputError(f"{kind}: {type(handle).__name__}.read() gave {type(data).__name__}, not text or bytes.")
    name = getattr(handle, "name", None)
    label = name if isinstance(name, str) else f"<{type(handle).__name__}>"
    suffix = "".join(Path(name).suffixes) if isinstance(name, str) else ""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"{kind}{suffix}"
        path.write_bytes(data)
        try:
            return _from_file(path, kind)
        except InputError as exc:
            quoted = repr(label) if isinstance(name, str) else label
            raise InputError(str(exc).replace(repr(str(path)), quoted).replace(str(path), label)) from None


# ------------------------------------------------------------------ BEIR
def without_identical_ids(run):
    """The run without documents whose id equals their query's id: BEIR's convention
    (``EvaluateRetrieval.evaluate(..., ignore_identical_ids=True)``, for corpora where a query is
    also a document). BEIR pops them from the caller's dict; here the caller's run is never
    changed: a ranx ``Run`` or dict without such documents comes back as it is, otherwise a new
    one (a ranx ``Run`` keeps its name and order, so ranx's tie order is that of the run
    with those documents popped). Ids are compared as strings (tieaware's id rule).
    """
    run = load_run(run)
    if is_ranx_run(run):
        typed = run.run
        hits = [q for q in typed.keys() if q in typed[q]]
        if not hits:
            return run
        return _ranx_run_without(run, set(hits))
    if not any(q in docs for q, docs in run.items()):
        return run
    return {q: {d: v for d, v in docs.items() if d != q} if q in docs else docs for q, docs in run.items()}


def _ranx_run_without(run, queries: set):
    """A new ranx ``Run`` sharing ``run``'s per-query tables, but for `queries`, each copied without
    the document named as the query (insertion order kept)."""
    import ranx
    from numba import types
    from numba.typed import Dict as TypedDict

    out = ranx.Run(name=run.name)
    out.sorted = run.sorted
    for q, docs in run.run.items():
        if q in queries:
            kept = TypedDict.empty(key_type=types.unicode_type, value_type=types.float64)
            for d, score in docs.items():
                if d != q:
                    kept[d] = score
            docs = kept
        out.run[q] = docs
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
    if is_dataframe(obj):
        return _from_dataframe(obj, kind)
    if isinstance(obj, io.IOBase) or hasattr(obj, "read") and hasattr(obj, "readline"):
        return _from_file_object(obj, kind)
    if _is_records(obj):
        return _from_records(obj, kind)
    ranx_type = "Run" if kind == "run" else "Qrels"
    raise InputError(f"Cannot read {kind} of type {type(obj).__name__}: give a ranx {ranx_type}, "
                     f"a dict {{qid: {{docid: value}}}}, a TREC file path, a pandas DataFrame or "
                     f"ir_measures/ir_datasets records (query_id, doc_id, {_RECORD_VALUE[kind]}).")


__all__ = ["QrelsLike", "RunLike", "file_stem", "iter_lines", "load_mteb_predictions", "load_qrels", "load_run",
           "open_text", "read_text",
           "read_trec_qrels", "read_trec_run", "read_tsv_run", "is_ranx_qrels", "is_ranx_run",
           "without_identical_ids"]
