"""What kind of input an object is, told without importing the library that made it.

ranx and pandas are recognised through ``sys.modules``: an object can only be a ranx ``Run`` or a
pandas ``DataFrame`` when its library was imported, so reading a dict never imports either.
"""
from __future__ import annotations

import io
import os
import sys
from collections.abc import Iterable, Mapping


def is_ranx_qrels(obj) -> bool:
    """True for a ranx ``Qrels``, without importing ranx when nobody has."""
    ranx = sys.modules.get("ranx")
    return ranx is not None and isinstance(obj, ranx.Qrels)


def is_ranx_run(obj) -> bool:
    """True for a ranx ``Run``, without importing ranx when nobody has."""
    ranx = sys.modules.get("ranx")
    return ranx is not None and isinstance(obj, ranx.Run)


def is_dataframe(obj) -> bool:
    """True for a pandas ``DataFrame``, without importing pandas when nobody has."""
    pd = sys.modules.get("pandas")
    return pd is not None and isinstance(obj, pd.DataFrame)


def is_file_object(obj) -> bool:
    """True for an open file or ``io.StringIO``: what has ``read`` and ``readline``."""
    return isinstance(obj, io.IOBase) or hasattr(obj, "read") and hasattr(obj, "readline")


def is_records(obj) -> bool:
    """An iterable that is not a mapping, a path or text: a list, iterator or generator of records."""
    return isinstance(obj, Iterable) and not isinstance(obj, (Mapping, str, bytes, os.PathLike))
