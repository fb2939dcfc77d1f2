"""The kernels compiled ahead of time (`tieaware.kernels.backend`, `ahead_of_time`): built by the install,
refused when stale, equal bit for bit to numba's JIT, and never handed argument types they were not
compiled for."""
import importlib
import os
import warnings

import numpy as np
import pytest

import tieaware
from tieaware.kernels import backend
from tieaware.kernels.ahead_of_time import SIGNATURES
from tieaware.kernels.groups import argsort_segments

FORCED_JIT = os.environ.get(backend.FORCE_JIT_VARIABLE, "") not in ("", "0")
METRICS = ["ndcg@10", "ndcg_cut.5", "mrr@10", "map", "map@5", "recall@10", "precision@3", "r-precision", "f1@5",
           "bpref", "ERR@10", "hit_rate@3", "rbp.8", "Judged@5", "dcg_burges@10", "set_P", "num_rel_ret"]


def test_the_install_built_the_compiled_kernels_and_they_serve():
    if FORCED_JIT:
        assert backend.COMPILED is None and backend.COMPILED_NOTE.startswith(backend.FORCE_JIT_VARIABLE)
    else:
        assert backend.COMPILED_NOTE == "" and backend.COMPILED is not None


def test_every_declared_signature_is_in_the_module():
    module = importlib.import_module("tieaware.kernels._compiled")
    assert hasattr(module, f"digest_{backend.sources_digest()}")
    for qualified, signatures in SIGNATURES.items():
        kernel_module, name = qualified.rsplit(".", 1)
        kernel = getattr(importlib.import_module(f"tieaware.kernels.{kernel_module}"), name)
        for arguments in signatures:
            assert hasattr(module, backend.export_name(kernel.qualified, arguments)), (qualified, arguments)


def test_a_module_built_from_other_sources_is_refused(monkeypatch):
    monkeypatch.delenv(backend.FORCE_JIT_VARIABLE, raising=False)
    monkeypatch.setattr(backend, "sources_digest", lambda: "0123456789abcdef")
    module, note = backend._load_compiled()
    assert module is None and "other sources" in note


def test_the_switch_forces_the_jit(monkeypatch):
    monkeypatch.setenv(backend.FORCE_JIT_VARIABLE, "1")
    module, note = backend._load_compiled()
    assert module is None and note.startswith(f"{backend.FORCE_JIT_VARIABLE}=1")


@pytest.mark.skipif(FORCED_JIT, reason="compares the compiled module with the JIT: the module is switched off")
@pytest.mark.parametrize("bad", ["float32", "strided", "byteswapped", "int32 offsets", "python list"])
def test_argument_types_the_module_lacks_go_to_the_jit(bad):
    """pycc's functions do not check their arguments' types (a float32 array read as float64 is garbage,
    or a crash): `backend.type_key` sends every other type to the JIT, which converts or refuses it."""
    keys, offsets = np.array([0.5, 0.5, 0.25, 0.75, 0.125]), np.array([0, 3, 5])
    expected = argsort_segments(keys, offsets)
    assert backend.served_by(argsort_segments, keys, offsets) == "compiled"
    args = {"float32": (keys.astype(np.float32), offsets),
            "strided": (np.repeat(keys, 2)[::2], offsets),
            "byteswapped": (keys.astype(">f8"), offsets),
            "int32 offsets": (keys, offsets.astype(np.int32)),
            "python list": (keys, [0, 3, 5])}[bad]
    assert backend.served_by(argsort_segments, *args) == "jit"
    if bad in ("python list", "byteswapped"):
        with pytest.raises(Exception, match="reflected list|>f8"):  # numba refuses them: nothing reads garbage
            argsort_segments(*args)
    else:
        assert np.array_equal(argsort_segments(*args), expected)


def _random_pair(rng, n_queries=12):
    qrels, run = {}, {}
    for q in range(n_queries):
        docs = [f"d{i}" for i in range(int(rng.integers(1, 40)))]
        run[f"q{q}"] = {d: float(rng.integers(0, 6)) / 4 for d in docs}  # a coarse grid: many ties
        judged = rng.choice(len(docs) + 5, size=int(rng.integers(1, len(docs) + 5)), replace=False)
        qrels[f"q{q}"] = {f"d{i}": int(rng.integers(-1, 4)) for i in judged}
    return qrels, run


@pytest.mark.skipif(FORCED_JIT, reason="compares the compiled module with the JIT: the module is switched off")
@pytest.mark.parametrize("oblivious", ["trec_eval", "ranx", "input", "ir_measures"])
def test_the_compiled_kernels_equal_the_jit_bit_for_bit(monkeypatch, tmp_path, oblivious):
    """The same Python functions, typed ahead of time or at the call: every statistic of every family,
    from dicts and from a TREC file, is the same double."""
    rng = np.random.default_rng(7)
    qrels, run = _random_pair(rng)
    path = tmp_path / "run.trec"
    path.write_text("".join(f"{q} Q0 {d} 0 {s!r} t\n" for q, docs in run.items() for d, s in docs.items()))

    def tables():
        out = []
        for source in (run, path):
            report = tieaware.evaluate(qrels, source, METRICS, oblivious=oblivious, make_comparable=True)
            out += [report[m].per_query_values(stat) for m in METRICS
                    for stat in ("expected", "variance", "min", "max", "oblivious")]
        return out

    def no_jit(self):
        raise AssertionError(f"{self.qualified} went to the JIT on an everyday path")

    with monkeypatch.context() as patch:
        patch.setattr(backend.Kernel, "jitted", no_jit)
        compiled = tables()
    monkeypatch.setattr(backend, "COMPILED", None)
    monkeypatch.setattr(backend, "_note_pending", False)
    jitted = tables()
    assert len(compiled) == len(jitted) == 2 * 5 * len(METRICS)
    for a, b in zip(compiled, jitted):
        assert a.tobytes() == b.tobytes()


def test_without_the_module_the_jit_serves_and_says_so_once(monkeypatch):
    """An install without a C compiler has no compiled module: the JIT serves every kernel, and the
    first kernel call of the process warns why, once."""
    real_import = importlib.import_module

    def no_compiled(name, *args):
        if name.endswith("._compiled"):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args)

    monkeypatch.delenv(backend.FORCE_JIT_VARIABLE, raising=False)
    monkeypatch.setattr(importlib, "import_module", no_compiled)
    module, note = backend._load_compiled()
    assert module is None and note.startswith("no kernels compiled ahead of time")
    monkeypatch.setattr(backend, "COMPILED", None)
    monkeypatch.setattr(backend, "COMPILED_NOTE", note)
    monkeypatch.setattr(backend, "_note_pending", True)
    keys, offsets = np.array([0.5, 0.5, 0.25]), np.array([0, 3])
    with pytest.warns(RuntimeWarning, match="no kernels compiled ahead of time"):
        first = argsort_segments(keys, offsets)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.array_equal(argsort_segments(keys, offsets), first)
