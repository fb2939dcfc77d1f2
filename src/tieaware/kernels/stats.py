"""Per-query E[M], Var[M], min, max and the oblivious value over tie orderings.

Notation (DESIGN.md, "TRM closed forms"): judged groups n in score order, g_n
documents, r_n relevant, c_n documents above, t_n = clip(k - c_n, 0, g_n) of its
slots inside the cutoff, R relevant in the qrels, N judged non-relevant.
Orderings inside different groups are independent, so expectations and
variances add over groups. Sources: McSherry & Najork (ECIR 2008) for E[DCG],
E[RR], E[AP]; Yang et al. (arXiv 2508.03306) for the tie-aware protocol; the
variance of a linear permutation statistic, Var[sum_j w_j a_pi(j)] =
S_ww S_aa / (g - 1), for gains linear in position weights.

Extremes come from point evaluations: best-first (judgment descending) inside
every group gives the maximum of every metric here, worst-first the minimum.
"""
import numpy as np
from numba import njit, prange

HITS, PRECISION, RECALL, F1, RPREC, SUCCESS, RR, AP, DCG, NDCG, BPREF, RBP = range(12)
FAMILY_CODES = {"hits": HITS, "precision": PRECISION, "recall": RECALL, "f1": F1, "rprec": RPREC,
                "success": SUCCESS, "rr": RR, "ap": AP, "dcg": DCG, "ndcg": NDCG, "bpref": BPREF,
                "rbp": RBP}
GAIN_CODES = {"binary": 0, "linear": 1, "exp": 2}
ORDER_BEST, ORDER_WORST, ORDER_TOOL = 0, 1, 2


@njit(cache=True, inline="always")
def gain_of(rel, gain_code, level, floor):
    """Binary: 1 if rel >= level. Linear: rel. Exp: 2^rel - 1. Grades <= 0 or below floor gain 0."""
    if gain_code == 0:
        return 1.0 if rel >= level else 0.0
    if rel <= 0.0 or rel < floor:
        return 0.0
    if gain_code == 1:
        return rel
    return 2.0 ** rel - 1.0


@njit(cache=True)
def _cutoff(family, k, n_ret, n_rel):
    """Effective cutoff: k, else the whole list (R for R-precision)."""
    if family == RPREC:
        return n_rel
    if k > 0:
        return k
    return n_ret


@njit(cache=True)
def _hits_scale(family, k, n_ret, n_rel):
    """H -> metric: P = H/k, R = H/R, F1 = 2H/(k+R), R-prec = H/R."""
    if family == HITS:
        return 1.0
    if family == PRECISION:
        denom = k if k > 0 else n_ret
        return 1.0 / denom if denom > 0 else 0.0
    if family == RECALL or family == RPREC:
        return 1.0 / n_rel if n_rel > 0 else 0.0
    denom = (k if k > 0 else n_ret) + n_rel  # F1
    return 2.0 / denom if n_rel > 0 and denom > 0 else 0.0


@njit(cache=True)
def _bpref_f(nonrel_above, n_rel, n_nonrel):
    """trec_eval's bpref term: 1 - min(m, R) / min(N, R); 1 when min(N, R) = 0."""
    denom = min(n_nonrel, n_rel)
    if denom == 0:
        return 1.0
    return 1.0 - min(nonrel_above, n_rel) / denom


@njit(cache=True)
def _ap_group_moments(c, g, r, t, rel_above):
    """Moments of one group's AP numerator sum_{relevant at rank j <= k} prec@j.

    Sequential draws without replacement: state s = relevant among the first
    slots; slot u+1 is relevant with probability (r - s)/(g - u) and then adds
    (rel_above + s + 1)/(c + u + 1). Exact, O(t * min(t, r)).
    """
    top = min(t, r)
    prob = np.zeros(top + 2)
    m1 = np.zeros(top + 2)
    m2 = np.zeros(top + 2)
    prob[0] = 1.0
    for u in range(t):
        for s in range(min(u, r), -1, -1):
            p = prob[s]
            if p == 0.0:
                continue
            q = (r - s) / (g - u)
            if q > 0.0:
                v = (rel_above + s + 1.0) / (c + u + 1.0)
                prob[s + 1] += q * p
                m1[s + 1] += q * (m1[s] + v * p)
                m2[s + 1] += q * (m2[s] + 2.0 * v * m1[s] + v * v * p)
            prob[s] = (1.0 - q) * p
            m1[s] *= 1.0 - q
            m2[s] *= 1.0 - q
    return m1.sum(), m2.sum()


@njit(cache=True)
def _bpref_group_moments(r, s, nonrel_above, n_rel, n_nonrel):
    """Moments of one group's bpref numerator: r relevant and s judged
    non-relevant in uniformly random relative order (unjudged do not matter);
    placing a relevant after b non-relevant adds f(nonrel_above + b). O(r * s)."""
    prob = np.zeros(s + 1)
    m1 = np.zeros(s + 1)
    m2 = np.zeros(s + 1)
    prob[0] = 1.0
    for step in range(r + s):
        new_p = np.zeros(s + 1)
        new_m1 = np.zeros(s + 1)
        new_m2 = np.zeros(s + 1)
        for b in range(min(step, s) + 1):
            a = step - b
            if a > r or prob[b] == 0.0:
                continue
            left = r + s - step
            if a < r:  # next is relevant
                q = (r - a) / left
                v = _bpref_f(nonrel_above + b, n_rel, n_nonrel)
                new_p[b] += q * prob[b]
                new_m1[b] += q * (m1[b] + v * prob[b])
                new_m2[b] += q * (m2[b] + 2.0 * v * m1[b] + v * v * prob[b])
            if b < s:  # next is non-relevant
                q = (s - b) / left
                new_p[b + 1] += q * prob[b]
                new_m1[b + 1] += q * m1[b]
                new_m2[b + 1] += q * m2[b]
        prob, m1, m2 = new_p, new_m1, new_m2
    return m1.sum(), m2.sum()


@njit(cache=True)
def _ideal_dcg(qrel_rel, lo, hi, cutoff, gain_code, level, floor, disc_rank):
    """IDCG: the qrels' best gains (sorted descending) at the same cutoff."""
    total = 0.0
    n = hi - lo if cutoff <= 0 else min(hi - lo, cutoff)
    for i in range(n):
        total += gain_of(qrel_rel[lo + i], gain_code, level, floor) * disc_rank[i + 1]
    return total


@njit(cache=True)
def _point_value(family, pos, rel, m, cutoff, n_rel, n_nonrel, gain_code, level, floor, persistence,
                 disc_rank):
    """Metric value of one ordering, from the judged documents at 1-based ranks
    `pos` (increasing) with judgments `rel`. Unnormalised: the caller scales."""
    if family <= RPREC:
        hits = 0.0
        for i in range(m):
            if pos[i] <= cutoff and rel[i] >= level:
                hits += 1.0
        return hits
    if family == SUCCESS:
        for i in range(m):
            if pos[i] <= cutoff and rel[i] >= level:
                return 1.0
        return 0.0
    if family == RR:
        for i in range(m):
            if pos[i] <= cutoff and rel[i] >= level:
                return 1.0 / pos[i]
        return 0.0
    if family == AP:
        found = 0.0
        total = 0.0
        for i in range(m):
            if pos[i] <= cutoff and rel[i] >= level:
                found += 1.0
                total += found / pos[i]
        return total
    if family == DCG or family == NDCG:
        total = 0.0
        for i in range(m):
            if pos[i] <= cutoff:
                total += gain_of(rel[i], gain_code, level, floor) * disc_rank[pos[i]]
        return total
    if family == RBP:
        total = 0.0
        for i in range(m):
            if pos[i] <= cutoff:
                total += gain_of(rel[i], gain_code, level, floor) * (1.0 - persistence) * persistence ** (pos[i] - 1)
        return total
    # BPREF: judged non-relevant are 0 <= rel < level; negative judgments are ignored
    nonrel = 0
    total = 0.0
    for i in range(m):
        if rel[i] >= level:
            total += _bpref_f(nonrel, n_rel, n_nonrel)
        elif rel[i] >= 0.0:
            nonrel += 1
    return total


@njit(cache=True)
def _ordered_positions(order, g_lo, g_hi, grp_above, grp_size, grp_mem_end, mem_lo, mem_rel, tool_rank,
                       pos, rel):
    """Fill pos/rel with the judged members at their ranks under one ordering."""
    out = 0
    start = mem_lo
    for gi in range(g_lo, g_hi):
        end = grp_mem_end[gi]
        c = grp_above[gi]
        g = grp_size[gi]
        n_mem = end - start
        if order == ORDER_BEST:
            for j in range(n_mem):
                pos[out + j] = c + j + 1
                rel[out + j] = mem_rel[start + j]
        elif order == ORDER_WORST:
            for j in range(n_mem):
                src = start + n_mem - 1 - j
                pos[out + j] = c + g - n_mem + j + 1
                rel[out + j] = mem_rel[src]
        else:
            for j in range(n_mem):
                pos[out + j] = c + tool_rank[start + j] + 1
                rel[out + j] = mem_rel[start + j]
            # sort this group's slice by position (insertion sort; groups are short)
            for a in range(out + 1, out + n_mem):
                p_cur = pos[a]
                r_cur = rel[a]
                b = a - 1
                while b >= out and pos[b] > p_cur:
                    pos[b + 1] = pos[b]
                    rel[b + 1] = rel[b]
                    b -= 1
                pos[b + 1] = p_cur
                rel[b + 1] = r_cur
        out += n_mem
        start = end
    return out


@njit(cache=True)
def query_stats(family, k, gain_code, level, floor, persistence, n_ret, n_rel, n_nonrel, idcg,
                g_lo, g_hi, mem_lo, grp_above, grp_size, grp_mem_end, mem_rel, tool_rank,
                disc_rank, disc_cum, disc2_cum):
    """(expected, variance, min, max, oblivious) of one metric on one query.

    disc_rank[r] = 1/log2(r+1); disc_cum / disc2_cum are cumulative sums of it and of its square.
    """
    cutoff = _cutoff(family, k, n_ret, n_rel)
    expected = 0.0
    variance = 0.0
    no_relevant_left = 1.0  # SUCCESS: P(no relevant in the top k)
    rel_above = 0.0  # AP: relevant documents in groups above
    nonrel_above = 0  # BPREF: judged non-relevant in groups above
    rr_done = False
    start = mem_lo
    for gi in range(g_lo, g_hi):
        end = grp_mem_end[gi]
        c = grp_above[gi]
        g = grp_size[gi]
        t = min(max(cutoff - c, 0), g)
        r = 0
        s = 0
        sum_a = 0.0
        sum_a2 = 0.0
        for j in range(start, end):
            x = mem_rel[j]
            if x >= level:
                r += 1
            elif x >= 0.0:
                s += 1
            a = gain_of(x, gain_code, level, floor)
            sum_a += a
            sum_a2 += a * a
        start = end
        if family <= RPREC:  # H = sum_n t_n r_n / g_n; hypergeometric variance
            expected += t * r / g
            if g > 1:
                variance += (t - t * t / g) * (r - r * r / g) / (g - 1)
        elif family == SUCCESS:  # 1 - prod_n C(g-r, t)/C(g, t)
            if r > 0 and t > 0:
                if t > g - r:
                    no_relevant_left = 0.0
                else:
                    for i in range(t):
                        no_relevant_left *= (g - r - i) / (g - i)
        elif family == RR:  # first relevant at offset u of the first relevant group
            if r > 0 and not rr_done:
                rr_done = True
                p_first = r / g  # C(g-u-1, r-1)/C(g, r), updated by its ratio
                e2 = 0.0
                for u in range(min(g - r, t - 1) + 1):
                    rank = c + u + 1.0
                    expected += p_first / rank
                    e2 += p_first / (rank * rank)
                    if g - u - 1 > 0:
                        p_first *= (g - u - r) / (g - u - 1)
                variance = e2 - expected * expected
        elif family == AP:  # sum_u p (R_above + 1 + u (r-1)/(g-1)) / (c + u + 1)
            if r > 0 and t > 0:
                for u in range(t):
                    inner = (r - 1.0) / (g - 1.0) * u if g > 1 else 0.0
                    expected += r / g * (rel_above + 1.0 + inner) / (c + u + 1.0)
                if r < g:
                    e1, e2 = _ap_group_moments(c, g, r, t, rel_above)
                    variance += e2 - e1 * e1
            rel_above += r
        elif family == BPREF:  # r/(s+1) sum_{x=0..s} f(NR_above + x)
            if r > 0:
                total = 0.0
                for x in range(s + 1):
                    total += _bpref_f(nonrel_above + x, n_rel, n_nonrel)
                expected += r / (s + 1.0) * total
                if s > 0:
                    e1, e2 = _bpref_group_moments(r, s, nonrel_above, n_rel, n_nonrel)
                    variance += e2 - e1 * e1
            nonrel_above += s
        else:  # DCG, NDCG, RBP: gbar_n * sum of the group's slot weights inside the cutoff
            if t > 0 and sum_a != 0.0:
                if family == RBP:
                    p = persistence
                    sum_w = p ** c * (1.0 - p ** t)
                    sum_w2 = (1.0 - p) ** 2 * p ** (2 * c) * (1.0 - p ** (2 * t)) / (1.0 - p * p)
                else:
                    sum_w = disc_cum[c + t] - disc_cum[c]
                    sum_w2 = disc2_cum[c + t] - disc2_cum[c]
                expected += sum_a / g * sum_w
                if g > 1:
                    variance += (sum_w2 - sum_w * sum_w / g) * (sum_a2 - sum_a * sum_a / g) / (g - 1)
    if family == SUCCESS:
        expected = 1.0 - no_relevant_left
        variance = expected * (1.0 - expected)

    n_mem = grp_mem_end[g_hi - 1] - mem_lo if g_hi > g_lo else 0
    pos = np.empty(n_mem, np.int64)
    rel = np.empty(n_mem, np.float64)
    values = np.empty(3)
    for order in range(3):
        _ordered_positions(order, g_lo, g_hi, grp_above, grp_size, grp_mem_end, mem_lo, mem_rel,
                           tool_rank, pos, rel)
        values[order] = _point_value(family, pos, rel, n_mem, cutoff, n_rel, n_nonrel, gain_code, level,
                                     floor, persistence, disc_rank)
    if values[ORDER_WORST] == values[ORDER_BEST]:  # no tie can matter: E is exactly that value
        expected = values[ORDER_BEST]
        variance = 0.0
    if family <= RPREC:
        scale = _hits_scale(family, k, n_ret, n_rel)
    elif family == AP or family == BPREF:
        scale = 1.0 / n_rel if n_rel > 0 else 0.0
    elif family == NDCG:
        scale = 1.0 / idcg if idcg > 0 else 0.0
    else:
        scale = 1.0
    return (expected * scale, max(variance, 0.0) * scale * scale,
            values[ORDER_WORST] * scale, values[ORDER_BEST] * scale, values[ORDER_TOOL] * scale)


@njit(cache=True, parallel=True)
def metric_table(family, k, gain_code, level, floor, persistence, n_ret, n_groups, mem_offsets,
                 grp_above, grp_size, grp_mem_end, mem_rel, tool_rank, qrel_offsets, qrel_rel,
                 disc_rank, disc_cum, disc2_cum):
    """Per-query (expected, variance, min, max, oblivious) of one metric: array (Q, 5).

    R counts the qrels' documents with judgment >= level (retrieved or not), N
    those with 0 <= judgment < level (trec_eval's judged non-relevant for bpref).
    """
    n_queries = n_ret.shape[0]
    out = np.zeros((n_queries, 5))
    for q in prange(n_queries):
        lo, hi = qrel_offsets[q], qrel_offsets[q + 1]
        n_rel = 0
        n_nonrel = 0
        for i in range(lo, hi):
            if qrel_rel[i] >= level:
                n_rel += 1
            elif qrel_rel[i] >= 0.0:
                n_nonrel += 1
        idcg = 0.0
        if family == NDCG:
            idcg = _ideal_dcg(qrel_rel, lo, hi, k, gain_code, level, floor, disc_rank)
        mem_lo = mem_offsets[q]
        e, v, lo_val, hi_val, obl = query_stats(
            family, k, gain_code, level, floor, persistence, n_ret[q], n_rel, n_nonrel, idcg,
            mem_lo, mem_lo + n_groups[q], mem_lo, grp_above, grp_size, grp_mem_end, mem_rel, tool_rank,
            disc_rank, disc_cum, disc2_cum)
        out[q, 0] = e
        out[q, 1] = v
        out[q, 2] = lo_val
        out[q, 3] = hi_val
        out[q, 4] = obl
    return out
