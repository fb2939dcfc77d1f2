"""ir_measures' judged_only=True (trec_eval -J): unjudged documents removed before ranking. E, Var,
min, max against brute force over the tie orderings of the whole run, and ir_measures' own values."""
from __future__ import annotations

import random

import ir_measures
import pytest
import ranx
from ir_measures import AP, RR, P, R, SetAP, SetF, SetP, Success, nDCG
from reference import all_orderings, point_metric

import tieaware
from tieaware.datasets import cranfield
from tieaware.engine import metric_stats
from tieaware.errors import UnknownMetricError
from tieaware.inputs import write_trec_run
from tieaware.metrics import parse_metric
from tieaware.readers.pairs import ranked_lists

NAMES = ["nDCG(judged_only=True)@3", "nDCG(judged_only=True)", "P(judged_only=True)@2", "P(rel=2,judged_only=True)@3",
         "AP(judged_only=True)", "AP(judged_only=True)@3", "RR(judged_only=True)", "Rprec(judged_only=True)",
         "R(judged_only=True)@3", "Success(judged_only=True)@1", "SetP(judged_only=True)", "SetF(judged_only=True)",
         "SetAP(judged_only=True)", "SetRelP(judged_only=True)"]


def random_case(rng: random.Random):
    qrels, run = {}, {}
    for q in range(6):
        qid = f"q{q}"
        docs = [f"d{i}" for i in range(rng.randint(1, 7))]
        run[qid] = {d: float(rng.choice([1, 2, 2, 3])) for d in docs}  # few score values: ties
        judged = rng.sample(docs, rng.randint(0, len(docs))) + ["unretrieved"]
        qrels[qid] = {d: rng.choice([-1, 0, 1, 2]) for d in judged}
    return qrels, run


def brute_force(spec, scores: dict, judgments: dict) -> tuple:
    """(E, Var, min, max) over every ordering of the *whole* run's ties, unjudged removed afterwards."""
    values = [point_metric(spec, [d for d in order if d in judgments], judgments) for order in all_orderings(scores)]
    mean = sum(values) / len(values)
    return mean, sum((v - mean) ** 2 for v in values) / len(values), min(values), max(values)


@pytest.mark.parametrize("seed", range(6))
def test_against_brute_force_over_the_whole_runs_orderings(seed):
    qrels, run = random_case(random.Random(seed))
    report = tieaware.evaluate(qrels, run, NAMES)
    moved = 0
    for name in NAMES:
        spec = parse_metric(name)
        table = report[name].per_query
        for qid in run:
            e, var, low, high = brute_force(spec, run[qid], qrels[qid])
            row = table.loc[qid]
            assert (row["expected"], row["variance"], row["min"], row["max"]) == pytest.approx(
                (e, var, low, high), abs=1e-12), (name, qid)
        plain = tieaware.evaluate(qrels, run, name.replace("judged_only=True", "judged_only=False"))
        moved += plain.expected != pytest.approx(report[name].expected, abs=1e-12)
    assert moved >= 5  # unjudged documents change most of these metrics: the option is not a no-op


def test_ir_measures_values_on_cranfield_bf16():
    files = cranfield()
    qrels = tieaware.read_trec_qrels(files.qrels)
    run = tieaware.read_trec_run(files.runs["bf16"])
    run = {q: {d: s for i, (d, s) in enumerate(docs.items()) if i % 3 or d in qrels[q]} for q, docs in run.items()}
    qrels = {q: dict(list(docs.items())[: max(1, len(docs) // 2)]) for q, docs in qrels.items()}  # unjudged docs
    measures = [nDCG(judged_only=True)@10, P(judged_only=True)@10, AP(judged_only=True), RR(judged_only=True),
                R(judged_only=True)@100, Success(judged_only=True)@5, SetP(judged_only=True),
                SetF(judged_only=True), SetAP(judged_only=True)]
    theirs = ir_measures.calc_aggregate(measures, qrels, run)
    mine = tieaware.evaluate(qrels, run, measures, oblivious="ir_measures")
    for measure in measures:
        assert mine[str(measure)].oblivious == pytest.approx(theirs[measure], abs=1e-12), measure
    assert mine["nDCG(judged_only=True)@10"].range > 0
    assert theirs[nDCG(judged_only=True)@10] != ir_measures.calc_aggregate([nDCG@10], qrels, run)[nDCG@10]


def test_ranx_objects_streams_and_untouched_inputs(tmp_path):
    qrels, run = random_case(random.Random(7))
    expected = tieaware.evaluate(qrels, run, ["nDCG(judged_only=True)@3", "ndcg@3"])
    positive = {q: {d: g for d, g in docs.items() if g >= 0} for q, docs in qrels.items()}  # ranx keeps no negatives
    on_ranx = tieaware.evaluate(ranx.Qrels(positive), ranx.Run(run), ["nDCG(judged_only=True)@3", "ndcg@3"],
                                oblivious="trec_eval")  # the dicts' default order
    on_dicts = tieaware.evaluate(positive, run, ["nDCG(judged_only=True)@3", "ndcg@3"])
    for name in on_ranx:
        assert on_ranx[name].per_query.equals(on_dicts[name].per_query)
    path = tmp_path / "run.trec"
    with open(path, "w") as handle:
        write_trec_run(run, "r", handle)
    streamed = tieaware.evaluate(qrels, str(path), list(expected), stream=2)
    for name in expected:
        assert streamed[name].per_query.equals(expected[name].per_query)
    assert run == random_case(random.Random(7))[1]


@pytest.mark.parametrize("name, match", [
    ("Bpref(judged_only=True)", "judged_only is an ir_measures parameter"),
    ("RR(judged_only=True)@10", "RR \\(without a cutoff\\)"),
    ("nDCG(dcg='exp-log2',judged_only=True)@10", "nDCG \\(log2\\)"),
    ("P(judged_only=yes)@5", "takes True or False"),
])
def test_what_ir_measures_does_not_take_is_refused(name, match):
    with pytest.raises(UnknownMetricError, match=match):
        parse_metric(name)
    assert parse_metric("P(judged_only=False)@5").judged_only is False


def test_kernel_entry_refuses_a_judged_only_spec():
    lists = ranked_lists({"q": {"a": 1}}, {"q": {"a": 1.0, "b": 1.0}})
    with pytest.raises(tieaware.InputError, match="judged_only removes documents"):
        metric_stats(lists, parse_metric("P(judged_only=True)@1"))
