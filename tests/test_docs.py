"""Every ```python block in README.md and docs/*.md runs as it is written.

Each file's blocks run in order in one namespace (a later block may use what an earlier one
defined), with a temporary folder as the working directory. Blocks fenced as anything else
(```text, ```bash, ```console, a bare fence) are shown, not run.
"""
import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# docs/ecosystem.md is not among them: tests/test_ecosystem.py runs each of its blocks in a fresh namespace
FILES = [ROOT / "README.md", *sorted(path for path in (ROOT / "docs").glob("*.md") if path.name != "ecosystem.md")]
FENCE = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.S | re.M)


def python_blocks(text: str) -> list[tuple[int, str]]:
    """(line number, source) of each ```python block, in order."""
    return [(text.count("\n", 0, match.start()) + 2, match.group(1)) for match in FENCE.finditer(text)]


def test_the_fence_pattern_finds_python_blocks_only():
    text = "x\n```python\na = 1\n```\n```text\nb = 2\n```\n```bash\nc\n```\n```python\nd = a\n```\n"
    assert python_blocks(text) == [(3, "a = 1\n"), (12, "d = a\n")]


@pytest.mark.slow
@pytest.mark.parametrize("path", FILES, ids=[p.relative_to(ROOT).as_posix() for p in FILES])
def test_python_blocks_run(path, tmp_path, monkeypatch):
    blocks = python_blocks(path.read_text(encoding="utf-8"))
    if not blocks:
        return  # a page with no Python to run
    if any("import torch" in source or "tieaware.hps" in source for _, source in blocks):
        pytest.importorskip("torch")  # the hps extra; CI installs it
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    namespace = {"__name__": f"docs_{path.stem}"}
    for line, source in blocks:
        try:
            exec(compile(source, f"{path.name}:{line}", "exec"), namespace)  # noqa: S102
        except Exception as exc:
            raise AssertionError(f"{path.relative_to(ROOT)}, the python block at line {line} failed: "
                                 f"{type(exc).__name__}: {exc}") from exc
    assert os.getcwd() == str(tmp_path)


def test_readme_tie_example_says_what_the_tools_return():
    ranx = pytest.importorskip("ranx")
    pytrec_eval = pytest.importorskip("pytrec_eval")
    import tieaware

    qrels = {"q1": {"d1": 1, "d3": 1}}
    run = {"q1": {"d1": 0.75, "d2": 0.75, "d3": 0.5, "d4": 0.5}}
    assert ranx.evaluate(qrels, run, "mrr") == 0.5
    assert ranx.evaluate(ranx.Qrels(qrels), ranx.Run(run), "mrr") == 1.0
    assert pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(run)["q1"]["recip_rank"] == 0.5
    res = tieaware.evaluate(qrels, run, "mrr")
    assert res == 0.75 and (res.min, res.max, res.range, res.bias) == (0.5, 1.0, 0.5, -0.25)


LINK = re.compile(r"\]\(([^)#\s]+)(#[^)\s]*)?\)")


def test_readme_links_point_to_files_that_exist():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    targets = [m.group(1) for m in LINK.finditer(text) if "://" not in m.group(1)]
    assert targets, "the README links to no file"
    missing = [t for t in targets if not (ROOT / t).exists()]
    assert not missing, f"README links to missing files: {missing}"


def test_readme_performance_rows_come_from_the_generated_benchmark_table():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Performance", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and "---" not in line]
    assert len(rows) >= 3, "the README's performance table is missing"
    generated = (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    assert [row for row in rows if row not in generated] == []


def _tieaware_ratios(generated: str, marker: str, lines: str) -> tuple[float, float]:
    """(time ratio, peak RSS ratio) to trec_eval of the `tieaware eval` row that bench_trec_files wrote
    under ``marker`` for ``lines`` (e.g. "3,000,000")."""
    table = generated.split(f"<!-- begin {marker} -->", 1)[1].split(f"\n{lines} lines", 1)[1].split("\n\n", 2)[1]
    row = next(line for line in table.splitlines() if line.startswith("| tieaware eval |"))
    time_ratio, rss_ratio = (float(cell) for cell in row.strip("| ").split(" | ")[3:5])
    return time_ratio, rss_ratio


def test_readme_trec_eval_ratios_come_from_the_generated_benchmark_table():
    """The README's prose ratios to trec_eval are the rows bench_trec_files wrote, rounded: 10M and 3M lines
    with two-decimal scores, 3M lines with scores as repr writes them."""
    sentence = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    generated = (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    time_ratio, rss_ratio = _tieaware_ratios(generated, "bench_trec_files", "10,000,000")
    assert f"{time_ratio:.2f}x trec_eval's time and {rss_ratio:.2f}x its peak memory at 10M lines" in sentence
    time_ratio, _ = _tieaware_ratios(generated, "bench_trec_files", "3,000,000")
    assert f"{time_ratio:.2f}x with two-decimal scores" in sentence
    time_ratio, _ = _tieaware_ratios(generated, "bench_trec_files_repr", "3,000,000")
    assert f"{time_ratio:.2f}x its time at 3M lines with scores as Python's `repr` writes them" in sentence


# ------------------------------------------------------------------ every public name documented
SECTION = {name: re.compile(rf"^\s*(?:{name}):\s*$", re.M) for name in ("Args", "Returns|Yields", "Raises", "Examples")}


def _public_modules() -> list[str]:
    import pkgutil

    import tieaware.integrations

    integrations = [f"tieaware.integrations.{m.name}" for m in pkgutil.iter_modules(tieaware.integrations.__path__)]
    return ["tieaware", "tieaware.datasets", "tieaware.errors", "tieaware.testing", "tieaware.hps", "tieaware.logprobs",
            *integrations]


def _undocumented(module) -> list[str]:
    """Public functions and classes of module (its __all__) without a docstring in Google style
    with an Args section (when it takes arguments) and a Returns section (unless it returns None)."""
    import inspect

    problems = []
    for name in getattr(module, "__all__", None) or [n for n in vars(module) if not n.startswith("_")]:
        obj = getattr(module, name)
        if not (inspect.isfunction(obj) or inspect.isclass(obj)):
            continue
        if getattr(obj, "__module__", "").split(".")[0] not in ("tieaware", "pytest_tieaware"):
            continue  # re-exported from another library (ranx's Qrels and Run)
        doc = inspect.getdoc(obj) or ""
        if not doc.strip():
            problems.append(f"{name}: no docstring")
            continue
        if inspect.isfunction(obj):
            signature = inspect.signature(obj)
            if [p for p in signature.parameters if p not in ("self", "cls")] and not SECTION["Args"].search(doc):
                problems.append(f"{name}: no Args section")
            if signature.return_annotation not in (None, "None") and not SECTION["Returns|Yields"].search(doc):
                problems.append(f"{name}: no Returns section")
    return problems


@pytest.mark.parametrize("name", _public_modules())
def test_every_public_function_and_class_is_documented(name):
    import importlib

    try:
        module = importlib.import_module(name)
    except ImportError as exc:  # an optional extra that is not installed (CI installs them all)
        pytest.skip(f"{name} needs {exc.name}")
    assert _undocumented(module) == []


# ------------------------------------------------------------------ examples and raises of the main API
#: public names that raise no tieaware error on bad input, so need no Raises section
RAISE_NOTHING = {
    "metric_key": "rewrites any string",
}


def _api_modules() -> list[str]:
    """tieaware itself (its __all__) and the integrations."""
    return [name for name in _public_modules()
            if name in ("tieaware", "tieaware.logprobs") or name.startswith("tieaware.integrations.")]


def _api_objects(module) -> list[tuple[str, object]]:
    """(name, object) of the functions and classes a module exports that tieaware defines."""
    import inspect

    found = []
    for name in module.__all__:
        obj = getattr(module, name)
        if (inspect.isfunction(obj) or inspect.isclass(obj)) and obj.__module__.split(".")[0] == "tieaware":
            found.append((name, obj))
    return found


def _missing_sections(name: str, obj) -> list[str]:
    """An Examples section with ``>>>`` code, for every exported function and class; a Raises section for
    functions and for classes users build (those with an Args section), unless in RAISE_NOTHING."""
    import inspect

    doc = inspect.getdoc(obj) or ""
    missing = []
    if not SECTION["Examples"].search(doc) or ">>>" not in doc.split("Examples:", 1)[-1]:
        missing.append("Examples")
    user_built = inspect.isfunction(obj) or SECTION["Args"].search(doc)
    if user_built and name not in RAISE_NOTHING and not SECTION["Raises"].search(doc):
        missing.append("Raises")
    return missing


def _import(name: str):
    import importlib

    try:
        return importlib.import_module(name)
    except ImportError as exc:  # an optional extra that is not installed (CI installs them all)
        pytest.skip(f"{name} needs {exc.name}")


@pytest.mark.parametrize("name", _api_modules())
def test_every_exported_function_and_class_has_examples_and_raises(name):
    module = _import(name)
    assert {n: m for n, obj in _api_objects(module) if (m := _missing_sections(n, obj))} == {}


@pytest.mark.slow
@pytest.mark.parametrize("name", _api_modules())
def test_docstring_examples_run(name, tmp_path, monkeypatch):
    """Every ``>>>`` example of an exported function or class runs and prints what it shows (with its
    module's names in scope, as doctest runs it), in a temporary working directory."""
    import doctest

    module = _import(name)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    finder = doctest.DocTestFinder(recurse=False)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    report: list[str] = []
    for object_name, obj in _api_objects(module):
        for test in finder.find(obj, f"{name}.{object_name}"):
            runner.run(test, out=report.append)
    assert runner.failures == 0, "".join(report)


def test_the_documentation_check_fails_on_an_undocumented_function():
    import types

    module = types.ModuleType("tieaware.fake")

    def documented(x) -> int:
        """What.

        Args:
            x: a number.

        Returns:
            Another.
        """

    def bare(x) -> int:
        """What, without sections."""

    for function in (documented, bare):
        function.__module__ = "tieaware.fake"
    module.__all__ = ["documented", "bare"]
    module.documented, module.bare = documented, bare
    assert _undocumented(module) == ["bare: no Args section", "bare: no Returns section"]
    assert _missing_sections("bare", bare) == ["Examples", "Raises"]
    assert _missing_sections("metric_key", bare) == ["Examples"]


def test_the_example_check_wants_code_under_examples():
    def told(x) -> int:
        """What.

        Raises:
            InputError: never.

        Examples:
            Call it.
        """

    def shown(x) -> int:
        """What.

        Raises:
            InputError: never.

        Examples:
            >>> 1 + 1
            2
        """

    assert _missing_sections("told", told) == ["Examples"]
    assert _missing_sections("shown", shown) == []
