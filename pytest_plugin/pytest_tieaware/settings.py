"""Where a check's limits, metrics and tie order come from: the call, then the ``tie_stability``
marker, then the command line, then the ini file. Pure Python: importing it loads no numba/torch."""
from __future__ import annotations

import argparse
from typing import Any

import pytest

from tieaware.arguments import is_limit
from tieaware.registry import OBLIVIOUS_ORDERS

LIMIT_KEYS = ("max_range", "max_abs_bias", "max_std")
BASELINE_KEYS = ("none", "device")
MARKER_KEYS = LIMIT_KEYS + ("metrics", "oblivious")
#: setting -> (command-line flag, ini key, help)
OPTIONS = {
    "max_range": ("--tie-max-range", "tie_max_range",
                  "fail a check when tie order can move a metric's mean (the sum for counts such as num_rel_ret) "
                  "by more than this (max - min)"),
    "max_abs_bias": ("--tie-max-abs-bias", "tie_max_abs_bias",
                     "fail a check when |oblivious - expected| exceeds this"),
    "max_std": ("--tie-max-std", "tie_max_std",
                "fail a check when the standard deviation over tie orderings exceeds this"),
    "metrics": ("--tie-metrics", "tie_metrics",
                "metrics of checks that name none, comma separated (e.g. ndcg@10,mrr@10)"),
    "oblivious": ("--tie-oblivious", "tie_oblivious",
                  f"tie order of the reported oblivious value: {', '.join(OBLIVIOUS_ORDERS)} (default trec_eval)"),
}


def non_negative_float(text: str) -> float:
    """argparse type: a number >= 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text!r}") from None
    if not is_limit(value):
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text!r}")
    return value


def oblivious_order(text: str) -> str:
    """argparse type: one of OBLIVIOUS_ORDERS."""
    if text not in OBLIVIOUS_ORDERS:
        raise argparse.ArgumentTypeError(f"expected one of {', '.join(OBLIVIOUS_ORDERS)}, got {text!r}")
    return text


def split_metric_names(text: str) -> list[str]:
    """'ndcg@10, mrr@10 P(rel=2,judged_only=1)@5 P.5,10' -> names; commas inside parentheses stay, and
    so do those of a trec_eval cutoff list (a comma followed by digits only: ``P.5,10``)."""
    names: list[str] = []
    current, depth, separator = "", 0, " "
    for char in text + " ":
        depth += (char == "(") - (char == ")")
        if depth == 0 and (char == "," or char.isspace()):
            if current.isdigit() and names and names[-1][-1:].isdigit() and separator == ",":
                names[-1] += "," + current
            elif current:
                names.append(current)
            current, separator = "", char
        else:
            current += char
    return names


PARSERS = {"max_range": non_negative_float, "max_abs_bias": non_negative_float, "max_std": non_negative_float,
           "metrics": split_metric_names, "oblivious": oblivious_order}


def session_defaults(config: pytest.Config) -> dict[str, Any]:
    """{setting: value} from the command line, else the ini file; unset settings are left out.
    ``tie_metrics`` is a TOML list or ini lines, each item split as ``--tie-metrics`` is."""
    defaults = {}
    for key, (_, ini_key, _) in OPTIONS.items():
        value = config.getoption(ini_key)
        ini_value = config.getini(ini_key)
        if value is None and ini_value:
            try:
                value = ([name for item in ini_value for name in split_metric_names(item)] if key == "metrics"
                         else PARSERS[key](ini_value))
            except argparse.ArgumentTypeError as error:
                raise pytest.UsageError(f"ini option {ini_key}: {error}") from None
        if value is not None:
            defaults[key] = value
    return defaults


def baseline_key(config: pytest.Config) -> str:
    """How baseline files are keyed: ``--tie-baseline-key``, else the ``tie_baseline_key`` ini key."""
    key = config.getoption("tie_baseline_key") or config.getini("tie_baseline_key").strip() or "none"
    if key not in BASELINE_KEYS:
        raise pytest.UsageError(f"ini option tie_baseline_key: expected one of {', '.join(BASELINE_KEYS)}, got {key!r}")
    return key


def marker_settings(node: pytest.Item) -> dict[str, Any]:
    """The keyword arguments of the closest ``tie_stability`` marker, validated."""
    __tracebackhide__ = True
    marker = node.get_closest_marker("tie_stability")
    if marker is None:
        return {}
    if marker.args:
        raise TypeError(f"tie_stability marker takes keyword arguments only ({', '.join(MARKER_KEYS)}), "
                        f"got positional {marker.args!r}")
    unknown = sorted(set(marker.kwargs) - set(MARKER_KEYS))
    if unknown:
        raise TypeError(f"tie_stability marker: unknown argument(s) {unknown}; use {', '.join(MARKER_KEYS)}")
    settings = dict(marker.kwargs)
    if isinstance(settings.get("metrics"), str):
        settings["metrics"] = split_metric_names(settings["metrics"])
    return settings


def resolve(call: dict[str, Any], node: pytest.Item, defaults: dict[str, Any]) -> dict[str, Any]:
    """Every setting from the first source that sets it: call, marker, command line, ini."""
    __tracebackhide__ = True
    merged = dict(defaults)
    merged.update(marker_settings(node))
    merged.update({key: value for key, value in call.items() if value is not None})
    return merged


def marker_problem(node: pytest.Item) -> str | None:
    """What is wrong with a test's ``tie_stability`` marker (None when nothing): unknown or
    positional arguments, a limit that is not a number >= 0, an unknown metric or tie order."""
    try:
        settings = marker_settings(node)
    except TypeError as error:
        return str(error)
    for key in LIMIT_KEYS:
        value = settings.get(key)
        if value is None:
            continue
        values = value.values() if isinstance(value, dict) else [value]
        for limit in values:
            if not is_limit(limit):
                return f"tie_stability marker: {key} must be a number >= 0 (or {{metric: number}}), got {limit!r}"
    if "oblivious" in settings and settings["oblivious"] not in OBLIVIOUS_ORDERS:
        return (f"tie_stability marker: oblivious must be one of {', '.join(OBLIVIOUS_ORDERS)}, "
                f"got {settings['oblivious']!r}")
    if settings.get("metrics"):
        from tieaware.errors import TieawareError
        from tieaware.metrics import parse_metrics  # pure Python: loads no numba

        try:  # as evaluate reads them: P.5,10, P, official and ir_measures objects expand
            parse_metrics(settings["metrics"])
        except TieawareError as error:
            return f"tie_stability marker: {error}"
    return None
