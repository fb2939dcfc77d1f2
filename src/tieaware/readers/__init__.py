"""Readers: the user's qrels and runs as the arrays the engine reads, one module per input kind.

Loading (every input as a ranx object or ``{qid: {docid: value}}`` with string ids):

* `load`: `load_qrels` / `load_run` pick the reader of an input's kind; `file_format` that of a path.
* `mappings`: dicts of dicts, parsed JSON or LZ4; `records`: ir_measures / ir_datasets records;
  `dataframes`: pandas DataFrames and Parquet files; `files`: JSON, LZ4, JSONL predictions and
  ``qid<TAB>docid<TAB>score`` files, and open file objects; `mteb`: MTEB predictions files.
* `text`: UTF-8 text files, plain or compressed; `ids`: the id rule of every container;
  `kinds`: what kind of input an object is (ranx, pandas), without importing ranx or pandas.

Grouping (a loaded qrels/run pair as the judged tie groups the metric kernels read):

* `pairs`: a qrels/run pair as `lists.RankedLists`, by the reader of its kind; ranx conversions cached.
* `lists`: `RankedLists`, the judged tie groups every metric kernel reads, and `ListsBuilder`.
* `judgments`: the qrels' judgments (dict or columns) as the group kernels read them.
* `dicts`: a run of Python dicts, read chunk by chunk; `dict_arrays`: dicts as flat arrays.
* `columns`: a run as columns, as a TREC file's reader gives them.
* `typed_dicts`: one jitted pass copies the numba typed dict inside a ranx object into flat arrays;
  `ranx`: a ranx Run's copy read as columns.

* `trec_files`: TREC run and qrels files, by one compiled pass in blocks of whole lines; `raw_files`:
  files read once as bytes, plain or compressed, from a path, a pipe or ``-``.

`tieaware.inputs` is the public face of loading.
Importing this package imports none of its modules.
"""
