"""Verify a Synergy allocation from the problem data alone (plain numpy, no model).

``check_allocation(...) -> list[Violation]`` (empty when valid) and ``assert_allocation(...)``, which raises
:class:`~schedopt.synergy.AllocationCheckError` (a :class:`~schedopt.problem.ViolationError`) listing them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..problem import Answer, Violation
from .spec import (
    AllocationCheckError,
    Server,
    SynergyAllocation,
    SynergyJob,
    proportional_share,
    proportional_throughput,
)

__all__ = ["allocation_usage", "assert_allocation", "check_allocation"]


def _close(a: float, b: float, tol: float) -> bool:
    return abs(a - b) <= tol * max(1.0, abs(a), abs(b))


def _job_point(j: SynergyJob, cell: tuple[int, int] | None, share: tuple[float, float], wp: float) -> tuple[float, float, float]:
    if cell is None:
        return share[0], share[1], wp
    ai, bi = cell
    return float(j.cpu_grid[ai]), float(j.mem_grid[bi]), float(j.throughput[ai, bi])


def check_allocation(
    servers: Sequence[Server], jobs: Sequence[SynergyJob], allocation: Answer, *, tol: float = 1e-6
) -> list[Violation]:
    """Every rule ``allocation`` breaks (empty list: valid).

    Rules: a solution is held; one entry per job (same ids, same order); a placed job holds exactly its GPU count,
    as positive integers on valid servers; its point is a cell of its grid (CPUs, GB and throughput equal to that
    cell's) or the GPU-proportional point (``cell=None``, throughput = bilinear W there); its totals are GPUs x
    per-GPU amounts; its throughput is at least its GPU-proportional throughput; per server, GPUs, CPUs and GB stay
    within capacity; an unplaced job holds nothing and could not have been placed on the GPUs left free (its
    demand exceeds them) unless GREEDY lists it in ``skipped``; ``unplaced`` lists exactly the unplaced jobs;
    ``total_throughput`` is the recomputed sum.
    """
    if not isinstance(allocation, SynergyAllocation):
        return [Violation("allocation", f"is a {type(allocation).__name__}, not a SynergyAllocation")]
    if not allocation.has_solution:
        return [Violation("termination", f"no allocation is held: {allocation.method} ended {allocation.termination}")]
    out: list[Violation] = []
    share = proportional_share(servers)
    S = len(servers)
    cap = np.array([[s.gpus, s.cpus, s.mem_gb] for s in servers], dtype=np.float64)
    used = np.zeros((S, 3))
    ids = [j.id for j in jobs]
    per_job = allocation.per_job
    if list(per_job) != ids:
        return [Violation("per_job", f"ids {list(per_job)} differ from the jobs {ids}")]
    total = 0.0
    unplaced = []
    for j, (jid, a) in zip(jobs, per_job.items()):
        p = f"per_job[{jid}]"
        if a.job_id != jid:
            out.append(Violation(f"{p}.job_id", f"is {a.job_id!r}"))
        wp, _ = proportional_throughput(j, share)
        if not _close(a.proportional_throughput, wp, tol):
            out.append(Violation(f"{p}.proportional_throughput", f"{a.proportional_throughput} != {wp}"))
        if not a.gpus_on:
            unplaced.append(jid)
            if a.cpus != 0 or a.mem_gb != 0 or a.throughput != 0:
                out.append(Violation(p, f"unplaced but holds cpus={a.cpus}, mem={a.mem_gb}, W={a.throughput}"))
            continue
        bad_index = False
        for i, g in a.gpus_on.items():
            if not (isinstance(i, (int, np.integer)) and 0 <= i < S):
                out.append(Violation(f"{p}.gpus_on", f"server index {i!r} out of range 0..{S - 1}"))
                bad_index = True
            if not (isinstance(g, (int, np.integer)) and g > 0):
                out.append(Violation(f"{p}.gpus_on[{i}]", f"{g!r} GPUs (need a positive integer)"))
        g_tot = sum(a.gpus_on.values())
        if g_tot != j.gpus:
            out.append(Violation(f"{p}.gpus", f"holds {g_tot} GPUs, asks for {j.gpus}"))
        if a.cell is not None:
            ai, bi = a.cell
            if not (0 <= ai < j.cpu_grid.size and 0 <= bi < j.mem_grid.size):
                out.append(Violation(f"{p}.cell", f"{a.cell} outside its {j.throughput.shape} grid"))
                continue
        c, m, w = _job_point(j, a.cell, share, wp)
        what = "the proportional point" if a.cell is None else f"cell {a.cell}"
        for name, got, want in (
            ("cpu_per_gpu", a.cpu_per_gpu, c),
            ("mem_per_gpu", a.mem_per_gpu, m),
            ("throughput", a.throughput, w),
            ("cpus", a.cpus, g_tot * c),
            ("mem_gb", a.mem_gb, g_tot * m),
        ):
            if not _close(got, want, tol):
                out.append(Violation(f"{p}.{name}", f"is {got} but {what} gives {want}"))
        if w < wp - tol:
            out.append(Violation(f"{p}.throughput", f"{w} below its GPU-proportional {wp}"))
        if not bad_index:
            for i, g in a.gpus_on.items():
                used[i] += (g, g * c, g * m)
        total += w * (j.gpus if allocation.weighted else 1)
    over = used > cap + tol * np.maximum(1.0, cap)
    for i, d in np.argwhere(over):
        dim = ("gpus", "cpus", "mem_gb")[int(d)]
        out.append(Violation(f"servers[{int(i)}].{dim}", f"used {used[i, d]:g} > capacity {cap[i, d]:g}"))
    free_gpus = round(cap[:, 0].sum() - used[:, 0].sum())
    skipped = set(allocation.skipped)
    gpus_of = {j.id: j.gpus for j in jobs}
    for jid in unplaced:
        if gpus_of[jid] <= free_gpus and jid not in skipped:
            out.append(Violation(f"per_job[{jid}]", f"unplaced although {free_gpus} GPUs are free (it asks for {gpus_of[jid]})"))
    if skipped - set(unplaced):
        out.append(Violation("skipped", f"lists placed jobs {sorted(skipped - set(unplaced))}"))
    if sorted(allocation.unplaced) != sorted(unplaced):
        out.append(Violation("unplaced", f"lists {list(allocation.unplaced)}, the jobs without GPUs are {unplaced}"))
    tt = allocation.total_throughput
    if not math.isfinite(tt) or not _close(tt, total, tol):
        out.append(Violation("total_throughput", f"{tt} != recomputed {total}"))
    if math.isfinite(allocation.bound) and tt > allocation.bound + tol * max(1.0, abs(tt)):
        out.append(Violation("bound", f"{allocation.bound} is below the allocation's total {tt}"))
    return out


def assert_allocation(
    servers: Sequence[Server], jobs: Sequence[SynergyJob], allocation: Answer, *, tol: float = 1e-6
) -> None:
    """Raise :class:`AllocationCheckError` listing every rule :func:`check_allocation` finds broken."""
    vs = check_allocation(servers, jobs, allocation, tol=tol)
    if vs:
        raise AllocationCheckError(f"Synergy allocation ({getattr(allocation, 'method', '?')})", vs)


def allocation_usage(servers: Sequence[Server], jobs: Sequence[SynergyJob], allocation: SynergyAllocation) -> dict[str, Any]:
    """Per-server use (servers x (GPUs, CPUs, GB)), capacities, the total and the unplaced jobs of a held
    allocation (what ``check_allocation`` returned before it returned violations)."""
    cap = np.array([[s.gpus, s.cpus, s.mem_gb] for s in servers], dtype=np.float64)
    used = np.zeros_like(cap)
    for a in allocation.per_job.values():
        for i, g in a.gpus_on.items():
            used[i] += (g, g * a.cpu_per_gpu, g * a.mem_per_gpu)
    return {"used": used, "capacity": cap, "total_throughput": allocation.total_throughput, "unplaced": list(allocation.unplaced)}
