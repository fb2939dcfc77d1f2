"""Data shipped with tieaware: the Cranfield 1400 test collection and all-MiniLM-L6-v2 runs on it.

Every file is gzip-compressed and read as it is by tieaware's readers
(`tieaware.read_trec_qrels`, `tieaware.read_trec_run`, `tieaware.evaluate` on a
path, `tieaware.inputs.open_text`). Sources, counts and the two traps of the
collection (query numbering, inverted grades) are in ``README.md`` beside this
module.

Sources and licences:

* Cranfield 1400 (Cleverdon, Cranfield II): 1,400 documents, 225 queries,
  1,837 graded judgements, from the Glasgow IR group's distribution via GitHub
  ``noramtboraas/information-retrieval`` at commit
  ``4ea1b8e02da1db64b68b0364d50620b3c95528dc``. No licence is stated; it has been
  redistributed freely for research for decades. Attribution: "Cranfield
  collection, via Univ. of Glasgow IR group".
* Runs of sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0) in fp32, bf16 and
  bf16 with an fp32 dot product, top 100 plus every document tied with the
  100th, and trec_eval / tie-expected reference values: generated for tieaware,
  MIT.

Examples:
    >>> from tieaware.datasets import cranfield
    >>> data = cranfield()
    >>> data.qrels.name, sorted(data.runs)
    ('qrels.trec.gz', ['bf16', 'bf16-upcast', 'fp32'])
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Literal, overload

from ..errors import MissingFileError

__all__ = ["DATA_DIR", "CranfieldFiles", "cranfield", "path"]

DATA_DIR = Path(__file__).resolve().parent
"""The folder holding the bundled data files."""

RUN_TAGS = ("fp32", "bf16", "bf16-upcast")


def path(relative: str | Path) -> Path:
    """The path of a bundled data file, e.g. ``path("cranfield/qrels.trec.gz")``.

    Args:
        relative: the file's path inside the data folder.

    Returns:
        The file's absolute path.

    Raises:
        FileNotFoundError: If no such file was installed (a `MissingFileError`), naming
            the file, the data folder and the files it does hold.
    """
    target = DATA_DIR / relative
    if not target.is_file():
        present = sorted(str(p.relative_to(DATA_DIR)) for p in DATA_DIR.rglob("*.gz"))
        raise MissingFileError(
            f"tieaware bundled data file {str(relative)!r} not found in {DATA_DIR} "
            f"(files there: {', '.join(present) or 'none'}). The data ships inside the tieaware package; "
            f"reinstall tieaware if files are missing.")
    return target


@dataclass(frozen=True)
class CranfieldFiles:
    """Paths of the bundled Cranfield files (all gzip-compressed).

    Attributes:
        qrels (Path): ``cranfield/qrels.trec.gz``: 1,837 judgements for 225 queries, grades 1..4.
        queries (Path): ``cranfield/queries.jsonl.gz``: 225 ``{"_id", "text", "orig_I"}`` records.
        corpus (Path): ``cranfield/corpus.jsonl.gz``: 1,400 ``{"_id", "title", "text", "author", "bib"}``
            records.
        runs (Mapping[str, Path]): all-MiniLM-L6-v2 TREC runs by tag: ``"fp32"``, ``"bf16"`` (many
            exact ties), ``"bf16-upcast"`` (bf16 embeddings, fp32 dot product).
        reference_values (Path): ``cranfield/runs/reference_values.json.gz``: per-query and mean
            trec_eval and tie-expected values of the three runs.
    """

    qrels: Path
    queries: Path
    corpus: Path
    runs: Mapping[str, Path] = field(default_factory=dict)
    reference_values: Path | None = None


def cranfield(root: str | Path | None = None) -> CranfieldFiles:
    """The bundled Cranfield 1400 collection and all-MiniLM-L6-v2 runs on it.

    Source: Glasgow IR group's distribution of Cranfield II (via GitHub
    ``noramtboraas/information-retrieval``, commit ``4ea1b8e0``; no licence stated,
    freely redistributed research data). Runs generated for tieaware (MIT) with
    sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0).

    Args:
        root: A folder with the same layout to read instead of the bundled data
            (``qrels.trec``, ``queries.jsonl``, ``corpus.jsonl``,
            ``runs/minilm-<tag>.trec``, ``runs/reference_values.json``), each file plain
            or gzipped (``.gz``). There the runs and reference values are optional:
            ``runs`` holds the runs found, ``reference_values`` is None when absent.

    Returns:
        A frozen `CranfieldFiles` of `pathlib.Path`: ``qrels``, ``queries``, ``corpus``,
        ``runs`` (a read-only dict by tag ``"fp32"``, ``"bf16"``, ``"bf16-upcast"``)
        and ``reference_values``.

    Raises:
        FileNotFoundError: If a file is missing from the installation (see `path`), or
            qrels, queries or corpus from ``root``.

    Examples:
        >>> import tieaware
        >>> from tieaware.datasets import cranfield
        >>> data = cranfield()
        >>> res = tieaware.evaluate(data.qrels, data.runs["bf16"], "ndcg@10")  # doctest: +SKIP
    """
    if root is None:
        return CranfieldFiles(
            qrels=path("cranfield/qrels.trec.gz"),
            queries=path("cranfield/queries.jsonl.gz"),
            corpus=path("cranfield/corpus.jsonl.gz"),
            runs=MappingProxyType({tag: path(f"cranfield/runs/minilm-{tag}.trec.gz") for tag in RUN_TAGS}),
            reference_values=path("cranfield/runs/reference_values.json.gz"),
        )
    root = Path(root)
    runs = {tag: found for tag in RUN_TAGS if (found := _plain_or_gz(root / "runs" / f"minilm-{tag}.trec"))}
    return CranfieldFiles(
        qrels=_plain_or_gz(root / "qrels.trec", required=True),
        queries=_plain_or_gz(root / "queries.jsonl", required=True),
        corpus=_plain_or_gz(root / "corpus.jsonl", required=True),
        runs=MappingProxyType(runs),
        reference_values=_plain_or_gz(root / "runs" / "reference_values.json"),
    )


@overload
def _plain_or_gz(target: Path, required: Literal[True]) -> Path: ...
@overload
def _plain_or_gz(target: Path, required: bool = False) -> Path | None: ...
def _plain_or_gz(target: Path, required: bool = False) -> Path | None:
    """``target`` or ``target.gz``, whichever exists (plain first)."""
    for candidate in (target, target.with_name(target.name + ".gz")):
        if candidate.is_file():
            return candidate
    if required:
        raise MissingFileError(f"Cranfield folder {str(target.parent)!r} has neither {target.name} nor "
                                f"{target.name}.gz.")
    return None
