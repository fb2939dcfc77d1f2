"""Qrels and runs in the forms users have them, read without converting by hand.

Accepted for both: ranx ``Qrels``/``Run``; pytrec_eval-style dicts
``{qid: {docid: relevance}}`` / ``{qid: {docid: score}}``; a path (``str`` or
``Path``) to a TREC file (qrels ``qid iter docid rel``, run ``qid Q0 docid rank
score tag``), a ranx-style ``.json`` file, a ``.parquet`` file or a ranx ``.lz4``
file; a pandas DataFrame with ranx's column names (``q_id``, ``doc_id``,
``score``), ir_measures' (``query_id``, ``doc_id``, ``relevance``/``score``) or
PyTerrier's (``qid``, ``docno``, ``label``/``score``); ir_measures / ir_datasets
records (a list, iterator or generator of ``Qrel``/``TrecQrel`` with ``query_id,
doc_id, relevance`` or ``ScoredDoc`` with ``query_id, doc_id, score``, recognised
by those names and read once). MTEB predictions files: `load_mteb_predictions`.
Runs also as sentence-transformers' ``write_predictions`` ``.jsonl`` and as
``qid<TAB>docid<TAB>score`` lines (`read_tsv_run`: a first line of three
tab-separated fields; a TREC run line has six columns). An open file or
``io.StringIO`` is read where a path is (`readers.files.spilled`).

Files may be gzip, bzip2 or xz compressed (recognised by their first bytes,
whatever their name) and may start with a UTF-8 byte-order mark; they are read
once, so a FIFO, process substitution or ``-`` (standard input) works as a path.
TREC files are read by `tieaware.readers.trec_files` and follow trec_eval: columns are
split on ASCII whitespace, blank lines and ``#`` comment lines are skipped, and grades
are integers (a fractional or exponent-written grade, which trec_eval's ``atol`` would
silently truncate, is an error here). A run line has exactly six fields and a qrels line
four (trec_eval drops a run line's fields after the sixth, and with them the second of
two records glued on one line), and a carriage return with more text after it on its
line (bare CR line endings, whole or mixed) is an error: trec_eval reads it as a space.
Scores must be numbers as C's ``atof`` reads them the same way
(no ``0_4``, no non-ASCII digits); ``inf``/``-inf`` are ordinary scores.

Ids are strings, as trec_eval reads them; one rule for every container
(`id_string`): integer query or document ids in dicts, records and DataFrames
(numpy, nullable and categorical columns alike) are converted with ``str`` (a
run keyed by ``1`` matches qrels keyed by ``"1"``); float (even ``1.0``), bool
and missing ids are errors naming the container, query and document, so the
same data gives the same number whatever container it came in. (ranx objects
hold string ids only.) Values follow one rule too: scores and grades are numbers,
bools being 0 and 1 as Python and numpy read them; None and NaN are errors.

ranx is imported only when a ranx object is passed (it is recognised through
``sys.modules``, so reading a dict never imports ranx).

Also the text files HPS scores (`read_texts`: BEIR JSONL, MS MARCO TSV, JSON), and the one TREC
writer, `write_trec_run` (from `tieaware.outputs`).

Nothing here modifies the caller's objects. Errors name the file and line, query or
document at fault.

This module is the public face of reading: the readers, one module per input kind, live in
`tieaware.readers` (`readers.load` picks one for each input).
"""
from __future__ import annotations

from .outputs import write_trec_run
from .readers.files import read_tsv_run
from .readers.ids import id_string, put_value, string_keys
from .readers.kinds import is_dataframe, is_ranx_qrels, is_ranx_run
from .readers.load import FORMAT_NAMES, QrelsLike, RunLike, file_format, load_qrels, load_run, read_trec_file
from .readers.mteb import MTEB_META, load_mteb_predictions
from .readers.text import file_stem, iter_lines, open_text, read_text, read_texts


def read_trec_run(path) -> dict:
    """Read a TREC run file (plain or compressed) into ``{qid: {docid: score}}``, line order kept.

    The rank column is ignored, as trec_eval does; scores decide the order. A line
    with more than six fields is an error (trec_eval would drop the fields after the sixth).

    Args:
        path: a ``qid Q0 docid rank score tag`` file, plain or gzip/bzip2/xz-compressed.

    Returns:
        ``{qid: {docid: score}}`` with float scores.

    Raises:
        InputError: a malformed line, named by file and line number (a missing file is a
            `MissingFileError`, also a `FileNotFoundError`).

    Examples:
        >>> import tieaware
        >>> with open("run.txt", "w") as f:
        ...     print("q1 Q0 d1 1 0.5 bm25", file=f)
        ...     print("q1 Q0 d2 2 0.5 bm25", file=f)
        >>> tieaware.read_trec_run("run.txt")
        {'q1': {'d1': 0.5, 'd2': 0.5}}
    """
    return read_trec_file(path, "run")


def read_trec_qrels(path) -> dict:
    """Read a TREC qrels file (plain or compressed) into ``{qid: {docid: grade}}``; grades are integers.

    Args:
        path: a ``qid iter docid grade`` file, plain or gzip/bzip2/xz-compressed.

    Returns:
        ``{qid: {docid: grade}}`` with integer grades.

    Raises:
        InputError: a malformed line or a fractional grade, named by file and line number (a
            missing file is a `MissingFileError`, also a `FileNotFoundError`).

    Examples:
        >>> import tieaware
        >>> with open("qrels.txt", "w") as f:
        ...     print("q1 0 d1 1", file=f)
        ...     print("q1 0 d2 0", file=f)
        >>> tieaware.read_trec_qrels("qrels.txt")
        {'q1': {'d1': 1, 'd2': 0}}
    """
    return read_trec_file(path, "qrels")


def without_identical_ids(run):
    """The run without documents whose id equals their query's id: BEIR's convention
    (``EvaluateRetrieval.evaluate(..., ignore_identical_ids=True)``, for corpora where a query is
    also a document). BEIR pops them from the caller's dict; here the caller's run is never
    changed: a ranx ``Run`` or dict without such documents comes back as it is, otherwise a new
    one (a ranx ``Run`` keeps its name and order, so ranx's tie order is that of the run
    with those documents popped). Ids are compared as strings (tieaware's id rule).
    """
    run = load_run(run)
    if is_ranx_run(run):
        import ranx

        from .readers.typed_dicts import holds_own_ids, without_own_ids  # numba, imported for a ranx Run

        if not holds_own_ids(run.run):
            return run
        table, dropped = without_own_ids(run.run)
        if not dropped:
            return run
        out = ranx.Run(name=run.name)
        out.run, out.sorted = table, run.sorted
        return out
    if not any(q in docs for q, docs in run.items()):
        return run
    return {q: {d: v for d, v in docs.items() if d != q} if q in docs else docs for q, docs in run.items()}


__all__ = ["FORMAT_NAMES", "MTEB_META", "QrelsLike", "RunLike", "file_format", "file_stem", "id_string",
           "is_dataframe", "is_ranx_qrels", "is_ranx_run", "iter_lines", "load_mteb_predictions", "load_qrels",
           "load_run", "open_text", "put_value", "read_text", "read_texts", "read_trec_qrels", "read_trec_run",
           "read_tsv_run", "string_keys", "without_identical_ids", "write_trec_run"]
