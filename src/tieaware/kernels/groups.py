"""Judged tie groups of each query, built from its document ids and scores in one pass.

Every metric here depends on a ranked list only through the documents that are
judged (present in the qrels): an unjudged document has gain 0, is never
relevant, and bpref ignores it. So instead of sorting all n retrieved documents,
each query keeps only the score groups that hold a judged document ("judged
groups"), each with

* ``above`` (c): documents with a strictly higher score,
* ``size`` (g): documents with exactly this score, judged or not,
* its judged members, sorted by judgment descending (best-first order), each with
  its rank inside the group in input order and in trec_eval's order (score
  descending, then document id descending by ``strcmp``).

`query_groups` does this for one query from flat arrays: the query's scores, its
document ids as Unicode code points (code point order is the order ``strcmp``
gives the ids' UTF-8 bytes), and its judgments. Judged ids go into a small
open-addressing table, one pass over the documents finds them, a second pass
places each score among the m judged scores through 8m equal-width buckets of
their range (no branch on the data but in a bucket holding several judged scores,
searched by bisection). Cost O(n + m log m) per query for n retrieved documents
(O(n log m) at worst, scores crowded in one bucket), instead of O(n log n).
`read_chunk` runs it over many queries of flat arrays: chunks of Python dicts
(`tieaware.readers.dicts`), a TREC file's columns (`tieaware.readers.columns`) and ranges of the
copy of a ranx Run (`tieaware.readers.ranx`). Group slots of query q start at its first judged
member's index.

Kernels (`tieaware.kernels.kernel`) take int64/uint32/float64 arrays, use no numba threading
layer (the readers release the GIL instead, so that `tieaware.threads` runs ranges of queries
on plain threads), and allocate only per-query scratch. What an empty
numba cache costs (the first evaluate) is kept down by the layout: the stages
called only from other kernels get no Python wrapper (`tieaware.kernels.INNER`), `query_groups`
is inlined into its two callers, `scratch` is plain numpy, and one sort of float keys
(`_sort_keys`) serves `argsort_segments` and the members' best-first order, while the one
comparison of ids (`_id_before`) is compiled once, not inlined where ids are compared.
"""
import secrets
from typing import NamedTuple

import numpy as np

from . import INNER, kernel
from .backend import JitOnly

# the id hashes' seed, drawn per process so that ids cannot be built in advance to collide in the
# judged-id table or the cache check of ranx objects; kernels take it as an argument (numba would
# freeze a global into its disk cache)
SEED = np.uint64(secrets.randbits(64))
_MIX = np.uint64(0xFF51AFD7ED558CCD)  # murmur3's fmix64 multipliers
_MIX2 = np.uint64(0xC4CEB9FE1A85EC53)
FIBONACCI = np.uint64(0x9E3779B97F4A7C15)  # 2^64 / golden ratio: multiplicative hashing
RUN = 32  # `_sort_keys` sorts runs of this many elements by insertion before merging


class Scratch(NamedTuple):
    """Per-query work arrays of `query_groups` (`scratch`), for up to n documents and m judgments."""

    table: np.ndarray  #: (>= 8m,) open-addressing table of judged ids (`_find_judged`)
    key_hash: np.ndarray  #: (m,) each judged id's `id_hash`
    key_doc: np.ndarray  #: (m,) the judged documents found, in input order (`_find_judged`)
    doc_member: np.ndarray  #: (n,) each document's member index, or -1 (kept at -1 between queries)
    mem_doc: np.ndarray  #: (m,) each member's document, best-first
    by_id: np.ndarray  #: (m,) member indices sorted best-first, then by id inside each group
    tmp: np.ndarray  #: (m,) the merge sorts' buffer
    sort_key: np.ndarray  #: (m,) the keys of `_sort_keys` while the members are sorted best-first
    passed: np.ndarray  #: (2m + 1,) per group, documents passed by its members' ids (`passed_cell`)
    distinct: np.ndarray  #: (m + 1,) the groups' scores, descending, and NaN after the last
    bucket_start: np.ndarray  #: (8m + 2,) `_bucket_starts`
    gaps: np.ndarray  #: (2m + 2,) per group, documents above it and in it (`gap_cell`)
    in_group: np.ndarray  #: (n,) the documents in a judged group, in input order
    in_slot: np.ndarray  #: (n,) and their groups
    grade: np.ndarray  #: (m,) the found documents' judgments, in input order (`_find_judged`)


class GroupArrays(NamedTuple):
    """What `query_groups` writes: per judged member and per group slot (`readers.lists.RankedLists`
    holds them under the same names)."""

    mem_rel: np.ndarray  #: each member's judgment
    mem_index: np.ndarray  #: its index in its query's input order
    mem_input_rank: np.ndarray  #: its rank inside its group in input order
    mem_trec_rank: np.ndarray  #: and in trec_eval's order (documents of the group with a greater id)
    grp_above: np.ndarray  #: per group slot: documents with a higher score
    grp_size: np.ndarray  #: documents with its score, judged or not
    grp_mem_start: np.ndarray  #: where its members start
    grp_mem_end: np.ndarray  #: and end


def group_slots(n_groups: np.ndarray, mem_offsets: np.ndarray) -> np.ndarray:
    """The used group slots, in order: offsets[q] .. offsets[q] + n_groups[q] - 1 for each query q."""
    n_groups = np.asarray(n_groups, np.int64)
    first = np.cumsum(n_groups) - n_groups  # index of each query's first group among all groups
    return np.repeat(mem_offsets[:-1] - first, n_groups) + np.arange(int(n_groups.sum()), dtype=np.int64)


# ------------------------------------------------------------------ ids
#: the code point at an index of a code point array, a unicode string or a UnicodeCharSeq (no copy)
code_at = JitOnly("tieaware.kernels.intrinsics", "code_at")


@kernel(inline="always")
def mix64(x):
    """murmur3's fmix64: a bijection of 64-bit words in which each input bit flips about half of the
    output bits (so values differing only in a few bits, such as round floats, hash far apart)."""
    x ^= x >> np.uint64(33)
    x *= _MIX
    x ^= x >> np.uint64(33)
    x *= _MIX2
    return x ^ (x >> np.uint64(33))


@kernel(inline="always")
def id_hash(text, lo, hi, seed):
    """Hash of code points lo..hi-1 of `text` (`code_at`) from a `seed`: three 21-bit code points
    per 64-bit word, each word xor-multiplied in and its high bits folded down (a multiply only
    carries differences upwards), then `mix64`. Readers pass `SEED`, drawn per process, so ids
    cannot be built in advance to collide; matches in the judged table are confirmed by
    `compare_ids` all the same."""
    h = seed ^ np.uint64(hi - lo)
    c = lo
    while c < hi:
        word = np.uint64(code_at(text, c))
        if c + 1 < hi:
            word |= np.uint64(code_at(text, c + 1)) << np.uint64(21)
        if c + 2 < hi:
            word |= np.uint64(code_at(text, c + 2)) << np.uint64(42)
        h = (h ^ word) * _MIX
        h ^= h >> np.uint64(32)
        c += 3
    return mix64(h)


@kernel(inline="always")
def _scan_ids(codes, id_lo, id_hi, doc_hash, seed):
    """For code points holding n ids each followed by NUL: each id's bounds codes[id_lo:id_hi], up
    to its NUL, and its `id_hash`. Returns False when the codes hold more NULs than ids (an id holds
    NUL itself), the bounds then being wrong. Every id ends at a NUL, so no read passes the end."""
    c = 0
    for i in range(id_lo.shape[0]):
        start = c
        while codes[c] != 0:
            c += 1
        id_lo[i] = start
        id_hi[i] = c
        doc_hash[i] = id_hash(codes, start, c, seed)
        c += 1
    return c == codes.shape[0]


@kernel(inline="always")
def id_key(text, lo, hi):
    """The first three code points of id text[lo:hi], 21 bits each, first highest (0 past the end):
    two ids whose keys differ sort as their keys do; equal keys need `compare_ids`."""
    key = np.uint64(0)
    for c in range(lo, lo + 3):
        key = (key << np.uint64(21)) | np.uint64(code_at(text, c) if c < hi else 0)
    return key


@kernel(inline="always")
def compare_ids(a, a_lo, a_hi, b, b_lo, b_hi):
    """-1, 0 or 1 as id a[a_lo:a_hi] sorts before, equals or sorts after id b[b_lo:b_hi] (code points)."""
    for c in range(min(a_hi - a_lo, b_hi - b_lo)):
        x = a[a_lo + c]
        y = b[b_lo + c]
        if x != y:
            return 1 if x > y else -1
    if a_hi - a_lo == b_hi - b_lo:
        return 0
    return 1 if a_hi - a_lo > b_hi - b_lo else -1


# ------------------------------------------------------------------ one query
@kernel(inline="always")
def _bucket(top, scale, n_buckets, s):
    """Bucket of score s among n_buckets equal slices of [bottom, top] (0: at or above top,
    n_buckets: at or below bottom); monotone in s, so judged scores in a lower bucket are above s."""
    return np.int64(min(max((top - s) * scale, 0.0), float(n_buckets)))


@kernel(**INNER)
def _bucket_starts(distinct, g, bucket_start):
    """Fill bucket_start[k] (k = 0..K+1) with how many of the g distinct judged scores (descending)
    fall in a bucket before k, for K = 8g buckets; returns (top, scale, K), K = 0 when the scores
    span no finite range, or one so narrow (subnormal) that K / span overflows: then (top - s) * scale
    could be 0 * inf = NaN, so a binary search is used instead."""
    n_buckets = 8 * g
    span = distinct[0] - distinct[g - 1]  # 0 for one score, inf or NaN with infinite scores
    scale = n_buckets / span if span > 0.0 else 0.0
    if not 0.0 < scale < np.inf:
        return distinct[0], 0.0, 0
    j = 0
    for k in range(n_buckets + 2):
        while j < g and _bucket(distinct[0], scale, n_buckets, distinct[j]) < k:
            j += 1
        bucket_start[k] = j
    return distinct[0], scale, n_buckets


@kernel(**INNER)
def _first_at_or_below(distinct, lo, hi, s):
    """Binary search: the first b in [lo, hi) with distinct[b] <= s (distinct descending there), else hi."""
    while lo < hi:
        mid = (lo + hi) // 2
        if distinct[mid] <= s:
            hi = mid
        else:
            lo = mid + 1
    return lo


@kernel(**INNER)
def _id_before(codes, id_lo, id_hi, doc_key, a, b):
    """Whether document a's id sorts before document b's: by `id_key` (doc_key, filled for both), then
    `compare_ids`."""
    if doc_key[a] != doc_key[b]:
        return doc_key[a] < doc_key[b]
    return compare_ids(codes, id_lo[a], id_hi[a], codes, id_lo[b], id_hi[b]) < 0


@kernel(**INNER)
def _sort_keys(perm, lo, hi, tmp, keys):
    """Sort perm[lo:hi] (element indices) by keys[perm] ascending, stably: runs of `RUN` sorted by
    insertion, then merged bottom-up through tmp[lo:hi]; O(m log m) comparisons and no allocation for m
    elements (the runs save most of a merge sort's passes on the short segments met here). One
    compiled signature (int64 perm, float64 keys) serves every caller."""
    for start in range(lo, hi, RUN):
        end = min(start + RUN, hi)
        for k in range(start + 1, end):
            x = perm[k]
            t = k
            while t > start and keys[x] < keys[perm[t - 1]]:
                perm[t] = perm[t - 1]
                t -= 1
            perm[t] = x
    width = RUN
    while width < hi - lo:
        for left in range(lo, hi, 2 * width):
            mid = min(left + width, hi)
            right = min(left + 2 * width, hi)
            i, j = left, mid
            for k in range(left, right):
                if j >= right or i < mid and not keys[perm[j]] < keys[perm[i]]:
                    tmp[k] = perm[i]
                    i += 1
                else:
                    tmp[k] = perm[j]
                    j += 1
        for k in range(lo, hi):  # element loops, not slice assignments: those cost seconds of compiling
            perm[k] = tmp[k]
        width *= 2


@kernel(**INNER)
def _sort_by_id(perm, lo, hi, tmp, docs, codes, id_lo, id_hi, doc_key):
    """Sort perm[lo:hi] (indices into docs) by document id ascending (`_id_before`): a bottom-up merge
    sort through tmp[lo:hi], O(m log m) comparisons for m elements. It orders the members of one tie
    group, mostly a few; written once, with one comparison (each inlined comparison is compiled again)."""
    width = 1
    while width < hi - lo:
        for left in range(lo, hi, 2 * width):
            mid = min(left + width, hi)
            right = min(left + 2 * width, hi)
            i, j = left, mid
            for k in range(left, right):
                if j >= right or i < mid and not _id_before(codes, id_lo, id_hi, doc_key, docs[perm[j]],
                                                            docs[perm[i]]):
                    tmp[k] = perm[i]
                    i += 1
                else:
                    tmp[k] = perm[j]
                    j += 1
        for k in range(lo, hi):
            perm[k] = tmp[k]
        width *= 2


@kernel
def argsort_segments(keys, offsets):
    """The permutation sorting each segment keys[offsets[s]:offsets[s + 1]] ascending, stably (numpy's
    ``lexsort((keys, segment))`` for contiguous segments) by `_sort_keys`: O(n log m) for segments of
    at most m, and no numpy sort to compile (np.argsort in a kernel makes an empty cache's first call
    slower)."""
    perm = np.empty(keys.shape[0], np.int64)  # filled by a loop: np.arange has its own implementation to compile
    for i in range(keys.shape[0]):
        perm[i] = i
    tmp = np.empty(keys.shape[0], np.int64)
    for s in range(offsets.shape[0] - 1):
        _sort_keys(perm, offsets[s], offsets[s + 1], tmp, keys)
    return perm


def scratch(max_docs: int, max_judged: int) -> Scratch:
    """Per-query work arrays of `query_groups` for queries of up to these sizes (plain numpy: nothing
    to compile)."""
    n_table = 8
    while n_table < 8 * max_judged:
        n_table *= 2
    m, n = max_judged, max_docs
    return Scratch(table=np.empty(n_table, np.int64), key_hash=np.empty(m, np.uint64), key_doc=np.empty(m, np.int64),
                   doc_member=np.full(n, -1, np.int64), mem_doc=np.empty(m, np.int64), by_id=np.empty(m, np.int64),
                   tmp=np.empty(m, np.int64), sort_key=np.empty(m, np.float64), passed=np.empty(2 * m + 1, np.int64),
                   distinct=np.empty(m + 1, np.float64), bucket_start=np.empty(8 * m + 2, np.int64),
                   gaps=np.empty(2 * m + 2, np.int64), in_group=np.empty(n, np.int64), in_slot=np.empty(n, np.int64),
                   grade=np.empty(m, np.float64))


def group_arrays(capacity: int) -> GroupArrays:
    """Zeroed `GroupArrays` for `capacity` members (and group slots)."""
    return GroupArrays(np.zeros(capacity, np.float64), *(np.zeros(capacity, np.int64) for _ in range(7)))


@kernel(inline="always")
def passed_cell(b, t):
    """Index in `Scratch.passed` of cell t of group b, t running from its first member's position to
    one past its last: each group has one cell more than members, so its cells start at its first
    member's position + b and no two groups' cells overlap. Cell t counts the group's documents whose
    id exceeds exactly the ids of the group's members at id positions before t."""
    return t + b


@kernel(inline="always")
def gap_cell(b, inside):
    """Index in `Scratch.gaps` of group b's counts: 2b for documents strictly between groups b - 1 and
    b, 2b + 1 for documents in group b (``inside``: 0 or 1, so counting needs no branch)."""
    return 2 * b + inside


@kernel(**INNER)
def _find_judged(codes, id_lo, id_hi, doc_hash, jcodes, j_lo, j_hi, j_grade, table, key_hash, key_doc, grade, seed):
    """The retrieved documents whose id is judged, in input order, to key_doc[0:found] and their
    judgments to grade[0:found]; returns found.

    Judged ids go into an open-addressing table at most 1/8 full, so a document not judged (the
    usual case) mostly meets an empty slot (-1) at once: few mispredicted branches. A judged id
    found is marked (-2) where it was: it matches no second document (ids are distinct within a
    query; even if not, found stays at most m)."""
    m = j_lo.shape[0]
    bits = 3
    while (1 << bits) < 8 * m:
        bits += 1
    mask = (1 << bits) - 1
    shift = np.uint64(64 - bits)
    for slot in range(mask + 1):
        table[slot] = -1
    for a in range(m):
        key_hash[a] = id_hash(jcodes, j_lo[a], j_hi[a], seed)
        slot = np.int64((key_hash[a] * FIBONACCI) >> shift)
        while table[slot] >= 0:
            slot = (slot + 1) & mask
        table[slot] = a
    found = 0
    for i in range(doc_hash.shape[0]):
        slot = np.int64((doc_hash[i] * FIBONACCI) >> shift)
        while table[slot] != -1:
            a = table[slot]
            if a >= 0 and key_hash[a] == doc_hash[i] and compare_ids(codes, id_lo[i], id_hi[i], jcodes, j_lo[a],
                                                                    j_hi[a]) == 0:
                key_doc[found] = i
                grade[found] = j_grade[a]
                table[slot] = -2
                found += 1
                break
            slot = (slot + 1) & mask
    return found


@kernel(**INNER)
def _order_members(found, scores, codes, id_lo, id_hi, doc_key, work, out, m0):
    """Write the found members (`_find_judged`) best-first (score descending, judgment descending, input
    order) and their groups from index m0; each group's members also by id ascending (``by_id``).
    Returns the groups. Best-first takes two stable sorts of keys (`_sort_keys`, the one compiled sort
    of float keys): by judgment, then by score."""
    doc_member, mem_doc, by_id, passed, distinct = work.doc_member, work.mem_doc, work.by_id, work.passed, work.distinct
    key_doc, grade, keys = work.key_doc, work.grade, work.sort_key
    grp_size, grp_mem_start, grp_mem_end = out.grp_size, out.grp_mem_start, out.grp_mem_end
    for f in range(found):
        d = key_doc[f]
        doc_key[d] = id_key(codes, id_lo[d], id_hi[d])  # the members' keys only (`query_groups`)
        by_id[f] = f
        keys[f] = -grade[f]
    _sort_keys(by_id, np.int64(0), found, work.tmp, keys)
    for f in range(found):
        keys[f] = -scores[key_doc[f]]
    _sort_keys(by_id, np.int64(0), found, work.tmp, keys)
    for p in range(found):
        d = mem_doc[p] = key_doc[by_id[p]]
        out.mem_rel[m0 + p] = grade[by_id[p]]
        out.mem_index[m0 + p] = d
        out.mem_trec_rank[m0 + p] = 0
        doc_member[d] = p
    g = 0
    for p in range(found):
        s = scores[mem_doc[p]]
        if g == 0 or s != distinct[g - 1]:
            distinct[g] = s
            grp_mem_start[m0 + g] = m0 + p
            grp_size[m0 + g] = 0
            g += 1
        grp_mem_end[m0 + g - 1] = m0 + p + 1
    distinct[g] = np.nan  # never equal, never greater: the slot past the last group
    # each group's members by id ascending, and its `passed_cell`s cleared
    for b in range(g):
        lo, hi = grp_mem_start[m0 + b] - m0, grp_mem_end[m0 + b] - m0
        for t in range(lo, hi):
            by_id[t] = t
        for t in range(lo, hi + 1):
            passed[passed_cell(b, t)] = 0
        if hi - lo > 1:
            _sort_by_id(by_id, lo, hi, work.tmp, mem_doc, codes, id_lo, id_hi, doc_key)
    return g


@kernel(**INNER)
def _place_scores(scores, distinct, g, bucket_start, gaps, in_group, in_slot):
    """Every document's group b (the first judged score <= its score) through equal-width buckets of
    scores: no branch on the data except in a bucket holding several judged scores. gaps counts the
    documents between groups and in each (`gap_cell`); those in a group go, with it, to
    in_group/in_slot in input order; returns how many those are."""
    top, scale, n_buckets = _bucket_starts(distinct, g, bucket_start)
    for b in range(2 * g + 2):
        gaps[b] = 0
    n_in = 0
    for i in range(scores.shape[0]):
        s = scores[i]
        if n_buckets == 0:
            b = _first_at_or_below(distinct, np.int64(0), g, s)
        else:
            k = _bucket(top, scale, n_buckets, s)
            c, e = bucket_start[k], bucket_start[k + 1]
            b = c + (distinct[c] > s)
            if e - c > 1:  # a bucket crowded with judged scores
                b = _first_at_or_below(distinct, c, e, s)
        equal = distinct[b] == s
        gaps[gap_cell(b, equal)] += 1
        in_group[n_in] = i
        in_slot[n_in] = b
        n_in += equal
    return n_in


@kernel(**INNER)
def _rank_in_groups(n_in, g, codes, id_lo, id_hi, doc_key, work, out, m0):
    """For the documents in groups (`_place_scores`): groups' sizes, members' input ranks and, from
    id comparisons, their trec_eval ranks; then the documents above each group."""
    doc_member, mem_doc, by_id, passed = work.doc_member, work.mem_doc, work.by_id, work.passed
    grp_size, grp_mem_start, grp_mem_end = out.grp_size, out.grp_mem_start, out.grp_mem_end
    for t in range(n_in):
        i, b = work.in_group[t], work.in_slot[t]
        doc_key[i] = id_key(codes, id_lo[i], id_hi[i])
        p = doc_member[i]
        if p >= 0:
            out.mem_input_rank[m0 + p] = grp_size[m0 + b]
        grp_size[m0 + b] += 1
        lo, hi = grp_mem_start[m0 + b] - m0, grp_mem_end[m0 + b] - m0
        if hi - lo == 1:  # the usual group: one judged member, compared without a branch on the result
            lo += _id_before(codes, id_lo, id_hi, doc_key, mem_doc[lo], i)
        else:
            while lo < hi:  # members (by id) whose id is smaller than document i's
                mid = (lo + hi) // 2
                if _id_before(codes, id_lo, id_hi, doc_key, mem_doc[by_id[mid]], i):
                    lo = mid + 1
                else:
                    hi = mid
        passed[passed_cell(b, lo)] += 1
    running = 0
    for b in range(g):
        running += work.gaps[gap_cell(b, 0)]
        out.grp_above[m0 + b] = running
        running += grp_size[m0 + b]
        lo, hi = grp_mem_start[m0 + b] - m0, grp_mem_end[m0 + b] - m0
        greater = 0
        for t in range(hi - 1, lo - 1, -1):  # the member at id position t: documents with a greater id
            greater += passed[passed_cell(b, t + 1)]
            out.mem_trec_rank[m0 + by_id[t]] = greater


@kernel(inline="always")
def query_groups(scores, codes, id_lo, id_hi, doc_hash, doc_key, jcodes, j_lo, j_hi, j_grade, work, out, m0, seed):
    """The judged groups of one query, written to `out` from member/slot index m0.

    Args:
        scores, id_lo, id_hi, doc_hash: (n,) per retrieved document, in input order: score, its id
            as codes[id_lo:id_hi] and its `id_hash` (from `seed`).
        doc_key: (n,) scratch: the `id_key` of each judged member, filled here (documents in a judged
            group get theirs when compared; most documents need none).
        jcodes, j_lo, j_hi, j_grade: (m,) per judged document: id jcodes[j_lo:j_hi], judgment.
        work: `Scratch` for at least n documents and m judgments (`scratch`).
        out: `GroupArrays`: per member its judgment, index in input order and rank inside its group in
            input order and in trec_eval's order; per group slot documents above, documents in it,
            and its members' range.

    Returns:
        (members, groups, first NaN score's index or -1): a query with a NaN score gets no groups.

    Four stages, each its own function (numba compiles four small functions several times faster
    than one large one): `_find_judged`, `_order_members`, `_place_scores`, `_rank_in_groups`.
    Inlined into `read_chunk`: not compiled on its own.
    """
    for i in range(scores.shape[0]):
        if np.isnan(scores[i]):
            return 0, 0, i
    if scores.shape[0] == 0 or j_lo.shape[0] == 0:
        return 0, 0, -1
    found = _find_judged(codes, id_lo, id_hi, doc_hash, jcodes, j_lo, j_hi, j_grade, work.table, work.key_hash,
                         work.key_doc, work.grade, seed)
    if found == 0:
        return 0, 0, -1
    g = _order_members(found, scores, codes, id_lo, id_hi, doc_key, work, out, m0)
    n_in = _place_scores(scores, work.distinct, g, work.bucket_start, work.gaps, work.in_group, work.in_slot)
    _rank_in_groups(n_in, g, codes, id_lo, id_hi, doc_key, work, out, m0)
    for p in range(found):
        work.doc_member[work.mem_doc[p]] = -1
    return found, g, -1


@kernel(nogil=True)
def read_chunk(doc_offsets, scores, codes, id_lo, id_hi, separated, qrel_offsets, jcodes, j_lo, j_hi, j_grade, q0,
               work, out, n_members, n_groups, first_nan, cursor, seed):
    """`query_groups` for queries q0, q0+1, ... of one chunk (documents CSR by doc_offsets, ids in codes;
    the chunk's judgments CSR by qrel_offsets, ids in jcodes); ids hashed from `seed`. Members go from
    cursor[0] on, and cursor[0] is left past them: chunks read in order lay their members end to end.
    With ``separated`` the ids in codes are each followed by NUL and their bounds id_lo/id_hi are
    found here (`_scan_ids`); then False is returned, nothing read, if an id holds NUL itself (the
    caller passes the bounds instead). Releases the GIL: `tieaware.readers.dicts` reads the next
    chunk meanwhile."""
    doc_hash = np.empty(scores.shape[0], np.uint64)
    doc_key = np.empty(scores.shape[0], np.uint64)
    if separated:
        if not _scan_ids(codes, id_lo, id_hi, doc_hash, seed):
            return False
    else:
        for i in range(scores.shape[0]):
            doc_hash[i] = id_hash(codes, id_lo[i], id_hi[i], seed)
    for local in range(doc_offsets.shape[0] - 1):
        q = q0 + local
        lo, hi = doc_offsets[local], doc_offsets[local + 1]
        a, b = qrel_offsets[local], qrel_offsets[local + 1]
        members, groups, nan_at = query_groups(scores[lo:hi], codes, id_lo[lo:hi], id_hi[lo:hi], doc_hash[lo:hi],
                                               doc_key[lo:hi], jcodes, j_lo[a:b], j_hi[a:b], j_grade[a:b], work,
                                               out, cursor[0], seed)
        n_members[q], n_groups[q], first_nan[q] = members, groups, nan_at
        cursor[0] += members
    return True
