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

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

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

if TYPE_CHECKING:
    from .engine import Observer
    from .task import SimTask

__all__ = [
    "CLUSTER_PRESETS",
    "GPU_DEMAND_MIX",
    "METHODS",
    "PHILLY_DEFAULTS",
    "QUEUES",
    "REPLAY_TRACES",
    "SynergyPolicy",
    "SynergyTrace",
    "SynergyTraceJob",
    "compare",
    "load_synergy_trace",
    "parse_synergy_policy",
    "parse_synergy_workload",
    "read_synergy_trace",
    "run_task",
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
    "deployment": (4, 8, 24.0, 500.0),    # deployment.ini (32 GPUs; the dynamic deployment trace)
    "static_trace": (4, 8, 24.0, 500.0),  # static_trace.ini (32 GPUs; the static deployment trace)
}
#: the shipped replay traces (``schedopt/sim/data/synergy``, made by ``tools/derive_synergy_traces.py``)
REPLAY_TRACES = ("static", "dynamic", "test")
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


# ---------------------------------------------------------------------------------------------- replay traces


def read_synergy_trace(text: str, *, static: bool = False, name: str = "synergy-replay") -> SynergyTrace:
    """A replay trace in the published format (``job_id,model_name,arrival,num_iterations,gpu_demand`` per line,
    as ``Workload.populate_from_trace`` reads it; a header line ``id,model,arrival,iterations,gpus`` is allowed).
    A job's duration at the GPU-proportional share is ``num_iterations x iter_time_s_at_fair_share`` of its model's
    shipped profile (the published ``job_iteration_time x job_total_iteration`` with ``iter_is_duration=False``).
    ``static``: every job is present at t = 0 (the published ``--static`` replay, whose first round comes after
    the whole batch was submitted). Model names must be shipped profiles (the published code silently maps an
    unknown name to its model 0; we refuse it)."""
    if not isinstance(text, str):
        raise InputError(name, type(text).__name__, "must be the text of a trace")
    prof = load_profiles()["models"]
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if lines and lines[0].replace(" ", "").lower().startswith("id,model"):
        lines = lines[1:]
    if not lines:
        raise InputError(name, text[:40], "has no job lines (job_id,model,arrival,iterations,gpus)")
    jobs = []
    for k, line in enumerate(lines):
        parts = [p.strip() for p in line.split(",")]
        where = f"{name}.jobs[{k}]"
        if len(parts) != 5:
            raise InputError(where, line, "must have 5 fields: job_id,model,arrival,iterations,gpus")
        jid, model, arr, its, g = parts
        if model not in prof:
            raise InputError(f"{where}.model", model, f"unknown; have {sorted(prof)}")
        try:
            arrival, iters, gpus = float(arr), int(its), int(g)
        except ValueError:
            raise InputError(where, line, "arrival must be a number, iterations and gpus integers") from None
        if not (math.isfinite(arrival) and arrival >= 0):
            raise InputError(f"{where}.arrival", arr, "must be a number >= 0 (seconds)")
        if iters <= 0:
            raise InputError(f"{where}.iterations", its, "must be a positive integer")
        dur = iters * float(prof[model]["iter_time_s_at_fair_share"])
        jobs.append(SynergyTraceJob(jid, 0.0 if static else arrival, dur, gpus, model))
    return synergy_workload(jobs, name=name)


def _data() -> Any:
    return resources.files("schedopt.sim").joinpath("data/synergy")


@lru_cache(maxsize=1)
def _replay_index() -> dict[str, Any]:
    return dict(json.loads(_data().joinpath("traces.json").read_text())["traces"])


def load_synergy_trace(name: str) -> tuple[SynergyTrace, str]:
    """A shipped replay trace (:data:`REPLAY_TRACES`: ``static``, ``dynamic``, ``test``) and the name of the cluster
    preset it was run on in the published configs (``static_trace``, ``deployment``, ``default``)."""
    idx = _replay_index()
    if name not in idx:
        raise InputError("trace", name, f"unknown; have {sorted(idx)}")
    e = idx[name]
    tr = read_synergy_trace(_data().joinpath(e["file"]).read_text(), static=bool(e["static"]), name=f"synergy/{name}")
    return tr, str(e["cluster"]["preset"])


# ---------------------------------------------------------------------------------------------- sweeps and CLI
#: ``synergy/philly`` parameters and their defaults: jobs, arrivals per hour, class split image-language-speech (%)
PHILLY_DEFAULTS: dict[str, Any] = {"jobs": 1000, "jph": 5.0, "split": (20.0, 70.0, 10.0)}
_WORKLOAD_HELP = ("valid: synergy/philly[:jobs=N][:jph=X][:split=I-L-S] (the generator, seeded by the task's seed), "
                  + ", ".join(f"synergy/{t}" for t in REPLAY_TRACES) + " (the published replay traces), "
                  "synergy/file:PATH (a trace file in the published format)")


def parse_synergy_policy(policy: object) -> tuple[str, str]:
    """``synergy`` or ``synergy:<variant>`` -> (queue, method). The variant is ``<queue>/<method>`` (``-`` also
    separates), or one queue or one method name alone; the missing part defaults to ``fifo`` / ``tune``."""
    head, _, variant = str(policy).partition(":")
    valid = f"synergy[:<queue>/<method>] with queue in {QUEUES} and method in {METHODS}"
    if head != "synergy":
        raise InputError("policy", policy, f"is not a Synergy policy; valid: {valid}")
    queue, method = "fifo", "tune"
    parts = [p for p in re.split(r"[/-]", variant.strip().lower()) if p] if variant else []
    if len(parts) > 2:
        raise InputError("policy", policy, f"names more than a queue and a method; valid: {valid}")
    seen_q = seen_m = False
    for p in parts:
        if p in QUEUES and not seen_q:
            queue, seen_q = p, True
        elif p in METHODS and not seen_m:
            method, seen_m = p, True
        else:
            raise InputError("policy", policy, f"unknown or repeated part {p!r}; valid: {valid}")
    return queue, method


def _philly_params(spec: str, workload: str) -> dict[str, Any]:
    out = dict(PHILLY_DEFAULTS)
    for part in (p for p in spec.split(":") if p):
        key, eq, val = part.partition("=")
        if not eq or key not in PHILLY_DEFAULTS:
            raise InputError("workload", workload, f"unknown parameter {part!r}; have jobs=N, jph=X, split=I-L-S")
        try:
            if key == "jobs":
                out[key] = int(val)
                ok = out[key] > 0
            elif key == "jph":
                out[key] = float(val)
                ok = math.isfinite(out[key]) and out[key] > 0
            else:
                out[key] = tuple(float(x) for x in val.split("-"))
                ok = len(out[key]) == 3 and all(x >= 0 for x in out[key]) and sum(out[key]) > 0
        except ValueError:
            ok = False
        if not ok:
            raise InputError(f"workload.{key}", val, {"jobs": "must be a positive integer",
                                                     "jph": "must be a number > 0 (jobs per hour)",
                                                     "split": "must be three shares >= 0 as I-L-S, e.g. 20-70-10"}[key])
    return out


def parse_synergy_workload(workload: str, seed: int = 0) -> tuple[SynergyTrace, str]:
    """A Synergy workload name (``synergy/philly[:jobs=N][:jph=X][:split=I-L-S]``, ``synergy/static``,
    ``synergy/dynamic``, ``synergy/test`` or ``synergy/file:PATH``) -> (trace, the cluster preset it runs on by
    default). ``synergy/philly`` is :func:`synergy_trace` with ``seed`` (defaults :data:`PHILLY_DEFAULTS`); the
    replay traces ignore the seed."""
    w = str(workload)
    if not w.startswith("synergy/"):
        raise InputError("workload", workload, f"is not a Synergy workload; {_WORKLOAD_HELP}")
    rest = w[len("synergy/"):]
    if rest.startswith("file:"):
        path = Path(rest[len("file:"):])
        if not path.is_file():
            raise InputError("workload", workload, f"names no file; {_WORKLOAD_HELP}")
        return read_synergy_trace(path.read_text(), name=w), "default"
    kind, _, params = rest.partition(":")
    if kind == "philly":
        p = _philly_params(params, w)
        split = dict(zip(("image", "language", "speech"), p["split"]))
        tr = synergy_trace(p["jobs"], int(seed), jobs_per_hour=p["jph"], class_split=split)
        return tr, "default"
    if kind in REPLAY_TRACES and not params:
        return load_synergy_trace(kind)
    raise InputError("workload", workload, f"unknown Synergy workload; {_WORKLOAD_HELP}")


def run_task(task: SimTask, observer: Observer | None = None) -> SimResult:
    """Run one :class:`~schedopt.sim.sweep.SimTask` whose policy is ``synergy[:<variant>]`` (what
    :func:`schedopt.sim.simulate_many` and ``schedopt simulate`` call). ``task.cluster``: a name of
    :data:`CLUSTER_PRESETS` (None: the cluster the workload was run on in the published configs: ``static_trace``
    / ``deployment`` for the deployment traces, ``default`` (16 x 8 GPUs) otherwise); ``task.round_seconds`` None:
    300 s; ``task.job_model`` must be None; ``task.policy_params`` may hold ``use_speedup`` and ``promote``
    (:class:`SynergyPolicy`). The result's
    ``meta["policy"]`` is the canonical ``synergy:<queue>-<method>``."""
    queue, method = parse_synergy_policy(task.policy)
    trace, preset = parse_synergy_workload(task.workload, task.seed)
    if task.cluster is not None:
        if task.cluster not in CLUSTER_PRESETS:
            raise InputError("cluster", task.cluster, f"is not a Synergy cluster; valid: {sorted(CLUSTER_PRESETS)}")
        preset = task.cluster
    if task.job_model is not None:
        raise InputError("job_model", task.job_model, "must be None for Synergy policies (rate = W(c, m) / "
                                                      "W(proportional) from the shipped profiles)")
    params = dict(task.policy_params)
    bad = sorted(set(params) - {"use_speedup", "promote"})
    if bad:
        raise InputError(f"policy_params.{bad[0]}", params[bad[0]],
                         "unknown; Synergy policies take use_speedup and promote")
    res = simulate_synergy(trace, synergy_servers(preset), queue=queue, method=method,
                           round_seconds=300.0 if task.round_seconds is None else float(task.round_seconds),
                           charge_policy_time=task.charge_policy_time, max_time=task.max_time, observer=observer,
                           **params)
    meta = res.meta.replace(policy=f"synergy:{queue}-{method}", workload=task.workload, trace=trace.workload.name,
                            seed=task.seed, cluster_preset=preset, policy_params=params)
    return SimResult(meta, res.jobs, res.rounds, res.hopeless)


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
    TUNE and GREEDY): SRTF and FTF rank by remaining time at the job's ideal speed-up. ``promote`` (TUNE only,
    default on, ours): spare CPUs and memory go to placed jobs in queue order (False: the published TUNE, where a job
    runs at its ideal demand or at its proportional share). ``record_jobs``: keep each
    running job's (GPUs, CPUs, GB, throughput, proportional throughput) in the round's ``info`` (for checking)."""

    adaptive = False
    #: Decision.rate may exceed 1 (throughput over proportional throughput): no bound for hopeless_jobs (issue 25)
    max_rate = math.inf

    def __init__(self, servers: Sequence[Server], jobs: Mapping[str, SynergyJob], *, queue: str = "fifo",
                 method: str = "tune", meta: Mapping[str, SynergyTraceJob] | None = None,
                 use_speedup: bool | None = None, promote: bool = True, record_jobs: bool = False) -> None:
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
        self.promote = bool(promote)
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
        alloc = allocate_round(self.servers, jobs, policy=self.queue, method=self.method, state=qs, promote=self.promote)
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
                     charge_policy_time: bool = False, max_time: float | None = None,
                     observer: Observer | None = None, **policy_kw: Any) -> SimResult:
    """Run ``trace`` on ``servers`` (default: Synergy's 16 x (8 GPUs, 24 CPUs, 500 GB)) under
    :class:`SynergyPolicy` on the :mod:`schedopt.sim` engine; 300 s rounds as the published simulator
    (``charge_policy_time``, ``max_time``: as :func:`schedopt.sim.simulate`)."""
    from .engine import simulate

    sv = list(servers) if servers is not None else synergy_servers()
    pol = SynergyPolicy(sv, trace.jobs, queue=queue, method=method, meta=trace.meta, **policy_kw)
    res = simulate(synergy_cluster(sv), trace.workload, pol, round_seconds=round_seconds, job_model=trace.job_model,
                   adaptive=False, charge_policy_time=charge_policy_time, max_time=max_time, progress=progress,
                   label=f"{pol.name} on {trace.workload.name}", observer=observer)
    meta = res.meta.replace(queue=queue, method=method, servers=[[s.gpus, s.cpus, s.mem_gb] for s in sv])
    return SimResult(meta=meta, jobs=res.jobs, rounds=res.rounds, hopeless=res.hopeless)


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
