"""Metric names in the three syntaxes users already type, parsed to `MetricSpec`.

Every name, its syntaxes, cutoff and parameters are declared once, in
`tieaware.registry`; the parser, the "unknown metric" message, `list_metrics` (and
``tieaware eval --list-metrics``) and the metric table of docs/evaluate.md
(`markdown_table`) are all generated from it.

trec_eval names also parse with ``_`` instead of ``.`` (``ndcg_cut_10``, the keys
pytrec_eval returns). The relevance level comes from ranx's ``-lN`` suffix
(``map@100-l2``), ir_measures' ``(rel=N)`` (``P(rel=2)@10``), or the
``relevance_level`` keyword, in that order of precedence.

Relevance levels follow each tool: binary metrics count a document relevant when
its judgment is >= the level. Gain metrics (nDCG, DCG, RBP) named in ranx syntax
give grades below the level zero gain, as ranx does; named in trec_eval or
ir_measures syntax they use every positive grade, as trec_eval does (its ``-l``
does not touch nDCG). ir_measures' ``RBP(rel=N)`` is binary, plain ``RBP`` graded;
trec_eval 10's ``rbp`` divides the grades by the query's top grade when that exceeds 1.
"""
from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

from .errors import UnknownMetricError
from .registry import (
    DCG,
    FAMILIES,
    JUDGED_ONLY,
    NAMES,
    PERSISTENCE,
    TREC_DEFAULT_CUTOFFS,
    TREC_GROUPS,
    Name,
)

#: What `parse_metrics` takes: a name, an ir_measures measure object, or a sequence of them.
MetricsLike = str | Sequence[str] | object


@dataclass(frozen=True)
class MetricSpec:
    """A parsed metric; also the parameters its family kernel reads (`tieaware.kernels.families`).

    Attributes:
        name: the string the user gave (the key of the result dict).
        family: a `tieaware.registry.FAMILIES` key.
        k: rank cutoff, or None for the whole retrieved list.
        relevance_level: judgments >= this are relevant (binary metrics, R, bpref).
        gain: "binary", "linear" (gain = grade), "exp" (gain = 2^grade - 1) or "scaled" (trec_eval's rbp:
            grade over the query's top grade).
        gain_floor: grades below this get zero gain; None means every positive grade counts.
        persistence: RBP's p.
        grade_map: ((grade, new grade), ...) applied to the qrels first (ir_measures' nDCG(gains=...));
            grades not listed keep their value; None: none.
        judged_only: ir_measures' ``judged_only=True`` (trec_eval -J): unjudged documents are removed
            from the run before ranking.

    Examples:
        >>> import tieaware
        >>> spec = tieaware.parse_metric("ndcg_cut.10")
        >>> spec.family, spec.k, spec.gain
        ('ndcg', 10, 'linear')
    """

    name: str
    family: str
    k: int | None = None
    relevance_level: float = 1
    gain: str = "binary"
    gain_floor: float | None = None
    persistence: float = 0.0
    grade_map: tuple | None = None
    judged_only: bool = False

    def with_name(self, name: str) -> MetricSpec:
        return dataclasses.replace(self, name=name)

    @property
    def aggregate(self) -> str:
        """How per-query values combine over queries: "sum" for the counts (as trec_eval
        and ir_measures report them), else "mean"."""
        return FAMILIES[self.family].aggregate


def _table(syntax: str) -> dict[str, Name]:
    """{base name or alias: Name} of one syntax."""
    table = {}
    for entry in NAMES:
        if entry.syntax == syntax:
            for name in (entry.name, *entry.aliases):
                table[name] = entry
    return table


_RANX, _TREC, _IRM = _table("ranx"), _table("trec_eval"), _table("ir_measures")


def list_metrics() -> list[dict]:
    """Every supported name: syntax, name (as typed: ``ndcg@k``, ``ndcg_cut.k``, ``nDCG@k``), family,
    aliases and description; what ``tieaware eval --list-metrics`` prints."""
    rows = [{"syntax": e.syntax, "name": _typed(e), "family": e.family, "aliases": ", ".join(e.aliases),
             "description": e.description} for e in NAMES]
    rows.append({"syntax": "ranx", "name": "rbp.P", "family": "rbp", "aliases": "",
                 "description": "rank-biased precision with p = 0.P (rbp.95)"})
    return rows


def _typed(entry: Name) -> str:
    if entry.cutoff == "no":
        return entry.name
    suffix = ".k" if entry.syntax == "trec_eval" else "@k"
    return entry.name + (suffix if entry.cutoff == "required" else f"[{suffix}]")


def markdown_table() -> str:
    """The metric table of docs/evaluate.md: one row per family (and gain), one column per syntax."""
    rows: dict = {}
    for entry in NAMES:
        key = (entry.family, entry.gain)
        row = rows.setdefault(key, {"ranx": [], "trec_eval": [], "ir_measures": [], "description": entry.description})
        aliases = "".join(f", `{alias}`" for alias in entry.aliases)
        row[entry.syntax].append(f"`{_typed(entry)}`{aliases}")
    rows[("rbp", "linear")]["ranx"].append("`rbp.95`")
    rows[("ndcg", "exp")]["ir_measures"].append("`nDCG(dcg='exp-log2')@k`")
    lines = ["| family | ranx | trec_eval / pytrec_eval | ir_measures | what it measures |", "|---|---|---|---|---|"]
    for (family, gain), row in rows.items():
        label = family + {"exp": " (2^grade - 1)", "scaled": " (grade / top grade)"}.get(gain, "")
        lines.append(f"| {label} | {', '.join(row['ranx'])} | {', '.join(row['trec_eval'])} | "
                     f"{', '.join(row['ir_measures'])} | {row['description']} |")
    return "\n".join(lines)


_RANX_RE = re.compile(r"^(?P<base>[a-z_\-0-9]+?)(?:@(?P<k>-?[^-]+))?(?:-l(?P<level>-?\d+))?$")
_RANX_RBP_RE = re.compile(r"^rbp[.@](?P<p>\d+)(?:-l(?P<level>-?\d+))?$")
_TREC_RBP_RE = re.compile(r"^rbp(?:[._]p=(?P<p>.*))?$")  # trec_eval 10: rbp, rbp.p=0.95
_TREC_RBP_P = 0.9  # m_rbp.c's default p
_TREC_RE = re.compile(r"^(?P<base>[A-Za-z_]+?)(?:[._](?P<k>\d[\d.]*))?$")
_IRM_RE = re.compile(r"^(?P<base>[A-Za-z]+)(?:\((?P<params>[^)]*)\))?(?:@(?P<k>.+))?$")


def _supported_names() -> str:
    parts = []
    for syntax in ("ranx", "trec_eval", "ir_measures"):
        parts.append(f"{syntax}: " + ", ".join(_typed(e) for e in NAMES if e.syntax == syntax))
    return ("; ".join(parts) + "; ranx also rbp.95, trec_eval also rbp.p=0.95; suffix -lN (ranx) or (rel=N) "
            "(ir_measures) sets the relevance "
            "level; `tieaware eval --list-metrics` lists them all")


#: the largest cutoff: kernels hold k in int64 and weigh by it in float64 (P@k's 1/k), both exact up to 2^53
MAX_CUTOFF = 2 ** 53


def _parse_cutoff(text: str | None, name: str, takes: str, syntax: str = "") -> int | None:
    if text is None:
        if takes == "required":
            raise UnknownMetricError(f"Metric {name!r} needs a cutoff, e.g. {name}@10 or {name}.10.")
        return None
    if takes == "no":
        raise UnknownMetricError(f"Metric {name!r} takes no cutoff.")
    try:
        k = int(text)
    except ValueError:
        k = None
    if k is None and syntax == "trec_eval" and re.fullmatch(r"\d+\.\d*", text):
        k = int(float(text))  # trec_eval reads cutoffs with atol: ndcg_cut.23.4 is ndcg_cut.23
    if k is None:
        raise UnknownMetricError(f"Metric {name!r}: cutoff {text!r} is not an integer.") from None
    if k <= 0:
        raise UnknownMetricError(f"Metric {name!r}: cutoff k must be a positive integer, got {k}.")
    if k > MAX_CUTOFF:
        raise UnknownMetricError(f"Metric {name!r}: cutoff k must be at most 2^53 ({MAX_CUTOFF}), got {text}; "
                                 f"leave the cutoff out to rank every document.")
    return k


def parse_metric(name: str, relevance_level: float = 1) -> MetricSpec:
    """Parse one metric name in ranx, trec_eval or ir_measures syntax.

    One parser per syntax, tried in this order; the first that recognises the name reads it (and
    raises on a bad cutoff or parameter), so a name two syntaxes share is read by the earlier one:

    1. ir_measures' ``judged_only=`` parameter, ``P(judged_only=True)@10``: the rest parsed again;
    2. ranx's RBP, ``rbp.95`` (p = 0.95, ``-lN`` suffix);
    3. trec_eval's RBP, ``rbp``, ``rbp.p=0.95``;
    4. ir_measures, ``nDCG@10``, ``P(rel=2)@10``, ``nDCG(dcg='exp-log2')@10``;
    5. trec_eval, ``ndcg_cut.10`` or ``ndcg_cut_10``, ``map``;
    6. ranx, ``ndcg@10``, ``map@100-l2``.

    A name none of them reads is an error saying why (a cutoff missing, not offered, unknown).

    Args:
        name: e.g. ``"ndcg@10"``, ``"ndcg_cut.10"`` or ``"nDCG@10"``.
        relevance_level: grades at or above it are relevant, unless the name sets its own.

    Returns:
        The `MetricSpec` (family, cutoff, level, parameters) the kernels evaluate.

    Raises:
        UnknownMetricError: the name is in none of the syntaxes; the message lists them.

    Examples:
        >>> import tieaware
        >>> [(s.family, s.k) for s in map(tieaware.parse_metric, ["ndcg@10", "ndcg_cut.10", "nDCG@10"])]
        [('ndcg', 10), ('ndcg', 10), ('ndcg', 10)]
        >>> tieaware.parse_metric("P(rel=2)@5").relevance_level
        2
    """
    if not isinstance(name, str):
        raise UnknownMetricError(f"Metric names are strings, got {name!r} ({type(name).__name__}).")
    text = name.strip()
    for parse in _PARSERS:
        spec = parse(name, text, relevance_level)
        if spec is not None:
            return spec
    _reject(name, text)


def _parse_judged_only(name: str, text: str, relevance_level: float) -> MetricSpec | None:
    """ir_measures' ``judged_only=True|False`` (``nDCG(judged_only=True)@10``): the name parsed without
    it, with `MetricSpec.judged_only` set."""
    found = _JUDGED_ONLY.search(text)
    if found is None:
        return None
    value = found["value"].strip()
    if value not in ("True", "False", "1", "0"):
        raise UnknownMetricError(f"Metric {name!r}: judged_only takes True or False, got {value!r}.")
    keep = ", " if found["lead"] and found["trail"] else ""
    spec = parse_metric((text[:found.start()] + keep + text[found.end():]).replace("()", ""), relevance_level)
    if value in ("False", "0"):
        return spec.with_name(name)
    if spec.family not in JUDGED_ONLY_FAMILIES or spec.gain == "exp" or spec.family == "rr" and spec.k is not None \
            or "(" not in text:
        raise UnknownMetricError(f"Metric {name!r}: judged_only is an ir_measures parameter of P, R, RR (without a "
                                 "cutoff), Rprec, AP, nDCG (log2), Success, SetP, SetRelP, SetAP and SetF, as "
                                 "ir_measures evaluates it.")
    return dataclasses.replace(spec, name=name, judged_only=True)


def _parse_ranx_rbp(name: str, text: str, relevance_level: float) -> MetricSpec | None:
    """ranx's ``rbp.95`` (p = 0.95): graded, gains below the level (``-lN``) zero, as ranx gives them."""
    m = _RANX_RBP_RE.match(text)
    if m is None:
        return None
    level = int(m["level"]) if m["level"] is not None else relevance_level
    return MetricSpec(name, "rbp", None, level, "linear", level, _persistence(float("0." + m["p"]), name))


def _parse_trec_rbp(name: str, text: str, relevance_level: float) -> MetricSpec | None:
    """trec_eval 10's ``rbp`` (p = 0.9) and ``rbp.p=0.95``: grades scaled by the query's top grade."""
    m = _TREC_RBP_RE.match(text)
    if m is None:
        return None
    try:
        p = _TREC_RBP_P if m["p"] is None else float(m["p"])
    except ValueError:
        raise UnknownMetricError(f"Metric {name!r}: rbp's p {m['p']!r} is not a number.") from None
    return MetricSpec(name, "rbp", None, relevance_level, "scaled", None, _persistence(p, name))


def _parse_ir_measures(name: str, text: str, relevance_level: float) -> MetricSpec | None:
    """ir_measures' ``Name(param=value, ...)@k``; a name that needs a cutoff and has neither cutoff nor
    parameters (``P``) is left to the next parsers."""
    m = _IRM_RE.match(text)
    entry = _IRM.get(m["base"]) if m else None
    if m is None or entry is None or m["params"] is None and m["k"] is None and entry.cutoff == "required":
        return None
    params = _irm_params(entry, m["params"] or "", name)
    k = _parse_cutoff(m["k"], name, entry.cutoff, "ir_measures")
    level = params.get("rel")
    if "gains" in params:  # ir_measures: the qrels' grades mapped, then nDCG with gain = grade
        if params.get("dcg", DCG.default) != "log2":
            raise UnknownMetricError(f"Metric {name!r}: ir_measures takes gains= only with dcg='log2'.")
        return MetricSpec(name, entry.family, k, relevance_level, "linear", None, grade_map=params["gains"])
    if params.get("dcg") == "exp-log2":  # nDCG(dcg='exp-log2'): gain 2^grade - 1, as gdeval
        if k is None:
            raise UnknownMetricError(f"Metric {name!r}: tieaware takes nDCG(dcg='exp-log2') with a cutoff @k "
                                     "(ir_measures computes it with gdeval, trec_eval's tie order); without "
                                     "one ir_measures hands it to ranx, whose order there tieaware does not "
                                     "reproduce: use ranx's ndcg_burges.")
        return MetricSpec(name, entry.family, k, relevance_level, "exp", None)
    if entry.family == "rbp":  # ir_measures: RBP(rel=N) is binary at level N, plain RBP graded
        p = params.get("p", PERSISTENCE.default)
        if level is not None:
            return MetricSpec(name, "rbp", k, level, "binary", None, p)
        return MetricSpec(name, "rbp", k, relevance_level, "linear", None, p)
    family = "num_rel_ret" if entry.family == "num_ret" and level is not None else entry.family  # NumRet(rel=N)
    return MetricSpec(name, family, k, relevance_level if level is None else level, entry.gain, None)


def _irm_params(entry: Name, text: str, name: str) -> dict[str, Any]:
    """The parameters of an ir_measures name, each one its measure declares (`Name.params`)."""
    grade_map, rest = _grade_map(text, name)
    params = _parse_irm_params(rest, name)
    if grade_map is not None:
        params["gains"] = grade_map
    misplaced = sorted(set(params) - set(entry.param_names))
    if misplaced:
        takes = list(entry.param_names) + (["a cutoff @k"] if entry.cutoff != "no" else [])
        raise UnknownMetricError(f"Metric {name!r}: {entry.name} takes no parameter {', '.join(misplaced)} "
                                 f"(it takes {', '.join(takes) or 'nothing'}), as in ir_measures.")
    return params


def _parse_trec_eval(name: str, text: str, relevance_level: float) -> MetricSpec | None:
    """trec_eval's ``name``, ``name.k`` or pytrec_eval's ``name_k``; a name without its required cutoff
    (``P``) or with a cutoff it does not take is left to the next parser."""
    m = _TREC_RE.match(text)
    entry = _TREC.get(m["base"]) if m else None
    if m is None or entry is None or entry.cutoff == ("required" if m["k"] is None else "no"):
        return None
    k = _parse_cutoff(m["k"], name, entry.cutoff, "trec_eval")
    return MetricSpec(name, entry.family, k, relevance_level, entry.gain, None)


def _parse_ranx(name: str, text: str, relevance_level: float) -> MetricSpec | None:
    """ranx's ``name``, ``name@k``, with ``-lN`` for the level: gains below it zero, as ranx gives them."""
    m = _RANX_RE.match(text)
    entry = _RANX.get(m["base"]) if m else None
    if m is None or entry is None:
        return None
    level = int(m["level"]) if m["level"] is not None else relevance_level
    k = _parse_cutoff(m["k"], name, entry.cutoff, "ranx")
    return MetricSpec(name, entry.family, k, level, entry.gain, level if entry.gain != "binary" else None)


#: the parsers `parse_metric` tries, in its documented order
_PARSERS: tuple[Callable[[str, str, float], MetricSpec | None], ...] = (
    _parse_judged_only, _parse_ranx_rbp, _parse_trec_rbp, _parse_ir_measures, _parse_trec_eval, _parse_ranx)


def _reject(name: str, text: str) -> NoReturn:
    """Why no parser reads a name: a cutoff missing, trec_eval's gain pairs, not offered, or unknown."""
    for table in (_TREC, _IRM):
        if text in table and table[text].cutoff == "required":
            _parse_cutoff(None, name, "required")
    if re.match(r"^(?:ndcg|dcg|ndcg_p)[._]-?\d+=", text):  # trec_eval's gain pairs: -m ndcg.1=3,2=9
        raise UnknownMetricError(f"Metric {name!r} is not offered: trec_eval's ndcg gain pairs are not implemented "
                                 "yet (trec_eval counts negative gains in DCG); ir_measures' nDCG(gains={1:3,2:9}) is.")
    without_cutoff = re.split(r"[@(]|[._](?=\d)", text, maxsplit=1)[0]  # ERR@10, iprec_at_recall_0.10
    for candidate in (text, without_cutoff):
        if candidate in NOT_OFFERED:
            raise UnknownMetricError(f"Metric {name!r} is not offered: {NOT_OFFERED[candidate]}.")
    raise UnknownMetricError(f"Unknown metric {name!r}. Supported: {_supported_names()}.")


def _grade_map(text: str, name: str) -> tuple[tuple | None, str]:
    """ir_measures' ``gains={grade: gain, ...}`` out of a parameter list: (sorted pairs or None, the rest)."""
    found = _GAINS.search(text)
    if found is None:
        return None, text
    pairs = {}
    for part in filter(None, (p.strip() for p in found["pairs"].split(","))):
        grade, sep, gain = part.partition(":")
        try:
            if not sep or float(grade) != int(float(grade)) or not math.isfinite(float(gain)):
                raise ValueError
            pairs[int(float(grade))] = float(gain)
        except (ValueError, OverflowError):  # int(inf) overflows
            raise UnknownMetricError(f"Metric {name!r}: gains entry {part!r} is not integer_grade:gain "
                                     "with a finite gain.") from None
    if not pairs:
        raise UnknownMetricError(f"Metric {name!r}: gains={{}} maps no grade.")
    return tuple(sorted(pairs.items())), text[:found.start()] + text[found.end():]


def _parse_irm_params(text: str, name: str) -> dict[str, Any]:
    params: dict[str, Any] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        key, sep, value = part.partition("=")
        if not sep:
            raise UnknownMetricError(f"Metric {name!r}: parameter {part!r} is not key=value.")
        if key.strip() in _UNSUPPORTED_IRM_PARAMS:
            raise UnknownMetricError(f"Metric {name!r}: ir_measures' {key.strip()}= is not supported by tieaware yet "
                                     "(its exact tie-aware statistics are not implemented).")
        if key.strip() in params:
            raise UnknownMetricError(f"Metric {name!r}: parameter {key.strip()!r} is given twice.")
        if key.strip() == "gains":  # a well-formed gains={...} was taken out by `_grade_map`
            raise UnknownMetricError(f"Metric {name!r}: gains= takes a dict {{grade: gain, ...}}, "
                                     f"got {value.strip()!r}.")
        if key.strip() == "dcg":
            params["dcg"] = value.strip().strip("'\"")
            if params["dcg"] not in DCG.choices:
                raise UnknownMetricError(f"Metric {name!r}: dcg={value.strip()} is not one of ir_measures' "
                                         f"{', '.join(map(repr, DCG.choices))}.")
            continue
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


#: Names users type that tieaware does not compute, and why (the error message says so).
NOT_OFFERED = {
    **dict.fromkeys(("iprec_at_recall", "11pt_avg", "IPrec"), "interpolated precision has no exact tie-aware "
                    "expectation implemented yet"),
    "infAP": "inferred AP's sampling estimate has no exact tie-aware expectation implemented yet",
    **dict.fromkeys(("gm_map", "gm_bpref"), "a geometric mean over queries of per-query expectations is not the "
                    "expectation of the geometric mean"),
    "err": "trec_eval has no err; ir_measures' ERR@k (gdeval's) is offered",
    "rbp_resid": "trec_eval 10's RBP residual (how far rbp could rise were every retrieved unjudged document of "
                 "top gain) has no tie-aware expectation implemented yet; rbp is offered",
    "unj": "trec_eval 10's unj_5/10/20 (the unjudged share of the top k, counting documents with a negative grade "
           "as unjudged) has no tie-aware expectation implemented yet; ir_measures' Judged@k is offered",
}
#: ir_measures parameters that tieaware does not implement (an error says so, never silently ignored).
_UNSUPPORTED_IRM_PARAMS = ("beta",)
_JUDGED_ONLY = re.compile(r"(?P<lead>,\s*)?\bjudged_only\s*=\s*(?P<value>[^,)]*)(?P<trail>\s*,)?")
#: families that take ir_measures' judged_only (those its pytrec_eval provider evaluates with trec_eval -J)
JUDGED_ONLY_FAMILIES = tuple(f.name for f in FAMILIES.values() if any(JUDGED_ONLY in n.params for n in f.names))


_GAINS = re.compile(r"\bgains\s*=\s*\{(?P<pairs>[^}]*)\}")
_CUTOFF_LIST = re.compile(r"(?P<base>[A-Za-z_]+[._])(?P<ks>\d+(?:,\d+)+)")


def expand_names(metrics) -> list[str]:
    """Metric names as trec_eval users write them, one name each: ``P.5,10`` -> ``P.5``, ``P.10``;
    a trec_eval family without cutoff (``P``, ``ndcg_cut``, ``map_cut``, ``success``) -> its default
    cutoffs, named as pytrec_eval keys them (``P_5`` ... ``P_1000``); ``official`` / ``all_trec`` ->
    the members tieaware computes, with a warning naming those left out (and why). ir_measures
    measure objects become their names (``str(nDCG@10)``). Other names pass through."""
    names = [metrics] if isinstance(metrics, str) or _is_ir_measure(metrics) else list(metrics)
    out: list[str] = []
    for name in names:
        if _is_ir_measure(name):
            name = str(name)
        if not isinstance(name, str):
            raise UnknownMetricError(f"Metric names are strings, got {name!r} ({type(name).__name__}).")
        out.extend(_expand_one(name.strip()))
    return out


def metric_keys(metrics) -> tuple[list[str], bool]:
    """(keys, single): the one reading of what a user passes as ``metrics`` to any entry point
    (`tieaware.evaluate`, `tieaware.compare`, `tieaware.testing`, the pytest plugin). ``keys`` are the
    names `expand_names` gives, which key the results; pass them on instead of ``metrics`` so a group
    warns once. ``single``: one name or measure object naming one metric, for which `evaluate`
    returns one `MetricResult` rather than a report."""
    keys = expand_names(metrics)
    return keys, len(keys) == 1 and (isinstance(metrics, str) or _is_ir_measure(metrics))


def _is_ir_measure(obj) -> bool:
    return type(obj).__module__.startswith("ir_measures") and hasattr(obj, "NAME")


def _expand_one(name: str) -> list[str]:
    listed = _CUTOFF_LIST.fullmatch(name)
    if listed:
        return [listed["base"] + k for k in listed["ks"].split(",")]
    if name in TREC_DEFAULT_CUTOFFS and name not in _RANX:  # ranx reads a bare "recall": the whole list
        return _default_cutoffs(name)
    if name in TREC_GROUPS:
        import warnings

        members, left_out = TREC_GROUPS[name]
        warnings.warn(f"trec_eval's {name!r} measures that tieaware does not compute were left out: "
                      + "; ".join(f"{names} ({why})" for names, why in left_out.items()), UserWarning, stacklevel=4)
        return [n for member in members
                for n in (_default_cutoffs(member) if member in TREC_DEFAULT_CUTOFFS else [member])]
    return [name]


def _default_cutoffs(name: str) -> list[str]:
    """trec_eval's family ``name`` at its default cutoffs, named as pytrec_eval keys them (``P_5``)."""
    return [f"{name}_{k}" for k in TREC_DEFAULT_CUTOFFS[name]]


def parse_metrics(metrics, relevance_level: float = 1) -> list[MetricSpec]:
    """Parse a metric name or a list of names (see `expand_names`); duplicates are an error."""
    names = expand_names(metrics)
    if not names:
        raise UnknownMetricError("No metric given.")
    if len(set(names)) != len(names):
        repeated = sorted({n for n in names if names.count(n) > 1})
        raise UnknownMetricError(f"Metric names repeat: {repeated}.")
    return [parse_metric(n, relevance_level) for n in names]
