"""The allocation methods: P1, Synergy-OPT, Synergy-TUNE, GPU-proportional, and the exact joint MILP."""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..errors import InputError, SolveFailedError
from ..infeasibility import explain_infeasibility
from ..model import LinearModel
from ..results import SolveResult, TerminationReason
from ..solve import solve
from .models import build_joint, build_p1_placed, build_packing_lp
from .spec import (
    JobAllocation,
    JobOptions,
    Server,
    SynergyAllocation,
    SynergyJob,
    job_options,
    make_job_allocation,
    runnable,
    total_of,
    validate,
)

__all__ = ["build_p1", "proportional", "round_largest_remainder", "solve_joint", "solve_p1", "synergy_opt", "synergy_tune"]

_EPS = 1e-9


def _check_flag(name: str, v: Any) -> None:
    if not isinstance(v, bool):
        raise InputError(name, v, "must be True or False")


def _pool(gpus: int, cpus: float, mem_gb: float) -> list[Server]:
    for nm, v in (("gpus", gpus), ("cpus", cpus), ("mem_gb", mem_gb)):
        if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) or not v > 0:
            raise InputError(nm, v, "must be a positive number")
    if float(gpus) != int(gpus):
        raise InputError("gpus", gpus, "must be an integer")
    return [Server(int(gpus), float(cpus), float(mem_gb))]


def _prepare(servers: Sequence[Server], jobs: Sequence[SynergyJob]) -> tuple[list[SynergyJob], np.ndarray, JobOptions]:
    share = validate(servers, jobs)
    mask = runnable(servers, jobs)
    run = [j for j, k in zip(jobs, mask) if k]
    return run, mask, job_options(run, share)


def _unplaced_entry(job: SynergyJob, share: tuple[float, float]) -> JobAllocation:
    from .spec import proportional_throughput

    wp, _ = proportional_throughput(job, share)
    return make_job_allocation(job, {}, 0.0, 0.0, 0.0, None, wp)


def _assemble(
    method: str,
    servers: Sequence[Server],
    jobs: Sequence[SynergyJob],
    mask: np.ndarray,
    opts: JobOptions,
    gpu: np.ndarray,
    choice: np.ndarray,
    weighted: bool,
    **kw: Any,
) -> SynergyAllocation:
    """Build the allocation from a (servers x runnable jobs) GPU matrix and each runnable job's option index."""
    per_job: dict[str, JobAllocation] = {}
    r = 0
    for k, j in enumerate(jobs):
        if not mask[k]:
            per_job[j.id] = _unplaced_entry(j, opts.share)
            continue
        o = int(choice[r])
        col = gpu[:, r]
        on = {int(i): int(col[i]) for i in np.flatnonzero(col)}
        cell = (int(opts.cell[o, 0]), int(opts.cell[o, 1]))
        per_job[j.id] = make_job_allocation(j, on, opts.cpu[o], opts.mem[o], opts.w[o], cell, opts.w_prop[r])
        r += 1
    unplaced = tuple(j.id for j, k in zip(jobs, mask) if not k)
    return SynergyAllocation(
        method=method,
        per_job=per_job,
        total_throughput=total_of(per_job, jobs, weighted),
        weighted=weighted,
        unplaced=unplaced,
        **kw,
    )


def _choice_from_y(opts: JobOptions, y: np.ndarray, n_jobs: int) -> np.ndarray:
    sel = np.flatnonzero(np.asarray(y) > 0.5)
    if sel.size != n_jobs or not np.array_equal(opts.job[sel], np.arange(n_jobs)):
        raise SolveFailedError("the solution does not pick exactly one option per job")
    return sel


def _raise_unsolved(res: SolveResult, model: LinearModel, what: str) -> None:
    """A solve without a solution: infeasible -> InfeasibleError naming the families; else SolveFailedError."""
    if res.termination.reason in (TerminationReason.INFEASIBLE, TerminationReason.INFEASIBLE_OR_UNBOUNDED):
        from ..errors import InfeasibleError

        rep = explain_infeasibility(model)
        raise InfeasibleError(f"{what}: {rep}", res, rep)
    raise SolveFailedError(f"{what}: the {res.backend} solve ended {res.termination} without a solution", res)


# ------------------------------------------------------------------------------------------------------------ P1
def build_p1(
    jobs: Sequence[SynergyJob], gpus: int, cpus: float, mem_gb: float, *, weighted: bool = False
) -> LinearModel:
    """Synergy's P1 over the runnable jobs with the cluster as one pool of ``gpus`` GPUs, ``cpus`` CPUs, ``mem_gb`` GB."""
    _check_flag("weighted", weighted)
    pool = _pool(gpus, cpus, mem_gb)
    run, _, opts = _prepare(pool, jobs)
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
) -> SynergyAllocation:
    """Solve P1 on the pool; the allocation's single "server" 0 is the pool (check it against ``[Server(gpus,
    cpus, mem_gb)]``). A time-out keeps the incumbent and says so in ``termination`` / ``optimal``."""
    _check_flag("weighted", weighted)
    pool = _pool(gpus, cpus, mem_gb)
    run, mask, opts = _prepare(pool, jobs)
    g = np.fromiter((j.gpus for j in run), dtype=np.float64, count=len(run))
    model = build_p1_placed(run, opts, g[None, :], np.array([pool[0].cpus]), np.array([pool[0].mem_gb]), weighted=weighted, group_labels=["pool"])
    res = solve(model, backend or "highs", time_limit=time_limit)
    if not res.has_solution:
        _raise_unsolved(res, model, "P1")
    choice = _choice_from_y(opts, res.values["y"], len(run))
    return _assemble(
        "p1",
        pool,
        jobs,
        mask,
        opts,
        g[None, :].astype(np.int64),
        choice,
        weighted,
        lp_bound=float(res.bound) if math.isfinite(res.bound) else float(res.objective),
        rounding_loss=0.0,
        termination=str(res.termination),
        optimal=res.termination.is_optimal,
        results={"p1": res},
        stats={"timings": {"p1": res.timings.total}},
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
) -> SynergyAllocation:
    """Synergy-OPT: P1 on the pooled cluster, the multi-node packing LP, largest-remainder rounding of the GPU
    shares, then P1 per server on the rounded placement (one model, one CPU and one GB row per server).

    ``lp_bound`` is the pooled P1 optimum (what the fractional packing achieves; an upper bound on every integral
    placement); ``rounding_loss = lp_bound - total_throughput``. ``stats`` reports split jobs and spans before
    and after rounding and the time of each stage.
    """
    _check_flag("weighted", weighted)
    run, mask, opts = _prepare(servers, jobs)
    S, J = len(servers), len(run)
    G = np.array([s.gpus for s in servers], dtype=np.int64)
    g = np.fromiter((j.gpus for j in run), dtype=np.float64, count=J)
    pool_c = float(sum(s.cpus for s in servers))
    pool_m = float(sum(s.mem_gb for s in servers))
    stage: dict[str, float] = {}
    be = backend or "highs"
    p1 = build_p1_placed(run, opts, g[None, :], np.array([pool_c]), np.array([pool_m]), weighted=weighted, group_labels=["pool"])
    r1 = solve(p1, be, time_limit=time_limit)
    stage["p1"] = r1.timings.total
    if not r1.has_solution:
        _raise_unsolved(r1, p1, "Synergy-OPT P1")
    c1 = _choice_from_y(opts, r1.values["y"], J)
    lp_bound = float(r1.bound) if math.isfinite(r1.bound) else float(r1.objective)

    pack = build_packing_lp(servers, run, g, g * opts.cpu[c1], g * opts.mem[c1], span=span)
    r2 = solve(pack, be, time_limit=time_limit)
    stage["packing"] = r2.timings.total
    if not r2.has_solution:
        _raise_unsolved(r2, pack, "Synergy-OPT packing LP")
    x = np.clip(r2.values["x"], 0.0, 1.0)
    frac = x * g[None, :]
    gpu = round_largest_remainder(frac, g.astype(np.int64), G)

    p3 = build_p1_placed(
        run,
        opts,
        gpu,
        np.array([s.cpus for s in servers], dtype=np.float64),
        np.array([s.mem_gb for s in servers], dtype=np.float64),
        weighted=weighted,
        group_labels=[f"server{i}" for i in range(S)],
        name="synergy_p1_per_server",
    )
    r3 = solve(p3, be, time_limit=time_limit)
    stage["p1_per_server"] = r3.timings.total
    if not r3.has_solution:
        _raise_unsolved(r3, p3, "Synergy-OPT per-server P1")
    c3 = _choice_from_y(opts, r3.values["y"], J)
    ok = all(r.termination.is_optimal for r in (r1, r2, r3))
    alloc = _assemble(
        "opt",
        servers,
        jobs,
        mask,
        opts,
        gpu,
        c3,
        weighted,
        lp_bound=lp_bound,
        termination=str(r3.termination) if ok else "; ".join(f"{k}: {r.termination}" for k, r in (("p1", r1), ("packing", r2), ("p1_per_server", r3))),
        optimal=ok,
        results={"p1": r1, "packing": r2, "p1_per_server": r3},
        stats={
            "timings": stage,
            "split_jobs_lp": int(((x > 1e-7).sum(axis=0) > 1).sum()),
            "spans_lp": int((x > 1e-7).sum()),
            "split_jobs": int(((gpu > 0).sum(axis=0) > 1).sum()),
            "spans": int((gpu > 0).sum()),
            "fractional_gpus_lp": int((np.abs(frac - np.round(frac)) > 1e-7).sum()),
        },
    )
    alloc.rounding_loss = lp_bound - alloc.total_throughput
    return alloc


# ------------------------------------------------------------------------------------------------ heuristics
class _Cluster:
    """Free resources per server and where each job sits (for the greedy methods)."""

    def __init__(self, servers: Sequence[Server]) -> None:
        self.cap = np.array([[s.gpus, s.cpus, s.mem_gb] for s in servers], dtype=np.float64)
        self.free = self.cap.copy()
        self.where: dict[int, dict[int, int]] = {}
        self.point: dict[int, int] = {}

    def fit_counts(self, c: float, m: float, allowed: np.ndarray | None = None) -> np.ndarray:
        """GPUs of a job at (c, m) per GPU each server can host now."""
        f = self.free
        k = np.minimum(np.floor(f[:, 0] + _EPS), np.floor(f[:, 1] / c + 1e-7) if c > 0 else np.inf)
        k = np.minimum(k, np.floor(f[:, 2] / m + 1e-7) if m > 0 else np.inf)
        k = np.maximum(k, 0).astype(np.int64)
        if allowed is not None:
            k = np.where(allowed, k, 0)
        return k

    def place(self, g: int, c: float, m: float, allowed: np.ndarray | None = None) -> dict[int, int] | None:
        """Single-GPU jobs (and jobs fitting one server): the feasible server with the least free resources;
        multi-GPU jobs otherwise: the fewest servers (most capacity first), CPU/GB split GPU-proportionally."""
        k = self.fit_counts(c, m, allowed)
        one = np.flatnonzero(k >= g)
        if one.size:
            slack = (self.free[one] / np.maximum(self.cap[one], _EPS)).sum(axis=1)
            i = int(one[np.lexsort((one, slack))[0]])
            return {i: g}
        if g == 1 or k.sum() < g:
            return None
        order = np.lexsort((np.arange(k.size), -k))
        out: dict[int, int] = {}
        need = g
        for i in order:
            if need == 0:
                break
            t = int(min(k[i], need))
            if t > 0:
                out[int(i)] = t
                need -= t
        return out

    def commit(self, r: int, on: Mapping[int, int], c: float, m: float, o: int) -> None:
        for i, t in on.items():
            self.free[i] -= (t, t * c, t * m)
        self.where[r] = dict(on)
        self.point[r] = o

    def release(self, r: int, c: float, m: float) -> dict[int, int]:
        on = self.where.pop(r)
        for i, t in on.items():
            self.free[i] += (t, t * c, t * m)
        self.point.pop(r)
        return on

    def fits_at(self, on: Mapping[int, int], c: float, m: float) -> bool:
        return all(
            t <= self.free[i, 0] + _EPS and t * c <= self.free[i, 1] + 1e-7 and t * m <= self.free[i, 2] + 1e-7
            for i, t in on.items()
        )


def _prop_option(opts: JobOptions, r: int) -> int:
    """Index of job r's option at the proportional point."""
    lo, hi = int(opts.start[r]), int(opts.start[r + 1])
    hit = np.flatnonzero(
        np.isclose(opts.cpu[lo:hi], opts.share[0], rtol=1e-9) & np.isclose(opts.mem[lo:hi], opts.share[1], rtol=1e-9)
    )
    return lo + int(hit[0])


def _ideal_option(
    opts: JobOptions, r: int, g: int, servers: Sequence[Server], threshold: float = 0.0
) -> int:
    """The job's best-case demand: among its points that fit an empty server per GPU (and reach at least the
    proportional throughput), those within ``threshold`` of the best (``W >= max W / (1 + threshold)``; with 0,
    the maximum), the fewest CPUs, then the least GB, then the highest W."""
    lo, hi = int(opts.start[r]), int(opts.start[r + 1])
    big = max(servers, key=lambda s: (s.gpus, s.cpus, s.mem_gb))
    per = min(g, big.gpus)
    idx = np.arange(lo, hi)
    ok = (opts.cpu[idx] * per <= big.cpus + 1e-9) & (opts.mem[idx] * per <= big.mem_gb + 1e-9)
    ok &= opts.w[idx] >= opts.w_prop[r] - 1e-12
    idx = idx[ok]  # never empty: the proportional point fits any server (common ratio) and reaches W_prop
    near = idx[opts.w[idx] >= opts.w[idx].max() / (1.0 + threshold) - 1e-12]
    return int(near[np.lexsort((-opts.w[near], opts.mem[near], opts.cpu[near]))[0]])


def _over_share(opts: JobOptions, o: int) -> bool:
    """Whether option ``o`` asks for more than the proportional share in CPUs or GB (per GPU)."""
    pc, pm = opts.share
    return bool(opts.cpu[o] > pc * (1 + 1e-9) or opts.mem[o] > pm * (1 + 1e-9))


def _demotion_servers(cl: _Cluster, g: int) -> np.ndarray:
    """Servers TUNE frees resources on for a job of ``g`` GPUs: one server with ``g`` GPUs free if any (the one
    with the fewest GPUs free: best fit), else servers in order of most GPUs free until they hold ``g``."""
    fg = np.floor(cl.free[:, 0] + _EPS).astype(np.int64)
    allowed = np.zeros(fg.size, dtype=bool)
    one = np.flatnonzero(fg >= g)
    if one.size:
        allowed[one[np.lexsort((one, fg[one]))[0]]] = True
        return allowed
    pick = np.lexsort((np.arange(fg.size), -fg))
    cum = np.cumsum(fg[pick])
    allowed[pick[: int(np.searchsorted(cum, g)) + 1]] = True
    return allowed


def synergy_tune(
    servers: Sequence[Server],
    jobs: Sequence[SynergyJob],
    *,
    weighted: bool = False,
    demand_threshold: float = 0.0,
) -> SynergyAllocation:
    """Synergy-TUNE (the paper's greedy heuristic, Sec. 4.3), never below the GPU-proportional share.

    Each runnable job's demand is its best-case point (:func:`_ideal_option`: the fewest CPUs, then the least GB,
    reaching the maximum throughput -- within ``demand_threshold`` of it if > 0 -- among points fitting an empty
    server). Jobs sorted by (GPUs, CPUs, GB) of that demand, largest first. Each goes to :meth:`_Cluster.place` at
    its demand. If that fails and the demand exceeds the proportional share in CPUs or GB, the job switches to the
    proportional point and retries (a demand within the share is kept, as in the published ``_make_fair_share``).
    If that fails, servers with the GPUs free are picked (:func:`_demotion_servers`) and jobs there holding more
    than their share are moved back to the proportional point one at a time (largest relative excess first, only
    when the move keeps every server within capacity) until the job fits at its (possibly switched) demand.
    Should that stall, every job over its share is moved back (then every server uses at most the share per used
    GPU and the job fits). ``stats["demotions"]`` counts the moves, ``stats["placed_at"]`` the path each job took.
    """
    t0 = time.perf_counter()
    _check_flag("weighted", weighted)
    if isinstance(demand_threshold, bool) or not isinstance(demand_threshold, (int, float)) or not (
        0.0 <= demand_threshold < math.inf
    ):
        raise InputError("demand_threshold", demand_threshold, "must be a finite number >= 0")
    run, mask, opts = _prepare(servers, jobs)
    J = len(run)
    g = np.array([j.gpus for j in run], dtype=np.int64)
    ideal = np.array([_ideal_option(opts, r, int(g[r]), servers, float(demand_threshold)) for r in range(J)], dtype=np.int64)
    prop = np.array([_prop_option(opts, r) for r in range(J)], dtype=np.int64)
    pc, pm = opts.share
    order = np.lexsort((-opts.mem[ideal] * g, -opts.cpu[ideal] * g, -g)) if J else np.zeros(0, np.int64)
    cl = _Cluster(servers)
    demotions = 0
    fallbacks = {"ideal": 0, "proportional": 0, "demote": 0}

    def over(r: int) -> float:
        o = cl.point[r]
        return max(opts.cpu[o] - pc, 0.0) / pc + max(opts.mem[o] - pm, 0.0) / pm

    def demote(r: int, check: bool) -> bool:
        o = cl.point[r]
        on = cl.where[r]
        cl.release(r, opts.cpu[o], opts.mem[o])
        if check and not cl.fits_at(on, pc, pm):
            cl.commit(r, on, opts.cpu[o], opts.mem[o], o)
            return False
        cl.commit(r, on, pc, pm, int(prop[r]))
        return True

    for r in order:  # one greedy step per job, as the heuristic is sequential
        r = int(r)
        o = int(ideal[r])
        on = cl.place(int(g[r]), opts.cpu[o], opts.mem[o])
        if on is not None:
            cl.commit(r, on, opts.cpu[o], opts.mem[o], o)
            fallbacks["ideal"] += 1
            continue
        if _over_share(opts, o):  # switch to the fair share and retry
            o = int(prop[r])
            on = cl.place(int(g[r]), pc, pm)
            if on is not None:
                cl.commit(r, on, pc, pm, o)
                fallbacks["proportional"] += 1
                continue
        c, m = opts.cpu[o], opts.mem[o]  # the demand now: the proportional point, or a demand within the share
        fallbacks["demote"] += 1
        allowed = _demotion_servers(cl, int(g[r]))
        while on is None:
            cands = [q for q in cl.where if any(allowed[i] for i in cl.where[q]) and over(q) > 1e-12]
            cands.sort(key=lambda q: (-over(q), q))
            moved = False
            for q in cands:
                if demote(q, check=True):
                    demotions += 1
                    moved = True
                    break
            if not moved:
                for q in [q for q in cl.where if over(q) > 1e-12]:
                    demote(q, check=False)
                    demotions += 1
                on = cl.place(int(g[r]), c, m)
                break
            on = cl.place(int(g[r]), c, m, allowed)
        if on is None:  # pragma: no cover - excluded by the argument in the docstring
            raise SolveFailedError(f"Synergy-TUNE could not place job {run[r].id}")
        cl.commit(r, on, c, m, o)
    gpu = np.zeros((len(servers), J), dtype=np.int64)
    choice = np.zeros(J, dtype=np.int64)
    for r in range(J):
        for i, t in cl.where[r].items():
            gpu[i, r] = t
        choice[r] = cl.point[r]
    return _assemble(
        "tune",
        servers,
        jobs,
        mask,
        opts,
        gpu,
        choice,
        weighted,
        stats={"timings": {"tune": time.perf_counter() - t0}, "demotions": demotions, "placed_at": fallbacks},
    )


def proportional(servers: Sequence[Server], jobs: Sequence[SynergyJob], *, weighted: bool = False) -> SynergyAllocation:
    """Every runnable job at its GPU-proportional point (the baseline). Largest jobs first, placed like TUNE."""
    t0 = time.perf_counter()
    _check_flag("weighted", weighted)
    run, mask, opts = _prepare(servers, jobs)
    J = len(run)
    g = np.array([j.gpus for j in run], dtype=np.int64)
    prop = np.array([_prop_option(opts, r) for r in range(J)], dtype=np.int64)
    pc, pm = opts.share
    cl = _Cluster(servers)
    for r in np.argsort(-g, kind="stable"):
        on = cl.place(int(g[r]), pc, pm)
        if on is None:  # pragma: no cover - proportional shares always fit the free GPUs
            raise SolveFailedError(f"proportional: could not place job {run[int(r)].id}")
        cl.commit(int(r), on, pc, pm, int(prop[r]))
    gpu = np.zeros((len(servers), J), dtype=np.int64)
    for r in range(J):
        for i, t in cl.where[r].items():
            gpu[i, r] = t
    return _assemble(
        "proportional", servers, jobs, mask, opts, gpu, prop, weighted, stats={"timings": {"proportional": time.perf_counter() - t0}}
    )


# -------------------------------------------------------------------------------------------------------- joint
def _joint_start(model: LinearModel, opts: JobOptions, gpu: np.ndarray, choice: np.ndarray) -> np.ndarray:
    """A full column vector for the joint model from a placement and option choice (a warm start)."""
    x = np.zeros(model.num_cols)
    b = model.blocks
    x[b["g"].start : b["g"].stop] = gpu.ravel()
    y = np.zeros(opts.size)
    y[choice] = 1.0
    x[b["y"].start : b["y"].stop] = y
    for dim, blk in (("cpu", "wc"), ("mem", "wm")):
        jl, _, lev = model.meta["levels"][dim]
        w = gpu[:, jl] * (lev[choice][jl] == np.arange(jl.size))[None, :]
        x[b[blk].start : b[blk].stop] = w.ravel()
    return x


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
) -> SynergyAllocation:
    """The exact joint MILP. With ``warm_start`` (and a backend that takes one) TUNE's allocation seeds the solve.

    A time-out returns the incumbent with ``optimal=False`` and the solver's bound in ``lp_bound``; no solution
    at all raises :class:`~schedopt.errors.SolveFailedError` carrying the SolveResult.
    """
    t0 = time.perf_counter()
    _check_flag("weighted", weighted)
    run, mask, opts = _prepare(servers, jobs)
    J = len(run)
    model = build_joint(servers, run, opts, weighted=weighted, symmetry=symmetry)
    be = backend or "highs"
    ws = None
    from ..backends import get_backend

    if warm_start and J and get_backend(be).capabilities.warm_start:
        t = synergy_tune(servers, run, weighted=weighted)
        gpu_t = t.gpu_matrix(len(servers))
        if symmetry:
            gpu_t = _sort_identical(servers, gpu_t)
        ch = _choices_of(opts, t, run)
        ws = _joint_start(model, opts, gpu_t, ch)
        if model.violations(ws):
            ws = None
    res = solve(model, be, time_limit=time_limit, mip_rel_gap=mip_rel_gap, warm_start=ws)
    if not res.has_solution:
        _raise_unsolved(res, model, "joint MILP")
    vals = res.values
    gpu = np.rint(vals["g"]).astype(np.int64)
    choice = _choice_from_y(opts, vals["y"], J)
    return _assemble(
        "joint",
        servers,
        jobs,
        mask,
        opts,
        gpu,
        choice,
        weighted,
        lp_bound=float(res.bound) if math.isfinite(res.bound) else None,
        termination=str(res.termination),
        optimal=res.termination.is_optimal,
        results={"joint": res},
        stats={"timings": {"joint": time.perf_counter() - t0, "solve": res.timings.solve}, "warm_start": ws is not None},
    )


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


def _sort_identical(servers: Sequence[Server], gpu: np.ndarray) -> np.ndarray:
    """Permute rows within runs of consecutive identical servers so GPU loads are non-increasing."""
    gpu = gpu.copy()
    S = len(servers)
    i = 0
    while i < S:
        k = i
        while k + 1 < S and servers[k + 1] == servers[i]:
            k += 1
        if k > i:
            blk = gpu[i : k + 1]
            gpu[i : k + 1] = blk[np.argsort(-blk.sum(axis=1), kind="stable")]
        i = k + 1
    return gpu
