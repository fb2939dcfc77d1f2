"""Which kernel sources compiled machine code belongs to: a digest of their contents.

Both the kernels compiled ahead of time (`backend`) and numba's disk cache of the JIT's
(`disk_cache`) serve code only for the sources it was compiled from.
"""
from __future__ import annotations

import functools
import hashlib
from pathlib import Path

#: the modules of `tieaware.kernels` that hold no code of a kernel: how kernels are compiled and served
MACHINERY = ("ahead_of_time.py", "backend.py", "disk_cache.py", "jit.py", "stamp.py")


@functools.lru_cache(maxsize=4)
def sources_digest(root: Path = Path(__file__).resolve().parent) -> str:
    """SHA-256 (hex, 16 digits) of the modules of `tieaware.kernels` (the folder ``root``) but
    `MACHINERY`, names and contents, not times: the kernels' machine code is valid for these
    sources only (a kernel inlines others')."""
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        if path.parent == root and path.name in MACHINERY:
            continue
        digest.update(str(path.relative_to(root).as_posix()).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]
