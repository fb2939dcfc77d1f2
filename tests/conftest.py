import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

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
