"""run_from_logprobs: GradeReranker's scores from log-probabilities computed elsewhere."""
import json
from types import SimpleNamespace

import numpy as np
import pytest

torch = pytest.importorskip("torch")
from test_hps_grade import CANDIDATES, FEW_DOCS, FEW_QUERIES, GRADES, TEMPLATE, TOKENIZER, grade_lm, quiet  # noqa: E402
from test_logprobs import Logprob  # noqa: E402

from tieaware.errors import InputError, MissingFileError  # noqa: E402
from tieaware.hps import GradeReranker, TieWarning, YesNoReranker, run_from_logprobs  # noqa: E402
from tieaware.logprobs import MissingTokenWarning  # noqa: E402


def scorer_and_logprobs(dtype, cls=GradeReranker, tokens=GRADES, **kwargs):
    """A reranker and, per pair, the log-softmax of the very logits it scores (hps='head'), {token: logprob}."""
    reranker = cls(grade_lm(), TOKENIZER, template=TEMPLATE, dtype=dtype, batch_size=1, show_progress=False,
                   **kwargs)
    records = {}
    with torch.inference_mode():
        for qid, docids in CANDIDATES.items():
            for docid in docids:
                [(_, logits)] = list(reranker._answer_logits(reranker.token_ids, ("head",), [FEW_QUERIES[qid]],
                                                             [FEW_DOCS[docid]]))
                logprobs = torch.log_softmax(logits["head"].double(), -1)[0].tolist()
                records.setdefault(qid, {})[docid] = dict(zip(tokens, logprobs))
    return reranker, records


def vllm_output(logprobs: dict) -> SimpleNamespace:
    """A vLLM RequestOutput generating "</think>", "\\n\\n" and the answer, whose last position lists `logprobs`."""
    steps = [{9: Logprob(-0.01, 1, "</think>")}, {10: Logprob(-0.02, 1, "\n\n")},
             {100 + i: Logprob(value, i + 1, token) for i, (token, value) in enumerate(logprobs.items())}]
    return SimpleNamespace(outputs=[SimpleNamespace(index=0, text="", token_ids=[9, 10, 100], logprobs=steps)])


def chat_completion(logprobs: dict) -> dict:
    """An OpenAI-compatible chat completion (JSON) answering with one token whose top_logprobs are `logprobs`."""
    tops = [{"token": token, "logprob": value, "bytes": list(token.encode())} for token, value in logprobs.items()]
    content = [dict(tops[0], top_logprobs=tops)]
    return {"object": "chat.completion", "choices": [{"index": 0, "logprobs": {"content": content}}]}


def completion(logprobs: dict) -> dict:
    """An OpenAI-compatible completion (JSON) answering with one token whose top_logprobs are `logprobs`."""
    first = next(iter(logprobs))
    return {"object": "text_completion", "choices": [{"index": 0, "text": first, "logprobs": {
        "tokens": [first], "token_logprobs": [logprobs[first]], "top_logprobs": [logprobs], "text_offset": [0]}}]}


@pytest.mark.parametrize("shape", [vllm_output, chat_completion, completion])
def test_each_response_shape_equals_the_grade_reranker(shape):
    reranker, records = scorer_and_logprobs("bf16")
    expected = quiet(lambda: reranker.rerank(FEW_QUERIES, FEW_DOCS, CANDIDATES)).to_dict()
    responses = {q: {d: shape(lp) for d, lp in docs.items()} for q, docs in records.items()}
    run = quiet(lambda: run_from_logprobs(responses, position="</think>" if shape is vllm_output else None))
    for qid, docs in expected.items():
        np.testing.assert_allclose([run[qid][d] for d in docs], list(docs.values()), rtol=1e-12, atol=0)


@pytest.mark.parametrize("shape", [dict, vllm_output, chat_completion, completion])
def test_equals_the_yes_no_reranker_given_the_same_logprobs(shape):
    reranker, records = scorer_and_logprobs("bf16", YesNoReranker, ["0", "1"], yes_token="1", no_token="0")
    expected = quiet(lambda: reranker.rerank(FEW_QUERIES, FEW_DOCS, CANDIDATES)).to_dict()
    responses = {q: {d: shape(lp) for d, lp in docs.items()} for q, docs in records.items()}
    run = quiet(lambda: run_from_logprobs(responses, kind="yes_no", answers=(["1"], ["0"]),
                                          position="</think>" if shape is vllm_output else None))
    for qid, docs in expected.items():
        np.testing.assert_allclose([run[qid][d] for d in docs], list(docs.values()), rtol=1e-12, atol=0)


@pytest.mark.parametrize("score", ["expected", "erank", "argmax"])
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_equals_the_grade_reranker_given_the_same_logprobs(dtype, score, tmp_path):
    reranker, records = scorer_and_logprobs(dtype)
    reranker.score = score
    expected = quiet(lambda: reranker.rerank(FEW_QUERIES, FEW_DOCS, CANDIDATES)).to_dict()
    run = quiet(lambda: run_from_logprobs(records, score=score))
    for qid, docs in expected.items():
        np.testing.assert_allclose([run[qid][d] for d in docs], list(docs.values()), rtol=1e-12, atol=0)
    path = tmp_path / "logprobs.jsonl"
    path.write_text("".join(json.dumps({"qid": q, "docid": d, "logprobs": lp}) + "\n"
                            for q, docs in records.items() for d, lp in docs.items()))
    assert quiet(lambda: run_from_logprobs(path, score=score)).to_dict() == run.to_dict()
    assert run.metadata["score"] == score


def test_the_hps_name_is_the_light_function_itself():
    import tieaware.logprobs

    assert run_from_logprobs is tieaware.logprobs.run_from_logprobs


def test_token_spellings_add_up_missing_grades_count_zero_and_others_are_ignored():
    p = {"1": 0.2, " 1": 0.1, "Ġ2": 0.3, "yes": 0.4}  # grade 0 absent from the top log-probs
    with pytest.warns(MissingTokenWarning, match=r"\(1 of 1\)"):
        run = run_from_logprobs({"q": {"d": {t: np.log(v) for t, v in p.items()}}}, grades=[0, 1, 2],
                                missing=float("-inf"))
    assert run["q"]["d"] == pytest.approx((1 * 0.3 + 2 * 0.3) / 0.6)


def test_k_keeps_the_tie_group_and_argmax_warns_by_design():
    records = {"q": {f"d{i}": {str(g): -abs(g - i % 3) for g in range(3)} for i in range(6)}}
    with pytest.warns(TieWarning, match="tie by design"):
        run = run_from_logprobs(records, grades=range(3), score="argmax", k=1)
    assert run.to_dict()["q"] == {"d2": 2.0, "d5": 2.0}


@pytest.mark.parametrize("records, message", [
    ({"q": {"d": {"yes": -0.1}}}, r"query 'q', doc 'd': not one grade token .*among \['yes'\]"),
    ({"q": {"d": {"3": float("nan")}}}, "log-prob of '3' is nan"),
    ({"q": {"d": {"3": "x"}}}, "log-prob of '3' is 'x'"),
    ({"q": {"d": {"3": 0.9, "2": 0.1}}}, r"log-prob of '3' is 0\.9: above 0.*probabilities"),
    ({"q": {"d": {"3": -0.5, "2": float("inf")}}}, "log-prob of '2' is inf"),
])
def test_bad_records_name_the_pair(records, message):
    with pytest.raises(InputError, match=message):
        run_from_logprobs(records)


def test_bad_jsonl_names_file_and_line(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"qid": "q", "docid": "d", "logprobs": {"3": -0.1}}\n{"qid": "q"}\n')
    with pytest.raises(InputError, match=r"bad.jsonl:2: a record is"):
        run_from_logprobs(path)
    with pytest.raises(MissingFileError):
        run_from_logprobs(tmp_path / "absent.jsonl")
