"""Synergy (Mohan et al., OSDI 2022) in closed loop on the :mod:`schedopt.sim` engine (card:
``formulations/sim_synergy.md``).

Synergy's rounds as one policy, :class:`SynergyPolicy`: every round (300 s, the published ``round_duration``) the
active jobs are ordered by a queue policy (FIFO, SRTF, LAS, FTF; :func:`schedopt.synergy.order_jobs`) and given
GPUs, CPUs and memory by an allocation method (GPU-proportional, Synergy-GREEDY, Synergy-TUNE, Synergy-OPT;
:func:`schedopt.synergy.allocate_round`). The policy holds the servers' CPUs and memory (the engine's cluster only
knows GPUs) and tells the engine who runs where (``Decision.nodes``) and how fast (``Decision.rate``: the job's
normalised throughput at its (CPU, memory) point over its throughput at the GPU-proportional share).

Jobs: :func:`synergy_trace` draws the published simulator's synthetic Philly-derived workload (Poisson arrivals at
``jobs_per_hour``; durations ``60 x 10^U(1.5, 3)`` s for 80 % of jobs and ``60 x 10^U(3, 4)`` s for 20 %, the
``get_gavel_like_iter`` mix; GPU demand 1 / 2 / 4 / 8 with 70 / 10 / 15 / 5 %; model class image / language /
speech = 20 / 70 / 10 %, a model of the class uniformly from the shipped profiles' model zoo).
:func:`synergy_workload` turns explicit jobs into a :class:`SynergyTrace`: a job's ``duration`` is its run time at
the GPU-proportional share of the cluster (the published ``iter_is_duration``), so a job makes one unit of
progress per second at that share and ``rate`` units at another point.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import InputError
from ..goodput import JobGoodputModel, ThroughputParams
from ..sia import Cluster, GpuType
from ..synergy import (
    JobQueueInfo,
    QueueState,
    Server,
    SynergyJob,
    allocate_round,
    load_profiles,
)
from .jobs import Application, JobModel
from .metrics import SimResult
from .policies.base import Decision, RoundState
from .workloads import Workload, WorkloadJob

__all__ = [
    "CLUSTER_PRESETS",
    "GPU_DEMAND_MIX",
    "METHODS",
    "QUEUES",
    "SynergyPolicy",
    "SynergyTrace",
    "SynergyTraceJob",
    "compare",
    "simulate_synergy",
    "synergy_cluster",
    "synergy_servers",
    "synergy_trace",
    "synergy_workload",
]

#: the queue orders run in closed loop (the published FIFO, SRTF, LAS and FTF schedulers)
QUEUES = ("fifo", "srtf", "las", "ftf")
#: the allocation methods, in the order of the comparison table
METHODS = ("proportional", "greedy", "tune", "opt")
#: the published synthetic workload's GPU demand (helpers/utils.py ``get_job_gpu_demand``)
GPU_DEMAND_MIX: dict[int, float] = {1: 0.70, 2: 0.10, 4: 0.15, 8: 0.05}
#: the published default class split (image, language, speech) in percent
CLASS_SPLIT: dict[str, float] = {"image": 0.2, "language": 0.7, "speech": 0.1}
#: the cluster shapes of the published ``simulator/configs/*.ini`` (servers, GPUs, CPUs, GB per server)
CLUSTER_PRESETS: dict[str, tuple[int, int, float, float]] = {
    "default": (16, 8, 24.0, 500.0),      # default_cluster.ini (CPU:GPU = 3)
    "cluster_4": (16, 8, 32.0, 500.0),    # cluster_4.ini (CPU:GPU = 4)
    "cluster_5": (16, 8, 40.0, 500.0),    # cluster_5.ini
    "cluster_6": (16, 8, 48.0, 500.0),    # cluster_6.ini
    "philly": (64, 8, 24.0, 500.0),       # philly_cluster.ini (512 GPUs)
    "deployment": (4, 8, 24.0, 500.0),    # deployment.ini / static_trace.ini (32 GPUs)
}
_BATCH = 1024  # a nominal global batch the engine can split over any GPU count (its only role)
_GPU_TYPE = "gpu"


# ---------------------------------------------------------------------------------------------- cluster
def synergy_servers(preset: str = "default") -> list[Server]:
    """The servers of a published cluster shape (:data:`CLUSTER_PRESETS`; default 16 x (8 GPUs, 24 CPUs, 500 GB))."""
    if preset not in CLUSTER_PRESETS:
        raise InputError("preset", preset, f"unknown; have {sorted(CLUSTER_PRESETS)}")
    n, g, c, m = CLUSTER_PRESETS[preset]
    return [Server(g, c, m) for _ in range(n)]


def synergy_cluster(servers: Sequence[Server]) -> Cluster:
    """The engine's view of ``servers``: one GPU type, one node per server (all servers must hold the same number of
    GPUs; CPUs and memory stay with :class:`SynergyPolicy`)."""
    if not servers or not all(isinstance(s, Server) for s in servers):
        raise InputError("servers", servers, "must be a non-empty sequence of schedopt.synergy.Server")
    gs = {s.gpus for s in servers}
    if len(gs) != 1:
        raise InputError("servers", sorted(gs), "every server must hold the same number of GPUs")
    return Cluster((GpuType(_GPU_TYPE, gs.pop(), len(servers)),))


# ---------------------------------------------------------------------------------------------- jobs
@dataclass(frozen=True)
class SynergyTraceJob:
    """One job of a trace: ``duration`` seconds at the GPU-proportional share, ``model`` a shipped profile name."""

    id: str
    arrival: float
    duration: float
    gpus: int
    model: str


@dataclass(frozen=True, eq=False)
class SynergyTrace:
    """A trace as the engine runs it: the workload, its job model, and each job's Synergy data by job id
    (``jobs``: the :class:`~schedopt.synergy.SynergyJob` with its sensitivity matrix; ``meta``: the trace jobs)."""

    workload: Workload
    job_model: JobModel
    jobs: Mapping[str, SynergyJob]
    meta: Mapping[str, SynergyTraceJob] = field(default_factory=dict)


def _truth() -> JobGoodputModel:
    # one step per second on any GPU count (gamma = 10 makes the near-zero network term vanish in floating point)
    p = ThroughputParams(1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 10.0)
    return JobGoodputModel("synergy-job", {_GPU_TYPE: p}, float(_BATCH), float(_BATCH), {_GPU_TYPE: (1, _BATCH)},
                           (float(_BATCH),), (1.0,), (0.0,))


def synergy_workload(jobs: Sequence[SynergyTraceJob], *, name: str = "synergy") -> SynergyTrace:
    """``jobs`` as a workload: each job's own application makes one unit of progress per second (the engine's rate
    factor then scales it by the job's throughput over its GPU-proportional throughput) and completes after
    ``duration`` units; its sensitivity matrix is the shipped profile of ``model``."""
    prof = load_profiles()
    cg, mg = np.asarray(prof["cpu_grid"], float), np.asarray(prof["mem_grid"], float)
    truth = _truth()
    apps: dict[str, tuple[Application, JobGoodputModel]] = {}
    sjobs: dict[str, SynergyJob] = {}
    wjobs, meta = [], {}
    for i, j in enumerate(jobs):
        if not isinstance(j, SynergyTraceJob):
            raise InputError(f"jobs[{i}]", type(j).__name__, "must be a SynergyTraceJob")
        if j.id in sjobs:
            raise InputError(f"jobs[{i}].id", j.id, "is used by an earlier job")
        if not (isinstance(j.duration, (int, float)) and math.isfinite(j.duration) and j.duration > 0):
            raise InputError(f"jobs[{i}].duration", j.duration, "must be a number > 0 (seconds)")
        if not (isinstance(j.arrival, (int, float)) and math.isfinite(j.arrival) and j.arrival >= 0):
            raise InputError(f"jobs[{i}].arrival", j.arrival, "must be a number >= 0 (seconds)")
        if isinstance(j.gpus, bool) or not isinstance(j.gpus, int) or j.gpus <= 0:
            raise InputError(f"jobs[{i}].gpus", j.gpus, "must be a positive integer")
        if j.model not in prof["models"]:
            raise InputError(f"jobs[{i}].model", j.model, f"unknown; have {sorted(prof['models'])}")
        app = f"synergy:{j.id}"
        apps[app] = (Application(app, np.array([float(_BATCH)]), 1, np.array([float(j.duration)]),
                                 np.array([[1.0]]), np.array([[0.0]])), truth)
        sjobs[j.id] = SynergyJob(j.id, j.gpus, cg, mg, np.asarray(prof["models"][j.model]["tput"], float))
        meta[j.id] = j
        wjobs.append(WorkloadJob(j.id, float(j.arrival), app, int(j.gpus), _BATCH))
    wjobs.sort(key=lambda w: w.time)
    jm = JobModel("synergy", default_restart=0.0, rigid_apps={}, apps=apps,
                  gpu_cap=max((j.gpus for j in jobs), default=1))
    return SynergyTrace(Workload(name, tuple(wjobs)), jm, sjobs, meta)


def synergy_trace(n_jobs: int = 1000, seed: int = 0, *, jobs_per_hour: float = 4.0,
                  class_split: Mapping[str, float] | None = None,
                  gpu_demand: Mapping[int, float] | None = None, max_gpus: int = 8) -> SynergyTrace:
    """The published simulator's synthetic Philly-derived workload (module docstring), ``n_jobs`` jobs from t = 0.
    Inter-arrival times are exponential with rate ``jobs_per_hour``, rounded up to whole seconds (as the published
    ``poisson_next_arrival_time``); the first job arrives after the first gap."""
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, int) or n_jobs <= 0:
        raise InputError("n_jobs", n_jobs, "must be a positive integer")
    if not (isinstance(jobs_per_hour, (int, float)) and jobs_per_hour > 0):
        raise InputError("jobs_per_hour", jobs_per_hour, "must be a number > 0")
    split = dict(class_split or CLASS_SPLIT)
    demand = dict(gpu_demand or GPU_DEMAND_MIX)
    prof = load_profiles()
    by_class: dict[str, list[str]] = {}
    for name, e in prof["models"].items():
        if e["in_model_zoo"]:
            by_class.setdefault(e["class"], []).append(name)
    for c, p in split.items():
        if c not in by_class:
            raise InputError(f"class_split.{c}", p, f"no shipped model of class {c!r}; have {sorted(by_class)}")
        if not (isinstance(p, (int, float)) and p >= 0):
            raise InputError(f"class_split.{c}", p, "must be a number >= 0")
    for g, p in demand.items():
        if isinstance(g, bool) or not isinstance(g, int) or not 0 < g <= max_gpus:
            raise InputError("gpu_demand", g, f"GPU counts must be integers in 1..{max_gpus}")
        if not (isinstance(p, (int, float)) and p >= 0):
            raise InputError(f"gpu_demand[{g}]", p, "must be a number >= 0")
    rng = np.random.default_rng(seed)
    classes = list(split)
    cp = np.array([split[c] for c in classes], float)
    sizes = np.array(sorted(demand), dtype=np.int64)
    sp = np.array([demand[int(s)] for s in sizes], float)
    if cp.sum() <= 0 or sp.sum() <= 0:
        raise InputError("class_split" if cp.sum() <= 0 else "gpu_demand", split if cp.sum() <= 0 else demand,
                         "needs a positive share")
    gaps = np.ceil(rng.exponential(3600.0 / jobs_per_hour, n_jobs))
    arrivals = np.cumsum(gaps)
    long = rng.random(n_jobs) >= 0.8
    expo = np.where(long, rng.uniform(3.0, 4.0, n_jobs), rng.uniform(1.5, 3.0, n_jobs))
    durations = 60.0 * 10.0 ** expo
    gpus = sizes[rng.choice(len(sizes), n_jobs, p=sp / sp.sum())]
    cls = rng.choice(len(classes), n_jobs, p=cp / cp.sum())
    pick = rng.random(n_jobs)
    jobs = []
    for k in range(n_jobs):
        names = by_class[classes[int(cls[k])]]
        model = names[min(int(pick[k] * len(names)), len(names) - 1)]
        jobs.append(SynergyTraceJob(f"j{k}", float(arrivals[k]), float(durations[k]), int(gpus[k]), model))
    return synergy_workload(jobs, name=f"synergy-{n_jobs}-{jobs_per_hour:g}jph-s{seed}")


# ---------------------------------------------------------------------------------------------- the policy
def _speedup(job: SynergyJob, model: str | None, server: Server) -> float:
    """The published ``synergy_speedup`` a job's SRTF/FTF key divides by: the profile's speedup at its ideal demand,
    interpolated linearly from the proportional share when that demand exceeds one server (``add_synergy_profile``),
    1 for jobs larger than a server."""
    if model is None:
        return 1.0
    e = load_profiles()["models"][model]
    s, g = float(e["speedup_at_ideal_vs_fair"]), job.gpus
    if g > server.gpus:
        return 1.0
    ideal_c, fair_c = g * float(e["ideal_cpu_per_gpu"]), g * server.cpus / server.gpus
    if ideal_c > server.cpus and ideal_c > fair_c:
        s = 1.0 + (s - 1.0) / (ideal_c - fair_c) * (server.cpus - fair_c)
    return max(s, 1e-6)


class SynergyPolicy:
    """One Synergy scheduler: ``queue`` order x allocation ``method``, every round via
    :func:`schedopt.synergy.allocate_round` on ``servers``. ``use_speedup`` (default: as the published runs, on for
    TUNE and GREEDY): SRTF and FTF rank by remaining time at the job's ideal speed-up. ``record_jobs``: keep each
    running job's (GPUs, CPUs, GB, throughput, proportional throughput) in the round's ``info`` (for checking)."""

    adaptive = False

    def __init__(self, servers: Sequence[Server], jobs: Mapping[str, SynergyJob], *, queue: str = "fifo",
                 method: str = "tune", meta: Mapping[str, SynergyTraceJob] | None = None,
                 use_speedup: bool | None = None, record_jobs: bool = False) -> None:
        if queue not in QUEUES:
            raise InputError("queue", queue, f"must be one of {QUEUES}")
        if method not in METHODS:
            raise InputError("method", method, f"must be one of {METHODS}")
        synergy_cluster(servers)  # validates the servers
        self.servers = list(servers)
        self.jobs = dict(jobs)
        self.meta = dict(meta or {})
        self.queue, self.method = queue, method
        self.name = f"synergy-{queue}-{method}"
        self.use_speedup = method in ("tune", "greedy") if use_speedup is None else bool(use_speedup)
        self.record_jobs = bool(record_jobs)
        self.node_ids: list[str] = []
        self.last_run: dict[str, float] = {}
        big = max(self.servers, key=lambda s: (s.gpus, s.cpus, s.mem_gb))
        self.speedup = {jid: _speedup(j, self.meta[jid].model if jid in self.meta else None, big)
                        for jid, j in self.jobs.items()}
        self.cpus = np.array([s.cpus for s in self.servers])
        self.mem = np.array([s.mem_gb for s in self.servers])

    def decide(self, state: RoundState) -> Decision:
        if not self.node_ids:
            self.node_ids = list(state.cluster.node_ids(_GPU_TYPE))
        jobs, info = [], {}
        for v in state.jobs:
            j = self.jobs.get(v.id)
            if j is None:
                raise InputError(f"policy[{self.name}].jobs", v.id, "has no Synergy profile")
            jobs.append(j)
            total = self.meta[v.id].duration if v.id in self.meta else 1.0
            info[v.id] = JobQueueInfo(arrival=v.arrival, attained_service=v.attained_gpu_seconds / j.gpus,
                                      remaining=(1.0 - v.progress) * total, total=total,
                                      speedup=self.speedup.get(v.id, 1.0), last_run=self.last_run.get(v.id))
        qs = QueueState(time=state.time, info=info, use_speedup=self.use_speedup)
        alloc = allocate_round(self.servers, jobs, policy=self.queue, method=self.method, state=qs)
        nodes: dict[str, dict[str, int]] = {}
        rate: dict[str, float] = {}
        cpu_used, mem_used = np.zeros(len(self.servers)), np.zeros(len(self.servers))
        rec = {}
        for jid, a in alloc.per_job.items():
            if not a.gpus_on:
                continue
            nodes[jid] = {self.node_ids[i]: int(g) for i, g in a.gpus_on.items()}
            rate[jid] = a.throughput / a.proportional_throughput if a.proportional_throughput > 0 else 1.0
            for i, g in a.gpus_on.items():
                cpu_used[i] += g * a.cpu_per_gpu
                mem_used[i] += g * a.mem_per_gpu
            self.last_run[jid] = state.time
            if self.record_jobs:
                rec[jid] = [sum(a.gpus_on.values()), a.cpus, a.mem_gb, a.throughput, a.proportional_throughput]
        out: dict[str, Any] = {"running": len(nodes), "cpus_used": cpu_used.tolist(), "mem_used": mem_used.tolist(),
                               "mean_rate": float(np.mean(list(rate.values()))) if rate else 0.0}
        if self.record_jobs:
            out["jobs"] = rec
        return Decision(nodes=nodes, rate=rate, info=out)


def simulate_synergy(trace: SynergyTrace, servers: Sequence[Server] | None = None, *, queue: str = "fifo",
                     method: str = "tune", round_seconds: float = 300.0, progress: bool | None = False,
                     **policy_kw: Any) -> SimResult:
    """Run ``trace`` on ``servers`` (default: Synergy's 16 x (8 GPUs, 24 CPUs, 500 GB)) under
    :class:`SynergyPolicy` on the :mod:`schedopt.sim` engine; 300 s rounds as the published simulator."""
    from .engine import simulate

    sv = list(servers) if servers is not None else synergy_servers()
    pol = SynergyPolicy(sv, trace.jobs, queue=queue, method=method, meta=trace.meta, **policy_kw)
    res = simulate(synergy_cluster(sv), trace.workload, pol, round_seconds=round_seconds, job_model=trace.job_model,
                   adaptive=False, progress=progress, label=f"{pol.name} on {trace.workload.name}")
    meta = dict(res.meta)
    meta.update(queue=queue, method=method, servers=[[s.gpus, s.cpus, s.mem_gb] for s in sv])
    return SimResult(meta=meta, jobs=res.jobs, rounds=res.rounds)


def compare(trace: SynergyTrace, servers: Sequence[Server] | None = None, *, queues: Sequence[str] = ("fifo",),
            methods: Sequence[str] = METHODS, **kw: Any) -> list[dict[str, Any]]:
    """Rows (queue, method, average JCT, makespan, finished, speed-up of the average JCT over proportional under the
    same queue, policy CPU seconds) for every ``queues`` x ``methods`` run of ``trace``."""
    rows = []
    for q in queues:
        base = None
        for m in methods:
            res = simulate_synergy(trace, servers, queue=q, method=m, **kw)
            s = res.summary()
            cpu = float(sum(r.policy_cpu_seconds for r in res.rounds))
            row = {"queue": q, "method": m, "avg_jct_s": s["avg_jct_s"], "makespan_s": s["makespan_s"],
                   "finished": s["finished"], "jobs": s["jobs"], "policy_cpu_s": cpu}
            if m == "proportional":
                base = s["avg_jct_s"]
            row["speedup_vs_proportional"] = (base / s["avg_jct_s"]) if base and s["avg_jct_s"] else math.nan
            rows.append(row)
    return rows
