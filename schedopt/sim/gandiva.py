"""Gandiva (Xiao et al., OSDI 2018) in closed loop on the :mod:`schedopt.sim` engine (card: ``formulations/sim.md``,
section Gandiva).

Gandiva's mechanisms as one policy, :class:`GandivaPolicy`, each switchable (:class:`Mechanisms`):

* ``time_slicing``: Algorithm 1's tier 4 oversubscribes GPUs (:func:`schedopt.gandiva.find_nodes`); the jobs
  sharing a GPU run in turn, one round (= one slice, 60 s as in the paper) each, in weighted round-robin; a job
  that resumes pays ``suspend_resume_seconds``. Off: jobs queue when no GPU is free (FIFO).
* ``priority``: the round-robin and the queue follow job priorities (weights), and a job's weight decays with the
  GPU-hours it has received (dynamic priority, ``priority_halflife_gpu_hours``), so short jobs are not stuck behind
  long ones. Off: plain round-robin and FIFO.
* ``packing``: while jobs wait, a 1-GPU job (time-sliced, or exclusive to free its GPU) is packed onto the
  least-utilized GPU holding one 1-GPU job (profiled utilization, memory fits, combined utilization <= 1).
  Introspection: after a packed round the policy *measures* both jobs' progress against their measured solo rates;
  if the pack's normalized throughput is below time-slicing's (< 1), it is undone, the pair is never retried, and
  the job goes to the next-least-utilized GPU. ``"exact"``: :func:`schedopt.gandiva.pack_exact` re-packs the
  waiting 1-GPU jobs on the idle GPUs each round instead (introspection still applies).
* ``migration``: time-sliced jobs move onto freed GPUs; a multi-GPU job that would be fragmented, time-sliced or
  queued triggers :func:`schedopt.gandiva.defragment` (``"greedy"`` or ``"exact"``); an unpacked job moves apart
  to a free GPU when there is one. A move costs ``migration_seconds``.
* ``grow_shrink``: elastic jobs grow onto GPUs idle for ``idle_period`` s and shrink back on any arrival
  (:class:`schedopt.gandiva.GrowShrink`).

The policy keeps its own :class:`schedopt.gandiva.ClusterState` (where every job *lives*, oversubscribed GPUs
included) and each round tells the engine who *runs*: a node map per running job, ``colocate`` for the second job
of a packed GPU, and ``restart`` (suspend-resume or migration seconds). The truth of a shared GPU (the
co-location factors of the Gavel-derived profiles, the linear speed-up of a grown job, the fragmentation penalty)
is computed apart from the decision logic (:func:`true_rates`) and handed to the engine as ``Decision.rate``; the
decision logic only sees the jobs' progress, as Gandiva does.

Jobs: :func:`gandiva_workload` turns a Gandiva trace (:func:`schedopt.gandiva.generate_trace`: Philly sizes and
durations, profiled job types) into a :class:`~schedopt.sim.Workload` and a :class:`~schedopt.sim.JobModel` in
which a job on its requested GPUs makes one unit of progress per second and completes after its ``duration``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ..errors import InputError
from ..gandiva import (
    ClusterState,
    GandivaJob,
    GrowShrink,
    Node,
    Profiles,
    apply_packing,
    defragment,
    find_nodes,
    generate_trace,
    load_profiles,
    nodes_needed,
    pack_exact,
    shrink,
)
from ..goodput import JobGoodputModel, ThroughputParams
from ..sia import Cluster, GpuType
from .jobs import Application, JobModel
from .metrics import SimResult
from .policies.base import Decision, RoundState
from .workloads import Workload, WorkloadJob

__all__ = [
    "MECHANISMS",
    "GandivaPolicy",
    "GandivaTrace",
    "Mechanisms",
    "ablation",
    "gandiva_cluster",
    "gandiva_trace",
    "gandiva_workload",
    "simulate_gandiva",
    "true_rates",
]

#: the switchable mechanisms, in the order of the ablation table
MECHANISMS = ("time_slicing", "priority", "packing", "migration", "grow_shrink")
_BATCH = 1024  # the nominal global batch of every Gandiva job (its only role: a rigid batch the engine can split)


@dataclass(frozen=True)
class Mechanisms:
    """Which of Gandiva's mechanisms run. ``packing`` / ``migration``: ``"greedy"`` (Gandiva's rules),
    ``"exact"`` (the MILPs of :mod:`schedopt.gandiva` as the decision step) or ``None`` (off)."""

    time_slicing: bool = True
    priority: bool = True
    packing: str | None = "greedy"
    migration: str | None = "greedy"
    grow_shrink: bool = True

    def __post_init__(self) -> None:
        for name in ("packing", "migration"):
            v = getattr(self, name)
            if v not in (None, "greedy", "exact"):
                raise InputError(f"mechanisms.{name}", v, "must be 'greedy', 'exact' or None")
        for name in ("time_slicing", "priority", "grow_shrink"):
            if not isinstance(getattr(self, name), bool):
                raise InputError(f"mechanisms.{name}", getattr(self, name), "must be a bool")

    @classmethod
    def all_off(cls) -> Mechanisms:
        return cls(False, False, None, None, False)

    def without(self, name: str) -> Mechanisms:
        """These mechanisms with ``name`` turned off."""
        if name not in MECHANISMS:
            raise InputError("mechanism", name, f"unknown; have {', '.join(MECHANISMS)}")
        return replace(self, **{name: None if name in ("packing", "migration") else False})


# ---------------------------------------------------------------------------------------------- cluster and jobs
def gandiva_cluster(nodes: int = 25, gpus_per_node: int = 4, gpu_type: str = "gpu") -> Cluster:
    """100 GPUs as 25 4-GPU servers of one type. The paper's cluster is 50 P100 + 50 P40; its trace carries no
    per-type speeds and Gandiva's mechanisms do not look at the type, so the two halves are one pool here
    (:class:`GandivaPolicy` runs on one GPU type)."""
    return Cluster((GpuType(gpu_type, gpus_per_node, nodes),))


@dataclass(frozen=True, eq=False)
class GandivaTrace:
    """A Gandiva trace as the engine runs it: the workload, its job model, and each job's profile by job id."""

    workload: Workload
    job_model: JobModel
    jobs: Mapping[str, GandivaJob]
    priorities: Mapping[str, float]


def _truth(cluster: Cluster) -> JobGoodputModel:
    # one second per step on any GPU count (gamma = 10 makes the near-zero network term vanish in floating point)
    p = ThroughputParams(1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 10.0)
    types = cluster.type_names
    return JobGoodputModel("gandiva-job", dict.fromkeys(types, p), float(_BATCH), float(_BATCH),
                           dict.fromkeys(types, (1, _BATCH)), (float(_BATCH),), (1.0,), (0.0,))


def gandiva_workload(jobs: Sequence[GandivaJob], cluster: Cluster, *, name: str = "gandiva",
                     priorities: Mapping[str, float] | None = None,
                     suspend_resume_seconds: float = 0.0) -> GandivaTrace:
    """``jobs`` (:class:`schedopt.gandiva.GandivaJob`: id, GPUs, job type, duration, arrival, elasticity) as a
    workload: each job's own application makes one unit of progress per second on its requested GPUs (any GPU
    type: the paper's trace carries no per-type speeds) and completes after ``duration`` units. ``priorities``:
    job id -> weight (default 1)."""
    if not isinstance(cluster, Cluster):
        raise InputError("cluster", type(cluster).__name__, "must be a schedopt.sia.Cluster")
    truth = _truth(cluster)
    apps: dict[str, tuple[Application, JobGoodputModel]] = {}
    elastic: dict[str, int] = {}
    wjobs = []
    ids: set[str] = set()
    for i, j in enumerate(jobs):
        if not isinstance(j, GandivaJob):
            raise InputError(f"jobs[{i}]", type(j).__name__, "must be a schedopt.gandiva.GandivaJob")
        if j.id in ids:
            raise InputError(f"jobs[{i}].id", j.id, "is used by an earlier job")
        if not (math.isfinite(j.duration) and j.duration > 0):
            raise InputError(f"jobs[{i}].duration", j.duration, "must be > 0")
        ids.add(j.id)
        app = f"gandiva:{j.id}"
        apps[app] = (Application(app, np.array([float(_BATCH)]), 1, np.array([float(j.duration)]),
                                 np.array([[1.0]]), np.array([[0.0]])), truth)
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
    return GandivaTrace(Workload(name, tuple(wjobs)), jm, {j.id: j for j in jobs}, pri)


def gandiva_trace(n_jobs: int = 400, seed: int = 0, cluster: Cluster | None = None, *,
                  arrival_rate: float = 1 / 90.0, duration_scale: float = 0.1, elastic_fraction: float = 0.2,
                  high_priority_fraction: float = 0.0, max_duration: float | None = None) -> GandivaTrace:
    """A synthetic trace shaped like the paper's: Poisson arrivals, Philly job sizes (76% 1-GPU) and
    durations (scaled by ``duration_scale``, clipped at ``max_duration`` seconds if given), job types drawn from the Gavel-derived profiles, a fraction of
    elastic jobs (may double), and optionally a fraction of priority-2 jobs."""
    cl = cluster if cluster is not None else gandiva_cluster()
    biggest = max(t.total_gpus for t in cl.gpu_types)
    jobs = generate_trace(n_jobs, seed, arrival_rate=arrival_rate, duration_scale=duration_scale,
                          max_gpus=min(biggest, 8), elastic_fraction=elastic_fraction)
    if max_duration is not None:
        if not max_duration > 0:
            raise InputError("max_duration", max_duration, "must be > 0 seconds")
        jobs = [replace(j, duration=min(j.duration, float(max_duration))) for j in jobs]
    rng = np.random.default_rng([seed, 19])
    pri = {j.id: 2.0 for j in jobs if rng.random() < high_priority_fraction}
    return gandiva_workload(jobs, cl, name=f"gandiva-{n_jobs}-s{seed}", priorities=pri)


# ---------------------------------------------------------------------------------------------- the truth
def true_rates(state: ClusterState, running: Sequence[str], profiles: Profiles,
               fragmentation_penalty: float) -> dict[str, float]:
    """The factor on each running job's solo rate this round: a packed job keeps ``factor[its type, partner's
    type]`` of its speed (Gavel's co-location measurements); a grown job runs ``held / requested`` faster (linear
    scaling, an assumption); a job spread over more nodes than it needs runs at ``fragmentation_penalty``."""
    out: dict[str, float] = {}
    run = set(running)
    for jid in running:
        job = state.jobs[jid]
        partner = state.partner(jid)
        if partner is not None and partner in run:
            r = float(profiles.factor[profiles.index(job.job_type), profiles.index(state.jobs[partner].job_type)])
        else:
            r = len(state.slots[jid]) / job.gpus
            if len(state.nodes_of(jid)) > nodes_needed(state.node_gpus, job.gpus):
                r *= fragmentation_penalty
        if r != 1.0:
            out[jid] = r
    return out


# ---------------------------------------------------------------------------------------------- the policy
@dataclass
class _Ran:
    mode: str  # "solo" (alone on its requested GPUs, unspread), "packed", "other"
    progress: float
    busy: float  # seconds of the round it ran (round minus the restart charged)


@dataclass
class GandivaPolicy:
    """Gandiva's mechanisms on the engine (see the module docstring). One object per simulation."""

    jobs: Mapping[str, GandivaJob]
    mechanisms: Mechanisms = field(default_factory=Mechanisms)
    priorities: Mapping[str, float] = field(default_factory=dict)
    suspend_resume_seconds: float = 2.0
    migration_seconds: float = 10.0
    idle_period: float = 600.0
    fragmentation_penalty: float = 0.8
    priority_halflife_gpu_hours: float = 1.0
    pack_utilization: float = 1.0
    profiles: Profiles | None = None
    backend: str | None = None
    time_limit: float | None = 5.0
    name: str = "gandiva"
    adaptive: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.mechanisms, Mechanisms):
            raise InputError("mechanisms", self.mechanisms, "must be a Mechanisms")
        for f in ("suspend_resume_seconds", "migration_seconds", "idle_period"):
            v = getattr(self, f)
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v >= 0):
                raise InputError(f, v, "must be a number >= 0")
        if not 0 < self.fragmentation_penalty <= 1:
            raise InputError("fragmentation_penalty", self.fragmentation_penalty, "must be in (0, 1]")
        if not self.priority_halflife_gpu_hours > 0:
            raise InputError("priority_halflife_gpu_hours", self.priority_halflife_gpu_hours, "must be > 0")
        self.prof = self.profiles if self.profiles is not None else load_profiles()
        self.vs: ClusterState | None = None
        self.node_ids: list[str] = []
        self.queue: list[str] = []
        self.vt: dict[str, float] = {}        # round-robin virtual time (slices / weight)
        self.ran: dict[str, _Ran] = {}         # what each job did last round (for introspection)
        self.last_nodes: dict[str, dict[str, int]] = {}
        self.solo: dict[str, float] = {}       # measured solo progress rate
        self.bad_pairs: set[frozenset[str]] = set()
        self.pack_rounds: dict[frozenset[str], int] = {}
        self.gs = GrowShrink(self.idle_period)
        self.seen: set[str] = set()
        self.counts = dict.fromkeys(("migrations", "packs", "unpacks", "grows", "suspends", "resumes"), 0)

    # -------------------------------------------------------------- helpers
    def _job(self, jid: str) -> GandivaJob:
        if jid not in self.jobs:
            raise InputError(f"policy[{self.name}].jobs", jid, "has no Gandiva profile for this job")
        return self.jobs[jid]

    def _weight(self, jid: str, attained: float) -> float:
        if not self.mechanisms.priority:
            return 1.0
        return float(self.priorities.get(jid, 1.0)) / (1.0 + attained / 3600.0 / self.priority_halflife_gpu_hours)

    def _place(self, jid: str, slots: Sequence[tuple[int, int]]) -> None:
        assert self.vs is not None
        for s in slots:  # time-slicing a third job onto a packed GPU ends the pack
            self.vs.unpack(*s)
        self.vs.place(self._job(jid), slots)
        others = {o for n, g in slots for o in self.vs.gpu_jobs(n, g) if o != jid}
        self.vt[jid] = min((self.vt.get(o, 0.0) for o in others), default=self.vt.get(jid, 0.0))

    def _util(self, n: int, g: int) -> float:
        assert self.vs is not None
        return sum(self.vs.jobs[j].utilization for j in self.vs.gpu_jobs(n, g))

    # -------------------------------------------------------------- the round
    def decide(self, state: RoundState) -> Decision:
        m = self.mechanisms
        if self.vs is None:
            if len(state.cluster.gpu_types) != 1:
                raise InputError("cluster", state.cluster.type_names, "GandivaPolicy runs on one GPU type")
            self.node_ids = [nid for t in state.cluster.gpu_types for nid in state.cluster.node_ids(t.name)]
            gpn = {nid: t.gpus_per_node for t in state.cluster.gpu_types for nid in state.cluster.node_ids(t.name)}
            self.vs = ClusterState([Node(nid, gpn[nid]) for nid in self.node_ids])
        vs = self.vs
        views = {v.id: v for v in state.jobs}
        for jid in [j for j in vs.jobs if j not in views]:  # finished
            vs.remove(jid)
        self.queue = [j for j in self.queue if j in views]
        new = [v for v in state.jobs if v.id not in self.seen]
        for v in sorted(new, key=lambda v: (v.arrival, v.id)):
            self._job(v.id)
            self.seen.add(v.id)
            self.queue.append(v.id)
        if new and m.grow_shrink:
            shrink(vs)
            self.gs.idle_since.clear()
        moved: set[str] = set()

        # 1. introspection: measure last round, undo packs that lose to time-slicing
        rates: dict[str, tuple[str, float]] = {}
        for jid, r in self.ran.items():
            if jid in views and r.busy > 0:
                rates[jid] = (r.mode, (views[jid].progress - r.progress) / r.busy)
                if r.mode == "solo":
                    self.solo[jid] = rates[jid][1]
        displaced: list[str] = []
        if m.packing:
            for n, g in sorted(vs.packed):
                a, b = vs.gpu_jobs(n, g)
                ra, rb = rates.get(a), rates.get(b)
                if not (ra and rb and ra[0] == rb[0] == "packed" and a in self.solo and b in self.solo):
                    continue
                v = ra[1] / self.solo[a] + rb[1] / self.solo[b]
                if v < 1.0:  # the pack loses to time-slicing the GPU: undo it, never retry this pair
                    self.bad_pairs.add(frozenset((a, b)))
                    vs.unpack(n, g)
                    vs.remove(b)
                    displaced.append(b)
                    self.counts["unpacks"] += 1
        # 2. migration: time-sliced jobs onto free GPUs; undone packs apart
        if m.migration:
            for jid in sorted(vs.jobs, key=lambda j: (-self._weight(j, views[j].attained_gpu_seconds), j)):
                if jid not in vs.jobs or vs.time_share(jid) >= 1.0:
                    continue
                old = list(vs.slots[jid])
                vs.remove(jid)
                a = find_nodes(vs, self._job(jid), max_height=1.0)
                if self._unshared(a, jid):
                    assert a is not None
                    self._place(jid, a.slots)
                    moved.add(jid)
                else:
                    vs.place(self._job(jid), old)
        # 3. packing (a waiting 1-GPU job onto the least-utilized GPU holding one 1-GPU job)
        waiting = displaced + self._queue_order(views)
        if m.packing == "exact":
            waiting = self._pack_exact(views, waiting, moved)
        elif m.packing == "greedy":
            waiting = self._pack_greedy(views, waiting, moved)
        vs = self.vs  # pack_exact replaces the state
        # 4. place waiting jobs by Algorithm 1 (defragmenting first when migration is on)
        still = []
        for jid in waiting:
            job = self._job(jid)
            cap = None if m.time_slicing else 1.0
            a = find_nodes(vs, job, max_height=cap)
            if m.migration and job.gpus > 1 and (a is None or a.tier in ("fragmented", "timeslice")):
                d = defragment(vs, job, method=m.migration, backend=self.backend,
                               **({"time_limit": self.time_limit} if m.migration == "exact" else {}))
                if d.freed and d.moves and d.state is not None:
                    vs = self.vs = d.state
                    moved.update(mv.job_id for mv in d.moves)
                    a = find_nodes(vs, job, max_height=cap)
            if a is None or (not m.time_slicing and a.tier == "timeslice"):
                still.append(jid)
                continue
            self._place(jid, a.slots)
        self.queue = still
        # 4b. migration: interfering (packed) jobs apart onto the GPUs still free
        if m.migration:
            for n, g in sorted(vs.packed, key=lambda s: (self._pack_value(s, rates), s)):
                if (n, g) not in vs.packed:
                    continue
                guest = vs.gpu_jobs(n, g)[1]
                old = list(vs.slots[guest])
                vs.unpack(n, g)
                vs.remove(guest)
                a = find_nodes(vs, self._job(guest), max_height=1.0)
                if self._unshared(a, guest):
                    assert a is not None
                    self._place(guest, a.slots)
                    moved.add(guest)
                else:
                    vs.place(self._job(guest), old)
                    vs.pack(n, g)
        # 5. grow-shrink
        if m.grow_shrink:
            self.counts["grows"] += sum(self.gs.step(vs, state.time).values())
        # 6. who runs: weighted round-robin per GPU (packed GPUs run both jobs)
        busy: set[tuple[int, int]] = set()
        running: list[str] = []
        order = sorted(vs.jobs, key=lambda j: (self.vt.get(j, 0.0), views[j].arrival, j))
        for jid in order:
            if jid in running:
                continue
            sl = vs.slots[jid]
            if any(s in busy for s in sl):
                continue
            busy.update(sl)
            running.append(jid)
            p = vs.partner(jid)
            if p is not None:
                running.append(p)
        for jid in running:
            self.vt[jid] = self.vt.get(jid, 0.0) + 1.0 / self._weight(jid, views[jid].attained_gpu_seconds)
        return self._decision(state, views, running, moved)

    def _unshared(self, a: Any, jid: str) -> bool:
        """Algorithm 1 found free GPUs for ``jid`` on no more nodes than it needs (a move worth making)."""
        assert self.vs is not None
        return a is not None and a.tier != "timeslice" and \
            len({n for n, _ in a.slots}) <= nodes_needed(self.vs.node_gpus, self._job(jid).gpus)

    def _pack_value(self, gpu: tuple[int, int], rates: Mapping[str, tuple[str, float]]) -> float:
        """The measured normalized throughput of a packed GPU (2 while not measured yet)."""
        assert self.vs is not None
        v = 0.0
        for j in self.vs.gpu_jobs(*gpu):
            r = rates.get(j)
            if r is None or r[0] != "packed" or j not in self.solo:
                return 2.0
            v += r[1] / self.solo[j]
        return v

    def _queue_order(self, views: Mapping[str, Any]) -> list[str]:
        if self.mechanisms.priority:
            return sorted(self.queue, key=lambda j: (-self._weight(j, views[j].attained_gpu_seconds),
                                                     views[j].arrival, j))
        return list(self.queue)

    def _candidate_hosts(self, jid: str) -> list[tuple[float, tuple[int, int]]]:
        vs = self.vs
        assert vs is not None
        job = self._job(jid)
        out = []
        for n in range(len(vs.nodes)):
            for g in range(vs.nodes[n].gpus):
                on = vs.gpu_jobs(n, g)
                others = [o for o in on if o != jid]
                if len(others) != 1 or (n, g) in vs.packed:  # one other job (it and ``jid`` time-slice: in place)
                    continue
                h = vs.jobs[others[0]]
                if h.gpus != 1 or len(vs.slots[h.id]) != 1 or frozenset((jid, h.id)) in self.bad_pairs \
                        or h.id not in self.solo:  # introspection needs both solo rates
                    continue
                if h.memory + job.memory > vs.nodes[n].gpu_memory + 1e-9:
                    continue
                u = h.utilization + job.utilization
                if u <= self.pack_utilization + 1e-9:
                    out.append((u, (n, g)))
        out.sort()
        return out

    def _pack_greedy(self, views: Mapping[str, Any], waiting: list[str], moved: set[str]) -> list[str]:
        vs = self.vs
        assert vs is not None
        # jobs that could be packed: waiting 1-GPU jobs, then time-sliced 1-GPU jobs, least utilized first
        sliced = [j for j in vs.jobs if self._job(j).gpus == 1 and len(vs.slots[j]) == 1
                  and vs.time_share(j) < 1.0]
        rest = []
        for jid in waiting + sorted(sliced, key=lambda j: (self._job(j).utilization, j)):
            job = self._job(jid)
            if job.gpus != 1 or jid not in self.solo:
                rest.append(jid)
                continue
            hosts = self._candidate_hosts(jid)
            if not hosts:
                rest.append(jid)
                continue
            n, g = hosts[0][1]
            if jid in vs.jobs and vs.slots[jid] != [(n, g)]:
                vs.remove(jid)
                moved.add(jid)
            if jid not in vs.jobs:
                self._place(jid, [(n, g)])
            vs.pack(n, g)
            self.counts["packs"] += 1
        return [j for j in rest if j not in vs.jobs]

    def _pack_exact(self, views: Mapping[str, Any], waiting: list[str], moved: set[str]) -> list[str]:
        vs = self.vs
        assert vs is not None
        sliced = [j for j in vs.jobs if self._job(j).gpus == 1 and len(vs.slots[j]) == 1
                  and vs.time_share(j) < 1.0]
        cands = [j for j in waiting if self._job(j).gpus == 1] + sliced
        if not cands:
            return waiting
        old = {j: list(vs.slots[j]) for j in sliced}
        for j in sliced:
            vs.remove(j)
        jobs = [self._job(j) for j in cands]
        pk = pack_exact(vs, jobs, self.backend, profiles=self.prof, time_limit=self.time_limit)
        if not pk.has_solution:
            for j in sliced:
                self._place(j, old[j])
            return waiting
        keep = {j: s for j, s in pk.assignment.items()
                if not any(frozenset((j, o)) in self.bad_pairs for o in pk.assignment if pk.assignment[o] == s)}
        new = apply_packing(vs, [self._job(j) for j in keep], replace(pk, assignment=keep))
        self.vs = new
        self.counts["packs"] += sum(1 for ids in replace(pk, assignment=keep).gpus().values() if len(ids) == 2)
        for j in keep:
            others = [o for o in keep if o != j and keep[o] == keep[j]]
            self.vt[j] = min((self.vt.get(o, 0.0) for o in others), default=self.vt.get(j, 0.0))
            if j in old and old[j] != [keep[j]]:
                moved.add(j)
        for j in sliced:
            if j not in keep:
                self._place(j, old[j])
        return [j for j in waiting if j not in self.vs.jobs]

    def _decision(self, state: RoundState, views: Mapping[str, Any], running: list[str],
                  moved: set[str]) -> Decision:
        vs = self.vs
        assert vs is not None
        R = state.round_seconds
        nodes: dict[str, dict[str, int]] = {}
        colocate: dict[str, str] = {}
        restart: dict[str, float] = {}
        ran: dict[str, _Ran] = {}
        run = set(running)
        for jid in running:
            p = vs.partner(jid)
            sl = vs.slots[jid]
            if p is not None and p in run and vs.gpu_jobs(*sl[0])[0] == p:
                colocate[jid] = p  # the earlier job on the GPU hosts
                nm = {self.node_ids[sl[0][0]]: 1}
            else:
                nm = {}
                for n, _ in sl:
                    nm[self.node_ids[n]] = nm.get(self.node_ids[n], 0) + 1
                nodes[jid] = nm
            v = views[jid]
            changed = dict(v.current_nodes) != nm
            if not v.current_nodes and v.restarts == 0 and jid not in self.last_nodes:
                cost = 0.0  # first start
            elif jid in self.last_nodes and set(self.last_nodes[jid]) != set(nm):
                cost = self.migration_seconds
            else:
                cost = self.suspend_resume_seconds
            restart[jid] = cost
            if changed and jid in self.last_nodes and set(self.last_nodes[jid]) != set(nm):
                self.counts["migrations"] += 1
            if changed and not v.current_nodes and jid in self.last_nodes:
                self.counts["resumes"] += 1
            self.last_nodes[jid] = nm
            job = vs.jobs[jid]
            spread = len(vs.nodes_of(jid)) > nodes_needed(vs.node_gpus, job.gpus)
            mode = ("packed" if p is not None and p in run else
                    "solo" if len(sl) == job.gpus and not spread else "other")
            ran[jid] = _Ran(mode, v.progress, R - (cost if changed else 0.0))
        for jid in views:
            if jid not in run and views[jid].current_nodes:
                self.counts["suspends"] += 1
        self.ran = ran
        rate = true_rates(vs, running, self.prof, self.fragmentation_penalty)
        sliced = sum(1 for j in vs.jobs if vs.time_share(j) < 1.0)
        info = {"queued": len(self.queue), "time_sliced": sliced, "packed_gpus": len(vs.packed),
                "suspended": len(vs.jobs) - len(running), **self.counts}
        return Decision(nodes=nodes, colocate=colocate, rate=rate, restart=restart, info=info)


# ---------------------------------------------------------------------------------------------- runs
def simulate_gandiva(trace: GandivaTrace, cluster: Cluster | None = None, mechanisms: Mechanisms | None = None,
                     *, round_seconds: float = 60.0, progress: bool | None = False, **policy_kw: Any) -> SimResult:
    """Run ``trace`` on ``cluster`` (default :func:`gandiva_cluster`) under :class:`GandivaPolicy` with
    ``mechanisms`` (default: all on) on the :mod:`schedopt.sim` engine; 60 s rounds = Gandiva's time slice."""
    from .engine import simulate

    cl = cluster if cluster is not None else gandiva_cluster()
    mech = mechanisms if mechanisms is not None else Mechanisms()
    pol = GandivaPolicy(trace.jobs, mech, trace.priorities, **policy_kw)
    res = simulate(cl, trace.workload, pol, round_seconds=round_seconds, job_model=trace.job_model,
                   adaptive=False, progress=progress, label=f"gandiva on {trace.workload.name}")
    meta = dict(res.meta)
    meta["mechanisms"] = {k: getattr(mech, k) for k in MECHANISMS}
    meta["counts"] = dict(pol.counts)
    return SimResult(meta=meta, jobs=res.jobs, rounds=res.rounds)


def ablation(trace: GandivaTrace, cluster: Cluster | None = None, *, base: Mechanisms | None = None,
             **kw: Any) -> list[dict[str, Any]]:
    """Rows (configuration, average JCT, makespan, counts, change versus all off) for: all on, each mechanism off
    in turn, all off."""
    on = base if base is not None else Mechanisms()
    configs = [("all on", on)] + [(f"no {n.replace('_', '-')}", on.without(n)) for n in MECHANISMS]
    configs.append(("all off", Mechanisms.all_off()))
    rows = []
    for label, mech in configs:
        res = simulate_gandiva(trace, cluster, mech, **kw)
        s = res.summary()
        rows.append({"config": label, "avg_jct_s": s["avg_jct_s"], "makespan_s": s["makespan_s"],
                     "finished": s["finished"], "jobs": s["jobs"], **res.meta["counts"]})
    off = rows[-1]
    for r in rows:
        r["jct_vs_off_pct"] = 100.0 * (r["avg_jct_s"] / off["avg_jct_s"] - 1.0)
        r["makespan_vs_off_pct"] = 100.0 * (r["makespan_s"] / off["makespan_s"] - 1.0)
    return rows
