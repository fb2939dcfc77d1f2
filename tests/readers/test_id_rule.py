"""One id rule for every container (`tieaware.readers.ids.id_string`): dicts, ir_measures records and
DataFrames of every dtype give the same ids; float, bool and missing ids are refused everywhere,
never read as "1.0" or "True" that match nothing."""
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tieaware
from tieaware.errors import InputError
from tieaware.inputs import id_string, load_qrels, load_run

ir_measures = pytest.importorskip("ir_measures")

#: DataFrame dtypes that hold integer ids, and how a column of Python ints becomes one
INT_DTYPES = ["int64", "uint64", "Int64", "UInt64", "category", "object"]
#: dtypes that hold the same ids as strings
STR_DTYPES = ["object", "string", "category"]
#: dtypes whose ids are refused whole (the column is named)
REFUSED_DTYPES = ["float64", "float32", "Float64", "boolean", "bool"]


def _rows(table: dict) -> list:
    return [(q, d, v) for q, docs in table.items() for d, v in docs.items()]


def _frame(rows, kind: str, q_dtype: str, d_dtype: str) -> pd.DataFrame:
    value = "score" if kind == "run" else "relevance"
    q, d, v = zip(*rows)
    return pd.DataFrame({"query_id": pd.Series(q).astype(q_dtype), "doc_id": pd.Series(d).astype(d_dtype),
                         value: list(v)})


def _records(rows, kind: str) -> list:
    make = ir_measures.ScoredDoc if kind == "run" else ir_measures.Qrel
    return [make(q, d, v) for q, d, v in rows]


def _containers(table: dict, kind: str, int_ids: bool):
    """The same table in each container: a dict, records and DataFrames of each dtype."""
    rows = _rows(table)
    yield "dict", table
    yield "records", _records(rows, kind)
    for dtype in INT_DTYPES if int_ids else STR_DTYPES:
        yield f"DataFrame {dtype}", _frame(rows, kind, dtype, dtype)


TABLES = st.dictionaries(st.integers(0, 50), st.dictionaries(st.integers(0, 2**40), st.integers(0, 3),
                                                               min_size=1, max_size=6), min_size=1, max_size=4)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(TABLES, st.booleans())
def test_every_container_reads_integer_ids_as_dicts_do(table, as_strings):
    if as_strings:
        table = {str(q): {str(d): g for d, g in docs.items()} for q, docs in table.items()}
    expected = {str(q): {str(d): g for d, g in docs.items()} for q, docs in table.items()}
    run = {q: {d: float(i % 3) for i, d in enumerate(docs)} for q, docs in table.items()}
    want = tieaware.evaluate(expected, {str(q): {str(d): s for d, s in docs.items()} for q, docs in run.items()},
                             "ndcg@3")
    for name, qrels in _containers(table, "qrels", not as_strings):
        assert load_qrels(qrels) == expected, name
    for name, container in _containers(run, "run", not as_strings):
        assert float(tieaware.evaluate(expected, container, "ndcg@3")) == float(want), name
        assert tieaware.evaluate(expected, container, "ndcg@3").per_query.equals(want.per_query), name


BAD_IDS = [1.0, 2.5, np.float64(3.0), float("nan"), True, np.bool_(False), None, pd.NA, b"7"]


@pytest.mark.parametrize("bad", BAD_IDS, ids=repr)
@pytest.mark.parametrize("where", ["query", "document"])
@pytest.mark.parametrize("container", ["dict", "records", "DataFrame object"])
@pytest.mark.parametrize("kind", ["run", "qrels"])
def test_a_bad_id_is_refused_in_every_container(bad, where, container, kind):
    table = {"q": {"a": 1, "b": 0}}
    table = {bad: table["q"]} if where == "query" else {"q": {**table["q"], bad: 1}}
    load = load_run if kind == "run" else load_qrels
    if container == "dict":
        obj = table
    elif container == "records":
        obj = _records(_rows(table), kind)
    else:
        obj = _frame(_rows(table), kind, "object", "object")
    with pytest.raises(InputError, match=rf"{kind} (dict|record|DataFrame).*{where} id .*ids are strings or integers"):
        load(obj)
    if kind == "run":  # the evaluation path reads a dict's document ids itself
        with pytest.raises(InputError, match=f"{where} id"):
            tieaware.evaluate({"q": {"a": 1}} if where == "document" else {bad: {"a": 1}}, obj, "ndcg")


@pytest.mark.parametrize("dtype", REFUSED_DTYPES)
@pytest.mark.parametrize("column", ["query_id", "doc_id"])
def test_a_float_or_bool_id_column_is_refused_naming_it(dtype, column):
    """The class of the reported defect: a float doc-id column (after a NaN was dropped) read as "1.0"."""
    frame = pd.DataFrame({"query_id": [1, 1], "doc_id": [1, 0], "score": [0.5, 0.4]})
    frame[column] = frame[column].astype(dtype)
    with pytest.raises(InputError, match=rf"column '{column}' holds {dtype} .*astype\(int\) or \.astype\(str\)"):
        tieaware.evaluate({"1": {"1": 1}}, frame, "ndcg@10")
    # after the suggested conversion, the number is right
    if dtype != "bool" and dtype != "boolean":
        frame[column] = frame[column].astype(int)
        assert float(tieaware.evaluate({"1": {"1": 1}}, frame, "ndcg@10")) == 1.0


@pytest.mark.parametrize("dtype", ["Int64", "string", "category", "object"])
def test_a_missing_id_in_a_nullable_column_is_refused(dtype):
    values = [1, None] if dtype in ("Int64", "object") else ["1", None]
    frame = pd.DataFrame({"query_id": ["1", "1"], "doc_id": pd.Series(values, dtype=dtype), "score": [0.5, 0.4]})
    with pytest.raises(InputError, match=r"column 'doc_id'.*row 1.*missing"):
        load_run(frame)


def test_id_string_is_the_rule():
    assert id_string("a", "x") == "a" and type(id_string(np.str_("a"), "x")) is str
    assert id_string(7, "x") == id_string(np.int64(7), "x") == id_string(np.uint8(7), "x") == "7"
    for bad in BAD_IDS:
        with pytest.raises(InputError, match="^run dict, query 'q': document id "):
            id_string(bad, "run dict, query 'q': document")
    assert math.isnan(BAD_IDS[3])
