"""`MemoryText`: code points lying in memory, which the kernels' ``code_at`` reads in place (a leaf
module, so that both the kernels and numba's extensions in `intrinsics` can name the type)."""
from typing import NamedTuple


class MemoryText(NamedTuple):
    """Code points of `kind` bytes (1, 2 or 4) from memory `address` (a key of a numba typed dict,
    `numba_dicts`, hashed without a copy)."""

    address: int
    kind: int
