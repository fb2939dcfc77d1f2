"""The `tieaware` command line: a few real subprocess runs (console script, exit codes, no torch import)
on the bundled Cranfield runs, the rest through `tieaware.cli.main` in-process (each subprocess pays ~2-8 s
of imports)."""
import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest
import pytrec_eval

import tieaware
from tieaware import inputs
from tieaware.cli import _run_names, _write_frame, main
from tieaware.datasets import cranfield
from tieaware.inputs import open_text, read_texts
from tieaware.outputs import write_trec_run

CRANFIELD = cranfield()
QRELS = CRANFIELD.qrels
FP32 = CRANFIELD.runs["fp32"]
BF16 = CRANFIELD.runs["bf16"]
FP32_NAME, BF16_NAME = _run_names([FP32, BF16])  # what the CLI calls the runs (from the file names)
TREC_METRICS = {"ndcg_cut.10": "ndcg_cut_10", "P.10": "P_10", "recip_rank": "recip_rank"}


def console_script() -> list:
    script = Path(sys.executable).parent / "tieaware"
    return [str(script)] if script.exists() else [sys.executable, "-m", "tieaware.cli"]


def run_cli(*args, command=None) -> subprocess.CompletedProcess:
    return subprocess.run((command or console_script()) + [str(a) for a in args], capture_output=True,
                          text=True, timeout=300)


@pytest.fixture(scope="module")
def eval_json():
    """`tieaware eval ... -q -o json` on the fp32 and bf16 runs, through the console script."""
    proc = run_cli("eval", QRELS, FP32, BF16, *(f"-m{name}" for name in TREC_METRICS), "-q", "-o", "json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def rows_by_key(rows):
    return {(r["run"], r["metric"], r["query"]): r for r in rows}


def test_eval_json_equals_python_api(eval_json):
    rows = rows_by_key(eval_json)
    for path, name in ((FP32, FP32_NAME), (BF16, BF16_NAME)):
        report = tieaware.evaluate(str(QRELS), str(path), list(TREC_METRICS))
        for metric, result in report.items():
            means = rows[name, metric, None]
            assert means["expected"] == result.expected and means["range"] == result.range
            assert means["tie_std"] == result.tie_std and means["oblivious"] == result.oblivious
            for qid, values in result.per_query.iterrows():
                row = rows[name, metric, str(qid)]
                assert row["expected"] == values["expected"]
                assert (row["min"], row["max"]) == (values["min"], values["max"])
                assert row["tie_std"] == pytest.approx(values["variance"] ** 0.5, abs=1e-15)
    assert len(eval_json) == 2 * 3 * (225 + 1)


def test_eval_json_agrees_with_pytrec_eval(eval_json):
    """trec_eval's tie order = the oblivious value, for every query, both runs. The scores are bf16/fp32
    values written with repr, exact in float64, so pytrec_eval sees the same ties we do."""
    rows = rows_by_key(eval_json)
    qrels = tieaware.read_trec_qrels(QRELS)
    for path, name in ((FP32, FP32_NAME), (BF16, BF16_NAME)):
        trec = pytrec_eval.RelevanceEvaluator(qrels, set(TREC_METRICS)).evaluate(tieaware.read_trec_run(path))
        for metric, key in TREC_METRICS.items():
            for qid, values in trec.items():
                row = rows[name, metric, qid]
                assert row["oblivious"] == pytest.approx(values[key], abs=1e-12), (name, metric, qid)
                if path == FP32:  # docs 471/995 are its only tie and never split relevance: E[M] = trec_eval
                    assert row["range"] == 0.0
                    assert row["expected"] == pytest.approx(values[key], abs=1e-12)
    bf16_ndcg = [r for r in eval_json
                 if r["run"] == BF16_NAME and r["metric"] == "ndcg_cut.10" and r["query"] is not None]
    assert sum(abs(r["bias"]) > 1e-12 for r in bf16_ndcg) == 100  # datasets/README.md: 100 of 225 queries


def test_console_script_error_is_one_line_with_exit_code_2(tmp_path):
    proc = run_cli("eval", QRELS, tmp_path / "missing.trec", "-m", "ndcg@10")
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "missing.trec" in lines[0] and "does not exist" in lines[0]


def test_eval_does_not_import_torch_and_writes_trec_layout():
    code = ("import sys; from tieaware.cli import main; rc = main(sys.argv[1:]); "
            "print('TORCH', 'torch' in sys.modules); sys.exit(rc)")
    proc = run_cli("eval", QRELS, BF16, "-m", "ndcg_cut.10", "-m", "P.10", "-q", "-o", "trec",
                   command=[sys.executable, "-c", code])
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[-1] == "TORCH False"
    # trec_eval's names and order (P before ndcg_cut), its "%-22s\t%s\t%6.4f"; E[M] of query 1
    assert lines[0].startswith(f"{'P_10':<22}\t1\t")
    assert lines[1] == f"{'ndcg_cut_10':<22}\t1\t0.6793"
    expected = tieaware.evaluate(str(QRELS), str(BF16), "ndcg_cut.10").expected
    assert lines[-2] == f"{'ndcg_cut_10':<22}\tall\t{expected:.4f}"
    assert len(lines) == 2 * 225 + 2 + 1  # no runid / num_q lines unless asked for, as in trec_eval


# ---------------------------------------------------------------- in-process
def test_metric_options_repeat_take_several_names_and_trec_lists(capsys):
    assert main(["eval", str(QRELS), str(FP32), "-m", "P.5,10", "-m", "nDCG@10", "-m", "ndcg@10", "-o", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["metric"] for r in rows] == ["P.5", "P.10", "nDCG@10", "ndcg@10"]
    assert rows[2]["expected"] == rows[3]["expected"]  # ir_measures and ranx syntax, same metric


@pytest.mark.parametrize("fmt, sep", [("tsv", "\t"), ("csv", ",")])
def test_tsv_csv_full_precision(capsys, fmt, sep):
    assert main(["eval", str(QRELS), str(BF16), "-m", "ndcg@10", "-o", fmt]) == 0
    header, row = capsys.readouterr().out.splitlines()
    assert header.split(sep) == ["run", "metric", "expected", "oblivious", "min", "max", "range", "bias", "tie_std"]
    assert float(row.split(sep)[2]) == tieaware.evaluate(str(QRELS), str(BF16), "ndcg@10").expected


@pytest.mark.parametrize("fmt", ["tsv", "csv", "json"])
def test_frames_are_written_as_pandas_writes_them(capsys, fmt):
    """`_write_frame` (compare, ties, merge) writes what pandas' ``to_csv`` and ``to_dict`` give: floats at
    full precision, NaN and None empty (null in JSON), CSV quoting."""
    import pandas as pd

    frame = pd.DataFrame({"run": ["a\tb", 'q"1', "c,d"], "x": [0.1, float("nan"), -0.0], "k": [1, 2, 3],
                          "ok": [True, False, True], "query": ["1", None, "all"]})
    _write_frame(frame, fmt, 4)
    if fmt == "json":
        expected = json.dumps(frame.astype(object).where(frame.notna(), None).to_dict(orient="records"), indent=1)
    else:
        expected = frame.to_csv(sep="\t" if fmt == "tsv" else ",", index=False, lineterminator="\n",
                                float_format=lambda x: repr(float(x)))
    assert capsys.readouterr().out.rstrip("\n") == expected.rstrip("\n")


def test_table_output_names_the_oblivious_order(capsys):
    assert main(["eval", str(QRELS), str(BF16), "-m", "mrr", "--oblivious", "input", "-l", "2"]) == 0
    out = capsys.readouterr().out
    assert "obl[input]" in out.splitlines()[0]
    result = tieaware.evaluate(str(QRELS), str(BF16), "mrr", oblivious="input", relevance_level=2)
    assert f"{result.expected:.4f}" in out and f"{result.oblivious:.4f}" in out


def test_fail_range_above(capsys):
    args = ["eval", str(QRELS), str(FP32), str(BF16), "-m", "ndcg@10", "-o", "json", "--fail-range-above"]
    assert main(args + ["0.005"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{BF16_NAME} ndcg@10: range 0.010888" in err[0]  # fp32 (range 0) passes
    assert main(args + ["0.02"]) == 0


def test_fail_bias_above(capsys, tmp_path):
    args = ["eval", str(QRELS), str(FP32), str(BF16), "-m", "ndcg@10", "-o", "json", "--fail-bias-above"]
    assert main(args + ["0.001"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{BF16_NAME} ndcg@10: |bias| 0.00122" in err[0] and err[0].endswith("> 0.001")
    assert main(args + ["0.002"]) == 0
    # with -q the means are checked, as --fail-range-above checks them (bf16 has queries with |bias| 0.06)
    assert main(args + ["0.002", "-q"]) == 0
    assert main(args + ["0.001", "-q"]) == 1
    capsys.readouterr()
    # |bias|: trec_eval's order puts d2 before the relevant d1, so RR 0.5 against E 0.75 (bias -0.25)
    qrels, run = tmp_path / "qrels", tmp_path / "run"
    qrels.write_text("q1 0 d1 1\n")
    run.write_text("q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 0.5 t\n")
    assert main(["eval", str(qrels), str(run), "-m", "recip_rank", "--fail-bias-above", "0.2"]) == 1
    assert "recip_rank: |bias| 0.25 > 0.2" in capsys.readouterr().err
    assert main(["eval", str(qrels), str(run), "-m", "recip_rank", "--fail-bias-above", "0.25"]) == 0
    both = main(["eval", str(QRELS), str(BF16), "-m", "ndcg@10", "--fail-range-above", "0.005",
                 "--fail-bias-above", "0.001"])
    err = capsys.readouterr().err.strip().splitlines()
    assert both == 1
    assert [line.split(": ")[-1] for line in err] == ["range 0.010888 > 0.005", "|bias| 0.00122027 > 0.001"]
    for bad in ("-1", "nan"):
        assert main(["eval", str(qrels), str(run), "-m", "recip_rank", "--fail-bias-above", bad]) == 2
        assert f"argument --fail-bias-above: must be a finite number >= 0, got {bad}" in capsys.readouterr().err


@pytest.mark.parametrize("args, message", [
    (["-m", "ndcg@ten"], "cutoff 'ten' is not an integer"),
    (["-m", "foo@10"], "Supported: ranx: hits[@k]"),
])
def test_unknown_metric(capsys, args, message):
    assert main(["eval", str(QRELS), str(FP32)] + args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err


def test_malformed_line_and_wrong_kind(capsys, tmp_path):
    bad = tmp_path / "bad.trec"
    bad.write_text("1 Q0 184 1 0.5 x\n1 Q0 29 2 abc x\n")
    assert main(["eval", str(QRELS), str(bad), "-m", "P.10"]) == 2
    assert f"{bad}:2: score 'abc' is not a number" in capsys.readouterr().err
    assert main(["eval", str(QRELS), str(QRELS), "-m", "P.10"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{QRELS.name}:1" in err and "was a qrels file given as the run?" in err


def test_usage_error_exit_2(capsys):
    assert main(["eval", str(QRELS), str(FP32), "--bogus"]) == 2
    err = capsys.readouterr().err
    assert "usage: tieaware eval" in err and "unrecognized arguments: --bogus" in err
    assert main(["--help"]) == 0


def test_make_comparable_flag(capsys, tmp_path):
    partial = tmp_path / "partial.trec"
    with open_text(FP32) as lines:
        partial.write_text("".join(line for line in lines if line.split()[0] in ("1", "2")))
    assert main(["eval", str(QRELS), str(partial), "-m", "P.10"]) == 2
    assert "make_comparable" in capsys.readouterr().err
    assert main(["eval", str(QRELS), str(partial), "-m", "P.10", "-c", "-o", "json"]) == 0
    row = json.loads(capsys.readouterr().out)[0]
    per_query = tieaware.evaluate(str(QRELS), str(FP32), "P.10").per_query["expected"]
    assert row["expected"] == pytest.approx((per_query["1"] + per_query["2"]) / 225)


def test_ties_census(capsys):
    assert main(["ties", str(FP32), str(BF16), "-k", "10", "-k", "100", "-o", "json"]) == 0
    rows = {(r["run"], r["k"]): r for r in json.loads(capsys.readouterr().out)}
    expected = tieaware.census(str(BF16), ks=(10, 100))
    assert rows[BF16_NAME, 10]["unique_scores"] == expected.loc[10, "unique_scores"]
    assert rows[BF16_NAME, 100]["largest_group"] == expected.loc[100, "largest_group"] == 13
    assert rows[FP32_NAME, 10]["mean_tie_group_size"] == 1.0


def test_compare_json_and_fail_on_flag(capsys):
    args = ["compare", str(QRELS), str(FP32), str(BF16), "-m", "ndcg@10", "-m", "P@10"]
    assert main(args + ["-o", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["model_names"] == [FP32_NAME, BF16_NAME]  # ranx's schema, tieaware's additions beside it
    assert set(report[FP32_NAME]) == {"scores", "comparisons", "win_tie_loss"}
    pairs = {p["metric"]: p for p in report["tieaware"]["pairs"]}
    assert pairs["ndcg@10"]["order_flip"] is True  # E[M]: fp32 ahead; trec_eval's order: bf16 ahead
    assert pairs["P@10"]["order_flip"] is False and pairs["P@10"]["intervals_overlap"] is True
    for metric in ("ndcg@10", "P@10"):  # the tie-aware pair statistics, JSON-ready
        assert 0 < pairs[metric]["p_flip"] < 1
        # nDCG's p_flip is sampled; P@10 counts relevant documents, so its p_flip is exact
        assert pairs[metric]["p_flip_exact"] is (metric == "P@10")
        assert (pairs[metric]["p_flip_se"] == 0) is (metric == "P@10")
        assert pairs[metric]["verdict"] in ("robust", "fragile", "not significant")
        assert pairs[metric]["diff_ci_low"] <= pairs[metric]["diff"] <= pairs[metric]["diff_ci_high"]
    assert main(args + ["--fail-on-flag"]) == 1
    captured = capsys.readouterr()
    assert "Tie order matters for 2 comparison(s)" in captured.out
    assert "tie order matters for 2 comparison(s)" in captured.err


def test_compare_correction_reaches_json_and_tsv(capsys):
    args = ["compare", str(QRELS), str(FP32), str(BF16), "-m", "ndcg@10", "-m", "P@10", "--correction", "holm",
            "--flip-samples", "0"]
    assert main(args + ["-o", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["tieaware"]["correction"] == "holm"
    pairs = report["tieaware"]["pairs"]
    assert all(p["p_adjusted"] >= p["p_value"] for p in pairs)
    for pair in pairs:  # not sampled: nDCG gets the bound only, P@10's count law makes it exact
        assert pair["p_flip_bound"] is not None
        assert (pair["p_flip"] is None) is (pair["metric"] == "ndcg@10")
        assert pair["p_flip_exact"] is (pair["metric"] == "P@10")
    assert main(args + ["-o", "tsv", "--pairs"]) == 0
    header, *rows = capsys.readouterr().out.splitlines()
    assert {"p_adjusted", "verdict", "p_flip", "reason"} <= set(header.split("\t")) and len(rows) == 2


def test_read_texts_and_write_trec_run(tmp_path):
    texts = read_texts(CRANFIELD.queries)  # .jsonl.gz
    assert len(texts) == 225 and texts["1"].startswith("what similarity laws")
    plain = tmp_path / "queries.jsonl"
    with open_text(CRANFIELD.queries) as handle:
        plain.write_text(handle.read())
    assert read_texts(plain) == texts
    tsv = tmp_path / "docs.tsv"
    tsv.write_text("d1\tfirst doc\nd2\tsecond\n")
    assert read_texts(tsv) == {"d1": "first doc", "d2": "second"}
    packed = tmp_path / "docs.json.gz"
    with gzip.open(packed, "wt", encoding="utf-8") as handle:
        json.dump({"d1": "first doc"}, handle)
    assert read_texts(packed) == {"d1": "first doc"}
    out = tmp_path / "run.trec"
    with open(out, "w") as handle:
        assert write_trec_run({"q": {"a": 0.1 + 0.2, "b": 0.30000000000000004, "c": 0.5}}, "tag", handle) == 3
    assert out.read_text().splitlines() == ["q Q0 c 1 0.5 tag", "q Q0 b 2 0.30000000000000004 tag",
                                            "q Q0 a 3 0.30000000000000004 tag"]  # tie: doc id desc
    assert inputs.write_trec_run is write_trec_run  # its public name before it moved to tieaware.outputs


def test_score_writes_full_precision_run(tmp_path, capsys):
    """`tieaware score` with a tiny random BERT saved to disk: the file holds exactly BiEncoder's scores."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from tokenizers import Tokenizer, models, pre_tokenizers

    from tieaware.hps import BiEncoder

    words = "wing flow heat lift drag mach shock slab".split()
    vocab = {w: i for i, w in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", *words])}
    backend = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = transformers.PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="[UNK]",
                                                     pad_token="[PAD]", cls_token="[CLS]", sep_token="[SEP]")
    torch.manual_seed(0)
    model = transformers.BertModel(transformers.BertConfig(
        vocab_size=len(vocab), hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32,
        max_position_embeddings=32))
    model_dir = tmp_path / "model"
    model.save_pretrained(model_dir)
    tokenizer.save_pretrained(model_dir)
    queries = {"q1": "wing lift", "q2": "heat shock"}
    corpus = {f"d{i}": " ".join(words[i % 8: i % 8 + 3]) for i in range(12)}
    (tmp_path / "queries.json").write_text(json.dumps(queries))
    (tmp_path / "corpus.json").write_text(json.dumps(corpus))
    out = tmp_path / "run.trec"
    args = ["score", str(model_dir), "--queries", str(tmp_path / "queries.json"), "--corpus",
            str(tmp_path / "corpus.json"), "-k", "5", "--dtype", "bf16", "--hps", "upcast", "--name", "tiny",
            "--out", str(out), "--device", "cpu"]
    assert main(args) == 0
    assert "tie census: unique scores@10" in capsys.readouterr().err
    written = tieaware.read_trec_run(out)
    reference = BiEncoder(str(model_dir), dtype="bf16", hps=True, device="cpu", show_progress=False).search(
        queries, corpus, k=5).to_dict()
    assert written == reference  # repr round-trips every score, ties with the 5th kept
    assert main(args[:-2] + ["--out", str(out), "--scorer", "cross-encoder"]) == 2
    assert "--candidates" in capsys.readouterr().err


def test_internal_errors_show_their_traceback_input_errors_one_line(monkeypatch, capsys):
    import tieaware.cli as cli

    def broken(*args, **kwargs):
        raise RuntimeError("a bug")

    monkeypatch.setattr(cli, "_evaluate_file", broken)
    with pytest.raises(RuntimeError, match="a bug"):  # not turned into exit code 2
        main(["eval", str(QRELS), str(FP32), "-m", "ndcg@10"])
    monkeypatch.undo()
    assert main(["eval", str(QRELS), str(FP32), "-m", "ndgc@10"]) == 2
    with pytest.raises(tieaware.UnknownMetricError):
        main(["--traceback", "eval", str(QRELS), str(FP32), "-m", "ndgc@10"])
