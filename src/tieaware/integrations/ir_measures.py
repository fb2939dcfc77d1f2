"""Tie-aware measures for ir_measures (and so for PyTerrier's ``pt.Experiment``).

``E(nDCG@10)``, ``Range(nDCG@10)``, ``Bias(nDCG@10)``, ``Min(nDCG@10)`` and
``Max(nDCG@10)`` are ir_measures measures: pass them to
``ir_measures.calc_aggregate``, ``iter_calc``, ``calc``, ``evaluator`` or
``pt.Experiment`` next to the usual ``nDCG@10`` and each reports, per query and
(as the mean over queries) overall, the statistic `tieaware.evaluate` gives for
that measure: E[M] over all orderings of tied documents, max - min, the tool's
value minus E[M], and the worst and best orderings. Every measure tieaware
parses in ir_measures syntax can be wrapped (`tieaware.metrics`); another is an
`UnknownMetricError` when the wrapper is built.

How it plugs in: ir_measures' default pipeline asks its ``runtime`` provider
first, and that provider evaluates any measure with a ``runtime_impl(qrels, run)``
method (the hook behind ``ir_measures.define``); these measures implement it by
calling `tieaware.evaluate` on the two DataFrames it receives. Nothing in
ir_measures is patched. Queries follow ir_measures: a query in the qrels but not
in the run scores 0 (no spread), a run query without qrels is ignored.

``Bias`` compares with ir_measures' own value by default (``oblivious="ir_measures"``:
its tie order for that measure, see `tieaware.ranked_lists.ir_measures_order`);
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

import ir_measures
from ir_measures.measures import Measure, ParamInfo

from ..errors import InputError, InputTypeError
from ..evaluation import evaluate
from ..metrics import parse_metric
from ..ranked_lists import OBLIVIOUS_ORDERS

__all__ = ["E", "Range", "Bias", "Min", "Max", "TieAwareMeasure"]

_INPUTS = ["query_id", "doc_id", "score"], ["query_id", "doc_id", "relevance"]


class TieAwareMeasure(Measure):
    """One tie-aware statistic (``STATISTIC``, a column of `MetricResult.per_query`) of an
    ir_measures measure, computed by `tieaware.evaluate` through ir_measures' runtime provider."""

    STATISTIC: str = ""
    SUPPORTED_PARAMS = {
        "measure": ParamInfo(dtype=Measure, required=True, desc="the ir_measures measure, e.g. nDCG@10"),
        "oblivious": ParamInfo(dtype=str, choices=OBLIVIOUS_ORDERS, default="ir_measures",
                               desc="whose tie order gives the tool's value (Bias)"),
    }
    RUN_INPUTS, QREL_INPUTS = _INPUTS

    def __init__(self, measure: Measure, **params):
        if not isinstance(measure, Measure):
            raise InputTypeError(f"{type(self).__name__}() wraps an ir_measures measure such as nDCG@10, "
                                 f"got {measure!r}.")
        if params.get("oblivious", "ir_measures") not in OBLIVIOUS_ORDERS:
            raise InputError(f"oblivious must be one of {OBLIVIOUS_ORDERS}, got {params['oblivious']!r}.")
        parse_metric(str(measure))  # an UnknownMetricError now, not inside ir_measures' pipeline later
        super().__init__(measure=measure, **params)

    @property
    def __name__(self) -> str:  # ir_measures names a measure by its __name__
        return type(self).__name__

    def __repr__(self) -> str:
        oblivious = self.params.get("oblivious", "ir_measures")
        extra = "" if oblivious == "ir_measures" else f",oblivious={oblivious!r}"
        return f"{type(self).__name__}({self.params['measure']}{extra})"

    def runtime_impl(self, qrels, run):
        """Per-query ``Metric``s: `tieaware.evaluate` on the runtime provider's DataFrames
        (``query_id, doc_id, relevance`` and ``query_id, doc_id, score``)."""
        result = evaluate(qrels[["query_id", "doc_id", "relevance"]], run[["query_id", "doc_id", "score"]],
                          str(self.params["measure"]), make_comparable=True,
                          oblivious=self.params.get("oblivious", "ir_measures"))
        for query_id, value in result.per_query[self.STATISTIC].items():
            yield ir_measures.Metric(query_id, self, float(value))


class E(TieAwareMeasure):
    """E[M]: the measure's expected value over all orderings of tied documents."""
    STATISTIC = "expected"


class Range(TieAwareMeasure):
    """max - min of the measure over tie orderings: how far tie order alone can move it."""
    STATISTIC = "range"


class Bias(TieAwareMeasure):
    """The tool's value minus E[M] (tool: ``oblivious``, ir_measures' own order by default)."""
    STATISTIC = "bias"


class Min(TieAwareMeasure):
    """The measure under the worst ordering of tied documents."""
    STATISTIC = "min"


class Max(TieAwareMeasure):
    """The measure under the best ordering of tied documents."""
    STATISTIC = "max"
