"""`warmup`: compile every tieaware kernel once into numba's on-disk cache (module `warming`, so
that it does not shadow the function `tieaware.warmup`).

The first `tieaware.evaluate` on a machine compiles the numba kernels it needs
(a few seconds) and caches them on disk; later processes load them (well under a
second). A CI image or a container can pay that once at build time with
``tieaware warmup`` (or ``python -c "import tieaware; tieaware.warmup()"``), run
as the user and with the ``NUMBA_CACHE_DIR`` the tests will have.

Readers of ranx ``Run``/``Qrels`` objects (`tieaware.readers.typed_dicts`) are left out:
numba specialises them on the width of each run's document ids, so they compile
on first use with the real data.
"""
from __future__ import annotations

import functools
import pkgutil
import sys
import tempfile
import time
from collections.abc import Callable
from importlib import import_module
from pathlib import Path
from typing import Any, TextIO

from .registry import FAMILIES

# tiny, but with every case a kernel branches on: ties mixing relevant, non-relevant, negative and
# unjudged documents, a relevant document never retrieved, a query without ties
_QRELS = {"q1": {"d1": 2, "d2": 0, "d3": 1, "d5": -1, "u1": 1}, "q2": {"d1": 1, "d4": 3, "x": 0},
          "q3": {"d2": 1}}
_RUN = {"q1": {"d6": 1.0, "d1": 0.5, "d2": 0.5, "d3": 0.5, "d4": 0.25, "d5": 0.25},
        "q2": {"d1": 0.75, "d2": 0.75, "d3": 0.75, "d4": 0.75}, "q3": {"d1": 0.9, "d2": 0.8}}


def _dispatchers() -> list[Any]:
    """Every jitted function of `tieaware.kernels`."""
    from .kernels.numba_compat import Dispatcher

    kernels = import_module("tieaware.kernels")
    found: list[Any] = []
    for info in pkgutil.walk_packages(kernels.__path__, "tieaware.kernels."):
        module = import_module(info.name)
        found += [obj for obj in vars(module).values()
                  if isinstance(obj, Dispatcher) and obj.py_func.__module__ == module.__name__]
    return found


def _cache_dir(dispatchers: list[Any]) -> str | None:
    """NUMBA_CACHE_DIR when set, else where numba put the first kernel's cache (next to the sources,
    or a user-wide folder when those are read-only)."""
    from numba import config

    cache_dir: str = config.CACHE_DIR  # type: ignore[attr-defined]  # numba.config sets it at run time
    if cache_dir:
        return cache_dir
    return str(dispatchers[0].stats.cache_path) if dispatchers else None


def _cache_counts(dispatchers: list[Any]) -> tuple[int, int]:
    """(signatures compiled, signatures loaded from the cache) so far."""
    compiled = sum(sum(d.stats.cache_misses.values()) for d in dispatchers)
    loaded = sum(sum(d.stats.cache_hits.values()) for d in dispatchers)
    return compiled, loaded


def _read_a_trec_file() -> None:
    """Read a TREC run into dicts and, as `tieaware eval` does, chunk by chunk (`streaming`)."""
    from .evaluation import evaluate
    from .inputs import read_trec_run

    with tempfile.TemporaryDirectory(prefix="tieaware-warmup-") as folder:
        path = Path(folder, "run.trec")
        path.write_text("q1 Q0 d1 1 0.5 warmup\n")
        read_trec_run(path)
        evaluate({"q1": {"d1": 1}}, path, "P@1", stream=True)


def warmup(verbose: bool = True, file: TextIO | None = None) -> dict[str, Any]:
    """Compile, or load from numba's cache, every kernel `evaluate` and `census` use.

    Evaluates one metric of every family (`tieaware.registry.Family.warmup`) on a tiny synthetic
    qrels/run with each oblivious order (trec_eval, ranx, input, ir_measures), a tie census and a
    TREC run file read (as ``tieaware eval``); prints each step and its time.

    Args:
        verbose: print the steps, default True.
        file: where to print them, default ``sys.stdout``.

    Returns:
        ``{"steps": {step: seconds}, "seconds": total, "compiled": n, "loaded": n,
        "cache_dir": NUMBA_CACHE_DIR, or where numba caches the kernels}``: ``compiled``
        counts the jitted functions (kernels and the helpers they call) compiled, and
        written to the cache, by this call; ``loaded`` the kernels read from the cache.

    Examples:
        >>> summary = warmup(verbose=False)
        >>> sorted(summary)
        ['cache_dir', 'compiled', 'loaded', 'seconds', 'steps']
    """
    start = time.perf_counter()
    steps: dict[str, float] = {}
    if verbose and file is None:
        file = sys.stdout
    elif not verbose:
        file = None

    def step(label: str, action: Callable[[], object]) -> None:
        began = time.perf_counter()
        action()
        steps[label] = time.perf_counter() - began
        if file is not None:
            print(f"  {steps[label]:6.2f} s  {label}", file=file, flush=True)

    if file is not None:
        print("tieaware warmup: compiling the numba kernels into numba's cache", file=file, flush=True)
    modules: dict[str, Any] = {}
    step("import numba and the kernels", lambda: modules.update(
        evaluation=import_module("tieaware.evaluation"), tie_census=import_module("tieaware.tie_census"),
        pairs=import_module("tieaware.readers.pairs")))
    dispatchers = _dispatchers()
    before = _cache_counts(dispatchers)
    evaluate = modules["evaluation"].evaluate
    step("tie groups, trec_eval's tie order",
         lambda: modules["pairs"].ranked_lists(_QRELS, _RUN).tool_rank("trec_eval"))
    by_module: dict[str, list[str]] = {}
    for family in FAMILIES.values():
        by_module.setdefault(family.kernel.split(".")[0], []).append(family.warmup)
    for module, metrics in by_module.items():
        step(f"{module} family: {', '.join(metrics)}", functools.partial(evaluate, _QRELS, _RUN, metrics))
    for order, label in (("ranx", "ranx's tie order"), ("input", "input order")):
        step(label, functools.partial(evaluate, _QRELS, _RUN, "ndcg@3", oblivious=order))
    step("ir_measures' tie orders", lambda: evaluate(_QRELS, _RUN, ["RR@2", "nDCG@3"], oblivious="ir_measures"))
    step("tie census", lambda: modules["tie_census"].census(_RUN, ks=(1, 2, 10)))
    step("TREC file reader", _read_a_trec_file)
    after = _cache_counts(dispatchers)
    summary: dict[str, Any] = {"steps": steps, "seconds": time.perf_counter() - start, "compiled": after[0] - before[0],
               "loaded": after[1] - before[1], "cache_dir": _cache_dir(dispatchers)}
    if file is not None:
        print(f"done in {summary['seconds']:.2f} s: {summary['compiled']} functions compiled and cached, "
              f"{summary['loaded']} loaded from the cache\n  cache: {summary['cache_dir']}", file=file, flush=True)
    return summary
