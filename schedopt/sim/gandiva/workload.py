"""Gandiva's clusters, per-GPU-type job speeds and synthetic traces as :mod:`schedopt.sim` workloads."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from importlib import resources
from typing import Any

import numpy as np

from ...errors import InputError
from ...gandiva import GandivaJob, generate_trace
from ...goodput import JobGoodputModel, ThroughputParams
from ...sia import Cluster, GpuType
from ..jobs import Application, JobModel
from ..workloads import Workload, WorkloadJob

__all__ = [
    "CLUSTER_PRESETS",
    "SYNTHETIC_PARAMS",
    "GandivaTrace",
    "TypeSpeeds",
    "gandiva_cluster",
    "gandiva_preset",
    "gandiva_trace",
    "gandiva_workload",
    "load_type_speeds",
    "parse_synthetic",
    "synthetic_trace",
]

_BATCH = 1024  # the nominal global batch of every Gandiva job (its only role: a rigid batch the engine can split)
#: the reference GPU type (speed 1: a job's ``duration`` is its run time there); ``gpu`` is its generic alias
REFERENCE = "p100"


@dataclass(frozen=True, eq=False)
class TypeSpeeds:
    """Relative speed of each Gandiva job type on each GPU type (P100 = 1; ``gpu``, the generic type of a
    homogeneous cluster, is the P100) and each GPU type's memory in units of the profiles' 16 GB GPU."""

    job_types: tuple[str, ...]
    speed: Mapping[str, np.ndarray]
    memory: Mapping[str, float]

    @property
    def gpu_types(self) -> tuple[str, ...]:
        return tuple(self.speed)

    def of(self, job_type: str, gpu_type: str, path: str = "job_type") -> float:
        """The speed of ``job_type`` on ``gpu_type`` relative to a P100."""
        if gpu_type not in self.speed:
            raise InputError("cluster.gpu_types", gpu_type, f"has no Gandiva speeds; known: {', '.join(self.speed)}")
        if job_type not in self._index:
            raise InputError(path, job_type, "is not a profiled Gandiva job type")
        return float(self.speed[gpu_type][self._index[job_type]])

    @property
    def _index(self) -> dict[str, int]:
        return {t: i for i, t in enumerate(self.job_types)}


@lru_cache(maxsize=1)
def load_type_speeds() -> TypeSpeeds:
    """The shipped table (``type_speeds.json``, derived by ``tools/derive_gandiva_type_speeds.py`` from Gavel's
    measured K80 / P100 / V100 throughputs; the P40 row is an assumption, see ``formulations/sim_gandiva.md``)."""
    d = json.loads(resources.files(__package__).joinpath("type_speeds.json").read_text())
    speed = {t: np.asarray(v, dtype=float) for t, v in d["speed"].items()}
    speed["gpu"] = speed[REFERENCE]
    mem = {t: float(g) / 16.0 for t, g in d["memory_gb"].items()}
    mem["gpu"] = mem[REFERENCE]
    return TypeSpeeds(tuple(d["job_types"]), speed, mem)


# ---------------------------------------------------------------------------------------------- clusters
def gandiva_cluster(nodes: int = 25, gpus_per_node: int = 4, gpu_type: str = "gpu") -> Cluster:
    """A homogeneous cluster: ``nodes`` servers of ``gpus_per_node`` GPUs of one type (``gpu`` = P100 speeds).
    The paper's heterogeneous 50 P100 + 50 P40 is :func:`gandiva_preset` ``("gandiva-100")``."""
    return Cluster((GpuType(gpu_type, gpus_per_node, nodes),))


#: named clusters: the paper's 100 GPUs (50 P100 + 50 P40 as 4-GPU servers) and a homogeneous 100 (25 x 4 P100)
CLUSTER_PRESETS: dict[str, tuple[tuple[str, int, int], ...]] = {
    "gandiva-100": (("p100", 4, 13), ("p40", 4, 12)),
    "gandiva-100-homogeneous": (("gpu", 4, 25),),
    "gandiva-200": (("p100", 4, 25), ("p40", 4, 25)),
    "gandiva-12": (("p100", 4, 2), ("p40", 4, 1)),
    "gandiva-12-homogeneous": (("gpu", 4, 3),),
}
DEFAULT_CLUSTER = "gandiva-100"


def gandiva_preset(name: str = DEFAULT_CLUSTER) -> Cluster:
    """A named cluster of :data:`CLUSTER_PRESETS`. ``gandiva-100`` has 13 x 4 P100 + 12 x 4 P40 (52 + 48 GPUs:
    4-GPU servers cannot split 100 into 50 + 50 evenly)."""
    if name not in CLUSTER_PRESETS:
        raise InputError("cluster", name, f"unknown Gandiva cluster; have {', '.join(CLUSTER_PRESETS)}")
    return Cluster(tuple(GpuType(t, g, n) for t, g, n in CLUSTER_PRESETS[name]))


# ---------------------------------------------------------------------------------------------- jobs
@dataclass(frozen=True, eq=False)
class GandivaTrace:
    """A Gandiva trace as the engine runs it: the workload, its job model, each job's profile by job id, and its
    relative speed on each GPU type of the cluster (what Gandiva's profiling tells the policy)."""

    workload: Workload
    job_model: JobModel
    jobs: Mapping[str, GandivaJob]
    priorities: Mapping[str, float]
    speeds: Mapping[str, Mapping[str, float]] | None = None  #: job id -> {GPU type: speed}


def _truth(types: Sequence[str], speed: Mapping[str, float]) -> JobGoodputModel:
    # 1 / speed seconds per step on any GPU count (gamma = 10 makes the near-zero network term vanish)
    params = {t: ThroughputParams(1.0 / speed[t], 0.0, 0.0, 0.0, 0.0, 0.0, 10.0) for t in types}
    return JobGoodputModel("gandiva-job", params, float(_BATCH), float(_BATCH), dict.fromkeys(types, (1, _BATCH)),
                           (float(_BATCH),), (1.0,), (0.0,))


def gandiva_workload(jobs: Sequence[GandivaJob], cluster: Cluster, *, name: str = "gandiva",
                     priorities: Mapping[str, float] | None = None,
                     suspend_resume_seconds: float = 0.0, speeds: TypeSpeeds | None = None) -> GandivaTrace:
    """``jobs`` (:class:`schedopt.gandiva.GandivaJob`: id, GPUs, job type, duration, arrival, elasticity) as a
    workload: each job's own application makes ``speed`` units of progress per second on its requested GPUs of a
    type (``speeds``: default :func:`load_type_speeds`; 1 on a P100 or the generic ``gpu``) and completes after
    ``duration`` units. A job type without speeds runs at 1 on every type. ``priorities``: job id -> weight
    (default 1)."""
    if not isinstance(cluster, Cluster):
        raise InputError("cluster", type(cluster).__name__, "must be a schedopt.sia.Cluster")
    table = speeds if speeds is not None else load_type_speeds()
    types = cluster.type_names
    for t in types:
        if t not in table.speed:
            raise InputError("cluster.gpu_types", t, f"has no Gandiva speeds; known: {', '.join(table.speed)}")
    apps: dict[str, tuple[Application, JobGoodputModel]] = {}
    elastic: dict[str, int] = {}
    wjobs = []
    ids: set[str] = set()
    job_speeds: dict[str, dict[str, float]] = {}
    for i, j in enumerate(jobs):
        if not isinstance(j, GandivaJob):
            raise InputError(f"jobs[{i}]", type(j).__name__, "must be a schedopt.gandiva.GandivaJob")
        if j.id in ids:
            raise InputError(f"jobs[{i}].id", j.id, "is used by an earlier job")
        if not (math.isfinite(j.duration) and j.duration > 0):
            raise InputError(f"jobs[{i}].duration", j.duration, "must be > 0")
        ids.add(j.id)
        sp = {t: (table.of(j.job_type, t) if j.job_type in table.job_types else 1.0) for t in types}
        job_speeds[j.id] = sp
        app = f"gandiva:{j.id}"
        apps[app] = (Application(app, np.array([float(_BATCH)]), 1, np.array([float(j.duration)]),
                                 np.array([[1.0]]), np.array([[0.0]])), _truth(types, sp))
        if j.elastic and j.grow_limit > j.gpus:
            elastic[app] = j.grow_limit
        wjobs.append(WorkloadJob(j.id, float(j.arrival), app, int(j.gpus), _BATCH))
    wjobs.sort(key=lambda w: w.time)
    pri = {j.id: float((priorities or {}).get(j.id, 1.0)) for j in jobs}
    for jid, p in pri.items():
        if not (math.isfinite(p) and p > 0):
            raise InputError(f"priorities[{jid}]", p, "must be > 0")
    jm = JobModel("gandiva", default_restart=float(suspend_resume_seconds), rigid_apps={}, apps=apps,
                  elastic=elastic, gpu_cap=max((j.grow_limit for j in jobs), default=1))
    return GandivaTrace(Workload(name, tuple(wjobs)), jm, {j.id: j for j in jobs}, pri, job_speeds)


def gandiva_trace(n_jobs: int = 400, seed: int = 0, cluster: Cluster | None = None, *,
                  arrival_rate: float = 1 / 90.0, duration_scale: float = 0.1, elastic_fraction: float = 0.2,
                  high_priority_fraction: float = 0.0, max_duration: float | None = None,
                  name: str | None = None) -> GandivaTrace:
    """A synthetic trace shaped like the paper's: Poisson arrivals, Philly job sizes (76% 1-GPU) and
    durations (scaled by ``duration_scale``, clipped at ``max_duration`` seconds if given; seconds on a P100),
    job types drawn from the Gavel-derived profiles, a fraction of elastic jobs (may double), and optionally a
    fraction of priority-2 jobs. ``cluster``: default :func:`gandiva_preset` ``()`` (50 P100 + 50 P40)."""
    cl = cluster if cluster is not None else gandiva_preset()
    biggest = max(t.total_gpus for t in cl.gpu_types)
    jobs = generate_trace(n_jobs, seed, arrival_rate=arrival_rate, duration_scale=duration_scale,
                          max_gpus=min(biggest, 8), elastic_fraction=elastic_fraction)
    if max_duration is not None:
        if not max_duration > 0:
            raise InputError("max_duration", max_duration, "must be > 0 seconds")
        jobs = [replace(j, duration=min(j.duration, float(max_duration))) for j in jobs]
    rng = np.random.default_rng([seed, 19])
    pri = {j.id: 2.0 for j in jobs if rng.random() < high_priority_fraction}
    return gandiva_workload(jobs, cl, name=name or f"gandiva-{n_jobs}-s{seed}", priorities=pri)


# ---------------------------------------------------------------------------------------------- named workloads
#: ``gandiva/synthetic`` parameters: name -> (default, type, lower bound)
SYNTHETIC_PARAMS: dict[str, tuple[float, type, float]] = {
    "jobs": (400, int, 1),
    "interarrival": (80.0, float, 0.0),  # mean seconds between arrivals
    "duration_scale": (0.05, float, 0.0),
    "max_duration_h": (6.0, float, 0.0),  # 0: no clip
    "elastic": (0.2, float, 0.0),
    "high_priority": (0.0, float, 0.0),
}


def parse_synthetic(name: str) -> dict[str, Any]:
    """The parameters of a workload name ``gandiva/synthetic[:key=value[:key=value...]]`` (keys and defaults:
    :data:`SYNTHETIC_PARAMS`; the defaults are the README's ablation: 400 jobs, 80 s mean inter-arrival, Philly
    durations x 0.05 clipped at 6 h, 20% elastic)."""
    head, *parts = name.split(":")
    if head != "gandiva/synthetic":
        raise InputError("workload", name, "must be gandiva/synthetic[:key=value...] for a gandiva policy")
    out: dict[str, Any] = {k: v[0] for k, v in SYNTHETIC_PARAMS.items()}
    for p in parts:
        k, eq, v = p.partition("=")
        if k not in SYNTHETIC_PARAMS or not eq:
            raise InputError("workload", name, f"'{p}' is not key=value with a key in {', '.join(SYNTHETIC_PARAMS)}")
        _, typ, lo = SYNTHETIC_PARAMS[k]
        try:
            val = typ(v) if typ is float else int(v)
        except ValueError:
            raise InputError(f"workload.{k}", v, f"must be {'an integer' if typ is int else 'a number'}") from None
        if not (math.isfinite(val) and (val > lo if k in ("interarrival", "duration_scale") else val >= lo)):
            raise InputError(f"workload.{k}", v, f"must be {'>' if k in ('interarrival', 'duration_scale') else '>='} "
                                                 f"{lo:g}")
        if k in ("elastic", "high_priority") and val > 1:
            raise InputError(f"workload.{k}", v, "must be a fraction in [0, 1]")
        out[k] = val
    return out


def synthetic_trace(name: str, seed: int, cluster: Cluster) -> GandivaTrace:
    """The trace a workload name of :func:`parse_synthetic` names, drawn with ``seed`` for ``cluster``."""
    p = parse_synthetic(name)
    return gandiva_trace(p["jobs"], seed, cluster, arrival_rate=1.0 / p["interarrival"],
                         duration_scale=p["duration_scale"], elastic_fraction=p["elastic"],
                         high_priority_fraction=p["high_priority"],
                         max_duration=p["max_duration_h"] * 3600.0 if p["max_duration_h"] else None, name=name)
