"""AP's variance over tie orders, now a closed form in O(t) per tie group (`families.ap._group_variance`):
equal to enumeration of where a group's relevant documents land, scored by the independent reference,
and to the O(t * min(t, r)) dynamic programme over slots that it replaced, on groups of thousands."""
import itertools
import statistics

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference import point_metric

import tieaware
from tieaware.metrics import parse_metric


@st.composite
def tied_query(draw, largest):
    """Documents above with distinct scores, a tie group of up to `largest` and maybe one of up to 5, then
    documents below; graded judgments (relevant at level 1 or 2, judged non-relevant, unjudged) and
    relevant documents never retrieved. Returns (scores, judgments, the tie groups as lists of doc ids)."""
    grade = st.sampled_from([None, 0, 1, 2, 2, 3])
    scores, judgments, groups = {}, {}, []
    for i in range(draw(st.integers(0, 4))):
        scores[f"a{i}"] = 10.0 - i
        judgments[f"a{i}"] = draw(grade)
    sizes = [draw(st.integers(2, largest))] + draw(st.lists(st.integers(2, 5), max_size=1))
    for n, size in enumerate(sizes):
        group = [f"g{n}_{i}" for i in range(size)]
        many = draw(st.booleans())  # most of the group relevant, or any mix
        for d in group:
            scores[d] = 5.0 - n
            judgments[d] = draw(st.sampled_from([2, 3, 3, None]) if many else grade)
        groups.append(group)
    for i in range(draw(st.integers(0, 2))):
        scores[f"b{i}"] = -float(i)
        judgments[f"b{i}"] = draw(grade)
    for i in range(draw(st.integers(0, 2))):
        judgments[f"u{i}"] = draw(st.sampled_from([1, 2]))
    return scores, {d: g for d, g in judgments.items() if g is not None}, groups


def placements(scores, groups, relevant):
    """Every ranking that puts each group's relevant documents at one subset of the group's slots (the
    rest in a fixed order): the r-subsets are equally likely under uniform tie orders, and AP depends on
    the order only through them."""
    order = sorted(scores, key=lambda d: -scores[d])
    start = {id(g): order.index(g[0]) for g in groups}
    choices = []
    for group in groups:
        rel = [d for d in group if d in relevant]
        rest = [d for d in group if d not in relevant]
        choices.append([(group, rel, rest, set(slots)) for slots in itertools.combinations(range(len(group)),
                                                                                           len(rel))])
    for combo in itertools.product(*choices):
        ranking = list(order)
        for group, rel, rest, slots in combo:
            rel_iter, rest_iter = iter(rel), iter(rest)
            for i in range(len(group)):
                ranking[start[id(group)] + i] = next(rel_iter) if i in slots else next(rest_iter)
        yield ranking


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tied_query(largest=11), st.integers(1, 20))
def test_variance_equals_enumeration_of_relevant_slots(query, k):
    """Groups up to 11 documents, cutoffs inside and beyond them, levels 1 and 2."""
    scores, judgments, groups = query
    names = ["map", f"map@{k}", "map-l2", f"AP(rel=2)@{k}"]
    report = tieaware.evaluate({"q": judgments}, {"q": scores}, names)
    for name in names:
        spec = parse_metric(name)
        relevant = {d for d, g in judgments.items() if g >= spec.relevance_level}
        values = [point_metric(spec, ranking, judgments) for ranking in placements(scores, groups, relevant)]
        row = report[name].per_query.loc["q"]
        assert row["expected"] == pytest.approx(statistics.fmean(values), rel=1e-12, abs=1e-15), name
        assert row["variance"] == pytest.approx(statistics.pvariance(values), rel=1e-9, abs=1e-15), name


def sequential_variance(above, size, relevant, slots, rel_above):
    """Var of a group's AP numerator by the former kernel's dynamic programme, vectorised over the state s
    (relevant among the slots filled so far): slot u is relevant with probability (r - s)/(g - u) and then
    adds (rel_above + s + 1)/(above + u + 1); per state, the probability and the partial sum's first two
    moments, in extended precision (m2 - m1^2 cancels up to nine digits when nearly all are relevant)."""
    states = np.arange(min(slots, relevant) + 1)
    prob, m1, m2 = (np.zeros(states.size + 1, np.longdouble) for _ in range(3))
    prob[0] = 1
    for u in range(slots):
        s = states[:min(u, relevant) + 1]
        q = (relevant - s).astype(np.longdouble) / (size - u)
        v = (rel_above + s + np.longdouble(1)) / (above + u + 1)
        moved = q * prob[s], q * (m1[s] + v * prob[s]), q * (m2[s] + 2 * v * m1[s] + v * v * prob[s])
        for moment, step in zip((prob, m1, m2), moved):
            moment[s] *= 1 - q
            moment[s + 1] += step
    return float(m2.sum() - m1.sum() ** 2)


#: how closely `sequential_variance` holds: 1e-10 with x86's 64-bit long double mantissa; where long double
#: is double (macOS on arm64), its m2 - m1^2 keeps about 8 digits
REFERENCE_PRECISION = max(1e-10, 1e8 * float(np.finfo(np.longdouble).eps))


@st.composite
def moderate_query(draw):
    """One group of up to 2,000 documents, r from 1 to g - 1 (often nearly all), below `above` documents
    of which `rel_above` are relevant, a cutoff inside the group or beyond, relevant documents not retrieved."""
    size = draw(st.integers(2, 2000))
    relevant = draw(st.one_of(st.integers(1, size - 1), st.integers(max(1, size - 20), size - 1),
                              st.integers(1, min(size - 1, 20))))
    above = draw(st.integers(0, 60))
    rel_above = draw(st.integers(0, above))
    k = draw(st.one_of(st.none(), st.integers(above + 1, above + size)))
    missing = draw(st.integers(0, 30))
    return size, relevant, above, rel_above, k, missing


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(moderate_query(), st.randoms(use_true_random=False))
def test_variance_equals_the_sequential_programme(case, rng):
    size, relevant, above, rel_above, k, missing = case
    above_grades = [2] * rel_above + [1] * (above - rel_above)  # level 2: grade 1 is judged non-relevant
    rng.shuffle(above_grades)
    group_grades = [3] * relevant + rng.choices([None, 0, 1], k=size - relevant)
    rng.shuffle(group_grades)
    scores = {**{f"a{i}": 2.0 + above - i for i in range(above)}, **{f"g{i}": 1.0 for i in range(size)}}
    judgments = {**{f"a{i}": g for i, g in enumerate(above_grades)},
                 **{f"g{i}": g for i, g in enumerate(group_grades) if g is not None},
                 **{f"u{i}": 2 for i in range(missing)}}
    name = "map-l2" if k is None else f"AP(rel=2)@{k}"
    result = tieaware.evaluate({"q": judgments}, {"q": scores}, name)
    slots = size if k is None else k - above
    n_rel = rel_above + relevant + missing
    expected = sequential_variance(above, size, relevant, slots, rel_above) / n_rel ** 2
    assert result.per_query.loc["q", "variance"] == pytest.approx(expected, rel=REFERENCE_PRECISION)


def test_variance_of_a_long_group_with_few_relevant_equals_the_sequential_programme():
    """20,000 tied documents, 100 relevant, cut at 15,000: long compensated sums."""
    size, relevant, k = 20_000, 100, 15_000
    scores = {f"d{i}": 1.0 for i in range(size)}
    judgments = {f"d{i}": 1 for i in range(0, size, size // relevant)}
    result = tieaware.evaluate({"q": judgments}, {"q": scores}, f"map@{k}")
    expected = sequential_variance(0, size, relevant, k, 0) / relevant ** 2
    assert result.tie_std ** 2 == pytest.approx(expected, rel=REFERENCE_PRECISION)
