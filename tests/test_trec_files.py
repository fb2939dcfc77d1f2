"""TREC files read once from pipes, FIFOs, process substitution and ``-``, compressed or not, with the
numbers the file gives."""
import bz2
import gzip
import lzma
import math
import os
import re
import shlex
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tieaware import evaluate, read_trec_qrels, read_trec_run, streaming
from tieaware.cli import main
from tieaware.errors import InputError
from tieaware.readers import trec_files

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


# ------------------------------------------- the compiled reader against the Python one it replaced
def _oracle_score(text: str, where: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = None
    if value is None or "_" in text or not text.isascii():
        raise InputError(f"{where}: score {text!r} is not a number.")
    if math.isnan(value):
        raise InputError(f"{where}: score is NaN.")
    return value


def _oracle_grade(text: str, where: str) -> int:
    if "_" not in text and text.isascii():
        if re.fullmatch(r"[+-]?[0-9]+(\.0*)?", text):
            if len(text.partition(".")[0].lstrip("+-")) > 18:  # the one deliberate change: beyond int64
                raise InputError(f"{where}: relevance {text!r} is out of range")
            return int(text.partition(".")[0])
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if math.isfinite(value):
            raise InputError(f"{where}: relevance {text!r} is not an integer.")
    raise InputError(f"{where}: relevance {text!r} is not an integer grade.")


_BARE_CR = re.compile(rb"\r[ \t\r\x0b\x0c]*[^ \t\r\n\x0b\x0c]")
_COMPRESSORS = {"plain": lambda data: data, "gzip": gzip.compress, "bzip2": bz2.compress, "xz": lzma.compress}


def _decompressed(data: bytes) -> bytes:
    for magic, decompress in ((b"\x1f\x8b", gzip.decompress), (b"BZh", bz2.decompress),
                              (b"\xfd7zXZ\x00", lzma.decompress)):
        if data.startswith(magic):
            return decompress(data)
    return data


def oracle_read(path: Path, kind: str) -> dict:
    """The line-by-line Python reader the compiled one replaced (split on ASCII whitespace, as
    trec_eval splits): the test oracle."""
    data = _decompressed(path.read_bytes())
    out: dict = {}
    for line_no, raw in enumerate([x + b"\n" for x in data.split(b"\n")], 1):
        if line_no == 1 and raw.startswith(b"\xef\xbb\xbf"):
            raw = raw[3:]
        where = f"{path}:{line_no}"
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError:
            raise InputError(f"{where}: {kind} file is not valid UTF-8") from None
        if _BARE_CR.search(raw):  # a CR with a token after it on its line: lines that would run together
            raise InputError(f"{where}: a carriage return (CR) without a newline after it")
        cols = [c.decode("utf-8") for c in raw.split()]
        if not cols or cols[0].startswith("#"):
            continue
        if len(cols) != (6 if kind == "run" else 4):  # trec_eval would drop a run line's fields after the sixth
            raise InputError(f"{where}: a TREC {kind} line has")
        value = _oracle_score(cols[4], where) if kind == "run" else _oracle_grade(cols[3], where)
        docs = out.setdefault(cols[0], {})
        if cols[2] in docs:
            raise InputError(f"{where}: document {cols[2]!r} appears twice for query {cols[0]!r}.")
        docs[cols[2]] = value
    if not out:
        raise InputError(f"{kind} file {str(path)!r} holds no {kind} lines.")
    return out


# control characters (bytes below 33 that are not whitespace), "!" (33), non-ASCII and ids longer than the
# 8-byte words the scan reads at a time
_IDS = st.text(alphabet="qd12é中😀\u00a0\u2003-_.\x00\x01\x1c\x1f\x7f!~", min_size=1, max_size=4) | \
    st.text(alphabet="qd1é😀\x01!", min_size=5, max_size=20)
_SCORES = st.one_of(
    st.floats(allow_nan=False).map(repr), st.floats(-1e3, 1e3).map(lambda x: f"{x:.2f}"),
    st.floats(allow_nan=False).map(lambda x: f"{x:e}"), st.floats(allow_nan=False).map(lambda x: f"{x:.17g}"),
    st.floats(allow_nan=False).map(lambda x: f"{x:+.25E}"),
    st.from_regex(r"\A[+-]?[0-9]{0,20}(\.[0-9]{0,20})?([eE][+-]?[0-9]{1,4})?\Z"),
    st.sampled_from(["inf", "-Infinity", "+INF", "nan", "-NaN", "0_4", "1e", ".", "1.5abc", "0x1p3", "١٢", "infinit",
                     "0.1", "1e-400", "1e400", "9007199254740993", "2.2250738585072011e-308", "-0", "-0.0", ".5",
                     "5.", "00012.500", "1" * 30]))
_GRADES = st.one_of(st.integers(-3, 5).map(str), st.sampled_from(["2.0", "+3", "1.5", "2e1", "inf", "1_0", "١",
                                                                  "-0", "2.", "+-2.0", "9" * 19, ".0", "x"]))
_SPACE = st.sampled_from([" ", "\t", "  ", " \t", "\x0b", "\x0c", "\r"])


def _record(draw, kind: str) -> list:
    qid = draw(st.sampled_from(["q1", "q2", "10", "é"])) if draw(st.booleans()) else draw(_IDS)
    cols = [qid, "Q0" if kind == "run" else "0", draw(_IDS)]
    return cols + ([draw(st.integers(0, 9)).__str__(), draw(_SCORES), "tag"] if kind == "run" else [draw(_GRADES)])


#: line endings: newlines, CRLF, bare CR (old Mac), or each line its own
_ENDINGS = {"lf": ["\n"], "crlf": ["\r\n"], "cr": ["\r"], "mixed": ["\n", "\r\n", "\r"]}


@st.composite
def _trec_text(draw, kind: str) -> bytes:
    """Lines of a TREC file: good records, blank and comment lines, records with a column too few or
    too many, two records glued on one line (``cat a b`` where ``a`` lacks its final newline), with
    newline, CRLF, bare CR or mixed endings."""
    lines = []
    for _ in range(draw(st.integers(0, 12))):
        shape = draw(st.integers(0, 14))
        if shape == 0:
            lines.append(draw(st.sampled_from(["", "   ", "# a comment", "#q1 Q0 d1 1 x t", "\t"])))
            continue
        cols = _record(draw, kind)
        if shape == 1:
            cols = cols[:-1]
        elif shape == 2:
            cols.append("extra")
        elif shape == 3:  # glued: the first record's last field runs into the second's first
            second = _record(draw, kind)
            cols = [*cols[:-1], cols[-1] + second[0], *second[1:]]
        seps = [draw(_SPACE) for _ in cols]
        lines.append(draw(st.sampled_from(["", " ", "\t"])) + "".join(c + s for c, s in zip(cols, seps)))
    endings = _ENDINGS[draw(st.sampled_from(["lf"] * 5 + ["crlf", "cr", "mixed"]))]
    text = "".join(line + draw(st.sampled_from(endings)) for line in lines)
    text = text[:-1] if text.endswith("\n") and draw(st.booleans()) else text
    text = text.encode()
    if draw(st.integers(0, 9)) == 0:
        text = b"\xef\xbb\xbf" + text
    if draw(st.integers(0, 9)) == 0 and text:
        at = draw(st.integers(0, len(text) - 1))
        text = text[:at] + b"\xff" + text[at:]
    return text


def _outcome(reader, path: Path):
    """The table with its values as repr (-0.0 and 0.0 differ), or the error message."""
    try:
        return {q: {d: repr(v) for d, v in docs.items()} for q, docs in reader(path).items()}
    except InputError as exc:
        return str(exc)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), kind=st.sampled_from(["run", "qrels"]), block=st.sampled_from([1, 5, 64, 1 << 23]),
       compression=st.sampled_from(sorted(_COMPRESSORS)))
def test_compiled_reader_equals_the_python_reader(tmp_path, monkeypatch, data, kind, block, compression):
    monkeypatch.setattr(trec_files, "BLOCK_BYTES", block)
    text = data.draw(_trec_text(kind))
    path = tmp_path / f"{kind}.trec"
    path.write_bytes(_COMPRESSORS[compression](text))
    reader = read_trec_run if kind == "run" else read_trec_qrels
    expected, got = _outcome(lambda p: oracle_read(p, kind), path), _outcome(reader, path)
    if isinstance(expected, str):  # the oracle's messages are the beginnings of the reader's
        assert isinstance(got, str) and got.startswith(expected), (got, expected)
    else:
        assert got == expected


def _streamed(path: Path, chunk_docs: int) -> dict:
    """The run as `streaming` reads it to evaluate it: whole queries per chunk, as code points."""
    out: dict = {}
    for chunk in streaming._column_chunks(trec_files.TrecFile(path, "run"), 10**9, chunk_docs):
        assert len(chunk.query_ids) == chunk.n_ret.size and int(chunk.n_ret.sum()) == chunk.scores.size
        for qid, docs in chunk.as_dict().items():
            assert qid not in out
            out[qid] = docs
    if not out:  # as evaluate_stream says it
        raise InputError(f"run file {str(path)!r} holds no run lines.")
    return out


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), block=st.sampled_from([1, 5, 64, 1 << 23]), chunk_docs=st.sampled_from([1, 3, 1 << 16]))
def test_streamed_columns_equal_the_python_reader(tmp_path, monkeypatch, data, block, chunk_docs):
    """The chunks `tieaware eval` evaluates hold the oracle's records, and its first error (a document
    twice for a query included), whatever the block and chunk sizes; a file whose queries come back
    is left to the partitioning pass."""
    monkeypatch.setattr(trec_files, "BLOCK_BYTES", block)
    path = tmp_path / "run.trec"
    path.write_bytes(data.draw(_trec_text("run")))
    expected = _outcome(lambda p: oracle_read(p, "run"), path)
    try:
        got = _outcome(lambda p: _streamed(p, chunk_docs), path)
    except streaming._Unsorted:
        return
    if isinstance(expected, str):
        assert isinstance(got, str) and got.startswith(expected), (got, expected)
    else:
        assert got == expected


def test_scores_are_read_as_strtod_reads_them(tmp_path):
    """Correct rounding on the hard cases (halfway, 17+ digits, subnormals) equals Python's float."""
    texts = ["0.1", "9007199254740993", "2.2250738585072011e-308", "4.9e-324", "1.7976931348623157e308",
             "0.30000000000000004", "123456789012345.6", "1e22", "1e23", "8.98846567431158e307", "1" * 25]
    run = tmp_path / "run.trec"
    run.write_text("".join(f"q1 Q0 d{i} {i} {t} x\n" for i, t in enumerate(texts)))
    assert [repr(v) for v in read_trec_run(run)["q1"].values()] == [repr(float(t)) for t in texts]


def test_nbsp_and_other_unicode_spaces_stay_inside_ids(tmp_path):
    run = tmp_path / "run.trec"
    run.write_text("q\u00a01 Q0 d\u00a01\u2003x 1 0.5 tag\n", encoding="utf-8")
    assert read_trec_run(run) == {"q\u00a01": {"d\u00a01\u2003x": 0.5}}


def test_run_tag_is_the_last_lines(tmp_path):
    run = tmp_path / "run.trec"
    run.write_text("q1 Q0 d1 1 0.5 first\nq1 Q0 d2 2 0.4 last\n# comment\n")
    assert trec_files.read_trec(run, "run")[1] == "last"


# ------------------------------------------------- tieaware eval: one read, chunk by chunk
def test_cli_reads_a_run_once_chunk_by_chunk_with_the_in_memory_numbers(plain, tmp_path, monkeypatch, capsys):
    """A FIFO can be read once: its -o trec runid (the last line's tag, as trec_eval prints it) and
    values come from that one read; the run is evaluated in several chunks, with the numbers of
    evaluate on the whole run in memory."""
    run, qrels = plain
    text = run.read_text().replace("STANDARD\n", "first\n", 1).rstrip("\n").rsplit("\n", 1)
    fifo = tmp_path / "run_fifo"
    os.mkfifo(fifo)
    lines = text[0] + "\n" + text[1].replace("STANDARD", "lastTag") + "\n"
    writer = threading.Thread(target=lambda: fifo.write_text(lines))
    writer.start()
    expected = float(evaluate(qrels, run, "map"))
    chunks = []
    per_query_tables = streaming.per_query_tables

    def counting(qrels, run, *args, **kwargs):
        chunks.append(len(run.query_ids))
        return per_query_tables(qrels, run, *args, **kwargs)

    monkeypatch.setattr(streaming, "CHUNK_DOCS", 200)
    monkeypatch.setattr(streaming, "per_query_tables", counting)
    assert main(["eval", str(qrels), str(fifo), "-m", "map", "-m", "runid", "-o", "trec", "--digits", "10"]) == 0
    writer.join()
    out = capsys.readouterr().out
    assert "runid                 \tall\tlastTag\n" in out
    assert len(chunks) > 1
    assert f"map                   \tall\t{expected:.10f}\n" in out


def test_unsorted_run_from_a_pipe_is_an_error_naming_the_remedy(plain, tmp_path, capsys):
    run, qrels = plain
    lines = run.read_text().splitlines(keepends=True)
    fifo = tmp_path / "unsorted"
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: fifo.write_text("".join(lines[1:] + lines[:1])))
    writer.start()
    assert main(["eval", str(qrels), str(fifo), "-m", "map"]) == 2
    writer.join()
    err = capsys.readouterr().err
    assert "is not grouped by query" in err and "sort -s -k1,1" in err and "comes back" in err


def test_the_scan_is_not_on_the_dict_path():
    """Evaluating dicts neither imports nor compiles the TREC scan."""
    code = ("import sys, tieaware; tieaware.evaluate({'q': {'a': 1}}, {'q': {'a': 1.0}}, 'ndcg@10'); "
            "print('tieaware.kernels.trec' in sys.modules, 'tieaware.readers.trec_files' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["False", "False"]


def test_the_dict_readers_are_not_on_the_file_path():
    """`tieaware eval` on TREC files imports neither the pair readers nor ranx's typed-dict kernels."""
    code = ("import sys; from tieaware.cli import main; "
            f"code = main(['eval', {str(DATA / 'qrels-302.test')!r}, {str(DATA / 'results-302.test')!r}, "
            "'-m', 'ndcg_cut.10']); "
            "print(code, *(name in sys.modules for name in ('tieaware.streaming', 'tieaware.readers.pairs', "
            "'tieaware.readers.typed_dicts', 'tieaware.readers.dicts')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines()[-1].split() == ["0", "True", "False", "False", "False"]


@pytest.mark.parametrize("compress", [gzip.compress, lambda data: __import__("bz2").compress(data, 1),
                                      __import__("lzma").compress])
def test_a_cut_off_archive_names_the_lines_read_before_the_cut(tmp_path, compress):
    text = "".join(f"q{i // 100} Q0 d{i} {i % 100 + 1} {i % 7} tag\n" for i in range(30_000)).encode()
    data = compress(text)  # bzip2 in blocks of 100 kB: the cut leaves whole blocks before it
    cut = tmp_path / "cut.run"
    cut.write_bytes(data[:len(data) * 2 // 3])
    with pytest.raises(InputError, match=r"cannot decompress the run file .* after line (\d+)") as error:
        read_trec_run(cut)
    read = int(re.search(r"after line (\d+)", str(error.value)).group(1))
    assert 0 < read < 30_000  # the lines before the cut were read, and counted


def test_eval_in_trec_layout_imports_neither_pandas_nor_scipy(plain):
    """`tieaware eval -o trec` (trec_eval's layout, with -q) runs without pandas, scipy or tqdm (a
    third of its start), with the numbers -o tsv gives."""
    run, qrels = plain
    code = ("import sys, tieaware.cli; code = tieaware.cli.main(sys.argv[1:]); "
            "print([m for m in ('pandas', 'scipy.linalg', 'tqdm', 'ranx') if m in sys.modules], file=sys.stderr); "
            "sys.exit(code)")
    args = ["eval", str(qrels), str(run), "-m", "map", "-m", "ndcg_cut.10", "-q", "--digits", "12"]
    lean = subprocess.run([sys.executable, "-c", code, *args, "-o", "trec"], capture_output=True, text=True,
                          timeout=300)
    assert lean.returncode == 0, lean.stderr[-2000:]
    assert lean.stderr.strip().splitlines()[-1] == "[]"
    full = subprocess.run([sys.executable, "-m", "tieaware", *args, "-o", "tsv"], capture_output=True, text=True,
                          timeout=300)
    assert full.returncode == 0, full.stderr[-2000:]
    rows = [line.split("\t") for line in full.stdout.strip().splitlines()]
    header, rows = rows[0], rows[1:]
    tsv = {(row[header.index("metric")], row[header.index("query")] or "all"): float(row[header.index("expected")])
           for row in rows}
    trec = {(name.strip(), qid): float(value) for name, qid, value in
            (line.split("\t") for line in lean.stdout.strip().splitlines())}
    names = {"map": "map", "ndcg_cut.10": "ndcg_cut_10"}
    assert len(trec) == len(tsv) > 2
    for (metric, qid), value in tsv.items():
        assert trec[names[metric], qid] == pytest.approx(value, abs=1e-12)


def test_the_reader_thread_stops_with_its_reader(tmp_path, monkeypatch):
    """Blocks are scanned on a thread one ahead; a reader that stops early stops it, and a bad line
    raises after the blocks before it."""
    monkeypatch.setattr(trec_files, "BLOCK_BYTES", 64)
    monkeypatch.setattr(trec_files.threads, "n_threads", lambda: 2)
    path = tmp_path / "run.trec"
    path.write_text("".join(f"q{i} Q0 d{i} 1 {i} t\n" for i in range(200)) + "q9 Q0 d1 1 nan t\n")
    before = {t for t in threading.enumerate() if t.name == "tieaware-trec-reader"}
    blocks = trec_files.TrecFile(path, "run").blocks()
    assert next(blocks).query_ids[0] == "q0"
    assert any(t.name == "tieaware-trec-reader" for t in threading.enumerate())
    blocks.close()
    assert {t for t in threading.enumerate() if t.name == "tieaware-trec-reader"} == before
    seen = []
    with pytest.raises(InputError, match=r"run.trec:201: score is NaN"):
        for block in trec_files.TrecFile(path, "run").blocks():
            seen += block.query_ids
    assert seen == [f"q{i}" for i in range(200)]


@pytest.mark.parametrize("options", [{}, {"ignore_identical_ids": True}, {"oblivious": "ranx"}])
def test_streamed_columns_give_the_in_memory_numbers(tmp_path, options):
    """Chunks of columns (and the dict chunks that judged_only metrics and ignore_identical_ids take):
    queries without qrels left out, qrels queries the run lacks scored as empty, ties, a doc id equal to
    its query id, every statistic equal to the in-memory path's."""
    lines, qrels = [], {}
    for q in range(7):
        qid = f"q{q}"
        docs = [qid if d == 3 else f"d{(q * 7 + d) % 11}" for d in range(10)]
        lines += [f"{qid} Q0 {doc} {r} {round(1 - r / 10, 1) if r % 3 else 0.5} t\n" for r, doc in enumerate(docs)]
        if q != 4:  # q4: no qrels
            qrels[qid] = {docs[d]: d % 3 for d in range(0, 10, 2)}
    qrels["q9"] = {"d1": 1}  # not in the run
    path = tmp_path / "run.trec"
    path.write_text("".join(lines))
    metrics = ["ndcg@5", "map", "P(judged_only=True)@3", "mrr"]
    run = read_trec_run(path)
    del run["q4"]
    memory = evaluate(qrels, run, metrics, make_comparable=True, **options)
    for stream in (True, 2):
        streamed = evaluate(qrels, str(path), metrics, stream=stream, make_comparable=True, **options)
        for name in metrics:
            assert streamed[name].query_ids == memory[name].query_ids
            assert streamed[name].per_query.equals(memory[name].per_query), name
    plain = evaluate(qrels, str(path), ["ndcg@5", "map"], stream=2, make_comparable=True, **options)
    assert [float(plain[name]) for name in ("ndcg@5", "map")] == [float(memory[name]) for name in ("ndcg@5", "map")]


def _first_repeat_reference(ids: list, offsets: list) -> int:
    for q in range(len(offsets) - 1):
        seen: set = set()
        for i in range(offsets[q], offsets[q + 1]):
            if ids[i] in seen:
                return i
            seen.add(ids[i])
    return -1


@pytest.mark.parametrize("seed", [0, 1, 2 ** 64 - 1])
def test_first_repeat_finds_the_first_repeat_among_ids_sharing_long_prefixes(seed):
    """Ids that differ only in their last code points (the shape crafted collisions take), some queries
    holding a repeat: the first repeat in the file's order, whatever the hash seed."""
    import random

    import numpy as np

    from tieaware.kernels import trec as trec_kernels

    rng = random.Random(seed % 1000)
    prefix = "d" * 40 + "\u00e9"
    for repeat_at in (None, 5, 2999):
        ids = [f"{prefix}{i:05d}" for i in range(3000)]
        rng.shuffle(ids)
        if repeat_at is not None:
            ids[repeat_at] = ids[repeat_at - 3 if repeat_at % 1000 >= 3 else repeat_at + 1]
        offsets = [0, 1000, 2000, len(ids)]
        text = "".join(ids)
        codes = np.frombuffer(text.encode("utf-32-le"), np.uint32)
        lengths = np.array([len(i) for i in ids], np.int64)
        hi = np.cumsum(lengths)
        lo = hi - lengths
        found = trec_kernels.first_repeat(codes, lo, hi, np.array(offsets, np.int64), np.uint64(seed))
        assert found == _first_repeat_reference(ids, offsets)
        assert found == (-1 if repeat_at is None else repeat_at)


def test_the_repeat_check_hashes_with_the_per_process_seed(monkeypatch, tmp_path):
    """`first_repeat` takes the seed as an argument (numba would freeze a global into its disk cache), and
    the streaming reader passes `groups.SEED`, drawn per process."""
    import inspect

    from tieaware.kernels import groups
    from tieaware.kernels import trec as trec_kernels

    assert "seed" in inspect.signature(trec_kernels.first_repeat.py_func).parameters
    seeds = []
    original = trec_kernels.first_repeat

    def recording(*args):
        seeds.append(args[-1])
        return original(*args)

    monkeypatch.setattr(trec_kernels, "first_repeat", recording)
    run = tmp_path / "run"
    run.write_text("q1 Q0 d1 1 3 t\nq1 Q0 d2 2 2 t\nq1 Q0 d1 3 1 t\n")
    with pytest.raises(InputError, match=f"{run}:3: document 'd1' appears twice for query 'q1'"):
        list(streaming._column_chunks(trec_files.TrecFile(run, "run"), 10))
    assert seeds and all(seed == groups.SEED for seed in seeds)


def test_a_run_read_while_the_qrels_are_stops_when_the_qrels_fail(plain, tmp_path, monkeypatch, capsys):
    """`tieaware eval` starts reading its one run before the qrels: a bad qrels file is named as the qrels
    (not as the run), and the run's reader thread stops."""
    run, _ = plain
    monkeypatch.setattr(trec_files, "BLOCK_BYTES", 256)  # many blocks: the reader is still reading
    monkeypatch.setattr(trec_files.threads, "n_threads", lambda: 2)
    qrels = tmp_path / "qrels.trec"
    qrels.write_text("q1 0 d1 1\nq1 0 d2 1.5\n")
    before = {t for t in threading.enumerate() if t.name == "tieaware-trec-reader"}
    assert main(["eval", str(qrels), str(run), "-m", "map"]) == 2
    err = capsys.readouterr().err
    assert f"{qrels}:2: relevance '1.5' is not an integer" in err and f"run {run}" not in err
    assert {t for t in threading.enumerate() if t.name == "tieaware-trec-reader"} == before


def test_run_chunks_never_asked_for_stop_their_reader(plain, monkeypatch):
    monkeypatch.setattr(trec_files, "BLOCK_BYTES", 256)
    monkeypatch.setattr(trec_files.threads, "n_threads", lambda: 2)
    before = {t for t in threading.enumerate() if t.name == "tieaware-trec-reader"}
    reader = streaming.RunChunks(plain[0])
    assert {t for t in threading.enumerate() if t.name == "tieaware-trec-reader"} - before
    reader.close()
    assert {t for t in threading.enumerate() if t.name == "tieaware-trec-reader"} == before


@pytest.mark.parametrize("compression", sorted(_COMPRESSORS))
@pytest.mark.parametrize("text,message", [(b"q1 Q0 d1 1 0.9 r\rq1 Q0 d2 2 0.8 r\r", ":1: a carriage return"),
                                          (b"q1 Q0 d1 1 0.9 r\nq1 Q0 d2 2 0.8 rq1 Q0 d3 3 0.7 r\n",
                                           ":2: a TREC run line has 6 columns")])
def test_bare_cr_and_glued_lines_from_a_fifo_and_stdin_are_errors(plain, tmp_path, monkeypatch, capsys, compression,
                                                                   text, message):
    _, qrels = plain
    packed = _COMPRESSORS[compression](text)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: fifo.write_bytes(packed))
    writer.start()
    with pytest.raises(InputError, match=re.escape(f"{fifo}{message}")):
        read_trec_run(fifo)
    writer.join()
    read, write = os.pipe()
    threading.Thread(target=lambda: (os.write(write, packed), os.close(write))).start()
    with os.fdopen(read, "rb") as pipe:
        monkeypatch.setattr(sys, "stdin", pipe)
        assert main(["eval", str(qrels), "-", "-m", "map"]) == 2
    assert f"-{message}" in capsys.readouterr().err
