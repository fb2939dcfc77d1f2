"""Agreement with pytrec_eval (trec_eval's order) and ranx (ranx's order) on real
files, and with the reference values shipped beside the Cranfield runs."""
import gzip
import json

import numpy as np
import pytest
import pytrec_eval
import ranx
from conftest import DATA

import tieaware
from tieaware.datasets import cranfield

CRANFIELD = cranfield()
TE, IRM, RANX = DATA / "trec_eval", DATA / "ir_measures", DATA / "ranx"

# (our name, pytrec_eval measure, key in pytrec_eval's output)
TREC_MEASURES = [
    ("P.5", "P.5", "P_5"), ("P.10", "P.10", "P_10"), ("P.1000", "P.1000", "P_1000"),
    ("recall.10", "recall.10", "recall_10"), ("recall.1000", "recall.1000", "recall_1000"),
    ("ndcg_cut.10", "ndcg_cut.10", "ndcg_cut_10"), ("ndcg_cut.100", "ndcg_cut.100", "ndcg_cut_100"),
    ("ndcg", "ndcg", "ndcg"), ("map", "map", "map"), ("map_cut.100", "map_cut.100", "map_cut_100"),
    ("recip_rank", "recip_rank", "recip_rank"), ("Rprec", "Rprec", "Rprec"), ("bpref", "bpref", "bpref"),
    ("success.1", "success.1", "success_1"), ("success.10", "success.10", "success_10"),
    ("set_P", "set_P", "set_P"), ("set_recall", "set_recall", "set_recall"), ("set_F", "set_F", "set_F"),
    ("set_map", "set_map", "set_map"), ("set_relative_P", "set_relative_P", "set_relative_P"),
    ("num_q", "num_q", "num_q"), ("num_ret", "num_ret", "num_ret"), ("num_rel", "num_rel", "num_rel"),
    ("num_rel_ret", "num_rel_ret", "num_rel_ret"),
]

TREC_FILES = [  # (qrels, run, relevance level)
    (TE / "qrels.test.gz", TE / "results.test.gz", 1),
    (TE / "qrels.rel_level.gz", TE / "results.test.gz", 2),
    (TE / "qrels.rel_level.gz", TE / "results.test.gz", 1),
    (TE / "qrels.test.gz", TE / "results.trunc.six", 1),
    (TE / "qrels-302.test", TE / "results-302.test", 1),
    (IRM / "compat.qrels", IRM / "compat.run.gz", 1),
    (IRM / "compat.qrels", IRM / "compat.run.gz", 3),
    (IRM / "cwl.qrels", IRM / "cwl.run", 1),
    (RANX / "qrels.trec", RANX / "run.trec", 1),
    (CRANFIELD.qrels, CRANFIELD.runs["bf16"], 1),
    (CRANFIELD.qrels, CRANFIELD.runs["fp32"], 2),
]


def _ids(files) -> list:
    """Readable test ids: 'trec_eval/qrels.test.gz-results.test.gz-1'."""
    return ["-".join([f"{q.parent.name}/{q.name}", r.name, *map(str, rest)]) for q, r, *rest in files]


def _pytrec(qrels, run, level):
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {m for _, m, _ in TREC_MEASURES}, relevance_level=level)
    return evaluator.evaluate(run)


def _tie_free(run):
    """The same run with trec_eval's order made explicit: distinct, float32-exact scores."""
    out = {}
    for qid, docs in run.items():
        order = sorted(sorted(docs, reverse=True), key=lambda d: -docs[d])
        out[qid] = {d: float(len(order) - i) for i, d in enumerate(order)}
    return out


@pytest.mark.parametrize("qrels_path,run_path,level", TREC_FILES, ids=_ids(TREC_FILES))
def test_oblivious_equals_pytrec_eval(qrels_path, run_path, level):
    qrels = tieaware.read_trec_qrels(qrels_path)
    run = tieaware.read_trec_run(run_path)
    expected = _pytrec(qrels, run, level)
    report = tieaware.evaluate(qrels, run, [m for m, _, _ in TREC_MEASURES], make_comparable=True,
                               relevance_level=level)
    assert expected, "pytrec_eval evaluated no query"
    for name, _, key in TREC_MEASURES:
        ours = report[name].per_query["oblivious"]
        for qid, values in expected.items():
            assert ours[qid] == pytest.approx(values[key], abs=1e-12), (name, qid)


@pytest.mark.parametrize("qrels_path,run_path,level", TREC_FILES, ids=_ids(TREC_FILES))
def test_tie_free_all_statistics_equal_pytrec_eval(qrels_path, run_path, level):
    qrels = tieaware.read_trec_qrels(qrels_path)
    run = _tie_free(tieaware.read_trec_run(run_path))
    expected = _pytrec(qrels, run, level)
    report = tieaware.evaluate(qrels, run, [m for m, _, _ in TREC_MEASURES], make_comparable=True,
                               relevance_level=level)
    for name, _, key in TREC_MEASURES:
        frame = report[name].per_query
        for qid, values in expected.items():
            row = frame.loc[qid]
            for column in ("expected", "min", "max", "oblivious"):
                assert row[column] == pytest.approx(values[key], abs=1e-12), (name, qid, column)
            assert row["variance"] == pytest.approx(0.0, abs=1e-15)


RANX_METRICS = ["ndcg@10", "ndcg@100", "ndcg_burges@10", "dcg@10", "dcg_burges@5", "precision@10",
                "recall@100", "f1@10", "hits@10", "hit_rate@5", "r-precision", "mrr", "mrr@10", "map", "map@100",
                "bpref", "rbp.8", "ndcg@10-l2", "map@100-l3", "precision@10-l2"]


RANX_FILES = [
    (CRANFIELD.qrels, CRANFIELD.runs["bf16"]),
    (CRANFIELD.qrels, CRANFIELD.runs["fp32"]),
    (TE / "qrels.test.gz", TE / "results.test.gz"),
]


@pytest.mark.parametrize("qrels_path,run_path", RANX_FILES, ids=_ids(RANX_FILES))
@pytest.mark.parametrize("as_objects", [True, False], ids=["Run", "dict"])
def test_oblivious_ranx_equals_ranx(qrels_path, run_path, as_objects):
    qrels_dict = tieaware.read_trec_qrels(qrels_path)
    run_dict = tieaware.read_trec_run(run_path)
    qrels_dict = {q: qrels_dict[q] for q in run_dict}  # ranx pairs dict queries by position
    # ranx divides by min(N, R) = 0 in bpref when no judged non-relevant exist (Cranfield); trec_eval gives 1
    metrics = [m for m in RANX_METRICS if m != "bpref" or qrels_path != CRANFIELD.qrels]
    if as_objects:
        qrels, run = ranx.Qrels(qrels_dict), ranx.Run(run_dict)
    else:
        qrels, run = qrels_dict, run_dict
    ours = tieaware.evaluate(qrels, run, metrics, oblivious="ranx")
    theirs = ranx.evaluate(qrels, run, metrics, return_mean=False, save_results_in_run=False)
    for name in metrics:
        np.testing.assert_allclose(ours[name].per_query["oblivious"].to_numpy(), theirs[name], rtol=0,
                                   atol=1e-12, err_msg=name)


def test_ranx_object_and_dict_orders_differ_and_both_are_reproduced():
    """ranx breaks ties in opposite directions for a Run and a dict of the same data."""
    qrels = tieaware.read_trec_qrels(CRANFIELD.qrels)
    run = tieaware.read_trec_run(CRANFIELD.runs["bf16"])
    qrels = {q: qrels[q] for q in run}
    from_dict = ranx.evaluate(qrels, run, "ndcg@10")
    from_run = ranx.evaluate(ranx.Qrels(qrels), ranx.Run(run), "ndcg@10")
    assert from_dict != pytest.approx(from_run, abs=1e-6)
    assert tieaware.evaluate(qrels, run, "ndcg@10", oblivious="ranx").oblivious == pytest.approx(from_dict, abs=1e-12)
    assert tieaware.evaluate(ranx.Qrels(qrels), ranx.Run(run), "ndcg@10",
                             oblivious="ranx").oblivious == pytest.approx(from_run, abs=1e-12)


@pytest.mark.parametrize("tag", ["bf16", "bf16-upcast", "fp32"])
def test_cranfield_reference_values(tag):
    with gzip.open(CRANFIELD.reference_values, "rt", encoding="utf-8") as handle:
        reference = json.load(handle)["runs"][f"minilm-{tag}"]
    report = tieaware.evaluate(CRANFIELD.qrels, CRANFIELD.runs[tag], ["ndcg_cut_10", "P_10", "recip_rank"])
    for name in ("ndcg_cut_10", "P_10", "recip_rank"):
        frame = report[name].per_query
        for qid, values in reference["per_query_tie_expected"].items():
            assert frame.loc[qid, "expected"] == pytest.approx(values[name], abs=1e-9), (name, qid)
        for qid, values in reference["per_query_trec_eval"].items():
            if name in values:
                assert frame.loc[qid, "oblivious"] == pytest.approx(values[name], abs=1e-9), (name, qid)
        assert report[name].expected == pytest.approx(reference["tie_expected_mean"][name], abs=1e-9)


def test_bf16_run_has_real_spread():
    res = tieaware.evaluate(CRANFIELD.qrels, CRANFIELD.runs["bf16"], "ndcg@10")
    assert res.range > 0.005 and res.n_queries_with_ties > 50
    fp32 = tieaware.evaluate(CRANFIELD.qrels, CRANFIELD.runs["fp32"], "ndcg@10")
    assert fp32.range < res.range / 10


# {rel}: "(rel=N)" for a relevance level other than 1
IR_MEASURES_NAMES = ["RR{rel}@10", "RR{rel}@3", "RR{rel}", "Judged@10", "Judged@5", "nDCG@10", "P{rel}@5", "AP{rel}",
                     "R@100", "Success{rel}@3"]


@pytest.mark.parametrize("qrels_path,run_path,level", TREC_FILES[-3:], ids=_ids(TREC_FILES[-3:]))
def test_oblivious_ir_measures_equals_ir_measures(qrels_path, run_path, level):
    """`oblivious="ir_measures"` reproduces ir_measures' default pipeline query by query, ties
    included: trec_eval's order for pytrec_eval's measures, doc id ascending for RR@k and Judged@k."""
    ir_measures = pytest.importorskip("ir_measures")
    qrels = tieaware.read_trec_qrels(qrels_path)
    run = tieaware.read_trec_run(run_path)
    names = [n.format(rel=f"(rel={level})" if level != 1 else "") for n in IR_MEASURES_NAMES]
    measures = [ir_measures.parse_measure(n) for n in names]
    theirs: dict = {}
    for row in ir_measures.iter_calc(measures, qrels, run):
        theirs.setdefault(str(row.measure), {})[row.query_id] = row.value
    report = tieaware.evaluate(qrels, run, names, make_comparable=True, oblivious="ir_measures")
    differs_from_trec_eval = False
    trec_order = tieaware.evaluate(qrels, run, names, make_comparable=True)
    for name, measure in zip(names, measures):
        ours = report[name].per_query["oblivious"]
        assert theirs[str(measure)], name
        for qid, value in theirs[str(measure)].items():
            assert ours[qid] == pytest.approx(value, abs=1e-6), (name, qid)
        differs_from_trec_eval |= not np.allclose(ours, trec_order[name].per_query["oblivious"])
    if run_path == CRANFIELD.runs["bf16"]:
        assert differs_from_trec_eval, "the bf16 run has ties where RR@k's order matters"


# gdeval (ir_measures' ERR@k) takes numeric topic ids and grades up to 4
GDEVAL_FILES = [TREC_FILES[1], TREC_FILES[4], TREC_FILES[-2], TREC_FILES[-1]]


def _assert_equals_ir_measures(qrels_path, run_path, names, tolerance, *, variance_zero_when_tie_free=False):
    """Per query, ir_measures.iter_calc equals tieaware's oblivious value (oblivious="ir_measures") on
    the run with its ties, and its expected value (and every other statistic) on the tie-free run."""
    ir_measures = pytest.importorskip("ir_measures")
    qrels = tieaware.read_trec_qrels(qrels_path)
    run = tieaware.read_trec_run(run_path)
    for data in (run, _tie_free(run)):
        theirs: dict = {}
        for row in ir_measures.iter_calc([ir_measures.parse_measure(n) for n in names], qrels, data):
            theirs.setdefault(str(row.measure), {})[row.query_id] = row.value
        report = tieaware.evaluate(qrels, data, names, make_comparable=True, oblivious="ir_measures")
        for name in names:
            frame = report[name].per_query
            assert theirs[name], name
            for qid, value in theirs[name].items():
                assert frame.loc[qid, "oblivious"] == pytest.approx(value, abs=tolerance), (name, qid)
                if data is not run:
                    assert frame.loc[qid, "expected"] == pytest.approx(value, abs=tolerance), (name, qid)
                    if variance_zero_when_tie_free:
                        assert frame.loc[qid, "variance"] == 0.0


@pytest.mark.parametrize("qrels_path,run_path,level", GDEVAL_FILES, ids=_ids(GDEVAL_FILES))
def test_err_equals_ir_measures_gdeval(qrels_path, run_path, level):
    """ERR@k equals ir_measures' (its gdeval provider runs gdeval.pl with perl) query by query: the
    oblivious value under trec_eval's order (gdeval's: score, then doc id descending) with ties,
    and every statistic on the tie-free run. gdeval prints 5 decimals."""
    _assert_equals_ir_measures(qrels_path, run_path, ["ERR@1", "ERR@5", "ERR@10", "ERR@20"], 5.1e-6,
                               variance_zero_when_tie_free=True)


@pytest.mark.parametrize("qrels_path,run_path,level", GDEVAL_FILES, ids=_ids(GDEVAL_FILES))
def test_ndcg_exp_log2_equals_ir_measures(qrels_path, run_path, level):
    """nDCG(dcg='exp-log2')@k (gain 2^grade - 1) equals ir_measures' (its gdeval provider: trec_eval's
    tie order, 5 decimals) query by query: the oblivious value with ties and every statistic on the
    tie-free run."""
    _assert_equals_ir_measures(qrels_path, run_path, ["nDCG(dcg='exp-log2')@1", "nDCG(dcg='exp-log2')@5",
                                                      "nDCG(dcg='exp-log2')@20"], 5.1e-6)


GAIN_MAPS = ["nDCG(gains={1:3,2:9})@10", "nDCG(gains={0:1,1:0,2:5})", "nDCG(gains={2:1})@5", "nDCG(gains={1:2,2:1})@20"]


@pytest.mark.parametrize("qrels_path,run_path,level", TREC_FILES[:5], ids=_ids(TREC_FILES[:5]))
def test_ndcg_gain_maps_equal_ir_measures(qrels_path, run_path, level):
    """nDCG(gains={...}) (ir_measures maps the qrels' grades, then pytrec_eval's nDCG), non-monotone maps
    included, equals ir_measures query by query: the oblivious value with ties, every statistic tie-free."""
    _assert_equals_ir_measures(qrels_path, run_path, GAIN_MAPS, 1e-12)
