"""GradeReranker on a tiny random Qwen2 whose vocabulary holds the grades 0..10 as single tokens (CPU)."""
import json
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
from test_hps_scorers import CORPUS, PROMPT_WORDS, QUERIES, TEMPLATE, WORDS  # noqa: E402
from tokenizers import Tokenizer, models, pre_tokenizers  # noqa: E402
from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM  # noqa: E402

import tieaware  # noqa: E402
from tieaware.errors import InputError  # noqa: E402
from tieaware.hps import GradeReranker, TieWarning, YesNoReranker  # noqa: E402
from tieaware.hps.grade import grade_scores  # noqa: E402

GRADES = [str(g) for g in range(11)]


def grade_tokenizer(split_digits=False, grades=GRADES):
    vocab = {w: i for i, w in enumerate(["[PAD]", "[UNK]", *WORDS, *PROMPT_WORDS, *grades])}
    backend = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    backend.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Whitespace(), *([pre_tokenizers.Digits(individual_digits=True)] if split_digits else [])])
    return PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="[UNK]", pad_token="[PAD]")


TOKENIZER = grade_tokenizer()


def grade_lm(tokenizer=TOKENIZER, offset=0.0):
    """A random Qwen2; offset > 0 moves every grade logit to about `offset` (differences unchanged), where
    bf16 rounds them to a coarse grid."""
    torch.manual_seed(0)
    config = Qwen2Config(vocab_size=len(tokenizer.get_vocab()), hidden_size=32, intermediate_size=64,
                         num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                         max_position_embeddings=128, tie_word_embeddings=False)
    model = Qwen2ForCausalLM(config).eval()
    if offset:
        prompts = [TEMPLATE.format(query=q, document=d) for q in QUERIES.values() for d in list(CORPUS.values())[:5]]
        with torch.no_grad():
            inputs = tokenizer(prompts, add_special_tokens=False, return_tensors="pt", padding=True)
            mean = model.model(**inputs).last_hidden_state[:, -1].mean(0)
            model.lm_head.weight[tokenizer.convert_tokens_to_ids(GRADES)] += offset * mean / mean.dot(mean)
    return model


QIDS, DOCIDS = list(QUERIES)[:2], list(CORPUS)[:12]
FEW_QUERIES, FEW_DOCS = {q: QUERIES[q] for q in QIDS}, {d: CORPUS[d] for d in DOCIDS}
CANDIDATES = {q: dict.fromkeys(DOCIDS, 0.0) for q in QIDS}


def reranker(model=None, **kwargs):
    kwargs.setdefault("show_progress", False)
    return GradeReranker(model if model is not None else grade_lm(), TOKENIZER, template=TEMPLATE, **kwargs)


def fp32_grade_logits(model, tokenizer=TOKENIZER, grades=GRADES):
    """{(qid, docid): float64 logits of the grade tokens}, from the full fp32 forward pass, one pair at a time."""
    ids = tokenizer.convert_tokens_to_ids(grades)
    out = {}
    with torch.inference_mode():
        for q in QIDS:
            for d in DOCIDS:
                inputs = tokenizer(TEMPLATE.format(query=QUERIES[q], document=CORPUS[d]), add_special_tokens=False,
                                   return_tensors="pt")
                out[q, d] = model(**inputs).logits[0, -1, ids].double().numpy()
    return out


def quiet(call):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TieWarning)
        return call()


def test_argmax_gives_integer_grades_in_range_and_k_keeps_the_tie_group():
    run = quiet(lambda: reranker(score="argmax").rerank(FEW_QUERIES, FEW_DOCS, CANDIDATES, k=3)).to_dict()
    full = quiet(lambda: reranker(score="argmax").rerank(FEW_QUERIES, FEW_DOCS, CANDIDATES)).to_dict()
    for qid, docs in full.items():
        scores = np.array(list(docs.values()))
        assert np.all(scores == np.round(scores)) and scores.min() >= 0 and scores.max() <= 10
        third = np.sort(scores)[::-1][2]
        assert set(run[qid]) == {d for d, s in docs.items() if s >= third}  # every doc tied with the 3rd


@pytest.mark.parametrize("score", ["expected", "erank"])
def test_expected_and_erank_equal_a_hand_computation_from_the_fp32_logits(score):
    model = grade_lm()
    run = reranker(model, score=score, dtype="fp32", batch_size=1).rerank(FEW_QUERIES, FEW_DOCS, CANDIDATES)
    logits = fp32_grade_logits(model)
    grades = np.arange(11.0)
    for (qid, docid), z in logits.items():
        p = np.exp(z - z.max()) / np.exp(z - z.max()).sum()
        expected = p @ grades if score == "expected" else grades[p.argmax()] * p.max()
        assert run[qid][docid] == pytest.approx(expected, rel=1e-6)
        if score == "expected":
            assert 0 <= run[qid][docid] <= 10


@pytest.mark.parametrize("scorer", ["grade", "yes/no"])
def test_a_model_whose_logits_are_not_its_lm_head_output_is_refused(scorer):
    """Gemma 2 soft-caps its logits after the LM head (tanh(z / 30) * 30): the answer tokens' LM-head
    rows alone would give other scores than the model's, so the reranker refuses it, in every mode."""
    from transformers import Gemma2Config, Gemma2ForCausalLM

    torch.manual_seed(0)
    config = Gemma2Config(vocab_size=len(TOKENIZER.get_vocab()), hidden_size=32, intermediate_size=64,
                          num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=8,
                          max_position_embeddings=128, pad_token_id=0)
    model = Gemma2ForCausalLM(config).eval()
    with torch.no_grad():
        model.lm_head.weight.mul_(100)  # logits of tens: the soft cap bends them
    kwargs = {"yes_token": "1", "no_token": "0"} if scorer == "yes/no" else {}
    cls = YesNoReranker if scorer == "yes/no" else GradeReranker
    for hps in ("head", "logits", "none"):
        scorer_ = cls(model, TOKENIZER, template=TEMPLATE, show_progress=False, hps=hps, **kwargs)
        with pytest.raises(InputError, match="Gemma2ForCausalLM.*final_logit_softcapping"):
            scorer_.rerank(FEW_QUERIES, FEW_DOCS, CANDIDATES)
    # a model without it passes the check (and its scores are the model's: the hand computation tests)
    reranker().rerank(FEW_QUERIES, FEW_DOCS, CANDIDATES)


def test_grade_scores_formulas():
    logits = np.log(np.array([[0.1, 0.2, 0.7], [0.5, 0.25, 0.25]]))
    grades = np.array([1, 2, 3])
    np.testing.assert_allclose(grade_scores(logits, grades, "expected"), [2.6, 1.75])
    np.testing.assert_allclose(grade_scores(logits, grades, "erank"), [3 * 0.7, 1 * 0.5])
    np.testing.assert_array_equal(grade_scores(logits, grades, "argmax"), [3, 1])


def test_a_grade_split_into_several_tokens_is_refused_naming_the_tokenizer():
    split = grade_tokenizer(split_digits=True, grades=[str(g) for g in range(10)])
    with pytest.raises(InputError, match=r"does not spell every grade as one token \(\{10: \['1', '0'\]\}\)"):
        GradeReranker(grade_lm(split), split, template=TEMPLATE, show_progress=False)
    nine = GradeReranker(grade_lm(split), split, template=TEMPLATE, grades=range(10), show_progress=False)
    assert nine.token_ids == split.convert_tokens_to_ids([str(g) for g in range(10)])


@pytest.mark.parametrize("kwargs, message", [(dict(score="mean"), "unknown score 'mean'"),
                                             (dict(grades=[1]), "two or more distinct"),
                                             (dict(grades=[0, 0.5]), "integers")])
def test_bad_arguments(kwargs, message):
    with pytest.raises(InputError, match=message):
        reranker(**kwargs)


def test_default_head_leaves_no_tie_where_bf16_and_the_papers_hps_do():
    model = grade_lm(offset=30.0)  # grade logits near 30: bf16 rounds them to multiples of 1/8
    queries, candidates = dict(QUERIES), {q: dict.fromkeys(CORPUS, 0.0) for q in QUERIES}

    def tied(run):
        return sum(len(d) - len(set(d.values())) for d in run.to_dict().values())

    fp32 = reranker(model, dtype="fp32").rerank_modes(queries, CORPUS, candidates, ("head",))["head"]
    runs = reranker(model, dtype="bf16").rerank_modes(queries, CORPUS, candidates, ("none", "upcast", "head"))
    assert tied(runs["head"]) == tied(fp32) == 0
    assert tied(runs["none"]) > 100 and tied(runs["upcast"]) > 10  # 145 and 20 of 160 documents


def test_argmax_ties_warn_that_they_are_by_design():
    with pytest.warns(TieWarning, match="tie by design: score='expected'"):
        run = reranker(score="argmax").rerank(FEW_QUERIES, FEW_DOCS, CANDIDATES)
    assert run.metadata["score"] == "argmax" and run.metadata["grades"] == list(range(11))


def test_score_command_with_the_grade_scorer(tmp_path):
    from tieaware.cli import main
    from tieaware.inputs import write_trec_run

    model = grade_lm()
    model.save_pretrained(tmp_path / "model")
    TOKENIZER.save_pretrained(tmp_path / "model")
    (tmp_path / "queries.json").write_text(json.dumps(FEW_QUERIES))
    (tmp_path / "corpus.json").write_text(json.dumps(FEW_DOCS))
    with open(tmp_path / "bm25.trec", "w") as handle:
        write_trec_run(CANDIDATES, "bm25", handle)
    args = ["score", str(tmp_path / "model"), "--scorer", "grade", "--queries", str(tmp_path / "queries.json"),
            "--corpus", str(tmp_path / "corpus.json"), "--candidates", str(tmp_path / "bm25.trec"),
            "--dtype", "bf16", "--grades", "0-9", "--grade-score", "erank", "--out", str(tmp_path / "run.trec"),
            "--device", "cpu"]
    assert main(args) == 0
    # saved with a Qwen2 config, the tokenizer loads as Qwen2's, which splits "10" into digits: grades 0-9
    expected = GradeReranker(str(tmp_path / "model"), grades=range(10), dtype="bf16", score="erank", device="cpu",
                             show_progress=False)
    assert tieaware.read_trec_run(tmp_path / "run.trec") == expected.rerank(FEW_QUERIES, FEW_DOCS, CANDIDATES).to_dict()
