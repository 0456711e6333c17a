"""Gavel (OSDI'20) as a :mod:`schedopt.sim` policy: heterogeneity-aware max-min fairness over time fractions,
turned into rounds by Gavel's priority rule.

The LP (``formulations/sim_policies.md``; stanford-futuredata/gavel ``scheduler/policies/max_min_fairness.py``,
``MaxMinFairnessPolicyWithPerf``), over the jobs that can run on some GPU type, with ``X[j, k]`` the throughput of
job ``j`` on type ``k`` at its requested GPU count (its scale factor ``s_j``), ``c_k`` the GPUs of type ``k`` and
``prop_j = sum_k X[j, k] c_k / sum_k c_k`` its throughput under an equal split of the cluster::

    maximize    t
    s.t.        t - sum_k (X[j, k] s_j / prop_j) x[j, k] <= 0      fairness        (one row per job)
                sum_j s_j x[j, k] <= c_k                            type_capacity   (one row per GPU type)
                sum_k x[j, k] <= 1                                  time_budget     (one row per job)
                0 <= x[j, k] <= 1, x[j, k] = 0 where X[j, k] = 0

A second LP (``efficient=True``, the default) keeps ``t >= t*`` and maximises ``sum_j sum_k (X s / prop) x``: the
max-min optimum is rarely unique and a simplex vertex may leave GPUs idle that Gavel's interior-point solver would
spread; the card says why. The LPs are :mod:`schedopt.gavel`'s (this policy is a thin layer over
:func:`schedopt.gavel.solve_spec`), which also gives the ``ftf`` (``gavel:ftf``) and ``makespan``
(``gavel:makespan``) objectives: each job's remaining steps at its batch come from its application's training curve
(:func:`remaining_steps`), its time since start is its age (``formulations/sim_baselines.md``).

Rounds (``scheduler.py``, ``_update_priorities`` / ``_schedule_jobs_on_workers_helper``, as the Sia artifact's
``gavel.py`` runs it): every job carries the time it has run on each type (starting at half a round), each type the
sum; ``priority[j, k] = x[j, k] / (time_j,k / time_k)``. The (job, type) entries are taken in decreasing
(priority, allocation) order over all types; a job is scheduled on the first entry whose type still has ``s_j``
GPUs free. Placement: per type, jobs by decreasing scale factor, first kept on their previous nodes when those are
free, then given GPUs server by server. Returns ``Decision(nodes=...)``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...errors import InputError
from ...gavel import GavelSpec, build, normalized_weights, solve_spec
from ...model import LinearModel
from ...problem import Answer, SolveOptions
from ...results import SolveResult, Termination, TerminationReason, Timings
from ...sia import Cluster
from .base import Decision, JobView, RoundState

__all__ = ["OBJECTIVES", "ROUND_SECONDS", "GavelAnswer", "GavelLP", "GavelPolicy", "build_gavel_lp", "gavel_throughputs",
           "remaining_steps"]

#: the LP objectives (:mod:`schedopt.gavel`): Gavel's heterogeneity-aware max-min fairness, max_sum_throughput_perf
#: (Sia's Gavel runs), finish-time fairness and minimum makespan
OBJECTIVES = ("max_min", "max_sum_throughput", "ftf", "makespan")
#: Gavel's own round (seconds): the Sia artifact runs Gavel with ``--interval 360`` (``run_experiment.sh``)
ROUND_SECONDS = 360.0


@dataclass(kw_only=True, eq=False)
class GavelAnswer(Answer):
    """One Gavel round: ``fractions`` (job id -> {GPU type: time fraction}) from the LP, ``priorities`` (job id ->
    {type: priority}) and ``nodes`` (job id -> {node id: GPUs}) of the round; ``objective_value`` is ``t*``, the
    smallest normalised effective throughput (its bound from the first LP)."""

    fractions: dict[str, dict[str, float]] = field(default_factory=dict)
    priorities: dict[str, dict[str, float]] = field(default_factory=dict)
    nodes: dict[str, dict[str, int]] = field(default_factory=dict)
    efficient: SolveResult | None = None  #: the second LP's result (``efficient=True``)

    def rows(self) -> list[dict[str, Any]]:
        return [{"job": j, **{f"x[{t}]": v for t, v in fr.items()},
                 "nodes": " ".join(f"{n}:{c}" for n, c in self.nodes.get(j, {}).items()) or "-"}
                for j, fr in self.fractions.items()]

    def to_dict(self) -> dict[str, Any]:
        d = super().to_dict()
        d["fractions"] = {j: {t: float(v) for t, v in fr.items()} for j, fr in self.fractions.items()}
        d["nodes"] = {j: dict(v) for j, v in self.nodes.items()}
        return d


def gavel_throughputs(cluster: Cluster, jobs: tuple[JobView, ...] | list[JobView],
                      cache: dict[tuple[int, int, int], tuple[Any, np.ndarray]] | None = None
                      ) -> tuple[np.ndarray, np.ndarray]:
    """(throughput matrix (jobs x GPU types), scale factors): each job's estimated samples/s at its requested GPU
    count and batch size on the fewest nodes of each type (the Sia artifact's ``predict_throughput`` packing);
    0 where the type has fewer GPUs than the job requests or the job has no model for it. ``cache`` keeps a row per
    (estimate, GPUs, batch) while the estimate object lives (jobs at the same point share it)."""
    types = cluster.gpu_types
    X = np.zeros((len(jobs), len(types)))
    sf = np.array([int(v.requested_gpus) for v in jobs], dtype=np.int64)
    for j, v in enumerate(jobs):
        key = (id(v.estimate), int(sf[j]), int(v.batch_size))
        hit = cache.get(key) if cache is not None else None
        if hit is not None and hit[0] is v.estimate:
            X[j] = hit[1]
            continue
        for k, t in enumerate(types):
            if sf[j] > t.total_gpus or t.name not in v.estimate.params:
                continue
            n = -(-int(sf[j]) // t.gpus_per_node)
            val = float(np.asarray(v.estimate.throughput(t.name, n, int(sf[j]), float(v.batch_size))))
            X[j, k] = val if math.isfinite(val) and val > 0 else 0.0
        if cache is not None:
            cache[key] = (v.estimate, X[j].copy())
    return X, sf


def remaining_steps(v: JobView) -> float:
    """Optimizer steps ``v`` still needs at its batch size (Gavel's ``num_steps_remaining``; the Sia artifact's
    ``get_gavel_job_info`` reads them from the application's validation curve): per remaining epoch, its
    scale-invariant progress divided by the statistical gain of the batch (the job model's own rule)."""
    from ..jobs import application

    try:
        app = application(v.application)
    except InputError:
        raise InputError(f"jobs[{v.id}].application", v.application,
                         "has no shipped training curve, so its remaining steps are unknown") from None
    done = float(v.progress) * app.target
    scale = float(v.batch_size) / float(v.estimate.init_batch)
    total, prev = 0.0, 0.0
    for e in range(app.epochs):
        end = float(app.progress[e])
        if end > done:
            sqr, var = app.grad_stats(float(v.batch_size), e)
            den = var / scale + sqr
            gain = (var + sqr) / den if den > 0 else 1.0
            total += (end - max(prev, done)) / max(gain, 1e-12)
        prev = end
    return max(total, 1e-9)


@dataclass(frozen=True, eq=False)
class GavelLP:
    """The max-min LP of one round and its inverse map: ``rows`` index the jobs that can run somewhere (positions in
    the round's job list), ``weights`` the normalised throughputs ``X s / prop`` of those rows."""

    model: LinearModel
    rows: np.ndarray
    weights: np.ndarray
    types: tuple[str, ...]


def _spec(X: np.ndarray, scale_factors: np.ndarray, capacity: np.ndarray, job_labels: list[str] | None,
          types: tuple[str, ...] | None, objective: str, **kw: Any) -> GavelSpec:
    X = np.asarray(X, dtype=np.float64)
    cap = np.asarray(capacity, dtype=np.float64)
    if X.ndim != 2 or cap.ndim != 1 or X.shape[1] != cap.shape[0]:
        raise InputError("throughputs", X.shape, f"must be (jobs x GPU types) with {cap.shape[0]} types")
    types = tuple(types or tuple(f"type{k}" for k in range(cap.shape[0])))
    labels = tuple(job_labels or [f"job{j}" for j in range(X.shape[0])])
    return GavelSpec(types, cap, labels, X, np.asarray(scale_factors, dtype=np.float64), objective=objective, **kw)


def build_gavel_lp(X: np.ndarray, scale_factors: np.ndarray, capacity: np.ndarray,
                   job_labels: list[str] | None = None, types: tuple[str, ...] | None = None,
                   min_t: float | None = None, objective: str = "max_min") -> GavelLP:
    """The max-min fairness LP from arrays (``X``: jobs x types throughputs, ``capacity``: GPUs per type), built by
    :func:`schedopt.gavel.build`. With ``min_t`` the second (efficiency) LP: ``t >= min_t`` and the sum of
    normalised throughputs maximised. ``objective="max_sum_throughput"``: Gavel's ``max_sum_throughput_perf``."""
    if objective not in ("max_min", "max_sum_throughput"):
        raise InputError("objective", objective, "must be max_min or max_sum_throughput (other objectives: "
                         "schedopt.gavel.build)")
    spec = _spec(X, scale_factors, capacity, job_labels, types, objective)
    if objective == "max_min" and min_t is not None:
        f = build(spec, stage="efficient", t_min=float(min_t))
    else:
        f = build(spec)
    rows = f.inverse.rows
    W = normalized_weights(spec)[rows] if objective == "max_min" else spec.throughputs[rows]
    return GavelLP(model=f.model, rows=rows, weights=W, types=spec.types)


class GavelPolicy:
    """``gavel``: the max-min fairness LP (``backend``: any schedopt backend that solves LPs, default ``highs``)
    and Gavel's priority rounds (``Decision(nodes=...)``). Rigid by design: every job runs at its requested GPU
    count and batch size (the Sia paper's Gavel+TunedJobs). ``efficient`` adds the second LP (see the module).
    ``round_seconds`` is Gavel's own round (default 360 s, as the Sia artifact runs Gavel): the policy re-plans
    when that much time has passed since its last plan and otherwise keeps every job where it is, so an engine
    running 60 s rounds does not time-slice jobs every minute (with checkpoint-restore delays of up to 250 s,
    per-minute slicing would stall them); 0 re-plans every engine round."""

    name = "gavel"

    def __init__(self, *, backend: str = "highs", time_limit: float | None = None, efficient: bool = True,
                 objective: str = "max_min", round_seconds: float = ROUND_SECONDS) -> None:
        if not isinstance(backend, str) or not backend:
            raise InputError("backend", backend, "must be a backend name")
        if objective not in OBJECTIVES:
            raise InputError("objective", objective, f"must be one of {', '.join(OBJECTIVES)}")
        if not (isinstance(round_seconds, (int, float)) and not isinstance(round_seconds, bool)
                and math.isfinite(round_seconds) and round_seconds >= 0):
            raise InputError("round_seconds", round_seconds, "must be a number of seconds >= 0 (Gavel's own round)")
        self.objective = objective
        # ``gavel`` (max-min, and the max-sum variant Sia runs); the objectives added later carry their own name
        self.name = "gavel" if objective in ("max_min", "max_sum_throughput") else f"gavel:{objective}"
        self.round_seconds = float(round_seconds)
        self._last_plan: float | None = None
        if time_limit is not None and not (isinstance(time_limit, (int, float)) and time_limit >= 0):
            raise InputError("time_limit", time_limit, "must be a number of seconds >= 0 or None")
        self.backend = backend
        self.time_limit = time_limit
        self.efficient = bool(efficient)
        self._job_time: dict[str, np.ndarray] = {}
        self._type_time: np.ndarray | None = None
        self._last_round = -1
        self._xput: dict[tuple[int, int, int], tuple[Any, np.ndarray]] = {}

    def _account(self, state: RoundState) -> None:
        """Charge the round that just ran (each job's current type) and register new jobs at half a round."""
        T = len(state.cluster.type_names)
        if state.round_index <= self._last_round or self._type_time is None or self._type_time.shape[0] != T:
            self._job_time.clear()
            self._xput.clear()
            self._last_plan = None
            self._type_time = np.zeros(T)
        self._last_round = state.round_index
        half = state.round_seconds / 2.0
        types = state.cluster.type_names
        for v in state.jobs:
            if v.id not in self._job_time:
                self._job_time[v.id] = np.full(T, half)
                self._type_time += half
            elif v.current is not None and v.current.gpu_type in types:
                k = types.index(v.current.gpu_type)
                self._job_time[v.id][k] += state.round_seconds
                self._type_time[k] += state.round_seconds

    def solve_lp(self, X: np.ndarray, sf: np.ndarray, cluster: Cluster, ids: list[str],
                 batch: np.ndarray | None = None, steps_remaining: np.ndarray | None = None,
                 time_since_start: np.ndarray | None = None) -> tuple[np.ndarray, GavelAnswer]:
        """The time fractions (jobs x types; zero rows for jobs that can run nowhere) and the answer, from
        :func:`schedopt.gavel.solve_spec`. ``batch``: the jobs' batch sizes, which turn samples/s into the optimizer
        steps/s max-sum-throughput adds up and ftf / makespan compare with ``steps_remaining``."""
        cap = cluster.total_gpus.astype(np.float64)
        t0 = time.perf_counter()
        if self.objective == "max_min" or batch is None:
            steps = X
        else:
            steps = X / np.maximum(np.asarray(batch, dtype=np.float64), 1.0)[:, None]
        x = np.zeros_like(X)
        rows = np.flatnonzero((X > 0).any(axis=1))
        if rows.size == 0:
            res = SolveResult(Termination(TerminationReason.OPTIMAL, detail="no job can run on any GPU type"),
                              backend=self.backend, _x=np.zeros(0), _objective=0.0, bound=0.0)
            ans = GavelAnswer(termination=res.termination, objective_value=0.0, bound=0.0, backend=self.backend,
                              method=f"gavel-{self.objective}", result=res)
            return x, ans
        kw: dict[str, Any] = {"efficient": self.efficient}
        if self.objective in ("ftf", "makespan"):  # jobs that can run nowhere would make these infinite: left out
            if steps_remaining is None:
                raise InputError("steps_remaining", None, f"objective {self.objective} needs each job's remaining steps")
            kw["steps_remaining"] = np.asarray(steps_remaining, dtype=np.float64)[rows]
            if time_since_start is not None:
                kw["time_since_start"] = np.asarray(time_since_start, dtype=np.float64)[rows]
            spec = _spec(steps[rows], np.asarray(sf)[rows], cap, [ids[r] for r in rows.tolist()], cluster.type_names,
                         self.objective, **kw)
        else:
            spec = _spec(steps, sf, cap, ids, cluster.type_names, self.objective, **kw)
        got = solve_spec(spec, SolveOptions(backend=self.backend, time_limit=self.time_limit))
        ans = GavelAnswer(termination=got.termination, objective_value=got.objective_value, bound=got.bound,
                          backend=got.backend, method=f"gavel-{self.objective}", result=got.result,
                          timings=Timings(build=got.timings.build, solve=time.perf_counter() - t0 - got.timings.build),
                          efficient=got.efficient)
        ans.raise_for_status()
        if spec.num_jobs == len(ids):
            x[:] = got.x
        else:
            x[rows] = got.x
        return x, ans

    def decide(self, state: RoundState) -> Decision:
        if not isinstance(state, RoundState):
            raise InputError("state", type(state).__name__, "must be a schedopt.sim.policies.RoundState")
        t0 = time.perf_counter()
        self._account(state)
        if self._last_plan is not None and state.time - self._last_plan < self.round_seconds - 1e-9:
            # inside Gavel's own round: every job keeps what it holds (GPUs freed by finished jobs wait)
            keep = {v.id: dict(v.current_nodes) for v in state.jobs if v.current_nodes}
            return Decision(nodes=keep, info={"replanned": False, "jobs": len(state.jobs)})
        self._last_plan = state.time
        cluster = state.cluster
        jobs = state.jobs
        ids = [v.id for v in jobs]
        types = cluster.type_names
        X, sf = gavel_throughputs(cluster, jobs, self._xput)
        rem = tss = None
        if self.objective in ("ftf", "makespan"):
            rem = np.array([remaining_steps(v) for v in jobs])
            tss = np.array([max(float(v.age), 0.0) for v in jobs])
        x, ans = self.solve_lp(X, sf, cluster, ids, np.array([float(v.batch_size) for v in jobs]), rem, tss)
        t1 = time.perf_counter()
        assert self._type_time is not None
        jt = np.array([self._job_time[i] for i in ids]).reshape(len(ids), len(types))
        with np.errstate(divide="ignore", invalid="ignore"):
            frac = np.where(self._type_time[None, :] > 0, jt / self._type_time[None, :], 0.0)
            prio = np.where(frac > 0, x / frac, x * 1e9)
        prio = np.where((x > 0) & (X > 0), prio, 0.0)
        scheduled = self.schedule(prio, x, X, sf, cluster.total_gpus)
        nodes = self.place(cluster, jobs, scheduled, sf)
        ans.fractions = {i: {t: float(x[j, k]) for k, t in enumerate(types)} for j, i in enumerate(ids)}
        ans.priorities = {i: {t: float(prio[j, k]) for k, t in enumerate(types)} for j, i in enumerate(ids)}
        ans.nodes = nodes
        ans.timings = ans.timings.replace(decode=time.perf_counter() - t1)
        return Decision(nodes=nodes, answer=ans,
                        info={"replanned": True, "jobs": len(ids), "unschedulable": [i for j, i in enumerate(ids) if not (X[j] > 0).any()],
                              "seconds": time.perf_counter() - t0})

    @staticmethod
    def schedule(prio: np.ndarray, x: np.ndarray, X: np.ndarray, sf: np.ndarray, capacity: np.ndarray) -> dict[int, int]:
        """Gavel's greedy round: (job, type) entries by decreasing (priority, allocation) over all types (stable in
        type then job order, as the Sia artifact builds its queue); a job takes the first entry whose type still has its scale factor free and where its
        throughput is positive. Returns job position -> type index."""
        J, T = prio.shape
        # entries in type-major order (the Sia artifact's queue: for each type, every job), sorted stably
        kk, jj = np.meshgrid(np.arange(T), np.arange(J), indexing="ij")
        order = np.lexsort((-x.T.ravel(), -prio.T.ravel()))
        left = capacity.astype(np.int64).copy()
        out: dict[int, int] = {}
        for e in order.tolist():
            j, k = int(jj.flat[e]), int(kk.flat[e])
            if j in out or left[k] == 0 or X[j, k] <= 0 or sf[j] > left[k]:
                continue
            left[k] -= sf[j]
            out[j] = k
        return out

    @staticmethod
    def place(cluster: Cluster, jobs: tuple[JobView, ...], scheduled: Mapping[int, int], sf: np.ndarray
              ) -> dict[str, dict[str, int]]:
        """Gavel's placement per type, by decreasing scale factor: the jobs of one scale factor first kept on their
        previous nodes (same type, still free), the others given GPUs server by server (one pointer per type), each
        server holding its own GPUs (:attr:`schedopt.cluster.GpuType.sizes`: Gavel's workers register per server
        with their own ``num_gpus``)."""
        out: dict[str, dict[str, int]] = {}
        for k, t in enumerate(cluster.gpu_types):
            mine = sorted((j for j, kk in scheduled.items() if kk == k), key=lambda j: (-int(sf[j]), j))
            ids = cluster.node_ids(t.name)
            free = dict(zip(ids, t.sizes, strict=True))  # each server's own GPUs (Gavel's worker_ids per server)
            ptr = 0
            for size in sorted({int(sf[j]) for j in mine}, reverse=True):
                rest = []
                for j in (j for j in mine if int(sf[j]) == size):
                    prev = dict(jobs[j].current_nodes or {})
                    if prev and sum(prev.values()) == size and all(n in free and free[n] >= c for n, c in prev.items()):
                        for n, c in prev.items():
                            free[n] -= c
                        out[jobs[j].id] = {n: int(c) for n, c in prev.items()}
                    else:
                        rest.append(j)
                for j in rest:
                    need = size
                    got: dict[str, int] = {}
                    while need > 0 and ptr < len(ids):
                        n = ids[ptr]
                        take = min(free[n], need)
                        if take:
                            got[n] = got.get(n, 0) + take
                            free[n] -= take
                            need -= take
                        if free[n] == 0:
                            ptr += 1
                    if need:  # cannot happen: the schedule kept every type within its GPUs and nodes before the pointer are full
                        raise InputError(f"jobs[{jobs[j].id}]", size, f"could not be placed on {t.name}")
                    out[jobs[j].id] = got
        return out
