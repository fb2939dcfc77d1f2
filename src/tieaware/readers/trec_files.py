"""TREC run and qrels files read into columns by one compiled pass, in blocks of whole lines.

`TrecFile` reads a file (plain, gzip, bzip2 or xz; a path, a FIFO or ``-`` for standard input) once, in
blocks of about `BLOCK_BYTES`, each scanned by `kernels.trec.scan` on a thread of its own (`Ahead`), one
block ahead of the caller (the scan and the decompression release the GIL): no Python object per line. A `Block` holds
the ids of its segments of consecutive lines of one query, the doc ids as code points with their bounds
(decoded into strings in one call, `Block.doc_ids`), the scores (float64) or grades (int64) and the line
numbers. Every reader of TREC files uses it: `inputs.read_trec_run` /
`read_trec_qrels` (and so `evaluate` on paths and the HPS candidate reader) and `streaming.evaluate_stream`.

Strictness is trec_eval's reading made explicit (see `kernels.trec`): what trec_eval would misread
(a fractional grade, ``0_4``, NaN, a document twice for a query, a wrong number of columns, a run line's
fields after the sixth, bare CR line endings, bytes that are not UTF-8) is an `InputError` naming
file:line, the first in the file's order. Scores are converted correctly rounded, as C's ``strtod``
converts them: in the kernel up to 19 significant digits, from their text by Python's ``float`` beyond.
"""
from __future__ import annotations

import contextlib
import math
import queue
import threading
from collections.abc import Generator, Iterable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np

from .. import threads
from ..errors import InputError
from ..kernels import trec as kernel
from ..kernels.groups import SEED
from .judgments import QrelsColumns, best_first
from .raw_files import DECOMPRESSION_ERRORS, STDIN, checked_path, open_binary

#: bytes read per block (whole lines; a longer line makes a longer block)
BLOCK_BYTES = 1 << 20
_COLUMNS = {"run": ("qid Q0 docid rank score tag", 6), "qrels": ("qid iter docid rel", 4)}
#: the fewest bytes a record's line takes (its tokens of a byte each, a space or newline after each):
#: a block holds at most its length over this many records, so no pass counts its lines first
_MIN_RECORD_BYTES = {kind: 2 * n_cols for kind, (_, n_cols) in _COLUMNS.items()}
_BOM = b"\xef\xbb\xbf"


@dataclass
class Block:
    """Records of whole lines of a TREC file: segment ``s`` is query ``query_ids[s]``, records
    ``seg_start[s]:seg_start[s + 1]``; record i's doc id is ``codes[lo[i]:hi[i]]`` (Unicode code points,
    uint32; a newline after each id). ``whole``: the block ends where its last query's lines end (the
    next line is another query's, or the file ends); ``checked``: moreover each of its queries has all
    its lines in it (none seen before, none twice) and no document twice (`repeat_error`)."""

    path: Path
    query_ids: list
    seg_start: np.ndarray
    codes: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    values: np.ndarray
    lines: np.ndarray
    whole: bool = False
    checked: bool = False

    def where(self, record: int) -> str:
        return f"{self.path}:{self.lines[record]}"

    @cached_property
    def doc_ids(self) -> list:
        """The doc ids as strings, one per record."""
        codes = self.codes[:-1]
        text = codes.astype(np.uint8).tobytes().decode("ascii") if bool((codes < 128).all()) else \
            codes.tobytes().decode("utf-32-le")
        return text.split("\n")


class _Scratch:
    """`kernels.trec.scan`'s outputs for blocks of up to ``bytes`` bytes and ``lines`` records, reused from block
    to block (what a block keeps is copied out): no allocation per block, and no freed block-sized
    buffers for the allocator to keep."""

    def __init__(self, n_bytes: int, lines: int, run: bool):
        self.bytes, self.lines = n_bytes, lines
        self.buf = np.empty(n_bytes + kernel.PAD, np.uint8)
        self.rec_line = np.empty(lines, np.int32)
        self.seg_start = np.empty(lines + 1, np.int32)
        self.seg_at = np.empty(lines + 1, np.int64)
        self.slow = np.empty((lines if run else 0, 3), np.int32)
        self.values = np.empty(lines, np.float64 if run else np.int64)
        self.codes = np.empty(n_bytes + kernel.PAD, np.uint32)
        self.doc_lo = np.empty(lines, np.int64)
        self.doc_hi = np.empty(lines, np.int64)
        self.queries = np.empty(n_bytes, np.uint8)


class TrecFile:
    """A TREC run or qrels file read once, block by block (`blocks`); ``tag`` is the sixth column of the
    last run line read so far (trec_eval's ``runid`` once the file is read)."""

    def __init__(self, path, kind: str):
        self.path = checked_path(path, kind)
        self.kind = kind
        self.tag: str | None = None

    @property
    def rereadable(self) -> bool:
        """Whether the file can be read again (a regular file, not standard input, a pipe or a FIFO)."""
        return str(self.path) != STDIN and self.path.is_file()

    def blocks(self, ahead: int = 1, check: bool = False) -> Ahead | Generator[Block, None, None]:
        """The file's records, block by block, read and scanned up to ``ahead`` blocks ahead on a thread
        of their own that starts at once (`Ahead`, unless `threads.n_threads` is 1); a bad line raises
        after the records before it. Close what it returns (``contextlib.closing``) to stop early.

        A block holding several queries ends where its last query starts: those lines are read again
        with the next block, so most blocks hold whole queries (`Block.whole`). With ``check``, those
        are checked for documents given twice on the reading thread (`Block.checked`); readers into
        dicts find repeats as they insert."""
        return Ahead(self._blocks(check), ahead) if threads.n_threads() > 1 else self._blocks(check)

    def _blocks(self, check: bool) -> Generator[Block, None, None]:
        run = self.kind == "run"
        empty_f, empty_i = np.empty(0, np.float64), np.empty(0, np.int64)
        lines_before = 0
        room = _Scratch(0, 0, run)
        starts_query = True  # the next block's first line starts a query
        seen: set = set()  # the queries of the blocks handed out
        with open_binary(self.path, self.kind) as (handle, compression):
            carry = b""
            first = True
            damage = None
            while True:
                if damage is not None:  # raised once the whole lines before it are read
                    raise InputError(f"{self.path}: cannot decompress the {self.kind} file ({compression or 'plain'} "
                                     f"data) after line {lines_before}: {damage}.")
                data, damage = _read_block(handle)
                at_end = not data and damage is None
                if data:
                    data = carry + data
                    cut = data.rfind(b"\n") + 1
                    if cut == 0:
                        carry = data
                        continue
                    chunk, carry = data[:cut], data[cut:]
                elif damage is not None:
                    continue
                else:
                    chunk, carry = carry, b""
                    if not chunk:
                        return
                    chunk += b"\n"
                if first:
                    first = False
                    if chunk.startswith(_BOM):
                        chunk = chunk[len(_BOM):]
                chunk, pending = self._valid_utf8(chunk, lines_before)
                max_records = len(chunk) // _MIN_RECORD_BYTES[self.kind] + 1
                if len(chunk) > room.bytes or max_records > room.lines:
                    room = _Scratch(max(len(chunk), room.bytes), max(max_records, room.lines), run)
                buf = room.buf[:len(chunk) + kernel.PAD]
                buf[:len(chunk)] = np.frombuffer(chunk, np.uint8)
                buf[len(chunk):] = 10  # the padding the scan may read
                (n_rec, n_code, n_seg, n_q, n_slow, tag_lo, tag_hi, n_lines, bad,
                 code) = kernel.scan(buf, run, room.rec_line, room.values if run else empty_f,
                                     empty_i if run else room.values, room.slow, room.codes, room.doc_lo, room.doc_hi,
                                     room.seg_start, room.seg_at, room.queries)
                whole = at_end
                if not at_end and bad < 0 and pending is None and n_seg > 1:  # the last query may go on
                    n_seg -= 1
                    n_rec = int(room.seg_start[n_seg])
                    carry = chunk[int(room.seg_at[n_seg]):] + carry
                    n_lines, n_code, whole = int(room.rec_line[n_rec]), int(room.doc_lo[n_rec]), True
                if n_rec:
                    values = room.values[:n_rec].copy()
                    for record, lo, hi in room.slow[:n_slow].tolist():
                        if record < n_rec:
                            values[record] = parse_score(chunk[lo:hi].decode("ascii"), f"{self.path}:"
                                                         f"{lines_before + room.rec_line[record] + 1}")
                    if run:
                        self.tag = chunk[tag_lo:tag_hi].decode("utf-8")
                    seg_start = np.empty(n_seg + 1, np.int64)
                    seg_start[:n_seg] = room.seg_start[:n_seg]
                    seg_start[n_seg] = n_rec
                    query_ids = room.queries[:n_q - 1].tobytes().decode("utf-8").split("\n")[:n_seg]
                    fresh = seen.isdisjoint(query_ids) and len(set(query_ids)) == n_seg  # no query comes back
                    seen.update(query_ids)
                    block = Block(self.path, query_ids, seg_start, room.codes[:n_code].copy(),
                                  room.doc_lo[:n_rec].copy(), room.doc_hi[:n_rec].copy(), values,
                                  room.rec_line[:n_rec].astype(np.int64) + (lines_before + 1), whole,
                                  check and whole and starts_query and fresh)
                    if block.checked:
                        error = repeat_error(block.path, block.query_ids, block.seg_start, block.codes, block.lo,
                                             block.hi, block.lines)
                        if error is not None:
                            raise error
                    yield block
                    starts_query = whole
                if bad >= 0:
                    raise self._line_error(chunk, bad, lines_before + bad + 1, code)
                if pending is not None:
                    raise pending
                lines_before += n_lines

    def _valid_utf8(self, chunk: bytes, lines_before: int) -> tuple[bytes, InputError | None]:
        """(the chunk up to its first line that is not UTF-8, the error for that line or None)."""
        if chunk.isascii():
            return chunk, None
        try:
            chunk.decode("utf-8")
        except UnicodeDecodeError as exc:
            start = chunk.rfind(b"\n", 0, exc.start) + 1
            line_no = lines_before + chunk.count(b"\n", 0, start) + 1
            return chunk[:start], InputError(
                f"{self.path}:{line_no}: {self.kind} file is not valid UTF-8 (byte 0x{chunk[exc.start]:02x} at "
                f"column {exc.start - start + 1}).")
        return chunk, None

    def _line_error(self, chunk: bytes, index: int, line_no: int, code: int) -> InputError:
        """The error of line ``index`` of the chunk, which the kernel found bad (``code``)."""
        lo = 0
        for _ in range(index):
            lo = chunk.index(b"\n", lo) + 1
        raw = chunk[lo:chunk.index(b"\n", lo)]
        where = f"{self.path}:{line_no}"
        if code == kernel.BARE_CR:
            return InputError(
                f"{where}: a carriage return (CR) without a newline after it, then more text on the line: "
                f"{_excerpt(raw)}. Lines that end in a bare CR (old Mac endings, whole or mixed with others) "
                "would run together: trec_eval reads a CR as a space, so it would misread them. Convert the "
                "endings to newlines (tr '\\r' '\\n' < in > out; CRLF endings are fine).")
        tokens = [token.decode("utf-8") for token in raw.split()]
        layout, n_cols = _COLUMNS[self.kind]
        if code == kernel.COLUMNS:
            return InputError(f"{where}: a TREC {self.kind} line has {n_cols} columns ({layout}), this one has "
                              f"{len(tokens)}: {_excerpt(raw.strip())}.{_layout_hint(self.kind, len(tokens))}")
        try:
            if code == kernel.GRADE:
                _grade(tokens[3], where)
                return InputError(f"{where}: relevance {tokens[3]!r} is out of range (more than 18 digits).")
            parse_score(tokens[4], where)
        except InputError as exc:
            return exc
        return InputError(f"{where}: score {tokens[4]!r} is not a number.")


class Ahead:
    """The items of a generator, made on a thread of their own that starts at once and runs at most
    ``ahead`` items ahead of the caller; what the generator raises is raised here after the items before
    it. `close` stops the thread (dropping the last reference to it too, without waiting)."""

    def __init__(self, items: Generator, ahead: int = 1):
        self._handover: queue.Queue = queue.Queue(maxsize=ahead)
        self._stop = threading.Event()
        self._done = False
        self._items = items
        self._maker = threading.Thread(target=self._make, name="tieaware-trec-reader", daemon=True)
        self._maker.start()

    def _give(self, item) -> bool:
        while not self._stop.is_set():
            try:
                self._handover.put(item, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def _make(self) -> None:
        try:
            for item in self._items:
                if not self._give((True, item)):
                    return
        except BaseException as exc:  # handed to the caller, raised there
            self._give((False, exc))
        else:
            self._give((False, None))
        finally:
            self._items.close()

    def __iter__(self) -> Ahead:
        return self

    def __next__(self):
        if self._done:
            raise StopIteration
        ok, item = self._handover.get()
        if ok:
            return item
        self.close()
        if item is None:
            raise StopIteration
        raise item

    def close(self) -> None:
        """Stop the thread (a no-op once stopped)."""
        self._done = True
        self._stop.set()
        self._maker.join()

    def __del__(self) -> None:
        self._stop.set()


def _read_block(handle) -> tuple[bytes, Exception | None]:
    """(about `BLOCK_BYTES` of the stream, or less at its end; the decompression error that ended it early,
    or None): what was decompressed before a damaged or cut-off part is kept, so its lines are read."""
    parts, size = [], 0
    try:
        while size < BLOCK_BYTES:
            part = handle.read1(BLOCK_BYTES - size)
            if not part:
                break
            parts.append(part)
            size += len(part)
    except DECOMPRESSION_ERRORS as exc:
        return b"".join(parts), exc
    return b"".join(parts), None


def _has_foreign_characters(text: str) -> bool:
    """Python's ``float``/``int`` accept ``_`` separators and non-ASCII digits; C's atof/atol do not."""
    return "_" in text or not text.isascii()


def parse_score(text: str, where: str) -> float:
    """A run score as C's ``atof`` reads it the same way (no ``_`` separators, ASCII digits only), not
    NaN; ``where`` (file:line) names it in the `InputError`."""
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
        if dot and tail.strip("0") == "" and (head[1:] if head[:1] in ("+", "-") else head).isdigit():
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


def _layout_hint(kind: str, n_cols: int) -> str:
    if kind == "run" and n_cols == 4:
        return (" It looks like a qrels line (qid iter docid rel), or a run without the Q0 and tag columns "
                "(qid docid rank score): was a qrels file given as the run? Write runs as 'qid Q0 docid rank "
                "score tag'.")
    if kind == "run" and n_cols == 3:
        return (" Three columns: a qid<TAB>docid<TAB>score run (tab-separated, MS MARCO style) is read in memory, "
                "by evaluate from a file (not streamed, not a pipe) or with tieaware.inputs.read_tsv_run.")
    if kind == "qrels" and n_cols == 6:
        return " It looks like a run line (qid Q0 docid rank score tag): was a run file given as the qrels?"
    if n_cols > _COLUMNS[kind][1]:
        lost = "drops a run line's fields after the sixth" if kind == "run" else "stops here ('Malformed line')"
        return (f" trec_eval {lost}; two records glued on one line (as `cat a b` makes when a lacks its final "
                "newline) look like this. Remove the extra fields, or put each record on a line of its own.")
    return ""


def _excerpt(raw: bytes, limit: int = 120) -> str:
    """The repr of a line's text, cut to its first ``limit`` characters (a file of bare-CR lines is one line)."""
    text = raw.decode("utf-8")
    return repr(text) if len(text) <= limit else f"{text[:limit]!r}... ({len(text)} characters)"


def put_segment(table: dict, block: Block, segment: int, values: list) -> None:
    """Segment ``segment`` of ``block`` into ``table[qid]`` (``values``: ``block.values`` as a list);
    a document given twice for the query is an error naming its second line."""
    qid = block.query_ids[segment]
    lo, hi = int(block.seg_start[segment]), int(block.seg_start[segment + 1])
    docs = dict(zip(block.doc_ids[lo:hi], values[lo:hi]))
    have = table.get(qid)
    if len(docs) == hi - lo and (have is None or have.keys().isdisjoint(docs)):
        if have is None:
            table[qid] = docs
        else:
            have.update(docs)
        return
    seen = set() if have is None else set(have)
    for record in range(lo, hi):
        docid = block.doc_ids[record]
        if docid in seen:
            raise InputError(f"{block.where(record)}: document {docid!r} appears twice for query {qid!r}.")
        seen.add(docid)


def _put_blocks(table: dict, blocks: Iterable[Block]) -> dict:
    """``table`` with every record of ``blocks`` put in (`put_segment`)."""
    for block in blocks:
        values = block.values.tolist()
        for segment in range(len(block.query_ids)):
            put_segment(table, block, segment, values)
    return table


def repeat_error(path, query_ids: list, offsets: np.ndarray, codes: np.ndarray, lo: np.ndarray, hi: np.ndarray,
                 lines: np.ndarray) -> InputError | None:
    """The error for the first document (in order) given twice for its query (query ``query_ids[q]``
    holding records ``offsets[q]:offsets[q + 1]`` (int64), record i's id ``codes[lo[i]:hi[i]]``, read
    from line ``lines[i]``), naming its second line; None when there is none (`kernels.trec.first_repeat`)."""
    record = kernel.first_repeat(codes, lo, hi, offsets, SEED)
    if record < 0:
        return None
    qid = query_ids[int(np.searchsorted(offsets, record, side="right")) - 1]
    doc = codes[lo[record]:hi[record]].tobytes().decode("utf-32-le")
    return InputError(f"{path}:{lines[record]}: document {doc!r} appears twice for query {qid!r}.")


def read_qrels_columns(path) -> QrelsColumns | dict:
    """A TREC qrels file as `QrelsColumns` (no Python object per line) when each query's lines are
    together, as trec_eval's qrels are; else as `read_trec`'s dict. Same errors as `read_trec`, the first
    in the file's order: a document judged twice for a query names its second line."""
    source = TrecFile(path, "qrels")
    kept: list[Block] = []
    try:
        with contextlib.closing(source.blocks(check=True)) as blocks:
            kept.extend(blocks)
    except InputError:
        if kept:
            _qrels_of_blocks(source, kept)  # a document judged twice before the bad line is named first
        raise
    return _qrels_of_blocks(source, kept)


def _qrels_of_blocks(source: TrecFile, kept: list[Block]) -> QrelsColumns | dict:
    query_ids: list = []
    starts: list = []  # each query's first record
    seen: set = set()
    records = 0
    for block in kept:
        for segment, qid in enumerate(block.query_ids):
            if query_ids and qid == query_ids[-1]:
                continue
            if qid in seen:  # a query comes back: read as dicts, which merge its lines
                return _put_blocks({}, kept)
            seen.add(qid)
            query_ids.append(qid)
            starts.append(records + int(block.seg_start[segment]))
        records += block.values.size
    if not query_ids:
        raise InputError(f"qrels file {str(source.path)!r} holds no qrels lines.")
    offsets = np.array([*starts, records], np.int64)
    checked = all(block.checked for block in kept)  # each query in one block, checked on the reading thread
    codes, lo, hi, grades, lines = _drain(kept)
    error = None if checked else repeat_error(source.path, query_ids, offsets, codes, lo, hi, lines)
    if error is not None:
        raise error
    del lines
    return QrelsColumns(query_ids, offsets, codes, *best_first(offsets, lo, hi, grades))


def _drain(kept: list[Block]) -> tuple[np.ndarray, ...]:
    """(codes, lo, hi, values, lines) of the blocks end to end, each block dropped from ``kept`` once
    copied: the peak holds the blocks and one copy, not two."""
    n_codes, n_rec = sum(block.codes.size for block in kept), sum(block.values.size for block in kept)
    codes = np.empty(n_codes, np.uint32)
    lo, hi, lines = (np.empty(n_rec, np.int64) for _ in range(3))
    values = np.empty(n_rec, kept[0].values.dtype)
    at = shift = 0
    while kept:
        block = kept.pop(0)
        n = block.values.size
        codes[shift:shift + block.codes.size] = block.codes
        np.add(block.lo, shift, out=lo[at:at + n])
        np.add(block.hi, shift, out=hi[at:at + n])
        values[at:at + n] = block.values
        lines[at:at + n] = block.lines
        at, shift = at + n, shift + block.codes.size
    return codes, lo, hi, values, lines


def read_trec(path, kind: str) -> tuple[dict, str | None]:
    """(``{qid: {docid: value}}`` in the file's order, the run tag of the last line) of a TREC file."""
    source = TrecFile(path, kind)
    with contextlib.closing(source.blocks()) as blocks:
        out = _put_blocks({}, blocks)
    if not out:
        raise InputError(f"{kind} file {str(source.path)!r} holds no {kind} lines.")
    return out, source.tag
