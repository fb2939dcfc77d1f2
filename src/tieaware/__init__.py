"""tieaware: honest retrieval evaluation when scores tie.

Public API: `evaluate` (drop-in for ``ranx.evaluate``), `census` (how tied a run
is), the result types, and ranx's ``Qrels``/``Run`` re-exported for convenience.
Importing tieaware never imports torch; `tieaware.hps` does.
"""
from ranx import Qrels, Run

from .census import census
from .compare import ComparisonReport, compare
from .errors import InputError, TieawareError, UnknownMetricError
from .evaluate import evaluate
from .inputs import read_trec_qrels, read_trec_run
from .metrics import MetricSpec, parse_metric
from .report import EvaluationReport, MetricResult

__version__ = "0.1.0"

__all__ = [
    "evaluate", "compare", "census", "MetricResult", "EvaluationReport", "ComparisonReport", "MetricSpec", "parse_metric",
    "Qrels", "Run", "read_trec_qrels", "read_trec_run",
    "TieawareError", "InputError", "UnknownMetricError", "__version__",
]
