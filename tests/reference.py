"""Independent, deliberately naive reference: score ONE fixed ranking the way
trec_eval does, and enumerate every ordering of tied documents by brute force.

Shares no code with tieaware's kernels; only `MetricSpec` (the parsed name) is used.
"""
import itertools
import math
import statistics


def _gain(spec, grade):
    if spec.gain == "binary":
        return 1.0 if grade >= spec.relevance_level else 0.0
    floor = -math.inf if spec.gain_floor is None else spec.gain_floor
    if grade <= 0 or grade < floor:
        return 0.0
    return float(grade) if spec.gain == "linear" else 2.0 ** grade - 1.0


def point_metric(spec, ranking, judgments):
    """Metric value of `ranking` (doc ids, best first) against {docid: grade}."""
    if spec.grade_map is not None:  # ir_measures' nDCG(gains=...): the qrels' grades mapped first
        judgments = {d: dict(spec.grade_map).get(g, g) for d, g in judgments.items()}
    level = spec.relevance_level
    relevant = {d for d, g in judgments.items() if g >= level}
    nonrel = {d for d, g in judgments.items() if 0 <= g < level}
    n_rel = len(relevant)
    k = spec.k if spec.k is not None else len(ranking)
    if spec.family == "rprec":
        k = n_rel
    top = ranking[:k]
    hits = sum(1 for d in top if d in relevant)
    fam = spec.family
    if fam == "hits":
        return float(hits)
    if fam == "precision":
        return hits / k if k else 0.0
    if fam in ("recall", "rprec"):
        return hits / n_rel if n_rel else 0.0
    if fam == "f1":
        p = hits / k if k else 0.0
        r = hits / n_rel if n_rel else 0.0
        return 2 * p * r / (p + r) if p + r else 0.0
    if fam == "success":
        return 1.0 if hits else 0.0
    if fam == "rr":
        for i, d in enumerate(top, 1):
            if d in relevant:
                return 1.0 / i
        return 0.0
    if fam == "ap":
        found, total = 0, 0.0
        for i, d in enumerate(top, 1):
            if d in relevant:
                found += 1
                total += found / i
        return total / n_rel if n_rel else 0.0
    if fam in ("dcg", "ndcg"):
        dcg = sum(_gain(spec, judgments.get(d, 0)) / math.log2(i + 1) for i, d in enumerate(top, 1))
        if fam == "dcg":
            return dcg
        ideal = sorted((_gain(spec, g) for g in judgments.values()), reverse=True)
        ideal = ideal[:spec.k] if spec.k is not None else ideal
        idcg = sum(g / math.log2(i + 1) for i, g in enumerate(ideal, 1))
        return dcg / idcg if idcg > 0 else 0.0
    if fam == "rbp":
        p = spec.persistence
        if spec.gain == "scaled":  # trec_eval 10's m_rbp.c: grades over the query's top grade if it exceeds 1
            top_grade = max([1, *judgments.values()])
            return sum(max(judgments.get(d, 0), 0) / top_grade * (1 - p) * p ** (i - 1) for i, d in enumerate(top, 1))
        return sum(_gain(spec, judgments.get(d, 0)) * (1 - p) * p ** (i - 1) for i, d in enumerate(top, 1))
    if fam == "err":  # gdeval.pl: R = (2^grade - 1) / 2^4, grades <= 0 and unjudged give 0
        total, still_looking = 0.0, 1.0
        for i, d in enumerate(top, 1):
            grade = judgments.get(d, 0)
            satisfied = (2.0 ** grade - 1.0) / 16.0 if grade > 0 else 0.0
            total += satisfied * still_looking / i
            still_looking *= 1.0 - satisfied
        return total
    if fam == "bpref":
        n_nonrel = len(nonrel)
        denom = min(n_nonrel, n_rel)
        seen, total = 0, 0.0
        for d in ranking:
            if d in relevant:
                total += 1.0 if denom == 0 else 1.0 - min(seen, n_rel) / denom
            elif d in nonrel:
                seen += 1
        return total / n_rel if n_rel else 0.0
    if fam == "judged":
        denominator = min(k, len(ranking))
        return sum(1 for d in top if d in judgments) / denominator if denominator else 0.0
    if fam in ("num_q", "num_ret", "num_rel", "num_rel_ret"):  # trec_eval's counts, -M k as the cutoff
        return float({"num_q": 1, "num_ret": len(top), "num_rel": n_rel, "num_rel_ret": hits}[fam])
    if fam.startswith("set_"):
        n_ret, hits_all = len(ranking), sum(1 for d in ranking if d in relevant)
        p = hits_all / n_ret if n_ret else 0.0
        r = hits_all / n_rel if n_rel else 0.0
        smaller = min(n_ret, n_rel)
        return {"set_p": p, "set_recall": r, "set_map": p * r, "set_f": 2 * p * r / (p + r) if p + r else 0.0,
                "set_relative_p": hits_all / smaller if smaller else 0.0}[fam]
    raise AssertionError(fam)


def tie_groups(scores):
    """Doc ids grouped by equal score, groups in descending score order."""
    by_score = {}
    for d, s in scores.items():
        by_score.setdefault(s, []).append(d)
    return [by_score[s] for s in sorted(by_score, reverse=True)]


def all_orderings(scores):
    groups = tie_groups(scores)
    for perms in itertools.product(*(itertools.permutations(g) for g in groups)):
        yield [d for p in perms for d in p]


def brute_force(spec, scores, judgments):
    """(mean, population variance, min, max) over every ordering of tied documents."""
    values = [point_metric(spec, r, judgments) for r in all_orderings(scores)]
    return statistics.fmean(values), statistics.pvariance(values), min(values), max(values)


def trec_eval_order(scores):
    """trec_eval: score descending, then document id descending."""
    by_id_desc = sorted(scores, key=lambda d: d.encode(), reverse=True)
    return sorted(by_id_desc, key=lambda d: -scores[d])


def ir_measures_order(spec, scores):
    """ir_measures' default pipeline: (-score, doc id) for RR@k (msmarco provider) and Judged@k,
    a stable sort by score for RBP (cwl_eval), trec_eval's order (pytrec_eval) otherwise."""
    if spec.family == "judged" or spec.family == "rr" and spec.k is not None:
        return sorted(scores, key=lambda d: (-scores[d], d))
    return input_order(scores) if spec.family == "rbp" else trec_eval_order(scores)


def input_order(scores):
    """Stable: score descending, first given first."""
    return sorted(scores, key=lambda d: -scores[d])
