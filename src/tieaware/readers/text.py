"""UTF-8 text files, plain or gzip/bzip2/xz compressed (recognised by their first bytes): their lines,
their whole text, and the ``{id: text}`` files HPS scores (`read_texts`).

A leading byte-order mark is dropped; a file is read once, so a FIFO or ``-`` (standard input) works
as a path. Undecodable bytes and broken archives are errors naming the file and line.
"""
from __future__ import annotations

import io
import json
from pathlib import Path

from ..errors import InputError
from .raw_files import DECOMPRESSION_ERRORS, checked_path, open_binary


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
    path = checked_path(path, kind)
    line_no = 0
    with open_binary(path, kind) as (handle, compression):
        try:
            for line_no, raw in enumerate(handle, 1):
                text = _decode(raw, path, line_no, kind)
                if line_no == 1 and text.startswith("\ufeff"):
                    text = text[1:]
                yield line_no, text
        except DECOMPRESSION_ERRORS as exc:
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


def format_suffix(path) -> str:
    """A file's format suffix, lowercase: the last before any compression suffix (``a.JSONL.gz`` -> ``.jsonl``)."""
    suffixes = [s.lower() for s in Path(path).suffixes]
    while suffixes and suffixes[-1] in (".gz", ".bz2", ".xz"):
        suffixes.pop()
    return suffixes[-1] if suffixes else ""


def read_texts(path, with_title: bool = False) -> dict:
    """``{id: text}`` from a JSONL file (BEIR: ``_id``/``id``, ``text``, optional ``title``), a TSV file
    (``id<TAB>text``, MS MARCO style) or a JSON object ``{id: text}``, plain or gzip/bzip2/xz compressed
    (``corpus.jsonl.gz``: the format is the suffix before the compression suffix). An empty text falls
    back to the title; ``with_title`` puts the title first."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"Text file {str(path)!r} does not exist.")
    suffix = format_suffix(path)
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
