"""Evaluation of TREC runs larger than memory: whole queries at a time, and merging shards.

`evaluate_stream` reads a run file in chunks of whole queries and evaluates each
chunk on its own: every metric of a query depends on that query's documents only,
so the per-query values, and the means over them in the run's order, equal the
in-memory path exactly, while memory grows with the chunk, not the run. A run
file is expected to hold each query's lines together (trec_eval's output and
every ranker's do). If a query comes back after another one started, the file is
first partitioned by query into temporary bucket files (one extra pass, a warning
says so), each of which holds whole queries.

`write_per_query` writes per-query rows as they are produced (TSV, or Parquet at
the end), and `merge` combines such tables from shards (one process per shard of
queries) into the `EvaluationReport` a single run gives.
"""
from __future__ import annotations

import csv
import os
import tempfile
import warnings
import zlib
from collections.abc import Iterator
from pathlib import Path

import pandas as pd

from .errors import InputError, QueryMismatchError
from .inputs import _checked_path, _layout_hint, _score, is_ranx_qrels, iter_lines, load_qrels, put_value
from .report import PER_QUERY_COLUMNS, EvaluationReport, MetricResult, per_query_frame

#: Queries per chunk unless given.
CHUNK_QUERIES = 1_000
#: Bytes of run file per bucket when a file not grouped by query is partitioned.
BUCKET_BYTES = 256 * 2 ** 20
_ROW_COLUMNS = ["metric", "query_id", *PER_QUERY_COLUMNS, "oblivious_order"]


class _Unsorted(Exception):
    """A query's lines are not together in the file."""


def _run_lines(path: Path, query_filter=None) -> Iterator[tuple[str, str, float, str]]:
    """(query id, doc id, score, where) of each run line, as `inputs.read_trec_run` reads them."""
    for line_no, line in iter_lines(path, "run"):
        cols = line.split()
        if not cols or cols[0].startswith("#"):
            continue
        where = f"{path}:{line_no}"
        if len(cols) < 6:
            raise InputError(f"{where}: a TREC run line has 6 columns (qid Q0 docid rank score tag), this one has "
                             f"{len(cols)}: {line.strip()!r}.{_layout_hint('run', len(cols))}")
        if query_filter is None or cols[0] in query_filter:
            yield cols[0], cols[2], _score(cols[4], where), where


def _grouped_chunks(lines, chunk_queries: int) -> Iterator[dict]:
    """{qid: {docid: score}} chunks of whole queries; raises `_Unsorted` when a query comes back."""
    chunk: dict = {}
    finished: set = set()
    current = None
    for qid, docid, score, where in lines:
        if qid != current:
            if qid in finished or qid in chunk:
                raise _Unsorted(f"{where}: query {qid!r} comes back after other queries")
            if current is not None:
                finished.add(current)
            if len(chunk) >= chunk_queries:
                yield chunk
                chunk = {}
            current = qid
        put_value(chunk, qid, docid, score, where)
    if chunk:
        yield chunk


def _bucket_chunks(path: Path, order: list) -> Iterator[dict]:
    """Partition the file by query into temporary buckets, then yield each bucket's queries."""
    n_buckets = max(1, os.path.getsize(path) // BUCKET_BYTES + 1)
    with tempfile.TemporaryDirectory(prefix="tieaware-buckets-") as folder:
        handles = [open(Path(folder, f"{b}.tsv"), "w", encoding="utf-8", newline="") for b in range(n_buckets)]
        try:
            seen = set()
            for qid, docid, score, _ in _run_lines(path):
                if qid not in seen:
                    seen.add(qid)
                    order.append(qid)
                handles[zlib.crc32(qid.encode()) % n_buckets].write(f"{qid}\t{docid}\t{score!r}\n")
        finally:
            for handle in handles:
                handle.close()
        for b in range(n_buckets):
            chunk: dict = {}
            with open(Path(folder, f"{b}.tsv"), encoding="utf-8", newline="") as handle:
                for qid, docid, score in csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE):
                    put_value(chunk, qid, docid, float(score), str(path))
            if chunk:
                yield chunk


def evaluate_stream(qrels, run, specs: list, make_comparable: bool, oblivious: str, *,
                    chunk_queries: int | None = None, per_query_out=None) -> tuple[list, dict]:
    """(query ids, {metric: per-query DataFrame}) of a TREC run file read chunk by chunk.

    Same query order, values and errors as the in-memory path (`evaluation.per_query_tables`).
    """
    from .evaluation import per_query_tables

    if not isinstance(run, (str, os.PathLike)):
        raise InputError(f"stream=True reads a TREC run file; got a {type(run).__name__} (evaluate it in memory).")
    chunk_queries = CHUNK_QUERIES if chunk_queries is None else chunk_queries
    if isinstance(chunk_queries, bool) or not isinstance(chunk_queries, int) or chunk_queries <= 0:
        raise InputError(f"stream must be True or a positive number of queries per chunk, got {chunk_queries!r}.")
    path = _checked_path(run, "run")
    qrels = load_qrels(qrels)
    if is_ranx_qrels(qrels):
        qrels = qrels.to_dict()
    order: list = []
    pieces: dict = {spec.name: [] for spec in specs}
    extra: list = []
    written = False

    def evaluate_chunk(chunk: dict) -> None:
        nonlocal written
        judged = {q: chunk[q] for q in chunk if q in qrels}
        extra.extend(q for q in chunk if q not in qrels)
        if not judged:
            return
        query_ids, tables = per_query_tables({q: qrels[q] for q in judged}, judged, specs, False, oblivious,
                                             from_file=True)
        frames = {name: per_query_frame(query_ids, table) for name, table in tables.items()}
        for name, frame in frames.items():
            pieces[name].append(frame)
        if per_query_out is not None:
            write_per_query(per_query_out, frames, oblivious, append=written)
            written = True

    try:
        for chunk in _grouped_chunks(_run_lines(path), chunk_queries):
            order.extend(chunk)
            evaluate_chunk(chunk)
    except _Unsorted as reason:
        warnings.warn(f"run file {str(path)!r} is not grouped by query ({reason}): partitioning it by query "
                      "first (one extra pass).", RuntimeWarning, stacklevel=3)
        order, extra, pieces, written = [], [], {spec.name: [] for spec in specs}, False
        for chunk in _bucket_chunks(path, order):
            evaluate_chunk(chunk)
    in_run = set(order)
    missing = [q for q in qrels if q not in in_run]
    if (missing or extra) and not make_comparable:
        raise QueryMismatchError(missing, extra)
    if missing:  # make_comparable: scored as empty runs, after the run's queries, as in memory
        evaluate_chunk({q: {} for q in missing})
    query_ids = [q for q in order if q in qrels] + missing
    frames = {name: (pd.concat(parts) if parts else _empty_frame()).reindex(pd.Index(query_ids, name="query_id"))
              for name, parts in pieces.items()}
    return query_ids, frames


def _empty_frame() -> pd.DataFrame:
    return pd.DataFrame(columns=PER_QUERY_COLUMNS, index=pd.Index([], name="query_id"), dtype=float)


def write_per_query(path, frames: dict, oblivious: str, *, append: bool) -> None:
    """Per-query rows (metric, query_id, statistics, oblivious_order) to TSV, appended after the
    first write; a ``.parquet`` path is written whole (no appending: give all frames at once)."""
    rows = pd.concat([frame.reset_index().assign(metric=name, oblivious_order=oblivious)
                      for name, frame in frames.items()])[_ROW_COLUMNS]
    path = Path(path)
    if path.suffix.lower() in (".parquet", ".parq"):
        if append:
            rows = pd.concat([pd.read_parquet(path), rows])
        rows.to_parquet(path, index=False)
        return
    rows.to_csv(path, sep="\t", index=False, mode="a" if append else "w", header=not append,
                float_format="%.17g", lineterminator="\n")


def merge(paths) -> EvaluationReport:
    """The `EvaluationReport` of per-query tables written by ``per_query_out`` (one per shard of
    queries, TSV or Parquet): the same numbers a single evaluation of every query gives, queries
    in the order of the files given. A query in two shards, or shards evaluated with different
    tie orders, is an error."""
    paths = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    if not paths:
        raise InputError("merge needs at least one per-query table.")
    tables = []
    for path in paths:
        path = _checked_path(path, "per-query table")
        table = (pd.read_parquet(path) if path.suffix.lower() in (".parquet", ".parq")
                 else pd.read_csv(path, sep="\t", dtype={"query_id": str, "metric": str}, keep_default_na=False,
                                  na_values=[""]))
        if list(table.columns) != _ROW_COLUMNS:
            raise InputError(f"{path}: a per-query table has the columns {_ROW_COLUMNS}, "
                             f"this one {list(table.columns)}.")
        tables.append(table)
    rows = pd.concat(tables, ignore_index=True)
    orders = rows["oblivious_order"].unique()
    if len(orders) > 1:
        raise InputError(f"per-query tables were evaluated with different tie orders: {sorted(orders)}.")
    duplicated = rows.duplicated(["metric", "query_id"])
    if duplicated.any():
        first = rows[duplicated].iloc[0]
        raise InputError(f"query {first['query_id']!r} appears in more than one table (metric {first['metric']!r}).")
    report = EvaluationReport()
    for name in pd.unique(rows["metric"]):
        frame = rows[rows["metric"] == name].set_index("query_id")[PER_QUERY_COLUMNS].astype(float)
        report[name] = MetricResult(name, frame, str(orders[0]))
    return report
