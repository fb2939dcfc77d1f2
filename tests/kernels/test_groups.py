"""The group kernels' building blocks: the one merge sort (stable, by segments) and the scan that finds
ids at their NULs and hashes them as ids of known bounds."""
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
