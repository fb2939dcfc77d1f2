"""Quantized retrieval (tieaware.hps.quantize, BiEncoder(quantize=...)): int8/uint8 codes and binary Hamming
scores tie exactly; fp32 rescoring removes the ties except between identical codes. Tiny random-weight
models (CPU, seconds); the real all-MiniLM-L6-v2 on a Cranfield slice is in test_hps_quantize_minilm.py."""
import re

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
from test_hps_scorers import CORPUS, QUERIES, TOKENIZER, bert_encoder, scorer  # noqa: E402

import tieaware  # noqa: E402
from tieaware.errors import InputError  # noqa: E402
from tieaware.hps import BiEncoder, sweep  # noqa: E402
from tieaware.hps import quantize as qz  # noqa: E402
from tieaware.hps._common import keep_top_k_with_ties  # noqa: E402
from tieaware.hps.sweep import QUANTIZED_REGIMES, parse_regime  # noqa: E402

RNG = np.random.default_rng(7)


def embeddings(n, dim, seed=0):
    x = np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def brute_hamming(a_bits, b_bits):
    """Hamming distances from the unpacked bits, one pair at a time with Python's popcount."""
    a = np.unpackbits(a_bits.view(np.uint8), axis=1)
    b = np.unpackbits(b_bits.view(np.uint8), axis=1)
    return np.array([[int("".join(map(str, x ^ y)), 2).bit_count() for y in b] for x in a])


# ---- the quantization maths ------------------------------------------------------------------------------

def test_quantize_by_hand():
    # steps exact in binary: dim 0 spans [0, 255/256] (step 1/256), dim 1 [-1, 127/128] (step 1/128),
    # dim 2 is constant (step 0 -> 1)
    x = np.array([[0.0, -1.0, 0.25], [255 / 256, 127 / 128, 0.25], [0.5, 0.0, 0.25]], dtype=np.float32)
    np.testing.assert_array_equal(qz.calibration_ranges(x), [[0, -1, 0.25], [255 / 256, 127 / 128, 0.25]])
    uint8 = qz.quantize(x, "uint8")
    np.testing.assert_array_equal(uint8, [[0, 0, 0], [255, 255, 0], [128, 128, 0]])  # floor((x - min) / step)
    np.testing.assert_array_equal(qz.quantize(x, "int8"), uint8.astype(np.int16) - 128)
    np.testing.assert_array_equal(qz.dequantize(uint8, "uint8", qz.calibration_ranges(x)), x)  # min + u * step
    np.testing.assert_array_equal(qz.dequantize(uint8.astype(np.int16) - 128, "int8", qz.calibration_ranges(x)), x)
    # float32 arithmetic as sentence-transformers: with step 2/255, the maximum 1.0 of [-1, 1] lands in 254
    assert qz.quantize(np.array([[-1.0], [1.0]]), "uint8")[1, 0] == 254
    # sign bits x > 0 -> 1, packed big-endian and padded to a byte: 001 -> 0b00100000, 111, 101
    np.testing.assert_array_equal(qz.quantize(x, "ubinary"), [[0b00100000], [0b11100000], [0b10100000]])
    np.testing.assert_array_equal(qz.quantize(x, "binary"), np.array([[32], [224], [160]]) - 128)
    np.testing.assert_array_equal(qz.dequantize(qz.quantize(x, "binary"), "binary", dim=3),
                                  [[-1, -1, 1], [1, 1, 1], [1, -1, 1]])
    # the query 001 against the docs: Hamming 0, 2, 1 -> scores 3, 1, 2
    np.testing.assert_array_equal(qz.QuantizedIndex(x, "binary").scores(x[:1]), [[3, 1, 2]])
    # int8 score: integer dot product of the codes (-128, -128, -128) . (127, 127, -128) etc.
    codes = qz.quantize(x, "int8").astype(np.int64)
    np.testing.assert_array_equal(qz.QuantizedIndex(x, "int8").scores(x[:1]), codes[:1] @ codes.T)
    # out-of-range values (a query against corpus ranges) are clipped, not wrapped
    np.testing.assert_array_equal(qz.quantize([[5.0, -3.0, 0.25]], "int8", qz.calibration_ranges(x)),
                                  [[127, -128, -128]])


@pytest.mark.parametrize("scheme", qz.SCHEMES)
@pytest.mark.parametrize("dim", [37, 384])
def test_quantize_matches_sentence_transformers(scheme, dim):
    st = pytest.importorskip("sentence_transformers.util.quantization",
                             reason="sentence-transformers not installed (test_quantize_by_hand covers the formulas)")
    corpus, queries = embeddings(300, dim, 1), embeddings(20, dim, 2) * 1.5  # queries partly outside the ranges
    np.testing.assert_array_equal(qz.quantize(corpus, scheme), st.quantize_embeddings(corpus, precision=scheme))
    if scheme in qz.SCALAR_SCHEMES:
        ranges = qz.calibration_ranges(corpus)
        ours = qz.quantize(queries, scheme, ranges)
        np.testing.assert_array_equal(ours, st.quantize_embeddings(queries, precision=scheme, ranges=ranges))
        np.testing.assert_allclose(qz.dequantize(ours, scheme, ranges),
                                   st._dequantize_embeddings(ours, scheme, ranges), rtol=1e-6, atol=1e-7)


def test_hamming_scores_equal_a_brute_force_popcount():
    for dim in (13, 64, 384):
        docs, queries = qz.pack_bits(embeddings(50, dim, 3)), qz.pack_bits(embeddings(6, dim, 4))
        brute = brute_hamming(queries, docs)
        np.testing.assert_array_equal(qz.hamming_distances(queries, docs), brute)
        signed = qz.quantize(embeddings(6, dim, 4), "binary")  # int8 codes give the same distances
        signed_docs = qz.quantize(embeddings(50, dim, 3), "binary")
        np.testing.assert_array_equal(qz.hamming_distances(signed, signed_docs), brute)
        index = qz.QuantizedIndex(embeddings(50, dim, 3), "binary")
        np.testing.assert_array_equal(index.scores(embeddings(6, dim, 4)), dim - brute)
        np.testing.assert_array_equal(index._block_scores(index.quantize_queries(embeddings(6, dim, 4))), dim - brute)
        # dim - Hamming = (dim + <s_q, s_d>) / 2 with s in {-1, +1}
        signs = qz.dequantize(queries, "ubinary", dim=dim) @ qz.dequantize(docs, "ubinary", dim=dim).T
        np.testing.assert_array_equal((dim + signs) / 2, dim - brute)


def test_popcount_table_fallback_equals_bitwise_count(monkeypatch):
    words = RNG.integers(0, 2**63, size=(40, 7), dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    expected = np.array([[bin(int(w)).count("1") for w in row] for row in words])
    np.testing.assert_array_equal(qz._popcount_table(words), expected)
    index = qz.QuantizedIndex(embeddings(200, 100, 5), "ubinary")
    queries = embeddings(9, 100, 6)
    fast = index.search(queries, 10)
    monkeypatch.setattr(qz, "popcount", qz._popcount_table)  # what numpy < 2.0 gets
    for (rows, scores), (rows_lut, scores_lut) in zip(fast, index.search(queries, 10)):
        np.testing.assert_array_equal(rows, rows_lut)
        np.testing.assert_array_equal(scores, scores_lut)


@pytest.mark.parametrize("scheme, dim", [("int8", 384), ("uint8", 384), ("int8", 1500), ("uint8", 40000)])
def test_int_dot_is_exact_integer_arithmetic(scheme, dim):
    dtype = np.int8 if scheme == "int8" else np.uint8
    info = np.iinfo(dtype)
    q = RNG.integers(info.min, info.max + 1, size=(3, dim)).astype(dtype)
    d = RNG.integers(info.min, info.max + 1, size=(5, dim)).astype(dtype)
    q[0], d[0] = info.max, info.max  # the largest possible dot product
    out = qz.int_dot(q, d)
    assert out.dtype in (np.int32, np.int64)
    np.testing.assert_array_equal(out, q.astype(np.int64) @ d.astype(np.int64).T)


def test_top_rows_with_ties_counting_equals_the_partition_cut():
    scores = RNG.integers(0, 20, size=(30, 300))
    for k in (1, 5, 50, 299, 300, 500):
        counted = qz.top_rows_with_ties(scores, k, max_score=19)
        partitioned = qz.top_rows_with_ties(scores, k)
        for row, (a, b) in enumerate(zip(counted, partitioned)):
            expected = np.sort(keep_top_k_with_ties(scores[row], k))
            np.testing.assert_array_equal(a, expected)
            np.testing.assert_array_equal(b, expected)


def with_duplicates(n=120, dim=48, seed=8):
    """Embeddings in which docs 0-4 are copies and docs 10/11 share sign bits but differ in value."""
    x = embeddings(n, dim, seed)
    x[1:5] = x[0]
    x[11] = x[10] * np.linspace(0.5, 1.5, dim, dtype=np.float32)
    return x


@pytest.mark.parametrize("scheme", qz.SCHEMES)
def test_index_search_is_the_exact_top_k_with_boundary_ties(scheme):
    docs, queries = with_duplicates(), embeddings(7, 48, 9)
    index = qz.QuantizedIndex(docs, scheme, keep_full=True, block=300)  # several query blocks
    full = index.scores(queries)
    for k in (1, 3, 10):
        for row, (rows, scores) in enumerate(index.search(queries, k)):
            expected = np.sort(keep_top_k_with_ties(full[row], k))
            np.testing.assert_array_equal(np.sort(rows), expected)
            np.testing.assert_array_equal(scores, full[row, rows])
            assert len(rows) >= k and scores.dtype == np.int64
        serial = qz.QuantizedIndex(docs, scheme, block=300, threads=1).search(queries, k)
        for (rows, scores), (rows_1, scores_1) in zip(index.search(queries, k), serial):
            np.testing.assert_array_equal(rows, rows_1)
            np.testing.assert_array_equal(scores, scores_1)
        # five copies of one document have the same code: a cut at k keeps all of them or none
        for rows, _ in index.search(np.vstack([queries, docs[:1]]), k):
            assert len(set(rows.tolist()) & set(range(5))) in (0, 5)


@pytest.mark.parametrize("scheme", ["int8", "binary"])
@pytest.mark.parametrize("rescore", ["quantized", "full"])
def test_rescoring_takes_the_top_rescore_k_and_rescores_them_in_fp32(scheme, rescore):
    docs, queries = with_duplicates(), embeddings(5, 48, 10)
    index = qz.QuantizedIndex(docs, scheme, keep_full=True)
    reconstructed = docs if rescore == "full" else qz.dequantize(index.codes, scheme, index.ranges, 48)
    quantized = index.scores(queries)
    for row, (rows, scores) in enumerate(index.search(queries, 5, rescore=rescore, rescore_k=12)):
        pool = keep_top_k_with_ties(quantized[row], 12)
        fp32 = reconstructed[pool] @ queries[row]
        expected = pool[keep_top_k_with_ties(fp32, 5)]
        np.testing.assert_array_equal(np.sort(rows), np.sort(expected))
        np.testing.assert_allclose(scores, reconstructed[rows] @ queries[row], rtol=0, atol=1e-6)
        assert scores.dtype == np.float32


# ---- BiEncoder(quantize=...) on a tiny random-weight BERT ------------------------------------------------

DUP_CORPUS = CORPUS | {"e00": CORPUS["d03"], "e01": CORPUS["d03"], "e02": CORPUS["d07"]}  # identical texts


def tie_pairs(run, same):
    """(pairs of tied docs with the same key, tied pairs with different keys) over all queries."""
    same_key = other = 0
    for docs in run.to_dict().values():
        groups = {}
        for docid, score in docs.items():
            groups.setdefault(score, []).append(same(docid))
        for group in groups.values():
            for i in range(len(group)):
                for j in range(i + 1, len(group)):
                    same_key, other = (same_key + 1, other) if group[i] == group[j] else (same_key, other + 1)
    return same_key, other


@pytest.fixture(scope="module")
def tiny_runs():
    # hps="logits": encode() returns the embeddings that quantized retrieval quantizes
    encoder = BiEncoder(bert_encoder(), TOKENIZER, dtype="bf16", hps="logits", show_progress=False)
    modes = ("int8", "int8+rescore", "int8+rescore_full", "binary", "binary+rescore", "binary+rescore_full")
    runs = encoder.search_modes(QUERIES, DUP_CORPUS, len(DUP_CORPUS), modes)  # every pair can show its tie
    docids = list(DUP_CORPUS)
    emb = encoder.encode(DUP_CORPUS.values()).numpy()
    codes = {s: dict(zip(docids, map(bytes, qz.quantize(emb, s)))) for s in ("int8", "binary")}
    return encoder, runs, codes


def test_quantized_scores_are_integers_and_tie(tiny_runs):
    _, runs, codes = tiny_runs
    for scheme in ("int8", "binary"):
        scores = np.concatenate([list(d.values()) for d in runs[scheme].to_dict().values()])
        assert np.array_equal(scores, np.round(scores))
        same, different = tie_pairs(runs[scheme], lambda d: DUP_CORPUS[d])
        assert same > 0  # identical texts tie, as in any precision
        if scheme == "binary":
            assert different > 50  # and a 32-bit Hamming score ties many different documents
            assert scores.min() >= 0 and scores.max() <= 32
    census = tieaware.census(runs["binary"], ks=(10,))
    assert census.loc[10, "unique_scores"] < 6 and census.loc[10, "straddling_share"] == 1


def test_rescoring_leaves_ties_only_between_identical_codes(tiny_runs):
    _, runs, codes = tiny_runs
    for scheme in ("int8", "binary"):
        same, different = tie_pairs(runs[f"{scheme}+rescore"], codes[scheme].get)
        assert different == 0 and same > 0
        # full-precision rescoring: only identical texts still tie
        same, different = tie_pairs(runs[f"{scheme}+rescore_full"], lambda d: DUP_CORPUS[d])
        assert different == 0 and same > 0
    _, binary_rescored = tie_pairs(runs["binary+rescore"], lambda d: DUP_CORPUS[d])
    _, binary_raw = tie_pairs(runs["binary"], lambda d: DUP_CORPUS[d])
    assert binary_rescored < binary_raw / 5


def test_search_scores_equal_the_index_scores_of_the_encoded_embeddings(tiny_runs):
    encoder, _, _ = tiny_runs
    runs = encoder.search_modes(QUERIES, DUP_CORPUS, 15, ("int8", "binary"))
    emb = encoder.encode(DUP_CORPUS.values()).numpy()
    queries = encoder.encode(QUERIES.values(), is_query=True).numpy()
    docids = list(DUP_CORPUS)
    for scheme in ("int8", "binary"):
        index = qz.QuantizedIndex(emb, scheme)
        full = index.scores(queries)
        for row, docs in enumerate(runs[scheme].to_dict().values()):
            assert [docs[d] for d in docs] == [float(full[row, docids.index(d)]) for d in docs]
            assert sorted(docs) == sorted(docids[i] for i in keep_top_k_with_ties(full[row], 15))


def test_public_arguments_and_metadata():
    model = bert_encoder()
    plain = BiEncoder(model, TOKENIZER, quantize="binary", hps=False, show_progress=False)
    run = plain.search(QUERIES, DUP_CORPUS, k=5)
    assert run.name.endswith("_fp32+binary")
    assert run.metadata["quantize"] == "binary" and run.metadata["hps"] is False
    assert "Hamming" in run.metadata["scores"]
    rescored = BiEncoder(model, TOKENIZER, quantize="BINARY", rescore_k=7, show_progress=False)
    run = rescored.search(QUERIES, DUP_CORPUS, k=5)
    assert rescored.mode == "binary+rescore" and run.metadata["rescore_k"] == 7
    assert run.metadata["scores"] == "fp32 query . {-1,+1} doc bits"
    assert rescored.search(QUERIES, DUP_CORPUS, k=5, rescore_k=40).metadata["rescore_k"] == 40
    default = BiEncoder(model, TOKENIZER, quantize="int8", show_progress=False).search(QUERIES, DUP_CORPUS, k=3)
    assert default.metadata["rescore_k"] == 12 and default.metadata["ranges"] == "corpus min/max per dimension"
    full = BiEncoder(model, TOKENIZER, quantize="int8", hps="full", show_progress=False)
    assert full.keep_full and full.search(QUERIES, DUP_CORPUS, k=3).metadata["scores"] == "fp32 query . fp32 doc"
    assert BiEncoder(model, TOKENIZER, show_progress=False).search(QUERIES, CORPUS, k=3).metadata["quantize"] is None


def test_given_ranges_index_and_rerank_agree_with_search():
    model = bert_encoder()
    emb = BiEncoder(model, TOKENIZER, show_progress=False).encode(DUP_CORPUS.values())
    ranges = torch.stack([emb.min(0).values, emb.max(0).values]) * 2  # wider than the corpus
    encoder = BiEncoder(model, TOKENIZER, quantize="int8", ranges=ranges, keep_full=True, show_progress=False)
    searched = encoder.search(QUERIES, DUP_CORPUS, k=6)
    assert searched.metadata["ranges"] == "given"
    index = encoder.index(DUP_CORPUS)
    assert index.full is not None and index.docids == list(DUP_CORPUS)
    assert encoder.search(QUERIES, index, k=6).to_dict() == searched.to_dict()
    candidates = {qid: dict.fromkeys(DUP_CORPUS, 0.0) for qid in QUERIES}
    assert encoder.rerank(QUERIES, DUP_CORPUS, candidates, k=6).to_dict() == searched.to_dict()
    plain = BiEncoder(model, TOKENIZER, quantize="int8", ranges=ranges, hps=False, show_progress=False)
    plain_search = plain.search(QUERIES, DUP_CORPUS, k=6).to_dict()
    assert plain.rerank(QUERIES, DUP_CORPUS, candidates, k=6).to_dict() == plain_search
    every = plain.rerank(QUERIES, DUP_CORPUS, {"q0": {"d01": 0, "d02": 0, "e00": 0}}).to_dict()["q0"]
    assert sorted(every) == ["d01", "d02", "e00"]


@pytest.mark.parametrize("kwargs, message", [
    (dict(quantize="int4"), "unknown quantization scheme 'int4'"),
    (dict(quantize="binary", hps="head"), "with quantize='binary', hps must be False"),
    (dict(hps="full"), "hps='full' rescores quantized retrieval"),
    (dict(quantize="int8", ranges=np.zeros((3, 32))), re.escape("shape (2, dim)")),
    (dict(quantize="int8", ranges=np.zeros(32)), re.escape("got shape (32,)")),
    (dict(quantize="int8", ranges=np.array([[1.0] * 32, [0.0] * 32])), "minimum above maximum in dimension 0"),
    (dict(quantize="binary", ranges=np.zeros((2, 32))), "ranges apply to int8/uint8"),
    (dict(quantize="int8", rescore_k=0), "rescore_k must be a positive integer"),
])
def test_bad_quantization_arguments_are_clear_errors(kwargs, message):
    with pytest.raises(InputError, match=message):
        scorer("bi", **kwargs)


def test_bad_quantized_searches_are_clear_errors():
    with pytest.raises(InputError, match="rescore_k=3 is smaller than k=5"):
        scorer("bi", quantize="binary", rescore_k=3).search(QUERIES, CORPUS, k=5)
    with pytest.raises(InputError, match="rescore_k=2 is smaller than k=5"):
        scorer("bi", quantize="int8").search(QUERIES, CORPUS, k=5, rescore_k=2)
    with pytest.raises(InputError, match=re.escape("must have shape (2, 32)")):
        scorer("bi", quantize="int8", ranges=np.zeros((2, 31))).search(QUERIES, CORPUS, k=5)
    index = qz.QuantizedIndex(embeddings(10, 16), "binary")
    with pytest.raises(InputError, match="keep_full=True"):
        index.search(embeddings(2, 16), 3, rescore="full")
    with pytest.raises(InputError, match="dimension 8, the index 16"):
        index.search(embeddings(2, 8), 3)
    with pytest.raises(InputError, match="unknown rescore 'fp64'"):
        index.search(embeddings(2, 16), 3, rescore="fp64")
    with pytest.raises(InputError, match="NaN or inf"):
        qz.quantize(np.array([[np.nan, 1.0]]), "int8")
    with pytest.raises(InputError, match="needs its doc ids"):
        scorer("bi", quantize="binary").search(QUERIES, qz.QuantizedIndex(embeddings(40, 32), "binary"), k=3)
    with pytest.raises(InputError, match="serves only binary"):
        scorer("bi", quantize="int8").search(QUERIES, scorer("bi", quantize="binary").index(CORPUS), k=3)
    assert issubclass(InputError, ValueError)


@pytest.mark.parametrize("kind", ["bert-cls-unnormalized", "qwen2-last-token-fp16"])
def test_quantization_works_with_other_models_poolings_and_dtypes(kind):
    from test_hps_scorers import qwen2_lm

    if kind.startswith("bert"):
        encoder = BiEncoder(bert_encoder(), TOKENIZER, pooling="cls", normalize=False, show_progress=False)
    else:
        encoder = BiEncoder(qwen2_lm().model, TOKENIZER, pooling="last_token", dtype="fp16", show_progress=False)
    runs = encoder.search_modes(QUERIES, CORPUS, 8, ("int8", "binary+rescore", "uint8+rescore_full"))
    docs, queries = encoder.encode(CORPUS.values()).numpy(), encoder.encode(QUERIES.values(), is_query=True).numpy()
    assert docs.dtype == np.float32
    expected = qz.QuantizedIndex(docs, "int8").search(queries, 8)
    for (rows, scores), found in zip(expected, runs["int8"].to_dict().values()):
        assert found == {list(CORPUS)[r]: float(s) for r, s in zip(rows, scores)}
    for run in runs.values():
        assert all(len(found) >= 8 for found in run.to_dict().values())


# ---- sweep ------------------------------------------------------------------------------------------------

def test_quantized_regime_names():
    assert parse_regime("int8") == (torch.float32, "int8")
    assert parse_regime("binary+rescore") == (torch.float32, "binary+rescore")
    assert parse_regime("fp32+ubinary+rescore_full") == (torch.float32, "ubinary+rescore_full")
    assert parse_regime("bf16+uint8") == (torch.bfloat16, "uint8")
    with pytest.raises(InputError, match=re.escape("unknown regime 'binary+fast'")):
        parse_regime("binary+fast")
    with pytest.raises(ValueError, match=re.escape("unknown regime 'bf16+int8+hps'")):
        parse_regime("bf16+int8+hps")


def test_sweep_with_quantized_regimes():
    qrels = {qid: {docid: 1 for i, docid in enumerate(CORPUS) if (i + int(qid[1:])) % 4 == 0} for qid in QUERIES}
    regimes = ["fp32", *QUANTIZED_REGIMES, "binary+rescore_full"]
    result = sweep(BiEncoder, bert_encoder(), QUERIES, DUP_CORPUS, qrels, tokenizer=TOKENIZER, k=20,
                   metrics=["ndcg@10", "mrr@10"], regimes=regimes, census_ks=(10, 20), device="cpu",
                   show_progress=False)
    assert list(result.runs) == regimes and set(result.seconds) == {"fp32"}  # one forward pass for all
    summary = result.summary()
    assert list(summary.index) == regimes
    assert {"ndcg@10 E[M]", "ndcg@10 Range", "mrr@10 Bias", "unique@10", "unique@20", "group@20",
            "straddle@20", "tied@20", "ms/q"} <= set(summary.columns)
    assert summary.loc["fp32", "ndcg@10 Range"] == 0  # fp32 ties only the identical texts
    assert summary.loc["fp32", "tied@20"] < summary.loc["binary+rescore", "tied@20"] < summary.loc["binary", "tied@20"]
    assert summary.loc["binary", "ndcg@10 Range"] > 0
    assert result.schemes["binary"]["quantize"] == "binary" and "Hamming" in str(result)
    assert (result.timing["search_ms"] > 0).all()
    with pytest.raises(InputError, match="sweep sets quantize= itself"):
        sweep(BiEncoder, bert_encoder(), QUERIES, CORPUS, qrels, tokenizer=TOKENIZER, quantize="int8")
