"""Helpers for tests and for users property-testing their own policies.

Hypothesis strategies live in ``schedopt.<problem>.strategies`` (hypothesis is a test extra, imported only there);
checkers that verify an allocation without any model live next to each problem (``check_*``).
"""

from __future__ import annotations

from ..backends import available_backends, get_backend
from ..model import LinearModel

__all__ = ["backends_for"]


def backends_for(model: LinearModel, *, exclude: tuple[str, ...] = ()) -> list[str]:
    """Names of the installed backends that can solve ``model`` (used to check that all of them agree)."""
    out = []
    for name in available_backends():
        if name in exclude:
            continue
        if get_backend(name).check_model(model) is None:
            out.append(name)
    return out
