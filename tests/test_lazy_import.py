"""`import tieaware` stays cheap, and `tieaware.datasets` is an attribute imported on first use."""
import subprocess
import sys


def test_datasets_is_an_attribute_imported_on_first_use():
    code = """
import sys
import tieaware
heavy = [m for m in ("tieaware.datasets", "pandas", "numba", "numpy", "ranx", "torch") if m in sys.modules]
assert not heavy, f"import tieaware loaded {heavy}"
assert "datasets" in dir(tieaware) and "datasets" in tieaware.__all__
data = tieaware.datasets.cranfield()
assert "tieaware.datasets" in sys.modules and tieaware.datasets is sys.modules["tieaware.datasets"]
assert data.qrels.is_file() and sorted(data.runs) == ["bf16", "bf16-upcast", "fp32"]
assert "pandas" not in sys.modules and "numba" not in sys.modules
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_an_unknown_attribute_is_still_an_attribute_error():
    import tieaware

    try:
        tieaware.no_such_name  # noqa: B018
    except AttributeError as exc:
        assert "no_such_name" in str(exc)
    else:
        raise AssertionError("tieaware.no_such_name did not raise AttributeError")
