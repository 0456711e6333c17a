"""Solving a :class:`GavelSpec`: one LP (max-sum throughput, makespan, cost under SLOs), two (max-min fairness
with Gavel's tie-break), or a bisection over LPs (finish-time fairness); the answer, :class:`GavelAllocation`."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import InputError
from ..problem import Answer, Formulation, SolveOptions, checked_options
from ..results import SolveResult, Termination, TerminationReason, Timings
from .build import GavelIndex, build, isolated_allocation, normalized_weights
from .spec import GavelSpec

__all__ = ["FTF_TOLERANCE", "METHODS", "GavelAllocation", "decode", "evaluate", "solve_spec"]

#: the methods ``solve`` accepts: the LP (bisection over LPs for ftf) through any backend
METHODS: tuple[str, ...] = ("lp",)
#: relative width at which the finish-time-fairness bisection stops (the answer's bound is the lower end)
FTF_TOLERANCE = 1e-6


def evaluate(spec: GavelSpec, x: np.ndarray) -> float:
    """The objective of the allocation ``x`` (jobs x types) in the user's terms, from the spec alone: ``max_min``
    the smallest normalised throughput ``min_j sum_k W x`` (runnable jobs); ``ftf`` the largest
    ``rho_j = (tss + rem / thr) / (tss + rem / iso)``; ``makespan`` ``max_j rem_j / thr_j`` seconds;
    ``max_sum_throughput`` ``sum X x``; ``cost_slo`` ``sum X x / cost``."""
    x = np.asarray(x, dtype=np.float64)
    X = spec.throughputs
    thr = (X * x).sum(axis=1)
    run = (X > 0).any(axis=1)
    o = spec.objective
    if o == "max_min":
        v = (normalized_weights(spec) * x).sum(axis=1)[run]
        return float(v.min()) if v.size else 0.0
    if o == "max_sum_throughput":
        return float(thr.sum())
    if o == "cost_slo":
        return float((X * x / spec.unit_costs[None, :]).sum())
    with np.errstate(divide="ignore"):
        t_alloc = np.where(thr > 0, spec.steps_remaining / np.where(thr > 0, thr, 1.0), np.inf)
    if o == "makespan":
        return float(t_alloc.max()) if t_alloc.size else 0.0
    iso = (X * isolated_allocation(spec)).sum(axis=1)
    E = spec.time_since_start + spec.steps_remaining / iso
    rho = (spec.time_since_start + t_alloc) / E
    return float(rho.max()) if rho.size else 0.0


@dataclass(kw_only=True, eq=False)
class GavelAllocation(Answer):
    """Gavel's answer: ``x`` (jobs x types time fractions, zero rows for jobs that can run nowhere),
    ``fractions`` (job id -> {type: fraction}), ``throughput`` (job id -> steps/s it gets). ``objective_value`` is in
    the objective's own terms (:func:`evaluate`): ``t*`` for max-min, the worst rho for ftf, seconds for
    makespan, steps/s for max-sum throughput, steps/s per cost for cost under SLOs; ``bound`` proves it (for ftf:
    the bisection's lower end; for makespan: ``T0 / s`` bound). ``efficient`` is max-min's second LP."""

    objective_name: str = ""
    x: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    jobs: tuple[str, ...] = ()
    types: tuple[str, ...] = ()
    efficient: SolveResult | None = None
    iterations: int = 0

    @property
    def fractions(self) -> dict[str, dict[str, float]]:
        self.require_solution()
        return {j: {t: float(self.x[i, k]) for k, t in enumerate(self.types)} for i, j in enumerate(self.jobs)}

    def rows(self) -> list[dict[str, Any]]:
        if not self.has_solution:
            return []
        return [{"job": j, **{f"x[{t}]": round(float(self.x[i, k]), 6) for k, t in enumerate(self.types)}}
                for i, j in enumerate(self.jobs)]

    def to_dict(self) -> dict[str, Any]:
        d = super().to_dict()
        d["objective_name"] = self.objective_name
        d["iterations"] = self.iterations
        d["fractions"] = self.fractions if self.has_solution else None
        return d


def decode(spec: GavelSpec, formulation: Formulation[GavelIndex], result: SolveResult) -> GavelAllocation:
    """The answer of one solved model (the first stage for max-min, one level for ftf): ``x`` in job order."""
    inv = formulation.inverse
    x = np.zeros(spec.throughputs.shape)
    obj, bound = math.nan, math.nan
    if result.has_solution:
        xs = np.asarray(result.values["x"]).reshape(len(inv.rows), spec.num_types)
        x[inv.rows] = np.clip(xs, 0.0, 1.0)  # solver round-off only: the result passed the feasibility check
        if spec.objective == "makespan":
            s, sb = float(result.values["s"][0]), float(result.bound)
            obj = inv.ref_time / s if s > 0 else math.inf
            bound = inv.ref_time / sb if sb > 0 else 0.0
        elif spec.objective == "ftf":
            obj = evaluate(spec, x)
        else:
            obj, bound = float(result.objective), float(result.bound)
    return GavelAllocation(termination=result.termination, objective_value=obj, bound=bound, backend=result.backend,
                           method="lp", result=result, timings=result.timings, objective_name=spec.objective, x=x,
                           jobs=spec.jobs, types=spec.types)


def solve_options(options: SolveOptions | None) -> SolveOptions:
    return checked_options(options, METHODS)


def _lp(f: Formulation[GavelIndex], opts: SolveOptions) -> SolveResult:
    from ..solve import solve

    kw = opts.solve_kwargs()
    kw.pop("mip_rel_gap", None)
    return solve(f, opts.backend or "highs", **kw)


def solve_spec(spec: GavelSpec, options: SolveOptions | None = None) -> GavelAllocation:
    """Solve ``spec`` (``options.backend``: any backend that solves LPs; default ``highs``).

    Examples
    --------
    >>> from schedopt import gavel
    >>> alloc = gavel.solve_spec(gavel.generate(64, 0))
    >>> alloc.termination.reason.value, gavel.check_allocation(gavel.generate(64, 0), alloc)
    ('optimal', [])
    """
    if not isinstance(spec, GavelSpec):
        raise InputError("spec", type(spec).__name__, "must be a schedopt.gavel.GavelSpec")
    opts = solve_options(options)
    if spec.objective == "ftf":
        return _solve_ftf(spec, opts)
    t0 = time.perf_counter()
    f = build(spec)
    t1 = time.perf_counter()
    res = _lp(f, opts)
    ans = decode(spec, f, res)
    if res.has_solution and spec.objective == "max_min" and spec.efficient:
        f2 = build(spec, stage="efficient", t_min=float(res.values["t"][0]) * (1 - 1e-7))
        res2 = _lp(f2, opts)
        if res2.has_solution:
            ans.x = decode(spec, f2, res2).x
        ans.efficient = res2
    ans.timings = Timings(build=t1 - t0, solve=time.perf_counter() - t1)
    return ans


def _solve_ftf(spec: GavelSpec, opts: SolveOptions) -> GavelAllocation:
    """Minimise the worst ``rho`` by bisection: the LP at a level ``r`` (block ``z``, family ``ftf``) has
    ``z* >= 1`` exactly when every job can get the throughput ``rho <= r`` needs. Starts from ``[lo, 1]``: the
    isolated allocation itself has every ``rho = 1``; no job can beat its ``rho`` at its best lone throughput
    (``lo``). A feasible level's allocation lowers ``hi`` to its own worst ``rho``."""
    t0 = time.perf_counter()
    X, cap, s = spec.throughputs, spec.capacity, spec.scale_factors
    if not (X > 0).any(axis=1).all():
        build(spec, rho=1.0)  # raises, naming the job that can run nowhere
    best_thr = (X * np.minimum(1.0, cap[None, :] / s[:, None])).max(axis=1)
    iso = (X * isolated_allocation(spec)).sum(axis=1)
    E = spec.time_since_start + spec.steps_remaining / iso
    lo = float(((spec.time_since_start + spec.steps_remaining / best_thr) / E).max())
    x_best = np.where(X > 0, isolated_allocation(spec), 0.0)
    v_best = hi = evaluate(spec, x_best)
    last: tuple[Formulation[GavelIndex], SolveResult] | None = None
    it = 0
    t_build = 0.0
    while hi - lo > FTF_TOLERANCE * hi and it < 200:
        it += 1
        r = 0.5 * (lo + hi)
        tb = time.perf_counter()
        f = build(spec, rho=r)
        t_build += time.perf_counter() - tb
        res = _lp(f, opts)
        if not res.has_solution:
            ans = decode(spec, f, res)
            ans.iterations = it
            return ans
        if float(res.values["z"][0]) >= 1.0 - 1e-9:
            x = decode(spec, f, res).x
            v = evaluate(spec, x)
            if v < v_best:
                x_best, v_best, last = x, v, (f, res)
            hi = min(r, v)
        else:
            lo = r
    detail = f"bisection over {it} LPs: worst rho within {FTF_TOLERANCE:g} (relative) of the optimum"
    res_out = last[1] if last is not None else None
    ans = GavelAllocation(termination=Termination(TerminationReason.OPTIMAL, detail=detail),
                          objective_value=v_best, bound=min(lo, v_best), backend=opts.backend or "highs",
                          method="lp", result=res_out, objective_name="ftf", x=x_best, jobs=spec.jobs,
                          types=spec.types, iterations=it)
    ans.timings = Timings(build=t_build, solve=time.perf_counter() - t0 - t_build)
    return ans
