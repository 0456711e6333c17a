"""The independent checker of a Shockwave plan: plain numpy over the spec, no model."""

from __future__ import annotations

import math

import numpy as np

from ..errors import InputError
from ..problem import Violation
from .solve import ShockwavePlan, evaluate
from .spec import ShockwaveSpec

__all__ = ["TOL", "check_plan"]

#: The checker's tolerance.
TOL = 1e-6


def check_plan(spec: ShockwaveSpec, plan: ShockwavePlan) -> list[Violation]:
    """GPUs per round (the model's ``schedule`` and the filled ``rounds``), planned steps within ``[0, steps
    left]`` and within the rounds planned (``step_j p_j <= R n_j``), the finish-time fairness rows when the plan
    says it met them, and the objective recomputed from the planned steps."""
    if not isinstance(plan, ShockwavePlan):
        raise InputError("plan", type(plan).__name__, "must be a ShockwavePlan")
    if not plan.has_solution:
        return []
    out: list[Violation] = []
    J, T = spec.num_jobs, spec.rounds
    x = np.asarray(plan.schedule, dtype=bool)
    p = np.asarray(plan.progress, dtype=np.float64)
    if x.shape != (J, T) or p.shape != (J,):
        return [Violation("schedule", f"shape {x.shape} / {p.shape}, the spec has ({J}, {T}) / ({J},)")]
    used = spec.scale_factors @ x
    for t in np.flatnonzero(used > spec.gpus + TOL).tolist():
        out.append(Violation(f"capacity[round{t}]", f"{used[t]:g} GPUs > {spec.gpus}"))
    pos = {j: i for i, j in enumerate(spec.jobs)}
    for t, r in enumerate(plan.rounds):
        unknown = [j for j in r if j not in pos]
        if unknown or len(set(r)) != len(r):
            out.append(Violation(f"rounds[{t}]", f"unknown or repeated jobs {unknown or r}"))
            continue
        g = sum(float(spec.scale_factors[pos[j]]) for j in r)
        if g > spec.gpus + TOL:
            out.append(Violation(f"rounds[{t}]", f"{g:g} GPUs > {spec.gpus}"))
        missing = [spec.jobs[j] for j in np.flatnonzero(x[:, t]).tolist() if spec.jobs[j] not in r]
        if missing:
            out.append(Violation(f"rounds[{t}]", f"planned jobs {missing} are not run"))
    for j in np.flatnonzero((p < -TOL) | (p > spec.steps_left * (1 + TOL) + TOL)).tolist():
        out.append(Violation(f"progress[{spec.jobs[j]}]", f"{p[j]:.6g} outside [0, {spec.steps_left[j]:g}]"))
    ran = spec.step_seconds * p - spec.round_seconds * x.sum(axis=1)
    for j in np.flatnonzero(ran > TOL * spec.round_seconds * T).tolist():
        out.append(Violation(f"planned_runtime[{spec.jobs[j]}]", f"{spec.step_seconds[j] * p[j]:.6g} s planned in "
                             f"{int(x[j].sum())} rounds of {spec.round_seconds:g} s"))
    if plan.stage == "ftf":
        fin = spec.age + spec.round_seconds * T + (spec.remaining_seconds - spec.step_seconds * p) / spec.share
        lim = spec.rho_max * spec.ftf_target
        for j in np.flatnonzero(fin > lim + TOL * np.maximum(1.0, lim)).tolist():
            out.append(Violation(f"ftf[{spec.jobs[j]}]", f"finish estimate {fin[j]:.6g} s > {lim[j]:.6g} s"))
        v = evaluate(spec, p)
    else:
        w = 10.0 ** (np.asarray(plan.log10_priority) - plan.priority_scale_log10)
        v = evaluate(spec, p, w, k=spec.k * 10.0 ** (-plan.priority_scale_log10))
    if not math.isclose(v, plan.objective_value, rel_tol=1e-5, abs_tol=1e-7):
        out.append(Violation("objective", f"the plan says {plan.objective_value:.9g}, its steps give {v:.9g}"))
    return out
