"""Decimal numbers to the nearest binary64 double, rounded as C's ``strtod`` and Python's ``float`` round.

`nearest_double` turns w x 10^q (w an integer of at most 19 decimal digits, so below 2^64) into the
nearest double, ties to even, by the Eisel-Lemire algorithm: w shifted to fill 64 bits times the 128
most significant bits of 5^q (`POWERS_OF_FIVE`, q in [-342, 308]); the product's top 55 bits give the
mantissa and a rounding bit, the power of two comes from q and the shift, and a product that dropped
only zero bits is an exact half, rounded to even. Mushtak and Lemire proved that this 128-bit product
is always enough for such w: no input needs a slower exact path.

Sources: D. Lemire, "Number Parsing at a Gigabyte per Second", Software: Practice and Experience 51(8),
2021 (arXiv:2101.11408), section 5; N. Mushtak and D. Lemire, "Fast Number Parsing Without Fallback",
Software: Practice and Experience 53(6), 2023 (arXiv:2212.06644), which also fixes the table's rounding.
"""
from __future__ import annotations

import numpy as np

from . import kernel
from .backend import JitOnly

_full_product = JitOnly("tieaware.kernels.intrinsics", "full_product")
_double_of_bits = JitOnly("tieaware.kernels.intrinsics", "double_of_bits")
leading_zeros = JitOnly("tieaware.kernels.numba_compat", "leading_zeros")

#: the decimal exponents q for which w x 10^q (1 <= w < 2^64) may be a finite nonzero double
SMALLEST_Q, LARGEST_Q = -342, 308
#: a double's stored mantissa bits, the bias of its exponent field, and that field for infinity
_MANTISSA_BITS, _EXPONENT_BIAS, _INFINITE = 52, 1023, 0x7FF
#: the decimal exponents for which w x 10^q can lie exactly halfway between two doubles (w < 2^64)
_HALFWAY_Q = (-4, 23)


def _powers_of_five() -> np.ndarray:
    """Row q - `SMALLEST_Q`: the high and low 64 bits of 5^q scaled by a power of two into [2^127, 2^128),
    truncated; for q < 0, 2^b // 5^-q + 1 so scaled: rounded up from q = -27 on (b gives exactly 128
    bits), truncated below (b gives 128 bits more). These are the values the proof of Mushtak and
    Lemire is made for."""
    rows = []
    for q in range(SMALLEST_Q, LARGEST_Q + 1):
        if q >= 0:
            value = 5 ** q
        else:
            power = 5 ** -q
            bits = (power - 1).bit_length()  # the least z with 2^z >= 5^-q
            value = (1 << (bits + 127 if q >= -27 else 2 * bits + 128)) // power + 1
        excess = value.bit_length() - 128
        value = value >> excess if excess > 0 else value << -excess
        rows.append((value >> 64, value & 0xFFFF_FFFF_FFFF_FFFF))
    return np.array(rows, np.uint64)


POWERS_OF_FIVE = _powers_of_five()


@kernel(inline="always")
def nearest_double(w, q, negative):
    """The double nearest to w x 10^q, ties to even, negated when ``negative`` (w uint64, q int64):
    0 below `SMALLEST_Q`, infinity above `LARGEST_Q`, subnormals rounded as strtod rounds them."""
    one = np.uint64(1)
    bits = np.uint64(0)
    if w != 0 and q >= SMALLEST_Q:
        if q > LARGEST_Q:
            bits = np.uint64(_INFINITE) << np.uint64(_MANTISSA_BITS)
        else:
            zeros = np.uint64(leading_zeros(w))
            w = w << zeros
            row = q - SMALLEST_Q
            high, low = _full_product(w, POWERS_OF_FIVE[row, 0])
            if high & np.uint64(0x1FF) == np.uint64(0x1FF):  # the bits below the 55 kept: refine with the next word
                carry, _ = _full_product(w, POWERS_OF_FIVE[row, 1])
                low += carry
                if carry > low:
                    high += one
            upper = high >> np.uint64(63)
            shift = upper + np.uint64(64 - _MANTISSA_BITS - 3)
            mantissa = high >> shift
            power2 = ((217706 * q) >> 16) + 63 + np.int64(upper) - np.int64(zeros) + _EXPONENT_BIAS
            if power2 <= 0:  # subnormal, or zero
                if 1 - power2 < 64:
                    mantissa >>= np.uint64(1 - power2)
                    mantissa += mantissa & one
                    bits = mantissa >> one  # rounded up to 2^52, it is the least normal double
            else:
                if (low <= one and _HALFWAY_Q[0] <= q <= _HALFWAY_Q[1] and mantissa & np.uint64(3) == one
                        and mantissa << shift == high):  # exactly halfway: round to even (down)
                    mantissa &= ~one
                mantissa += mantissa & one
                mantissa >>= one
                if mantissa >= one << np.uint64(_MANTISSA_BITS + 1):
                    mantissa = one << np.uint64(_MANTISSA_BITS)
                    power2 += 1
                mantissa &= ~(one << np.uint64(_MANTISSA_BITS))
                if power2 >= _INFINITE:
                    power2, mantissa = _INFINITE, np.uint64(0)
                bits = mantissa | (np.uint64(power2) << np.uint64(_MANTISSA_BITS))
    if negative:
        bits |= one << np.uint64(63)
    return _double_of_bits(bits)
