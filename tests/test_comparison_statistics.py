"""`compare`'s tie-aware pair statistics against brute-force enumeration of every joint tie order.

The reference shares no code with `tieaware.comparison_statistics` or `tieaware.tie_orders`: every
order of every tie group is written out with itertools.permutations as a tie-free run (scores by
position), scored by `tieaware.evaluate` (tie-free: one value, checked against pytrec_eval
elsewhere), and the joint orders of all queries of both runs are enumerated by product.
"""
import itertools
import math
import warnings

import numpy as np
import pytest
from scipy.stats import ttest_rel
from statsmodels.stats.multitest import multipletests

import tieaware
from tieaware import comparison
from tieaware.comparison_statistics import adjust_p_values, flip_bound, t_test_p_bounds

METRICS = ["ndcg@3", "P@2", "map", "recip_rank", "success.1", "hit_rate@2"]


def _random_case(seed: int, n_queries: int):
    """qrels and two runs: 3-6 documents a query, integer scores 0-2 (tie groups up to 4 documents,
    cutoffs inside them), graded judgments 0-2 and unjudged documents."""
    rng = np.random.default_rng(seed)
    qrels, runs = {}, {"A": {}, "B": {}}
    for q in range(n_queries):
        docs = [f"d{i}" for i in range(int(rng.integers(3, 7)))]
        qrels[f"q{q}"] = {d: int(rng.integers(0, 3)) for d in docs if rng.random() < 0.8}
        if not any(qrels[f"q{q}"].values()):
            qrels[f"q{q}"][docs[0]] = 1
        for name in runs:
            while True:
                scores = {d: float(rng.integers(0, 3)) for d in docs}
                if max(list(scores.values()).count(s) for s in set(scores.values())) <= 4:
                    break
            runs[name][f"q{q}"] = scores
    return qrels, runs


def _orders(scores: dict) -> list[dict]:
    """Every tie-free version of one query's scores: each order of each tie group, as rank scores."""
    groups = [sorted(d for d in scores if scores[d] == s) for s in sorted(set(scores.values()), reverse=True)]
    out = []
    for choice in itertools.product(*(itertools.permutations(group) for group in groups)):
        ranking = [d for group in choice for d in group]
        out.append({d: float(len(ranking) - i) for i, d in enumerate(ranking)})
    return out


def _values_per_order(qrels: dict, run: dict) -> dict[str, list[np.ndarray]]:
    """{metric: per query, the metric under each of its tie orders (equally likely)}."""
    copies, owner = {}, []
    for q, scores in run.items():
        for j, order in enumerate(_orders(scores)):
            copies[f"{q}#{j}"] = order
            owner.append(q)
    copy_qrels = {copy: qrels[copy.split("#")[0]] for copy in copies}
    report = tieaware.evaluate(copy_qrels, copies, METRICS)
    out = {}
    for metric in METRICS:
        values = report[metric].per_query["expected"].reindex(list(copies)).to_numpy()
        out[metric] = [values[[i for i, o in enumerate(owner) if o == q]] for q in run]
    return out


def _joint(values_a: list[np.ndarray], values_b: list[np.ndarray]) -> np.ndarray:
    """(orders, Q) per-query differences under every joint tie order (each row equally likely)."""
    per_query = [(a[:, None] - b[None, :]).ravel() for a, b in zip(values_a, values_b)]
    return np.array(list(itertools.product(*per_query)))


def _p_value(d: np.ndarray) -> float:
    """The paired t-test's p-value on differences d, 1 when every d is 0 (scipy: NaN)."""
    if not d.any():
        return 1.0
    with warnings.catch_warnings():  # scipy warns of all-equal differences (then p = 0, t infinite)
        warnings.simplefilter("ignore", RuntimeWarning)
        p = ttest_rel(d, np.zeros_like(d)).pvalue
    return 1.0 if math.isnan(p) else float(p)


def _cases():
    found, seed = [], 0
    while len(found) < 12:
        n_queries = 2 + seed % 4
        qrels, runs = _random_case(seed, n_queries)
        count = math.prod(len(_orders(s)) for run in runs.values() for s in run.values())
        if count <= 3000:
            found.append((seed, n_queries))
        seed += 1
    return found


@pytest.mark.parametrize("seed,n_queries", _cases())
def test_pair_statistics_match_enumeration_of_all_joint_tie_orders(seed, n_queries):
    qrels, runs = _random_case(seed, n_queries)
    report = tieaware.compare(qrels, runs, METRICS, max_p=0.05, seed=1)
    values = {name: _values_per_order(qrels, run) for name, run in runs.items()}
    for metric in METRICS:
        row = report.pairs.loc[(metric, "A", "B")]
        joint = _joint(values["A"][metric], values["B"][metric])
        means = joint.mean(axis=1)
        expected_d = np.array([a.mean() - b.mean() for a, b in zip(values["A"][metric], values["B"][metric])])
        assert row["diff"] == pytest.approx(means.mean(), abs=1e-12)
        assert row["diff"] == pytest.approx(expected_d.mean(), abs=1e-12)
        assert row["tie_sd"] == pytest.approx(means.std(), abs=1e-9)
        truth_sign = 0 if abs(row["diff"]) <= 1e-12 else np.sign(row["diff"])
        signs = np.where(np.abs(means) <= 1e-12, 0, np.sign(means))
        p_flip = float((signs != truth_sign).mean())
        assert row["p_flip_exact"], metric  # every case here is small enough to be exact
        assert row["p_flip"] == pytest.approx(p_flip, abs=1e-12), metric
        assert row["p_flip_bound"] >= p_flip - 1e-12
        p_values = np.array([_p_value(d) for d in joint])
        assert row["p_bounds_exact"]
        assert row["p_min"] == pytest.approx(p_values.min(), rel=1e-6, abs=1e-12), metric
        assert row["p_max"] == pytest.approx(p_values.max(), rel=1e-6, abs=1e-12), metric
        # the certified bounds from the per-query [min, max] boxes bracket the enumerated extremes
        a, b = (report.results[name][metric].per_query for name in ("A", "B"))
        low, high = t_test_p_bounds((a["min"] - b["max"]).to_numpy(), (a["max"] - b["min"]).to_numpy())
        assert low <= p_values.min() * (1 + 1e-6) + 1e-12 and high >= p_values.max() * (1 - 1e-6) - 1e-12
        expected_verdict = ("robust" if row["p_max"] <= 0.05 else
                            "not significant" if row["p_min"] > 0.05 else "fragile")
        assert row["verdict"] == expected_verdict


def test_monte_carlo_p_flip_is_within_four_standard_errors(monkeypatch):
    qrels, runs = _random_case(3, 5)
    exact = tieaware.compare(qrels, runs, METRICS).pairs
    monkeypatch.setattr(comparison, "MAX_ENUMERATED_QUERIES", 0)  # no enumeration: bound, then sampling
    sampled = tieaware.compare(qrels, runs, METRICS, flip_samples=4000, seed=3).pairs
    again = tieaware.compare(qrels, runs, METRICS, flip_samples=4000, seed=3).pairs
    checked = 0
    for metric in METRICS:
        row, truth = sampled.loc[(metric, "A", "B")], exact.loc[(metric, "A", "B")]
        assert truth["p_flip_exact"]
        if row["p_flip_exact"]:  # no tied query for this metric: exact without enumeration
            continue
        if row["p_flip_bound"] < 0.05:  # settled by the bound: not sampled
            assert math.isnan(row["p_flip"]) and truth["p_flip"] <= row["p_flip_bound"]
            continue
        checked += 1
        assert row["p_flip_se"] > 0 or row["p_flip"] in (0.0, 1.0)
        assert abs(row["p_flip"] - truth["p_flip"]) <= 4 * max(row["p_flip_se"], 1 / 4000)
        assert row["p_flip"] == again.loc[(metric, "A", "B"), "p_flip"]  # seeded: reproducible
        assert truth["p_flip"] <= row["p_flip_bound"] + 1e-12
    assert checked >= 2


def test_bounds_on_the_t_test_bracket_random_boxes_and_are_exact_without_ties():
    rng = np.random.default_rng(5)
    for _ in range(200):
        n = int(rng.integers(2, 6))
        supports = [np.sort(rng.choice(np.linspace(-1, 1, 9), size=int(rng.integers(1, 4)), replace=False))
                    for _ in range(n)]
        p_values = [_p_value(np.array(d)) for d in itertools.product(*supports)]
        low, high = t_test_p_bounds(np.array([s.min() for s in supports]), np.array([s.max() for s in supports]))
        assert low <= min(p_values) * (1 + 1e-9) + 1e-12
        assert high >= max(p_values) * (1 - 1e-9) - 1e-12
    d = rng.normal(size=30)
    assert t_test_p_bounds(d, d) == pytest.approx((_p_value(d), _p_value(d)), rel=1e-9)


def test_flip_bound_holds_and_vanishes_without_ties():
    assert flip_bound(0.1, np.zeros(5), np.zeros(5)) == 0.0
    assert flip_bound(0.0, np.ones(5), np.ones(5)) == 1.0
    rng = np.random.default_rng(2)
    values = [rng.choice([0.0, 0.5, 1.0], size=3) for _ in range(8)]  # per query, 3 equally likely values
    means = np.array(list(itertools.product(*values))).mean(axis=1)
    diff = float(np.mean([v.mean() for v in values]))
    truth = float((np.sign(means) != np.sign(diff)).mean())
    bound = flip_bound(diff, np.array([v.max() - v.min() for v in values]), np.array([v.var() for v in values]))
    assert truth <= bound <= 1


@pytest.mark.parametrize("method", ["bonferroni", "holm", "fdr_bh"])
def test_corrections_equal_statsmodels(method):
    rng = np.random.default_rng(11)
    for size in (1, 2, 5, 30):
        p = rng.random(size) ** 3
        p[rng.random(size) < 0.2] = p[0]  # ties among p-values
        assert adjust_p_values(p, method) == pytest.approx(multipletests(p, method=method)[1], abs=1e-15)
    with_nan = np.array([0.01, np.nan, 0.04, 0.03])
    adjusted = adjust_p_values(with_nan, method)
    assert np.isnan(adjusted[1])
    assert adjusted[[0, 2, 3]] == pytest.approx(multipletests(with_nan[[0, 2, 3]], method=method)[1])


def test_compare_corrects_the_pairs_of_each_metric():
    qrels, runs = _random_case(1, 5)
    runs = {**runs, "C": {q: {d: s + (d == "d0") for d, s in docs.items()} for q, docs in runs["A"].items()}}
    plain = tieaware.compare(qrels, runs, ["ndcg@3", "P@2"]).pairs
    holm = tieaware.compare(qrels, runs, ["ndcg@3", "P@2"], correction="holm").pairs
    for metric in ("ndcg@3", "P@2"):
        raw, adjusted = plain.xs(metric)["p_value"].to_numpy(float), holm.xs(metric)
        assert not np.isnan(raw).any() and raw.size == 3
        assert adjusted["p_adjusted"].to_numpy(float) == pytest.approx(multipletests(raw, method="holm")[1])
        assert (adjusted["significant"] == (adjusted["p_adjusted"] <= 0.01)).all()
        assert (adjusted["p_max_adjusted"] >= adjusted["p_max"]).all()
    with pytest.raises(tieaware.errors.InputError, match="correction"):
        tieaware.compare(qrels, runs, "P@2", correction="sidak")


def test_difference_interval_effect_size_and_tie_fraction():
    qrels, runs = _random_case(4, 5)
    row = tieaware.compare(qrels, runs, "map", ci=0.9).pairs.loc[("map", "A", "B")]
    a, b = (tieaware.evaluate(qrels, runs[name], "map").per_query for name in ("A", "B"))
    d = (a["expected"] - b["expected"]).to_numpy()
    from scipy.stats import t as student

    half = student.ppf(0.95, d.size - 1) * d.std(ddof=1) / math.sqrt(d.size)
    assert (row["diff_ci_low"], row["diff_ci_high"]) == pytest.approx((d.mean() - half, d.mean() + half))
    assert row["effect_size"] == pytest.approx(d.mean() / d.std(ddof=1))
    tie = (a["variance"] + b["variance"]).mean()
    assert row["tie_fraction"] == pytest.approx(tie / (d.var(ddof=1) + tie))


def test_expected_value_test_keeps_its_level_on_tie_heavy_null_data():
    """Two exchangeable runs with coarse scores (many ties): the t-test on per-query E[M] rejects a
    true null at about its level (the tie noise is averaged out, never counted as signal)."""
    rng = np.random.default_rng(2024)
    alpha, replications, rejections = 0.05, 300, 0
    for _ in range(replications):
        qrels = {f"q{q}": {f"d{d}": int(rng.integers(0, 2)) for d in range(8)} for q in range(15)}
        runs = [{q: {f"d{d}": float(rng.integers(0, 3)) for d in range(8)} for q in qrels} for _ in range(2)]
        a, b = (tieaware.evaluate(qrels, run, "ndcg@5").per_query_values() for run in runs)
        rejections += ttest_rel(a, b).pvalue <= alpha
    rate = rejections / replications
    assert rate <= alpha + 3 * math.sqrt(alpha * (1 - alpha) / replications)


def test_the_pairs_table_prints_enough_digits_to_tell_numbers_apart():
    qrels = {f"q{i}": {"rel": 1} for i in range(3)}
    deep = {q: {"x": 3.0, "rel": 1.0} for q in qrels}  # RR 0.5 everywhere
    deeper = {**deep, "q2": {"x": 3.0, "y": 2.0, "rel": 1.0}}  # RR 1/3 on q2: diff 1/18
    report = tieaware.compare(qrels, {"a": deep, "b": deeper}, "mrr", stat_test=None, rounding_digits=0)
    assert "+0.1 [-0.5, +0.6]" in report.pairs_table()  # 0 decimals would print diff as 0, like its bounds
    assert comparison.distinguishing_digits([0.5, 0.50001], 3) == 5
    assert comparison.distinguishing_digits([0.5, 0.5], 3) == 3


def test_statistics_arguments_are_checked():
    qrels, runs = _random_case(0, 2)
    with pytest.raises(tieaware.errors.InputError, match="ci is the level"):
        tieaware.compare(qrels, runs, "P@2", ci=1.5)
    with pytest.raises(tieaware.errors.InputError, match="flip_samples"):
        tieaware.compare(qrels, runs, "P@2", flip_samples=-1)
