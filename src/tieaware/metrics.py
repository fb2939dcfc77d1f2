"""Metric names in the three syntaxes users already type, parsed to `MetricSpec`.

=================  ======================  =========================  ==============================
family             ranx                    trec_eval / pytrec_eval    ir_measures
=================  ======================  =========================  ==============================
hits               ``hits@k``              --                         --
success            ``hit_rate@k``          ``success.k``              ``Success@k``
precision          ``precision@k``         ``P.k``                    ``P@k``
recall             ``recall@k``            ``recall.k``               ``R@k``
f1                 ``f1@k``                --                         --
rprec              ``r-precision``         ``Rprec``                  ``Rprec``
rr                 ``mrr``, ``mrr@k``      ``recip_rank``             ``RR``, ``RR@k``
ap                 ``map``, ``map@k``      ``map``, ``map_cut.k``     ``AP``, ``AP@k``
ndcg (linear)      ``ndcg@k``              ``ndcg``, ``ndcg_cut.k``   ``nDCG``, ``nDCG@k``
ndcg (2^rel - 1)   ``ndcg_burges@k``       --                         --
dcg                ``dcg@k``               --                         --
dcg (2^rel - 1)    ``dcg_burges@k``        --                         --
bpref              ``bpref``               ``bpref``                  ``Bpref``
rbp                ``rbp.95``              --                         ``RBP(p=0.95)``
=================  ======================  =========================  ==============================

trec_eval names also parse with ``_`` instead of ``.`` (``ndcg_cut_10``, the keys
pytrec_eval returns). The relevance level comes from ranx's ``-lN`` suffix
(``map@100-l2``), ir_measures' ``(rel=N)`` (``P(rel=2)@10``), or the
``relevance_level`` keyword, in that order of precedence.

Relevance levels follow each tool: binary metrics count a document relevant when
its judgment is >= the level. Gain metrics (nDCG, DCG, RBP) named in ranx syntax
give grades below the level zero gain, as ranx does; named in trec_eval or
ir_measures syntax they use every positive grade, as trec_eval does (its ``-l``
does not touch nDCG). ir_measures' ``RBP(rel=N)`` is binary, plain ``RBP`` graded.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .errors import UnknownMetricError

#: Families whose value depends only on the number of relevant documents in the top k.
HITS_FAMILIES = ("hits", "precision", "recall", "f1", "rprec")
#: Families no tie order can move (E = min = max), evaluated beside the others.
SET_FAMILIES = ("set_p", "set_recall", "set_relative_p", "set_map", "set_f")
FAMILIES = HITS_FAMILIES + ("success", "rr", "ap", "dcg", "ndcg", "bpref", "rbp", "judged") + SET_FAMILIES


@dataclass(frozen=True)
class MetricSpec:
    """A parsed metric.

    Attributes:
        name: the string the user gave (the key of the result dict).
        family: one of `FAMILIES`.
        k: rank cutoff, or None for the whole retrieved list.
        relevance_level: judgments >= this are relevant (binary metrics, R, bpref).
        gain: "binary", "linear" (gain = grade) or "exp" (gain = 2^grade - 1).
        gain_floor: grades below this get zero gain; None means every positive grade counts.
        persistence: RBP's p.
    """

    name: str
    family: str
    k: int | None = None
    relevance_level: float = 1
    gain: str = "binary"
    gain_floor: float | None = None
    persistence: float = 0.0

    def with_name(self, name: str) -> MetricSpec:
        return MetricSpec(name, self.family, self.k, self.relevance_level, self.gain, self.gain_floor,
                          self.persistence)


# name -> (family, gain, takes_cutoff: "no" | "optional" | "required")
_RANX = {
    "hits": ("hits", "binary", "optional"),
    "hit_rate": ("success", "binary", "optional"),
    "precision": ("precision", "binary", "optional"),
    "recall": ("recall", "binary", "optional"),
    "f1": ("f1", "binary", "optional"),
    "r-precision": ("rprec", "binary", "no"),
    "mrr": ("rr", "binary", "optional"),
    "map": ("ap", "binary", "optional"),
    "dcg": ("dcg", "linear", "optional"),
    "dcg_burges": ("dcg", "exp", "optional"),
    "ndcg": ("ndcg", "linear", "optional"),
    "ndcg_burges": ("ndcg", "exp", "optional"),
    "bpref": ("bpref", "binary", "no"),
}
_TREC = {
    "P": ("precision", "binary", "required"),
    "recall": ("recall", "binary", "required"),
    "success": ("success", "binary", "required"),
    "ndcg_cut": ("ndcg", "linear", "required"),
    "map_cut": ("ap", "binary", "required"),
    "ndcg": ("ndcg", "linear", "no"),
    "map": ("ap", "binary", "no"),
    "recip_rank": ("rr", "binary", "no"),
    "Rprec": ("rprec", "binary", "no"),
    "bpref": ("bpref", "binary", "no"),
    "set_P": ("set_p", "binary", "no"),
    "set_recall": ("set_recall", "binary", "no"),
    "set_relative_P": ("set_relative_p", "binary", "no"),
    "set_map": ("set_map", "binary", "no"),
    "set_F": ("set_f", "binary", "no"),
}
_IRM = {
    "P": ("precision", "binary", "required"),
    "R": ("recall", "binary", "required"),
    "Success": ("success", "binary", "required"),
    "nDCG": ("ndcg", "linear", "optional"),
    "AP": ("ap", "binary", "optional"),
    "RR": ("rr", "binary", "optional"),
    "Rprec": ("rprec", "binary", "no"),
    "Bpref": ("bpref", "binary", "no"),
    "RBP": ("rbp", "linear", "optional"),
    "Judged": ("judged", "binary", "required"),
    "SetP": ("set_p", "binary", "no"),
    "SetR": ("set_recall", "binary", "no"),
    "SetRelP": ("set_relative_p", "binary", "no"),
    "SetAP": ("set_map", "binary", "no"),
    "SetF": ("set_f", "binary", "no"),
}

_RANX_RE = re.compile(r"^(?P<base>[a-z_\-0-9]+?)(?:@(?P<k>-?[^-]+))?(?:-l(?P<level>-?\d+))?$")
_RANX_RBP_RE = re.compile(r"^rbp[.@](?P<p>\d+)(?:-l(?P<level>-?\d+))?$")
_TREC_RE = re.compile(r"^(?P<base>[A-Za-z_]+?)(?:[._](?P<k>\d[^.]*))?$")
_IRM_RE = re.compile(r"^(?P<base>[A-Za-z]+)(?:\((?P<params>[^)]*)\))?(?:@(?P<k>.+))?$")


def _supported_names() -> str:
    return (
        "ranx: " + ", ".join(f"{n}@k" if c != "no" else n for n, (_, _, c) in _RANX.items()) + ", rbp.P; "
        "trec_eval: " + ", ".join(f"{n}.k" if c == "required" else n for n, (_, _, c) in _TREC.items()) + "; "
        "ir_measures: " + ", ".join(f"{n}@k" if c != "no" else n for n, (_, _, c) in _IRM.items())
        + ", RBP(p=0.8); suffix -lN (ranx) or (rel=N) (ir_measures) sets the relevance level"
    )


def _parse_cutoff(text: str | None, name: str, takes: str) -> int | None:
    if text is None:
        if takes == "required":
            raise UnknownMetricError(f"Metric {name!r} needs a cutoff, e.g. {name}@10 or {name}.10.")
        return None
    if takes == "no":
        raise UnknownMetricError(f"Metric {name!r} takes no cutoff.")
    try:
        k = int(text)
    except ValueError:
        raise UnknownMetricError(f"Metric {name!r}: cutoff {text!r} is not an integer.") from None
    if k <= 0:
        raise UnknownMetricError(f"Metric {name!r}: cutoff k must be a positive integer, got {k}.")
    return k


def parse_metric(name: str, relevance_level: float = 1) -> MetricSpec:
    """Parse one metric name in ranx, trec_eval or ir_measures syntax.

    Raises:
        UnknownMetricError: the name is in none of the syntaxes; the message lists them.
    """
    if not isinstance(name, str):
        raise UnknownMetricError(f"Metric names are strings, got {name!r} ({type(name).__name__}).")
    text = name.strip()

    m = _RANX_RBP_RE.match(text)
    if m:
        level = int(m["level"]) if m["level"] is not None else relevance_level
        return MetricSpec(name, "rbp", None, level, "linear", level, _persistence(float("0." + m["p"]), name))

    m = _IRM_RE.match(text)
    bare_ok = ("RBP", "Bpref", "Rprec", "AP", "RR", "nDCG", "SetP", "SetR", "SetRelP", "SetAP", "SetF")  # no @k
    if m and m["base"] in _IRM and (m["params"] is not None or m["k"] is not None or m["base"] in bare_ok):
        family, gain, takes = _IRM[m["base"]]
        params = _parse_irm_params(m["params"] or "", name)
        level = params.pop("rel", None)
        p = params.pop("p", 0.8)
        if params:
            raise UnknownMetricError(f"Metric {name!r}: unsupported parameter(s) {sorted(params)}.")
        k = _parse_cutoff(m["k"], name, takes)
        if family == "rbp":
            if level is not None:  # ir_measures: RBP(rel=N) is binary at level N
                return MetricSpec(name, "rbp", k, level, "binary", None, p)
            return MetricSpec(name, "rbp", k, relevance_level, "linear", None, p)
        return MetricSpec(name, family, k, relevance_level if level is None else level, gain, None)

    m = _TREC_RE.match(text)
    if m and m["base"] in _TREC and (m["k"] is not None or _TREC[m["base"]][2] != "required"):
        family, gain, takes = _TREC[m["base"]]
        if m["k"] is not None and takes != "no":
            return MetricSpec(name, family, _parse_cutoff(m["k"], name, takes), relevance_level, gain, None)
        if m["k"] is None:
            return MetricSpec(name, family, None, relevance_level, gain, None)

    m = _RANX_RE.match(text)
    if m and m["base"] in _RANX:
        family, gain, takes = _RANX[m["base"]]
        level = int(m["level"]) if m["level"] is not None else relevance_level
        k = _parse_cutoff(m["k"], name, takes)
        return MetricSpec(name, family, k, level, gain, level if gain != "binary" else None)

    if _TREC.get(text, ("", "", ""))[2] == "required" or _IRM.get(text, ("", "", ""))[2] == "required":
        _parse_cutoff(None, name, "required")
    raise UnknownMetricError(f"Unknown metric {name!r}. Supported: {_supported_names()}.")


def _parse_irm_params(text: str, name: str) -> dict:
    params = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        key, sep, value = part.partition("=")
        if not sep:
            raise UnknownMetricError(f"Metric {name!r}: parameter {part!r} is not key=value.")
        if key.strip() in params:
            raise UnknownMetricError(f"Metric {name!r}: parameter {key.strip()!r} is given twice.")
        try:
            params[key.strip()] = int(value) if key.strip() == "rel" else float(value)
        except ValueError:
            raise UnknownMetricError(f"Metric {name!r}: parameter {part!r} is not a number.") from None
    if "p" in params:
        _persistence(params["p"], name)
    return params


def _persistence(p: float, name: str) -> float:
    """RBP's p, one rule for every syntax: 0 < p < 1."""
    if not 0 < p < 1:
        raise UnknownMetricError(f"Metric {name!r}: RBP persistence p must lie in (0, 1), got {p:g}.")
    return p


def parse_metrics(metrics, relevance_level: float = 1) -> list[MetricSpec]:
    """Parse a metric name or a list of names; duplicates are an error."""
    names = [metrics] if isinstance(metrics, str) else list(metrics)
    if not names:
        raise UnknownMetricError("No metric given.")
    if len(set(names)) != len(names):
        raise UnknownMetricError(f"Metric names repeat: {names}.")
    return [parse_metric(n, relevance_level) for n in names]
