"""The greedy methods: Synergy-TUNE (queue order, as published, or largest first), GREEDY and GPU-proportional.

None of them solves a model: each answer ends FEASIBLE with :attr:`~schedopt.Limit.HEURISTIC` and no bound.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence

import numpy as np

from ..errors import InputError, SolveFailedError
from ..problem import heuristic_termination
from ..results import Timings
from .base import (
    ClusterState,
    assemble,
    check_flag,
    ideal_option,
    largest_server,
    over_share,
    prepare,
)
from .spec import JobOptions, Server, SynergyAllocation, SynergyJob

__all__ = ["TUNE_ORDERS", "proportional", "synergy_greedy", "synergy_tune"]

#: ``order`` values of :func:`synergy_tune`: the queue order given (the published code) or largest first (the paper's text)
TUNE_ORDERS = ("queue", "largest")


def _check_threshold(v: object) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not (0.0 <= v < math.inf):
        raise InputError("demand_threshold", v, "must be a finite number >= 0")
    return float(v)


def _demands(
    opts: JobOptions, g: np.ndarray, servers: Sequence[Server], threshold: float, jobs: Sequence[SynergyJob]
) -> tuple[np.ndarray, np.ndarray]:
    big = largest_server(servers)
    ideal = np.array([ideal_option(opts, r, int(g[r]), servers, threshold, jobs[r], big) for r in range(g.size)], dtype=np.int64)
    return ideal, opts.prop.copy()


def _demote_everyone(cl: ClusterState, prop: np.ndarray) -> int:
    """Every placed job over the share back to the share (always feasible: each server then uses at most the share
    per used GPU in each dimension)."""
    n = 0
    for q in [q for q in cl.where if cl.excess(q) > 1e-12]:
        cl.move(q, int(prop[q]), check=False)
        n += 1
    return n


def _peer_servers(cl: ClusterState, g: int) -> dict[int, int]:
    """The published ``_get_underutilized_servers``: for a multi-GPU job the first server with ``g`` GPUs free;
    otherwise servers by fewest free GPUs (ties: lowest index) until they hold ``g``."""
    fg = cl.free_gpus()
    if g > 1:
        hit = np.flatnonzero(fg >= g)
        if hit.size:
            return {int(hit[0]): g}
    idx = np.flatnonzero(fg > 0)
    out: dict[int, int] = {}
    need = g
    for i in idx[np.lexsort((idx, fg[idx]))]:
        if fg[i] >= need:
            out[int(i)] = need
            return out
        out[int(i)] = int(fg[i])
        need -= int(fg[i])
    return out


def _peers_to_demote(cl: ClusterState, i: int, k: int, c: float, m: float) -> list[int]:
    """The published ``_reallocate_peer`` on server ``i`` for ``k`` GPUs at (c, m) per GPU: the jobs there, by
    (servers spanned, -CPUs per GPU, -GB per GPU), taken until their excess over the share covers the shortfall."""
    opts = cl.opts
    pc, pm = opts.share
    need = np.maximum(0.0, np.array([k * c, k * m]) - cl.free[i, 1:])
    if (need <= 0).all():
        return []
    jobs = sorted(cl.on_server[i], key=lambda q: (len(cl.where[q]), -opts.cpu[cl.point[q]], -opts.mem[cl.point[q]]))
    out: list[int] = []
    for q in jobs:
        kq = cl.where[q].get(i, 0)
        o = cl.point[q]
        excess = np.maximum(0.0, np.array([kq * (opts.cpu[o] - pc), kq * (opts.mem[o] - pm)]))
        out.append(q)
        need = np.maximum(0.0, need - excess)
        if (need <= 1e-9).all():
            break
    return out


def _promote(cl: ClusterState, order: Sequence[int] | np.ndarray, g: np.ndarray) -> int:
    """Ours: give placed jobs, in queue order, their best option that fits the resources left on their servers
    (same GPUs). Each move raises one job's W and lowers none, so the total only grows."""
    opts = cl.opts
    moves = 0
    for _ in range(3):
        changed = False
        for r in order:
            r = int(r)
            if r not in cl.where:
                continue
            o = cl.point[r]
            lo, hi = int(opts.start[r]), int(opts.start[r + 1])
            idx = np.arange(lo, hi)
            idx = idx[opts.w[idx] > opts.w[o] + 1e-12]
            for o2 in idx[np.lexsort((opts.mem[idx], opts.cpu[idx], -opts.w[idx]))]:
                if cl.move(r, int(o2), check=True):
                    moves += 1
                    changed = True
                    break
        if not changed:
            break
    return moves


def synergy_tune(
    servers: Sequence[Server],
    jobs: Sequence[SynergyJob],
    *,
    weighted: bool = False,
    demand_threshold: float = 0.0,
    order: str = "queue",
    promote: bool = True,
) -> SynergyAllocation:
    """Synergy-TUNE (Sec. 4.3 of the paper; the published ``Cluster.allocate_synergy_tune``), never below the
    GPU-proportional share for any job.

    Each runnable job asks for its best-case point (the fewest CPUs, then the least GB, reaching the maximum
    throughput -- within ``demand_threshold`` of it if > 0 -- among points fitting an empty server).

    ``order="queue"`` (default, as the published scheduler): jobs in the given order (the queue policy's; see
    :func:`~schedopt.synergy.order_jobs`), placed by the published rule
    (:meth:`ClusterState.place_fewest_free_gpus`). A job that does not fit switches to the share if its demand
    exceeds it; if it still does not fit, the published peer adjustment picks servers with its GPUs free and
    moves jobs there back to the share (each move only if every server stays within capacity), then retries; if
    that fails too (the published code exits), every job over the share is moved back and the job is placed.

    ``order="largest"``: jobs sorted by (GPUs, CPUs, GB) of their demand, largest first, placed on the fewest
    servers, demotion on best-fit servers (schedopt's earlier TUNE; compared in the formulation card).

    ``promote`` (ours, default on): after every job is placed, jobs in queue order move to their best option
    that fits the resources left on their servers (the total never drops; ``stats["promotions"]`` counts them).
    """
    t0 = time.perf_counter()
    check_flag("weighted", weighted)
    check_flag("promote", promote)
    thr = _check_threshold(demand_threshold)
    if order not in TUNE_ORDERS:
        raise InputError("order", order, f"must be one of {TUNE_ORDERS}")
    run, mask, opts = prepare(servers, jobs)
    J = len(run)
    g = np.array([j.gpus for j in run], dtype=np.int64)
    ideal, prop = _demands(opts, g, servers, thr, run)
    cl = ClusterState(servers, opts)
    if order == "queue":
        walk = np.arange(J)
        stats = _tune_queue(cl, run, g, ideal, prop)
    else:
        walk = np.lexsort((-opts.mem[ideal] * g, -opts.cpu[ideal] * g, -g)) if J else np.zeros(0, np.int64)
        stats = _tune_largest(cl, run, g, ideal, prop, walk)
    stats["promotions"] = _promote(cl, walk, g) if promote else 0
    where, choice = cl.arrays(J)
    return assemble(
        "tune",
        jobs,
        mask,
        opts,
        where,
        choice,
        weighted,
        termination=heuristic_termination(f"Synergy-TUNE ({order} order): greedy, no optimality proof"),
        timings=Timings(build=0.0, solve=time.perf_counter() - t0),
        stats={"order": order, **stats, "timings": {"tune": time.perf_counter() - t0}},
    )


def _tune_queue(cl: ClusterState, run: Sequence[SynergyJob], g: np.ndarray, ideal: np.ndarray, prop: np.ndarray) -> dict:
    opts = cl.opts
    placed_at = {"ideal": 0, "proportional": 0, "peer_adjust": 0, "demote_all": 0}
    demotions = 0
    for r in range(len(run)):
        o = int(ideal[r])
        on = cl.place_fewest_free_gpus(int(g[r]), opts.cpu[o], opts.mem[o])
        if on is not None:
            cl.commit(r, on, o)
            placed_at["ideal"] += 1
            continue
        if over_share(opts, o):  # _make_fair_share: switch both dimensions to the share
            o = int(prop[r])
            on = cl.place_fewest_free_gpus(int(g[r]), opts.cpu[o], opts.mem[o])
            if on is not None:
                cl.commit(r, on, o)
                placed_at["proportional"] += 1
                continue
        c, m = opts.cpu[o], opts.mem[o]
        for i, k in _peer_servers(cl, int(g[r])).items():
            for q in _peers_to_demote(cl, i, k, c, m):
                if over_share(opts, cl.point[q]) and cl.move(q, int(prop[q]), check=True):
                    demotions += 1
        on = cl.place_fewest_free_gpus(int(g[r]), c, m)
        if on is not None:
            cl.commit(r, on, o)
            placed_at["peer_adjust"] += 1
            continue
        demotions += _demote_everyone(cl, prop)
        on = cl.place_fewest_free_gpus(int(g[r]), c, m)
        if on is None:  # pragma: no cover - excluded by the argument in _demote_everyone
            raise SolveFailedError(f"Synergy-TUNE could not place job {run[r].id}")
        cl.commit(r, on, o)
        placed_at["demote_all"] += 1
    return {"placed_at": placed_at, "demotions": demotions}


def _demotion_servers(cl: ClusterState, g: int) -> np.ndarray:
    """Servers the largest-first TUNE frees resources on for a job of ``g`` GPUs: one server with ``g`` GPUs free if
    any (the one with the fewest GPUs free: best fit), else servers by most GPUs free until they hold ``g``."""
    fg = cl.free_gpus()
    allowed = np.zeros(fg.size, dtype=bool)
    one = np.flatnonzero(fg >= g)
    if one.size:
        allowed[one[np.lexsort((one, fg[one]))[0]]] = True
        return allowed
    pick = np.lexsort((np.arange(fg.size), -fg))
    cum = np.cumsum(fg[pick])
    allowed[pick[: int(np.searchsorted(cum, g)) + 1]] = True
    return allowed


def _tune_largest(
    cl: ClusterState, run: Sequence[SynergyJob], g: np.ndarray, ideal: np.ndarray, prop: np.ndarray, walk: np.ndarray
) -> dict:
    opts = cl.opts
    demotions = 0
    placed_at = {"ideal": 0, "proportional": 0, "demote": 0}
    for r in walk:  # one greedy step per job, as the heuristic is sequential
        r = int(r)
        o = int(ideal[r])
        on = cl.place_fewest_servers(int(g[r]), opts.cpu[o], opts.mem[o])
        if on is not None:
            cl.commit(r, on, o)
            placed_at["ideal"] += 1
            continue
        if over_share(opts, o):
            o = int(prop[r])
            on = cl.place_fewest_servers(int(g[r]), opts.cpu[o], opts.mem[o])
            if on is not None:
                cl.commit(r, on, o)
                placed_at["proportional"] += 1
                continue
        c, m = opts.cpu[o], opts.mem[o]
        placed_at["demote"] += 1
        allowed = _demotion_servers(cl, int(g[r]))
        while on is None:
            cands = [q for q in cl.where if any(allowed[i] for i in cl.where[q]) and cl.excess(q) > 1e-12]
            cands.sort(key=lambda q: (-cl.excess(q), q))
            moved = False
            for q in cands:
                if cl.move(q, int(prop[q]), check=True):
                    demotions += 1
                    moved = True
                    break
            if not moved:
                demotions += _demote_everyone(cl, prop)
                on = cl.place_fewest_servers(int(g[r]), c, m)
                break
            on = cl.place_fewest_servers(int(g[r]), c, m, allowed)
        if on is None:  # pragma: no cover - excluded by the argument in _demote_everyone
            raise SolveFailedError(f"Synergy-TUNE could not place job {run[r].id}")
        cl.commit(r, on, o)
    return {"placed_at": placed_at, "demotions": demotions}


def synergy_greedy(
    servers: Sequence[Server], jobs: Sequence[SynergyJob], *, weighted: bool = False, demand_threshold: float = 0.0
) -> SynergyAllocation:
    """Synergy-GREEDY (the published scheduler with ``fair=False, tune=False``): jobs in the given queue order,
    each at its best-case demand (as TUNE's) placed by the published rule, or skipped this round when that demand
    does not fit. A skipped job's GPUs stay free for later jobs in the queue, which may then run although an
    earlier job did not (``skipped`` lists jobs passed over with enough GPUs free; ``unplaced`` every job without
    GPUs). No job gets less than its proportional throughput, but a job may get nothing."""
    t0 = time.perf_counter()
    check_flag("weighted", weighted)
    thr = _check_threshold(demand_threshold)
    run, mask, opts = prepare(servers, jobs, all_jobs=True)
    J = len(run)
    g = np.array([j.gpus for j in run], dtype=np.int64)
    ideal, _ = _demands(opts, g, servers, thr, run)
    cl = ClusterState(servers, opts)
    skipped: list[str] = []
    for r in range(J):
        if g[r] > int(cl.free_gpus().sum()):
            continue
        o = int(ideal[r])
        on = cl.place_fewest_free_gpus(int(g[r]), opts.cpu[o], opts.mem[o])
        if on is None:
            skipped.append(run[r].id)
            continue
        cl.commit(r, on, o)
    where, choice = cl.arrays(J)
    return assemble(
        "greedy",
        jobs,
        mask,
        opts,
        where,
        choice,
        weighted,
        termination=heuristic_termination("Synergy-GREEDY: demand or skip, no optimality proof"),
        timings=Timings(build=0.0, solve=time.perf_counter() - t0),
        skipped=skipped,
        stats={"skipped": len(skipped), "timings": {"greedy": time.perf_counter() - t0}},
    )


def proportional(servers: Sequence[Server], jobs: Sequence[SynergyJob], *, weighted: bool = False) -> SynergyAllocation:
    """Every runnable job at its GPU-proportional point (the baseline; the published ``fair`` mode). Largest jobs
    first on the fewest servers (the total is the same in any order: every job gets exactly its share)."""
    t0 = time.perf_counter()
    check_flag("weighted", weighted)
    run, mask, opts = prepare(servers, jobs)
    J = len(run)
    g = np.array([j.gpus for j in run], dtype=np.int64)
    prop = opts.prop
    pc, pm = opts.share
    cl = ClusterState(servers, opts)
    for r in np.argsort(-g, kind="stable"):
        on = cl.place_fewest_servers(int(g[r]), pc, pm)
        if on is None:  # pragma: no cover - proportional shares always fit the free GPUs
            raise SolveFailedError(f"proportional: could not place job {run[int(r)].id}")
        cl.commit(int(r), on, int(prop[r]))
    where, choice = cl.arrays(J)
    return assemble(
        "proportional",
        jobs,
        mask,
        opts,
        where,
        choice,
        weighted,
        termination=heuristic_termination("GPU-proportional baseline, no optimality proof"),
        timings=Timings(build=0.0, solve=time.perf_counter() - t0),
        stats={"timings": {"proportional": time.perf_counter() - t0}},
    )
