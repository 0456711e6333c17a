"""``check_allocation``: verify a Synergy allocation from the problem data alone (plain numpy, no model)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .spec import (
    AllocationCheckError,
    Server,
    SynergyAllocation,
    SynergyJob,
    proportional_share,
    proportional_throughput,
)

__all__ = ["check_allocation"]


def _close(a: float, b: float, tol: float) -> bool:
    return abs(a - b) <= tol * max(1.0, abs(a), abs(b))


def check_allocation(
    servers: Sequence[Server], jobs: Sequence[SynergyJob], allocation: SynergyAllocation, *, tol: float = 1e-6
) -> dict[str, Any]:
    """Raise :class:`AllocationCheckError` unless ``allocation`` obeys every rule; return per-server usage.

    Rules: one entry per job (same ids, same order); a placed job holds exactly its GPU count, as positive integers
    on valid servers; its point is a cell of its grid (CPUs, GB and throughput equal to that cell's) or the
    GPU-proportional point (``cell=None``, throughput = bilinear W there); its totals are GPUs x per-GPU amounts;
    its throughput is at least its GPU-proportional throughput; per server, GPUs, CPUs and GB stay within capacity;
    an unplaced job holds nothing and could not have been placed on the GPUs left free (its demand exceeds them);
    ``unplaced`` lists exactly the unplaced jobs; ``total_throughput`` is the recomputed sum.
    """
    share = proportional_share(servers)
    S = len(servers)
    cap = np.array([[s.gpus, s.cpus, s.mem_gb] for s in servers], dtype=np.float64)
    used = np.zeros((S, 3))
    ids = [j.id for j in jobs]
    if list(allocation.per_job) != ids:
        raise AllocationCheckError(f"per_job ids {list(allocation.per_job)} differ from the jobs {ids}")
    total = 0.0
    unplaced = []
    for j, (jid, a) in zip(jobs, allocation.per_job.items()):
        if a.job_id != jid:
            raise AllocationCheckError(f"per_job[{jid!r}].job_id is {a.job_id!r}")
        wp, _ = proportional_throughput(j, share)
        if not _close(a.proportional_throughput, wp, tol):
            raise AllocationCheckError(f"job {jid}: proportional_throughput {a.proportional_throughput} != {wp}")
        if not a.gpus_on:
            unplaced.append(jid)
            if a.cpus != 0 or a.mem_gb != 0 or a.throughput != 0:
                raise AllocationCheckError(f"job {jid}: unplaced but holds cpus={a.cpus}, mem={a.mem_gb}, W={a.throughput}")
            continue
        for i, g in a.gpus_on.items():
            if not (isinstance(i, (int, np.integer)) and 0 <= i < S):
                raise AllocationCheckError(f"job {jid}: server index {i!r} out of range 0..{S - 1}")
            if not (isinstance(g, (int, np.integer)) and g > 0):
                raise AllocationCheckError(f"job {jid}: {g!r} GPUs on server {i} (need a positive integer)")
        g_tot = sum(a.gpus_on.values())
        if g_tot != j.gpus:
            raise AllocationCheckError(f"job {jid}: holds {g_tot} GPUs, asks for {j.gpus}")
        if a.cell is None:
            c, m, w = share[0], share[1], wp
            what = "the proportional point"
        else:
            ai, bi = a.cell
            if not (0 <= ai < j.cpu_grid.size and 0 <= bi < j.mem_grid.size):
                raise AllocationCheckError(f"job {jid}: cell {a.cell} outside its {j.throughput.shape} grid")
            c, m, w = float(j.cpu_grid[ai]), float(j.mem_grid[bi]), float(j.throughput[ai, bi])
            what = f"cell {a.cell}"
        for name, got, want in (
            ("cpu_per_gpu", a.cpu_per_gpu, c),
            ("mem_per_gpu", a.mem_per_gpu, m),
            ("throughput", a.throughput, w),
            ("cpus", a.cpus, g_tot * c),
            ("mem_gb", a.mem_gb, g_tot * m),
        ):
            if not _close(got, want, tol):
                raise AllocationCheckError(f"job {jid}: {name}={got} but {what} gives {want}")
        if w < wp - tol:
            raise AllocationCheckError(f"job {jid}: throughput {w} below its GPU-proportional {wp}")
        for i, g in a.gpus_on.items():
            used[i] += (g, g * c, g * m)
        total += w * (j.gpus if allocation.weighted else 1)
    over = used > cap + tol * np.maximum(1.0, cap)
    if over.any():
        i, d = (int(v) for v in np.argwhere(over)[0])
        dim = ("gpus", "cpus", "mem_gb")[d]
        raise AllocationCheckError(f"server {i}: {dim} used {used[i, d]:g} > capacity {cap[i, d]:g}")
    free_gpus = round(cap[:, 0].sum() - used[:, 0].sum())
    for jid in unplaced:
        g = next(j.gpus for j in jobs if j.id == jid)
        if g <= free_gpus:
            raise AllocationCheckError(f"job {jid} unplaced although {free_gpus} GPUs are free (it asks for {g})")
    if sorted(allocation.unplaced) != sorted(unplaced):
        raise AllocationCheckError(f"unplaced lists {list(allocation.unplaced)}, the jobs without GPUs are {unplaced}")
    if not math.isfinite(allocation.total_throughput) or not _close(allocation.total_throughput, total, tol):
        raise AllocationCheckError(f"total_throughput {allocation.total_throughput} != recomputed {total}")
    return {"used": used, "capacity": cap, "total_throughput": total, "unplaced": unplaced}
