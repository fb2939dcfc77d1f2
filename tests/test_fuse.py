"""tieaware.fusion.fuse: ranx.fuse's methods and names; on tie-free runs ranx's result score for score;
with ties="mean_rank" tied documents share their mean rank, so the fused run no longer depends on the
order ranx happens to give tied documents (their insertion order), as ranx.fuse does."""
from __future__ import annotations

import copy
import itertools

import numpy as np
import pytest
import ranx
from ranx.fusion import bayesfuse_train, mapfuse_train, posfuse_train, probfuse_train, segfuse_train, slidefuse_train

from tieaware.errors import InputError
from tieaware.fusion import METHODS, RANK_METHODS, VOTE_METHODS, fuse, mean_ranks

# one xdist worker runs every test that calls ranx's fusion (pyproject.toml: --dist loadgroup), so that
# ranx's numba kernels, compiled per process (tests/conftest.py), compile once, not in both workers
pytestmark = pytest.mark.xdist_group("ranx_fusion")

QUERIES, POOL = 3, 14


def test_loadgroup_names_the_group_in_the_node_id(request):
    """xdist schedules a grouped test by the ``@group`` it appends to the node id. pytest 9.2 drops that
    name (pytest-dev/pytest-xdist#1386), and xdist then spreads every xdist_group over both workers: the
    dev extra keeps pytest below 9.2."""
    if request.config.getoption("loadgroup", False):  # set in xdist's workers under --dist loadgroup
        assert request.node.nodeid.endswith("@ranx_fusion"), \
            f"pytest {pytest.__version__} broke xdist's loadgroup: {request.node.nodeid} has no group"


def random_run(rng, tied: bool, docs: int = 9) -> dict:
    """{query: {doc: score}} over a shared pool of documents (runs overlap partly); tied: scores on a
    grid of 4 values, else all distinct."""
    run = {}
    for q in range(QUERIES):
        ids = rng.permutation(POOL)[:docs]
        scores = rng.integers(0, 4, docs) / 4 if tied else rng.permutation(docs) + rng.random(docs) / 2
        run[f"q{q}"] = {f"d{i}": float(s) for i, s in zip(ids, scores)}
    return run


def qrels_for() -> ranx.Qrels:
    return ranx.Qrels({f"q{q}": {f"d{i}": 1 + i % 2 for i in range(q % 3, POOL, 3)} for q in range(QUERIES)})


def params_for(method: str, runs: list) -> dict | None:
    """Parameters for ``method`` as ranx takes them, the trained ones from ranx's own *_train."""
    weights = [0.5, 0.3, 0.2][:len(runs)]
    qrels = qrels_for()
    return {"rrf": {"k": 10}, "rbc": {"phi": 0.8}, "gmnz": {"gamma": 0.7}, "logn_isr": {"sigma": 0.3},
            "wsum": {"weights": weights}, "wmnz": {"weights": weights}, "mixed": {"weights": weights},
            "w_bordafuse": {"weights": weights}, "w_condorcet": {"weights": weights},
            "mapfuse": {"map_scores": mapfuse_train(qrels, runs)}, "posfuse": {"probs": posfuse_train(qrels, runs)},
            "probfuse": {"probs": probfuse_train(qrels, runs, 3)}, "segfuse": {"probs": segfuse_train(qrels, runs)},
            "slidefuse": {"probs": slidefuse_train(qrels, runs), "w": 2},
            "bayesfuse": {"log_odds": bayesfuse_train(qrels, runs)}}.get(method)


def as_dict(run: ranx.Run) -> dict:
    return {q: dict(docs) for q, docs in run.to_dict().items()}


# ranx's borda normalisation followed by a rank method ranks candidates in Python's set order (random
# per process), so ranx has no result to match there
NORMS_BY_METHOD = {method: [None, "min-max", "min-max-inverted", "max", "sum", "zmuv", "rank"]
                   + ([] if method in RANK_METHODS + VOTE_METHODS else ["borda"]) for method in METHODS}


@pytest.mark.parametrize("method", METHODS)
def test_equals_ranx_fuse_on_tie_free_runs(method):
    for seed in range(3):
        rng = np.random.default_rng(seed)
        runs = [ranx.Run(random_run(rng, tied=False)) for _ in range(3)]
        params = params_for(method, runs)
        for norm in NORMS_BY_METHOD[method]:
            theirs = ranx.fuse(runs, norm=norm, method=method, params=params)
            mine = fuse(runs, norm=norm, method=method, params=params)
            assert as_dict(mine) == as_dict(theirs), (seed, norm)
            assert mine.name == theirs.name


def reordered(run: dict, rng) -> dict:
    """The same run, each query's documents inserted in a random order (ranx breaks ties by it)."""
    out = {}
    for query, docs in run.items():
        items = list(docs.items())
        out[query] = dict(items[i] for i in rng.permutation(len(items)))
    return out


@pytest.mark.parametrize("method, norm", [(m, None) for m in RANK_METHODS]
                         + [("rrf", "min-max"), ("rrf", "min-max-inverted"), ("wsum", "rank"), ("wsum", "borda"),
                            ("sum", "rank"), ("bordafuse", "rank")])
def test_tied_documents_do_not_depend_on_input_order_where_ranx_does(method, norm):
    rng = np.random.default_rng(7)
    plain = [random_run(rng, tied=True, docs=12) for _ in range(2)]
    params = params_for(method, [ranx.Run(run) for run in plain])
    mine, theirs = [], []
    for _ in range(12):
        runs = [ranx.Run(reordered(run, rng)) for run in plain]
        mine.append(as_dict(fuse(runs, norm=norm, method=method, params=params)))
        theirs.append(as_dict(ranx.fuse(runs, norm=norm, method=method, params=params)))
        # ties="ranx" is ranx.fuse itself
        assert as_dict(fuse(runs, norm=norm, method=method, params=params, ties="ranx")) == theirs[-1]
    assert all(fused == mine[0] for fused in mine)
    if method not in ("posfuse", "probfuse", "segfuse", "slidefuse", "bayesfuse"):  # tables may repeat values
        assert any(fused != theirs[0] for fused in theirs), "ranx's result should depend on the insertion order"
    for query, docs in mine[0].items():  # no fused tie among documents every run ties
        for run_docs in plain:
            assert set(docs) >= set(run_docs[query])


def all_tie_orders(run: dict) -> list[dict]:
    """Every tie-free version of a one-query run: tied documents in every order (scores spread inside
    the gap to the next value)."""
    (query, docs), = run.items()
    groups = {}
    for doc, score in docs.items():
        groups.setdefault(score, []).append(doc)
    choices = [list(itertools.permutations(members)) for members in groups.values()]
    out = []
    for pick in itertools.product(*choices):
        scores = {}
        for score, order in zip(groups, pick):
            scores.update({doc: score + (len(order) - i) * 1e-3 for i, doc in enumerate(order)})
        out.append({query: scores})
    return out


def test_mean_ranks_are_the_mean_positions_over_all_tie_orders():
    """Brute force: a tied document's mean rank is its average position over every order of its group,
    so Borda, linear in the rank, equals the mean of ranx's Borda over every joint tie order of the runs;
    RRF is 1 / (k + r + 1) at that mean rank."""
    run_a = {"q": {"a": 0.5, "b": 0.5, "c": 0.5, "d": 0.2, "e": 0.1}}
    run_b = {"q": {"c": 0.9, "a": 0.4, "e": 0.4, "f": 0.4, "b": 0.0}}
    orders_a, orders_b = all_tie_orders(run_a), all_tie_orders(run_b)
    position = {doc: np.mean([sorted(o["q"], key=o["q"].get, reverse=True).index(doc) for o in orders_a])
                for doc in run_a["q"]}
    scores = np.array(list(run_a["q"].values()))
    assert dict(zip(run_a["q"], mean_ranks(-scores))) == position
    borda = [as_dict(ranx.fuse([ranx.Run(a), ranx.Run(b)], norm=None, method="bordafuse"))["q"]
             for a in orders_a for b in orders_b]
    mine = as_dict(fuse([run_a, run_b], norm=None, method="bordafuse"))["q"]
    assert mine == pytest.approx({doc: np.mean([fused[doc] for fused in borda]) for doc in mine}, abs=1e-12)
    rrf = as_dict(fuse([run_a, run_b], norm=None, method="rrf", params={"k": 5}))["q"]
    position_b = dict(zip(run_b["q"], mean_ranks(-np.array(list(run_b["q"].values())))))
    for doc in rrf:
        expected = sum(1 / (5 + ranks[doc] + 1) for ranks in (position, position_b) if doc in ranks)
        assert rrf[doc] == pytest.approx(expected, abs=1e-15)


@pytest.mark.parametrize("ties", ["mean_rank", "ranx"])
def test_the_runs_given_are_not_modified(ties):
    rng = np.random.default_rng(3)
    dicts = [random_run(rng, tied=True) for _ in range(3)]
    runs = [ranx.Run(run) for run in dicts]
    before = ([copy.deepcopy(run) for run in dicts], [as_dict(run) for run in runs],
              [list(run.run["q0"]) for run in runs])
    for method in METHODS:
        if method in VOTE_METHODS and ties == "mean_rank":
            continue
        params = params_for(method, runs)
        for norm in (None, "min-max-inverted", "rank", "borda"):
            fuse(runs, norm=norm, method=method, params=params, ties=ties)
            fuse(dicts, norm=norm, method=method, params=params, ties=ties)
    after = dicts, [as_dict(run) for run in runs], [list(run.run["q0"]) for run in runs]
    assert after == before  # scores and ranx's order inside each Run alike


RUNS = [{"q1": {"d1": 0.5, "d2": 0.5, "d3": 0.1}}, {"q1": {"d1": 0.2, "d3": 0.9}}]


@pytest.mark.parametrize("kwargs, match", [
    (dict(method="borda"), "method must be one of ranx's fusion methods"),
    (dict(norm="l2"), "norm must be one of"),
    (dict(ties="first"), "ties must be one of"),
    (dict(method="rrf", params={"k": 60, "phi": 0.5}),
     r"rrf takes the parameters \['k', 'name'\], got unknown \['phi'\]"),
    (dict(method="rbc", params={}), r"rbc needs the parameter\(s\) \['phi'\]"),
    (dict(method="wsum", params={"weights": [1.0]}), r"params\['weights'\] needs one entry per run \(2\)"),
    (dict(method="mapfuse", params={"map_scores": 0.3}), r"params\['map_scores'\] needs one entry per run"),
    (dict(method="rrf", params={"k": float("nan")}), r"params\['k'\] must be a finite number"),
    (dict(method="logn_isr", params={"sigma": 2}), r"sigma'\] must be in \[0, 1\]"),
    (dict(method="slidefuse", params={"probs": [[0.5], [0.5]], "w": 1.5}), r"params\['w'\] must be an integer"),
    (dict(method="rrf", params=[60]), "params must be a dict"),
    (dict(method="condorcet"),
     r"condorcet with ties='mean_rank': run #0, query 'q1' has tied documents \['d1', 'd2'\]"),
])
def test_bad_arguments_are_named(kwargs, match):
    with pytest.raises(InputError, match=match):
        fuse(RUNS, **kwargs)


def test_bad_runs_are_named():
    with pytest.raises(InputError, match="two or more runs, got 1"):
        fuse(RUNS[:1])
    with pytest.raises(InputError, match="list of runs"):
        fuse(RUNS[0])
    with pytest.raises(InputError, match="run #1 must be a ranx Run"):
        fuse([RUNS[0], [("q1", "d1", 0.5)]])
    with pytest.raises(InputError, match=r"runs #0 and #1 have different queries, e.g. \['q2'\]"):
        fuse([RUNS[0], {"q1": {"d1": 0.5}, "q2": {"d1": 0.5}}])
    with pytest.raises(InputError, match=r"run #1, query 'q1': document 'd3' has score nan"):
        fuse([RUNS[0], {"q1": {"d1": 0.2, "d3": float("nan")}}], method="rrf")


def test_vote_methods_run_on_tie_free_runs_as_in_ranx():
    runs = [{"q1": {"d1": 0.5, "d2": 0.4, "d3": 0.1}}, {"q1": {"d1": 0.2, "d3": 0.9}}, {"q1": {"d2": 0.7, "d3": 0.1}}]
    theirs = ranx.fuse([ranx.Run(run) for run in runs], norm=None, method="condorcet")
    assert as_dict(fuse(runs, norm=None, method="condorcet")) == as_dict(theirs)


def test_mean_ranks_are_scipy_s_average_ranks():
    from scipy.stats import rankdata

    rng = np.random.default_rng(11)
    for _ in range(20):
        keys = rng.integers(0, 5, 15) / 4
        assert mean_ranks(keys).tolist() == (rankdata(keys, "average") - 1).tolist()
