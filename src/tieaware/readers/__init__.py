"""Readers: the user's qrels and runs as the arrays the engine reads, one module per input kind.

* `pairs`: a qrels/run pair as `lists.RankedLists`, by the reader of its kind; ranx conversions cached.
* `lists`: `RankedLists`, the judged tie groups every metric kernel reads, and `ListsBuilder`.
* `judgments`: the qrels' judgments (ranx Qrels or dict) as the group kernels read them.
* `dicts`: a run of Python dicts, read chunk by chunk; `dict_arrays`: dicts as flat arrays.
* `columns`: a run as columns, as a TREC file's reader gives them.
* `ranx`: a ranx Run; `typed_dicts`: jitted passes over the numba typed dicts inside ranx objects.

Dicts, records and DataFrames are loaded and checked by `tieaware.inputs`, TREC files read by
`tieaware.trec_files`. Importing this package imports none of its modules.
"""
