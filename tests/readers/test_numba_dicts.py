"""ranx objects read through numba's C layout of typed dicts (`tieaware.kernels.numba_dicts.read_dict`):
the same arrays as the dicts they were built from, bit for bit those of the reader through numba's API
(`typed_dicts._items`), one compiled kernel for every id width, a clear fallback on another layout,
and the GIL held while it reads."""
import os
import threading
import time
import warnings

import numpy as np
import pytest
from numba import types
from numba.typed import Dict

import tieaware
from tieaware.kernels import backend
from tieaware.kernels.numba_dicts import read_dict
from tieaware.readers import typed_dicts

ranx = pytest.importorskip("ranx")
FORCED_JIT = os.environ.get(backend.FORCE_JIT_VARIABLE, "") not in ("", "0")
IDS = ["d", "doc-7", "é", "ǅx", "日本語", "𝄞", "a𝄞b", "z" * 40]  # 1-, 2- and 4-byte kinds, long ids
LONGEST = "z" * 42  # in every ranx object here: ranx compiles its constructors per longest doc id (seconds each)


def _expected(source: dict) -> tuple:
    """What `copied_items` must give for the dict of dicts a typed dict was built from, in its order."""
    query_ids = list(source)
    offsets = np.cumsum([0] + [len(docs) for docs in source.values()])
    ids = [doc for docs in source.values() for doc in docs]
    values = np.array([float(v) for docs in source.values() for v in docs.values()])
    return query_ids, offsets, ids, values


def _assert_copy_is(copy: typed_dicts.TypedDictCopy, source: dict) -> None:
    query_ids, offsets, ids, values = _expected(source)
    assert copy.query_ids == query_ids
    assert np.array_equal(copy.offsets, offsets)
    assert [copy.doc_id(i) for i in range(len(ids))] == ids
    assert copy.values.tobytes() == values.tobytes()


def _random_source(rng, n_queries: int, grades: bool) -> dict:
    source = {}
    for q in range(n_queries):
        qid = f"q{q}{IDS[q % len(IDS)]}"
        n = int(rng.integers(0, 12))
        docs = rng.choice(len(IDS) * 4, size=n, replace=False)
        value = (lambda: int(rng.integers(-1, 4))) if grades else (lambda: float(rng.integers(0, 5)) / 4)
        source[qid] = {f"{IDS[d % len(IDS)]}{d}": value() for d in docs} | {LONGEST: value()}
    return source


@pytest.mark.parametrize("seed", range(4))
def test_ranx_objects_are_read_as_the_dicts_they_were_built_from(seed):
    rng = np.random.default_rng(seed)
    run_source, qrels_source = _random_source(rng, 9, False), _random_source(rng, 9, True)
    run, qrels = ranx.Run(run_source), ranx.Qrels(qrels_source)
    for table, source in ((run.run, run.to_dict()), (qrels.qrels, qrels.to_dict())):
        assert typed_dicts._layout(table)[1] == max(len(d) for docs in source.values() for d in docs)
        _assert_copy_is(typed_dicts.copied_items(table), source)


def _typed(source: dict, value_type) -> Dict:
    """A typed dict of str -> (str -> value), doc ids of numba's str type (any length)."""
    inner_type = types.DictType(types.unicode_type, value_type)
    table = Dict.empty(key_type=types.unicode_type, value_type=inner_type)
    for qid, docs in source.items():
        inner = Dict.empty(key_type=types.unicode_type, value_type=value_type)
        for doc, value in docs.items():
            inner[doc] = value
        table[qid] = inner
    return table


def test_str_doc_ids_and_deleted_entries_are_read():
    """Doc ids of numba's str type (48-byte structs, code points of 1, 2 or 4 bytes), and entries
    deleted from both levels (numba marks them, the reader skips them), an emptied query kept."""
    source = {f"q{k}{qid}": {f"{doc}{i}": float(i) / 3 for i, doc in enumerate(IDS[k:] + IDS[:k])}
              for k, qid in enumerate(IDS)}
    table = _typed(source, types.float64)
    assert typed_dicts._layout(table)[1:] == (0, False)
    for qid in list(source)[::3]:
        for doc in list(source[qid])[1::2]:
            table[qid].pop(doc)
            source[qid].pop(doc)
    del table[list(source)[1]]
    del source[list(source)[1]]
    last = list(source)[-1]
    for doc in list(source[last]):
        table[last].pop(doc)
        source[last].pop(doc)
    _assert_copy_is(typed_dicts.copied_items(table), source)
    empty = _typed({}, types.float64)
    _assert_copy_is(typed_dicts.copied_items(empty), {})


@pytest.mark.slow
def test_the_layout_reader_equals_the_api_reader_bit_for_bit():
    """`read_dict` and `_items` (numba's API, compiled per dict type) give the same arrays and the same
    fingerprint, with and without the copy: int grades and float scores, fixed-width and str ids."""
    rng = np.random.default_rng(11)
    qrels = ranx.Qrels(_random_source(rng, 7, True))
    str_ids = _typed(_random_source(rng, 7, False), types.float64)
    for table in (qrels.qrels, str_ids):
        for copy in (True, False):
            ours, theirs = typed_dicts._read(table, copy), typed_dicts._items(table, typed_dicts.SEED, copy)
            assert len(ours) == len(theirs) == 8
            for a, b in zip(ours, theirs):
                a, b = np.asarray(a), np.asarray(b)
                assert a.dtype == b.dtype and a.tobytes() == b.tobytes()


def test_one_kernel_compiled_ahead_of_time_reads_every_id_width(monkeypatch):
    """Runs and Qrels of several id widths are read by the compiled `read_dict`: nothing goes to
    numba's JIT (which would compile a reader per width), and `evaluate` equals it on plain dicts."""
    if FORCED_JIT:
        assert backend.served_by(read_dict, 0, 3, False, typed_dicts.SEED, True) == "jit"
        return

    def no_jit(self):
        raise AssertionError(f"{self.qualified} went to the JIT")

    pairs = [({"q1": {"d" * width: 1, "e": 0}}, {"q1": {"d" * width: 0.5, "e": 0.5, "f" * (width - 1): 0.25}})
             for width in (5, len(LONGEST))]
    expected = [tieaware.evaluate(q, r, ["ndcg@2", "map"]) for q, r in pairs]
    objects = [(ranx.Qrels(q), ranx.Run(r)) for q, r in pairs]
    monkeypatch.setattr(backend.Kernel, "jitted", no_jit)
    for (qrels, run), want in zip(objects, expected):
        got = tieaware.evaluate(qrels, run, ["ndcg@2", "map"])
        for metric in ("ndcg@2", "map"):
            assert got[metric].per_query_values("expected").tobytes() == \
                want[metric].per_query_values("expected").tobytes()


def test_another_layout_falls_back_to_numba_api_with_one_warning(monkeypatch):
    """Where the memory is not laid out as `read_dict` reads it (here: told a wrong id width, so its
    key size check fails), it writes nothing and says so; `copied_items` then reads through numba's
    API, warning once a process."""
    run = ranx.Run({"q1": {"d1": 0.5, "d22": 0.25}, "q2": {"x": 1.0}})
    address, width, integer = typed_dicts._layout(run.run)
    status, *arrays = read_dict(address, width + 1, integer, typed_dicts.SEED, True)
    assert status == 1 and all(array.size == 0 for array in arrays[1:])
    monkeypatch.setattr(typed_dicts, "_layout", lambda table: (address, width + 1, integer))
    monkeypatch.setattr(typed_dicts, "_layout_warned", False)
    with pytest.warns(RuntimeWarning, match="lays out typed dicts otherwise"):
        _assert_copy_is(typed_dicts.copied_items(run.run), run.to_dict())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert typed_dicts.fingerprint(run.run) == typed_dicts.copied_items(run.run).fingerprint


def test_other_dict_types_go_to_the_api_reader():
    """Dicts whose types are not ranx's (float32 values, int keys) have no layout to read here."""
    assert typed_dicts._layout(_typed({"q": {"d": np.float32(1.0)}}, types.float32)) is None
    table = Dict.empty(key_type=types.int64, value_type=types.DictType(types.unicode_type, types.float64))
    assert typed_dicts._layout(table) is None
    assert typed_dicts._layout({"q": {"d": 1.0}}) is None


def _longest_pause(call) -> float:
    """The longest pause of a busy Python thread while `call` runs, as a share of its run: near 1 for a
    call holding the GIL (the thread runs only before and after it), a few switch intervals
    (`sys.getswitchinterval`) of the run for one that releases it."""
    stamps: list[float] = []
    stop = threading.Event()

    def busy():
        while not stop.is_set():
            stamps.append(time.perf_counter())

    thread = threading.Thread(target=busy)
    thread.start()
    try:
        time.sleep(0.02)
        start = time.perf_counter()
        call()
        end = time.perf_counter()
    finally:
        stop.set()
        thread.join()
    during = [start] + [t for t in stamps if start < t < end] + [end]
    return float(max(np.diff(during)) / (end - start))


@pytest.mark.skipif(FORCED_JIT, reason="the compiled kernel's GIL: the module is switched off")
def test_the_compiled_reader_holds_the_gil():
    """No Python code runs on another thread while `read_dict` reads (so none can change the dict): a
    busy thread pauses for most of the read (best of three, as the machine's load can delay either
    thread around it), where a kernel releasing the GIL pauses it for a small share of its run."""
    from tieaware.kernels.groups import argsort_segments

    rng = np.random.default_rng(0)
    run = ranx.Run({f"q{i}": {f"{LONGEST[:-3]}{j:03d}": float(rng.integers(0, 9)) for j in range(1000)}
                    for i in range(600)})
    layout = typed_dicts._layout(run.run)
    assert max(_longest_pause(lambda: read_dict(*layout, typed_dicts.SEED, True)) for _ in range(3)) > 0.6
    keys = rng.random(600_000)
    offsets = np.array([0, keys.size])
    assert min(_longest_pause(lambda: argsort_segments(keys, offsets)) for _ in range(3)) < 0.6
