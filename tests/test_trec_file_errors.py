"""TREC files read as trec_eval reads them, or refused naming file and line."""
import bz2
import gzip
import lzma
import re
from pathlib import Path

import pytest

import tieaware
from tieaware import InputError
from tieaware.cli import main as cli_main

RUN = {"q1": {"d1": 0.5, "d2": 0.5, "d3": 0.2, "d4": 0.9}, "q2": {"d5": 0.3, "d6": 0.3, "d7": 0.3}}


# -------------------------------------------------------------- TREC files
def test_byte_order_mark_is_dropped(tmp_path):
    run = tmp_path / "run.trec"
    run.write_bytes(b"\xef\xbb\xbfq1 Q0 d1 1 0.5 x\nq1 Q0 d2 2 0.4 x\n")
    assert list(tieaware.read_trec_run(run)) == ["q1"]
    res = tieaware.evaluate({"q1": {"d1": 1}, "q2": {"d1": 1}}, str(run), "ndcg@10", make_comparable=True)
    assert res.per_query.loc["q1", "expected"] == 1.0


@pytest.mark.parametrize("opener,suffix", [(gzip.open, ".gz"), (bz2.open, ".bz2"), (lzma.open, ".xz"),
                                           (gzip.open, "")])
def test_compressed_files_read_like_plain_ones(tmp_path, opener, suffix):
    text = "# trec_eval 10 comment\nq1 0 d1 1\n\nq1 0 d2 0\nq2 0 d5 1\n"
    path = tmp_path / f"qrels.trec{suffix}"
    with opener(path, "wt", encoding="utf-8") as handle:
        handle.write(text)
    plain = tmp_path / "plain.trec"
    plain.write_text(text)
    assert tieaware.read_trec_qrels(path) == tieaware.read_trec_qrels(plain) == {"q1": {"d1": 1, "d2": 0},
                                                                                  "q2": {"d5": 1}}


def test_undecodable_bytes_name_file_and_line(tmp_path):
    run = tmp_path / "run.trec"
    run.write_bytes(b"q1 Q0 d1 1 0.5 x\nq1 Q0 d\xff 2 0.4 x\n")
    with pytest.raises(InputError, match=r"run.trec:2: run file is not valid UTF-8"):
        tieaware.read_trec_run(run)
    broken = tmp_path / "broken.trec.gz"
    lines = "".join(f"q1 Q0 d{i} {i} 0.5 x\n" for i in range(1000)).encode()
    broken.write_bytes(gzip.compress(lines)[:200])
    with pytest.raises(InputError, match="broken.trec.gz: cannot decompress"):
        tieaware.read_trec_run(broken)


@pytest.mark.parametrize("grade,message", [("1.5", "trec_eval would silently read it as 1"),
                                           ("2e1", "trec_eval would silently read it as 2"),
                                           ("inf", "is not an integer grade"), ("1_0", "is not an integer grade"),
                                           ("١", "is not an integer grade")])
def test_trec_grades_are_integers(tmp_path, grade, message):
    qrels = tmp_path / "qrels.trec"
    qrels.write_text(f"q1 0 d1 {grade}\n", encoding="utf-8")
    with pytest.raises(InputError, match=f"qrels.trec:1: relevance .*{message}"):
        tieaware.read_trec_qrels(qrels)


def test_integer_written_grades_are_accepted(tmp_path):
    qrels = tmp_path / "qrels.trec"
    qrels.write_text("q1 0 d1 2.0\nq1 0 d2 -1\nq1 0 d3 +3\n")
    assert tieaware.read_trec_qrels(qrels) == {"q1": {"d1": 2, "d2": -1, "d3": 3}}


@pytest.mark.parametrize("score", ["0_4", "١٢", "0x1p3", "1.5abc"])
def test_scores_c_atof_would_read_differently_are_rejected(tmp_path, score):
    run = tmp_path / "run.trec"
    run.write_text(f"q1 Q0 d1 1 {score} x\n", encoding="utf-8")
    with pytest.raises(InputError, match="run.trec:1: score .* is not a number"):
        tieaware.read_trec_run(run)


def test_directory_and_column_layout_messages(tmp_path):
    with pytest.raises(InputError, match="is a directory"):
        tieaware.evaluate(str(tmp_path), RUN, "mrr")
    run = tmp_path / "run.trec"
    run.write_text("q1 d1 1 0.5\n")
    with pytest.raises(InputError, match=r"qid Q0 docid rank score tag.*qid docid rank score"):
        tieaware.read_trec_run(run)


# ------------------------------------- line shapes trec_eval misreads: extra fields, glued records, bare CR
QRELS_TEXT = "q1 0 d1 0\nq1 0 d2 1\nq1 0 d3 1\n"
#: (qrels, run, line named, message) of files trec_eval 10 misreads or stops on
MISREAD = {
    "run with a seventh field": (QRELS_TEXT, "q1 Q0 d1 1 0.9 r extra\nq1 Q0 d2 2 0.8 r\n", 1,
                                 "has 6 columns .* this one has 7"),
    # `cat a b` with a lacking its final newline: trec_eval reads d2 and drops d3 (RR 0.25 instead of 0.75)
    "glued run records": (QRELS_TEXT, "q1 Q0 d9 1 0.95 r\nq1 Q0 d1 2 0.9 rq1 Q0 d2 3 0.8 r\nq1 Q0 d3 4 0.7 r\n", 2,
                          "this one has 11: 'q1 Q0 d1 2 0.9 rq1 Q0 d2 3 0.8 r'.*glued"),
    # one line for trec_eval: only d1 is read (RR 0 instead of 0.5, MRR 0.50 instead of 0.67 in the issue)
    "bare CR run": (QRELS_TEXT, "q1 Q0 d1 1 0.9 r\rq1 Q0 d2 2 0.8 r\rq1 Q0 d3 3 0.7 r\r", 1, "carriage return"),
    "mixed endings run": (QRELS_TEXT, "q1 Q0 d1 1 0.9 r\r\nq1 Q0 d2 2 0.8 r\rq1 Q0 d3 3 0.7 r\n", 2,
                          "carriage return"),
    "bare CR after a comment": (QRELS_TEXT, "# comment\rq1 Q0 d1 1 0.9 r\rq1 Q0 d2 2 0.8 r\r", 1,
                                "carriage return"),
    "qrels with a fifth field": ("q1 0 d1 0 x\nq1 0 d2 1\n", "q1 Q0 d1 1 0.9 r\n", 1, "has 4 columns .* has 5"),
    "glued qrels records": ("q1 0 d1 0\nq1 0 d2 1q1 0 d3 1\n", "q1 Q0 d1 1 0.9 r\n", 2, "this one has 7.*glued"),
    "bare CR qrels": ("q1 0 d1 0\rq1 0 d2 1\rq1 0 d3 1\r", "q1 Q0 d1 1 0.9 r\n", 1, "carriage return"),
    "mixed endings qrels": ("q1 0 d1 0\nq1 0 d2 1\rq1 0 d3 1\r\n", "q1 Q0 d1 1 0.9 r\n", 2, "carriage return"),
}
COMPRESS = {"": lambda data: data, ".gz": gzip.compress, ".bz2": bz2.compress, ".xz": lzma.compress}


@pytest.mark.parametrize("suffix", sorted(COMPRESS))
@pytest.mark.parametrize("case", sorted(MISREAD))
def test_lines_trec_eval_misreads_are_errors_naming_file_and_line(tmp_path, capsys, case, suffix):
    qrels_text, run_text, line, message = MISREAD[case]
    qrels, run = tmp_path / f"qrels{suffix}", tmp_path / f"run{suffix}"
    qrels.write_bytes(COMPRESS[suffix](qrels_text.encode()))
    run.write_bytes(COMPRESS[suffix](run_text.encode()))
    bad = qrels if "qrels" in case else run
    where = f"{bad.name}:{line}: .*{message}"
    with pytest.raises(InputError, match=where):
        (tieaware.read_trec_qrels if bad is qrels else tieaware.read_trec_run)(bad)
    with pytest.raises(InputError, match=where):
        tieaware.evaluate(str(qrels), str(run), "mrr")
    for stream in ([], ["--stream"]):  # tieaware eval: the run read chunk by chunk, or whole
        assert cli_main(["eval", str(qrels), str(run), "-m", "recip_rank", *stream]) == 2
        assert re.search(where, capsys.readouterr().err)


def test_crlf_endings_and_a_last_bare_cr_read_as_newline_endings(tmp_path):
    """CR before a newline, or at the file's end, splits nothing trec_eval would join: the same records."""
    plain, crlf = tmp_path / "plain.trec", tmp_path / "crlf.trec"
    plain.write_bytes(b"q1 Q0 d1 1 0.9 r\nq1 Q0 d2 2 0.8 r\n")
    crlf.write_bytes(b"q1 Q0 d1 1 0.9 r\r\n# a comment\r\n\r\nq1 Q0 d2 2 0.8 r \r\t\r")
    assert tieaware.read_trec_run(crlf) == tieaware.read_trec_run(plain) == {"q1": {"d1": 0.9, "d2": 0.8}}


def test_trec_evals_own_junk_columns_are_refused_naming_the_first_line():
    """trec_eval's test/results.trunc carries junk after the sixth field, which trec_eval skips; here it is
    the error of a run line with more than six fields (its copy without the junk is read)."""
    data = Path(__file__).parent / "data" / "trec_eval"
    with pytest.raises(InputError, match=r"results.trunc:1: a TREC run line has 6 columns .* this one has 9: "
                                         r"'301\\tQ0\\tFBIS3-27619\\t99\\t  2.138276\\tSTANDARD more junk at'"):
        tieaware.read_trec_run(data / "results.trunc")
    assert sum(map(len, tieaware.read_trec_run(data / "results.trunc.six").values())) == 584
