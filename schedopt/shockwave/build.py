"""Shockwave's finite-window plan as MILPs from arrays (card: ``formulations/shockwave.md``).

The plan (``build``): blocks ``x`` (jobs x rounds, binary: job ``j`` runs in round ``t`` of the window), ``p``
(steps planned), ``u`` (piecewise-linear log of normalised progress), ``m`` (the largest remaining time after the
window); families ``capacity``, ``planned_runtime``, ``log_segment``, ``makespan`` and, at ``stage="ftf"``,
``ftf``. The ranking model (``build_rank``): block ``y``, families ``rank_count`` and ``rank_capacity``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..errors import InputError
from ..model import LinearModel
from ..problem import Formulation
from .spec import ShockwaveSpec

__all__ = ["STAGES", "ShockwaveIndex", "build", "build_rank", "objective_weights"]

#: ``ftf``: the plan with the finish-time fairness rows; ``relaxed``: without them, priorities on the utilities
STAGES = ("ftf", "relaxed")


@dataclass(frozen=True, eq=False)
class ShockwaveIndex:
    """The inverse map of a Shockwave model: ``stage`` (``"ftf"``, ``"relaxed"`` or ``"rank"``), the per-job
    ``priorities`` the objective carries (divided by their largest) and ``scale_log10``: the model's objective
    times ``10 ** scale_log10`` is the published objective (kept in log10: ``ratio ** 100`` overflows a
    coefficient, and a float past 1e308); ``counts``: the ranking model's rounds per job."""

    stage: str
    priorities: np.ndarray
    scale_log10: float
    counts: np.ndarray | None = None


def objective_weights(priorities: np.ndarray) -> tuple[np.ndarray, float]:
    """(priorities / their largest, the largest): the same argmax with coefficients a solver can take."""
    p = np.asarray(priorities, dtype=np.float64)
    if p.size == 0:
        return p, 1.0
    if not np.isfinite(p).all() or (p <= 0).any():
        raise InputError("priorities", p.tolist()[:8], "must be finite numbers > 0")
    top = float(p.max())
    return p / top, top


def build(spec: ShockwaveSpec, *, stage: str = "ftf", priorities: np.ndarray | None = None,
          priority_scale_log10: float = 0.0) -> Formulation[ShockwaveIndex]:
    """The plan at ``stage``: ``"ftf"`` (priorities 1, finish-time fairness rows) or ``"relaxed"`` (no such rows;
    ``priorities``, one per job, times ``10 ** priority_scale_log10`` multiply the log utilities:
    :func:`schedopt.shockwave.relaxed_priorities`). The objective is divided by the largest of those products.

    Examples
    --------
    Two jobs that each need both GPUs, a window of two rounds of 10 s:

    >>> import schedopt
    >>> from schedopt import shockwave
    >>> spec = shockwave.ShockwaveSpec(jobs=("a", "b"), gpus=2, scale_factors=[2, 2], step_seconds=[1.0, 1.0],
    ...     steps_done=[20, 0], steps_total=[100, 100], age=[0.0, 0.0], ftf_target=[1000.0, 1000.0], rounds=2,
    ...     round_seconds=10.0)
    >>> f = shockwave.build(spec)
    >>> schedopt.solve(f, backend="highs").termination.reason.value
    'optimal'
    """
    if not isinstance(spec, ShockwaveSpec):
        raise InputError("spec", type(spec).__name__, "must be a schedopt.shockwave.ShockwaveSpec")
    if stage not in STAGES:
        raise InputError("stage", stage, f"must be one of {', '.join(STAGES)}")
    J, T = spec.num_jobs, spec.rounds
    if priorities is None:
        prio = np.ones(J)
    else:
        prio = np.asarray(priorities, dtype=np.float64).reshape(-1)
        if prio.shape != (J,):
            raise InputError("priorities", prio.tolist()[:8], f"needs {J} numbers")
    w, top = objective_weights(prio)
    scale = math.log10(top) + float(priority_scale_log10)
    labels = list(spec.jobs)
    R = spec.round_seconds
    m = LinearModel(f"shockwave_{stage}", sense="maximize")
    m.add_variables("x", (J, T), kind="binary", labels=[labels, [f"round{t}" for t in range(T)]])
    m.add_variables("p", J, upper=spec.steps_left, labels=labels)
    m.add_variables("u", J, lower=-np.inf, labels=labels)
    m.add_variables("m", 1)
    xi = np.arange(J * T).reshape(J, T)
    jr = np.arange(J)
    # capacity: sum_j s_j x[j, t] <= G
    A = sp.csr_matrix((np.repeat(spec.scale_factors, T), (np.tile(np.arange(T), J), xi.ravel())), shape=(T, J * T))
    m.add_constraints("capacity", {"x": A}, upper=float(spec.gpus), labels=[f"round{t}" for t in range(T)])
    # planned_runtime: step_j p_j - R sum_t x[j, t] <= 0
    Ax = sp.csr_matrix((np.full(J * T, -R), (np.repeat(jr, T), xi.ravel())), shape=(J, J * T))
    Ap = sp.csr_matrix((spec.step_seconds, (jr, jr)), shape=(J, J))
    m.add_constraints("planned_runtime", {"x": Ax, "p": Ap}, upper=0.0, labels=labels)
    # log_segment: u_j <= v_i + g_i ((done_j + p_j) / total_j - b_i), one row per job and segment
    b = np.asarray(spec.log_bases)
    v = spec.log_values
    g = np.diff(v) / np.diff(b)
    S = g.size
    rows = np.arange(J * S)
    Au = sp.csr_matrix((np.ones(J * S), (rows, np.repeat(jr, S))), shape=(J * S, J))
    Ap2 = sp.csr_matrix(((-g[None, :] / spec.steps_total[:, None]).ravel(), (rows, np.repeat(jr, S))), shape=(J * S, J))
    rhs = (v[:-1][None, :] + g[None, :] * (spec.steps_done[:, None] / spec.steps_total[:, None] - b[:-1][None, :])).ravel()
    m.add_constraints("log_segment", {"u": Au, "p": Ap2}, upper=rhs,
                      labels=[f"{j}:{i}" for j in labels for i in range(S)])
    # makespan: rem_j - step_j p_j <= m
    Am = sp.csr_matrix(-np.ones((J, 1)))
    m.add_constraints("makespan", {"p": -Ap, "m": Am}, upper=-spec.remaining_seconds, labels=labels)
    if stage == "ftf":
        # age_j + R T + (rem_j - step_j p_j) / share <= rho_max target_j
        sh = spec.share
        rhs_f = spec.rho_max * spec.ftf_target - spec.age - R * T - spec.remaining_seconds / sh
        m.add_constraints("ftf", {"p": -Ap / sh}, upper=rhs_f, labels=labels)
    m.set_objective({"u": w / (J * T), "m": [-spec.k * 10.0 ** -scale]})
    return Formulation(model=m, inverse=ShockwaveIndex(stage, w, scale), problem="shockwave")


def build_rank(spec: ShockwaveSpec, counts: np.ndarray, priorities: np.ndarray) -> Formulation[ShockwaveIndex]:
    """The ranking model (``rank_in_schedule_jobs``): keep each job's number of planned rounds ``counts`` and the
    per-round capacity, and move high-priority jobs early: minimise ``sum_j prio_j / n_j sum_t t y[j, t]``."""
    if not isinstance(spec, ShockwaveSpec):
        raise InputError("spec", type(spec).__name__, "must be a schedopt.shockwave.ShockwaveSpec")
    J, T = spec.num_jobs, spec.rounds
    n = np.asarray(counts, dtype=np.float64).reshape(-1)
    if n.shape != (J,) or (n < 0).any() or (n > T).any() or (n != np.round(n)).any():
        raise InputError("counts", n.tolist()[:8], f"needs {J} whole numbers in 0..{T}")
    w, top = objective_weights(np.asarray(priorities, dtype=np.float64).reshape(-1))
    if w.shape != (J,):
        raise InputError("priorities", w.tolist()[:8], f"needs {J} numbers")
    labels = list(spec.jobs)
    m = LinearModel("shockwave_rank", sense="minimize")
    m.add_variables("y", (J, T), kind="binary", labels=[labels, [f"round{t}" for t in range(T)]])
    xi = np.arange(J * T).reshape(J, T)
    A1 = sp.csr_matrix((np.ones(J * T), (np.repeat(np.arange(J), T), xi.ravel())), shape=(J, J * T))
    m.add_constraints("rank_count", {"y": A1}, lower=n, upper=n, labels=labels)
    A = sp.csr_matrix((np.repeat(spec.scale_factors, T), (np.tile(np.arange(T), J), xi.ravel())), shape=(T, J * T))
    m.add_constraints("rank_capacity", {"y": A}, upper=float(spec.gpus), labels=[f"round{t}" for t in range(T)])
    c = np.where(n[:, None] > 0, w[:, None] / np.maximum(n, 1.0)[:, None] * np.arange(T)[None, :], 0.0)
    m.set_objective({"y": c})
    return Formulation(model=m, inverse=ShockwaveIndex("rank", w, math.log10(top), n),
                      problem="shockwave")
