"""The default oblivious order follows the input's tool: ranx objects in, ranx's order out (the number
ranx.evaluate gave); dicts, files and DataFrames in, trec_eval's (pytrec_eval's number); an explicit
``oblivious=`` overrides both."""
from __future__ import annotations

import numpy as np
import pytest
import pytrec_eval
import ranx

import tieaware
from tieaware.arguments import resolve_oblivious
from tieaware.errors import InputError

METRICS = {"mrr": "recip_rank", "ndcg@5": "ndcg_cut_5", "precision@5": "P_5"}


def tied_data(seed: int, queries: int = 12, docs: int = 10):
    """Qrels and a run whose scores fall on a grid of 4 values: ties everywhere, graded relevance."""
    rng = np.random.default_rng(seed)
    qrels, run = {}, {}
    for q in range(queries):
        ids = [f"d{i}" for i in rng.permutation(30)[:docs]]
        run[f"q{q}"] = {doc: float(rng.integers(0, 4)) / 4 for doc in ids}
        qrels[f"q{q}"] = {doc: int(rng.integers(1, 3)) for doc in rng.choice(ids, 3, replace=False)}
    return qrels, run


def pytrec_eval_mean(qrels, run, measure: str) -> float:
    per_query = pytrec_eval.RelevanceEvaluator(qrels, {measure}).evaluate(run)
    return float(np.mean([values[measure] for values in per_query.values()]))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_ranx_objects_get_the_number_ranx_evaluate_gave(seed):
    qrels, run = tied_data(seed)
    ranx_qrels, ranx_run = ranx.Qrels(qrels), ranx.Run(run)
    report = tieaware.evaluate(ranx_qrels, ranx_run, list(METRICS))
    for metric in METRICS:
        theirs = ranx.evaluate(ranx_qrels, ranx_run, metric)
        assert report[metric].oblivious_order == "ranx"
        assert report[metric].oblivious == pytest.approx(theirs, abs=1e-12)
        assert report[metric].bias == pytest.approx(theirs - report[metric].expected, abs=1e-12)
    # the data are tied enough that ranx's and trec_eval's orders give different numbers: the rule matters
    trec = {metric: pytrec_eval_mean(qrels, run, measure) for metric, measure in METRICS.items()}
    assert any(abs(report[metric].oblivious - trec[metric]) > 1e-6 for metric in METRICS)


@pytest.mark.parametrize("seed", [0, 1])
def test_dicts_files_and_dataframes_get_trec_eval_s_number(seed, tmp_path):
    qrels, run = tied_data(seed)
    path = tmp_path / "run.trec"
    path.write_text("".join(f"{q} Q0 {d} 0 {s} t\n" for q, docs in run.items() for d, s in docs.items()))
    frame = tieaware.Run(run).to_dataframe()
    for given in (run, str(path), frame):
        report = tieaware.evaluate(qrels, given, list(METRICS))
        for metric, measure in METRICS.items():
            assert report[metric].oblivious_order == "trec_eval"
            assert report[metric].oblivious == pytest.approx(pytrec_eval_mean(qrels, run, measure), abs=1e-12)


def test_one_ranx_object_makes_the_input_ranx_s_and_its_order_is_that_of_the_run_as_given():
    """ranx Qrels with a dict run: ranx.evaluate(Qrels, dict) is what that user ran; ranx orders the dict
    as a dict (not as a Run), and so does the "ranx" order. (ranx pairs the queries of a Qrels, sorted by
    id, with those of a dict, in insertion order, by position: the ids here sort as they are inserted.)"""
    qrels, run = tied_data(3, queries=9)
    result = tieaware.evaluate(ranx.Qrels(qrels), run, "mrr")
    assert result.oblivious_order == "ranx"
    assert result.oblivious == pytest.approx(ranx.evaluate(ranx.Qrels(qrels), run, "mrr"), abs=1e-12)
    result = tieaware.evaluate(qrels, ranx.Run(run), "mrr")
    assert result.oblivious_order == "ranx"
    assert result.oblivious == pytest.approx(ranx.evaluate(qrels, ranx.Run(run), "mrr"), abs=1e-12)


@pytest.mark.parametrize("order", ["trec_eval", "input", "ranx"])
def test_an_explicit_order_overrides_the_default(order):
    qrels, run = tied_data(4)
    for pair in ((qrels, run), (ranx.Qrels(qrels), ranx.Run(run))):
        result = tieaware.evaluate(*pair, "mrr", oblivious=order)
        assert result.oblivious_order == order
    trec = tieaware.evaluate(ranx.Qrels(qrels), ranx.Run(run), "mrr", oblivious="trec_eval")
    assert trec.oblivious == pytest.approx(pytrec_eval_mean(qrels, run, "recip_rank"), abs=1e-12)


def test_compare_resolves_one_order_over_all_inputs():
    qrels, run_a = tied_data(5)
    _, run_b = tied_data(6)
    runs = [ranx.Run(run_a, name="a"), ranx.Run(run_b, name="b")]
    report = tieaware.compare(ranx.Qrels(qrels), runs, ["mrr", "ndcg@5"], stat_test=None)
    assert report.oblivious_order == "ranx"
    for run in runs:
        for metric in ("mrr", "ndcg@5"):
            theirs = ranx.evaluate(ranx.Qrels(qrels), run, metric)
            assert report.results[run.name][metric].oblivious == pytest.approx(theirs, abs=1e-12)
    # a ranx Run among dicts: the whole comparison is ranx's (one order per report)
    mixed = tieaware.compare(qrels, {"a": ranx.Run(run_a), "b": run_b}, "mrr", stat_test=None)
    assert mixed.oblivious_order == "ranx"
    assert mixed.results["b"]["mrr"].oblivious == pytest.approx(ranx.evaluate(qrels, run_b, "mrr"), abs=1e-12)
    plain = tieaware.compare(qrels, {"a": run_a, "b": run_b}, "mrr", stat_test=None)
    assert plain.oblivious_order == "trec_eval"
    assert plain.results["a"]["mrr"].oblivious == pytest.approx(pytrec_eval_mean(qrels, run_a, "recip_rank"))
    explicit = tieaware.compare(ranx.Qrels(qrels), runs, "mrr", stat_test=None, oblivious="trec_eval")
    assert explicit.oblivious_order == "trec_eval"


def test_resolve_oblivious_checks_the_name():
    with pytest.raises(InputError, match="oblivious must be None or one of"):
        resolve_oblivious("pyterrier", {}, {})
    with pytest.raises(InputError, match="oblivious must be None or one of"):
        tieaware.evaluate({"q1": {"d1": 1}}, {"q1": {"d1": 0.5}}, "mrr", oblivious="pyterrier")
