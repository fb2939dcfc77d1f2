"""After rerank/search the tie census of the top k is in run.metadata['tie_census'], and documents of
different text still tied there raise a TieWarning naming their share and the remedy."""
import re
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
from test_hps_defaults import saturated_classifier  # noqa: E402
from test_hps_scorers import CANDIDATES, CORPUS, QUERIES, scorer  # noqa: E402

import tieaware  # noqa: E402
from tieaware.hps import TieWarning  # noqa: E402


def tie_warnings(call):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run = call()
    return run, [str(w.message) for w in caught if issubclass(w.category, TieWarning)]


def hand_tied_share(run, k):
    """Share of each query's top-k documents (with the ties at the k-th) whose score another one has."""
    tied = total = 0
    for docs in run.to_dict().values():
        scores = np.array(sorted(docs.values(), reverse=True))
        top = scores[scores >= scores[min(k, len(scores)) - 1]]
        values, counts = np.unique(top, return_counts=True)
        tied += int(counts[counts > 1].sum())
        total += len(top)
    return tied / total


def test_rounded_scores_warn_with_the_share_and_the_remedy():
    k = 10
    run, messages = tie_warnings(lambda: scorer("ce1", saturated_classifier(), dtype="bf16", hps="logits")
                                 .rerank(QUERIES, CORPUS, CANDIDATES, k=k))
    census = run.metadata["tie_census"]
    share = hand_tied_share(run, k)
    assert share > 0.3 and census["tied_share"] == census["tied_different_text_share"] == share
    assert census["k"] == k
    expected = tieaware.census(run, ks=(k,)).loc[k]
    assert all(census[name] == float(expected[name]) for name in expected.index)
    [message] = messages
    assert f"{share:.1%} of the top-10 documents" in message and "hps='head'" in message


def test_the_default_leaves_no_tie_and_no_warning():
    run, messages = tie_warnings(lambda: scorer("ce1", saturated_classifier(), dtype="bf16")
                                 .rerank(QUERIES, CORPUS, CANDIDATES, k=10))
    assert messages == [] and run.metadata["tie_census"]["tied_share"] == 0.0
    assert run.metadata["tie_census"]["mean_tie_group_size"] == 1.0


def test_identical_texts_tie_without_a_warning():
    corpus = dict(CORPUS, dup=CORPUS["d00"])
    candidates = {qid: dict(docs, dup=0.0) for qid, docs in CANDIDATES.items()}
    run, messages = tie_warnings(lambda: scorer("bi", dtype="fp32", batch_size=64).rerank(QUERIES, corpus, candidates))
    census = run.metadata["tie_census"]
    assert messages == []
    # d00 and its copy tie (in the queries where the dot products' summation order agrees)
    assert census["k"] == len(corpus) and census["tied_share"] > 0
    assert census["tied_different_text_share"] == 0.0


def test_quantized_scores_tie_by_design_and_say_so():
    run, messages = tie_warnings(lambda: scorer("bi", quantize="binary", hps=False).search(QUERIES, CORPUS, k=20))
    [message] = messages
    assert "tie by design" in message and "hps=True" in message
    share = float(re.search(r"([\d.]+)% of the top-20", message).group(1)) / 100
    assert share == pytest.approx(run.metadata["tie_census"]["tied_different_text_share"], abs=5e-4)
