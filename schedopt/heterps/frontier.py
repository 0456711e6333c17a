"""Cost versus throughput limit: the exact optimum for each floor, and an optional matplotlib plot."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import InputError
from .exact import HeterPSInfeasibleError, solve_exact
from .spec import HeterPSProblem

__all__ = ["Frontier", "frontier", "plot_frontier"]


@dataclass(frozen=True)
class Frontier:
    """``limits`` (samples/s), the optimal ``cost`` ($, nan when infeasible), the achieved ``throughput``, ``feasible``
    and, for infeasible limits, the blamed constraint family (``throughput_limit`` / ``type_limit``)."""

    limits: np.ndarray
    cost: np.ndarray
    throughput: np.ndarray
    feasible: np.ndarray
    plans: tuple[tuple[str, ...] | None, ...]
    blame: tuple[str | None, ...]


def frontier(problem: HeterPSProblem, limits: Sequence[float], method: str = "dp", backend: str | None = None) -> Frontier:
    """Solve ``problem`` exactly for each throughput floor in ``limits``."""
    lim = np.asarray(limits, dtype=float)
    if lim.ndim != 1 or lim.size == 0 or not np.isfinite(lim).all() or (lim <= 0).any():
        raise InputError("limits", limits, "must be a non-empty sequence of positive finite throughputs")
    cost = np.full(lim.size, np.nan)
    tp = np.full(lim.size, np.nan)
    feas = np.zeros(lim.size, bool)
    plans: list[tuple[str, ...] | None] = []
    blame: list[str | None] = []
    for i, x in enumerate(lim):
        try:
            r = solve_exact(problem.with_limit(float(x)), method, backend)
        except HeterPSInfeasibleError as exc:
            plans.append(None)
            blame.append(exc.family)
            continue
        cost[i], tp[i], feas[i] = r.cost, r.throughput, True
        plans.append(r.plan)
        blame.append(None)
    return Frontier(lim, cost, tp, feas, tuple(plans), tuple(blame))


def plot_frontier(front: Frontier, ax: Any = None, label: str | None = None) -> Any:
    """Plot cost against the throughput limit (matplotlib imported here only); returns the axes."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(6, 4))
    ax.step(front.limits[front.feasible], front.cost[front.feasible], where="post", marker="o", label=label)
    ax.set_xlabel("throughput limit (samples/s)")
    ax.set_ylabel("minimum cost ($)")
    ax.set_title("HeterPS: cost vs throughput limit")
    if label:
        ax.legend()
    return ax
