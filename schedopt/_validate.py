"""Input checks that several problem packages share (errors name the path and the value)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .errors import InputError


def check_named_items(items: Sequence[Any], cls: type[Any], path: str, duplicate: str) -> list[str]:
    """Every item is a ``cls`` and the ``name`` fields are unique; returns the names in order.

    Errors: ``{path}[i]`` "must be a <cls>"; ``{path}[i].name`` with the message ``duplicate``.
    """
    names: list[str] = []
    for i, item in enumerate(items):
        if not isinstance(item, cls):
            raise InputError(f"{path}[{i}]", item, f"must be a {cls.__name__}")
        if item.name in names:
            raise InputError(f"{path}[{i}].name", item.name, duplicate)
        names.append(item.name)
    return names


def indices_of(values: Sequence[Any], vocabulary: Sequence[Any], field_of: Any, message: str) -> np.ndarray:
    """Position of each value in ``vocabulary``; an unknown value raises ``InputError(field_of(i), value, message)``."""
    pos = {v: i for i, v in enumerate(vocabulary)}
    out = np.empty(len(values), dtype=np.int64)
    for i, v in enumerate(values):
        if v not in pos:
            raise InputError(field_of(i), v, message)
        out[i] = pos[v]
    return out


def number_vector(name: str, v: Any, n: int, lo: float, default: float | None = None,
                  strict: bool = False) -> np.ndarray:
    """``v`` as ``n`` finite float64 numbers, each ``>= lo`` (``> lo`` when ``strict``); None gives ``default``
    everywhere (an :class:`~schedopt.errors.InputError` naming ``name`` when there is no default). Every error names
    the field, and the first bad entry as ``name[k]``, with its value."""
    if v is None:
        if default is None:
            raise InputError(name, v, f"is needed ({n} numbers)")
        return np.full(n, float(default))
    try:
        a = np.asarray(v, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        raise InputError(name, v, "must be numbers") from None
    if a.shape != (n,):
        raise InputError(name, list(np.asarray(v).reshape(-1))[:8], f"needs {n} numbers, has {a.size}")
    bad = np.flatnonzero(~np.isfinite(a) | (a < lo) | ((a <= lo) if strict else False))
    if bad.size:
        k = int(bad[0])
        raise InputError(f"{name}[{k}]", float(a[k]), f"must be a finite number {'>' if strict else '>='} {lo:g}")
    return a
