"""Blocks packed with the shortest lines a TREC file can hold: the scan's work arrays are sized by a
bound on the records a block can hold, not by counting its lines, so the densest block must fit."""
import string

import pytest

from tieaware.readers import trec_files
from tieaware.readers.trec_files import read_trec

ONE_BYTE = string.ascii_letters + string.digits


@pytest.mark.parametrize("kind", ["run", "qrels"])
def test_a_block_of_the_shortest_lines_reads_every_record(tmp_path, kind):
    """Tokens of one byte and one space: 12 bytes a run line, 8 a qrels line, the most records a block
    can hold (62 x 62 of them, queries grouped, no document twice for a query)."""
    lines = [f"{q} Q {d} 1 5 t\n" if kind == "run" else f"{q} 0 {d} 1\n" for q in ONE_BYTE for d in ONE_BYTE]
    path = tmp_path / kind
    path.write_text("".join(lines))
    assert len(lines[0]) == (12 if kind == "run" else 8)
    # the bound the reader sizes its arrays by admits this densest block (else the scan writes past them)
    assert len("".join(lines)) // trec_files._MIN_RECORD_BYTES[kind] + 1 >= len(lines)
    table, _ = read_trec(path, kind)
    assert table == {q: {d: (5.0 if kind == "run" else 1) for d in ONE_BYTE} for q in ONE_BYTE}
