"""The independent checker of a Gavel allocation: plain numpy over the spec, no model."""

from __future__ import annotations

import math

import numpy as np

from ..errors import InputError
from ..problem import Violation
from .solve import GavelAllocation, evaluate
from .spec import GavelSpec

__all__ = ["TOL", "check_allocation"]

#: The checker's tolerance on capacities and time fractions.
TOL = 1e-6


def check_allocation(spec: GavelSpec, answer: GavelAllocation) -> list[Violation]:
    """Bounds ``0 <= x <= 1``, ``type_capacity`` (``sum_j s_j x[j, k] <= c_k``), ``time_budget``
    (``sum_k x[j, k] <= 1``), the SLO rows of ``cost_slo``, and the answer's objective recomputed from ``x``."""
    if not isinstance(answer, GavelAllocation):
        raise InputError("answer", type(answer).__name__, "must be a GavelAllocation")
    if not answer.has_solution:
        return []
    out: list[Violation] = []
    x = np.asarray(answer.x, dtype=float)
    if x.shape != spec.throughputs.shape:
        return [Violation("x", f"shape {x.shape}, the spec has {spec.throughputs.shape}")]
    for j, k in np.argwhere((x < -TOL) | (x > 1 + TOL)).tolist():
        out.append(Violation(f"x[{spec.jobs[j]}][{spec.types[k]}]", f"{x[j, k]:.6g} outside [0, 1]"))
    used = spec.scale_factors @ x
    for k in np.flatnonzero(used > spec.capacity + TOL * np.maximum(1.0, spec.capacity)).tolist():
        out.append(Violation(f"type_capacity[{spec.types[k]}]", f"{used[k]:.6g} GPUs > {spec.capacity[k]:g}"))
    tot = x.sum(axis=1)
    for j in np.flatnonzero(tot > 1 + TOL).tolist():
        out.append(Violation(f"time_budget[{spec.jobs[j]}]", f"time fractions sum to {tot[j]:.6g} > 1"))
    if spec.objective == "cost_slo" and spec.slos is not None:
        thr = (spec.throughputs * x).sum(axis=1)
        for j in np.flatnonzero(np.isfinite(spec.slos)).tolist():
            need = spec.remaining[j] / spec.slos[j]
            if thr[j] < need * (1 - TOL):
                out.append(Violation(f"slo[{spec.jobs[j]}]", f"throughput {thr[j]:.6g} < {need:.6g} steps/s needed"))
    v = evaluate(spec, x)
    if not math.isclose(v, answer.objective_value, rel_tol=1e-5, abs_tol=1e-7):
        out.append(Violation("objective", f"the answer says {answer.objective_value:.9g}, its x gives {v:.9g}"))
    return out
