"""Tie-aware statistics of a paired comparison of two runs: pure functions on per-query arrays.

Notation (docs/comparison.md): per query q, runs A and B, the value of a metric under a uniformly
random order of each run's tied documents (independent between the runs) has expectation E, variance
Var and extremes min, max (the kernels' per-query statistics); d_q = E_A,q - E_B,q over Q queries,
diff = mean(d_q), s^2 their sample variance; D_tau = the mean difference under one random tie order.

* `difference_summary`: diff, its paired t-interval, the effect size d_z, the tie fraction, tie_sd.
* `flip_bound`, `sum_distribution`, `flip_probability`: P_tau(sign D_tau != sign diff), certified
  (Hoeffding, Bernstein) or exact (convolution of per-query distributions); for metrics that count
  relevant documents, `count_distributions` and `integer_sum_distribution` make it exact at any size.
* `t_test_p_bounds`, `enumerated_t_p_range`: the paired t-test's p-value under one tie order,
  its minimum and maximum over tie orders (certified bounds, or exact by enumeration).
* `adjust_p_values`: Bonferroni, Holm, Benjamini-Hochberg.

scipy is imported inside the functions that need it (``import tieaware`` stays light).
"""
from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import numpy as np

#: Differences of means at or below this count as equal (summation noise of float64 means).
EQUAL_TOLERANCE = 1e-12
#: `adjust_p_values`' methods (statsmodels' names)
CORRECTIONS = ("bonferroni", "holm", "fdr_bh")
#: Joint tie orders (combinations of distinct per-query values) enumerated at most.
ENUMERATION_LIMIT = 100_000
#: Decimals to which enumerated values are rounded before equal ones are merged.
_DECIMALS = 12
#: The smallest positive float: the least bound on a probability that ties can make positive.
_SMALLEST = float(np.nextafter(0.0, 1.0))
#: A variance of differences at most this share of their mean square is 0 (`t_statistic`): a standard
#: deviation 1e-7 of their root mean square, far below any spread of IR metrics that is not 0.
_ZERO_SPREAD = 1e-14


def sign(value: float | np.ndarray) -> np.ndarray:
    """-1, 0 or 1: the sign of a difference of means, 0 within `EQUAL_TOLERANCE`."""
    value = np.asarray(value, np.float64)
    return np.where(np.abs(value) <= EQUAL_TOLERANCE, 0, np.sign(value)).astype(np.int64)


def difference_summary(expected_a: np.ndarray, expected_b: np.ndarray, variance_a: np.ndarray,
                       variance_b: np.ndarray, level: float) -> dict[str, float]:
    """diff, its paired t-interval, the effect size d_z, the tie fraction lambda and tie_sd.

    With d_q = E_A,q - E_B,q, s its sample standard deviation and V_q = Var_A,q + Var_B,q:
    ``diff`` = mean(d_q); ``diff_ci_low/high`` = diff -+ t_{Q-1, (1+level)/2} s / sqrt(Q) (Student's
    paired interval); ``effect_size`` d_z = diff / s (Cohen's d for paired samples; NaN when s = 0);
    ``tie_fraction`` lambda = mean(V) / (s^2 + mean(V)): since E_tau[s_tau^2] = s^2 + mean(V) (the
    law of total variance per query, tie orders independent between queries), the share of a
    tie-oblivious test's variance that tie order adds (0 when s^2 and mean(V) are both 0);
    ``tie_sd`` = sqrt(sum_q V_q) / Q, the standard deviation of D_tau over tie orders.
    """
    d = np.asarray(expected_a, np.float64) - np.asarray(expected_b, np.float64)
    tie_variance = np.asarray(variance_a, np.float64) + np.asarray(variance_b, np.float64)
    n = d.size
    diff = float(d.mean()) if n else math.nan
    s2 = float(d.var(ddof=1)) if n > 1 else math.nan
    s = math.sqrt(s2) if n > 1 else math.nan
    mean_tie = float(tie_variance.mean()) if n else math.nan
    low = high = math.nan
    if n > 1:
        half = _t_quantile((1 + level) / 2, n - 1) * s / math.sqrt(n)
        low, high = diff - half, diff + half
    total = s2 + mean_tie
    return {
        "diff": diff, "diff_ci_low": low, "diff_ci_high": high,
        "effect_size": diff / s if n > 1 and s > 0 else math.nan,
        "tie_fraction": (mean_tie / total if total > 0 else 0.0) if n > 1 else math.nan,
        "tie_sd": math.sqrt(float(tie_variance.sum())) / n if n else math.nan,
    }


@functools.lru_cache(maxsize=64)
def _t_quantile(probability: float, degrees_of_freedom: int) -> float:
    """Student's t quantile (one scipy call per level and query count, not per pair)."""
    from scipy.stats import t as student

    return float(student.ppf(probability, degrees_of_freedom))


def flip_bound(diff: float, ranges: np.ndarray, variances: np.ndarray) -> float:
    """A certified upper bound on p_flip = P_tau(sign D_tau != sign diff).

    D_tau = mean_q X_q with X_q independent, E X_q = d_q, X_q in an interval of width
    r_q = range_A,q + range_B,q and Var X_q = V_q. For diff > 0 (diff < 0 by symmetry) the event is
    D_tau - diff <= -t with t = |diff| - EQUAL_TOLERANCE, bounded by the smaller of Hoeffding's
    exp(-2 Q^2 t^2 / sum r_q^2) and Bernstein's exp(-(Q t)^2 / (2 (sum V_q + b Q t / 3))), b = max r_q
    (|X_q - d_q| <= r_q), never below the smallest positive float (where exp underflows). Without
    ties (all r_q = 0) D_tau = diff and the bound is 0; for
    diff = 0 (p_flip = P(D_tau != 0)) the bound is 1 unless there are no ties.
    """
    ranges = np.asarray(ranges, np.float64)
    n = ranges.size
    width = float(np.square(ranges).sum())
    if width == 0:
        return 0.0
    t = abs(diff) - EQUAL_TOLERANCE
    if sign(diff) == 0 or t <= 0:
        return 1.0
    hoeffding = math.exp(-2 * (n * t) ** 2 / width)
    bernstein = math.exp(-(n * t) ** 2 / (2 * (float(np.sum(variances)) + float(ranges.max()) * n * t / 3)))
    return max(min(1.0, hoeffding, bernstein), _SMALLEST)  # exp underflows to 0, which bounds nothing here


def _merge(values: np.ndarray, probabilities: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Equal values (to `_DECIMALS` decimals) merged, their probabilities added."""
    support, inverse = np.unique(np.round(values, _DECIMALS), return_inverse=True)
    return support, np.bincount(inverse.ravel(), weights=probabilities.ravel(), minlength=support.size)


def difference_distribution(values_a: np.ndarray, values_b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distribution of X_A - X_B for one query: (values, probabilities), X_A uniform over
    `values_a` (one entry per equally likely tie order) and independent of X_B, uniform over `values_b`."""
    a, b = np.asarray(values_a, np.float64), np.asarray(values_b, np.float64)
    diffs = (a[:, None] - b[None, :]).ravel()
    return _merge(diffs, np.full(diffs.size, 1.0 / diffs.size))


def sum_distribution(distributions: Sequence[tuple[np.ndarray, np.ndarray]],
                     limit: int = ENUMERATION_LIMIT) -> tuple[np.ndarray, np.ndarray] | None:
    """The distribution of the sum of independent discrete variables (convolution, equal sums
    merged), or None once its support would exceed `limit` points."""
    values, probabilities = np.zeros(1), np.ones(1)
    for support, weights in distributions:
        if values.size * support.size > limit:
            return None
        values, probabilities = _merge(values[:, None] + support[None, :],
                                       probabilities[:, None] * weights[None, :])
    return values, probabilities


def count_distributions(fixed: np.ndarray, size: np.ndarray, relevant: np.ndarray, drawn: np.ndarray,
                        indicator: bool) -> tuple[np.ndarray, list[np.ndarray]]:
    """Per query, the distribution of the count ``fixed + X``, X hypergeometric (``drawn`` of ``size``
    documents, ``relevant`` of them relevant; `tieaware.tie_orders.CountLaw`), or with `indicator` of
    whether that count is positive: (lowest values (Q,), per query the probabilities of the lowest
    value, the next integer, ...)."""
    from scipy.stats import hypergeom

    fixed, size, relevant, drawn = (np.asarray(x, np.int64) for x in (fixed, size, relevant, drawn))
    low = np.maximum(0, drawn - (size - relevant))
    lengths = np.minimum(relevant, drawn) - low + 1
    first = np.cumsum(lengths) - lengths
    owner = np.repeat(np.arange(low.size), lengths)
    x = np.arange(int(lengths.sum())) - np.repeat(first, lengths) + low[owner]
    probabilities = np.ones(x.size)
    random = (lengths > 1)[owner]
    probabilities[random] = hypergeom.pmf(x[random], size[owner][random], relevant[owner][random],
                                          drawn[owner][random])
    pmfs = np.split(probabilities, first[1:])
    if not indicator:
        return fixed + low, pmfs
    lows, indicators = np.zeros(low.size, np.int64), []
    for q, pmf in enumerate(pmfs):
        none = float(pmf[0]) if fixed[q] == 0 and low[q] == 0 else 0.0  # P(count = 0)
        lows[q] = 1 if none == 0.0 else 0
        indicators.append(np.array([1.0]) if none in (0.0, 1.0) else np.array([none, 1.0 - none]))
    return lows, indicators


def _convolved(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The convolution of two probability vectors: direct when one is short, else by FFT."""
    if min(a.size, b.size) <= 64:
        return np.convolve(a, b)
    n = a.size + b.size - 1
    size = 1 << (n - 1).bit_length()
    return np.maximum(np.fft.irfft(np.fft.rfft(a, size) * np.fft.rfft(b, size), size)[:n], 0.0)


def integer_sum_distribution(lows: np.ndarray, pmfs: Sequence[np.ndarray]) -> tuple[int, np.ndarray]:
    """The distribution of a sum of independent integer variables, variable i taking ``lows[i] + j``
    with probability ``pmfs[i][j]``: (its lowest value, probabilities of it and the next integers).
    Convolved pairwise in a balanced tree, so that the long convolutions near the root go by FFT
    (O(N log N log n) for a support of N points), exact but for float rounding."""
    parts = [np.asarray(pmf, np.float64) for pmf in pmfs if len(pmf) > 1] or [np.ones(1)]  # others: points
    while len(parts) > 1:
        parts = [_convolved(parts[i], parts[i + 1]) if i + 1 < len(parts) else parts[i]
                 for i in range(0, len(parts), 2)]
    return int(np.sum(lows)), parts[0]


def flip_probability(diff: float, values: np.ndarray, probabilities: np.ndarray, n_queries: int) -> float:
    """P(sign(S / Q) != sign(diff)) for S distributed as (values, probabilities): p_flip from the
    exact distribution of the summed differences (`sum_distribution`)."""
    return float(probabilities[sign(np.asarray(values) / n_queries) != sign(diff)].sum())


def t_statistic(total: np.ndarray | float, total_squares: np.ndarray | float, n: int) -> np.ndarray:
    """Student's paired t = sqrt(n) mean / s from the sum and the sum of squares of n differences:
    +-inf when s = 0 and the mean is not 0, NaN when both are 0 (as scipy's ttest_rel). s^2 below
    `_ZERO_SPREAD` times the mean square counts as 0: the cancellation in sum d^2 - n mean^2 leaves
    about 1e-16 of the mean square where the differences are all equal."""
    total, total_squares = np.asarray(total, np.float64), np.asarray(total_squares, np.float64)
    mean = total / n
    s2 = np.maximum(total_squares - n * mean * mean, 0.0) / (n - 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        s2 = np.where(s2 <= _ZERO_SPREAD * total_squares / n, 0.0, s2)
        return np.sqrt(n) * mean / np.sqrt(s2)


def t_p_value(t: np.ndarray | float, n: int) -> np.ndarray:
    """Two-sided p-value of Student's t with n - 1 degrees of freedom (1 for NaN t: no difference)."""
    from scipy.stats import t as student

    t = np.abs(np.asarray(t, np.float64))
    return np.where(np.isnan(t), 1.0, 2 * student.sf(np.nan_to_num(t, nan=0.0), n - 1))


def _largest_t(low: np.ndarray, high: np.ndarray) -> float:
    """max of t(d) over the box low <= d <= high.

    Where t > 0 (mean > 0), dt/dd_q = 1/(Q s) - mean (d_q - mean) / ((Q-1) s^3) is decreasing in d_q,
    so the maximiser (which satisfies the KKT conditions: the box's constraints are linear) has
    d_q = clip(c, low_q, high_q) with one scalar c = mean + (Q-1) s^2 / (Q mean). Along c, between
    consecutive breakpoints (the sorted lows and highs) the clipped coordinates are fixed (sum a,
    sum of squares b) and k are free at c, and the stationary condition Q mean c = sum d^2 reads
    a c = b: c = b / a. So the maximum is at a breakpoint or at such a c: O(Q + T log T) work for T
    queries whose box is not a point (the others are constants of the sums).
    """
    n = low.size
    fixed_coordinates = low == high  # the same value for every c: constants of the sums
    constant, constant_squares = float(low[fixed_coordinates].sum()), float(np.square(low[fixed_coordinates]).sum())
    low, high = low[~fixed_coordinates], high[~fixed_coordinates]
    if low.size == 0:
        return float(t_statistic(constant, constant_squares, n))
    breakpoints = np.unique(np.concatenate([low, high]))
    sorted_low, sorted_high = np.sort(low), np.sort(high)
    low_sums = np.concatenate([[0.0], np.cumsum(sorted_low[::-1])])  # sums of the largest j lows
    low_squares = np.concatenate([[0.0], np.cumsum(np.square(sorted_low[::-1]))])
    high_sums = np.concatenate([[0.0], np.cumsum(sorted_high)])  # sums of the smallest j highs
    high_squares = np.concatenate([[0.0], np.cumsum(np.square(sorted_high))])

    def fixed(c: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        above = low.size - np.searchsorted(sorted_low, c, side="right")  # low_q > c: at low_q
        below = np.searchsorted(sorted_high, c, side="left")  # high_q < c: at high_q
        return (constant + low_sums[above] + high_sums[below],
                constant_squares + low_squares[above] + high_squares[below], low.size - above - below)

    middles = (breakpoints[:-1] + breakpoints[1:]) / 2
    a, b, _ = fixed(middles)
    with np.errstate(divide="ignore", invalid="ignore"):
        stationary = np.clip(b / a, breakpoints[:-1], breakpoints[1:])
    stationary = stationary[np.isfinite(stationary)]
    candidates = np.concatenate([breakpoints, stationary])
    a, b, free = fixed(candidates)
    t = t_statistic(a + free * candidates, b + free * candidates ** 2, n)
    return float(np.nanmax(t)) if np.isfinite(t).any() or np.isinf(t).any() else math.nan


def t_test_p_bounds(low: np.ndarray, high: np.ndarray) -> tuple[float, float]:
    """Certified bounds (p_min, p_max) on the extremes over tie orders of the paired t-test's
    p-value, from the per-query boxes [low_q, high_q] = [min_A - max_B, max_A - min_B] that hold
    every reachable difference: p_min <= the smallest p over tie orders, p_max >= the largest.

    p decreases in |t|. p_min comes from max |t| over the box (`_largest_t` on the box and on its
    mirror image -d), attained by a clip of one scalar. p_max comes from a lower bound on |t|:
    |mean| >= m_0, the distance from 0 to [sum low, sum high] / Q, and, for every d in the box and
    any mu, (Q-1) s^2 <= sum (d_q - mu)^2 <= sum max((low_q - mu)^2, (high_q - mu)^2), taken at mu
    the mean of the box's centres; so |t| >= sqrt(Q) m_0 / s_max. Without ties (low = high)
    both bounds are the one p-value.
    """
    low, high = np.asarray(low, np.float64), np.asarray(high, np.float64)
    n = low.size
    if n < 2:
        return math.nan, math.nan
    with np.errstate(invalid="ignore"):
        extremes = np.array([_largest_t(low, high), _largest_t(-high, -low)])
    largest = float(np.nanmax(extremes)) if not np.isnan(extremes).all() else math.nan
    p_min = float(t_p_value(largest, n))
    if np.array_equal(low, high):
        return p_min, p_min
    m_low, m_high = low.sum() / n, high.sum() / n
    m_0 = 0.0 if m_low <= 0 <= m_high else min(abs(m_low), abs(m_high))
    mu = (m_low + m_high) / 2
    s_max = math.sqrt(float(np.maximum(np.square(low - mu), np.square(high - mu)).sum()) / (n - 1))
    if m_0 == 0:
        return p_min, 1.0
    smallest = math.inf if s_max == 0 else math.sqrt(n) * m_0 / s_max
    return p_min, float(t_p_value(smallest, n))


def enumerated_t_p_range(supports: Sequence[np.ndarray],
                         limit: int = ENUMERATION_LIMIT) -> tuple[float, float] | None:
    """The exact (min, max) over tie orders of the paired t-test's p-value, each query's difference
    taking any value of its support (the distinct reachable differences), by enumerating every
    combination of distinct (sum, sum of squares); None when there would be more than `limit`."""
    n = len(supports)
    if n < 2:
        return None
    sums, squares = np.zeros(1), np.zeros(1)
    for support in supports:
        support = np.asarray(support, np.float64)
        if sums.size * support.size > limit:
            return None
        sums = (sums[:, None] + support[None, :]).ravel()
        squares = (squares[:, None] + np.square(support)[None, :]).ravel()
        _, first = np.unique(np.round(np.stack([sums, squares]), _DECIMALS), axis=1, return_index=True)
        sums, squares = sums[first], squares[first]  # one of each (rounded) pair, kept unrounded
    p = t_p_value(t_statistic(sums, squares, n), n)
    return float(p.min()), float(p.max())


def adjust_p_values(p_values: np.ndarray, method: str | None) -> np.ndarray:
    """p-values adjusted for multiple comparisons (NaN entries left out and kept NaN).

    ``"bonferroni"``: min(1, m p); ``"holm"`` (Holm 1979, step-down): the i-th smallest becomes
    max_{j <= i} min(1, (m - j + 1) p_(j)); ``"fdr_bh"`` (Benjamini & Hochberg 1995, step-up):
    min_{j >= i} min(1, m p_(j) / j). Each adjusted p-value is non-decreasing in every raw p-value,
    so adjusting upper bounds (p_max) gives upper bounds of the adjusted p-values under every tie order.
    """
    p = np.asarray(p_values, np.float64)
    if method is None:
        return p.copy()
    if method not in CORRECTIONS:
        raise ValueError(f"correction must be one of {CORRECTIONS} or None, got {method!r}")
    out = np.full(p.shape, np.nan)
    present = ~np.isnan(p)
    values = p[present]
    m = values.size
    if m == 0:
        return out
    if method == "bonferroni":
        out[present] = np.minimum(1.0, m * values)
        return out
    order = np.argsort(values, kind="stable")
    ranked = values[order]
    if method == "holm":
        adjusted = np.maximum.accumulate(np.minimum(1.0, (m - np.arange(m)) * ranked))
    else:
        adjusted = np.minimum.accumulate((m * ranked / np.arange(1, m + 1))[::-1])[::-1]
        adjusted = np.minimum(1.0, adjusted)
    result = np.empty(m)
    result[order] = adjusted
    out[present] = result
    return out


def verdict(p_min: float, p_max: float, max_p: float) -> str | None:
    """"robust" (p_max <= max_p: significant under every tie order), "not significant" (p_min > max_p:
    under none), "fragile" (it depends on tie order, or bounds too loose to tell); None without bounds."""
    if math.isnan(p_min) or math.isnan(p_max):
        return None
    if p_max <= max_p:
        return "robust"
    if p_min > max_p:
        return "not significant"
    return "fragile"
