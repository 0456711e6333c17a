"""Synergy problem data: servers, jobs with resource-sensitivity matrices, and the allocation every method returns.

A job's *options* are the (CPUs per GPU, GB per GPU) points it may be given: every cell of its grid and, when the
GPU-proportional point (C/G, M/G) is not a grid cell, that point too, with its throughput interpolated bilinearly
from the grid (see :func:`proportional_throughput`). Giving every job the proportional point as an option is what
makes "at least proportional" always satisfiable, as in Synergy where the proportional cell is on the grid.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import InputError
from ..problem import Answer, ViolationError, to_jsonable

__all__ = [
    "MAX_GPUS",
    "AllocationCheckError",
    "JobAllocation",
    "JobOptions",
    "Server",
    "SynergyAllocation",
    "SynergyInstance",
    "SynergyJob",
    "check_number",
    "job_options",
    "proportional_share",
    "proportional_throughput",
    "runnable",
    "validate",
]

_RTOL = 1e-9

#: the most GPUs of a Synergy cluster (and of one server): a larger count is an InputError, not a hang
MAX_GPUS = 2**20


@dataclass(frozen=True)
class Server:
    """One server: ``gpus`` GPUs, ``cpus`` CPU cores, ``mem_gb`` GB of memory."""

    gpus: int
    cpus: float
    mem_gb: float


@dataclass(frozen=True, eq=False)
class SynergyJob:
    """A job asking for ``gpus`` GPUs with its per-GPU resource-sensitivity matrix.

    ``cpu_grid[a]`` CPUs per GPU and ``mem_grid[b]`` GB per GPU (ascending); ``throughput[a, b]`` is the normalised
    per-GPU throughput there. With ``g`` GPUs at cell (a, b) the job uses ``g * cpu_grid[a]`` CPUs and
    ``g * mem_grid[b]`` GB.
    """

    id: str
    gpus: int
    cpu_grid: np.ndarray
    mem_grid: np.ndarray
    throughput: np.ndarray

    def __post_init__(self) -> None:
        for name in ("cpu_grid", "mem_grid", "throughput"):
            v = getattr(self, name)
            if isinstance(v, (str, bytes)):
                raise InputError(f"job[{self.id}].{name}", v, "must be an array of numbers")
            try:
                arr = np.asarray(v)
            except (TypeError, ValueError, OverflowError):
                raise InputError(f"job[{self.id}].{name}", v, "must be an array of numbers") from None
            if arr.dtype.kind not in "iuf":  # strings, bools, None, ragged rows, ints beyond int64
                raise InputError(f"job[{self.id}].{name}", v, "must be an array of real numbers (not strings, bools or ints beyond int64)")
            arr = arr.astype(np.float64)
            arr.setflags(write=False)
            object.__setattr__(self, name, arr)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SynergyJob):
            return NotImplemented
        return (
            self.id == other.id
            and self.gpus == other.gpus
            and np.array_equal(self.cpu_grid, other.cpu_grid)
            and np.array_equal(self.mem_grid, other.mem_grid)
            and np.array_equal(self.throughput, other.throughput)
        )

    def __hash__(self) -> int:
        return hash((self.id, self.gpus))


def job_cache(job: SynergyJob) -> dict:
    """A job's cache of what it derives from its (immutable) grid: validity and option arrays per share. A
    simulator passes the same job objects round after round, so each is derived once."""
    return job.__dict__.setdefault("_derived", {})


# ------------------------------------------------------------------------------------------------- validation
def check_number(path: str, v: Any, *, integer: bool = False, positive: bool = True, high: float | None = None) -> None:
    """``v`` a real number (not a bool or a numeric string), finite, integral if ``integer``, > 0 if ``positive``,
    <= ``high`` if given; else :class:`InputError` naming ``path``."""
    if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
        raise InputError(path, v, "must be a number")
    try:
        f = float(v)
    except OverflowError:  # an int beyond float range
        f = math.inf
    if high is not None and f > high:
        raise InputError(path, v, f"must be <= {high:.15g}")
    if not math.isfinite(f):
        raise InputError(path, v, "must be finite")
    if integer and f != int(v):
        raise InputError(path, v, "must be an integer")
    if positive and f <= 0:
        raise InputError(path, v, "must be positive")


def _check_servers(servers: Sequence[Server]) -> None:
    if not isinstance(servers, Sequence) or len(servers) == 0:
        raise InputError("servers", servers, "must be a non-empty sequence of Server")
    for i, s in enumerate(servers):
        if not isinstance(s, Server):
            raise InputError(f"servers[{i}]", s, "must be a Server")
        check_number(f"servers[{i}].gpus", s.gpus, integer=True, high=MAX_GPUS)
        check_number(f"servers[{i}].cpus", s.cpus)
        check_number(f"servers[{i}].mem_gb", s.mem_gb)
    total = sum(int(s.gpus) for s in servers)
    if total > MAX_GPUS:
        raise InputError("servers", total, f"hold {total} GPUs, more than MAX_GPUS = {MAX_GPUS}")
    g0 = servers[0]
    for i, s in enumerate(servers[1:], start=1):
        # one GPU-proportional share for the whole cluster: every server has the CPU:GPU and GB:GPU ratio of servers[0]
        if not math.isclose(s.cpus / s.gpus, g0.cpus / g0.gpus, rel_tol=_RTOL):
            raise InputError(
                f"servers[{i}].cpus", s.cpus, f"CPU:GPU ratio {s.cpus / s.gpus:g} differs from servers[0]'s {g0.cpus / g0.gpus:g}"
            )
        if not math.isclose(s.mem_gb / s.gpus, g0.mem_gb / g0.gpus, rel_tol=_RTOL):
            raise InputError(
                f"servers[{i}].mem_gb",
                s.mem_gb,
                f"GB:GPU ratio {s.mem_gb / s.gpus:g} differs from servers[0]'s {g0.mem_gb / g0.gpus:g}",
            )


def _check_job(k: int, j: SynergyJob, share: tuple[float, float], total_gpus: int) -> None:
    p = f"jobs[{k}]"
    if not isinstance(j, SynergyJob):
        raise InputError(p, j, "must be a SynergyJob")
    if not isinstance(j.id, str) or not j.id:
        raise InputError(f"{p}.id", j.id, "must be a non-empty string")
    check_number(f"{p}.gpus", j.gpus, integer=True)
    if j.gpus > total_gpus:
        raise InputError(f"{p}.gpus", j.gpus, f"asks for more GPUs than the cluster has ({total_gpus})")
    for name, grid, prop in (("cpu_grid", j.cpu_grid, share[0]), ("mem_grid", j.mem_grid, share[1])):
        if grid.ndim != 1 or grid.size == 0:
            raise InputError(f"{p}.{name}", grid.tolist(), "must be a non-empty 1-d sequence")
        if not np.isfinite(grid).all() or (grid <= 0).any():
            raise InputError(f"{p}.{name}", grid.tolist(), "entries must be finite and positive")
        if (np.diff(grid) <= 0).any():
            raise InputError(f"{p}.{name}", grid.tolist(), "must be strictly increasing")
        lo, hi = float(grid[0]), float(grid[-1])
        if prop < lo * (1 - _RTOL) or prop > hi * (1 + _RTOL):
            raise InputError(
                f"{p}.{name}", grid.tolist(), f"does not bracket the GPU-proportional share {prop:g} per GPU"
            )
    if j.throughput.shape != (j.cpu_grid.size, j.mem_grid.size):
        raise InputError(
            f"{p}.throughput", list(j.throughput.shape), f"must have shape ({j.cpu_grid.size}, {j.mem_grid.size})"
        )
    if not np.isfinite(j.throughput).all() or (j.throughput < 0).any():
        bad = np.argwhere(~np.isfinite(j.throughput) | (j.throughput < 0))[0]
        raise InputError(
            f"{p}.throughput[{bad[0]}][{bad[1]}]", float(j.throughput[tuple(bad)]), "must be finite and >= 0"
        )


def proportional_share(servers: Sequence[Server]) -> tuple[float, float]:
    """The GPU-proportional (CPUs, GB) per GPU: total CPUs / total GPUs and total GB / total GPUs."""
    g = sum(int(s.gpus) for s in servers)
    return sum(float(s.cpus) for s in servers) / g, sum(float(s.mem_gb) for s in servers) / g


def validate(servers: Sequence[Server], jobs: Sequence[SynergyJob]) -> tuple[float, float]:
    """Check servers and jobs (raising :class:`InputError` naming the field); return the proportional share."""
    _check_servers(servers)
    if not isinstance(jobs, Sequence):
        raise InputError("jobs", jobs, "must be a sequence of SynergyJob")
    share = proportional_share(servers)
    total = sum(int(s.gpus) for s in servers)
    seen: dict[str, int] = {}
    for k, j in enumerate(jobs):
        if not isinstance(j, SynergyJob) or ("valid", share, total) not in job_cache(j):
            _check_job(k, j, share, total)
            job_cache(j)[("valid", share, total)] = True
        if j.id in seen:
            raise InputError(f"jobs[{k}].id", j.id, f"duplicates jobs[{seen[j.id]}].id")
        seen[j.id] = k
    return share


def _bracket(grid: np.ndarray, x: float) -> tuple[int, int, float]:
    """Indices (lo, hi) and weight t with x = (1 - t) grid[lo] + t grid[hi]; lo == hi when x is a grid point."""
    on = np.flatnonzero(np.isclose(grid, x, rtol=_RTOL, atol=0.0))
    if on.size:
        return int(on[0]), int(on[0]), 0.0
    hi = int(np.searchsorted(grid, x))
    lo = hi - 1
    return lo, hi, float((x - grid[lo]) / (grid[hi] - grid[lo]))


def proportional_throughput(job: SynergyJob, share: tuple[float, float]) -> tuple[float, tuple[int, int] | None]:
    """W_j at the GPU-proportional point and its grid cell (``None`` when off the grid: then W is bilinear).

    Bilinear interpolation between the four surrounding grid cells (linear along an axis where the share is a
    grid point). The share must lie within the grid's range (checked by :func:`validate`).
    """
    a0, a1, ta = _bracket(job.cpu_grid, share[0])
    b0, b1, tb = _bracket(job.mem_grid, share[1])
    W = job.throughput
    val = (
        (1 - ta) * (1 - tb) * W[a0, b0] + ta * (1 - tb) * W[a1, b0] + (1 - ta) * tb * W[a0, b1] + ta * tb * W[a1, b1]
    )
    cell = (a0, b0) if a0 == a1 and b0 == b1 else None
    return float(val), cell


@dataclass(frozen=True)
class JobOptions:
    """Every job's options flattened: option ``o`` belongs to ``job[o]`` with per-GPU ``cpu[o]`` and ``mem[o]``,
    throughput ``w[o]``, grid cell ``cell[o]`` (``(-1, -1)`` for the off-grid proportional point)."""

    job: np.ndarray
    cpu: np.ndarray
    mem: np.ndarray
    w: np.ndarray
    cell: np.ndarray  #: (n_options, 2) int
    w_prop: np.ndarray  #: per job
    prop_cell: list[tuple[int, int] | None]
    start: np.ndarray  #: per job, first option index (n_jobs + 1 entries)
    share: tuple[float, float]
    prop: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))  #: per job, its proportional option

    @property
    def size(self) -> int:
        return int(self.job.size)

    def labels(self, jobs: Sequence[SynergyJob]) -> list[str]:
        return [
            f"{jobs[int(j)].id}@c{c:g},m{m:g}" + ("(prop)" if cl[0] < 0 else "")
            for j, c, m, cl in zip(self.job, self.cpu, self.mem, self.cell)
        ]


def _keep_mask(cpu: np.ndarray, mem: np.ndarray, w: np.ndarray, w_prop: float, prop_idx: int) -> np.ndarray:
    """Valid options of one job: W >= W_prop and not dominated (another option with <= CPUs, <= GB and >= W,
    strictly better in one), plus always the proportional point ``prop_idx``. Among exact duplicates the first
    is kept."""
    le_c = cpu[:, None] <= cpu[None, :]  # [p, o]: p uses <= CPUs than o
    le_m = mem[:, None] <= mem[None, :]
    ge_w = w[:, None] >= w[None, :]
    weak = le_c & le_m & ge_w
    strict = (cpu[:, None] < cpu[None, :]) | (mem[:, None] < mem[None, :]) | (w[:, None] > w[None, :])
    n = w.size
    earlier = np.arange(n)[:, None] < np.arange(n)[None, :]
    dominated = (weak & (strict | earlier)).any(axis=0)
    keep = (~dominated) & (w >= w_prop - 1e-12)
    keep[prop_idx] = True
    return keep


def job_options(jobs: Sequence[SynergyJob], share: tuple[float, float], *, prune: bool = True) -> JobOptions:
    """Flatten every job's grid (plus its off-grid proportional point, if any) into option arrays.

    ``prune`` keeps only the valid options (:func:`_keep_mask`): cells below the proportional throughput can never
    be chosen and a dominated cell can always be swapped for its dominator without breaking any capacity, so
    every model's optimum is unchanged; ``prune=False`` keeps every cell."""
    parts_job, parts_cpu, parts_mem, parts_w, parts_cell = [], [], [], [], []
    wp = np.zeros(len(jobs))
    pcells: list[tuple[int, int] | None] = []
    prop_idx: list[int] = []
    starts = [0]
    for k, j in enumerate(jobs):
        key = ("options", share, prune)
        hit = job_cache(j).get(key)
        if hit is None:
            hit = _one_job_options(j, share, prune)
            job_cache(j)[key] = hit
        cells, cpu, mem, w, wpk, pc, pidx = hit
        wp[k] = wpk
        pcells.append(pc)
        prop_idx.append(starts[-1] + pidx)
        parts_job.append(np.full(w.size, k))
        parts_cpu.append(cpu)
        parts_mem.append(mem)
        parts_w.append(w)
        parts_cell.append(cells)
        starts.append(starts[-1] + w.size)
    if not jobs:
        z = np.zeros(0)
        return JobOptions(z.astype(int), z, z, z, np.zeros((0, 2), int), z, [], np.zeros(1, int), share, np.zeros(0, int))
    return JobOptions(
        job=np.concatenate(parts_job).astype(np.int64),
        cpu=np.concatenate(parts_cpu),
        mem=np.concatenate(parts_mem),
        w=np.concatenate(parts_w),
        cell=np.concatenate(parts_cell).astype(np.int64),
        w_prop=wp,
        prop_cell=pcells,
        start=np.asarray(starts, dtype=np.int64),
        share=share,
        prop=np.asarray(prop_idx, dtype=np.int64),
    )


def _one_job_options(j: SynergyJob, share: tuple[float, float], prune: bool) -> tuple:
    """(cells, cpu, mem, w, W_prop, proportional cell, local index of the proportional point) of one job."""
    A, B = j.throughput.shape
    aa, bb = np.meshgrid(np.arange(A), np.arange(B), indexing="ij")
    cells = np.stack([aa.ravel(), bb.ravel()], axis=1)
    cpu = j.cpu_grid[aa.ravel()]
    mem = j.mem_grid[bb.ravel()]
    w = j.throughput.ravel()
    wpk, pc = proportional_throughput(j, share)
    if pc is None:
        cells = np.vstack([cells, [[-1, -1]]])
        cpu = np.append(cpu, share[0])
        mem = np.append(mem, share[1])
        w = np.append(w, wpk)
        pidx = w.size - 1
    else:
        pidx = int(pc[0] * B + pc[1])
    if prune:
        keep = _keep_mask(cpu, mem, w, wpk, pidx)
        pidx = int(np.count_nonzero(keep[:pidx]))
        cells, cpu, mem, w = cells[keep], cpu[keep], mem[keep], w[keep]
    for a in (cells, cpu, mem, w):
        a.setflags(write=False)
    return cells, cpu, mem, w, wpk, pc, pidx


def runnable(servers: Sequence[Server], jobs: Sequence[SynergyJob]) -> np.ndarray:
    """Boolean mask of the jobs this round runs: in the given (policy) order, a job runs when its GPU demand fits
    the GPUs still free (Synergy's scheduler picks runnable jobs this way); the others are ``unplaced``."""
    free = sum(int(s.gpus) for s in servers)
    g = np.fromiter((int(j.gpus) for j in jobs), dtype=np.int64, count=len(jobs))
    mask = np.zeros(len(jobs), dtype=bool)
    for k in range(len(jobs)):  # sequential by nature; one step per job
        if g[k] <= free:
            mask[k] = True
            free -= int(g[k])
    return mask


# ------------------------------------------------------------------------------------------------- allocation
@dataclass(frozen=True)
class JobAllocation:
    """What one job receives. ``gpus_on`` maps server index -> GPUs there (empty when unplaced).

    ``cell`` is the grid cell (a, b), or ``None`` for the off-grid proportional point (and for unplaced jobs).
    ``cpus`` / ``mem_gb`` are the job's totals; on server ``i`` it holds ``gpus_on[i] * cpu_per_gpu`` CPUs.
    ``throughput`` is the per-GPU normalised throughput W at the given point.
    """

    job_id: str
    gpus_on: Mapping[int, int]
    cell: tuple[int, int] | None
    cpu_per_gpu: float
    mem_per_gpu: float
    cpus: float
    mem_gb: float
    throughput: float
    proportional_throughput: float

    @property
    def placed(self) -> bool:
        return bool(self.gpus_on)

    @property
    def servers(self) -> list[int]:
        return sorted(self.gpus_on)

    @property
    def gpus(self) -> int:
        return int(sum(self.gpus_on.values()))

    def as_row(self) -> dict[str, Any]:
        return {
            "job": self.job_id,
            "gpus": self.gpus,
            "servers": ",".join(f"{i}:{g}" for i, g in sorted(self.gpus_on.items())) or "-",
            "cpus": round(self.cpus, 6),
            "mem_gb": round(self.mem_gb, 6),
            "cell": "prop" if self.cell is None and self.placed else (str(self.cell) if self.cell else "-"),
            "throughput": round(self.throughput, 6),
            "proportional": round(self.proportional_throughput, 6),
        }


@dataclass(kw_only=True, eq=False)
class SynergyAllocation(Answer):
    """The answer of every Synergy method (P1, OPT, TUNE, GREEDY, proportional, joint): a :class:`~schedopt.problem.Answer`.

    ``termination`` is the core :class:`~schedopt.Termination`: the solver's for P1 and the joint MILP, FEASIBLE
    with :attr:`~schedopt.Limit.HEURISTIC` for TUNE, GREEDY, proportional and OPT (its rounding proves nothing).
    ``bound`` is the best proven upper bound (P1 and joint: the solver's; OPT: the pooled P1 optimum, the LP bound
    of every integral placement; ``nan`` when nothing was proven, and the termination's ``detail`` says why).

    The solution (``per_job``, ``unplaced``, ``skipped``, ``total_throughput``, ``rows()``) is held only when
    ``has_solution``; reading it otherwise raises :class:`~schedopt.errors.NoSolutionError`, and
    ``raise_for_status()`` raises :class:`~schedopt.errors.InfeasibleError` (with ``explanation``) or
    :class:`~schedopt.errors.SolveFailedError`.

    ``per_job`` (ordered like the input jobs) holds a :class:`JobAllocation` per job; ``unplaced`` lists the jobs
    not run this round (no GPUs, zero throughput); ``skipped`` the jobs GREEDY passed over although GPUs were free
    (their demand did not fit). ``total_throughput`` is the sum over placed jobs of W at their point, times their
    GPU count when ``weighted``. ``stages`` holds the SolveResult of each solve behind it (``result`` is the last
    or only one); ``stats`` counts what the method did (stage times, demotions, spans).
    """

    _per_job: dict[str, JobAllocation] = field(default_factory=dict, repr=False)
    _unplaced: tuple[str, ...] = ()
    _skipped: tuple[str, ...] = ()
    weighted: bool = False
    stages: dict[str, Any] = field(default_factory=dict, repr=False)
    stats: dict[str, Any] = field(default_factory=dict)
    explanation: Any = None

    @property
    def per_job(self) -> dict[str, JobAllocation]:
        self.require_solution()
        return self._per_job

    @property
    def unplaced(self) -> tuple[str, ...]:
        self.require_solution()
        return self._unplaced

    @property
    def skipped(self) -> tuple[str, ...]:
        self.require_solution()
        return self._skipped

    @property
    def total_throughput(self) -> float:
        return self.objective

    @property
    def lp_bound(self) -> float | None:
        """The proven upper bound (``bound``) or ``None`` when none was proven."""
        return float(self.bound) if math.isfinite(self.bound) else None

    @property
    def rounding_loss(self) -> float | None:
        """``lp_bound - total_throughput`` (``None`` without a bound or a solution)."""
        if not self.has_solution or not math.isfinite(self.bound):
            return None
        return float(self.bound - self.objective_value)

    @property
    def optimal(self) -> bool:
        return self.is_optimal

    @property
    def results(self) -> dict[str, Any]:
        """The SolveResults behind the answer by stage (``stages``; kept for the name users call)."""
        return self.stages

    def rows(self) -> list[dict[str, Any]]:
        return [a.as_row() for a in self.per_job.values()]

    def gpu_matrix(self, n_servers: int) -> np.ndarray:
        """(servers x jobs) GPU counts."""
        out = np.zeros((n_servers, len(self.per_job)), dtype=np.int64)
        for k, a in enumerate(self.per_job.values()):
            for i, g in a.gpus_on.items():
                out[i, k] = g
        return out

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        out.update(
            {
                "weighted": self.weighted,
                "lp_bound": self.lp_bound,
                "stats": to_jsonable(self.stats),
                "jobs": self.rows() if self.has_solution else None,
                "unplaced": list(self._unplaced) if self.has_solution else None,
                "skipped": list(self._skipped) if self.has_solution else None,
            }
        )
        return out


class AllocationCheckError(ViolationError, AssertionError):
    """An allocation breaks a rule of the Synergy problem (raised by :func:`~schedopt.synergy.assert_allocation`;
    ``violations`` lists every rule broken)."""


def make_job_allocation(
    job: SynergyJob,
    gpus_on: Mapping[int, int],
    cpu: float,
    mem: float,
    w: float,
    cell: tuple[int, int] | None,
    w_prop: float,
) -> JobAllocation:
    g = int(sum(gpus_on.values()))
    return JobAllocation(
        job_id=job.id,
        gpus_on={int(i): int(v) for i, v in sorted(gpus_on.items()) if int(v) > 0},
        cell=None if cell is None or cell[0] < 0 else (int(cell[0]), int(cell[1])),
        cpu_per_gpu=float(cpu) if g else 0.0,
        mem_per_gpu=float(mem) if g else 0.0,
        cpus=float(g * cpu),
        mem_gb=float(g * mem),
        throughput=float(w) if g else 0.0,
        proportional_throughput=float(w_prop),
    )


def total_of(per_job: Mapping[str, JobAllocation], jobs: Sequence[SynergyJob], weighted: bool) -> float:
    return float(sum(a.throughput * (j.gpus if weighted else 1) for a, j in zip(per_job.values(), jobs)))


@dataclass(frozen=True)
class SynergyInstance:
    """One round of Synergy: servers, jobs (in policy order), and whether throughput is GPU-weighted.

    ``profiling`` (optional): per job id, the CPU counts optimistic profiling measured for it.
    """

    servers: list[Server]
    jobs: list[SynergyJob]
    weighted: bool = False
    profiling: dict[str, list[float]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        validate(self.servers, self.jobs)
