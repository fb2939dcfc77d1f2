"""Concurrent use and numba's global state: evaluate from several threads or processes gives
exactly the sequential results; tieaware never changes numba's configuration; `warmup`
fills numba's cache so that a second process compiles nothing."""
import io
import multiprocessing
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tieaware
from tieaware import cli
from tieaware.metrics import parse_metric
from tieaware.registry import FAMILIES

METRICS = ["ndcg@10", "mrr@10", "map@100", "recall@100", "precision@10", "bpref", "rbp.8", "hit_rate@5"]
ORDERS = ("trec_eval", "ranx", "input")

# the test data as source, so that subprocesses build exactly the same
DATA_SOURCE = textwrap.dedent("""
    import numpy as np

    def tied_data(n_queries=60, n_docs=80, seed=7):
        rng = np.random.default_rng(seed)
        qrels, run = {}, {}
        for q in range(n_queries):
            grades = rng.integers(-1, 4, n_docs)
            judged = rng.random(n_docs) < 0.4
            scores = np.round(0.1 * grades + rng.normal(0, 0.15, n_docs), 1)  # coarse: many ties
            run[f"q{q}"] = {f"d{i}": float(s) for i, s in enumerate(scores)}
            qrels[f"q{q}"] = {f"d{i}": int(g) for i, g in enumerate(grades) if judged[i]}
            qrels[f"q{q}"][f"u{q}"] = 1  # relevant, never retrieved
        return qrels, run
""")
_namespace: dict = {}
exec(DATA_SOURCE, _namespace)
tied_data = _namespace["tied_data"]


def _per_query(report) -> dict:
    return {name: result.per_query.to_numpy() for name, result in report.items()}


def _run_python(code: str, env: dict | None = None, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


def test_threads_after_importing_ranx_match_sequential_calls():
    """ranx sets numba's threading layer to workqueue, which aborts the process when parallel kernels
    are entered from two threads; tieaware runs its kernels on plain Python threads, never in numba's
    layer, so 4 threads x 50 calls, each reading its run on 4 threads (dicts: chunks of 500 documents
    read while the next is built; ranx objects: ranges of queries), give exactly the sequential
    results, one thread each (ranx objects order queries by id: rows compared by query id). In a
    subprocess, so that an abort cannot take pytest with it."""
    code = DATA_SOURCE + textwrap.dedent(f"""
        import threading
        import ranx  # (sets numba.config.THREADING_LAYER = "workqueue")
        import numpy as np
        import tieaware
        from tieaware import threads
        from tieaware.readers import lists

        lists.CHUNK_DOCS = 500
        METRICS, ORDERS = {METRICS!r}, {ORDERS!r}
        qrels, run = tied_data()
        expected = {{order: {{name: r.per_query.sort_index().to_numpy() for name, r in
                             tieaware.evaluate(qrels, run, METRICS, oblivious=order, threads=1).items()}}
                    for order in ORDERS}}
        threads.n_threads = lambda: 4  # after the one-thread reference
        failures = []

        def work(worker):
            for call in range(50):
                order = ORDERS[(worker + call) % len(ORDERS)]
                metrics = METRICS[call % 3::3]
                pair = (ranx.Qrels(qrels), ranx.Run(run)) if call % 2 else (qrels, run)
                try:
                    report = tieaware.evaluate(*pair, metrics, oblivious="trec_eval" if call % 2 else order)
                    for name in metrics:
                        want = expected["trec_eval" if call % 2 else order][name]
                        if not np.array_equal(report[name].per_query.sort_index().to_numpy(), want):
                            failures.append((worker, call, order, name))
                except Exception as exc:
                    failures.append((worker, call, repr(exc)))

        threads = [threading.Thread(target=work, args=(w,)) for w in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        print("failures", failures[:5], len(failures))
        assert not failures
        print("OK")
    """)
    done = _run_python(code)
    assert done.returncode == 0 and "OK" in done.stdout, done.stdout[-2000:] + done.stderr[-3000:]


def _evaluate_in_child(order: str) -> dict:
    qrels, run = tied_data()
    return _per_query(tieaware.evaluate(qrels, run, METRICS, oblivious=order))


def test_spawned_processes_match_this_process():
    qrels, run = tied_data()
    expected = [_per_query(tieaware.evaluate(qrels, run, METRICS, oblivious=order)) for order in ORDERS]
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        results = pool.map(_evaluate_in_child, ORDERS)
    for order, got, want in zip(ORDERS, results, expected):
        for name in METRICS:
            np.testing.assert_array_equal(got[name], want[name], err_msg=f"{name}, {order}")


@pytest.mark.parametrize("import_ranx", [False, True])
def test_numba_configuration_is_left_alone(import_ranx):
    code = DATA_SOURCE + textwrap.dedent(f"""
        import numba
        if {import_ranx}:
            import ranx  # noqa: F401
        layer, threads = numba.config.THREADING_LAYER, numba.config.NUMBA_NUM_THREADS
        import tieaware
        from tieaware.readers import lists
        lists.CHUNK_DOCS = 50  # threads even for this small run
        qrels, run = tied_data(n_queries=5)
        for order in ("trec_eval", "ranx", "input"):
            tieaware.evaluate(qrels, run, ["ndcg@10", "map", "bpref"], oblivious=order, threads=2)
        if {import_ranx}:
            tieaware.evaluate(ranx.Qrels(qrels), ranx.Run(run), ["ndcg@10", "map"], threads=2)
        tieaware.census(run)
        from numba.np.ufunc import parallel
        launched = getattr(parallel, "_is_initialized", False)  # numba's threading layer was started
        assert not launched, "tieaware started numba's threading layer"
        assert (numba.config.THREADING_LAYER, numba.config.NUMBA_NUM_THREADS) == (layer, threads)
        numba.set_num_threads(1)
        tieaware.evaluate(qrels, run, "ndcg@10", threads=2)
        assert numba.get_num_threads() == 1
        assert numba.config.THREADING_LAYER == layer
        print("OK", layer)
    """)
    done = _run_python(code)
    assert done.returncode == 0 and "OK" in done.stdout, done.stdout[-2000:] + done.stderr[-3000:]
    assert ("workqueue" in done.stdout) == import_ranx


def test_warmup_covers_every_family_and_reports_its_steps():
    assert all(parse_metric(f.warmup).family == name for name, f in FAMILIES.items())
    out = io.StringIO()
    summary = tieaware.warmup(file=out, ranx_id_lengths=[3])
    text = out.getvalue()
    assert set(summary) == {"steps", "seconds", "compiled", "loaded", "cache_dir", "ahead_of_time"}
    assert summary["seconds"] >= sum(summary["steps"].values()) - 1e-9
    for label in summary["steps"]:
        assert label in text
    assert "done in" in text and "ranx's tie order" in text and "tie census" in text and "TREC file reader" in text
    assert "ids of 3 characters" in text
    assert tieaware.warmup(verbose=False, ranx_id_lengths=[3])["compiled"] == 0  # everything is compiled now
    with pytest.raises(tieaware.InputError, match="positive"):
        tieaware.warmup(verbose=False, ranx_id_lengths=[0])


def test_warmup_command(capsys):
    assert cli.main(["warmup"]) == cli.EXIT_OK
    assert "done in" in capsys.readouterr().out


@pytest.mark.slow
def test_a_second_process_compiles_nothing(tmp_path):
    """Argument types are stable, so what one process compiled under the JIT, the next one loads from
    numba's cache: here the reader of ranx objects' typed dicts (`kernels.numba_dicts.read_dict`; the
    dict is built with numba's API, since ranx would compile its own constructors in the empty cache)."""
    code = ("from numba import types; from numba.typed import Dict; from tieaware.readers import typed_dicts as t\n"
            "inner = Dict.empty(types.unicode_type, types.float64); inner['d'] = 0.5\n"
            "table = Dict.empty(types.unicode_type, types.DictType(types.unicode_type, types.float64))\n"
            "table['q'] = inner\n"
            "assert t.copied_items(table).query_ids == ['q']\n"
            "print(sum(t.read_dict.jitted().stats.cache_misses.values()))")
    env = {"NUMBA_CACHE_DIR": str(tmp_path), "TIEAWARE_JIT": "1"}
    first = _run_python(code, env)
    assert first.returncode == 0, first.stderr[-3000:]
    assert first.stdout.split()[-1] == "1"
    second = _run_python(code, env)
    assert second.returncode == 0, second.stderr[-3000:]
    assert second.stdout.split()[-1] == "0", "the second process compiled again"


def test_pipelined_compiles_on_the_calling_thread_and_keeps_call_order():
    """numba compiles (or loads) a kernel in the thread that first calls it, and code loaded on a
    worker thread stays in that thread's malloc arena: `threads.pipelined` has a kernel the JIT
    serves compiled on the caller's thread before any worker calls it; results come back in the
    order of the calls."""
    import threading

    import numba

    from tieaware import threads
    from tieaware.kernels import kernel

    @kernel(nogil=True)
    def weighted_sum(values, weight):
        return (values * weight).sum()

    dispatcher_compile = numba.core.dispatcher.Dispatcher.compile
    compiled_on = []

    def recording(self, signature):
        if self is weighted_sum.dispatcher:
            compiled_on.append(threading.get_ident())
        return dispatcher_compile(self, signature)

    calls = [(np.arange(n, dtype=np.float64), float(n)) for n in (3, 1000, 10)]
    numba.core.dispatcher.Dispatcher.compile = recording
    try:
        results = list(threads.pipelined(weighted_sum, iter(calls), 2))
    finally:
        numba.core.dispatcher.Dispatcher.compile = dispatcher_compile
    assert compiled_on and compiled_on[0] == threading.get_ident()
    assert results == [float((values * weight).sum()) for values, weight in calls]


def test_submit_started_returns_once_the_worker_runs_the_call():
    """The dict reader's pipeline hands each chunk over only when the worker holds it (a worker
    waiting for the GIL behind the reading thread's C calls stalled up to 5 ms a chunk)."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from tieaware import threads

    release = threading.Event()

    def held(x):
        release.wait()
        return 2 * x

    with ThreadPoolExecutor(max_workers=1) as pool:
        future = threads.submit_started(pool, held, (21,))
        try:
            assert future.running()
        finally:
            release.set()
        assert future.result() == 42


@pytest.mark.parametrize("workers", [0, 1, 3])
def test_pipelined_hands_each_call_over_before_the_one_that_reuses_its_place(workers):
    """`threads.pipelined` yields results in call order; when call i's result is yielded, at most
    `workers` calls beyond it have been prepared (so memory holds `workers` + 1 chunks and call
    i + `workers` may take call i's scratch), and all of them while the earlier calls ran."""
    from tieaware import threads
    from tieaware.kernels import kernel

    @kernel(nogil=True)
    def square(x):
        return x * x

    prepared = []

    def calls():
        for i in range(8):
            prepared.append(i)
            yield (np.int64(i),)

    seen = []
    for i, result in enumerate(threads.pipelined(square, calls(), workers)):
        assert len(prepared) == min(i + workers + 1, 8), (i, len(prepared))
        seen.append(int(result))
    assert seen == [i * i for i in range(8)]
