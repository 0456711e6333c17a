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
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ...errors import InputError
from ...goodput import JobGoodputModel
from ...model import LinearModel
from ...pollux import (
    EPS,
    MAX_NODES,
    MAX_REPLICAS,
    P_FAIRNESS,
    RESTART_DELAY_S,
    Columns,
    GeneticSearch,
    PolluxAnswer,
    PolluxSpec,
    SpeedupTable,
    allocation_nodes,
    build,
    genetic_search,
    node_columns,
    power_mean,
    restart_factor,
    solve_exact,
)
from ...results import Termination, TerminationReason, Timings
from ...sia import Cluster
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

#: the search class, under the name tools/profile_sim.py wraps (its ``run`` is the profile's ``search`` phase)
_Search = GeneticSearch


def _node_table(cluster: Cluster) -> tuple[list[str], np.ndarray, np.ndarray]:
    """(node ids in cluster order, GPUs per node, type index per node)."""
    c = node_columns(cluster)
    return list(c.ids), c.gpus, c.types


def _current_allocation(obj: PolluxObjective, col_ids: Sequence[str]) -> np.ndarray:
    """The jobs' current allocations as a (jobs x columns) matrix over ``col_ids`` (node ids)."""
    pos = {n: i for i, n in enumerate(col_ids)}
    cur = np.zeros((len(obj.jobs), len(col_ids)), dtype=np.int64)
    for j, v in enumerate(obj.jobs):
        for n, c in (v.current_nodes or {}).items():
            if n not in pos:
                raise InputError(f"jobs[{v.id}].current_nodes", n, "names no node of the cluster")
            cur[j, pos[n]] += int(c)
    return cur


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
        self.restart_factor = restart_factor(age, restarts, restart_delay)
        self.cap = np.minimum(np.array([v.max_gpus for v in jobs], dtype=np.int64), min(int(max_replicas), G))
        self.rigid = np.array([0 if v.adaptive else int(v.requested_gpus) for v in jobs], dtype=np.int64)
        self.cap = np.where(self.rigid > 0, self.rigid, self.cap)
        self._cache = cache if cache is not None else {}
        self._speedups: SpeedupTable | None = None
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
        # the estimator's unchecked paths where the points are valid (the same numbers without the input checks,
        # which cost as much as the arithmetic on a search's few hundred points)
        fast = isinstance(est, JobGoodputModel) and bool(((nn >= 1) & (rr >= nn)).all())
        if v.adaptive:
            if fast:
                vals = est.goodput_values(gpu_type, nn.astype(np.float64), rr.astype(np.float64))
            else:
                vals = np.asarray(est.goodput(gpu_type, nodes=nn, replicas=rr).goodput, dtype=np.float64)
        else:
            B = float(v.batch_size)
            xput = (est.throughput_values(gpu_type, nn.astype(np.float64), rr.astype(np.float64), B) if fast and B > 0
                    else est.throughput(gpu_type, nn, rr, B))
            vals = np.asarray(xput, dtype=np.float64) * float(est.efficiency(B))
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

    def fill(self, j: int, t: int, nodes: np.ndarray, replicas: np.ndarray) -> np.ndarray:
        """:data:`schedopt.pollux.GoodputFill` over this round's goodput tables (:meth:`goodput_points`)."""
        return self.goodput_points(j, self.types[t], nodes, replicas)

    def spec(self, columns: Columns | None = None, current: np.ndarray | None = None) -> PolluxSpec:
        """The round as a :class:`schedopt.pollux.PolluxSpec` over ``columns`` (default: the cluster's nodes) with
        the jobs' ``current`` allocations (jobs x columns; default none): the goodput tables stacked (NaN entries
        filled on demand through :meth:`fill`), ``base``, ``scale``, caps, restart factors and the view."""
        G = np.stack([self._table(j) for j in range(len(self.jobs))]) if self.jobs else \
            np.zeros((0, len(self.types), self.max_nodes + 1, self.max_reps + 1))
        return PolluxSpec(self.cluster, tuple(self.ids), G, self.base if len(self.jobs) else np.zeros(0),
                          current=current, restart_factor=self.restart_factor, cap=self.cap, rigid=self.rigid,
                          p=self.p, scale=self.scale, columns=columns, view=self.view, fill=self.fill)

    def speedups(self, jidx: np.ndarray, tidx: np.ndarray, nodes: np.ndarray, replicas: np.ndarray) -> np.ndarray:
        """Scaled speedups (before the restart factor) for flat arrays of (job, type index, nodes, replicas)
        (:class:`schedopt.pollux.SpeedupTable` over :meth:`spec`)."""
        if self._speedups is None:
            self._speedups = SpeedupTable(self.spec())
        return self._speedups(jidx, tidx, nodes, replicas)

    def mean(self, s: np.ndarray) -> np.ndarray:
        """The power mean of scaled (restart-penalised) speedups over the last axis."""
        return power_mean(s, self.p)


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
    seeded = True  #: the seed drives the genetic search's random draws (per round: (seed, round)) (schedopt.sim.seeds)

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
        return _current_allocation(obj, col_ids)

    def to_nodes(self, obj: PolluxObjective, col_ids: list[str], best: np.ndarray) -> dict[str, dict[str, int]]:
        """The chosen (jobs x columns) matrix as job id -> {node id: GPUs} (the decision)."""
        return allocation_nodes(obj.ids, col_ids, best)

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
        adapted = None
        if self._prev is not None and self._prev[1] == tuple(node_ids):
            prev_ids, _, prev_pop = self._prev
            src = {jid: i for i, jid in enumerate(prev_ids)}
            adapted = np.zeros((prev_pop.shape[0], J, N), dtype=np.int64)
            dst = [j for j, jid in enumerate(obj.ids) if jid in src]
            if dst:
                adapted[:, dst] = prev_pop[:, [src[obj.ids[j]] for j in dst]]
        rng = np.random.default_rng([self.seed, max(int(state.round_index), 0)])
        spec = obj.spec(Columns(tuple(node_ids), cap_node, node_type), base)
        t1 = time.perf_counter()
        ans = genetic_search(spec, population=self.population, generations=self.generations, rng=rng, init=adapted)
        t2 = time.perf_counter()
        assert ans.population is not None
        self._prev = (list(obj.ids), tuple(node_ids), ans.population)
        nodes = self.to_nodes(obj, node_ids, ans.matrix)
        ans.nodes = nodes
        ans.method = f"{self.name}-ga"
        ans.population = None
        ans.timings = Timings(build=t1 - t0, solve=t2 - t1, decode=time.perf_counter() - t2)
        return Decision(nodes=nodes, answer=ans, info={"jobs": J, "generations": ans.generations})


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
        round's objective (:func:`schedopt.pollux.build` over :meth:`PolluxObjective.spec`); ``configs`` of the
        model are ``generate_configs(cluster)``."""
        f = build(obj.spec(current=self._current(obj)))
        inv = f.inverse
        return f.model, inv.job, inv.config, inv.speedup, np.full(len(obj.jobs), EPS ** obj.p)

    @staticmethod
    def _current(obj: PolluxObjective) -> np.ndarray:
        return _current_allocation(obj, node_columns(obj.cluster).ids)

    def decide(self, state: RoundState) -> Decision:
        t0 = time.perf_counter()
        self.update(state)
        obj = PolluxObjective(state, p=self.p, restart_delay=self.restart_delay,
                              max_replicas=self.max_replicas, cache=self.cache)
        J = len(obj.jobs)
        if J == 0:
            ans = PolluxAnswer(termination=Termination(TerminationReason.OPTIMAL, detail="no active jobs"),
                               method="pollux-exact", backend=self.backend)
            return Decision(allocation={}, answer=ans, info={"jobs": 0})
        spec = obj.spec(current=self._current(obj))
        t1 = time.perf_counter()
        ans = solve_exact(spec, backend=self.backend, time_limit=self.time_limit, mip_rel_gap=self.mip_rel_gap)
        ans.method = "pollux-exact"
        ans.timings = Timings(build=t1 - t0 + ans.timings.build, solve=ans.timings.solve, decode=ans.timings.decode)
        ans.raise_for_status()
        columns = ans.result.model.num_cols if ans.result is not None and ans.result.model is not None else 0
        return Decision(allocation=ans.allocation, answer=ans, info={"jobs": J, "columns": columns})


def node_table(cluster: Cluster) -> tuple[list[str], np.ndarray, np.ndarray]:
    """(node ids in cluster order, GPUs per node, GPU type index per node): the columns of the GA's state."""
    return _node_table(cluster)
