"""tieaware: honest retrieval evaluation when scores tie.

Public API: `evaluate` (drop-in for ``ranx.evaluate``), `evaluate_arrays`
(torchmetrics-style ``indexes, preds, target``), `compare` (for
``ranx.compare``), `census` (how tied a run is), the result types, the readers,
ranx's ``Qrels``/``Run`` re-exported for convenience, and `datasets` (the bundled
Cranfield collection and runs).

Importing tieaware is cheap: each name is imported on first use (PEP 562), so
``import tieaware`` loads neither numba nor pandas, ranx, scipy, matplotlib or
torch; `tieaware.hps` imports torch.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.2.0"

# public name -> module that defines it (relative to this package, or an absolute one)
_EXPORTS = {
    "evaluate": ".evaluation",
    "evaluate_arrays": ".arrays",
    "compare": ".comparison",
    "ComparisonReport": ".comparison",
    "census": ".tie_census",
    "warmup": ".warming",
    "MetricResult": ".report",
    "EvaluationReport": ".report",
    "MetricSpec": ".metrics",
    "parse_metric": ".metrics",
    "read_trec_qrels": ".inputs",
    "read_trec_run": ".inputs",
    "load_mteb_predictions": ".inputs",
    "TieawareError": ".errors",
    "InputError": ".errors",
    "UnknownMetricError": ".errors",
    "Qrels": "ranx",
    "Run": "ranx",
}

# submodules reachable as attributes after `import tieaware`, imported on first use
_SUBMODULES = ("datasets",)

__all__ = [*_EXPORTS, *_SUBMODULES, "__version__"]

if TYPE_CHECKING:  # what static tools see; at run time `__getattr__` imports on demand ("X as X": re-exported)
    from ranx import Qrels as Qrels
    from ranx import Run as Run

    from . import datasets as datasets
    from .arrays import evaluate_arrays as evaluate_arrays
    from .comparison import ComparisonReport as ComparisonReport
    from .comparison import compare as compare
    from .errors import InputError as InputError
    from .errors import TieawareError as TieawareError
    from .errors import UnknownMetricError as UnknownMetricError
    from .evaluation import evaluate as evaluate
    from .inputs import load_mteb_predictions as load_mteb_predictions
    from .inputs import read_trec_qrels as read_trec_qrels
    from .inputs import read_trec_run as read_trec_run
    from .metrics import MetricSpec as MetricSpec
    from .metrics import parse_metric as parse_metric
    from .report import EvaluationReport as EvaluationReport
    from .report import MetricResult as MetricResult
    from .tie_census import census as census
    from .warming import warmup as warmup


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        return importlib.import_module(f".{name}", __name__)  # importing binds it in globals()
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'tieaware' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
