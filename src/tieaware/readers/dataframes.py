"""Qrels and runs as pandas DataFrames, with the column names of ranx (``q_id``, ``doc_id``,
``score``), ir_measures (``query_id``, ``doc_id``, ``relevance``/``score``) or PyTerrier (``qid``,
``docno``, ``label``/``score``); ids by the id rule (`readers.ids`) whatever the column's dtype.
"""
from __future__ import annotations

from ..errors import InputError
from .ids import all_strings, id_string, put_value


def from_dataframe(df, kind: str) -> dict:
    """``{qid: {docid: value}}`` from a DataFrame with ranx's, ir_measures' or PyTerrier's column names."""
    value_names = ("score",) if kind == "run" else ("relevance", "label", "rel", "score")
    q_col = next((c for c in ("q_id", "query_id", "qid") if c in df.columns), None)
    # docno before docid: PyTerrier results carry both, docid being Terrier's internal number
    d_col = next((c for c in ("doc_id", "docno", "docid") if c in df.columns), None)
    v_col = next((c for c in value_names if c in df.columns), None)
    if q_col is None or d_col is None or v_col is None:
        raise InputError(f"A {kind} DataFrame needs a query column (q_id, query_id or qid), a document column "
                         f"(doc_id, docno or docid) and a value column ({', '.join(value_names)}); "
                         f"it has {list(df.columns)}.")
    out: dict = {}
    qids = _id_column(df, q_col, f"{kind} DataFrame", "query")
    docids = _id_column(df, d_col, f"{kind} DataFrame", "document")
    for row, (qid, docid, value) in enumerate(zip(qids, docids, df[v_col].tolist())):
        put_value(out, qid, docid, value, f"{kind} DataFrame row {row}")
    return out


def _id_column(df, col: str, what: str, role: str) -> list:
    """The ids of DataFrame column `col` as strings, by `id_string`'s rule whatever the dtype: numpy
    and nullable integers as ``str(int)``, strings as they are, categoricals by their categories; a
    float, bool or missing id is an error naming the column and row."""
    import pandas as pd

    series = df[col]
    dtype = series.dtype
    where = f"{what} column {col!r}"
    if isinstance(dtype, pd.CategoricalDtype):
        categories = _id_column(pd.DataFrame({col: dtype.categories}), col, where + " (its categories)", role)
        codes = series.cat.codes.to_numpy()
        if (codes < 0).any():
            row = int((codes < 0).argmax())
            raise InputError(f"{where}, row {row}: the {role} id is missing (NaN); ids are strings or integers.")
        return [categories[c] for c in codes.tolist()]
    if dtype.kind in "iu":  # numpy or nullable integers: C-level conversion, after naming a missing one
        missing = series.isna().to_numpy()
        if missing.any():
            row = int(missing.argmax())
            raise InputError(f"{where}, row {row}: the {role} id is missing ({series.iloc[row]!r}); ids are "
                             "strings or integers.")
        return series.astype("int64" if dtype.kind == "i" else "uint64").astype(str).tolist()
    if dtype.kind in "fcb":
        why = "" if dtype.kind == "b" else " (a float id 1.0 would read as '1.0' and match no '1')"
        raise InputError(f"{where} holds {dtype} {role} ids; ids are strings or integers{why}. Convert the "
                         f"column first: df[{col!r}].astype(int) or .astype(str).")
    ids = series.tolist()
    if all_strings(ids):
        return ids
    return [doc if type(doc) is str else id_string(doc, f"{where}, row {row}: {role}")
            for row, doc in enumerate(ids)]


def from_parquet(path, kind: str) -> dict:
    """``{qid: {docid: value}}`` from a Parquet file holding such a DataFrame."""
    import pandas as pd

    return from_dataframe(pd.read_parquet(path), kind)
