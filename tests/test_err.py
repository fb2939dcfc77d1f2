"""ERR@k (gdeval's, ir_measures' ERR@k): hand-computed values, large tie groups against an exact
enumeration of where the group's graded members land, gdeval's grade rules (parity with gdeval
itself: test_parity.py); trec_eval 10's rbp by hand."""
import itertools
import math
import statistics

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from reference import point_metric, trec_eval_order

import tieaware
from tieaware.errors import InputError
from tieaware.metrics import parse_metric


def test_two_tied_documents_by_hand():
    """R(4) = 15/16: first gives 15/16, second 15/32 (R(0) = 0 leaves the user looking)."""
    res = tieaware.evaluate({"1": {"a": 4, "b": 0}}, {"1": {"a": 1.0, "b": 1.0}}, "ERR@2")
    assert res.min == pytest.approx(15 / 32) and res.max == pytest.approx(15 / 16)
    assert res.expected == pytest.approx(45 / 64)
    assert res.per_query.loc["1", "variance"] == pytest.approx((15 / 64) ** 2)
    assert res.oblivious == pytest.approx(15 / 32)  # trec_eval's order: doc id descending, b first


def test_cascade_and_cutoff_by_hand():
    """Grades 2, 1, 3 at ranks 1-3: R = 3/16, 1/16, 7/16; ERR@2 stops after rank 2."""
    qrels = {"1": {"a": 2, "b": 1, "c": 3}}
    run = {"1": {"a": 3.0, "b": 2.0, "c": 1.0}}
    r1, r2, r3 = 3 / 16, 1 / 16, 7 / 16
    at2 = r1 + (1 - r1) * r2 / 2
    at3 = at2 + (1 - r1) * (1 - r2) * r3 / 3
    report = tieaware.evaluate(qrels, run, ["ERR@1", "ERR@2", "ERR@3", "ERR@100"])
    assert [report[n].expected for n in ("ERR@1", "ERR@2", "ERR@3", "ERR@100")] == pytest.approx([r1, at2, at3, at3])
    assert report["ERR@3"].per_query.loc["1", "variance"] == 0.0


def test_negative_and_unjudged_count_as_zero():
    qrels = {"1": {"a": -2, "b": 0, "c": 1}}
    run = {"1": {"a": 4.0, "u": 3.0, "b": 2.0, "c": 1.0}}
    assert tieaware.evaluate(qrels, run, "ERR@4").expected == pytest.approx(1 / 16 / 4)


def test_grade_above_four_is_refused_naming_the_query():
    qrels = {"1": {"a": 4}, "7": {"b": 5}}
    run = {"1": {"a": 1.0}, "7": {"b": 1.0}}
    with pytest.raises(InputError, match=r"query '7' has grade 5 .*up to 4"):
        tieaware.evaluate(qrels, run, "ERR@10")
    assert tieaware.evaluate(qrels, run, "nDCG@10").expected == 1.0  # other measures take any grade


def test_non_integer_grade_is_refused_naming_the_query():
    """gdeval reads integer grades only; a fractional grade would also make every distinct value its
    own state dimension in the dynamic programme."""
    with pytest.raises(InputError, match=r"query '2' has grade 1.5 .*integer grades up to 4"):
        tieaware.evaluate({"1": {"a": 2.0}, "2": {"b": 1.5}}, {"1": {"a": 1.0}, "2": {"b": 1.0}}, "ERR@5")


def _expected_by_relevant_order(grades, g, c, k):
    """E[ERR@k] of one group of g tied documents after c fixed non-relevant ones, the positive `grades`
    among them: the relevant members' relative order and their slot set are independent, so
    E = sum_l E[R_(l) prod_{l' < l} (1 - R_(l'))] E[1/rank of the l-th relevant], the first factor by
    elementary symmetric polynomials of the other members' (1 - R), the second by order statistics."""
    satisfied = [(2.0 ** x - 1) / 16 for x in grades]
    r = len(satisfied)
    total = 0.0
    for l in range(r):  # 0-based: l relevant members come before
        cascade = 0.0
        for i, value in enumerate(satisfied):
            symmetric = [1.0] + [0.0] * l  # e_0..e_l of the others' (1 - R)
            for j, other in enumerate(satisfied):
                if j != i:
                    for m in range(l, 0, -1):
                        symmetric[m] += (1.0 - other) * symmetric[m - 1]
            cascade += value * symmetric[l] / math.comb(r - 1, l) / r
        slot = sum(math.comb(j - 1, l) * math.comb(g - j, r - l - 1) / (c + j) for j in range(1, min(g, k - c) + 1))
        total += cascade * slot / math.comb(g, r)
    return total


@pytest.mark.parametrize("k", [4, 30, 83, 200])
def test_many_relevant_of_every_grade_in_one_group(k):
    """80 tied documents, 6 of each grade 1-4 (dozens of relevant members: no enumeration of their
    orders is possible), after 3 non-relevant ones: E against the independent formula above, and
    the variance within [0, (max - min)^2 / 4]."""
    grades = [1 + i % 4 for i in range(24)]
    qrels = {"q": {**{f"t{i:02d}": x for i, x in enumerate(grades)}, "a0": 0, "a1": 0}}
    run = {"q": {**{f"t{i:02d}": 1.0 for i in range(80)}, "a0": 3.0, "a1": 2.0, "a2": 1.5}}
    row = tieaware.evaluate(qrels, run, f"ERR@{k}").per_query.loc["q"]
    assert row["expected"] == pytest.approx(_expected_by_relevant_order(grades, 80, 3, k), rel=1e-12)
    assert 0.0 < row["variance"] <= (row["max"] - row["min"]) ** 2 / 4


def test_names():
    spec = parse_metric("ERR@20")
    assert (spec.family, spec.k) == ("err", 20)
    with pytest.raises(tieaware.errors.UnknownMetricError, match="cutoff"):
        parse_metric("ERR")


def _enumerated(above, group, below, judgments, k):
    """(mean, population variance, min, max) of ERR@k over every placement of the group's judged
    members among its slots (unjudged members are interchangeable, so this covers every ordering
    with its multiplicity). above/below: documents in fixed order; group: tied documents."""
    spec = parse_metric(f"ERR@{k}")
    judged = [d for d in group if d in judgments]
    filler = [d for d in group if d not in judgments]
    values = []
    for slots in itertools.permutations(range(len(group)), len(judged)):
        arrangement = [None] * len(group)
        for doc, slot in zip(judged, slots):
            arrangement[slot] = doc
        rest = iter(filler)
        ranking = above + [d if d is not None else next(rest) for d in arrangement] + below
        values.append(point_metric(spec, ranking, judgments))
    return statistics.fmean(values), statistics.pvariance(values), min(values), max(values)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 4), st.integers(5, 40), st.lists(st.sampled_from([-1, 0, 1, 2, 3, 4]), min_size=1, max_size=3),
       st.integers(1, 50), st.lists(st.integers(0, 4), min_size=0, max_size=3))
@example(2, 40, [4, 1, 4], 20, [1, 3])  # cutoff inside the group
@example(1, 30, [2, 3, 1], 31, [2])  # cutoff at the group's last slot
@example(0, 25, [3, 3], 50, [])  # cutoff past the group: the documents below count
def test_large_group_matches_enumeration(n_above, g, group_grades, k, above_grades):
    """Groups far past brute force over orderings (up to 40 documents), a few judged members with
    mixed grades, graded documents above (the carried product) and below, cutoffs anywhere."""
    above = [f"a{i}" for i in range(n_above)]
    group = [f"t{i:02d}" for i in range(g)]
    below = ["z0", "z1"]
    judgments = {d: grade for d, grade in zip(above, above_grades)}
    judgments.update({f"t{i:02d}": grade for i, grade in enumerate(group_grades)})
    judgments.update({"z0": 4, "z1": 2})
    run = {"q": {**{d: 10.0 - i for i, d in enumerate(above)}, **dict.fromkeys(group, 1.0), "z0": 0.5, "z1": 0.25}}
    mean, variance, low, high = _enumerated(above, group, below, judgments, k)
    row = tieaware.evaluate({"q": judgments}, run, f"ERR@{k}").per_query.loc["q"]
    assert row["expected"] == pytest.approx(mean, abs=1e-12)
    assert row["variance"] == pytest.approx(variance, abs=1e-12)
    assert (row["min"], row["max"]) == pytest.approx((low, high), abs=1e-12)
    assert row["oblivious"] == pytest.approx(point_metric(parse_metric(f"ERR@{k}"), trec_eval_order(run["q"]),
                                                          judgments), abs=1e-12)


def test_hundreds_tied_with_a_handful_relevant_is_fast_and_bounded():
    """500 tied documents, 6 graded among them, ERR@100: E lies between min and max, Var >= 0, and
    E equals the enumeration over the relevant members' ordered slot sets on a smaller copy."""
    import time

    group = {f"d{i:03d}": 1.0 for i in range(500)}
    judgments = {"d000": 4, "d001": 3, "d002": 3, "d003": 1, "d004": 2, "d005": 4}
    start = time.perf_counter()
    row = tieaware.evaluate({"q": judgments}, {"q": group}, "ERR@100").per_query.loc["q"]
    assert time.perf_counter() - start < 30
    assert row["min"] <= row["expected"] <= row["max"] and row["variance"] > 0
    # E[ERR@k] with k past the group of g: every relevant document counts, so E is a sum over the
    # permutation of the 6 graded members and their slots' order statistics; check k >= g on 500.
    full = tieaware.evaluate({"q": judgments}, {"q": group}, "ERR@500").expected
    grades = list(judgments.values())
    satisfied = [(2.0 ** x - 1) / 16 for x in grades]
    # P(l-th relevant of r in slot j) = C(j-1, l-1) C(g-j, r-l) / C(g, r)
    g, r = 500, len(grades)
    slot_mean = [sum(math.comb(j - 1, l) * math.comb(g - j, r - l - 1) / j for j in range(1, g + 1)) / math.comb(g, r)
                 for l in range(r)]
    cascade = [0.0] * r  # E over the members' order of R_(l) prod_{l' < l} (1 - R_(l'))
    for order in itertools.permutations(range(r)):
        still = 1.0
        for l, member in enumerate(order):
            cascade[l] += satisfied[member] * still
            still *= 1.0 - satisfied[member]
    expected = sum(c / math.factorial(r) * w for c, w in zip(cascade, slot_mean))
    assert full == pytest.approx(expected, rel=1e-10)


def test_trec_eval_rbp_rescales_grades_by_hand():
    """trec_eval 10's m_rbp.c: gains are grades over the query's top grade when it exceeds 1."""
    assert tieaware.evaluate({"q": {"d1": 3, "d2": 0}}, {"q": {"d1": 1.0}}, "rbp").expected == pytest.approx(0.1)
    qrels = {"q": {"d1": 2, "d2": 1, "d3": -1, "d9": 4}}  # top grade 4, from a document never retrieved
    run = {"q": {"d2": 3.0, "d3": 2.0, "d1": 1.0}}
    report = tieaware.evaluate(qrels, run, ["rbp.p=0.5", "RBP(p=0.5)"])
    assert report["rbp.p=0.5"].expected == pytest.approx(0.5 * (1 / 4 + 0.25 * 2 / 4))
    assert report["RBP(p=0.5)"].expected == pytest.approx(0.5 * (1 + 0.25 * 2))  # ir_measures: the grade itself
    binary = tieaware.evaluate({"q": {"d1": 1}}, {"q": {"x": 2.0, "d1": 1.0}}, "rbp")  # top grade 1: unchanged
    assert binary.expected == pytest.approx(0.1 * 0.9)
    spec = parse_metric("rbp.p=0.95")
    assert (spec.family, spec.gain, spec.persistence, spec.k) == ("rbp", "scaled", 0.95, None)
    with pytest.raises(tieaware.errors.UnknownMetricError, match="not a number"):
        parse_metric("rbp.p=high")
    with pytest.raises(tieaware.errors.UnknownMetricError, match=r"\(0, 1\)"):
        parse_metric("rbp.p=1.5")


# ------------------------------------------------- the exact programme's cost is bounded
def _one_big_group(per_grade: int, size: int = 1000):
    """One query, every document tied: `per_grade` judged documents of each grade 1..4, the rest 0."""
    qrels = {"q": {f"d{i}": (i % 4) + 1 if i < 4 * per_grade else 0 for i in range(size)}}
    return qrels, {"q": {f"d{i}": 1.0 for i in range(size)}}


def test_a_group_too_costly_for_the_exact_programme_is_refused_naming_the_query():
    """ERR@1000 over one 1,000-document group with 40 judged per grade: ~1.4e10 steps (it took ~80 s);
    refused before any step, naming the query and the ways out."""
    qrels, run = _one_big_group(40)
    with pytest.raises(InputError, match=r"ERR@1000: query 'q' has a tie group whose exact ERR needs about "
                                         r"1\.4e\+10 steps.*MAX_DP_STEPS.*smaller cutoff") as caught:
        tieaware.evaluate(qrels, run, "ERR@1000")
    assert isinstance(caught.value, tieaware.TieawareError)
    assert float(tieaware.evaluate(qrels, run, "ERR@20")) > 0  # the same group, at gdeval's cutoff


def test_the_limit_is_read_at_each_call(monkeypatch):
    """A group under the limit is computed exactly (brute force agrees); one step less refuses it:
    `dp_steps` counts the programme's steps."""
    from tieaware.kernels.families import err

    qrels = {"1": {"a": 4, "b": 2, "c": 1, "d": 0}}
    run = {"1": {"a": 1.0, "b": 1.0, "c": 1.0, "d": 1.0, "e": 1.0}}
    values = [point_metric(parse_metric("ERR@4"), list(order), qrels["1"]) for order in itertools.permutations("abcde")]
    assert tieaware.evaluate(qrels, run, "ERR@4").expected == pytest.approx(statistics.fmean(values))
    # its programme: 4 layers of 2 * 2 * 2 states (0 or 1 drawn of each graded document), 4 value kinds
    monkeypatch.setattr(err, "MAX_DP_STEPS", 4 * 8 * 4)
    assert tieaware.evaluate(qrels, run, "ERR@4").expected == pytest.approx(statistics.fmean(values))
    monkeypatch.setattr(err, "MAX_DP_STEPS", 4 * 8 * 4 - 1)
    with pytest.raises(InputError, match="query '1' has a tie group whose exact ERR needs about 1.3e\\+02 steps"):
        tieaware.evaluate(qrels, run, "ERR@4")
