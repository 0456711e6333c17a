"""Multi-tenant traces for HiveD in closed loop: clusters with virtual clusters, jobs, node failures.

* :func:`cluster_preset` -- a cluster and its tenants (virtual clusters) from a hivedscheduler YAML config:
  ``three-tenant`` (64 V100s; vision / speech / research), ``tiny`` (8 GPUs; the hand-computed tests),
  ``example`` (``schedopt/hived/examples/example.yaml``: two chains, a pinned cell).
* :class:`HivedJob` -- one job: its tenant, a cell-level affinity request (``pods`` pods of ``gpus_per_pod`` GPUs on
  ``chain``, every pod on one node), ``priority`` 0..1000 (guaranteed, inside the tenant's quota) or -1
  (opportunistic, anywhere idle, preemptible), and its run time.
* :class:`NodeFailure` -- a node fails at ``start`` and is repaired at ``end``.
* :func:`synthetic_trace` -- the documented seeded generator (module ``SYNTHETIC_PARAMS``; see its docstring);
  :func:`parse_workload` reads ``hived/synthetic[:key=value...]``.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

import numpy as np

from ...errors import InputError
from ...hived import PhysicalCluster, VirtualCluster, check_vc_assignment, load_hived_config
from ...hived.priority import MAX_GUARANTEED_PRIORITY, OPPORTUNISTIC_PRIORITY
from ..limits import MAX_ARRIVAL_SECONDS
from .private import PrivateQuota

__all__ = [
    "CLUSTER_PRESETS",
    "DEFAULT_CLUSTER",
    "PRESET_PROFILES",
    "SYNTHETIC_BOUNDS",
    "SYNTHETIC_PARAMS",
    "HivedCluster",
    "HivedJob",
    "HivedTrace",
    "NodeFailure",
    "TenantProfile",
    "cluster_preset",
    "default_profiles",
    "hived_trace",
    "mean_duration",
    "parse_workload",
    "synthetic_trace",
]

#: preset name -> the YAML file (``schedopt/sim/hived/<name>.yaml``: shipped as package data, or the hived package's example)
CLUSTER_PRESETS: dict[str, tuple[str, str]] = {
    "three-tenant": ("schedopt.sim.hived", "three-tenant.yaml"),
    "tiny": ("schedopt.sim.hived", "tiny.yaml"),
    "example": ("schedopt.hived", "examples/example.yaml"),
}
#: The HiveD cluster preset a task without one runs on.
DEFAULT_CLUSTER = "three-tenant"


@dataclass(frozen=True, eq=False)
class HivedCluster:
    """A physical cluster and its tenants' virtual clusters (``name``: the preset or file it came from)."""

    name: str
    cluster: PhysicalCluster
    vcs: tuple[VirtualCluster, ...]

    def __post_init__(self) -> None:
        """The tenants' quotas must fit the cluster (HiveD's counting rule, exact: ``formulations/hived.md``): a
        quota the cells cannot hold is no tenant a scheduler can honour, and every job of that tenant would then be
        counted as a sharing anomaly against it."""
        if not isinstance(self.cluster, PhysicalCluster):
            raise InputError("cluster", type(self.cluster).__name__, "must be a schedopt.hived.PhysicalCluster")
        vcs = tuple(self.vcs)
        bad = [i for i, v in enumerate(vcs) if not isinstance(v, VirtualCluster)]
        if bad:
            raise InputError(f"vcs[{bad[0]}]", type(vcs[bad[0]]).__name__, "must be a schedopt.hived.VirtualCluster")
        object.__setattr__(self, "vcs", vcs)
        rep = check_vc_assignment(self.cluster, vcs, "counting")
        if not rep.valid:
            raise InputError("vcs", [v.name for v in vcs], f"the tenants' quotas do not fit cluster {self.name!r}: "
                             f"{rep.message or rep.cause}")

    @property
    def gpus(self) -> int:
        return int(self.cluster.num_gpus)

    @property
    def tenants(self) -> tuple[str, ...]:
        return tuple(v.name for v in self.vcs)


@cache
def cluster_preset(name: str = DEFAULT_CLUSTER) -> HivedCluster:
    """The preset cluster ``name`` (:data:`CLUSTER_PRESETS`) with its tenants, read from its hivedscheduler YAML."""
    if name not in CLUSTER_PRESETS:
        raise InputError("cluster", name, f"unknown HiveD cluster; have {', '.join(CLUSTER_PRESETS)}")
    pkg, path = CLUSTER_PRESETS[name]
    with resources.as_file(resources.files(pkg).joinpath(path)) as file:
        cl, vcs = load_hived_config(file)
    return HivedCluster(name, cl, tuple(vcs))


@dataclass(frozen=True)
class HivedJob:
    """One job of a trace (see the module docstring). ``duration``: seconds of running time it needs (a preempted
    or killed job restarts from the beginning: no checkpoints)."""

    id: str
    tenant: str
    arrival: float
    duration: float
    gpus_per_pod: int
    pods: int = 1
    chain: str = ""
    priority: int = 0

    @property
    def gpus(self) -> int:
        return self.gpus_per_pod * self.pods

    @property
    def guaranteed(self) -> bool:
        return self.priority >= 0


@dataclass(frozen=True)
class NodeFailure:
    """Node ``node`` is down from ``start`` to ``end`` seconds (``end`` may be ``math.inf``)."""

    node: str
    start: float
    end: float


@dataclass(frozen=True, eq=False)
class HivedTrace:
    """Jobs (sorted by arrival) and node failures over one :class:`HivedCluster`."""

    name: str
    cluster: HivedCluster
    jobs: tuple[HivedJob, ...]
    failures: tuple[NodeFailure, ...] = ()
    params: Mapping[str, Any] = field(default_factory=dict)


def _num(v: Any, path: str, *, lo: float = 0.0, strict: bool = False) -> float:
    ok = not isinstance(v, bool) and isinstance(v, int | float | np.integer | np.floating) and math.isfinite(v)
    if not ok or (v <= lo if strict else v < lo):
        raise InputError(path, v, f"must be a finite number {'>' if strict else '>='} {lo:g}")
    return float(v)


def hived_trace(cluster: HivedCluster, jobs: Sequence[HivedJob], failures: Sequence[NodeFailure] = (), *,
                name: str = "hived") -> HivedTrace:
    """Validate ``jobs`` and ``failures`` against ``cluster`` (every error names the job field): the tenant is a VC,
    the chain exists (empty: the cluster's only chain), a pod fits one node, a guaranteed job fits its tenant's
    quota on that chain when nothing else runs (else it could never start), priorities are -1..1000."""
    cl = cluster.cluster
    tenants = set(cluster.tenants)
    out, seen = [], set()
    quota = PrivateQuota(cluster)
    for i, j in enumerate(jobs):
        p = f"jobs[{i}]"
        if not isinstance(j, HivedJob):
            raise InputError(p, type(j).__name__, "must be a HivedJob")
        if not isinstance(j.id, str) or not j.id or j.id in seen:
            raise InputError(f"{p}.id", j.id, "must be a non-empty string used by no other job")
        seen.add(j.id)
        if j.tenant not in tenants:
            raise InputError(f"{p}.tenant", j.tenant, f"names no virtual cluster ({sorted(tenants)})")
        _num(j.arrival, f"{p}.arrival")
        _num(j.duration, f"{p}.duration", strict=True)
        chain = j.chain
        if not chain:
            if len(cl.chain_names) != 1:
                raise InputError(f"{p}.chain", j.chain, f"must name a chain ({cl.chain_names})")
            chain = cl.chain_names[0]
        if chain not in cl.chain_names:
            raise InputError(f"{p}.chain", j.chain, f"names no chain ({cl.chain_names})")
        ch = cl.chains[chain]
        for fld in ("gpus_per_pod", "pods"):
            v = getattr(j, fld)
            if isinstance(v, bool) or not isinstance(v, int | np.integer) or v < 1:
                raise InputError(f"{p}.{fld}", v, "must be a positive integer")
        if j.gpus_per_pod > ch.gpus[ch.node_level]:
            raise InputError(f"{p}.gpus_per_pod", j.gpus_per_pod,
                             f"exceeds the {ch.gpus[ch.node_level]} GPUs of a node of chain {chain!r}")
        if isinstance(j.priority, bool) or not isinstance(j.priority, int | np.integer) or not (
                OPPORTUNISTIC_PRIORITY <= j.priority <= MAX_GUARANTEED_PRIORITY):
            raise InputError(f"{p}.priority", j.priority, "must be an integer in -1..1000 (-1: opportunistic)")
        if j.guaranteed and not quota.fits(j.tenant, chain, j.gpus_per_pod, j.pods, running=()):
            raise InputError(f"{p}.pods", j.pods, f"{j.pods} pod(s) of {j.gpus_per_pod} GPUs never fit tenant "
                                                  f"{j.tenant!r}'s quota on chain {chain!r}")
        if j.pods * j.gpus_per_pod > ch.gpus[ch.levels] * cl.num_cells(chain, ch.levels):
            raise InputError(f"{p}.pods", j.pods, f"more GPUs than chain {chain!r} holds")
        out.append(j if j.chain == chain else HivedJob(j.id, j.tenant, float(j.arrival), float(j.duration),
                                                       int(j.gpus_per_pod), int(j.pods), chain, int(j.priority)))
    fails = []
    for i, nf in enumerate(failures):
        p = f"failures[{i}]"
        if not isinstance(nf, NodeFailure):
            raise InputError(p, type(nf).__name__, "must be a NodeFailure")
        if nf.node not in cl.node_names:
            raise InputError(f"{p}.node", nf.node, "names no node")
        s = _num(nf.start, f"{p}.start")
        if not (isinstance(nf.end, int | float) and nf.end > s):
            raise InputError(f"{p}.end", nf.end, "must be a number > start (math.inf: never repaired)")
        fails.append(nf)
    by_node: dict[str, list[NodeFailure]] = {}
    for f in fails:
        by_node.setdefault(f.node, []).append(f)
    for node, fs in by_node.items():
        fs.sort(key=lambda f: f.start)
        for a, b in itertools.pairwise(fs):
            if b.start < a.end:
                raise InputError("failures", node, f"node {node!r} fails again at {b.start:g} before its repair "
                                                   f"at {a.end:g}")
    out.sort(key=lambda j: (j.arrival, j.id))
    fails.sort(key=lambda f: (f.start, f.node))
    return HivedTrace(name, cluster, tuple(out), tuple(fails))


# ---------------------------------------------------------------------------------------------- generator
@dataclass(frozen=True)
class TenantProfile:
    """How a tenant submits jobs in :func:`synthetic_trace`: its pod size, the largest gang (pods per job), the
    fraction of its jobs submitted as opportunistic (1 GPU each), and ``load``: its guaranteed jobs offer
    ``load`` x the trace's load x its quota in GPUs."""

    tenant: str
    gpus_per_pod: int
    max_pods: int = 1
    opportunistic: float = 0.0
    chain: str = ""
    load: float = 1.0


#: the ``three-tenant`` preset's tenants: an affinity-heavy one (whole nodes, gangs of up to 4), 4-GPU pods, and
#: 1-GPU jobs with a third of them opportunistic
PRESET_PROFILES: dict[str, tuple[TenantProfile, ...]] = {
    "three-tenant": (TenantProfile("vision", 8, 4), TenantProfile("speech", 4, 2),
                     TenantProfile("research", 1, 1, 1 / 3)),
    "tiny": (TenantProfile("a", 4, 1), TenantProfile("b", 1, 1, 0.25), TenantProfile("c", 2, 1)),
}


def default_profiles(cluster: HivedCluster) -> tuple[TenantProfile, ...]:
    """The preset's profiles (:data:`PRESET_PROFILES`), else one per tenant and chain where it has quota (outside
    pinned cells): pods of its largest quota cell's GPUs (at most a node), gangs up to what the quota holds (at
    most 4), 10 % opportunistic."""
    if cluster.name in PRESET_PROFILES:
        return PRESET_PROFILES[cluster.name]
    q = PrivateQuota(cluster)
    out = []
    for v in cluster.tenants:
        for chain in cluster.cluster.chain_names:
            cells = q.quota[(v, chain)]
            if not cells.any():
                continue
            ch = cluster.cluster.chains[chain]
            top = int(np.flatnonzero(cells).max())
            g = int(ch.gpus[min(top, ch.node_level)])
            pods = 1
            while pods < 4 and q.fits(v, chain, g, pods + 1, running=()):
                pods += 1
            out.append(TenantProfile(v, g, pods, 0.1, chain))
    return tuple(out)


#: ``hived/synthetic`` keys: (default, type, lower bound, strict)
SYNTHETIC_PARAMS: dict[str, tuple[Any, type, float, bool]] = {
    "jobs": (300, int, 1, False),
    "load": (0.9, float, 0.0, True),
    "failures": (0, int, 0, False),
    "repair_h": (2.0, float, 0.0, True),
    "long": (0.2, float, 0.0, False),
}

#: ``hived/synthetic`` keys: the closed range each must lie in, and why (checked by :func:`parse_workload` and
#: :func:`synthetic_trace` alike)
SYNTHETIC_BOUNDS: dict[str, tuple[float, float, str]] = {
    "jobs": (1, 100_000, "every job is an event of the closed loop; HiveD's experiments replay a few hundred to a "
                         "few thousand"),
    "load": (1e-3, 1e3, "a multiple of the tenants' quota: below 0.001 the trace's arrivals span past ten years, "
                        "above 1000 they all fall in the first second"),
    "failures": (0, 10_000, "every failure is two events of the loop, each drawing a node among those up"),
    "repair_h": (1e-3, 87_600, "hours to repair a node, at most ten years (the longest simulated time)"),
    "long": (0.0, 1.0, "a fraction of the jobs"),
}


def _bounded(key: str, v: Any, field: str) -> Any:
    """``v`` when it lies in :data:`SYNTHETIC_BOUNDS` ``[key]``, else an InputError naming ``field`` and the reason."""
    lo, hi, why = SYNTHETIC_BOUNDS[key]
    integer = SYNTHETIC_PARAMS[key][1] is int
    ok = not isinstance(v, bool) and isinstance(v, int | np.integer if integer else int | float | np.integer |
                                                np.floating)
    if not ok or not math.isfinite(v):
        raise InputError(field, v, f"must be {'an integer' if integer else 'a finite number'} in [{lo:g}, {hi:g}] "
                         f"({why})")
    if v < lo:
        raise InputError(field, v, f"must be >= {lo:g} ({why})")
    if v > hi:
        raise InputError(field, v, f"must be <= {hi:g} ({why})")
    return v


def parse_workload(name: str) -> dict[str, Any]:
    """The parameters of ``hived/synthetic[:key=value...]`` (keys and defaults: :data:`SYNTHETIC_PARAMS`, bounds:
    :data:`SYNTHETIC_BOUNDS`)."""
    head, *parts = name.split(":")
    if head != "hived/synthetic":
        raise InputError("workload", name, "must be hived/synthetic[:key=value...] for a hived policy")
    out = {k: v[0] for k, v in SYNTHETIC_PARAMS.items()}
    for p in parts:
        k, eq, v = p.partition("=")
        if k not in SYNTHETIC_PARAMS or not eq:
            raise InputError("workload", name, f"'{p}' is not key=value with a key in {', '.join(SYNTHETIC_PARAMS)}")
        typ = SYNTHETIC_PARAMS[k][1]
        try:
            val = float(v) if typ is float else int(v)
        except ValueError:
            raise InputError(f"workload.{k}", v, f"must be {'a number' if typ is float else 'an integer'}") from None
        out[k] = _bounded(k, val, f"workload.{k}")
    return out


#: the run-time mix of :func:`_durations`: (probability is ``long`` or 1 - ``long``) x 60 x 10^U(lo, hi) seconds
SHORT_EXP, LONG_EXP = (1.0, 2.5), (2.5, 3.0)


def _durations(rng: np.random.Generator, n: int, long: float) -> np.ndarray:
    """Run times in seconds: 60 x 10^U(1, 2.5) (10 min - 5.3 h) for short jobs, 60 x 10^U(2.5, 3) (5.3 - 16.7 h)
    for a ``long`` fraction (the shape of Synergy's Philly-derived mix, scaled down 10x so a few hundred jobs reach
    a steady state), rounded to whole seconds."""
    is_long = rng.random(n) < long
    exp = np.where(is_long, rng.uniform(*LONG_EXP, n), rng.uniform(*SHORT_EXP, n))
    return np.round(60.0 * 10.0 ** exp)


def mean_duration(long: float) -> float:
    """The mean of :func:`_durations` (E[10^U(a, b)] = (10^b - 10^a) / ((b - a) ln 10))."""
    def m(a: float, b: float) -> float:
        return 60.0 * (10.0 ** b - 10.0 ** a) / ((b - a) * math.log(10.0))
    return (1.0 - long) * m(*SHORT_EXP) + long * m(*LONG_EXP)


def synthetic_trace(cluster: HivedCluster, jobs: int = 300, seed: int = 0, *, load: float = 0.9,
                    failures: int = 0, repair_h: float = 2.0, long: float = 0.2,
                    profiles: Sequence[TenantProfile] | None = None, name: str | None = None) -> HivedTrace:
    """A seeded multi-tenant trace (``numpy.random.default_rng(seed)``), documented step by step:

    1. every tenant profile (:func:`default_profiles` unless ``profiles``) submits jobs as a Poisson process whose
       guaranteed jobs offer ``load`` x ``profile.load`` x its quota in GPUs: rate = that / ((1 - opportunistic) x
       E[GPUs per job] x E[run time]); the trace is the superposition, ``jobs`` jobs from t = 0 (each job's
       tenant drawn in proportion to the rates, gaps exponential with the total rate, rounded to seconds);
    2. a job is opportunistic with the profile's probability (then 1 pod of 1 GPU, priority -1), else guaranteed
       at priority 0 with ``U{1..max_pods}`` pods of the profile's pod size;
    3. run times from :func:`_durations` (``long`` the fraction of long jobs);
    4. ``failures`` node failures at times uniform over the arrival span, on uniformly drawn nodes that are up,
       each repaired after an exponential time of mean ``repair_h`` hours (at least 1 s).
    """
    profiles = tuple(profiles) if profiles is not None else default_profiles(cluster)
    if not profiles:
        raise InputError("profiles", profiles, "no tenant has quota")
    for key, v in (("jobs", jobs), ("load", load), ("failures", failures), ("repair_h", repair_h), ("long", long)):
        _bounded(key, v, key)
    q = PrivateQuota(cluster)
    chain0 = cluster.cluster.chain_names[0]
    rates = []
    for i, p in enumerate(profiles):
        if p.tenant not in cluster.tenants:
            raise InputError(f"profiles[{i}].tenant", p.tenant, "names no virtual cluster")
        gpus = q.gpus.get((p.tenant, p.chain or chain0), 0)
        per_job = (1.0 - p.opportunistic) * p.gpus_per_pod * (1 + p.max_pods) / 2.0 * mean_duration(long)
        rates.append(load * p.load * gpus / per_job if per_job > 0 else 0.0)
    r = np.asarray(rates, float)
    if not r.sum() > 0:
        raise InputError("profiles", profiles, "offer no load (no quota or no guaranteed jobs)")
    rng = np.random.default_rng(seed)
    which = rng.choice(len(profiles), size=jobs, p=r / r.sum())
    u_opp = rng.random(jobs)
    pods_u = rng.random(jobs)
    dur = _durations(rng, jobs, long)
    arrivals = np.round(np.cumsum(rng.exponential(1.0 / r.sum(), jobs)))
    arrivals -= arrivals[0]
    if arrivals[-1] > MAX_ARRIVAL_SECONDS:
        raise InputError("load", load, f"the {jobs} jobs arrive over {arrivals[-1]:.3g} s, past MAX_ARRIVAL_SECONDS = "
                         f"{MAX_ARRIVAL_SECONDS:.3g} (ten years): raise the load or lower jobs")
    out = []
    for i in range(jobs):
        p = profiles[int(which[i])]
        if u_opp[i] < p.opportunistic:
            g, n, pr = 1, 1, OPPORTUNISTIC_PRIORITY
        else:
            g, n, pr = p.gpus_per_pod, 1 + int(pods_u[i] * p.max_pods), 0
        out.append(HivedJob(f"j{i:04d}", p.tenant, float(arrivals[i]), float(dur[i]), g, n, p.chain, pr))
    fails: list[NodeFailure] = []
    nodes = sorted(cluster.cluster.node_names)
    span = float(arrivals[-1]) if jobs > 1 else 3600.0
    down: list[NodeFailure] = []
    for t in np.sort(rng.uniform(0.0, span, failures)):
        down = [f for f in down if f.end > t]
        up = [n for n in nodes if n not in {f.node for f in down}]
        if not up:
            continue
        f = NodeFailure(up[int(rng.integers(len(up)))], float(round(t)),
                        float(round(t)) + max(1.0, float(round(rng.exponential(repair_h * 3600.0)))))
        fails.append(f)
        down.append(f)
    nm = name or f"hived/synthetic:jobs={jobs}:load={load:g}:failures={failures}"
    tr = hived_trace(cluster, out, fails, name=nm)
    return HivedTrace(tr.name, tr.cluster, tr.jobs, tr.failures,
                      {"jobs": jobs, "seed": seed, "load": load, "failures": failures, "repair_h": repair_h,
                       "long": long})
