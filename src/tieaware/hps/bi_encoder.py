"""Bi-encoders (embedding models) for exact search and reranking with High-Precision Scoring, in float or
in a quantized space (int8/uint8 codes, binary Hamming) with optional fp32 rescoring."""
from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import ranx
import torch
import torch.nn.functional as F
from numpy.typing import ArrayLike

from ..arguments import is_count
from ..errors import InputError
from ._common import (
    DEFAULT_HPS,
    DTYPE_NAMES,
    ModelLike,
    Scorer,
    build_run,
    check_docs,
    check_queries,
    eval_mode,
    length_sorted_batches,
    report_ties,
    run_name,
)
from .quantize import BINARY_SCHEMES, QuantizedIndex, check_ranges, check_scheme, parse_mode, quantized_mode

POOLINGS = ("mean", "cls", "last_token")
EMBEDDINGS = {"none": "model dtype: pooling, normalisation and dot product in the model dtype",
              "upcast": "pooled output cast to fp32 before normalisation and dot product",
              "head": "last hidden state cast to fp32 before pooling"}


class BiEncoder(Scorer):
    """score(q, d) = <e_q, e_d>, e = pooling of the last hidden state over the attention mask,
    L2-normalised when normalize=True (cosine), else a plain dot product.

    pooling: 'mean' (masked average, as sentence-transformers), 'cls' (first token) or 'last_token'
    (last attended token; works with left or right padding). pooling, normalize and max_length default to
    the model's sentence-transformers settings (a loaded SentenceTransformer, or a local folder's
    modules.json, 1_Pooling/config.json, sentence_bert_config.json; normalize when a Normalize module is in
    the pipeline or the similarity is cosine), else 'mean', True and 512. query_prefix / doc_prefix are prepended
    (e.g. 'query: ' / 'passage: ' for E5). hps='head' (default): the last hidden state cast to fp32 before
    pooling, normalisation and dot product; 'logits' (or True, the paper's HPS): the pooled embeddings cast
    to fp32 before normalisation and dot product; 'none' (or False): all in the model dtype. See Scorer for
    the common arguments.

    Quantized retrieval (tieaware.hps.quantize): quantize='int8' | 'uint8' | 'binary' | 'ubinary' quantizes
    the documents (and the queries) from the fp32 embeddings (pooled output cast to fp32, as hps='logits') and
    `search` scores in the quantized space: integer dot product of the codes (int8/uint8; per-dimension
    calibration ranges from the corpus embeddings' min/max, or ``ranges`` of shape (2, dim)) or
    dim - Hamming distance of the sign bits (binary/ubinary). With quantize set, hps means rescoring
    (default True): False keeps the quantized scores (the ties of real quantized systems); True rescores the top
    ``rescore_k`` (default 4 * k) with the fp32 query against the dequantized / {-1,+1} documents; 'full'
    rescores them against the full-precision document embeddings (kept for it; ``keep_full=True`` keeps
    them in ``index()`` for any mode). ``run.metadata`` says which scheme produced the scores.
    """

    sentence_transformers_class = "SentenceTransformer"

    def __init__(self, model: ModelLike, tokenizer: Any = None, *, pooling: str | None = None,
                 normalize: bool | None = None, query_prefix: str = "", doc_prefix: str = "",
                 quantize: str | None = None, ranges: ArrayLike | None = None, rescore_k: int | None = None,
                 keep_full: bool = False, hps: bool | str | None = None, **kwargs: Any) -> None:
        if pooling is not None and pooling not in POOLINGS:
            raise InputError(f"unknown pooling {pooling!r}: use one of {POOLINGS}")
        scheme = None if quantize is None else check_scheme(quantize)
        if hps is None:  # the default: the last layer (pooling) in fp32; rescoring for quantized retrieval
            hps = DEFAULT_HPS if scheme is None else True
        mode = quantized_mode(scheme, hps) if scheme is not None else None
        if scheme is None and isinstance(hps, str) and hps == "full":
            raise InputError("hps='full' rescores quantized retrieval with the full-precision embeddings: "
                             "it needs quantize='int8', 'uint8', 'binary' or 'ubinary'")
        if ranges is not None:
            if scheme in BINARY_SCHEMES:
                raise InputError(f"calibration ranges apply to int8/uint8, not to quantize={scheme!r}")
            ranges = check_ranges(ranges)
        if rescore_k is not None and not is_count(rescore_k, 1):
            raise InputError(f"rescore_k must be a positive integer, got {rescore_k!r}")
        super().__init__(model, tokenizer, hps=hps if scheme is None else True, **kwargs)
        self.hps, self.mode = hps, mode or self.mode
        self.pooling = pooling if pooling is not None else self.model_settings.get("pooling", "mean")
        self.normalize = bool(normalize if normalize is not None else self.model_settings.get("normalize", True))
        self.query_prefix, self.doc_prefix = query_prefix, doc_prefix
        self.quantize, self.ranges, self.rescore_k = scheme, ranges, rescore_k
        self.keep_full = bool(keep_full) or (isinstance(hps, str) and hps == "full")
        self.timings: dict = {}
        self._rerank_context: tuple[dict, dict] = ({}, {})

    def encode(self, texts: Sequence[str], *, is_query: bool = False) -> torch.Tensor:
        """Embeddings (rows in input order, on self.device) as this scorer's hps mode leaves them:
        model dtype for hps=False, fp32 otherwise; normalised when normalize=True. With quantize set,
        the fp32 embeddings that get quantized (quantize them with tieaware.hps.quantize.quantize)."""
        prefix = self.query_prefix if is_query else self.doc_prefix
        mode = encoding_mode(self.mode)
        return self._encode(list(texts), prefix, (mode,))[mode]

    def index(self, corpus: Mapping[str, str], *, scheme: str | None = None) -> QuantizedIndex:
        """Encode and quantize a corpus once: a QuantizedIndex (``.docids`` in corpus order) that `search`
        accepts in place of the corpus. Keeps the fp32 embeddings when keep_full=True or hps='full'."""
        scheme = check_scheme(scheme or self.quantize) if (scheme or self.quantize) else None
        if scheme is None:
            raise InputError("index() quantizes the corpus: pass quantize= to BiEncoder (or scheme=)")
        docids = list(corpus)
        if not docids:
            raise InputError("nothing to index: the corpus is empty")
        check_docs(corpus, docids)
        embeddings = self._encode([corpus[d] for d in docids], self.doc_prefix, ("upcast",), "docs")["upcast"]
        index = QuantizedIndex(embeddings, scheme, ranges=self.ranges, keep_full=self.keep_full)
        index.docids = docids
        return index

    def search(self, queries: Mapping[str, str], corpus: Mapping[str, str] | QuantizedIndex, k: int = 100, *,
               name: str | None = None, chunk_scores: int = 2**24, rescore_k: int | None = None) -> ranx.Run:
        """Exact top-k over the whole corpus, keeping every doc tied with the k-th. The score matrix is
        built for at most `chunk_scores` (queries x docs) entries at a time, so large corpora fit memory.
        corpus: {docid: text}, or with quantize set the QuantizedIndex from `index()`. rescore_k overrides
        the constructor's (quantized rescoring only). The tie census of the top k goes to
        ``run.metadata['tie_census']``, with a TieWarning as for `rerank`."""
        run = self.search_modes(queries, corpus, k, (self.mode,), chunk_scores, rescore_k)[self.mode]
        run.name = name or run.name
        report_ties(run, k, None if isinstance(corpus, QuantizedIndex) else corpus, self._tie_cause(self.mode))
        return run

    def _tie_cause(self, mode: str) -> str:
        parsed = parse_mode(mode)
        if parsed is not None and parsed[1] is None:
            return ("quantized scores (integer dot products of codes, Hamming similarities) tie by design: "
                    "hps=True rescores the top rescore_k with the fp32 query")
        return super()._tie_cause(mode if parsed is None else "head")

    def _rescore_depth(self, k: int, rescore_k: int | None) -> int:
        depth = rescore_k if rescore_k is not None else self.rescore_k if self.rescore_k is not None else 4 * k
        if depth < k:
            raise InputError(f"rescore_k={depth} is smaller than k={k}: rescoring must see at least the top k")
        return depth

    def search_modes(self, queries: Mapping[str, str], corpus: Mapping[str, str] | QuantizedIndex, k: int,
                     modes: Sequence[str], chunk_scores: int = 2**24,
                     rescore_k: int | None = None) -> dict[str, ranx.Run]:
        """`search` in several modes (precision modes, quantized modes such as 'binary+rescore') from one
        encoding of queries and corpus per precision -> {mode: Run} (what `sweep` uses)."""
        if not is_count(k, 1):
            raise InputError(f"k must be >= 1, got {k}")
        quantized = {mode: parsed for mode in modes if (parsed := parse_mode(mode)) is not None}
        depth = {mode: self._rescore_depth(k, rescore_k) for mode, (_, rescore) in quantized.items() if rescore}
        prebuilt: QuantizedIndex | None = None
        texts: Mapping[str, str] | None = None
        if isinstance(corpus, QuantizedIndex):
            prebuilt = corpus
            if set(modes) - set(quantized) or {scheme for scheme, _ in quantized.values()} != {prebuilt.scheme}:
                raise InputError(f"a QuantizedIndex ({prebuilt.scheme}) serves only {prebuilt.scheme} searches")
            if prebuilt.docids is None or len(prebuilt.docids) != prebuilt.size:
                raise InputError("a QuantizedIndex passed as the corpus needs its doc ids: build it with "
                                 "BiEncoder.index(corpus) (or set index.docids)")
            docids = prebuilt.docids
        else:
            texts = corpus
            docids = list(texts)
        qids = list(queries)
        if not qids or not docids:
            raise InputError(f"nothing to search: {len(qids)} queries, {len(docids)} docs")
        check_queries(queries, qids)
        if texts is not None:
            check_docs(texts, docids)
        encodings = tuple(dict.fromkeys(encoding_mode(mode) for mode in modes))
        timings = self.timings = {"encode_queries": 0.0, "encode_docs": 0.0, "index": {}, "search": {}}
        start = time.perf_counter()
        query_emb = self._encode([queries[q] for q in qids], self.query_prefix, encodings, "queries")
        timings["encode_queries"] = time.perf_counter() - start
        if texts is not None:
            start = time.perf_counter()
            doc_emb = self._encode([texts[d] for d in docids], self.doc_prefix, encodings, "docs")
            timings["encode_docs"] = time.perf_counter() - start
        indexes = {prebuilt.scheme: prebuilt} if prebuilt is not None else {}
        runs = {}
        for mode in modes:
            start = time.perf_counter()
            if mode in quantized:
                scheme, rescore = quantized[mode]
                if scheme not in indexes:
                    keep_full = self.keep_full or any(r == "full" for s, r in quantized.values() if s == scheme)
                    block = min(chunk_scores, 2**20 if scheme in BINARY_SCHEMES else 2**24)
                    indexes[scheme] = QuantizedIndex(doc_emb["upcast"], scheme, ranges=self.ranges,
                                                     keep_full=keep_full, block=block)
                    timings["index"][scheme] = time.perf_counter() - start
                    start = time.perf_counter()
                index = indexes[scheme]
                hits = index.search(query_emb["upcast"], k, rescore=rescore, rescore_k=depth.get(mode))
                scored = {qid: ([docids[i] for i in rows.tolist()], scores)
                          for qid, (rows, scores) in zip(qids, hits)}
            else:
                scored = self._dense_search(qids, docids, query_emb[mode], doc_emb[mode], k, chunk_scores)
            timings["search"][mode] = time.perf_counter() - start
            runs[mode] = build_run(scored, run_name(self.model, self.dtype, mode), k,
                                   self._metadata(mode, indexes, depth.get(mode)))
        return runs

    @staticmethod
    def _dense_search(qids, docids, query_emb, doc_emb, k, chunk_scores) -> dict[str, tuple]:
        """Float dot products by chunks of queries; the top k of each row with every tie at the k-th."""
        rows_per_chunk = max(1, chunk_scores // max(1, len(docids)))
        scored = {}
        for start in range(0, len(qids), rows_per_chunk):
            sims = query_emb[start:start + rows_per_chunk] @ doc_emb.T
            keep = sims >= sims.topk(min(k, sims.shape[1]), dim=1).values[:, -1:]
            for row, qid in enumerate(qids[start:start + rows_per_chunk]):
                idx = keep[row].nonzero().squeeze(1)
                scored[qid] = ([docids[i] for i in idx.tolist()], sims[row, idx].double().cpu().numpy())
        return scored

    def _metadata(self, mode: str, indexes=None, rescore_k=None) -> dict:
        if indexes is None:  # rerank: the indexes and depths of the last _scored_candidates
            indexes, depths = self._rerank_context
            rescore_k = depths.get(mode)
        info = super()._metadata(mode)
        parsed = parse_mode(mode)
        if parsed is None:
            info["embeddings"] = EMBEDDINGS[mode]
            info["scores"] = ("dot product in " + DTYPE_NAMES.get(self.dtype, str(self.dtype)) if mode == "none"
                              else "fp32 dot product")
            return info
        scheme, rescore = parsed
        info["hps"] = {None: False, "quantized": True, "full": "full"}[rescore]
        info["embeddings"] = EMBEDDINGS["upcast"] + ", then quantized"
        if indexes and scheme in indexes:
            info.update(indexes[scheme].describe(rescore, rescore_k))
        else:
            info.update(quantize=scheme, rescore=rescore, rescore_k=rescore_k)
        return info

    def _scored_candidates(self, queries: Mapping[str, str], corpus: Mapping[str, str],
                           candidates: Mapping[str, Sequence[str]], modes: Sequence[str],
                           k: int | None) -> dict[str, dict[str, tuple[Sequence[str], np.ndarray]]]:
        """Encode each query and each distinct candidate doc once; float modes score every pair, quantized
        modes score in the quantized space (calibrated on the distinct candidate docs unless ranges= was
        given) and, with rescoring, rescore the top rescore_k of each query's candidates."""
        quantized = {mode: parsed for mode in modes if (parsed := parse_mode(mode)) is not None}
        longest = max(len(docs) for docs in candidates.values())
        depth = {mode: self._rescore_depth(k, None) if k is not None else longest
                 for mode, (_, rescore) in quantized.items() if rescore}
        distinct_docs = dict.fromkeys(d for docs in candidates.values() for d in docs)
        doc_row = {docid: row for row, docid in enumerate(distinct_docs)}
        encodings = tuple(dict.fromkeys(encoding_mode(mode) for mode in modes))
        query_emb = self._encode([queries[q] for q in candidates], self.query_prefix, encodings, "queries")
        doc_emb = self._encode([corpus[d] for d in doc_row], self.doc_prefix, encodings, "docs")
        rows = [np.array([doc_row[d] for d in docs], dtype=np.int64) for docs in candidates.values()]
        scored: dict[str, dict[str, tuple[Sequence[str], np.ndarray]]] = {}
        indexes: dict[str, QuantizedIndex] = {}
        for mode in modes:
            if mode not in quantized:
                scored[mode] = {}
                for row, (qid, docs) in enumerate(candidates.items()):
                    sims = query_emb[mode][row:row + 1] @ doc_emb[mode][torch.from_numpy(rows[row]).to(self.device)].T
                    scored[mode][qid] = (docs, sims[0].double().cpu().numpy())
                continue
            scheme, rescore = quantized[mode]
            if scheme not in indexes:
                keep_full = self.keep_full or any(r == "full" for s, r in quantized.values() if s == scheme)
                indexes[scheme] = QuantizedIndex(doc_emb["upcast"], scheme, ranges=self.ranges, keep_full=keep_full)
            hits = indexes[scheme].search(query_emb["upcast"], k or longest, rescore=rescore,
                                          rescore_k=depth.get(mode), candidates=rows)
            docids = list(doc_row)
            scored[mode] = {qid: ([docids[i] for i in hit_rows.tolist()], scores)
                            for qid, (hit_rows, scores) in zip(candidates, hits)}
        self._rerank_context = (indexes, depth)
        return scored
    def _pool(self, hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Pooling in the dtype of `hidden` (the mask is cast to it, as sentence-transformers does)."""
        if self.pooling == "cls":
            return hidden[:, 0]
        if self.pooling == "last_token":
            last = mask.shape[1] - 1 - mask.flip(1).argmax(1)
            return hidden[torch.arange(hidden.shape[0], device=hidden.device), last]
        weights = mask.unsqueeze(-1).to(hidden.dtype)
        return (hidden * weights).sum(1) / weights.sum(1).clamp(min=1)

    def _finish(self, embeddings: torch.Tensor) -> torch.Tensor:
        return F.normalize(embeddings, dim=-1) if self.normalize else embeddings

    @torch.inference_mode()
    def _encode(self, texts, prefix, modes, desc=None) -> dict[str, torch.Tensor]:
        """{mode: embeddings} from one forward pass per batch, rows in input order."""
        parts: dict[str, list[torch.Tensor]] = {mode: [] for mode in modes}
        order = []
        with self._progress(len(texts), "text", desc) as bar, eval_mode(self.model):
            for batch in length_sorted_batches([len(t) for t in texts], self.batch_size):
                inputs = self.tokenizer([prefix + texts[i] for i in batch], padding=True, truncation=True,
                                        max_length=self.max_length, return_tensors="pt").to(self.device)
                hidden = self.model(**inputs).last_hidden_state
                pooled = self._pool(hidden, inputs["attention_mask"])
                if "none" in modes:
                    parts["none"].append(self._finish(pooled))
                if "upcast" in modes:
                    parts["upcast"].append(self._finish(pooled.float()))
                if "head" in modes:
                    parts["head"].append(self._finish(self._pool(hidden.float(), inputs["attention_mask"])))
                order.append(batch)
                bar.update(len(batch))
        position = torch.from_numpy(np.argsort(np.concatenate(order))).to(self.device)
        return {mode: torch.cat(chunks)[position] for mode, chunks in parts.items()}


def encoding_mode(mode: str) -> str:
    """The embeddings a mode scores: its own precision mode, or 'upcast' (fp32) for a quantized mode."""
    return "upcast" if parse_mode(mode) is not None else mode
