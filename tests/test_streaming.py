"""Runs larger than memory: `evaluate(..., stream=...)` reads whole queries chunk by chunk and gives
exactly the in-memory numbers; per-query tables of shards merge into the single-run report."""
import gzip
import json

import numpy as np
import pandas as pd
import pytest

import tieaware
from tieaware.errors import InputError, QueryMismatchError
from tieaware.streaming import merge

METRICS = ["ndcg@10", "mrr@10", "map@100", "P@5", "bpref", "Judged@5"]


def _data(n_queries=12, n_docs=30, seed=3):
    rng = np.random.default_rng(seed)
    qrels, run = {}, {}
    for q in range(n_queries):
        docs = [f"d{i}" for i in rng.choice(200, n_docs, replace=False)]
        run[f"q{q}"] = {d: float(s) for d, s in zip(docs, rng.integers(0, 6, n_docs) / 4)}  # many ties
        qrels[f"q{q}"] = {d: int(rng.integers(0, 3)) for d in rng.choice(docs, 8, replace=False)}
    return qrels, run


def _write(path, run, order=None):
    lines = [f"{q} Q0 {d} {r} {s!r} tag" for q in (order or run) for r, (d, s) in enumerate(run[q].items(), 1)]
    path.write_text("\n".join(lines) + "\n")
    return path


def _assert_same(streamed, in_memory):
    for name in METRICS:
        pd.testing.assert_frame_equal(streamed[name].per_query, in_memory[name].per_query)
        assert float(streamed[name]) == float(in_memory[name])
        assert (streamed[name].min, streamed[name].max, streamed[name].oblivious, streamed[name].tie_std) == \
            (in_memory[name].min, in_memory[name].max, in_memory[name].oblivious, in_memory[name].tie_std)


@pytest.mark.parametrize("oblivious", ["trec_eval", "input", "ranx"])
@pytest.mark.parametrize("chunk", [1, 5, True])
def test_streamed_equals_in_memory(tmp_path, oblivious, chunk):
    qrels, run = _data()
    path = _write(tmp_path / "run.trec", run)
    in_memory = tieaware.evaluate(qrels, str(path), METRICS, oblivious=oblivious)
    _assert_same(tieaware.evaluate(qrels, str(path), METRICS, oblivious=oblivious, stream=chunk), in_memory)


def test_unsorted_and_compressed_files(tmp_path):
    qrels, run = _data()
    lines = [f"{q} Q0 {d} 1 {s!r} t" for q in run for d, s in run[q].items()]
    shuffled = [lines[i] for i in np.random.default_rng(0).permutation(len(lines))]
    path = tmp_path / "run.trec.gz"
    path.write_bytes(gzip.compress(("\n".join(shuffled) + "\n").encode()))
    in_memory = tieaware.evaluate(qrels, str(path), METRICS)
    with pytest.warns(RuntimeWarning, match="not grouped by query"):
        streamed = tieaware.evaluate(qrels, str(path), METRICS, stream=3)
    _assert_same(streamed, in_memory)


@pytest.mark.parametrize("text, line", [
    ("q1 Q0 d1 1 3 t\nq2 Q0 d1 1 3 t\nq1 Q0 d2 2 2 t\nq1 Q0 d1 3 1 t\n", 4),  # twice, after q2 came between
    ("q1 Q0 d1 1 3 t\n\n# c\nq2 Q0 d1 1 3 t\nq1 Q0 d1 3 1 t\nq2 Q0 d2 1 3 t\n", 5),
])
def test_a_document_twice_in_an_unsorted_file_names_its_line(tmp_path, text, line):
    path = tmp_path / "run.trec"
    path.write_text(text)
    qrels = {"q1": {"d1": 1}, "q2": {"d1": 1}}
    with pytest.raises(InputError, match=f"{path}:{line}: document 'd1' appears twice") as memory_error:
        tieaware.evaluate(qrels, str(path), "mrr")
    with pytest.warns(RuntimeWarning, match="not grouped by query"), pytest.raises(InputError) as streamed_error:
        tieaware.evaluate(qrels, str(path), "mrr", stream=True)
    assert str(streamed_error.value) == str(memory_error.value)


@pytest.mark.parametrize("block_bytes", [16, 1 << 21])
def test_run_tag_of_an_unsorted_file_is_its_last_lines(tmp_path, monkeypatch, block_bytes):
    import tieaware.readers.trec_files as trec_files
    from tieaware.streaming import evaluate_file

    monkeypatch.setattr(trec_files, "BLOCK_BYTES", block_bytes)  # the query comes back in a later block
    path = tmp_path / "run.trec"
    path.write_text("q1 Q0 d1 1 3 A\nq2 Q0 d1 1 3 B\nq1 Q0 d2 2 2 C\nq2 Q0 d3 3 1 D\n")
    with pytest.warns(RuntimeWarning, match="not grouped by query"):
        _, streamed = evaluate_file({"q1": {"d1": 1}, "q2": {"d1": 1}}, path, ["P@1"])
    assert streamed.run_tag == "D"  # trec_eval's runid: the last line's tag


def test_query_mismatch_and_make_comparable_as_in_memory(tmp_path):
    qrels, run = _data()
    qrels["only_in_qrels"] = {"x": 1}
    run["only_in_run"] = {"d1": 1.0}
    path = _write(tmp_path / "run.trec", run)
    with pytest.raises(QueryMismatchError) as streamed_error:
        tieaware.evaluate(qrels, str(path), METRICS, stream=4)
    with pytest.raises(QueryMismatchError) as memory_error:
        tieaware.evaluate(qrels, str(path), METRICS)
    assert (streamed_error.value.missing, streamed_error.value.extra) == \
        (memory_error.value.missing, memory_error.value.extra)
    _assert_same(tieaware.evaluate(qrels, str(path), METRICS, stream=4, make_comparable=True),
                 tieaware.evaluate(qrels, str(path), METRICS, make_comparable=True))


@pytest.mark.parametrize("suffix", [".tsv", ".parquet"])
def test_shards_merge_into_the_single_run_report(tmp_path, suffix):
    qrels, run = _data()
    queries = list(run)
    shards = [queries[:5], queries[5:]]
    tables = []
    for i, shard in enumerate(shards):
        path = _write(tmp_path / f"shard{i}.trec", {q: run[q] for q in shard})
        table = tmp_path / f"shard{i}{suffix}"
        tieaware.evaluate({q: qrels[q] for q in shard}, str(path), METRICS, stream=2, per_query_out=table)
        tables.append(table)
    merged = merge(tables)
    whole = tieaware.evaluate(qrels, str(_write(tmp_path / "all.trec", run)), METRICS)
    assert list(merged) == METRICS
    _assert_same(merged, whole)
    with pytest.raises(tieaware.InputError, match="more than one table"):
        merge([tables[0], tables[0]])


def test_stream_needs_a_file():
    qrels, run = _data()
    with pytest.raises(tieaware.InputError, match="stream=True reads a TREC run file"):
        tieaware.evaluate(qrels, run, METRICS, stream=True)


def test_cli_stream_per_query_out_and_merge(tmp_path, capsys):
    from tieaware.cli import main

    qrels, run = _data()
    qrels_path = tmp_path / "qrels.trec"
    qrels_path.write_text("".join(f"{q} 0 {d} {g}\n" for q, docs in qrels.items() for d, g in docs.items()))
    queries = list(run)
    tables = []
    for i, shard in enumerate((queries[:6], queries[6:])):
        shard_qrels = tmp_path / f"qrels{i}.trec"
        shard_qrels.write_text("".join(f"{q} 0 {d} {g}\n" for q in shard for d, g in qrels[q].items()))
        path = _write(tmp_path / f"shard{i}.trec", {q: run[q] for q in shard})
        tables.append(str(tmp_path / f"shard{i}.tsv"))
        assert main(["eval", str(shard_qrels), str(path), "-m", "ndcg@10", "-m", "mrr@10", "--stream", "2",
                     "--per-query-out", tables[-1], "-o", "json"]) == 0
    capsys.readouterr()
    assert main(["merge", *tables, "-o", "json"]) == 0
    merged = {row["metric"]: row for row in json.loads(capsys.readouterr().out)}
    whole = tieaware.evaluate(str(qrels_path), str(_write(tmp_path / "all.trec", run)), ["ndcg@10", "mrr@10"])
    for name in ("ndcg@10", "mrr@10"):
        assert merged[name]["expected"] == float(whole[name]) and merged[name]["range"] == whole[name].range
