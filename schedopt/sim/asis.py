"""The as-is job model: a trace job is what the trace says (docs: ``docs/scale/replay.md``).

Each job keeps its GPU count, its submission and its recorded run time as *work*: seconds of running on its own GPU
type. Its application name carries both, ``as-is:<own type>:<work s>`` (so the job model needs no table), and
:class:`AsIsJobModel` gives it a throughput of exactly 1 work-second per second on its own type at any placement,
``speed[t] / speed[own]`` on another type ``t`` (:data:`SPEEDS`). Rigid policies run it at its GPU count.

Adaptive policies (Sia, Pollux) need a goodput model: :func:`adaptive_workload` maps each job by its GPU-time class
to a zoo application (:data:`ADAPTIVE_APPS`) and names it ``as-is:<own type>:<work s>:<zoo app>:<GPUs>:<GPUs per
node>``; its training curve is the zoo application's, scaled so that on its recorded GPU count of its own type (the
fewest nodes) it takes exactly its recorded run time (``AsIsJobModel.reference_seconds``).

Trace readers live in :mod:`schedopt.traces` (which builds on this module, never the other way):
:func:`schedopt.traces.replay.replay` reads a trace, derives its cluster and registers the replay's context here
(:func:`register_context`) for ``schedopt simulate --workload trace:PATH:as-is`` (:func:`run_task`).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np

from ..errors import InputError
from ..goodput import JobGoodputModel, ThroughputParams
from ..sia import Cluster, Config
from .jobs import Application, JobModel, JobState, true_model
from .jobs import application as zoo_application
from .metrics import JobRecord, SimResult
from .workloads import Workload, WorkloadJob

__all__ = ["ADAPTIVE_APPS", "REFERENCE_TYPE", "SPEEDS", "AsIsContext", "AsIsJobModel", "adaptive_workload",
           "as_is_app", "as_is_report", "is_as_is", "register_context", "run_task", "simulate_as_is"]

#: the type a job ran on when the trace names none, and the unit of :data:`SPEEDS`
REFERENCE_TYPE = "v100"
#: relative training speed per GPU type (V100 = 1), keys lower-case letters and digits: an approximate median over
#: common models (Gavel's measured throughputs for K80 / P100 / V100; vendor training ratios for the rest). An
#: assumption used only when a job runs on a type other than its own; ``speeds=`` replaces it.
SPEEDS: Mapping[str, float] = {
    "k80": 0.25, "m40": 0.3, "p40": 0.5, "p100": 0.6, "t4": 0.4, "v100": 1.0, "v100m16": 1.0, "v100m32": 1.0,
    "rtx2080ti": 0.7, "rtx6000": 0.8, "a10": 0.6, "a100": 2.0, "h100": 4.0,
}
#: GPU-time class (GPU-hours, upper bound) -> zoo application of an adaptive replay (the Sia artifact's classes,
#: one application each: no random draw, so a replay is a function of the trace)
ADAPTIVE_APPS: tuple[tuple[float, str], ...] = ((1.0, "cifar10"), (10.0, "deepspeech2"), (100.0, "yolov3"),
                                                (math.inf, "imagenet"))
_PREFIX = "as-is"


def as_is_app(gpu_type: str, work_s: float) -> str:
    """The application name of a rigid as-is job: ``as-is:<own type>:<work s>``."""
    if not (isinstance(work_s, float) and math.isfinite(work_s) and work_s > 0):
        raise InputError("work_s", work_s, "must be a finite number of seconds > 0")
    if not gpu_type or ":" in gpu_type:
        raise InputError("gpu_type", gpu_type, "must be a non-empty name without ':'")
    return f"{_PREFIX}:{gpu_type}:{work_s!r}"


@lru_cache(maxsize=65536)
def _parts(app: str) -> tuple[str, float, str | None, int, int]:
    p = app.split(":")
    if p[0] != _PREFIX or len(p) not in (3, 6):
        raise InputError("application", app, "is not an as-is trace job (as-is:<type>:<work>[:<app>:<GPUs>:<per node>])")
    if len(p) == 3:
        return p[1], float(p[2]), None, 0, 0
    return p[1], float(p[2]), p[3], int(p[4]), int(p[5])


@lru_cache(maxsize=4096)
def _rigid_curve(work: float) -> Application:
    one = np.ones(1)
    return Application(f"{_PREFIX}-work", one, 1, np.array([work]), np.ones((1, 1)), np.zeros((1, 1)))


@lru_cache(maxsize=256)
def _rigid_truth(own: str, speeds: tuple[tuple[str, float], ...]) -> JobGoodputModel:
    """1 work-second per second on ``own``, ``speed[t] / speed[own]`` on ``t``, at any placement: compute time
    ``alpha_c = speed[own] / speed[t]`` (exactly 1 on ``own``), no network time, one sample per GPU, no statistical
    efficiency change (gradient variance 0)."""
    sp = dict(speeds)
    params = {t: ThroughputParams(1.0 if t == own else sp[own] / sp[t], 0.0, 0.0, 0.0, 0.0, 0.0, 10.0) for t in sp}
    return JobGoodputModel(f"{_PREFIX}@{own}", params, 1.0, float(2**20), {t: (1, 1) for t in sp}, (1.0,), (1.0,),
                           (0.0,))


@lru_cache(maxsize=65536)
def _scaled_curve(base: str, f: float) -> Application:
    a = zoo_application(base)
    return Application(a.name, a.batches, a.epochs, a.progress * f, a.grad_sqr, a.grad_var)


@lru_cache(maxsize=4096)
def _reference_seconds(cap: int, base: str, own: str, gpus: int, per_node: int) -> float:
    jm = JobModel(f"{_PREFIX}-reference", rigid_apps={}, gpu_cap=cap)
    j = JobState("reference", base, 0.0, gpus, 1, True, jm, estimator="oracle")
    n = -(-gpus // per_node)
    j.nodes = {f"n{k}": min(per_node, gpus - k * per_node) for k in range(n)}
    j.config = Config(n, gpus, own)
    j.started, j.start = True, 0.0
    j.rebatch()
    t, step = 0.0, 86400.0
    while j.finish is None:
        j.advance(t, step)
        t += step
        if t > 1e10:  # pragma: no cover - a zoo application finishes in days
            raise InputError("application", base, f"does not finish on {gpus} {own} GPUs")
    return float(j.finish)


@lru_cache(maxsize=65536)
def _curve(cap: int, app: str) -> Application:
    own, work, base, gpus, per_node = _parts(app)
    if base is None:
        return _rigid_curve(work)
    return _scaled_curve(base, work / _reference_seconds(cap, base, own, gpus, per_node))


@dataclass(frozen=True, eq=False)
class AsIsJobModel(JobModel):
    """The job model of an as-is replay (module doc). ``speeds``: relative speed per GPU type (:data:`SPEEDS`
    restricted to what the run needs; a job's own type needs no entry when it runs nowhere else); ``restart_s``:
    the checkpoint-restore delay of every start and restart (0: the recorded run time holds it)."""

    speeds: Mapping[str, float] = field(default_factory=dict)
    types: tuple[str, ...] = ()  #: the cluster's GPU types: the truth has a throughput on each
    restart_s: float = 0.0

    def _table(self, own: str) -> tuple[tuple[str, float], ...]:
        need = set(self.types) | {own}
        if len(need) > 1:
            missing = sorted(t for t in need if t not in self.speeds)
            if missing:
                raise InputError("speeds", missing, f"no relative speed for GPU type(s) {missing}: a job of type "
                                 f"{own!r} on a cluster of {list(self.types)} needs them (pass speeds=)")
            return tuple(sorted((t, float(self.speeds[t])) for t in need))
        return ((own, 1.0),)

    def application(self, app: str) -> Application:
        return _curve(self.gpu_cap, app)

    def truth(self, app: str) -> JobGoodputModel:
        own, _, base, _, _ = _parts(app)
        return _rigid_truth(own, self._table(own)) if base is None else true_model(base)

    def scale_units(self, app: str) -> Mapping[str, int]:
        return {}

    def restart(self, app: str) -> float:
        return self.restart_s

    def work_scale(self, app: str) -> float:
        """The factor on an adaptive job's zoo training curve (1.0 for a rigid job)."""
        own, work, base, gpus, per_node = _parts(app)
        return 1.0 if base is None else work / _reference_seconds(self.gpu_cap, base, own, gpus, per_node)


def adaptive_workload(workload: Workload, node_gpus: Mapping[str, int], per_node_default: int = 8) -> Workload:
    """``workload`` (rigid as-is jobs) with each job mapped to a zoo application by its GPU-hours
    (:data:`ADAPTIVE_APPS`), asking for that application's initial batch; ``node_gpus``: GPUs per node by type
    (the job's recorded run is on the fewest nodes of its own type; ``per_node_default`` for a type the cluster
    lacks)."""
    out = []
    for w in workload.jobs:
        own, work, base, _, _ = _parts(w.application)
        if base is not None:
            raise InputError(f"workload.jobs[{w.name}].application", w.application, "is adaptive already")
        gh = w.num_replicas * work / 3600.0
        app = next(a for hi, a in ADAPTIVE_APPS if gh < hi)
        name = f"{_PREFIX}:{own}:{work!r}:{app}:{w.num_replicas}:{int(node_gpus.get(own, per_node_default))}"
        out.append(WorkloadJob(w.name, w.time, name, w.num_replicas, int(true_model(app).init_batch)))
    return Workload(workload.name, tuple(out))


def is_as_is(name: object) -> bool:
    """Whether a workload name asks for an as-is replay: ``trace:<path or shipped trace>:as-is[:key=value...]``."""
    return isinstance(name, str) and name.startswith("trace:") and ":as-is" in name


@dataclass(frozen=True, eq=False)
class AsIsContext:
    """What a replay needs besides its workload, registered by :mod:`schedopt.traces.replay`: the derived cluster
    and its rule, the per-job trace table (job id -> (user, virtual cluster, status, recorded run time)), the jobs
    left out per reason, and the HiveD trace builder (``cluster -> HivedTrace``)."""

    trace: str
    format: str
    cluster: Cluster
    cluster_rule: str
    table: Mapping[str, tuple[str, str, str, float]]
    left_out: Mapping[str, int]
    hived: Callable[[Cluster], Any] | None = None


_CONTEXTS: dict[str, AsIsContext] = {}


def register_context(workload: str, ctx: AsIsContext) -> None:
    """Keep ``ctx`` for the workload named ``workload`` (the last few only)."""
    if len(_CONTEXTS) >= 8:
        _CONTEXTS.pop(next(iter(_CONTEXTS)))
    _CONTEXTS[workload] = ctx


def _stats(xs: list[float]) -> dict[str, float]:
    if not xs:
        return {"mean": math.nan, "median": math.nan, "p95": math.nan, "max": math.nan}
    a = np.sort(np.asarray(xs, dtype=float))  # sorted: the same floats whatever the jobs' order (streamed: finish order)
    return {"mean": float(a.mean()), "median": float(np.median(a)), "p95": float(np.percentile(a, 95)),
            "max": float(a.max())}


def as_is_report(result: SimResult, table: Mapping[str, tuple[str, str, str, float]],
                 jobs: Iterable[JobRecord] | None = None) -> dict[str, Any]:
    """JCT, queueing delay (first start - submission) and slowdown (JCT / recorded run time), overall and per
    virtual cluster; utilization (GPU-seconds held / (GPUs x the span from the first submission to the last
    finish)); fairness: Jain's index of the virtual clusters' mean slowdowns and the worst slowdown. ``jobs``: the
    job records when the result does not hold them (a streamed run:
    :meth:`schedopt.sim.records.RecordStream.job_records`)."""
    from .fairness import jain_index

    by_vc: dict[str, dict[str, list[float]]] = {}
    held, end, first = 0.0, 0.0, math.inf
    for j in (result.jobs if jobs is None else jobs):
        first = min(first, j.arrival)
        held += sum(j.gpu_seconds.values())
        row = table.get(j.id)
        d = by_vc.setdefault((row[1] if row else "") or "-", {"jobs": [], "jct": [], "delay": [], "slowdown": []})
        d["jobs"].append(1.0)
        if j.start is not None:
            d["delay"].append(j.start - j.arrival)
        if j.jct is not None and j.finish is not None:
            d["jct"].append(j.jct)
            if row:
                d["slowdown"].append(j.jct / row[3])
            end = max(end, j.finish)
    every = {k: [x for d in by_vc.values() for x in d[k]] for k in ("jct", "delay", "slowdown")}
    first = 0.0 if first == math.inf else first
    span = max(end - first, 1e-9)
    per_vc: dict[str, dict[str, Any]] = {vc: {"jobs": len(d["jobs"]), "jct_s": _stats(d["jct"]), "queueing_delay_s": _stats(d["delay"]),
                   "slowdown": _stats(d["slowdown"])} for vc, d in sorted(by_vc.items())}
    means = [v["slowdown"]["mean"] for v in per_vc.values() if math.isfinite(v["slowdown"]["mean"])]
    slow = _stats(every["slowdown"])
    return {"jobs": sum(len(d["jobs"]) for d in by_vc.values()), "jct_s": _stats(every["jct"]), "queueing_delay_s": _stats(every["delay"]),
            "slowdown": slow, "utilization": held / (result.meta.gpus * span) if result.meta.gpus else math.nan,
            "jain_vc_slowdown": jain_index(means) if means else math.nan, "worst_slowdown": slow["max"],
            "per_vc": per_vc}


def _check_speeds(speeds: Mapping[str, float]) -> dict[str, float]:
    if not isinstance(speeds, Mapping):
        raise InputError("speeds", speeds, "must map GPU type names to relative speeds")
    out = {}
    for t, v in speeds.items():
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
            raise InputError(f"speeds[{t!r}]", v, "must be a finite number > 0")
        out[str(t)] = float(v)
    return out


def simulate_as_is(workload: Workload, policy: Any, ctx: AsIsContext, *, cluster: Cluster | None = None,
                   speeds: Mapping[str, float] | None = None, restart_s: float = 0.0,
                   round_seconds: float | None = None, max_time: float | None = None, progress: bool | None = None,
                   observer: Callable[[int, float, int, int], None] | None = None, seed: int = 0,
                   policy_params: Mapping[str, Any] | None = None,
                   records: str | os.PathLike[str] | None = None) -> SimResult:
    """Replay ``workload`` (rigid as-is jobs) under ``policy`` (a spec or a policy object) on ``cluster``
    (default: the context's); ``hived`` / ``hived:quota`` run on the context's HiveD trace (the trace's virtual
    clusters as tenants). Adaptive policies get :func:`adaptive_workload` and the oracle estimate. The records'
    ``meta.details["as_is"]`` names every assumption and holds :func:`as_is_report`.

    ``records``: a path: the run's record is written there (:func:`schedopt.sim.records.read_record` reads it),
    streamed as jobs finish (:class:`~schedopt.sim.records.RecordStream`), and the result holds the meta only
    (no job or round: the memory of a whole trace's run is its active jobs). HiveD's own event loop keeps its
    records and writes them at the end."""
    from .engine import DEFAULT_ROUND_SECONDS, simulate
    from .policies import make_policy
    from .records import RecordStream, write_record

    if isinstance(restart_s, bool) or not isinstance(restart_s, (int, float)) or not (
            math.isfinite(restart_s) and restart_s >= 0):
        raise InputError("restart_s", restart_s, "must be a number of seconds >= 0")
    cl = ctx.cluster if cluster is None else cluster
    if not isinstance(cl, Cluster):
        raise InputError("cluster", type(cl).__name__, "must be a schedopt.sia.Cluster")
    sp = _check_speeds(SPEEDS if speeds is None else speeds)
    info: dict[str, Any] = {
        "trace": ctx.trace, "format": ctx.format, "cluster_rule": ctx.cluster_rule if cluster is None else "given",
        "kept": len(workload.jobs), "left_out": dict(ctx.left_out), "restart_s": float(restart_s),
        "work": "the recorded run time on the job's own GPU type (failed and killed jobs too)",
        "reference_type": REFERENCE_TYPE, "speeds": {t: sp[t] for t in sorted(sp) if t in cl.type_names}}
    params = dict(policy_params or {})
    task = {"workload": workload.name, "policy": policy if isinstance(policy, str) else type(policy).__name__,
            "cluster": {t.name: [t.nodes, t.gpus_per_node] for t in cl.gpu_types}, "speeds": info["speeds"],
            "restart_s": float(restart_s), "round_seconds": round_seconds, "max_time": max_time, "seed": seed,
            "policy_params": params}
    stream = None
    if isinstance(policy, str) and policy.split(":", 1)[0] == "hived":
        from .hived import simulate_hived
        from .hived.run import POLICIES

        if policy not in POLICIES or ctx.hived is None:
            raise InputError("policy", policy, f"must be one of {', '.join(POLICIES)} with a trace context")
        res = simulate_hived(ctx.hived(cl), POLICIES[policy], max_time=max_time, observer=observer, **params)
        info["tenants"] = "the trace's virtual clusters; quota = share of the trace's GPU-seconds, in whole nodes"
        name = policy
    else:
        pol = make_policy(policy, params, seed=seed) if isinstance(policy, str) else policy
        adaptive = bool(getattr(pol, "adaptive", False))
        wl = workload
        if adaptive:
            wl = adaptive_workload(workload, {t.name: t.gpus_per_node for t in cl.gpu_types})
            info["adaptive"] = ("GPU-time class -> zoo application (" + ", ".join(
                f"< {hi:g} GPU-h: {a}" for hi, a in ADAPTIVE_APPS) + "); its training curve scaled to the recorded "
                "run time on the recorded GPUs of the job's own type (fewest nodes); the policy sees the true model")
        jm = AsIsJobModel("as-is", rigid_apps={}, speeds=sp, types=tuple(cl.type_names), restart_s=float(restart_s))
        stream = RecordStream(records, task) if records is not None else None
        try:
            res = simulate(cl, wl, pol, job_model=jm, estimator="oracle" if adaptive else "bootstrap",
                           round_seconds=DEFAULT_ROUND_SECONDS if round_seconds is None else round_seconds,
                           max_time=max_time, progress=progress, observer=observer,
                           label=f"{getattr(pol, 'name', 'policy')} on {workload.name}", sink=stream)
        except BaseException:
            if stream is not None:
                stream.discard()
            raise
        name = policy if isinstance(policy, str) else res.meta.policy
    info["report"] = as_is_report(res, ctx.table, stream.job_records() if stream is not None else None)
    meta = res.meta.replace(policy=name, workload=workload.name, job_model="as-is", seed=seed, as_is=info)
    out = SimResult(meta, res.jobs, res.rounds, res.hopeless)
    if stream is not None:
        info["records"] = {"path": str(stream.path), "jobs": stream.jobs_written, "rounds": stream.rounds_written}
        meta = meta.replace(as_is=info)
        stream.close(meta, res.hopeless)
        out = SimResult(meta, (), (), res.hopeless)
    elif records is not None:
        write_record(records, out, task)
    return out


def run_task(task: Any, observer: Callable[[int, float, int, int], None] | None = None) -> SimResult:
    """Run a :class:`~schedopt.sim.SimTask` whose workload is ``trace:...:as-is`` (:func:`is_as_is`): the workload
    is read through the registered workload resolvers (:mod:`schedopt.traces` registers the context); the cluster
    is the task's preset when given, else the trace's. ``job_model`` must be None (the trace's jobs are the model)."""
    from .workloads import cluster_preset, load_workload

    if task.job_model is not None:
        raise InputError("job_model", task.job_model, "must be None for an as-is replay (the trace's jobs are the "
                         "job model)")
    wl = load_workload(task.workload)
    ctx = _CONTEXTS.get(task.workload)
    if ctx is None:  # pragma: no cover - the resolver registers it while making the workload
        raise InputError("workload", task.workload, "has no as-is context (is schedopt.traces installed?)")
    res = simulate_as_is(wl, task.policy, ctx, cluster=cluster_preset(task.cluster) if task.cluster else None,
                         round_seconds=task.round_seconds, max_time=task.max_time, observer=observer,
                         seed=task.seed, policy_params=task.policy_params)
    return SimResult(res.meta.replace(cluster_preset=task.cluster or "trace", policy_params=dict(task.policy_params)),
                     res.jobs, res.rounds, res.hopeless)
