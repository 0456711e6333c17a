"""Round-based replay of a job trace through Gandiva's mechanisms, and Philly-distributed trace generators.

Every round of ``round_seconds``:

1. jobs that have arrived join the queue; if any arrived, grown jobs shrink back (grow-shrink);
2. queued jobs, in arrival order, are placed by Algorithm 1 (:func:`~schedopt.gandiva.find_nodes`); a multi-GPU
   job that would be fragmented, time-sliced or queued first triggers :func:`~schedopt.gandiva.defragment`
   (``migration``), and the migrations are applied when they let it fit;
3. two 1-GPU jobs time-slicing one GPU are packed (space-shared) when their memory fits and the pack beats
   time-slicing (``f[j,k] + f[k,j] > 1``), Gandiva's packing test;
4. elastic jobs grow on GPUs idle for ``idle_period`` (``grow_shrink``);
5. every placed job progresses at its rate for the round: its packing factor when packed, else its time share
   (1 / jobs on its busiest GPU) times ``held / requested`` GPUs (linear scaling), times
   ``fragmentation_penalty`` when it spans more nodes than it needs; a job finishes inside the round at the exact
   moment its remaining solo-seconds reach 0.

Reported: utilization (busy GPU-seconds / (GPUs x makespan)), mean job completion time and makespan.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TypeGuard

import numpy as np

from ..errors import InputError, SchedoptError
from .allocate import find_nodes
from .growshrink import GrowShrink, shrink
from .migration import defragment
from .profiles import Profiles, load_profiles, philly_distribution
from .state import MAX_GPUS, MAX_NODES, ClusterState, GandivaJob, Node, nodes_needed, validate_job, validate_nodes

__all__ = ["MAX_TRACE_JOBS", "ReplayResult", "generate_trace", "replay", "sample_philly"]


@dataclass
class ReplayResult:
    finish: dict[str, float]  #: job id -> completion time
    jct: dict[str, float]  #: job id -> completion time - arrival
    mean_jct: float
    makespan: float  #: last completion - first arrival
    utilization: float
    rounds: int
    migrations: int
    packs: int
    grows: int
    allocations: dict[str, int] = field(default_factory=dict)  #: tier -> jobs placed by it
    max_queue: int = 0


def _rate(state: ClusterState, jid: str, F: np.ndarray, tidx: dict[str, int], penalty: float) -> float:
    job = state.jobs[jid]
    partner = state.partner(jid)
    if partner is not None:
        return float(F[tidx[job.job_type], tidx[state.jobs[partner].job_type]])
    r = state.time_share(jid) * len(state.slots[jid]) / job.gpus
    if len(state.nodes_of(jid)) > nodes_needed(state.node_gpus, job.gpus):
        r *= penalty
    return r


def replay(
    trace: Sequence[GandivaJob],
    cluster: Sequence[Node] | ClusterState,
    *,
    round_seconds: float = 300.0,
    migration: str | None = "greedy",
    packing: bool = True,
    grow_shrink: bool = True,
    idle_period: float = 600.0,
    fragmentation_penalty: float = 0.8,
    max_height: float | None = None,
    profiles: Profiles | None = None,
    backend: str | None = None,
    max_rounds: int = 1_000_000,
) -> ReplayResult:
    """Replay ``trace`` on an empty cluster (``cluster``: nodes, or an empty :class:`ClusterState`)."""
    if isinstance(cluster, ClusterState):
        if cluster.jobs:
            raise InputError("cluster", f"{len(cluster.jobs)} jobs", "replay starts from an empty cluster")
        state = cluster.copy()
    else:
        validate_nodes(list(cluster), "cluster")
        state = ClusterState(cluster)
    if not (isinstance(round_seconds, (int, float)) and math.isfinite(round_seconds) and round_seconds > 0):
        raise InputError("round_seconds", round_seconds, "must be a positive number")
    if migration not in (None, "greedy", "exact"):
        raise InputError("migration", migration, "must be None, 'greedy' or 'exact'")
    if not 0 < fragmentation_penalty <= 1:
        raise InputError("fragmentation_penalty", fragmentation_penalty, "must be in (0, 1]")
    prof = profiles if profiles is not None else load_profiles()
    ids: set[str] = set()
    for i, j in enumerate(trace):
        validate_job(j, f"trace[{i}]")
        if j.id in ids:
            raise InputError(f"trace[{i}].id", j.id, "is used by an earlier job")
        ids.add(j.id)
        if j.gpus > state.num_gpus:
            raise InputError(f"trace[{i}].gpus", j.gpus, f"exceeds the cluster's {state.num_gpus} GPUs")
    types = sorted({j.job_type for j in trace})
    if packing:
        prof = prof.subset(types) if types else prof
    tidx = {t: i for i, t in enumerate(prof.types)}
    F = prof.factor
    if not trace:
        return ReplayResult({}, {}, 0.0, 0.0, 0.0, 0, 0, 0, 0)

    pending = sorted(trace, key=lambda j: (j.arrival, j.id))
    remaining = {j.id: float(j.duration) for j in trace}
    finish: dict[str, float] = {}
    queue: list[GandivaJob] = []
    gs = GrowShrink(idle_period)
    tiers: dict[str, int] = {}
    t0 = pending[0].arrival
    t = t0
    nxt = 0
    busy = 0.0
    migrations = packs = grows = rounds = max_queue = 0
    G = state.num_gpus
    while len(finish) < len(trace):
        rounds += 1
        if rounds > max_rounds:
            raise SchedoptError(f"replay did not finish within {max_rounds} rounds ({len(finish)}/{len(trace)} done)")
        arrived = False
        while nxt < len(pending) and pending[nxt].arrival <= t + 1e-9:
            queue.append(pending[nxt])
            nxt += 1
            arrived = True
        if arrived and grow_shrink:
            shrink(state)
            gs.idle_since.clear()
        max_queue = max(max_queue, len(queue))
        still: list[GandivaJob] = []
        for job in queue:
            a = find_nodes(state, job, max_height=max_height)
            if migration and job.gpus > 1 and (a is None or a.tier in ("fragmented", "timeslice")):
                d = defragment(state, job, method=migration, backend=backend)
                if d.freed and d.moves and d.state is not None:
                    state = d.state
                    migrations += d.migrations
                    a = find_nodes(state, job, max_height=max_height)
            if a is None:
                still.append(job)
                continue
            state.place(job, a.slots)
            tiers[a.tier] = tiers.get(a.tier, 0) + 1
        queue = still
        if packing:
            for n in range(len(state.nodes)):
                for g in range(state.nodes[n].gpus):
                    on = state.gpu_jobs(n, g)
                    if len(on) != 2 or (n, g) in state.packed:
                        continue
                    a_, b_ = (state.jobs[x] for x in on)
                    if a_.gpus != 1 or b_.gpus != 1 or len(state.slots[a_.id]) != 1 or len(state.slots[b_.id]) != 1:
                        continue
                    if a_.memory + b_.memory > state.nodes[n].gpu_memory + 1e-9:
                        continue
                    ia, ib = tidx[a_.job_type], tidx[b_.job_type]
                    if F[ia, ib] + F[ib, ia] > 1.0 + 1e-9:
                        state.pack(n, g)
                        packs += 1
        if grow_shrink:
            grows += sum(gs.step(state, t).values())
        # progress
        done: list[tuple[str, float]] = []
        for jid in list(state.jobs):
            r = _rate(state, jid, F, tidx, fragmentation_penalty)
            if r <= 0:
                continue
            need = remaining[jid] / r
            if need <= round_seconds + 1e-9:
                done.append((jid, t + need))
            else:
                remaining[jid] -= r * round_seconds
        ends = dict(done)
        for n in range(len(state.nodes)):
            for g in range(state.nodes[n].gpus):
                on = state.gpu_jobs(n, g)
                if on:
                    busy += max((ends[j] - t) if j in ends else round_seconds for j in on)
        for jid, tf in done:
            if jid in finish:
                raise AssertionError(f"job {jid} finished twice")
            finish[jid] = tf
            remaining[jid] = 0.0
            state.remove(jid)
        t += round_seconds
        if not state.jobs and nxt < len(pending) and not queue:
            # idle cluster: jump to the round holding the next arrival
            skip = math.floor((pending[nxt].arrival - t) / round_seconds)
            if skip > 0:
                t += skip * round_seconds
    arrival = {j.id: j.arrival for j in trace}
    jct = {j: finish[j] - arrival[j] for j in finish}
    makespan = max(finish.values()) - t0
    return ReplayResult(
        finish=finish,
        jct=jct,
        mean_jct=float(np.mean(list(jct.values()))),
        makespan=makespan,
        utilization=busy / (G * makespan) if makespan > 0 else 0.0,
        rounds=rounds,
        migrations=migrations,
        packs=packs,
        grows=grows,
        allocations=tiers,
        max_queue=max_queue,
    )


def sample_philly(n: int, rng: np.random.Generator, *, max_gpus: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``n`` (sizes, durations in seconds) from the shipped Philly distribution (sizes above ``max_gpus`` dropped
    and the rest renormalised)."""
    d = philly_distribution()
    sizes = np.array(d["sizes"], dtype=np.int64)
    prob = np.array(d["probability"], dtype=float)
    if max_gpus is not None:
        keep = sizes <= max_gpus
        if not keep.any():
            raise InputError("max_gpus", max_gpus, f"is below every Philly job size {sizes.tolist()}")
        sizes, prob = sizes[keep], prob[keep]
    prob = prob / prob.sum()
    k = rng.choice(sizes, size=n, p=prob)
    pct = np.array(d["percentiles"], dtype=float) / 100.0
    u = rng.random(n)
    dur = np.empty(n)
    for s in np.unique(k):
        q = np.array(d["log10_duration_quantiles"][str(int(s))], dtype=float)
        sel = k == s
        dur[sel] = 10.0 ** np.interp(u[sel], pct, q)
    return k, dur


#: The longest trace :func:`generate_trace` makes: a longer one is an :class:`InputError` (10**18 jobs would not fit
#: in memory).
MAX_TRACE_JOBS = 2**16  # 10**6 jobs took 28 s to draw (issue 20's long fuzz run); 2**16 take about 2 s


def _is_int(v: object) -> TypeGuard[int | np.integer]:
    return not isinstance(v, bool) and isinstance(v, int | np.integer)


def _is_real(v: object) -> TypeGuard[float | np.floating | np.integer]:
    return not isinstance(v, bool) and isinstance(v, int | float | np.integer | np.floating) and (
        abs(float(v)) < 1e300 and math.isfinite(float(v)))


def _trace_iv(n_jobs: object, seed: object, arrival_rate: object, duration_scale: object, max_gpus: object,
              elastic_fraction: object, profiles: object) -> None:
    """Every argument of :func:`generate_trace` checked in one place (types, finiteness, ranges)."""
    if not _is_int(n_jobs) or not 0 <= n_jobs <= MAX_TRACE_JOBS:
        raise InputError("n_jobs", n_jobs, f"must be an integer in [0, {MAX_TRACE_JOBS}] (gandiva.MAX_TRACE_JOBS)")
    if seed is not None and (not _is_int(seed) or seed < 0):
        raise InputError("seed", seed, "must be a non-negative integer or None")
    for name, v in (("arrival_rate", arrival_rate), ("duration_scale", duration_scale)):
        if not _is_real(v) or not v > 0:
            raise InputError(name, v, "must be a finite positive number")
    if max_gpus is not None and (not _is_int(max_gpus) or not 1 <= max_gpus <= MAX_GPUS):
        raise InputError("max_gpus", max_gpus, f"must be None or an integer in [1, {MAX_GPUS}] (gandiva.MAX_GPUS)")
    if not _is_real(elastic_fraction) or not 0 <= elastic_fraction <= 1:
        raise InputError("elastic_fraction", elastic_fraction, "must be a number in [0, 1]")
    if profiles is not None and not isinstance(profiles, Profiles):
        raise InputError("profiles", type(profiles).__name__, "must be a gandiva.Profiles or None")


def generate_trace(
    n_jobs: int,
    seed: int = 0,
    *,
    arrival_rate: float = 1.0 / 600.0,
    duration_scale: float = 1.0,
    max_gpus: int | None = None,
    elastic_fraction: float = 0.0,
    profiles: Profiles | None = None,
) -> list[GandivaJob]:
    """A seeded trace: Poisson arrivals (``arrival_rate`` per second), Philly job sizes and durations (times
    ``duration_scale``), job types drawn uniformly from the profile table with their profiled utilization, memory
    and throughput; a fraction of jobs is elastic (may grow to twice their size)."""
    _trace_iv(n_jobs, seed, arrival_rate, duration_scale, max_gpus, elastic_fraction, profiles)
    prof = profiles if profiles is not None else load_profiles()
    rng = np.random.default_rng(seed)
    sizes, dur = sample_philly(n_jobs, rng, max_gpus=max_gpus)
    arr = np.cumsum(rng.exponential(1.0 / arrival_rate, size=n_jobs))
    arr = arr - arr[0] if n_jobs else arr
    types = rng.integers(0, len(prof.types), size=n_jobs)
    elastic = rng.random(n_jobs) < elastic_fraction
    return [
        prof.job(
            f"j{i}",
            prof.types[int(types[i])],
            gpus=int(sizes[i]),
            duration=float(round(dur[i] * duration_scale, 3)),
            arrival=float(round(arr[i], 3)),
            elastic=bool(elastic[i]),
            max_gpus=int(2 * sizes[i]) if elastic[i] else None,
        )
        for i in range(n_jobs)
    ]


def uniform_cluster(n_nodes: int, gpus_per_node: int = 4, gpu_memory: float = 1.0) -> list[Node]:
    """``n_nodes`` identical nodes named ``n0, n1, ...`` (at most :data:`~schedopt.gandiva.state.MAX_GPUS` GPUs in
    all)."""
    if not _is_int(n_nodes) or n_nodes < 1:
        raise InputError("n_nodes", n_nodes, "must be a positive integer")
    if not _is_int(gpus_per_node) or gpus_per_node < 1:
        raise InputError("gpus_per_node", gpus_per_node, "must be a positive integer")
    if n_nodes > MAX_NODES:
        raise InputError("n_nodes", n_nodes, f"exceeds gandiva.MAX_NODES = {MAX_NODES}")
    if n_nodes * gpus_per_node > MAX_GPUS:
        raise InputError("n_nodes", n_nodes, f"times gpus_per_node={gpus_per_node} exceeds gandiva.MAX_GPUS = {MAX_GPUS}")
    if not _is_real(gpu_memory) or not gpu_memory > 0:
        raise InputError("gpu_memory", gpu_memory, "must be a finite positive number")
    return [Node(f"n{i}", int(gpus_per_node), gpu_memory) for i in range(int(n_nodes))]
