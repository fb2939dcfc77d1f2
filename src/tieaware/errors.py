"""Exceptions raised by tieaware for bad input: one family under `TieawareError`.

Each also derives from the built-in it stands for (``ValueError``; a missing file
from ``FileNotFoundError`` too), so code written for ranx/pytrec_eval that catches
those keeps working, and the CLI can catch input errors without hiding bugs.
"""


class TieawareError(ValueError):
    """Base class of every error tieaware raises on bad input.

    Examples:
        >>> import tieaware
        >>> try:
        ...     tieaware.evaluate({"q1": {"d1": 1}}, {"q1": {"d1": float("nan")}}, "mrr")
        ... except tieaware.TieawareError as error:
        ...     print(type(error).__name__, isinstance(error, ValueError))
        InputError True
    """


class InputError(TieawareError):
    """Qrels or run data that cannot be evaluated; the message names the
    query, document, file line or column at fault.

    Examples:
        >>> import tieaware
        >>> try:
        ...     tieaware.census({"q1": {"d1": 0.5}}, ks=[0])
        ... except tieaware.InputError as error:
        ...     print(error)
        census cutoffs must be positive integers, got [0].
    """


class MissingFileError(InputError, FileNotFoundError):
    """A file that does not exist (or a folder where a file was expected); also a
    ``FileNotFoundError``, so ``except OSError`` keeps working."""


class MissingIdError(InputError, KeyError):
    """A query or document id that is not where it must be (a ``KeyError`` too)."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class InputTypeError(InputError, TypeError):
    """An argument of the wrong type (a ``TypeError`` too)."""


class QueryValueError(InputError):
    """A metric cannot use one query's data. Raised by the kernel families, which know queries only
    by position: ``query`` is that index and ``reason`` the rest of the sentence; `tieaware.evaluate`
    re-raises it naming the query id."""

    def __init__(self, query: int, reason: str):
        super().__init__(f"query #{query} {reason}")
        self.query, self.reason = query, reason


class UnknownMetricError(TieawareError):
    """A metric name in none of the supported syntaxes; the message lists them.

    Examples:
        >>> import tieaware
        >>> try:
        ...     tieaware.parse_metric("ndcg@ten")
        ... except tieaware.UnknownMetricError as error:
        ...     print(type(error).__name__, isinstance(error, ValueError))
        UnknownMetricError True
    """


class QueryMismatchError(InputError):
    """The qrels and a run hold different query ids (and ``make_comparable`` was not set).

    Attributes:
        missing: query ids in the qrels but not in the run.
        extra: query ids in the run but not in the qrels.
    """

    def __init__(self, missing: list[str], extra: list[str], remedy: str = "pass `make_comparable=True`"):
        self.missing, self.extra = missing, extra
        parts = []
        if missing:
            parts.append(f"{len(missing)} in the qrels but not in the run (e.g. {missing[:5]})")
        if extra:
            parts.append(f"{len(extra)} in the run but not in the qrels (e.g. {extra[:5]})")
        super().__init__("Qrels and run query ids do not match: " + "; ".join(parts) +
                         f". To score queries missing from the run as empty and drop those not in the qrels, "
                         f"{remedy}.")
