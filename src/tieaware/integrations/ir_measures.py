"""Tie-aware measures for ir_measures (and so for PyTerrier's ``pt.Experiment``).

``E(nDCG@10)``, ``Range(nDCG@10)``, ``Bias(nDCG@10)``, ``Min(nDCG@10)`` and
``Max(nDCG@10)`` are ir_measures measures: pass them to
``ir_measures.calc_aggregate``, ``iter_calc``, ``calc``, ``evaluator`` or
``pt.Experiment`` next to the usual ``nDCG@10`` and each reports, per query and
(as the mean over queries) overall, the statistic `tieaware.evaluate` gives for
that measure: E[M] over all orderings of tied documents, max - min, the tool's
value minus E[M], and the worst and best orderings; counts (``E(NumRelRet)``) are
summed over queries, as ir_measures sums ``NumRelRet``. Every measure tieaware
parses in ir_measures syntax can be wrapped (`tieaware.metrics`), and so can a
name as a string in any syntax tieaware reads (``E("ndcg_cut_10")``,
``Range("ndcg@10")``, ``E("nDCG@10")``), evaluated as `tieaware.evaluate` reads
that string; another is an `UnknownMetricError` when the wrapper is built.

Text: `parse_measure` reads ``"E(nDCG@10)"``, ``"Bias(ndcg_cut_10, oblivious=trec_eval)"``
and, for anything else, defers to ``ir_measures.parse_measure``. The five
wrappers are also registered in ir_measures' measure registry (the one
``ir_measures.parse_measure`` reads, `ir_measures.measures.register`), where
its parser takes them with a keyword and a quoted name only:
``ir_measures.parse_measure('E(measure="nDCG@10")')``; it rejects positional
arguments and measure expressions as values, so ``"E(nDCG@10)"`` itself cannot
be taught to it. A name another package already registered is left to it.

How it plugs in: ir_measures' default pipeline asks its ``runtime`` provider
first, and that provider evaluates any measure with a ``runtime_impl(qrels, run)``
method (the hook behind ``ir_measures.define``); these measures implement it by
calling `tieaware.evaluate` on the two DataFrames it receives. Nothing in
ir_measures is patched. Queries follow ir_measures: a query in the qrels but not
in the run scores 0 (no spread), a run query without qrels is ignored.

``Bias`` compares with ir_measures' own value by default (``oblivious="ir_measures"``:
its tie order for that measure, see `tieaware.engine.ir_measures_order`);
``Bias(nDCG@10, oblivious="trec_eval")`` compares with trec_eval / pytrec_eval.
One caveat: for RBP, whose ir_measures order is the input order, the order seen
here is the one the runtime provider hands over (the run sorted by query and
descending score), not the file's.

This module imports ir_measures; `tieaware` itself never does.

Examples:
    >>> import ir_measures
    >>> from ir_measures import nDCG
    >>> from tieaware.integrations.ir_measures import E, Range
    >>> qrels = [ir_measures.Qrel("q1", "d1", 1)]
    >>> run = [ir_measures.ScoredDoc("q1", "d1", 0.5), ir_measures.ScoredDoc("q1", "d2", 0.5)]
    >>> res = ir_measures.calc_aggregate([nDCG@10, E(nDCG@10), Range(nDCG@10)], qrels, run)
    >>> [round(res[m], 4) for m in (nDCG@10, E(nDCG@10), Range(nDCG@10))]
    [0.6309, 0.8155, 0.3691]
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, cast

import ir_measures
from ir_measures.measures import Measure, ParamInfo
from ir_measures.measures.base import MeanAgg, SumAgg

from ..arguments import check_oblivious
from ..errors import InputError, InputTypeError
from ..evaluation import evaluate
from ..metrics import parse_metric
from ..registry import OBLIVIOUS_ORDERS
from ..report import MetricResult

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["E", "Range", "Bias", "Min", "Max", "TieAwareMeasure", "parse_measure"]

_INPUTS = ["query_id", "doc_id", "score"], ["query_id", "doc_id", "relevance"]


class TieAwareMeasure(Measure):
    """One tie-aware statistic (``STATISTIC``, a column of `MetricResult.per_query`) of an
    ir_measures measure, computed by `tieaware.evaluate` through ir_measures' runtime provider.
    Use its subclasses `E`, `Range`, `Bias`, `Min` and `Max`.

    Args:
        measure: an ir_measures measure (``nDCG@10``) or a metric name in any syntax tieaware reads
            (``"ndcg_cut_10"``).
        oblivious: whose tie order gives the tool's value (`Bias`): one of
            `tieaware.registry.OBLIVIOUS_ORDERS`, default ``"ir_measures"``.

    Raises:
        InputTypeError: ``measure`` is neither a measure nor a string.
        InputError: an unknown ``oblivious`` order.
        UnknownMetricError: a measure tieaware does not compute.

    Examples:
        >>> from tieaware.integrations.ir_measures import Bias
        >>> Bias("ndcg_cut_10", oblivious="trec_eval")
        Bias(ndcg_cut_10,oblivious='trec_eval')
    """

    STATISTIC: str = ""
    SUPPORTED_PARAMS = {
        "measure": ParamInfo(dtype=(Measure, str), required=True,
                             desc="the ir_measures measure, e.g. nDCG@10, or a metric name in any syntax"),
        "oblivious": ParamInfo(dtype=str, choices=OBLIVIOUS_ORDERS, default="ir_measures",
                               desc="whose tie order gives the tool's value (Bias)"),
    }
    RUN_INPUTS, QREL_INPUTS = _INPUTS

    def __init__(self, measure: Measure | str, **params: Any) -> None:
        if isinstance(measure, str):
            measure = measure.strip()
        elif not isinstance(measure, Measure):
            raise InputTypeError(f"{type(self).__name__}() wraps an ir_measures measure such as nDCG@10 or a "
                                 f"metric name such as 'ndcg_cut_10', got {measure!r}.")
        check_oblivious(params.get("oblivious", "ir_measures"))
        parse_metric(str(measure))  # an UnknownMetricError now, not inside ir_measures' pipeline later
        super().__init__(measure=measure, **params)  # type: ignore[no-untyped-call]  # ir_measures: unannotated

    @property
    def __name__(self) -> str:  # ir_measures names a measure by its __name__
        return type(self).__qualname__  # not type(self).__name__: this property shadows it for type checkers

    def __repr__(self) -> str:
        oblivious = self.params.get("oblivious", "ir_measures")
        extra = "" if oblivious == "ir_measures" else f",oblivious={oblivious!r}"
        return f"{type(self).__name__}({self.params['measure']}{extra})"

    def aggregator(self) -> MeanAgg | SumAgg:
        """ir_measures' aggregate over queries: the sum for counts (`tieaware.metrics.MetricSpec.aggregate`),
        else the mean."""
        return SumAgg() if parse_metric(str(self.params["measure"])).aggregate == "sum" else MeanAgg()

    def runtime_impl(self, qrels: pd.DataFrame, run: pd.DataFrame) -> Iterator[ir_measures.Metric]:
        """Per-query ``Metric``s: `tieaware.evaluate` on the runtime provider's DataFrames
        (``query_id, doc_id, relevance`` and ``query_id, doc_id, score``)."""
        # one metric name gives a MetricResult
        oblivious = self.params.get("oblivious", "ir_measures")
        result = cast(MetricResult, evaluate(qrels[["query_id", "doc_id", "relevance"]],
                                             run[["query_id", "doc_id", "score"]], str(self.params["measure"]),
                                             make_comparable=True, oblivious=oblivious))
        for query_id, value in zip(result.query_ids, result.per_query_values(self.STATISTIC)):
            yield ir_measures.Metric(query_id, self, float(value))


class E(TieAwareMeasure):
    """E[M]: the measure's expected value over all orderings of tied documents.

    Examples:
        >>> import ir_measures
        >>> from ir_measures import nDCG
        >>> from tieaware.integrations.ir_measures import E
        >>> qrels = [ir_measures.Qrel("q1", "d1", 1)]
        >>> run = [ir_measures.ScoredDoc("q1", "d1", 0.5), ir_measures.ScoredDoc("q1", "d2", 0.5)]
        >>> round(ir_measures.calc_aggregate([E(nDCG@10)], qrels, run)[E(nDCG@10)], 4)
        0.8155
    """
    STATISTIC = "expected"


class Range(TieAwareMeasure):
    """max - min of the measure over tie orderings: how far tie order alone can move it.

    Examples:
        >>> import ir_measures
        >>> from ir_measures import nDCG
        >>> from tieaware.integrations.ir_measures import Range
        >>> qrels = [ir_measures.Qrel("q1", "d1", 1)]
        >>> run = [ir_measures.ScoredDoc("q1", "d1", 0.5), ir_measures.ScoredDoc("q1", "d2", 0.5)]
        >>> round(ir_measures.calc_aggregate([Range(nDCG@10)], qrels, run)[Range(nDCG@10)], 4)
        0.3691
    """
    STATISTIC = "range"


class Bias(TieAwareMeasure):
    """The tool's value minus E[M] (tool: ``oblivious``, ir_measures' own order by default).

    Examples:
        >>> import ir_measures
        >>> from ir_measures import nDCG
        >>> from tieaware.integrations.ir_measures import Bias
        >>> qrels = [ir_measures.Qrel("q1", "d1", 1)]
        >>> run = [ir_measures.ScoredDoc("q1", "d1", 0.5), ir_measures.ScoredDoc("q1", "d2", 0.5)]
        >>> round(ir_measures.calc_aggregate([Bias(nDCG@10)], qrels, run)[Bias(nDCG@10)], 4)
        -0.1845
    """
    STATISTIC = "bias"


class Min(TieAwareMeasure):
    """The measure under the worst ordering of tied documents.

    Examples:
        >>> import ir_measures
        >>> from ir_measures import nDCG
        >>> from tieaware.integrations.ir_measures import Min
        >>> qrels = [ir_measures.Qrel("q1", "d1", 1)]
        >>> run = [ir_measures.ScoredDoc("q1", "d1", 0.5), ir_measures.ScoredDoc("q1", "d2", 0.5)]
        >>> round(ir_measures.calc_aggregate([Min(nDCG@10)], qrels, run)[Min(nDCG@10)], 4)
        0.6309
    """
    STATISTIC = "min"


class Max(TieAwareMeasure):
    """The measure under the best ordering of tied documents.

    Examples:
        >>> import ir_measures
        >>> from ir_measures import nDCG
        >>> from tieaware.integrations.ir_measures import Max
        >>> qrels = [ir_measures.Qrel("q1", "d1", 1)]
        >>> run = [ir_measures.ScoredDoc("q1", "d1", 0.5), ir_measures.ScoredDoc("q1", "d2", 0.5)]
        >>> round(ir_measures.calc_aggregate([Max(nDCG@10)], qrels, run)[Max(nDCG@10)], 4)
        1.0
    """
    STATISTIC = "max"


WRAPPERS: dict[str, type[TieAwareMeasure]] = {cls.__qualname__: cls for cls in (E, Range, Bias, Min, Max)}
for _name, _cls in WRAPPERS.items():
    if _name not in ir_measures.measures.registry:
        ir_measures.measures.register(_cls)

_WRAPPED = re.compile(r"\s*(?P<stat>" + "|".join(WRAPPERS) + r")\s*\((?P<inner>.*)\)\s*", re.DOTALL)


def parse_measure(text: str | Measure) -> Measure:
    """A measure from its text: ``"E(nDCG@10)"``, ``"Range(ndcg_cut_10)"``,
    ``"Bias(nDCG@10, oblivious=trec_eval)"`` or ``'E(measure="ndcg@10")'`` (the wrapped name
    in any syntax tieaware reads, quoted or not), anything else as ``ir_measures.parse_measure``
    reads it (``"nDCG@10"``). A measure object is returned as it is.

    Args:
        text: the measure's text, or a measure object.

    Returns:
        The ir_measures measure: a tieaware wrapper for ``E``/``Range``/``Bias``/``Min``/``Max``.

    Raises:
        UnknownMetricError: the wrapped name is not one tieaware computes.
        InputError: a parameter other than ``measure`` and ``oblivious``.

    Examples:
        >>> from tieaware.integrations.ir_measures import parse_measure
        >>> parse_measure("Range(nDCG@10)"), parse_measure("Bias(ndcg_cut_10, oblivious=trec_eval)")
        (Range(nDCG@10), Bias(ndcg_cut_10,oblivious='trec_eval'))
    """
    if isinstance(text, Measure):
        return text
    match = _WRAPPED.fullmatch(text)
    if match is None:
        return ir_measures.parse_measure(text)
    params: dict[str, str] = {}
    positional: list[str] = []
    for part in filter(None, _top_level_split(match["inner"])):
        key, eq, value = part.partition("=")
        if eq and re.fullmatch(r"\s*[A-Za-z_]\w*\s*", key) and key.strip() in ("measure", "oblivious"):
            params[key.strip()] = _unquoted(value)
        else:
            positional.append(_unquoted(part))
    if len(positional) + ("measure" in params) != 1 or set(params) - {"measure", "oblivious"}:
        raise InputError(f"{text!r}: expected {match['stat']}(MEASURE) or {match['stat']}(MEASURE, "
                         f"oblivious=ORDER), e.g. {match['stat']}(nDCG@10).")
    measure = params.pop("measure") if "measure" in params else positional[0]
    return WRAPPERS[match["stat"]](measure, **params)


def _top_level_split(text: str) -> list[str]:
    """``text`` split at the commas outside brackets and quotes (``P(rel=2)@5, oblivious=x``)."""
    parts: list[str] = []
    depth, quote, start = 0, "", 0
    for i, ch in enumerate(text):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [part.strip() for part in parts]


def _unquoted(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text
