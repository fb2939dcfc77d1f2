"""Exceptions raised by tieaware. All are ``ValueError`` subclasses, so code
written for ranx/pytrec_eval that catches ``ValueError`` keeps working."""


class TieawareError(ValueError):
    """Base class of every error tieaware raises on bad input."""


class InputError(TieawareError):
    """Qrels or run data that cannot be evaluated; the message names the
    query, document, file line or column at fault."""


class UnknownMetricError(TieawareError):
    """A metric name in none of the supported syntaxes; the message lists them."""
