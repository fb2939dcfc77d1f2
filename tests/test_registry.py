"""`tieaware.registry`: one `Family` record per metric family, the one home of every family fact."""
import ast
import subprocess
import sys
from pathlib import Path

import pytest

from tieaware.cli import _trec_eval_name
from tieaware.engine import ir_measures_order
from tieaware.metrics import markdown_table, parse_metric
from tieaware.registry import FAMILIES, NAMES, TREC_DEFAULT_CUTOFFS, TREC_GROUPS, TREC_PRINT_ORDER, family

SRC = Path(__file__).resolve().parents[1] / "src" / "tieaware"
#: collections naming several families outside the registry, each with why it stays where it is
ALLOWED: set[tuple[str, str]] = set()


def test_the_docs_metric_table_has_a_row_per_family_and_gain():
    """docs/evaluate.md holds `markdown_table()` (tests/test_metric_registry.py); it is built from the records."""
    labels = [line.split("|")[1].strip() for line in markdown_table().splitlines()[2:]]
    assert {label.split(" ")[0] for label in labels} == set(FAMILIES)
    assert len(labels) == len({(name.family, name.gain) for name in NAMES})


def test_importing_the_registry_loads_no_kernel():
    code = ("import sys, tieaware.registry as r; r.FAMILIES['ndcg'].kernel_module; "
            "assert 'numba' not in sys.modules and 'numpy' not in sys.modules, sorted(sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("record", FAMILIES.values(), ids=lambda f: f.name)
def test_each_family_names_a_kernel_and_a_warmup_metric_of_its_own(record):
    assert callable(record.stats()) and record.stats().__module__ == record.kernel_module
    assert parse_metric(record.warmup).family == record.name
    assert record.names and all(name.family == record.name for name in record.names)


@pytest.mark.parametrize("record", [f for f in FAMILIES.values() if f.trec or f.trec_cut], ids=lambda f: f.name)
def test_trec_eval_base_names_parse_to_their_family_and_print_as_trec_eval_names(record):
    if record.trec:
        assert parse_metric(record.trec).family == record.name
        assert _trec_eval_name(record.trec, 1) == record.trec
    for k in record.trec_cutoffs or ((7,) if record.trec_cut else ()):
        name = f"{record.trec_cut}_{k}"
        assert (parse_metric(name).family, parse_metric(name).k) == (record.name, k)
        assert _trec_eval_name(f"{record.trec_cut}.{k}", 1) == name


def test_trec_eval_tables_name_only_registered_measures():
    trec_names = {name.name for name in NAMES if name.syntax == "trec_eval"}
    assert {n for f in FAMILIES.values() for n in (f.trec, f.trec_cut) if n} <= trec_names
    assert set(TREC_PRINT_ORDER) <= trec_names and set(TREC_DEFAULT_CUTOFFS) <= trec_names
    for members, _left_out in TREC_GROUPS.values():
        assert set(members) <= trec_names


def test_ir_measures_tie_orders_come_from_the_records():
    assert ir_measures_order("rr", None) == "trec_eval" and ir_measures_order("rr", 10) == "docid_ascending"
    assert ir_measures_order("judged", 5) == "docid_ascending" and ir_measures_order("rbp", None) == "input"
    assert {ir_measures_order(name, 10) for name in FAMILIES} == {"trec_eval", "docid_ascending", "input"}
    with pytest.raises(ValueError, match="unknown metric family"):
        family("ndgc")


def test_parameters_are_declared_as_ir_measures_declares_them():
    pytest.importorskip("ir_measures")
    from ir_measures.measures.base import _NOT_PROVIDED
    from ir_measures.measures.base import registry as measures

    checked = 0
    for name in NAMES:
        if name.syntax != "ir_measures" or name.name not in measures:
            continue  # SetRelP is tieaware's name for ir_measures' SetP(relative=True)
        measure = measures[name.name]  # NumRelRet is NumRet(rel=1)
        for param in name.params:
            info = measure.SUPPORTED_PARAMS[param.name]
            default = measure.params.get(param.name, None if info.default is _NOT_PROVIDED else info.default)
            assert (info.dtype, default, info.desc) == (param.dtype, param.default, param.description), name
            if param.choices:
                assert tuple(info.choices) == param.choices
            checked += 1
    assert checked > 20


def _family_collections(path: Path):
    """(enclosing function or "<module>", family names) of each literal tuple, list or set, dict (its
    keys, nested tuples included) or chain of ``and``/``or`` conditions that names two or more families."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    scopes = [(node.name, node) for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)]

    def scope_of(node):
        inside = [name for name, scope in scopes if scope.lineno <= node.lineno <= scope.end_lineno]
        return inside[-1] if inside else "<module>"

    def named(nodes):
        return sorted({c.value for n in nodes for c in ast.walk(n)
                       if isinstance(c, ast.Constant) and c.value in FAMILIES})

    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            found = named(key for key in node.keys if key is not None)
        elif isinstance(node, ast.Tuple | ast.List | ast.Set):
            found = named(e for e in node.elts if isinstance(e, ast.Constant))
        elif isinstance(node, ast.BoolOp):
            found = named(node.values)
        else:
            continue
        if len(found) >= 2:
            yield scope_of(node), found


def test_every_family_fact_has_one_home():
    """No table of families outside `tieaware.registry`: a tuple, list, set or dict literal naming two
    families anywhere else in src/ is a family fact kept in a second place."""
    found = [(path.name, scope, named) for path in sorted(SRC.rglob("*.py")) if path.name != "registry.py"
             for scope, named in _family_collections(path) if (path.name, scope) not in ALLOWED]
    assert found == []


@pytest.mark.parametrize("source,found", [
    ('WARM = {"ndcg": "ndcg@3", "ap": "map@3"}', ("<module>", ["ap", "ndcg"])),
    ('BASE = {("ap", False): "map", ("rr", False): "recip_rank"}', ("<module>", ["ap", "rr"])),
    ('SETS = ("set_p", "set_f")', ("<module>", ["set_f", "set_p"])),
    ('def order(f, k):\n    return "doc" if f == "judged" or f == "rr" and k else "trec"', ("order", ["judged", "rr"])),
])
def test_the_grep_finds_family_tables_and_conditions(tmp_path, source, found):
    planted = tmp_path / "planted.py"
    planted.write_text(source + "\n")
    assert list(_family_collections(planted)) == [found]
