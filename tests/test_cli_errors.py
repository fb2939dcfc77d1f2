"""The command line exits with status 2 and a message on bad numbers, mismatched queries and runs."""

import pytest

from tieaware.cli import main as cli_main


# ------------------------------------------------------------------- CLI
@pytest.fixture
def trec_files(tmp_path):
    qrels = tmp_path / "qrels.trec"
    qrels.write_text("q1 0 d1 1\nq2 0 d5 1\n")
    run = tmp_path / "run.trec"
    run.write_text("q1 Q0 d1 1 0.5 x\nq1 Q0 d2 2 0.5 x\nq3 Q0 d5 1 0.3 x\n")
    other = tmp_path / "other.trec"
    other.write_text("q1 Q0 d1 1 0.5 x\nq2 Q0 d5 1 0.3 x\n")
    return str(qrels), str(run), str(other)


@pytest.mark.parametrize("extra", [["--permutations", "0"], ["--permutations", "-5"], ["--digits", "-2"],
                                   ["--digits", "400"], ["--max-p", "0"]])
def test_cli_compare_bad_numbers_exit_2(trec_files, capsys, extra):
    qrels, _, other = trec_files
    assert cli_main(["compare", qrels, other, other.replace("other", "other2"), "-m", "mrr", *extra]) == 2
    assert "error" in capsys.readouterr().err


def test_cli_fail_range_above_nan_exits_2(trec_files, capsys):
    qrels, _, other = trec_files
    assert cli_main(["eval", qrels, other, "-m", "mrr", "--fail-range-above", "nan"]) == 2


def test_cli_query_mismatch_names_the_run_and_suggests_c(trec_files, capsys):
    qrels, run, other = trec_files
    assert cli_main(["eval", qrels, other, run, "-m", "mrr"]) == 2
    err = capsys.readouterr().err
    assert f"run {run}:" in err and "-c" in err and "make_comparable" not in err


def test_cli_same_run_twice_is_an_error(trec_files, capsys):
    qrels, _, other = trec_files
    assert cli_main(["compare", qrels, other, other, "-m", "mrr"]) == 2
    assert "given twice" in capsys.readouterr().err
