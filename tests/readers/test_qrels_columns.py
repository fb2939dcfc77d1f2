"""TREC qrels read into columns (`read_qrels_columns`, `QrelsColumns`): the same judgments, order and
errors as the dict reader, and the same chunks for the group kernels."""
import gzip
from pathlib import Path

import numpy as np
import pytest

from tieaware import streaming
from tieaware.cli import main
from tieaware.errors import InputError
from tieaware.readers.judgments import Judgments, QrelsColumns, judgment_chunk
from tieaware.readers.trec_files import read_qrels_columns, read_trec

DATA = Path(__file__).parents[1] / "data"
QRELS_FILES = [DATA / "trec_eval" / "qrels.test.gz", DATA / "trec_eval" / "qrels-302.test",
               DATA / "trec_eval" / "qrels.rel_level.gz", DATA / "ir_measures" / "compat.qrels",
               DATA / "ir_measures" / "cwl.qrels", DATA / "ranx" / "qrels.trec"]


def _decoded(chunk, query_ids: list) -> list:
    """Per query, its (doc id, grade) pairs in the chunk's order."""
    text = chunk.codes.tobytes().decode("utf-32-le")
    return [[(text[lo:hi], grade) for lo, hi, grade in zip(chunk.lo[a:b].tolist(), chunk.hi[a:b].tolist(),
                                                           chunk.grades[a:b].tolist())]
            for a, b in zip(chunk.offsets[:-1].tolist(), chunk.offsets[1:].tolist())]


@pytest.mark.parametrize("path", QRELS_FILES, ids=lambda p: p.name)
def test_columns_hold_what_the_dict_reader_reads(path):
    columns = read_qrels_columns(path)
    expected = read_trec(path, "qrels")[0]
    assert isinstance(columns, QrelsColumns)
    assert list(columns) == list(expected)  # queries in the file's order of first appearance
    assert columns.to_dict() == expected
    assert {q: columns[q] for q in columns} == expected
    assert len(columns) == len(expected) and all(q in columns for q in expected) and "nope" not in columns


@pytest.mark.parametrize("path", QRELS_FILES, ids=lambda p: p.name)
def test_chunks_for_the_kernels_equal_the_dict_readers(path):
    columns = read_qrels_columns(path)
    expected = read_trec(path, "qrels")[0]
    rng = np.random.default_rng(3)
    query_ids = [str(q) for q in rng.permutation(list(expected))[: max(1, len(expected) // 2)]]
    ours, theirs = judgment_chunk(columns, query_ids), Judgments(expected, query_ids).chunk(0, len(query_ids))
    np.testing.assert_array_equal(ours.offsets, theirs.offsets)
    assert ours.grades.dtype == theirs.grades.dtype == np.float64
    assert ours.codes.dtype == theirs.codes.dtype and not ours.codes.flags.writeable
    assert _decoded(ours, query_ids) == _decoded(theirs, query_ids)  # best first, ties in the file's order
    for per_query, q in zip(_decoded(ours, query_ids), query_ids):
        grades = [grade for _, grade in per_query]
        assert grades == sorted(grades, reverse=True) and dict(per_query) == expected[q]


def test_a_query_that_comes_back_is_read_as_dicts(tmp_path):
    path = tmp_path / "qrels"
    path.write_text("q1 0 a 1\nq2 0 b 2\nq1 0 c 0\n")
    qrels = read_qrels_columns(path)
    assert qrels == {"q1": {"a": 1, "c": 0}, "q2": {"b": 2}} and isinstance(qrels, dict)


@pytest.mark.parametrize("text, line", [
    ("q1 0 a 1\nq1 0 b 1\nq1 0 a 2\n", 3),                       # together
    ("q1 0 a 1\nq2 0 b 1\nq1 0 a 2\n", 3),                       # a query that comes back
    ("q1 0 a 1\nq2 0 b 1\nq2 0 b 1\nq1 0 a 2\n", 3),             # the first in the file's order
    ("q1 0 a 1\nq1 0 a 1\nq1 0 b x\n", 2),                       # before a bad line
])
def test_a_document_judged_twice_names_its_second_line(tmp_path, text, line):
    path = tmp_path / "qrels"
    path.write_text(text)
    with pytest.raises(InputError, match=rf"qrels:{line}: document '[ab]' appears twice for query 'q[12]'"):
        read_qrels_columns(path)
    with pytest.raises(InputError, match=rf"qrels:{line}: "):
        read_trec(path, "qrels")


def test_bad_lines_and_empty_files_are_errors(tmp_path):
    bad, empty = tmp_path / "bad", tmp_path / "empty"
    bad.write_text("q1 0 a 1\nq1 0 b 1.5\n")
    empty.write_text("")
    with pytest.raises(InputError, match=r"bad:2: relevance '1.5' is not an integer"):
        read_qrels_columns(bad)
    with pytest.raises(InputError, match="holds no qrels lines"):
        read_qrels_columns(empty)


def test_grades_beyond_float64_stay_exact_in_the_mapping(tmp_path):
    path = tmp_path / "qrels"
    path.write_text("q1 0 a 9007199254740993\nq1 0 b 1\n")
    assert read_qrels_columns(path)["q1"] == {"a": 9007199254740993, "b": 1}


def test_streamed_evaluation_with_column_qrels_equals_dict_qrels(tmp_path):
    """The streamed path reads a TREC qrels file as columns; a qrels dict gives the same tables, also
    for the options read on dicts and the queries the run lacks (make_comparable)."""
    qrels_path = tmp_path / "qrels.test"
    qrels_path.write_bytes(gzip.decompress((DATA / "trec_eval" / "qrels.test.gz").read_bytes()))
    run_path = tmp_path / "results.test"
    lines = gzip.decompress((DATA / "trec_eval" / "results.test.gz").read_bytes()).decode().splitlines()
    dropped = lines[0].split()[0]
    run_path.write_text("".join(line + "\n" for line in lines if line.split()[0] != dropped))  # one query less
    qrels = read_trec(qrels_path, "qrels")[0]
    specs = streaming.parse_metrics(["ndcg@10", "map", "P@5", "nDCG(judged_only=True)@10"], 1)
    for ignore in (False, True):
        ours = streaming.evaluate_stream(qrels_path, run_path, specs, True, "trec_eval", chunk_queries=7,
                                         ignore_identical_ids=ignore)
        theirs = streaming.evaluate_stream(qrels, run_path, specs, True, "trec_eval", chunk_queries=7,
                                           ignore_identical_ids=ignore)
        assert ours.query_ids == theirs.query_ids and ours.query_ids[-1] == dropped
        for name in ours.tables:
            np.testing.assert_array_equal(ours.tables[name], theirs.tables[name])


def test_cli_numbers_do_not_depend_on_the_qrels_order(tmp_path, capsys):
    qrels_text = gzip.decompress((DATA / "trec_eval" / "qrels.test.gz").read_bytes()).decode()
    grouped, shuffled = tmp_path / "grouped", tmp_path / "shuffled"
    grouped.write_text(qrels_text)
    lines = qrels_text.splitlines(keepends=True)
    shuffled.write_text("".join(np.random.default_rng(0).permutation(lines)))
    assert isinstance(read_qrels_columns(grouped), QrelsColumns)
    assert isinstance(read_qrels_columns(shuffled), dict)
    outputs = []
    for qrels in (grouped, shuffled):
        assert main(["eval", str(qrels), str(DATA / "trec_eval" / "results.test.gz"), "-q", "-o", "trec",
                     "-m", "map", "-m", "ndcg_cut.10", "--digits", "12"]) == 0
        outputs.append(sorted(capsys.readouterr().out.splitlines()))
    assert outputs[0] == outputs[1] and len(outputs[0]) == 8  # 3 queries and "all", 2 measures


@pytest.mark.parametrize("kind", ["run", "qrels"])
def test_a_repeat_in_a_query_that_comes_back_is_named_before_a_later_one(tmp_path, kind):
    """Line 3 repeats line 1 (query q1 comes back); line 5 repeats line 4: the first in the file's order
    is named, by the dict reader and by the streamed evaluation alike."""
    docs = ["a", "b", "a", "c", "c"]
    queries = ["q1", "q2", "q1", "q1", "q1"]
    path = tmp_path / kind
    path.write_text("".join(f"{q} Q0 {d} 1 1.0 t\n" if kind == "run" else f"{q} 0 {d} 1\n"
                            for q, d in zip(queries, docs)))
    with pytest.raises(InputError, match=rf"{kind}:3: document 'a' appears twice for query 'q1'"):
        read_trec(path, kind)
    if kind == "qrels":
        with pytest.raises(InputError, match=r"qrels:3: document 'a' appears twice for query 'q1'"):
            read_qrels_columns(path)


def test_column_qrels_become_dicts_once_for_runs_read_in_memory(tmp_path, monkeypatch, capsys):
    """-M reads each run in memory, on qrels dicts: a TREC qrels file read as columns is turned into
    dicts once for all the runs, not once a run."""
    converted = []
    to_dict = QrelsColumns.to_dict
    monkeypatch.setattr(QrelsColumns, "to_dict", lambda self: converted.append(1) or to_dict(self))
    run, again = DATA / "trec_eval" / "results.test.gz", tmp_path / "again.gz"
    again.write_bytes(run.read_bytes())
    qrels = str(DATA / "trec_eval" / "qrels.test.gz")
    assert main(["eval", qrels, str(run), str(again), "-M", "100", "-m", "map", "-o", "tsv"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 3  # a header and a row a run
    assert converted == [1]
