"""The model-based methods: P1, Synergy-OPT and the exact joint MILP, each returning a :class:`SynergyAllocation`
(an :class:`~schedopt.problem.Answer` carrying the core termination); ``build`` / ``decode`` for the joint MILP as a
:class:`~schedopt.problem.Formulation` with a typed inverse map."""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import InputError, SolveFailedError
from ..infeasibility import explain_infeasibility
from ..model import LinearModel
from ..problem import Formulation, Structure, heuristic_termination
from ..results import Limit, SolveResult, Termination, TerminationReason, Timings
from ..solve import solve
from .base import assemble, check_flag, held_nothing, prepare, prop_option
from .improve import improve_by_neighbourhoods, joint_start, sort_identical
from .models import (
    LevelIndex,
    PointIndex,
    assign_class_gpus,
    build_integral_packing,
    build_joint,
    build_joint_points,
    build_p1_placed,
    build_packing_lp,
    level_index,
    point_index,
)
from .spec import JobOptions, Server, SynergyAllocation, SynergyJob
from .tune import synergy_tune

__all__ = [
    "JOINT_FORMULATIONS",
    "OPT_PLACEMENTS",
    "OPT_REPAIRS",
    "SynergyInverse",
    "build",
    "build_p1",
    "decode",
    "round_largest_remainder",
    "solve_joint",
    "solve_p1",
    "synergy_opt",
]

#: the placements Synergy-OPT can re-solve the per-server P1 on
OPT_PLACEMENTS = ("packing", "rounding", "tune")
#: Synergy-OPT's repair of a best placement below the P1 bound
OPT_REPAIRS = ("points", "neighbourhoods", "none")
_INFEASIBLE = (TerminationReason.INFEASIBLE, TerminationReason.INFEASIBLE_OR_UNBOUNDED)


def _pool(gpus: int, cpus: float, mem_gb: float) -> list[Server]:
    for nm, v in (("gpus", gpus), ("cpus", cpus), ("mem_gb", mem_gb)):
        if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) or not v > 0:
            raise InputError(nm, v, "must be a positive number")
    if float(gpus) != int(gpus):
        raise InputError("gpus", gpus, "must be an integer")
    return [Server(int(gpus), float(cpus), float(mem_gb))]


def _choice_from_y(opts: JobOptions, y: np.ndarray, n_jobs: int) -> np.ndarray:
    sel = np.flatnonzero(np.asarray(y) > 0.5)
    if sel.size != n_jobs or not np.array_equal(opts.job[sel], np.arange(n_jobs)):
        raise SolveFailedError("the solution does not pick exactly one option per job")
    return sel


def _stage_termination(stage: str, res: SolveResult) -> Termination:
    t = res.termination
    return Termination(t.reason, t.limit, f"{stage}: {t.detail or t.reason.value}")


def _unsolved(method: str, stage: str, res: SolveResult, model: LinearModel, weighted: bool, **kw: Any) -> SynergyAllocation:
    """The answer of a solve that holds no solution: its termination (named by stage), and for an infeasible model
    the constraint families to blame (``explanation``; ``raise_for_status`` raises InfeasibleError with it)."""
    rep = explain_infeasibility(model) if res.termination.reason in _INFEASIBLE else None
    return held_nothing(method, _stage_termination(stage, res), weighted, backend=res.backend, result=res, explanation=rep, **kw)


def _interrupted(res: SolveResult) -> bool:
    return res.termination.limit is Limit.INTERRUPTED


def _stopped(method: str, stage: str, res: SolveResult, weighted: bool, **kw: Any) -> SynergyAllocation:
    """Ctrl-C ended stage ``stage``: the later stages are not run (they would each run to their own limit), and the
    method holds nothing (NO_SOLUTION_FOUND with Limit.INTERRUPTED: no stage past it produced an allocation)."""
    term = Termination(TerminationReason.NO_SOLUTION_FOUND, Limit.INTERRUPTED,
                       f"{stage}: interrupted; the later stages were not run")
    return held_nothing(method, term, weighted, backend=res.backend, result=res, **kw)


def _bound_of(res: SolveResult) -> tuple[float, str]:
    """The solver's proven upper bound, or nan and a word why there is none (never the incumbent)."""
    if math.isfinite(res.bound):
        return float(res.bound), ""
    return math.nan, f"no finite bound proven ({res.backend} ended {res.termination})"


# ------------------------------------------------------------------------------------------------------------ P1
def _solve_p1_model(model: LinearModel, opts: JobOptions, backend: str, time_limit: float | None, warm_start: bool) -> SolveResult:
    ws = None
    if warm_start and opts.size:
        from ..backends import get_backend

        if get_backend(backend).capabilities.warm_start:
            ws = np.zeros(opts.size)
            ws[[prop_option(opts, r) for r in range(opts.start.size - 1)]] = 1.0
    return solve(model, backend, time_limit=time_limit, warm_start=ws)


def build_p1(
    jobs: Sequence[SynergyJob], gpus: int, cpus: float, mem_gb: float, *, weighted: bool = False
) -> LinearModel:
    """Synergy's P1 over the runnable jobs with the cluster as one pool of ``gpus`` GPUs, ``cpus`` CPUs, ``mem_gb`` GB."""
    check_flag("weighted", weighted)
    pool = _pool(gpus, cpus, mem_gb)
    run, _, opts = prepare(pool, jobs)
    g = np.fromiter((j.gpus for j in run), dtype=np.float64, count=len(run))
    return build_p1_placed(run, opts, g[None, :], np.array([pool[0].cpus]), np.array([pool[0].mem_gb]), weighted=weighted, group_labels=["pool"])


def solve_p1(
    jobs: Sequence[SynergyJob],
    gpus: int,
    cpus: float,
    mem_gb: float,
    *,
    backend: str | None = "highs",
    weighted: bool = False,
    time_limit: float | None = None,
    warm_start: bool = True,
) -> SynergyAllocation:
    """Solve P1 on the pool; the allocation's single "server" 0 is the pool (check it against ``[Server(gpus,
    cpus, mem_gb)]``). The answer carries the solver's termination and bound (``nan`` with a word in the
    termination's detail when the solver proved none: never the incumbent's value); a solve without a solution is
    held, not raised. ``warm_start`` (a backend that takes one): every job at its GPU-proportional point, always
    feasible, seeds the solve, so a time limit still leaves an allocation."""
    check_flag("weighted", weighted)
    check_flag("warm_start", warm_start)
    pool = _pool(gpus, cpus, mem_gb)
    run, mask, opts = prepare(pool, jobs)
    g = np.fromiter((j.gpus for j in run), dtype=np.float64, count=len(run))
    model = build_p1_placed(run, opts, g[None, :], np.array([pool[0].cpus]), np.array([pool[0].mem_gb]), weighted=weighted, group_labels=["pool"])
    res = _solve_p1_model(model, opts, backend or "highs", time_limit, warm_start)
    if not res.has_solution:
        return _unsolved("p1", "P1", res, model, weighted, stages={"p1": res})
    choice = _choice_from_y(opts, res.values["y"], len(run))
    bound, why = _bound_of(res)
    t = res.termination
    term = Termination(t.reason, t.limit, "; ".join(x for x in (t.detail, why) if x))
    where = [{0: int(j.gpus)} for j in run]
    return assemble(
        "p1", jobs, mask, opts, where, choice, weighted,
        termination=term, bound=bound, backend=res.backend, timings=res.timings, result=res,
        stages={"p1": res}, stats={"timings": {"p1": res.timings.total}},
    )


# ------------------------------------------------------------------------------------------------- rounding
def round_largest_remainder(frac: np.ndarray, demand: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    """Round fractional GPUs ``frac`` (servers x jobs, columns summing to ``demand``) to integers.

    Floors first (they always fit: column sums of floors are <= the fractional server loads <= capacity), then
    each job's remaining units go, largest fractional part first, to servers with a GPU still free; if those are
    full, to the servers with the most free GPUs (a job's server is preferred). Every column sums to its demand
    and no server exceeds ``capacity`` when ``demand.sum() <= capacity.sum()``.
    """
    frac = np.clip(np.asarray(frac, dtype=np.float64), 0.0, None)
    base = np.floor(frac + 1e-7).astype(np.int64)
    over = base.sum(axis=0) - demand
    if (over > 0).any():  # numerical excess: trim from the largest entries
        for r in np.flatnonzero(over > 0):
            for _ in range(int(over[r])):
                base[int(np.argmax(base[:, r])), r] -= 1
    free = capacity.astype(np.int64) - base.sum(axis=1)
    rem = demand.astype(np.int64) - base.sum(axis=0)
    part = frac - base
    for r in np.argsort(-demand, kind="stable"):  # one step per job with a remainder
        need = int(rem[r])
        if need <= 0:
            continue
        order = np.lexsort((np.arange(len(free)), -part[:, r]))
        for i in order:
            if need == 0:
                break
            if part[i, r] > 1e-7 and free[i] > 0:
                base[i, r] += 1
                free[i] -= 1
                need -= 1
        while need > 0:
            cand = np.flatnonzero(free > 0)
            if cand.size == 0:
                raise SolveFailedError("largest-remainder rounding ran out of GPUs (demand exceeds capacity)")
            pref = cand[np.lexsort((-free[cand], -(base[cand, r] > 0).astype(np.int64)))]
            i = int(pref[0])
            take = min(need, int(free[i]))
            base[i, r] += take
            free[i] -= take
            need -= take
    return base




# ---------------------------------------------------------------------------------------------------------- OPT
def synergy_opt(
    servers: Sequence[Server],
    jobs: Sequence[SynergyJob],
    *,
    backend: str | None = "highs",
    weighted: bool = False,
    span: str = "lp",
    time_limit: float | None = None,
    placements: Sequence[str] = ("packing", "rounding", "tune"),
    warm_start: bool = True,
    packing_time_limit: float = 2.0,
    improve_time_limit: float = 10.0,
    repair: str = "points",
) -> SynergyAllocation:
    """Synergy-OPT: P1 on the pooled cluster, the multi-node packing LP, largest-remainder rounding of the GPU
    shares, then P1 per server on the rounded placement (one model, one CPU and one GB row per server).

    ``placements`` (ours): the GPU placements the per-server P1 is solved on, the best kept: ``"packing"`` (the
    P1 choice packed with integral GPUs by :func:`~schedopt.synergy.models.build_integral_packing`, at most
    ``packing_time_limit`` seconds; when it finds a packing, OPT reaches the P1 bound), ``"rounding"`` (the paper's
    LP and its rounding), ``"tune"`` (TUNE's queue-order placement, its cells re-chosen for it).

    The answer is a heuristic (FEASIBLE, :attr:`~schedopt.Limit.HEURISTIC`) with the pooled P1 bound as ``bound``
    (``nan`` with a word when P1 proved none), except when its total reaches a proven P1 optimum: then it is the
    joint optimum and the answer says OPTIMAL. ``stats`` reports split jobs and spans before and after rounding,
    which placement won and the time of each stage.

    ``repair`` (ours; for at most ``improve_time_limit`` seconds, only while the best total is below the P1
    bound): ``"points"`` re-solves the exact point model (:func:`~schedopt.synergy.models.build_joint_points`)
    warm-started from the best placement, with the P1 optimum as ``objective_cut`` -- when it finishes, OPT is
    the joint optimum and says OPTIMAL; ``"neighbourhoods"`` re-solves groups of servers exactly
    (:func:`~schedopt.synergy.improve.improve_by_neighbourhoods`); ``"none"`` stops at the best placement.
    """
    check_flag("weighted", weighted)
    check_flag("warm_start", warm_start)
    bad = [p for p in placements if p not in OPT_PLACEMENTS] if not isinstance(placements, str) else [placements]
    if bad or not placements:
        raise InputError("placements", placements, f"must be a non-empty sequence of {OPT_PLACEMENTS}")
    if repair not in OPT_REPAIRS:
        raise InputError("repair", repair, f"must be one of {OPT_REPAIRS}")
    for nm, v in (("packing_time_limit", packing_time_limit), ("improve_time_limit", improve_time_limit)):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not v >= 0:
            raise InputError(nm, v, "must be a number of seconds >= 0")
    t0 = time.perf_counter()
    run, mask, opts = prepare(servers, jobs)
    S, J = len(servers), len(run)
    G = np.array([s.gpus for s in servers], dtype=np.int64)
    g = np.fromiter((j.gpus for j in run), dtype=np.float64, count=J)
    pool_c = float(sum(s.cpus for s in servers))
    pool_m = float(sum(s.mem_gb for s in servers))
    stage: dict[str, float] = {}
    stages: dict[str, SolveResult] = {}
    be = backend or "highs"
    p1 = build_p1_placed(run, opts, g[None, :], np.array([pool_c]), np.array([pool_m]), weighted=weighted, group_labels=["pool"])
    r1 = stages["p1"] = _solve_p1_model(p1, opts, be, time_limit, warm_start)
    stage["p1"] = r1.timings.total
    if _interrupted(r1):
        return _stopped("opt", "P1", r1, weighted, stages=stages)
    if not r1.has_solution:
        return _unsolved("opt", "P1", r1, p1, weighted, stages=stages)
    c1 = _choice_from_y(opts, r1.values["y"], J)
    bound, why = _bound_of(r1)

    cands: dict[str, np.ndarray] = {}
    x = np.zeros((S, J))
    if "packing" in placements and J:
        pts = np.stack([opts.cpu[c1], opts.mem[c1]], axis=1)
        uniq, cls = np.unique(pts, axis=0, return_inverse=True)
        cls = cls.ravel()
        need = np.bincount(cls, weights=g, minlength=uniq.shape[0])
        ip = build_integral_packing(servers, need, uniq[:, 0], uniq[:, 1], labels=[f"c{c:g},m{m:g}" for c, m in uniq])
        budget = packing_time_limit if time_limit is None else min(packing_time_limit, time_limit)
        rp = stages["integral_packing"] = solve(ip, be, time_limit=budget)
        stage["integral_packing"] = rp.timings.total
        if _interrupted(rp):
            return _stopped("opt", "integral packing", rp, weighted, stages=stages, bound=bound)
        if rp.has_solution:
            cands["packing"] = assign_class_gpus(np.rint(rp.values["n"]), cls, g.astype(np.int64))
    if "rounding" in placements:
        pack = build_packing_lp(servers, run, g, g * opts.cpu[c1], g * opts.mem[c1], span=span)
        r2 = stages["packing"] = solve(pack, be, time_limit=time_limit)
        stage["packing"] = r2.timings.total
        if _interrupted(r2):
            return _stopped("opt", "packing LP", r2, weighted, stages=stages, bound=bound)
        if not r2.has_solution:
            return _unsolved("opt", "packing LP", r2, pack, weighted, stages=stages, bound=bound)
        x = np.clip(r2.values["x"], 0.0, 1.0)
        cands["rounding"] = round_largest_remainder(x * g[None, :], g.astype(np.int64), G)
    if "tune" in placements:
        t = synergy_tune(servers, run, weighted=weighted)
        cands["tune"] = t.gpu_matrix(S)
    best: tuple[float, str, np.ndarray, np.ndarray, SolveResult] | None = None
    for name, gpu in cands.items():
        p3 = build_p1_placed(
            run, opts, gpu,
            np.array([s.cpus for s in servers], dtype=np.float64),
            np.array([s.mem_gb for s in servers], dtype=np.float64),
            weighted=weighted, group_labels=[f"server{i}" for i in range(S)], name="synergy_p1_per_server",
        )
        r3 = stages[f"p1_per_server[{name}]"] = solve(p3, be, time_limit=time_limit)
        stage[f"p1_per_server[{name}]"] = r3.timings.total
        if _interrupted(r3):
            return _stopped("opt", f"P1 per server [{name}]", r3, weighted, stages=stages, bound=bound)
        if not r3.has_solution:
            continue
        c3 = _choice_from_y(opts, r3.values["y"], J)
        val = float(r3.objective)
        if best is None or val > best[0] + 1e-9:
            best = (val, name, gpu, c3, r3)
    if best is None:
        last = stages[f"p1_per_server[{next(iter(cands))}]"]
        return _unsolved("opt", "per-server P1", last, p1, weighted, stages=stages, bound=bound)
    val, won, gpu, c3, r3 = best
    improve: dict[str, Any] = {}
    proven = False
    weight = opts.w * (g[opts.job] if weighted else 1.0)
    at_bound = math.isfinite(bound) and val >= bound - 1e-9 * max(1.0, abs(bound))
    budget = improve_time_limit if time_limit is None else min(improve_time_limit, time_limit)
    if repair == "points" and budget > 0 and not at_bound:
        form = _joint_formulation(servers, run, weighted, True, bound if r1.termination.is_optimal and math.isfinite(bound) else None, "points")
        ws = _warm_start(form, servers, gpu, c3)
        rr = stages["repair"] = solve(form.model, be, time_limit=budget, warm_start=ws)
        stage["repair"] = rr.timings.total
        if rr.has_solution:
            fixed = decode(None, form, rr)
            if fixed.objective_value > val + 1e-9:
                gpu = fixed.gpu_matrix(S)
                c3 = _choices_of(opts, fixed, run)
                val = float(weight[c3].sum())
                won += "+points"
            if rr.termination.is_optimal:
                proven = True
                bound = min(bound, float(rr.bound)) if math.isfinite(bound) else float(rr.bound)
        improve = {"repair": rr.termination.reason.value}
    elif repair == "neighbourhoods" and budget > 0 and not at_bound:
        gpu, c3, improve = improve_by_neighbourhoods(
            servers, run, opts, gpu, c3, weighted=weighted, backend=be, time_limit=budget,
            target=bound if math.isfinite(bound) else None,
        )
        val = float(weight[c3].sum())
        if improve["improved"]:
            won += "+neighbourhoods"
    notes = [f"{k}: {v.termination.reason.value}" for k, v in stages.items() if not v.termination.is_optimal]
    if proven:
        term = Termination(TerminationReason.OPTIMAL, None, f"the point model proved it the joint optimum ({won} placement)")
    elif r1.termination.is_optimal and math.isfinite(bound) and val >= bound - 1e-9 * max(1.0, abs(bound)):
        term = Termination(TerminationReason.OPTIMAL, None, f"reaches the proven P1 optimum ({won} placement)")
    else:
        detail = f"P1 + {won} placement + P1 per server: no optimality proof"
        term = heuristic_termination(detail + "".join(f"; {n}" for n in notes) + (f"; {why}" if why else ""))
    where = [{int(i): int(gpu[i, r]) for i in np.flatnonzero(gpu[:, r])} for r in range(J)]
    return assemble(
        "opt", jobs, mask, opts, where, c3, weighted,
        termination=term, bound=bound, backend=r3.backend,
        timings=Timings(build=0.0, solve=time.perf_counter() - t0), result=r3, stages=stages,
        stats={
            "timings": stage,
            "placement": won,
            "improve": improve,
            "split_jobs_lp": int(((x > 1e-7).sum(axis=0) > 1).sum()),
            "spans_lp": int((x > 1e-7).sum()),
            "split_jobs": int(((gpu > 0).sum(axis=0) > 1).sum()),
            "spans": int((gpu > 0).sum()),
            "fractional_gpus_lp": int((np.abs(x * g[None, :] - np.round(x * g[None, :])) > 1e-7).sum()),
        },
    )


# -------------------------------------------------------------------------------------------------------- joint
#: the joint MILP's formulations: over per-GPU points (default; exact, fast) or over jobs and levels
JOINT_FORMULATIONS = ("points", "jobs")


@dataclass(frozen=True, eq=False)
class SynergyInverse:
    """The joint MILP's typed inverse map: the jobs it was built over and how its columns map back.

    ``jobs`` are every job of the instance in input order, ``runnable`` their mask, ``options`` the valid options
    of the runnable jobs (the ``y`` columns), ``formulation`` which model it is: ``"points"`` (``points``: the
    per-GPU point of each option, the ``n`` columns) or ``"jobs"`` (``cpu_levels`` / ``mem_levels``: the per-job
    CPU and GB levels, the ``wc`` / ``wm`` columns); ``weighted`` the objective; ``p1_bound`` the pooled P1
    optimum when it was added as ``objective_cut``."""

    servers: tuple[Server, ...]
    jobs: tuple[SynergyJob, ...]
    runnable: np.ndarray
    options: JobOptions
    weighted: bool
    formulation: str = "points"
    points: PointIndex | None = None
    cpu_levels: LevelIndex | None = None
    mem_levels: LevelIndex | None = None
    p1_bound: float | None = None


def _joint_formulation(
    servers: Sequence[Server],
    jobs: Sequence[SynergyJob],
    weighted: bool,
    symmetry: bool,
    p1_bound: float | None = None,
    formulation: str = "points",
) -> Formulation[SynergyInverse]:
    if formulation not in JOINT_FORMULATIONS:
        raise InputError("formulation", formulation, f"must be one of {JOINT_FORMULATIONS}")
    run, mask, opts = prepare(servers, jobs)
    if formulation == "points":
        model = build_joint_points(servers, run, opts, weighted=weighted, symmetry=symmetry, p1_bound=p1_bound)
        inv = SynergyInverse(tuple(servers), tuple(jobs), mask, opts, weighted, "points", points=point_index(opts), p1_bound=p1_bound)
    else:
        model = build_joint(servers, run, opts, weighted=weighted, symmetry=symmetry, p1_bound=p1_bound)
        inv = SynergyInverse(
            tuple(servers), tuple(jobs), mask, opts, weighted, "jobs",
            cpu_levels=level_index(opts, opts.cpu), mem_levels=level_index(opts, opts.mem), p1_bound=p1_bound,
        )
    return Formulation(model=model, inverse=inv, structure=Structure.GENERAL, problem="synergy")


def build(spec: Any, *, symmetry: bool = True, formulation: str = "points") -> Formulation[SynergyInverse]:
    """The exact joint MILP of a :class:`~schedopt.synergy.SynergyInstance` as a Formulation: its model and the
    typed inverse map :class:`SynergyInverse` (``formulation``: ``"points"``, the default, or ``"jobs"``).

    Examples
    --------
    >>> import schedopt
    >>> from schedopt import synergy
    >>> inst = synergy.generate_instance(16, 0)
    >>> f = synergy.build(inst)
    >>> f.model.name
    'synergy_joint_points'
    >>> res = schedopt.solve(f, backend="highs")
    >>> round(synergy.decode(inst, f, res).total_throughput, 3)
    7.25
    """
    return _joint_formulation(spec.servers, spec.jobs, spec.weighted, symmetry, None, formulation)


def decode(spec: Any, formulation: Formulation[SynergyInverse], result: SolveResult) -> SynergyAllocation:
    """The joint MILP's answer: the allocation when a solution is held, else the termination alone (held, not
    raised; an infeasible model names the constraint families to blame in ``explanation``)."""
    inv = formulation.inverse
    if not result.has_solution:
        return _unsolved("joint", "joint MILP", result, formulation.model, inv.weighted, stages={"joint": result})
    vals = result.values
    opts = inv.options
    J = int(opts.start.size - 1)
    choice = _choice_from_y(opts, vals["y"], J)
    if inv.formulation == "points":
        assert inv.points is not None
        g = np.array([j.gpus for j, k in zip(inv.jobs, inv.runnable) if k], dtype=np.int64)
        gpu = assign_class_gpus(np.rint(vals["n"]), inv.points.of_option[choice], g)
    else:
        gpu = np.rint(vals["g"]).astype(np.int64)
    where = [{int(i): int(gpu[i, r]) for i in np.flatnonzero(gpu[:, r])} for r in range(J)]
    bound, why = _bound_of(result)
    if inv.p1_bound is not None and not (bound <= inv.p1_bound):  # the P1 optimum bounds the joint too
        bound, why = inv.p1_bound, ("bound: the pooled P1 optimum" if why else "")
    t = result.termination
    term = Termination(t.reason, t.limit, "; ".join(x for x in (t.detail, why) if x))
    return assemble(
        "joint", inv.jobs, inv.runnable, inv.options, where, choice, inv.weighted,
        termination=term, bound=bound, backend=result.backend, timings=result.timings, result=result,
        stages={"joint": result}, stats={"formulation": inv.formulation},
    )


def _warm_start(form: Formulation[SynergyInverse], servers: Sequence[Server], gpu: np.ndarray, choice: np.ndarray) -> np.ndarray | None:
    """A warm start for either joint formulation from a placement (servers x runnable jobs) and option choice;
    None when it breaks a row (e.g. the symmetry order cannot be met)."""
    model, inv = form.model, form.inverse
    gpu = sort_identical(servers, gpu)
    if inv.formulation == "points":
        assert inv.points is not None
        x = np.zeros(model.num_cols)
        b = model.blocks
        y = np.zeros(inv.options.size)
        y[choice] = 1.0
        x[b["y"].start : b["y"].stop] = y
        K = inv.points.cpu.size
        n = np.zeros((gpu.shape[0], K))
        np.add.at(n.T, inv.points.of_option[choice], gpu.T)
        x[b["n"].start : b["n"].stop] = n.ravel()
    else:
        assert inv.cpu_levels is not None and inv.mem_levels is not None
        x = joint_start(model, inv.options, inv.cpu_levels, inv.mem_levels, gpu, choice)
    return None if model.violations(x) else x


def solve_joint(
    servers: Sequence[Server],
    jobs: Sequence[SynergyJob],
    *,
    backend: str | None = "highs",
    weighted: bool = False,
    time_limit: float | None = None,
    mip_rel_gap: float | None = 1e-6,
    warm_start: bool = True,
    symmetry: bool = True,
    formulation: str = "points",
    p1_cut: bool = False,
) -> SynergyAllocation:
    """The exact joint MILP (placement and CPU / GB at once).

    ``formulation="points"`` (default, :func:`~schedopt.synergy.models.build_joint_points`): P1's choice plus the
    GPUs at each per-GPU point on each server -- exact, and it proves the optimum of the 15 comparison sets (up to
    32 servers) in seconds. ``formulation="jobs"`` (:func:`~schedopt.synergy.models.build_joint`): GPUs per server
    and job with CPU / GB levels (the original model; slow past 16 servers). With ``warm_start`` (and a backend
    that takes one) TUNE's allocation seeds the solve. ``p1_cut`` solves the pooled P1 first and adds its optimum
    as ``objective_cut`` (valid; it also bounds the answer when the MILP stops early).

    A time-out holds the incumbent (FEASIBLE with the time limit) and the best proven bound; no solution at all is
    held too (``raise_for_status()`` raises, reading the allocation raises NoSolutionError).
    """
    t0 = time.perf_counter()
    check_flag("weighted", weighted)
    check_flag("warm_start", warm_start)
    check_flag("p1_cut", p1_cut)
    if formulation not in JOINT_FORMULATIONS:
        raise InputError("formulation", formulation, f"must be one of {JOINT_FORMULATIONS}")
    run, _, opts = prepare(servers, jobs)
    be = backend or "highs"
    from ..backends import get_backend

    p1_bound = None
    if p1_cut and run:
        g = np.fromiter((j.gpus for j in run), dtype=np.float64, count=len(run))
        p1 = build_p1_placed(run, opts, g[None, :], np.array([sum(s.cpus for s in servers)]), np.array([sum(s.mem_gb for s in servers)]),
                             weighted=weighted, group_labels=["pool"])
        r1 = _solve_p1_model(p1, opts, be, time_limit, True)
        if r1.termination.is_optimal and math.isfinite(r1.bound):
            p1_bound = float(r1.bound)
    form = _joint_formulation(servers, jobs, weighted, symmetry, p1_bound, formulation)
    ws = None
    if warm_start and run and get_backend(be).capabilities.warm_start:
        t = synergy_tune(servers, run, weighted=weighted)
        ws = _warm_start(form, servers, t.gpu_matrix(len(servers)), _choices_of(opts, t, run))
    left = None if time_limit is None else max(0.0, time_limit - (time.perf_counter() - t0))
    res = solve(form.model, be, time_limit=left, mip_rel_gap=mip_rel_gap, warm_start=ws)
    ans = decode(None, form, res)
    ans.stats.update({"timings": {"joint": time.perf_counter() - t0, "solve": res.timings.solve}, "warm_start": ws is not None, "p1_bound": p1_bound})
    return ans


def _choices_of(opts: JobOptions, alloc: SynergyAllocation, run: Sequence[SynergyJob]) -> np.ndarray:
    out = np.zeros(len(run), dtype=np.int64)
    for r, j in enumerate(run):
        a = alloc.per_job[j.id]
        lo, hi = int(opts.start[r]), int(opts.start[r + 1])
        hit = np.flatnonzero(
            np.isclose(opts.cpu[lo:hi], a.cpu_per_gpu, rtol=1e-12) & np.isclose(opts.mem[lo:hi], a.mem_per_gpu, rtol=1e-12)
        )
        out[r] = lo + int(hit[0])
    return out
