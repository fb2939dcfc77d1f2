import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))


def _numba_cache_per_xdist_worker() -> None:
    """Give each pytest-xdist worker its own numba cache folder (NUMBA_CACHE_DIR, inherited by the
    processes the tests start). ranx's kernels use numba's plain disk cache, whose index two
    processes compiling different signatures at once can leave pointing one signature at the
    other's machine code: in a CI run, ranx.evaluate on ranx objects then returned 0.0 for most
    Cranfield queries. tieaware's own kernels are safe in a shared folder
    (`tieaware.kernels.disk_cache`, tests/kernels/test_kernel_cache.py)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if not worker:
        return
    base = os.environ.get("NUMBA_CACHE_DIR") or str(Path(__file__).resolve().parents[1] / ".pytest_cache" / "numba")
    os.environ["NUMBA_CACHE_DIR"] = str(Path(base) / worker)
    if "numba.core.config" in sys.modules:  # numba read the variable at import: tell it too
        sys.modules["numba.core.config"].CACHE_DIR = os.environ["NUMBA_CACHE_DIR"]


_numba_cache_per_xdist_worker()

DATA = Path(__file__).resolve().parent / "data"
"""Test-only peer files (trec_eval, ir_measures, ranx); see data/README.md. The Cranfield collection and
the MiniLM runs ship with the package: ``tieaware.datasets.cranfield()``."""


@pytest.fixture(scope="session")
def data_dir():
    if not DATA.is_dir():
        pytest.fail(f"test data folder {DATA} is missing (it is part of the repository: tests/data)")
    return DATA



#: Modules whose tests start fresh interpreters, compile with empty numba caches or run real models.
SLOW_MODULES = {"test_threads.py", "test_hps_minilm.py", "test_hps_sweep.py", "test_hps_quantize_minilm.py"}


def pytest_collection_modifyitems(config, items):
    """Mark the tests of ``test_hps_*`` modules ``hps`` (they need torch) and the slow ones ``slow``,
    so ``pytest -m "not slow and not hps"`` is a fast inner loop; CI runs everything."""
    for item in items:
        if item.path.name.startswith("test_hps"):
            item.add_marker(pytest.mark.hps)
        if item.path.name in SLOW_MODULES or "xdist" in item.nodeid:
            item.add_marker(pytest.mark.slow)


@pytest.hookimpl(trylast=True)
def pytest_configure(config):
    """This suite tests the plugin in inner pytest sessions (pytester); the outer session does not
    tabulate those inner checks again in its own "tie stability" summary."""
    recorder = config.pluginmanager.get_plugin("tieaware-tie-check-recorder")
    if recorder is not None:
        config.pluginmanager.unregister(recorder)
