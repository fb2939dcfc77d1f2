"""Reranking on Ray Data equals in-process reranking, score for score, and survives a dying actor."""
import os
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")
ray = pytest.importorskip("ray")
from test_hps_scorers import TOKENIZER, WORDS, bert_classifier  # noqa: E402

from tieaware.errors import InputError, InputTypeError, TieawareError  # noqa: E402
from tieaware.hps import CrossEncoder  # noqa: E402
from tieaware.hps.distributed import rerank_on_ray  # noqa: E402
from tieaware.inputs import read_trec_run  # noqa: E402

# one xdist worker runs every test here (pyproject.toml: --dist loadgroup), so that one local Ray instance
# serves them all: a second one, on the other worker, would start as many actors again on the same cores
pytestmark = [pytest.mark.hps, pytest.mark.slow, pytest.mark.xdist_group("ray")]


@pytest.fixture(scope="module")
def local_ray(tmp_path_factory):
    """A local Ray instance with 2 CPUs; yields the marker file `DiesOnce` creates when it dies."""
    marker = tmp_path_factory.mktemp("ray") / "died"
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join(sys.path), "TIEAWARE_DIE_MARKER": str(marker)}})
    ray.data.DataContext.get_current().enable_progress_bars = False
    yield marker
    ray.shutdown()


@pytest.fixture(scope="module")
def task(tmp_path_factory):
    """A saved tiny random-weight cross-encoder and 600 (query, document) pairs: 38 batches of 16."""
    folder = tmp_path_factory.mktemp("model")
    bert_classifier(1).save_pretrained(folder)
    TOKENIZER.save_pretrained(folder)
    rng = np.random.default_rng(0)

    def text(n):
        return " ".join(rng.choice(WORDS, n))

    queries = {f"q{i}": text(rng.integers(2, 5)) for i in range(40)}
    corpus = {f"d{i}": text(rng.integers(3, 30)) for i in range(300)}
    candidates = {q: {f"d{j}": 0.0 for j in rng.choice(300, 15, replace=False)} for q in queries}
    return folder, queries, corpus, candidates


OPTIONS = dict(dtype="bf16", batch_size=16)  # the default hps, as the CLI


@pytest.fixture(scope="module")
def in_process(task):
    """The run in-process `rerank` gives for the task, as a dict: what every Ray run must equal."""
    folder, queries, corpus, candidates = task
    torch.set_num_threads(1)  # as in a Ray actor with num_cpus=1
    try:
        return CrossEncoder(folder, show_progress=False, **OPTIONS).rerank(queries, corpus, candidates).to_dict()
    finally:
        torch.set_num_threads(os.cpu_count() or 1)


@pytest.mark.parametrize("call,error", [
    (lambda f, q, c, k: rerank_on_ray("bi-encoder", f, q, c, k), InputError),
    (lambda f, q, c, k: rerank_on_ray(dict, f, q, c, k), InputTypeError),
    (lambda f, q, c, k: rerank_on_ray("cross-encoder", object(), q, c, k), InputTypeError),
    (lambda f, q, c, k: rerank_on_ray("cross-encoder", f, q, c, k, concurrency=0), InputError),
    (lambda f, q, c, k: rerank_on_ray("cross-encoder", f, q, c, {"q0": ["nope"]}), KeyError),
])
def test_bad_arguments_fail_before_ray_starts(task, call, error):
    folder, queries, corpus, candidates = task
    running = ray.is_initialized()
    with pytest.raises(error) as caught:
        call(folder, queries, corpus, candidates)
    assert isinstance(caught.value, TieawareError)
    assert ray.is_initialized() == running  # the arguments are checked before Ray is started


def test_ray_rerank_equals_in_process_score_for_score(local_ray, task, in_process, tmp_path, capfd):
    folder, queries, corpus, candidates = task
    for actors in (1, 2):
        run = rerank_on_ray("cross-encoder", folder, queries, corpus, candidates, concurrency=actors,
                            trec_out=tmp_path / f"run{actors}.trec", parquet_out=tmp_path / f"scores{actors}",
                            **OPTIONS)
        assert run.to_dict() == in_process, f"{actors} actors"
        assert read_trec_run(tmp_path / f"run{actors}.trec") == in_process
        import pandas as pd

        table = pd.read_parquet(tmp_path / f"scores{actors}")
        assert len(table) == sum(map(len, in_process.values()))
        assert {(q, d): s for q, d, s in table[["q_id", "doc_id", "score"]].itertuples(index=False)} == \
            {(q, d): s for q, docs in in_process.items() for d, s in docs.items()}
    assert "pair" in capfd.readouterr().err  # the progress bar


def test_ray_rerank_cut_at_k_keeps_ties_as_in_process(local_ray, task):
    folder, queries, corpus, candidates = task
    options = dict(OPTIONS, hps=False)  # bf16 sigmoid: coarse scores that tie at the cut
    torch.set_num_threads(1)
    try:
        expected = CrossEncoder(folder, show_progress=False, **options).rerank(queries, corpus, candidates, k=5)
    finally:
        torch.set_num_threads(os.cpu_count() or 1)
    expected = expected.to_dict()
    run = rerank_on_ray(CrossEncoder, folder, queries, corpus, candidates, k=5, show_progress=False, **options)
    assert run.to_dict() == expected
    assert any(len(docs) > 5 for docs in expected.values()), "bf16 scores tie at the cut"


class DiesOnce(CrossEncoder):
    """Kills its own process on its first batch, once across all actors (a marker file says who did)."""

    def score_pairs(self, query_texts, doc_texts):
        try:
            fd = os.open(os.environ["TIEAWARE_DIE_MARKER"], os.O_CREAT | os.O_EXCL)
        except FileExistsError:
            return super().score_pairs(query_texts, doc_texts)
        os.close(fd)
        os._exit(1)


def test_a_dying_actor_loses_and_duplicates_no_pair(local_ray, task, in_process):
    folder, queries, corpus, candidates = task
    run = rerank_on_ray(DiesOnce, folder, queries, corpus, candidates, concurrency=2, show_progress=False,
                        **OPTIONS)
    assert local_ray.exists(), "an actor died"
    assert run.to_dict() == in_process


def test_score_command_with_ray_writes_the_in_process_run(local_ray, task, in_process, tmp_path):
    import json

    from tieaware import cli
    from tieaware.inputs import write_trec_run

    folder, queries, corpus, candidates = task
    (tmp_path / "queries.json").write_text(json.dumps(queries))
    (tmp_path / "corpus.json").write_text(json.dumps(corpus))
    with open(tmp_path / "candidates.trec", "w") as handle:
        write_trec_run(candidates, "bm25", handle)
    common = ["score", str(folder), "--scorer", "cross-encoder", "--queries", str(tmp_path / "queries.json"),
              "--corpus", str(tmp_path / "corpus.json"), "--candidates", str(tmp_path / "candidates.trec"),
              "--dtype", "bf16", "--batch-size", "16"]
    assert cli.main([*common, "--ray", "--actors", "2", "--out", str(tmp_path / "ray.trec")]) == cli.EXIT_OK
    assert read_trec_run(tmp_path / "ray.trec") == in_process


def test_ray_grade_rerank_equals_in_process(local_ray, tmp_path):
    from test_hps_grade import CANDIDATES, FEW_DOCS, FEW_QUERIES, TEMPLATE, TOKENIZER, grade_lm

    from tieaware.hps import GradeReranker

    grade_lm().save_pretrained(tmp_path)
    # the test's own tokenizer travels to the actors (from the folder it would load as Qwen2's)
    options = dict(tokenizer=TOKENIZER, dtype="bf16", batch_size=4, template=TEMPLATE, score="erank")
    torch.set_num_threads(1)
    try:
        expected = GradeReranker(str(tmp_path), show_progress=False, **options).rerank(
            FEW_QUERIES, FEW_DOCS, CANDIDATES).to_dict()
    finally:
        torch.set_num_threads(os.cpu_count() or 1)
    run = rerank_on_ray("grade", str(tmp_path), FEW_QUERIES, FEW_DOCS, CANDIDATES, concurrency=1,
                        show_progress=False, **options)
    assert run.to_dict() == expected
