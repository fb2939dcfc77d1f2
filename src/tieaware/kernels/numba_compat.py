"""The parts of numba tieaware uses that numba does not promise to keep: imported here only.

Every other module takes them from here, so a numba release that moves one breaks this module
alone, with an error naming the numba versions tieaware is tested with (`TESTED`, pinned in
pyproject.toml's dependencies). What they are for:

* code points of numba strings without a copy: `unicode_charseq_get_code` (fixed-width
  ``UnicodeCharSeq``, numpy's ``<U`` arrays), `get_code_point` (numba's unicode type);
* building numba strings from code points in jitted code (`empty_string`, `set_code_point`,
  the ``PY_UNICODE_*_KIND`` widths): ranx's typed-dict keys;
* numba's on-disk cache classes (`FunctionCache`, `IndexDataCacheFile`) that `disk_cache`
  extends, and `use_cache`, which installs such a cache on a dispatcher;
* `trailing_zeros` (count trailing zero bits, LLVM's ``cttz``): the TREC scan's 8-bytes-at-a-time
  search for the end of a token; `leading_zeros` (``ctlz``): normalising a decimal's digits
  (`binary64.nearest_double`);
* `pycc`: numba's ahead-of-time compiler (``numba.pycc``, pending deprecation since numba 0.57), and
  `pycc_objects`: object files of a ``CC``'s module (its ``distutils_extension`` links them), with
  the GIL released around every exported function but those named, as ``nogil=True`` does for the JIT; `signature`,
  a function type whose return type numba infers (None);
* `typing_of`: numba's type of an intrinsic or overloaded function, which ``numba.typeof`` does not
  give (`backend.JitOnly` stands for such functions in the kernels' modules);
* `load_numba_arrays_without_scipy`: numba's array module without its BLAS probe.
"""
from __future__ import annotations

import sys
import warnings
from typing import Any

import numba

#: numba versions tieaware is tested with: at least the first, below the second (pyproject.toml)
TESTED = ("0.58", "0.69")

try:
    from numba.core.caching import FunctionCache, IndexDataCacheFile
    from numba.core.registry import cpu_target
    from numba.core.typing import signature
    from numba.cpython.charseq import unicode_charseq_get_code
    from numba.cpython.unicode import (
        PY_UNICODE_1BYTE_KIND,
        PY_UNICODE_2BYTE_KIND,
        PY_UNICODE_4BYTE_KIND,
    )
    from numba.cpython.unicode import _empty_string as empty_string
    from numba.cpython.unicode import _get_code_point as get_code_point
    from numba.cpython.unicode import _set_code_point as set_code_point
    from numba.cpython.unsafe.numbers import leading_zeros, trailing_zeros
except ImportError as error:  # pragma: no cover - only with an untested numba
    raise ImportError(f"tieaware needs numba >={TESTED[0]},<{TESTED[1]} (numba internals it uses moved in "
                      f"numba {numba.__version__}): {error}") from error


def use_cache(dispatcher: Any, cache: Any) -> None:
    """Make a jitted function cache its compiled code in ``cache`` (what numba's ``enable_caching``
    does with its own cache class)."""
    dispatcher._cache = cache


__all__ = ["TESTED", "PY_UNICODE_1BYTE_KIND", "PY_UNICODE_2BYTE_KIND", "PY_UNICODE_4BYTE_KIND",
           "FunctionCache", "IndexDataCacheFile", "empty_string", "get_code_point", "leading_zeros",
           "set_code_point", "load_numba_arrays_without_scipy", "pycc", "pycc_objects", "signature", "trailing_zeros",
           "typing_of", "unicode_charseq_get_code", "use_cache"]


def pycc() -> Any:
    """``numba.pycc`` (the build of `tieaware.kernels.ahead_of_time` only), without numba's warning
    that it is pending deprecation."""
    from numba.core.errors import NumbaPendingDeprecationWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NumbaPendingDeprecationWarning)
        import numba.pycc
    return numba.pycc


def pycc_objects(compiler: Any, build_dir: str) -> list[str]:
    """Compile a ``numba.pycc.CC``'s exports into object files in ``build_dir``; each exported function
    releases the GIL while it runs (pycc's ``Flags`` with ``release_gil``), but those whose Python
    function is in the compiler's ``holding_gil``."""
    pycc_compiler = pycc().compiler
    original = pycc_compiler.compile_extra
    holding = getattr(compiler, "holding_gil", ())

    def compile_extra(typing_context, target_context, function, *args, **kwargs):
        flags = args[2].copy()  # (arguments, return type, flags, ...)
        flags.release_gil = function not in holding
        return original(typing_context, target_context, function, *args[:2], flags, *args[3:], **kwargs)

    pycc_compiler.compile_extra = compile_extra
    try:
        objects, _ = compiler._compile_object_files(build_dir)
    finally:
        pycc_compiler.compile_extra = original
    return objects


def typing_of(value: Any) -> Any:
    """The numba type of a global a kernel calls, as numba's CPU typing context resolves it."""
    return cpu_target.typing_context.resolve_value_type(value)


def load_numba_arrays_without_scipy() -> None:
    """Load numba's array implementations (which every kernel's first call loads) without the
    ``scipy.linalg.cython_blas`` import they make to see whether BLAS is there (a large share of
    ``tieaware eval``'s start time and memory): without it numba's ``np.correlate``/``np.convolve`` use
    a loop of their own, which no tieaware kernel calls; ``np.dot`` still imports scipy when compiled.
    `jit` does this, once, before any kernel compiles."""
    if "numba.np.arraymath" in sys.modules or "scipy.linalg.cython_blas" in sys.modules:
        return
    sys.modules["scipy.linalg.cython_blas"] = None  # type: ignore[assignment]  # `import` raises ImportError
    try:
        import numba.np.arraymath  # noqa: F401
    finally:
        del sys.modules["scipy.linalg.cython_blas"]
