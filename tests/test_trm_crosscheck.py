"""Cross-check against the paper authors' own package (`trm`, PyPI
tie-aware-retrieval-metrics) where its conventions coincide with trec_eval's:
binary relevance, every relevant document retrieved (trm normalises recall and
nDCG by the relevant documents in the candidate list), k <= list length (trm's
P and F1 are wrong past the list's end)."""
import pytest
import trm
from hypothesis import given, settings
from hypothesis import strategies as st

import tieaware

K_LIST = [1, 2, 3, 5]
# trm name -> our name template
NAMES = {"ndcg": "ndcg@{k}", "mrr": "mrr@{k}", "map": "map@{k}", "recall": "recall@{k}",
         "precision": "precision@{k}", "hits": "hits@{k}", "f1": "f1@{k}"}


@st.composite
def queries(draw):
    out = []
    for _ in range(draw(st.integers(1, 4))):
        n = draw(st.integers(5, 9))
        scores = [float(draw(st.integers(0, 3))) for _ in range(n)]
        relevant = [draw(st.booleans()) for _ in range(n)]
        out.append((scores, relevant))
    return out


@settings(max_examples=60, deadline=None)
@given(queries())
def test_expected_extremes_and_input_order_agree_with_trm(qs):
    theirs = trm.evaluate([s for s, _ in qs], [r for _, r in qs], metrics=list(NAMES), k_list=K_LIST)
    run = {f"q{i}": {f"d{j}": s for j, s in enumerate(scores)} for i, (scores, _) in enumerate(qs)}
    qrels = {f"q{i}": {f"d{j}": 1 for j, rel in enumerate(rels) if rel} for i, (_, rels) in enumerate(qs)}
    names = [template.format(k=k) for template in NAMES.values() for k in K_LIST]
    ours = tieaware.evaluate(qrels, run, names, oblivious="input")  # trm keeps the input order
    for trm_name, template in NAMES.items():
        for k in K_LIST:
            expected = theirs.metrics[trm_name][k]
            got = ours[template.format(k=k)]
            assert got.expected == pytest.approx(expected.expected, abs=1e-9), (trm_name, k)
            assert got.min == pytest.approx(expected.minimum, abs=1e-9), (trm_name, k)
            assert got.max == pytest.approx(expected.maximum, abs=1e-9), (trm_name, k)
            assert got.oblivious == pytest.approx(expected.oblivious, abs=1e-9), (trm_name, k)
