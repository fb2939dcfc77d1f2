"""`tieaware.compare`: flags on constructed runs, significance tests on per-query E[M], inputs left untouched."""

import numpy as np
import pytest
import ranx
from scipy.stats import ttest_rel, tukey_hsd

import tieaware
from tieaware.comparison import ComparisonReport, compare
from tieaware.datasets import cranfield
from tieaware.errors import InputError

CRANFIELD = cranfield()

# One relevant doc per query. Reciprocal rank under trec_eval's order (score desc, doc id desc):
#   tied:   d1 ties with d2 -> E = 0.75, trec_eval puts d2 first -> 0.5, [min, max] = [0.5, 1]
#   steady: no ties, RR 1 on q1 and 1/3 on q2                    -> 2/3, a point interval
#   best:   no ties, RR 1 on both                                 -> 1
#   near:   ties only on q2, RR in [0.9, 1.0]                    -> overlaps `best`, but same order
QRELS = {"q1": {"d1": 1}, "q2": {"d1": 1}}
RUNS = {
    "tied": {"q1": {"d1": 1.0, "d2": 1.0}, "q2": {"d1": 1.0, "d2": 1.0}},
    "steady": {"q1": {"d1": 3.0, "d2": 2.0}, "q2": {"d3": 3.0, "d4": 2.0, "d1": 1.0}},
    "best": {"q1": {"d1": 1.0}, "q2": {"d1": 1.0}},
}


def test_order_flip_and_overlap_flags():
    report = compare(QRELS, RUNS, "mrr", stat_test=None)
    pairs = report.pairs.loc["mrr"]
    flip = pairs.loc["tied", "steady"]
    assert (flip["expected_a"], flip["oblivious_a"], flip["min_a"], flip["max_a"]) == (0.75, 0.5, 0.5, 1.0)
    assert flip["expected_b"] == flip["oblivious_b"] == pytest.approx(2 / 3)
    assert flip["order_flip"] and flip["intervals_overlap"] and flip["tie_sensitive"]
    # `best` is never below `steady`, whatever the tie order: no flag
    clean = pairs.loc["steady", "best"]
    assert not clean["order_flip"] and not clean["intervals_overlap"] and not clean["tie_sensitive"]
    # `tied` can reach 1.0 but not beat `best`: touching intervals are not an overlap
    touching = pairs.loc["tied", "best"]
    assert touching["max_a"] == touching["min_b"] == 1.0
    assert not touching["intervals_overlap"] and not touching["order_flip"]
    # the flag is p_flip >= 0.05: `tied` averages 0.5 (below steady's 2/3) when both queries put d2
    # first, and 1.0 (equal to best's: D_tau = 0 counts as a flip) when both put d1 first: 1/4 each
    assert flip["p_flip"] == touching["p_flip"] == 0.25 and flip["p_flip_exact"] and touching["p_flip_exact"]
    assert clean["p_flip"] == 0 and clean["p_flip_exact"]
    assert list(report.flagged.index) == [("mrr", "tied", "steady"), ("mrr", "tied", "best")]


def test_overlap_without_order_flip():
    runs = {"steady": RUNS["steady"], "near": {"q1": {"d1": 2.0, "d9": 1.0}, "q2": {"d1": 1.0, "d0": 1.0}}}
    row = compare(QRELS, runs, ["mrr"], stat_test=None).pairs.loc["mrr", "steady", "near"]
    assert row["expected_b"] == 0.875 and row["oblivious_b"] == 1.0  # "d1" > "d0": trec_eval puts d1 first
    assert not row["order_flip"] and not row["intervals_overlap"]
    runs["near"]["q1"] = {"a5": 1.0, "a6": 1.0, "d1": 1.0}  # q1: E 11/18, [1/3, 1], trec_eval: d1 first
    row = compare(QRELS, runs, ["mrr"], stat_test=None).pairs.loc["mrr", "steady", "near"]
    assert row["intervals_overlap"] and not row["order_flip"] and row["tie_sensitive"]


def test_report_text_latex_and_dataframe():
    report = compare(QRELS, RUNS, ["mrr", "P@1"], stat_test=None, rounding_digits=4)
    text = str(report)
    assert text.splitlines()[0].split()[:5] == ["#", "Run", "mrr", "range", "obl"]
    assert "mrr: a tied vs b steady: one random tie order reverses the difference (or makes it 0) with " \
        "probability 0.25" in text
    assert "Superscripts" not in text  # no test was run
    latex = report.to_latex()
    assert "\\begin{tabular}{cl|cc|cc}" in latex and "0.7500$^{\\dagger}$" in latex
    frame = report.summary_frame()
    assert frame.shape == (6, 7) and frame.loc[("tied", "P@1"), "range"] == 1.0
    assert report.to_dict()["tieaware"]["pairs"][0]["p_value"] is None
    assert report.to_dict()["tied"]["comparisons"]["steady"]["mrr"] is None


def test_student_and_tukey_run_on_per_query_expected_values():
    qrels = str(CRANFIELD.qrels)
    paths = {f"minilm-{tag}": str(CRANFIELD.runs[tag]) for tag in ("fp32", "bf16", "bf16-upcast")}
    expected = {name: tieaware.evaluate(qrels, p, "ndcg@10").per_query["expected"].to_numpy()
                for name, p in paths.items()}
    student = compare(qrels, paths, "ndcg@10", stat_test="student")
    assert student.run_names == list(expected)
    p_value = student.pairs.loc[("ndcg@10", "minilm-fp32", "minilm-bf16"), "p_value"]
    assert p_value == pytest.approx(ttest_rel(expected["minilm-fp32"], expected["minilm-bf16"]).pvalue, rel=1e-12)
    tukey = compare(qrels, paths, "ndcg@10", stat_test="tukey")
    reference = tukey_hsd(*expected.values()).pvalue
    p_value = tukey.pairs.loc[("ndcg@10", "minilm-bf16", "minilm-bf16-upcast"), "p_value"]
    assert p_value == pytest.approx(reference[1, 2])
    assert not tukey.pairs["significant"].any()  # 0.4996 vs 0.4989 vs 0.4995: no difference
    assert "Tukey's HSD test" in str(tukey)


def test_significance_superscripts_and_fisher():
    rng = np.random.default_rng(0)
    qrels = {f"q{i}": {"rel": 1} for i in range(60)}
    good = {q: {"rel": 2.0, "x": 1.0} for q in qrels}
    bad = {q: {"x": 2.0, "y": 1.5, "rel": 1.0} if rng.random() < 0.8 else {"rel": 2.0, "x": 1.0} for q in qrels}
    report = compare(qrels, {"good": good, "bad": bad}, "mrr", stat_test="fisher", n_permutations=500,
                     rounding_digits=4)
    row = report.pairs.loc["mrr", "good", "bad"]
    assert row["significant"] and row["p_value"] <= 0.01
    assert "1.0000ᵇ" in str(report)  # a beats b


def test_ranx_runs_are_named_and_left_untouched():
    runs = [ranx.Run(RUNS["tied"], name="tied"), ranx.Run(RUNS["best"], name="best"), ranx.Run(RUNS["steady"])]
    before = [run.to_dict() for run in runs]
    report = compare(ranx.Qrels(QRELS), runs, ["mrr", "ndcg@2"], stat_test=None)
    assert isinstance(report, ComparisonReport)
    assert report.run_names == ["tied", "best", "run_3"]
    assert [run.to_dict() for run in runs] == before
    assert all(not run.mean_scores and not run.scores for run in runs)


def test_input_errors():
    with pytest.raises(InputError, match="Two runs are named 'same'"):
        compare(QRELS, [ranx.Run(RUNS["best"], name="same"), ranx.Run(RUNS["tied"], name="same")], "mrr")
    with pytest.raises(InputError, match="maps documents to scores"):
        compare(QRELS, RUNS["tied"], "mrr")
    with pytest.raises(InputError, match="not a single run"):
        compare(QRELS, ranx.Run(RUNS["tied"]), "mrr")
    with pytest.raises(ValueError, match="stat_test"):
        compare(QRELS, RUNS, "mrr", stat_test="wilcoxon")
    with pytest.raises(InputError, match="make_comparable"):
        compare(QRELS, {"a": RUNS["best"], "b": {"q1": {"d1": 1.0}}}, "mrr")


def _tie_free_runs(n_queries: int = 30, n_docs: int = 40, seed: int = 7):
    """qrels and three runs with distinct scores in every query (no ties: E[M] is ranx's value)."""
    rng = np.random.default_rng(seed)
    qrels = {f"q{q}": {f"d{d}": int(rng.integers(0, 3)) for d in rng.choice(n_docs, 8, replace=False)}
             for q in range(n_queries)}
    runs = {}
    for name in ("bm25", "dense", "hybrid"):
        runs[name] = {f"q{q}": {f"d{d}": float(s) for d, s in enumerate(rng.permutation(n_docs) / n_docs + q)}
                      for q in range(n_queries)}
    return qrels, runs


@pytest.mark.parametrize("stat_test", ["student", "fisher", "tukey"])
def test_report_answers_what_a_ranx_report_answers(stat_test):
    """Same calls, same answers as ranx.compare on tie-free runs (where E[M] is the one value).
    ranx's Fisher test is not reproducible even with its seed (its parallel threads draw from
    unseeded generators), so two of its p-values from n permutations differ by a binomial error
    of standard deviation at most sqrt(2 * 0.25 / n): they are compared within six of those
    (a false failure about once in 10^8 comparisons); Student's and Tukey's exactly."""
    n_permutations = 1000 if stat_test == "fisher" else 200
    p_tolerance = 6 * (2 * 0.25 / n_permutations) ** 0.5 if stat_test == "fisher" else 1e-9
    qrels, runs = _tie_free_runs()
    metrics = ["ndcg@10", "map@100", "mrr"]
    ranx_runs = [ranx.Run(run, name=name) for name, run in runs.items()]
    theirs = ranx.compare(ranx.Qrels(qrels), ranx_runs, metrics, stat_test=stat_test,
                          n_permutations=n_permutations)
    ours = tieaware.compare(ranx.Qrels(qrels), ranx_runs, metrics, stat_test=stat_test,
                            n_permutations=n_permutations)
    assert isinstance(ours, ranx.data_structures.Report)
    assert ours.model_names == theirs.model_names == list(runs)
    assert ours.metrics == theirs.metrics and ours.max_p == theirs.max_p and ours.stat_test == theirs.stat_test
    assert ours.rounding_digits == theirs.rounding_digits == 3
    assert ours.win_tie_loss == theirs.win_tie_loss
    for a in ours.model_names:
        for b in ours.model_names:
            if a != b:
                for m in metrics:
                    ours_p, theirs_p = ours.comparisons[a, b][m]["p_value"], theirs.comparisons[a, b][m]["p_value"]
                    assert ours_p == pytest.approx(theirs_p, abs=p_tolerance)
                    if stat_test != "fisher":
                        assert ours.comparisons[a, b][m]["significant"] == theirs.comparisons[a, b][m]["significant"]
    ours_dict, theirs_dict = ours.to_dict(), theirs.to_dict()
    assert set(ours_dict) - {"tieaware"} == set(theirs_dict)
    for name in ours.model_names:
        assert ours_dict[name]["win_tie_loss"] == theirs_dict[name]["win_tie_loss"]
        assert ours_dict[name]["comparisons"].keys() == theirs_dict[name]["comparisons"].keys()
        for other, p_values in ours_dict[name]["comparisons"].items():
            assert p_values == pytest.approx(theirs_dict[name]["comparisons"][other], abs=p_tolerance)
        assert ours_dict[name]["scores"] == pytest.approx(theirs_dict[name]["scores"])
    ours_frame, theirs_frame = ours.to_dataframe(), theirs.to_dataframe()
    assert list(ours_frame.columns) == list(theirs_frame.columns) == ["model_names", *metrics]
    np.testing.assert_allclose(ours_frame[metrics].to_numpy(float), theirs_frame[metrics].to_numpy(float))
    assert ours.format_score(0.12345) == theirs.format_score(0.12345) == "0.123"
    assert "\\begin{tabular}" in ours.to_latex()


@pytest.mark.parametrize("stat_test", ["student", "fisher", "tukey"])
def test_one_query_compares_without_p_values_and_says_why(stat_test):
    qrels = {"q1": {"d1": 1, "d2": 0}}
    runs = {"a": {"q1": {"d1": 0.9, "d2": 0.1}}, "b": {"q1": {"d1": 0.5, "d2": 0.5}}}
    with pytest.warns(UserWarning, match="p-values need at least 2 queries, got 1"):
        report = compare(qrels, runs, "mrr", stat_test=stat_test)
    assert report.stat_test is None and report.pairs["p_value"].isna().all()
    assert report.results["b"]["mrr"].expected == 0.75


def _cli_compare(tmp_path, qrels: str, runs: dict, stat_test: str):
    """`tieaware compare` in a process of its own, warnings on as Python's default shows them."""
    import os
    import subprocess
    import sys

    (tmp_path / "qrels").write_text(qrels)
    for name, text in runs.items():
        (tmp_path / name).write_text(text)
    return subprocess.run([sys.executable, "-W", "default", "-m", "tieaware", "compare", str(tmp_path / "qrels"),
                           *(str(tmp_path / name) for name in runs), "-m", "mrr", "--stat-test", stat_test],
                          capture_output=True, text=True, timeout=300, env={**os.environ, "PYTHONWARNINGS": "default"})


@pytest.mark.parametrize("stat_test", ["student", "tukey"])
def test_cli_compare_gives_tieaware_messages_not_raw_scipy_warnings(tmp_path, stat_test):
    """One query: scipy's RuntimeWarnings (student) or ValueError (tukey) became one clear line; per-query
    differences that are constant: scipy's warning is one line saying what it means, with no source path."""
    runs = {"a.run": "q1 Q0 d1 1 0.9 a\nq1 Q0 d2 2 0.1 a\n", "b.run": "q1 Q0 d1 1 0.5 b\nq1 Q0 d2 2 0.5 b\n"}
    done = _cli_compare(tmp_path, "q1 0 d1 1\nq1 0 d2 0\n", runs, stat_test)
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == ["tieaware compare: warning: p-values need at least 2 queries, got 1: the runs "
                                        "are compared without a significance test."]
    twice = {name: text + text.replace("q1", "q2") for name, text in runs.items()}
    done = _cli_compare(tmp_path, "q1 0 d1 1\nq1 0 d2 0\nq2 0 d1 1\nq2 0 d2 0\n", twice, stat_test)
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert lines and all(line.startswith(f"tieaware compare: warning: the significance test ({stat_test}) warned")
                         for line in lines), done.stderr
    assert "Warning" not in done.stderr and ".py" not in done.stderr
