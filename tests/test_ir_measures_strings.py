"""Metric names as strings in tieaware's ir_measures wrappers, text parsing, and ir_measures' own CLI."""
from __future__ import annotations

import subprocess
import sys

import ir_measures
import pytest
from ir_measures import P, nDCG

import tieaware
from tieaware.datasets import cranfield
from tieaware.errors import InputError, UnknownMetricError
from tieaware.integrations.ir_measures import Bias, E, Max, Min, Range, parse_measure

FILES = cranfield()
STATS = {E: "expected", Range: "range", Bias: "bias", Min: "min", Max: "max"}


@pytest.fixture(scope="module")
def data():
    return tieaware.read_trec_qrels(FILES.qrels), tieaware.read_trec_run(FILES.runs["bf16"])


@pytest.mark.parametrize("name", ["ndcg_cut_10", "ndcg_cut.10", "ndcg@10", "nDCG@10", "map@100-l2", "P(rel=2)@5",
                                  "recip_rank", "mrr@10"])
def test_string_names_in_every_syntax_report_evaluate_numbers(data, name):
    qrels, run = data
    measures = [stat(name) for stat in STATS]
    res = ir_measures.calc_aggregate(measures, qrels, run)
    theirs = tieaware.evaluate(qrels, run, name, oblivious="ir_measures")
    for stat, column in STATS.items():
        assert res[stat(name)] == pytest.approx(getattr(theirs, column), abs=1e-12), (stat, name)
    assert res[Range(name)] > 0  # bf16 ties move every one of them: a wrong name could not pass


def test_ranx_and_trec_eval_strings_keep_their_own_conventions(data):
    qrels, run = data
    res = ir_measures.calc_aggregate([E("ndcg@10-l2"), E("ndcg_cut_10")], qrels, run)
    ranx_style, trec_style = res[E("ndcg@10-l2")], res[E("ndcg_cut_10")]
    assert ranx_style != trec_style  # ranx: grades below the level get no gain; trec_eval: every positive grade
    assert ranx_style == pytest.approx(tieaware.evaluate(qrels, run, "ndcg@10-l2").expected, abs=1e-12)


def test_string_and_object_wrappers_are_one_measure():
    assert E("nDCG@10") == E(nDCG@10) and hash(E(" nDCG@10 ")) == hash(E(nDCG@10))
    assert str(Range("ndcg_cut_10")) == "Range(ndcg_cut_10)"
    assert str(Bias("ndcg@10", oblivious="trec_eval")) == "Bias(ndcg@10,oblivious='trec_eval')"
    with pytest.raises(UnknownMetricError):
        E("infAP")
    with pytest.raises(UnknownMetricError):
        E("ndcg_cut_x")


@pytest.mark.parametrize("text, expected", [
    ("E(nDCG@10)", E(nDCG@10)),
    (" Range( ndcg_cut_10 ) ", Range("ndcg_cut_10")),
    ("Bias(nDCG@10, oblivious=trec_eval)", Bias(nDCG@10, oblivious="trec_eval")),
    ("Bias(ndcg@10,oblivious='ranx')", Bias("ndcg@10", oblivious="ranx")),
    ("Min(P(rel=2)@5)", Min(P(rel=2)@5)),
    ("Max(measure=\"nDCG(dcg='exp-log2')@10\")", Max("nDCG(dcg='exp-log2')@10")),
    ("E('map@100-l2')", E("map@100-l2")),
    ("nDCG@10", nDCG@10),
    ("P(rel=2)@5", P(rel=2)@5),
])
def test_parse_measure_reads_wrapped_text(text, expected):
    parsed = parse_measure(text)
    assert parsed == expected and type(parsed) is type(expected)


def test_parse_measure_errors():
    with pytest.raises(InputError, match="expected E"):
        parse_measure("E(nDCG@10, cutoff=5)")
    with pytest.raises(InputError, match="expected Range"):
        parse_measure("Range()")
    with pytest.raises(UnknownMetricError):
        parse_measure("E(infAP)")
    with pytest.raises(NameError):  # ir_measures' own error for a name it does not know
        parse_measure("Foo@10")


def test_ir_measures_parser_takes_the_registered_wrappers_with_a_keyword_only():
    assert ir_measures.parse_measure('E(measure="nDCG@10")') == E(nDCG@10)
    assert ir_measures.parse_measure('Bias(measure="ndcg_cut_10",oblivious="trec_eval")') == \
        Bias("ndcg_cut_10", oblivious="trec_eval")
    with pytest.raises(ValueError, match="args must be named"):
        ir_measures.parse_measure("E(nDCG@10)")  # positional: ir_measures' parser refuses it
    with pytest.raises(ValueError, match="values must be str"):
        ir_measures.parse_measure("E(measure=nDCG@10)")  # a measure expression as a value: refused too


def test_ir_measures_cli_knows_the_wrappers_only_in_a_process_that_imports_them(tmp_path):
    measure = 'E(measure="nDCG@10")'
    plain = subprocess.run([sys.executable, "-m", "ir_measures", str(FILES.qrels), str(FILES.runs["bf16"]), measure],
                           capture_output=True, text=True, timeout=300)
    assert plain.returncode != 0 and "unknown measure" in plain.stderr  # no plugin hook loads tieaware there
    code = ("import sys, tieaware.integrations.ir_measures; from ir_measures.__main__ import main_cli; "
            "sys.argv[0] = 'ir_measures'; main_cli()")
    done = subprocess.run([sys.executable, "-c", code, str(FILES.qrels), str(FILES.runs["bf16"]), measure, "nDCG@10",
                           "-p", "12"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    values = dict(line.split("\t") for line in done.stdout.splitlines())
    qrels, run = tieaware.read_trec_qrels(FILES.qrels), tieaware.read_trec_run(FILES.runs["bf16"])
    assert float(values["E(nDCG@10)"]) == pytest.approx(tieaware.evaluate(qrels, run, "nDCG@10").expected, abs=1e-11)
