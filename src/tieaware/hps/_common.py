"""Plumbing shared by the HPS scorers: argument parsing, model loading, length-sorted batching,
candidate loading, and turning scores into a ranx Run that is never cut inside a tie group."""
from __future__ import annotations

import copy
import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, overload

import numpy as np
import ranx
import torch

from ..display import progress
from ..errors import InputError, InputTypeError, MissingFileError, MissingIdError
from ..inputs import RunLike, load_run
from ..score_runs import (  # noqa: F401  (re-exported: the scorers build their runs here)
    TieWarning,
    build_run,
    keep_top_k_with_ties,
    kth_largest_rows,
    report_ties,
)
from . import _sentence_transformers as _st

#: a model: a loaded transformers model or sentence-transformers object, a local folder or a hub id
ModelLike = str | os.PathLike[str] | torch.nn.Module
#: a precision: "fp32", "fp16", "bf16", a torch float dtype, or None (keep a loaded model's)
DtypeLike = str | torch.dtype | None
#: each query's candidate documents: a ranx Run, {qid: {docid: score}} or a TREC run path; or {qid: [docid, ...]}
CandidatesLike = RunLike | Mapping[str, Sequence[str]]

DTYPES = {
    "fp32": torch.float32, "float32": torch.float32,
    "fp16": torch.float16, "float16": torch.float16, "half": torch.float16,
    "bf16": torch.bfloat16, "bfloat16": torch.bfloat16,
}
DTYPE_NAMES = {torch.float32: "fp32", torch.float16: "fp16", torch.bfloat16: "bf16"}

# Precision of the scoring step. Internal modes and the public `hps` values that select them:
#   "none"   hps="none" / False   the last layer and the scoring function run in the model dtype
#   "upcast" hps="logits" / True  logits / pooled embeddings cast to fp32 right before the scoring function
#                                 (sigmoid/softmax/normalize/dot): the paper's HPS
#   "head"   hps="head" (default) the last layer producing the scores (classifier Linear, the answer
#                                 tokens' LM-head rows, pooling) computed in fp32 from the model-dtype
#                                 hidden state, then the scoring function in fp32
MODES = ("none", "upcast", "head")
HPS_VALUES = {"head": "head", "logits": "upcast", "upcast": "upcast", "none": "none"}
#: internal mode -> the public hps value reported in run.metadata
HPS_NAMES = {"none": "none", "upcast": "logits", "head": "head"}
DEFAULT_HPS = "head"
MODE_SUFFIX = {"none": "", "upcast": "+hps", "head": "+hps_head"}
#: word pieces per input when neither the user nor the model's sentence-transformers config says
DEFAULT_MAX_LENGTH = 512


@overload
def parse_dtype(dtype: None) -> None: ...
@overload
def parse_dtype(dtype: str | torch.dtype) -> torch.dtype: ...
def parse_dtype(dtype: str | torch.dtype | None) -> torch.dtype | None:
    """'fp32' / 'fp16' / 'bf16' (or their torch names, or a torch float dtype) -> torch dtype; None stays None."""
    if dtype is None:
        return None
    if isinstance(dtype, torch.dtype) and dtype in DTYPE_NAMES:
        return dtype
    if isinstance(dtype, str) and dtype.lower() in DTYPES:
        return DTYPES[dtype.lower()]
    raise InputError(f"unknown dtype {dtype!r}: use 'fp32', 'fp16', 'bf16' or torch.float32/float16/bfloat16")


def parse_hps(hps) -> str:
    """Public `hps` argument -> one of MODES: 'head' (the default), 'logits' (the paper's HPS; True and
    'upcast' are aliases), 'none' (False is an alias)."""
    if isinstance(hps, (bool, np.bool_)):
        return "upcast" if hps else "none"
    if isinstance(hps, str) and hps in HPS_VALUES:
        return HPS_VALUES[hps]
    raise InputError(f"unknown hps mode {hps!r}: use 'head' (default: the last layer in fp32), 'logits' (the "
                     "paper's HPS, fp32 after the logits; also True) or 'none' (model dtype; also False)")


def resolve_device(device) -> torch.device:
    """The given device, else cuda when available, else cpu."""
    if device is None:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


def local_folder(model) -> Path | None:
    """The local folder a model argument names, or None for a model-hub id ('name' or 'org/name' with no
    such local folder). A path that can only be local (a PathLike, absolute, './', '~', several '/') and
    does not exist is a MissingFileError, not a hub lookup."""
    path = Path(model).expanduser()
    if path.is_dir():
        return path
    if path.exists():
        raise MissingFileError(f"model path {path} is a file, not a model folder")
    text = os.fspath(model)
    if isinstance(model, os.PathLike) or not text or text.startswith(("/", ".", "~")) or "\\" in text \
            or text.count("/") > 1 or text.endswith("/"):
        raise MissingFileError(f"model folder not found: {path}")
    return None


def load_model(model, tokenizer, auto_class, dtype: torch.dtype | None, device: torch.device,
               sentence_transformers_class: str | None = None):
    """-> (model, tokenizer, settings). A loaded sentence-transformers object (of the kind the scorer takes,
    `sentence_transformers_class`) gives its transformers model, its tokenizer and settings (max_length,
    pooling/normalize or activation); a local folder is loaded with `auto_class` (and its tokenizer, unless
    given), with settings from its sentence-transformers config files when it has them; a hub id is loaded
    with `auto_class`; a loaded transformers model needs its tokenizer. A loaded model is never changed:
    see `own_copy`. dtype None keeps a loaded model's dtype and loads a path in fp32."""
    settings: dict[str, Any] = {}
    loaded = True
    if _st.sentence_transformers_kind(model) is not None:
        if sentence_transformers_class is None:
            raise InputTypeError(f"this scorer takes a transformers model, not a sentence-transformers "
                                 f"{_st.sentence_transformers_kind(model)}")
        model, own_tokenizer, settings = _st.unpack(model, sentence_transformers_class)
        tokenizer = tokenizer if tokenizer is not None else own_tokenizer
    elif isinstance(model, (str, os.PathLike)):
        from transformers import AutoTokenizer

        loaded = False
        folder = local_folder(model)
        source = model
        if folder is not None:
            source, settings = _st.folder_settings(folder)
        try:
            if tokenizer is None:
                tokenizer = AutoTokenizer.from_pretrained(source)
                if settings.get("lowercase"):
                    _st.add_lowercase(tokenizer)
            model = auto_class.from_pretrained(source, dtype=dtype or torch.float32)
        except OSError as error:
            if folder is not None:
                raise
            raise MissingFileError(f"model {model!r} is not a local folder and could not be loaded from the "
                                   f"model hub: {error}") from error
        if settings and "max_length" not in settings:  # saved by sentence-transformers >= 6: in the tokenizer
            settings["max_length"] = _st.tokenizer_limit(tokenizer, model.config)
    elif tokenizer is None:
        raise InputError("a loaded model needs its tokenizer: pass tokenizer=...")
    if not isinstance(model, torch.nn.Module):
        raise InputTypeError(f"model must be a local path, a hub id, a sentence-transformers model or a torch "
                             f"module, not {type(model).__name__}")
    if loaded:
        return own_copy(model, dtype, device), tokenizer, settings
    model = model.to(device=device, dtype=dtype) if dtype is not None else model.to(device)
    return model.eval(), tokenizer, settings


def same_device(a: torch.device, b: torch.device) -> bool:
    """True when `a` and `b` name the same device ('cuda' matches 'cuda:0', the index being unset)."""
    return a.type == b.type and (a.index is None or b.index is None or a.index == b.index)


def own_copy(model: torch.nn.Module, dtype: torch.dtype | None, device: torch.device) -> torch.nn.Module:
    """The caller's model itself when every parameter and buffer is already on `device` (and, for the
    floating ones, in `dtype`; None: any), else ``copy.deepcopy(model).to(device, dtype)``: the caller's
    weights, dtype, device and training flags are never changed, at the cost of one more copy of the
    weights in the target dtype while the scorer lives. Modes are switched only during a forward pass
    (`eval_mode`)."""
    tensors = [*model.parameters(), *model.buffers()]
    fits = all(same_device(t.device, device) and (dtype is None or not t.is_floating_point() or t.dtype == dtype)
               for t in tensors)
    if fits:
        return model
    converted = copy.deepcopy(model)
    return converted.to(device=device, dtype=dtype) if dtype is not None else converted.to(device)


@contextmanager
def eval_mode(model: torch.nn.Module):
    """While active, every module of `model` is in eval mode (no dropout); on exit each module's own
    training flag is restored, so a model being trained keeps training."""
    flags = [(module, module.training) for module in model.modules()]
    model.eval()
    try:
        yield model
    finally:
        for module, training in flags:
            module.training = training


def length_sorted_batches(lengths, batch_size: int) -> Iterator[np.ndarray]:
    """Index batches, longest first: little padding per batch, and an out-of-memory shows up at once."""
    if batch_size < 1:
        raise InputError(f"batch_size must be >= 1, got {batch_size}")
    order = np.argsort(-np.asarray(lengths, dtype=np.int64), kind="stable")
    for start in range(0, len(order), batch_size):
        yield order[start:start + batch_size]


def check_queries(queries: Mapping, qids) -> None:
    """Every qid has a non-empty query text."""
    for qid in qids:
        if qid not in queries:
            raise MissingIdError(f"query {qid!r} is not in queries")
        text = queries[qid]
        if not isinstance(text, str):
            raise InputTypeError(f"query {qid!r}: text must be a str, not {type(text).__name__}")
        if not text.strip():
            raise InputError(f"query {qid!r} has an empty text")


def check_docs(corpus: Mapping, docids, qid: str | None = None) -> None:
    """Every docid is in the corpus with a str text (empty documents are allowed)."""
    for docid in docids:
        if docid not in corpus:
            where = f"candidate doc {docid!r} of query {qid!r}" if qid is not None else f"doc {docid!r}"
            raise MissingIdError(f"{where} is not in the corpus")
        if not isinstance(corpus[docid], str):
            raise InputTypeError(f"doc {docid!r}: text must be a str, not {type(corpus[docid]).__name__}")


def load_candidates(candidates) -> dict[str, list[str]]:
    """ranx Run, {qid: {docid: score}} (or {qid: [docid, ...]}), or a run file `tieaware.inputs.load_run`
    reads (TREC, compressed or not, JSON, Parquet) -> {qid: [docid, ...]}."""
    if isinstance(candidates, (str, os.PathLike)):
        path = Path(candidates)
        if not path.is_file():
            raise MissingFileError(f"candidate run file not found: {path}")
        candidates = load_run(path)
    if isinstance(candidates, ranx.Run):
        candidates = candidates.to_dict()
    if not isinstance(candidates, Mapping):
        raise InputTypeError("candidates must be a ranx Run, a dict or a TREC run path, "
                             f"not {type(candidates).__name__}")
    return {str(qid): [str(docid) for docid in docs] for qid, docs in candidates.items()}


def checked_candidates(queries: Mapping, corpus: Mapping, candidates) -> dict[str, list[str]]:
    """`load_candidates`, refusing an empty set and any query or document without a text."""
    candidates = load_candidates(candidates)
    if not any(candidates.values()):
        raise InputError("no candidates to rerank")
    check_queries(queries, candidates)
    for qid, docids in candidates.items():
        check_docs(corpus, docids, qid)
    return candidates


def tie_cause(dtype: torch.dtype, mode: str) -> str:
    """Why a precision mode's scores may tie, and the remedy."""
    if mode in ("none", "upcast") and dtype != torch.float32:
        return (f"the scores are rounded to {DTYPE_NAMES.get(dtype, str(dtype))} (hps={HPS_NAMES[mode]!r}): "
                "hps='head' computes the last layer in fp32")
    if dtype != torch.float32:
        return (f"the last layer runs in fp32, but its {DTYPE_NAMES.get(dtype, str(dtype))} input (the hidden "
                "state) coincides for these documents: dtype='fp32' separates them, or evaluate tie-aware "
                "(tieaware.evaluate averages over their orderings)")
    return ("the scores tie in fp32 (a saturated activation, or inputs identical after truncation): "
            "evaluate tie-aware (tieaware.evaluate averages over their orderings)")


def mode_suffix(mode: str) -> str:
    """'' / '+hps' / '+hps_head' for the precision modes; '+<mode>' for a quantized-retrieval mode
    such as 'binary+rescore' (see quantize.parse_mode)."""
    return MODE_SUFFIX[mode] if mode in MODE_SUFFIX else f"+{mode}"


def run_name(model, dtype: torch.dtype, mode: str) -> str:
    """'<model dir name>_<dtype>[+hps|+hps_head|+<quantized mode>]', with no spaces (the TREC tag column)."""
    path = getattr(getattr(model, "config", None), "name_or_path", "") or type(model).__name__
    return f"{Path(str(path)).name.replace(' ', '_')}_{DTYPE_NAMES.get(dtype, str(dtype))}{mode_suffix(mode)}"


class Scorer:
    """Arguments shared by every scorer.

    model: a local folder, a hub id, a loaded transformers model (needs tokenizer=) or a loaded
    sentence-transformers object (SentenceTransformer for BiEncoder, CrossEncoder for CrossEncoder: its
    transformers model, tokenizer and settings are used). A loaded model is never changed: when its dtype
    or device differs from the one asked for, the scorer works on a converted copy (copy.deepcopy, then
    .to(): one more copy of the weights, in the target dtype, held while the scorer lives); otherwise on
    the model itself, switched to eval mode only during each forward pass and restored after.
    hps: 'head' (default): the last layer producing the scores (classifier Linear, the answer tokens'
    LM-head rows, pooling) runs in fp32 on the model-dtype hidden state, then the scoring function in
    fp32: no tie from rounded logits; ties remain only where the model-dtype hidden states coincide.
    'logits' (or True): the paper's HPS, logits / pooled embeddings cast to fp32 before the scoring
    function; ties remain where the model-dtype logits are rounded together. 'none' (or False): all in
    the model dtype.
    dtype: 'fp32' / 'fp16' / 'bf16' / a torch dtype, None keeps a loaded model's dtype (a path loads in
    fp32).
    batch_size: texts or pairs per forward pass (batches are sorted by length); max_length: word pieces
    per input (truncation; default the model's sentence-transformers max_seq_length when it has one, else
    512); device: default cuda when available, else cpu; show_progress: tqdm bar.
    Ids are strings; scores land in the Run as Python floats (exact copies of the bf16/fp16/fp32 values).
    """

    auto_class_name = "AutoModel"
    #: the sentence-transformers class this scorer takes loaded (None: none)
    sentence_transformers_class: str | None = None

    def __init__(self, model: ModelLike, tokenizer: Any = None, *, dtype: DtypeLike = None,
                 hps: bool | str = DEFAULT_HPS, batch_size: int = 32, device: str | torch.device | None = None,
                 max_length: int | None = None, show_progress: bool = True) -> None:
        import transformers

        if batch_size < 1 or (max_length is not None and max_length < 1):
            raise InputError(f"batch_size and max_length must be >= 1, got {batch_size} and {max_length}")
        self.hps = hps
        self.mode = parse_hps(hps)
        self.device = resolve_device(device)
        auto_class = getattr(transformers, self.auto_class_name)
        self.model, self.tokenizer, self.model_settings = load_model(
            model, tokenizer, auto_class, parse_dtype(dtype), self.device, self.sentence_transformers_class)
        self.dtype = next(self.model.parameters()).dtype
        if max_length is None:
            max_length = self.model_settings.get("max_length") or DEFAULT_MAX_LENGTH
        self.batch_size, self.max_length, self.show_progress = batch_size, max_length, show_progress

    def rerank(self, queries: Mapping[str, str], corpus: Mapping[str, str], candidates: CandidatesLike, *,
               k: int | None = None, name: str | None = None) -> ranx.Run:
        """Score each query's candidates (ranx Run, {qid: {docid: score}} or TREC run path) -> ranx Run,
        optionally cut at k keeping every doc tied with the k-th. The tie census of the top k goes to
        ``run.metadata['tie_census']``; documents of different text still tied there raise a TieWarning
        naming their share and the remedy (`report_ties`)."""
        run = self.rerank_modes(queries, corpus, candidates, (self.mode,), k)[self.mode]
        run.name = name or run.name
        report_ties(run, k, corpus, self._tie_cause(self.mode))
        return run

    def score_pairs(self, query_texts: Sequence[str], doc_texts: Sequence[str]) -> np.ndarray:
        """float64 scores of (query text, document text) pairs in this scorer's mode, in the given order.

        Pairs are batched by length as `rerank` batches them, so the same pairs give the same scores
        (what `tieaware.hps.distributed` relies on, one batch per call)."""
        if len(query_texts) != len(doc_texts):
            raise InputError(f"{len(query_texts)} query texts but {len(doc_texts)} document texts")
        return self._score_pairs(list(query_texts), list(doc_texts), (self.mode,))[self.mode]

    def rerank_modes(self, queries: Mapping[str, str], corpus: Mapping[str, str], candidates: CandidatesLike,
                     modes: Sequence[str], k: int | None = None) -> dict[str, ranx.Run]:
        """`rerank` in several precision modes ('none', 'upcast', 'head') from one pass over the
        candidates: each forward pass is shared by the modes (what `sweep` uses) -> {mode: Run}."""
        candidates = checked_candidates(queries, corpus, candidates)
        scored = self._scored_candidates(queries, corpus, candidates, modes, k)
        return {mode: build_run(scored[mode], run_name(self.model, self.dtype, mode), k, self._metadata(mode))
                for mode in modes}

    def _scored_candidates(self, queries, corpus, candidates, modes, k) -> dict[str, dict[str, tuple]]:
        """{mode: {qid: (docids, float64 scores)}}: every candidate scored (a scorer may keep fewer)."""
        scores = self._score_candidates(queries, corpus, candidates, modes)
        return {mode: {qid: (docids, scores[mode][qid]) for qid, docids in candidates.items()} for mode in modes}

    def _tie_cause(self, mode: str) -> str:
        """Why this scorer's scores in `mode` may tie, and the remedy (the TieWarning's text)."""
        return tie_cause(self.dtype, mode)

    def _metadata(self, mode: str) -> dict:
        """What produced a run's scores (stored in ``run.metadata``)."""
        hps = HPS_NAMES.get(mode, mode)
        return {"model_dtype": DTYPE_NAMES.get(self.dtype, str(self.dtype)), "hps": hps, "quantize": None}

    def _score_candidates(self, queries, corpus, candidates, modes) -> dict[str, dict[str, np.ndarray]]:
        """{mode: {qid: float64 scores aligned with candidates[qid]}} via the pairwise _score_pairs."""
        qids = [qid for qid, docids in candidates.items() for _ in docids]
        docids = [docid for docs in candidates.values() for docid in docs]
        flat = self._score_pairs([queries[q] for q in qids], [corpus[d] for d in docids], modes)
        bounds = np.cumsum([0] + [len(docs) for docs in candidates.values()])
        return {mode: {qid: flat[mode][bounds[i]:bounds[i + 1]] for i, qid in enumerate(candidates)}
                for mode in modes}

    def _score_pairs(self, query_texts, doc_texts, modes) -> dict[str, np.ndarray]:
        raise NotImplementedError

    def _progress(self, total: int, unit: str, desc: str | None = None):
        return progress(total=total, unit=unit, desc=desc, show=self.show_progress)
