"""The group kernels' building blocks: the merge sorts (of keys, by segments; of ids), finding the judged
ids, and the scan that finds ids at their NULs and hashes them as ids of known bounds."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st


@settings(max_examples=200, deadline=None)
@given(segments=st.lists(st.lists(st.sampled_from([-1.0, 0.0, 0.5, 2.0, 3.0]), max_size=80), max_size=6))
def test_argsort_segments_equals_lexsort(segments):
    """Segments short (insertion sort only) and longer than `RUN` (runs merged), with repeated keys (stable)."""
    from tieaware.kernels.groups import argsort_segments

    rng = np.random.default_rng(len(segments))  # and long segments, merged over several passes
    segments = [*segments, *(rng.choice([0.0, 1.0, 2.0], n).tolist() for n in (33, 64, 97, 300))]
    keys = np.array([k for segment in segments for k in segment], np.float64)
    offsets = np.cumsum([0, *map(len, segments)])
    segment_of = np.repeat(np.arange(len(segments)), np.diff(offsets))
    assert np.array_equal(argsort_segments(keys, offsets), np.lexsort((keys, segment_of)))


@settings(max_examples=100, deadline=None)
@given(ids=st.lists(st.text(alphabet=st.sampled_from("ab\u00e9\u20ac\U0001d11e\ufffd\ud8000"), max_size=8),
                    max_size=12))
def test_ids_found_at_their_nuls_hash_as_ids_with_known_bounds(ids):
    """`_scan_ids` (the dict reader's pass over ids each followed by NUL) gives each id's bounds and
    the `id_hash` that ids with known bounds get (judged ids, ranx's ids): ids of every length mod 3,
    empty ids, 2- and 4-byte code points, a lone surrogate."""
    from tieaware.kernels.groups import SEED, _scan_ids, id_hash

    codes = np.frombuffer("".join(f"{i}\0" for i in ids).encode("utf-32-le", "surrogatepass"), np.uint32)
    lo, hi, hashes = (np.empty(len(ids), dtype) for dtype in (np.int64, np.int64, np.uint64))
    assert _scan_ids(codes, lo, hi, hashes, SEED)
    ends = np.cumsum([len(i) + 1 for i in ids], dtype=np.int64) - 1
    assert np.array_equal(hi, ends) and np.array_equal(lo, ends - [len(i) for i in ids])
    assert hashes.tolist() == [int(id_hash(codes, a, b, SEED)) for a, b in zip(lo, hi)]


@pytest.mark.parametrize("ids", [["a", "b\0"], ["\0"], ["a\0b", "c"], ["x", "\0y"]])
def test_scan_ids_refuses_ids_holding_nul(ids):
    """A NUL inside an id, at its start or end, in the last id or alone, leaves more NULs than ids."""
    from tieaware.kernels.groups import SEED, _scan_ids

    codes = np.frombuffer("".join(f"{i}\0" for i in ids).encode("utf-32-le"), np.uint32)
    assert not _scan_ids(codes, *(np.empty(len(ids), dtype) for dtype in (np.int64, np.int64, np.uint64)), SEED)


def _id_arrays(ids):
    """(codes, lo, hi) of ids as code points, end to end."""
    codes = np.frombuffer("".join(ids).encode("utf-32-le", "surrogatepass"), np.uint32)
    hi = np.cumsum([len(i) for i in ids], dtype=np.int64)
    return codes, hi - [len(i) for i in ids], hi


@settings(max_examples=60, deadline=None)
@given(ids=st.sets(st.text(alphabet=st.sampled_from("ab\u00e9\U0001d11e"), max_size=6), min_size=1, max_size=70),
       prefix=st.sampled_from(["", "doc", "doc-0"]), seed=st.integers(0, 2**32 - 1))
def test_sort_by_id_orders_ids_as_code_points(ids, prefix, seed):
    """`_sort_by_id` (the tie groups' members by id) gives Python's order of the ids, also where ids
    share their first three code points (`id_key` equal, `compare_ids` decides) and past one merge pass."""
    from numba import njit

    from tieaware.kernels.groups import _sort_by_id, id_key

    ids = [prefix + i for i in sorted(ids)]
    codes, lo, hi = _id_arrays(ids)
    doc_key = np.array([id_key(codes, a, b) for a, b in zip(lo, hi)], np.uint64)
    docs = np.random.default_rng(seed).permutation(len(ids)).astype(np.int64)  # position -> document

    @njit
    def run(perm, tmp):
        _sort_by_id(perm, np.int64(0), np.int64(perm.shape[0]), tmp, docs, codes, lo, hi, doc_key)

    perm = np.arange(len(ids), dtype=np.int64)
    run(perm, np.empty_like(perm))
    assert [ids[d] for d in docs[perm]] == ids


def test_find_judged_takes_each_judged_id_once_in_input_order():
    """`_find_judged` lists the judged documents found in input order with their grades; an id given
    twice (not a valid run, but found must stay within the m judged ids) is found once, first given first."""
    from numba import njit

    from tieaware.kernels.groups import SEED, _find_judged, id_hash

    run_ids, judged, grades = ["x", "b", "a", "y", "b", "c"], ["a", "b", "c", "z"], np.array([3.0, 2.0, 1.0, 0.0])
    codes, lo, hi = _id_arrays(run_ids)
    jcodes, j_lo, j_hi = _id_arrays(judged)
    doc_hash = np.array([id_hash(codes, a, b, SEED) for a, b in zip(lo, hi)], np.uint64)
    m = len(judged)

    @njit
    def run(table, key_hash, key_doc, grade):
        return _find_judged(codes, lo, hi, doc_hash, jcodes, j_lo, j_hi, grades, table, key_hash, key_doc, grade,
                            SEED)

    key_doc, grade = np.empty(m, np.int64), np.empty(m, np.float64)
    found = run(np.empty(8 * m, np.int64), np.empty(m, np.uint64), key_doc, grade)
    assert found == 3
    assert key_doc[:found].tolist() == [1, 2, 5] and grade[:found].tolist() == [2.0, 3.0, 1.0]
