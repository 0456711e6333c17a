"""Shockwave (Zheng et al., NSDI'23) as a :mod:`schedopt.sim` policy, as the Sia artifact runs it
(``sia-simulator/shockwave.py`` driven by ``multi_simulator_unaware.py`` / ``cluster_unaware.py``; card
``formulations/shockwave.md``).

Every round (``REOPT_ROUNDS = 1``): each active job's predicted seconds per step (the mean over GPU types of
``batch / throughput`` at its requested GPUs, ``predict_iter_time_avg_cluster``), its steps done and total at its
batch (:func:`schedopt.sim.policies.gavel.remaining_steps`), a new finish-time estimate ``(age + remaining) /
share`` appended to its series and the series' momentum average as its finish-time target; then the plan of
:func:`schedopt.shockwave.solve_spec` over ``rounds`` future rounds and the first round of its filled schedule.

Heterogeneity-unaware, as the artifact: the plan sees one pool of all GPUs; jobs get workers on a virtual
cluster of servers of the smallest node size (``schedule_jobs_on_workers``: by decreasing scale factor, kept on
their previous workers when those are free, else from a forward server pointer), servers in GPU-type order; each
job's GPU type is the one holding most of its virtual GPUs, and per type the jobs are packed again by decreasing
scale factor onto the servers with the most free GPUs, a job that does not fit its type getting nothing
(``repair_allocations_mip_fix``). Returns ``Decision(nodes=...)``. Rigid: requested GPUs and batch size.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import time
from collections import Counter
from collections.abc import Mapping
from typing import Any

import numpy as np

from ...errors import InputError
from ...problem import SolveOptions
from ...shockwave import ShockwavePlan, ShockwaveSpec, fill_rounds, solve_spec
from ...sia import Cluster
from .base import Decision, JobView, RoundState
from .gavel import gavel_throughputs, remaining_steps

__all__ = ["NODE_MODES", "ShockwavePolicy", "momentum_average", "relabel_nodes", "repair_to_types", "virtual_servers",
           "virtual_workers"]

#: how the policy maps the round's jobs onto real nodes: ``keep`` (an admitted job keeps its previous nodes when
#: they still fit it; the others packed as the artifact packs), ``scratch`` (every job packed from scratch each
#: round, as the artifact: jobs that keep running may move, and our engine restarts them), ``relabel`` (packed
#: from scratch, then each type's nodes renamed to keep jobs where they were: :func:`relabel_nodes`)
NODE_MODES = ("keep", "scratch", "relabel")


def momentum_average(series: list[tuple[int, float]], now: int, momentum: float = 0.9) -> float:
    """``finish_time_momentumed_average``: the estimates weighted by how many rounds each stood (the last up to
    ``now``), then ``momentum * that + (1 - momentum) * the last estimate``."""
    if not series:
        raise InputError("series", series, "needs at least one (round, estimate)")
    rounds = [r for r, _ in series] + [int(now)]
    return _momentum(np.asarray(rounds, dtype=np.float64), np.array([v for _, v in series], dtype=np.float64),
                     momentum)


class _Series:
    """A job's finish-time estimates as growing arrays (capacity doubled when full): the momentum average reads
    them without converting a Python list of every past estimate each round (a job alive for 30 h has 1,800)."""

    def __init__(self) -> None:
        self.rounds = np.zeros(16)
        self.vals = np.zeros(16)
        self.n = 0

    def append(self, rnd: int, est: float) -> None:
        if self.n + 1 >= self.rounds.size:  # one slot kept free for "now"
            self.rounds = np.concatenate([self.rounds, np.zeros(self.rounds.size)])
            self.vals = np.concatenate([self.vals, np.zeros(self.vals.size)])
        self.rounds[self.n], self.vals[self.n] = float(rnd), float(est)
        self.n += 1

    def average(self, now: int, momentum: float) -> float:
        """:func:`momentum_average` of the series at round ``now`` (the same float: same arrays, same operations)."""
        self.rounds[self.n] = float(int(now))
        return _momentum(self.rounds[:self.n + 1], self.vals[:self.n], momentum)


def _momentum(rounds: np.ndarray, vals: np.ndarray, momentum: float) -> float:
    """The momentum average from the estimates' rounds (then ``now``) and values, as floats."""
    windows = np.diff(rounds)
    probs = np.ones(1) if windows.max() == 0 else windows / windows.sum()
    avg = float((probs * vals).sum()) if probs.size == vals.size else float(vals[-1])
    return momentum * avg + (1.0 - momentum) * float(vals[-1])


def virtual_workers(order: list[tuple[str, int]], previous: dict[str, tuple[int, ...]], servers: int,
                    per_server: int) -> dict[str, tuple[int, ...]]:
    """Shockwave's own placement on its homogeneous pool (``schedule_jobs_on_workers``): jobs ``(id, GPUs)`` by
    decreasing GPUs (stable); per size, first the jobs whose ``previous`` workers are all still free keep them,
    then the others take free workers from a forward server pointer. Worker ``w`` is on server ``w // per_server``."""
    jobs = sorted(order, key=lambda e: -e[1])
    pools = [list(range(s * per_server, (s + 1) * per_server)) for s in range(servers)]
    taken: set[int] = set()
    out: dict[str, tuple[int, ...]] = {}
    top = servers * per_server
    ptr = 0
    for size in sorted({g for _, g in jobs}, reverse=True):
        mine = [j for j, g in jobs if g == size]
        for j in mine:
            prev = previous.get(j)
            # (previous workers past the pool: servers gone since, a node down or smaller in a live cluster)
            if prev is not None and len(prev) == size and not any(w in taken or w >= top for w in prev):
                out[j] = prev
                taken.update(prev)
        for j in mine:
            got = list(out.get(j, ()))
            while len(got) < size and ptr < servers:
                if not pools[ptr]:
                    ptr += 1
                    continue
                w = pools[ptr].pop(0)
                if w not in taken:
                    got.append(w)
                    taken.add(w)
            if len(got) == size:
                out[j] = tuple(got)
            else:  # cannot happen while the round's jobs fit the pool; kept out rather than half-placed
                taken.difference_update(got)
    return out


def virtual_servers(cluster: Cluster, per_server: int) -> tuple[list[tuple[str, str]], list[int]]:
    """The virtual servers of the artifact's packing, in type order: ((GPU type, node id) of each, GPUs each
    holds). A node of ``g`` GPUs holds ``max(g // per_server, 1)`` servers (GPUs past a multiple of
    ``per_server`` unused, as published); server ``s`` of a node holds ``min(per_server, g - s * per_server)`` of
    its GPUs, so a node smaller than a server (a node with failed GPUs, a smaller node of a type) is one server of
    its own GPUs, never more. On nodes of one size per type every server holds ``per_server`` GPUs."""
    servers: list[tuple[str, str]] = []
    gpus: list[int] = []
    for t in cluster.gpu_types:
        for nid, g in zip(cluster.node_ids(t.name), t.sizes, strict=True):
            k = max(g // per_server, 1)
            servers.extend([(t.name, nid)] * k)
            gpus.extend(min(per_server, g - s * per_server) for s in range(k))
    return servers, gpus


def repair_to_types(cluster: Cluster, workers: dict[str, tuple[int, ...]], per_server: int,
                    previous: Mapping[str, Mapping[str, int]] | None = None) -> dict[str, dict[str, int]]:
    """The artifact's ``repair_allocations_mip_fix``: virtual server ``s`` is the ``s``-th server of
    ``per_server`` GPUs in type order (a node of ``g`` GPUs holds ``g / per_server`` of them; on nodes of unequal
    sizes, :func:`virtual_servers`: a node smaller than a server is one server of its own GPUs); a job's type is the
    one holding most of its workers (ties: the first seen); per type (cluster order) its jobs by decreasing GPUs
    (stable) are admitted while the type's free GPUs hold them (a job that does not fit gets nothing) and take GPUs
    from the servers with the most free ones (ties: the first). ``previous`` (job id -> {node id: GPUs} it holds
    now): an admitted job whose previous nodes are all of its type, hold its GPU count and are still free keeps
    them first (the artifact packs from scratch, but its simulator restarts a job only when the shape of its
    placement changes, ``job.py`` ``reallocate``: node identity within a type is free there, not in our engine).
    Returns job id -> {node id: GPUs} (jobs that got nothing are absent)."""
    vserver, held = virtual_servers(cluster, per_server)
    primary: dict[str, list[tuple[str, int]]] = {t: [] for t in cluster.type_names}
    for j, ws in workers.items():
        counts = Counter(vserver[w // per_server][0] for w in ws)
        top = max(counts.values())
        primary[next(t for t in counts if counts[t] == top)].append((j, len(ws)))
    prev = previous or {}
    out: dict[str, dict[str, int]] = {}
    for name in cluster.type_names:
        free = Counter({s: held[s] for s, (tt, _) in enumerate(vserver) if tt == name})
        node_free = Counter(dict(zip(cluster.node_ids(name), cluster[name].sizes, strict=True)))
        admitted: list[tuple[str, int]] = []
        left = sum(free.values())
        for j, need in sorted(primary[name], key=lambda e: -e[1]):
            if left >= need:
                admitted.append((j, need))
                left -= need
        rest = []
        for j, need in admitted:
            was = dict(prev.get(j, {}))
            if was and sum(was.values()) == need and all(node_free.get(n, 0) >= c for n, c in was.items()):
                for n, c in was.items():  # c GPUs of node n, from its virtual servers in order
                    node_free[n] -= c
                    for sv in (sv for sv, (tt, nn) in enumerate(vserver) if tt == name and nn == n):
                        d = min(free[sv], c)
                        free[sv] -= d
                        c -= d
                out[j] = {n: int(c) for n, c in was.items()}
            else:
                rest.append((j, need))
        for j, need in rest:
            nodes: dict[str, int] = {}
            while need > 0:
                sv, c = free.most_common(1)[0]
                k = min(c, need)
                nid = vserver[sv][1]
                nodes[nid] = nodes.get(nid, 0) + k
                free[sv] -= k
                node_free[nid] -= k
                need -= k
            out[j] = nodes
    return out


def relabel_nodes(cluster: Cluster, nodes: Mapping[str, Mapping[str, int]],
                  previous: Mapping[str, Mapping[str, int]]) -> dict[str, dict[str, int]]:
    """``nodes`` (job id -> {node id: GPUs}) with the nodes of each type renamed so that jobs stay where they
    were: the placement's shape is kept (every job's GPUs per node, so its speed), only which node of a type plays
    which part changes. Per type (and node size: a node is renamed only to a node of its own GPUs), new node ``n``
    becomes old node ``m`` by the assignment maximising the GPUs the jobs keep (``sum_j min(GPUs of j on n now, on
    m before)``; ties: a node keeps its own name). The artifact's
    simulator restarts a job only when its placement's shape changes (``job.py`` ``reallocate``); our engine
    restarts it when its nodes change, so renaming keeps a job on its nodes wherever the shape from scratch allows
    (on saturn/1 most restarts come from the plan switching jobs, not from moves: 38.2 per job against 40.5 from
    scratch, card ``formulations/shockwave.md``)."""
    from scipy.optimize import linear_sum_assignment

    rename: dict[str, str] = {}
    # per type, and within a type per node size: a node is renamed only to a node of its own GPUs (one group on
    # nodes of one size per type)
    groups: dict[tuple[str, int], list[str]] = {}
    for t in cluster.gpu_types:
        for nid, g in zip(cluster.node_ids(t.name), t.sizes, strict=True):
            groups.setdefault((t.name, g), []).append(nid)
    for ids in groups.values():
        pos = {n: i for i, n in enumerate(ids)}
        k = len(ids)
        score = np.zeros((k, k))
        for j, alloc in nodes.items():
            now = [(pos[n], c) for n, c in alloc.items() if n in pos]
            was = [(pos[m], c) for m, c in previous.get(j, {}).items() if m in pos]
            for (a, c), (b, c0) in itertools.product(now, was):
                score[a, b] += min(c, c0)
        rows, cols = linear_sum_assignment(-(score * (k + 1) + np.eye(k)))
        rename.update({ids[r]: ids[c] for r, c in zip(rows.tolist(), cols.tolist(), strict=True)})
    return {j: {rename.get(n, n): c for n, c in alloc.items()} for j, alloc in nodes.items()}


class ShockwavePolicy:
    """``shockwave``: the Sia artifact's Shockwave baseline. Options (defaults: the artifact's
    ``multi_simulator_unaware.py``): ``rounds`` (the planning window, ``--nfuture 5``), ``k`` (1e-9), ``lam`` (12),
    ``rho_max`` (1), ``momentum`` (0.9), ``time_limit`` (15 s per model) and ``mip_rel_gap`` (1e-3) as its Gurobi
    call, ``backend`` (any schedopt backend that solves MILPs; default ``highs``), ``reopt_rounds`` (re-plan every
    that many rounds and whenever the active jobs change; 1 as the Sia artifact, 8 in uw-mad-dash/shockwave),
    ``nodes`` (:data:`NODE_MODES`: ``keep``, the default; ``scratch``, the artifact's packing; ``relabel``)."""

    name = "shockwave"
    adaptive = False

    def __init__(self, *, backend: str = "highs", rounds: int = 5, k: float = 1e-9, lam: float = 12.0,
                 rho_max: float = 1.0, momentum: float = 0.9, time_limit: float | None = 15.0,
                 mip_rel_gap: float = 1e-3, reopt_rounds: int = 1, nodes: str = "keep") -> None:
        if not isinstance(backend, str) or not backend:
            raise InputError("backend", backend, "must be a backend name")
        if isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 1:
            raise InputError("rounds", rounds, "must be a whole number of rounds >= 1")
        if isinstance(reopt_rounds, bool) or not isinstance(reopt_rounds, int) or reopt_rounds < 1:
            raise InputError("reopt_rounds", reopt_rounds, "must be a whole number of rounds >= 1")
        if nodes not in NODE_MODES:
            raise InputError("nodes", nodes, f"must be one of {', '.join(NODE_MODES)}")
        if not (isinstance(momentum, (int, float)) and 0.0 <= momentum <= 1.0):
            raise InputError("momentum", momentum, "must be a number in [0, 1]")
        self.backend = backend
        self.rounds = rounds
        self.reopt_rounds = reopt_rounds
        self.nodes = nodes
        self.k, self.lam, self.rho_max = float(k), float(lam), float(rho_max)
        self.momentum = float(momentum)
        self.options = SolveOptions(backend=backend, time_limit=time_limit, mip_rel_gap=mip_rel_gap)
        self._series: dict[str, _Series] = {}
        self._total: dict[str, float] = {}
        self._left: dict[str, tuple[tuple[str, float, int, float], float]] = {}
        self._virtual: dict[str, tuple[int, ...]] = {}
        self._xput: dict[tuple[int, int, int], tuple[Any, np.ndarray]] = {}
        self._last_round = -1
        self._plan_rounds: dict[int, list[str]] = {}
        self._active: tuple[str, ...] = ()
        self._solved_at = -1
        self._stuck: list[str] = []

    def _steps_left(self, v: JobView) -> float:
        """:func:`remaining_steps` of ``v``, recomputed only when what it reads changed (a job that did not run
        keeps its progress: most jobs of a contended round)."""
        key = (v.application, float(v.progress), int(v.batch_size), float(v.estimate.init_batch))
        hit = self._left.get(v.id)
        if hit is None or hit[0] != key:
            hit = self._left[v.id] = (key, remaining_steps(v))
        return hit[1]

    def spec(self, state: RoundState) -> tuple[ShockwaveSpec, list[JobView], list[str]]:
        """This round's spec (the jobs that can run on some GPU type), those jobs, and the ids of the others."""
        X, sf = gavel_throughputs(state.cluster, state.jobs, self._xput)
        can = (X > 0).any(axis=1)
        run = np.flatnonzero(can).tolist()
        jobs = [state.jobs[j] for j in run]
        stuck = [state.jobs[j].id for j in np.flatnonzero(~can).tolist()]
        step = np.array([float(np.mean(float(v.batch_size) / X[j][X[j] > 0])) for j, v in zip(run, jobs, strict=True)])
        for v in jobs:
            if v.id not in self._total:
                self._total[v.id] = remaining_steps(dataclasses.replace(v, progress=0.0))
        total = np.array([self._total[v.id] for v in jobs])
        left = np.minimum(np.array([self._steps_left(v) for v in jobs]), total)
        gpus = int(state.cluster.total_gpus.sum())
        share = min(1.0, gpus / max(len(jobs), 1))
        age = np.array([max(float(v.age), 0.0) for v in jobs])
        target = np.zeros(len(jobs))
        for i, v in enumerate(jobs):
            est = (age[i] + left[i] * step[i]) / share  # finish_time_uniform_share (the artifact divides the age too)
            ser = self._series.get(v.id)
            if ser is None:
                ser = self._series[v.id] = _Series()
            ser.append(state.round_index, est)
            target[i] = ser.average(state.round_index, self.momentum)
        spec = ShockwaveSpec(jobs=tuple(v.id for v in jobs), gpus=gpus, scale_factors=sf[run].astype(np.float64),
                             step_seconds=step, steps_done=total - left, steps_total=total, age=age,
                             ftf_target=target, rounds=self.rounds, round_seconds=float(state.round_seconds),
                             k=self.k, lam=self.lam, rho_max=self.rho_max)
        return spec, jobs, stuck

    def decide(self, state: RoundState) -> Decision:
        if not isinstance(state, RoundState):
            raise InputError("state", type(state).__name__, "must be a schedopt.sim.policies.RoundState")
        t0 = time.perf_counter()
        if state.round_index <= self._last_round:  # a new simulation with the same object: forget everything
            for d in (self._series, self._total, self._left, self._virtual, self._xput, self._plan_rounds):
                d.clear()
            self._active, self._solved_at = (), -1
        self._last_round = state.round_index
        alive = {v.id for v in state.jobs}
        for gone in [j for j in self._series if j not in alive]:
            self._series.pop(gone, None)
            self._total.pop(gone, None)
            self._left.pop(gone, None)
        active = tuple(sorted(alive))
        # re-plan every reopt_rounds rounds (the artifact: REOPT_ROUNDS = 1) and whenever the active set changes
        due = (active != self._active or state.round_index - self._solved_at >= self.reopt_rounds
               or state.round_index not in self._plan_rounds)
        self._active = active
        plan: ShockwavePlan | None = None
        if due:
            spec, jobs, self._stuck = self.spec(state)
            if not jobs:
                self._virtual, self._plan_rounds = {}, {}
                return Decision(nodes={}, info={"jobs": len(state.jobs), "unschedulable": self._stuck})
            plan = solve_spec(spec, self.options)
            if plan.has_solution:
                window = plan.rounds
            else:  # no plan within the limits (the artifact would stop): the work-conserving fill alone
                window = [[spec.jobs[j] for j in r]
                          for r in fill_rounds(spec, np.zeros((spec.num_jobs, spec.rounds), dtype=bool))]
            self._plan_rounds = {state.round_index + t: r for t, r in enumerate(window)}
            self._solved_at = state.round_index
        now = self._plan_rounds[state.round_index]
        size = {v.id: int(v.requested_gpus) for v in state.jobs}
        per = int(state.cluster.gpus_per_node.min())
        # the pool's servers: the cluster's GPUs in servers of ``per``; on unequal nodes one per server the nodes
        # hold (:func:`virtual_servers`: a node smaller than a server is one, and the repair packs by its own GPUs)
        servers = int(state.cluster.total_gpus.sum()) // per
        if not state.cluster.uniform:
            servers = len(virtual_servers(state.cluster, per)[0])
        virt = virtual_workers([(j, size[j]) for j in now], self._virtual, servers, per)
        held = {v.id: v.current_nodes for v in state.jobs if v.current_nodes}
        nodes = repair_to_types(state.cluster, virt, per, held if self.nodes == "keep" else None)
        if self.nodes == "relabel":
            nodes = relabel_nodes(state.cluster, nodes, held)
        self._virtual = {j: w for j, w in virt.items() if j in nodes}  # the artifact forgets a repaired-away job
        info: dict[str, Any] = {"jobs": len(state.jobs), "replanned": due, "running": len(nodes),
                                "repaired_away": sorted(set(virt) - set(nodes)), "unschedulable": self._stuck}
        if plan is not None:
            info["stage"] = plan.stage if plan.has_solution else "none"
            info["max_rho"] = float(plan.rho.max()) if plan.rho.size else math.nan
        info["seconds"] = time.perf_counter() - t0
        return Decision(nodes=nodes, answer=plan, info=info)
