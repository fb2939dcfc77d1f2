"""Readers: the user's inputs as the arrays the engine reads, one module per input kind.

* `lists`: `RankedLists`, the judged tie groups every metric kernel reads, and how they are built.
* `typed_dicts`: jitted passes over the numba typed dicts inside ranx ``Run``/``Qrels`` objects.

TREC files are read by `tieaware.trec_files`; dicts, records and DataFrames are checked by
`tieaware.inputs`. Importing this package imports none of its modules.
"""
