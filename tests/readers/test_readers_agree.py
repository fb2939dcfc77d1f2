"""Every reader gives the same ranked lists: ranx objects and dicts, in chunks and on threads, against
brute force; a cached ranx conversion is served only while the objects are unchanged."""
import math
import os
import subprocess
import sys

import numpy as np
import pytest
import ranx
from builders import unicode_keyed_run
from hypothesis import given, settings
from hypothesis import strategies as st

import tieaware
from tieaware import InputError
from tieaware.readers.pairs import ranked_lists

QRELS = {"q1": {"d1": 2, "d2": 0, "d3": 1}, "q2": {"d5": 1}}
RUN = {"q1": {"d1": 0.5, "d2": 0.5, "d3": 0.2, "d4": 0.9}, "q2": {"d5": 0.3, "d6": 0.3, "d7": 0.3}}


# ----------------------------------------------------------- stale caches
def test_ranx_qrels_changed_in_place_is_seen():
    qrels = ranx.Qrels({"q1": {"d1": 1}, "q2": {"d1": 1}})
    run = ranx.Run({"q1": {"d1": .5, "d2": .5, "d3": .1}, "q2": {"d1": .3, "d5": .3}})
    assert tieaware.evaluate(qrels, run, "mrr") == pytest.approx(0.75)
    qrels.add_score("q1", "d2", 1)
    assert tieaware.evaluate(qrels, run, "mrr") == pytest.approx(0.875)
    assert tieaware.evaluate(qrels.to_dict(), run.to_dict(), "mrr") == pytest.approx(0.875)


def test_ranx_run_changed_in_place_is_seen():
    qrels = ranx.Qrels({"q1": {"d1": 1}, "q2": {"d1": 1}})
    run = ranx.Run({"q1": {"d1": .5, "d2": .5, "d3": .1}, "q2": {"d1": .3, "d5": .3}})
    assert tieaware.evaluate(qrels, run, "mrr") == pytest.approx(0.75)
    run.add_score("q2", "d9", 0.9)  # a new document above the relevant one
    assert tieaware.evaluate(qrels, run, "mrr") == pytest.approx((0.75 + 0.5 * (1 / 2 + 1 / 3)) / 2)
    run.add_score("q1", "d2", 0.1)  # an existing document's score changes: no size changes
    fresh = tieaware.evaluate(qrels.to_dict(), run.to_dict(), "mrr")
    assert tieaware.evaluate(qrels, run, "mrr") == pytest.approx(float(fresh))
    assert tieaware.evaluate(qrels, run, "mrr").per_query.loc["q1", "expected"] == 1.0


def test_unchanged_ranx_objects_are_served_from_the_cache():
    from tieaware.readers import pairs

    qrels, run = ranx.Qrels(QRELS), ranx.Run(RUN)
    first = pairs.ranked_lists(qrels, run)
    assert pairs.ranked_lists(qrels, run) is first
    run.add_score("q1", "d4", 0.1)
    assert pairs.ranked_lists(qrels, run) is not first


def test_values_swapped_in_place_in_ranx_objects_are_seen():
    """Round values (integer grades, integer or half scores) have float64 bits ending in ~50 zeros:
    the cache check must still see two of them trading places, in the typed dicts or by
    ``add_score``."""
    qrels = ranx.Qrels({"q1": {"d0": 0, "d1": 0, "d2": 2}})
    run = ranx.Run({"q1": {"d1": 0.9, "d2": 0.1}})
    assert tieaware.evaluate(qrels, run, "mrr") == 0.5
    grades = qrels.qrels["q1"]
    grades["d1"], grades["d2"] = grades["d2"], grades["d1"]
    assert tieaware.evaluate(qrels, run, "mrr") == 1.0
    qrels = ranx.Qrels({"q1": {"d0": 1}})
    run = ranx.Run({"q1": {"d0": 2.0, "d1": 1.0, "d2": 0.0}})
    assert tieaware.evaluate(qrels, run, "mrr") == 1.0
    scores = run.run["q1"]
    scores["d0"], scores["d2"] = scores["d2"], scores["d0"]
    assert tieaware.evaluate(qrels, run, "mrr") == pytest.approx(1 / 3)
    qrels = ranx.Qrels({"q1": {"d1": 1}})  # the same through ranx's own method
    run = ranx.Run({"q1": {"d1": .9, "d2": .5}})
    assert tieaware.evaluate(qrels, run, "mrr") == 1.0
    run.add_score("q1", "d1", .5)
    run.add_score("q1", "d2", .9)
    assert tieaware.evaluate(qrels, run, "mrr") == 0.5


def test_the_fingerprint_changes_when_any_two_round_values_trade_places():
    """Every swap of two different values among round numbers changes `typed_dicts.fingerprint`
    (a stale cache would be served otherwise), which is the copy's (`copied_items`)."""
    from tieaware.readers import typed_dicts

    rng = np.random.default_rng(7)
    for trial in range(300):
        values = rng.choice([0.0, 0.5, 1.0, 2.0, 3.0, 4.0, -1.0, 1e3], size=int(rng.integers(2, 9)))
        for i in range(values.size):
            for j in range(i + 1, values.size):
                if values[i] == values[j]:
                    continue
                swapped = values.copy()
                swapped[[i, j]] = values[[j, i]]
                tables = [unicode_keyed_run({"q": {f"d{k}": v for k, v in enumerate(vs)}}).run
                          for vs in (values, swapped)]
                prints = [typed_dicts.fingerprint(table) for table in tables]
                assert prints[0] != prints[1], (trial, values, i, j)
                assert prints == [typed_dicts.copied_items(table).fingerprint for table in tables]


def test_ids_differing_in_the_high_code_points_of_hashed_words_do_not_collide():
    """`id_hash` packs three code points a word; ids differing only in each word's last (highest)
    code point must still hash apart: 360,000 such ids, no collision (a multiply-only mix, which
    never carries a difference downwards, gave thousands)."""
    from tieaware.kernels.groups import SEED, id_hash

    rng = np.random.default_rng(11)
    points = rng.choice(np.r_[0x100:0xD800, 0xE000:0x110000], size=(2, 600), replace=False).astype(np.uint32)
    codes = np.array([ord("a"), ord("b"), 0, ord("c"), ord("d"), 0], np.uint32)
    hashes = set()
    for a in points[0]:
        codes[2] = a
        for b in points[1]:
            codes[5] = b
            hashes.add(id_hash(codes, 0, 6, SEED))
    assert len(hashes) == points.shape[1] ** 2


def test_id_hashes_are_seeded_per_process():
    """The seed of the id hashes is drawn per process, so collisions cannot be prepared offline."""
    import subprocess
    import sys

    code = "from tieaware.kernels.groups import SEED; print(int(SEED))"
    seeds = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
             for _ in range(2)}
    assert len(seeds) == 2


def test_a_doc_renamed_in_place_to_a_crafted_id_of_the_old_hash_is_seen():
    """Two ids built to collide under the first id hash (xor-multiply words, invertible): a rename
    from one to the other in place must not be served from the cache."""
    old, new = "dy1000", "da20\U000b3368\U000881fd"
    qrels = ranx.Qrels({"q1": {old: 1}})
    run = ranx.Run({"q1": {"a": 0.9, old: 0.5}})
    assert tieaware.evaluate(qrels, run, "mrr") == 0.5
    inner = run.run["q1"]
    del inner[old]
    inner[new] = 0.5
    assert tieaware.evaluate(qrels, run, "mrr") == 0.0


# ------------------------------------------------- two readers, one result
GROUP_ARRAYS = ("n_ret", "qrel_offsets", "qrel_rel", "n_groups", "mem_offsets", "mem_rel", "mem_index",
                "mem_input_rank", "mem_trec_rank", "grp_above", "grp_size", "grp_mem_start", "grp_mem_end")


def _brute_force_groups(qrels: dict, run: dict) -> list:
    """Per query, per judged tie group (score descending): (above, size, members), each member
    (grade, input index, input rank in the group, trec_eval rank: documents of the group whose
    UTF-8 id is greater), members by grade descending then input order."""
    out = []
    for qid, docs in run.items():
        items = list(docs.items())
        judged = [(i, d, s) for i, (d, s) in enumerate(items) if d in qrels.get(qid, {})]
        groups = []
        for score in sorted({s for _, _, s in judged}, reverse=True):
            in_group = [(i, d) for i, (d, s) in enumerate(items) if s == score]
            members = sorted(((qrels[qid][d], i, [j for j, _ in in_group].index(i),
                               sum(other.encode() > d.encode() for _, other in in_group))
                              for i, d, s in judged if s == score), key=lambda m: (-m[0], m[1]))
            groups.append((sum(s > score for _, s in items), len(in_group), members))
        out.append(groups)
    return out


def _groups_of(lists) -> list:
    """`_brute_force_groups`' layout read from a RankedLists (trec_eval rank from ``tool_rank``)."""
    trec = lists.tool_rank("trec_eval")
    out = []
    for q in range(len(lists.query_ids)):
        slots = range(lists.mem_offsets[q], lists.mem_offsets[q] + lists.n_groups[q])
        out.append([(lists.grp_above[g], lists.grp_size[g],
                     [(lists.mem_rel[m], lists.mem_index[m], lists.mem_input_rank[m], trec[m])
                      for m in range(lists.grp_mem_start[g], lists.grp_mem_end[g])]) for g in slots])
    return out


def _assert_grades_descending(lists, qrels: dict) -> None:
    """The readers reorder each query's judgments best first (`readers.judgments.best_first`): the grades
    they hand on are the qrels' grades, best first, query by query."""
    for q, qid in enumerate(lists.query_ids):
        got = lists.qrel_rel[lists.qrel_offsets[q]:lists.qrel_offsets[q + 1]].tolist()
        assert got == sorted(map(float, qrels.get(qid, {}).values()), reverse=True), qid


def _assert_same_lists(typed, plain) -> None:
    assert typed.query_ids == plain.query_ids
    for name in GROUP_ARRAYS:
        assert np.array_equal(getattr(typed, name), getattr(plain, name)), name
    for order in ("trec_eval", "input", "docid_ascending"):  # ranx orders a Run and a dict differently
        assert np.array_equal(typed.tool_rank(order), plain.tool_rank(order)), order


@pytest.mark.parametrize("qrels_kind", ["dict", "ranx"])
@pytest.mark.parametrize("run_kind", ["charseq", "unicode"])
def test_typed_dict_reader_equals_dict_reader(qrels_kind, run_kind):
    """The jitted reader of ranx's typed dicts gives the arrays the dict reader gives, and both the
    groups a brute-force reading gives: non-ASCII ids (2-, 3- and 4-byte UTF-8), ids of different
    lengths, judged ties, a query with no judged document, one whose judged documents were not
    retrieved, a query with an empty run and one with empty qrels."""
    qrels = {"q1": {"dé": 1, "d€x": 0, "d10": 2, "d1": 1}, "q2": {"𝄞": 1, "zz": 0}, "q3": {"nothere": 1},
             "q4": {"a": 1}, "q5": {"a": 1}, "q6": {}}
    run = {"q1": {"d1": .5, "dé": .5, "d€x": .5, "d10": .25, "d2": .5, "e": .25},
           "q2": {"𝄞": 1.0, "zz": 1.0, "zzz": 1.0, "z": 1.0, "\uffff": 1.0}, "q3": {"x": .1, "y": .1},
           "q4": {"b": .3}, "q5": {}, "q6": {"a": .2, "b": .2}}
    ranx_run = ranx.Run(run) if run_kind == "charseq" else _unicode_keyed_run_with_empty(run)
    ranx_qrels = ranx.Qrels(qrels) if qrels_kind == "ranx" else qrels
    as_dict = {q: dict(ranx_run.run[q]) for q in ranx_run.run}
    typed = ranked_lists(ranx_qrels, ranx_run)
    plain = ranked_lists(qrels, as_dict)
    _assert_same_lists(typed, plain)
    expected = _brute_force_groups(qrels, as_dict)
    assert _groups_of(plain) == expected
    # "𝄞" (U+1D11E) sorts above "\uffff" in UTF-8 and by code point (below it in UTF-16): no greater id
    assert expected[1][0][2][0][3] == 0


def test_typed_dict_reader_reads_long_ids():
    """Ids far longer than the readers' first guess of room for code points (16 a document, 8 a
    judgment): the code point arrays grow and keep every id whole."""
    rng = np.random.default_rng(3)
    # at most 42 code points (15 + 24 + 1 + 2): the width test_a_new_doc_id_width... compiles as well
    run = {f"q{q}": {f"https://xy.org/{'é' * ((7 * d + q) % 25)}/{d}": float(rng.choice([0.5, 0.25]))
                     for d in range(40)} for q in range(5)}
    qrels = {q: {d: int(rng.integers(0, 3)) for d in docs if rng.random() < 0.6} for q, docs in run.items()}
    ranx_run = ranx.Run(run)
    as_dict = {q: dict(ranx_run.run[q]) for q in ranx_run.run}
    _assert_same_lists(ranked_lists(ranx.Qrels(qrels), ranx_run), ranked_lists(qrels, as_dict))
    assert _groups_of(ranked_lists(qrels, as_dict)) == _brute_force_groups(qrels, as_dict)


_IDS = st.text(alphabet=st.sampled_from("ab\u00e9\u20ac\U0001d11e\ufffd0"), min_size=0, max_size=5)
# mostly a few tied values; then the floats where bucketing could go wrong: signed zeros, subnormals,
# neighbours, the largest finite values, infinities; then any float
_SCORES = st.one_of(st.sampled_from([0.25, 0.5, 0.75, 1.0]),
                    st.sampled_from([0.0, -0.0, 5e-324, -5e-324, 1e-320, 1.0 + 2**-52, 1e308, -1e308, math.inf,
                                     -math.inf]),
                    st.floats(allow_nan=False))


@settings(max_examples=150, deadline=None)
@given(data=st.lists(st.tuples(st.dictionaries(_IDS, _SCORES, max_size=14),
                               st.lists(st.integers(-1, 3), max_size=20), st.lists(_IDS, max_size=3)),
                     min_size=1, max_size=4))
def test_readers_equal_brute_force_on_random_tied_runs(data):
    """Random runs with heavy ties, extreme scores and ids sharing prefixes (empty ids too): both
    readers give the groups, input ranks and trec_eval ranks of a brute-force reading."""
    run, qrels = {}, {}
    for q, (docs, grades, unretrieved) in enumerate(data):
        run[f"q{q}"] = docs
        judged = dict(zip(list(docs)[::2], grades))
        judged.update({f"x{u}": 1 for u in ["", *unretrieved]})  # ranx.Qrels needs one judgment somewhere
        judged["x" * 6] = 0  # as long as "x" + the longest id: one ranx.Qrels id width, one compile of ranx's kernels
        qrels[f"q{q}"] = judged
    plain = ranked_lists(qrels, run)
    assert _groups_of(plain) == _brute_force_groups(qrels, run)
    _assert_grades_descending(plain, qrels)
    ranx_run = _unicode_keyed_run_with_empty(run)  # empty queries come last
    typed = ranked_lists(ranx.Qrels(qrels), ranx_run)
    _assert_grades_descending(typed, qrels)
    _assert_same_lists(typed, ranked_lists(qrels, {q: dict(ranx_run.run[q]) for q in ranx_run.run}))


@pytest.mark.parametrize("n_docs", [31, 33, 64, 65, 200])
def test_readers_equal_brute_force_beyond_one_insertion_run(n_docs):
    """Queries judging more documents than `kernels.groups.RUN` (members sorted by insertion in runs
    of 32, then merged), in a few large tie groups: best-first and id orders equal a brute-force reading."""
    rng = np.random.default_rng(n_docs)
    run, qrels = {}, {}
    for q in range(3):
        # 7 code points at most, whatever n_docs: one id width for ranx, which compiles its kernels per width
        ids = [("".join(rng.choice(list("ab\u00e9\u20ac0"), rng.integers(1, 5)))) + f"{i:03d}" for i in range(n_docs)]
        rng.shuffle(ids)
        run[f"q{q}"] = {d: float(rng.choice([0.25, 0.5, 0.75][: q + 1])) for d in ids}
        qrels[f"q{q}"] = {d: int(rng.integers(-1, 4)) for d in ids if rng.random() < 0.8}
    plain = ranked_lists(qrels, run)
    assert _groups_of(plain) == _brute_force_groups(qrels, run)
    ranx_run = ranx.Run(run)  # sorted by score: compared with a dict in its order
    _assert_same_lists(ranked_lists(ranx.Qrels(qrels), ranx_run),
                       ranked_lists(qrels, {q: dict(ranx_run.run[q]) for q in ranx_run.run}))


def _unicode_keyed_run_with_empty(run: dict) -> ranx.Run:
    """`_unicode_keyed_run`, keeping empty queries (``add_score`` cannot add one)."""
    from numba import types
    from numba.typed import Dict

    out = unicode_keyed_run(run)
    for qid in run:
        if not run[qid]:
            out.run[qid] = Dict.empty(types.unicode_type, types.float64)
    return out


def test_dict_reader_reads_in_chunks_as_in_one_piece(monkeypatch):
    """A run read in chunks of a few documents gives the arrays it gives in one chunk."""
    from tieaware.readers import lists as module

    qrels = {f"q{q}": {f"d{d}": d % 3 for d in range(0, 12, 2)} for q in range(7)}
    run = {f"q{q}": {f"d{d}": float((d * q) % 4) for d in range(q + 3)} for q in range(7)}
    whole = ranked_lists(qrels, run)
    monkeypatch.setattr(module, "CHUNK_DOCS", 5)
    _assert_same_lists(ranked_lists(qrels, run), whole)


def _tied_pair(seed: int) -> tuple[dict, dict]:
    """40 queries of 0-29 documents on three scores, about half judged, a judged document never
    retrieved in each; an empty query; one query with nothing judged retrieved."""
    rng = np.random.default_rng(seed)
    run = {f"q{q}": {f"d{d}é": float(rng.choice([0.25, 0.5, 0.75])) for d in range(rng.integers(0, 30))}
           for q in range(40)}
    qrels = {q: {d: int(rng.integers(0, 3)) for d in docs if rng.random() < 0.5} | {"never": 1}
             for q, docs in run.items()}
    run["q0"] = {}
    qrels["q1"] = {"never": 1}
    return qrels, run


@pytest.mark.parametrize("make_comparable", [False, True])
def test_readers_on_threads_equal_one_thread(monkeypatch, make_comparable):
    """Chunks of queries read on threads (`tieaware.threads`, forced here on small data: 3 threads,
    chunks of 40 documents) give the arrays one thread gives, from dicts, and those of ranx objects."""
    from tieaware import threads
    from tieaware.readers import lists as module

    qrels, run = _tied_pair(11)
    if make_comparable:
        qrels["only_in_qrels"] = {"d1": 1}
        run["only_in_run"] = {"d1": 0.5}

    def read_all():  # new ranx objects each time: a converted Run is cached
        typed = ranked_lists(ranx.Qrels(qrels), _unicode_keyed_run_with_empty(run), make_comparable)
        return typed, ranked_lists(qrels, run, make_comparable)

    with threads.limited(1):
        one = read_all()
    monkeypatch.setattr(threads, "n_threads", lambda: 3)
    monkeypatch.setattr(module, "CHUNK_DOCS", 40)
    assert len(module.chunk_ranges(np.cumsum([0] + [len(docs) for docs in run.values()]))) >= 3
    many = read_all()
    _assert_same_lists(many[0], one[0])
    _assert_same_lists(many[1], one[1])
    for lists in (*one, *many):
        _assert_grades_descending(lists, qrels)


def test_threads_must_be_a_count():
    with pytest.raises(InputError, match="threads must be an integer >= 0"):
        tieaware.evaluate(QRELS, RUN, "mrr", threads=-1)
    one, all_cpus = (tieaware.evaluate(QRELS, RUN, "mrr", threads=t) for t in (1, 0))
    assert float(one) == float(all_cpus)


def test_ranx_query_ids_are_read_whole():
    """Query ids are read out of ranx's typed dicts as code points: empty ids, ids holding NUL, 1-, 2-
    and 4-byte-kind ids and a lone surrogate come back equal, each with its own documents."""
    from tieaware.readers import typed_dicts

    ids = ["q1", "", "é", "ÿz", "漢字", "𝄞x", "a\0b", "\ud800", "x" * 100]
    run = ranx.Run({q: {"d1": 0.5, **{f"e{j}": 0.25 for j in range(i)}} for i, q in enumerate(ids)})
    items = typed_dicts.copied_items(run.run)
    assert items.query_ids == list(run.run.keys()) and sorted(items.query_ids) == sorted(ids)  # ranx sorts them
    assert np.array_equal(np.diff(items.offsets), [1 + ids.index(q) for q in items.query_ids])
    offsets, picked = items.picked(ids[::-1] + ["absent"])
    assert np.array_equal(np.diff(offsets), [*range(len(ids), 0, -1), 0])
    assert [items.doc_id(i) for i in picked[:2]] == ["d1", "e0"] and items.values[picked[0]] == 0.5
    qrels = {q: {"d1": 1} for q in ids[1:]} | {"only judged": {"d1": 1}}
    for qrels_kind, run_kind in [("ranx", "ranx"), ("ranx", "dict"), ("dict", "ranx")]:
        res = tieaware.evaluate(ranx.Qrels(qrels) if qrels_kind == "ranx" else qrels,
                                run if run_kind == "ranx" else run.to_dict(), "mrr", make_comparable=True)
        expected = tieaware.evaluate(qrels, run.to_dict(), "mrr", make_comparable=True)
        assert res.query_ids == expected.query_ids, (qrels_kind, run_kind)
        assert sorted(res.query_ids) == sorted(ids[1:] + ["only judged"])
        assert np.array_equal(res.per_query_values("min"), expected.per_query_values("min")), (qrels_kind, run_kind)


def test_evaluating_ranx_objects_compiles_no_typed_container_method():
    """Iterating, sizing or building a numba typed dict or list from Python compiles its methods at
    run time, uncached, per type (0.2 s and ~5 MB each in every new process): the readers never do."""
    code = """if True:
        import ranx, tieaware
        from numba.core.dispatcher import Dispatcher
        from numba.typed import typeddict, typedlist

        def compiled():
            return {(module.__name__, name): len(function.signatures) for module in (typeddict, typedlist)
                    for name, function in vars(module).items() if isinstance(function, Dispatcher)}

        qrels = ranx.Qrels({"q1": {"d1": 1, "d2": 0}, "q2": {"d2": 1}})
        run = ranx.Run({"q1": {"d1": 0.5, "d2": 0.5}, "q2": {"d1": 0.1}})
        other = ranx.Run({"q1": {"d1": 0.5}, "q3": {"d3": 0.5}})
        before = compiled()
        tieaware.evaluate(qrels, run, ["ndcg@10", "map"])
        tieaware.evaluate(qrels, run, "mrr", oblivious="ranx")
        tieaware.evaluate(qrels, other, "mrr", make_comparable=True)
        tieaware.evaluate(qrels, {"q1": {"d1": 0.5}}, "mrr", make_comparable=True)
        tieaware.evaluate({"q1": {"d1": 1}}, other, "mrr", make_comparable=True)
        tieaware.census(run)
        after = compiled()
        assert after == before, {key: n for key, n in after.items() if n != before[key]}
    """
    subprocess.run([sys.executable, "-c", code], check=True, timeout=600)


@pytest.mark.slow
def test_a_new_doc_id_width_compiles_nothing():
    """numba would specialise a kernel taking a typed dict on a Run's (and a Qrels') doc-id width; the
    reader of ranx objects (`kernels.numba_dicts.read_dict`) takes the dict's address instead, so under
    the JIT, in a new process, Runs and Qrels of new widths add no signature to any kernel once the
    first pair compiled them (or loaded them: a signature read from numba's cache counts as well, so the
    process shares this worker's cache, where ranx's kernels are compiled already)."""
    code = """if True:
        import ranx, tieaware
        from tieaware.warming import kernels as found

        def signatures():
            return {kernel: len(kernel.dispatcher.signatures) if kernel.dispatcher else 0 for kernel in found()}

        qrels = ranx.Qrels({"q1": {"d1": 1, "d3": 0}})
        tieaware.evaluate(qrels, ranx.Run({"q1": {"d1": 0.5, "d2": 0.5, "d3": 0.25}}), "ndcg@2")
        kernels = signatures()
        wide = ranx.Run({"q1": {"d1": 0.5, "d" + "x" * 40 + "y": 0.5, "d3": 0.25}})
        tieaware.evaluate(qrels, wide, "ndcg@2")
        tieaware.evaluate(ranx.Qrels({"q1": {"d1": 1, "d" + "z" * 30: 0}}), wide, "ndcg@2")
        after = signatures()
        assert after == kernels, {kernel.py_func.__qualname__: n for kernel, n in after.items() if n != kernels[kernel]}
        assert sum(kernels.values()) > 0
    """
    subprocess.run([sys.executable, "-c", code], check=True, timeout=600,
                   env={**os.environ, "TIEAWARE_JIT": "1"})


def test_scores_are_placed_exactly_among_infinite_or_crowded_judged_scores():
    """Judged scores spanning no finite range (+/-inf: bisection), a range so narrow that buckets
    per unit overflow (subnormal spans: bisection), or crowded into one bucket (an outlier far
    above the rest) still give each document its exact group."""
    for scores in ([math.inf, 1.0, 0.5, -math.inf, 0.5, 1.0, -math.inf],
                   [5e-324, 0.0, 5e-324, 0.0, 1e-323, -5e-324, 0.0],
                   [1e-320, 0.0, 1e-320, 5e-321, 0.0, -1.0, 2e-320],
                   [1e308, -1e308, 1e308, 0.0, -1e308, 1.0],
                   [1.0, 1.0 + 2**-52, 1.0, 1.0 + 2**-52, 1.0 - 2**-53, 1.0],
                   [-0.0, 0.0, -0.0, 1.0, 0.0, -1.0],
                   [1000.0, 0.3, 0.2, 0.1, 0.2, 0.25, 0.1, 0.3, 0.15, 1e-9]):
        run = {"q1": {f"d{i}": s for i, s in enumerate(scores)}}
        qrels = {"q1": {f"d{i}": i % 3 for i in range(len(scores)) if i != 2}}
        assert _groups_of(ranked_lists(qrels, run)) == _brute_force_groups(qrels, run)


def test_ids_holding_nul_are_read_whole():
    """An id containing NUL cannot be split at NULs: the reader falls back to lengths."""
    qrels = {"q1": {"a\0b": 1, "a": 0}}
    run = {"q1": {"a": 0.5, "a\0b": 0.5, "a\0": 0.5}}
    assert _groups_of(ranked_lists(qrels, run)) == _brute_force_groups(qrels, run)


def test_ranx_qrels_beside_a_dict_run_read_in_chunks_on_a_worker(monkeypatch):
    """A ranx Qrels with a dict run: its judgments, read whole, are handed to the chunks of the dict
    run in the worker pipeline; the arrays equal those of the qrels as a dict read in one piece."""
    from tieaware import threads
    from tieaware.readers import lists as module

    qrels, run = _tied_pair(5)
    whole = ranked_lists(qrels, run)
    monkeypatch.setattr(module, "CHUNK_DOCS", 30)
    monkeypatch.setattr(threads, "n_threads", lambda: 2)
    chunked = ranked_lists(ranx.Qrels(qrels), run)
    _assert_same_lists(chunked, whole)
    _assert_grades_descending(chunked, qrels)


@pytest.mark.parametrize("n_threads", [1, 2])
def test_a_chunk_with_ids_holding_nul_is_read_again_in_place(monkeypatch, n_threads):
    """`read_chunk` finds the ids' ends at NULs and refuses a chunk where an id holds NUL (more NULs
    than ids); that chunk alone is read again with the ids' bounds, in its place between the chunks
    before and after it, on one thread and in the worker pipeline: the groups equal a brute-force
    reading and the reading in one piece."""
    from tieaware import threads
    from tieaware.readers import dicts
    from tieaware.readers import lists as module

    run = {f"q{q}": {f"d{d}": float(d % 3) for d in range(8)} for q in range(6)}
    run["q3"] = {"d1": 1.0, "d1\0": 1.0, "\0": 0.0, "d\0\0x": 2.0, "d2": 2.0}
    qrels = {q: {d: i % 3 for i, d in enumerate(docs) if i % 2 == 0} for q, docs in run.items()}
    whole = ranked_lists(qrels, run)
    assert _groups_of(whole) == _brute_force_groups(qrels, run)
    monkeypatch.setattr(module, "CHUNK_DOCS", 8)  # one query a chunk
    monkeypatch.setattr(threads, "n_threads", lambda: n_threads)
    refused = []
    read = dicts.read_chunk

    def counted(*args):
        done = read(*args)
        refused.append(not done)
        return done
    counted.prepare = read.prepare  # what `threads.pipelined` calls on the reading thread first
    monkeypatch.setattr(dicts, "read_chunk", counted)
    chunked = ranked_lists(qrels, run)
    assert refused.count(True) == 1 and len(refused) == len(run) + 1  # q3 read twice, once refused
    _assert_same_lists(chunked, whole)


@pytest.mark.parametrize("qrels_kind,run_kind", [("dict", "dict"), ("dict", "ranx"), ("ranx", "dict"),
                                                   ("ranx", "ranx")])
def test_no_queries_give_nan_with_a_warning_never_zero(qrels_kind, run_kind):
    """Also when one side is a ranx object (its reader needs a typed, even if empty, list of ids)."""
    qrels = ranx.Qrels() if qrels_kind == "ranx" else {}
    run = ranx.Run({"q1": {"d1": 0.5}}) if run_kind == "ranx" else {"q1": {"d1": 0.5}}
    with pytest.warns(RuntimeWarning, match="No queries"):
        res = tieaware.evaluate(qrels, run, "ndcg@10", make_comparable=True)
    assert math.isnan(res) and math.isnan(res.min) and math.isnan(res.tie_std) and res.n_queries == 0
    with pytest.warns(RuntimeWarning, match="No queries"):
        assert math.isnan(tieaware.evaluate({}, {}, "ndcg@10"))


def test_every_input_reaches_the_dict_chunk_reader_with_one_signature(monkeypatch):
    """An empty chunk, empty qrels, ranx Qrels beside a dict run, non-string ids: `read_chunk` gets
    arrays of one layout, the one compiled ahead of time (the JIT would compile another one, on the
    worker thread)."""
    from tieaware.kernels import backend
    from tieaware.kernels.ahead_of_time import SIGNATURES
    from tieaware.kernels.groups import read_chunk
    from tieaware.readers import lists as module

    seen = set()
    call = backend.Kernel.__call__

    def spy(kernel, *args):
        if kernel is read_chunk:
            seen.add(tuple(backend.type_key(arg) for arg in args))
        return call(kernel, *args)

    monkeypatch.setattr(backend.Kernel, "__call__", spy)
    monkeypatch.setattr(module, "CHUNK_DOCS", 4)
    qrels, run = {"q0": {"d1": 1}, "q1": {"d1": 1, "d2": 0}}, {"q0": {}, "q1": {f"d{i}": 0.5 for i in range(9)}}
    tieaware.evaluate(qrels, run, "ndcg@10")
    tieaware.evaluate(ranx.Qrels(qrels), run, "ndcg@10")
    tieaware.evaluate({"q0": {}, "q1": {}}, run, "ndcg@10")
    tieaware.evaluate({"q0": {1: 1}, "q1": {2: 1}}, {"q0": {1: 0.5, 3: 0.5}, "q1": {2: 0.1}}, "ndcg@10")
    assert seen == set(SIGNATURES["groups.read_chunk"])
