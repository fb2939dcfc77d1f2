"""numba's internals are imported in `tieaware.kernels.numba_compat` only, and the numba versions it is
tested with are the ones pyproject.toml allows."""
import ast
import re
from pathlib import Path

import numba
import pytest

from tieaware.kernels import numba_compat

ROOT = Path(__file__).resolve().parents[1]
#: numba's public modules; anything else under numba (numba.core, numba.cpython, ...) is internal
PUBLIC = ("numba", "numba.typed", "numba.extending", "numba.types")


def _version(text: str) -> tuple:
    return tuple(int(part) for part in re.findall(r"\d+", text)[:2])


def test_pyproject_pins_the_tested_range_and_the_installed_numba_lies_in_it():
    low, high = numba_compat.TESTED
    assert f'"numba>={low},<{high}"' in (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert _version(low) <= _version(numba.__version__) < _version(high)


def _internal_imports(path: Path):
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "numba":
            private = [alias.name for alias in node.names if alias.name.startswith("_")]
            if node.module not in PUBLIC or private:
                yield node.lineno, node.module
        elif isinstance(node, ast.Import):
            yield from ((node.lineno, a.name) for a in node.names
                        if a.name.split(".")[0] == "numba" and a.name not in PUBLIC)


def test_numba_internals_are_imported_in_the_compat_module_only():
    found = [(str(path.relative_to(ROOT)), line, module) for path in sorted((ROOT / "src").rglob("*.py"))
             if path.name != "numba_compat.py" for line, module in _internal_imports(path)]
    assert found == []
    assert list(_internal_imports(ROOT / "src" / "tieaware" / "kernels" / "numba_compat.py"))


@pytest.mark.parametrize("name", numba_compat.__all__)
def test_every_compat_name_exists(name):
    assert getattr(numba_compat, name) is not None
