"""Synthetic bf16-scored runs for the benchmarks (deterministic given the seed)."""
import numpy as np

METRICS = ["ndcg@10", "mrr@10", "map@100", "recall@100", "precision@10"]
PYTREC_MEASURES = {"ndcg_cut.10", "recip_rank", "map_cut.100", "recall.100", "P.10"}


def bf16_round(x: np.ndarray) -> np.ndarray:
    """Round float32 values to the bfloat16 grid (round to nearest even), as float64."""
    bits = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return bits.astype(np.uint32).view(np.float32).astype(np.float64)


def make(n_queries: int, n_docs: int, seed: int = 0, n_collection: int = 1_000_000):
    """qrels and run dicts: per query n_docs retrieved docs with bf16 scores that
    correlate with graded relevance; ~5% of retrieved docs judged, a few relevant
    docs never retrieved."""
    rng = np.random.default_rng(seed)
    qrels, run = {}, {}
    for q in range(n_queries):
        qid = f"q{q}"
        ids = rng.choice(n_collection, n_docs + 5, replace=False)
        docs = [f"d{i}" for i in ids[:n_docs]]
        grades = np.zeros(n_docs, np.int64)
        judged = rng.random(n_docs) < 0.05
        grades[judged] = rng.integers(0, 4, judged.sum())
        scores = bf16_round(0.5 + 0.08 * grades + 0.1 * rng.standard_normal(n_docs))
        run[qid] = dict(zip(docs, scores.tolist()))
        judgments = {docs[i]: int(grades[i]) for i in np.flatnonzero(judged)}
        judgments.update({f"d{i}": int(rng.integers(1, 4)) for i in ids[n_docs:n_docs + 2]})
        qrels[qid] = judgments
    return qrels, run
