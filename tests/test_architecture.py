"""The import graph of src/tieaware has no cycle, function-local imports included.

The graph is built from every module's source (ast): ``import`` and ``from ... import`` statements at
module level and inside functions, and ``importlib.import_module`` calls with a literal name; imports
under ``if TYPE_CHECKING:`` are left out (they never run). A function-local import is allowed for import
speed (a heavy module loaded on first use), never to hide a cycle: with its edges the graph must
still be acyclic, so every module imports only modules below it.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = "tieaware"


def _modules() -> dict[str, tuple[Path, bool]]:
    """{dotted name: (path, is a package)} of every module under src/tieaware."""
    found = {}
    for path in sorted((SRC / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        found[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return isinstance(test, ast.Name) and test.id == "TYPE_CHECKING" or \
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"


def _resolved(package: str, level: int, module: str | None) -> str:
    """The absolute name of ``from {'.' * level}{module} import ...`` in `package`."""
    if not level:
        return module or ""
    base = package.split(".")[:len(package.split(".")) - level + 1]
    return ".".join(base + ([module] if module else []))


class _Imports(ast.NodeVisitor):
    """(target module, line, function-local) of every import a module makes at run time."""

    def __init__(self, name: str, is_package: bool, known: dict, root: str = PACKAGE):
        self.package = name if is_package else name.rpartition(".")[0]
        self.known = known
        self.root = root
        self.depth = 0
        self.found: list[tuple[str, int, bool]] = []

    def _add(self, target: str, node: ast.AST) -> None:
        while target and target not in self.known:  # `import a.b.attr`: the module part
            target = target.rpartition(".")[0]
        if target.split(".")[0] == self.root:
            self.found.append((target, node.lineno, self.depth > 0))

    def visit_If(self, node: ast.If) -> None:
        if _is_type_checking(node.test):
            for child in node.orelse:
                self.visit(child)
        else:
            self.generic_visit(node)

    def visit_FunctionDef(self, node) -> None:
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._add(alias.name, node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        base = _resolved(self.package, node.level, node.module)
        for alias in node.names:
            submodule = f"{base}.{alias.name}"
            self._add(submodule if submodule in self.known else base, node)  # `from pkg import submodule`

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        if name == "import_module" and node.args and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, str):
            text = node.args[0].value
            level = len(text) - len(text.lstrip("."))
            self._add(_resolved(self.package, level, text.lstrip(".") or None), node)
        self.generic_visit(node)


def import_graph() -> dict[str, list[tuple[str, int, bool]]]:
    """{module: [(imported module of this package, line, function-local), ...]}."""
    known = _modules()
    graph = {}
    for name, (path, is_package) in known.items():
        visitor = _Imports(name, is_package, known)
        visitor.visit(ast.parse(path.read_text(encoding="utf-8"), str(path)))
        graph[name] = [edge for edge in visitor.found if edge[0] != name]
    return graph


def find_cycle(graph: dict) -> list[str] | None:
    """One cycle of the graph as the modules along it (the first repeated at the end), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for target, _, _ in graph.get(node, ()):
            if state.get(target) == 1:
                return path[path.index(target):] + [target]
            if target not in state:
                cycle = visit(target)
                if cycle:
                    return cycle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            cycle = visit(node)
            if cycle:
                return cycle
    return None


def _describe(graph: dict, cycle: list[str]) -> str:
    steps = []
    for source, target in zip(cycle, cycle[1:]):
        line, local = next((line, local) for t, line, local in graph[source] if t == target)
        steps.append(f"{source} -> {target} (line {line}{', inside a function' if local else ''})")
    return "; ".join(steps)


def test_the_import_graph_of_the_package_has_no_cycle():
    graph = import_graph()
    assert len(graph) > 40 and graph["tieaware.evaluation"], "the graph should hold the whole package"
    cycle = find_cycle(graph)
    assert cycle is None, f"import cycle: {_describe(graph, cycle)}"


def test_engine_sits_below_its_callers():
    """The engine imports the readers, and evaluate, streaming and compare import it, never the reverse."""
    graph = import_graph()
    below_engine = {target for target, _, _ in graph["tieaware.engine"]}
    assert not below_engine & {"tieaware.evaluation", "tieaware.streaming", "tieaware.comparison"}
    assert "tieaware.engine" in {target for target, _, _ in graph["tieaware.evaluation"]}
    assert "tieaware.engine" in {target for target, _, _ in graph["tieaware.streaming"]}


@pytest.mark.parametrize("source, expected", [
    ("from . import b\n", ["p.b"]),
    ("def f():\n    from .b import x\n", ["p.b"]),
    ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import b\n", []),
    ("import importlib\nimportlib.import_module('.b', __package__)\n", ["p.b"]),
])
def test_the_graph_sees_every_kind_of_import_that_runs(source, expected):
    """The checker itself: function-local and import_module imports count, TYPE_CHECKING ones do not,
    and a cycle through a function-local import is found."""
    known = {"p": None, "p.a": None, "p.b": None}
    visitor = _Imports("p.a", False, known, root="p")
    visitor.visit(ast.parse(source))
    assert [target for target, _, _ in visitor.found] == expected
    assert find_cycle({"p.a": [("p.b", 1, False)], "p.b": [("p.a", 3, True)]}) == ["p.a", "p.b", "p.a"]




def private_imports() -> set[tuple[str, str, str]]:
    """(importer, module, name) of every private name (``_x``, not ``__x__``) imported from another module
    of the package; a private submodule imported inside its own package is not one."""
    known = _modules()
    found = set()
    for name, (path, is_package) in known.items():
        package = name if is_package else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if not isinstance(node, ast.ImportFrom):
                continue
            base = _resolved(package, node.level, node.module)
            if base.split(".")[0] != PACKAGE:
                continue
            for alias in node.names:
                private = alias.name.startswith("_") and not alias.name.endswith("__")
                own_submodule = f"{base}.{alias.name}" in known and base == package
                if private and not own_submodule:
                    found.add((name, base, alias.name))
    return found


def test_no_module_imports_private_names_of_another():
    """Each module has a public face: what another module needs from it has a public name."""
    assert private_imports() == set()
