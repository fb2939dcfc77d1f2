"""tieaware's disk cache of compiled kernels (`tieaware.kernels.disk_cache`): a cache file never
serves one signature's machine code for another, even when processes compile at the same time."""
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tieaware.kernels import stamp
from tieaware.kernels.disk_cache import VerifiedCacheFile, VerifiedFunctionCache


def test_every_kernel_uses_the_verified_cache():
    from tieaware.readers import typed_dicts
    from tieaware.warming import kernels

    found = kernels()
    assert len(found) > 30 and typed_dicts._items in found
    assert [k.qualified for k in found if not isinstance(k.jitted()._cache, VerifiedFunctionCache)] == []


def test_a_kernel_cache_is_stamped_with_the_contents_of_every_kernel_module():
    """`typed_dicts._items` inlines `kernels.groups.code_at`: an edit of the kernel modules (or an
    update that changes them) must make its cached code stale, which numba's stamp of the function's
    own file alone does not."""
    from tieaware.readers import typed_dicts

    cache = typed_dicts._items.jitted()._cache
    assert cache._cache_file._source_stamp == (cache._impl.locator.get_source_stamp(), stamp.sources_digest())


def test_the_sources_digest_follows_contents_not_times(tmp_path):
    """A reinstall gives the files new times and the same contents: the disk cache and the compiled
    module still serve. Any change of a kernel's source changes the digest; the modules that only
    compile and serve kernels (`stamp.MACHINERY`) do not."""
    import shutil

    root = tmp_path / "kernels"
    shutil.copytree(Path(stamp.__file__).parent, root, ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    first = stamp.sources_digest(root)
    assert first == stamp.sources_digest()
    groups = root / "groups.py"
    os.utime(groups, (0, 0))
    assert stamp.sources_digest.__wrapped__(root) == first
    groups.write_text(groups.read_text() + "\n# edited\n")
    assert stamp.sources_digest.__wrapped__(root) != first
    groups.write_text(groups.read_text().removesuffix("\n# edited\n"))
    (root / "backend.py").write_text((root / "backend.py").read_text() + "\n# edited\n")
    (root / "stamp.py").write_text((root / "stamp.py").read_text() + "\n# edited\n")
    (root / "families" / "dcg.py").write_text((root / "families" / "dcg.py").read_text())
    assert stamp.sources_digest.__wrapped__(root) == first
    (root / "families" / "dcg.py").write_text((root / "families" / "dcg.py").read_text() + " ")
    assert stamp.sources_digest.__wrapped__(root) != first


def _cache_file(tmp_path, stamp=(1.0, 10)):
    return VerifiedCacheFile(cache_path=str(tmp_path), filename_base="f-1.py311", source_stamp=stamp)


def test_two_keys_never_share_a_data_file(tmp_path):
    cache = _cache_file(tmp_path)
    cache.save(("sig a", "cpu"), "code of a")
    cache.save(("sig b", "cpu"), "code of b")
    assert cache.load(("sig a", "cpu")) == "code of a"
    assert cache.load(("sig b", "cpu")) == "code of b"
    assert len(list(tmp_path.glob("*.nbc"))) == 2
    cache.save(("sig a", "cpu"), "code of a, again")  # the same key overwrites its own file
    assert len(list(tmp_path.glob("*.nbc"))) == 2 and cache.load(("sig a", "cpu")) == "code of a, again"


def test_an_index_pointing_at_another_keys_file_is_a_miss(tmp_path):
    """What numba's own race leaves behind (an index entry naming the data file of another signature)
    is read as a cache miss, so the kernel compiles instead of running foreign machine code."""
    cache = _cache_file(tmp_path)
    cache.save(("sig a", "cpu"), "code of a")
    index = cache._load_index()
    index[("sig b", "cpu")] = index[("sig a", "cpu")]
    cache._save_index(index)
    assert cache.load(("sig b", "cpu")) is None
    assert cache.load(("sig a", "cpu")) == "code of a"


def test_numba_format_files_and_stale_indexes_are_misses(tmp_path):
    cache = _cache_file(tmp_path)
    cache.save(("sig a", "cpu"), "code of a")
    name = cache._load_index()[("sig a", "cpu")]
    cache._save_data(name, ("numba's own payload", 1, 2))  # a file written by plain numba
    assert cache.load(("sig a", "cpu")) is None
    (tmp_path / name).write_bytes(b"truncated")
    assert cache.load(("sig a", "cpu")) is None
    cache.save(("sig a", "cpu"), "code of a")
    assert _cache_file(tmp_path, stamp=(2.0, 10)).load(("sig a", "cpu")) is None  # source changed


def test_index_writes_from_two_cache_objects_keep_both_entries(tmp_path):
    """Two processes' cache objects each re-read the index before writing it: no entry is lost."""
    first, second = _cache_file(tmp_path), _cache_file(tmp_path)
    first.save(("sig a", "cpu"), "code of a")
    second.save(("sig b", "cpu"), "code of b")
    assert set(_cache_file(tmp_path)._load_index()) == {("sig a", "cpu"), ("sig b", "cpu")}


def test_kernel_decorator_compiles_caches_and_loads(tmp_path):
    source = tmp_path / "toy_kernels.py"
    source.write_text(textwrap.dedent("""
        from tieaware.kernels import kernel

        @kernel
        def width(a):
            return len(a[0]) * 1000 + a.itemsize

        @kernel(inline="always")
        def twice(x):
            return 2 * x
    """))
    code = ("import json, numpy as np, toy_kernels as t\n"
            "out = [int(t.width(np.array(['x' * w], dtype=f'<U{w}'))) for w in (1, 2, 3)] + [t.twice(4)]\n"
            "hits = sum(t.width.dispatcher.stats.cache_hits.values())\n"
            "print(json.dumps([out, hits]))")
    env = {**os.environ, "PYTHONPATH": str(tmp_path) + os.pathsep + os.environ.get("PYTHONPATH", ""),
           "NUMBA_CACHE_DIR": str(tmp_path / "cache")}
    runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
            for _ in range(2)]
    for done in runs:
        assert done.returncode == 0, done.stderr[-3000:]
    (first, first_hits), (second, second_hits) = (json.loads(r.stdout.splitlines()[-1]) for r in runs)
    assert first == second == [1004, 2008, 3012, 8]
    assert (first_hits, second_hits) == (0, 3)


# Each process compiles a kernel for arrays of its own string width into the same empty cache at the
# same moment (one signature each, whose machine code returns its width: another signature's code
# gives another number); then one more process loads them all.
_TOY = """
from tieaware.kernels import kernel

@kernel
def width(a):
    return len(a[0]) * 1000 + a.itemsize
"""
_CHILD = textwrap.dedent("""
    import json, sys, time
    import numpy as np, toy_kernels as t
    widths, start = json.loads(sys.argv[1]), float(sys.argv[2])
    while time.time() < start:
        pass
    out = {w: int(t.width(np.array(["x" * w], dtype=f"<U{w}"))) for w in widths}
    print(json.dumps([out, sum(t.width.dispatcher.stats.cache_misses.values())]))
""")


@pytest.mark.slow
def test_concurrent_cold_compiles_then_loads_give_each_signature_its_code(tmp_path):
    """Eight processes compile one kernel for eight argument types into one empty cache at the same
    moment (numba's own cache can then point one signature at another's code); each gets its own
    numbers, and a ninth loads all eight from the cache and gets them too."""
    (tmp_path / "toy_kernels.py").write_text(_TOY)
    env = {**os.environ, "PYTHONPATH": str(tmp_path) + os.pathsep + os.environ.get("PYTHONPATH", ""),
           "NUMBA_CACHE_DIR": str(tmp_path / "cache")}
    widths = list(range(1, 9))
    expected = {str(w): w * 1000 + 4 * w for w in widths}

    def child(widths, start):
        return subprocess.Popen([sys.executable, "-c", _CHILD, json.dumps(widths), str(start)], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def result(process):
        out, err = process.communicate(timeout=600)
        assert process.returncode == 0, err[-3000:]
        return json.loads(out.splitlines()[-1])

    start = time.time() + 4  # every child has imported numba and tieaware by then
    for w, (out, _) in zip(widths, map(result, [child([w], start) for w in widths])):
        assert out == {str(w): expected[str(w)]}
    out, compiled = result(child(widths, 0))
    assert out == expected
    assert compiled == 0, "the last process compiled a signature the others had cached"
