"""`tieaware.arguments`: one set of rules for numeric and tie-order arguments, applied at every entry point."""
import math

import numpy as np
import pytest

import tieaware
from tieaware.arguments import check_oblivious, is_count, is_finite, is_int, is_limit, is_number
from tieaware.errors import InputError

QRELS = {"q1": {"d1": 1}}
RUN = {"q1": {"d1": 0.5, "d2": 0.5}}


def test_bools_are_not_numbers_and_numpy_scalars_are():
    assert not any(rule(True) for rule in (is_int, is_number, is_count, is_finite, is_limit))
    assert is_int(np.int64(3)) and is_count(np.uint8(0)) and is_finite(np.float32(0.5)) and is_limit(np.int32(2))
    assert not is_int(2.0) and not is_number("1") and not is_number(None) and not is_number(np.bool_(True))


def test_bounds():
    assert is_count(0) and not is_count(-1) and not is_count(0, 1) and is_count(1, 1)
    assert is_limit(math.inf) and is_limit(0) and not is_limit(-0.1) and not is_limit(math.nan)
    assert not is_finite(math.inf) and not is_finite(math.nan) and is_finite(-3)


def test_oblivious_is_one_of_the_orders_everywhere():
    check_oblivious("ranx")
    check_oblivious(None, allow_none=True)
    for bad in ("trec", None, ["ranx"]):
        with pytest.raises(InputError, match=r"oblivious must be one of \("):
            check_oblivious(bad)
    with pytest.raises(InputError, match="oblivious must be None or one of"):
        check_oblivious("trec", allow_none=True)


@pytest.mark.parametrize("call,message", [
    (lambda: tieaware.evaluate(QRELS, RUN, "mrr", threads=True), "threads must be an integer"),
    (lambda: tieaware.evaluate(QRELS, RUN, "mrr", relevance_level=False), "relevance_level must be a finite"),
    (lambda: tieaware.evaluate(QRELS, RUN, "mrr", relevance_level=np.nan), "relevance_level must be a finite"),
    (lambda: tieaware.evaluate(QRELS, RUN, "mrr", oblivious="pyterrier"), "oblivious must be None or one of"),
    (lambda: tieaware.census(RUN, ks=[True]), "census cutoffs must be positive integers"),
    (lambda: tieaware.census(RUN, ks=[0]), "census cutoffs must be positive integers"),
])
def test_entry_points_apply_the_rules(call, message):
    with pytest.raises(InputError, match=message):
        call()


def test_numpy_integers_are_accepted_where_integers_are():
    report = tieaware.evaluate(QRELS, RUN, "mrr", threads=np.int64(1), relevance_level=np.int64(1))
    assert float(report) == pytest.approx(0.75)
    assert list(tieaware.census(RUN, ks=[np.int64(1)]).index) == [1]
