"""Every metric family, once: one `Family` record each, and the tool orders `evaluate` reproduces.

A record holds what the rest of tieaware knows about a family: its kernel (named, imported on first
use, so this module and ``import tieaware`` stay free of numba), the names users type for it in
ranx, trec_eval and ir_measures syntax with ir_measures' parameters, trec_eval's base names and
default cutoffs, the tie order ir_measures applies to it and the metric ``tieaware warmup`` compiles
it with. The parser (`tieaware.metrics`), ``tieaware eval --list-metrics``, the metric table of
docs/evaluate.md, warmup, the CLI's trec_eval names and `engine.ir_measures_order` read it.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from importlib import import_module
from typing import Any

#: the tools whose tie order ``evaluate(..., oblivious=...)`` reproduces
OBLIVIOUS_ORDERS = ("trec_eval", "ranx", "input", "ir_measures", "sentence_transformers",
                    "sentence_transformers_reranking", "torchmetrics", "mteb")
#: the cutoffs of a tie census and of ``compare_at_k`` / ``tieaware plot`` when none are given
DEFAULT_KS = (1, 3, 5, 10, 20, 50, 100)


@dataclass(frozen=True)
class Param:
    """An ir_measures parameter as ir_measures declares it (its ``ParamInfo``).

    Attributes:
        name: the keyword (``rel``, ``p``, ``dcg``, ``gains``, ``judged_only``).
        dtype: its type.
        default: its default; None where ir_measures has none (NOT_PROVIDED).
        description: ir_measures' ``desc``.
        choices: the values it takes, where ir_measures restricts them.
    """

    name: str
    dtype: type
    default: Any
    description: str
    choices: tuple = ()


REL = Param("rel", int, 1, "minimum relevance score to be considered relevant (inclusive)")
JUDGED_ONLY = Param("judged_only", bool, False, "ignore returned documents that do not have relevance judgments")
_COUNTED = Param("rel", int, 1, "minimum relevance score to be counted (inclusive)")
_BINARY_OR_GRADED = Param("rel", int, None, "minimum relevance score to be considered relevant (inclusive), "
                          "or NOT_PROVIDED to use graded relevance")
_RETRIEVED = Param("rel", int, None, "minimum relevance score to be counted (inclusive), or all documents "
                   "returned if NOT_PROVIDED")
PERSISTENCE = Param("p", float, 0.8, "persistence")
DCG = Param("dcg", str, "log2", "DCG formulation", ("log2", "exp-log2"))
GAINS = Param("gains", dict, None, "custom gain mapping (int-to-int)")


@dataclass(frozen=True)
class Name:
    """One name a tool's users type for a family.

    Attributes:
        syntax: "ranx", "trec_eval" or "ir_measures".
        name: the base name (``ndcg``, ``ndcg_cut``, ``nDCG``).
        family: the `Family` it computes (filled in by the family).
        gain: "binary", "linear", "exp" or "scaled".
        cutoff: "no", "optional" or "required".
        params: ir_measures parameters it takes besides the cutoff.
        aliases: other base names of the same syntax (ir_measures' ``MAP`` for ``AP``).
        description: one line for listings.
    """

    syntax: str
    name: str
    family: str = ""
    gain: str = "binary"
    cutoff: str = "optional"
    params: tuple[Param, ...] = ()
    aliases: tuple[str, ...] = ()
    description: str = ""

    @property
    def param_names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.params)


def _ranx(name: str, **fields: Any) -> Name:
    return Name("ranx", name, **fields)


def _trec(name: str, **fields: Any) -> Name:
    return Name("trec_eval", name, **fields)


def _irm(name: str, **fields: Any) -> Name:
    return Name("ir_measures", name, **fields)


#: trec_eval's default cutoffs of P, recall, ndcg_cut and map_cut (its ``-m P`` prints P_5 ... P_1000)
_TREC_CUTOFFS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)


@dataclass(frozen=True)
class Family:
    """A metric family: the facts every layer of tieaware reads about it.

    Attributes:
        name: the family (`MetricSpec.family`).
        kernel: ``module.function`` in `tieaware.kernels.families`: function(judged, spec) -> (Q, 5)
            array of expected, variance, min, max, oblivious.
        warmup: the metric ``tieaware warmup`` evaluates to compile the kernel.
        names: the names of the family in the three syntaxes (`Name`).
        trec: trec_eval's base name without a cutoff (``map``), or None.
        trec_cut: trec_eval's base name with a cutoff (``map_cut``: ``map_cut_10``), or None.
        trec_cutoffs: the cutoffs trec_eval prints for ``trec_cut`` named without one.
        ir_measures_order: the tie order of the provider ir_measures' default pipeline (0.3-0.4) picks:
            pytrec_eval's (trec_eval's order) for most, cwl_eval's stable sort ("input") for RBP, the
            judged provider's (-score, doc id) ("docid_ascending") for Judged@k.
        ir_measures_order_at_k: the same with a cutoff, where it differs (RR@k: the msmarco provider,
            doc id ascending); None: as without one.
        torchmetrics_op: the torch operation torchmetrics' (1.x) retrieval metric ranks with on the CPU,
            whose tie order `RankedLists.tool_rank` reproduces: ``preds.topk(min(k, n), sorted=True)``
            ("torch_topk") for RR, AP and precision, ``torch.argsort(preds, descending=True)``
            ("torch_argsort") for the others.
        aggregate: how per-query values combine: "mean", or "sum" (trec_eval's counts).
        trec_depth: trec_eval's ``-M N`` counts it over the top N documents (``num_ret.N``).
        counts: the metric as a function of C, the number of relevant documents in the top k alone:
            "count" (C), "per_k" (C / k), "positive" (C > 0); None for the others. Tie order moves C
            hypergeometrically (`tieaware.tie_orders.CountLaw`), which makes p_flip exact at any size.
    """

    name: str
    kernel: str
    warmup: str
    names: tuple[Name, ...]
    trec: str | None = None
    trec_cut: str | None = None
    trec_cutoffs: tuple[int, ...] = ()
    ir_measures_order: str = "trec_eval"
    ir_measures_order_at_k: str | None = None
    torchmetrics_op: str = "torch_argsort"
    aggregate: str = "mean"
    trec_depth: bool = False
    counts: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "names", tuple(dataclasses.replace(n, family=self.name) for n in self.names))

    @property
    def kernel_module(self) -> str:
        """The module of the kernel (``tieaware.kernels.families.dcg``)."""
        return "tieaware.kernels.families." + self.kernel.split(".")[0]

    def stats(self) -> Callable[..., Any]:
        """The family function (imports its kernel module, and so numba, on first use)."""
        return getattr(import_module(self.kernel_module), self.kernel.split(".")[1])

    def trec_name(self, has_cutoff: bool) -> str | None:
        """trec_eval's base name of the family without or with a cutoff; None if trec_eval has none."""
        return self.trec_cut if has_cutoff else self.trec

    def tie_order_of_ir_measures(self, k: int | None) -> str:
        """The tie order ir_measures applies to the family at cutoff k (None: no cutoff)."""
        if k is not None and self.ir_measures_order_at_k is not None:
            return self.ir_measures_order_at_k
        return self.ir_measures_order


_TOP = "relevant share of the top k (divides by k)"
_SUCCESS = "1 if a relevant document is in the top k"
_RECALL = "share of the relevant documents in the top k"
_RPREC = "precision at R, the number of relevant documents"
_RR = "reciprocal rank of the first relevant document"
_AP = "average precision (divides by R)"
_NDCG = "normalised DCG, gain = grade"
_BPREF = "binary preference (judged documents only)"
_SETP, _SETR, _SETF = "relevant share of the retrieved set", "recall of the retrieved set", "F1 of the retrieved set"
_SETAP, _SETRELP = "set precision x set recall", "relevant retrieved / min(n, R)"
_NUMQ, _NUMREL = "queries evaluated (a sum over queries)", "relevant documents in the qrels; summed"

#: every family, in the order of the docs' metric table and ``--list-metrics``
FAMILIES: dict[str, Family] = {f.name: f for f in (
    Family("hits", "hits.hits", "hits@2", (_ranx("hits", description="relevant documents in the top k"),),
           counts="count"),
    Family("success", "success.success", "hit_rate@2", (
        _ranx("hit_rate", description=_SUCCESS),
        _trec("success", cutoff="required", description=_SUCCESS),
        _irm("Success", cutoff="required", params=(REL, JUDGED_ONLY), description=_SUCCESS),
    ), trec_cut="success", trec_cutoffs=(1, 5, 10), counts="positive"),
    Family("precision", "hits.precision", "precision@2", (
        _ranx("precision", description=_TOP),
        _trec("P", cutoff="required", description=_TOP),
        _irm("P", cutoff="required", params=(REL, JUDGED_ONLY), aliases=("Precision",), description=_TOP),
    ), trec_cut="P", trec_cutoffs=_TREC_CUTOFFS, torchmetrics_op="torch_topk", counts="per_k"),
    Family("recall", "hits.recall", "recall@2", (
        _ranx("recall", description=_RECALL),
        _trec("recall", cutoff="required", description=_RECALL),
        _irm("R", cutoff="required", params=(REL, JUDGED_ONLY), aliases=("Recall",), description=_RECALL),
    ), trec_cut="recall", trec_cutoffs=_TREC_CUTOFFS),
    Family("f1", "hits.f1", "f1@2", (_ranx("f1", description="harmonic mean of precision and recall at k"),)),
    Family("rprec", "hits.rprec", "r-precision", (
        _ranx("r-precision", cutoff="no", description=_RPREC),
        _trec("Rprec", cutoff="no", description=_RPREC),
        _irm("Rprec", cutoff="no", params=(REL, JUDGED_ONLY), aliases=("RPrec",), description=_RPREC),
    ), trec="Rprec"),
    Family("rr", "rr.rr", "mrr@2", (
        _ranx("mrr", description=_RR),
        _trec("recip_rank", cutoff="no", description=_RR),
        _irm("RR", params=(REL, JUDGED_ONLY), aliases=("MRR",), description=_RR),
    ), trec="recip_rank", ir_measures_order_at_k="docid_ascending", torchmetrics_op="torch_topk"),
    Family("ap", "ap.ap", "map@3", (
        _ranx("map", description=_AP),
        _trec("map", cutoff="no", description=_AP),
        _trec("map_cut", cutoff="required", description="average precision at k (divides by R)"),
        _irm("AP", params=(REL, JUDGED_ONLY), aliases=("MAP",), description=_AP),
    ), trec="map", trec_cut="map_cut", trec_cutoffs=_TREC_CUTOFFS, torchmetrics_op="torch_topk"),
    Family("dcg", "dcg.dcg", "dcg_burges@3", (
        _ranx("dcg", gain="linear", description="discounted cumulative gain, gain = grade"),
        _ranx("dcg_burges", gain="exp", description="discounted cumulative gain, gain = 2^grade - 1"),
    )),
    Family("ndcg", "dcg.ndcg", "ndcg@3", (
        _ranx("ndcg", gain="linear", description=_NDCG),
        _ranx("ndcg_burges", gain="exp", description="normalised DCG, gain = 2^grade - 1"),
        _trec("ndcg", gain="linear", cutoff="no", description=_NDCG),
        _trec("ndcg_cut", gain="linear", cutoff="required", description="normalised DCG at k"),
        _irm("nDCG", gain="linear", params=(DCG, GAINS, JUDGED_ONLY), aliases=("NDCG",), description=_NDCG),
    ), trec="ndcg", trec_cut="ndcg_cut", trec_cutoffs=_TREC_CUTOFFS),
    Family("bpref", "bpref.bpref", "bpref", (
        _ranx("bpref", cutoff="no", description=_BPREF),
        _trec("bpref", cutoff="no", description=_BPREF),
        _irm("Bpref", cutoff="no", params=(REL,), aliases=("BPref",), description=_BPREF),
    ), trec="bpref"),
    Family("rbp", "rbp.rbp", "rbp.8", (
        _irm("RBP", gain="linear", params=(_BINARY_OR_GRADED, PERSISTENCE),
            description="rank-biased precision (ranx: rbp.95 for p = 0.95)"),
        _trec("rbp", gain="scaled", cutoff="no",
             description="rank-biased precision, p = 0.9 (rbp.p=0.95); grade / top grade if that exceeds 1"),
    ), ir_measures_order="input"),
    Family("err", "err.err", "ERR@3", (
        _irm("ERR", gain="exp", cutoff="required",
            description="expected reciprocal rank, R = (2^grade - 1)/16 (gdeval; grades 0-4)"),
    )),
    Family("judged", "judged.judged", "Judged@2", (
        _irm("Judged", cutoff="required", description="share of the top k with a judgment"),
    ), ir_measures_order="docid_ascending"),
    Family("set_p", "sets.set_p", "set_P", (
        _trec("set_P", cutoff="no", description=_SETP),
        _irm("SetP", cutoff="no", params=(REL, JUDGED_ONLY), description=_SETP),
    ), trec="set_P"),
    Family("set_recall", "sets.set_recall", "set_recall", (
        _trec("set_recall", cutoff="no", description=_SETR),
        _irm("SetR", cutoff="no", params=(REL,), description=_SETR),
    ), trec="set_recall"),
    Family("set_f", "sets.set_f", "set_F", (
        _trec("set_F", cutoff="no", description=_SETF),
        _irm("SetF", cutoff="no", params=(REL, JUDGED_ONLY), description=_SETF),
    ), trec="set_F"),
    Family("set_map", "sets.set_map", "set_map", (
        _trec("set_map", cutoff="no", description=_SETAP),
        _irm("SetAP", cutoff="no", params=(REL, JUDGED_ONLY), description=_SETAP),
    ), trec="set_map"),
    Family("set_relative_p", "sets.set_relative_p", "set_relative_P", (
        _trec("set_relative_P", cutoff="no", description=_SETRELP),
        _irm("SetRelP", cutoff="no", params=(REL, JUDGED_ONLY), description=_SETRELP),
    ), trec="set_relative_P"),
    Family("num_q", "counts.num_q", "num_q", (
        _trec("num_q", cutoff="no", description=_NUMQ),
        _irm("NumQ", cutoff="no", description=_NUMQ),
    ), trec="num_q", aggregate="sum"),
    Family("num_ret", "counts.num_ret", "num_ret", (
        _trec("num_ret", description="documents retrieved (.k: in the top k, as -M k); summed"),
        _irm("NumRet", cutoff="no", params=(_RETRIEVED,),
            description="documents retrieved; NumRet(rel=N): those judged >= N; summed"),
    ), trec="num_ret", aggregate="sum", trec_depth=True),
    Family("num_rel", "counts.num_rel", "num_rel", (
        _trec("num_rel", cutoff="no", description=_NUMREL),
        _irm("NumRel", cutoff="no", params=(_COUNTED,), description=_NUMREL),
    ), trec="num_rel", aggregate="sum"),
    Family("num_rel_ret", "counts.num_rel_ret", "num_rel_ret", (
        _trec("num_rel_ret", description="relevant documents retrieved (.k: in the top k, as -M k); summed"),
        _irm("NumRelRet", cutoff="no", params=(dataclasses.replace(_RETRIEVED, default=1),),
             description="relevant documents retrieved; summed"),
    ), trec="num_rel_ret", aggregate="sum", trec_depth=True),
)}

#: every name in every syntax, family by family
NAMES: tuple[Name, ...] = tuple(name for family in FAMILIES.values() for name in family.names)
#: trec_eval's default cutoffs of a family named without one (``P`` -> P_5 ... P_1000), by base name
TREC_DEFAULT_CUTOFFS: dict[str, tuple[int, ...]] = {
    f.trec_cut: f.trec_cutoffs for f in FAMILIES.values() if f.trec_cut and f.trec_cutoffs}
#: the families summed over queries rather than averaged (trec_eval's and ir_measures' counts)

#: trec_eval's measures in the order it prints them (its ``te_trec_measures`` table), the ones tieaware computes.
TREC_PRINT_ORDER = ("num_q", "num_ret", "num_rel", "num_rel_ret",
                    "map", "Rprec", "bpref", "recip_rank", "P", "recall", "ndcg", "ndcg_cut", "map_cut", "success",
                    "set_P", "set_relative_P", "set_recall", "set_map", "set_F")
#: trec_eval's measure groups: the members tieaware computes, and those it leaves out (with why).
TREC_GROUPS = {
    "official": (["num_q", "num_ret", "num_rel", "num_rel_ret", "map", "Rprec", "bpref", "recip_rank", "P"],
                 {"gm_map": "the geometric mean over queries of a tie-aware expectation is not tie-aware",
                  "iprec_at_recall": "interpolated precision has no exact tie-aware expectation here yet"}),
    "all_trec": (["num_q", "num_ret", "num_rel", "num_rel_ret", "map", "map_cut", "Rprec", "bpref", "recip_rank", "P",
                  "recall", "ndcg", "ndcg_cut", "success", "rbp", "set_P", "set_recall", "set_F", "set_map",
                  "set_relative_P"],
                 {"gm_map, gm_bpref": "the geometric mean over queries of a tie-aware expectation is not tie-aware",
                  "iprec_at_recall, 11pt_avg, infAP, rbp_resid, unj": "no exact tie-aware expectation here yet",
                  "Rprec_mult, utility, relstring, G, binG, runid, relative_P, ndcg_rel, Rndcg, "
                  "num_nonrel_judged_ret": "not implemented yet"}),
}


def family(name: str) -> Family:
    """The `Family` record of a family name.

    Raises:
        ValueError: no family has that name.
    """
    record = FAMILIES.get(name)
    if record is None:
        raise ValueError(f"unknown metric family {name!r}; known: {', '.join(FAMILIES)}")
    return record
