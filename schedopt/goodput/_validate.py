"""Input checks shared by the goodput modules (raise ``InputError`` naming field and value)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import InputError

__all__ = ["InputError", "as_float_array", "check_finite", "check_nonnegative", "check_positive"]


def _first_bad(arr: np.ndarray, mask: np.ndarray) -> Any:
    bad = arr[mask]
    return bad.flat[0].item() if bad.size else None


def as_float_array(name: str, value: Any) -> np.ndarray:
    """Convert to a float array; reject non-numeric input and NaN / inf."""
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError) as exc:
        raise InputError(name, value, f"must be numeric ({exc})") from None
    check_finite(name, arr)
    return arr


def check_finite(name: str, arr: np.ndarray) -> None:
    mask = ~np.isfinite(arr)
    if mask.any():
        raise InputError(name, _first_bad(arr, mask), "must be finite (no NaN or inf)")


def check_positive(name: str, arr: np.ndarray) -> None:
    mask = ~(arr > 0)
    if mask.any():
        raise InputError(name, _first_bad(arr, mask), "must be > 0")


def check_nonnegative(name: str, arr: np.ndarray) -> None:
    mask = ~(arr >= 0)
    if mask.any():
        raise InputError(name, _first_bad(arr, mask), "must be >= 0")


def check_integral(name: str, arr: np.ndarray) -> None:
    mask = arr != np.round(arr)
    if mask.any():
        raise InputError(name, _first_bad(arr, mask), "must be integral")


def check_placement(nodes: Any, replicas: Any) -> tuple[np.ndarray, np.ndarray]:
    """Validate node / replica counts: integral, nodes >= 1, replicas >= nodes."""
    n = as_float_array("nodes", nodes)
    r = as_float_array("replicas", replicas)
    check_integral("nodes", n)
    check_integral("replicas", r)
    if (n < 1).any():
        raise InputError("nodes", _first_bad(n, n < 1), "must be >= 1")
    try:
        n, r = np.broadcast_arrays(n, r)
    except ValueError:
        raise InputError("replicas", r.shape, f"shape does not broadcast with nodes shape {n.shape}") from None
    mask = r < n
    if mask.any():
        raise InputError("replicas", _first_bad(r, mask), "must be >= nodes (at least one GPU per node)")
    return n, r
