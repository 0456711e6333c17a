"""Helpers for tests and for users property-testing their own policies.

Hypothesis strategies live in ``schedopt.<problem>.strategies`` (hypothesis is a test extra, imported only there);
checkers that verify an allocation without any model live next to each problem (``check_*``).
"""

from __future__ import annotations

import numpy as np

from ..backends import available_backends, get_backend
from ..model import LinearModel

__all__ = ["backends_for", "market_split"]


def backends_for(model: LinearModel, *, exclude: tuple[str, ...] = ()) -> list[str]:
    """Names of the installed backends that can solve ``model`` (used to check that all of them agree)."""
    out = []
    for name in available_backends():
        if name in exclude:
            continue
        if get_backend(name).check_model(model) is None:
            out.append(name)
    return out


def market_split(seed: int = 3, m: int = 4, n: int = 36) -> LinearModel:
    """A Cornuejols-Dawande market-split instance: tiny, every x feasible through the slacks (so an incumbent comes
    at once), and proving optimality far beyond any solver in a fraction of a second. For time-limit tests."""
    rng = np.random.default_rng(seed)
    A = rng.integers(0, 100, size=(m, n))
    d = A.sum(axis=1) // 2
    model = LinearModel("market_split")
    model.add_variables("x", n, kind="binary")
    model.add_variables("s", (m, 2), upper=1e4, kind="integer")
    S = np.zeros((m, 2 * m))
    S[np.arange(m), 2 * np.arange(m)] = 1
    S[np.arange(m), 2 * np.arange(m) + 1] = -1
    model.add_constraints("split", {"x": A, "s": S}, lower=d, upper=d)
    model.set_objective({"s": np.ones((m, 2))})
    return model
