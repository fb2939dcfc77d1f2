"""trec_eval's command-line habits in `tieaware eval` and the other subcommands: -m once per measure,
the official default, -M, -o trec's exact layout (checked against trec_eval 10's own output files in
tests/data/trec_eval), run queries without qrels, --keep-going, --version, usage errors, a fast --help."""
import json
import math
import subprocess
import sys
import unicodedata
import warnings
from pathlib import Path

import pytest
from conftest import DATA

import tieaware
from tieaware import cli
from tieaware.cli import main
from tieaware.datasets import cranfield
from tieaware.metrics import expand_names

TREC = DATA / "trec_eval"
CRANFIELD = cranfield()


@pytest.fixture
def tiny(tmp_path):
    """Two judged queries; q1 has a tie group {d2, d3} across rank 2; the run also holds q9 (no qrels)."""
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d1 0\nq1 0 d3 1\nq1 0 d4 1\nq2 0 e1 1\n")
    run = tmp_path / "tiny.run"
    run.write_text("q1 Q0 d1 1 0.9 myTag\nq1 Q0 d2 2 0.5 myTag\nq1 Q0 d3 3 0.5 myTag\nq1 Q0 d4 4 0.1 myTag\n"
                   "q2 Q0 e1 1 0.7 myTag\nq2 Q0 e2 2 0.6 myTag\n"
                   "q9 Q0 x1 1 0.3 myTag\n")
    return str(qrels), str(run)


def eval_json(capsys, *args) -> tuple[dict, str]:
    """({metric: the mean row (no query)}, stderr) of `tieaware eval ARGS -o json`."""
    assert main(["eval", *map(str, args), "-o", "json"]) == 0
    out, err = capsys.readouterr()
    return {row["metric"]: row for row in json.loads(out) if row.get("query") is None}, err


# ------------------------------------------------------------------ 1. -m once per value
def test_options_before_the_files(capsys, tiny):
    qrels, run = tiny
    before, _ = eval_json(capsys, "-m", "map", "-m", "P.1,2", qrels, run)
    after, _ = eval_json(capsys, qrels, run, "-m", "map", "-m", "P.1,2")
    assert list(before) == ["map", "P.1", "P.2"] and before == after
    assert main(["ties", "-k", "1,2", "-k", "3", run, "-o", "json"]) == 0
    assert [row["k"] for row in json.loads(capsys.readouterr().out)] == [1, 2, 3]
    other = str(CRANFIELD.runs["fp32"])  # no query in common with the tiny qrels
    assert main(["compare", "-m", "P.1", "-m", "map", qrels, run, other]) == 2
    err = capsys.readouterr().err
    assert "tieaware compare: warning: run" in err and "have no qrels" in err  # q9 of tiny.run
    assert "qrels but not in the run" in err and "pass -c (--make-comparable)" in err


@pytest.mark.parametrize(("where", "expected"), [(["--stream"], True), (["--stream", "2"], 2),
                                                 (["--stream=3"], 3), ([], None)])
def test_bare_stream_before_the_files_does_not_swallow_the_qrels(monkeypatch, capsys, tiny, where, expected):
    seen = []
    real = cli._evaluate_file
    monkeypatch.setattr(cli, "_evaluate_file", lambda qrels, path, form, metrics, args, *reader: (
        seen.append((args.qrels, args.runs, args.stream)), real(qrels, path, form, metrics, args, *reader))[1])
    assert main(["eval", "-m", "P.1", *where, *tiny]) == 0
    assert seen == [(tiny[0], [tiny[1]], expected)]
    assert cli._bare_flags(["eval", "--stream", "q", "--", "--stream"]) == ["eval", "q", "--stream", "--", "--stream"]


def test_a_trec_family_without_cutoff_takes_trec_evals_cutoffs(capsys, tiny):
    assert list(eval_json(capsys, *tiny, "-m", "success")[0]) == ["success_1", "success_5", "success_10"]


# ------------------------------------------------------------------ 2. the default set
def test_default_is_official_without_a_warning(capsys, tiny):
    rows, err = eval_json(capsys, *tiny)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        official = expand_names("official")
    assert list(rows) == official == ["num_q", "num_ret", "num_rel", "num_rel_ret", "map", "Rprec", "bpref",
                                      "recip_rank"] + [f"P_{k}" for k in (5, 10, 15, 20, 30, 100, 200, 500, 1000)]
    assert [rows[count]["expected"] for count in ("num_q", "num_ret", "num_rel", "num_rel_ret")] == [2, 6, 3, 3]
    assert "left out" not in err
    assert main(["eval", *tiny, "-m", "official", "-o", "json"]) == 0
    err = capsys.readouterr().err
    assert "tieaware eval: warning: trec_eval's 'official' measures" in err and "gm_map" in err


# ------------------------------------------------------------------ 3. -M, --version, usage, --help
def test_max_docs_keeps_a_straddling_tie_group_whole(capsys, tiny):
    qrels, run = tiny
    rows, err = eval_json(capsys, qrels, run, "-M", "2", "-m", "set_P", "-m", "set_recall", "-q")
    assert "-M 2" in err and "in 1 queries" in err and "'q1'" in err
    # q1 keeps d1, d2, d3 (d2 and d3 tie at rank 2): set_P = 1/3, set_recall = 1/2; q2 keeps e1, e2
    assert rows["set_P"]["expected"] == pytest.approx((1 / 3 + 1 / 2) / 2)
    assert rows["set_recall"]["expected"] == pytest.approx((1 / 2 + 1) / 2)
    rows, err = eval_json(capsys, qrels, run, "-M", "1", "-m", "set_P")  # no group across rank 1: trec_eval's cut
    assert rows["set_P"]["expected"] == pytest.approx((0 + 1) / 2)
    assert "-M" not in err
    assert main(["eval", qrels, run, "-M", "0"]) == 2
    assert main(["eval", qrels, run, "-M", "2", "--stream"]) == 2
    assert "drop --stream" in capsys.readouterr().err


def test_max_docs_counts_the_top_n_tie_aware(capsys, tiny):
    """-M 2: num_ret and num_rel_ret count the top 2, as trec_eval's, though the tie {d2, d3} across rank 2
    of q1 is kept whole: num_rel_ret is E[Hits@2] (q1: d3 takes rank 2 in half the orders), not 2."""
    qrels, run = tiny
    rows, _ = eval_json(capsys, qrels, run, "-M", "2", "-m", "num_ret", "-m", "num_rel_ret", "-m", "NumRelRet")
    assert list(rows) == ["num_ret.2", "num_rel_ret.2"]  # what is evaluated: the counts in the top 2
    assert rows["num_ret.2"]["expected"] == 4 and rows["num_ret.2"]["range"] == 0
    assert (rows["num_rel_ret.2"]["expected"], rows["num_rel_ret.2"]["min"], rows["num_rel_ret.2"]["max"]) == (
        1.5, 1, 2)
    assert main(["eval", qrels, run, "-M", "2", "-q", "-o", "trec", "-m", "num_ret", "-m", "num_rel_ret"]) == 0
    assert capsys.readouterr().out == (
        "num_ret               \tq1\t2\n"
        "num_rel_ret           \tq1\t0.5000\n"
        "num_ret               \tq2\t2\n"
        "num_rel_ret           \tq2\t1\n"
        "num_ret               \tall\t4\n"
        "num_rel_ret           \tall\t1.5000\n")
    assert main(["eval", qrels, run, "-M", "2", "-m", "NumRet(rel=2)"]) == 2
    assert "counts at another relevance level" in capsys.readouterr().err


@pytest.mark.parametrize(("args", "reference"), [
    (("qrels.test.gz", "results.test.gz"), "out.test.aq"),
    (("-c", "qrels.test.gz", "results.trunc.six"), "out.test.aqc"),
    (("-c", "-M", "100", "qrels.test.gz", "results.trunc.six"), "out.test.aqcM"),
    (("-l", "2", "qrels.rel_level.gz", "results.test.gz"), "out.test.aql"),
])
def test_counts_equal_trec_evals_lines(args, reference):
    """num_q, num_ret, num_rel and num_rel_ret per query and summed, with -c, -M and -l, as trec_eval 10
    prints them."""
    counts = ["-m", "runid", "-m", "num_q", "-m", "num_ret", "-m", "num_rel", "-m", "num_rel_ret"]
    ours = trec_output(*counts, "-q", *(str(TREC / a) if a.startswith(("qrels", "results")) else a for a in args))
    assert ours == trec_eval_lines(TREC / reference, ours)
    assert len(ours) == 3 * 3 + 5


def test_max_docs_equals_trec_eval_on_its_own_test():
    """results.trunc has no tie group across rank 100: `-c -M100` prints trec_eval's numbers (on its copy
    without the junk after the sixth field, which trec_eval ignores and tieaware refuses)."""
    ours = trec_output("-m", "all_trec", "-q", "-c", "-M", "100", TREC / "qrels.test.gz",
                       TREC / "results.trunc.six")
    assert ours == trec_eval_lines(TREC / "out.test.aqcM", ours)


def test_version_and_a_mistyped_option_gets_the_subcommands_usage(capsys):
    with pytest.raises(SystemExit) as stop:
        cli.build_parser().parse_args(["--version"])
    assert stop.value.code == 0 and capsys.readouterr().out == f"tieaware {tieaware.__version__}\n"
    files = {"eval": ["q", "r"], "compare": ["q", "r", "-m", "P.1"], "ties": ["r"], "plot": ["q", "r", "--out", "x"],
             "merge": ["t"]}
    for command, args in files.items():
        assert main([command, *args, "--metirc=x"]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"usage: tieaware {command}") and "unrecognized arguments: --metirc" in err


@pytest.mark.parametrize("args", [["--help"], ["eval", "--help"], ["compare", "--help"], ["--version"],
                                  ["eval", "-m", "map", "--no-such-option", "q", "r"]])
def test_help_and_usage_import_nothing_heavy(args):
    heavy = ("numpy", "pandas", "scipy", "numba", "ranx", "torch", "tqdm", "matplotlib")
    code = (f"import sys; from tieaware.cli import main; rc = main({args!r}); "
            f"print(rc, sorted(m for m in {heavy!r} if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.splitlines()[-1] in ("0 []", "2 []"), proc.stderr


def test_the_parsers_copy_of_a_library_constant_is_equal():
    from tieaware.comparison import STAT_TESTS
    from tieaware.comparison_statistics import CORRECTIONS

    assert cli.STAT_TESTS == STAT_TESTS
    assert cli.CORRECTIONS == CORRECTIONS


# ------------------------------------------------------------------ 4. -o trec
def trec_output(*args) -> list:
    proc = subprocess.run([sys.executable, "-m", "tieaware.cli", "eval", "-o", "trec", *map(str, args)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.splitlines()


def trec_eval_lines(path, ours: list) -> list:
    """trec_eval's lines for the measures we print, in its order."""
    names = {line.split("\t")[0].rstrip() for line in ours}
    return [line for line in path.read_text().splitlines() if line.split("\t")[0].rstrip() in names]


def test_trec_layout_by_hand(capsys, tiny):
    """trec_eval's printf formats: "%-22s\\t%s\\t%6.4f" for values, "%-22s\\t%s\\t%s" for runid,
    "%-22s\\t%s\\t%ld" for num_q; measures in trec_eval's table order (P before ndcg_cut), cutoffs
    ascending; queries sorted; runid is the run file's tag. q9 (no qrels) is dropped with a warning."""
    assert main(["eval", *tiny, "-o", "trec", "-q", "-m", "ndcg_cut.2", "-m", "P.2,1", "-m", "recip_rank",
                 "-m", "runid", "-m", "num_q", "-m", "hits@1"]) == 0
    out, err = capsys.readouterr()
    # q1: d1 (judged 0) at 1, d2 (unjudged) and d3 (relevant) tied at 2-3, d4 (relevant) at 4; R = 2
    q1_rr = (1 / 2 + 1 / 3) / 2
    q1_ndcg = 0.5 * (1 / math.log2(3)) / (1 + 1 / math.log2(3))
    assert out == (
        f"recip_rank            \tq1\t{q1_rr:6.4f}\n"
        "P_1                   \tq1\t0.0000\n"
        "P_2                   \tq1\t0.2500\n"
        f"ndcg_cut_2            \tq1\t{q1_ndcg:6.4f}\n"
        "hits@1                \tq1\t0.0000\n"
        "recip_rank            \tq2\t1.0000\n"
        "P_1                   \tq2\t1.0000\n"
        "P_2                   \tq2\t0.5000\n"
        "ndcg_cut_2            \tq2\t1.0000\n"
        "hits@1                \tq2\t1.0000\n"
        "runid                 \tall\tmyTag\n"
        "num_q                 \tall\t2\n"
        f"recip_rank            \tall\t{(q1_rr + 1) / 2:6.4f}\n"
        "P_1                   \tall\t0.5000\n"
        "P_2                   \tall\t0.3750\n"
        f"ndcg_cut_2            \tall\t{(q1_ndcg + 1) / 2:6.4f}\n"
        "hits@1                \tall\t0.5000\n")
    assert err.count("\n") == 1 and "1 of its 3 queries have no qrels" in err and "['q9']" in err


def test_trec_layout_names_only_the_same_metric_as_trec_eval(capsys, tiny):
    """ranx's ndcg@2 zeroes grades below the level (trec_eval's ndcg_cut does not): keeps its name;
    ir_measures' P@2 is trec_eval's P_2 and prints as such; ranx's precision@2-l2 is not (level 2)."""
    assert main(["eval", *tiny, "-o", "trec", "-m", "ndcg@2", "-m", "P@2", "-m", "precision@2-l2"]) == 0
    names = [line.split("\t")[0].rstrip() for line in capsys.readouterr().out.splitlines()]
    assert names == ["P_2", "ndcg@2", "precision@2-l2"]
    assert main(["eval", *tiny, "-o", "json", "-m", "runid"]) == 2
    assert "lines of -o trec only" in capsys.readouterr().err


@pytest.mark.parametrize(("args", "reference"), [
    ((), "out.test"),  # trec_eval's default (official)
    (("-m", "all_trec"), "out.test.a"),
    (("-m", "all_trec", "-q"), "out.test.aq"),
])
def test_trec_layout_equals_trec_evals_output(args, reference):
    """Every line tieaware prints is trec_eval 10's line for that measure and query, in trec_eval's
    order (the 19 tied documents of results.test do not move these means at 4 decimals)."""
    ours = trec_output(*args, TREC / "qrels.test.gz", TREC / "results.test.gz")
    assert ours == trec_eval_lines(TREC / reference, ours)
    assert "runid                 \tall\tSTANDARD" in ours and "num_q                 \tall\t3" in ours
    # .a and .aq: trec_eval 10's rbp lines too
    assert len(ours) == {"out.test": 18, "out.test.a": 55, "out.test.aq": 214}[reference]


# ------------------------------------------------------------------ 5. query sets
@pytest.mark.parametrize("stream", [[], ["--stream=1"]])
def test_qrels_queries_missing_from_the_run_need_c(capsys, tmp_path, tiny, stream):
    """In memory and streamed alike: run-only q9 dropped with a warning (with -c too), qrels-only q2 an
    error naming -c, or 0 with -c."""
    qrels, _ = tiny
    run = tmp_path / "only_q1.run"
    run.write_text("q1 Q0 d3 1 0.5 t\nq9 Q0 x 1 0.5 t\n")
    assert main(["eval", qrels, str(run), "-m", "P.1", *stream]) == 2
    err = capsys.readouterr().err
    assert "1 in the qrels but not in the run (e.g. ['q2'])" in err and "pass -c (--make-comparable)" in err
    assert "in the run but not in the qrels" not in err and "have no qrels" in err and "['q9']" in err
    rows, err = eval_json(capsys, qrels, run, "-m", "P.1", "-c", *stream)
    assert rows["P.1"]["expected"] == 0.5  # q1: 1, q2 (not in the run): 0
    assert "queries have no qrels" in err and "['q9']" in err and err.count("\n") == 1


# ------------------------------------------------------------------ 6. --keep-going
def test_keep_going_reports_a_bad_name_and_evaluates_the_others(capsys, tiny):
    assert main(["eval", *tiny, "-m", "P.1", "-m", "ndgc@10", "-o", "json"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "ndgc@10" in err
    assert main(["eval", *tiny, "-m", "P.1", "-m", "ndgc@10", "-m", "map", "-o", "json", "--keep-going"]) == 2
    out, err = capsys.readouterr()
    assert [row["metric"] for row in json.loads(out)] == ["P.1", "map"]
    assert "tieaware eval: error: Unknown metric 'ndgc@10'" in err and "--keep-going" in err
    assert main(["eval", *tiny, "-m", "ndgc@10", "--keep-going"]) == 2
    assert "No metric left" in capsys.readouterr().err
    qrels, run = tiny
    # names are checked before any file is read (tiny2.run does not exist yet)
    assert main(["compare", qrels, run, run.replace("tiny", "tiny2"), "-m", "P.1", "-m", "ndgc@10"]) == 2
    assert capsys.readouterr().out == ""
    (Path(run).parent / "tiny2.run").write_text(Path(run).read_text().replace("0.5 myTag", "0.4 myTag"))
    assert main(["compare", qrels, run, run.replace("tiny", "tiny2"), "-m", "P.1", "-m", "ndgc@10", "-o", "json",
                 "--keep-going"]) == 2
    out, err = capsys.readouterr()
    assert json.loads(out)["metrics"] == ["P.1"] and "tieaware compare: error: Unknown metric 'ndgc@10'" in err


# ------------------------------------------------------------------ 7. --digits help, superscripts
def test_digits_help_names_only_the_outputs_it_applies_to():
    parser = cli.build_parser()
    helps = {name: next(a.help for a in sub._actions if "--digits" in a.option_strings)
             for name, sub in parser.subcommands.items() if name in ("eval", "compare", "ties", "merge")}
    assert "latex" not in helps["eval"] and "trec" in helps["eval"] and "latex" in helps["compare"]
    assert not any("latex" in helps[name] for name in ("ties", "merge"))


def test_significance_superscripts_are_the_letters_a_to_z():
    from tieaware.comparison import _LETTERS, _SUPERSCRIPTS

    assert len(_SUPERSCRIPTS) == len(_LETTERS) == 26
    for letter, mark in zip(_LETTERS, _SUPERSCRIPTS):
        assert unicodedata.normalize("NFKC", mark) == letter
        assert unicodedata.name(mark) in (f"MODIFIER LETTER SMALL {letter.upper()}",
                                          f"SUPERSCRIPT LATIN SMALL LETTER {letter.upper()}")


def test_stream_treats_query_sets_as_in_memory(capsys, tmp_path, tiny):
    qrels, _ = tiny
    run = tmp_path / "only_q1.run"
    run.write_text("q1 Q0 d3 1 0.5 t\nq9 Q0 x 1 0.5 t\n")
    assert main(["eval", qrels, str(run), "-m", "P.1", "--stream=1"]) == 2
    err = capsys.readouterr().err
    assert "have no qrels" in err and "1 in the qrels but not in the run (e.g. ['q2'])" in err
    assert "in the run but not in the qrels" not in err
    rows, err = eval_json(capsys, qrels, run, "-m", "P.1", "-c", "--stream=1")
    assert rows["P.1"]["expected"] == 0.5 and "1 of its 2 queries have no qrels" in err


@pytest.mark.parametrize("suffix", [".tsv", ".json"])
def test_stream_on_a_run_read_in_memory_names_the_format_not_m(capsys, tmp_path, tiny, suffix):
    qrels, _ = tiny
    run = tmp_path / f"run{suffix}"
    run.write_text("q1\td3\t0.5\nq2\te1\t0.25\n" if suffix == ".tsv" else '{"q1": {"d3": 0.5}, "q2": {"e1": 0.25}}')
    assert main(["eval", qrels, str(run), "-m", "P.1", "--stream"]) == 2
    err = capsys.readouterr().err
    assert "-M" not in err and "--stream" in err and ("TSV" if suffix == ".tsv" else "JSON") in err
    assert main(["eval", qrels, str(run), "-m", "P.1", "-M", "1", "--stream"]) == 2
    assert "-M reads each run in memory" in capsys.readouterr().err
    rows, _ = eval_json(capsys, qrels, run, "-m", "P.1")
    assert rows["P.1"]["expected"] == 1.0


def test_an_unsorted_run_is_one_warning_line(capsys):
    # trec_eval's own results.trunc comes back to query 301: the partitioning is said in the CLI's words
    assert main(["eval", str(TREC / "qrels.test.gz"), str(TREC / "results.trunc.six"), "-m", "map", "-c"]) == 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("tieaware eval: warning: run file"), err
    assert "not grouped by query" in err and "results.trunc.six:3" in err
