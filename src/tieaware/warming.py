"""`warmup`: compile once into numba's on-disk cache every kernel that numba's JIT serves (module
`warming`, so that it does not shadow the function `tieaware.warmup`).

The kernels of the everyday paths, ranx objects' reader included, ship compiled with the package
(`tieaware.kernels.backend`); every kernel compiles on its first use, and is cached on disk for
later processes, where the package was installed without its compiled module or with
``TIEAWARE_JIT=1``. A CI image or a container can pay that once at build time with
``tieaware warmup`` (or ``python -c "import tieaware; tieaware.warmup()"``), run as the user and
with the ``NUMBA_CACHE_DIR`` the tests will have.

Only where numba lays out its typed dicts otherwise than tieaware reads them (a warning says so,
`tieaware.readers.typed_dicts`) are ranx objects read by a kernel numba specialises on the length of
the longest document id of each ``Run`` and ``Qrels``: the warmup compiles it for the lengths it is
given (``ranx_id_lengths``; none by default).
"""
from __future__ import annotations

import functools
import pkgutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from importlib import import_module
from pathlib import Path
from typing import Any, TextIO

from .errors import InputError
from .registry import FAMILIES

# tiny, but with every case a kernel branches on: ties mixing relevant, non-relevant, negative and
# unjudged documents, a relevant document never retrieved, a query without ties
_QRELS = {"q1": {"d1": 2, "d2": 0, "d3": 1, "d5": -1, "u1": 1}, "q2": {"d1": 1, "d4": 3, "x": 0},
          "q3": {"d2": 1}}
_RUN = {"q1": {"d6": 1.0, "d1": 0.5, "d2": 0.5, "d3": 0.5, "d4": 0.25, "d5": 0.25},
        "q2": {"d1": 0.75, "d2": 0.75, "d3": 0.75, "d4": 0.75}, "q3": {"d1": 0.9, "d2": 0.8}}


def kernels() -> list[Any]:
    """Every kernel (`tieaware.kernels.backend.Kernel`) of `tieaware.kernels` and of the ranx readers."""
    from .kernels.backend import Kernel

    package = import_module("tieaware.kernels")
    names = [info.name for info in pkgutil.walk_packages(package.__path__, "tieaware.kernels.")
             if info.name.rsplit(".", 1)[-1] not in ("intrinsics", "jit", "ahead_of_time", "_compiled")]
    found: list[Any] = []
    for name in [*names, "tieaware.readers.typed_dicts"]:
        module = import_module(name)
        found += [obj for obj in vars(module).values()
                  if isinstance(obj, Kernel) and obj.py_func.__module__ == module.__name__]
    return found


def _cache_dir(jitted: list[Any]) -> str | None:
    """NUMBA_CACHE_DIR when set, else where numba put the first kernel's cache (next to the sources,
    or a user-wide folder when those are read-only); None when no kernel was jitted."""
    if not jitted:
        return None
    from numba import config

    cache_dir: str = config.CACHE_DIR  # type: ignore[attr-defined]  # numba.config sets it at run time
    return cache_dir or str(jitted[0].stats.cache_path)


def _cache_counts(found: list[Any]) -> tuple[int, int]:
    """(signatures compiled, signatures loaded from the cache) so far, over the jitted kernels."""
    jitted = [k.dispatcher for k in found if k.dispatcher is not None]
    compiled = sum(sum(d.stats.cache_misses.values()) for d in jitted)
    loaded = sum(sum(d.stats.cache_hits.values()) for d in jitted)
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


def _read_ranx_objects(lengths: list[int]) -> None:
    """Evaluate ranx Qrels and Runs whose longest document id has each of these lengths."""
    from ranx import Qrels, Run

    from .evaluation import evaluate

    for length in lengths:
        doc = "d" * length
        evaluate(Qrels({"q1": {doc: 1}}), Run({"q1": {doc: 0.5}}), "P@1")


def warmup(verbose: bool = True, file: TextIO | None = None, ranx_id_lengths: Iterable[int] = ()) -> dict[str, Any]:
    """Compile, or load from numba's cache, every kernel that `evaluate`, `census` and ``tieaware eval``
    run through numba's JIT (`tieaware.kernels.backend`): where the package has its compiled kernels,
    none.

    Evaluates one metric of every family (`tieaware.registry.Family.warmup`) on a tiny synthetic
    qrels/run with each oblivious order (trec_eval, ranx, input, ir_measures), a tie census, a
    TREC run file read (as ``tieaware eval``) and, where the JIT serves or for each of
    ``ranx_id_lengths``, ranx ``Qrels``/``Run`` objects whose longest document id has that length;
    prints each step and its time.

    Args:
        verbose: print the steps, default True.
        file: where to print them, default ``sys.stdout``.
        ranx_id_lengths: lengths of the longest document id of the ranx ``Run``/``Qrels`` objects
            to be evaluated later, default none: their reader is compiled per length only where
            numba's typed-dict layout is not the one tieaware reads.

    Returns:
        ``{"steps": {step: seconds}, "seconds": total, "compiled": n, "loaded": n,
        "cache_dir": NUMBA_CACHE_DIR, or where numba caches the kernels (None: none jitted),
        "ahead_of_time": why the compiled kernels do not serve, "" when they do}``: ``compiled``
        counts the signatures of kernels compiled, and written to the cache, by this call;
        ``loaded`` those read from the cache.

    Raises:
        InputError: a length in ``ranx_id_lengths`` is not a positive integer.

    Examples:
        >>> summary = warmup(verbose=False)
        >>> sorted(summary)
        ['ahead_of_time', 'cache_dir', 'compiled', 'loaded', 'seconds', 'steps']
    """
    lengths = list(ranx_id_lengths)
    if not all(isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in lengths):
        raise InputError(f"ranx_id_lengths must be positive integers, got {lengths!r}")
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

    from .kernels.backend import COMPILED_NOTE

    if file is not None:
        served = COMPILED_NOTE or "the kernels of the everyday paths are compiled ahead of time"
        print(f"tieaware warmup: compiling into numba's cache the kernels its JIT serves ({served})",
              file=file, flush=True)
    modules: dict[str, Any] = {}
    step("import the kernels", lambda: modules.update(
        evaluation=import_module("tieaware.evaluation"), tie_census=import_module("tieaware.tie_census"),
        pairs=import_module("tieaware.readers.pairs")))
    found = kernels()
    before = _cache_counts(found)
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
    if lengths or COMPILED_NOTE:
        step("ranx Qrels and Run readers" + (f", ids of {', '.join(map(str, lengths))} characters" if lengths else ""),
             functools.partial(_read_ranx_objects, lengths or [2]))
    after = _cache_counts(found)
    jitted = [k.dispatcher for k in found if k.dispatcher is not None]
    summary: dict[str, Any] = {"steps": steps, "seconds": time.perf_counter() - start, "compiled": after[0] - before[0],
                               "loaded": after[1] - before[1], "cache_dir": _cache_dir(jitted),
                               "ahead_of_time": COMPILED_NOTE}
    if file is not None:
        print(f"done in {summary['seconds']:.2f} s: {summary['compiled']} functions compiled and cached, "
              f"{summary['loaded']} loaded from the cache\n  cache: {summary['cache_dir']}", file=file, flush=True)
    return summary
