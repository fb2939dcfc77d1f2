"""Bad arguments and names raise `TieawareError`s that are also the builtin error they replace."""
import math

import pytest

import tieaware
from tieaware import InputError, TieawareError, UnknownMetricError

QRELS = {"q1": {"d1": 2, "d2": 0, "d3": 1}, "q2": {"d5": 1}}
RUN = {"q1": {"d1": 0.5, "d2": 0.5, "d3": 0.2, "d4": 0.9}, "q2": {"d5": 0.3, "d6": 0.3, "d7": 0.3}}


# -------------------------------------------------------- argument checks
@pytest.mark.parametrize("kwargs", [dict(relevance_level=None), dict(relevance_level=math.nan),
                                    dict(threads="2"), dict(oblivious="pytrec")])
def test_bad_arguments_raise_input_errors(kwargs):
    with pytest.raises(InputError):
        tieaware.evaluate(QRELS, RUN, "mrr", **kwargs)


@pytest.mark.parametrize("name,message", [("ndcg@-1", "positive integer"), ("P(rel=2, rel=3)@5", "given twice"),
                                          ("RBP(p=0)", r"\(0, 1\), got 0"), ("rbp.0", r"\(0, 1\), got 0")])
def test_bad_metric_names(name, message):
    with pytest.raises(UnknownMetricError, match=message):
        tieaware.evaluate(QRELS, RUN, name)


@pytest.mark.parametrize("ks", [[2.7], [0], [True], "10"])
def test_census_cutoffs_must_be_positive_integers(ks):
    with pytest.raises(InputError, match="positive integers"):
        tieaware.census(RUN, ks=ks)


# ------------------------------------------------------------ error family
@pytest.mark.parametrize("call,builtin", [
    (lambda: tieaware.evaluate("/nonexistent/qrels.trec", RUN, "mrr"), FileNotFoundError),
    (lambda: tieaware.evaluate(QRELS, RUN, "ndcg@x"), ValueError),
    (lambda: tieaware.evaluate(QRELS, {"q1": {"d1": "x"}}, "mrr"), ValueError),
    (lambda: tieaware.evaluate(QRELS, RUN, "mrr", oblivious="pytrec"), ValueError),
    (lambda: tieaware.census(RUN, ks=[0]), ValueError),
    (lambda: tieaware.compare(QRELS, {"a": RUN, "b": RUN}, "mrr", stat_test="wilcoxon"), ValueError),
])
def test_input_errors_are_tieaware_errors_and_the_builtin_they_replace(call, builtin):
    with pytest.raises(TieawareError) as caught:
        call()
    assert isinstance(caught.value, builtin)
