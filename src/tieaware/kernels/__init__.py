"""numba kernels: `groups` reads runs into judged tie groups, `families` computes the metrics,
`tiebreak` gives the tie orders of other tools, `census` counts ties. Every kernel is compiled
by `kernel`: the code compiled ahead of time where the package has it, else ``numba.njit`` with the
process-safe disk cache of `disk_cache` (`backend` decides; `jit` imports numba).
"""
from .backend import kernel

# Flags of a kernel called only from other kernels: numba then builds no Python wrapper for it
# (compile time paid by every user's first evaluate with an empty cache; no kernel gets a C one, `kernel`).
# Constants passed to such a kernel are wrapped (np.int64(0), np.bool_(True)): numba types a bare
# constant as a literal and compiles one more specialisation for it.
INNER = {"no_cpython_wrapper": True}

__all__ = ["INNER", "kernel"]
