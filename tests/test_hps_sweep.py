"""tieaware.hps.sweep on tiny random-weight models: one row per regime and metric, plus the census."""
import re

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
from test_hps_scorers import CANDIDATES, CORPUS, QUERIES, TOKENIZER, bert_classifier, bert_encoder  # noqa: E402

from tieaware.hps import BiEncoder, CrossEncoder, sweep  # noqa: E402
from tieaware.hps.sweep import parse_regime  # noqa: E402

QRELS = {qid: {docid: 1 + i % 2 for i, docid in enumerate(CORPUS) if (i + int(qid[1:])) % 3 == 0} for qid in QUERIES}
METRICS = ["ndcg@10", "mrr@10"]


@pytest.fixture(scope="module")
def bi_sweep():
    model = bert_encoder()
    result = sweep(BiEncoder, model, QUERIES, CORPUS, QRELS, tokenizer=TOKENIZER, k=20, metrics=METRICS,
                   census_ks=(5, 10), device="cpu", show_progress=False)
    return model, result


def test_sweep_reports_every_regime_and_metric(bi_sweep):
    model, result = bi_sweep
    regimes = ["fp32", "bf16", "bf16+hps", "bf16+hps_head"]  # the CPU default: no fp16
    assert list(result.metrics.index) == [(r, m) for r in regimes for m in METRICS]
    assert list(result.metrics.columns) == ["fp32", "obl", "expected", "range", "bias"]
    assert list(result.runs) == regimes and set(result.seconds) == {"fp32", "bf16"}
    assert model.dtype == torch.float32  # the caller's model was copied, not cast
    table = result.metrics
    for metric in METRICS:
        assert (table.xs(metric, level="metric")["fp32"] == table.loc[("fp32", metric), "expected"]).all()
    np.testing.assert_allclose(table["bias"], table["obl"] - table["expected"], atol=1e-12)
    assert "bf16+hps_head" in str(result) and "unique_scores" in str(result)


def test_sweep_shows_bf16_ties_and_hps_removing_them(bi_sweep):
    _, result = bi_sweep
    ranges = result.metrics["range"].groupby(level="regime").sum()
    assert ranges["fp32"] == 0 and ranges["bf16+hps_head"] == 0
    assert ranges["bf16"] > ranges["bf16+hps"]
    unique = result.census["unique_scores"]
    assert unique[("bf16", 10)] < unique[("bf16+hps", 10)] <= unique[("fp32", 10)] == 10


def test_sweep_reranks_candidates_with_a_cross_encoder(tmp_path):
    model = bert_classifier(1)
    model.save_pretrained(tmp_path)
    TOKENIZER.save_pretrained(tmp_path)
    result = sweep(CrossEncoder, str(tmp_path), QUERIES, CORPUS, QRELS, candidates=CANDIDATES, k=None,
                   metrics="ndcg@10", regimes=["bf16", "bf16+hps_head"], census_ks=(10,), show_progress=False)
    assert list(result.runs) == ["fp32", "bf16", "bf16+hps_head"]  # the fp32 reference is always added
    assert all(len(docs) == len(CORPUS) for docs in result.runs["bf16"].to_dict().values())
    assert result.metrics.loc[("bf16", "ndcg@10"), "range"] > result.metrics.loc[("bf16+hps_head", "ndcg@10"), "range"]


def test_regime_names():
    assert parse_regime("bf16") == (torch.bfloat16, "none")
    assert parse_regime("fp16+hps") == (torch.float16, "upcast")
    assert parse_regime("bf16+hps_head") == (torch.bfloat16, "head")
    assert parse_regime("bf16+logits") == (torch.bfloat16, "upcast") and parse_regime("bf16+head")[1] == "head"
    with pytest.raises(ValueError, match=re.escape("unknown regime 'bf16+fast'")):
        parse_regime("bf16+fast")
    with pytest.raises(ValueError, match="unknown dtype 'int4'"):
        parse_regime("int4")


def test_sweep_reports_the_grade_rerankers_modes():
    from test_hps_grade import CANDIDATES as GRADE_CANDIDATES
    from test_hps_grade import FEW_DOCS, FEW_QUERIES, TEMPLATE, grade_lm
    from test_hps_grade import TOKENIZER as GRADE_TOKENIZER

    from tieaware.hps import GradeReranker

    qrels = {qid: docs for qid, docs in QRELS.items() if qid in FEW_QUERIES}
    model = grade_lm(offset=30.0)
    result = sweep(GradeReranker, model, FEW_QUERIES, FEW_DOCS, qrels, tokenizer=GRADE_TOKENIZER,
                   candidates=GRADE_CANDIDATES, k=None, metrics="ndcg@10", census_ks=(10,), show_progress=False,
                   template=TEMPLATE, score="expected")
    assert list(result.runs) == ["fp32", "bf16", "bf16+hps", "bf16+hps_head"]
    unique = result.census["unique_scores"]
    assert unique[("bf16", 10)] < unique[("bf16+hps_head", 10)] == unique[("fp32", 10)] == 10
    assert result.runs["bf16+hps_head"].metadata["score"] == "expected"
    assert result.metrics.loc[("bf16+hps_head", "ndcg@10"), "range"] == 0
