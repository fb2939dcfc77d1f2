"""`tieaware` console script: ``eval``, ``compare``, ``ties``, ``plot`` and ``score``.

Exit codes: 0 success; 1 a check failed (``--fail-range-above``, ``--fail-on-flag``);
2 bad input or usage, reported as one line on stderr (``tieaware --traceback ...``
shows the traceback). Anything else is a bug and shows its traceback. ``score`` imports torch
(the ``hps`` extra) when it runs; no other command does.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from .comparison import DEFAULT_KS, STAT_TESTS, compare, plot_at_k
from .errors import InputError, QueryMismatchError, TieawareError
from .evaluation import evaluate
from .inputs import file_stem, load_qrels, load_run, read_texts, write_trec_run
from .metrics import parse_metric
from .ranked_lists import OBLIVIOUS_ORDERS
from .report import SUMMARY_COLUMNS
from .tie_census import census

EXIT_OK, EXIT_CHECK_FAILED, EXIT_ERROR = 0, 1, 2
OUTPUT_FORMATS = ("table", "tsv", "csv", "json", "trec")
HPS_MODES = {"none": False, "upcast": True, "head": "head"}
SCORERS = ("bi-encoder", "cross-encoder", "yes-no")
_TREC_CUTOFF_LIST = re.compile(r"(?P<base>[A-Za-z_]+[._])(?P<ks>\d+(?:,\d+)+)")


# ------------------------------------------------------------------ helpers
def _metric_names(values: list, relevance_level: int) -> list:
    """Names as given, trec_eval's ``P.5,10`` lists expanded, repeats dropped; each one parsed (so an
    unknown name fails before any file is read)."""
    names = []
    for value in values:
        match = _TREC_CUTOFF_LIST.fullmatch(value)
        expanded = [match["base"] + k for k in match["ks"].split(",")] if match else [value]
        names += [name for name in expanded if name not in names]
    for name in names:
        parse_metric(name, relevance_level)
    return names


def _run_names(paths: list) -> list:
    """File stems as run names, or the paths as given when two stems coincide; a run given twice is an error."""
    seen = set()
    for path in paths:
        resolved = Path(path).resolve()
        if resolved in seen:
            raise InputError(f"run {path!r} is given twice.")
        seen.add(resolved)
    stems = [file_stem(p) for p in paths]
    return stems if len(set(stems)) == len(stems) else list(paths)


def _progress(items: list, desc: str):
    """A progress bar on stderr, drawn only on a terminal and only once a step takes over a second."""
    from tqdm.auto import tqdm

    return tqdm(items, desc=desc, unit="run", delay=1.0, disable=not sys.stderr.isatty(), leave=False)


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


def _fixed(value: float, digits: int) -> str:
    """Fixed-point text without a "-0.0000" for tiny negative noise."""
    return f"{round(value, digits) + 0.0:.{digits}f}"


def _write_frame(frame: pd.DataFrame, fmt: str, digits: int) -> None:
    """A flat DataFrame as an aligned table, TSV, CSV (full precision) or a JSON list of objects."""
    if fmt == "table":
        text = frame.to_string(index=False, float_format=lambda x: _fixed(x, digits))
        sys.stdout.write(text + "\n")
    elif fmt in ("tsv", "csv"):
        frame.to_csv(sys.stdout, sep="\t" if fmt == "tsv" else ",", index=False, lineterminator="\n",
                     float_format=lambda x: repr(float(x)))
    else:
        records = frame.astype(object).where(frame.notna(), None).to_dict(orient="records")
        sys.stdout.write(json.dumps(records, indent=1) + "\n")


# --------------------------------------------------------------------- eval
def _eval_frame(name: str, report, per_query: bool) -> pd.DataFrame:
    """One run's rows: run, metric, [query,] expected, oblivious, min, max, range, bias, std; with
    ``per_query`` the per-query rows come first and the means follow as query 'all'."""
    frame = report.to_dataframe()[SUMMARY_COLUMNS].reset_index()
    if per_query:
        queries = report.per_query().reset_index().rename(columns={"query_id": "query"})
        queries["query"] = queries["query"].astype(str)
        queries["tie_std"] = np.sqrt(queries["variance"].clip(lower=0.0))
        frame.insert(1, "query", "all")
        frame = pd.concat([queries[frame.columns], frame], ignore_index=True)
    frame.insert(0, "run", name)
    return frame


def _write_trec(frame: pd.DataFrame, digits: int) -> None:
    """trec_eval's layout (``%-22s\\t%s\\t%.4f``) with E[M]: per-query lines grouped by query, then
    the runid and the means under ``all``."""
    out = sys.stdout
    for run, block in frame.groupby("run", sort=False):
        if "query" in block:
            per_query = block[block["query"] != "all"]
            position = {qid: i for i, qid in enumerate(pd.unique(per_query["query"]))}
            per_query = per_query.sort_values("query", key=lambda q: q.map(position), kind="stable")
            for row in per_query.itertuples(index=False):
                out.write(f"{row.metric:<22}\t{row.query}\t{_fixed(row.expected, digits)}\n")
            block = block[block["query"] == "all"]
        out.write(f"{'runid':<22}\tall\t{run}\n")
        for row in block.itertuples(index=False):
            out.write(f"{row.metric:<22}\tall\t{_fixed(row.expected, digits)}\n")


def cmd_eval(args) -> int:
    metrics = _metric_names(args.metrics, args.relevance_level)
    qrels = load_qrels(args.qrels)
    frames = []
    if args.per_query_out and len(args.runs) > 1:
        raise InputError("--per-query-out takes one run (write one table per run, then `tieaware merge` them).")
    for name, path in _progress(list(zip(_run_names(args.runs), args.runs)), "evaluating"):
        try:
            report = evaluate(qrels, path if args.stream else load_run(path), metrics,
                              make_comparable=args.make_comparable, oblivious=args.oblivious,
                              relevance_level=args.relevance_level, stream=args.stream or False,
                              per_query_out=args.per_query_out)
        except QueryMismatchError as exc:
            cli_error = QueryMismatchError(exc.missing, exc.extra, remedy="pass -c (--make-comparable)")
            raise InputError(f"run {path}: {cli_error}") from None
        except InputError as exc:
            raise InputError(f"run {path}: {exc}") from None
        frames.append(_eval_frame(name, report, args.per_query))
    frame = pd.concat(frames, ignore_index=True)
    if args.output == "trec":
        _write_trec(frame, args.digits)
    elif args.output == "table":
        table = frame.rename(columns={"oblivious": f"obl[{args.oblivious}]"})
        _write_frame(table, "table", args.digits)
    else:
        _write_frame(frame, args.output, args.digits)
    if args.fail_range_above is not None:
        means = frame[frame["query"] == "all"] if args.per_query else frame
        too_wide = means[means["range"] > args.fail_range_above]
        for row in too_wide.itertuples(index=False):
            print(f"tieaware: {row.run} {row.metric}: range {row.range:.6g} > {args.fail_range_above:g}",
                  file=sys.stderr)
        if not too_wide.empty:
            return EXIT_CHECK_FAILED
    return EXIT_OK


# ------------------------------------------------------------------ compare
def cmd_compare(args) -> int:
    metrics = _metric_names(args.metrics, args.relevance_level)
    runs = dict(zip(_run_names(args.runs), args.runs))
    report = compare(args.qrels, runs, metrics, stat_test=None if args.stat_test == "none" else args.stat_test,
                     n_permutations=args.permutations, max_p=args.max_p, random_seed=args.seed,
                     rounding_digits=args.digits, make_comparable=args.make_comparable, oblivious=args.oblivious,
                     relevance_level=args.relevance_level, show_progress=sys.stderr.isatty())
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
        print(f"tieaware: tie order alone could flip {len(report.flagged)} comparison(s)", file=sys.stderr)
        return EXIT_CHECK_FAILED
    return EXIT_OK


# --------------------------------------------------------------------- ties
def cmd_ties(args) -> int:
    frames = {name: census(load_run(path), ks=args.k or DEFAULT_KS)
              for name, path in zip(_run_names(args.runs), args.runs)}
    frame = pd.concat(frames, names=["run", "k"]).reset_index()
    _write_frame(frame, args.output, args.digits)
    return EXIT_OK


# --------------------------------------------------------------------- plot
def cmd_plot(args) -> int:
    runs = dict(zip(_run_names(args.runs), args.runs))
    plot_at_k(args.qrels, runs, args.metrics or ["ndcg"], args.k or DEFAULT_KS, args.out,
              oblivious=args.oblivious, relevance_level=args.relevance_level,
              make_comparable=args.make_comparable, title=args.title)
    print(f"tieaware: wrote {args.out}", file=sys.stderr)
    return EXIT_OK


# -------------------------------------------------------------------- score
def cmd_score(args) -> int:
    from . import hps  # torch and transformers: only here

    scorer_class = {"bi-encoder": hps.BiEncoder, "cross-encoder": hps.CrossEncoder, "yes-no": hps.YesNoReranker}
    options = dict(dtype=args.dtype, hps=HPS_MODES[args.hps], batch_size=args.batch_size, device=args.device,
                   max_length=args.max_length, show_progress=sys.stderr.isatty())
    if args.scorer == "bi-encoder":
        options.update(pooling=args.pooling, normalize=not args.no_normalize, query_prefix=args.query_prefix,
                       doc_prefix=args.doc_prefix)
    elif args.scorer == "cross-encoder":
        options.update(positive_index=args.positive_index)
    elif args.instruction is not None:
        options.update(instruction=args.instruction)
    if args.candidates is None and args.scorer != "bi-encoder":
        raise InputError(f"A {args.scorer} reranks: give --candidates RUN (only a bi-encoder searches the corpus).")
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
        with open(args.out, "w", encoding="utf-8") as handle:
            lines = write_trec_run(scores, name, handle)
    else:
        lines = write_trec_run(scores, name, sys.stdout)
    at_10 = census(scores, ks=(10,)).loc[10]
    print(f"tieaware: {lines} lines, {len(scores)} queries{' to ' + args.out if args.out else ''}; "
          f"tie census: unique scores@10 {at_10['unique_scores']:.2f}, "
          f"mean tie-group size@10 {at_10['mean_tie_group_size']:.3f}", file=sys.stderr)
    return EXIT_OK


def cmd_merge(args) -> int:
    from .streaming import merge

    report = merge(args.tables)
    frame = report.to_dataframe()[SUMMARY_COLUMNS].reset_index()
    _write_frame(frame, args.output, args.digits)
    return EXIT_OK


def cmd_warmup(args) -> int:
    from .warming import warmup

    warmup()
    return EXIT_OK


# ------------------------------------------------------------------- parser
def _evaluation_options() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--oblivious", choices=OBLIVIOUS_ORDERS, default="trec_eval",
                        help="whose tie order gives the oblivious value (default: trec_eval: score desc, docid desc)")
    common.add_argument("-l", "--relevance-level", type=int, default=1, metavar="L",
                        help="judgments >= L are relevant (default 1)")
    common.add_argument("-c", "--make-comparable", action="store_true",
                        help="score qrels queries missing from a run as 0 and drop run queries without qrels")
    common.add_argument("--digits", type=_digits, default=4,
                        help="decimals in table and trec output, and in compare's latex (0-15, default 4)")
    return common


def _add_qrels_runs_metrics(parser: argparse.ArgumentParser, metric_help: str) -> None:
    """The positional QRELS RUN... and the required -m METRIC... shared by eval and compare."""
    parser.add_argument("qrels")
    parser.add_argument("runs", nargs="+", metavar="run")
    parser.add_argument("-m", "--metric", dest="metrics", action="extend", nargs="+", required=True,
                        metavar="METRIC", help=metric_help)


class _ListMetrics(argparse.Action):
    """``--list-metrics``: the metric registry as a table, then exit (before other arguments are checked)."""

    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        from .metrics import list_metrics

        rows = list_metrics()
        widths = {key: max(len(key), *(len(row[key]) for row in rows)) for key in rows[0]}
        lines = ["  ".join(key.ljust(widths[key]) for key in rows[0]).rstrip()]
        lines += ["  ".join(value.ljust(widths[key]) for key, value in row.items()).rstrip() for row in rows]
        try:
            sys.stdout.write("\n".join(lines) + "\n")
            sys.stdout.flush()
        except BrokenPipeError:  # `tieaware eval --list-metrics | head`
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tieaware", description="Tie-aware retrieval evaluation: E[M], min, max, range, bias and variance "
        "of IR metrics over all orderings of tied scores.")
    parser.add_argument("--traceback", action="store_true",
                        help="show the Python traceback of an input error too (other errors always show it)")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    common = _evaluation_options()
    metric_help = ("metric names in ranx, trec_eval or ir_measures syntax (ndcg@10, ndcg_cut.10, nDCG@10; "
                   "P.5,10 lists cutoffs); repeat -m or give several names")

    ev = commands.add_parser("eval", parents=[common], help="evaluate runs tie-aware",
                             description="Evaluate runs: E[M], oblivious value, min, max, range, bias, tie_std.")
    ev.add_argument("--list-metrics", action=_ListMetrics, help="print every metric name tieaware reads and exit")
    _add_qrels_runs_metrics(ev, metric_help)
    ev.add_argument("-q", "--per-query", action="store_true", help="per-query values too (query 'all': the mean)")
    ev.add_argument("-o", "--output", choices=OUTPUT_FORMATS, default="table",
                    help="table, tsv, csv, json (a list of objects) or trec (trec_eval's layout with E[M])")
    ev.add_argument("--fail-range-above", type=_non_negative, metavar="X",
                    help="exit 1 when the range of any mean (max - min over tie orders) exceeds X")
    ev.add_argument("--stream", nargs="?", type=_positive_int, const=True, default=None, metavar="QUERIES",
                    help="read each run in chunks of whole queries (default 1,000 a chunk): memory grows with "
                    "the chunk, not the run; the numbers are the same")
    ev.add_argument("--per-query-out", metavar="PATH",
                    help="write per-query rows (TSV, or .parquet) as they are produced, for `tieaware merge`")
    ev.set_defaults(handler=cmd_eval)

    mg = commands.add_parser("merge", help="combine per-query tables of shards into one report",
                             description="Combine the --per-query-out tables of shards (disjoint sets of queries, "
                             "evaluated one process each) into the report a single evaluation gives.")
    mg.add_argument("tables", nargs="+", metavar="table")
    mg.add_argument("-o", "--output", choices=("table", "tsv", "csv", "json"), default="table")
    mg.add_argument("--digits", type=_digits, default=4, help="decimals in table output (0-15, default 4)")
    mg.set_defaults(handler=cmd_merge)

    cp = commands.add_parser("compare", parents=[common], help="compare runs: significance and tie-order flips",
                             description="Runs x metrics with E[M], range and oblivious values, significance "
                             "tests on per-query E[M], and the pairs whose order tie order alone could flip.")
    _add_qrels_runs_metrics(cp, metric_help)
    cp.add_argument("--stat-test", choices=STAT_TESTS + ("none",), default="student")
    cp.add_argument("--max-p", type=_probability, default=0.01, help="significance threshold (default 0.01)")
    cp.add_argument("--permutations", type=_positive_int, default=1000,
                    help="Fisher's randomization test permutations (default 1000)")
    cp.add_argument("--seed", type=int, default=42, help="Fisher's randomization test seed")
    cp.add_argument("-o", "--output", choices=("table", "latex", "json", "tsv", "csv"), default="table")
    cp.add_argument("--pairs", action="store_true", help="tsv/csv: one row per pair of runs instead of per run")
    cp.add_argument("--plot", metavar="PNG", help="also draw the metric@k curves to this file")
    cp.add_argument("--fail-on-flag", action="store_true",
                    help="exit 1 when tie order alone could flip any comparison")
    cp.set_defaults(handler=cmd_compare)

    ti = commands.add_parser("ties", help="tie census of runs",
                             description="Per cutoff k: unique scores@k, mean tie-group size@k, share of "
                             "queries with a tie group straddling k, largest tie group.")
    ti.add_argument("runs", nargs="+", metavar="run")
    ti.add_argument("-k", type=_positive_int, action="extend", nargs="+", help=f"cutoffs (default {DEFAULT_KS})")
    ti.add_argument("-o", "--output", choices=("table", "tsv", "csv", "json"), default="table")
    ti.add_argument("--digits", type=_digits, default=4, help="decimals in table output (0-15, default 4)")
    ti.set_defaults(handler=cmd_ties)

    pl = commands.add_parser("plot", parents=[common], help="metric@k curves with tie bands to PNG",
                             description="Draw E[M] against k per run, the [min, max] band over tie orders "
                             "and the oblivious values; needs matplotlib (pip install 'tieaware[plot]').")
    pl.add_argument("qrels")
    pl.add_argument("runs", nargs="+", metavar="run")
    pl.add_argument("-m", "--metric", dest="metrics", action="extend", nargs="+",
                    help="metric families with a cutoff: ndcg, P, recall, mrr, map, ... (default ndcg)")
    pl.add_argument("-k", type=_positive_int, action="extend", nargs="+", help=f"cutoffs (default {DEFAULT_KS})")
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
    sc.add_argument("--hps", choices=tuple(HPS_MODES), default="upcast",
                    help="scoring step precision: none (model dtype), upcast (fp32 scoring function, "
                    "default), head (final layer in fp32 too)")
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
    sc.add_argument_group("yes-no").add_argument("--instruction")
    dist = sc.add_argument_group("Ray (pip install 'tieaware[ray]'): rerank on an actor pool")
    dist.add_argument("--ray", action="store_true", help="rerank --candidates on Ray Data actors "
                      "(a local Ray instance, or the cluster in RAY_ADDRESS / --address)")
    dist.add_argument("--address", help="Ray cluster address, e.g. auto or ray://head:10001")
    dist.add_argument("--actors", type=int, default=2, help="actors (model copies), default 2")
    dist.add_argument("--gpus-per-actor", type=float, default=0, help="GPUs each actor reserves (1 on a GPU cluster)")
    sc.set_defaults(handler=cmd_score)

    wu = commands.add_parser("warmup", help="compile the numba kernels into numba's cache (CI images)",
                             description="Compile every kernel once and write it to numba's on-disk cache "
                             "(NUMBA_CACHE_DIR if set), so later first calls load instead of compiling.")
    wu.set_defaults(handler=cmd_warmup)
    return parser


def _error_line(exc: BaseException) -> str:
    message = exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)
    return " ".join(str(message).split())


def main(argv=None) -> int:
    """Run the ``tieaware`` command line; returns the exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
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


if __name__ == "__main__":
    sys.exit(main())
