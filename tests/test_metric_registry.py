"""One declarative registry: the parser, the unknown-metric message, --list-metrics and the metric
table of docs/evaluate.md all come from `tieaware.registry`."""
import re
import warnings
from pathlib import Path

import pytest

import tieaware
from tieaware.cli import main
from tieaware.errors import UnknownMetricError
from tieaware.metrics import NOT_OFFERED, expand_names, list_metrics, markdown_table, parse_metric, parse_metrics
from tieaware.registry import NAMES, TREC_DEFAULT_CUTOFFS

GUIDE = Path(__file__).resolve().parents[1] / "docs" / "evaluate.md"
QRELS = {"q1": {"d1": 2, "d2": 0, "d3": 1}, "q2": {"d5": 1, "d6": 3}}
RUN = {"q1": {"d1": 0.5, "d2": 0.5, "d3": 0.2, "d4": 0.9}, "q2": {"d5": 0.3, "d6": 0.3, "d7": 0.3}}


def test_the_guide_table_is_the_generated_one():
    assert markdown_table() in GUIDE.read_text(encoding="utf-8")


@pytest.mark.parametrize("entry", NAMES, ids=lambda e: f"{e.syntax}:{e.name}")
def test_every_registered_name_and_alias_parses_to_its_family(entry):
    for base in (entry.name, *entry.aliases):
        if entry.cutoff == "no":
            names = [base]
        else:
            sep = "." if entry.syntax == "trec_eval" else "@"
            names = [f"{base}{sep}7"] + ([base] if entry.cutoff == "optional" else [])
        for name in names:
            spec = parse_metric(name)
            assert (spec.family, spec.gain if entry.family != "rbp" else entry.gain) == (entry.family, entry.gain)
            if sep_k := re.search(r"[.@](\d+)$", name):
                assert spec.k == int(sep_k[1])


def test_list_metrics_and_the_cli_listing_cover_the_registry(capsys):
    rows = list_metrics()
    assert len(rows) == len(NAMES) + 1 and {r["syntax"] for r in rows} == {"ranx", "trec_eval", "ir_measures"}
    assert main(["eval", "--list-metrics"]) == 0
    out = capsys.readouterr().out
    assert all(row["name"] in out for row in rows) and "ndcg_cut.k" in out


def test_trec_eval_families_without_a_cutoff_expand_as_pytrec_eval_keys_them():
    report = tieaware.evaluate(QRELS, RUN, "P")
    assert list(report) == [f"P_{k}" for k in TREC_DEFAULT_CUTOFFS["P"]]
    assert float(report["P_5"]) == float(tieaware.evaluate(QRELS, RUN, "P.5"))
    assert expand_names(["P.5,10", "success"]) == ["P.5", "P.10", "success_1", "success_5", "success_10"]


def test_trec_eval_groups_expand_with_a_warning_naming_what_is_left_out():
    with pytest.warns(UserWarning, match=r"gm_map .*geometric mean.*iprec_at_recall"):
        names = [spec.name for spec in parse_metrics("official")]
    assert {"map", "Rprec", "bpref", "recip_rank", "P_5", "P_1000"} <= set(names)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert {"ndcg_cut_10", "recall_100", "set_F", "success_1"} <= {s.name for s in parse_metrics("all_trec")}


def test_fractional_trec_eval_cutoffs_truncate_as_trec_eval_does():
    assert parse_metric("ndcg_cut.23.4").k == 23
    assert float(tieaware.evaluate(QRELS, RUN, "ndcg_cut.2.9")) == float(tieaware.evaluate(QRELS, RUN, "ndcg_cut.2"))
    with pytest.raises(UnknownMetricError, match="not an integer"):
        parse_metric("ndcg@2.5")  # ranx and ir_measures cutoffs are integers


@pytest.mark.parametrize("name,message", [
    ("nDCG(rel=2)@10", "nDCG takes no parameter rel"), ("Judged(rel=2)@5", "Judged takes no parameter rel"),
    ("Rprec(p=0.5)", "Rprec takes no parameter p"), ("nDCG(gains=1)@10", "gains= takes a dict"),
    ("SetF(beta=2)", "not supported by tieaware yet"), ("nDCG(dcg=log10)@10", "not one of ir_measures'"),
    ("nDCG(dcg='exp-log2')", "with a cutoff @k"), ("AP(dcg=log2)", "AP takes no parameter dcg"),
])
def test_parameters_ir_measures_rejects_or_tieaware_lacks_are_errors(name, message):
    with pytest.raises(UnknownMetricError, match=re.escape(message)):
        parse_metric(name)


def test_ndcg_dcg_parameter_picks_the_gain():
    """ir_measures' nDCG(dcg='exp-log2')@k is 2^grade - 1 (ranx's ndcg_burges), dcg=log2 the grade."""
    exp, linear = parse_metric("nDCG(dcg='exp-log2')@10"), parse_metric('nDCG(dcg="log2")@10')
    assert (exp.family, exp.gain, exp.k, linear.gain) == ("ndcg", "exp", 10, "linear")
    ours = tieaware.evaluate(QRELS, RUN, ["nDCG(dcg='exp-log2')@2", "ndcg_burges@2", "nDCG(dcg=exp-log2)@2"])
    assert ours["nDCG(dcg='exp-log2')@2"].expected == ours["ndcg_burges@2"].expected
    assert ours["nDCG(dcg=exp-log2)@2"].expected == ours["ndcg_burges@2"].expected


@pytest.mark.parametrize("name", ["iprec_at_recall_0.10", "11pt_avg", "infAP", "gm_map", "err@10",
                                  "rbp_resid", "unj_5", "unj.10", "unj_20"])
def test_names_that_are_not_tie_aware_yet_say_why(name):
    with pytest.raises(UnknownMetricError, match="is not offered: "):
        parse_metric(name)
    assert any(name.startswith(key) for key in NOT_OFFERED)


def test_unknown_name_points_to_the_listing():
    with pytest.raises(UnknownMetricError, match="--list-metrics"):
        parse_metric("ndgc@10")
