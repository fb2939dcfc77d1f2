"""High-Precision Scoring: score with torch/transformers models in bf16/fp16 and compute the final
scoring step in fp32, so low-precision inference does not create artificial score ties.

CrossEncoder, YesNoReranker, GradeReranker, BiEncoder and MultiVectorEncoder (ColBERT-style MaxSim) turn a model
into a ranx Run (`rerank` / `search`); `sweep`
runs one model in several precision regimes and reports what ties do to the metrics (needs the
tieaware evaluation core). BiEncoder(quantize='int8' | 'binary' | ...) retrieves in a quantized space
(tieaware.hps.quantize: QuantizedIndex, integer dot product / Hamming scores, fp32 rescoring).
Needs the `hps` extra: pip install 'tieaware[hps]'.
"""
try:
    import torch  # noqa: F401
    import transformers  # noqa: F401
except ImportError as error:
    raise ImportError(
        f"tieaware.hps needs torch and transformers ({error.name} is missing): pip install 'tieaware[hps]'"
    ) from error

from ..logprobs import run_from_logprobs  # the light module's function itself: no torch needed for it
from ._common import TieWarning
from .bi_encoder import BiEncoder
from .cross_encoder import CrossEncoder
from .grade import GradeReranker
from .multi_vector import MultiVectorEncoder
from .quantize import QuantizedIndex
from .sweep import sweep
from .yes_no import YesNoReranker

__all__ = ["BiEncoder", "CrossEncoder", "GradeReranker", "MultiVectorEncoder", "QuantizedIndex", "TieWarning",
           "YesNoReranker", "run_from_logprobs", "sweep"]
