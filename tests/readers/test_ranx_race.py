"""A ranx Run changed by another thread while `tieaware.evaluate` reads it: the numbers may change,
the process never crashes (`tieaware.readers.typed_dicts` copies a typed dict in one kernel holding the
GIL, and everything after reads the copy)."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tieaware
from tieaware.readers import typed_dicts

ranx = pytest.importorskip("ranx")
METRICS = ["ndcg@10", "map", "mrr"]


def _objects(n_queries=40, n_docs=60, seed=0):
    rng = np.random.default_rng(seed)
    qrels = {f"q{i}": {f"d{j}": int(rng.integers(0, 3)) for j in range(0, n_docs, 3)} for i in range(n_queries)}
    run = {f"q{i}": {f"d{j}": float(rng.integers(0, 8)) for j in range(n_docs)} for i in range(n_queries)}
    return ranx.Qrels(qrels), ranx.Run(run)


def test_a_thread_changing_the_run_never_crashes_the_process():
    """The reported program: one thread in evaluate(Qrels, Run), another in Run.add_score on the same Run
    (it aborted with "double free or corruption"). Doc ids stay within the Run's id width, so each
    add_score grows a query's dict."""
    program = textwrap.dedent("""
        import sys, threading, time
        import numpy as np
        import ranx, tieaware
        rng = np.random.default_rng(0)
        qrels = {f"q{i}": {f"d{j}": int(rng.integers(0, 3)) for j in range(0, 200, 7)} for i in range(200)}
        run = ranx.Run({f"q{i}": {f"d{j}": float(rng.integers(0, 20)) for j in range(200)} for i in range(200)})
        qrels = ranx.Qrels(qrels)
        stop = False

        def mutate():
            k = 0
            while not stop:
                run.add_score(f"q{k % 3}", np.base_repr(k % 1_000_000, 36).lower(), float(k % 5))
                k += 1

        thread = threading.Thread(target=mutate)
        thread.start()
        calls, end = 0, time.monotonic() + 4
        try:
            while time.monotonic() < end or calls < 3:
                for order in ("trec_eval", "ranx"):
                    tieaware.evaluate(qrels, run, ["ndcg@10", "map"], oblivious=order)
                calls += 1
        finally:
            stop = True
            thread.join()
        print("calls", calls)
    """)
    env = {**os.environ, "PYTHONFAULTHANDLER": "1"}
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "calls" in done.stdout


def test_what_is_read_is_the_copy_taken_at_once(monkeypatch):
    """The Run changes right after its copy is taken (as another thread's add_score could): the result
    is that of the Run before the change, every tie order included; the next call sees the change."""
    qrels, run = _objects()
    before = ranx.Run(run.to_dict())
    real_copy = typed_dicts.copied_items

    def copy_then_change(td):
        items = real_copy(td)
        if td is run.run:
            for j in range(200):  # q0 outgrows every query
                run.add_score("q0", f"x{j}", float(j % 7))
            run.add_score("q1", "d0", 99.0)
        return items

    monkeypatch.setattr(typed_dicts, "copied_items", copy_then_change)
    metrics = METRICS + ["P@5"]
    got = tieaware.evaluate(qrels, run, metrics, make_comparable=True, oblivious="ranx")
    monkeypatch.undo()
    after = tieaware.evaluate(qrels, run, metrics, make_comparable=True, oblivious="ranx")
    for current, want in ((got, tieaware.evaluate(qrels, before, metrics, make_comparable=True, oblivious="ranx")),
                          (after, tieaware.evaluate(qrels, ranx.Run(run.to_dict()), metrics, make_comparable=True,
                                                    oblivious="ranx"))):
        for name in want:
            assert current[name].per_query.equals(want[name].per_query), name
    assert any(not got[name].per_query.equals(after[name].per_query) for name in metrics)


def test_typed_dict_readers_hold_the_gil():
    """No typed-dict reader releases the GIL (what let another thread free a dict being read)."""
    for name in ("_items", "without_own_ids"):
        assert not getattr(typed_dicts, name).targetoptions.get("nogil", False), name
