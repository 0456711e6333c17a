"""Replay a trace as it happened (docs: ``docs/scale/replay.md``; the job model: :mod:`schedopt.sim.asis`).

A trace job keeps its GPU count, its submission (seconds after the first kept submission), its user and virtual
cluster, and its recorded run time as work on its own GPU type (the type the trace names, the first of several
alphabetically; :data:`~schedopt.sim.asis.REFERENCE_TYPE` when it names none). Failed and killed jobs run for their
recorded time. Jobs with no GPU (CPU-only), no run time (never ran, still running at the trace's end, a Gavel job
given in steps, a workload CSV) or a run time of 0 are left out and counted.

>>> from schedopt.traces import replay                                             # doctest: +SKIP
>>> r = replay.replay(replay.shipped_trace("philly"), "fifo")                       # doctest: +SKIP

The cluster is given, or derived (:func:`trace_cluster`): the trace's machine list where it has one (PAI 2020
machine specs, the PAI 2023 node list), else the peak concurrent demand, in nodes of 8 GPUs. On the command line:
``schedopt simulate --workload trace:PATH:as-is[:format=F][:rule=machines|peak] --policy fifo`` (``trace:philly:as-is``
is the shipped Philly trace).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..sia import Cluster, GpuType
from ..sim.asis import REFERENCE_TYPE, AsIsContext, as_is_app, register_context, simulate_as_is
from ..sim.metrics import SimResult
from ..sim.workloads import Workload, WorkloadJob
from .trace import Trace, TraceJob

__all__ = ["CLUSTER_RULES", "GPUS_PER_NODE", "AsIsJob", "as_is_context", "as_is_jobs", "as_is_workload",
           "gpu_type_key", "hived_trace_of", "peak_demand", "replay", "resolve_as_is", "trace_cluster"]

#: how a cluster is derived from a trace: its machine list, or the peak concurrent demand
CLUSTER_RULES = ("machines", "peak")
#: GPUs per node of a derived cluster
GPUS_PER_NODE = 8


def gpu_type_key(name: str) -> str:
    """A trace's GPU type as a cluster type name: lower case, letters and digits (``"V100M32"`` -> ``"v100m32"``)."""
    return re.sub(r"[^a-z0-9]", "", name.lower())


@dataclass(frozen=True)
class AsIsJob:
    """One kept trace job: ``gpu_type`` its own type, ``work_s`` its recorded run time (seconds on that type),
    ``submit_s`` seconds after the first kept submission."""

    job: TraceJob
    gpu_type: str
    work_s: float
    submit_s: float

    @property
    def gpu_seconds(self) -> float:
        """GPUs x work: the job's recorded GPU-seconds."""
        return self.job.gpus * self.work_s


def as_is_jobs(trace: Trace) -> tuple[list[AsIsJob], dict[str, int]]:
    """The jobs a replay keeps (the trace's order) and the count left out per reason: ``cpu_only``, ``no_run_time``,
    ``zero_run_time``."""
    left = {"cpu_only": 0, "no_run_time": 0, "zero_run_time": 0}
    kept: list[TraceJob] = []
    for j in trace.jobs:
        if j.gpus <= 0:
            left["cpu_only"] += 1
        elif j.duration_s is None:
            left["no_run_time"] += 1
        elif j.duration_s <= 0:
            left["zero_run_time"] += 1
        else:
            kept.append(j)
    t0 = min((j.submit_s for j in kept), default=0.0)
    out = [AsIsJob(j, gpu_type_key(sorted(j.gpu_type.split("|"))[0]) or REFERENCE_TYPE, float(j.duration_s or 0.0),
                   j.submit_s - t0) for j in kept]
    return out, left


def peak_demand(jobs: Iterable[AsIsJob]) -> int:
    """The most GPUs the jobs hold at once when each runs from its submission for its work (a job ending at ``t``
    frees its GPUs before one starting at ``t`` takes them)."""
    ev: list[tuple[float, int]] = []
    for a in jobs:
        ev += [(a.submit_s, a.job.gpus), (a.submit_s + a.work_s, -a.job.gpus)]
    ev.sort()
    peak = cur = 0
    for _, g in ev:
        cur += g
        peak = max(peak, cur)
    return peak


def trace_cluster(trace: Trace, rule: str | None = None, *, gpus_per_node: int = GPUS_PER_NODE) -> tuple[Cluster, str]:
    """The cluster a trace ran on and the rule that gave it. ``"machines"``: the machine list
    (:attr:`Trace.capacity`, GPUs per type rounded up to whole nodes); ``"peak"``: one type (the jobs' own type when
    they share one, else :data:`~schedopt.sim.asis.REFERENCE_TYPE`) holding the peak concurrent demand
    (:func:`peak_demand`) rounded up to whole nodes; None: ``machines`` when the trace has a machine list."""
    if rule is not None and rule not in CLUSTER_RULES:
        raise InputError("cluster_rule", rule, f"must be one of {', '.join(CLUSTER_RULES)}")
    if isinstance(gpus_per_node, bool) or not isinstance(gpus_per_node, int) or gpus_per_node < 1:
        raise InputError("gpus_per_node", gpus_per_node, "must be a positive integer")
    rule = rule or ("machines" if trace.capacity else "peak")
    if rule == "machines":
        cap: dict[str, int] = {}
        for t, g in (trace.capacity or {}).items():
            if gpu_type_key(t) and g > 0:
                cap[gpu_type_key(t)] = cap.get(gpu_type_key(t), 0) + int(g)
        if not cap:
            raise InputError("cluster_rule", rule, f"trace {trace.name!r} ({trace.format}) has no machine list "
                             "with GPUs")
        what = ", ".join(f"{t}: {g} GPUs" for t, g in sorted(cap.items()))
        return (Cluster(tuple(GpuType(t, gpus_per_node, -(-g // gpus_per_node)) for t, g in sorted(cap.items()))),
                f"machines: the trace's machine list ({what}) in nodes of {gpus_per_node} GPUs")
    jobs, _ = as_is_jobs(trace)
    if not jobs:
        raise InputError("trace", trace.name, "has no job with GPUs and a run time to replay")
    own = {a.gpu_type for a in jobs}
    name = own.pop() if len(own) == 1 else REFERENCE_TYPE
    peak = peak_demand(jobs)
    nodes = -(-peak // gpus_per_node)
    return (Cluster((GpuType(name, gpus_per_node, nodes),)),
            f"peak: the peak concurrent demand ({peak} GPUs, each job from its submission for its recorded run "
            f"time) in {nodes} nodes of {gpus_per_node} {name} GPUs")


def as_is_workload(trace: Trace, *, name: str | None = None) -> Workload:
    """One rigid job per kept trace job (:func:`as_is_jobs`), named by its trace id, arriving at its submission,
    asking for its GPUs (batch: one sample per GPU), its application ``as-is:<own type>:<work s>``
    (:func:`schedopt.sim.asis.as_is_app`)."""
    jobs, _ = as_is_jobs(trace)
    if not jobs:
        raise InputError("trace", trace.name, "has no job with GPUs and a run time to replay")
    jobs.sort(key=lambda a: a.submit_s)  # stable: ties keep the trace's order
    return Workload(name or f"{trace.name}:as-is", tuple(
        WorkloadJob(a.job.job_id, a.submit_s, as_is_app(a.gpu_type, a.work_s), a.job.gpus, a.job.gpus) for a in jobs))


def _pods(gpus: int, per_node: int) -> tuple[int, int]:
    """(GPUs per pod, pods): one pod when it fits a node, else the largest divisor of ``gpus`` that fits one."""
    if gpus <= per_node:
        return gpus, 1
    g = next(d for d in range(per_node, 0, -1) if gpus % d == 0)
    return g, gpus // g


def _tenant(vc: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "_", vc) or "default"


def hived_trace_of(trace: Trace, cluster: Cluster | None = None) -> Any:
    """The trace as a :class:`~schedopt.sim.hived.HivedTrace` on ``cluster`` (one GPU type; default
    :func:`trace_cluster` ``"peak"``): one chain of its nodes; each virtual cluster of the trace (``default`` for
    jobs without one) a tenant whose quota is its share of the trace's GPU-seconds in whole nodes (largest
    remainders: a pod of several GPUs needs a node cell in HiveD's two-level chain); a job is guaranteed (priority 0) when it fits its tenant's
    quota on an empty cluster, else opportunistic (-1; a tenant of no quota has only these); pods are node-sized
    (:func:`_pods`); the run time the recorded one."""
    from ..hived import load_hived_config
    from ..sim.hived import HivedCluster, HivedJob, hived_trace
    from ..sim.hived.private import PrivateQuota

    jobs, _ = as_is_jobs(trace)
    cl = cluster if cluster is not None else trace_cluster(trace, "peak")[0]
    if len(cl.gpu_types) != 1:
        raise InputError("cluster", list(cl.type_names), "a HiveD replay takes a cluster of one GPU type")
    t = cl.gpu_types[0]
    R, N = t.gpus_per_node, t.nodes
    use: dict[str, float] = {}
    for a in jobs:
        v = _tenant(a.job.vc)
        use[v] = use.get(v, 0.0) + a.gpu_seconds
    total = sum(use.values())
    raw = {v: N * u / total for v, u in use.items()}
    quota = {v: math.floor(x) for v, x in raw.items()}
    for v in sorted(raw, key=lambda v: (quota[v] - raw[v], v))[:N - sum(quota.values())]:
        quota[v] += 1
    node, gpu = f"{t.name.upper()}-NODE", f"{t.name.upper()}-GPU"
    vcs = {v: {"virtualCells": [{"cellType": node, "cellNumber": q}]} for v, q in sorted(quota.items()) if q}
    pc, vlist = load_hived_config({
        "physicalCluster": {"cellTypes": {node: {"childCellType": gpu, "childCellNumber": R, "isNodeLevel": True}},
                            "physicalCells": [{"cellType": node, "cellAddress": f"n{k}"} for k in range(N)]},
        "virtualClusters": vcs})
    hc = HivedCluster(f"{trace.name}:as-is", pc, tuple(vlist))
    fits, chain, first = PrivateQuota(hc).fits, pc.chain_names[0], next(iter(vcs))
    out = []
    for a in jobs:
        v = _tenant(a.job.vc)
        per, pods = _pods(a.job.gpus, R)
        ok = v in vcs and fits(v, chain, per, pods, running=())
        out.append(HivedJob(a.job.job_id, v if v in vcs else first, a.submit_s, a.work_s, per, pods, chain,
                            0 if ok else -1))
    return hived_trace(hc, out, name=f"{trace.name}:as-is")


def as_is_context(trace: Trace, cluster_rule: str | None = None) -> AsIsContext:
    """The replay's context (:class:`~schedopt.sim.asis.AsIsContext`): derived cluster and rule, job table, jobs
    left out, the HiveD builder."""
    jobs, left = as_is_jobs(trace)
    cl, rule = trace_cluster(trace, cluster_rule)
    return AsIsContext(trace.name, trace.format, cl, rule,
                       {a.job.job_id: (a.job.user, a.job.vc, a.job.status, a.work_s) for a in jobs}, left,
                       lambda c: hived_trace_of(trace, c))


def replay(trace: Trace, policy: Any, *, cluster: Cluster | None = None, cluster_rule: str | None = None,
           speeds: Mapping[str, float] | None = None, restart_s: float = 0.0, round_seconds: float | None = None,
           max_time: float | None = None, progress: bool | None = None,
           observer: Callable[[int, float, int, int], None] | None = None,
           records: str | os.PathLike[str] | None = None, **policy_params: Any) -> SimResult:
    """Replay ``trace`` as it happened under ``policy`` (a spec: ``fifo``, ``tiresias``, ``gavel``, ``sia``,
    ``pollux``, ``hived``, ``hived:quota``, ``module:Class``; or a policy object) on ``cluster`` (default: derived,
    :func:`trace_cluster` by ``cluster_rule``). ``speeds``: relative speed per GPU type
    (:data:`~schedopt.sim.asis.SPEEDS` when None); ``restart_s``: the delay of every (re)start. The records'
    ``meta.details["as_is"]`` names the assumptions and holds the report (JCT, queueing delay per virtual cluster,
    utilization, fairness: :func:`schedopt.sim.asis.as_is_report`). ``records``: a path the record is streamed to
    as jobs finish (the result then holds the meta only; :func:`schedopt.sim.records.read_record` reads the file).
    """
    if not isinstance(trace, Trace):
        raise InputError("trace", type(trace).__name__, "must be a schedopt.traces.Trace")
    return simulate_as_is(as_is_workload(trace), policy, as_is_context(trace, cluster_rule), cluster=cluster,
                          speeds=speeds, restart_s=restart_s, round_seconds=round_seconds, max_time=max_time,
                          progress=progress, observer=observer, policy_params=policy_params, records=records)


_OPTS = ("format", "rule")


def resolve_as_is(key: str, shipped: Callable[[str], Trace]) -> Workload | None:
    """``trace:<path or shipped trace>:as-is[:format=F][:rule=machines|peak]`` -> the replay's workload (and its
    context registered for :func:`schedopt.sim.asis.run_task`); None for any other name. ``shipped``: the shipped
    trace by name (:func:`schedopt.traces.named.shipped_trace`)."""
    from .readers import read_trace

    if not key.startswith("trace:") or ":as-is" not in key:
        return None
    path, _, rest = key[len("trace:"):].partition(":as-is")
    opts: dict[str, str] = {}
    for part in (p for p in rest.split(":") if p):
        k, eq, v = part.partition("=")
        if not eq or k not in _OPTS:
            raise InputError("workload", key, f"options after :as-is look like format=helios or rule=peak; known: "
                             f"{', '.join(_OPTS)}")
        opts[k] = v
    if path == "philly" and not Path(path).exists():
        trace = shipped("philly")
    elif Path(path).exists():
        trace = read_trace(path, opts.get("format") or None)
    else:
        raise InputError("workload", key, f"{path!r} is neither a trace file nor the shipped 'philly'")
    register_context(key, as_is_context(trace, opts.get("rule") or None))
    return as_is_workload(trace, name=key)
