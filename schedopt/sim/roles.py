"""Placement and admission: the two roles of :mod:`schedopt.sim` beside the policy (Blox's split of a scheduler into
admission, scheduling and placement, with typed protocols instead of dicts).

* A :class:`Placer` maps what a policy asked for (a :class:`~schedopt.sia.Config` or a :class:`GpuRequest` per job)
  onto nodes and GPU indices. Built in: ``sia`` (:class:`SiaPlacer`, Sia's placer: the default) and ``packing``
  (:class:`PackingPlacer`: the most-free nodes of a type first, as the Pollux artifact's Tiresias baseline; a job may
  span nodes with partial counts, so a rigid 6- or 12-GPU job always fits where its type has the GPUs).
* An :class:`Admission` rule decides at arrival, and again every round while it defers, whether a job enters the
  scheduler's queue: :data:`ACCEPT`, :data:`DEFER` or :data:`REJECT`. Built in: ``accept-all`` (default),
  ``queue-cap`` (:class:`QueueCap`: defer while ``limit`` admitted jobs wait without GPUs) and ``gpu-cap``
  (:class:`GpuCap`: reject a job asking for more than ``max_gpus``).

Both are passed to :func:`schedopt.sim.simulate` (``placer=``, ``admission=``) and named on the command line
(``--placer packing``, ``--admission queue-cap:limit=10``); register your own with
:func:`schedopt.sim.register_placer` / :func:`schedopt.sim.register_admission`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from functools import lru_cache
from typing import Protocol, cast, runtime_checkable

from ..errors import InputError
from ..sia import Cluster, Config, Placement, place
from ..sia.spec import JobId
from .policies.base import GpuRequest, JobView
from .registry import make, register_admission, register_placer

__all__ = [
    "ACCEPT",
    "DEFER",
    "REJECT",
    "AcceptAll",
    "Admission",
    "AdmissionState",
    "GpuCap",
    "GpuRequest",
    "PackingPlacer",
    "Placer",
    "QueueCap",
    "SiaPlacer",
    "Verdict",
    "assign_gpus",
    "make_admission",
    "make_placer",
]


@runtime_checkable
class Placer(Protocol):
    """Maps each job's :class:`~schedopt.sia.Config` or :class:`GpuRequest` onto nodes and GPU indices.

    ``previous``: last round's placement of the jobs still active (keep a job whose request is unchanged where it
    is); ``pinned``: jobs that must not move (inside their checkpoint-restore delay). Jobs it cannot place go to
    the returned placement's ``unplaced`` (the engine queues requests and refuses configurations it cannot place)."""

    name: str

    def place(self, cluster: Cluster, want: Mapping[str, Config | GpuRequest], previous: Placement | None,
              pinned: Sequence[str] = ()) -> Placement: ...


@lru_cache(maxsize=16)
def _node_sizes(cluster: Cluster) -> dict[str, int]:
    """node id -> GPUs of a cluster, kept per cluster (read only)."""
    return {nid: g for t in cluster.gpu_types for nid, g in zip(t.ids, t.sizes)}


def assign_gpus(cluster: Cluster, nodes: Mapping[str, Mapping[str, int]], previous: Placement | None,
                occupied: Mapping[str, Sequence[int]] | None = None) -> dict[str, list[tuple[str, tuple[int, ...]]]]:
    """GPU indices for node-level maps (job -> {node: GPUs}): a job whose map is unchanged keeps its GPUs, the others
    take the lowest free indices (``occupied``: indices other jobs hold already). The maps must fit the nodes
    (callers check capacity)."""
    size = _node_sizes(cluster)
    occ: dict[str, list[str | None]] = {}
    for n, gs in (occupied or {}).items():
        slots = occ.setdefault(n, [None] * size[n])
        for g in gs:
            slots[g] = "\0"
    out: dict[str, list[tuple[str, tuple[int, ...]]]] = {}
    moving = []
    for jid, mm in nodes.items():
        prev = previous.assignments.get(jid) if previous is not None else None
        if prev is not None and {n: len(g) for n, g in prev} == dict(mm) and all(
                occ.get(n) is None or all(occ[n][g] is None for g in gs) for n, gs in prev):
            for n, gs in prev:
                slots = occ.setdefault(n, [None] * size[n])
                for g in gs:
                    slots[g] = jid
            out[jid] = [(n, tuple(gs)) for n, gs in prev]
        else:
            moving.append(jid)
    for jid in moving:
        got = []
        for n, g in sorted(nodes[jid].items()):
            slots = occ.setdefault(n, [None] * size[n])
            free = [k for k, o in enumerate(slots) if o is None][:g]
            for k in free:
                slots[k] = jid
            got.append((n, tuple(free)))
        out[jid] = got
    return out


def _as_request(jid: str, w: Config | GpuRequest) -> GpuRequest:
    if isinstance(w, Config):
        return GpuRequest(w.n_gpus, w.gpu_type)
    if not isinstance(w, GpuRequest):
        raise InputError(f"placer.want[{jid}]", w, "must be a Config or a GpuRequest")
    return w


class PackingPlacer:
    """Most-free nodes first within one GPU type (ties: node order); the type, where a request leaves it open, is
    the one with the most free GPUs that can take the job. Jobs whose GPU count and type are unchanged keep their
    GPUs. A :class:`~schedopt.sia.Config`'s node count is not kept: only its type and GPU count are (a budget)."""

    name = "packing"
    checkpointable = True  #: stateless: a checkpoint restores it exactly (schedopt.sim.checkpoint)

    def place(self, cluster: Cluster, want: Mapping[str, Config | GpuRequest], previous: Placement | None,
              pinned: Sequence[str] = ()) -> Placement:
        return self.pack(cluster, want, previous, {})

    def pack(self, cluster: Cluster, want: Mapping[str, Config | GpuRequest], previous: Placement | None,
             occupied: Mapping[str, Sequence[int]]) -> Placement:
        """:meth:`place` around GPUs other jobs hold already (``occupied``: node -> indices)."""
        node_type = {nid: t.name for t in cluster.gpu_types for nid in cluster.node_ids(t.name)}
        free = {nid: g for t in cluster.gpu_types for nid, g in zip(t.ids, t.sizes)}  # each node's own GPUs
        held: dict[str, set[int]] = {n: set(gs) for n, gs in occupied.items()}
        for n, taken in held.items():
            free[n] -= len(taken)
        reqs = {j: _as_request(j, w) for j, w in want.items()}
        out_nodes: dict[str, dict[str, int]] = {}
        if previous is not None:  # keep jobs whose request their current GPUs still satisfy
            for jid, r in reqs.items():
                slots = previous.assignments.get(jid)
                if not slots or any(g in held.get(n, ()) for n, gs in slots for g in gs):
                    continue
                cur = {n: len(g) for n, g in slots}
                types = {node_type[n] for n in cur}
                if sum(cur.values()) == r.gpus and len(types) == 1 and r.gpu_type in (None, *types):
                    out_nodes[jid] = cur
                    for n, gs in slots:
                        free[n] -= len(gs)
                        held.setdefault(n, set()).update(gs)
        unplaced: list[str] = []
        for jid, r in reqs.items():
            if jid in out_nodes or r.gpus <= 0:
                continue
            wanted = [r.gpu_type] if r.gpu_type is not None else list(cluster.type_names)
            avail = {t: sum(f for n, f in free.items() if node_type[n] == t) for t in wanted}
            ok = [t for t in wanted if avail.get(t, 0) >= r.gpus]
            if not ok:
                unplaced.append(jid)
                continue
            t = max(ok, key=lambda x: (avail[x], -wanted.index(x)))
            got: dict[str, int] = {}
            need = r.gpus
            while need > 0:
                best = max((n for n in free if node_type[n] == t and free[n] > 0), key=lambda n: free[n])
                k = min(free[best], need)
                got[best] = got.get(best, 0) + k
                free[best] -= k
                need -= k
            out_nodes[jid] = got
        kept_prev = None
        if previous is not None:
            kept_prev = Placement(assignments={j: s for j, s in previous.assignments.items() if j in out_nodes},
                                  configs={})
        gpus = assign_gpus(cluster, out_nodes, kept_prev, {n: sorted(g) for n, g in occupied.items()})
        assignments: dict[JobId, list[tuple[str, tuple[int, ...]]]] = {j: s for j, s in gpus.items()}
        configs: dict[JobId, Config] = {j: Config(len(m), sum(m.values()), node_type[next(iter(m))])
                                        for j, m in out_nodes.items()}
        return Placement(assignments=assignments, configs=configs, unplaced=tuple(unplaced))


class SiaPlacer:
    """Sia's placer (:func:`schedopt.sia.place`) for configurations; :class:`GpuRequest` jobs are packed afterwards
    into the GPUs left, most-free nodes first (:class:`PackingPlacer`)."""

    name = "sia"
    checkpointable = True  #: stateless: a checkpoint restores it exactly (schedopt.sim.checkpoint)

    def place(self, cluster: Cluster, want: Mapping[str, Config | GpuRequest], previous: Placement | None,
              pinned: Sequence[str] = ()) -> Placement:
        configs: dict[JobId, Config] = {j: w for j, w in want.items() if isinstance(w, Config)}
        reqs = {j: w for j, w in want.items() if not isinstance(w, Config)}
        prev_c = None
        if previous is not None:
            prev_c = Placement(assignments={j: s for j, s in previous.assignments.items() if j in configs},
                               configs={j: c for j, c in previous.configs.items() if j in configs})
        pl = place(cluster, configs, prev_c, pinned=[j for j in pinned if j in configs])
        if not reqs:
            return pl
        taken: dict[str, list[int]] = {}
        for slots in pl.assignments.values():
            for n, gs in slots:
                taken.setdefault(n, []).extend(gs)
        rest = PackingPlacer().pack(cluster, reqs, previous, taken)
        return Placement(assignments={**pl.assignments, **rest.assignments}, configs={**pl.configs, **rest.configs},
                         evicted=pl.evicted, unplaced=(*pl.unplaced, *rest.unplaced))


# -------------------------------------------------------------------------------------------------------- admission


class Verdict(Enum):
    """An admission rule's answer for one job."""

    ACCEPT = "accept"
    DEFER = "defer"     #: asked again next round
    REJECT = "reject"   #: never runs; its record says rejected


#: An admission rule's three verdicts (:class:`Verdict`): accept, defer, reject.
ACCEPT, DEFER, REJECT = Verdict.ACCEPT, Verdict.DEFER, Verdict.REJECT


@dataclass(frozen=True)
class AdmissionState:
    """What an admission rule sees: the time, the cluster, the admitted jobs (running or queued) and how many of
    them hold no GPUs."""

    time: float
    cluster: Cluster
    admitted: tuple[JobView, ...]
    queued: int


@runtime_checkable
class Admission(Protocol):
    """Accept, defer or reject an arrived job (called at arrival, then every round while it defers)."""

    name: str

    def admit(self, job: JobView, state: AdmissionState) -> Verdict: ...


class AcceptAll:
    """Every job enters the queue at arrival (the default)."""

    name = "accept-all"
    checkpointable = True  #: stateless: a checkpoint restores it exactly (schedopt.sim.checkpoint)

    def admit(self, job: JobView, state: AdmissionState) -> Verdict:
        return ACCEPT


class QueueCap:
    """Defer arrivals while ``limit`` admitted jobs wait without GPUs (a bounded scheduler queue: the policy's
    problem stays small under a burst, and jobs keep their arrival order)."""

    name = "queue-cap"
    checkpointable = True  #: stateless: a checkpoint restores it exactly (schedopt.sim.checkpoint)

    def __init__(self, limit: int = 32) -> None:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise InputError("admission[queue-cap].limit", limit, "must be an integer >= 1")
        self.limit = limit

    def admit(self, job: JobView, state: AdmissionState) -> Verdict:
        return ACCEPT if state.queued < self.limit else DEFER


class GpuCap:
    """Reject jobs that ask for more than ``max_gpus`` GPUs (a site's per-job limit)."""

    name = "gpu-cap"
    checkpointable = True  #: stateless: a checkpoint restores it exactly (schedopt.sim.checkpoint)

    def __init__(self, max_gpus: int = 64) -> None:
        if isinstance(max_gpus, bool) or not isinstance(max_gpus, int) or max_gpus < 1:
            raise InputError("admission[gpu-cap].max_gpus", max_gpus, "must be an integer >= 1")
        self.max_gpus = max_gpus

    def admit(self, job: JobView, state: AdmissionState) -> Verdict:
        return REJECT if job.requested_gpus > self.max_gpus else ACCEPT


def make_placer(spec: str | Placer | None) -> Placer:
    """A placer from a spec or object (None: ``sia``, Sia's placer)."""
    obj = make("placer", "sia" if spec is None else spec, check=lambda o: callable(getattr(o, "place", None)),
               needs="place(cluster, want, previous, pinned)")
    return cast(Placer, obj)


def make_admission(spec: str | Admission | None) -> Admission:
    """An admission rule from a spec or object (None: ``accept-all``)."""
    obj = make("admission", "accept-all" if spec is None else spec, check=lambda o: callable(getattr(o, "admit", None)),
               needs="admit(job, state)")
    return cast(Admission, obj)


register_placer("sia", SiaPlacer, description="Sia's placer (schedopt.sia.place); requests packed after")
register_placer("packing", PackingPlacer, description="most-free nodes first within one GPU type")
register_admission("accept-all", AcceptAll, description="every job enters at arrival")
register_admission("queue-cap", QueueCap, description="defer while `limit` admitted jobs wait without GPUs")
register_admission("gpu-cap", GpuCap, description="reject jobs asking for more than `max_gpus` GPUs")
