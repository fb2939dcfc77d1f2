"""Metric@k plots: real PNGs from the Cranfield runs, the plotted numbers, names and errors."""
import sys

import numpy as np
import pytest

pytest.importorskip("matplotlib")

import tieaware  # noqa: E402
from tieaware.cli import main  # noqa: E402
from tieaware.comparison import (  # noqa: E402
    compare,  # noqa: E402
    metric_at_k,
    plot_at_k,
)
from tieaware.datasets import cranfield  # noqa: E402
from tieaware.errors import UnknownMetricError  # noqa: E402

CRANFIELD = cranfield()
QRELS = str(CRANFIELD.qrels)
NAMED_RUNS = {f"minilm-{tag}": str(CRANFIELD.runs[tag]) for tag in ("fp32", "bf16")}
RUNS = list(NAMED_RUNS.values())
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_plot_at_k_writes_png_with_the_tie_aware_numbers(tmp_path):
    path = tmp_path / "ndcg.png"
    ks = (1, 5, 10)
    figure = plot_at_k(QRELS, NAMED_RUNS, ["ndcg", "P"], ks=ks, path=path)
    data = path.read_bytes()
    assert data.startswith(PNG_MAGIC) and len(data) > 20_000
    top_ndcg, top_p, bottom_ndcg, _ = figure.axes
    assert top_ndcg.get_ylabel() == "ndcg@k" and top_p.get_ylabel() == "P@k"
    bf16 = [tieaware.evaluate(QRELS, RUNS[1], f"ndcg@{k}") for k in ks]
    e_line = next(line for line in top_ndcg.lines if line.get_label() == "minilm-bf16")
    np.testing.assert_allclose(e_line.get_ydata(), [r.expected for r in bf16])
    bars = bottom_ndcg.collections[1].get_segments()  # bf16's [min - E, max - E] bars
    np.testing.assert_allclose([seg[:, 1] for seg in bars], [[r.min - r.expected, r.max - r.expected] for r in bf16])


def test_report_plot_groups_metrics_by_family(tmp_path):
    report = compare(QRELS, RUNS, ["ndcg@5", "map", "ndcg@10", "recall@5", "recall@10"], stat_test=None)
    figure = report.plot(tmp_path / "report.png")
    assert [ax.get_ylabel() for ax in figure.axes[:2]] == ["ndcg@k", "recall@k"]  # map has no k: left out
    assert (tmp_path / "report.png").read_bytes().startswith(PNG_MAGIC)
    with pytest.raises(ValueError, match="none of"):
        compare(QRELS, RUNS, ["map", "mrr"], stat_test=None).plot()


def test_metric_at_k_names():
    assert [metric_at_k(m, 10) for m in ("ndcg", "P", "ndcg_cut", "map", "recall")] == [
        "ndcg@10", "P@10", "ndcg_cut.10", "map@10", "recall@10"]
    with pytest.raises(UnknownMetricError, match="takes no cutoff"):
        metric_at_k("recip_rank", 10)


def test_cli_plot(tmp_path, capsys):
    out = tmp_path / "cli.png"
    assert main(["plot", QRELS, *RUNS, "-m", "mrr", "-k", "1,10", "--out", str(out)]) == 0
    assert out.read_bytes().startswith(PNG_MAGIC)
    assert main(["plot", QRELS, *RUNS, "-m", "bpref", "--out", str(out)]) == 2
    assert "takes no cutoff" in capsys.readouterr().err


def test_missing_matplotlib_is_a_clear_import_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    with pytest.raises(ImportError, match=r"pip install 'tieaware\[plot\]'"):
        plot_at_k(QRELS, RUNS)


def test_no_import_cycle_between_comparison_and_plot():
    """figures.py only draws: it imports nothing of comparison (which imports it to draw); tieaware.plot,
    its public face, still serves the names that moved to comparison, with a warning."""
    import ast
    from pathlib import Path

    import tieaware.figures as figures_module
    import tieaware.plot as plot_module
    from tieaware.comparison import DEFAULT_KS, metric_at_k

    tree = ast.parse(Path(figures_module.__file__).read_text())
    imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
    assert "comparison" not in imported and not any(m.endswith(".comparison") for m in imported)
    assert plot_module.plot_report is figures_module.plot_report
    with pytest.warns(DeprecationWarning, match="moved to tieaware.comparison"):
        assert plot_module.plot_at_k is plot_at_k
    with pytest.warns(DeprecationWarning, match="moved to tieaware.comparison"):
        assert (plot_module.metric_at_k, plot_module.DEFAULT_KS) == (metric_at_k, DEFAULT_KS)
    with pytest.raises(AttributeError, match="no attribute 'absent'"):
        plot_module.absent  # noqa: B018
