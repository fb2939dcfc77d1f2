"""`compare`: several runs side by side, tie-aware (the drop-in for ``ranx.compare``).

For each run and metric the report holds E[M] with its [min, max] over tie
orderings and the value a tool reports under its own tie order (oblivious).
Significance tests (ranx's own code: paired Student's t-test, Fisher's
randomization test, Tukey's HSD) run on the per-query E[M]. Each pair of runs gets
the tie-aware statistics of `tieaware.comparison_statistics` (the difference with
its interval, p_flip, the t-test's p-value range over tie orders and a verdict,
corrections; docs/comparison.md), computed from the kernels' per-query E, Var,
min and max, and from `tieaware.tie_orders` where orders are enumerated or sampled.
A pair is flagged when its verdict depends on tie order or p_flip >= 0.05.
"""
from __future__ import annotations

import math
import os
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import pandas as pd
from ranx.data_structures import Report as RanxReport
from tabulate import tabulate

from .arguments import resolve_oblivious
from .comparison_statistics import (
    CORRECTIONS,
    EQUAL_TOLERANCE,
    adjust_p_values,
    count_distributions,
    difference_distribution,
    difference_summary,
    enumerated_t_p_range,
    flip_bound,
    flip_probability,
    integer_sum_distribution,
    sign,
    sum_distribution,
    t_test_p_bounds,
    verdict,
)
from .display import progress
from .errors import InputError, UnknownMetricError
from .evaluation import evaluate
from .figures import check_image_path, plot_report
from .inputs import file_stem, is_ranx_run, load_qrels, load_run
from .metrics import metric_keys, parse_metric, parse_metrics
from .outputs import atomic_output
from .registry import DEFAULT_KS
from .report import SUMMARY_COLUMNS, EvaluationReport, MetricResult, strict_json
from .threads import limited
from .tie_orders import TieOrderValues

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from .inputs import QrelsLike, RunLike
    from .metrics import MetricsLike

#: ranx's p-values per ordered pair of runs and metric: {(run, other): {metric: {"p_value", "significant"}}}
Comparisons = dict[tuple[str, str], dict[str, dict[str, Any]]]
#: ranx's win/tie/loss counts: {(run, other): {metric: {"W", "T", "L"}}}
WinTieLoss = dict[tuple[str, str], dict[str, dict[str, int]]]

STAT_TESTS = ("student", "fisher", "tukey")
STAT_TEST_LABELS = {
    "student": "paired Student's t-test",
    "fisher": "Fisher's randomization test",
    "tukey": "Tukey's HSD test",
}
_LETTERS = "abcdefghijklmnopqrstuvwxyz"
#: Superscript a-z marking significance; q is U+107A5 MODIFIER LETTER SMALL Q (Unicode 14), the only
#: superscript q (the table once had the Arabic-Indic digit nine there).
_SUPERSCRIPTS = "ᵃᵇᶜᵈᵉᶠᵍʰⁱʲᵏˡᵐⁿᵒᵖ\U000107a5ʳˢᵗᵘᵛʷˣʸᶻ"
PAIR_COLUMNS = ["expected_a", "expected_b", "oblivious_a", "oblivious_b", "min_a", "max_a", "min_b", "max_b",
                "diff", "diff_ci_low", "diff_ci_high", "effect_size", "tie_fraction", "tie_sd",
                "p_flip", "p_flip_se", "p_flip_bound", "p_flip_exact",
                "p_value", "p_adjusted", "significant", "p_min", "p_max", "p_bounds_exact", "p_min_adjusted",
                "p_max_adjusted", "verdict", "flagged", "reason",
                "order_flip", "intervals_overlap", "tie_sensitive"]
#: p_flip at or above this flags a pair (and is estimated by Monte Carlo where its bound does not settle it)
FLIP_LEVEL = 0.05
#: `compare`'s default Monte Carlo: at most this many random tie orders per run, at most
#: AUTO_SAMPLE_BUDGET tied queries x orders, and none when fewer than AUTO_FEWEST_SAMPLES fit.
DEFAULT_FLIP_SAMPLES, AUTO_SAMPLE_BUDGET, AUTO_FEWEST_SAMPLES = 1000, 100_000, 200
#: Runs with more tied queries than this are not enumerated (their p_flip is bounded or sampled).
MAX_ENUMERATED_QUERIES = 32


def _label(index: int) -> str:
    return _LETTERS[index] if index < len(_LETTERS) else str(index + 1)


def _superscript(index: int) -> str:
    return _SUPERSCRIPTS[index] if index < len(_SUPERSCRIPTS) else f"^{index + 1}"


def distinguishing_digits(values: Sequence[float], digits: int, most: int = 12) -> int:
    """The fewest decimals (at least `digits`, at most `most`) printing different values differently."""
    finite = [float(v) for v in values if not math.isnan(v)]
    distinct = len({round(v, most) for v in finite})
    for candidate in range(digits, most):
        if len({round(v, candidate) for v in finite}) == distinct:
            return candidate
    return most


def _probability_text(p: float) -> str:
    """A p-value or probability with three significant digits ("nan" for none)."""
    return "nan" if math.isnan(p) else f"{p:.3g}"


def _sign(difference: float) -> int:
    return 0 if abs(difference) <= EQUAL_TOLERANCE else (1 if difference > 0 else -1)


def named_runs(runs: Mapping[str, RunLike] | Iterable[RunLike]) -> dict[str, RunLike]:
    """Runs as ``{name: run}``.

    Accepts a dict ``{name: run}`` or a sequence of ranx Runs (named by
    ``run.name``), paths (named by the file stem) or dicts/DataFrames (named
    ``run_1``, ``run_2``, ... as ranx does). Paths are read here, once.
    """
    named: dict[str, RunLike]
    if isinstance(runs, dict):
        for name, run in runs.items():
            if isinstance(run, dict) and run and not isinstance(next(iter(run.values())), dict):
                raise InputError(f"runs[{name!r}] maps documents to scores: `runs` must map run names to "
                                 "runs ({name: {qid: {docid: score}}}), or be a list of runs.")
        named = dict(runs)
    elif isinstance(runs, (str, os.PathLike)) or is_ranx_run(runs):
        raise InputError("`runs` must be a list of runs or a dict {name: run}, not a single run.")
    else:
        named = {}
        for i, run in enumerate(runs):
            ranx_name = getattr(run, "name", None) if is_ranx_run(run) else None
            if ranx_name:
                name = ranx_name
            elif isinstance(run, (str, os.PathLike)):
                name = file_stem(run)
            else:
                name = f"run_{i + 1}"
            if name in named:
                raise InputError(f"Two runs are named {name!r}: pass a dict {{name: run}} to name them.")
            named[name] = run
    return {name: load_run(run) if isinstance(run, (str, os.PathLike)) else run for name, run in named.items()}


class ComparisonReport(RanxReport):  # type: ignore[misc]  # ranx ships no types: its Report is Any
    """The result of `compare`: a ``ranx.data_structures.Report`` with the tie-aware additions.

    Everything code written for ``ranx.compare`` reads is there, with the same
    meaning: ``model_names``, ``results`` (``{run: {metric: score}}``; the scores are
    `MetricResult` floats equal to E[M]), ``comparisons`` (ranx's p-values and
    significance per pair, on per-query E[M]), ``win_tie_loss`` (per ordered pair and
    metric, queries where the first run's E[M] is higher, equal, lower), ``metrics``,
    ``max_p``, ``stat_test``, ``rounding_digits``, ``show_percentages``; the wide
    ``to_dataframe()`` (one row per run, one column per metric), ``to_dict()`` in
    ranx's schema (tieaware's additions under the key ``"tieaware"``), ``to_latex()``,
    ``save()``, ``print_results()``. ``print(report)`` shows tieaware's table.

    Tie-aware additions:
        run_names: the same as ``model_names``; ``a``, ``b``, ... in the tables.
        results: each score is a `MetricResult` (expected, oblivious, min, max, range,
            bias, tie_std, per_query).
        pairs: DataFrame indexed by (metric, run_a, run_b), one row per pair of runs (differences
            are run_a minus run_b; formulas and sources in docs/comparison.md): the two runs'
            expected, oblivious, min and max values; ``diff`` (mean of per-query E[M] differences),
            ``diff_ci_low``/``diff_ci_high`` (paired t-interval), ``effect_size`` (d_z),
            ``tie_fraction``, ``tie_sd``; ``p_flip`` (probability that one uniformly random tie
            order of both runs reverses the sign of ``diff``, or makes runs with diff 0 differ),
            ``p_flip_se``, ``p_flip_bound`` (certified upper bound), ``p_flip_exact``; ``p_value``
            (the test on per-query E[M]), ``p_adjusted`` (after ``correction``), ``significant``;
            ``p_min``, ``p_max`` (the t-test's p-value under one tie order: its extremes over tie
            orders, or certified bounds when ``p_bounds_exact`` is False), their adjusted values,
            ``verdict`` ("robust", "fragile", "not significant"; None without the t-test),
            ``flagged`` and its one-line ``reason``; and the older interval flags ``order_flip`` (the
            oblivious values order the runs differently from E[M]), ``intervals_overlap`` (each
            run's best tie order beats the other's worst) and ``tie_sensitive`` (either).
        stat_test, max_p, oblivious_order, correction: the settings used.

    Examples:
        >>> import tieaware
        >>> runs = {"tied": {"q1": {"d1": 0.5, "d2": 0.5}}, "sure": {"q1": {"d1": 0.9, "d2": 0.1}}}
        >>> report = tieaware.compare({"q1": {"d1": 1}}, runs, "mrr", stat_test=None)
        >>> report.run_names, float(report.results["tied"]["mrr"])
        (['tied', 'sure'], 0.75)
        >>> row = report.pairs.loc[("mrr", "tied", "sure")]
        >>> float(row["expected_a"]), float(row["expected_b"]), bool(row["tie_sensitive"])
        (0.75, 1.0, False)
    """

    results: dict[str, EvaluationReport]
    metrics: list[str]
    model_names: list[str]
    comparisons: Comparisons | None
    win_tie_loss: WinTieLoss
    stat_test: str | None
    max_p: float

    def __init__(self, results: dict[str, EvaluationReport], metrics: Sequence[str], pairs: pd.DataFrame, *,
                 stat_test: str | None, max_p: float, oblivious_order: str, comparisons: Comparisons | None = None,
                 win_tie_loss: WinTieLoss | None = None, rounding_digits: int = 3,
                 show_percentages: bool = False, correction: str | None = None,
                 ci_level: float | None = None) -> None:
        super().__init__(model_names=list(results), results=results, comparisons=comparisons,
                         metrics=list(metrics), max_p=max_p, win_tie_loss=win_tie_loss or {},
                         rounding_digits=rounding_digits, show_percentages=show_percentages, stat_test=stat_test)
        self.run_names = self.model_names
        self.pairs = pairs
        self.oblivious_order = oblivious_order
        self.correction = correction
        self.ci_level = ci_level

    # ------------------------------------------------------------------ data
    @property
    def flagged(self) -> pd.DataFrame:
        """The rows of `pairs` whose verdict depends on tie order or whose ``p_flip`` (or, where it is
        not estimated, its bound) is at least 0.05; ``reason`` says which."""
        flagged: pd.DataFrame = self.pairs[self.pairs["flagged"].astype(bool)]
        return flagged

    def summary_frame(self) -> pd.DataFrame:
        """One row per (run, metric): expected, oblivious, min, max, range, bias, tie_std."""
        frames = {name: report.to_dataframe()[SUMMARY_COLUMNS] for name, report in self.results.items()}
        frame: pd.DataFrame = pd.concat(frames, names=["run", "metric"])
        return frame

    def to_dict(self) -> dict[str, Any]:
        """ranx's schema (``stat_test``, ``metrics``, ``model_names``, and per run its ``scores``
        (E[M]), ``comparisons`` (p-values; None without a test) and ``win_tie_loss``), plus
        ``"tieaware"``: the tie order, every run's summary statistics and the pairs with their
        tests and flip/overlap flags (JSON-ready)."""
        out: dict[str, Any] = {"stat_test": self.stat_test, "metrics": self.metrics, "model_names": self.model_names}
        for run in self.model_names:
            others = [other for other in self.model_names if other != run]
            out[run] = {
                "scores": {m: float(self.results[run][m]) for m in self.metrics},
                "comparisons": {other: {m: None if self.comparisons is None
                                        else float(self.comparisons[run, other][m]["p_value"])
                                        for m in self.metrics} for other in others},
                "win_tie_loss": {other: {m: self.win_tie_loss[run, other][m] for m in self.metrics}
                                 for other in others},
            }
        pairs = self.pairs.reset_index()
        pairs = pairs.astype(object).where(pairs.notna(), None)
        out["tieaware"] = {
            "oblivious_order": self.oblivious_order, "max_p": self.max_p, "correction": self.correction,
            "results": {name: {m: r.to_dict() for m, r in report.items()} for name, report in self.results.items()},
            "pairs": pairs.to_dict(orient="records"),
        }
        return out

    def to_json(self, **kwargs: Any) -> str:
        """`to_dict` as JSON, NaN (a p-value of identical runs, a metric over no queries) as null
        (`tieaware.report.strict_json`)."""
        return strict_json(self.to_dict(), **kwargs)

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write `to_dict` as JSON."""
        with atomic_output(path) as temporary:
            temporary.write_text(self.to_json(indent=2), encoding="utf-8")

    # ------------------------------------------------------------ formatting
    def _format(self, value: float) -> str:
        return str(self.format_score(value))

    def _better_than(self, run: str, metric: str) -> list[int]:
        """Indices of the runs this run beats significantly on `metric`."""
        mine = self.results[run][metric].expected
        out = []
        for j, other in enumerate(self.run_names):
            if other == run:
                continue
            row = self._pair_row(metric, run, other)
            if row["significant"] and mine > self.results[other][metric].expected:
                out.append(j)
        return out

    def _pair_row(self, metric: str, run_a: str, run_b: str) -> pd.Series:
        key = (metric, run_a, run_b) if (metric, run_a, run_b) in self.pairs.index else (metric, run_b, run_a)
        row: pd.Series = self.pairs.loc[[key]].iloc[0]
        return row

    def _flagged_runs(self, metric: str) -> set[str]:
        flagged = self.flagged.reset_index()
        flagged = flagged[flagged["metric"] == metric]
        return set(flagged["run_a"]) | set(flagged["run_b"])

    def to_table(self) -> str:
        """Runs x metrics: E[M] with significance superscripts, range, oblivious value; then the flags."""
        headers = ["#", "Run"]
        for metric in self.metrics:
            headers += [metric, "range", "obl"]
        rows = []
        for i, run in enumerate(self.run_names):
            row = [_label(i), run]
            for metric in self.metrics:
                result = self.results[run][metric]
                marks = "".join(_superscript(j) for j in self._better_than(run, metric))
                row += [self._format(result.expected) + marks, self._format(result.range),
                        self._format(result.oblivious)]
            rows.append(row)
        legend = [f"E[M]: expected value over all orderings of tied documents; range: max - min over them; "
                  f"obl: the value under {self.oblivious_order}'s tie order."]
        if self.stat_test:
            legend.append(f"Superscripts: significantly better than that run ({STAT_TEST_LABELS[self.stat_test]} "
                          f"on per-query E[M], p <= {self.max_p}).")
        if not self.pairs.empty:
            legend.append("Pairs: diff = E[M] of the first run minus the second's, with its paired t-interval; p: the "
                          "test on per-query E[M]; verdict: whether the t-test is significant under every tie order "
                          "(robust), some (fragile) or none; p_flip: chance that one random tie order reverses the "
                          "difference (<=: a certified bound; +-: Monte Carlo standard error); *: flagged.")
        parts = [tabulate(rows, headers=headers, disable_numparse=True), ""]
        if not self.pairs.empty:
            parts += [self.pairs_table(), ""]
        return "\n".join([*parts, *legend, self.flags_text()])

    def pairs_table(self) -> str:
        """Per metric and pair: diff with its interval, p (adjusted), verdict and p_flip, each printed with
        as many decimals as it takes to tell apart the numbers it stands beside."""
        if self.pairs.empty:
            return ""
        letter = {name: _label(i) for i, name in enumerate(self.run_names)}
        rows = []
        for key, row in self.pairs.iterrows():
            metric, run_a, run_b = cast(tuple[str, str, str], key)
            low, high = row["diff_ci_low"], row["diff_ci_high"]
            digits = distinguishing_digits([0.0, row["diff"], low, high, row["expected_a"], row["expected_b"]],
                                           self.rounding_digits)
            flip = _probability_text(row["p_flip"]) if not math.isnan(row["p_flip"]) else \
                f"<= {_probability_text(row['p_flip_bound'])}"
            if not math.isnan(row["p_flip"]) and not row["p_flip_exact"]:
                flip += f" +- {_probability_text(row['p_flip_se'])}"
            rows.append([metric, f"{letter[run_a]} - {letter[run_b]}",
                         f"{row['diff']:+.{digits}f} [{low:+.{digits}f}, {high:+.{digits}f}]",
                         _probability_text(row["p_adjusted"]), row["verdict"] or "", flip,
                         "*" if row["flagged"] else ""])
        level = self._ci_level()
        headers = ["metric", "pair", f"diff [{level} CI]", "p" + (f" ({self.correction})" if self.correction else ""),
                   "verdict", "p_flip", ""]
        return tabulate(rows, headers=headers, disable_numparse=True)

    def _ci_level(self) -> str:
        """The interval's level as a percentage, read back from the first pair's interval."""
        if self.pairs.empty or self.ci_level is None:
            return ""
        return f"{100 * self.ci_level:g}%"

    def flags_text(self) -> str:
        """One line per flagged pair of runs (`flagged`), with its reason."""
        flagged = self.flagged
        if flagged.empty:
            return "No comparison depends on tie order (no fragile verdict, every p_flip < 0.05)."
        lines = [f"Tie order matters for {len(flagged)} comparison(s):"]
        letter = {name: _label(i) for i, name in enumerate(self.run_names)}
        for key, row in flagged.iterrows():
            metric, run_a, run_b = cast(tuple[str, str, str], key)  # the (metric, run_a, run_b) index
            lines.append(f"  {metric}: {letter[run_a]} {run_a} vs {letter[run_b]} {run_b}: {row['reason']}")
        return "\n".join(lines)

    def to_latex(self) -> str:
        """A booktabs LaTeX table: E[M] (best in bold) with significance superscripts and the range;
        a dagger marks runs in a flagged comparison (`flagged`)."""
        def escape(text: str) -> str:
            return text.replace("\\", "\\textbackslash{}").replace("_", "\\_").replace("&", "\\&").replace("%", "\\%")

        best = {m: max(self.run_names, key=lambda r: self.results[r][m].expected) for m in self.metrics}
        lines = [
            "\\begin{table}[ht]", "\\centering",
            "\\caption{E[M]: expected value over all orderings of tied documents; Range: max $-$ min over them. "
            + (f"Superscripts: significantly better than that run ({STAT_TEST_LABELS[self.stat_test]} on "
               f"per-query E[M], $p \\le {self.max_p}$). " if self.stat_test else "")
            + "$\\dagger$: in a flagged comparison (a verdict that depends on tie order, or a "
              "probability of at least 0.05 that one random tie order reverses the difference).}",
            "\\begin{tabular}{cl" + "|cc" * len(self.metrics) + "}", "\\toprule",
            "\\# & Run & " + " & ".join(f"\\multicolumn{{2}}{{c}}{{{escape(m)}}}" for m in self.metrics) + " \\\\",
            " & & " + " & ".join("E[M] & Range" for _ in self.metrics) + " \\\\", "\\midrule",
        ]
        for i, run in enumerate(self.run_names):
            cells = [_label(i), escape(run)]
            for metric in self.metrics:
                result = self.results[run][metric]
                value = self._format(result.expected)
                value = f"\\textbf{{{value}}}" if best[metric] == run else value
                marks = "".join(_label(j) for j in self._better_than(run, metric))
                dagger = "\\dagger" if run in self._flagged_runs(metric) else ""
                if marks or dagger:
                    value += f"$^{{{marks}{dagger}}}$"
                cells += [value, self._format(result.range)]
            lines.append(" & ".join(cells) + " \\\\")
        lines += ["\\bottomrule", "\\end{tabular}", "\\label{tab:results}", "\\end{table}"]
        return "\n".join(lines)

    def plot(self, path: str | os.PathLike[str] | None = None, **kwargs: Any) -> Figure:
        """Metric@k curves of every run (see `tieaware.figures.plot_report`)."""
        return plot_report(self, path, **kwargs)

    def __str__(self) -> str:
        return self.to_table()

    __repr__ = __str__


def _win_tie_loss(aligned: dict[str, dict[str, np.ndarray]], metrics: list[str]) -> WinTieLoss:
    """ranx's win/tie/loss counts on per-query E[M]: {(run, other): {metric: {"W", "T", "L"}}}."""
    out: WinTieLoss = {}
    for run, mine in aligned.items():
        for other, theirs in aligned.items():
            if run != other:
                out[run, other] = {m: {"W": int((mine[m] > theirs[m]).sum()), "T": int((mine[m] == theirs[m]).sum()),
                                       "L": int((mine[m] < theirs[m]).sum())} for m in metrics}
    return out


@dataclass
class _PairSettings:
    """What `_pairs_frame` needs beyond the results: the test, its threshold, the correction, the
    interval's level and the Monte Carlo settings; `tie_values` gives a run's `TieOrderValues` (lazily)."""

    stat_test: str | None
    max_p: float
    correction: str | None
    level: float
    flip_samples: int
    auto_samples: bool
    seed: int
    tie_values: Callable[[str], TieOrderValues | None]


class _RunOrders:
    """Per run, what tie orders give (built on first use, shared by its pairs and metrics):
    the values of every order of its tied queries (None where too many), and Monte Carlo samples."""

    def __init__(self, settings: _PairSettings, names: list[str], query_ids: list[str],
                 tied: dict[str, np.ndarray]) -> None:
        self.settings, self.names, self.query_ids, self.tied = settings, names, query_ids, tied
        self._values: dict[str, TieOrderValues | None] = {}
        self._enumerated: dict[str, dict[str, dict[int, np.ndarray]] | None] = {}
        self._samples: dict[str, dict[str, tuple[np.ndarray, np.ndarray]] | None] = {}
        self._counts: dict[tuple[str, str], tuple[np.ndarray, list[np.ndarray], float] | None] = {}

    def _tie_values(self, run: str) -> TieOrderValues | None:
        if run not in self._values:
            self._values[run] = self.settings.tie_values(run)
        return self._values[run]

    def _positions(self, values: TieOrderValues) -> np.ndarray:
        """Index in the values' query order of each query of `query_ids`."""
        where = {q: i for i, q in enumerate(values.query_ids)}
        return np.array([where[q] for q in self.query_ids], np.int64)

    def enumerated(self, run: str, metric: str) -> dict[int, np.ndarray] | None:
        """{query (index in `query_ids`): its value under each tie order} for the run's tied queries."""
        if run not in self._enumerated:
            self._enumerated[run] = None
            tied = np.flatnonzero(self.tied[run])
            values = self._tie_values(run) if tied.size <= MAX_ENUMERATED_QUERIES else None
            if values is not None:
                positions = self._positions(values)
                found = values.enumerate(positions[tied])
                if found is not None:
                    self._enumerated[run] = {name: {int(q): per_query[int(positions[q])] for q in tied}
                                             for name, per_query in found.items()}
        found = self._enumerated[run]
        return None if found is None else found.get(metric)

    def counts(self, run: str, metric: str, side: dict[str, np.ndarray]) -> tuple[np.ndarray, list[np.ndarray],
                                                                              float] | None:
        """Per query of `query_ids`, the distribution of the run's count of relevant documents in the top
        k (`count_distributions`: lowest values, probabilities) and the metric's value of one count, for
        the families `TieOrderValues.count_law` covers; None for the others, or where the law does not
        give the kernels' E, min and max (`side`) to 1e-9, so that a mismatch falls back, never misleads."""
        key = (run, metric)
        if key not in self._counts:
            self._counts[key] = None
            values = self._tie_values(run)
            law = values.count_law(metric, self._positions(values)) if values is not None else None
            if law is not None:
                lows, pmfs = count_distributions(law.fixed, law.size, law.relevant, law.drawn, law.indicator)
                unit = 1.0 if law.indicator else law.unit
                expected = np.array([unit * (low + float(np.dot(np.arange(pmf.size), pmf)))
                                     for low, pmf in zip(lows.tolist(), pmfs)])
                lowest = unit * lows
                highest = unit * (lows + np.array([pmf.size - 1 for pmf in pmfs]))
                if all(np.allclose(mine, side[name], rtol=0, atol=1e-9)
                       for mine, name in ((expected, "expected"), (lowest, "min"), (highest, "max"))):
                    self._counts[key] = (lows, pmfs, unit)
        return self._counts[key]

    def deviations(self, run: str, metric: str, expected: np.ndarray) -> np.ndarray | None:
        """(n,) sums over the run's tied queries of (value - E) of the metric, each under one random tie
        order: Q (D_tau - diff) = deviations of run_a minus those of run_b. n is `flip_samples`, or by
        default at most `AUTO_SAMPLE_BUDGET` / (tied queries); None where not sampled."""
        if run not in self._samples:
            self._samples[run] = None
            tied = np.flatnonzero(self.tied[run])
            n_samples = self.settings.flip_samples
            if self.settings.auto_samples:  # the default: a budget of tied queries x samples per run
                n_samples = min(n_samples, AUTO_SAMPLE_BUDGET // max(tied.size, 1))
                n_samples = n_samples if n_samples >= AUTO_FEWEST_SAMPLES else 0
            values = self._tie_values(run) if tied.size and n_samples > 0 else None
            if values is not None:
                rng = np.random.default_rng([self.settings.seed, self.names.index(run)])
                sampled = values.sample(n_samples, rng, self._positions(values)[tied])
                self._samples[run] = {name: (tied, rows) for name, rows in sampled.items()}
        found = self._samples[run]
        if found is None or metric not in found:
            return None
        queries, rows = found[metric]
        deviation: np.ndarray = rows.sum(axis=1) - float(expected[queries].sum())
        return deviation


def _per_query(result: MetricResult, query_ids: list[str]) -> dict[str, np.ndarray]:
    """E, Var, min, max per query of `query_ids` (the first run's order)."""
    if list(result.query_ids) == query_ids:
        return {c: result.per_query_values(c) for c in ("expected", "variance", "min", "max")}
    frame = result.per_query.reindex(query_ids)
    return {c: frame[c].to_numpy(np.float64) for c in ("expected", "variance", "min", "max")}


def _counted_flip(diff: float, a: dict[str, np.ndarray], b: dict[str, np.ndarray], run_a: str, run_b: str,
                  metric: str, orders: _RunOrders) -> float | None:
    """p_flip, exact at any size, for metrics that count relevant documents (`_RunOrders.counts`): the
    summed difference of counts is an integer, whose distribution is the convolution of the per-query
    ones (`integer_sum_distribution`); None for other metrics."""
    sides: list[tuple[np.ndarray, list[np.ndarray], float] | None] = []
    for run, side in ((run_a, a), (run_b, b)):
        if (side["max"] > side["min"]).any():
            counted = orders.counts(run, metric, side)
            if counted is None:
                return None
            sides.append(counted)
        else:
            sides.append(None)
    units = {found[2] for found in sides if found is not None}
    if len(units) != 1:
        return None
    unit = units.pop()
    lows, pmfs = [], []
    for found, side, direction in zip(sides, (a, b), (1, -1)):
        if found is None:  # no ties: the count of every query is its value / unit
            counts = np.rint(side["expected"] / unit).astype(np.int64)
            if not np.allclose(counts * unit, side["expected"], rtol=0, atol=1e-9):
                return None
            lows.append(direction * int(counts.sum()))
            continue
        found_lows, found_pmfs = found[0], found[1]
        if direction == 1:
            lows.append(int(found_lows.sum()))
            pmfs += found_pmfs
        else:  # -count: lowest value -(highest count), the probabilities reversed
            lows.append(-int(sum(int(low) + pmf.size - 1 for low, pmf in zip(found_lows.tolist(), found_pmfs))))
            pmfs += [pmf[::-1] for pmf in found_pmfs]
    low, probabilities = integer_sum_distribution(np.array(lows), pmfs)
    return flip_probability(diff, unit * (low + np.arange(probabilities.size)), probabilities, a["expected"].size)


def _flip(diff: float, a: dict[str, np.ndarray], b: dict[str, np.ndarray], run_a: str, run_b: str, metric: str,
          orders: _RunOrders) -> dict[str, Any]:
    """p_flip, its standard error, its certified bound and whether it is exact; the t-test's p_min, p_max
    from the enumerated orders where they are few (None otherwise)."""
    range_a, range_b = a["max"] - a["min"], b["max"] - b["min"]
    bound = flip_bound(diff, range_a + range_b, a["variance"] + b["variance"])
    out: dict[str, Any] = {"p_flip": math.nan, "p_flip_se": math.nan, "p_flip_bound": bound,
                           "p_flip_exact": False, "enumerated_p": None}
    tied = np.flatnonzero((range_a > 0) | (range_b > 0))
    if tied.size == 0:  # D_tau = diff under every order
        out.update(p_flip=0.0, p_flip_se=0.0, p_flip_exact=True)
        return out
    empty: dict[int, np.ndarray] = {}
    values_a = orders.enumerated(run_a, metric) if (range_a > 0).any() else empty
    values_b = orders.enumerated(run_b, metric) if (range_b > 0).any() else empty
    d = a["expected"] - b["expected"]
    if values_a is not None and values_b is not None:
        supports = [difference_distribution(values_a.get(int(q), a["expected"][q:q + 1]),
                                            values_b.get(int(q), b["expected"][q:q + 1])) for q in tied]
        fixed = float(np.delete(d, tied).sum())
        distribution = sum_distribution(supports)
        if distribution is not None:
            p = flip_probability(diff, distribution[0] + fixed, distribution[1], d.size)
            out.update(p_flip=p, p_flip_se=0.0, p_flip_exact=True)
        per_query = [np.array([value]) for value in d]
        for q, (support, _) in zip(tied, supports):
            per_query[q] = support
        out["enumerated_p"] = enumerated_t_p_range(per_query)
        if distribution is not None:
            return out
    counted = _counted_flip(diff, a, b, run_a, run_b, metric, orders)
    if counted is not None:
        out.update(p_flip=counted, p_flip_se=0.0, p_flip_exact=True)
        return out
    if orders.settings.flip_samples > 0 and bound >= FLIP_LEVEL:
        deviations = [orders.deviations(run, metric, side["expected"]) if (ranges > 0).any() else np.zeros(0)
                      for run, side, ranges in ((run_a, a, range_a), (run_b, b, range_b))]
        if all(deviation is not None for deviation in deviations):
            deviation_a, deviation_b = cast(list[np.ndarray], deviations)
            n = min(deviation.size for deviation in (deviation_a, deviation_b) if deviation.size)
            spread = (deviation_a[:n] if deviation_a.size else 0.0) - (deviation_b[:n] if deviation_b.size else 0.0)
            flipped = sign((float(d.sum()) + spread) / d.size) != sign(diff)
            p = float(flipped.mean())
            out.update(p_flip=p, p_flip_se=math.sqrt(p * (1 - p) / flipped.size))
    return out


def _reason(row: dict[str, Any]) -> str:
    """Why a pair is flagged, in one line."""
    why = []
    if row["verdict"] == "fragile":
        bounds = "" if row["p_bounds_exact"] else " (certified bounds, not exact: the truth may be narrower)"
        why.append(f"significant under some tie orders only: p in [{_probability_text(row['p_min_adjusted'])}, "
                   f"{_probability_text(row['p_max_adjusted'])}]{bounds}")
    if not math.isnan(row["p_flip"]) and row["p_flip"] >= FLIP_LEVEL or \
            math.isnan(row["p_flip"]) and row["p_flip_bound"] >= FLIP_LEVEL:
        what = "makes the runs differ" if sign(row["diff"]) == 0 else "reverses the difference (or makes it 0)"
        if math.isnan(row["p_flip"]):
            chance = f"up to {_probability_text(row['p_flip_bound'])} (not estimated)"
        elif row["p_flip_exact"]:
            chance = _probability_text(row["p_flip"])
        else:
            chance = f"{_probability_text(row['p_flip'])} +- {_probability_text(row['p_flip_se'])} (Monte Carlo)"
        why.append(f"one random tie order {what} with probability {chance}")
    return "; ".join(why)


def _pairs_frame(results: dict[str, EvaluationReport], metrics: list[str], comparisons: Comparisons | None,
                 settings: _PairSettings) -> pd.DataFrame:
    rows: list[dict[str, Any]] = []
    index: list[tuple[str, str, str]] = []
    names = list(results)
    query_ids = list(next(iter(results.values()))[metrics[0]].query_ids)
    arrays = {name: {m: _per_query(report[m], query_ids) for m in metrics} for name, report in results.items()}
    tied = {name: np.logical_or.reduce([arrays[name][m]["max"] > arrays[name][m]["min"] for m in metrics])
            for name in names}
    orders = _RunOrders(settings, names, query_ids, tied)
    for metric in metrics:
        first = len(rows)
        for i, run_a in enumerate(names):
            for run_b in names[i + 1:]:
                a, b = results[run_a][metric], results[run_b][metric]
                qa, qb = arrays[run_a][metric], arrays[run_b][metric]
                test = comparisons[run_a, run_b][metric] if comparisons is not None else None
                order_flip = _sign(a.oblivious - b.oblivious) != _sign(a.expected - b.expected)
                overlap = _sign(a.max - b.min) > 0 and _sign(b.max - a.min) > 0
                row: dict[str, Any] = {
                    "expected_a": a.expected, "expected_b": b.expected, "oblivious_a": a.oblivious,
                    "oblivious_b": b.oblivious, "min_a": a.min, "max_a": a.max, "min_b": b.min, "max_b": b.max,
                    "p_value": float(test["p_value"]) if test else np.nan,
                    "order_flip": order_flip, "intervals_overlap": overlap, "tie_sensitive": order_flip or overlap}
                row.update(difference_summary(qa["expected"], qb["expected"], qa["variance"], qb["variance"],
                                              settings.level))
                flip = _flip(row["diff"], qa, qb, run_a, run_b, metric, orders)
                enumerated_p = flip.pop("enumerated_p")
                row.update(flip)
                p_min = p_max = math.nan
                exact = False
                if settings.stat_test == "student":
                    if enumerated_p is not None:
                        (p_min, p_max), exact = enumerated_p, True
                    else:
                        p_min, p_max = t_test_p_bounds(qa["min"] - qb["max"], qa["max"] - qb["min"])
                        exact = bool(np.array_equal(qa["min"], qa["max"]) and np.array_equal(qb["min"], qb["max"]))
                row.update(p_min=p_min, p_max=p_max, p_bounds_exact=exact)
                rows.append(row)
                index.append((metric, run_a, run_b))
        block = rows[first:]
        adjusted = {column: adjust_p_values(np.array([r[column] for r in block], np.float64), settings.correction)
                    for column in ("p_value", "p_min", "p_max")}
        for j, row in enumerate(block):
            row["p_adjusted"] = float(adjusted["p_value"][j])
            row["p_min_adjusted"] = float(adjusted["p_min"][j])
            row["p_max_adjusted"] = float(adjusted["p_max"][j])
            row["significant"] = bool(_significant(row["p_adjusted"], settings.max_p))
            row["verdict"] = verdict(row["p_min_adjusted"], row["p_max_adjusted"], settings.max_p)
            row["reason"] = _reason(row)
            row["flagged"] = bool(row["reason"])
    frame: pd.DataFrame = pd.DataFrame(rows, columns=PAIR_COLUMNS,
                                       index=pd.MultiIndex.from_tuples(index, names=["metric", "run_a", "run_b"]))
    return frame


def _significant(p_value: float, max_p: float) -> bool:
    """A (possibly adjusted) p-value at or below the threshold; NaN (no test, identical runs) is not."""
    return not math.isnan(p_value) and p_value <= max_p


def _aligned_expected(results: dict[str, EvaluationReport], metrics: list[str]) -> dict[str, dict[str, np.ndarray]]:
    """{run: {metric: per-query E[M] array}}, queries in the first run's order (every run covers the
    qrels' queries: `evaluate` raises otherwise, or aligns them with make_comparable)."""
    first = next(iter(results.values()))[metrics[0]].per_query.index
    return {name: {m: report[m].per_query["expected"].reindex(first).to_numpy() for m in metrics}
            for name, report in results.items()}


def compare(qrels: QrelsLike, runs: Mapping[str, RunLike] | Iterable[RunLike], metrics: MetricsLike,
            stat_test: str | None = "student", n_permutations: int = 1000,
            max_p: float = 0.01, random_seed: int = 42, threads: int = 0, rounding_digits: int = 3,
            show_percentages: bool = False, make_comparable: bool = False, *, oblivious: str | None = None,
            relevance_level: int = 1, show_progress: bool = False,
            ignore_identical_ids: bool = False, correction: str | None = None, ci: float | None = None,
            flip_samples: int | None = None, seed: int | None = None) -> ComparisonReport:
    """Evaluate several runs tie-aware and test their differences; the same call as ``ranx.compare``.

    Significance tests use ranx's own code on the per-query expected values E[M]
    (not on one arbitrary tie order). Every pair of runs also gets the tie-aware
    statistics of `ComparisonReport.pairs` (docs/comparison.md): the difference with
    its interval, how likely one random tie order reverses it (``p_flip``), and the
    range of the t-test's p-value over tie orders with its ``verdict``; a pair is
    ``flagged`` when its verdict depends on tie order or ``p_flip >= 0.05``.

    Args:
        qrels: ranx ``Qrels``, dict, TREC path or DataFrame.
        runs: a list of runs (ranx ``Run`` named by ``run.name``, TREC paths named by
            file stem, dicts named run_1, run_2, ...) or a dict ``{name: run}``.
            The runs are read, never modified.
        metrics: a metric name or a list, in ranx, trec_eval or ir_measures syntax (as `evaluate`).
        stat_test: "student" (default, as ranx), "fisher", "tukey", or None for no test.
        n_permutations, random_seed: Fisher's randomization test settings.
        max_p: p-value at or below which a difference counts as significant.
        threads: threads reading each run (`evaluate`'s; 0: all CPUs), as in ranx.
        rounding_digits, show_percentages: how the tables print numbers.
        make_comparable: score qrels queries missing from a run as 0 and drop run
            queries without qrels, instead of raising.
        oblivious: whose tie order gives the oblivious values: one of `tieaware.registry.OBLIVIOUS_ORDERS`;
            None (default): "ranx" when the qrels or any run is a ranx object, else "trec_eval"
            (`tieaware.arguments.resolve_oblivious`); the report's ``oblivious_order`` says which.
        relevance_level: judgments >= this are relevant unless a metric name sets its own.
        show_progress: a progress bar over runs (shown only if evaluation takes over a second).
        ignore_identical_ids: BEIR's convention: documents whose id equals the query id are
            dropped from every run before ranking (see `evaluate`); the runs given are not changed.
        correction: None, "bonferroni", "holm" or "fdr_bh" (Benjamini-Hochberg): adjusts the p-values of
            the pairs of each metric (``p_adjusted``, and ``p_min_adjusted``/``p_max_adjusted`` from which
            ``verdict`` is read); ``significant`` is ``p_adjusted <= max_p``.
        ci: the level of the interval ``diff_ci_low``, ``diff_ci_high`` (default 1 - max_p).
        flip_samples: random tie orders drawn per run to estimate ``p_flip`` where it is neither
            exact nor settled by its certified bound (bound < 0.05); 0: never sample. None (the
            default): 1,000, fewer for a run with over 100 tied queries (100,000 query samples
            at most) and none below 200 (then only the bound is reported), so that large runs
            cost no more than their evaluation.
        seed: the Monte Carlo seed (default ``random_seed``): the same seed gives the same report.

    Returns:
        A `ComparisonReport`, a ``ranx`` ``Report`` (``model_names``, ``results``,
        ``comparisons``, ``win_tie_loss``, ``to_dataframe()``, ``to_dict()``,
        ``to_latex()``, ``print_results()``) with ``summary_frame()``, ``pairs``,
        ``flagged`` and ``plot()`` added.

    Fewer than 2 queries: no significance test (a warning says so).

    Raises:
        InputError: an unknown ``stat_test`` or ``correction``, a ``ci`` outside (0, 1), a ``flip_samples``
            that is not a whole number >= 0, no runs, one run where a list or dict is expected, two runs
            of one name, or data `evaluate` refuses (a run's queries differing from the qrels' without
            ``make_comparable``: `QueryMismatchError`).
        UnknownMetricError: a metric name in none of the syntaxes.

    Examples:
        >>> import tieaware
        >>> qrels = {"q1": {"d1": 1}, "q2": {"d2": 1}}
        >>> runs = {"tied": {"q1": {"d1": 0.5, "d2": 0.5}, "q2": {"d1": 0.5, "d2": 0.5}},
        ...         "sure": {"q1": {"d1": 0.9, "d2": 0.1}, "q2": {"d1": 0.1, "d2": 0.9}}}
        >>> report = tieaware.compare(qrels, runs, ["mrr", "P@1"], stat_test=None)
        >>> [(run, float(report.results[run]["P@1"]), report.results[run]["P@1"].range) for run in runs]
        [('tied', 0.5, 1.0), ('sure', 1.0, 0.0)]
    """
    if stat_test is not None and stat_test not in STAT_TESTS:
        raise InputError(f"stat_test must be one of {STAT_TESTS} or None, got {stat_test!r}.")
    if correction is not None and correction not in CORRECTIONS:
        raise InputError(f"correction must be one of {CORRECTIONS} or None, got {correction!r}.")
    if ci is not None and not 0 < ci < 1:
        raise InputError(f"ci is the level of an interval, between 0 and 1 exclusive, got {ci!r}.")
    auto_samples = flip_samples is None
    flip_samples = DEFAULT_FLIP_SAMPLES if flip_samples is None else flip_samples
    if isinstance(flip_samples, bool) or not isinstance(flip_samples, (int, np.integer)) or flip_samples < 0:
        raise InputError(f"flip_samples must be a whole number >= 0, got {flip_samples!r}.")
    metric_names = metric_keys(metrics)[0]
    named = named_runs(runs)
    oblivious = resolve_oblivious(oblivious, qrels, *named.values())
    qrels = load_qrels(qrels)
    if not named:
        raise InputError("No runs to compare.")
    specs = {spec.name: spec for spec in parse_metrics(metric_names, relevance_level)}
    # each run read once, its lists shared by its evaluation and its tie-order statistics (judged_only
    # metrics need the run itself: evaluate reads it without its unjudged documents)
    shared = not any(spec.judged_only for spec in specs.values())
    lists: dict[str, Any] = {}
    results: dict[str, EvaluationReport] = {}
    for name in progress(list(named), unit="run", desc="evaluating", show=show_progress, delay=1.0):
        run = named[name]
        if shared:
            with limited(threads):
                run = lists[name] = TieOrderValues.read_lists(qrels, run, make_comparable, ignore_identical_ids)
        # a list of metric names gives an EvaluationReport
        results[name] = cast(EvaluationReport, evaluate(
            qrels, run, metric_names, threads=threads, make_comparable=make_comparable, oblivious=oblivious,
            relevance_level=relevance_level, ignore_identical_ids=ignore_identical_ids and not shared))
    aligned = _aligned_expected(results, metric_names)
    comparisons: Comparisons | None = None
    n_queries = len(next(iter(aligned.values()))[metric_names[0]])
    if stat_test is not None and len(results) > 1 and n_queries < 2:  # scipy would warn, give NaN, or raise
        warnings.warn(f"tieaware: p-values need at least 2 queries, got {n_queries}: the runs are compared "
                      "without a significance test.", UserWarning, stacklevel=2)
    elif stat_test is not None and len(results) > 1:
        from ranx.statistical_tests import compute_statistical_significance

        comparisons = compute_statistical_significance(
            list(results), aligned, stat_test=stat_test, n_permutations=n_permutations, max_p=max_p,
            random_seed=random_seed)

    def tie_values(name: str) -> TieOrderValues | None:
        wanted = [specs[m] for m in metric_names if not specs[m].judged_only]
        if not wanted:
            return None
        read = lists[name] if name in lists else \
            TieOrderValues.read_lists(qrels, named[name], make_comparable, ignore_identical_ids)
        return TieOrderValues(read, wanted)

    settings = _PairSettings(stat_test if comparisons is not None else None, max_p, correction,
                             1 - max_p if ci is None else ci, int(flip_samples), auto_samples,
                             random_seed if seed is None else seed, tie_values)
    return ComparisonReport(results, metric_names, _pairs_frame(results, metric_names, comparisons, settings),
                            stat_test=stat_test if comparisons is not None else None, max_p=max_p,
                            oblivious_order=oblivious, comparisons=comparisons,
                            win_tie_loss=_win_tie_loss(aligned, metric_names), rounding_digits=rounding_digits,
                            show_percentages=show_percentages, correction=correction,
                            ci_level=settings.level)


def metric_at_k(metric: str, k: int) -> str:
    """``metric`` with cutoff k in a syntax `parse_metric` reads: ``ndcg`` -> ``ndcg@10``, ``P`` -> ``P@10``,
    ``ndcg_cut`` -> ``ndcg_cut.10``."""
    for name in (f"{metric}@{k}", f"{metric}.{k}"):
        try:
            if parse_metric(name).k == k:
                return name
        except UnknownMetricError:
            continue
    raise UnknownMetricError(f"{metric!r} takes no cutoff k (or is unknown); "
                             "plot families with a cutoff such as ndcg, P, recall, mrr, map.")


def compare_at_k(qrels: QrelsLike, runs: Mapping[str, RunLike] | Iterable[RunLike],
                 metric: str | Sequence[str] = "ndcg", ks: Iterable[int] = DEFAULT_KS, *, oblivious: str | None = None,
                 relevance_level: int = 1, make_comparable: bool = False) -> ComparisonReport:
    """`compare` (without significance tests) of ``metric@k`` for every k: the numbers behind
    metric@k curves.

    Args:
        qrels, runs: as `compare` takes them (runs: a list or a dict ``{name: run}``).
        metric: a family with a cutoff (``ndcg``, ``P``, ``recall``, ``mrr``, ``map``, ``ndcg_cut``, ...)
            or a list of them.
        ks: cutoffs.
    """
    families = [metric] if isinstance(metric, str) else list(metric)
    names = [metric_at_k(family, int(k)) for family in families for k in sorted(set(ks))]
    return compare(qrels, runs, names, stat_test=None, oblivious=oblivious, relevance_level=relevance_level,
                   make_comparable=make_comparable)


def plot_at_k(qrels: QrelsLike, runs: Mapping[str, RunLike] | Iterable[RunLike], metric: str | Sequence[str] = "ndcg",
              ks: Iterable[int] = DEFAULT_KS, path: str | os.PathLike[str] | None = None, *,
              oblivious: str | None = None, relevance_level: int = 1, make_comparable: bool = False,
              title: str | None = None, dpi: int = 150) -> Figure:
    """`compare_at_k`, drawn by `tieaware.figures.plot_report` (E[M] against k per run, the [min, max]
    band over tie orders and the oblivious values); saved to ``path`` when given.

    Returns:
        The matplotlib ``Figure``.

    Raises:
        InputError: ``path``'s suffix names no format matplotlib writes, before anything is evaluated.
    """
    if path is not None:
        check_image_path(path)
    report = compare_at_k(qrels, runs, metric, ks, oblivious=oblivious, relevance_level=relevance_level,
                          make_comparable=make_comparable)
    return plot_report(report, path, title=title, dpi=dpi)
