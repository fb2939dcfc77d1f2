"""`tieaware.evaluate_arrays`: torchmetrics-style (indexes, preds, target) inputs."""
import warnings

import numpy as np
import pytest

import tieaware
from tieaware.arrays import arrays_to_dicts

torch = pytest.importorskip("torch")
torchmetrics = pytest.importorskip("torchmetrics")

METRICS = ["ndcg@5", "mrr", "precision@3", "recall@5", "map", "ndcg"]


def _data(seed: int, n: int = 300, n_queries: int = 12, levels: int = 6):
    rng = np.random.default_rng(seed)
    indexes = rng.integers(0, n_queries, n)
    preds = rng.integers(0, levels, n) / levels  # ties
    target = rng.integers(0, 3, n)
    return indexes, preds, target


def _dicts_by_hand(indexes, preds, target):
    qrels, run = {}, {}
    for row, (q, s, t) in enumerate(zip(indexes.tolist(), preds.tolist(), target.tolist())):
        run.setdefault(str(q), {})[f"{row:03d}"] = s
        qrels.setdefault(str(q), {})[f"{row:03d}"] = t
    return {q: qrels[q] for q in sorted(qrels, key=int)}, {q: run[q] for q in sorted(run, key=int)}


@pytest.mark.parametrize("oblivious", ["trec_eval", "input"])
def test_equals_evaluate_on_dicts_built_by_hand(oblivious):
    indexes, preds, target = _data(0)
    qrels, run = _dicts_by_hand(indexes, preds, target)
    assert arrays_to_dicts(indexes, preds, target) == (qrels, run)
    ours = tieaware.evaluate_arrays(indexes, preds, target, METRICS, oblivious=oblivious)
    theirs = tieaware.evaluate(qrels, run, METRICS, oblivious=oblivious)
    for name in METRICS:
        assert ours[name].per_query.equals(theirs[name].per_query)
        assert ours[name].range > 0


def test_torch_tensors_any_dtype_are_read_and_left_alone():
    indexes, preds, target = _data(1)
    expected = tieaware.evaluate_arrays(indexes, preds, target, METRICS)
    t_idx = torch.tensor(indexes)
    t_preds = torch.tensor(preds, dtype=torch.float32, requires_grad=True) * 1  # a non-leaf with a graph
    t_target = torch.tensor(target > 0)  # bool target
    before = t_preds.detach().clone()
    got = tieaware.evaluate_arrays(t_idx, t_preds, t_target, METRICS)
    assert t_preds.requires_grad and torch.equal(t_preds.detach(), before)
    binary = tieaware.evaluate_arrays(indexes, preds, (target > 0).astype(int), METRICS)
    for name in METRICS:
        assert got[name].per_query.equals(binary[name].per_query)
    # bf16 preds: the levels k/6 round, but ties stay ties and the order is kept
    bf16 = tieaware.evaluate_arrays(t_idx, torch.tensor(preds).to(torch.bfloat16), torch.tensor(target), METRICS)
    for name in METRICS:
        np.testing.assert_allclose(bf16[name].per_query.to_numpy(), expected[name].per_query.to_numpy(), atol=1e-12)


def test_tie_free_data_equals_torchmetrics():
    rng = np.random.default_rng(2)
    n = 400
    indexes = torch.tensor(rng.integers(0, 15, n))
    preds = torch.tensor(rng.permutation(n) / n, dtype=torch.float64)
    target = torch.tensor(rng.integers(0, 4, n))
    binary = target > 1
    from torchmetrics import retrieval as tr

    cases = [("ndcg@5", tr.RetrievalNormalizedDCG(top_k=5), target),
             ("ndcg", tr.RetrievalNormalizedDCG(), target),
             ("mrr", tr.RetrievalMRR(), binary), ("map", tr.RetrievalMAP(), binary),
             ("precision@3", tr.RetrievalPrecision(top_k=3), binary),
             ("recall@5", tr.RetrievalRecall(top_k=5), binary)]
    for name, metric, grades in cases:
        ours = tieaware.evaluate_arrays(indexes, preds, grades, name)
        theirs = float(metric(preds, grades, indexes=indexes))
        assert ours.range == 0
        assert ours.expected == pytest.approx(theirs, abs=1e-6), name


def test_bad_inputs_are_named():
    idx, preds, target = np.array([0, 0, 1]), np.array([0.1, 0.2, 0.3]), np.array([1, 0, 1])
    with pytest.raises(tieaware.InputError, match="same shape"):
        tieaware.evaluate_arrays(idx, preds[:2], target, "mrr")
    with pytest.raises(tieaware.InputError, match=r"NaN at row 1 \(query 0"):
        tieaware.evaluate_arrays(idx, np.array([0.1, np.nan, 0.3]), target, "mrr")
    with pytest.raises(tieaware.InputError, match=r"integer grades.*0\.5 at row 2 \(query 1"):
        tieaware.evaluate_arrays(idx, preds, np.array([1.0, 0.0, 0.5]), "mrr")
    with pytest.raises(TypeError, match="indexes must be integers"):
        tieaware.evaluate_arrays(idx.astype(float), preds, target, "mrr")
    with pytest.raises(TypeError, match="target must hold numbers"):
        tieaware.evaluate_arrays(idx, preds, np.array(["1", "0", "1"]), "mrr")
    # integral floats are grades
    assert tieaware.evaluate_arrays(idx, preds, target.astype(float), "mrr") == 0.75


def test_no_rows_is_named():
    empty = np.array([], np.int64)
    with pytest.raises(tieaware.InputError, match="no rows"):
        tieaware.evaluate_arrays(empty, np.array([]), empty, "mrr")
    with pytest.raises(tieaware.InputError, match="no rows"):
        tieaware.evaluate_arrays(torch.tensor([], dtype=torch.long), torch.tensor([]), torch.tensor([]), "mrr",
                                 oblivious="torchmetrics")


@pytest.mark.parametrize("run", [torch.zeros(3), np.zeros(3), (torch.tensor([0]), torch.tensor([0.5]))])
def test_arrays_given_to_evaluate_point_to_evaluate_arrays(run):
    with pytest.raises(tieaware.InputError, match="go to tieaware.evaluate_arrays"):
        tieaware.evaluate({"q": {"a": 1}}, run, "mrr")


class _OnGpu(torch.Tensor):
    """A CPU tensor that says it is on a CUDA device (the warning reads only ``.device``)."""

    @property
    def device(self):
        return torch.device("cuda", 0)


def test_torchmetrics_order_of_preds_off_the_cpu_is_said_to_be_the_cpu_s():
    indexes, target = torch.tensor([0, 0, 0]), torch.tensor([0, 1, 0])
    preds = torch.tensor([0.5, 0.5, 0.5])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cpu = tieaware.evaluate_arrays(indexes, preds, target, "mrr", oblivious="torchmetrics")
        tieaware.evaluate_arrays(indexes, preds.as_subclass(_OnGpu), target, "mrr")  # no order named: no warning
    with pytest.warns(UserWarning, match="preds are on cuda: torchmetrics' topk and sort there"):
        gpu = tieaware.evaluate_arrays(indexes, preds.as_subclass(_OnGpu), target, "mrr", oblivious="torchmetrics")
    assert gpu.oblivious == cpu.oblivious and gpu.expected == pytest.approx(11 / 18)
