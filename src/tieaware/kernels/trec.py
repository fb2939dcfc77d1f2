"""The compiled half of the TREC reader (`tieaware.readers.trec_files`): one pass over a block of whole lines.

Tokens are split on ASCII whitespace (C's ``isspace``: space, tab, newline, vertical tab, form feed,
carriage return), as trec_eval splits them; a U+00A0 inside an id stays part of the id. Blank lines and
lines whose first token starts with ``#`` are skipped. A run line needs exactly 6 tokens (the rank is
ignored), a qrels line exactly 4: trec_eval ignores a run line's fields after the sixth, so two records
glued on one line (``cat a b`` where ``a`` lacks its final newline) would lose the second. A carriage
return with a token after it on its line is an error (`BARE_CR`): trec_eval reads it as a space, so a
file with bare CR line endings (whole or mixed) would be read as one line; CRLF endings are whitespace.

A score is the text C's ``strtod`` and Python's ``float`` both read whole and the same way:
``[+-]? (digits [. digits?] | . digits) ([eE] [+-]? digits)?`` or ``[+-]? (inf | infinity)`` in any case;
``nan`` is an error. Scores with at most 19 significant digits (all that Python's ``repr`` writes) and an
exponent of at most 5 digits are converted here, correctly rounded as strtod rounds them
(`binary64.nearest_double`); others are flagged for the caller to convert from their text with a
correctly rounded routine.
A grade is ``[+-]? digits [. 0*]`` (``2``, ``+2``, ``2.0``) of at most 18 digits.
"""
from __future__ import annotations

import numpy as np

from . import kernel
from .backend import JitOnly
from .binary64 import nearest_double
from .groups import compare_ids, id_hash

#: error codes of `scan`: a line with the wrong number of columns, a score that is not a number,
#: a NaN score, a grade that is not an integer (or beyond 18 digits), a carriage return with a token after it
COLUMNS, SCORE, NAN, GRADE, BARE_CR = 1, 2, 3, 4, 5
#: bytes after a block's last newline that `scan` may read (8-byte words), not part of the block
PAD = 8
_ONES = np.uint64(0x0101010101010101)
_HIGH = np.uint64(0x8080808080808080)
_word = JitOnly("tieaware.kernels.intrinsics", "word")  # bytes buf[i:i + 8] as one uint64, the first lowest
trailing_zeros = JitOnly("tieaware.kernels.numba_compat", "trailing_zeros")


@kernel(inline="always")
def _is_space(c) -> bool:
    return c == 32 or 9 <= c <= 13


@kernel(inline="always")
def _space_at_or_after(buf, i):
    """The index of the first ASCII whitespace byte from ``buf[i]`` on (there is one: a block ends with a
    newline), 8 bytes at a time: in a word, the lowest byte below 33 is flagged exactly by
    ``(w - 33 * 0x01..01) & ~w & 0x80..80`` (Mycroft's test), then checked to be whitespace."""
    while True:
        w = _word(buf, i)
        below = (w - _ONES * np.uint64(33)) & ~w & _HIGH
        if below:
            j = i + (np.int64(trailing_zeros(below)) >> 3)
            if _is_space(buf[j]):
                return j
            i = j + 1
        else:
            i += 8


@kernel(inline="always")
def _lower(c):
    return c | 32 if 65 <= c <= 90 else c


@kernel(inline="always")
def _is_inf(buf, i, hi) -> bool:
    """Whether ``buf[i:hi]`` is "inf" or "infinity", in any case."""
    if not (hi - i in (3, 8) and _lower(buf[i]) == 105 and _lower(buf[i + 1]) == 110 and _lower(buf[i + 2]) == 102):
        return False
    return hi - i == 3 or (_lower(buf[i + 3]) == 105 and _lower(buf[i + 4]) == 110 and _lower(buf[i + 5]) == 105
                           and _lower(buf[i + 6]) == 116 and _lower(buf[i + 7]) == 121)


@kernel(inline="always")
def _is_nan(buf, i, hi) -> bool:
    """Whether ``buf[i:hi]`` is "nan", in any case."""
    return hi - i == 3 and _lower(buf[i]) == 110 and _lower(buf[i + 1]) == 97 and _lower(buf[i + 2]) == 110


@kernel(inline="always")
def _digits(buf, i, hi, w, significant):
    """(the index after the digits from ``buf[i]``, the integer ``w`` (uint64) with them appended (the first
    19 significant ones: below 2^64), the count of significant digits with them, how many digits there were)."""
    start = i
    while i < hi and 48 <= buf[i] <= 57:
        if w > 0 or buf[i] != 48:
            significant += 1
            if significant <= 19:
                w = w * np.uint64(10) + np.uint64(buf[i] - 48)
        i += 1
    return i, w, significant, i - start


@kernel(inline="always")
def _score(buf, lo, hi):
    """(code, value): code 0 and the value, -1 (a number to convert from its text), or SCORE / NAN.
    Inlined, as every helper of `scan`, and given no array it does not need: a call that passes arrays
    counts references to them (atomic operations)."""
    i = lo
    negative = False
    if buf[i] == 43 or buf[i] == 45:  # + -
        negative = buf[i] == 45
        i += 1
    if i < hi and (_lower(buf[i]) == 105 or _lower(buf[i]) == 110):  # i n
        if _is_inf(buf, i, hi):
            return 0, -np.inf if negative else np.inf
        if _is_nan(buf, i, hi):
            return NAN, 0.0
        return SCORE, 0.0
    after_point = 0
    i, w, significant, digits = _digits(buf, i, hi, np.uint64(0), 0)
    if i < hi and buf[i] == 46:  # .
        i, w, significant, after_point = _digits(buf, i + 1, hi, w, significant)
        digits += after_point
    if digits == 0:
        return SCORE, 0.0
    exponent = 0
    exponent_digits = 0  # past its leading zeros
    if i < hi and (buf[i] == 101 or buf[i] == 69):  # e E
        i += 1
        exponent_negative = False
        if i < hi and (buf[i] == 43 or buf[i] == 45):
            exponent_negative = buf[i] == 45
            i += 1
        start = i
        while i < hi and buf[i] == 48:
            i += 1
        while i < hi and 48 <= buf[i] <= 57:
            if exponent_digits < 6:
                exponent = exponent * 10 + (buf[i] - 48)
            exponent_digits += 1
            i += 1
        if i == start:
            return SCORE, 0.0
        if exponent_negative:
            exponent = -exponent
    if i != hi:
        return SCORE, 0.0
    if significant > 19 or exponent_digits > 5:  # Python's float decides
        return -1, 0.0
    return 0, nearest_double(w, np.int64(exponent - after_point), negative)


@kernel(inline="always")
def _grade(buf, lo, hi):
    """(code, grade): code 0 and the integer, or GRADE."""
    i = lo
    negative = False
    if buf[i] == 43 or buf[i] == 45:
        negative = buf[i] == 45
        i += 1
    value = 0
    digits = 0
    while i < hi and 48 <= buf[i] <= 57:
        value = value * 10 + (buf[i] - 48) if digits < 18 else value
        digits += 1
        i += 1
    if digits == 0 or digits > 18:
        return GRADE, 0
    if i < hi and buf[i] == 46:
        i += 1
        while i < hi and buf[i] == 48:
            i += 1
    if i != hi:
        return GRADE, 0
    return 0, -value if negative else value


@kernel(inline="always")
def _append_codes(buf, lo, hi, codes, at):
    """Write the UTF-8 (valid: the caller checked it) of ``buf[lo:hi]`` into ``codes[at:]`` as code points,
    then a newline; returns where the next id starts. ASCII goes 8 bytes at a time (up to 7 codes past the
    id are written, then overwritten: ``codes`` has room for them)."""
    i = lo
    while i < hi:
        w = _word(buf, i)
        if not w & _HIGH:
            for k in range(8):
                codes[at + k] = (w >> np.uint64(8 * k)) & np.uint64(0xFF)
            step = min(8, hi - i)
            i += step
            at += step
            continue
        c = np.int64(buf[i])
        if c < 0x80:
            i += 1
        elif c < 0xE0:
            c = ((c & 0x1F) << 6) | (buf[i + 1] & 0x3F)
            i += 2
        elif c < 0xF0:
            c = ((c & 0x0F) << 12) | ((buf[i + 1] & 0x3F) << 6) | (buf[i + 2] & 0x3F)
            i += 3
        else:
            c = ((c & 0x07) << 18) | ((buf[i + 1] & 0x3F) << 12) | ((buf[i + 2] & 0x3F) << 6) | (buf[i + 3] & 0x3F)
            i += 4
        codes[at] = c
        at += 1
    codes[at] = 10
    return at + 1


@kernel(inline="always")
def _append(source, lo, hi, target, at):
    for i in range(lo, hi):
        target[at + i - lo] = source[i]
    target[at + hi - lo] = 10
    return at + hi - lo + 1


@kernel(nogil=True)
def scan(buf, run, rec_line, scores, grades, slow, codes, doc_lo, doc_hi, seg_start, seg_at, queries):
    """Read the lines of ``buf`` (valid UTF-8, whole lines, the last ending in a newline, then `PAD` bytes
    of padding) until the first bad one.

    Writes per record (a line that is not blank or a comment): ``rec_line`` its line index in the block,
    ``scores`` (runs) or ``grades`` (qrels) its value, its doc id into ``codes`` as code points (a newline
    after each), from ``doc_lo`` to ``doc_hi``; ``seg_start`` the first record of each segment of
    consecutive lines with one query id, ``seg_at`` the offset in ``buf`` of its first line, and
    ``queries`` those ids' bytes ('\\n' after each); ``slow``
    (record, score start, score end) of scores to convert from their text.

    Returns (records, code points, segments, query bytes, slow scores, tag start, tag end (of the last
    record), lines, bad line index or -1, its error code). A token's end is found 8 bytes at a time, so
    tokens of varying length cost no mispredicted branch per byte; the last byte being a newline ends
    every loop without a bound check.
    Releases the GIL: `trec_files` scans the next block while the caller evaluates the one before.
    """
    n = buf.shape[0] - PAD
    starts = np.empty(7, np.int64)
    ends = np.empty(7, np.int64)
    n_rec = n_code = n_seg = n_q = n_slow = 0
    tag_lo = tag_hi = 0
    q_lo = q_hi = 0  # the current segment's query id in buf
    line = 0
    i = 0
    while i < n:
        line_at = i
        n_tok = 0
        after_cr = bare_cr = False  # a carriage return since the last token; one with a token after it
        while True:  # the line's tokens
            c = buf[i]
            while c != 10 and _is_space(c):
                after_cr |= c == 13
                i += 1
                c = buf[i]
            if c == 10:
                break
            bare_cr |= after_cr
            lo = i
            i = _space_at_or_after(buf, i + 1)
            if n_tok < 7:
                starts[n_tok] = lo
                ends[n_tok] = i
            n_tok += 1
        i += 1  # past the newline
        if bare_cr:  # a comment too: a CR-only file that starts with one would be one comment
            return n_rec, n_code, n_seg, n_q, n_slow, tag_lo, tag_hi, line, line, BARE_CR
        if n_tok == 0 or buf[starts[0]] == 35:  # blank, or a # comment
            line += 1
            continue
        if n_tok != (6 if run else 4):
            return n_rec, n_code, n_seg, n_q, n_slow, tag_lo, tag_hi, line, line, COLUMNS
        if run:
            code, value = _score(buf, starts[4], ends[4])
            if code > 0:
                return n_rec, n_code, n_seg, n_q, n_slow, tag_lo, tag_hi, line, line, code
            if code < 0:
                slow[n_slow, 0] = n_rec
                slow[n_slow, 1] = starts[4]
                slow[n_slow, 2] = ends[4]
                n_slow += 1
            scores[n_rec] = value
            tag_lo, tag_hi = starts[5], ends[5]
        else:
            code, grade = _grade(buf, starts[3], ends[3])
            if code > 0:
                return n_rec, n_code, n_seg, n_q, n_slow, tag_lo, tag_hi, line, line, code
            grades[n_rec] = grade
        same = n_seg > 0 and ends[0] - starts[0] == q_hi - q_lo
        if same:
            for k in range(q_hi - q_lo):
                if buf[starts[0] + k] != buf[q_lo + k]:
                    same = False
                    break
        if not same:
            seg_start[n_seg] = n_rec
            seg_at[n_seg] = line_at
            n_seg += 1
            q_lo, q_hi = starts[0], ends[0]
            n_q = _append(buf, q_lo, q_hi, queries, n_q)
        doc_lo[n_rec] = n_code
        n_code = _append_codes(buf, starts[2], ends[2], codes, n_code)
        doc_hi[n_rec] = n_code - 1
        rec_line[n_rec] = line
        n_rec += 1
        line += 1
    return n_rec, n_code, n_seg, n_q, n_slow, tag_lo, tag_hi, line, -1, 0


@kernel(nogil=True)
def first_repeat(codes, id_lo, id_hi, offsets, seed):
    """The first id (in order) that its query (ids ``offsets[q]:offsets[q + 1]``, id i being
    ``codes[id_lo[i]:id_hi[i]]``) holds earlier too, or -1: an open-addressing table of each query's ids
    by `groups.id_hash` from ``seed`` (`groups.SEED`, drawn per process, so ids cannot be built in advance
    to collide into long probe chains), a match confirmed by `groups.compare_ids`."""
    longest = 0
    for q in range(offsets.shape[0] - 1):
        longest = max(longest, offsets[q + 1] - offsets[q])
    capacity = 2
    while capacity < 2 * longest:
        capacity *= 2
    table = np.empty(capacity, np.int64)
    hashes = np.empty(capacity, np.uint64)
    for q in range(offsets.shape[0] - 1):
        lo, hi = offsets[q], offsets[q + 1]
        size = 2
        while size < 2 * (hi - lo):
            size *= 2
        table[:size] = -1
        for i in range(lo, hi):
            h = id_hash(codes, id_lo[i], id_hi[i], seed)
            slot = np.int64(h & np.uint64(size - 1))
            while table[slot] >= 0:
                j = table[slot]
                if hashes[slot] == h and compare_ids(codes, id_lo[i], id_hi[i], codes, id_lo[j], id_hi[j]) == 0:
                    return i
                slot = (slot + 1) & (size - 1)
            table[slot] = i
            hashes[slot] = h
    return -1
