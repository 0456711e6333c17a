"""Solving a :class:`ShockwaveSpec` as the Sia artifact's ``dynamic_eisenberg_gale_scheduling`` does: the plan
with its finish-time fairness rows; when that is infeasible, the relaxed plan (priorities on the utilities of the
jobs whose projected rho exceeds ``rho_max``) and the ranking model; then the work-conserving fill of every
round (``construct_schedules``). The answer: :class:`ShockwavePlan`."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import InputError
from ..problem import Answer, Formulation, SolveOptions, checked_options
from ..results import SolveResult, Termination, TerminationReason, Timings
from .build import ShockwaveIndex, build, build_rank
from .spec import ShockwaveSpec

__all__ = ["METHODS", "ShockwavePlan", "evaluate", "fill_rounds", "ftf_unreachable", "relaxed_priorities", "solve_spec"]

#: the methods ``solve`` accepts: the MILPs through any backend that solves MILPs
METHODS: tuple[str, ...] = ("milp",)
#: the smallest normalised priority handed to a model (smaller ones are 0 to every solver's tolerances anyway)
_MIN_WEIGHT = 1e-300


def relaxed_priorities(spec: ShockwaveSpec) -> tuple[np.ndarray, np.ndarray]:
    """(projected rho per job, log10 of its priority) as ``relax_finish_time_constraints``: ``rho_j = (age_j +
    rem_j / share) / target_j``; above ``rho_max`` the priority is ``rho_j ** lam``, or ``rho_j ** priority_finish``
    when the job's remaining time is under one round; 1 otherwise. Kept in log10: ``1.5 ** 100`` is 4e17."""
    rho = (spec.age + spec.remaining_seconds / spec.share) / spec.ftf_target
    power = np.where(spec.remaining_seconds < spec.round_seconds, spec.priority_finish, spec.lam)
    logp = np.where(rho > spec.rho_max, power * np.log10(np.maximum(rho, 1e-300)), 0.0)
    return rho, logp


def ftf_unreachable(spec: ShockwaveSpec) -> np.ndarray:
    """Jobs whose ``ftf`` row fails even with the most steps the window can give them (every round:
    ``p_j = min(steps left, R T / step_j)``): one is enough to make the ftf plan infeasible, which is then known
    without a solve (an exact shortcut: the row only involves the job's own ``p_j``)."""
    p = np.minimum(spec.steps_left, spec.round_seconds * spec.rounds / spec.step_seconds)
    fin = spec.age + spec.round_seconds * spec.rounds + (spec.remaining_seconds - spec.step_seconds * p) / spec.share
    lim = spec.rho_max * spec.ftf_target
    return fin > lim + 1e-9 * np.maximum(1.0, lim)


def evaluate(spec: ShockwaveSpec, progress: np.ndarray, priorities: np.ndarray | None = None,
             k: float | None = None) -> float:
    """The published objective of planned steps ``progress`` (per job), from the spec alone: ``sum_j prio_j
    log~((done_j + p_j) / total_j) / (J T) - k max_j (rem_j - step_j p_j)`` with ``log~`` the piecewise-linear log
    (``priorities``: default 1; ``k``: default ``spec.k``)."""
    p = np.asarray(progress, dtype=np.float64)
    pr = np.ones(spec.num_jobs) if priorities is None else np.asarray(priorities, dtype=np.float64)
    if spec.num_jobs == 0:
        return 0.0
    s = (spec.steps_done + p) / spec.steps_total
    util = float((pr * spec.progress_log(s)).sum()) / (spec.num_jobs * spec.rounds)
    left = spec.remaining_seconds - spec.step_seconds * p
    return util - (spec.k if k is None else float(k)) * float(max(0.0, left.max()))


def fill_rounds(spec: ShockwaveSpec, schedule: np.ndarray) -> list[list[int]]:
    """Each window round's jobs (positions): the planned ones in job order, then, while GPUs are idle, the others
    by decreasing predicted remaining time, each if its scale factor fits (``construct_schedules``)."""
    x = np.asarray(schedule, dtype=bool).reshape(spec.num_jobs, spec.rounds)
    order = sorted(range(spec.num_jobs), key=lambda j: -float(spec.remaining_seconds[j]))  # stable, as sorted()
    out: list[list[int]] = []
    for t in range(spec.rounds):
        run = [j for j in range(spec.num_jobs) if x[j, t]]
        idle = spec.gpus - int(sum(spec.scale_factors[j] for j in run))
        if idle > 0:
            for j in order:
                if x[j, t]:
                    continue
                if spec.scale_factors[j] <= idle:
                    idle -= int(spec.scale_factors[j])
                    run.append(j)
                if idle <= 0:
                    break
        out.append(run)
    return out


@dataclass(kw_only=True, eq=False)
class ShockwavePlan(Answer):
    """Shockwave's plan for the window: ``stage`` (``"ftf"``: the plan met every finish-time fairness row;
    ``"relaxed"``: it could not, priorities and the ranking model were used), ``schedule`` (jobs x rounds, bool:
    the model's), ``progress`` (steps planned per job), ``rounds`` (job ids per round after the work-conserving
    fill: ``rounds[0]`` runs now), ``rho`` (each job's projected rho) and ``log10_priority``. ``objective_value``
    and ``bound`` are the solved plan's (for ``relaxed``: with the priorities divided by their largest,
    ``10 ** priority_scale_log10``); ``rank`` is the ranking model's result."""

    stage: str = ""
    jobs: tuple[str, ...] = ()
    schedule: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), dtype=bool))
    progress: np.ndarray = field(default_factory=lambda: np.zeros(0))
    rounds: list[list[str]] = field(default_factory=list)
    rho: np.ndarray = field(default_factory=lambda: np.zeros(0))
    log10_priority: np.ndarray = field(default_factory=lambda: np.zeros(0))
    priority_scale_log10: float = 0.0
    ftf_result: SolveResult | None = None
    ftf_unreachable: tuple[str, ...] = ()
    rank: SolveResult | None = None

    def rows(self) -> list[dict[str, Any]]:
        if not self.has_solution:
            return []
        now = set(self.rounds[0]) if self.rounds else set()
        return [{"job": j, "plan": "".join("x" if v else "." for v in self.schedule[i]),
                 "steps": round(float(self.progress[i]), 3), "now": j in now, "rho": round(float(self.rho[i]), 4)}
                for i, j in enumerate(self.jobs)]

    def to_dict(self) -> dict[str, Any]:
        d = super().to_dict()
        d["stage"] = self.stage
        d["rounds"] = [list(r) for r in self.rounds]  # the plan per job: rows()
        return d


def solve_options(options: SolveOptions | None) -> SolveOptions:
    return checked_options(options, METHODS)


def _milp(f: Formulation[ShockwaveIndex], opts: SolveOptions) -> SolveResult:
    from ..solve import solve

    return solve(f, opts.backend or "highs", options=opts)


def _schedule(spec: ShockwaveSpec, res: SolveResult, block: str) -> np.ndarray:
    return np.asarray(res.values[block]).reshape(spec.num_jobs, spec.rounds) > 0.5


def solve_spec(spec: ShockwaveSpec, options: SolveOptions | None = None) -> ShockwavePlan:
    """Solve ``spec`` (``options.backend``: any backend that solves MILPs; default ``highs``). The plan with the
    ``ftf`` rows first; if it has no solution (infeasible; or a limit hit before any, where the artifact stops),
    the relaxed plan and the ranking model. Never raises for infeasibility: the relaxed plan is always feasible
    (nothing scheduled); a plan without a solution comes back as such.

    Examples
    --------
    b has made no progress, a has done a fifth: b gets the window.

    >>> from schedopt import shockwave
    >>> spec = shockwave.ShockwaveSpec(jobs=("a", "b"), gpus=2, scale_factors=[2, 2], step_seconds=[1.0, 1.0],
    ...     steps_done=[20, 0], steps_total=[100, 100], age=[0.0, 0.0], ftf_target=[1000.0, 1000.0], rounds=2,
    ...     round_seconds=10.0)
    >>> plan = shockwave.solve_spec(spec)
    >>> plan.stage, plan.rounds, shockwave.check_plan(spec, plan)
    ('ftf', [['b'], ['b']], [])
    """
    if not isinstance(spec, ShockwaveSpec):
        raise InputError("spec", type(spec).__name__, "must be a schedopt.shockwave.ShockwaveSpec")
    opts = solve_options(options)
    backend = opts.backend or "highs"
    J, T = spec.num_jobs, spec.rounds
    rho, logp = relaxed_priorities(spec)
    t0 = time.perf_counter()
    t_build = 0.0
    plan = ShockwavePlan(termination=Termination(TerminationReason.OPTIMAL, detail="no jobs"), objective_value=0.0,
                         bound=0.0, backend=backend, method="milp", stage="ftf", jobs=spec.jobs,
                         schedule=np.zeros((J, T), dtype=bool), progress=np.zeros(J), rho=rho, log10_priority=logp)
    if J == 0:
        plan.rounds = [[] for _ in range(T)]
        plan.timings = Timings(build=0.0)
        return plan
    plan.ftf_unreachable = tuple(spec.jobs[j] for j in np.flatnonzero(ftf_unreachable(spec)).tolist())
    res: SolveResult | None = None
    if not plan.ftf_unreachable:  # else the ftf plan is infeasible without a solve: some row fails on its own
        tb = time.perf_counter()
        f = build(spec, stage="ftf")
        t_build += time.perf_counter() - tb
        res = _milp(f, opts)
        plan.ftf_result = res
    if res is None or not res.has_solution:
        top = float(logp.max())
        w = np.maximum(10.0 ** (logp - top), _MIN_WEIGHT)
        tb = time.perf_counter()
        f = build(spec, stage="relaxed", priorities=w, priority_scale_log10=top)
        t_build += time.perf_counter() - tb
        res = _milp(f, opts)
        plan.stage = "relaxed"
        plan.priority_scale_log10 = top
    plan.result = res
    plan.termination = res.termination
    if res.has_solution:
        x = _schedule(spec, res, "x")
        plan.progress = np.clip(np.asarray(res.values["p"], dtype=np.float64), 0.0, spec.steps_left)
        plan.objective_value, plan.bound = float(res.objective), float(res.bound)
        if plan.stage == "relaxed":
            counts = x.sum(axis=1).astype(np.float64)
            if counts.any():
                tb = time.perf_counter()
                fr = build_rank(spec, counts, f.inverse.priorities)
                t_build += time.perf_counter() - tb
                rr = _milp(fr, opts)
                plan.rank = rr
                if rr.has_solution:
                    x = _schedule(spec, rr, "y")
        plan.schedule = x
        plan.rounds = [[spec.jobs[j] for j in r] for r in fill_rounds(spec, x)]
    else:
        plan.objective_value, plan.bound = math.nan, float(res.bound)
    plan.timings = Timings(build=t_build, solve=time.perf_counter() - t0 - t_build)
    return plan
