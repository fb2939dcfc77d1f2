"""TREC files read once from pipes, FIFOs, process substitution and ``-``, compressed or not, with the
numbers the file gives."""
import gzip
import os
import shlex
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tieaware import evaluate, read_trec_run
from tieaware.cli import main
from tieaware.errors import InputError

DATA = Path(__file__).parent / "data" / "trec_eval"
METRICS = ("map", "ndcg_cut.10", "recip_rank")


@pytest.fixture(scope="module")
def plain(tmp_path_factory):
    """results.test and qrels.test of trec_eval's test data, decompressed (the run is 65 KB: more than
    one pipe buffer, so a probe that reopens the path loses lines)."""
    folder = tmp_path_factory.mktemp("plain")
    run, qrels = folder / "results.test", folder / "qrels.test"
    run.write_bytes(gzip.decompress((DATA / "results.test.gz").read_bytes()))
    qrels.write_bytes(gzip.decompress((DATA / "qrels.test.gz").read_bytes()))
    return run, qrels


def _tsv_rows(stdout: str) -> dict:
    """{(run, metric): the rest of the row} of ``-o tsv`` output."""
    lines = stdout.strip().splitlines()
    header = lines[0].split("\t")
    rows = [dict(zip(header, line.split("\t"))) for line in lines[1:]]
    return {(row["run"], row["metric"]): tuple(v for k, v in row.items() if k not in ("run", "metric"))
            for row in rows}


def test_pipe_stdin_process_substitution_and_fifo_give_the_file_numbers(plain, tmp_path):
    run, qrels = plain
    fifo = tmp_path / "fifo_run"
    os.mkfifo(fifo)
    cli = f"{shlex.quote(sys.executable)} -m tieaware.cli"
    metrics = " ".join(f"-m {m}" for m in METRICS)
    script = (f"(gzip -c {run} > {fifo} &) ; cat {run} | {cli} eval {qrels} {run} - <(gzip -c {run}) "
              f"<(bzip2 -c {run}) {fifo} {metrics} -o tsv --digits 15")
    proc = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    rows = _tsv_rows(proc.stdout)
    runs = {name for name, _ in rows}
    assert len(runs) == 5, runs
    for metric in METRICS:
        reference = rows[("results", metric)]
        assert float(reference[0]) > 0
        for name in runs:
            assert rows[(name, metric)] == reference, (name, metric)


def test_qrels_from_stdin(plain, monkeypatch, capsys):
    run, qrels = plain
    assert main(["eval", str(qrels), str(run), "-m", "map", "-o", "tsv", "--digits", "15"]) == 0
    expected = capsys.readouterr().out
    read, write = os.pipe()
    threading.Thread(target=lambda: (os.write(write, qrels.read_bytes()), os.close(write))).start()
    with os.fdopen(read, "rb") as pipe:
        monkeypatch.setattr(sys, "stdin", pipe)
        assert main(["eval", "-", str(run), "-m", "map", "-o", "tsv", "--digits", "15"]) == 0
    assert capsys.readouterr().out == expected


def test_stdin_for_qrels_and_run_is_an_error(plain, capsys):
    run, _ = plain
    assert main(["eval", "-", "-", "-m", "map"]) == 2
    assert "'-' (standard input) can be the qrels or one run, not both" in capsys.readouterr().err


def test_readers_read_a_fifo_once(plain, tmp_path):
    run, qrels = plain
    for compress in (lambda data: data, gzip.compress):
        fifo = tmp_path / f"fifo{id(compress)}"
        os.mkfifo(fifo)
        writer = threading.Thread(target=lambda f=fifo, c=compress: Path(f).write_bytes(c(run.read_bytes())))
        writer.start()
        assert read_trec_run(fifo) == read_trec_run(run)
        writer.join()
    fifo = tmp_path / "qrels_fifo"
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: fifo.write_bytes(qrels.read_bytes()))
    writer.start()
    assert float(evaluate(fifo, run, "map")) == float(evaluate(qrels, run, "map"))
    writer.join()


def test_broken_archive_from_a_pipe_names_its_compression(tmp_path):
    fifo = tmp_path / "broken"
    os.mkfifo(fifo)
    packed = gzip.compress(b"".join(b"q1 Q0 d%d 1 0.5 t\n" % i for i in range(1000)))
    writer = threading.Thread(target=lambda: fifo.write_bytes(packed[:200]))
    writer.start()
    with pytest.raises(InputError, match="gzip data"):
        read_trec_run(fifo)
    writer.join()
