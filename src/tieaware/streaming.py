"""Evaluation of TREC runs larger than memory: whole queries at a time, and merging shards.

`evaluate_stream` reads a run file once (`readers.trec_files.TrecFile`: a path, a FIFO or
standard input) in chunks of whole queries and evaluates each chunk on its own:
every metric of a query depends on that query's documents only, so the per-query
values, and the means over them in the run's order, equal the in-memory path
exactly, while memory grows with the chunk, not the run. A run file is expected
to hold each query's lines together (trec_eval's output and every ranker's do).
If a query comes back after another one started, the file is first partitioned
by query into temporary bucket files (one extra pass, a warning
says so), each of which holds whole queries.

`write_per_query` writes per-query rows with what defines them (TSV or Parquet),
and `merge` combines such tables from shards (one process per shard of queries)
into the `EvaluationReport` a single run gives, refusing shards that disagree.
"""
from __future__ import annotations

import contextlib
import csv
import hashlib
import io
import json
import os
import tempfile
import warnings
import zlib
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from .arguments import is_count
from .engine import per_query_tables
from .errors import InputError, QueryMismatchError
from .inputs import FORMAT_NAMES, file_format, is_ranx_qrels, load_qrels, put_value
from .metrics import parse_metric, parse_metrics
from .outputs import atomic_output, check_utf8_ids
from .readers.columns import from_columns
from .readers.judgments import QrelsColumns, judgment_chunk
from .readers.raw_files import checked_path
from .readers.trec_files import Ahead, Block, TrecFile, read_qrels_columns, repeat_error
from .report import KERNEL_COLUMNS, PER_QUERY_COLUMNS, EvaluationReport, MetricResult

if TYPE_CHECKING:
    import pandas as pd

#: Queries per chunk unless given.
CHUNK_QUERIES = 1_000
#: Documents per chunk (whole queries, so more when one query has more) unless a number of queries is given.
CHUNK_DOCS = 1 << 16
#: Blocks (`readers.trec_files.BLOCK_BYTES` of run file each) read ahead of the evaluation
AHEAD_BLOCKS = 4
#: Bytes of run file per bucket when a file not grouped by query is partitioned.
BUCKET_BYTES = 256 * 2 ** 20
_ROW_COLUMNS = ["metric", "query_id", *PER_QUERY_COLUMNS, "oblivious_order"]


class _Unsorted(Exception):
    """A query's lines are not together in the file."""


class Columns(NamedTuple):
    """Whole queries of a run file in its order: query ``query_ids[q]`` holds ``n_ret[q]`` records, record
    i with score ``scores[i]``, doc id ``codes[lo[i]:hi[i]]`` (Unicode code points) and line ``lines[i]``."""

    path: Path
    query_ids: list
    n_ret: np.ndarray
    scores: np.ndarray
    codes: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    lines: np.ndarray

    def check_repeats(self) -> None:
        """A document given twice for a query is an error naming its second line (the first in the file)."""
        offsets = np.zeros(len(self.query_ids) + 1, np.int64)
        np.cumsum(self.n_ret, out=offsets[1:])
        error = repeat_error(self.path, self.query_ids, offsets, self.codes, self.lo, self.hi, self.lines)
        if error is not None:
            raise error

    def only(self, keep: list) -> Columns:
        """The queries whose ``keep`` is true."""
        kept = np.asarray(keep, np.bool_)
        records = np.repeat(kept, self.n_ret)
        return self._replace(query_ids=[q for q, k in zip(self.query_ids, keep) if k], n_ret=self.n_ret[kept],
                             scores=self.scores[records], lo=self.lo[records], hi=self.hi[records],
                             lines=self.lines[records])

    def as_dict(self) -> dict:
        """``{qid: {docid: score}}``."""
        text = self.codes.tobytes().decode("utf-32-le")
        scores = self.scores.tolist()
        out, at = {}, 0
        for qid, n in zip(self.query_ids, self.n_ret.tolist()):
            out[qid] = {text[lo:hi]: score for lo, hi, score in
                        zip(self.lo[at:at + n].tolist(), self.hi[at:at + n].tolist(), scores[at:at + n])}
            at += n
        return out


class _Pending:
    """Records read but not yet handed out: whole queries, and the last one, which may go on in the next
    block unless that block was `Block.whole`; ``parts``: per block (or the rest of one) its scores, codes,
    lo, hi, lines and whether it is `Block.checked`."""

    def __init__(self, path: Path):
        self.path = path
        self.query_ids: list = []
        self.counts: list = []
        self.parts: list = []
        self.ends_whole = False

    def add(self, block: Block) -> None:
        self.parts.append((block.values, block.codes, block.lo, block.hi, block.lines, block.checked))
        self.ends_whole = block.whole

    def ready(self, chunk_queries: int, chunk_docs: int | None) -> int:
        """How many queries the next chunk takes, once they are whole: ``chunk_queries``, or all the whole
        ones (at most ``chunk_queries``) once they hold ``chunk_docs`` documents; 0 until then. (Blocks
        mostly end with a whole query, so a chunk mostly takes whole blocks, with no copy.)"""
        whole = len(self.counts) - (0 if self.ends_whole else 1)
        if whole <= 0:
            return 0
        if chunk_docs is not None and sum(self.counts[:whole]) >= chunk_docs:
            return min(whole, chunk_queries)
        return chunk_queries if whole >= chunk_queries else 0

    def take(self, n_queries: int) -> tuple[Columns, bool]:
        """(the first ``n_queries`` queries as `Columns` (codes read-only, as the dict reader's), whether
        they are checked for documents given twice): the parts that hold them as they are when one does,
        else each record copied once."""
        n = int(sum(self.counts[:n_queries]))
        used, rest, held, shift = [], [], 0, 0
        for k, (scores, codes, lo, hi, lines, checked) in enumerate(self.parts):
            if held + scores.size <= n:
                used.append((scores, codes, lo + shift if shift else lo, hi + shift if shift else hi, lines, checked))
                held += scores.size
                shift += codes.size
                continue
            r = n - held  # this part is cut after its record r, a query's first
            if r:
                cut = int(lo[r])
                used.append((scores[:r], codes[:cut], lo[:r] + shift, hi[:r] + shift, lines[:r], checked))
                rest.append((scores[r:], codes[cut:], lo[r:] - cut, hi[r:] - cut, lines[r:], checked))
            else:
                rest.append((scores, codes, lo, hi, lines, checked))
            rest += self.parts[k + 1:]
            break
        if len(used) == 1:
            scores, codes, lo, hi, lines, checked = used[0]
        else:
            *columns, flags = zip(*used)
            scores, codes, lo, hi, lines = (np.concatenate(column) for column in columns)
            checked = all(flags)
        codes.setflags(write=False)
        taken = Columns(self.path, self.query_ids[:n_queries], np.array(self.counts[:n_queries], np.int64),
                        scores, codes, lo, hi, lines)
        self.query_ids, self.counts, self.parts = self.query_ids[n_queries:], self.counts[n_queries:], rest
        return taken, checked

    def take_checked(self, n_queries: int) -> Columns:
        """`take`, then `Columns.check_repeats` unless the blocks' reader checked them."""
        taken, checked = self.take(n_queries)
        if not checked:
            taken.check_repeats()
        return taken


def _column_chunks(source: TrecFile, chunk_queries: int, chunk_docs: int | None = None,
                   blocks: Ahead | Generator[Block, None, None] | None = None) -> Generator[Columns, None, None]:
    """`Columns` of whole queries, a new chunk once one holds ``chunk_queries`` queries or ``chunk_docs``
    documents, each checked for documents given twice; raises `_Unsorted` when a query comes back. A bad
    line raises once the records before it are checked (the first error in the file's order wins).
    ``blocks``: ``source.blocks(check=True)`` already started, or None to start them here."""
    pending = _Pending(source.path)
    finished: set = set()
    with contextlib.closing(source.blocks(check=True) if blocks is None else blocks) as blocks:
        while True:
            try:
                block = next(blocks)
            except StopIteration:
                break
            except InputError:  # a bad line: a document repeated before it comes first
                if pending.query_ids:
                    pending.take_checked(len(pending.query_ids))
                raise
            for segment, qid in enumerate(block.query_ids):
                n = int(block.seg_start[segment + 1] - block.seg_start[segment])
                if pending.query_ids and qid == pending.query_ids[-1]:
                    pending.counts[-1] += n
                    continue
                if qid in finished:
                    if pending.query_ids:  # a document repeated before it comes first
                        pending.add(block)
                        pending.take_checked(len(pending.query_ids))
                    raise _Unsorted(f"{block.where(int(block.seg_start[segment]))}: query {qid!r} comes back "
                                    "after other queries")
                if pending.query_ids:
                    finished.add(pending.query_ids[-1])
                pending.query_ids.append(qid)
                pending.counts.append(n)
            pending.add(block)
            while n_queries := pending.ready(chunk_queries, chunk_docs):
                chunk = pending.take_checked(n_queries)
                finished.update(chunk.query_ids)  # whole: each coming back is a query out of place
                yield chunk
    if pending.query_ids:
        yield pending.take_checked(len(pending.query_ids))


def _bucket_chunks(source: TrecFile, order: list) -> Iterator[dict]:
    """Partition the file by query into temporary buckets (qid, docid, score, line number), then yield each
    bucket's queries."""
    path = source.path
    n_buckets = max(1, os.path.getsize(path) // BUCKET_BYTES + 1)
    with tempfile.TemporaryDirectory(prefix="tieaware-buckets-") as folder:
        with contextlib.ExitStack() as stack:  # closes the buckets and stops the reader thread
            handles = [stack.enter_context(open(Path(folder, f"{b}.tsv"), "w", encoding="utf-8", newline=""))
                       for b in range(n_buckets)]
            blocks = stack.enter_context(contextlib.closing(source.blocks()))
            seen = set()
            for block in blocks:
                values = block.values.tolist()
                for segment, qid in enumerate(block.query_ids):
                    if qid not in seen:
                        seen.add(qid)
                        order.append(qid)
                    lo, hi = block.seg_start[segment], block.seg_start[segment + 1]
                    handles[zlib.crc32(qid.encode()) % n_buckets].write(
                        "".join(f"{qid}\t{docid}\t{score!r}\t{line}\n" for docid, score, line in
                                zip(block.doc_ids[lo:hi], values[lo:hi], block.lines[lo:hi].tolist())))
        for b in range(n_buckets):
            chunk: dict = {}
            with open(Path(folder, f"{b}.tsv"), encoding="utf-8", newline="") as handle:
                for qid, docid, score, line in csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE):
                    put_value(chunk, qid, docid, float(score), f"{path}:{line}")
            if chunk:
                yield chunk


class Streamed(NamedTuple):
    """What `evaluate_stream` returns: the evaluated query ids, {metric: per-query kernel table (Q, 5),
    `report.KERNEL_COLUMNS`}, the run's queries without qrels (not evaluated), how many queries the run
    holds and its tag (trec_eval's ``runid``: the last line's)."""

    query_ids: list
    tables: dict
    extra: list
    run_queries: int
    run_tag: str | None


class RunChunks:
    """A TREC run file (a path, a FIFO or ``-``) read in chunks of whole queries (`Columns`, ``chunks``),
    each checked for documents given twice. Its blocks are read and scanned on a thread of their own
    (`TrecFile.blocks`) that starts at once, up to `AHEAD_BLOCKS` ahead, so the run is read while the
    caller reads the qrels, and the next block while it evaluates a chunk. ``chunk_queries``: queries per
    chunk (None: `CHUNK_QUERIES`, or fewer once a chunk holds `CHUNK_DOCS` documents). `close` stops the
    thread."""

    def __init__(self, run, chunk_queries: int | None = None):
        if not isinstance(run, (str, os.PathLike)):
            raise InputError(f"stream=True reads a TREC run file; got a {type(run).__name__} (evaluate it in "
                             "memory).")
        chunk_docs = CHUNK_DOCS if chunk_queries is None else None
        chunk_queries = CHUNK_QUERIES if chunk_queries is None else chunk_queries
        if not is_count(chunk_queries, 1):
            raise InputError(f"stream must be True or a positive number of queries per chunk, got "
                             f"{chunk_queries!r}.")
        self.source = TrecFile(run, "run")
        form = file_format(self.source.path)
        if form != "trec":
            raise InputError(f"stream=True reads TREC run files; {str(self.source.path)!r} is a {FORMAT_NAMES[form]} "
                             f"run (by its {'first line' if form == 'tsv' else 'suffix'}): such a run is read in "
                             "memory; evaluate it without stream.")
        self._blocks = self.source.blocks(AHEAD_BLOCKS, check=True)
        self.chunks = _column_chunks(self.source, chunk_queries, chunk_docs, self._blocks)

    def close(self) -> None:
        self.chunks.close()
        self._blocks.close()  # when the chunks were never asked for


def evaluate_stream(qrels, run, specs: list, make_comparable: bool, oblivious: str, *,
                    chunk_queries: int | None = None, drop_extra: bool = False,
                    ignore_identical_ids: bool = False) -> Streamed:
    """The per-query tables of a TREC run file (a path, a FIFO or ``-``, or its `RunChunks` already
    reading) read once, chunk by chunk.

    Same query order, values and errors as the in-memory path (`engine.per_query_tables`), except
    that ``drop_extra`` leaves the run's queries without qrels out (named in ``extra``) instead of
    raising (the error for qrels queries the run lacks still names both). A run from a pipe must be
    grouped by query (it cannot be read a second time). The run is read while the qrels are.
    """
    reader = run if isinstance(run, RunChunks) else RunChunks(run, chunk_queries)
    try:
        return _evaluate_chunks(qrels, reader, specs, make_comparable, oblivious, drop_extra, ignore_identical_ids)
    finally:
        reader.close()


def _evaluate_chunks(qrels, reader: RunChunks, specs: list, make_comparable: bool, oblivious: str,
                     drop_extra: bool, ignore_identical_ids: bool) -> Streamed:
    source = reader.source
    path = source.path
    qrels = qrels_of(qrels)
    order: list = []
    evaluated: list = []
    pieces: dict = {spec.name: [] for spec in specs}
    extra: list = []

    as_dicts = ignore_identical_ids or any(spec.judged_only for spec in specs)  # options read on dicts

    def evaluate_chunk(chunk: dict | Columns) -> None:
        queries = chunk.query_ids if isinstance(chunk, Columns) else list(chunk)
        keep = [q in qrels for q in queries]
        extra.extend(q for q, judged in zip(queries, keep) if not judged)
        if not any(keep):
            return
        if isinstance(chunk, Columns):
            columns = chunk if all(keep) else chunk.only(keep)
            judgments = {q: qrels[q] for q in columns.query_ids} if as_dicts else qrels
            run = columns.as_dict() if as_dicts else from_columns(
                judgment_chunk(qrels, columns.query_ids), columns.query_ids, columns.n_ret, columns.scores,
                columns.codes, columns.lo, columns.hi)
        else:
            run = {q: chunk[q] for q in chunk if q in qrels}
            judgments = {q: qrels[q] for q in run}
        query_ids, tables = per_query_tables(judgments, run, specs, False, oblivious, ignore_identical_ids,
                                             from_file=True)
        evaluated.extend(query_ids)
        for name, table in tables.items():
            pieces[name].append(table)

    try:
        for columns in reader.chunks:
            order.extend(columns.query_ids)
            evaluate_chunk(columns)
    except _Unsorted as reason:
        if not source.rereadable:
            raise InputError(f"run {str(path)!r} is not grouped by query ({reason}) and cannot be read a second "
                             "time to partition it: give it as a file, or group its lines by query first "
                             "(sort -s -k1,1).") from None
        warnings.warn(f"run file {str(path)!r} is not grouped by query ({reason}): partitioning it by query "
                      "first (one extra pass).", RuntimeWarning, stacklevel=4)
        order, extra, evaluated, pieces = [], [], [], {spec.name: [] for spec in specs}
        source = TrecFile(path, "run")  # read whole: its tag is the last line's
        for bucket in _bucket_chunks(source, order):
            evaluate_chunk(bucket)
    if not order:  # as the in-memory reader (`inputs.read_trec_run`), also with make_comparable
        raise InputError(f"run file {str(path)!r} holds no run lines.")
    in_run = set(order)
    missing = [q for q in qrels if q not in in_run]
    if (missing and not make_comparable) or (extra and not (make_comparable or drop_extra)):
        raise QueryMismatchError(missing, extra)
    if missing:  # make_comparable: scored as empty runs, after the run's queries, as in memory
        evaluate_chunk({q: {} for q in missing})
    query_ids = [q for q in order if q in qrels] + missing
    rows = None
    if evaluated != query_ids:  # partitioned: the buckets' order, not the run's
        at = {q: i for i, q in enumerate(evaluated)}
        rows = np.fromiter((at[q] for q in query_ids), np.int64, len(query_ids))
    tables = {}
    for name, parts in pieces.items():
        table = np.concatenate(parts) if parts else np.empty((0, len(KERNEL_COLUMNS)))
        tables[name] = table if rows is None else table[rows]
    return Streamed(query_ids, tables, extra, len(order), source.tag)


def qrels_of(qrels) -> QrelsColumns | dict:
    """Qrels as the chunks read them: a TREC qrels file as `QrelsColumns` (`trec_files.read_qrels_columns`),
    kept as they are, anything else as a dict (`load_qrels`)."""
    if isinstance(qrels, QrelsColumns):
        return qrels
    if isinstance(qrels, (str, os.PathLike)) and file_format(checked_path(qrels, "qrels")) == "trec":
        return read_qrels_columns(qrels)
    qrels = load_qrels(qrels)
    return qrels.to_dict() if is_ranx_qrels(qrels) else qrels


def evaluate_file(qrels, path, metrics, *, relevance_level: int = 1, oblivious: str = "trec_eval",
                  make_comparable: bool = False, chunk_queries: int | None = None,
                  per_query_out=None, ignore_identical_ids: bool = False) -> tuple[EvaluationReport, Streamed]:
    """(report, `Streamed` without its tables) of a TREC run file read once, chunk by chunk
    (`evaluate_stream` with ``drop_extra``): what `tieaware eval` does with a run file, as trec_eval does,
    in memory that grows with the chunk, not the run. ``per_query_out`` is written once complete."""
    specs = parse_metrics(metrics, relevance_level)
    streamed = evaluate_stream(qrels, path, specs, make_comparable, oblivious, chunk_queries=chunk_queries,
                               drop_extra=True, ignore_identical_ids=ignore_identical_ids)
    report = EvaluationReport({spec.name: MetricResult.from_table(spec.name, streamed.query_ids,
                                                                  streamed.tables[spec.name], oblivious,
                                                                  spec.aggregate) for spec in specs})
    if per_query_out is not None:
        write_per_query(per_query_out, {name: result.per_query for name, result in report.items()},
                        oblivious=oblivious, relevance_level=relevance_level,
                        ignore_identical_ids=ignore_identical_ids)
    return report, streamed._replace(tables={})


#: Key of the per-query tables' metadata: the TSV's first line is ``#`` + this + a tab + JSON; Parquet
#: keeps the JSON under this key of the schema metadata.
META_KEY = "tieaware-per-query"
#: Tag of a per-query TSV's last line: the SHA-256 of every byte before it.
_CHECKSUM = "#sha256"
#: What defines a per-query table's numbers; shards merge only when all of these agree.
_DEFINING = ("metrics", "relevance_level", "oblivious", "ignore_identical_ids", "tieaware")


def write_per_query(path, frames: dict, *, oblivious: str, relevance_level,
                    ignore_identical_ids: bool = False) -> None:
    """Write per-query rows (metric, query_id, statistics, oblivious_order) as TSV, or Parquet for a
    ``.parquet``/``.parq`` path, with what defines the numbers for `merge` to check: the metric
    names (in order), ``relevance_level``, the tie order, ``ignore_identical_ids``, the tieaware version
    and the query count
    (TSV: a first line ``#tieaware-per-query<TAB>{json}``; Parquet: schema metadata), and a checksum
    of the content (TSV: a last line ``#sha256<TAB>{hex}`` of every byte before it; Parquet: page
    checksums), so a damaged or edited table is refused. Query ids are quoted in the TSV, so any text
    (tabs, ``\\r``, empty) reads back as written. The file appears only once complete
    (`tieaware.outputs.atomic_output`)."""
    import pandas as pd

    from . import __version__

    query_ids = list(next(iter(frames.values())).index) if frames else []
    path = Path(path)
    check_utf8_ids(query_ids, f"per-query table {str(path)!r}")
    meta = {"metrics": list(frames), "relevance_level": relevance_level, "oblivious": oblivious,
            "ignore_identical_ids": bool(ignore_identical_ids), "tieaware": __version__, "queries": len(query_ids)}
    rows = pd.concat([frame.reset_index().assign(metric=name, oblivious_order=oblivious)
                      for name, frame in frames.items()])[_ROW_COLUMNS] if frames else \
        pd.DataFrame(columns=_ROW_COLUMNS)
    with atomic_output(path) as temporary:
        if path.suffix.lower() in (".parquet", ".parq"):
            import pyarrow as pa
            import pyarrow.parquet as pq

            table = pa.Table.from_pandas(rows, preserve_index=False)
            table = table.replace_schema_metadata({**(table.schema.metadata or {}), META_KEY: json.dumps(meta)})
            pq.write_table(table, temporary, write_page_checksum=True)
            return
        body = io.StringIO()
        body.write(f"#{META_KEY}\t{json.dumps(meta)}\n")
        rows.to_csv(body, sep="\t", index=False, lineterminator="\n", quoting=csv.QUOTE_NONNUMERIC,
                    float_format="%.17g")
        data = body.getvalue().encode("utf-8")
        temporary.write_bytes(data + f"{_CHECKSUM}\t{hashlib.sha256(data).hexdigest()}\n".encode())


def _read_table(path: Path) -> tuple[dict, pd.DataFrame]:
    """(metadata, rows) of one per-query table, checked on its own: columns, numbers, row count."""
    import pandas as pd

    if path.suffix.lower() in (".parquet", ".parq"):
        import pyarrow as pa
        import pyarrow.parquet as pq

        try:
            table = pq.read_table(path, page_checksum_verification=True)
            raw = (table.schema.metadata or {}).get(META_KEY.encode())
            rows = table.to_pandas()
        except (pa.ArrowException, OSError, UnicodeDecodeError, KeyError, TypeError, ValueError) as exc:
            # KeyError/ValueError/TypeError: pyarrow reading the damaged pandas metadata in the schema
            raise InputError(f"{path}: not a readable Parquet file (cut off or damaged?): "
                             f"{' '.join(str(exc).split())}") from None
    else:
        data = path.read_bytes()
        first = data.partition(b"\n")[0]
        tag, _, raw = first.partition(b"\t")
        if tag != f"#{META_KEY}".encode():
            raw = None
        else:
            end = data.rfind(b"\n", 0, len(data) - 1) + 1  # where the last line starts
            body, footer = data[:end], data[end:]
            if footer != f"{_CHECKSUM}\t{hashlib.sha256(body).hexdigest()}\n".encode():
                raise InputError(f"{path}: its content does not match the checksum on its last line: the table is "
                                 "cut off, damaged or edited.")
            try:
                rows = pd.read_csv(io.BytesIO(body[len(first) + 1:]), sep="\t", dtype=str, keep_default_na=False,
                                   encoding="utf-8")
            except (pd.errors.ParserError, ValueError) as exc:
                raise InputError(f"{path}: not a per-query table: {' '.join(str(exc).split())}") from None
    if raw is None:
        raise InputError(f"{path}: no tieaware metadata (metrics, relevance level, tie order): not a table written "
                         "by per_query_out / --per-query-out of this tieaware version; evaluate the shard again.")
    try:
        meta = json.loads(raw)
        meta.setdefault("ignore_identical_ids", False)  # tables written before the option existed
        missing = [key for key in (*_DEFINING, "queries") if key not in meta]
    except (ValueError, TypeError):
        missing = ["readable JSON"]
    if missing:
        raise InputError(f"{path}: damaged tieaware metadata (no {', '.join(missing)}).")
    if list(rows.columns) != _ROW_COLUMNS:
        raise InputError(f"{path}: a per-query table has the columns {_ROW_COLUMNS}, this one {list(rows.columns)}.")
    for column in ("metric", "query_id", "oblivious_order"):
        rows[column] = rows[column].astype(object)
    for column in PER_QUERY_COLUMNS:
        values = pd.to_numeric(rows[column], errors="coerce")
        bad = values.isna() | ~np.isfinite(values.to_numpy(np.float64, na_value=np.nan))
        if bad.any():
            at = int(np.flatnonzero(bad.to_numpy())[0])
            raise InputError(f"{path}: row {at + 1} ({rows['metric'].iloc[at]!r}, query "
                             f"{rows['query_id'].iloc[at]!r}) has {column} {rows[column].iloc[at]!r}, not a finite "
                             "number (a repeated header, a cut-off line?).")
        rows[column] = values.astype(np.float64)
    expected_rows = meta["queries"] * len(meta["metrics"])
    if len(rows) != expected_rows:
        raise InputError(f"{path}: {len(rows)} rows where its metadata promises {expected_rows} "
                         f"({meta['queries']} queries x {len(meta['metrics'])} metrics): the table is cut off or "
                         "was edited.")
    return meta, rows


def _shard_queries(path: Path, meta: dict, rows: pd.DataFrame) -> list:
    """The shard's query ids, checked: every metric of its metadata over the same queries, each once."""
    groups = {name: list(group) for name, group in rows.groupby("metric", sort=False)["query_id"]}
    if list(groups) != meta["metrics"] or set(rows["oblivious_order"]) - {meta["oblivious"]}:
        raise InputError(f"{path}: its rows hold metrics {list(groups)} (tie order "
                         f"{sorted(set(rows['oblivious_order']))}), its metadata {meta['metrics']} "
                         f"({meta['oblivious']!r}): the table was edited.")
    queries = groups[meta["metrics"][0]] if groups else []
    if len(set(queries)) != len(queries):
        seen: set = set()
        for repeated in queries:
            if repeated in seen:
                break
            seen.add(repeated)
        raise InputError(f"{path}: query {repeated!r} appears twice for metric {meta['metrics'][0]!r}.")
    for name, members in groups.items():
        if members != queries:
            raise InputError(f"{path}: metric {name!r} holds other queries than {meta['metrics'][0]!r}.")
    return queries


def merge(paths) -> EvaluationReport:
    """The `EvaluationReport` of per-query tables written by ``per_query_out`` (one per shard of
    queries, TSV or Parquet): the same numbers a single evaluation of every query gives, queries
    in the order of the files given.

    Raises:
        InputError: naming the files, when a table has no tieaware metadata, is cut off, damaged or
            edited, when tables differ in what defines the numbers (metric names, relevance level,
            tie order, ignore_identical_ids, tieaware version), or when a query is in two tables.
    """
    import pandas as pd

    paths = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    if not paths:
        raise InputError("merge needs at least one per-query table.")
    shards = []
    for path in paths:
        path = checked_path(path, "per-query table")
        meta, rows = _read_table(path)
        shards.append((path, meta, rows, _shard_queries(path, meta, rows)))
    first_path, first_meta = shards[0][:2]
    for path, meta, _, _ in shards[1:]:
        for key in _DEFINING:
            if meta[key] != first_meta[key]:
                raise InputError(f"per-query tables differ in {key.replace('_', ' ')}: {first_path} has "
                                 f"{first_meta[key]!r}, {path} {meta[key]!r}; merge only shards evaluated alike.")
    owner: dict = {}
    for path, _, _, queries in shards:
        for query in queries:
            if owner.setdefault(query, path) is not path:
                raise InputError(f"query {query!r} appears in more than one table: {owner[query]} and {path}.")
    rows = pd.concat([shard[2] for shard in shards], ignore_index=True)
    order = first_meta["oblivious"]
    report = EvaluationReport()
    for name in first_meta["metrics"]:
        frame = rows[rows["metric"] == name].set_index("query_id")[PER_QUERY_COLUMNS]
        frame.index = pd.Index(list(frame.index), name="query_id")
        report[name] = MetricResult(name, frame, order, parse_metric(name).aggregate)
    return report
