"""Large-neighbourhood search on the joint MILP (ours): re-solve a few servers at a time exactly.

Given an allocation (GPUs per server and job, one option per job), a *neighbourhood* is a group of servers: the
jobs placed entirely on them are freed, the jobs that also sit elsewhere keep their GPUs and point there (their
use is taken off the group's capacities), and the joint MILP over the group and the freed jobs is solved (the
current allocation as warm start, so it never gets worse). Each sub-model has a few servers and a dozen jobs and
solves in well under a second; a pass walks the servers in groups, later passes in seeded random groups.

This is how Synergy-OPT closes most of its rounding gap and how the joint method finds incumbents at the P1 bound
past 16 servers (see ``formulations/synergy.md``).
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np

from ..model import LinearModel
from ..solve import solve
from .models import LevelIndex, build_joint, level_index
from .spec import JobOptions, Server, SynergyJob, job_options

__all__ = ["improve_by_neighbourhoods", "joint_start", "sort_identical"]


def joint_start(
    model: LinearModel, opts: JobOptions, cpu_levels: LevelIndex, mem_levels: LevelIndex, gpu: np.ndarray, choice: np.ndarray
) -> np.ndarray:
    """A full column vector for the joint model from a placement (servers x jobs) and option choice (warm start)."""
    x = np.zeros(model.num_cols)
    b = model.blocks
    x[b["g"].start : b["g"].stop] = gpu.ravel()
    y = np.zeros(opts.size)
    y[choice] = 1.0
    x[b["y"].start : b["y"].stop] = y
    for blk, lv in (("wc", cpu_levels), ("wm", mem_levels)):
        w = gpu[:, lv.job] * (lv.of_option[choice][lv.job] == np.arange(lv.job.size))[None, :]
        x[b[blk].start : b[blk].stop] = w.ravel()
    return x


def sort_identical(servers: Sequence[Server], gpu: np.ndarray) -> np.ndarray:
    """Permute rows within runs of consecutive identical servers so GPU loads are non-increasing (what the joint
    model's ``server_symmetry`` asks)."""
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


def _order_of_identical(servers: Sequence[Server], gpu: np.ndarray) -> np.ndarray:
    """The row permutation :func:`sort_identical` applies (so a solution can be mapped back)."""
    perm = np.arange(len(servers))
    S = len(servers)
    i = 0
    while i < S:
        k = i
        while k + 1 < S and servers[k + 1] == servers[i]:
            k += 1
        if k > i:
            perm[i : k + 1] = i + np.argsort(-gpu[i : k + 1].sum(axis=1), kind="stable")
        i = k + 1
    return perm


def improve_by_neighbourhoods(
    servers: Sequence[Server],
    jobs: Sequence[SynergyJob],
    opts: JobOptions,
    gpu: np.ndarray,
    choice: np.ndarray,
    *,
    weighted: bool = False,
    backend: str = "highs",
    time_limit: float = 5.0,
    group: int = 4,
    max_group: int = 8,
    passes: int = 12,
    patience: int = 2,
    target: float | None = None,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray, dict]:
    """Improve (``gpu``, ``choice``) of the runnable ``jobs`` (options ``opts``) by exact re-solves of server groups.

    A pass without gain widens the groups by two servers (up to ``max_group``). Stops after ``passes`` passes,
    ``time_limit`` seconds, ``patience`` passes in a row without gain at the widest groups, or when the objective
    reaches ``target`` (a proven bound). Returns the new placement, choice and stats (sub-models solved, gains).
    """
    t_end = time.perf_counter() + time_limit
    S, J = gpu.shape
    gpu = gpu.copy()
    choice = choice.copy()
    g = np.array([j.gpus for j in jobs], dtype=np.int64)
    weight = opts.w * (g[opts.job] if weighted else 1.0)
    cap = np.array([[s.gpus, s.cpus, s.mem_gb] for s in servers], dtype=np.float64)
    rng = np.random.default_rng(seed)
    stats: dict = {"submodels": 0, "improved": 0, "gain": 0.0, "passes": 0, "group": group}
    group = max(2, min(int(group), S))
    max_group = max(group, min(int(max_group), S))
    if S < 2 or J == 0:
        return gpu, choice, stats
    idle = 0
    for p in range(passes):
        stats["passes"] = p + 1
        gained = False
        order = np.arange(S) if p == 0 else rng.permutation(S)
        for start in range(0, S, group):
            if time.perf_counter() >= t_end or (target is not None and weight[choice].sum() >= target - 1e-9 * max(1.0, abs(target))):
                return gpu, choice, stats
            grp = np.sort(order[start : start + group])
            if grp.size < 2:
                continue
            sub = gpu[grp]
            on = sub.sum(axis=0)
            inside = np.flatnonzero((on > 0) & (on == g))
            partial = np.flatnonzero((on > 0) & (on < g))
            if inside.size == 0:
                continue
            used = np.zeros((grp.size, 3))
            if partial.size:
                used[:, 0] = sub[:, partial].sum(axis=1)
                used[:, 1] = sub[:, partial] @ opts.cpu[choice[partial]]
                used[:, 2] = sub[:, partial] @ opts.mem[choice[partial]]
            left = np.maximum(cap[grp] - used, 0.0)
            sub_servers = [Server(round(a), float(b), float(c)) for a, b, c in left]
            free_jobs = [jobs[int(r)] for r in inside]
            sub_opts = job_options(free_jobs, opts.share)
            local = choice[inside] - opts.start[inside] + sub_opts.start[:-1]
            model = build_joint(sub_servers, free_jobs, sub_opts, weighted=weighted, symmetry=True)
            perm = _order_of_identical(sub_servers, sub[:, inside])
            ws = joint_start(model, sub_opts, level_index(sub_opts, sub_opts.cpu), level_index(sub_opts, sub_opts.mem), sub[:, inside][perm], local)
            warm = None if model.violations(ws) else ws
            before = float(weight[choice[inside]].sum())
            res = solve(model, backend, time_limit=max(0.05, min(2.0, t_end - time.perf_counter())), warm_start=warm)
            stats["submodels"] += 1
            if not res.has_solution or res.objective <= before + 1e-9:
                continue
            new_gpu = np.rint(res.values["g"]).astype(np.int64)
            sel = np.flatnonzero(np.asarray(res.values["y"]) > 0.5)
            new_local = sel[np.argsort(sub_opts.job[sel])]
            for k, r in enumerate(inside):
                gpu[grp, r] = new_gpu[:, k]
                choice[r] = opts.start[r] + (new_local[k] - sub_opts.start[k])
            stats["improved"] += 1
            stats["gain"] += float(res.objective - before)
            gained = True
        if gained:
            idle = 0
        elif group < max_group:
            group = min(group + 2, max_group)
        else:
            idle += 1
            if idle >= patience:
                break
        stats["group"] = group
    return gpu, choice, stats
