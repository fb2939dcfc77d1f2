"""Random data in every container (dicts, ranx objects, files, DataFrames) gives the same numbers or a
`TieawareError`; random TREC text reads or raises an `InputError`."""
import gzip
import math

import pandas as pd
import pytest
import ranx
from builders import unicode_keyed_run
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tieaware
from tieaware import InputError, TieawareError
from tieaware.inputs import read_text

METRICS = ["ndcg@3", "mrr", "map", "recall@2", "P@2", "bpref"]


def _values(report) -> dict:
    return {name: (r.expected, r.oblivious, r.min, r.max) for name, r in report.items()}


# ------------------------------------------------------------ fuzzing
def _write_trec(path, table: dict, kind: str) -> None:
    lines = []
    for qid, docs in table.items():
        for rank, (doc, value) in enumerate(docs.items(), 1):
            lines.append(f"{qid} 0 {doc} {value}" if kind == "qrels" else f"{qid} Q0 {doc} {rank} {value!r} t")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _frame(table: dict, value: str) -> pd.DataFrame:
    rows = [(q, d, v) for q, docs in table.items() for d, v in docs.items()]
    return pd.DataFrame(rows, columns=["q_id", "doc_id", value])


_ids = st.sampled_from(["d1", "d2", "d3", "d4", "d5", "dé", "d10"])
_queries = st.sampled_from(["q1", "q2", "q3"])
_scores = st.sampled_from([0.0, 0.25, 0.5, 0.5, 1.0, -1.0, math.inf, 1e300, 3.0])
_grades = st.sampled_from([0, 1, 2, 3, -1])
_qrels = st.dictionaries(_queries, st.dictionaries(_ids, _grades, min_size=1, max_size=5), min_size=1, max_size=3)
_runs = st.dictionaries(_queries, st.dictionaries(_ids, _scores, min_size=1, max_size=6), min_size=1, max_size=3)

@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(qrels=_qrels, run=_runs, make_comparable=st.booleans())
def test_every_container_gives_the_same_numbers_or_a_tieaware_error(tmp_path, qrels, run, make_comparable):
    """dict, DataFrame, TREC file, gzipped TREC file and ranx objects: identical values, or
    the same `TieawareError` class from each; inputs never mutated."""
    qrels_path, run_path = tmp_path / "qrels.trec", tmp_path / "run.trec"
    _write_trec(qrels_path, qrels, "qrels")
    _write_trec(run_path, run, "run")
    run_gz = tmp_path / "run.trec.gz"
    run_gz.write_bytes(gzip.compress(run_path.read_bytes()))
    snapshot = (repr(qrels), repr(run))
    forms = {
        "dict": (qrels, run),
        "frame": (_frame(qrels, "relevance"), _frame(run, "score")),
        "trec": (str(qrels_path), str(run_path)),
        "gz": (str(qrels_path), str(run_gz)),
        "ranx": (ranx.Qrels(qrels), ranx.Run(run)),
        "dict+ranx": (qrels, ranx.Run(run)),
        "ranx+dict": (ranx.Qrels(qrels), run),
        "ranx unicode ids": (ranx.Qrels(qrels), unicode_keyed_run(run)),
    }
    outcomes = {}
    for form, (q, r) in forms.items():
        try:
            # one tie order for every form (by default ranx objects get ranx's own)
            outcomes[form] = _values(tieaware.evaluate(q, r, METRICS, make_comparable=make_comparable,
                                                       oblivious="trec_eval"))
        except TieawareError as exc:
            outcomes[form] = type(exc)
    assert (repr(qrels), repr(run)) == snapshot
    first = outcomes["dict"]
    for form, outcome in outcomes.items():
        if isinstance(first, dict) and isinstance(outcome, dict):
            for name in METRICS:
                assert outcome[name] == pytest.approx(first[name], abs=1e-12), (form, name)
        else:
            assert outcome == first, (form, outcomes)

@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(st.text(alphabet=" \t0123456789.-_eEinfQxq\u00e9\u0661#", max_size=24), max_size=6),
       kind=st.sampled_from(["qrels", "run"]))
def test_random_trec_text_either_reads_or_raises_an_input_error(tmp_path, lines, kind):
    path = tmp_path / f"{kind}.trec"
    path.write_text("\n".join(lines), encoding="utf-8")
    reader = tieaware.read_trec_qrels if kind == "qrels" else tieaware.read_trec_run
    try:
        table = reader(path)
    except InputError:
        return
    for docs in table.values():
        for value in docs.values():
            assert isinstance(value, int) if kind == "qrels" else not math.isnan(value)


def test_read_text_of_a_missing_file_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="does not exist"):
        read_text(tmp_path / "nope.jsonl")
