"""HPS for sentence-transformers' LogitScore cross-encoders (causal LMs) and MultiVectorEncoder (ColBERT
MaxSim), on tiny random-weight models built from configs (CPU, seconds): scores equal the models' own
in fp32, bf16 with the default HPS leaves no tie fp32 lacks, and the caller's model is never changed."""
import copy
import itertools

import numpy as np
import pytest

torch = pytest.importorskip("torch")
st = pytest.importorskip("sentence_transformers")
from sentence_transformers.cross_encoder.modules import LogitScore  # noqa: E402
from test_hps_scorers import (  # noqa: E402
    CANDIDATES,
    CORPUS,
    QUERIES,
    TOKENIZER,
    bert_encoder,
    qwen2_lm,
    save_with_tokenizer,
)

from tieaware.errors import InputError, InputTypeError  # noqa: E402
from tieaware.hps import CrossEncoder, MultiVectorEncoder  # noqa: E402

FEW_PAIRS = [(query, CORPUS[docid]) for query in list(QUERIES.values())[:2] for docid in list(CORPUS)[:8]]


@pytest.fixture(scope="module")
def logit_score(tmp_path_factory):
    """A sentence-transformers CrossEncoder over a tiny Qwen2 (LogitScore: logit(yes) - logit(no))."""
    model = st.CrossEncoder(save_with_tokenizer(qwen2_lm(), tmp_path_factory.mktemp("lm")), device="cpu")
    tokenizer = copy.deepcopy(TOKENIZER)  # transformers would load the folder's word-level vocabulary as BPE
    tokenizer.padding_side = "left"
    model[0].processor = tokenizer
    assert [type(module).__name__ for module in model] == ["Transformer", "LogitScore"]
    return model


@pytest.fixture(scope="module")
def multi_vector(tmp_path_factory):
    """A sentence-transformers MultiVectorEncoder over a tiny BERT (Transformer -> Dense -> mask -> Normalize)."""
    folder = save_with_tokenizer(bert_encoder(), tmp_path_factory.mktemp("bert"))
    torch.manual_seed(1)  # the projection MultiVectorEncoder adds is random
    model = st.MultiVectorEncoder(folder, device="cpu")
    assert [type(module).__name__ for module in model] == ["Transformer", "Dense", "MultiVectorMask", "Normalize"]
    return model


def unzip(pairs):
    return [query for query, _ in pairs], [doc for _, doc in pairs]


def tied_pairs(run) -> set:
    """(qid, doc a, doc b) for every two documents of a query with the same score."""
    ties = set()
    for qid, docs in run.to_dict().items():
        for (a, x), (b, y) in itertools.combinations(sorted(docs.items()), 2):
            if x == y:
                ties.add((qid, a, b))
    return ties


def snapshot(model):
    """Everything about a torch model that scoring must leave alone, hooks included."""
    state = {name: tensor.detach().clone() for name, tensor in model.state_dict().items()}
    hooks = [(len(m._forward_hooks), len(m._forward_pre_hooks)) for m in model.modules()]
    return state, {n: (t.dtype, t.device) for n, t in model.state_dict().items()}, \
        [module.training for module in model.modules()], hooks


def assert_unchanged(model, before):
    state, kinds, flags, hooks = before
    after = model.state_dict()
    assert list(after) == list(state)
    for name, tensor in after.items():
        assert (tensor.dtype, tensor.device) == kinds[name], name
        assert torch.equal(tensor, state[name]), name
    assert [module.training for module in model.modules()] == flags
    assert [(len(m._forward_hooks), len(m._forward_pre_hooks)) for m in model.modules()] == hooks


@pytest.mark.parametrize("hps", ["head", "logits", "none"])
def test_logit_score_in_fp32_equals_predict(logit_score, hps):
    expected = logit_score.predict(FEW_PAIRS, batch_size=1)
    scorer = CrossEncoder(logit_score, hps=hps, batch_size=1, show_progress=False)
    np.testing.assert_allclose(scorer.score_pairs(*unzip(FEW_PAIRS)), expected, rtol=1e-6)


def test_logit_score_with_the_true_token_only_scores_its_logit(logit_score):
    yes = logit_score[1].true_token_id
    model = st.CrossEncoder(modules=[logit_score[0], LogitScore(true_token_id=yes)], device="cpu")
    expected = model.predict(FEW_PAIRS, batch_size=1)
    scores = CrossEncoder(model, batch_size=1, show_progress=False).score_pairs(*unzip(FEW_PAIRS))
    np.testing.assert_allclose(scores, expected, rtol=1e-6)
    assert not np.allclose(scores, logit_score.predict(FEW_PAIRS, batch_size=1))


@pytest.mark.parametrize("kind", ["logit_score", "multi_vector"])
def test_bf16_with_default_hps_leaves_no_tie_that_fp32_lacks(request, kind):
    model = request.getfixturevalue(kind)
    scorer = CrossEncoder if kind == "logit_score" else MultiVectorEncoder
    fp32 = scorer(model, show_progress=False).rerank(QUERIES, CORPUS, CANDIDATES)
    bf16 = scorer(model, dtype="bf16", show_progress=False).rerank_modes(QUERIES, CORPUS, CANDIDATES,
                                                                         ("none", "head"))
    assert sum(map(len, fp32.to_dict().values())) == len(QUERIES) * len(CORPUS)  # 160 pairs
    assert tied_pairs(bf16["head"]) <= tied_pairs(fp32)
    assert len(tied_pairs(bf16["none"]) - tied_pairs(fp32)) > 10  # without HPS, bf16 ties: the check can fail


def test_scoring_leaves_the_logit_score_model_as_it_was(logit_score):
    logit_score.model.train()
    before = snapshot(logit_score.model)
    padding_side = logit_score.tokenizer.padding_side
    try:
        for dtype in (None, "bf16"):
            scorer = CrossEncoder(logit_score, dtype=dtype, show_progress=False)
            scorer.rerank(dict(list(QUERIES.items())[:1]), CORPUS, {"q0": list(CORPUS)[:5]})
            assert (scorer.model is logit_score.model) == (dtype is None)
            assert_unchanged(logit_score.model, before)
        assert logit_score.tokenizer.padding_side == padding_side
    finally:
        logit_score.model.eval()


def test_scoring_leaves_the_multi_vector_model_as_it_was(multi_vector):
    multi_vector.train()
    before = snapshot(multi_vector)
    try:
        for dtype in (None, "bf16"):
            scorer = MultiVectorEncoder(multi_vector, dtype=dtype, show_progress=False)
            scorer.rerank(dict(list(QUERIES.items())[:1]), CORPUS, {"q0": list(CORPUS)[:5]})
            assert_unchanged(multi_vector, before)
    finally:
        multi_vector.eval()


@pytest.mark.parametrize("hps", ["head", "logits", "none"])
def test_multi_vector_in_fp32_equals_the_models_maxsim(multi_vector, hps):
    queries, docs = list(QUERIES.values())[:2], list(CORPUS.values())[:8]
    expected = multi_vector.similarity(multi_vector.encode_query(queries), multi_vector.encode_document(docs))
    scorer = MultiVectorEncoder(multi_vector, hps=hps, batch_size=1, show_progress=False)
    pairs = [(q, d) for q in queries for d in docs]
    np.testing.assert_allclose(scorer.score_pairs(*unzip(pairs)), expected.numpy().ravel(), rtol=1e-5)


def test_multi_vector_meanmaxsim_divides_by_the_query_tokens(multi_vector):
    queries, docs = list(QUERIES.values())[:2], list(CORPUS.values())[:4]
    model = copy.deepcopy(multi_vector)
    model.similarity_fn_name = "meanmaxsim"
    expected = model.similarity(model.encode_query(queries), model.encode_document(docs))
    scorer = MultiVectorEncoder(model, show_progress=False)
    assert scorer.similarity == "meanmaxsim"
    pairs = [(q, d) for q in queries for d in docs]
    np.testing.assert_allclose(scorer.score_pairs(*unzip(pairs)), expected.numpy().ravel(), rtol=1e-5)


def test_multi_vector_search_is_maxsim_against_every_document(multi_vector, tmp_path):
    scorer = MultiVectorEncoder(multi_vector, show_progress=False)
    queries = dict(list(QUERIES.items())[:2])
    run = scorer.search(queries, CORPUS, k=5).to_dict()
    full = scorer.rerank(queries, CORPUS, {qid: list(CORPUS) for qid in queries}).to_dict()
    for qid, docs in run.items():
        assert len(docs) >= 5
        assert min(docs.values()) == sorted(full[qid].values(), reverse=True)[4]
    multi_vector.save(str(tmp_path / "saved"))
    loaded = MultiVectorEncoder(str(tmp_path / "saved"), show_progress=False, device="cpu")
    pairs = FEW_PAIRS[:4]
    np.testing.assert_allclose(loaded.score_pairs(*unzip(pairs)), scorer.score_pairs(*unzip(pairs)), rtol=1e-6)


def test_refusals(logit_score, multi_vector):
    with pytest.raises(InputError, match="positive_index"):
        CrossEncoder(logit_score, positive_index=1, show_progress=False)
    with pytest.raises(InputError, match="tokenizer= does not apply"):
        CrossEncoder(logit_score, TOKENIZER, show_progress=False)
    with pytest.raises(InputError, match="tokenizer= does not apply"):
        MultiVectorEncoder(multi_vector, TOKENIZER, show_progress=False)
    with pytest.raises(InputError, match="max_length"):
        MultiVectorEncoder(multi_vector, max_length=16, show_progress=False)
    with pytest.raises(InputTypeError, match="MultiVectorEncoder"):
        MultiVectorEncoder(bert_encoder(), TOKENIZER, show_progress=False)
    with pytest.raises(InputTypeError, match="tieaware.hps.MultiVectorEncoder"):
        CrossEncoder(multi_vector, show_progress=False)
    pooled = st.MultiVectorEncoder(modules=[multi_vector[0], multi_vector[1],
                                            st.multi_vector_encoder.modules.HierarchicalTokenPooling()])
    with pytest.raises(InputError, match="HierarchicalTokenPooling"):
        MultiVectorEncoder(pooled, show_progress=False)


def test_a_logit_score_model_whose_logits_are_not_its_lm_head_output_is_refused(logit_score):
    """Gemma 2 soft-caps its logits after the LM head: the answer tokens' LM-head rows would not give
    LogitScore's z, so every mode refuses it."""
    from transformers import Gemma2Config, Gemma2ForCausalLM

    torch.manual_seed(0)
    config = Gemma2Config(vocab_size=len(TOKENIZER.get_vocab()), hidden_size=32, intermediate_size=64,
                          num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=8,
                          max_position_embeddings=128, pad_token_id=0)
    gemma = Gemma2ForCausalLM(config).eval()
    with torch.no_grad():
        gemma.lm_head.weight.mul_(100)  # logits of tens: the soft cap bends them
    transformer = copy.deepcopy(logit_score[0])
    transformer.model = gemma
    model = st.CrossEncoder(modules=[transformer, copy.deepcopy(logit_score[1])], device="cpu")
    for hps in ("head", "logits", "none"):
        with pytest.raises(InputError, match="Gemma2ForCausalLM.*final_logit_softcapping"):
            CrossEncoder(model, hps=hps, show_progress=False).score_pairs(*unzip(FEW_PAIRS[:2]))
