"""trec_eval's counts num_q, num_ret, num_rel, num_rel_ret (ir_measures' NumQ, NumRet, NumRel, NumRelRet):
summed over queries, not averaged; per query as the brute-force reference (and pytrec_eval, in
tests/test_parity.py); num_rel_ret at a cutoff tie-aware."""
import math
import pickle

import ir_measures
import pytest
from reference import brute_force

import tieaware
from tieaware.metrics import parse_metric
from tieaware.report import MetricResult
from tieaware.streaming import merge

# q1: d1 (grade 2) above a tie {d2 (0), d3 (1), d4 (unjudged)} across ranks 2-4, u (1) never retrieved;
# q2: one tie of four, two relevant; q3: nothing relevant retrieved
QRELS = {"q1": {"d1": 2, "d2": 0, "d3": 1, "u": 1}, "q2": {"e1": 1, "e2": 1}, "q3": {"x": 1}}
RUN = {"q1": {"d1": 0.9, "d2": 0.5, "d3": 0.5, "d4": 0.5, "d5": 0.1},
       "q2": {"e1": 0.4, "e2": 0.4, "e3": 0.4, "e4": 0.4}, "q3": {"y": 1.0}}
NAMES = ["num_q", "num_ret", "num_rel", "num_rel_ret", "num_ret.3", "num_rel_ret.2", "num_rel_ret.3",
         "NumQ", "NumRet", "NumRel", "NumRelRet", "NumRet(rel=2)", "NumRel(rel=2)"]


def test_counts_are_sums_of_the_per_query_brute_force_statistics():
    report = tieaware.evaluate(QRELS, RUN, NAMES)
    for name in NAMES:
        spec = parse_metric(name)
        stats = [brute_force(spec, RUN[q], QRELS[q]) for q in RUN]
        result = report[name]
        assert result.aggregate == "sum", name
        assert result.expected == pytest.approx(sum(s[0] for s in stats), abs=1e-12), name
        assert result.tie_std == pytest.approx(math.sqrt(sum(s[1] for s in stats)), abs=1e-12), name
        assert result.min == pytest.approx(sum(s[2] for s in stats), abs=1e-12), name
        assert result.max == pytest.approx(sum(s[3] for s in stats), abs=1e-12), name
        assert list(result.per_query_values()) == pytest.approx([s[0] for s in stats], abs=1e-12), name
    assert [report[n].expected for n in ("num_q", "num_ret", "num_rel", "num_rel_ret")] == [3, 10, 6, 4]
    assert report["num_rel_ret.2"].expected == pytest.approx(1 + 1 / 3 + 1)  # q1: 1 + 1/3, q2: 2 * 2/4
    assert (report["num_rel_ret.2"].min, report["num_rel_ret.2"].max) == (1, 4)
    assert report["NumRet(rel=2)"].expected == 1 and report["NumRel(rel=2)"].expected == 1
    for name in ("num_q", "num_ret", "num_rel", "num_rel_ret", "num_ret.3"):  # no tie order moves them
        assert report[name].range == 0 and report[name].tie_std == 0
    assert report["num_ret.3"].expected == 3 + 3 + 1


def test_means_stay_means():
    report = tieaware.evaluate(QRELS, RUN, ["hits@2", "num_rel_ret.2"])
    assert report["hits@2"].aggregate == "mean"
    assert report["hits@2"].expected == pytest.approx(report["num_rel_ret.2"].expected / 3)
    assert report["hits@2"].tie_std == pytest.approx(report["num_rel_ret.2"].tie_std / 3)


def test_sums_equal_ir_measures_aggregates():
    measures = [ir_measures.NumQ, ir_measures.NumRet, ir_measures.NumRel, ir_measures.NumRelRet,
                ir_measures.NumRet(rel=2)]
    theirs = ir_measures.calc_aggregate(measures, QRELS, RUN)
    ours = tieaware.evaluate(QRELS, RUN, measures)
    assert {str(m): float(ours[str(m)]) for m in measures} == {str(m): theirs[m] for m in measures}


def test_the_sum_survives_pickling_streaming_and_merging(tmp_path):
    run_file = tmp_path / "run.trec"
    run_file.write_text("".join(f"{q} Q0 {d} 0 {s} t\n" for q, docs in RUN.items() for d, s in docs.items()))
    names = ["num_ret", "num_rel_ret.2", "P.2"]
    report = tieaware.evaluate(QRELS, RUN, names)
    again = pickle.loads(pickle.dumps(report["num_rel_ret.2"]))
    assert (again.aggregate, again.expected, again.max) == ("sum", report["num_rel_ret.2"].expected, 4)
    streamed = tieaware.evaluate(QRELS, run_file, names, stream=1)
    shards = []
    for i, query in enumerate(RUN):
        shards.append(tmp_path / f"shard{i}.tsv")
        tieaware.evaluate({query: QRELS[query]}, {query: RUN[query]}, names, per_query_out=shards[-1])
    merged = merge(shards)
    for name in names:
        for other in (streamed[name], merged[name]):
            assert (other.aggregate, other.expected, other.min, other.max) == pytest.approx(
                (report[name].aggregate, report[name].expected, report[name].min, report[name].max)), name
    with pytest.raises(ValueError, match="aggregate"):
        MetricResult.from_table("x", ["q"], [[1, 0, 1, 1, 1]], "trec_eval", "median")


def test_tie_aware_ir_measures_wrappers_sum_counts():
    from tieaware.integrations.ir_measures import E, Max, Min

    ours = tieaware.evaluate(QRELS, RUN, ["num_rel_ret.2", "hits@2"])
    measures = [E(ir_measures.NumRelRet), E("num_rel_ret.2"), Min("num_rel_ret.2"), Max("num_rel_ret.2"),
                E("hits@2"), ir_measures.NumRelRet]
    theirs = ir_measures.calc_aggregate(measures, QRELS, RUN)
    assert theirs[E(ir_measures.NumRelRet)] == theirs[ir_measures.NumRelRet] == 4
    assert [theirs[m] for m in measures[1:5]] == pytest.approx(
        [ours["num_rel_ret.2"].expected, 1, 4, ours["hits@2"].expected])  # hits@2: still the mean
