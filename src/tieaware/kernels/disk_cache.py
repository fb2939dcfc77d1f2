"""numba's on-disk cache of compiled kernels, made safe for processes that compile at the same time.

numba (0.58-0.68) keeps a function's compiled signatures as an index file
``<fn>.nbi`` (key -> data file) and numbered data files ``<fn>.1.nbc``,
``<fn>.2.nbc``, ...; a process that compiles a new signature reads the index,
takes the first free number, writes the index, then the data. Two processes
compiling two signatures at once (pytest-xdist workers, a multiprocessing pool,
two jobs on one cluster node) can both take ``.1.nbc``: the index that survives
then points one signature at the other's machine code, and numba loads it
without a check. For typed dicts whose doc-id width differs (ranx Runs of two
collections) nothing fails: the kernel reads the wrong layout and returns wrong
numbers. Reproduced with numba 0.68.1 (4 of 5 trials of 8 processes); see
numba issue #10128 for the same race in gufuncs.

`VerifiedCacheFile` closes it three ways:

* one data file per key, named by a digest of the key, so two signatures never
  share a file;
* the key is stored inside the data file and compared on load: a file that does
  not hold this key's code is a cache miss (the kernel compiles), never loaded;
* the index is re-read and written under an exclusive lock (``fcntl``, where the
  platform has it), so concurrent compiles do not drop each other's entries.

numba also stamps a function's cache with its own source file only, while a kernel
inlines kernels of other modules (`binary64.nearest_double` into `trec.scan`):
after an edit of, or an update to, those modules it would load the old machine code.
`VerifiedFunctionCache` adds a digest of the contents of every module of `tieaware.kernels`
(`stamp.sources_digest`) to the stamp: not their times, which a reinstall changes, so a
cache kept across reinstalls of the same version (a CI cache folder) still serves.
"""
from __future__ import annotations

import contextlib
import hashlib
import sys

from .numba_compat import FunctionCache, IndexDataCacheFile
from .stamp import sources_digest

if sys.platform == "win32":  # no lock; the digest names and the key check keep loads correct
    fcntl = None
else:
    import fcntl

_MARK = "tieaware-kernel-cache-1"  # first item of every data file this module writes


class VerifiedCacheFile(IndexDataCacheFile):
    """numba's index + data files with one data file per key, the key checked on load, the index
    updated under a lock (see the module docstring)."""

    def save(self, key, data):
        name = self._data_name_of(key)
        self._save_data(name, (_MARK, key, data))  # written (atomically) before the index names it
        with self._index_lock():
            overloads = self._load_index()
            overloads[key] = name
            self._save_index(overloads)

    def load(self, key):
        name = self._load_index().get(key)
        if name is None:
            return None
        try:
            stored = self._load_data(name)
        except Exception:  # unpickling a damaged file can raise almost anything; unreadable is a miss
            return None
        if not (isinstance(stored, tuple) and len(stored) == 3 and stored[0] == _MARK and stored[1] == key):
            return None  # another key's code (or numba's own format): compile rather than load it
        return stored[2]

    def _data_name_of(self, key) -> str:
        """``<fn>.<digest of the key>.nbc``: the key holds the signature, the CPU and the bytecode."""
        digest = hashlib.sha256(repr(key).encode()).hexdigest()[:20]
        return self._data_name_pattern.replace("{number:d}", digest)

    @contextlib.contextmanager
    def _index_lock(self):
        if fcntl is None:
            yield
            return
        with open(self._index_path + ".lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)


class VerifiedFunctionCache(FunctionCache):
    """numba's cache of one function (locator, statistics) over a `VerifiedCacheFile`, stamped with
    its own source file and `stamp.sources_digest`."""

    def __init__(self, py_func):
        super().__init__(py_func)
        own = self._cache_file._source_stamp  # numba's stamp of the function's own file
        self._cache_file = VerifiedCacheFile(cache_path=self._cache_path, filename_base=self._impl.filename_base,
                                             source_stamp=(own, sources_digest()))

