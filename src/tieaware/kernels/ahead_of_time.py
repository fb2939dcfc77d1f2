"""The kernels compiled when tieaware is installed, and the build that compiles them with numba's ``pycc``.

`SIGNATURES` lists, per kernel called from Python on the everyday paths (reading TREC files, dicts
and ranx Runs into tie groups, tie orders, every metric family, the tie census), the argument types it is
called with, in `backend.type_key`'s notation. ``setup.py`` builds them into one extension module,
``tieaware.kernels._compiled`` (`extension`): the same Python functions numba's JIT compiles,
typed here instead of at the first call, compiled for a generic x86-64 (or the build machine's
architecture) with the GIL released (but for `HOLDING_GIL`), and needing numpy only when imported. `backend` calls that
code for these types and the JIT for any other. A kernel whose types are missing here still runs,
through the JIT; ``tests/test_compiled_kernels.py`` names any that the everyday paths reach.

Only the build imports this module (it imports numba).
"""
from __future__ import annotations

import re
from importlib import import_module

from .backend import export_name
from .stamp import sources_digest

_I64, _F64, _U32, _I32, _U8 = "int64[::1]", "float64[::1]", "uint32[::1]", "int32[::1]", "uint8[::1]"
_MOMENTS = "float64[:, ::1]"
_GROUPS = (_I64,) * 5  # a family kernel's group structure (`families.common.Groups`)
_SCRATCH = (f"Scratch({_I64}, uint64[::1], {_I64}, {_I64}, {_I64}, {_I64}, {_I64}, {_F64}, {_I64}, {_F64}, "
            f"{_I64}, {_I64}, {_I64}, {_I64}, {_F64})")
_GROUP_ARRAYS = f"GroupArrays({_F64}, {', '.join([_I64] * 7)})"

#: kernel (module under `tieaware.kernels`, name) -> the argument types compiled for it
SIGNATURES: dict[str, list[tuple[str, ...]]] = {
    "trec.scan": [(_U8, "bool", _I32, _F64, _I64, "int32[:, ::1]", _U32, _I64, _I64, _I32, _I64, _U8)],
    "trec.first_repeat": [(_U32, _I64, _I64, _I64, "uint64")],
    "groups.read_chunk": [(_I64, _F64, _U32, _I64, _I64, "bool", _I64, _U32, _I64, _I64, _F64, "int64", _SCRATCH,
                           _GROUP_ARRAYS, _I64, _I64, _I64, _I64, "uint64")],
    "groups.argsort_segments": [(_F64, _I64)],
    "tiebreak.ranx_ranks": [(_I64, _F64, *[_I64] * 6, "bool[::1]", "int64", _I64)],
    "census._census_sorted": [(_I64, _F64, _I64, "float64[:, :, ::1]")],
    "families.common._one_per_group": [(*[_I64] * 10, _F64)],
    "families.hits.hits_moments": [(*_GROUPS, _F64, _I64, _MOMENTS)],
    "families.success.success_moments": [(*_GROUPS, _F64, _I64, _MOMENTS)],
    "families.rr.rr_moments": [(*_GROUPS, _F64, _I64, _MOMENTS)],
    "families.ap.ap_moments": [(*_GROUPS, _F64, _I64, _MOMENTS)],
    "families.dcg.weighted_moments": [(*_GROUPS, _F64, _I64, _F64, _F64, _F64, _MOMENTS)],
    "families.err.err_moments": [(*_GROUPS, _F64, _I64, "float64", _F64, _MOMENTS)],
    "families.bpref.bpref_moments": [(*_GROUPS, _F64, "float64", _I64, _I64, _MOMENTS, _MOMENTS)],
    "numba_dicts.read_dict": [("int64", "int64", "bool", "uint64", "bool")],
}

#: the kernels of `SIGNATURES` whose compiled code keeps the GIL (every other releases it while it runs):
#: those reading Python-owned memory that another thread could change meanwhile
HOLDING_GIL = frozenset({"numba_dicts.read_dict"})

#: the extension module's name, in `tieaware.kernels`
MODULE = "_compiled"


def numba_type(name: str, namespace: dict):
    """numba's type for a `backend.type_key` name; a NamedTuple's class is looked up in ``namespace``."""
    from numba import types

    tuple_match = re.fullmatch(r"(\w+)\((.*)\)", name)
    if tuple_match:
        fields = [numba_type(field, namespace) for field in tuple_match.group(2).split(", ")]
        return types.BaseTuple.from_types(fields, namespace[tuple_match.group(1)])
    array_match = re.fullmatch(r"(\w+)\[((?::, )*)::1\]", name)
    if array_match:
        dtype = types.boolean if array_match.group(1) == "bool" else getattr(types, array_match.group(1))
        return types.Array(dtype, array_match.group(2).count(":") + 1, "C")
    return types.boolean if name == "bool" else getattr(types, name)


def _digest_marker():
    return 0


def module_compiler(output_dir: str | None = None):
    """numba's ``pycc.CC`` holding every kernel of `SIGNATURES` and a ``digest_<sources_digest>``
    function by which `backend` knows the sources the code was built from. Its ``holding_gil`` names
    the Python functions of `HOLDING_GIL` for `numba_compat.pycc_objects`."""
    from . import jit  # noqa: F401  # numba's extensions the kernels call
    from .numba_compat import pycc, signature

    compiler = pycc().CC(MODULE, source_module=__name__)  # so named tieaware.kernels._compiled, generic CPU
    if output_dir is not None:
        compiler.output_dir = output_dir
    compiler.holding_gil = set()
    for qualified, signatures in SIGNATURES.items():
        module_name, name = qualified.rsplit(".", 1)
        kernel = getattr(import_module(f"{__package__}.{module_name}"), name)
        if qualified in HOLDING_GIL:
            compiler.holding_gil.add(kernel.py_func)
        for arguments in signatures:
            types = [numba_type(argument, kernel.py_func.__globals__) for argument in arguments]
            compiler.export(export_name(kernel.qualified, arguments), signature(None, *types))(kernel.py_func)
    compiler.export(f"digest_{sources_digest()}", "int64()")(_digest_marker)
    return compiler
