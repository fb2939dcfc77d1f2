"""tieaware.logprobs: runs from the log-probs and rerank responses engines return, read from fixtures in the
engines' documented shapes (tests/data/logprobs), scored by hand-written formulas, without torch."""
import json
import math
import subprocess
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from tieaware.errors import InputError, InputTypeError, MissingIdError
from tieaware.logprobs import MissingTokenWarning, TieWarning, run_from_logprobs, run_from_rerank

DATA = Path(__file__).resolve().parent / "data" / "logprobs"


def fixture(name):
    return json.loads((DATA / name).read_text())


@dataclass
class Logprob:  # vLLM's vllm.logprobs.Logprob
    logprob: float
    rank: int | None = None
    decoded_token: str | None = None


def as_objects(value, vllm_steps=False):
    """JSON -> attribute objects, as the clients return them (SimpleNamespace for pydantic models; vLLM's
    per-position {token_id: Logprob} dicts keep int keys and Logprob values; the completions client keeps
    each position's top_logprobs a {token: logprob} dict)."""
    if isinstance(value, dict):
        if vllm_steps:
            return {int(key): Logprob(**entry) for key, entry in value.items()}
        if all(isinstance(item, float) for item in value.values()):
            return dict(value)
        return SimpleNamespace(**{key: as_objects(item, key == "logprobs" and isinstance(item, list))
                                  for key, item in value.items()})
    if isinstance(value, list):
        return [as_objects(item, vllm_steps) for item in value]
    return value


def expected_grade(logprobs, score="expected"):
    """sum_s s P(s) / s* P(s*) over {grade: log-prob}, P = the softmax over the grades given."""
    total = sum(math.exp(v) for v in logprobs.values())
    p = {g: math.exp(v) / total for g, v in logprobs.items()}
    best = max(p, key=p.get)
    return sum(g * q for g, q in p.items()) if score == "expected" else best * p[best]


def p_yes(yes, no):
    return math.exp(yes) / (math.exp(yes) + math.exp(no))


def merged(tokens, *names):
    """log(sum exp) of the log-probs of the spellings of `names` (case, spaces folded)."""
    values = [v for t, v in tokens.items() if t.strip().lower() in names]
    return math.log(sum(math.exp(v) for v in values)) if values else None


def close(run, expected):
    for qid, docs in expected.items():
        np.testing.assert_allclose([run[qid][d] for d in docs], list(docs.values()), rtol=1e-12, atol=0)


# ---- vLLM RequestOutput: grades after reasoning -------------------------------------------------------------

def vllm_expected():
    expected = {}
    for qid, docs in fixture("vllm_request_outputs.json").items():
        for docid, output in docs.items():
            answer = output["outputs"][0]["logprobs"][-2]  # the grade; the last position is <|im_end|>
            grades = {int(e["decoded_token"]): e["logprob"] for e in answer.values() if e["decoded_token"].strip()}
            floor = min(e["logprob"] for e in answer.values())  # missing='min': the smallest listed
            expected.setdefault(qid, {})[docid] = expected_grade({g: grades.get(g, floor) for g in range(10)})
    return expected


@pytest.mark.parametrize("position", ["</think>", -2, 9, "</thi"])
def test_vllm_request_outputs_as_json_and_as_objects(position):
    records = fixture("vllm_request_outputs.json")
    with pytest.warns(MissingTokenWarning, match=r"33\.3% of the pairs \(1 of 3\) lack a grade token"):
        run = run_from_logprobs(records, grades=range(10), position=position)
    close(run, vllm_expected())
    objects = {q: {d: as_objects(o) for d, o in docs.items()} for q, docs in records.items()}
    assert isinstance(objects["q1"]["d1"].outputs[0].logprobs[0][151667], Logprob)
    with pytest.warns(MissingTokenWarning):
        assert run_from_logprobs(objects, grades=range(10), position=position).to_dict() == run.to_dict()
    completion_outputs = {q: {d: o.outputs[0] for d, o in docs.items()} for q, docs in objects.items()}
    with pytest.warns(MissingTokenWarning):
        assert run_from_logprobs(completion_outputs, grades=range(10), position=position).to_dict() == run.to_dict()


class SequenceLike:
    """Indexable with a length, not a registered Sequence (as a flat log-prob container may be)."""

    def __init__(self, items):
        self.items = items

    def __len__(self):
        return len(self.items)

    def __getitem__(self, index):
        return self.items[index]


def test_vllm_logprobs_in_a_sequence_like_container():
    records = fixture("vllm_request_outputs.json")
    objects = {q: {d: as_objects(o) for d, o in docs.items()} for q, docs in records.items()}
    for output in objects["q1"].values():
        output.outputs[0].logprobs = SequenceLike(output.outputs[0].logprobs)
    with pytest.warns(MissingTokenWarning):
        run = run_from_logprobs(objects, grades=range(10), position="</think>")
    close(run, vllm_expected())


def test_vllm_default_position_is_the_last_and_names_the_pair_when_it_holds_no_grade():
    with pytest.raises(InputError, match=r"query 'q1', doc 'd1': not one grade token .* among \['<\|im_end\|>'"):
        run_from_logprobs(fixture("vllm_request_outputs.json"), grades=range(10))


def test_vllm_token_ids_through_the_tokenizer_when_decoded_token_is_absent():
    records = fixture("vllm_request_outputs.json")
    texts = {int(tid): e["decoded_token"] for o in records["q1"].values() for step in o["outputs"][0]["logprobs"]
             for tid, e in step.items()}
    for output in records["q1"].values():
        for step in output["outputs"][0]["logprobs"]:
            for entry in step.values():
                entry["decoded_token"] = None
    with pytest.raises(InputError, match="token id .* has no decoded_token .* pass tokenizer="):
        run_from_logprobs(records, grades=range(10), position="</think>")

    class Tokenizer:
        def decode(self, ids):
            return texts[ids[0]]

    with pytest.warns(MissingTokenWarning):
        run = run_from_logprobs(records, grades=range(10), position="</think>", tokenizer=Tokenizer())
    close(run, vllm_expected())


@pytest.mark.parametrize("position, message", [
    ("<answer>", r"query 'q1', doc 'd1': marker '<answer>' is not in the generated text"),
    (11, r"query 'q1', doc 'd1': position 11 lies outside the 11 generated positions"),
    (2.0, "position must be None, an int or a marker str"),
    ("", "position='' marks nothing"),
])
def test_bad_positions_name_the_pair(position, message):
    with pytest.raises(InputError, match=message):
        run_from_logprobs(fixture("vllm_request_outputs.json"), grades=range(10), position=position)


def test_a_marker_needs_generated_text():
    with pytest.raises(InputError, match=r"query 'q', doc 'd': position='</think>' needs the generated tokens' text"):
        run_from_logprobs({"q": {"d": {"1": -0.1}}}, position="</think>")


# ---- OpenAI-compatible chat completions: yes/no ---------------------------------------------------------------

def chat_expected(missing="min"):
    expected = {}
    for qid, docs in fixture("openai_chat_yes_no.json").items():
        for docid, response in docs.items():
            top = {t["token"]: t["logprob"] for t in response["choices"][0]["logprobs"]["content"][0]["top_logprobs"]}
            floor = min(top.values()) if missing == "min" else missing
            yes, no = merged(top, "yes"), merged(top, "no")
            expected.setdefault(qid, {})[docid] = p_yes(yes, floor if no is None else no)
    return expected


def test_openai_chat_yes_no_as_json_objects_triples_and_jsonl(tmp_path):
    records = fixture("openai_chat_yes_no.json")
    with pytest.warns(MissingTokenWarning, match=r"20\.0% of the pairs \(1 of 5\) lack an answer token"):
        run = run_from_logprobs(records, kind="yes_no")
    close(run, chat_expected())
    assert run.metadata["missing_share"] == 0.2 and run.metadata["answers"] == [["yes"], ["no"]]
    triples = [(q, d, as_objects(r)) for q, docs in records.items() for d, r in docs.items()]
    with pytest.warns(MissingTokenWarning):
        assert run_from_logprobs(iter(triples), kind="yes_no").to_dict() == run.to_dict()
    path = tmp_path / "responses.jsonl"
    path.write_text("".join(json.dumps({"qid": q, "docid": d, "response": r}) + "\n\n"
                            for q, docs in records.items() for d, r in docs.items()))
    with pytest.warns(MissingTokenWarning):
        assert run_from_logprobs(path, kind="yes_no").to_dict() == run.to_dict()
    with pytest.warns(MissingTokenWarning, match=r"missing=-inf gave it log-prob -inf"):
        certain = run_from_logprobs(records, kind="yes_no", missing=float("-inf"), name="x")
    assert certain["q1"]["d3"] == 1.0
    close(certain, chat_expected(missing=float("-inf")))


def test_yes_no_spellings_fold_and_merge_and_presets():
    tokens = {"Yes": -1.0, "▁yes": -2.0, "Ġyes": -3.5, " YES": -4.0, "no": -1.5, "No ": -2.5, "maybe": -0.9}
    run = run_from_logprobs({"q": {"d": tokens}}, kind="yes_no")
    assert run["q"]["d"] == pytest.approx(p_yes(merged({"yes": math.log(sum(math.exp(v) for v in (-1, -2, -3.5, -4)))},
                                                       "yes"), math.log(math.exp(-1.5) + math.exp(-2.5))), rel=1e-12)
    rank1 = run_from_logprobs({"q": {"d": {"true": -0.2, "False": -1.9}}}, kind="yes_no", answers="true_false")
    assert rank1["q"]["d"] == pytest.approx(p_yes(-0.2, -1.9), rel=1e-12)
    own = run_from_logprobs({"q": {"d": {"relevant": -0.2, "irrelevant": -1.9}}}, kind="yes_no",
                            answers=(["Relevant"], ["irrelevant"]))
    assert own["q"]["d"] == rank1["q"]["d"]


def test_openai_very_unlikely_counts_as_missing():
    response = {"choices": [{"index": 0, "logprobs": {"content": [
        {"token": "no", "logprob": -9999.0, "bytes": [110, 111],
         "top_logprobs": [{"token": "yes", "logprob": -0.01, "bytes": [121, 101, 115]},
                          {"token": "Yes", "logprob": -5.0, "bytes": [89, 101, 115]}]}]}}]}
    with pytest.warns(MissingTokenWarning, match=r"\(1 of 1\)"):
        run = run_from_logprobs({"q": {"d": response}}, kind="yes_no")
    assert run["q"]["d"] == pytest.approx(p_yes(math.log(math.exp(-0.01) + math.exp(-5.0)), -5.0), rel=1e-12)


# ---- OpenAI-compatible completions: grades ---------------------------------------------------------------------

@pytest.mark.parametrize("score", ["expected", "erank"])
def test_openai_completions_grades(score):
    records = fixture("openai_completions_grade.json")
    expected = {}
    for qid, docs in records.items():
        for docid, response in docs.items():
            top = response["choices"][0]["logprobs"]["top_logprobs"][0]
            grades = {g: merged(top, str(g)) for g in range(4)}
            floor = min(top.values())
            expected.setdefault(qid, {})[docid] = expected_grade(
                {g: floor if v is None else v for g, v in grades.items()}, score)
    run = run_from_logprobs(records, grades=range(4), score=score)
    close(run, expected)
    objects = {q: {d: as_objects(r) for d, r in docs.items()} for q, docs in records.items()}
    assert run_from_logprobs(objects, grades=range(4), score=score).to_dict() == run.to_dict()


# ---- edges ------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("records, message", [
    ({}, "hold no \\(query, document\\) pair"),
    ({"q": {}}, "query 'q' holds no documents"),
    ([], "hold no \\(query, document\\) pair"),
])
def test_no_pair_is_an_input_error(records, message):
    with pytest.raises(InputError, match=message):
        run_from_logprobs(records)


@pytest.mark.parametrize("records, message", [
    ({"q": {1: {"3": -0.1}, "1": {"2": -0.1}}}, "query 'q', document '1' appears twice"),
    ({1: {"d": {"3": -0.1}}, "1": {"e": {"2": -0.1}}}, "query id '1' appears twice once ids are read as strings"),
    ({"q": {1.0: {"3": -0.1}}}, "document id 1.0 is a float"),
    ([("q", 1, {"3": -0.1}), ("q", "1", {"2": -0.1})], "query 'q', document '1' appears twice"),
])
def test_ids_equal_as_strings_are_refused(records, message):
    with pytest.raises(InputError, match=message):
        run_from_logprobs(records)


def test_integer_ids_read_as_strings():
    run = run_from_logprobs({7: {1: {"0": -2.0, "1": -0.2}, 2: {"0": -0.2, "1": -2.0}}}, grades=[0, 1])
    assert set(run.to_dict()) == {"7"} and set(run["7"]) == {"1", "2"}


def test_erank_zero_grade_ties_are_warned_with_their_cause():
    records = {"q": {f"d{i}": {"0": -0.2 - i / 10, "1": -1.9, "2": -3.0} for i in range(3)}}
    records["q"]["d9"] = {"0": -2.0, "1": -0.3, "2": -1.9}
    with pytest.warns(TieWarning, match=r"most likely grade s\* is 0, so those documents all tie"):
        run = run_from_logprobs(records, grades=range(3), score="erank")
    assert [run["q"][f"d{i}"] for i in range(3)] == [0.0, 0.0, 0.0]
    expected = run_from_logprobs(records, grades=range(3))  # 'expected' separates them, no warning
    assert len({expected["q"][f"d{i}"] for i in range(3)}) == 3


@pytest.mark.parametrize("records, kwargs, error, message", [
    ({"q": {"d": {"yes": -0.1}}}, {}, InputError, r"query 'q', doc 'd': not one grade token .* among \['yes'\]"),
    ({"q": {"d": {"maybe": -0.1}}}, {"kind": "yes_no"}, InputError, r"query 'q', doc 'd': not one answer token"),
    ({"q": {"d": {"3": 0.5}}}, {}, InputError, r"log-prob of '3' is 0\.5: above 0"),
    ({"q": {"d": {"choices": []}}}, {}, InputError, r"query 'q', doc 'd': the response's choices is empty"),
    ({"q": {"d": {"choices": [{"index": 0, "text": "7", "logprobs": None}]}}}, {}, InputError,
     r"query 'q', doc 'd': the response holds no log-probabilities: ask the engine for them"),
    ({"q": {"d": 0.5}}, {}, InputTypeError, r"query 'q', doc 'd': expected \{token: logprob\}"),
    ({"q": {"d": {"outputs": [{"logprobs": [{"x": {"logprob": -0.1}}]}]}}}, {}, InputError,
     r"query 'q', doc 'd': vLLM log-probs are keyed by token id, got 'x'"),
    ({"q": {"d": {"3": -0.1}}}, {"kind": "yes_no", "score": "erank"}, InputError, "grades= and score= are for"),
    ({"q": {"d": {"3": -0.1}}}, {"kind": "rank"}, InputError, "unknown kind"),
    ({"q": {"d": {"3": -0.1}}}, {"missing": 0.5}, InputError, "missing must be 'min' or a log-prob <= 0"),
    ({"q": {"d": {"yes": -0.1}}}, {"kind": "yes_no", "answers": ("yes", "yes")}, InputError, "disjoint"),
    ([("q", "d")], {}, InputTypeError, r"records item #0: expected \(qid, docid, response\)"),
    (42, {}, InputTypeError, "records must be"),
])
def test_bad_inputs_name_what_is_wrong(records, kwargs, error, message):
    with pytest.raises(error, match=message):
        run_from_logprobs(records, **kwargs)


def test_bad_jsonl_lines_name_file_and_line(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"qid": "q", "docid": "d", "response": {"3": -0.1}}\n{"qid": "q", "docid": "e"}\n')
    with pytest.raises(InputError, match=r"bad\.jsonl:2: a record is"):
        run_from_logprobs(path)
    path.write_text('{"qid": "q", "docid": "d", "response": {"3": -0.1}}\n{"qid": "q", "docid": "e", '
                    '"response": {"3": "x"}}\n')
    with pytest.raises(InputError, match=r"bad\.jsonl:2: query 'q', doc 'e': log-prob of '3' is 'x'"):
        run_from_logprobs(path)
    path.write_text('{"qid": "q", "docid": "d", "logprobs": {"3": -0.1}}\n{"qid": "q", "docid": "d", '
                    '"logprobs": {"3": -0.2}}\n')
    with pytest.raises(InputError, match=r"bad\.jsonl:2: log-prob records: query 'q', document 'd' appears twice"):
        run_from_logprobs(path)


def test_the_users_records_are_not_changed():
    records = fixture("openai_chat_yes_no.json")
    before = json.dumps(records, sort_keys=True)
    with pytest.warns(MissingTokenWarning):
        run_from_logprobs(records, kind="yes_no", k=1)
    assert json.dumps(records, sort_keys=True) == before


def test_importing_and_scoring_loads_neither_torch_nor_transformers():
    code = ("import sys, json; from tieaware.logprobs import run_from_logprobs, run_from_rerank\n"
            f"records = json.load(open({str(DATA / 'openai_chat_yes_no.json')!r}))\n"
            "import warnings; warnings.simplefilter('ignore')\n"
            "print(run_from_logprobs(records, kind='yes_no')['q1']['d1'])\n"
            "print([name for name in ('torch', 'transformers') if name in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split("\n")
    assert float(out[0]) == pytest.approx(chat_expected()["q1"]["d1"], rel=1e-12)
    assert out[1] == "[]"


# ---- rerank and score endpoints -------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["cohere_rerank_v2.json", "jina_rerank.json", "vllm_score.json", "vllm_rerank.json"])
def test_rerank_endpoints_as_json_and_objects(name):
    data = fixture(name)
    documents, responses = data["documents"], data["responses"]
    items = {q: r.get("results", r.get("data")) for q, r in responses.items()}
    key = "score" if name == "vllm_score.json" else "relevance_score"
    expected = {q: {documents[q][item["index"]]: item[key] for item in found} for q, found in items.items()}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run = run_from_rerank(responses, documents)
        objects = run_from_rerank({q: as_objects(r) for q, r in responses.items()}, documents, name="objects")
    assert run.to_dict() == expected and objects.to_dict() == expected
    ties = [str(w.message) for w in caught if issubclass(w.category, TieWarning)]
    grid = {"vllm_score.json": "bf16", "vllm_rerank.json": "fp16"}.get(name)
    assert run.metadata["score_grid"] == grid
    if grid:
        assert len(ties) == 2 and f"exactly representable in {grid}" in ties[0]
    else:
        assert ties == []


def test_rerank_ties_off_the_grids_say_so():
    with pytest.warns(TieWarning, match="the endpoint returned equal scores"):
        run = run_from_rerank({"q": {"results": [{"index": 0, "relevance_score": 0.1234567891},
                                                 {"index": 1, "relevance_score": 0.1234567891}]}}, {"q": ["a", "b"]})
    assert run.metadata["score_grid"] is None


@pytest.mark.parametrize("responses, documents, error, message", [
    ({"q": {"results": [{"index": 4, "relevance_score": 0.5}]}}, {"q": ["a"]}, InputError,
     "query 'q': result index 4 lies outside the 1 documents"),
    ({"q": {"results": [{"index": 0, "relevance_score": 0.5}, {"index": 0, "relevance_score": 0.4}]}},
     {"q": ["a"]}, InputError, "query 'q': a result index appears twice"),
    ({"q": {"results": [{"index": 0, "relevance_score": None}]}}, {"q": ["a"]}, InputError,
     "query 'q': the relevance_score of result 0 is None"),
    ({"q": {"data": [{"index": 0, "score": 0.5}]}}, {"p": ["a"]}, MissingIdError, "query 'q': no documents= entry"),
    ({"q": {"data": [{"index": 0, "score": 0.5}]}}, {"q": [1, "1"]}, InputError, "appears twice in documents"),
    ({"q": {"scores": [0.5]}}, {"q": ["a"]}, InputTypeError, "query 'q': expected a rerank response"),
    ({}, {}, InputError, "no rerank response"),
])
def test_bad_rerank_responses_name_the_query(responses, documents, error, message):
    with pytest.raises(error, match=message):
        run_from_rerank(responses, documents)
