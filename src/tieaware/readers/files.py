"""Qrels and runs in files other than TREC's: ranx's JSON and LZ4, sentence-transformers' JSONL
predictions, ``qid<TAB>docid<TAB>score`` runs, and open file objects (`spilled`).

Files may be plain or compressed (`readers.text`); errors name the file and line. TREC files are
read by `readers.trec_files`; which reader reads a path is `readers.load.file_format`'s choice.
"""
from __future__ import annotations

import json
import math
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..errors import InputError
from .ids import id_string, put_value
from .mappings import checked_mapping, checked_numbers
from .mteb import refuse_predictions
from .raw_files import checked_path
from .text import iter_lines, read_text


def from_json(path: Path, kind: str) -> dict:
    """ranx's JSON ``{qid: {docid: value}}``, values JSON numbers."""
    try:
        data = json.loads(read_text(path, kind))
    except ValueError as exc:
        raise InputError(f"Cannot read {kind} JSON file {str(path)!r}: {exc}.") from None
    what = f"{kind} JSON file {str(path)!r}"
    refuse_predictions(data, what)
    return checked_numbers(checked_mapping(data, kind, what), kind, what)


def from_lz4(path: Path, kind: str) -> dict:
    """ranx's LZ4-compressed ``{qid: {docid: value}}`` (``ranx.io.load_lz4``)."""
    try:
        from ranx.io import load_lz4
    except ImportError:  # pragma: no cover - ranx is a dependency
        raise InputError(f"{path}: reading .lz4 files needs ranx (pip install ranx).") from None
    try:
        data = load_lz4(str(path))
    except Exception as exc:  # lz4/orjson raise their own types
        raise InputError(f"Cannot read {kind} LZ4 file {str(path)!r}: {exc}.") from None
    what = f"{kind} LZ4 file {str(path)!r}"
    refuse_predictions(data, what)
    return checked_mapping(data, kind, what)


def first_line_fields(path: Path) -> int | None:
    """Tab-separated fields of the first line that is not blank or a ``#`` comment, when it holds no
    other whitespace inside a field; None otherwise (a TREC file: space-separated columns)."""
    for _, line in iter_lines(path, "run"):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        fields = line.rstrip("\r\n").split("\t")
        return len(fields) if len(line.split()) == len(fields) else None
    return None


#: C's isspace: what separates TREC columns, never part of an id
ASCII_SPACE = " \t\n\r\x0b\x0c"


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
    from .trec_files import parse_score  # C's atof rules, as for TREC runs

    if third_column not in ("score", "rank", "auto"):
        raise InputError(f"third_column must be 'score', 'rank' or 'auto', got {third_column!r}.")
    path = checked_path(path, "run")
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
        qid, docid, text = (field.strip(ASCII_SPACE) for field in fields)  # ids hold no whitespace, as in TREC
        value = parse_score(text, where)
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


def from_jsonl_predictions(path: Path, kind: str) -> dict:
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


@contextmanager
def spilled(handle, kind: str) -> Iterator[Path]:
    """The rest of an open file (text or binary, plain or compressed) or ``io.StringIO``, from its
    position to its end, as a temporary file named with the handle's name's suffixes (so it is read
    in the format they give); errors raised inside the block name the object instead of that file."""
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
            yield path
        except InputError as exc:
            quoted = repr(label) if isinstance(name, str) else label
            raise InputError(str(exc).replace(repr(str(path)), quoted).replace(str(path), label)) from None
