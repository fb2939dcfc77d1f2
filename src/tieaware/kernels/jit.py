"""numba's JIT for tieaware's kernels: ``numba.njit`` with the disk cache of `disk_cache`.

Imported by `backend.Kernel.jitted` when a kernel call finds no code compiled ahead of time (and by
the build of that code), never before: this is where numba is imported.
"""
from __future__ import annotations

from numba import njit

from . import intrinsics  # noqa: F401  # registers the overload kernels call (`code_at`)
from .disk_cache import VerifiedFunctionCache
from .numba_compat import load_numba_arrays_without_scipy, use_cache

load_numba_arrays_without_scipy()  # before any kernel compiles: numba's array module, without its BLAS probe

def dispatcher(py_func, flags: dict):
    """``numba.njit(**flags)(py_func)`` caching its machine code in `VerifiedFunctionCache`, with no
    C-callable wrapper (``no_cfunc_wrapper``: kernels are called from Python and from other kernels,
    never as ``cfunc``s)."""
    jitted = njit(**{"no_cfunc_wrapper": True, **flags})(py_func)
    use_cache(jitted, VerifiedFunctionCache(py_func))
    return jitted
