"""`tieaware.integrations.torchmetrics.TieAwareRetrieval`, on one process and under DDP (gloo, CPU)."""
import os

import numpy as np
import pytest

import tieaware

torch = pytest.importorskip("torch")
pytest.importorskip("torchmetrics")
from tieaware.integrations.torchmetrics import TieAwareRetrieval, metric_key  # noqa: E402

METRICS = ["ndcg@10", "mrr", "P@5", "map"]


def _data(seed: int = 0, n: int = 600):
    rng = np.random.default_rng(seed)
    return (torch.tensor(rng.integers(0, 20, n)), torch.tensor(rng.integers(0, 8, n) / 8, dtype=torch.float32),
            torch.tensor(rng.integers(0, 3, n)))


def _expected(indexes, preds, target, oblivious="trec_eval"):
    report = tieaware.evaluate_arrays(indexes, preds, target, METRICS, oblivious=oblivious)
    return {f"{metric_key(name)}/{stat}": getattr(report[name], stat)
            for name in METRICS for stat in ("expected", "min", "max", "range", "oblivious", "bias")}


def test_batches_equal_evaluate_on_all_rows():
    indexes, preds, target = _data()
    metric = TieAwareRetrieval(METRICS, oblivious="input")
    for batch in torch.split(torch.arange(indexes.numel()), 64):
        metric.update(preds[batch], target[batch], indexes=indexes[batch])
    got = metric.compute()
    expected = _expected(indexes, preds, target, oblivious="input")
    assert set(got) == {f"{metric_key(m)}/{s}" for m in METRICS
                        for s in ("expected", "min", "max", "range", "oblivious", "bias")}
    assert "ndcg_at_10/expected" in got and "P_at_5/range" in got
    for key, value in got.items():
        assert value.dtype == torch.float64 and value.ndim == 0
        assert value.item() == pytest.approx(expected[key], abs=1e-12), key
    assert got["ndcg_at_10/range"] > 0
    metric.reset()
    metric.update(preds[:10], target[:10], indexes[:10])
    assert metric.compute()["mrr/expected"].item() == pytest.approx(
        _expected(indexes[:10], preds[:10], target[:10])["mrr/expected"])


def test_no_oblivious_no_bias_and_bad_inputs():
    metric = TieAwareRetrieval(["mrr"])
    with pytest.raises(tieaware.InputError, match="before any update"):
        metric.compute()
    with pytest.raises(tieaware.InputError, match="same shape"):
        metric.update(torch.rand(3), torch.tensor([1, 0]), torch.tensor([0, 0, 1]))
    with pytest.raises(tieaware.InputError, match="target must be bool or integer"):
        metric.update(torch.rand(2), torch.tensor([1.0, 0.0]), torch.tensor([0, 0]))
    with pytest.raises(tieaware.InputError, match="indexes must be integers"):
        metric.update(torch.rand(2), torch.tensor([1, 0]), torch.tensor([0.0, 0.0]))
    with pytest.raises(tieaware.UnknownMetricError):
        TieAwareRetrieval(["ndcg@ten"])
    with pytest.raises(tieaware.InputError, match="oblivious"):
        TieAwareRetrieval(["mrr"], oblivious="sklearn")
    metric.update(torch.tensor([0.5, 0.5, 0.9]), torch.tensor([True, False, True]), torch.tensor([0, 0, 1]))
    assert {k: v.item() for k, v in metric.compute().items()} == {
        "mrr/expected": 0.875, "mrr/min": 0.75, "mrr/max": 1.0, "mrr/range": 0.25}


def _ddp_worker(rank: int, world: int, init_file: str, out_dir: str) -> None:
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world)
    try:
        indexes, preds, target = _data()
        half = indexes.numel() // world
        mine = slice(rank * half, (rank + 1) * half if rank < world - 1 else None)
        metric = TieAwareRetrieval(METRICS, oblivious="input")
        for batch in torch.split(torch.arange(indexes[mine].numel()), 50):  # several list entries per process
            metric.update(preds[mine][batch], target[mine][batch], indexes[mine][batch])
        torch.save({k: v.item() for k, v in metric.compute().items()}, os.path.join(out_dir, f"rank{rank}.pt"))
    finally:
        dist.destroy_process_group()


@pytest.mark.slow
def test_ddp_two_processes_equal_one_process_on_all_rows(tmp_path):
    import torch.multiprocessing as mp

    world = 2
    mp.spawn(_ddp_worker, args=(world, str(tmp_path / "init"), str(tmp_path)), nprocs=world, join=True)
    expected = _expected(*_data(), oblivious="input")  # ranks' rows concatenated in rank order: the input order
    for rank in range(world):
        got = torch.load(tmp_path / f"rank{rank}.pt")
        assert set(got) == set(expected)
        for key, value in got.items():
            assert value == pytest.approx(expected[key], abs=1e-12), (rank, key)
    # a process alone sees half the rows: a different result, so the sync above did something
    indexes, preds, target = _data()
    half = _expected(indexes[:300], preds[:300], target[:300])
    assert half["ndcg_at_10/expected"] != pytest.approx(expected["ndcg_at_10/expected"])


def test_forward_gives_the_batch_and_accumulates():
    metric = TieAwareRetrieval(["mrr"])
    batch = metric(torch.tensor([0.5, 0.5, 0.9]), torch.tensor([1, 0, 1]), indexes=torch.tensor([0, 0, 1]))
    assert batch["mrr/expected"].item() == 0.875
    metric(torch.tensor([0.2, 0.3]), torch.tensor([1, 0]), indexes=torch.tensor([2, 2]))
    assert metric.compute()["mrr/expected"].item() == pytest.approx((0.75 + 1 + 0.5) / 3)
