"""`TieAwareRetrieval`: a torchmetrics ``Metric`` giving E[M], min, max and range of retrieval metrics.

It takes what torchmetrics' retrieval metrics take, ``update(preds, target, indexes)``
(flat rows: score, relevance as bool or integer grade, and query index), and
``compute()`` evaluates everything seen with `tieaware.evaluate_arrays`. Its states
are list states with ``dist_reduce_fx="cat"``, so under DDP torchmetrics gathers every
process's rows before ``compute`` and each process gets the result on all the data.

``compute()`` returns a dict of 0-d float64 tensors keyed ``"<metric>/<statistic>"``
(``"ndcg_at_10/expected"``, ``.../min``, ``.../max``, ``.../range``, and with
``oblivious=`` given ``.../oblivious`` and ``.../bias``): `metric_key` turns a metric
name into characters every common logger accepts (``@`` becomes ``_at_``), so the dict
can go to Lightning's ``log_dict`` as it is. With ``oblivious="torchmetrics"``, ``.../oblivious``
is the number torchmetrics' own retrieval metric gives on the same rows on the CPU (its tie order,
`tieaware.engine.torchmetrics_order`), where its conventions agree with tieaware's.

As in torchmetrics, every row is a retrieved and judged document: a query's relevant
documents are its rows with target > 0, and a query without any scores 0 (torchmetrics'
default ``empty_target_action="neg"``). Conventions otherwise are `tieaware.evaluate`'s.

This module imports torch and torchmetrics; `tieaware` itself never does.
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import torch
from torchmetrics import Metric
from torchmetrics.utilities.data import dim_zero_cat

from ..arguments import check_oblivious
from ..arrays import evaluate_arrays
from ..errors import InputError
from ..metrics import parse_metrics
from ..readers.dict_arrays import inexact_message, inexact_rows
from ..report import EvaluationReport

if TYPE_CHECKING:
    from ..metrics import MetricsLike

__all__ = ["TieAwareRetrieval", "metric_key"]


def metric_key(name: str) -> str:
    """A metric name as a logger-safe key: ``@`` -> ``_at_``, any character outside
    letters, digits, ``_ - . /`` -> ``_`` (``"ndcg@10"`` -> ``"ndcg_at_10"``).

    Args:
        name: a tieaware metric name.

    Returns:
        The key `TieAwareRetrieval.compute` uses for it (before ``/expected``, ``/min``, ...).

    Examples:
        >>> from tieaware.integrations.torchmetrics import metric_key
        >>> metric_key("ndcg@10"), metric_key("P(rel=2)@5")
        ('ndcg_at_10', 'P_rel_2__at_5')
    """
    return re.sub(r"[^A-Za-z0-9_.\-]", "_", name.replace("@", "_at_"))


class TieAwareRetrieval(Metric):
    """Tie-aware retrieval metrics over every (query, document) row seen.

    Args:
        metrics: tieaware metric names (``["ndcg@10", "mrr@10"]``; any syntax `tieaware.evaluate` reads).
        oblivious: a tool's tie order (one of `tieaware.registry.OBLIVIOUS_ORDERS`) for
            ``<metric>/oblivious`` and ``<metric>/bias``; None (default) leaves them out.
        relevance_level: grades >= this are relevant, as in `tieaware.evaluate`.
        **kwargs: torchmetrics ``Metric`` options (``sync_on_compute``, ``process_group``, ...).

    Raises:
        UnknownMetricError: a metric name tieaware does not know (when built).

    Examples:
        >>> import torch
        >>> metric = TieAwareRetrieval(["mrr"])
        >>> metric.update(torch.tensor([0.5, 0.5, 0.9]), torch.tensor([1, 0, 1]), indexes=torch.tensor([0, 0, 1]))
        >>> {k: round(v.item(), 3) for k, v in metric.compute().items()}
        {'mrr/expected': 0.875, 'mrr/min': 0.75, 'mrr/max': 1.0, 'mrr/range': 0.25}
    """

    is_differentiable = False
    higher_is_better = True
    full_state_update = False
    # the states add_state registers: lists of tensors between updates, as torchmetrics' own retrieval metrics
    indexes: list[torch.Tensor]
    preds: list[torch.Tensor]
    target: list[torch.Tensor]

    def __init__(self, metrics: MetricsLike, oblivious: str | None = None, relevance_level: float = 1,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        check_oblivious(oblivious, allow_none=True)
        self.metric_names = [spec.name for spec in parse_metrics(metrics, relevance_level)]
        self.oblivious = oblivious
        self.relevance_level = relevance_level
        self.add_state("indexes", default=[], dist_reduce_fx="cat")
        self.add_state("preds", default=[], dist_reduce_fx="cat")
        self.add_state("target", default=[], dist_reduce_fx="cat")

    def update(self, preds: torch.Tensor, target: torch.Tensor, indexes: torch.Tensor) -> None:
        """Add rows: ``preds`` scores, ``target`` relevance (bool or integer), ``indexes`` query of each row.

        Raises:
            InputError: shapes differ, non-integer indexes, floating-point targets, integer scores
                float64 cannot hold exactly (an int64 beyond 2**53: a false tie), grades beyond int64.
        """
        if indexes is None:
            raise InputError("indexes (the query of each row) cannot be None.")
        preds, target, indexes = (torch.as_tensor(t) for t in (preds, target, indexes))
        if not (preds.shape == target.shape == indexes.shape):
            raise InputError(f"preds, target and indexes must have the same shape, got {tuple(preds.shape)}, "
                             f"{tuple(target.shape)} and {tuple(indexes.shape)}.")
        if indexes.is_floating_point() or indexes.is_complex() or indexes.dtype == torch.bool:
            raise InputError(f"indexes must be integers (the query of each row), got {indexes.dtype}.")
        if target.is_floating_point() or target.is_complex():
            raise InputError(f"target must be bool or integer grades, got {target.dtype}.")
        if not preds.is_floating_point():  # stored as float64 below: refused where that would round
            scores = preds.detach().reshape(-1).cpu().numpy()
            inexact = inexact_rows(scores)
            if inexact.size:
                row = int(inexact[0])
                raise InputError(f"preds at row {row} of this update ({inexact.size} such rows) "
                                 f"{inexact_message('Run score', scores[row].item())}")
        grades = target.detach().reshape(-1).cpu().numpy() if target.dtype == getattr(torch, "uint64", None) \
            else np.empty(0, np.int64)  # only these may not fit the int64 they are kept in
        if grades.size and int(grades.max()) > np.iinfo(np.int64).max:
            row = int(grades.argmax())
            raise InputError(f"target at row {row} of this update is {int(grades[row])}, beyond int64, in which "
                             "the grades are kept (it would wrap to a negative grade); give grades below 2**63.")
        self.indexes.append(indexes.detach().reshape(-1).long())
        self.preds.append(preds.detach().reshape(-1).double())
        self.target.append(target.detach().reshape(-1).long())

    def compute(self) -> dict[str, torch.Tensor]:
        """Evaluate every row seen (all processes' under DDP); see the module docstring for the keys."""
        if isinstance(self.preds, list) and not self.preds:
            raise InputError("TieAwareRetrieval.compute() was called before any update().")
        indexes, preds, target = (dim_zero_cat(state) for state in (self.indexes, self.preds, self.target))
        # a list of metric names gives an EvaluationReport
        report = cast(EvaluationReport, evaluate_arrays(indexes, preds, target, self.metric_names,
                                                        relevance_level=self.relevance_level,
                                                        oblivious=self.oblivious or "trec_eval"))
        stats = ["expected", "min", "max", "range"] + (["oblivious", "bias"] if self.oblivious else [])
        return {f"{metric_key(name)}/{stat}": torch.tensor(getattr(report[name], stat), dtype=torch.float64,
                                                           device=preds.device)
                for name in self.metric_names for stat in stats}
