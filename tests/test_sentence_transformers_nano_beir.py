"""Tie-aware NanoBEIR evaluators beside sentence-transformers' own, on local datasets laid out as the hub's
NanoBEIR ones (corpus / queries / qrels / bm25 subsets, a split per dataset; no hub) and tiny random models."""
import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")
st = pytest.importorskip("sentence_transformers")
pytest.importorskip("datasets")
from sentence_transformers.cross_encoder.evaluation import CrossEncoderNanoBEIREvaluator  # noqa: E402
from sentence_transformers.sentence_transformer.evaluation import NanoBEIREvaluator  # noqa: E402
from test_hps_scorers import WORDS, bert_classifier, bert_encoder, save_with_tokenizer  # noqa: E402
from test_sentence_transformers_evaluators import exact_cosine  # noqa: E402

from tieaware.errors import InputError  # noqa: E402
from tieaware.integrations.sentence_transformers import (  # noqa: E402
    STATISTICS,
    TieAwareCrossEncoderNanoBEIREvaluator,
    TieAwareInformationRetrievalEvaluator,
    TieAwareNanoBEIREvaluator,
)

pytestmark = pytest.mark.hps
SPLITS = {"scifact": "NanoSciFact", "nfcorpus": "NanoNFCorpus"}
SUBSETS = ("corpus", "queries", "qrels", "bm25")


def write_nano_beir(folder):
    """Per dataset, 30 documents from 9 texts (duplicates tie under any model), 6 queries with 1-3
    relevant documents and a 12-document BM25 list; README.md declares the subsets and splits as the
    hub's sentence-transformers/NanoBEIR-en does."""
    rng = np.random.default_rng(0)
    configs = []
    for subset in SUBSETS:
        files = "\n".join(f"  - split: {split}\n    path: {subset}/{split}.jsonl" for split in SPLITS.values())
        configs.append(f"- config_name: {subset}\n  data_files:\n{files}")
        (folder / subset).mkdir()
    (folder / "README.md").write_text("---\nconfigs:\n" + "\n".join(configs) + "\n---\n")
    for split in SPLITS.values():
        texts = [" ".join(rng.choice(WORDS, 4)) for _ in range(9)]
        corpus = [{"_id": f"{split}-d{i:02d}", "text": texts[i % 9]} for i in range(30)]
        queries = [{"_id": f"{split}-q{i}", "text": " ".join(rng.choice(WORDS, 3))} for i in range(6)]
        qrels = [{"query-id": q["_id"], "corpus-id": d}
                 for q in queries for d in rng.choice([c["_id"] for c in corpus], rng.integers(1, 4), replace=False)]
        bm25 = [{"query-id": q["_id"], "corpus-ids": list(rng.choice([c["_id"] for c in corpus], 12, replace=False))}
                for q in queries]
        for subset, rows in zip(SUBSETS, (corpus, queries, qrels, bm25)):
            (folder / subset / f"{split}.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    return str(folder)


@pytest.fixture(scope="module")
def nano_beir(tmp_path_factory):
    return write_nano_beir(tmp_path_factory.mktemp("NanoBEIR-en"))


@pytest.fixture(scope="module")
def encoder(tmp_path_factory):
    return st.SentenceTransformer(save_with_tokenizer(bert_encoder(), tmp_path_factory.mktemp("bi")), device="cpu")


@pytest.fixture(scope="module")
def reranker(tmp_path_factory):
    return st.CrossEncoder(save_with_tokenizer(bert_classifier(1), tmp_path_factory.mktemp("ce")), device="cpu")


def check_aggregate(ours, prefix, datasets, metrics):
    """The mean over datasets of every statistic; tie_std the standard deviation of that mean."""
    for metric in metrics:
        for stat in STATISTICS:
            values = np.array([ours[f"{dataset}_{metric}_{stat}"] for dataset in datasets])
            expected = np.sqrt((values ** 2).sum()) / len(values) if stat == "tie_std" else values.mean()
            assert ours[f"{prefix}_{metric}_{stat}"] == pytest.approx(expected, abs=1e-12), (metric, stat)
        assert ours[f"{prefix}_{metric}_min"] <= ours[f"{prefix}_{metric}_expected"] <= ours[f"{prefix}_{metric}_max"]


def test_nano_beir_reports_sentence_transformers_values_and_tie_statistics(nano_beir, encoder, tmp_path):
    args = dict(dataset_names=list(SPLITS), dataset_id=nano_beir, score_functions={"cosine": exact_cosine},
                ndcg_at_k=[3, 10], map_at_k=[10])
    theirs = NanoBEIREvaluator(**args)(encoder)
    evaluator = TieAwareNanoBEIREvaluator(**args)
    ours = evaluator(encoder, output_path=str(tmp_path))
    assert evaluator.primary_metric == "NanoBEIR_mean_cosine_ndcg@10_expected"
    assert set(ours) == {f"{key}_{stat}" for key in theirs for stat in STATISTICS}
    for key, value in theirs.items():
        assert ours[f"{key}_reported"] == pytest.approx(value, abs=1e-12), key
    metrics = {key.split("_", 2)[2] for key in theirs if key.startswith("NanoBEIR_mean_")}
    check_aggregate(ours, "NanoBEIR_mean", SPLITS.values(), metrics)
    assert ours["NanoBEIR_mean_cosine_ndcg@10_range"] > 0  # the duplicate texts tie
    # each dataset's numbers are those of the tie-aware IR evaluator on that dataset alone
    single = evaluator.evaluators[0]
    assert isinstance(single, TieAwareInformationRetrievalEvaluator) and single.name == "NanoSciFact"
    alone = TieAwareInformationRetrievalEvaluator(dict(zip(single.queries_ids, single.queries)),
                                                  dict(zip(single.corpus_ids, single.corpus)), single.relevant_docs,
                                                  name="NanoSciFact", score_functions={"cosine": exact_cosine},
                                                  ndcg_at_k=[3, 10], map_at_k=[10])(encoder)
    for key, value in alone.items():
        assert ours[key] == pytest.approx(value, abs=1e-12), key
    assert (tmp_path / "TieAware-NanoBEIR_evaluation_mean_results.csv").is_file()


def test_cross_encoder_nano_beir_reports_sentence_transformers_values_and_tie_statistics(nano_beir, reranker):
    args = dict(dataset_names=list(SPLITS), dataset_id=nano_beir, rerank_k=10, at_k=5)

    def bf16_predict(model, queries, docs):  # on bf16's grid, as a bf16 model's scores are
        return torch.from_numpy(model.predict(list(zip(queries, docs)))).bfloat16().double().numpy()

    theirs = CrossEncoderNanoBEIREvaluator(**args)(reranker)
    evaluator = TieAwareCrossEncoderNanoBEIREvaluator(**args)
    ours = evaluator(reranker)
    assert evaluator.primary_metric == "NanoBEIR_R10_mean_ndcg@5_expected"
    for key, value in theirs.items():
        if "_base_" in key:  # the documents' BM25 order, passed through
            assert ours[key] == pytest.approx(value, abs=1e-12), key
        else:
            assert ours[f"{key}_reported"] == pytest.approx(value, abs=1e-12), key
    check_aggregate(ours, "NanoBEIR_R10_mean", [f"{split}_R10" for split in SPLITS.values()],
                    ["map", "mrr@5", "ndcg@5"])
    rounded = TieAwareCrossEncoderNanoBEIREvaluator(**args, score_pairs=bf16_predict)(reranker)
    assert rounded["NanoBEIR_R10_mean_ndcg@5_range"] > 0
    assert rounded["NanoBEIR_R10_mean_ndcg@5_tie_std"] > 0


def test_nano_beir_evaluators_refuse_an_aggregate_other_than_the_mean(nano_beir):
    with pytest.raises(InputError, match="mean"):
        TieAwareNanoBEIREvaluator(list(SPLITS), dataset_id=nano_beir, aggregate_fn=np.median)
    with pytest.raises(InputError, match="mean"):
        TieAwareCrossEncoderNanoBEIREvaluator(list(SPLITS), dataset_id=nano_beir, aggregate_fn=np.median)
