"""oblivious="sentence_transformers" / "torchmetrics" / "mteb": the value each tool prints on tied data,
per query, computed by the tool itself."""
import numpy as np
import pytest

import tieaware

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(7)
N_QUERIES, N_DOCS = 30, 25


def _tied_run():
    """Scores in 1/8 steps (many ties, float32-exact), string doc ids; every query has a relevant document."""
    run, qrels = {}, {}
    for q in range(N_QUERIES):
        docs = [f"doc{d:03d}" for d in RNG.permutation(60)[:N_DOCS]]
        run[f"q{q}"] = dict(zip(docs, (RNG.integers(1, 6, N_DOCS) / 8).tolist()))
        grades = RNG.integers(0, 2, N_DOCS) * (RNG.random(N_DOCS) < 0.4)
        grades[RNG.integers(N_DOCS)] = 1
        qrels[f"q{q}"] = dict(zip(docs, grades.tolist()))
    return qrels, run


def test_sentence_transformers_ir_evaluator_value_per_query():
    st_eval = pytest.importorskip("sentence_transformers.sentence_transformer.evaluation")
    qrels, run = _tied_run()
    metrics = {"ndcg@k": "ndcg@{}", "mrr@k": "mrr@{}", "precision@k": "precision@{}", "recall@k": "recall@{}",
               "accuracy@k": "hit_rate@{}", "map@k": "map@{}"}
    ks = [1, 3, 5, 10]
    names = [template.format(k) for template in metrics.values() for k in ks]
    ours = tieaware.evaluate(qrels, run, names, oblivious="sentence_transformers")
    others = tieaware.evaluate(qrels, run, names)  # trec_eval's order: differs, so the test can tell
    differs = False
    for q in run:
        corpus = {d: d for d in run[q]}

        class Fixed:  # the run's scores for this query, through the evaluator's own code
            similarity_fn_name = "dot"
            model_card_data = type("Card", (), {"set_evaluation_metrics": lambda *a: None})()

            def encode_query(self, texts, **kwargs):
                return torch.ones(len(texts), 1, dtype=torch.float64)

            def encode_document(self, texts, scores=run[q], **kwargs):
                return torch.tensor([[scores[d]] for d in texts], dtype=torch.float64)

            def similarity(self, a, b):
                return a @ b.T

        relevant = {d for d, g in qrels[q].items() if g > 0}
        evaluator = st_eval.InformationRetrievalEvaluator(
            {q: "query"}, corpus, {q: relevant}, mrr_at_k=ks, ndcg_at_k=ks, accuracy_at_k=ks,
            precision_recall_at_k=ks, map_at_k=ks, corpus_chunk_size=7, write_csv=False)
        theirs = evaluator(Fixed())
        for kind, template in metrics.items():
            for k in ks:
                name = template.format(k)
                if kind == "map@k" and len(relevant) > k:
                    continue  # their MAP@k divides by min(k, R), trec_eval's by R: a convention, not an order
                value = theirs[f"dot_{kind.replace('@k', f'@{k}')}"]
                assert ours[name].per_query.loc[q, "oblivious"] == pytest.approx(value, abs=1e-12), (q, name)
                differs |= abs(others[name].per_query.loc[q, "oblivious"] - value) > 1e-9
    assert differs


@pytest.mark.slow
def test_sentence_transformers_ir_evaluator_on_the_bundled_bf16_run():
    """Issue 27's figure: sentence-transformers' InformationRetrievalEvaluator itself prints nDCG@10 0.50739 on
    Cranfield's bf16 run (binary qrels); oblivious="sentence_transformers" is that number, its bias is it
    minus E[nDCG@10], and trec_eval's order gives another number."""
    st_eval = pytest.importorskip("sentence_transformers.sentence_transformer.evaluation")
    from tieaware.datasets import cranfield

    files = cranfield()
    qrels = tieaware.read_trec_qrels(files.qrels)
    run = tieaware.read_trec_run(files.runs["bf16"])
    relevant = {q: {d for d, g in docs.items() if g >= 1} for q, docs in qrels.items()}
    queries = [q for q in run if relevant.get(q)]
    corpus = sorted({d for q in queries for d in run[q]})
    assert min(len(run[q]) for q in queries) >= 10  # no unretrieved document can reach their top 10
    # document embedding = its run score for each query (one column per query), far below every score if
    # not retrieved; query embedding = one-hot: the dot product is the run's score, exactly (float64)
    scores = np.full((len(corpus), len(queries)), -1e30)
    row = {d: i for i, d in enumerate(corpus)}
    for j, q in enumerate(queries):
        for d, score in run[q].items():
            scores[row[d], j] = score

    class Fixed:
        similarity_fn_name = "dot"
        model_card_data = type("Card", (), {"set_evaluation_metrics": lambda *a: None})()

        def encode_query(self, texts, **kwargs):
            return torch.eye(len(queries), dtype=torch.float64)[[queries.index(t) for t in texts]]

        def encode_document(self, texts, **kwargs):
            return torch.from_numpy(scores[[row[t] for t in texts]])

        def similarity(self, a, b):
            return a @ b.T

    evaluator = st_eval.InformationRetrievalEvaluator(
        {q: q for q in queries}, {d: d for d in corpus}, {q: relevant[q] for q in queries}, ndcg_at_k=[10],
        mrr_at_k=[10], accuracy_at_k=[1], precision_recall_at_k=[10], map_at_k=[100], write_csv=False)
    theirs = evaluator(Fixed())["dot_ndcg@10"]
    binary = {q: dict.fromkeys(relevant[q], 1) for q in queries}
    ours = tieaware.evaluate(binary, {q: run[q] for q in queries}, "ndcg@10", oblivious="sentence_transformers")
    assert round(theirs, 5) == 0.50739
    assert ours.oblivious == pytest.approx(theirs, abs=1e-12)
    assert ours.bias == pytest.approx(theirs - ours.expected, abs=1e-12) and abs(ours.bias) > 1e-3
    assert abs(tieaware.evaluate(binary, {q: run[q] for q in queries}, "ndcg@10").oblivious - theirs) > 1e-4


def _torchmetrics_per_query(indexes, preds, target, functional, **kwargs):
    """torchmetrics' RetrievalMetric.compute, per query: rows by torch.sort(indexes), split, then the metric."""
    order = torch.sort(indexes).indices
    sizes = torch.bincount(indexes).tolist()
    return [float(functional(p, t, **kwargs)) for p, t in
            zip(torch.split(preds[order], sizes), torch.split(target[order], sizes))]


def test_torchmetrics_value_per_query_and_overall():
    tm = pytest.importorskip("torchmetrics")
    from torchmetrics.functional import retrieval as fr

    rng = np.random.default_rng(3)
    n = 2000
    indexes = torch.tensor(rng.integers(0, 40, n))
    preds = torch.tensor(rng.integers(1, 7, n) / 4, dtype=torch.float32)  # > 0: torchmetrics zeroes the rest
    target = torch.tensor(rng.random(n) < 0.3)
    target[np.unique(indexes.numpy(), return_index=True)[1]] = True  # every query has a relevant row
    cases = [("mrr@5", fr.retrieval_reciprocal_rank, {"top_k": 5}, tm.retrieval.RetrievalMRR(top_k=5)),
             ("map", fr.retrieval_average_precision, {}, tm.retrieval.RetrievalMAP()),
             ("precision@3", fr.retrieval_precision, {"top_k": 3}, tm.retrieval.RetrievalPrecision(top_k=3)),
             ("recall@10", fr.retrieval_recall, {"top_k": 10}, tm.retrieval.RetrievalRecall(top_k=10)),
             ("hit_rate@2", fr.retrieval_hit_rate, {"top_k": 2}, tm.retrieval.RetrievalHitRate(top_k=2)),
             ("r-precision", fr.retrieval_r_precision, {}, tm.retrieval.RetrievalRPrecision()),
             ("ndcg@5", fr.retrieval_normalized_dcg, {"top_k": 5}, tm.retrieval.RetrievalNormalizedDCG(top_k=5))]
    ours = tieaware.evaluate_arrays(indexes, preds, target, [c[0] for c in cases], oblivious="torchmetrics")
    as_given = tieaware.evaluate_arrays(indexes, preds, target, [c[0] for c in cases], oblivious="input")
    for name, functional, kwargs, metric in cases:
        per_query = _torchmetrics_per_query(indexes, preds, target, functional, **kwargs)
        np.testing.assert_allclose(ours[name].per_query_values("oblivious"), per_query, atol=1e-6, err_msg=name)
        assert ours[name].oblivious == pytest.approx(float(metric(preds, target, indexes=indexes)), abs=1e-6)
        assert ours[name].range > 0
    # the torch orders are not the input order: the test would see a wrong reproduction
    assert any(abs(ours[n].oblivious - as_given[n].oblivious) > 1e-6 for n, *_ in cases)
    assert ours["ndcg@5"].bias == 0  # tie-averaged DCG is E[DCG]


def test_torchmetrics_order_needs_float32_distinct_scores():
    qrels = {"q": {"a": 1, "b": 0}}
    run = {"q": {"a": 0.1, "b": 0.1 + 1e-12}}  # distinct as float64, equal as float32
    run_tied = {"q": {"a": 0.1, "b": 0.1, "c": 0.1 + 1e-12}}
    assert tieaware.evaluate(qrels, run, "mrr", oblivious="torchmetrics") == 0.5  # no tie group: no torch
    with pytest.raises(tieaware.InputError, match="equal as float32"):
        tieaware.evaluate({"q": {"a": 1, "b": 0, "c": 0}}, run_tied, "mrr", oblivious="torchmetrics")


def test_mteb_value_per_query():
    metrics_module = pytest.importorskip("mteb._evaluators.retrieval_metrics")
    qrels, run = _tied_run()
    ks = [1, 3, 10]
    theirs = metrics_module.calculate_retrieval_scores(run, qrels, ks)
    trec = {"ndcg_cut_{}": "ndcg@{}", "map_cut_{}": "map@{}", "recall_{}": "recall@{}", "P_{}": "precision@{}",
            "success_{}": "hit_rate@{}"}
    names = [t.format(k) for t in trec.values() for k in ks] + [f"mrr@{k}" for k in ks]
    ours = tieaware.evaluate(qrels, run, names, oblivious="mteb")
    as_given = tieaware.evaluate(qrels, run, names, oblivious="input")
    for q in run:
        for their_key, name in trec.items():
            for k in ks:
                value = theirs.all_scores[q][their_key.format(k)]
                assert ours[name.format(k)].per_query.loc[q, "oblivious"] == pytest.approx(value, abs=1e-12)
    for k in ks:  # MTEB rounds its means to 5 decimals
        assert ours[f"mrr@{k}"].oblivious == pytest.approx(theirs.mrr[f"MRR@{k}"], abs=6e-6)
        assert ours[f"ndcg@{k}"].oblivious == pytest.approx(theirs.ndcg[f"NDCG@{k}"], abs=6e-6)
    assert any(abs(ours[n].oblivious - as_given[n].oblivious) > 1e-4 for n in names)


def test_sentence_transformers_reranking_evaluator_value_per_query():
    st_eval = pytest.importorskip("sentence_transformers.cross_encoder.evaluation")
    rng = np.random.default_rng(11)
    levels = rng.integers(0, 4, 30).astype(np.float32) / 4  # the score of each of 30 texts: 4 levels, ties

    class Fixed:
        model_card_data = type("Card", (), {"set_evaluation_metrics": lambda *a: None})()

        def predict(self, pairs, **kwargs):
            return np.array([levels[int(doc)] for _, doc in pairs], np.float32)

    qrels, run, names = {}, {}, ["mrr@10", "mrr@3", "ndcg@10"]
    theirs = {}
    for q in range(25):
        texts = [str(t) for t in rng.integers(0, 30, 45)]  # 45 candidates: numpy's sort is not an insertion sort
        samples = [{"query": "q", "positive": texts[:5], "negative": texts[5:]}]
        for at_k in (10, 3):
            theirs[(q, at_k)] = st_eval.CrossEncoderRerankingEvaluator(samples, at_k=at_k, write_csv=False)(Fixed())
        ids = [f"{j:02d}" for j in range(len(texts))]
        run[str(q)] = dict(zip(ids, (levels[int(t)].item() for t in texts)))
        qrels[str(q)] = dict(zip(ids, [1] * 5 + [0] * 40))
    ours = tieaware.evaluate(qrels, run, names, oblivious="sentence_transformers_reranking")
    trec = tieaware.evaluate(qrels, run, names, oblivious="input")
    differs = False
    for q in range(25):
        for at_k in (10, 3):
            value = ours[f"mrr@{at_k}"].per_query.loc[str(q), "oblivious"]
            assert value == pytest.approx(theirs[(q, at_k)][f"mrr@{at_k}"], abs=1e-12), (q, at_k)
            differs |= abs(trec[f"mrr@{at_k}"].per_query.loc[str(q), "oblivious"] - value) > 1e-9
        assert ours["ndcg@10"].per_query.loc[str(q), "oblivious"] == pytest.approx(theirs[(q, 10)]["ndcg@10"])
    assert differs and ours["mrr@10"].range > 0
    with pytest.raises(tieaware.InputError, match="average_precision_score"):
        tieaware.evaluate(qrels, run, "map", oblivious="sentence_transformers_reranking")


def test_tie_averaged_ndcg_does_not_leak_into_another_order_on_a_cached_ranx_run():
    """A ranx Run keeps its per-metric statistics: E[nDCG] as torchmetrics' value must not become "input"'s."""
    ranx = pytest.importorskip("ranx")
    qrels, run = _tied_run()
    ranx_qrels, ranx_run = ranx.Qrels(qrels), ranx.Run(run)
    tm = tieaware.evaluate(ranx_qrels, ranx_run, "ndcg@5", oblivious="torchmetrics")
    given = tieaware.evaluate(ranx_qrels, ranx_run, "ndcg@5", oblivious="input")
    fresh = tieaware.evaluate(ranx.Qrels(qrels), ranx.Run(run), "ndcg@5", oblivious="input")
    assert tm.oblivious == tm.expected and given.oblivious == fresh.oblivious != tm.oblivious
