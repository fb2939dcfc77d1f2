"""HPS scorers on tiny random-weight transformers models (CPU, seconds).

Exactness tests use batch_size=1 so the scorer and the reference see the same unpadded forward pass.
"""
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
import ranx  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from tokenizers import Tokenizer, models, pre_tokenizers, processors  # noqa: E402
from transformers import (  # noqa: E402
    BertConfig,
    BertForSequenceClassification,
    BertModel,
    PreTrainedTokenizerFast,
    Qwen2Config,
    Qwen2ForCausalLM,
)

from tieaware.hps import BiEncoder, CrossEncoder, YesNoReranker  # noqa: E402
from tieaware.hps._common import build_run, keep_top_k_with_ties  # noqa: E402

WORDS = "wing flow heat lift drag mach shock slab boundary layer jet plate cone".split()
PROMPT_WORDS = "query document relevant".split()
TEMPLATE = "query {query} document {document} relevant"
BERT = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
            max_position_embeddings=64, initializer_range=0.2)


def make_tokenizer(extra=("yes", "no")):
    vocab = {w: i for i, w in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", *WORDS, *PROMPT_WORDS, *extra])}
    backend = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    backend.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", 2), ("[SEP]", 3)])
    return PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="[UNK]", pad_token="[PAD]",
                                   cls_token="[CLS]", sep_token="[SEP]")


TOKENIZER = make_tokenizer()
VOCAB_SIZE = len(TOKENIZER.get_vocab())


def seeded(build):
    torch.manual_seed(0)
    return build().eval()


def bert_classifier(num_labels):
    config = BertConfig(vocab_size=VOCAB_SIZE, num_labels=num_labels, **BERT)
    return seeded(lambda: BertForSequenceClassification(config))


def bert_encoder():
    return seeded(lambda: BertModel(BertConfig(vocab_size=VOCAB_SIZE, **BERT)))


def save_with_tokenizer(model, folder):
    """Save a tiny model and TOKENIZER to folder, a loadable model folder; returns it as str."""
    model.save_pretrained(folder)
    TOKENIZER.save_pretrained(folder)
    return str(folder)


def qwen2_lm():
    config = Qwen2Config(vocab_size=VOCAB_SIZE, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
                         tie_word_embeddings=False)
    return seeded(lambda: Qwen2ForCausalLM(config))


RNG = np.random.default_rng(0)
 # ids of one width: ranx compiles its numba code once per doc-id string width
CORPUS = {f"d{i:02d}": " ".join(RNG.choice(WORDS, RNG.integers(2, 14))) for i in range(40)}
QUERIES = {f"q{i}": " ".join(RNG.choice(WORDS, 3)) for i in range(4)}
CANDIDATES = {qid: {docid: 0.0 for docid in CORPUS} for qid in QUERIES}
# exactness checks run pair by pair (batch_size=1): a smaller slice keeps them quick
FEW_QUERIES = dict(list(QUERIES.items())[:2])
FEW_DOCS = dict(list(CORPUS.items())[:10])
FEW_CANDIDATES = {qid: dict.fromkeys(FEW_DOCS, 0.0) for qid in FEW_QUERIES}


def scorer(kind, model=None, **kwargs):
    """kind: 'ce1' / 'ce2' (BERT cross-encoder, 1 or 2 labels), 'yesno' (Qwen2), 'bi' (BertModel)."""
    kwargs.setdefault("show_progress", False)
    if kind in ("ce1", "ce2"):
        return CrossEncoder(model or bert_classifier(int(kind[-1])), TOKENIZER, **kwargs)
    if kind == "yesno":
        return YesNoReranker(model or qwen2_lm(), TOKENIZER, template=TEMPLATE, **kwargs)
    return BiEncoder(model or bert_encoder(), TOKENIZER, **kwargs)


def score_arrays(run):
    return {qid: np.array(list(docs.values())) for qid, docs in run.to_dict().items()}


KINDS = ["ce1", "ce2", "yesno", "bi"]


@pytest.mark.parametrize("kind", KINDS)
def test_bf16_without_hps_puts_every_score_on_the_bf16_grid_and_ties(kind):
    run = scorer(kind, dtype="bf16", hps=False).rerank(QUERIES, CORPUS, CANDIDATES)
    scores = np.concatenate(list(score_arrays(run).values()))
    assert np.array_equal(torch.from_numpy(scores).bfloat16().double().numpy(), scores)
    assert any(len(np.unique(s)) < len(s) for s in score_arrays(run).values())


@pytest.mark.parametrize("kind", KINDS)
def test_hps_breaks_ties_that_bf16_scoring_creates(kind):
    def tied_docs(run):
        return sum(len(s) - len(np.unique(s)) for s in score_arrays(run).values())

    model = {"ce1": lambda: bert_classifier(1), "ce2": lambda: bert_classifier(2), "yesno": qwen2_lm,
             "bi": bert_encoder}[kind]()
    runs = scorer(kind, model, dtype="bf16").rerank_modes(QUERIES, CORPUS, CANDIDATES, ("none", "upcast", "head"))
    assert tied_docs(runs["upcast"]) < tied_docs(runs["none"])
    assert tied_docs(runs["head"]) == 0
    scores = np.concatenate(list(score_arrays(runs["upcast"]).values()))
    assert not np.array_equal(torch.from_numpy(scores).bfloat16().double().numpy(), scores)


def pair_inputs(query, doc):
    return TOKENIZER(query, doc, return_tensors="pt")


@pytest.mark.parametrize("num_labels", [1, 2])
def test_cross_encoder_hps_is_fp32_sigmoid_or_softmax_of_the_bf16_logits(num_labels):
    model = bert_classifier(num_labels)
    cross_encoder = scorer(f"ce{num_labels}", model, dtype="bf16", hps=True, batch_size=1)
    run = cross_encoder.rerank(FEW_QUERIES, FEW_DOCS, FEW_CANDIDATES)
    model = cross_encoder.model  # a bf16 copy: the caller's model stays fp32
    assert model.dtype == torch.bfloat16
    with torch.inference_mode():
        for qid, docs in run.to_dict().items():
            for docid, score in docs.items():
                logits = model(**pair_inputs(FEW_QUERIES[qid], FEW_DOCS[docid])).logits.float()
                expected = torch.sigmoid(logits[0, 0]) if num_labels == 1 else torch.softmax(logits, -1)[0, 1]
                assert score == expected.item()


def test_cross_encoder_head_mode_applies_the_classifier_in_fp32():
    cross_encoder = scorer("ce1", bert_classifier(1), dtype="bf16", hps="head", batch_size=1)
    run, model = cross_encoder.rerank(FEW_QUERIES, FEW_DOCS, FEW_CANDIDATES), cross_encoder.model
    weight, bias = model.classifier.weight.float(), model.classifier.bias.float()
    with torch.inference_mode():
        for qid, docs in run.to_dict().items():
            for docid, score in docs.items():
                pooled = model.bert(**pair_inputs(FEW_QUERIES[qid], FEW_DOCS[docid])).pooler_output
                assert pooled.dtype == torch.bfloat16
                assert score == torch.sigmoid(F.linear(pooled.float(), weight, bias))[0, 0].item()


def yes_no_inputs(query, doc):
    return TOKENIZER(TEMPLATE.format(query=query, document=doc), add_special_tokens=False, return_tensors="pt")


def test_yes_no_hps_is_the_float64_softmax_of_the_bf16_yes_no_logits():
    reranker = scorer("yesno", qwen2_lm(), dtype="bf16", hps=True, batch_size=1)
    run, model = reranker.rerank(FEW_QUERIES, FEW_DOCS, FEW_CANDIDATES), reranker.model
    no_yes = TOKENIZER.convert_tokens_to_ids(["no", "yes"])
    with torch.inference_mode():
        for qid, docs in run.to_dict().items():
            for docid, score in docs.items():
                inputs = yes_no_inputs(FEW_QUERIES[qid], FEW_DOCS[docid])
                logits = model(**inputs, logits_to_keep=1).logits[:, -1, no_yes]
                assert logits.dtype == torch.bfloat16
                assert score == pytest.approx(torch.log_softmax(logits.double(), -1)[0, 1].exp().item(), rel=1e-15)


def test_yes_no_head_mode_computes_the_two_lm_head_rows_in_fp32_and_the_softmax_in_float64():
    reranker = scorer("yesno", qwen2_lm(), dtype="bf16", hps="head", batch_size=1)
    run, model = reranker.rerank(FEW_QUERIES, FEW_DOCS, FEW_CANDIDATES), reranker.model
    rows = model.lm_head.weight[TOKENIZER.convert_tokens_to_ids(["no", "yes"])].float()
    with torch.inference_mode():
        for qid, docs in run.to_dict().items():
            for docid, score in docs.items():
                hidden = model.model(**yes_no_inputs(FEW_QUERIES[qid], FEW_DOCS[docid])).last_hidden_state[:, -1]
                logits = (hidden.float() @ rows.T).double()
                assert score == pytest.approx(torch.log_softmax(logits, -1)[0, 1].exp().item(), rel=1e-15)


def test_yes_no_left_padding_gives_the_unpadded_scores():
    one_by_one = scorer("yesno", qwen2_lm(), batch_size=1).rerank(FEW_QUERIES, FEW_DOCS, FEW_CANDIDATES)
    batched = scorer("yesno", qwen2_lm(), batch_size=16).rerank(FEW_QUERIES, FEW_DOCS, FEW_CANDIDATES)
    for qid, docs in one_by_one.to_dict().items():
        padded = batched.to_dict()[qid]
        np.testing.assert_allclose([padded[d] for d in docs], list(docs.values()), rtol=0, atol=1e-6)


def test_yes_no_truncates_the_document_only():
    reranker = scorer("yesno", max_length=12)
    [prompt] = reranker._prompts(["wing flow"], [" ".join(["heat"] * 50)])
    assert len(prompt) == 12
    tokens = TOKENIZER.convert_ids_to_tokens(prompt)
    assert tokens == ["query", "wing", "flow", "document"] + ["heat"] * 7 + ["relevant"]


def bi_embeddings(model, texts, pool_fp32):
    rows = []
    with torch.inference_mode():
        for text in texts:
            hidden = model(**TOKENIZER(text, return_tensors="pt")).last_hidden_state[0]
            hidden = hidden.float() if pool_fp32 else hidden
            rows.append((hidden.sum(0) / hidden.shape[0]).float())  # sentence-transformers' masked mean
    return F.normalize(torch.stack(rows), dim=-1)


@pytest.mark.parametrize("hps", [True, "head"])
def test_bi_encoder_hps_is_the_fp32_cosine_of_the_bf16_embeddings(hps):
    encoder = scorer("bi", bert_encoder(), dtype="bf16", hps=hps, batch_size=1)
    run, model = encoder.search(FEW_QUERIES, FEW_DOCS, k=len(FEW_DOCS)), encoder.model
    docids = list(FEW_DOCS)
    pool_fp32 = hps == "head"
    sims = bi_embeddings(model, FEW_QUERIES.values(), pool_fp32) @ bi_embeddings(model, FEW_DOCS.values(), pool_fp32).T
    for row, docs in enumerate(run.to_dict().values()):
        np.testing.assert_allclose([docs[d] for d in docids], sims[row].double().numpy(), rtol=0, atol=2e-7)


def test_bi_encoder_pooling_variants_and_dot_product():
    model = bert_encoder()
    texts = ["wing flow", "heat slab boundary layer"]
    with torch.inference_mode():
        hidden = model(**TOKENIZER(texts, padding=True, return_tensors="pt")).last_hidden_state
    expected = {"cls": hidden[:, 0], "last_token": torch.stack([hidden[0, 3], hidden[1, 5]])}
    for pooling, embeddings in expected.items():
        encoded = scorer("bi", model, pooling=pooling, normalize=False).encode(texts)
        torch.testing.assert_close(encoded, embeddings, rtol=0, atol=1e-6)
    normalized = scorer("bi", model, pooling="cls").encode(texts)
    torch.testing.assert_close(normalized.norm(dim=-1), torch.ones(2))


def test_bi_encoder_search_equals_rerank_of_the_whole_corpus_and_is_chunk_independent():
    encoder = scorer("bi")
    whole = encoder.search(QUERIES, CORPUS, k=len(CORPUS)).to_dict()
    chunked = encoder.search(QUERIES, CORPUS, k=len(CORPUS), chunk_scores=len(CORPUS)).to_dict()
    reranked = encoder.rerank(QUERIES, CORPUS, CANDIDATES).to_dict()
    for other in chunked, reranked:  # equal up to fp32 rounding (matmuls of other shapes)
        for qid, docs in whole.items():
            np.testing.assert_allclose([other[qid][d] for d in docs], list(docs.values()), rtol=0, atol=1e-6)


def test_search_keeps_every_doc_tied_with_the_kth():
    corpus = {f"x{i:02d}": "heat slab" for i in range(5)} | {f"y{i:02d}": f"mach {w}" for i, w in enumerate(WORDS)}
    query = {"q": "heat slab"}
    full = score_arrays(scorer("bi").search(query, corpus, k=len(corpus)))["q"]
    ordered = np.sort(full)[::-1]
    assert ordered[0] == ordered[4] > ordered[5]  # the five copies tie at the top
    run = scorer("bi").search(query, corpus, k=2).to_dict()["q"]
    assert sorted(run) == [f"x{i:02d}" for i in range(5)]


def test_keep_top_k_with_ties_and_build_run():
    scores = np.array([0.9, 0.5, 0.7, 0.7, 0.7, 0.1])
    assert sorted(keep_top_k_with_ties(scores, 2)) == [0, 2, 3, 4]
    assert sorted(keep_top_k_with_ties(scores, 5)) == [0, 1, 2, 3, 4]
    assert sorted(keep_top_k_with_ties(scores, None)) == list(range(6))
    run = build_run({"q": ([f"d{i:02d}" for i in range(6)], scores)}, name="t", k=2)
    assert isinstance(run, ranx.Run) and run.name == "t"
    assert run.to_dict() == {"q": {"d00": 0.9, "d02": 0.7, "d03": 0.7, "d04": 0.7}}
    with pytest.raises(ValueError, match=r"'q'.*'d01'"):
        build_run({"q": (["d00", "d01"], np.array([0.5, np.nan]))}, name="t")


def test_rerank_outputs_valid_ranx_runs_from_run_dict_or_trec_path(tmp_path):
    candidates = {qid: dict(list(docs.items())[:10]) for qid, docs in CANDIDATES.items()}
    path = tmp_path / "bm25.trec"
    path.write_text("".join(f"{q} Q0 {d} {r + 1} {10 - r} bm25\n"
                            for q, docs in candidates.items() for r, d in enumerate(docs)))
    cross_encoder = scorer("ce1", dtype="bf16", hps=True)
    from_dict = cross_encoder.rerank(QUERIES, CORPUS, candidates)
    assert cross_encoder.rerank(QUERIES, CORPUS, str(path)).to_dict() == from_dict.to_dict()
    assert cross_encoder.rerank(QUERIES, CORPUS, ranx.Run(candidates)).to_dict() == from_dict.to_dict()
    assert {q: set(d) for q, d in from_dict.to_dict().items()} == {q: set(d) for q, d in candidates.items()}
    qrels = ranx.Qrels({qid: {next(iter(docs)): 1} for qid, docs in candidates.items()})
    assert 0 <= ranx.evaluate(qrels, from_dict, "ndcg@10") <= 1
    from_dict.save(str(tmp_path / "out.trec"))
    assert ranx.Run.from_file(str(tmp_path / "out.trec")).to_dict() == from_dict.to_dict()


def test_rerank_cut_at_k_keeps_ties():
    run = scorer("ce1", dtype="bf16", hps=False).rerank(QUERIES, CORPUS, CANDIDATES, k=3, name="cut")
    full = scorer("ce1", dtype="bf16", hps=False).rerank(QUERIES, CORPUS, CANDIDATES)
    assert run.name == "cut"
    for qid, scores in score_arrays(full).items():
        third = np.sort(scores)[::-1][2]
        assert len(run.to_dict()[qid]) == np.sum(scores >= third) >= 3


def test_loading_from_a_local_path_casts_to_the_requested_dtype(tmp_path):
    model = bert_classifier(2)
    model.save_pretrained(tmp_path)
    TOKENIZER.save_pretrained(tmp_path)
    from_path = CrossEncoder(str(tmp_path), dtype="bf16", hps=True, show_progress=False)
    assert from_path.model.dtype == torch.bfloat16
    loaded = scorer("ce2", model, dtype=torch.bfloat16, hps=True)
    assert from_path.rerank(FEW_QUERIES, FEW_DOCS, FEW_CANDIDATES).to_dict() == \
        loaded.rerank(FEW_QUERIES, FEW_DOCS, FEW_CANDIDATES).to_dict()


@pytest.mark.parametrize("kwargs, error, message", [
    (dict(dtype="fp8"), ValueError, "unknown dtype 'fp8'"),
    (dict(dtype=torch.int8), ValueError, "unknown dtype"),
    (dict(hps="yes"), ValueError, "unknown hps mode 'yes'"),
    (dict(hps=None), ValueError, "unknown hps mode None"),
    (dict(batch_size=0), ValueError, "batch_size"),
])
def test_bad_arguments_name_the_culprit(kwargs, error, message):
    with pytest.raises(error, match=message):
        scorer("ce1", **kwargs)


def test_bad_inputs_name_the_culprit():
    cross_encoder = scorer("ce1")
    with pytest.raises(KeyError, match="candidate doc 'nope' of query 'q0' is not in the corpus"):
        cross_encoder.rerank(QUERIES, CORPUS, {"q0": {"d01": 1.0, "nope": 0.5}})
    with pytest.raises(ValueError, match="query 'q9' has an empty text"):
        cross_encoder.rerank({"q9": "  "}, CORPUS, {"q9": {"d01": 1.0}})
    with pytest.raises(KeyError, match="query 'q7' is not in queries"):
        cross_encoder.rerank(QUERIES, CORPUS, {"q7": {"d01": 1.0}})
    with pytest.raises(FileNotFoundError, match="missing.trec"):
        cross_encoder.rerank(QUERIES, CORPUS, "missing.trec")
    with pytest.raises(TypeError, match="candidates must be"):
        cross_encoder.rerank(QUERIES, CORPUS, 42)
    with pytest.raises(ValueError, match="query 'q9' has an empty text"):
        scorer("bi").search({"q9": ""}, CORPUS, k=5)
    with pytest.raises(ValueError, match="needs its tokenizer"):
        CrossEncoder(bert_classifier(1))


def test_a_head_that_does_not_fit_the_scorer_is_an_error():
    with pytest.raises(ValueError, match="3 labels: pass positive_index="):
        scorer("ce1", bert_classifier(3))
    assert scorer("ce1", bert_classifier(3), positive_index=2).positive_index == 2
    with pytest.raises(ValueError, match="positive_index=2 is out of range for 2 labels"):
        scorer("ce2", positive_index=2)
    with pytest.raises(ValueError, match="one logit"):
        scorer("ce1", positive_index=1)


def test_a_tokenizer_without_yes_no_tokens_is_an_error():
    with pytest.raises(ValueError, match="no token 'yes'"):
        YesNoReranker(qwen2_lm(), make_tokenizer(extra=()), template=TEMPLATE)
    with pytest.raises(ValueError, match="no token 'oui'"):
        YesNoReranker(qwen2_lm(), TOKENIZER, template=TEMPLATE, yes_token="oui")
    with pytest.raises(ValueError, match=r"\{document\}"):
        YesNoReranker(qwen2_lm(), TOKENIZER, template="query {query}")
    with pytest.raises(ValueError, match="unknown pooling 'max'"):
        scorer("bi", pooling="max")


BLOCK_TORCH = """
import importlib.abc, sys
class BlockTorch(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition('.')[0] == 'torch':
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, BlockTorch())
"""


def test_tieaware_imports_without_torch_and_tieaware_hps_says_how_to_install_it():
    code = BLOCK_TORCH + (
        "import tieaware\n"
        "assert 'torch' not in sys.modules\n"
        "try:\n"
        "    import tieaware.hps\n"
        "except ImportError as error:\n"
        "    print(error)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "tieaware.hps needs torch and transformers (torch is missing): pip install 'tieaware[hps]'" in result.stdout
