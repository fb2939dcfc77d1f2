"""Quantised embeddings: int8/uint8 scalar quantisation and binary (sign-bit) quantisation, exact search in
the quantised space (integer dot product, Hamming distance) and rescoring of the top candidates in fp32.

Quantised retrieval is the most extreme source of score ties: a Hamming score over d bits takes at most
d + 1 values, so in a top 100 many documents share a score (Yang et al., *Reliable Evaluation Protocol for
Low-Precision Retrieval*, arXiv 2508.03306, name Hamming scores as a source of ties). Rescoring the
top candidates with an fp32 query, as sentence-transformers documents for binary and scalar quantisation
(https://sbert.net/examples/sentence_transformer/applications/embedding-quantization/README.html),
is the High-Precision Scoring of quantised retrieval: it removes the ties except between documents with
identical codes.

Formulas (the same as sentence-transformers' ``quantize_embeddings``, v6.2; ``tests/test_hps_quantize.py``
checks them against it):

* calibration ranges, shape (2, d): per dimension min and max of the calibration (corpus) embeddings.
* step_j = (max_j - min_j) / 255 in float32 (1 where max_j == min_j);
  uint8: c_j = clip(floor((x_j - min_j) / step_j), 0, 255); int8: c_j = uint8 code - 128.
  Values outside the range (queries, with the corpus' ranges) are clipped to it.
* int8/uint8 score: sum_j c_q,j * c_d,j, an exact integer (int32 accumulation as in integer SIMD kernels).
* dequantised: x_j ~ min_j + u_j * step_j with u the uint8 code. (The bin midpoint would add
  step_j / 2 to every document, which shifts all scores of a query by the same amount: same ranking.)
* binary/ubinary: bit_j = 1 if x_j > 0 else 0, packed 8 per byte big-endian (``np.packbits``, rows padded
  with 0-bits to a whole byte); ubinary stores the bytes as uint8, binary as int8 (byte - 128).
* binary score: d - Hamming(q bits, d bits), larger is better, an integer in [0, d]. Equivalently
  (d + <s_q, s_d>) / 2 with s = 2 * bit - 1 in {-1, +1}.
* rescoring (``rescore="quantized"``): fp32 query . dequantised doc (int8/uint8; computed in float32 as
  u . (q * step) + q . min, without building the dequantised matrix) or fp32 query . s_d with s_d in
  {-1, +1} (binary). sentence-transformers multiplies by the {0, 1} bits instead, which gives
  q . s / 2 + sum(q) / 2: the same ranking per query. ``rescore="full"``: fp32 query . fp32 doc.

Search is exact and never cuts inside a tie group: Hamming distances are computed by blocks of queries
with ``np.bitwise_count`` (numpy >= 2.0) on 64-bit words, falling back to a 256-entry popcount table on
older numpy, and each query's k-th score is read from a histogram of its d + 1 possible scores; int8
scores come from a float BLAS product that is exact for these integers, cut with a partition.
"""
from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Union

import numpy as np
from numpy.typing import ArrayLike

from ..errors import InputError
from ._common import kth_largest_rows

if TYPE_CHECKING:
    import torch

#: float embeddings, (n, d): a numpy array (or anything numpy reads) or a torch tensor
Embeddings = Union[ArrayLike, "torch.Tensor"]

SCHEMES = ("int8", "uint8", "binary", "ubinary")
SCALAR_SCHEMES = ("int8", "uint8")
BINARY_SCHEMES = ("binary", "ubinary")
RESCORE = (None, "quantized", "full")

_POPCOUNT_TABLE = np.array([bin(i).count("1") for i in range(256)], dtype=np.uint8)


def _popcount_table(words: np.ndarray) -> np.ndarray:
    """Bits set per element of an unsigned integer array, from a 256-entry byte table (numpy < 2.0)."""
    words = np.ascontiguousarray(words)
    per_byte = _POPCOUNT_TABLE[words.view(np.uint8)].reshape(*words.shape, words.itemsize)
    return per_byte.sum(axis=-1, dtype=np.uint8)


popcount: Callable[..., np.ndarray] = getattr(np, "bitwise_count", _popcount_table)
"""Bits set per element (``np.bitwise_count`` on numpy >= 2.0, a byte table otherwise)."""


def check_scheme(scheme) -> str:
    """'int8' / 'uint8' / 'binary' / 'ubinary' (case-insensitive) -> the scheme; anything else is an error."""
    if isinstance(scheme, str) and scheme.lower() in SCHEMES:
        return scheme.lower()
    raise InputError(f"unknown quantization scheme {scheme!r}: use one of {SCHEMES} (or None for no quantization)")


# Quantized-retrieval modes of a BiEncoder: '<scheme>' (scores in the quantized space, hps=False),
# '<scheme>+rescore' (hps=True: fp32 query x dequantized / {-1,+1} doc), '<scheme>+rescore_full'
# (hps='full': fp32 query x fp32 doc). The sweep's regimes use the same names ('bf16+binary+rescore').
RESCORE_SUFFIX = {None: "", "quantized": "+rescore", "full": "+rescore_full"}
HPS_RESCORE = {False: None, True: "quantized", "full": "full"}


def quantized_mode(scheme, hps) -> str:
    """(scheme, public hps argument) -> mode: hps False / True / 'full' -> '<scheme>' / '+rescore' / '+rescore_full'."""
    scheme = check_scheme(scheme)
    key = bool(hps) if isinstance(hps, (bool, np.bool_)) else hps
    if not isinstance(key, (bool, str)) or key not in HPS_RESCORE:
        raise InputError(f"with quantize={scheme!r}, hps must be False (quantized scores), True (rescore the "
                         f"top rescore_k with the fp32 query) or 'full' (rescore with the full-precision "
                         f"document embeddings), not {hps!r}")
    return scheme + RESCORE_SUFFIX[HPS_RESCORE[key]]


def parse_mode(mode: str) -> tuple[str, str | None] | None:
    """'binary+rescore' -> ('binary', 'quantized'); 'int8' -> ('int8', None); a precision mode -> None."""
    scheme, _, rest = mode.partition("+")
    if scheme not in SCHEMES:
        return None
    rescore = {suffix[1:]: value for value, suffix in RESCORE_SUFFIX.items() if suffix}.get(rest, "?") if rest else None
    if rescore == "?":
        raise InputError(f"unknown quantized mode {mode!r}: use '{scheme}', '{scheme}+rescore' or "
                         f"'{scheme}+rescore_full'")
    return scheme, rescore


def as_embeddings(embeddings, what: str = "embeddings") -> np.ndarray:
    """A float matrix (n, d) as a C-contiguous float32 numpy array (torch tensors are moved to the cpu)."""
    if hasattr(embeddings, "detach"):
        embeddings = embeddings.detach().float().cpu().numpy()
    embeddings = np.asarray(embeddings)
    if embeddings.ndim != 2:
        raise InputError(f"{what} must be a matrix (n, dim), got shape {embeddings.shape}")
    if not np.issubdtype(embeddings.dtype, np.floating):
        raise InputError(f"{what} to quantize must be float, not {embeddings.dtype}")
    embeddings = np.ascontiguousarray(embeddings, dtype=np.float32)
    if not np.isfinite(embeddings).all():
        row = int(np.flatnonzero(~np.isfinite(embeddings).all(axis=1))[0])
        raise InputError(f"{what} row {row} holds NaN or inf (an fp16 overflow? try bf16 or fp32)")
    return embeddings


def calibration_ranges(embeddings) -> np.ndarray:
    """Per-dimension [min; max] of the calibration embeddings, shape (2, d), float32 (sentence-transformers)."""
    embeddings = as_embeddings(embeddings, "calibration embeddings")
    if len(embeddings) == 0:
        raise InputError("calibration needs at least one embedding")
    return np.vstack((embeddings.min(axis=0), embeddings.max(axis=0)))


def check_ranges(ranges, dim: int | None = None) -> np.ndarray:
    """Calibration ranges as a float32 (2, dim) array: row 0 the minima, row 1 the maxima."""
    if hasattr(ranges, "detach"):
        ranges = ranges.detach().float().cpu().numpy()
    try:
        array = np.asarray(ranges, dtype=np.float32)
    except (TypeError, ValueError) as error:
        raise InputError(f"calibration ranges must be a numeric array of shape (2, dim): {error}") from None
    expected = f"(2, {dim})" if dim is not None else "(2, dim)"
    if array.ndim != 2 or array.shape[0] != 2 or (dim is not None and array.shape[1] != dim):
        raise InputError(f"calibration ranges must have shape {expected} (row 0: per-dimension minima, "
                         f"row 1: maxima), got shape {array.shape}")
    if not np.isfinite(array).all():
        raise InputError("calibration ranges hold NaN or inf")
    bad = np.flatnonzero(array[0] > array[1])
    if len(bad):
        raise InputError(f"calibration ranges: minimum above maximum in dimension {int(bad[0])} "
                         f"({array[0, bad[0]]} > {array[1, bad[0]]})")
    return np.ascontiguousarray(array)


def _steps(ranges: np.ndarray) -> np.ndarray:
    steps = (ranges[1] - ranges[0]) / np.float32(255)
    return np.where(steps == 0, np.float32(1), steps).astype(np.float32)


def pack_bits(embeddings) -> np.ndarray:
    """Sign bits (x > 0 -> 1) packed 8 per byte, big-endian, each row padded to a whole byte: uint8 (n, ceil(d/8))."""
    return np.packbits(as_embeddings(embeddings) > 0, axis=-1)


def quantize(embeddings, scheme: str, ranges=None) -> np.ndarray:
    """Quantise float embeddings (n, d), as sentence-transformers' ``quantize_embeddings(embeddings, scheme,
    ranges=ranges)``: int8/uint8 codes (n, d) with the per-dimension ranges (None: calibrated on these
    embeddings), or packed sign bits (n, ceil(d/8)) as int8 (binary) or uint8 (ubinary)."""
    scheme = check_scheme(scheme)
    embeddings = as_embeddings(embeddings)
    if scheme in BINARY_SCHEMES:
        bits = np.packbits(embeddings > 0, axis=-1)
        return (bits.astype(np.int16) - 128).astype(np.int8) if scheme == "binary" else bits
    ranges = calibration_ranges(embeddings) if ranges is None else check_ranges(ranges, embeddings.shape[1])
    codes = np.clip(np.floor((embeddings - ranges[0]) / _steps(ranges)), 0, 255)
    return (codes - 128).astype(np.int8) if scheme == "int8" else codes.astype(np.uint8)


def dequantize(codes, scheme: str, ranges=None, dim: int | None = None) -> np.ndarray:
    """float32 reconstruction used for rescoring: min + u * step for int8/uint8 (u the uint8 code; needs the
    ranges), the {-1, +1} signs 2 * bit - 1 for binary/ubinary (``dim``: the unpadded dimension)."""
    scheme = check_scheme(scheme)
    codes = np.asarray(codes)
    if scheme in BINARY_SCHEMES:
        bits = np.unpackbits(_as_uint8_bits(codes), axis=-1)
        if dim is not None:
            bits = bits[..., :dim]
        return bits.astype(np.float32) * 2 - 1
    if ranges is None:
        raise InputError(f"dequantizing {scheme} codes needs the calibration ranges")
    ranges = check_ranges(ranges, codes.shape[-1])
    unsigned = codes.astype(np.float32) + (128 if scheme == "int8" else 0)
    return unsigned * _steps(ranges) + ranges[0]


def _as_uint8_bits(codes: np.ndarray) -> np.ndarray:
    """binary (int8, byte - 128) or ubinary (uint8) packed bits -> the uint8 bytes."""
    return codes.view(np.uint8) ^ np.uint8(0x80) if codes.dtype == np.int8 else codes.astype(np.uint8, copy=False)


def _words(bits: np.ndarray) -> np.ndarray:
    """uint8 packed bits (n, b) -> uint64 words (n, ceil(b/8)), padded with zero bytes (no effect on XOR)."""
    n, nbytes = bits.shape
    padded = np.zeros((n, -(-nbytes // 8) * 8), dtype=np.uint8)
    padded[:, :nbytes] = bits
    return padded.view(np.uint64)


def hamming_distances(query_bits, doc_bits) -> np.ndarray:
    """All pairwise Hamming distances (nq, nd) as int32 between packed bit rows (binary or ubinary codes)."""
    q = _words(_as_uint8_bits(np.asarray(query_bits)))
    d = _words(_as_uint8_bits(np.asarray(doc_bits)))
    out = np.zeros((len(q), len(d)), dtype=np.int32)
    for w in range(q.shape[1]):
        out += popcount(q[:, w, None] ^ d[None, :, w])
    return out


def int_dot(query_codes, doc_codes, doc_floats: np.ndarray | None = None) -> np.ndarray:
    """Exact integer dot products (nq, nd) of int8/uint8 codes, as int32 (int64 when int32 could overflow).

    BLAS does the work: every product and partial sum is an integer below 2**24 (float32) or 2**53
    (float64), which those floats hold exactly, so the result equals int32 accumulation. doc_floats: the
    doc codes already cast to ``exact_float_type`` (an index keeps them to avoid a cast per call)."""
    q, d = np.asarray(query_codes), np.asarray(doc_codes)
    float_type, int_type = exact_types(q.shape[-1], q.dtype, d.dtype)
    docs = d.astype(float_type) if doc_floats is None else doc_floats
    return (q.astype(float_type) @ docs.T).astype(int_type)


def exact_types(dim: int, query_dtype, doc_dtype) -> tuple[type, type]:
    """(float type whose BLAS dot product of such codes is exact, int type that holds it)."""
    bound = dim * _max_abs(query_dtype) * _max_abs(doc_dtype)
    return (np.float32 if bound < 2**24 else np.float64), (np.int32 if bound < 2**31 else np.int64)


def _max_abs(dtype) -> int:
    info = np.iinfo(dtype)
    return max(abs(int(info.min)), int(info.max))


def top_rows_with_ties(scores: np.ndarray, k: int, max_score: int | None = None) -> list[np.ndarray]:
    """Per row of a score matrix, the columns of the k best scores plus every column tied with the k-th.

    Integer scores in [0, max_score] (Hamming scores) are counted per value in one pass (a histogram per
    row) instead of partitioned; other scores use the partition of ``_common.kth_largest_rows``, the same
    rule as the tie-preserving cut ``keep_top_k_with_ties`` that every run goes through at the end."""
    if k >= scores.shape[1]:
        return [np.arange(scores.shape[1]) for _ in range(len(scores))]
    if max_score is None:
        kth = kth_largest_rows(scores, k)
        return [np.flatnonzero(row >= kth[i]) for i, row in enumerate(scores)]
    tops = []
    for row in scores:
        at_least = np.cumsum(np.bincount(row, minlength=max_score + 1)[::-1])[::-1]  # #(score >= s)
        kth = np.count_nonzero(at_least >= k) - 1  # the largest s with #(score >= s) >= k
        tops.append(np.flatnonzero(row >= kth))
    return tops


class QuantizedIndex:
    """Document embeddings quantised with one scheme, searched exactly in the quantised space.

    embeddings: float (n, d) document embeddings (numpy or torch). scheme: 'int8' | 'uint8' | 'binary' |
    'ubinary'. ranges: int8/uint8 calibration ranges (2, d); default the per-dimension min/max of these
    embeddings. keep_full: keep the float32 embeddings too (needed by ``rescore="full"``; 32x the memory
    of binary codes). block: score entries (queries x docs) computed at once; default 2**20 for Hamming
    (small blocks stay in cache) and 2**24 for int8/uint8 (BLAS wants many queries per pass).
    threads: Hamming blocks scored in parallel (numpy releases the GIL); default the CPUs available.
    int8/uint8 search is left to the BLAS library's own threads.
    """

    def __init__(self, embeddings: Embeddings, scheme: str, *, ranges: ArrayLike | None = None, keep_full: bool = False,
                 block: int | None = None, threads: int | None = None) -> None:
        self.scheme = check_scheme(scheme)
        embeddings = as_embeddings(embeddings, "document embeddings")
        self.size, self.dim = embeddings.shape
        if self.size == 0:
            raise InputError("nothing to index: no document embeddings")
        calibrated: np.ndarray | None = None
        if self.scheme in BINARY_SCHEMES:
            if ranges is not None:
                raise InputError(f"calibration ranges apply to int8/uint8, not to {self.scheme} quantization")
        else:
            calibrated = calibration_ranges(embeddings) if ranges is None else check_ranges(ranges, self.dim)
        self.ranges = calibrated
        self.ranges_given = ranges is not None
        self.docids: list[str] | None = None  # set by BiEncoder.index(): search() maps rows to these ids
        self.codes = quantize(embeddings, self.scheme, self.ranges)
        self.full = embeddings if keep_full else None
        self.block = max(1, int(block or (2**20 if self.scheme in BINARY_SCHEMES else 2**24)))
        available = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
        self.threads = max(1, int(threads or available or 1))
        self._max_score = self.dim if self.scheme in BINARY_SCHEMES else None
        if calibrated is None:  # binary: (words, docs), each XOR pass reads one contiguous row
            self._doc_words = np.ascontiguousarray(_words(_as_uint8_bits(self.codes)).T)
        else:
            self._steps = _steps(calibrated)
            #: (offset * step + min) of `dequantize`, the part of a dequantized row that is the same for all
            self._shift = np.float32(128 if self.scheme == "int8" else 0) * self._steps + calibrated[0]
        self._doc_floats: np.ndarray | None = None  # int8/uint8: the codes as exact BLAS floats, made at first search

    def quantize_queries(self, queries: Embeddings) -> np.ndarray:
        """Query codes with the index's scheme and ranges (clipped to them)."""
        queries = as_embeddings(queries, "query embeddings")
        if queries.shape[1] != self.dim:
            raise InputError(f"query embeddings have dimension {queries.shape[1]}, the index {self.dim}")
        return quantize(queries, self.scheme, self.ranges)

    def scores(self, queries: Embeddings, rows: np.ndarray | None = None) -> np.ndarray:
        """Integer scores in the quantised space (nq, n docs or len(rows)): d - Hamming or the code dot product."""
        codes = self.quantize_queries(queries)
        docs = self.codes if rows is None else self.codes[rows]
        if self.scheme in BINARY_SCHEMES:
            return self.dim - hamming_distances(codes, docs)
        return int_dot(codes, docs)

    def _block_scores(self, codes: np.ndarray) -> np.ndarray:
        """Scores of a block of query codes against every document (uint16 for binary, int32/64 for int8)."""
        if self.scheme not in BINARY_SCHEMES:
            if self._doc_floats is None:
                float_type, _ = exact_types(self.dim, self.codes.dtype, self.codes.dtype)
                self._doc_floats = self.codes.astype(float_type)
            return int_dot(codes, self.codes, self._doc_floats)
        query_words = _words(_as_uint8_bits(codes))
        distance = np.zeros((len(codes), self.size), dtype=np.uint16)
        xor = np.empty((len(codes), self.size), dtype=np.uint64)
        count = np.empty((len(codes), self.size), dtype=np.uint8)
        for w in range(query_words.shape[1]):
            np.bitwise_xor(query_words[:, w, None], self._doc_words[w][None, :], out=xor)
            if popcount is not _popcount_table:  # numpy's ufunc writes into out
                popcount(xor, out=count)
            else:
                count[...] = popcount(xor)
            distance += count
        return np.uint16(self.dim) - distance

    def search(self, queries: Embeddings, k: int, *, rescore: str | None = None, rescore_k: int | None = None,
               candidates: Sequence[np.ndarray] | None = None) -> list[tuple[np.ndarray, np.ndarray]]:
        """Exact top-k per query, every document tied with the k-th kept: [(doc rows, scores)].

        queries: fp32 query embeddings (nq, d). rescore None: integer scores in the quantised space (int64).
        rescore 'quantized' / 'full': the top ``rescore_k`` (default 4 * k, ties at the rescore_k-th kept)
        by quantised score are rescored with the fp32 query against the dequantised / {-1,+1} or the full
        fp32 document embeddings (float32 scores), then the top k of those are kept (with ties).
        candidates: per query, the document rows to consider (default: all)."""
        queries = as_embeddings(queries, "query embeddings")
        if rescore not in RESCORE:
            raise InputError(f"unknown rescore {rescore!r}: use one of {RESCORE}")
        if k < 1:
            raise InputError(f"k must be >= 1, got {k}")
        depth = k
        if rescore is not None:
            rescore_k = 4 * k if rescore_k is None else rescore_k
            if rescore_k < k:
                raise InputError(f"rescore_k={rescore_k} is smaller than k={k}: rescoring must see at least the top k")
            if rescore == "full" and self.full is None:
                raise InputError("rescore='full' needs the full-precision document embeddings: build the index "
                                 "with keep_full=True")
            depth = rescore_k
        codes = self.quantize_queries(queries)
        hits = []
        if candidates is None:
            per_block = max(1, self.block // self.size)
            starts = range(0, len(codes), per_block)

            def search_block(start: int) -> list[tuple[np.ndarray, np.ndarray]]:
                scores = self._block_scores(codes[start:start + per_block])
                return [(top, scores[row, top].astype(np.int64))
                        for row, top in enumerate(top_rows_with_ties(scores, depth, self._max_score))]

            workers = min(self.threads, len(starts)) if self.scheme in BINARY_SCHEMES else 1
            if workers > 1:
                with ThreadPoolExecutor(workers) as pool:
                    for block_hits in pool.map(search_block, starts):
                        hits.extend(block_hits)
            else:
                for start in starts:
                    hits.extend(search_block(start))
        else:
            if len(candidates) != len(codes):
                raise InputError(f"{len(candidates)} candidate lists for {len(codes)} queries")
            for row, rows in enumerate(candidates):
                rows = np.asarray(rows, dtype=np.int64)
                scores = self.scores(queries[row:row + 1], rows)[0].astype(np.int64)
                top = top_rows_with_ties(scores[None], depth, self._max_score)[0]
                hits.append((rows[top], scores[top]))
        if rescore is None:
            return hits
        out = []
        for query, (rows, _) in zip(queries, hits):
            scores = self.rescore(query, rows, rescore)
            top = top_rows_with_ties(scores[None], k)[0]
            out.append((rows[top], scores[top]))
        return out

    def rescore(self, query: ArrayLike, rows: np.ndarray, rescore: str = "quantized") -> np.ndarray:
        """float32 scores of one fp32 query against the documents ``rows``: dequantised / {-1,+1} ('quantized')
        or full-precision ('full') document embeddings."""
        query = np.asarray(query, dtype=np.float32)
        if rescore == "full":
            if self.full is None:
                raise InputError("rescore='full' needs the full-precision document embeddings (keep_full=True)")
            docs = self.full[rows]
        elif self.scheme in BINARY_SCHEMES:
            docs = dequantize(self.codes[rows], self.scheme, dim=self.dim)
        else:  # (c + offset) * step + min, dotted with q, expanded so no dequantized matrix is built
            return (self.codes[rows].astype(np.float32) @ (query * self._steps)
                    + self._shift @ query)
        return docs @ query

    def describe(self, rescore: str | None = None, rescore_k: int | None = None) -> dict:
        """What produces the scores, for a run's metadata."""
        if self.scheme in BINARY_SCHEMES:
            space = f"{self.scheme}: {self.dim} - Hamming(query bits, doc bits), integer in [0, {self.dim}]"
            rescored = "fp32 query . {-1,+1} doc bits"
        else:
            space = f"{self.scheme}: integer dot product of {self.scheme} codes (int32 accumulation)"
            rescored = f"fp32 query . dequantized {self.scheme} doc"
        info = {"quantize": self.scheme, "dim": self.dim, "candidate_scores": space,
                "rescore": rescore, "rescore_k": rescore_k}
        info["scores"] = {None: space, "quantized": rescored, "full": "fp32 query . fp32 doc"}[rescore]
        if self.ranges is not None:
            info["ranges"] = "given" if self.ranges_given else "corpus min/max per dimension"
        return info
