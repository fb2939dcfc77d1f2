"""Scores read from TREC text are the doubles Python's ``float`` (correctly rounded, as C's ``strtod``)
gives, bit for bit, and up to 19 significant digits are converted in the scan (`kernels.binary64`)."""
import math
import random
import struct
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal, localcontext

import numpy as np
import pytest

from tieaware.inputs import read_trec_run
from tieaware.kernels.binary64 import LARGEST_Q, POWERS_OF_FIVE, SMALLEST_Q
from tieaware.readers import trec_files

HARD = [
    "2.2250738585072011e-308", "2.2250738585072012e-308", "2.2250738585072014e-308",  # the least normal
    "4.9406564584124654e-324", "2.4703282292062327e-324", "2.4703282292062328e-324", "5e-324", "3e-324",
    "7.4109846876186982e-324", "1.7976931348623157e308", "1.7976931348623158e308", "1.7976931348623159e308",
    "9007199254740993", "9007199254740995", "18014398509481989", "18014398509481990",  # halfway: to even
    "1e23", "8.98846567431158e307", "0.1", "0.30000000000000004", "-0", "-0.0e5", "0e999999", "1e-400",
    "123456789012345678e-360", "9999999999999999999e-343", "1e309", "9223372036854775807",
    "9999999999999999999", "0.9999999999999999999", "4.35679712e-317", "3.0517578125e-05", "0.000000000000000000000001",
    "1e-0000001", "1e0000001", "1.5e-000005", "2.5e-0000000000", "1e+0000000000000000000000308",  # padded exponents
    "1e99999", "1e-99999", "1e100000", "1e-100000", "0.5e000000", "0." + "0" * 400 + "1e400",
    "1.00000000000000011102230246251565404236316680908203125",  # 1 + 2^-53 / 2, halfway with 54 digits
    "1.00000000000000011102230246251565404236316680908203124",
]


def _bits(value: float) -> bytes:
    return struct.pack("<d", value)


def _decimals(rng: random.Random, n: int) -> list[str]:
    """Decimal texts of the shapes scores take, and of the shapes that are hard to round."""
    out = []
    for _ in range(n):
        kind = rng.randrange(10)
        if kind == 0:  # any finite double, as repr writes it (17 digits at most)
            value = struct.unpack("<d", struct.pack("<Q", rng.getrandbits(63)))[0]
            out.append(repr(value) if np.isfinite(value) else "1.5")
        elif kind == 1:  # fp32 scores written from Python
            out.append(repr(float(np.float32(rng.random() * rng.choice([1, 10, 1000, 1e-5])))))
        elif kind == 2:  # integers from 2^53 to 19 digits: half of those below 2^54 are exactly halfway
            out.append(str(rng.randrange(2 ** 53, 10 ** 19)))
        elif kind == 3:  # halfway values (2m + 1) 2^(e - 1) above 2^53, in exponent form
            value = (2 * rng.randrange(2 ** 52, 2 ** 53) + 1) << rng.randrange(0, 11)
            shift = rng.randrange(0, 4)
            out.append(f"{value // 10 ** shift}e{shift}" if value % 10 ** shift == 0 else str(value))
        elif kind == 4:  # 19 digits, every exponent (subnormals, overflow)
            out.append(f"{rng.randrange(10 ** 18, 10 ** 19)}e{rng.randrange(-365, 320)}")
        elif kind == 5:  # short digits, every exponent, some zero-padded
            exponent = f"{rng.randrange(-365, 330):0{rng.randrange(8)}d}"
            out.append(f"{rng.randrange(1, 10 ** rng.randrange(1, 20))}e{exponent}")
        elif kind == 6:  # a point anywhere, a sign, an exponent
            digits = str(rng.randrange(0, 10 ** rng.randrange(1, 20)))
            at = rng.randrange(0, len(digits) + 1)
            sign = rng.choice(["", "-", "+"])
            exponent = f"E{rng.randrange(-30, 30)}" if rng.random() < 0.3 else ""
            out.append(f"{sign}{digits[:at]}.{digits[at:]}{exponent}")
        elif kind == 7:  # the subnormal range
            out.append(f"{rng.randrange(1, 10 ** rng.randrange(1, 20))}e{rng.randrange(-345, -300)}")
        elif kind == 8:  # fixed-point formats
            out.append(f"{rng.random() * rng.choice([1, 100, 1e6]):.{rng.randrange(0, 13)}f}")
        else:  # leading zeros after the point
            out.append("0.000" + str(rng.randrange(1, 10 ** rng.randrange(1, 19))))
    return out


def _read_scores(tmp_path, texts: list[str]) -> list[float]:
    path = tmp_path / "run.trec"
    path.write_text("".join(f"q Q0 d{i} {i} {text} tag\n" for i, text in enumerate(texts)))
    return list(read_trec_run(path)["q"].values())


@pytest.mark.parametrize("seed", [0, 1])
def test_random_decimals_are_the_doubles_python_reads(tmp_path, seed):
    texts = _decimals(random.Random(seed), 150_000)
    got = _read_scores(tmp_path, texts)
    wrong = [(text, value, float(text)) for text, value in zip(texts, got) if _bits(value) != _bits(float(text))]
    assert wrong == []


def test_decimals_next_to_a_halfway_point_are_the_doubles_python_reads(tmp_path):
    """The exact midpoint of two neighbouring doubles cut to 16-19 significant digits, just below and
    just above it: the decimals whose rounding needs the most precision."""
    rng = random.Random(2)
    texts = []
    with localcontext() as context:
        context.prec = 1200  # a midpoint's every digit (subnormals' too)
        for _ in range(20_000):
            x = math.ldexp(rng.random() + 0.5, rng.choice([rng.randrange(-1074, 1024), rng.randrange(-70, 80)]))
            if not 0 < x < math.inf:
                continue
            middle = (Decimal(x) + Decimal(math.nextafter(x, math.inf))) / 2
            for rounding in (ROUND_FLOOR, ROUND_CEILING):
                unit = Decimal(1).scaleb(middle.adjusted() - rng.randrange(15, 19))
                texts.append(format(middle.quantize(unit, rounding=rounding), rng.choice(["E", "f"])))
    got = _read_scores(tmp_path, texts)
    assert [text for text, value in zip(texts, got) if _bits(value) != _bits(float(text))] == []


def test_hard_cases_are_the_doubles_python_reads(tmp_path):
    got = _read_scores(tmp_path, HARD)
    assert [_bits(value) for value in got] == [_bits(float(text)) for text in HARD]


def test_up_to_19_significant_digits_are_converted_in_the_scan(tmp_path, monkeypatch):
    """Python's float is called only for longer scores: repr's 17 digits, fp32's and 19 digits are not."""
    parsed = []
    parse_score = trec_files.parse_score
    monkeypatch.setattr(trec_files, "parse_score", lambda text, where: parsed.append(text) or parse_score(text, where))
    fast = ["0.9995013522570269", "0.8700000047683716", "1234567890123456789e-30", "0.0000001234567890123456789"]
    slow = ["12345678901234567890", "0.12345678901234567890", "1.0000000000000000000"]
    assert [_bits(v) for v in _read_scores(tmp_path, fast + slow)] == [_bits(float(t)) for t in fast + slow]
    assert parsed == slow


#: rows of fast_float's table of powers of five, as its authors print it
PUBLISHED = {-342: (0xeef453d6923bd65a, 0x113faa2906a13b3f), -28: (0xfd87b5f28300ca0d, 0x8bca9d6e188853fc)}


def test_the_powers_of_five_are_their_leading_128_bits():
    """Each row is 5^q scaled into [2^127, 2^128): truncated for q >= 0; for q < 0 within 2^-126 of it
    (relative), and above it from 5^-27 on."""
    assert POWERS_OF_FIVE.shape == (LARGEST_Q - SMALLEST_Q + 1, 2)
    for q in (SMALLEST_Q, -100, -28, -27, -18, -1, 0, 1, 27, 28, 100, LARGEST_Q):
        high, low = (int(word) for word in POWERS_OF_FIVE[q - SMALLEST_Q])
        value = (high << 64) | low
        assert 2 ** 127 <= value < 2 ** 128
        if q in PUBLISHED:
            assert (high, low) == PUBLISHED[q]
        if q >= 0:
            exact = 5 ** q
            excess = exact.bit_length() - 128
            assert value == (exact >> excess if excess > 0 else exact << -excess)
        else:  # value / 2^k approximates 5^q = 1 / 5^-q
            k = 127 + (5 ** -q).bit_length()
            assert abs(value * 5 ** -q - 2 ** k) <= 2 ** k >> 126
            assert q < -27 or value * 5 ** -q > 2 ** k
