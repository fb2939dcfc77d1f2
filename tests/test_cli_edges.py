"""The edges of the CLI and its output files: no silent wrong number, the exit-code contract (0 ok,
1 a check failed, 2 bad input with one line on stderr)."""
import hashlib
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tieaware
from tieaware.cli import main
from tieaware.streaming import merge

QRELS = {"q1": {"d1": 1, "d2": 2}, "q2": {"d3": 1}, "q3": {"d1": 1, "d4": 1}, "q4": {"d2": 1}}
RUN = {"q1": {"d1": 0.5, "d2": 0.5, "d5": 0.1}, "q2": {"d3": 0.2, "d1": 0.2}, "q3": {"d4": 1.0, "d1": 0.3},
       "q4": {"d2": 0.4, "d9": 0.4}}
METRICS = ["ndcg@10", "mrr", "P@2"]
SETTINGS = dict(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _one_error_line(capsys, command: str) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"tieaware {command}: error: "), err
    return err


def _shards(tmp_path, suffix=".tsv", splits=(("q1", "q2"), ("q3", "q4")), **options):
    paths = []
    for i, shard in enumerate(splits):
        path = tmp_path / f"shard{i}{suffix}"
        tieaware.evaluate({q: QRELS[q] for q in shard}, {q: RUN[q] for q in shard}, options.pop("metrics", METRICS),
                          per_query_out=path, **options)
        paths.append(path)
    return paths


# ------------------------------------------------------------------- merge
@pytest.mark.parametrize("suffix", [".tsv", ".parquet"])
@pytest.mark.parametrize("change", [dict(metrics=["ndcg@10", "mrr"]), dict(metrics=["mrr", "P@2", "ndcg@10"]),
                                    dict(relevance_level=2), dict(oblivious="input"),
                                    dict(ignore_identical_ids=True)])
def test_merge_refuses_shards_evaluated_differently(tmp_path, capsys, suffix, change):
    first = _shards(tmp_path, suffix, splits=(("q1", "q2"),))[0]
    other = tmp_path / f"other{suffix}"
    options = {"metrics": METRICS, **change}
    tieaware.evaluate({q: QRELS[q] for q in ("q3", "q4")}, {q: RUN[q] for q in ("q3", "q4")},
                      options.pop("metrics"), per_query_out=other, **options)
    with pytest.raises(tieaware.InputError, match="differ in") as error:
        merge([first, other])
    assert str(first) in str(error.value) and str(other) in str(error.value)
    assert main(["merge", str(first), str(other)]) == 2
    _one_error_line(capsys, "merge")


@pytest.mark.parametrize("how", [[], ["-M", "5"], ["--stream", "1"]])
def test_cli_shards_record_ignore_identical_ids(tmp_path, capsys, how):
    # document 'q1' of query 'q1' is dropped by --ignore-identical-ids: the shards' numbers differ, merge must refuse
    qrels, runs = [tmp_path / "qrels0", tmp_path / "qrels1"], [tmp_path / "run0", tmp_path / "run1"]
    for i, (q, r) in enumerate(zip(qrels, runs)):
        q.write_text(f"q{i} 0 d1 1\n")
        r.write_text(f"q{i} Q0 q{i} 1 0.9 t\nq{i} Q0 d1 2 0.5 t\n")
    shards = [tmp_path / "s0.tsv", tmp_path / "s1.tsv"]
    for q, run, shard, ignore in zip(qrels, runs, shards, (["--ignore-identical-ids"], [])):
        assert main(["eval", str(q), str(run), "-m", "mrr", "--per-query-out", str(shard), *how, *ignore]) == 0
    capsys.readouterr()
    with pytest.raises(tieaware.InputError, match="differ in ignore identical ids"):
        merge(shards)
    assert main(["eval", str(qrels[1]), str(runs[1]), "-m", "mrr", "--per-query-out", str(shards[1]), *how,
                 "--ignore-identical-ids"]) == 0
    assert merge(shards)["mrr"].per_query["expected"].tolist() == [1.0, 1.0]


def test_merge_refuses_another_tieaware_version(tmp_path, monkeypatch):
    first = _shards(tmp_path, splits=(("q1",),))[0]
    monkeypatch.setattr(tieaware, "__version__", "0.0.1")
    other = tmp_path / "other.tsv"
    tieaware.evaluate({"q2": QRELS["q2"]}, {"q2": RUN["q2"]}, METRICS, per_query_out=other)
    with pytest.raises(tieaware.InputError, match="differ in tieaware"):
        merge([first, other])


@pytest.mark.parametrize("suffix", [".tsv", ".parquet"])
def test_merge_refuses_a_query_in_two_shards(tmp_path, capsys, suffix):
    paths = _shards(tmp_path, suffix, splits=(("q1", "q2"), ("q2", "q3")))
    with pytest.raises(tieaware.InputError, match="'q2' appears in more than one table") as error:
        merge(paths)
    assert all(str(p) in str(error.value) for p in paths)
    assert main(["merge", *map(str, paths)]) == 2
    _one_error_line(capsys, "merge")


@settings(**SETTINGS)
@given(cut=st.integers(min_value=1, max_value=10_000))
def test_a_cut_off_tsv_is_refused(tmp_path_factory, cut):
    path = _shards(tmp_path_factory.mktemp("cut"), splits=(("q1", "q2", "q3", "q4"),))[0]
    data = path.read_bytes()
    cut %= len(data) - 1  # at least the final newline goes
    path.write_bytes(data[:cut])
    with pytest.raises(tieaware.InputError, match=str(path)):
        merge([path])


@pytest.mark.parametrize("cut", [1, 100, 1000, -8, -1])
def test_a_cut_off_parquet_is_refused(tmp_path, capsys, cut):
    path = _shards(tmp_path, ".parquet", splits=(("q1", "q2", "q3", "q4"),))[0]
    path.write_bytes(path.read_bytes()[:cut])
    assert main(["merge", str(path)]) == 2
    assert str(path) in _one_error_line(capsys, "merge")


def test_damaged_tsv_tables_are_refused_with_one_line(tmp_path, capsys):
    path = _shards(tmp_path, splits=(("q1", "q2", "q3", "q4"),))[0]
    lines = path.read_text().splitlines(keepends=True)
    variants = {
        "repeated header": lines[:4] + [lines[1]] + lines[4:],
        "no metadata": lines[1:],
        "damaged metadata": [lines[0][:30] + "\n"] + lines[1:],
        "a row removed": lines[:3] + lines[4:],
        "a row repeated": lines + [lines[3]],
        "a value not a number": lines[:2] + [lines[2].replace('"\t"', '"\tx"', 1)] + lines[3:],
        "a column missing": lines[:2] + ["\t".join(lines[2].split("\t")[:-1]) + "\n"] + lines[3:],
        "a metric renamed": lines[:2] + [lines[2].replace('"ndcg@10"', '"ndcg@5"')] + lines[3:],
    }
    for name, content in variants.items():
        for sealed in (False, True):  # as damaged, and with the checksum line recomputed
            damaged = tmp_path / "damaged.tsv"
            damaged.write_bytes(_sealed("".join(content)) if sealed else "".join(content).encode())
            with pytest.raises(tieaware.InputError, match="damaged.tsv"):
                merge([damaged])
            assert main(["merge", str(damaged)]) == 2, name
            _one_error_line(capsys, "merge")


def _sealed(text: str) -> bytes:
    """A TSV table's text with its last line replaced by the checksum of the rest."""
    body = "".join(line for line in text.splitlines(keepends=True) if not line.startswith("#sha256")).encode()
    return body + f"#sha256\t{hashlib.sha256(body).hexdigest()}\n".encode()


@settings(**SETTINGS)
@given(suffix=st.sampled_from([".tsv", ".parquet"]), data=st.data())
def test_fuzzed_shard_tables_merge_exactly_or_are_refused(tmp_path_factory, suffix, data):
    """Any damage to a shard's table (bytes removed, inserted, changed, lines repeated): merge raises
    an InputError or gives exactly the numbers of the undamaged tables, never others."""
    folder = tmp_path_factory.mktemp("fuzz")
    paths = _shards(folder, suffix)
    whole = merge(paths)
    victim = paths[data.draw(st.integers(0, 1))]
    raw = bytearray(victim.read_bytes())
    for _ in range(data.draw(st.integers(1, 3))):
        at = data.draw(st.integers(0, len(raw) - 1))
        action = data.draw(st.sampled_from(["remove", "insert", "change", "repeat"]))
        if action == "remove":
            del raw[at:at + data.draw(st.integers(1, 8))]
        elif action == "insert":
            raw[at:at] = data.draw(st.binary(min_size=1, max_size=4))
        elif action == "change":
            raw[at] = data.draw(st.integers(0, 255).filter(lambda b, old=raw[at]: b != old))
        else:
            start = raw.rfind(b"\n", 0, at) + 1
            end = raw.find(b"\n", at)
            raw[start:start] = raw[start:end + 1 if end >= 0 else len(raw)]
    victim.write_bytes(bytes(raw))
    try:
        merged = merge(paths)
    except tieaware.InputError:
        return
    for name in METRICS:
        assert merged[name].per_query.to_numpy().tolist() == whole[name].per_query.to_numpy().tolist()
        assert list(merged[name].per_query.index) == list(whole[name].per_query.index)


_IDS = st.text(st.characters(exclude_categories=["Cs"]), max_size=6)


@settings(**SETTINGS)
@given(ids=st.lists(_IDS, min_size=2, max_size=6, unique=True), split=st.integers(1, 5),
       suffix=st.sampled_from([".tsv", ".parquet"]))
def test_any_query_ids_merge_into_the_whole_report(tmp_path_factory, ids, split, suffix):
    """Ids with tabs, \\r, \\n, quotes, '#', an empty id: the shards' tables read back exactly."""
    folder = tmp_path_factory.mktemp("ids")
    docs = list(RUN.values())
    run = {q: docs[i % 4] for i, q in enumerate(ids)}
    qrels = {q: QRELS[f"q{i % 4 + 1}"] for i, q in enumerate(ids)}
    split = min(split, len(ids) - 1)
    paths = []
    for i, shard in enumerate((ids[:split], ids[split:])):
        paths.append(folder / f"s{i}{suffix}")
        tieaware.evaluate({q: qrels[q] for q in shard}, {q: run[q] for q in shard}, METRICS, per_query_out=paths[-1])
    merged, whole = merge(paths), tieaware.evaluate(qrels, run, METRICS)
    for name in METRICS:
        assert list(merged[name].per_query.index) == ids
        assert merged[name].per_query.to_numpy().tolist() == whole[name].per_query.to_numpy().tolist()
        assert float(merged[name]) == float(whole[name])


def test_cli_merge_prints_the_whole_report(tmp_path, capsys):
    paths = _shards(tmp_path)
    assert main(["merge", *map(str, paths), "-o", "json"]) == 0
    rows = {row["metric"]: row for row in json.loads(capsys.readouterr().out)}
    whole = tieaware.evaluate(QRELS, RUN, METRICS)
    assert {name: rows[name]["expected"] for name in METRICS} == {name: float(whole[name]) for name in METRICS}


# ------------------------------------------------------------ output files
def _files(tmp_path):
    qrels, run = tmp_path / "qrels.txt", tmp_path / "run.txt"
    qrels.write_text("".join(f"{q} 0 {d} {g}\n" for q, docs in QRELS.items() for d, g in docs.items()))
    run.write_text("".join(f"{q} Q0 {d} 1 {s!r} tag\n" for q, docs in RUN.items() for d, s in docs.items()))
    return qrels, run


def _aliases(tmp_path, target):
    """Other names of the same file: relative, with '..', a symbolic link, a hard link."""
    link, hard = tmp_path / "link.txt", tmp_path / "hard.txt"
    link.symlink_to(target)
    hard.hardlink_to(target)
    return [str(target), target.name, str(tmp_path / "sub" / ".." / target.name), str(link), str(hard)]


@pytest.mark.parametrize("stream", [[], ["--stream", "2"]])
def test_an_output_that_is_an_input_is_refused_before_reading(tmp_path, capsys, monkeypatch, stream):
    qrels, run = _files(tmp_path)
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path)
    before = {path: path.read_bytes() for path in (qrels, run)}
    for target in (run, qrels):
        for alias in _aliases(tmp_path, target):
            assert main(["eval", str(qrels), str(run), "-m", "ndcg@10", *stream, "--per-query-out", alias]) == 2
            assert "would be overwritten" in _one_error_line(capsys, "eval")
            with pytest.raises(tieaware.InputError, match="would be overwritten"):
                tieaware.evaluate(str(qrels), str(run), "ndcg@10", per_query_out=alias, stream=bool(stream))
            assert main(["plot", str(qrels), str(run), "-k", "5", "--out", alias]) == 2
            _one_error_line(capsys, "plot")
            assert main(["compare", str(qrels), str(run), "-m", "ndcg@5", "--plot", alias]) == 2
            _one_error_line(capsys, "compare")
        for path in (tmp_path / "link.txt", tmp_path / "hard.txt"):
            path.unlink()
    assert {path: path.read_bytes() for path in (qrels, run)} == before


def test_a_failed_streamed_evaluation_leaves_no_table(tmp_path, capsys):
    qrels, run = _files(tmp_path)
    with run.open("a") as handle:
        handle.write("q4 Q0 d7 1 not-a-number tag\n")  # the last chunk fails
    table = tmp_path / "out.tsv"
    assert main(["eval", str(qrels), str(run), "-m", "ndcg@10", "--stream", "1", "--per-query-out", str(table)]) == 2
    _one_error_line(capsys, "eval")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["qrels.txt", "run.txt"]


@pytest.mark.parametrize("suffix", [".tsv", ".parquet"])
def test_a_writer_failing_part_way_leaves_the_old_file_or_none(tmp_path, monkeypatch, suffix):
    import pandas as pd
    import pyarrow.parquet as pq

    def fail_part_way(self_or_table, where, *args, **kwargs):
        if hasattr(where, "write"):
            where.write("partial")
        else:
            Path(where).write_text("partial")
        raise OSError("disk full")

    monkeypatch.setattr(pd.DataFrame, "to_csv", fail_part_way)
    monkeypatch.setattr(pq, "write_table", fail_part_way)
    table = tmp_path / f"out{suffix}"
    for existing in (None, b"an older complete table"):
        if existing:
            table.write_bytes(existing)
        with pytest.raises(OSError, match="disk full"):
            tieaware.evaluate(QRELS, RUN, METRICS, per_query_out=table)
        assert [p.name for p in tmp_path.iterdir()] == ([table.name] if existing else [])
        assert not existing or table.read_bytes() == existing


# ------------------------------------------------------------ a query named all
def _all_files(tmp_path, tied_all: bool):
    """Query 'all' plus four tie-free queries; 'all' alone has a tie across relevance (P@1 range 1)
    when ``tied_all``, else only q1 has it."""
    qrels, run = tmp_path / "qrels.txt", tmp_path / "run.txt"
    queries = ["all", "q1", "q2", "q3", "q4"]
    qrels.write_text("".join(f"{q} 0 rel 1\n" for q in queries))
    tied = "all" if tied_all else "q1"
    run.write_text("".join(f"{q} Q0 rel 1 1.0 t\n{q} Q0 other 2 {1.0 if q == tied else 0.5} t\n" for q in queries))
    return qrels, run


@pytest.mark.parametrize("tied_all", [True, False])
def test_a_query_named_all_keeps_its_line_and_its_own_range(tmp_path, capsys, tied_all):
    qrels, run = _all_files(tmp_path, tied_all)
    # the mean's range is 1/5 either way: above 0.1, below 0.5
    assert main(["eval", str(qrels), str(run), "-m", "P@1", "-q", "--fail-range-above", "0.5"]) == 0
    assert main(["eval", str(qrels), str(run), "-m", "P@1", "-q", "--fail-range-above", "0.1"]) == 1
    capsys.readouterr()
    assert main(["eval", str(qrels), str(run), "-m", "P@1", "-q", "-o", "trec"]) == 0
    lines = [line.split("\t") for line in capsys.readouterr().out.splitlines()]
    assert [(q, float(v)) for _, q, v in lines] == \
        [("all", 0.5 if tied_all else 1.0), ("q1", 0.5 if not tied_all else 1.0), ("q2", 1.0), ("q3", 1.0),
         ("q4", 1.0), ("all", 0.9)]
    for fmt in ("json", "tsv", "csv", "table"):
        assert main(["eval", str(qrels), str(run), "-m", "P@1", "-q", "-o", fmt]) == 0
        out = capsys.readouterr().out
        if fmt == "json":
            rows = json.loads(out)
            assert [row["query"] for row in rows] == ["all", "q1", "q2", "q3", "q4", None]
            assert rows[-1]["expected"] == pytest.approx(0.9) and rows[0]["expected"] == (0.5 if tied_all else 1.0)
        else:
            assert len(out.splitlines()) == 7


# ------------------------------------------------------------ plot formats
@pytest.mark.parametrize("name", ["x.xyz", "x.png.bak", "x.PNGX", "x.jpg2"])
def test_an_unknown_image_format_is_refused_before_any_work(tmp_path, capsys, monkeypatch, name):
    import tieaware.comparison

    qrels, run = _files(tmp_path)
    out = tmp_path / name

    def no_evaluation(*args, **kwargs):
        raise AssertionError("evaluated before the image format was checked")

    monkeypatch.setattr(tieaware.comparison, "compare_at_k", no_evaluation)
    monkeypatch.setattr(tieaware.comparison, "evaluate", no_evaluation)
    assert main(["plot", str(qrels), str(run), "-k", "5", "--out", str(out)]) == 2
    assert "matplotlib writes no" in _one_error_line(capsys, "plot")
    assert main(["compare", str(qrels), str(run), "-m", "ndcg@5", "--plot", str(out)]) == 2
    _one_error_line(capsys, "compare")
    with pytest.raises(tieaware.InputError, match="matplotlib writes no"):
        tieaware.comparison.plot_at_k(QRELS, {"a": RUN}, "ndcg", [5], out)
    assert not out.exists()


@pytest.mark.parametrize("name", ["x.png", "x.SVG", "x.pdf", "x"])
def test_known_image_formats_are_written(tmp_path, capsys, name):
    qrels, run = _files(tmp_path)
    assert main(["plot", str(qrels), str(run), "-k", "1,5", "--out", str(tmp_path / name)]) == 0
    assert (tmp_path / name).stat().st_size > 0
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


# ------------------------------------------------------------ strict JSON
def _strict(text: str):
    def refuse(constant):
        raise ValueError(f"not JSON: {constant}")

    return json.loads(text, parse_constant=refuse)


def test_json_outputs_write_null_for_nan(tmp_path, capsys):
    with pytest.warns(RuntimeWarning, match="No queries"):
        empty = tieaware.evaluate({}, {}, METRICS)
    rows = _strict(empty.to_json())
    assert [row["expected"] for row in rows] == [None] * len(METRICS)
    assert rows[0]["n_queries"] == 0
    same = {"a": RUN, "b": dict(RUN)}  # identical runs: no test statistic, a NaN p-value
    report = tieaware.compare(QRELS, same, ["ndcg@10"], max_p=0.05)
    text = report.to_json()
    assert "NaN" in json.dumps(report.to_dict())  # the case this test is about occurs
    _strict(text)
    report.save(tmp_path / "report.json")
    _strict((tmp_path / "report.json").read_text())
    qrels, run = _files(tmp_path)
    other = tmp_path / "other.txt"
    other.write_bytes(run.read_bytes())
    assert main(["compare", str(qrels), str(run), str(other), "-m", "ndcg@10", "-o", "json"]) == 0
    _strict(capsys.readouterr().out)


# ------------------------------------------------------------ lone surrogates
@settings(**SETTINGS)
@given(ids=st.lists(st.text(st.sampled_from(["a", "\t", "\udcff", "\ud800", "é", "\U0001f600"]), min_size=1,
                            max_size=4), min_size=1, max_size=5, unique=True))
def test_ids_utf8_cannot_encode_are_kept_in_memory_and_refused_by_files(tmp_path_factory, ids):
    folder = tmp_path_factory.mktemp("surrogates")
    docs = list(RUN.values())
    run = {q: docs[i % 4] for i, q in enumerate(ids)}
    qrels = {q: QRELS[f"q{i % 4 + 1}"] for i, q in enumerate(ids)}
    report = tieaware.evaluate(qrels, run, METRICS)
    assert list(report["ndcg@10"].per_query.index) == ids
    assert list(report.per_query().index) == [(name, q) for name in METRICS for q in ids]
    bad = [q for q in ids if any("\ud800" <= c <= "\udfff" for c in q)]
    for suffix in (".tsv", ".parquet"):
        table = folder / f"t{suffix}"
        if bad:
            with pytest.raises(tieaware.InputError, match="lone surrogate") as error:
                tieaware.evaluate(qrels, run, METRICS, per_query_out=table)
            assert repr(bad[0]) in str(error.value)
            assert list(folder.iterdir()) == []
        else:
            tieaware.evaluate(qrels, run, METRICS, per_query_out=table)
            assert list(merge([table])["mrr"].per_query.index) == ids
            table.unlink()


def test_cli_refuses_lone_surrogate_ids_with_one_line(tmp_path, capsys):
    """A JSON run may spell a lone surrogate (\\udcff); evaluating its means prints no id."""
    qrels, run = tmp_path / "qrels.json", tmp_path / "run.json"
    qrels.write_text('{"a\\udcff": {"d1": 1}, "b": {"d1": 1}}')
    run.write_text('{"a\\udcff": {"d1": 1.0, "d2": 1.0}, "b": {"d1": 2.0}}')
    assert main(["eval", str(qrels), str(run), "-m", "mrr", "-o", "json"]) == 0
    assert _strict(capsys.readouterr().out)[0]["expected"] == 0.875
    for args in (["-q"], ["-q", "-o", "trec"], ["-q", "-o", "json"], ["--per-query-out", str(tmp_path / "t.tsv")]):
        assert main(["eval", str(qrels), str(run), "-m", "mrr", *args]) == 2
        assert "'a\\udcff'" in _one_error_line(capsys, "eval")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["qrels.json", "run.json"]


# ------------------------------------------------------------ an empty streamed run
@pytest.mark.parametrize("content", [b"", b"\n\n", b"# a comment only\n", "gzip"])
@pytest.mark.parametrize("make_comparable", [False, True])
def test_an_empty_run_is_refused_streamed_as_in_memory(tmp_path, capsys, content, make_comparable):
    import gzip

    qrels, _ = _files(tmp_path)
    run = tmp_path / ("empty.gz" if content == "gzip" else "empty.txt")
    run.write_bytes(gzip.compress(b"") if content == "gzip" else content)
    errors = []
    for stream in (False, True, 2):
        with pytest.raises(tieaware.InputError) as error:
            tieaware.evaluate(QRELS, str(run), METRICS, make_comparable=make_comparable, stream=stream)
        errors.append(str(error.value))
    assert errors == [errors[0]] * 3 and "holds no run lines" in errors[0]
    assert main(["eval", str(qrels), str(run), "-m", "mrr", "--stream", *(["-c"] if make_comparable else [])]) == 2
    assert "holds no run lines" in _one_error_line(capsys, "eval")


def test_score_refuses_an_output_that_is_an_input(tmp_path, capsys):
    queries, corpus = tmp_path / "queries.tsv", tmp_path / "corpus.tsv"
    queries.write_text("q1\thello\n")
    corpus.write_text("d1\tworld\n")
    before = queries.read_bytes()
    assert main(["score", str(tmp_path / "no-model"), "--queries", str(queries), "--corpus", str(corpus),
                 "--out", str(queries)]) == 2
    assert "would be overwritten" in _one_error_line(capsys, "score")
    assert queries.read_bytes() == before
