"""Files read once as bytes: plain or gzip/bzip2/xz compressed (recognised by their first bytes), from
a path, a FIFO, process substitution or ``-`` (standard input). Standard library only."""
from __future__ import annotations

import bz2
import contextlib
import gzip
import io
import lzma
import os
import sys
from collections.abc import Iterator
from pathlib import Path

from ..errors import InputError, MissingFileError

MAGIC = ((b"\x1f\x8b", gzip.open, "gzip"), (b"BZh", bz2.open, "bzip2"), (b"\xfd7zXZ\x00", lzma.open, "xz"))
DECOMPRESSION_ERRORS = (OSError, EOFError, lzma.LZMAError, ValueError)

#: The path that names standard input (a run or qrels read from a pipe).
STDIN = "-"


def checked_path(path, kind: str) -> Path:
    path = Path(path)
    if str(path) == STDIN:
        return path
    if path.is_dir():
        raise MissingFileError(f"{kind} path {str(path)!r} is a directory, not a file.")
    if not path.exists():
        raise MissingFileError(f"{kind} file {str(path)!r} does not exist.")
    return path


class _Prefixed(io.RawIOBase):
    """A stream whose first bytes were already read (``head``): they come first, then the rest."""

    def __init__(self, head: bytes, rest: io.BufferedIOBase):
        self._head, self._rest = memoryview(head), rest

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        if self._head:
            n = min(len(buffer), len(self._head))
            buffer[:n] = self._head[:n]
            self._head = self._head[n:]
            return n
        return self._rest.readinto(buffer)

    def close(self) -> None:
        if not self.closed:
            self._rest.close()
        super().close()


@contextlib.contextmanager
def open_binary(path: Path, kind: str) -> Iterator[tuple[io.BufferedIOBase, str]]:
    """(the file's bytes, its compression: "gzip", "bzip2", "xz" or ""), decompressed when its first bytes
    say so. The file is opened once and read once, so a pipe, a FIFO or ``-`` (standard input) loses
    nothing to the probe."""
    try:
        raw = os.fdopen(os.dup(sys.stdin.fileno()), "rb") if str(path) == STDIN else open(path, "rb")
    except OSError as exc:
        raise InputError(f"Cannot read {kind} file {str(path)!r}: {exc.strerror or exc}.") from None
    with raw:
        try:
            head = raw.read(6)
        except OSError as exc:
            raise InputError(f"Cannot read {kind} file {str(path)!r}: {exc.strerror or exc}.") from None
        with io.BufferedReader(_Prefixed(head, raw), 1 << 20) as stream:
            opener, name = next(((opener, name) for magic, opener, name in MAGIC if head.startswith(magic)),
                                (None, ""))
            if opener is None:
                yield stream, name
            else:
                with opener(stream, "rb") as handle:
                    yield handle, name
