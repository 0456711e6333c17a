"""What every Synergy method shares: the runnable jobs and their options, the free-resource state of the greedy
methods, and the assembly of a :class:`~schedopt.synergy.SynergyAllocation` from a placement.

Internal to the package (not re-exported by ``schedopt.synergy``); names are public so sibling modules import
no underscored name.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..errors import InputError
from ..results import SolveResult, Termination, Timings
from .spec import (
    JobAllocation,
    JobOptions,
    Server,
    SynergyAllocation,
    SynergyJob,
    job_cache,
    job_options,
    make_job_allocation,
    proportional_throughput,
    runnable,
    total_of,
    validate,
)

__all__ = [
    "EPS",
    "ClusterState",
    "assemble",
    "check_flag",
    "held_nothing",
    "ideal_option",
    "largest_server",
    "over_share",
    "prepare",
    "prop_option",
]

#: The tolerance of Synergy's comparisons of resources.
EPS = 1e-9


def check_flag(name: str, v: Any) -> None:
    """Raise ``InputError(name, v, ...)`` unless ``v`` is a bool."""
    if not isinstance(v, bool):
        raise InputError(name, v, "must be True or False")


def prepare(
    servers: Sequence[Server], jobs: Sequence[SynergyJob], *, all_jobs: bool = False
) -> tuple[list[SynergyJob], np.ndarray, JobOptions]:
    """Validate; the jobs a method considers (the runnable ones, or every job with ``all_jobs``), their mask and
    their valid options."""
    share = validate(servers, jobs)
    mask = np.ones(len(jobs), dtype=bool) if all_jobs else runnable(servers, jobs)
    run = [j for j, k in zip(jobs, mask) if k]
    return run, mask, job_options(run, share)


def unplaced_entry(job: SynergyJob, share: tuple[float, float]) -> JobAllocation:
    wp, _ = proportional_throughput(job, share)
    return make_job_allocation(job, {}, 0.0, 0.0, 0.0, None, wp)


def assemble(
    method: str,
    jobs: Sequence[SynergyJob],
    mask: np.ndarray,
    opts: JobOptions,
    where: Sequence[Mapping[int, int]],
    choice: np.ndarray,
    weighted: bool,
    *,
    termination: Termination,
    bound: float = math.nan,
    backend: str = "",
    timings: Timings | None = None,
    result: SolveResult | None = None,
    stages: dict[str, SolveResult] | None = None,
    stats: dict[str, Any] | None = None,
    skipped: Sequence[str] = (),
) -> SynergyAllocation:
    """The allocation from each considered job's GPUs per server (``where[r]``, empty: not placed) and option."""
    per_job: dict[str, JobAllocation] = {}
    r = 0
    for k, j in enumerate(jobs):
        if not mask[k]:
            per_job[j.id] = unplaced_entry(j, opts.share)
            continue
        on = where[r]
        if not on:
            per_job[j.id] = make_job_allocation(j, {}, 0.0, 0.0, 0.0, None, opts.w_prop[r])
        else:
            o = int(choice[r])
            cell = (int(opts.cell[o, 0]), int(opts.cell[o, 1]))
            per_job[j.id] = make_job_allocation(j, on, opts.cpu[o], opts.mem[o], opts.w[o], cell, opts.w_prop[r])
        r += 1
    unplaced = tuple(jid for jid, a in per_job.items() if not a.placed)
    return SynergyAllocation(
        termination=termination,
        objective_value=total_of(per_job, jobs, weighted),
        bound=bound,
        backend=backend,
        method=method,
        timings=timings or Timings(),
        result=result,
        _per_job=per_job,
        _unplaced=unplaced,
        _skipped=tuple(skipped),
        weighted=weighted,
        stages=dict(stages or {}),
        stats=dict(stats or {}),
    )


def held_nothing(
    method: str,
    termination: Termination,
    weighted: bool,
    *,
    backend: str = "",
    bound: float = math.nan,
    result: SolveResult | None = None,
    stages: dict[str, SolveResult] | None = None,
    timings: Timings | None = None,
    explanation: Any = None,
    stats: dict[str, Any] | None = None,
) -> SynergyAllocation:
    """An answer without a solution (a solve that ended infeasible, at a limit without an incumbent, or failed)."""
    return SynergyAllocation(
        termination=termination,
        bound=bound,
        backend=backend,
        method=method,
        timings=timings or Timings(),
        result=result,
        weighted=weighted,
        stages=dict(stages or {}),
        stats=dict(stats or {}),
        explanation=explanation,
    )


# ------------------------------------------------------------------------------------------ option helpers
def prop_option(opts: JobOptions, r: int) -> int:
    """Index of job r's option at the proportional point."""
    return int(opts.prop[r])


def largest_server(servers: Sequence[Server]) -> Server:
    """The server with the most GPUs (then CPUs, then memory)."""
    return max(servers, key=lambda s: (s.gpus, s.cpus, s.mem_gb))


def ideal_option(
    opts: JobOptions, r: int, g: int, servers: Sequence[Server], threshold: float = 0.0, job: SynergyJob | None = None,
    big: Server | None = None,
) -> int:
    """The job's best-case demand: among its points that fit an empty server per GPU (and reach at least the
    proportional throughput), those within ``threshold`` of the best (``W >= max W / (1 + threshold)``; with 0,
    the maximum), the fewest CPUs, then the least GB, then the highest W. (Cached on ``job`` when given.)"""
    lo, hi = int(opts.start[r]), int(opts.start[r + 1])
    big = big or largest_server(servers)
    per = min(g, big.gpus)
    key = ("ideal", opts.share, big.cpus / per, big.mem_gb / per, threshold)
    if job is not None and key in job_cache(job):
        return lo + job_cache(job)[key]
    idx = np.arange(lo, hi)
    ok = (opts.cpu[idx] * per <= big.cpus + 1e-9) & (opts.mem[idx] * per <= big.mem_gb + 1e-9)
    ok &= opts.w[idx] >= opts.w_prop[r] - 1e-12
    idx = idx[ok]  # never empty: the proportional point fits any server (common ratio) and reaches W_prop
    near = idx[opts.w[idx] >= opts.w[idx].max() / (1.0 + threshold) - 1e-12]
    out = int(near[np.lexsort((-opts.w[near], opts.mem[near], opts.cpu[near]))[0]])
    if job is not None:
        job_cache(job)[key] = out - lo
    return out


def over_share(opts: JobOptions, o: int) -> bool:
    """Whether option ``o`` asks for more than the proportional share in CPUs or GB (per GPU)."""
    pc, pm = opts.share
    return bool(opts.cpu[o] > pc * (1 + 1e-9) or opts.mem[o] > pm * (1 + 1e-9))


# ------------------------------------------------------------------------------------------ cluster state
class ClusterState:
    """Free resources per server, where each job sits and at which option (for the greedy methods).

    ``where[r]`` maps server -> GPUs of job ``r``; ``point[r]`` is its option; ``on_server[i]`` lists the jobs
    placed on server ``i`` in placement order (the published ``server_job_schedule``).
    """

    def __init__(self, servers: Sequence[Server], opts: JobOptions) -> None:
        self.cap = np.array([[s.gpus, s.cpus, s.mem_gb] for s in servers], dtype=np.float64)
        self.free = self.cap.copy()
        self.opts = opts
        self.where: dict[int, dict[int, int]] = {}
        self.point: dict[int, int] = {}
        self.on_server: list[list[int]] = [[] for _ in servers]

    def free_gpus(self) -> np.ndarray:
        return np.floor(self.free[:, 0] + EPS).astype(np.int64)

    def fit_counts(self, c: float, m: float, allowed: np.ndarray | None = None) -> np.ndarray:
        """GPUs of a job at (c, m) per GPU each server can host now."""
        f = self.free
        k = np.minimum(np.floor(f[:, 0] + EPS), np.floor(f[:, 1] / c + 1e-7) if c > 0 else np.inf)
        k = np.minimum(k, np.floor(f[:, 2] / m + 1e-7) if m > 0 else np.inf)
        k = np.maximum(k, 0).astype(np.int64)
        if allowed is not None:
            k = np.where(allowed, k, 0)
        return k

    # -- placement rules
    def place_fewest_servers(self, g: int, c: float, m: float, allowed: np.ndarray | None = None) -> dict[int, int] | None:
        """The paper's rule (largest-first TUNE): a job that fits one server goes to the feasible server with the
        least free resources; a multi-GPU job otherwise spreads over the fewest servers (most hostable first)."""
        k = self.fit_counts(c, m, allowed)
        one = np.flatnonzero(k >= g)
        if one.size:
            slack = (self.free[one] / np.maximum(self.cap[one], EPS)).sum(axis=1)
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

    def place_fewest_free_gpus(self, g: int, c: float, m: float) -> dict[int, int] | None:
        """The published rule (``allocate_synergy_placement``): a multi-GPU job goes whole to the server with the
        fewest free GPUs that fits all of it; otherwise (and for 1-GPU jobs) GPUs are taken from servers in order
        of fewest free GPUs (ties: lowest index), as many as fit at (c, m) on each, until the job has ``g``."""
        fg = self.free_gpus()
        k = self.fit_counts(c, m)
        if g > 1:
            one = np.flatnonzero((fg > 0) & (k >= g))
            if one.size:
                return {int(one[np.lexsort((one, fg[one]))[0]]): g}
        idx = np.flatnonzero(fg > 0)
        out: dict[int, int] = {}
        need = g
        for i in idx[np.lexsort((idx, fg[idx]))]:
            t = int(min(k[i], need))
            if t > 0:
                out[int(i)] = t
                need -= t
            if need == 0:
                return out
        return None

    # -- state changes
    def commit(self, r: int, on: Mapping[int, int], o: int) -> None:
        c, m = self.opts.cpu[o], self.opts.mem[o]
        for i, t in on.items():
            self.free[i] -= (t, t * c, t * m)
            if r not in self.on_server[i]:
                self.on_server[i].append(r)
        self.where[r] = dict(on)
        self.point[r] = o

    def move(self, r: int, o: int, *, check: bool) -> bool:
        """Move placed job ``r`` to option ``o`` on the same GPUs; with ``check``, only if every server stays within
        capacity (else nothing changes and False is returned)."""
        old = self.point[r]
        dc = self.opts.cpu[o] - self.opts.cpu[old]
        dm = self.opts.mem[o] - self.opts.mem[old]
        on = self.where[r]
        if check and not all(t * dc <= self.free[i, 1] + 1e-7 and t * dm <= self.free[i, 2] + 1e-7 for i, t in on.items()):
            return False
        for i, t in on.items():
            self.free[i, 1] -= t * dc
            self.free[i, 2] -= t * dm
        self.point[r] = o
        return True

    def excess(self, r: int) -> float:
        """Relative excess of job r's point over the share, summed over CPUs and GB."""
        o = self.point[r]
        pc, pm = self.opts.share
        return max(self.opts.cpu[o] - pc, 0.0) / pc + max(self.opts.mem[o] - pm, 0.0) / pm

    def arrays(self, n_jobs: int) -> tuple[list[dict[int, int]], np.ndarray]:
        """(where per job, option per job) for :func:`assemble` (unplaced jobs: empty, option 0)."""
        where = [dict(self.where.get(r, {})) for r in range(n_jobs)]
        choice = np.array([self.point.get(r, 0) for r in range(n_jobs)], dtype=np.int64)
        return where, choice
