"""Bi-encoders (embedding models) for exact search and reranking with High-Precision Scoring."""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import ranx
import torch
import torch.nn.functional as F

from ._common import Scorer, build_run, check_docs, check_queries, length_sorted_batches, run_name

POOLINGS = ("mean", "cls", "last_token")


class BiEncoder(Scorer):
    """score(q, d) = <e_q, e_d>, e = pooling of the last hidden state over the attention mask,
    L2-normalised when normalize=True (cosine), else a plain dot product.

    pooling: 'mean' (masked average, as sentence-transformers), 'cls' (first token) or 'last_token'
    (last attended token; works with left or right padding). query_prefix / doc_prefix are prepended
    (e.g. 'query: ' / 'passage: ' for E5). hps=False: pooling, normalisation and dot product in the model
    dtype; hps=True: the pooled embeddings cast to fp32 before normalisation and dot product; hps='head':
    the last hidden state cast to fp32 before pooling too. See Scorer for the common arguments.
    """

    def __init__(self, model, tokenizer=None, *, pooling: str = "mean", normalize: bool = True,
                 query_prefix: str = "", doc_prefix: str = "", **kwargs):
        if pooling not in POOLINGS:
            raise ValueError(f"unknown pooling {pooling!r}: use one of {POOLINGS}")
        super().__init__(model, tokenizer, **kwargs)
        self.pooling, self.normalize = pooling, normalize
        self.query_prefix, self.doc_prefix = query_prefix, doc_prefix

    def encode(self, texts, *, is_query: bool = False) -> torch.Tensor:
        """Embeddings (rows in input order, on self.device) as this scorer's hps mode leaves them:
        model dtype for hps=False, fp32 otherwise; normalised when normalize=True."""
        prefix = self.query_prefix if is_query else self.doc_prefix
        return self._encode(list(texts), prefix, (self.mode,))[self.mode]

    def search(self, queries: Mapping[str, str], corpus: Mapping[str, str], k: int = 100, *,
               name: str | None = None, chunk_scores: int = 2**24) -> ranx.Run:
        """Exact top-k over the whole corpus, keeping every doc tied with the k-th. The score matrix is
        built for at most `chunk_scores` (queries x docs) entries at a time, so large corpora fit memory."""
        run = self._search_runs(queries, corpus, k, (self.mode,), chunk_scores)[self.mode]
        run.name = name or run.name
        return run

    def _search_runs(self, queries, corpus, k, modes, chunk_scores=2**24) -> dict[str, ranx.Run]:
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        qids, docids = list(queries), list(corpus)
        if not qids or not docids:
            raise ValueError(f"nothing to search: {len(qids)} queries, {len(docids)} docs")
        check_queries(queries, qids)
        check_docs(corpus, docids)
        query_emb = self._encode([queries[q] for q in qids], self.query_prefix, modes, "queries")
        doc_emb = self._encode([corpus[d] for d in docids], self.doc_prefix, modes, "docs")
        rows_per_chunk = max(1, chunk_scores // max(1, len(docids)))
        runs = {}
        for mode in modes:
            scored = {}
            for start in range(0, len(qids), rows_per_chunk):
                sims = query_emb[mode][start:start + rows_per_chunk] @ doc_emb[mode].T
                keep = sims >= sims.topk(min(k, sims.shape[1]), dim=1).values[:, -1:]
                for row, qid in enumerate(qids[start:start + rows_per_chunk]):
                    idx = keep[row].nonzero().squeeze(1)
                    scored[qid] = ([docids[i] for i in idx.tolist()], sims[row, idx].double().cpu().numpy())
            runs[mode] = build_run(scored, run_name(self.model, self.dtype, mode))
        return runs

    def _score_candidates(self, queries, corpus, candidates, modes) -> dict[str, dict[str, np.ndarray]]:
        """Encode each query and each distinct candidate doc once, then one dot product per pair."""
        distinct_docs = dict.fromkeys(d for docs in candidates.values() for d in docs)
        doc_row = {docid: row for row, docid in enumerate(distinct_docs)}
        query_emb = self._encode([queries[q] for q in candidates], self.query_prefix, modes, "queries")
        doc_emb = self._encode([corpus[d] for d in doc_row], self.doc_prefix, modes, "docs")
        scores = {mode: {} for mode in modes}
        for mode in modes:
            for row, (qid, docs) in enumerate(candidates.items()):
                rows = torch.tensor([doc_row[d] for d in docs], dtype=torch.long, device=self.device)
                sims = query_emb[mode][row:row + 1] @ doc_emb[mode][rows].T
                scores[mode][qid] = sims[0].double().cpu().numpy()
        return scores

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
        parts = {mode: [] for mode in modes}
        order = []
        with self._progress(len(texts), "text", desc) as bar:
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
