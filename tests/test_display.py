"""One formatter, one table writer, one progress bar for everything tieaware prints."""
import io

import numpy as np
import pandas as pd
from tabulate import tabulate

from tieaware.display import columns_table, display_width, fixed, frame_columns, plain_table, progress, text_table
from tieaware.report import EvaluationReport, MetricResult, per_query_frame


def test_fixed_hides_negative_zero_and_rounds():
    assert fixed(-1e-12) == "0.0000"
    assert fixed(-0.00004, 4) == "0.0000"
    assert fixed(-0.00005001, 4) == "-0.0001"
    assert fixed(0.123456, 2) == "0.12"


def test_every_table_hides_negative_zero():
    frame = pd.DataFrame({"metric": ["ndcg@10"], "bias": [-1e-17], "range": [0.5]})
    for text in (text_table(frame), text_table(frame, index=False), columns_table(*frame_columns(frame))):
        assert "-0.0000" not in text and "0.0000" in text and "0.5000" in text
    table = np.array([[0.5, 0.0, 0.5, 0.5, 0.5 - 1e-17]])
    report = EvaluationReport({"m": MetricResult("m", per_query_frame(["q"], table), "trec_eval")})
    assert "-0.0000" not in report.table()


def test_text_table_puts_the_index_first_and_right_aligns_numbers_only():
    frame = pd.DataFrame({"run": ["a", "bb"], "n": [3, 12], "e": [0.5, float("nan")]},
                         index=pd.Index(["ndcg@10", "P@5"], name="metric"))
    assert text_table(frame, 2).split("\n") == ["metric   run   n     e",
                                                "ndcg@10  a     3  0.50",
                                                "P@5      bb   12   NaN"]
    assert text_table(frame, 2, index=False).split("\n") == ["run   n     e", "a     3  0.50", "bb   12   NaN"]
    both = text_table(frame.set_index("run", append=True), 1).split("\n")  # one column per index level
    assert both == ["metric   run   n    e", "ndcg@10  a     3  0.5", "P@5      bb   12  NaN"]
    assert text_table(pd.DataFrame({"x": [1.0]}, index=pd.Index(["a"], name=0)), 1).split("\n") == ["0    x", "a  1.0"]
    assert text_table(pd.DataFrame({"x": [1.0]}, index=["a"]), 1).split("\n") == ["     x", "a  1.0"]  # no name


def test_progress_draws_only_when_asked():
    out = io.StringIO()
    with progress(total=3, unit="pair", show=False, desc="x") as bar:
        assert bar.disable
        bar.update(3)
    with progress(range(3), unit="run", show=True) as bar:
        assert not bar.disable
        bar.fp = out
        assert list(bar) == [0, 1, 2]


def test_plain_table_aligns_columns_two_spaces_apart_without_trailing_blanks():
    table = plain_table(["metric", "expected", "note"], [["ndcg@10", "0.5000", "x"], ["P@5", "12.2500", ""]],
                        right=[False, True, False])
    assert table.split("\n") == ["metric   expected  note",
                                 "ndcg@10    0.5000  x",
                                 "P@5       12.2500"]
    assert plain_table(["a", "b"], []) == "a  b"  # a header wider than no cell gets no padding
    assert plain_table(["syntax", "name"], [["ranx", "None"]]) == "syntax  name\nranx    None"


def test_plain_table_is_tabulates_plain_layout():
    """The hand-written table equals tabulate's "plain" format, the header given as a row, on random
    cells: empty, padded with blanks, non-ASCII, numbers kept as text, columns aligned either way."""
    rng = np.random.default_rng(3)
    words = ["", " ", "a", "ndcg@10", "0.5000", "-12.25", "  x ", "é€", "NaN", "1e-05", "q 1", "𝄞"]
    for _ in range(300):
        n_columns, n_rows = int(rng.integers(1, 5)), int(rng.integers(0, 5))
        headers, *rows = [[str(rng.choice(words)) for _ in range(n_columns)] for _ in range(n_rows + 1)]
        right = [bool(r) for r in rng.integers(0, 2, n_columns)]
        theirs = tabulate([headers, *rows], tablefmt="plain", disable_numparse=True,
                          colalign=["right" if r else "left" for r in right])
        expected = "\n".join(line.rstrip() for line in theirs.splitlines())
        assert plain_table(headers, rows, right=right) == expected, (headers, rows, right)
        if not any(right):
            assert plain_table(headers, rows) == expected


def test_plain_table_aligns_wide_and_combining_characters_by_the_columns_they_take():
    """A CJK character takes two terminal columns and a combining accent none, so the columns after
    them line up on screen (tabulate does so only where wcwidth is installed)."""
    assert [display_width(text) for text in ("q1", "查询一", "e\u0301", "ｑ", "é€")] == [2, 6, 1, 2, 2]
    table = plain_table(["query", "map"], [["查询一", "0.7500"], ["e\u0301", "1.0000"], ["q10", "0.5000"]],
                        right=[False, True])
    assert table.split("\n") == ["query      map",
                                  "查询一  0.7500",
                                  "e\u0301       1.0000",
                                  "q10     0.5000"]
    assert [display_width(line) for line in table.split("\n")] == [14, 14, 14, 14]
