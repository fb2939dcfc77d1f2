"""Which machine code runs a kernel: compiled ahead of time, or numba's JIT. Decided here alone.

Every kernel is written once, in Python for numba (`kernel`). ``pip install`` compiles the
kernels that the everyday paths call from Python (`ahead_of_time.SIGNATURES`) with numba's
``pycc`` into the extension module ``tieaware.kernels._compiled``, which needs numpy only.
A `Kernel` called with argument types that module holds runs its code: numba is not imported
and nothing compiles. Any other call (argument types it lacks, a kernel it lacks, no module)
imports numba and runs the JIT dispatcher of the same Python function, compiled on first use
into numba's disk cache (`disk_cache`), as every call did before.

The module serves only if it was built from the kernel sources present (`sources_digest`);
otherwise, or where it is absent, the JIT serves everything and `COMPILED_NOTE` says why.
``TIEAWARE_JIT=1`` in the environment forces the JIT (the test suite runs both ways). No other
module asks which path served.
"""
from __future__ import annotations

import functools
import hashlib
import importlib
import os
import warnings
from typing import Any

import numpy as np

from .stamp import sources_digest

#: the environment variable that, set to 1, makes the JIT serve every kernel
FORCE_JIT_VARIABLE = "TIEAWARE_JIT"


def _load_compiled() -> tuple[Any, str]:
    """(the extension module or None, why it does not serve: "" when it does)."""
    if os.environ.get(FORCE_JIT_VARIABLE, "") not in ("", "0"):
        return None, f"{FORCE_JIT_VARIABLE}={os.environ[FORCE_JIT_VARIABLE]}: numba's JIT serves every kernel"
    try:
        module = importlib.import_module(f"{__package__}._compiled")
    except ImportError as error:
        return None, (f"no kernels compiled ahead of time ({error}): numba compiles them on first use "
                      "(reinstall tieaware with a C compiler present to build them)")
    if getattr(module, f"digest_{sources_digest()}", None) is None:
        return None, ("the kernels compiled ahead of time were built from other sources than these: numba "
                      "compiles them on first use (reinstall tieaware to rebuild them)")
    return module, ""


COMPILED, COMPILED_NOTE = _load_compiled()
_note_pending = COMPILED is None and not COMPILED_NOTE.startswith(FORCE_JIT_VARIABLE)


def _note_jit() -> None:
    """Warn, once a process, that the JIT serves because the compiled module does not (`COMPILED_NOTE`)."""
    global _note_pending
    if _note_pending:
        _note_pending = False
        warnings.warn(f"tieaware: {COMPILED_NOTE}", RuntimeWarning, stacklevel=3)


def type_key(value: Any) -> str | None:
    """numba's name of the type a value has as a kernel argument (``float64[::1]``, ``int64``,
    ``Scratch(int64[::1], ...)``), or None for a value no compiled kernel takes (a non-contiguous,
    unaligned or byte-swapped array, a Python object)."""
    if isinstance(value, np.ndarray):
        if value.ndim == 0 or not (value.flags.c_contiguous and value.flags.aligned and value.dtype.isnative):
            return None
        return f"{value.dtype.name}[{':, ' * (value.ndim - 1)}::1]"
    kind = type(value)
    if kind is bool or kind is np.bool_:
        return "bool"
    if kind is int or kind is np.int64:
        return "int64"
    if kind is float or kind is np.float64:
        return "float64"
    if kind is np.uint64:
        return "uint64"
    if isinstance(value, tuple) and hasattr(kind, "_fields"):  # a NamedTuple of arrays
        fields = [type_key(field) for field in value]
        return None if None in fields else f"{kind.__name__}({', '.join(fields)})"  # type: ignore[arg-type]
    return None


def export_name(qualified: str, arguments: tuple[str, ...]) -> str:
    """The symbol of a kernel's compiled code for these argument types (`type_key`): its module,
    name and a digest of the types, which can be long."""
    types = hashlib.sha256(", ".join(arguments).encode()).hexdigest()[:16]
    return f"{qualified.removeprefix('tieaware.kernels.').replace('.', '_')}__{types}"


class Kernel:
    """A numba kernel: its compiled code for the argument types `COMPILED` holds, else numba's JIT
    dispatcher of ``py_func`` (`jitted`). numba types it as that dispatcher inside other kernels
    (`_numba_type_`), and inlines it there when ``flags`` ask."""

    def __init__(self, py_func, flags: dict):
        self.py_func = py_func
        self.targetoptions = flags  # read by numba's inliner, as on its dispatchers
        self.qualified = f"{py_func.__module__}.{py_func.__qualname__}"
        functools.update_wrapper(self, py_func)
        self._compiled: dict = {}  # argument types -> compiled function, or None where COMPILED has none
        self.dispatcher = None  # numba's, once `jitted` made it

    def __call__(self, *args):
        if COMPILED is not None:
            function = self.compiled_for(args)
            if function is not None:
                return function(*args)
        else:
            _note_jit()
        return self.jitted()(*args)

    def compiled_for(self, args: tuple):
        """`COMPILED`'s function for these arguments' types (`type_key`), or None."""
        keys = tuple(type_key(arg) for arg in args)
        function = self._compiled.get(keys, False)
        if function is False:
            names = tuple(key for key in keys if key is not None)
            found = len(names) == len(keys) and COMPILED is not None
            function = getattr(COMPILED, export_name(self.qualified, names), None) if found else None
            self._compiled[keys] = function
        return function

    def prepare(self, *args) -> None:
        """Make the code for these arguments ready on the calling thread: nothing where compiled code
        serves them, else the JIT compiles it or loads it from the disk cache, as numba does on the
        first call in whichever thread makes it (code loaded on a worker thread lives in that thread's
        malloc arena instead of the main heap, which raises peak memory)."""
        if COMPILED is None or self.compiled_for(args) is None:
            dispatcher = self.jitted()
            dispatcher.compile(tuple(map(dispatcher.typeof_pyval, args)))

    @property
    def _numba_type_(self):
        """numba's type of this kernel inside other kernels: its dispatcher's (``numba.typeof`` reads it)."""
        return self.jitted()._numba_type_

    def jitted(self):
        """numba's dispatcher of this kernel (imports numba; compiles on first call, or loads the cache)."""
        if self.dispatcher is None:
            from .jit import dispatcher

            self.dispatcher = dispatcher(self.py_func, self.targetoptions)
        return self.dispatcher

    def __repr__(self) -> str:
        return f"<tieaware kernel {self.qualified}>"


def kernel(function=None, **flags):
    """Declare a kernel: ``numba.njit(**flags)`` with tieaware's disk cache when the JIT serves it
    (`Kernel`). Use as ``@kernel`` or ``@kernel(inline="always")``."""
    def declare(py_func):
        return Kernel(py_func, flags)

    return declare if function is None else declare(function)


class JitOnly:
    """A numba extension (an ``@intrinsic``, numba's own internals) that kernels call, defined in a
    module that imports numba (`jit`): numba types it as that object when it compiles a kernel,
    and nothing imports numba before then."""

    def __init__(self, module: str, name: str):
        self.module, self.name = module, name

    def resolve(self):
        return getattr(importlib.import_module(self.module), self.name)

    @property
    def _numba_type_(self):
        """numba's type of the extension (``numba.typeof`` reads it)."""
        from .numba_compat import typing_of

        return typing_of(self.resolve())

    def __repr__(self) -> str:
        return f"<numba extension {self.module}.{self.name}>"


def served_by(kernel: Kernel, *args) -> str:
    """"compiled" or "jit": which code a call of ``kernel`` with these arguments runs."""
    return "compiled" if COMPILED is not None and kernel.compiled_for(args) is not None else "jit"


__all__ = ["COMPILED", "COMPILED_NOTE", "FORCE_JIT_VARIABLE", "JitOnly", "Kernel", "export_name", "kernel",
           "served_by", "sources_digest", "type_key"]
