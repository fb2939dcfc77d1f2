"""`tieaware` console script: ``eval``, ``compare``, ``ties``, ``plot``, ``merge``, ``score``, ``warmup``.

Exit codes: 0 success; 1 a check failed (``--fail-range-above``, ``--fail-bias-above``, ``--fail-on-flag``);
2 bad input or usage, reported as one line on stderr (``tieaware --traceback ...``
shows the traceback), also after ``--keep-going`` printed what it could. Anything else is a bug and
shows its traceback. ``score`` imports torch (the ``hps`` extra) when it runs; no other command does.

trec_eval's habits: ``-m`` once per measure (options may come before the files), ``official`` when no
``-m`` is given, ``-q``, ``-c``, ``-l``, ``-M``, ``-o trec`` in trec_eval's layout. Nothing heavier than
the standard library is imported to parse arguments, so ``--help`` and usage errors answer at once.
"""
from __future__ import annotations

import argparse
import contextlib
import csv
import dataclasses
import gc
import math
import os
import sys
import warnings
from collections.abc import Iterable
from pathlib import Path

from . import __version__
from .display import columns_table, fixed, frame_columns, plain_table, progress
from .errors import InputError, QueryMismatchError, TieawareError, UnknownMetricError
from .metrics import expand_names, parse_metric
from .outputs import atomic_output, check_outputs, check_utf8_ids
from .registry import DEFAULT_KS, OBLIVIOUS_ORDERS, TREC_PRINT_ORDER, family

EXIT_OK, EXIT_CHECK_FAILED, EXIT_ERROR = 0, 1, 2
OUTPUT_FORMATS = ("table", "tsv", "csv", "json", "trec")
HPS_MODES = {"none": "none", "logits": "logits", "upcast": "logits", "head": "head"}
SCORERS = ("bi-encoder", "cross-encoder", "yes-no", "grade")
# A copy of a library constant, so building the parser imports no numpy/pandas/numba/ranx
# (tests/test_cli_trec_habits.py checks it equals the original).
STAT_TESTS = ("student", "fisher", "tukey")  # comparison.STAT_TESTS
CORRECTIONS = ("bonferroni", "holm", "fdr_bh")  # comparison_statistics.CORRECTIONS
#: trec_eval's print-only line of the ``all`` block (``-m runid``; in ``official`` too).
TREC_LINES = ("runid",)


# ------------------------------------------------------------------ helpers
def _say(command: str, kind: str, message: str) -> None:
    """One line on stderr: ``tieaware eval: warning: ...``."""
    print(f"tieaware {command}: {kind}: {' '.join(message.split())}", file=sys.stderr)


def _metric_names(values: list | None, relevance_level: int, *, command: str = "eval",
                  keep_going: bool = False) -> tuple[list, list, bool]:
    """(metric names, trec_eval print-only lines asked for, whether a name was rejected).

    ``values`` are the ``-m`` values: each may be a trec_eval list (``P.5,10``), a family that takes
    trec_eval's default cutoffs (``P``) or a group (``official``, ``all_trec``; its warning about the
    members tieaware leaves out becomes one stderr line); repeats are dropped. None (no ``-m``):
    trec_eval's default, ``official``, silently (the help says what it leaves out). Every name is parsed
    here, so an unknown one fails before any file is read; with ``keep_going`` it is reported on stderr
    and skipped."""
    if values is None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return expand_names("official"), list(TREC_LINES), False
    names, lines, rejected = [], [], False
    for value in values:
        if value in TREC_LINES or value in ("official", "all_trec"):  # trec_eval prints these lines for both groups
            lines += [line for line in (TREC_LINES if value not in TREC_LINES else (value,)) if line not in lines]
            if value in TREC_LINES:
                continue
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            expanded = expand_names(value)
        for warning in caught:
            _say(command, "warning", str(warning.message))
        for name in expanded:
            if name in names:
                continue
            try:
                parse_metric(name, relevance_level)
            except UnknownMetricError as exc:
                if not keep_going:
                    raise
                _say(command, "error", f"{exc} (--keep-going: the other metrics go on)")
                rejected = True
                continue
            names.append(name)
    if not names and not lines:
        raise UnknownMetricError("No metric left to evaluate." if rejected else "No metric given.")
    return names, lines, rejected


def _trec_eval_name(name: str, relevance_level: int, max_docs: int | None = None) -> str:
    """The name trec_eval prints for a metric (``P_10``, ``ndcg_cut_10``, ``map``, ``recip_rank``), when
    trec_eval's measure of that name at this ``-l`` (and ``-M``: ``num_rel_ret.N`` is its ``num_rel_ret``)
    is the same metric; else the name as given (``ndcg@10`` keeps ranx's gains, ``hits@10`` has no
    trec_eval measure)."""
    spec = parse_metric(name, relevance_level)
    if family(spec.family).trec_depth and spec.k is not None and spec.k == max_docs:
        spec = dataclasses.replace(spec, k=None)
    base = family(spec.family).trec_name(spec.k is not None)
    if base is None:
        return name
    trec_name = base if spec.k is None else f"{base}_{spec.k}"
    try:
        same = parse_metric(trec_name, relevance_level).with_name(name) == spec
    except UnknownMetricError:
        same = False
    return trec_name if same else name


def _at_depth(name: str, max_docs: int, relevance_level: int) -> str:
    """``-M N``: ``num_ret`` and ``num_rel_ret`` as trec_eval counts them, over the top N documents
    (``num_rel_ret.N``: Hits@N, tie-aware; `_top_with_ties` may keep more than N); other names as given."""
    spec = parse_metric(name, relevance_level)
    if not family(spec.family).trec_depth or spec.k is not None:
        return name
    deep = f"{spec.family}.{max_docs}"
    if parse_metric(deep, relevance_level) != dataclasses.replace(spec, name=deep, k=max_docs):
        raise InputError(f"-M {max_docs}: {name!r} counts at another relevance level than -l {relevance_level}; "
                         f"name it {spec.family} with -l {spec.relevance_level:g}.")
    return deep


def _trec_order_key(trec_name: str) -> tuple:
    """trec_eval's print order: its measure table, then cutoffs ascending; other names after, as given."""
    base, _, k = trec_name.rpartition("_")
    if base in TREC_PRINT_ORDER and k.isdigit():
        return TREC_PRINT_ORDER.index(base), int(k)
    if trec_name in TREC_PRINT_ORDER:
        return TREC_PRINT_ORDER.index(trec_name), 0
    return len(TREC_PRINT_ORDER), 0


def _one_stdin(qrels, runs: list) -> None:
    """``-`` (standard input) names the qrels or one run, not both."""
    if sum(path == "-" for path in (qrels, *runs)) > 1:
        raise InputError("'-' (standard input) can be the qrels or one run, not both.")


def _run_names(paths: list) -> list:
    """File stems as run names, or the paths as given when two stems coincide; a run given twice is an error."""
    from .inputs import file_stem

    seen = set()
    for path in paths:
        resolved = Path(path).resolve()
        if resolved in seen:
            raise InputError(f"run {path!r} is given twice.")
        seen.add(resolved)
    stems = [file_stem(p) for p in paths]
    return stems if len(set(stems)) == len(stems) else list(paths)


def _shared_queries(qrels: dict, run: dict, path, command: str) -> dict:
    """The run without its queries that have no qrels (trec_eval ignores them too), with one stderr line
    naming how many were dropped and the first few."""
    extra = [qid for qid in run if qid not in qrels]
    if not extra:
        return run
    _warn_no_qrels(command, path, extra, len(run))
    return {qid: docs for qid, docs in run.items() if qid in qrels}


def _warn_no_qrels(command: str, path, extra: list, n_queries: int | None = None) -> None:
    """The stderr line for a run's queries without qrels (not evaluated, as in trec_eval): how many, of
    how many when known, and the first few."""
    of = "" if n_queries is None else f" {n_queries}"
    _say(command, "warning", f"run {path}: {len(extra)} of its{of} queries have no qrels and are not evaluated "
         f"(e.g. {extra[:5]}), as trec_eval does.")


def _shared_runs(qrels_path, paths: list, command: str) -> tuple:
    """(qrels, {run name: run}) for compare and plot: each run read once, its queries without qrels
    dropped with a warning (`_shared_queries`)."""
    from .inputs import load_qrels, load_run

    qrels = load_qrels(qrels_path)
    if not isinstance(qrels, dict):
        qrels = qrels.to_dict()
    runs = {}
    for name, path in zip(_run_names(paths), paths):
        run = load_run(path)
        runs[name] = _shared_queries(qrels, run, path, command) if isinstance(run, dict) else run
    return qrels, runs


@contextlib.contextmanager
def _cli_remedy():
    """A query mismatch error names the CLI's remedy, -c, not the Python keyword."""
    try:
        yield
    except QueryMismatchError as exc:
        raise QueryMismatchError(exc.missing, exc.extra, remedy="pass -c (--make-comparable)") from None


def _top_with_ties(run: dict, depth: int, path, command: str) -> dict:
    """``-M depth``: per query the ``depth`` highest-scored documents plus every document tied with the
    ``depth``-th. trec_eval keeps exactly ``depth`` (sorted by score, then doc id descending), so which
    members of a tie group straddling the cut it drops is decided by doc ids, not scores; tieaware keeps
    the whole group (no tie order decides what is evaluated) and says on stderr where that happened.
    Without such a group the kept documents are trec_eval's."""
    out, widened = {}, {}
    for qid, docs in run.items():
        scores = list(docs.values())
        if len(scores) <= depth or any(s != s for s in scores):  # NaN: left for the evaluation to name
            out[qid] = docs
            continue
        floor = sorted(scores, reverse=True)[depth - 1]
        out[qid] = {doc: score for doc, score in docs.items() if score >= floor}
        if len(out[qid]) > depth:
            widened[qid] = len(out[qid]) - depth
    if widened:
        _say(command, "warning", f"-M {depth}: run {path}: a tie group straddles rank {depth} in {len(widened)} "
             f"queries (e.g. {list(widened)[:5]}); kept all {sum(widened.values())} tied documents beyond rank "
             f"{depth} instead of cutting the group in trec_eval's doc-id order.")
    return out


def _digits(text: str) -> int:
    value = int(text)
    if not 0 <= value <= 15:
        raise argparse.ArgumentTypeError(f"must lie in 0..15 (float64 holds ~15 significant digits), got {value}")
    return value


def _positive_int(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {value}")
    return value


def _non_negative_int(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be an integer >= 0, got {value}")
    return value


def _cutoffs(text: str) -> list:
    """``-k 10`` or ``-k 5,10,20``: one or more positive cutoffs in one value."""
    return [_positive_int(part) for part in text.split(",")]


def _non_negative(text: str) -> float:
    value = float(text)
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, got {text}")
    return value


def _probability(text: str) -> float:
    value = float(text)
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"must lie in (0, 1], got {text}")
    return value


def _write_frame(frame, fmt: str, digits: int) -> None:
    """A flat DataFrame as `_write_columns` writes its columns."""
    _write_columns(*frame_columns(frame, index=False), fmt, digits)


def _write_columns(headers: list[str], columns: list[list], fmt: str, digits: int) -> None:
    """Columns of values as an aligned table, TSV, CSV (floats at full precision, NaN and None empty) or a
    JSON list of objects (NaN as null)."""
    if fmt == "table":
        sys.stdout.write(columns_table(headers, columns, digits) + "\n")
    elif fmt in ("tsv", "csv"):
        writer = csv.writer(sys.stdout, delimiter="\t" if fmt == "tsv" else ",", lineterminator="\n")
        writer.writerow(headers)
        writer.writerows([_csv_cell(value) for value in row] for row in zip(*columns))
    else:
        from .report import strict_json

        sys.stdout.write(strict_json([dict(zip(headers, row)) for row in zip(*columns)], indent=1) + "\n")


def _csv_cell(value: object) -> object:
    if isinstance(value, float):
        return "" if math.isnan(value) else repr(float(value))
    return "" if value is None else value


# --------------------------------------------------------------------- eval
def _eval_columns(reports: dict, per_query: bool) -> tuple[list[str], list[list]]:
    """(headers, columns) of every run's rows: run, metric, [query,] expected, oblivious, min, max, range,
    bias, tie_std; with ``per_query`` each run's per-query rows come first and its means follow with no
    query (None), so a query named ``all`` stays a query; only ``-o trec`` prints the means as ``all``,
    as trec_eval does."""
    import numpy as np

    from .report import SUMMARY_COLUMNS

    rows: list[list] = []
    for name, report in reports.items():
        if per_query:
            for metric, result in report.items():
                values = {c: result.per_query_values(c) for c in SUMMARY_COLUMNS if c != "tie_std"}
                values["tie_std"] = np.sqrt(result.per_query_values("variance").clip(min=0.0))
                table = np.column_stack([values[c] for c in SUMMARY_COLUMNS]).tolist()
                rows += ([name, metric, str(query), *row] for query, row in zip(result.query_ids, table))
        no_query = [None] if per_query else []
        rows += ([name, result.name, *no_query, *(getattr(result, c) for c in SUMMARY_COLUMNS)]
                 for result in report.values())
    headers = ["run", "metric", *(["query"] if per_query else []), *SUMMARY_COLUMNS]
    return headers, [list(column) for column in zip(*rows)]


def _write_trec(reports: dict, runids: dict, lines: list, relevance_level: int, digits: int, per_query: bool,
                max_docs: int | None = None) -> None:
    """trec_eval's layout with E[M] in place of trec_eval's tie-order value: ``%-22s\\t%s\\t%6.4f``
    (``--digits`` sets the 4), measures named and ordered as trec_eval prints them; with ``-q`` the
    per-query lines, queries in trec_eval's (byte-wise) order; then ``all``: ``runid`` (when asked for,
    as in trec_eval's default set) and the means. Counts (``num_q``, ...) are sums, printed as
    trec_eval's ``%ld`` where whole (an expectation at ``-M`` may not be); ``num_q`` only in ``all``.
    ``reports``: {run name: `EvaluationReport`}; read without pandas."""
    out = sys.stdout
    for run, report in reports.items():
        first: dict[str, str] = {}  # one line per trec_eval name, as trec_eval prints a measure once
        for metric in report:
            first.setdefault(_trec_eval_name(metric, relevance_level, max_docs), metric)
        order = sorted(first, key=_trec_order_key)
        counts = {metric for metric in first.values() if report[metric].aggregate == "sum"}
        if per_query:
            query_ids = [str(q) for q in next(iter(report.values())).query_ids]
            values = {metric: report[metric].per_query_values("expected").tolist() for metric in first.values()}
            for i in sorted(range(len(query_ids)), key=lambda i: query_ids[i].encode("utf-8")):
                for trec_name in order:
                    if trec_name != "num_q":  # trec_eval prints num_q in the all block only
                        metric = first[trec_name]
                        number = _trec_value(values[metric][i], metric in counts, digits)
                        out.write(f"{trec_name:<22}\t{query_ids[i]}\t{number}\n")
        if "runid" in lines:
            out.write(f"{'runid':<22}\tall\t{runids[run]}\n")
        for trec_name in order:
            metric = first[trec_name]
            out.write(f"{trec_name:<22}\tall\t{_trec_value(report[metric].expected, metric in counts, digits)}\n")


def _trec_value(number: float, count: bool, digits: int) -> str:
    """trec_eval's ``%6.4f``, or its ``%ld`` for a count that is whole."""
    return str(int(number)) if count and float(number).is_integer() else fixed(number, digits, 6)


def _chunk_queries(args) -> int | None:
    return None if args.stream in (None, True) else args.stream


def _run_read_early(args):
    """The one TREC run file of ``args`` already being read (`streaming.RunChunks`) while the caller reads
    the qrels, or None (several runs, ``-M``, another format, or a run that raises: it raises later, in
    its turn)."""
    if len(args.runs) != 1 or args.max_docs is not None:
        return None
    from .inputs import file_format
    from .streaming import RunChunks

    try:
        return RunChunks(args.runs[0], _chunk_queries(args)) if file_format(args.runs[0]) == "trec" else None
    except TieawareError:
        return None


def _read_in_memory(form: str, args) -> bool:
    """Whether `_evaluate_file` reads a run file of format ``form`` in memory rather than chunk by chunk."""
    return args.max_docs is not None or form != "trec"


def _evaluate_file(qrels, path, form: str, metrics: list, args, reader=None) -> tuple:
    """(report, run tag or None) of one run file (of `inputs.file_format` ``form``) evaluated as trec_eval
    evaluates it: queries without qrels dropped with a warning, ``-M`` applied; qrels queries the run lacks
    are an error without ``-c`` (trec_eval 10 stops too). A TREC run file is read once, chunk by chunk of
    whole queries (`streaming.evaluate_file`; ``--stream N``: N queries a chunk), so memory grows with the
    chunk, not the run; with ``-M``, and JSON, Parquet or LZ4 runs, the run is read in memory (``qrels``
    then a dict, `_read_in_memory`)."""
    from .evaluation import evaluate
    from .inputs import FORMAT_NAMES, load_run, without_identical_ids

    trec = form == "trec"
    if not _read_in_memory(form, args):
        from .streaming import evaluate_file

        try:
            with warnings.catch_warnings(record=True) as caught:  # a run not grouped by query: one stderr line
                report, streamed = evaluate_file(qrels, path if reader is None else reader, metrics,
                                                 relevance_level=args.relevance_level,
                                                 oblivious=args.oblivious, make_comparable=args.make_comparable,
                                                 chunk_queries=_chunk_queries(args),
                                                 per_query_out=args.per_query_out,
                                                 ignore_identical_ids=args.ignore_identical_ids)
            for warning in caught:
                _say("eval", "warning", str(warning.message))
        except QueryMismatchError as exc:
            if exc.extra:
                _warn_no_qrels("eval", path, exc.extra)
            raise QueryMismatchError(exc.missing, []) from None
        if streamed.extra:
            _warn_no_qrels("eval", path, streamed.extra, streamed.run_queries)
        return report, streamed.run_tag
    if args.stream and args.max_docs is not None:
        raise InputError("-M reads each run in memory: drop --stream (or cut the run file first).")
    if args.stream:
        raise InputError(f"--stream reads TREC run files; this is a {FORMAT_NAMES[form]} run, read in memory: "
                         "drop --stream.")
    if trec:
        from .readers.trec_files import read_trec

        run, tag = read_trec(path, "run")
    else:
        run, tag = load_run(path), None
    if args.ignore_identical_ids:  # before -M, as BEIR drops them before ranking
        run = without_identical_ids(run)
    if isinstance(run, dict):
        run = _shared_queries(qrels, run, path, "eval")
        if args.max_docs is not None:
            run = _top_with_ties(run, args.max_docs, path, "eval")
    elif args.max_docs is not None:
        raise InputError("-M takes TREC or ranx JSON run files.")
    result = evaluate(qrels, run, metrics, make_comparable=args.make_comparable, oblivious=args.oblivious,
                      relevance_level=args.relevance_level, per_query_out=args.per_query_out,
                      ignore_identical_ids=args.ignore_identical_ids)  # none left: recorded in per_query_out
    return result, tag


def _evaluate_runs(args, metrics: list, reader) -> tuple[dict, dict]:
    """({run name: report}, {run name: runid}) of the runs of ``args`` (``reader``: `_run_read_early`)."""
    from .inputs import file_format
    from .streaming import qrels_of

    qrels = qrels_of(args.qrels)  # a TREC qrels file as columns
    reports, runids = {}, {}
    named: Iterable[tuple[str, str]] = list(zip(_run_names(args.runs), args.runs))
    if sys.stderr.isatty():  # tqdm is imported only where its bar can show
        named = progress(named, unit="run", desc="evaluating", delay=1.0, leave=False)
    for name, path in named:
        try:
            form = file_format(path)
            if _read_in_memory(form, args) and not isinstance(qrels, dict):
                qrels = qrels.to_dict()  # once: the runs after this one take the dicts too
            report, tag = _evaluate_file(qrels, path, form, metrics, args, reader)
        except QueryMismatchError as exc:
            cli_error = QueryMismatchError(exc.missing, exc.extra, remedy="pass -c (--make-comparable)")
            raise InputError(f"run {path}: {cli_error}") from None
        except InputError as exc:
            raise InputError(f"run {path}: {exc}") from None
        if args.per_query:
            check_utf8_ids(next(iter(report.values())).query_ids, f"run {name}")
        reports[name] = report
        runids[name] = tag or name
    return reports, runids


def cmd_eval(args) -> int:
    metrics, lines, rejected = _metric_names(args.metrics, args.relevance_level, keep_going=args.keep_going)
    asked = [value for value in args.metrics or () if value in TREC_LINES]
    if asked and args.output != "trec":
        raise InputError(f"{' and '.join(asked)}: lines of -o trec only; drop -m {asked[0]} for -o {args.output}.")
    if not metrics:
        raise UnknownMetricError("-o trec needs a metric besides runid.")
    if args.max_docs is not None:
        metrics = list(dict.fromkeys(_at_depth(name, args.max_docs, args.relevance_level) for name in metrics))
    if args.per_query_out and len(args.runs) > 1:
        raise InputError("--per-query-out takes one run (write one table per run, then `tieaware merge` them).")
    check_outputs([args.per_query_out], [args.qrels, *args.runs])
    _one_stdin(args.qrels, args.runs)
    reader = _run_read_early(args)
    try:
        reports, runids = _evaluate_runs(args, metrics, reader)
    finally:
        if reader is not None:
            reader.close()
    if args.output == "trec":
        _write_trec(reports, runids, lines, args.relevance_level, args.digits, args.per_query, args.max_docs)
    else:
        headers, columns = _eval_columns(reports, args.per_query)
        if args.output == "table":
            headers = [f"obl[{args.oblivious}]" if header == "oblivious" else header for header in headers]
            if args.per_query:
                columns[2] = ["" if query is None else query for query in columns[2]]
        _write_columns(headers, columns, args.output, args.digits)
    if rejected:
        return EXIT_ERROR
    exceeded = False
    for statistic, limit in (("range", args.fail_range_above), ("|bias|", args.fail_bias_above)):
        if limit is None:
            continue
        for run, report in reports.items():
            for metric, result in report.items():
                value = abs(getattr(result, statistic.strip("|")))
                if value > limit:
                    print(f"tieaware: {run} {metric}: {statistic} {value:.6g} > {limit:g}", file=sys.stderr)
                    exceeded = True
    return EXIT_CHECK_FAILED if exceeded else EXIT_OK


# ------------------------------------------------------------------ compare
def cmd_compare(args) -> int:
    from .comparison import compare

    metrics, lines, rejected = _metric_names(args.metrics, args.relevance_level, command="compare",
                                             keep_going=args.keep_going)
    if lines:
        raise InputError(f"{' and '.join(lines)} are lines of `tieaware eval -o trec` only.")
    check_outputs([args.plot], [args.qrels, *args.runs])
    if args.plot:
        from .figures import check_image_path

        check_image_path(args.plot)
    qrels, runs = _shared_runs(args.qrels, args.runs, "compare")
    with _cli_remedy(), warnings.catch_warnings(record=True) as caught:  # one stderr line each, no source paths
        warnings.simplefilter("always")
        report = compare(qrels, runs, metrics, stat_test=None if args.stat_test == "none" else args.stat_test,
                         n_permutations=args.permutations, max_p=args.max_p, random_seed=args.seed,
                         rounding_digits=args.digits, make_comparable=args.make_comparable,
                         oblivious=args.oblivious, relevance_level=args.relevance_level,
                         show_progress=sys.stderr.isatty(), ignore_identical_ids=args.ignore_identical_ids,
                         correction=None if args.correction == "none" else args.correction, ci=args.ci,
                         flip_samples=args.flip_samples)
    said = set()
    for warning in caught:
        message = str(warning.message).removeprefix("tieaware: ")
        if "scipy" in Path(warning.filename).parts:  # numpy's words from inside the test
            message = (f"the significance test ({args.stat_test}) warned '{message}': per-query differences that "
                       "are (nearly) constant give p-values that are NaN, 0 or unreliable.")
        if message not in said:
            said.add(message)
            _say("compare", "warning", message)
    if args.output == "table":
        sys.stdout.write(report.to_table() + "\n")
    elif args.output == "latex":
        sys.stdout.write(report.to_latex() + "\n")
    elif args.output == "json":
        sys.stdout.write(report.to_json(indent=1) + "\n")
    else:
        _write_frame(report.pairs.reset_index() if args.pairs else report.summary_frame().reset_index(),
                     args.output, args.digits)
    if args.plot:
        report.plot(args.plot)
    if args.fail_on_flag and not report.flagged.empty:
        print(f"tieaware: tie order matters for {len(report.flagged)} comparison(s)", file=sys.stderr)
        return EXIT_CHECK_FAILED
    return EXIT_ERROR if rejected else EXIT_OK


# --------------------------------------------------------------------- ties
def cmd_ties(args) -> int:
    import pandas as pd

    from .inputs import load_run
    from .tie_census import census

    frames = {name: census(load_run(path), ks=args.k or DEFAULT_KS)
              for name, path in zip(_run_names(args.runs), args.runs)}
    frame = pd.concat(frames, names=["run", "k"]).reset_index()
    _write_frame(frame, args.output, args.digits)
    return EXIT_OK


# --------------------------------------------------------------------- plot
def cmd_plot(args) -> int:
    from .comparison import plot_at_k
    from .figures import check_image_path

    check_outputs([args.out], [args.qrels, *args.runs])
    check_image_path(args.out)
    qrels, runs = _shared_runs(args.qrels, args.runs, "plot")
    families = [family for value in args.metrics or ["ndcg"] for family in value.split(",") if family]
    with _cli_remedy():
        plot_at_k(qrels, runs, families, args.k or DEFAULT_KS, args.out,
                  oblivious=args.oblivious, relevance_level=args.relevance_level,
                  make_comparable=args.make_comparable, title=args.title)
    print(f"tieaware: wrote {args.out}", file=sys.stderr)
    return EXIT_OK


# -------------------------------------------------------------------- score
def cmd_score(args) -> int:
    from . import hps  # torch and transformers: only here
    from .inputs import read_texts
    from .outputs import write_trec_run
    from .tie_census import census

    scorer_class = {"bi-encoder": hps.BiEncoder, "cross-encoder": hps.CrossEncoder, "yes-no": hps.YesNoReranker,
                    "grade": hps.GradeReranker}
    options = dict(dtype=args.dtype, hps=HPS_MODES[args.hps], batch_size=args.batch_size, device=args.device,
                   max_length=args.max_length, show_progress=sys.stderr.isatty())
    if args.scorer == "bi-encoder":
        options.update(pooling=args.pooling, normalize=not args.no_normalize, query_prefix=args.query_prefix,
                       doc_prefix=args.doc_prefix)
    elif args.scorer == "cross-encoder":
        options.update(positive_index=args.positive_index)
    elif args.scorer == "grade":
        low, _, high = args.grades.partition("-")
        if not (low.isdigit() and high.isdigit() and int(low) < int(high)):
            raise InputError(f"--grades {args.grades!r}: give the range as MIN-MAX, e.g. 0-10")
        options.update(grades=range(int(low), int(high) + 1), score=args.grade_score)
    if args.scorer in ("yes-no", "grade") and args.instruction is not None:
        options.update(instruction=args.instruction)
    if args.candidates is None and args.scorer != "bi-encoder":
        raise InputError(f"A {args.scorer} reranks: give --candidates RUN (only a bi-encoder searches the corpus).")
    check_outputs([args.out], [args.queries, args.corpus, args.candidates])
    queries = read_texts(args.queries)
    corpus = read_texts(args.corpus, with_title=args.with_title)
    if args.ray:
        if args.candidates is None:
            raise InputError("--ray reranks: give --candidates RUN.")
        from .hps.distributed import rerank_on_ray

        if args.address:
            import ray

            ray.init(address=args.address, log_to_driver=False)
        run = rerank_on_ray(args.scorer, args.model, queries, corpus, args.candidates, k=args.k, name=args.name,
                            concurrency=args.actors, num_gpus=args.gpus_per_actor, **options)
    elif args.candidates is None:
        run = scorer_class[args.scorer](args.model, **options).search(queries, corpus, k=args.k or 100,
                                                                      name=args.name)
    else:
        run = scorer_class[args.scorer](args.model, **options).rerank(queries, corpus, args.candidates, k=args.k,
                                                                      name=args.name)
    scores = run.to_dict()
    name = (args.name or run.name or "tieaware").replace(" ", "_")
    if args.out:
        with atomic_output(args.out) as temporary, open(temporary, "w", encoding="utf-8") as handle:
            lines = write_trec_run(scores, name, handle)
    else:
        lines = write_trec_run(scores, name, sys.stdout)
    at_10 = census(scores, ks=(10,)).loc[10]
    print(f"tieaware: {lines} lines, {len(scores)} queries{' to ' + args.out if args.out else ''}; "
          f"tie census: unique scores@10 {at_10['unique_scores']:.2f}, "
          f"mean tie-group size@10 {at_10['mean_tie_group_size']:.3f}", file=sys.stderr)
    return EXIT_OK


def cmd_merge(args) -> int:
    from .report import SUMMARY_COLUMNS
    from .streaming import merge

    report = merge(args.tables)
    frame = report.to_dataframe()[SUMMARY_COLUMNS].reset_index()
    _write_frame(frame, args.output, args.digits)
    return EXIT_OK


def cmd_warmup(args) -> int:
    from .warming import warmup

    warmup(ranx_id_lengths=args.ranx_id_length or ())
    return EXIT_OK


# ------------------------------------------------------------------- parser
def _evaluation_options() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--oblivious", choices=OBLIVIOUS_ORDERS, default="trec_eval",
                        help="whose tie order gives the oblivious value (default: trec_eval: score desc, docid desc)")
    common.add_argument("-l", "--relevance-level", type=int, default=1, metavar="L",
                        help="judgments >= L are relevant (default 1)")
    common.add_argument("-c", "--make-comparable", action="store_true",
                        help="score qrels queries missing from a run as 0 (as trec_eval -c; without it they are "
                        "an error); run queries without qrels are dropped either way, with a warning")
    return common


def _identical_ids_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--ignore-identical-ids", action="store_true",
                        help="drop retrieved documents whose id equals the query id, as BEIR's "
                        "EvaluateRetrieval.evaluate does by default (trec_eval keeps them)")


def _metric_option(parser: argparse.ArgumentParser, help_text: str, **kwargs) -> None:
    """``-m NAME``, once per name (trec_eval's habit), so options may come before or after the files."""
    parser.add_argument("-m", "--metric", dest="metrics", action="append", metavar="METRIC", help=help_text,
                        **kwargs)


def _keep_going_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--keep-going", action="store_true",
                        help="report a metric name tieaware rejects on stderr and evaluate the others; the exit "
                        "code is still 2")


class _ListMetrics(argparse.Action):
    """``--list-metrics``: the metric registry as a table, then exit (before other arguments are checked)."""

    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        from .metrics import list_metrics

        rows = list_metrics()
        try:
            sys.stdout.write(plain_table(list(rows[0]), [list(row.values()) for row in rows]) + "\n")
            sys.stdout.flush()
        except BrokenPipeError:  # `tieaware eval --list-metrics | head`
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        parser.exit()


_METRIC_HELP = ("a metric in ranx, trec_eval or ir_measures syntax (ndcg@10, ndcg_cut.10, nDCG@10); repeat -m for "
                "more; trec_eval's forms expand: P.5,10 (a list), P (its default cutoffs), official, all_trec")
_DEFAULT_HELP = ("; default: trec_eval's `official` measures tieaware computes (num_q, num_ret, num_rel, "
                 "num_rel_ret, map, Rprec, bpref, recip_rank, P_5 ... P_1000, and with -o trec the runid line); "
                 "it leaves out gm_map and iprec_at_recall")


class _Parser(argparse.ArgumentParser):
    """The top-level parser; ``subcommands`` maps each command to its parser, for main's usage errors."""

    subcommands: dict[str, argparse.ArgumentParser]


def build_parser() -> _Parser:
    parser = _Parser(
        prog="tieaware", description="Tie-aware retrieval evaluation: E[M], min, max, range, bias and variance "
        "of IR metrics over all orderings of tied scores.")
    parser.add_argument("--version", action="version", version=f"tieaware {__version__}")
    parser.add_argument("--traceback", action="store_true",
                        help="show the Python traceback of an input error too (other errors always show it)")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND",
                                     parser_class=argparse.ArgumentParser)
    common = _evaluation_options()

    ev = commands.add_parser("eval", parents=[common], help="evaluate runs tie-aware",
                             description="Evaluate runs: E[M], oblivious value, min, max, range, bias, tie_std. "
                             "Run queries without qrels are dropped with a warning, as trec_eval drops them.")
    ev.add_argument("--list-metrics", action=_ListMetrics, help="print every metric name tieaware reads and exit")
    ev.add_argument("qrels", help="qrels file, plain or gzip/bzip2/xz; '-' reads standard input")
    ev.add_argument("runs", nargs="+", metavar="run", help="run files (TREC, JSON, Parquet, LZ4); a pipe, a FIFO "
                    "or '-' (standard input, if the qrels are not read from it) is read once")
    _metric_option(ev, _METRIC_HELP + _DEFAULT_HELP)
    _keep_going_option(ev)
    ev.add_argument("-q", "--per-query", action="store_true",
                    help="per-query values too (the mean rows have no query; with -o trec: 'all', as trec_eval)")
    ev.add_argument("-M", "--max-docs", type=_positive_int, metavar="N",
                    help="evaluate each query's top N documents (trec_eval -M), plus every document tied with the "
                    "N-th: a tie group across rank N is kept whole, with a warning, instead of being cut in an "
                    "arbitrary order")
    ev.add_argument("-o", "--output", choices=OUTPUT_FORMATS, default="table",
                    help="table, tsv, csv, json (a list of objects) or trec (trec_eval's layout with E[M])")
    ev.add_argument("--digits", type=_digits, default=4, help="decimals in table and trec output (0-15, default 4)")
    ev.add_argument("--fail-range-above", type=_non_negative, metavar="X",
                    help="exit 1 when the range of any mean (of a sum for counts; max - min over tie orders) exceeds X")
    ev.add_argument("--fail-bias-above", type=_non_negative, metavar="X",
                    help="exit 1 when |bias| of any mean (of a sum for counts; |oblivious - E[M]|) exceeds X")
    ev.add_argument("--stream", nargs="?", type=_positive_int, const=True, default=None, metavar="QUERIES",
                    help="chunks of N whole queries (--stream N); a TREC run is always read chunk by chunk "
                    "(default: 1,000 queries or about 65,536 documents a chunk), so memory grows with the "
                    "chunk, not the run; bare --stream changes nothing for a TREC run; runs read in memory "
                    "(-M, TSV, JSON, JSONL, Parquet, LZ4) refuse --stream")
    ev.add_argument("--per-query-out", metavar="PATH",
                    help="write per-query rows (TSV, or .parquet) with the metrics, -l, tie order, "
                    "--ignore-identical-ids and tieaware version, for `tieaware merge`; the file appears only "
                    "once complete")
    _identical_ids_option(ev)
    ev.set_defaults(handler=cmd_eval)

    mg = commands.add_parser("merge", help="combine per-query tables of shards into one report",
                             description="Combine the --per-query-out tables of shards (disjoint sets of queries, "
                             "evaluated one process each) into the report a single evaluation gives. Tables that "
                             "differ in metrics, relevance level, tie order, --ignore-identical-ids or tieaware "
                             "version, a query in two tables, and a damaged or cut-off table are errors naming the "
                             "files.")
    mg.add_argument("tables", nargs="+", metavar="table")
    mg.add_argument("-o", "--output", choices=("table", "tsv", "csv", "json"), default="table")
    mg.add_argument("--digits", type=_digits, default=4, help="decimals in table output (0-15, default 4)")
    mg.set_defaults(handler=cmd_merge)

    cp = commands.add_parser("compare", parents=[common], help="compare runs: significance and tie-order flips",
                             description="Runs x metrics with E[M], range and oblivious values, significance "
                             "tests on per-query E[M], and per pair of runs the difference, its verdict under "
                             "every tie order and how likely tie order flips it.")
    cp.add_argument("qrels")
    cp.add_argument("runs", nargs="+", metavar="run")
    _metric_option(cp, _METRIC_HELP, required=True)
    _keep_going_option(cp)
    cp.add_argument("--stat-test", choices=STAT_TESTS + ("none",), default="student")
    cp.add_argument("--max-p", type=_probability, default=0.01, help="significance threshold (default 0.01)")
    cp.add_argument("--permutations", type=_positive_int, default=1000,
                    help="Fisher's randomization test permutations (default 1000)")
    cp.add_argument("--seed", type=int, default=42,
                    help="seed of Fisher's randomization test and of the Monte Carlo p_flip (default 42)")
    cp.add_argument("--correction", choices=("none", *CORRECTIONS), default="none",
                    help="multiple-comparison correction over the pairs of each metric (default none)")
    cp.add_argument("--ci", type=_probability, default=None,
                    help="level of the interval on each difference (default 1 - max-p)")
    cp.add_argument("--flip-samples", type=_non_negative_int, default=None,
                    help="random tie orders per run for p_flip where neither exact nor bounded below 0.05 "
                         "(0: never sample; default: 1000, fewer for runs with over 100 tied queries)")
    cp.add_argument("-o", "--output", choices=("table", "latex", "json", "tsv", "csv"), default="table")
    cp.add_argument("--digits", type=_digits, default=4,
                    help="decimals in table and latex output (0-15, default 4); tsv/csv/json print full precision")
    cp.add_argument("--pairs", action="store_true", help="tsv/csv: one row per pair of runs instead of per run")
    cp.add_argument("--plot", metavar="PNG", help="also draw the metric@k curves to this file")
    cp.add_argument("--fail-on-flag", action="store_true",
                    help="exit 1 when any comparison is flagged: a verdict that depends on tie order, "
                         "or p_flip >= 0.05")
    _identical_ids_option(cp)
    cp.set_defaults(handler=cmd_compare)

    ti = commands.add_parser("ties", help="tie census of runs",
                             description="Per cutoff k: unique scores@k, mean tie-group size@k, share of "
                             "queries with a tie group straddling k, largest tie group.")
    ti.add_argument("runs", nargs="+", metavar="run")
    ti.add_argument("-k", type=_cutoffs, action="extend", metavar="K",
                    help=f"a cutoff (-k 10) or several (-k 5,10); repeat -k for more (default {DEFAULT_KS})")
    ti.add_argument("-o", "--output", choices=("table", "tsv", "csv", "json"), default="table")
    ti.add_argument("--digits", type=_digits, default=4, help="decimals in table output (0-15, default 4)")
    ti.set_defaults(handler=cmd_ties)

    pl = commands.add_parser("plot", parents=[common], help="metric@k curves with tie bands to PNG",
                             description="Draw E[M] against k per run, the [min, max] band over tie orders "
                             "and the oblivious values; needs matplotlib (pip install 'tieaware[plot]').")
    pl.add_argument("qrels")
    pl.add_argument("runs", nargs="+", metavar="run")
    _metric_option(pl, "a metric family with a cutoff: ndcg, P, recall, mrr, map, ...; repeat -m or give a comma "
                   "list (-m ndcg,mrr); default ndcg")
    pl.add_argument("-k", type=_cutoffs, action="extend", metavar="K",
                    help=f"a cutoff (-k 10) or several (-k 5,10); repeat -k for more (default {DEFAULT_KS})")
    pl.add_argument("--out", required=True, help="image file (PNG, SVG, PDF by suffix)")
    pl.add_argument("--title")
    pl.set_defaults(handler=cmd_plot)

    sc = commands.add_parser("score", help="HPS scoring with a transformers model -> TREC run",
                             description="Score with a local transformers model, the final scoring step in "
                             "fp32 (High-Precision Scoring), and write a TREC run with full-precision scores. "
                             "Needs the hps extra: pip install 'tieaware[hps]'.")
    sc.add_argument("model", help="local model directory (transformers format)")
    sc.add_argument("--scorer", choices=SCORERS, default="bi-encoder")
    sc.add_argument("--queries", required=True, help="queries: .jsonl (_id, text), .tsv (id<TAB>text) or .json")
    sc.add_argument("--corpus", required=True, help="documents: .jsonl (_id, title, text), .tsv or .json")
    sc.add_argument("--candidates", help="TREC run whose documents to rerank (else a bi-encoder searches)")
    sc.add_argument("-k", type=int, help="keep the top k per query plus every doc tied with the k-th "
                    "(search default 100; rerank default all)")
    sc.add_argument("--dtype", choices=("fp32", "bf16", "fp16"), default="fp32", help="model dtype")
    sc.add_argument("--hps", choices=tuple(HPS_MODES), default="head",
                    help="scoring step precision: head (default: the last layer producing the scores in "
                    "fp32), logits (the paper's HPS: fp32 after the logits; upcast is an alias), none (model dtype)")
    sc.add_argument("--batch-size", type=int, default=32)
    sc.add_argument("--max-length", type=int, default=512)
    sc.add_argument("--device", help="torch device (default cuda if available, else cpu)")
    sc.add_argument("--name", help="run tag (default: model dir, dtype, hps)")
    sc.add_argument("--out", help="output TREC run (default stdout)")
    sc.add_argument("--with-title", action="store_true", help="document text = title + text")
    bi = sc.add_argument_group("bi-encoder")
    bi.add_argument("--pooling", choices=("mean", "cls", "last_token"), default="mean")
    bi.add_argument("--no-normalize", action="store_true", help="plain dot product instead of cosine")
    bi.add_argument("--query-prefix", default="")
    bi.add_argument("--doc-prefix", default="")
    sc.add_argument_group("cross-encoder").add_argument("--positive-index", type=int)
    sc.add_argument_group("yes-no, grade").add_argument("--instruction")
    grade = sc.add_argument_group("grade: a causal LM prompted for an integer grade")
    grade.add_argument("--grades", default="0-10", help="the grade range MIN-MAX (default 0-10)")
    grade.add_argument("--grade-score", choices=("expected", "erank", "argmax"), default="expected",
                       help="sum_s s P(s) (default), ERank's argmax s x P(s), or the argmax grade")
    dist = sc.add_argument_group("Ray (pip install 'tieaware[ray]'): rerank on an actor pool")
    dist.add_argument("--ray", action="store_true", help="rerank --candidates on Ray Data actors "
                      "(a local Ray instance, or the cluster in RAY_ADDRESS / --address)")
    dist.add_argument("--address", help="Ray cluster address, e.g. auto or ray://head:10001")
    dist.add_argument("--actors", type=int, default=2, help="actors (model copies), default 2")
    dist.add_argument("--gpus-per-actor", type=float, default=0, help="GPUs each actor reserves (1 on a GPU cluster)")
    sc.set_defaults(handler=cmd_score)

    wu = commands.add_parser("warmup", help="compile the kernels numba's JIT serves into its cache (CI images)",
                             description="Run every everyday path once, compiling into numba's on-disk cache "
                             "(NUMBA_CACHE_DIR if set) the kernels that its JIT serves, so that later first calls "
                             "load instead of compiling: the ranx readers, and every kernel where none shipped "
                             "compiled ahead of time.")
    wu.add_argument("--ranx-id-length", type=int, action="append", metavar="N",
                    help="also compile the ranx Run/Qrels readers for a longest document id of N characters "
                         "(repeatable)")
    wu.set_defaults(handler=cmd_warmup)
    parser.subcommands = commands.choices
    return parser


def _error_line(exc: BaseException) -> str:
    message = exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)
    return " ".join(str(message).split())


def _bare_flags(argv: list) -> list:
    """``--stream`` followed by anything but a number is the bare flag: argparse's optional value would
    swallow the qrels file of ``tieaware eval --stream QRELS RUN``, so it becomes ``--stream`` alone,
    written last (before any ``--``)."""
    argv = list(argv)
    end = argv.index("--") if "--" in argv else len(argv)
    bare = [i for i in range(end) if argv[i] == "--stream" and not (i + 1 < end and argv[i + 1].isdigit())]
    if not bare:
        return argv
    rest = [arg for i, arg in enumerate(argv[:end]) if i not in bare]
    return rest + ["--stream"] + argv[end:]


def main(argv=None) -> int:
    """Run the ``tieaware`` command line; returns the exit code."""
    parser = build_parser()
    try:
        args, unknown = parser.parse_known_args(_bare_flags(sys.argv[1:] if argv is None else argv))
        if unknown:  # a mistyped option: the subcommand's usage, not the top level's
            parser.subcommands[args.command].error(f"unrecognized arguments: {' '.join(unknown)}")
    except SystemExit as exc:
        return EXIT_OK if exc.code in (0, None) else EXIT_ERROR
    try:
        return args.handler(args)
    except BrokenPipeError:  # e.g. `tieaware eval ... -q | head`
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    except (TieawareError, ImportError, OSError) as exc:  # bad input, a missing extra, the file system
        if args.traceback:
            raise
        print(f"tieaware {args.command}: error: {_error_line(exc)}", file=sys.stderr)
        return EXIT_ERROR


def run() -> int:
    """The ``tieaware`` console script and ``python -m tieaware``: `main`, then the objects alive are frozen
    out of the garbage collector (``gc.freeze``), as the process ends next. At exit CPython collects
    several times over every object left (numba's types and dispatchers among them) only to free memory
    the system takes back anyway; finalizers of objects outside reference cycles and ``atexit``
    handlers still run, and the output is flushed as usual. An object in a cycle is not finalized:
    a command closes what it writes itself (``with``), as every one does."""
    code = main()
    gc.freeze()
    return code


if __name__ == "__main__":
    sys.exit(run())
