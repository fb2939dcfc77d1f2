"""tieaware.fusion.optimize_fusion: the pick equals a brute-force grid search with tieaware.evaluate,
and objective="oblivious" reproduces ranx.optimize_fusion itself."""
from __future__ import annotations

import math

import pytest
import ranx

import tieaware
from tieaware.datasets import cranfield
from tieaware.errors import InputError
from tieaware.fusion import OBJECTIVES, fuse, optimize_fusion

# one xdist worker runs every test that calls ranx's fusion (pyproject.toml: --dist loadgroup), so that
# ranx's numba kernels, compiled per process (tests/conftest.py), compile once, not in both workers
pytestmark = pytest.mark.xdist_group("ranx_fusion")

# ranx's grids, written out here: RRF k = 10, 20, ..., 100; weights (w, 1 - w), w = 0, 0.1, ..., 1
GRIDS = {"rrf": (None, [{"k": k} for k in range(10, 101, 10)]),
         "wsum": ("min-max", [{"weights": (round(i / 10, 1), round(1 - i / 10, 1))} for i in range(11)])}


@pytest.fixture(scope="module")
def cranfield_ranx() -> tuple[ranx.Qrels, list[ranx.Run]]:
    """The bundled Cranfield qrels and the fp32 and bf16 runs as ranx objects, built by the worker that
    runs these tests (built at import, every worker would compile ranx's constructors for them)."""
    files = cranfield()
    return (ranx.Qrels(tieaware.read_trec_qrels(files.qrels)),
            [ranx.Run(tieaware.read_trec_run(files.runs[tag]), name=tag) for tag in ("fp32", "bf16")])


def brute_force(qrels: ranx.Qrels, runs: list[ranx.Run], method: str, metric: str) -> dict:
    """Per objective, the last trial with the largest value (ranx keeps the last on equal values)."""
    norm, grid = GRIDS[method]
    results = [tieaware.evaluate(qrels, ranx.fuse(runs, norm=norm, method=method, params=params), metric,
                                 oblivious="ranx") for params in grid]
    values = {"expected": [r.expected for r in results], "min": [r.min for r in results],
              "penalized": [r.expected - 2.0 * r.range for r in results], "oblivious": [r.oblivious for r in results]}
    return {objective: grid[max(range(len(grid)), key=lambda i: (v[i], i))] for objective, v in values.items()}


@pytest.mark.parametrize("method, metric", [("wsum", "recall@10"), ("wsum", "precision@10"), ("rrf", "ndcg@10")])
def test_pick_equals_a_brute_force_grid_search(cranfield_ranx, method, metric):
    qrels, runs = cranfield_ranx
    expected = brute_force(qrels, runs, method, metric)
    norm = GRIDS[method][0]
    for objective in OBJECTIVES:
        pick = optimize_fusion(qrels, runs, norm=norm, method=method, metric=metric, objective=objective, penalty=2.0)
        assert {k: tuple(map(float, v)) if k == "weights" else v for k, v in pick.items()} == expected[objective]
    theirs = ranx.optimize_fusion(qrels, runs, norm=norm, method=method, metric=metric, show_progress=False)
    mine = optimize_fusion(qrels, runs, norm=norm, method=method, metric=metric, objective="oblivious")
    assert str(mine) == str(theirs)  # ranx's own objective, reproduced
    if method == "wsum" and metric == "recall@10":  # where E[M] and ranx's tie order disagree on these runs
        assert expected["expected"] != expected["oblivious"]


def test_report_is_ranx_s_with_the_objective_values(cranfield_ranx):
    qrels, runs = cranfield_ranx
    best, report = optimize_fusion(qrels, runs, norm=None, method="rrf", metric="ndcg@10", objective="min",
                                   return_optimization_report=True, min_k=20, max_k=40, step=10)
    _, theirs = ranx.optimize_fusion(qrels, runs, norm=None, method="rrf", metric="ndcg@10", show_progress=False,
                                     return_optimization_report=True, min_k=20, max_k=40, step=10)
    assert isinstance(report, ranx.data_structures.OptimizationReport)
    assert report.configs == theirs.configs == ["20", "30", "40"] and best == {"k": 40}
    for config, value, their_value in zip(report.configs, report.results, theirs.results):
        result = report.metric_results[config]
        assert value == result.min < result.max and result.oblivious == pytest.approx(float(their_value), abs=1e-12)


def test_ties_mean_rank_tunes_the_fusion_fuse_performs(cranfield_ranx):
    """ties="mean_rank": each trial fused by tieaware.fusion.fuse (the bf16 run's tied documents share
    their mean rank), the pick that of a brute-force search over those fusions; the default, "ranx",
    tunes ranx.fuse, which hands the bf16 run's arbitrary tie order on to RRF."""
    qrels, runs = cranfield_ranx
    grid = [{"k": k} for k in (20, 30, 40)]
    results = [tieaware.evaluate(qrels, fuse(runs, norm=None, method="rrf", params=params), "ndcg@10")
               for params in grid]
    best, report = optimize_fusion(qrels, runs, norm=None, method="rrf", metric="ndcg@10", ties="mean_rank",
                                   return_optimization_report=True, min_k=20, max_k=40, step=10)
    assert best == grid[max(range(len(grid)), key=lambda i: (results[i].expected, i))]
    assert [report.metric_results[str(params["k"])].expected for params in grid] == [r.expected for r in results]
    _, inherited = optimize_fusion(qrels, runs, norm=None, method="rrf", metric="ndcg@10",
                                   return_optimization_report=True, min_k=20, max_k=40, step=10)
    assert any(report.metric_results[c].expected != inherited.metric_results[c].expected for c in report.configs)


@pytest.mark.parametrize("kwargs, match", [
    (dict(method="bayesfuse"), "tunes 'rrf' and the weighted methods"),
    (dict(objective="max"), "objective must be one of"),
    (dict(penalty=-1.0), "penalty must be a number >= 0"),
    (dict(penalty=math.nan), "penalty must be a number >= 0"),
    (dict(penalty=math.inf), "penalty must be a number >= 0 and finite"),
    (dict(method="rrf", weights=3), r"unknown search option\(s\) \['weights'\]"),
    (dict(metric=["ndcg@10", "map"]), "one metric"),
    (dict(ties="first"), "ties must be one of"),
])
def test_bad_arguments_are_named(cranfield_ranx, kwargs, match):
    qrels, runs = cranfield_ranx
    with pytest.raises(InputError, match=match):
        optimize_fusion(qrels, runs, **{"metric": "ndcg@10", **kwargs})
    with pytest.raises(InputError, match="two or more runs"):
        optimize_fusion(qrels, runs[:1], metric="ndcg@10")


@pytest.mark.slow
def test_fusion_tuning_example_shows_where_the_objectives_pick_differently(capsys):
    """examples/fusion_tuning.py (issue 27's fusion study) runs, on ranx's own optimize_fusion: for recall@10
    the weighted sum is where ranx (the bf16 run alone) and E[M] (0.6, 0.4) part; RRF agrees."""
    import runpy
    from pathlib import Path

    example = runpy.run_path(str(Path(__file__).resolve().parents[1] / "examples" / "fusion_tuning.py"))
    example["main"](["recall@10"])
    rrf, wsum = capsys.readouterr().out.split("== wsum")
    assert "ranx.optimize_fusion picks k=100" in rrf and "DIFFERENT" not in rrf
    assert "ranx.optimize_fusion picks w=(0.0, 1.0)" in wsum
    for objective in ("expected", "min", "penalized"):
        assert f"tie-aware objective {objective:9} picks w=(0.6, 0.4)     DIFFERENT from ranx's pick" in wsum
