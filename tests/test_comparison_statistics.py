"""`compare`'s tie-aware pair statistics against brute-force enumeration of every joint tie order.

The reference shares no code with `tieaware.comparison_statistics` or `tieaware.tie_orders`: every
order of every tie group is written out with itertools.permutations as a tie-free run (scores by
position), scored by `tieaware.evaluate` (tie-free: one value, checked against pytrec_eval
elsewhere), and the joint orders of all queries of both runs are enumerated by product.
"""
import itertools
import math
import warnings
from fractions import Fraction

import numpy as np
import pytest
from scipy.stats import ttest_rel
from statsmodels.stats.multitest import multipletests

import tieaware
from tieaware import comparison
from tieaware.comparison_statistics import (
    adjust_p_values,
    count_distributions,
    flip_bound,
    integer_sum_distribution,
    t_test_p_bounds,
)

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


COUNTING = ["P@2", "success.1", "hit_rate@2", "hits@3", "P@5", "hits"]


@pytest.mark.parametrize("seed,n_queries", _cases()[:6])
def test_counting_metrics_are_exact_without_enumeration(monkeypatch, seed, n_queries):
    """P@k, Success@k and hits: p_flip from the hypergeometric count of each query, convolved, equals
    the enumeration of every joint tie order (which the test above checks against brute force)."""
    qrels, runs = _random_case(seed, n_queries)
    enumerated = tieaware.compare(qrels, runs, COUNTING, seed=1).pairs
    monkeypatch.setattr(comparison, "MAX_ENUMERATED_QUERIES", 0)
    counted = tieaware.compare(qrels, runs, COUNTING, seed=1, flip_samples=0).pairs  # no Monte Carlo to fall to
    for metric in COUNTING:
        truth, row = enumerated.loc[(metric, "A", "B")], counted.loc[(metric, "A", "B")]
        assert truth["p_flip_exact"] and row["p_flip_exact"], metric
        assert row["p_flip"] == pytest.approx(truth["p_flip"], abs=1e-12), metric
        assert row["p_flip_se"] == 0.0


def _large_tie_case(seed: int):
    """30 queries, 40-80 documents each with scores on 3 levels (tie groups of 10-30 around every
    cutoff, far past enumeration), binary judgments on about a third of them."""
    rng = np.random.default_rng(seed)
    qrels, runs = {}, {"A": {}, "B": {}}
    for q in range(30):
        docs = [f"d{i}" for i in range(int(rng.integers(40, 81)))]
        qrels[f"q{q}"] = {d: int(rng.random() < 0.35) for d in docs if rng.random() < 0.9}
        for name, shift in (("A", 0.0), ("B", 0.1)):
            runs[name][f"q{q}"] = {d: float(rng.integers(0, 3)) + (shift if rng.random() < 0.1 else 0.0) for d in docs}
    return qrels, runs


def _count_law(qrels: dict, scores: dict, k: int) -> dict[int, Fraction]:
    """{relevant documents in the top k: probability} over uniformly random orders of the ties,
    with exact fractions: the groups wholly inside the top k count, the crossing group is hypergeometric."""
    levels = sorted(set(scores.values()), reverse=True)
    above, fixed = 0, 0
    for level in levels:
        group = [d for d in scores if scores[d] == level]
        relevant = sum(qrels.get(d, 0) >= 1 for d in group)
        if above + len(group) <= k:
            fixed, above = fixed + relevant, above + len(group)
            continue
        drawn = k - above
        if drawn <= 0:
            break
        total = math.comb(len(group), drawn)
        return {fixed + x: Fraction(math.comb(relevant, x) * math.comb(len(group) - relevant, drawn - x), total)
                for x in range(0, min(relevant, drawn) + 1)
                if math.comb(relevant, x) * math.comb(len(group) - relevant, drawn - x)}
    return {fixed: Fraction(1)}


def _exact_flip(qrels: dict, runs: dict, k: int, indicator: bool) -> float:
    """P(sign of the summed count difference != sign of its mean) from exact per-query laws,
    convolved as dicts of Fractions."""
    total = {0: Fraction(1)}
    for q in qrels:
        law_a, law_b = (_count_law(qrels[q], runs[name][q], k) for name in ("A", "B"))
        if indicator:
            law_a, law_b = _positive(law_a), _positive(law_b)
        difference: dict[int, Fraction] = {}
        for a, pa in law_a.items():
            for b, pb in law_b.items():
                difference[a - b] = difference.get(a - b, Fraction(0)) + pa * pb
        step: dict[int, Fraction] = {}
        for s, p in total.items():
            for d, pd in difference.items():
                step[s + d] = step.get(s + d, Fraction(0)) + p * pd
        total = step
    mean = sum(s * p for s, p in total.items())
    truth = (mean > 0) - (mean < 0)
    return float(sum(p for s, p in total.items() if (s > 0) - (s < 0) != truth))


def _positive(law: dict[int, Fraction]) -> dict[int, Fraction]:
    out: dict[int, Fraction] = {}
    for count, p in law.items():
        out[int(count > 0)] = out.get(int(count > 0), Fraction(0)) + p
    return out


def test_counting_metrics_are_exact_on_tie_groups_past_enumeration():
    """Groups of 10-30 tied documents around the cutoff (10^7 orders and more per query): p_flip of P@10,
    hits@10 and Success@5 equals an independent exact computation with fractions."""
    qrels, runs = _large_tie_case(7)
    report = tieaware.compare(qrels, runs, ["P@10", "hits@10", "Success@5"], flip_samples=0).pairs
    for metric, k, indicator in (("P@10", 10, False), ("hits@10", 10, False), ("Success@5", 5, True)):
        row = report.loc[(metric, "A", "B")]
        assert row["p_flip_exact"] and row["p_flip_se"] == 0.0, metric
        truth = _exact_flip(qrels, runs, k, indicator)
        assert 0 < truth < 1
        assert row["p_flip"] == pytest.approx(truth, abs=1e-9), metric
        assert row["p_flip"] <= row["p_flip_bound"] + 1e-12


def test_count_distributions_and_their_sum():
    fixed, size, relevant, drawn = np.array([2, 0, 1, 3]), np.array([7, 0, 5, 9]), np.array([3, 0, 5, 0]), \
        np.array([4, 0, 2, 5])
    lows, pmfs = count_distributions(fixed, size, relevant, drawn, indicator=False)
    for q in range(4):
        law = {c: float(p) for c, p in _count_law(
            {f"d{i}": int(i < relevant[q]) for i in range(size[q])} | {f"f{i}": 1 for i in range(fixed[q])},
            {f"f{i}": 2.0 for i in range(fixed[q])} | {f"d{i}": 1.0 for i in range(size[q])},
            fixed[q] + drawn[q]).items()}
        assert dict(zip(range(int(lows[q]), int(lows[q]) + pmfs[q].size), pmfs[q].tolist())) == pytest.approx(law)
    lows, pmfs = count_distributions(np.array([0, 1]), np.array([4, 4]), np.array([2, 2]), np.array([1, 1]), True)
    assert lows.tolist() == [0, 1] and pmfs[0].tolist() == pytest.approx([0.5, 0.5]) and pmfs[1].tolist() == [1.0]
    rng = np.random.default_rng(3)  # long supports convolve by FFT: equal to direct convolution
    parts = [rng.random(int(rng.integers(1, 200))) for _ in range(9)]
    parts = [part / part.sum() for part in parts]
    direct = parts[0]
    for part in parts[1:]:
        direct = np.convolve(direct, part)
    low, summed = integer_sum_distribution(np.arange(9), parts)
    assert low == 36 and summed == pytest.approx(direct, abs=1e-14) and summed.sum() == pytest.approx(1.0)


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


def test_compare_reads_each_run_once(monkeypatch):
    """Its evaluation and its tie-order statistics (here the exact counts of P@2) share the lists."""
    from tieaware.readers import pairs

    qrels, runs = _random_case(2, 4)
    reads = []
    read = pairs.ranked_lists
    monkeypatch.setattr(pairs, "ranked_lists", lambda *args, **kwargs: reads.append(1) or read(*args, **kwargs))
    monkeypatch.setattr(comparison, "MAX_ENUMERATED_QUERIES", 0)
    report = tieaware.compare(qrels, runs, ["P@2", "ndcg@3"], flip_samples=0)
    assert report.pairs.loc[("P@2", "A", "B"), "p_flip_exact"]
    assert len(reads) == len(runs)
