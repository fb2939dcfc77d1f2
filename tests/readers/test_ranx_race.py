"""A ranx Run changed by another thread while `tieaware.evaluate` reads it: the numbers may change,
the process never crashes (`tieaware.readers.typed_dicts` holds the GIL on typed dicts; a Run changed between
two kernels is read again from a copy taken at once, `typed_dicts.frozen`)."""
import copy
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
                    try:
                        tieaware.evaluate(qrels, run, ["ndcg@10", "map"], oblivious=order)
                    except tieaware.TieawareError as error:  # the Run changed under a later, lazy read
                        assert "changed while tieaware read it" in str(error), error
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


def test_a_run_changed_between_two_kernels_is_read_from_a_copy(monkeypatch):
    """The sizes are read, then the Run grows (as another thread's add_score would do between two
    kernels): the result is that of the Run as it is after the change, read from a frozen copy."""
    qrels, run = _objects()
    # compiled first: kernels that call run_sizes (qrels_arrays) could not call the Python stand-in
    tieaware.evaluate(qrels, ranx.Run(run.to_dict()), METRICS, make_comparable=True)
    real_sizes = typed_dicts.run_sizes
    grown = []

    def sizes_then_change(td, query_ids):
        offsets = real_sizes(td, query_ids)
        if td is run.run and not grown:
            for j in range(200):  # q0 outgrows every query: the old sizes would write past the arrays
                run.add_score("q0", f"x{j}", float(j % 7))
            run.add_score("q1", "d0", 99.0)
            grown.append(True)
        return offsets

    monkeypatch.setattr(typed_dicts, "run_sizes", sizes_then_change)
    got = tieaware.evaluate(qrels, run, METRICS + ["P@5"], make_comparable=True, oblivious="ranx")
    monkeypatch.undo()
    assert grown
    want = tieaware.evaluate(qrels, ranx.Run(run.to_dict()), METRICS + ["P@5"], make_comparable=True,
                             oblivious="ranx")
    for name in want:
        assert got[name].per_query.equals(want[name].per_query), name


def test_frozen_is_a_copy_taken_at_once():
    qrels, run = _objects()
    frozen_run, frozen_qrels = typed_dicts.frozen(run), typed_dicts.frozen(qrels)
    before = tieaware.evaluate(qrels, copy.copy(run), METRICS)
    run.add_score("q0", "d1", 100.0)
    qrels.add_score("q0", "d1", 2)
    assert frozen_run.run is not run.run and frozen_run.run["q0"]["d1"] != 100.0
    after = tieaware.evaluate(frozen_qrels, frozen_run, METRICS)
    for name in METRICS:
        assert after[name].per_query.equals(before[name].per_query)
    assert isinstance(frozen_run, ranx.Run) and frozen_run.name == run.name


def test_typed_dict_readers_hold_the_gil():
    """No typed-dict reader releases the GIL (what let another thread free a dict being read)."""
    for name in ("run_chunk", "_hashed_items", "run_sizes", "_scores", "qrels_arrays", "keys_and_sizes"):
        assert not getattr(typed_dicts, name).targetoptions.get("nogil", False), name
