"""E, Var, min, max and the oblivious value equal brute-force enumeration of
every ordering of tied documents, scored by the independent reference."""
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference import brute_force, input_order, ir_measures_order, point_metric, trec_eval_order

import tieaware
from tieaware.metrics import parse_metric

METRICS = [
    "hits@3", "hit_rate@2", "precision@3", "precision@10", "recall@2", "f1@3", "r-precision", "mrr", "mrr@2",
    "map", "map@3", "ndcg@3", "ndcg@10", "ndcg", "ndcg_burges@3", "dcg@4", "dcg_burges", "bpref", "rbp.8",
    "precision@3-l2", "map-l2", "ndcg@3-l2", "bpref-l2", "P.2", "ndcg_cut.3", "recip_rank", "Rprec",
    "success.1", "map_cut.2", "nDCG@2", "RBP(p=0.5)", "RBP(rel=2,p=0.7)", "P(rel=2)@3", "R@3", "AP@4", "RR@3",
    "hits", "precision", "f1", "Judged@3", "Judged@10", "set_P", "set_recall", "set_F", "set_map", "set_relative_P",
    "SetP", "SetR(rel=2)", "ERR@1", "ERR@3", "ERR@10", "rbp", "rbp.p=0.5", "nDCG(dcg='exp-log2')@3",
    "nDCG(gains={1:3,2:0,3:1})@3", "nDCG(gains={0:2,1:0})", "nDCG(gains={-1:4,3:0.5})@10",
    "num_q", "num_ret", "num_rel", "num_rel_ret", "num_ret.2", "num_rel_ret.3", "NumRet(rel=2)", "NumRel(rel=2)",
]

GRADES = st.sampled_from([None, None, -1, 0, 1, 2, 3])


@st.composite
def query(draw):
    n = draw(st.integers(1, 7))
    docs = [f"d{i}" for i in range(n)]
    draw(st.randoms()).shuffle(docs)
    scores = {d: float(draw(st.integers(0, 3))) for d in docs}
    judgments = {d: g for d in docs if (g := draw(GRADES)) is not None}
    for i in range(draw(st.integers(0, 3))):  # judged but never retrieved
        judgments[f"u{i}"] = draw(st.sampled_from([0, 1, 2, 3]))
    return scores, judgments


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(query())
def test_matches_brute_force(q):
    scores, judgments = q
    qrels, run = {"q": judgments}, {"q": scores}
    report = tieaware.evaluate(qrels, run, METRICS, make_comparable=True)
    report_input = tieaware.evaluate(qrels, run, METRICS, make_comparable=True, oblivious="input")
    report_irm = tieaware.evaluate(qrels, run, METRICS, make_comparable=True, oblivious="ir_measures")
    for name in METRICS:
        spec = parse_metric(name)
        mean, var, low, high = brute_force(spec, scores, judgments)
        res = report[name]
        row = res.per_query.loc["q"]
        assert row["expected"] == pytest.approx(mean, abs=1e-9), name
        assert row["variance"] == pytest.approx(var, abs=1e-9), name
        assert row["min"] == pytest.approx(low, abs=1e-12), name
        assert row["max"] == pytest.approx(high, abs=1e-12), name
        assert low - 1e-12 <= row["expected"] <= high + 1e-12
        trec_eval_value = point_metric(spec, trec_eval_order(scores), judgments)
        assert row["oblivious"] == pytest.approx(trec_eval_value, abs=1e-12), name
        input_value = point_metric(spec, input_order(scores), judgments)
        assert report_input[name].oblivious == pytest.approx(input_value, abs=1e-12)
        irm_value = point_metric(spec, ir_measures_order(spec, scores), judgments)
        assert report_irm[name].oblivious == pytest.approx(irm_value, abs=1e-12), name
        assert res.tie_std == pytest.approx(math.sqrt(var), abs=1e-6)


@st.composite
def big_tied_query(draw):
    """Large groups (up to hundreds of documents): closed forms must stay exact and stable."""
    g = draw(st.integers(2, 400))
    r = draw(st.integers(1, g))
    above = draw(st.integers(0, 30))
    return g, r, above


@settings(max_examples=40, deadline=None)
@given(big_tied_query())
def test_single_big_group_matches_combinatorics(case):
    """One tied group of g docs, r relevant, below `above` non-relevant docs: E[P@k],
    E[RR] and E[recall@k] from hypergeometric / negative-hypergeometric laws."""
    g, r, above = case
    run = {"q": {**{f"a{i}": 2.0 for i in range(above)}, **{f"t{i}": 1.0 for i in range(g)}}}
    qrels = {"q": {f"t{i}": 1 for i in range(r)}}
    k = above + max(1, g // 3)
    rep = tieaware.evaluate(qrels, run, [f"precision@{k}", "mrr", f"hits@{k}"])
    t = k - above
    assert rep[f"hits@{k}"].expected == pytest.approx(t * r / g)
    hyper_var = t * (r / g) * (1 - r / g) * (g - t) / (g - 1)
    assert rep[f"hits@{k}"].tie_std ** 2 == pytest.approx(hyper_var, rel=1e-9, abs=1e-12)
    # first relevant position u (0-based) in the group: P(u) = C(g-u-1, r-1)/C(g, r)
    e_rr = sum(math.comb(g - u - 1, r - 1) / math.comb(g, r) / (above + u + 1) for u in range(g - r + 1))
    assert rep["mrr"].expected == pytest.approx(e_rr, rel=1e-9)
    assert rep["mrr"].max == pytest.approx(1 / (above + 1))
    assert rep["mrr"].min == pytest.approx(1 / (above + g - r + 1))
