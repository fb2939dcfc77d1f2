"""Result objects of `tieaware.evaluate`.

A `MetricResult` *is* a float (the expected value E[M], mean over queries; the sum for
trec_eval's counts), so code written for ``ranx.evaluate`` keeps formatting, comparing, adding and
``json.dumps``-ing it; the tie-aware statistics ride along as attributes.
"""
from __future__ import annotations

import json
import math
import warnings
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from .display import columns_table

if TYPE_CHECKING:
    import pandas as pd

PER_QUERY_COLUMNS = ["expected", "oblivious", "min", "max", "range", "bias", "variance"]
#: the columns of the metric kernels' per-query tables (`tieaware.engine.metric_stats`)
KERNEL_COLUMNS = ["expected", "variance", "min", "max", "oblivious"]
SUMMARY_COLUMNS = ["expected", "oblivious", "min", "max", "range", "bias", "tie_std"]


class MetricResult(float):
    """One metric over a query set: a float equal to ``expected``.

    Where ranx code expects the ``numpy.float64`` that ``ranx.evaluate`` returns, it behaves as
    one: ``isinstance(r, float)``, ``r.item()``, ``np.asarray(r)`` (a float64 array),
    ``np.float64(r)``, ``json.dumps(r)`` and pickling work, and arithmetic gives plain floats.

    Attributes:
        name: the metric name as given.
        aggregate: how queries combine: "mean", or "sum" for trec_eval's counts (``num_ret``, ...,
            `tieaware.metrics.MetricSpec.aggregate`); every statistic below is then the sum.
        expected: mean over queries of E[M] over all orderings of tied documents.
        oblivious: mean of M under the tie order of the tool named by ``oblivious_order``.
        min, max: mean over queries of the worst and best tie orderings (the extremes of the mean).
        range: ``max - min``: how far tie order alone can move the mean.
        bias: ``oblivious - expected``: how far the tool's number is off.
        tie_std: standard deviation of the mean over tie orderings, ``sqrt(sum_q Var_q) / Q``
            (``sqrt(sum_q Var_q)`` for a sum; a tie-noise standard error; not the spread across
            queries that ranx's ``return_std=True`` gives, which `evaluate` also gives). ``std`` is a
            deprecated alias.
        per_query: DataFrame indexed by query id with expected, oblivious, min, max,
            range, bias and variance (over tie orderings).
        query_ids: the queries (a tuple), in the order of per_query (the run's).
        oblivious_order: one of `tieaware.registry.OBLIVIOUS_ORDERS`.

    Examples:
        >>> import tieaware
        >>> result = tieaware.evaluate({"q1": {"d1": 1}}, {"q1": {"d1": 0.5, "d2": 0.5}}, "mrr")
        >>> float(result), result.min, result.max, result.range, result.bias
        (0.75, 0.5, 1.0, 0.5, -0.25)
        >>> result.per_query_values("range")
        array([0.5])
    """

    name: str
    aggregate: str
    expected: float
    oblivious: float
    min: float
    max: float
    range: float
    bias: float
    tie_std: float
    query_ids: tuple[str, ...]
    oblivious_order: str
    _table: npt.NDArray[np.float64]
    _per_query: pd.DataFrame | None

    def __new__(cls, name: str, per_query: pd.DataFrame, oblivious_order: str,
                aggregate: str = "mean") -> MetricResult:
        self = cls.from_table(name, list(per_query.index), per_query[KERNEL_COLUMNS].to_numpy(np.float64),
                              oblivious_order, aggregate)
        self._per_query = per_query
        return self

    @classmethod
    def from_table(cls, name: str, query_ids: Sequence[str], table: np.ndarray, oblivious_order: str,
                   aggregate: str = "mean") -> MetricResult:
        """From a kernel table (Q, 5) with columns E, Var, min, max, oblivious per query (`KERNEL_COLUMNS`),
        kept as given (the evaluate path's are read-only); ``per_query`` is built from it when first
        read (most callers only read the means). ``aggregate``: "mean" or "sum" over queries."""
        if aggregate not in ("mean", "sum"):
            raise ValueError(f"aggregate must be 'mean' or 'sum', got {aggregate!r}")
        table = np.asarray(table, np.float64).reshape(-1, len(KERNEL_COLUMNS))
        n = len(query_ids)
        expected, variance, low, high, oblivious = (table[:, i] for i in range(len(KERNEL_COLUMNS)))
        summed = aggregate == "sum"

        def combine(values: np.ndarray) -> float:  # the mean is NaN over no queries, as ir_measures'
            return float(values.sum()) if summed else float(values.mean()) if n else math.nan

        total_expected = combine(expected)
        self = super().__new__(cls, total_expected)
        self.name = name
        self.aggregate = aggregate
        self.oblivious_order = oblivious_order
        self.query_ids = tuple(query_ids)  # a copy: the list of a cached conversion is never handed out
        self._table = table
        self._per_query = None
        self.expected = total_expected
        self.oblivious, self.min, self.max = combine(oblivious), combine(low), combine(high)
        spread = math.sqrt(float(variance.sum()))
        self.tie_std = spread if summed else spread / n if n else math.nan
        self.range = self.max - self.min
        self.bias = self.oblivious - self.expected
        return self

    @property
    def per_query(self) -> pd.DataFrame:
        """DataFrame indexed by query id: expected, oblivious, min, max, range, bias, variance."""
        if self._per_query is None:
            self._per_query = per_query_frame(self.query_ids, self._table)
        return self._per_query

    def per_query_values(self, statistic: str = "expected") -> np.ndarray:
        """One per-query column of `per_query` as a numpy array (a copy; query order: the run's),
        read without building the DataFrame."""
        column: dict[str, npt.NDArray[np.float64]] = {c: self._table[:, i] for i, c in enumerate(KERNEL_COLUMNS)}
        if statistic == "range":
            return column["max"] - column["min"]
        if statistic == "bias":
            return column["oblivious"] - column["expected"]
        if statistic not in column:
            raise KeyError(f"unknown per-query statistic {statistic!r}; known: {PER_QUERY_COLUMNS}")
        return np.array(column[statistic])

    @property
    def std(self) -> float:
        """Deprecated alias of `tie_std` (renamed in 0.2.0: ``std`` read like ranx's spread across queries)."""
        warnings.warn("MetricResult.std is renamed tie_std (the standard deviation over tie orderings)",
                      DeprecationWarning, stacklevel=2)
        return self.tie_std

    def item(self) -> float:
        """E[M] as a plain Python float, as ``numpy.float64.item()`` (what ``ranx.evaluate`` returns)."""
        return float(self)

    def __reduce__(self) -> tuple[Callable[..., MetricResult], tuple[Any, ...]]:
        return (MetricResult.from_table, (self.name, self.query_ids, self._table, self.oblivious_order,
                                          self.aggregate))

    @property
    def n_queries(self) -> int:
        return len(self.query_ids)

    @property
    def n_queries_with_ties(self) -> int:
        """Queries whose value depends on the order of tied documents (range > 0)."""
        return int((self.per_query_values("range") > 0).sum())

    def to_dict(self) -> dict[str, Any]:
        """Summary as plain floats (JSON-ready)."""
        out: dict[str, Any] = {"metric": self.name}
        out.update({c: getattr(self, c) for c in SUMMARY_COLUMNS})
        out.update(oblivious_order=self.oblivious_order, n_queries=self.n_queries,
                   n_queries_with_ties=self.n_queries_with_ties)
        return out

    def summary(self) -> str:
        """A one-metric table, as `EvaluationReport.table`."""
        return EvaluationReport({self.name: self}).table()


class EvaluationReport(dict[str, MetricResult]):
    """Several metrics: a dict ``{name: MetricResult}`` (what ranx returns, with extras).

    Examples:
        >>> import tieaware
        >>> report = tieaware.evaluate({"q1": {"d1": 1}}, {"q1": {"d1": 0.5, "d2": 0.5}}, ["mrr", "P@1"])
        >>> {name: float(result) for name, result in report.items()}
        {'mrr': 0.75, 'P@1': 0.5}
        >>> report.to_dataframe()["range"].tolist()
        [0.5, 1.0]
    """

    def to_dataframe(self) -> pd.DataFrame:
        """One row per metric: expected, oblivious, min, max, range, bias, tie_std."""
        import pandas as pd

        rows = [r.to_dict() for r in self.values()]
        frame: pd.DataFrame = pd.DataFrame(rows).set_index("metric") if rows else pd.DataFrame(columns=SUMMARY_COLUMNS)
        return frame

    def per_query(self) -> pd.DataFrame:
        """Long table: one row per (metric, query)."""
        import pandas as pd

        frames = [r.per_query.reset_index(drop=True) for r in self.values()]
        frame: pd.DataFrame = pd.concat(frames, ignore_index=True)
        metrics = pd.Index([name for name, r in self.items() for _ in range(r.n_queries)], name="metric")
        frame.index = pd.MultiIndex.from_arrays([metrics, query_index([q for r in self.values() for q in r.query_ids])])
        return frame

    def to_json(self, **kwargs: Any) -> str:
        """`to_dict` of every metric as a JSON list; NaN (a metric over no queries) is written as null,
        since strict JSON has no NaN (`strict_json`). ``kwargs`` go to ``json.dumps``."""
        return strict_json([r.to_dict() for r in self.values()], **kwargs)

    def table(self, digits: int = 4) -> str:
        """Fixed-width text table, one row per metric."""
        order = next(iter(self.values())).oblivious_order if self else "trec_eval"
        # headed as `to_dataframe` is indexed: by "metric", or by nothing when the report is empty
        headers = ["metric" if self else "", *(f"obl[{order}]" if c == "oblivious" else c for c in SUMMARY_COLUMNS)]
        columns = [[r.name for r in self.values()], *([getattr(r, c) for r in self.values()] for c in SUMMARY_COLUMNS)]
        return columns_table(headers, columns, digits)


def _finite_or_none(value: object) -> object:
    if isinstance(value, dict):
        return {key: _finite_or_none(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite_or_none(item) for item in value]
    if isinstance(value, (float, np.floating)) and not math.isfinite(value):
        return None
    return value


def strict_json(obj: object, **kwargs: Any) -> str:
    """``json.dumps(obj, **kwargs)`` with every NaN and infinity written as null: Python's ``NaN`` and
    ``Infinity`` are not JSON, and strict parsers (JavaScript's, jq, ``json.loads`` with
    ``parse_constant`` raising) reject them.

    Raises:
        ValueError: a non-finite number left (``allow_nan=False``), which would be a bug here.
    """
    return json.dumps(_finite_or_none(obj), allow_nan=False, **kwargs)


def per_query_frame(query_ids: Sequence[str], table: np.ndarray) -> pd.DataFrame:
    """Per-query DataFrame from a kernel table with columns `KERNEL_COLUMNS` (pandas is imported
    here, when a table is first asked for, so that an evaluate that never asks for one never loads it).
    Query ids that UTF-8 cannot encode (a lone surrogate, as ``json.loads('"\\udcff"')`` gives)
    are kept exactly, in an object-dtype index; files refuse them (`tieaware.outputs.check_utf8_ids`)."""
    import pandas as pd

    expected, variance, low, high, oblivious = table.T
    frame: pd.DataFrame = pd.DataFrame({
        "expected": expected, "oblivious": oblivious, "min": low, "max": high,
        "range": high - low, "bias": oblivious - expected, "variance": variance,
    }, index=query_index(query_ids))
    ordered: pd.DataFrame = frame[PER_QUERY_COLUMNS]
    return ordered


def query_index(query_ids: Sequence[str]) -> pd.Index:
    """The index ``query_id`` of per-query tables: pandas' string dtype, or object dtype when an id
    UTF-8 cannot encode (a lone surrogate; pandas' string dtype holds UTF-8 only), kept exactly."""
    import pandas as pd

    index: pd.Index
    try:
        index = pd.Index(query_ids, name="query_id")
    except UnicodeEncodeError:
        index = pd.Index(list(query_ids), name="query_id", dtype=object)
    return index
