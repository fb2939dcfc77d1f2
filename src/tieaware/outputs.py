"""Output files that never lie: each is written under a temporary name in its own folder and renamed
over the target only once complete, so a failure part-way leaves no file (and no older file
half-replaced); an output that is one of the inputs is refused before anything is read. TREC runs are
written by `write_trec_run`, in trec_eval's order, with scores that read back exactly.

Ids are written exactly or not at all: a query id UTF-8 cannot encode (a lone surrogate such as
``"\\udcff"``, which Python strings and JSON escapes can hold but no UTF-8 file can) is refused
with an error naming it, since any escaped form (``\\udcff``, a replacement character) could be
another query's id. Evaluating such ids and reading ``.per_query`` in Python work.
"""
from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import TextIO

from .errors import InputError
from .readers.raw_files import STDIN


@contextlib.contextmanager
def atomic_output(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a fresh temporary path next to ``path`` (same folder and suffix, hidden name) for the
    caller to write; rename it to ``path`` when the block ends without an exception, else remove it.

    Raises:
        OSError: the folder cannot be written.
    """
    path = Path(path)
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(4)}.part{path.suffix}")
    os.close(os.open(temporary, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666))  # the umask's permissions
    try:
        yield temporary
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def check_utf8_ids(ids: Iterable[str], where: str) -> None:
    """Refuse query ids that UTF-8 cannot encode (lone surrogates) before an output is written.

    Raises:
        InputError: naming ``where``, the first such id and how many there are.
    """
    ids = list(ids)
    try:
        "".join(ids).encode("utf-8")
    except UnicodeEncodeError:
        bad = [i for i in ids if not _utf8(i)]
        raise InputError(f"{where}: query id {bad[0]!r} ({len(bad)} such ids) holds a lone surrogate, which no "
                         "UTF-8 output can hold, and an escaped form could be another id: decode the ids "
                         "properly (e.g. bytes.decode('utf-8', 'replace')) before evaluating.") from None


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _same_file(a: Path, b: Path) -> bool:
    if a.resolve() == b.resolve():
        return True
    try:
        return os.path.samefile(a, b)  # hard links, case-insensitive file systems
    except OSError:  # one does not exist (yet)
        return False


def check_outputs(outputs: Iterable[str | os.PathLike[str] | None], inputs: Iterable[object]) -> None:
    """Refuse an output path that is one of the input paths (or the same file under another name).

    Args:
        outputs: output paths; None entries are skipped.
        inputs: input paths; None entries and objects that are not paths (dicts, DataFrames) are skipped.

    Raises:
        InputError: naming the output and the input it would overwrite.
    """
    paths = [Path(p) for p in inputs if isinstance(p, (str, os.PathLike)) and str(p) != STDIN]
    for output in outputs:
        if output is None:
            continue
        for source in paths:
            if _same_file(Path(output), source):
                raise InputError(f"output {str(output)!r} is the input {str(source)!r}: it would be overwritten; "
                                 "write to another path.")


def write_trec_run(run: Mapping[str, Mapping[str, float]], name: str, handle: TextIO) -> int:
    """Write ``{qid: {docid: score}}`` to ``handle`` as a TREC run tagged ``name``, in trec_eval's order
    (score desc, doc id desc), scores as ``repr(float)``, which round-trips every float exactly; returns
    the number of lines."""
    lines = 0
    for qid, docs in run.items():
        ranked = sorted(docs.items(), key=lambda item: (item[1], item[0]), reverse=True)
        for rank, (docid, score) in enumerate(ranked, 1):
            handle.write(f"{qid} Q0 {docid} {rank} {float(score)!r} {name}\n")
        lines += len(ranked)
    return lines
