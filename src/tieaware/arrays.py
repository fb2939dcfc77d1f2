"""`evaluate_arrays`: tie-aware evaluation of flat ``(indexes, preds, target)`` arrays.

The layout of torchmetrics' retrieval metrics: row i is one (query, document) pair,
``indexes[i]`` the query it belongs to (an integer), ``preds[i]`` its score and
``target[i]`` its relevance (bool or an integer grade). Every row is a retrieved
*and* judged document: a query's relevant documents are its rows with target > 0.
numpy arrays, torch tensors (any device, any float dtype; moved to the CPU and
detached, never changed) and lists are read. The arrays are turned into a qrels and
a run dict by array operations (one dict per query is built at C level), which
`tieaware.evaluate` then reads: query ids are the index values as strings, document
ids the row numbers, zero-padded to one width (so trec_eval's id order is row order).
"""
from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any, TypeGuard, Union

import numpy as np
import numpy.typing as npt

from .errors import InputError, InputTypeError
from .readers.dict_arrays import inexact_message, inexact_rows

if TYPE_CHECKING:
    import torch

    from .metrics import MetricsLike
    from .report import EvaluationReport, MetricResult

#: what the array arguments accept: a numpy array, a torch tensor, a list
ArrayInput = Union[npt.ArrayLike, "torch.Tensor"]

__all__ = ["arrays_to_dicts", "evaluate_arrays", "to_numpy"]


def _is_tensor(values: object) -> TypeGuard[torch.Tensor]:
    """A torch tensor (checked without importing torch)."""
    return type(values).__module__.startswith("torch") and hasattr(values, "detach")


def to_numpy(values: ArrayInput, name: str) -> np.ndarray:
    """A read-only numpy view or copy of an array, tensor or list (torch: detached, on the CPU;
    half and bfloat16 widened to float32, which holds them exactly)."""
    array: np.ndarray
    if _is_tensor(values):
        tensor = values.detach()
        if tensor.is_floating_point() and tensor.element_size() < 4:
            tensor = tensor.float()
        array = tensor.cpu().numpy()
    else:
        array = np.asarray(values)
    if array.dtype == object or array.dtype.kind not in "biuf":
        raise InputTypeError(f"{name} must hold numbers, got dtype {array.dtype}.")
    view: np.ndarray = array.view()
    view.setflags(write=False)
    return view


def _checked(indexes: ArrayInput, preds: ArrayInput,
             target: ArrayInput) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    idx, scores, grades = (to_numpy(a, n) for a, n in ((indexes, "indexes"), (preds, "preds"), (target, "target")))
    if not (idx.shape == scores.shape == grades.shape):
        raise InputError(f"indexes, preds and target must have the same shape, got {idx.shape}, {scores.shape} "
                         f"and {grades.shape}.")
    idx, scores, grades = idx.reshape(-1), scores.reshape(-1), grades.reshape(-1)
    if not idx.size:
        raise InputError("indexes, preds and target are empty: no rows to evaluate.")
    if idx.dtype.kind not in "iu":
        raise InputTypeError(f"indexes must be integers (the query of each row), got dtype {idx.dtype}.")
    if scores.dtype.kind == "b":
        raise InputTypeError("preds must be scores (floats or integers), got booleans.")
    nan = np.flatnonzero(np.isnan(scores)) if scores.dtype.kind == "f" else np.empty(0, np.int64)
    if nan.size:
        row = int(nan[0])
        raise InputError(f"preds is NaN at row {row} (query {int(idx[row])}; {nan.size} NaN rows).")
    if grades.dtype.kind == "f":
        bad = np.flatnonzero(~np.isfinite(grades) | (grades != np.round(grades)))
        if bad.size:
            row = int(bad[0])
            raise InputError(f"target must hold integer grades (or bools), got {grades[row].item()!r} at row {row} "
                             f"(query {int(idx[row])}; {bad.size} such rows).")
    for values, name, kind in ((scores, "preds", "Run score"), (grades, "target", "Relevance")):
        inexact = inexact_rows(values)
        if inexact.size:
            row = int(inexact[0])
            raise InputError(f"{name} at row {row} (query {int(idx[row])}; {inexact.size} such rows) "
                             f"{inexact_message(kind, values[row].item())}")
    return idx, scores, grades


def arrays_to_dicts(indexes: ArrayInput, preds: ArrayInput, target: ArrayInput, torch_order: bool = False
                    ) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]]:
    """(qrels, run) dicts of ``(indexes, preds, target)``; see the module docstring.

    Args:
        indexes, preds, target: arrays or tensors of one shape (flattened).
        torch_order: give each query its rows in the order torchmetrics' retrieval metrics see
            them (``torch.sort(indexes)``, not stable) instead of row order.

    Raises:
        InputError: no rows, shapes differ, a NaN score, a non-integer grade, non-integer indexes, a
            score or grade float64 cannot hold exactly (an int64 beyond 2**53 that distinct values
            would share: a false tie).
    """
    idx, scores, grades = _checked(indexes, preds, target)
    n = idx.size
    if torch_order:
        from .readers.lists import torch_module

        torch = torch_module()
        row_order = torch.sort(torch.tensor(idx, dtype=torch.long)).indices.numpy()
    else:
        row_order = np.argsort(idx, kind="stable")
    sorted_idx = idx[row_order]
    starts = np.flatnonzero(np.r_[True, sorted_idx[1:] != sorted_idx[:-1]])
    bounds = np.r_[starts, n].tolist()
    query_ids = sorted_idx[starts].astype(str).tolist()
    width = len(str(n - 1))
    doc_ids = np.char.zfill(row_order.astype(str), width).tolist()
    score_list = scores[row_order].astype(np.float64).tolist()  # exact: `_checked` refused what is not
    # exact Python ints (an integral float grade of 1e19, a uint64 beyond 2**63: int64 would wrap them)
    grade_list = list(map(int, grades[row_order].tolist()))
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for qid, a, b in zip(query_ids, bounds, bounds[1:]):
        docs = doc_ids[a:b]
        run[qid] = dict(zip(docs, score_list[a:b]))
        qrels[qid] = dict(zip(docs, grade_list[a:b]))
    return qrels, run


def evaluate_arrays(indexes: ArrayInput, preds: ArrayInput, target: ArrayInput, metrics: MetricsLike,
                    **options: Any) -> MetricResult | EvaluationReport | dict[str, Any]:
    """`tieaware.evaluate` on torchmetrics-style flat arrays.

    Args:
        indexes: (n,) integer query index of each row (numpy array, torch tensor or list).
        preds: (n,) score of each row; NaN is an error.
        target: (n,) relevance of each row: bools or integer grades (0: judged non-relevant).
        metrics: metric name(s), as in `tieaware.evaluate`.
        **options: any other argument of `tieaware.evaluate` (``oblivious``, ``return_mean``,
            ``relevance_level``, ...). With ``oblivious="torchmetrics"`` each query's rows are read in
            the order torchmetrics' retrieval metrics see them, so ``.oblivious`` is their value on the
            CPU; for ``preds`` on another device a warning says that torchmetrics' number there may differ.

    Returns:
        What `tieaware.evaluate` returns; queries are keyed by their index value as a string.

    Raises:
        InputError: no rows, shapes differ, a NaN score, a non-integer grade, non-integer indexes,
            a score or grade that float64 cannot hold exactly (an int64 score beyond 2**53: it would
            tie with its neighbours). Grades of any size float64 holds are read exactly (1e19, a
            uint64 2**63).

    Examples:
        >>> import numpy as np
        >>> r = evaluate_arrays(np.array([0, 0, 1, 1]), np.array([0.5, 0.5, 0.9, 0.1]),
        ...                     np.array([1, 0, 0, 1]), "mrr")
        >>> round(r.expected, 4), r.min, r.max
        (0.625, 0.5, 0.75)
    """
    from .evaluation import evaluate

    device = getattr(getattr(preds, "device", None), "type", "cpu")
    if options.get("oblivious") == "torchmetrics" and device != "cpu":
        warnings.warn(f"preds are on {device}: torchmetrics' topk and sort there order tied scores by other "
                      "kernels, not reproduced here; .oblivious is torchmetrics' number on the CPU, which its "
                      f"number on {device} may not equal.", UserWarning, stacklevel=2)
    qrels, run = arrays_to_dicts(indexes, preds, target, torch_order=options.get("oblivious") == "torchmetrics")
    return evaluate(qrels, run, metrics, **options)
