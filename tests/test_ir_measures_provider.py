"""Tie-aware measures inside ir_measures (`tieaware.integrations.ir_measures`) and PyTerrier's
``pt.Experiment``: the values ir_measures reports for E(M), Range(M), Bias(M), Min(M), Max(M) are
`tieaware.evaluate`'s, per query and on average, on the bundled Cranfield runs (bf16: heavy ties)."""
from __future__ import annotations

import math

import ir_measures
import pandas as pd
import pytest
from ir_measures import AP, RR, Judged, P, R, nDCG

import tieaware
from tieaware.datasets import cranfield
from tieaware.errors import InputError, InputTypeError, TieawareError, UnknownMetricError
from tieaware.integrations.ir_measures import Bias, E, Max, Min, Range

MEASURES = [nDCG@10, P@5, AP, RR, R@100, P(rel=2)@10, Judged@10, nDCG]
STATISTICS = {E: "expected", Range: "range", Bias: "bias", Min: "min", Max: "max"}


@pytest.fixture(scope="module")
def data():
    files = cranfield()
    return tieaware.read_trec_qrels(files.qrels), tieaware.read_trec_run(files.runs["bf16"])


def test_calc_aggregate_reports_what_evaluate_reports(data):
    qrels, run = data
    wrapped = [stat(m) for m in MEASURES for stat in STATISTICS]
    res = ir_measures.calc_aggregate([*MEASURES, *wrapped], qrels, run)
    report = tieaware.evaluate(qrels, run, MEASURES, oblivious="ir_measures")
    for m in MEASURES:
        for stat, column in STATISTICS.items():
            assert res[stat(m)] == pytest.approx(getattr(report[str(m)], column), abs=1e-12), (m, stat)
        # Bias is measured against ir_measures' own number: usual value = E + Bias
        assert res[m] == pytest.approx(res[E(m)] + res[Bias(m)], abs=1e-12), m
    assert any(res[Range(m)] > 0.01 for m in MEASURES)  # bf16 ties move these measures


def test_iter_calc_gives_evaluate_per_query_values(data):
    qrels, run = data
    wrapped = [E(nDCG@10), Range(AP), Bias(RR)]
    got = {(str(m.measure), m.query_id): m.value for m in ir_measures.iter_calc(wrapped, qrels, run)}
    assert len(got) == 3 * len(qrels)
    for measure in wrapped:
        frame = tieaware.evaluate(qrels, run, measure.params["measure"], oblivious="ir_measures").per_query
        for query_id, value in frame[measure.STATISTIC].items():
            assert got[str(measure), query_id] == pytest.approx(value, abs=1e-12)


def test_bias_against_trec_eval_and_names(data):
    qrels, run = data
    measure = Bias(nDCG@10, oblivious="trec_eval")
    assert str(measure) == "Bias(nDCG@10,oblivious='trec_eval')" and str(E(P(rel=2)@5)) == "E(P(rel=2)@5)"
    got = measure.calc_aggregate(qrels, run)
    assert got == pytest.approx(tieaware.evaluate(qrels, run, "ndcg_cut_10").bias, abs=1e-12)


def test_tie_free_run_has_no_range_and_no_bias():
    files = cranfield()
    qrels, run = tieaware.read_trec_qrels(files.qrels), tieaware.read_trec_run(files.runs["fp32"])
    qrels = {q: d for q, d in list(qrels.items())[:40]}
    res = ir_measures.calc_aggregate([nDCG@10, E(nDCG@10), Range(nDCG@10), Bias(nDCG@10)], qrels, run)
    assert res[E(nDCG@10)] == pytest.approx(res[nDCG@10], abs=1e-12) and res[nDCG@10] > 0.1
    assert res[Range(nDCG@10)] == 0 and res[Bias(nDCG@10)] == pytest.approx(0, abs=1e-12)


def test_queries_follow_ir_measures_missing_scores_zero_extra_ignored():
    qrels = [ir_measures.Qrel("q1", "d1", 1), ir_measures.Qrel("q2", "d1", 1)]
    run = (ir_measures.ScoredDoc(q, d, s) for q, d, s in [("q1", "d1", 1.0), ("q1", "d2", 1.0), ("q3", "d1", 1.0)])
    got = {m.query_id: m.value for m in ir_measures.iter_calc([Max(RR)], qrels, run)}
    assert got == {"q1": 1.0, "q2": 0.0}


def test_bad_wrappers_are_tieaware_errors_and_builtins():
    with pytest.raises(InputTypeError, match="wraps an ir_measures measure") as info:
        E(10)
    assert isinstance(info.value, TieawareError) and isinstance(info.value, TypeError)
    with pytest.raises(InputError, match="oblivious must be one of") as info:
        Bias(nDCG@10, oblivious="pyserini")
    assert isinstance(info.value, ValueError)
    with pytest.raises(UnknownMetricError) as info:
        Range(ir_measures.infAP)
    assert isinstance(info.value, TieawareError) and isinstance(info.value, ValueError)


def test_pyterrier_experiment_reports_tie_aware_columns(data):
    import pyterrier as pt  # the dev extra's python-terrier; no Java needed (no index is touched)

    qrels, run = data
    results = pd.DataFrame([(q, d, s) for q, docs in run.items() for d, s in docs.items()],
                           columns=["qid", "docno", "score"])
    topics = pd.DataFrame({"qid": list(qrels), "query": "unused"})
    qrels_frame = pd.DataFrame([(q, d, g) for q, docs in qrels.items() for d, g in docs.items()],
                               columns=["qid", "docno", "label"])
    system = pt.Transformer.from_df(results)
    table = pt.Experiment([system], topics, qrels_frame, [nDCG@10, E(nDCG@10), Range(nDCG@10), Bias(nDCG@10)],
                          names=["bf16"])
    row = table.set_index("name").loc["bf16"]
    expected = tieaware.evaluate(qrels, run, "nDCG@10", oblivious="ir_measures")
    assert row["E(nDCG@10)"] == pytest.approx(expected.expected, abs=1e-12)
    assert row["Range(nDCG@10)"] == pytest.approx(expected.range, abs=1e-12)
    assert row["Bias(nDCG@10)"] == pytest.approx(expected.bias, abs=1e-12)
    assert row["nDCG@10"] == pytest.approx(expected.oblivious, abs=1e-12)
    assert not math.isclose(row["nDCG@10"], row["E(nDCG@10)"], abs_tol=1e-6)
