"""Pollux (OSDI'21) as a :mod:`schedopt.sim` policy: ``pollux`` (the published genetic search over node-level
allocations) and ``pollux-exact`` (the same objective, solved exactly over Sia-style configurations).

Objective (``formulations/sim_policies.md``, from petuum/adaptdl ``osdi21-artifact`` ``simulator/pollux.py``): for
the active jobs ``j = 1..J`` in the order (attained GPU-seconds, arrival, id),

* ``speedup_j(A) = goodput_j(A) / goodput_j(fair share)``, the fair share being ``ceil(G / J)`` GPUs on
  ``ceil(N / G)`` nodes (``G`` GPUs, ``N`` nodes): the published simulator's base goodput,
* scaled by ``N / G`` (the published "dominant share x nodes": a node's worth of GPUs has speedup 1),
* times the re-allocation factor ``max(age - restarts * 30, 0) / (age + 30)`` when the job's allocation changes,
* combined by the power mean with ``p = -1`` and the published ``+1e-3``:
  ``M = (1/J sum_j (s_j + 1e-3)^p)^(1/p)``, maximised.

``pollux`` searches node-level allocation matrices ``(jobs x nodes)`` with the published operators (single-point
crossover over jobs, the three mutations, the repair: one GPU type per job, at most one distributed job per node,
at most ``max_replicas`` GPUs and ``max_nodes`` nodes per job, node capacity in job order) and returns
``Decision(nodes=...)``; ``pollux-exact`` maximises the same ``M`` over Sia's configurations (power-of-two GPUs on
one node, or whole nodes) as a multiple-choice knapsack (a :class:`~schedopt.LinearModel` whose pairs and capacity
rows come from :class:`schedopt.sia.SiaProblem`) and returns ``Decision(allocation=...)``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from ...errors import InputError
from ...model import LinearModel
from ...problem import Answer, heuristic_termination
from ...results import SolveResult, Termination, TerminationReason, Timings
from ...sia import Cluster, Config, Job, SiaProblem, generate_configs
from .base import Decision, JobView, RoundState

__all__ = [
    "EPS",
    "P_FAIRNESS",
    "RESTART_DELAY_S",
    "PolluxAnswer",
    "PolluxExactPolicy",
    "PolluxObjective",
    "PolluxPolicy",
    "node_table",
]

#: the power-mean exponent of the published policy (``p = -1``: more negative is fairer)
P_FAIRNESS = -1.0
#: the published additive guard inside the power mean, ``(s + 1e-3)^p``
EPS = 1e-3
#: the re-allocation delay the published policy charges in its restart factor (seconds)
RESTART_DELAY_S = 30.0
#: the published cap on GPUs per job ("simulator can't handle more")
MAX_REPLICAS = 64
#: the published cap on nodes per job (repair step)
MAX_NODES = 16


@dataclass(kw_only=True, eq=False)
class PolluxAnswer(Answer):
    """One Pollux round: ``nodes`` (job id -> {node id: GPUs}) for ``pollux``, ``allocation`` (job id ->
    configuration or None) for ``pollux-exact``; ``speedups`` the scaled, restart-penalised speedup per job of the
    returned choice; ``objective_value`` the power mean ``M``."""

    nodes: dict[str, dict[str, int]] = field(default_factory=dict)
    allocation: dict[str, Config | None] = field(default_factory=dict)
    speedups: dict[str, float] = field(default_factory=dict)
    generations: int = 0

    def rows(self) -> list[dict[str, Any]]:
        out = []
        for jid, s in self.speedups.items():
            c = self.allocation.get(jid)
            nd = self.nodes.get(jid, {})
            out.append({"job": jid, "speedup": s, "config": c.label if c else "-",
                        "nodes": " ".join(f"{k}:{v}" for k, v in nd.items()) or "-"})
        return out

    def to_dict(self) -> dict[str, Any]:
        d = super().to_dict()
        d["nodes"] = {j: dict(v) for j, v in self.nodes.items()}
        d["allocation"] = {j: (c.label if c else None) for j, c in self.allocation.items()}
        d["speedups"] = {j: float(s) for j, s in self.speedups.items()}
        d["generations"] = self.generations
        return d


def _power_mean(s: np.ndarray, p: float, axis: int = -1) -> np.ndarray:
    """``(mean (s + EPS)^p)^(1/p)`` along ``axis`` (the published form)."""
    return np.mean((s + EPS) ** p, axis=axis) ** (1.0 / p)


def _node_table(cluster: Cluster) -> tuple[list[str], np.ndarray, np.ndarray]:
    """(node ids in cluster order, GPUs per node, type index per node)."""
    ids: list[str] = []
    cap, typ = [], []
    for k, t in enumerate(cluster.gpu_types):
        ids += cluster.node_ids(t.name)
        cap += [t.gpus_per_node] * t.nodes
        typ += [k] * t.nodes
    return ids, np.array(cap, dtype=np.int64), np.array(typ, dtype=np.int64)


class PolluxObjective:
    """Pollux's per-round objective over the active jobs of ``state`` (shared by both policies).

    ``jobs`` are in the published order (attained GPU-seconds, arrival, id); ``base`` the fair-share goodput per
    job on ``reference_type`` (the GPU type with the most GPUs; the fair share of a homogeneous cluster is the
    published one), ``scale = N / G``, ``restart_factor`` the published factor with a 30 s delay, ``cap`` the GPUs a
    job may hold (``JobView.max_gpus``, which carries the growth rule ``max(2 x most GPUs run on, 1)``, and 64),
    ``rigid`` the exact GPU count of rigid jobs (0 for adaptive ones). :meth:`goodput_points` and :meth:`speedups`
    evaluate (job, type, nodes, replicas) points through goodput tables shared by jobs with the same estimate.
    """

    def __init__(self, state: RoundState, *, p: float = P_FAIRNESS,
                 restart_delay: float = RESTART_DELAY_S, max_replicas: int = MAX_REPLICAS,
                 max_nodes: int = MAX_NODES, cache: dict[tuple[int, int], tuple[Any, np.ndarray]] | None = None,
                 num_nodes: int | None = None, job_types: Mapping[str, str | None] | None = None) -> None:
        if not isinstance(state, RoundState):
            raise InputError("state", type(state).__name__, "must be a schedopt.sim.policies.RoundState")
        if not (isinstance(p, (int, float)) and math.isfinite(p) and p != 0):
            raise InputError("p", p, "must be a finite non-zero number (the power-mean exponent; Pollux uses -1)")
        self.state = state
        self.cluster = state.cluster
        self.p = float(p)
        jobs = sorted(state.jobs, key=lambda v: (v.attained_gpu_seconds, v.arrival, v.id))
        self.jobs: tuple[JobView, ...] = tuple(jobs)
        self.ids = [v.id for v in jobs]
        J = len(jobs)
        self.types = self.cluster.type_names
        total = self.cluster.total_gpus
        G = int(total.sum())
        N = int(self.cluster.nodes.sum()) if num_nodes is None else int(num_nodes)
        if N < 1:
            raise InputError("num_nodes", num_nodes, "must be >= 1 (the nodes the policy sees)")
        self.scale = N / G if G else 0.0
        self.reference_type = self.types[int(np.argmax(total))]
        age = np.array([max(v.age, 0.0) for v in jobs], dtype=np.float64)
        restarts = np.array([v.restarts for v in jobs], dtype=np.float64)
        self.restart_factor = np.maximum(age - restarts * restart_delay, 0.0) / (age + restart_delay) \
            if restart_delay > 0 else np.ones(J)
        self.cap = np.minimum(np.array([v.max_gpus for v in jobs], dtype=np.int64), min(int(max_replicas), G))
        self.rigid = np.array([0 if v.adaptive else int(v.requested_gpus) for v in jobs], dtype=np.int64)
        self.cap = np.where(self.rigid > 0, self.rigid, self.cap)
        self._cache = cache if cache is not None else {}
        self._G: np.ndarray | None = None
        self.max_nodes = max(min(int(max_nodes), N), 1)
        self.max_reps = max(min(int(max_replicas), G), 1)
        fair_r = max(math.ceil(G / J), 1) if J else 1
        fair_n = max(math.ceil(N / G), 1) if G else 1
        self.fair_replicas = fair_r
        # heterogeneity-unaware view (``pollux-unaware``): one GPU type per job whatever the nodes' types, -1 for a
        # job with no throughput model yet (linear speedup r / fair_r, as published)
        self.view: np.ndarray | None = None
        if job_types is not None:
            for jid, t in job_types.items():
                if t is not None and t not in self.types:
                    raise InputError(f"job_types[{jid}]", t, f"is no GPU type of the cluster {list(self.types)}")
            self.view = np.array([self.types.index(t) if (t := job_types.get(i)) is not None else -1
                                  for i in self.ids], dtype=np.int64)
        base = np.zeros(J)
        for j in range(J):
            if self.view is not None and self.view[j] < 0:
                base[j] = float(fair_r)
                continue
            ref = self.reference_type if self.view is None else self.types[int(self.view[j])]
            b = self.goodput_points(j, ref, np.array([fair_n]), np.array([max(fair_r, fair_n)]))[0]
            if not b > 0:  # the fair share is infeasible for this job's batch limits: fall back to 1 GPU
                b = self.goodput_points(j, ref, np.array([1]), np.array([1]))[0]
            if not b > 0:
                b = max((self.goodput_points(j, t, np.array([1]), np.array([1]))[0] for t in self.types), default=0.0)
            base[j] = b if b > 0 else 1.0
        self.base = base

    # ------------------------------------------------------------------ goodput
    def _table(self, j: int) -> np.ndarray:
        """The job's goodput table (types x nodes+1 x replicas+1; NaN: not computed yet), shared by every job with
        the same estimate object (and batch, for rigid jobs) and kept across rounds while that object is in use."""
        v = self.jobs[j]
        key = _cache_key(v)
        entry = self._cache.get(key)
        shape = (len(self.types), self.max_nodes + 1, self.max_reps + 1)
        if entry is None or entry[0] is not v.estimate or entry[1].shape != shape:
            entry = (v.estimate, np.full(shape, np.nan))
            self._cache[key] = entry
        return entry[1]

    def _compute(self, j: int, t: int, nodes: np.ndarray, replicas: np.ndarray) -> np.ndarray:
        v = self.jobs[j]
        est = v.estimate
        gpu_type = self.types[t]
        if gpu_type not in est.params:
            return np.zeros(len(nodes))
        nn, rr = nodes.astype(np.int64), replicas.astype(np.int64)
        if v.adaptive:
            vals = np.asarray(est.goodput(gpu_type, nodes=nn, replicas=rr).goodput, dtype=np.float64)
        else:
            B = float(v.batch_size)
            vals = np.asarray(est.throughput(gpu_type, nn, rr, B), dtype=np.float64) * float(est.efficiency(B))
        return np.where(np.isfinite(vals) & (vals > 0), vals, 0.0)

    def goodput_points(self, j: int, gpu_type: str, nodes: np.ndarray, replicas: np.ndarray) -> np.ndarray:
        """The job's estimated goodput at the points (its fixed-batch goodput for rigid jobs); 0 where the job has no
        model for ``gpu_type`` or the point is infeasible. Points inside the table are cached."""
        t = self.types.index(gpu_type)
        nodes = np.asarray(nodes, dtype=np.int64)
        replicas = np.asarray(replicas, dtype=np.int64)
        inside = (nodes <= self.max_nodes) & (replicas <= self.max_reps)
        out = np.empty(len(nodes))
        if (~inside).any():
            out[~inside] = self._compute(j, t, nodes[~inside], replicas[~inside])
        if inside.any():
            tab = self._table(j)
            n_in, r_in = nodes[inside], replicas[inside]
            vals = tab[t, n_in, r_in]
            miss = np.isnan(vals)
            if miss.any():
                flat = np.unique(n_in[miss] * (self.max_reps + 1) + r_in[miss])
                nm, rm = np.divmod(flat, self.max_reps + 1)
                tab[t, nm, rm] = self._compute(j, t, nm, rm)
                vals = tab[t, n_in, r_in]
            out[inside] = vals
        return out

    def speedups(self, jidx: np.ndarray, tidx: np.ndarray, nodes: np.ndarray, replicas: np.ndarray) -> np.ndarray:
        """Scaled speedups (before the restart factor) for flat arrays of (job, type index, nodes, replicas) within
        the caps (nodes <= max_nodes, replicas <= max_replicas); 0 where replicas is 0. With a heterogeneity-unaware
        view (``job_types``) the type index is ignored: each job is evaluated on its view type, or linearly
        (``r / fair_r``) when it has no model yet."""
        out = np.zeros(jidx.shape, dtype=np.float64)
        on = replicas > 0
        if self.view is not None:
            lin = on & (self.view[jidx] < 0)
            out[lin] = replicas[lin] / self.base[jidx[lin]] * self.scale
            on &= ~lin
            tidx = np.where(on, self.view[jidx], 0)
        if not on.any():
            return out
        j, t, n, r = jidx[on], tidx[on], nodes[on], replicas[on]
        G = self._stack()
        vals = G[j, t, n, r]
        miss = np.isnan(vals)
        if miss.any():
            T = len(self.types)
            grp = j[miss] * T + t[miss]
            for g in np.unique(grp).tolist():
                sel = grp == g
                jj, tt = divmod(g, T)
                self.goodput_points(jj, self.types[tt], n[miss][sel], r[miss][sel])
            G = self._stack(refresh=True)
            vals = G[j, t, n, r]
        out[on] = vals / self.base[j] * self.scale
        return out

    def _stack(self, refresh: bool = False) -> np.ndarray:
        if refresh or self._G is None:
            self._G = np.stack([self._table(j) for j in range(len(self.jobs))]) if self.jobs else np.zeros((0,))
        return self._G

    def mean(self, s: np.ndarray) -> np.ndarray:
        """The power mean of scaled (restart-penalised) speedups over the last axis."""
        return _power_mean(s, self.p)


# ====================================================================================== genetic search
class _Search:
    """The published genetic search on (population x jobs x nodes) integer arrays (vectorised over the population).

    Operators as in ``simulator/pollux.py`` of the artifact: crossover = single point over jobs; mutation = (1)
    reset a job's row to the current allocation (prob. 0.1 per job), (2) zero a job's entries (prob. 0.1 each, for
    10% of jobs), (3) raise entries on nodes with free GPUs to a random count up to the node's capacity; repair =
    one GPU type per job (added for heterogeneous clusters: the type holding most of its GPUs), at most one
    distributed job per node (the first in job order keeps it), at most ``cap`` GPUs and ``max_nodes`` nodes per job
    (over a random node order), node capacity in job order, rigid jobs exactly their count or nothing.
    """

    def __init__(self, obj: PolluxObjective, base: np.ndarray, cap_node: np.ndarray, node_type: np.ndarray,
                 rng: np.random.Generator, max_nodes: int) -> None:
        self.obj = obj
        self.base = base
        self.cap_node = cap_node
        self.node_type = node_type
        self.rng = rng
        self.max_nodes = max_nodes
        self.J, self.N = base.shape
        self.T = int(node_type.max()) + 1 if node_type.size else 0
        self.onehot = (node_type[:, None] == np.arange(self.T)[None, :]).astype(np.int64)  # (N, T)
        # nodes of each type contiguous, every type present (the node tables are built so): per-type sums by
        # np.add.reduceat, the same integers as ``s @ onehot`` without numpy's BLAS-less integer matmul
        counts = np.bincount(node_type, minlength=self.T) if node_type.size else np.zeros(0, np.int64)
        contiguous = node_type.size > 0 and bool(np.all(np.diff(node_type) >= 0)) and bool(np.all(counts > 0))
        self._type_starts = np.r_[0, np.cumsum(counts)[:-1]] if contiguous else None

    def per_type(self, s: np.ndarray) -> np.ndarray:
        """GPUs of each (individual, job) per GPU type: ``s @ onehot``."""
        if self._type_starts is not None:
            return np.add.reduceat(s, self._type_starts, axis=2)
        return s @ self.onehot

    def repair(self, s: np.ndarray) -> np.ndarray:
        s = s.copy()
        rng = self.rng
        # one GPU type per job: keep the type holding most of its GPUs (ties: the first type)
        if self.T > 1:
            keep = np.argmax(self.per_type(s), axis=2)  # (P, J): the type holding most of the job's GPUs
            s *= self.node_type[None, None, :] == keep[:, :, None]
        # at most one distributed job per node (the first in job order keeps the node)
        distributed = np.count_nonzero(s, axis=2) > 1
        mask = (s > 0) & distributed[:, :, None]
        s[np.cumsum(mask, axis=1) > 1] = 0
        # at most cap GPUs and max_nodes nodes per job, over a random node order
        shuffle = np.argsort(rng.random(s.shape), axis=2)
        flat = (shuffle + self._row_offsets(s.shape)).ravel()  # take_along_axis(s, shuffle, 2) as one gather
        s = s.ravel()[flat].reshape(s.shape)
        s = _diff0(np.minimum(np.cumsum(s, axis=2), self.obj.cap[None, :, None]), axis=2)
        s[np.cumsum(s > 0, axis=2) > self.max_nodes] = 0  # nodes past the first max_nodes the job uses
        back = np.empty(s.size, dtype=s.dtype)  # undo the shuffle: scatter back instead of argsort + gather
        back[flat] = s.ravel()
        s = back.reshape(s.shape)
        # node capacity, in job order
        s = _diff0(np.minimum(np.cumsum(s, axis=1), self.cap_node[None, None, :]), axis=1)
        # rigid jobs: exactly their count or nothing
        rig = self.obj.rigid
        if rig.any():
            bad = (rig[None, :] > 0) & (s.sum(axis=2) != rig[None, :])
            s[bad] = 0
        return s

    def _row_offsets(self, shape: tuple[int, ...]) -> np.ndarray:
        """``(p * J + j) * N`` for every (individual, job): row starts of the flattened population."""
        off = getattr(self, "_offsets", None)
        if off is None or off.shape[:2] != tuple(shape[:2]):
            off = self._offsets = (np.arange(shape[0] * shape[1], dtype=np.int64) * shape[2]).reshape(
                shape[0], shape[1], 1)
        return off

    def mutate(self, s: np.ndarray) -> np.ndarray:
        rng = self.rng
        P = s.shape[0]
        reset = rng.random((P, self.J)) < 0.1
        s = np.where(reset[:, :, None], self.base[None], s)
        prob = np.where(rng.random((P, self.J)) < 0.1, 0.1, 0.0)
        s = np.where(rng.random(s.shape) < prob[:, :, None], 0, s)
        free = (self.cap_node[None, :] - s.sum(axis=1) >= 1)[:, None, :]  # (P, 1, N): node has a free GPU
        # normalised over the jobs (axis 1) as published: each node with a free GPU gets about one raise
        prob1 = free / max(self.J, 1)
        mask2 = (s > 0) & free
        prob2 = mask2 / np.maximum(mask2.sum(axis=1, keepdims=True), 1)
        m = rng.random(s.shape) < prob1 + prob2 - prob1 * prob2
        lo = s[m]
        hi = np.broadcast_to(self.cap_node[None, None, :], s.shape)[m]
        lo = np.minimum(lo, hi)
        s = s.copy()
        s[m] = lo + np.floor(rng.random(lo.size) * (hi - lo + 1)).astype(np.int64)  # uniform in lo..hi
        return s

    def crossover(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        points = self.rng.integers(0, self.J, size=(a.shape[0], 1)) if self.J else np.zeros((a.shape[0], 1), int)
        first = (np.arange(self.J)[None, :] < points)[:, :, None]
        return np.concatenate([np.where(first, a, b), np.where(first, b, a)])

    def evaluate(self, s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(power mean per individual, scaled restart-penalised speedups (P x J))."""
        P = s.shape[0]
        reps = s.sum(axis=2)
        nn = np.count_nonzero(s, axis=2)
        tix = np.argmax(self.per_type(s), axis=2) if self.T > 1 else np.zeros((P, self.J), dtype=np.int64)
        jj = np.broadcast_to(np.arange(self.J)[None, :], (P, self.J))
        sp_ = self.obj.speedups(jj.ravel(), tix.ravel(), nn.ravel(), reps.ravel()).reshape(P, self.J)
        changed = np.any(s != self.base[None], axis=2)
        sp_ = sp_ * np.where(changed, self.obj.restart_factor[None, :], 1.0)
        return self.obj.mean(sp_), sp_

    def run(self, init: np.ndarray, pop_size: int, generations: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
        """(population, fitness, speedups of the population, generations run), best first."""
        pop = self.repair(init)
        pop = pop[_first_unique(pop)]
        fit, spd = self.evaluate(pop)
        rng = self.rng
        gens = 0
        for _ in range(generations):
            n_mat = max(pop_size // 2, 1)
            # binary tournaments on the fitness
            cand = rng.integers(0, pop.shape[0], size=(2 * n_mat, 2))
            win = np.where(fit[cand[:, 0]] >= fit[cand[:, 1]], cand[:, 0], cand[:, 1])
            kids = self.crossover(pop[win[:n_mat]], pop[win[n_mat:]])
            kids = self.repair(self.mutate(kids))
            kf, ks = self.evaluate(kids)
            allp = np.concatenate([pop, kids])
            allf = np.concatenate([fit, kf])
            alls = np.concatenate([spd, ks])
            first = _first_unique(allp)
            order = first[np.argsort(-allf[first], kind="stable")][:pop_size]
            pop, fit, spd = allp[order], allf[order], alls[order]
            gens += 1
        return pop, fit, spd, gens


def _diff0(c: np.ndarray, axis: int) -> np.ndarray:
    """``np.diff(c, axis=axis, prepend=0)`` in place, without the concatenation (``c``: a fresh array)."""
    m = np.moveaxis(c, axis, -1)
    m[..., 1:] -= m[..., :-1].copy()
    return c


_HASH_W: dict[int, np.ndarray] = {}


def _first_unique(pop: np.ndarray) -> np.ndarray:
    """Sorted indices of the first occurrence of every distinct individual (rows compared through a 64-bit hash
    with fixed random weights, then exactly within equal hashes)."""
    flat = pop.reshape(pop.shape[0], -1)
    w = _HASH_W.get(flat.shape[1])
    if w is None:
        w = _HASH_W[flat.shape[1]] = np.random.default_rng(0x5EED).integers(1, 2**62, size=flat.shape[1])
    h = flat.astype(np.int64) @ w
    order = np.argsort(h, kind="stable")
    hs = h[order]
    same = np.r_[False, hs[1:] == hs[:-1]]
    same[1:] &= np.all(flat[order[1:]] == flat[order[:-1]], axis=1)
    return np.sort(order[~same])


def _cache_key(v: JobView) -> tuple[int, int]:
    """Jobs with the same estimate object share goodput tables (rigid ones also need the same batch); the cache
    holds the object, so its id is not reused while the entry lives."""
    return id(v.estimate), (0 if v.adaptive else int(v.batch_size))


class _Memory:
    """What a Pollux policy remembers between rounds: the goodput tables per job; reset when a new simulation
    starts (the round index goes back)."""

    def __init__(self) -> None:
        self.cache: dict[tuple[int, int], tuple[Any, np.ndarray]] = {}
        self.last_round = -1

    def update(self, state: RoundState) -> None:
        if state.round_index <= self.last_round:
            self.cache.clear()
            self.on_reset()
        self.last_round = state.round_index
        active = {_cache_key(v) for v in state.jobs}
        for k in [k for k in self.cache if k not in active]:
            del self.cache[k]

    def on_reset(self) -> None:
        pass


class PolluxPolicy(_Memory):
    """``pollux``: the published genetic search over node-level allocations (``Decision(nodes=...)``).

    ``population`` (100) and ``generations`` (100) as published; ``seed`` makes every round deterministic (the
    round's generator is seeded with ``(seed, round_index)``); the final population seeds the next round's search
    (the published warm start), together with the current allocation. ``p``, ``restart_delay``, ``max_replicas``
    and ``max_nodes`` are the published constants.
    """

    name = "pollux"
    adaptive = True

    def __init__(self, *, population: int = 100, generations: int = 100, seed: int = 0, p: float = P_FAIRNESS,
                 restart_delay: float = RESTART_DELAY_S, max_replicas: int = MAX_REPLICAS,
                 max_nodes: int = MAX_NODES) -> None:
        super().__init__()
        for fname, val, lo in (("population", population, 2), ("generations", generations, 0),
                               ("max_replicas", max_replicas, 1), ("max_nodes", max_nodes, 1)):
            if isinstance(val, bool) or not isinstance(val, (int, np.integer)) or val < lo:
                raise InputError(fname, val, f"must be an integer >= {lo}")
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
            raise InputError("seed", seed, "must be an integer")
        if not (isinstance(restart_delay, (int, float)) and math.isfinite(restart_delay) and restart_delay >= 0):
            raise InputError("restart_delay", restart_delay, "must be a finite number of seconds >= 0")
        if not (isinstance(p, (int, float)) and math.isfinite(p) and p != 0):
            raise InputError("p", p, "must be a finite non-zero number (Pollux uses -1)")
        self.population = int(population)
        self.generations = int(generations)
        self.seed = int(seed)
        self.p = float(p)
        self.restart_delay = float(restart_delay)
        self.max_replicas = int(max_replicas)
        self.max_nodes = int(max_nodes)
        self._prev: tuple[list[str], tuple[str, ...], np.ndarray] | None = None

    def on_reset(self) -> None:
        self._prev = None

    # ----------------------------------------------------------- the view the search works on (overridable)
    def objective(self, state: RoundState) -> PolluxObjective:
        """The round's objective (``pollux-unaware`` passes its own nodes, cap and per-job types)."""
        return PolluxObjective(state, p=self.p, restart_delay=self.restart_delay,
                               max_replicas=self.max_replicas, max_nodes=self.max_nodes, cache=self.cache)

    def columns(self, cluster: Cluster) -> tuple[list[str], np.ndarray, np.ndarray]:
        """(column ids, GPUs per column, GPU type index per column) of the search's allocation matrices: the
        cluster's nodes here."""
        return _node_table(cluster)

    def current_matrix(self, obj: PolluxObjective, col_ids: list[str]) -> np.ndarray:
        """The jobs' current allocations as a (jobs x columns) matrix (the search's base state)."""
        pos = {n: i for i, n in enumerate(col_ids)}
        base = np.zeros((len(obj.jobs), len(col_ids)), dtype=np.int64)
        for j, v in enumerate(obj.jobs):
            for n, c in (v.current_nodes or {}).items():
                if n not in pos:
                    raise InputError(f"jobs[{v.id}].current_nodes", n, "names no node of the cluster")
                base[j, pos[n]] += int(c)
        return base

    def to_nodes(self, obj: PolluxObjective, col_ids: list[str], best: np.ndarray) -> dict[str, dict[str, int]]:
        """The chosen (jobs x columns) matrix as job id -> {node id: GPUs} (the decision)."""
        nodes: dict[str, dict[str, int]] = {}
        for j, jid in enumerate(obj.ids):
            nz = np.flatnonzero(best[j])
            if nz.size:
                nodes[jid] = {col_ids[k]: int(best[j, k]) for k in nz.tolist()}
        return nodes

    def decide(self, state: RoundState) -> Decision:
        t0 = time.perf_counter()
        self.update(state)
        obj = self.objective(state)
        node_ids, cap_node, node_type = self.columns(state.cluster)
        J, N = len(obj.jobs), len(node_ids)
        if J == 0:
            self._prev = None
            ans = PolluxAnswer(termination=Termination(TerminationReason.OPTIMAL, detail="no active jobs"),
                               objective_value=math.nan, method=f"{self.name}-ga",
                               timings=Timings(build=0.0, solve=time.perf_counter() - t0))
            return Decision(nodes={}, answer=ans, info={"jobs": 0})
        base = self.current_matrix(obj, node_ids)
        init = [base[None]]
        if self._prev is not None and self._prev[1] == tuple(node_ids):
            prev_ids, _, prev_pop = self._prev
            src = {jid: i for i, jid in enumerate(prev_ids)}
            adapted = np.zeros((prev_pop.shape[0], J, N), dtype=np.int64)
            dst = [j for j, jid in enumerate(obj.ids) if jid in src]
            if dst:
                adapted[:, dst] = prev_pop[:, [src[obj.ids[j]] for j in dst]]
            init.append(adapted)
        rng = np.random.default_rng([self.seed, max(int(state.round_index), 0)])
        search = _Search(obj, base, cap_node, node_type, rng, self.max_nodes)
        t1 = time.perf_counter()
        pop, fit, spd, gens = search.run(np.concatenate(init), self.population, self.generations)
        t2 = time.perf_counter()
        self._prev = (list(obj.ids), tuple(node_ids), pop)
        nodes = self.to_nodes(obj, node_ids, pop[0])
        ans = PolluxAnswer(
            termination=heuristic_termination("pollux genetic search: no optimality proof"),
            objective_value=float(fit[0]), method=f"{self.name}-ga",
            timings=Timings(build=t1 - t0, solve=t2 - t1, decode=time.perf_counter() - t2),
            nodes=nodes, speedups={jid: float(spd[0, j]) for j, jid in enumerate(obj.ids)}, generations=gens,
        )
        return Decision(nodes=nodes, answer=ans, info={"jobs": J, "generations": gens})


# ====================================================================================== exact variant
class PolluxExactPolicy(_Memory):
    """``pollux-exact``: Pollux's objective maximised exactly over Sia's configurations.

    Maximising ``M`` for ``p < 0`` is minimising ``sum_j (s_j + 1e-3)^p``, separable per job: one binary per valid
    (job, configuration) pair with value ``(s_jc + 1e-3)^p - (1e-3)^p`` (the job left out scores ``(1e-3)^p``),
    at most one configuration per job, GPUs per type and Sia's virtual-node rows (pairs and rows from
    :class:`schedopt.sia.SiaProblem`). Solved by ``backend`` (default ``mckp``, exact); the answer's objective and
    bound are ``M`` and the bound on ``M`` the solver proved.
    """

    name = "pollux-exact"
    adaptive = True

    def __init__(self, *, backend: str | None = "mckp", time_limit: float | None = None, mip_rel_gap: float = 1e-6,
                 p: float = P_FAIRNESS, restart_delay: float = RESTART_DELAY_S,
                 max_replicas: int = MAX_REPLICAS) -> None:
        super().__init__()
        if backend is not None and not isinstance(backend, str):
            raise InputError("backend", backend, "must be a backend name or None")
        if not (isinstance(p, (int, float)) and math.isfinite(p) and p != 0):
            raise InputError("p", p, "must be a finite non-zero number (Pollux uses -1)")
        if isinstance(max_replicas, bool) or not isinstance(max_replicas, (int, np.integer)) or max_replicas < 1:
            raise InputError("max_replicas", max_replicas, "must be an integer >= 1")
        self.backend = backend or "mckp"
        self.time_limit = time_limit
        self.mip_rel_gap = mip_rel_gap
        self.p = float(p)
        self.restart_delay = float(restart_delay)
        self.max_replicas = int(max_replicas)

    def build(self, obj: PolluxObjective) -> tuple[LinearModel, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(model, job per column, configuration per column, scaled speedup per column, constant per job) for the
        round's objective; ``configs`` of the model are ``generate_configs(cluster)``."""
        cluster = obj.cluster
        table = generate_configs(cluster)
        J, C = len(obj.jobs), len(table)
        # scaled speedups of every (job, configuration), one goodput call per (job, GPU type)
        S = np.zeros((J, C))
        for k in range(len(cluster.type_names)):
            cols = np.flatnonzero(table.type_index == k)
            if not cols.size:
                continue
            for j in range(J):
                ok = cols[table.n_gpus[cols] <= obj.cap[j]]
                if obj.rigid[j]:
                    ok = ok[table.n_gpus[ok] == obj.rigid[j]]
                if ok.size:
                    S[j, ok] = obj.speedups(np.full(ok.size, j), np.full(ok.size, k), table.n_nodes[ok],
                                            table.n_gpus[ok])
        # a rigid count that is no configuration of the cluster cannot run: such a job keeps no pair (S row 0)
        counts = set(table.n_gpus.tolist())
        rigid = [bool(obj.rigid[j]) and int(obj.rigid[j]) in counts for j in range(J)]
        jobs = [Job(id=str(j), kind="rigid" if rigid[j] else "adaptive",
                    max_gpus=None if rigid[j] else max(int(obj.cap[j]), 1), max_profiled_gpus=max(int(obj.cap[j]), 1),
                    rigid_gpus=int(obj.rigid[j]) if rigid[j] else None) for j in range(J)]
        prob = SiaProblem(cluster, jobs, S, p=obj.p)
        pt = prob.valid_pairs()
        jj, cc = pt.job, pt.config
        cur = np.array([table.find(v.current) if v.current is not None else -1 for v in obj.jobs], dtype=np.int64)
        s = S[jj, cc] * np.where(cc != cur[jj], obj.restart_factor[jj], 1.0)
        v0 = EPS ** obj.p
        coef = (s + EPS) ** obj.p - v0
        P = len(jj)
        m = LinearModel("pollux_exact", sense="minimize" if obj.p < 0 else "maximize")
        labels = [f"{obj.ids[a]}@{table.labels[b]}" for a, b in zip(jj.tolist(), cc.tolist())]
        m.add_variables("x", P, kind="binary", labels=labels)
        col = np.arange(P)
        m.add_constraints("one_config_per_job", sp.csr_matrix((np.ones(P), (jj, col)), shape=(J, P)), upper=1,
                          labels=obj.ids)
        tix = table.type_index[cc]
        m.add_constraints("gpu_capacity", sp.csr_matrix((table.n_gpus[cc].astype(float), (tix, col)),
                                                        shape=(len(cluster.type_names), P)),
                          upper=cluster.total_gpus.astype(float), labels=cluster.type_names)
        A3, up3, lab3 = prob.virtual_rows()
        if A3.shape[0]:
            m.add_constraints("virtual_node_capacity", A3, upper=up3, labels=lab3)
        m.set_objective({"x": coef}, constant=J * v0)
        return m, jj, cc, s, np.full(J, v0)

    def decide(self, state: RoundState) -> Decision:
        from ...solve import solve

        t0 = time.perf_counter()
        self.update(state)
        obj = PolluxObjective(state, p=self.p, restart_delay=self.restart_delay,
                              max_replicas=self.max_replicas, cache=self.cache)
        J = len(obj.jobs)
        if J == 0:
            ans = PolluxAnswer(termination=Termination(TerminationReason.OPTIMAL, detail="no active jobs"),
                               method="pollux-exact", backend=self.backend)
            return Decision(allocation={}, answer=ans, info={"jobs": 0})
        m, jj, cc, s, _ = self.build(obj)
        table = generate_configs(obj.cluster)
        t1 = time.perf_counter()
        if m.num_cols == 0:
            res = SolveResult(Termination(TerminationReason.OPTIMAL, detail="no columns: no job fits anywhere"),
                              backend=self.backend, model=m, _x=np.zeros(0), _objective=m.constant, bound=m.constant)
        else:
            res = solve(m, self.backend, time_limit=self.time_limit, mip_rel_gap=self.mip_rel_gap)
        t2 = time.perf_counter()
        alloc: dict[str, Config | None] = dict.fromkeys(obj.ids)
        spd = dict.fromkeys(obj.ids, 0.0)
        value, bound = math.nan, math.nan
        if res.has_solution:
            x = res.values["x"]
            chosen = np.flatnonzero(x > 0.5)
            for c in chosen.tolist():
                alloc[obj.ids[int(jj[c])]] = table[int(cc[c])]
                spd[obj.ids[int(jj[c])]] = float(s[c])
            value = _mean_of_sum(res.objective, J, obj.p)
        if math.isfinite(res.bound):
            bound = _mean_of_sum(res.bound, J, obj.p)
        ans = PolluxAnswer(termination=res.termination, objective_value=value, bound=bound, backend=res.backend,
                           method="pollux-exact", timings=Timings(build=t1 - t0, solve=t2 - t1,
                                                                  decode=time.perf_counter() - t2),
                           result=res, allocation=alloc, speedups=spd)
        ans.raise_for_status()
        return Decision(allocation=alloc, answer=ans, info={"jobs": J, "columns": m.num_cols})


def _mean_of_sum(total: float, J: int, p: float) -> float:
    """``M = (total / J)^(1/p)`` from ``total = sum_j (s_j + EPS)^p`` (nan when not positive)."""
    if not (total > 0):
        return math.nan
    return float((total / J) ** (1.0 / p))


def node_table(cluster: Cluster) -> tuple[list[str], np.ndarray, np.ndarray]:
    """(node ids in cluster order, GPUs per node, GPU type index per node): the columns of the GA's state."""
    return _node_table(cluster)
