"""Gandiva's mechanisms as one switchable policy on the :mod:`schedopt.sim` engine (see the package docstring)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

from ...errors import InputError
from ...gandiva import (
    TIERS,
    ClusterState,
    GandivaJob,
    GrowShrink,
    Node,
    Profiles,
    apply_packing,
    defragment,
    find_nodes,
    load_profiles,
    nodes_needed,
    pack_exact,
    shrink,
)
from ..policies.base import Decision, RoundState
from .workload import load_type_speeds

__all__ = ["MECHANISMS", "GandivaPolicy", "Mechanisms", "true_rates"]

#: the switchable mechanisms, in the order of the ablation table
MECHANISMS = ("time_slicing", "priority", "packing", "migration", "grow_shrink")


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
        off: dict[str, Any] = {name: None if name in ("packing", "migration") else False}
        return replace(self, **off)


# ---------------------------------------------------------------------------------------------- the truth
def true_rates(state: ClusterState, running: Sequence[str], profiles: Profiles,
               fragmentation_penalty: float) -> dict[str, float]:
    """The factor on each running job's solo rate this round (the GPU type's speed is the engine's truth model):
    a packed job keeps ``factor[its type, partner's type]`` of its speed (Gavel's co-location measurements); a
    grown job runs ``held / requested`` faster (linear scaling, an assumption); a job spread over more nodes than
    it needs runs at ``fragmentation_penalty``."""
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
    gpu_type: str


_TIER = {t: k for k, t in enumerate(TIERS)}


@dataclass
class GandivaPolicy:
    """Gandiva's mechanisms on the engine (see the package docstring). One object per simulation.

    ``speeds``: job id -> {GPU type: relative speed} (what Gandiva's profiling knows; default: 1 everywhere);
    ``better_fit``: with migration on a heterogeneous cluster, an exclusive job moves to free GPUs of a type on
    which it runs at least this many times faster."""

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
    speeds: Mapping[str, Mapping[str, float]] | None = None
    better_fit: float = 1.25
    name: str = "gandiva"
    adaptive: bool = False
    #: Decision.rate may exceed 1 (a grown job runs held / requested faster): no bound for hopeless_jobs (issue 25)
    max_rate: ClassVar[float] = math.inf

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
        if not (isinstance(self.better_fit, (int, float)) and self.better_fit >= 1):
            raise InputError("better_fit", self.better_fit, "must be a number >= 1")
        self.prof = self.profiles if self.profiles is not None else load_profiles()
        self.pools: dict[str, ClusterState] = {}    # GPU type -> where every job of that type lives
        self.node_ids: dict[str, list[str]] = {}
        self.where: dict[str, str] = {}             # job id -> the GPU type it lives on
        self.queue: list[str] = []
        self.vt: dict[str, float] = {}        # round-robin virtual time (slices / weight)
        self.ran: dict[str, _Ran] = {}         # what each job did last round (for introspection)
        self.last_nodes: dict[str, dict[str, int]] = {}
        self.solo: dict[tuple[str, str], float] = {}  # (job, GPU type) -> measured solo progress rate
        self.bad_pairs: set[frozenset[str]] = set()
        self.gs: dict[str, GrowShrink] = {}
        self.seen: set[str] = set()
        self.counts = dict.fromkeys(("migrations", "type_moves", "packs", "unpacks", "grows", "suspends",
                                     "resumes"), 0)
        #: (round start, round end, job a, job b): both jobs of a packed GPU ran that round (GPU-time accounting)
        self.shared: list[tuple[float, float, str, str]] = []

    # -------------------------------------------------------------- helpers
    @property
    def vs(self) -> ClusterState | None:
        """The state of a one-type cluster (None before the first round or with several GPU types)."""
        return next(iter(self.pools.values())) if len(self.pools) == 1 else None

    def placed(self) -> set[str]:
        """The jobs living on some GPU (running or time-sliced out)."""
        return set(self.where)

    def _job(self, jid: str) -> GandivaJob:
        if jid not in self.jobs:
            raise InputError(f"policy[{self.name}].jobs", jid, "has no Gandiva profile for this job")
        return self.jobs[jid]

    def _speed(self, jid: str, t: str) -> float:
        return float((self.speeds or {}).get(jid, {}).get(t, 1.0))

    def _types_for(self, jid: str) -> list[str]:
        """GPU types, fastest for ``jid`` first (cluster order among equals)."""
        order = list(self.pools)
        return sorted(order, key=lambda t: (-self._speed(jid, t), order.index(t)))

    def _solo_est(self, jid: str, t: str) -> float | None:
        """The solo rate of ``jid`` on type ``t``: measured there, else measured on another type and scaled by the
        profiled speeds, else None."""
        if (jid, t) in self.solo:
            return self.solo[(jid, t)]
        for u in self.pools:
            if (jid, u) in self.solo:
                return self.solo[(jid, u)] * self._speed(jid, t) / self._speed(jid, u)
        return None

    def _weight(self, jid: str, attained: float) -> float:
        if not self.mechanisms.priority:
            return 1.0
        return float(self.priorities.get(jid, 1.0)) / (1.0 + attained / 3600.0 / self.priority_halflife_gpu_hours)

    def _place(self, jid: str, t: str, slots: Sequence[tuple[int, int]]) -> None:
        vs = self.pools[t]
        for s in slots:  # time-slicing a third job onto a packed GPU ends the pack
            vs.unpack(*s)
        vs.place(self._job(jid), slots)
        self.where[jid] = t
        others = {o for n, g in slots for o in vs.gpu_jobs(n, g) if o != jid}
        self.vt[jid] = min((self.vt.get(o, 0.0) for o in others), default=self.vt.get(jid, 0.0))

    def _remove(self, jid: str) -> tuple[str, list[tuple[int, int]]]:
        t = self.where.pop(jid)
        return t, self.pools[t].remove(jid)

    def _find(self, jid: str, t: str, cap: float | None) -> Any:
        vs = self.pools[t]
        job = self._job(jid)
        if job.gpus > vs.num_gpus or job.memory > float(vs.node_memory.max()) + 1e-9:
            return None
        return find_nodes(vs, job, max_height=cap)

    def _unshared(self, a: Any, jid: str, t: str) -> bool:
        """Algorithm 1 found free GPUs for ``jid`` on no more nodes than it needs (a move worth making)."""
        return a is not None and a.tier != "timeslice" and \
            len({n for n, _ in a.slots}) <= nodes_needed(self.pools[t].node_gpus, self._job(jid).gpus)

    def _move_to_free(self, jid: str, types: Sequence[str], moved: set[str]) -> str | None:
        """Move ``jid`` (currently placed) onto unshared free GPUs of the first type of ``types`` that has them;
        the type it went to, or None (it stays)."""
        t0, old = self._remove(jid)
        for u in types:
            a = self._find(jid, u, 1.0)
            if self._unshared(a, jid, u):
                self._place(jid, u, a.slots)
                moved.add(jid)
                return str(u)
        self.pools[t0].place(self._job(jid), old)
        self.where[jid] = t0
        return None

    def _sync_pools(self, state: RoundState) -> None:
        """One pool per GPU type with nodes, each node of its own GPUs, as the round's cluster has them. A live
        cluster changes between rounds (a GPU fails, a node goes down or comes back): a changed type's pool is
        rebuilt, its jobs kept on their GPUs where those still exist (packs too) and queued again otherwise (at the
        head of the queue, in the order they were placed). On a cluster that does not change this builds the pools
        once."""
        requeue: list[str] = []
        for gt in state.cluster.gpu_types:
            ids, sizes = list(state.cluster.node_ids(gt.name)), list(gt.sizes)
            old = self.pools.get(gt.name)
            if old is not None and self.node_ids[gt.name] == ids and old.node_gpus.tolist() == sizes:
                continue
            old_ids = self.node_ids.get(gt.name, [])
            self.pools.pop(gt.name, None)
            self.node_ids.pop(gt.name, None)
            new = None
            if ids:
                mem = load_type_speeds().memory.get(gt.name, 1.0)
                new = ClusterState([Node(nid, g, mem) for nid, g in zip(ids, sizes, strict=True)])
                self.pools[gt.name], self.node_ids[gt.name] = new, ids
                self.gs[gt.name] = GrowShrink(self.idle_period)
            if old is None:
                continue
            pos = {n: k for k, n in enumerate(ids)}
            for jid, sl in old.slots.items():
                moved = [(pos.get(old_ids[n], -1), g) for n, g in sl]
                if new is not None and all(k >= 0 and g < sizes[k] for k, g in moved):
                    new.place(old.jobs[jid], moved)
                else:
                    self.where.pop(jid, None)
                    requeue.append(jid)
            for n, g in sorted(old.packed):
                k = pos.get(old_ids[n], -1)
                if new is not None and k >= 0 and g < sizes[k] and len(new.gpu_jobs(k, g)) == 2:
                    new.pack(k, g)
        self.queue = requeue + [j for j in self.queue if j not in requeue]

    # -------------------------------------------------------------- the round
    def decide(self, state: RoundState) -> Decision:
        m = self.mechanisms
        self._sync_pools(state)
        views = {v.id: v for v in state.jobs}
        for jid in [j for j in self.where if j not in views]:  # finished
            self._remove(jid)
        self.queue = [j for j in self.queue if j in views]
        new = [v for v in state.jobs if v.id not in self.seen]
        for v in sorted(new, key=lambda v: (v.arrival, v.id)):
            self._job(v.id)
            self.seen.add(v.id)
            self.queue.append(v.id)
        if new and m.grow_shrink:
            for t, vs in self.pools.items():
                shrink(vs)
                self.gs[t].idle_since.clear()
        moved: set[str] = set()

        # 1. introspection: measure last round, undo packs that lose to time-slicing
        rates: dict[str, tuple[str, float]] = {}
        for jid, r in self.ran.items():
            if jid in views and r.busy > 0:
                rates[jid] = (r.mode, (views[jid].progress - r.progress) / r.busy)
                if r.mode == "solo":
                    self.solo[(jid, r.gpu_type)] = rates[jid][1]
        displaced: list[str] = []
        if m.packing:
            for t, vs in self.pools.items():
                for n, g in sorted(vs.packed):
                    a, b = vs.gpu_jobs(n, g)
                    ra, rb = rates.get(a), rates.get(b)
                    sa, sb = self._solo_est(a, t), self._solo_est(b, t)
                    if not (ra and rb and ra[0] == rb[0] == "packed" and sa and sb):
                        continue
                    if ra[1] / sa + rb[1] / sb < 1.0:  # the pack loses to time-slicing the GPU: undo it
                        self.bad_pairs.add(frozenset((a, b)))
                        vs.unpack(n, g)
                        self._remove(b)
                        displaced.append(b)
                        self.counts["unpacks"] += 1
        # 2. migration: time-sliced jobs onto free GPUs (a slower type only if it beats the job's time share)
        if m.migration:
            sliced = [j for j in self.where if self.pools[self.where[j]].time_share(j) < 1.0]
            for jid in sorted(sliced, key=lambda j: (-self._weight(j, views[j].attained_gpu_seconds), j)):
                t0 = self.where[jid]
                if self.pools[t0].time_share(jid) >= 1.0:  # an earlier move freed its GPUs
                    continue
                share = self._speed(jid, t0) * self.pools[t0].time_share(jid)
                self._move_to_free(jid, [u for u in self._types_for(jid) if self._speed(jid, u) > share], moved)
        # 3. packing (a waiting 1-GPU job onto the least-utilized GPU holding one 1-GPU job)
        waiting = displaced + self._queue_order(views)
        if m.packing == "exact":
            waiting = self._pack_exact(waiting, moved)
        elif m.packing == "greedy":
            waiting = self._pack_greedy(waiting, moved)
        # 4. place waiting jobs by Algorithm 1 on the type with the best tier (fastest type among equals),
        #    defragmenting first when migration is on
        still = []
        cap = None if m.time_slicing else 1.0
        for jid in waiting:
            job = self._job(jid)
            best = self._best_fit(jid, cap)
            if m.migration and job.gpus > 1 and (best is None or best[1].tier in ("fragmented", "timeslice")):
                for u in self._types_for(jid):
                    if job.gpus > self.pools[u].num_gpus:
                        continue
                    d = defragment(self.pools[u], job, method=m.migration, backend=self.backend,
                                   **({"time_limit": self.time_limit} if m.migration == "exact" else {}))
                    if d.freed and d.moves and d.state is not None:
                        self.pools[u] = d.state
                        moved.update(mv.job_id for mv in d.moves)
                        best = self._best_fit(jid, cap)
                        break
            if best is None or (not m.time_slicing and best[1].tier == "timeslice"):
                still.append(jid)
                continue
            self._place(jid, best[0], best[1].slots)
        self.queue = still
        # 4b. migration: interfering (packed) jobs apart onto the GPUs still free; then jobs onto a better-fit type
        if m.migration:
            for t, vs in self.pools.items():
                for n, g in sorted(vs.packed, key=lambda s: (self._pack_value(t, s, rates), s)):
                    if (n, g) not in vs.packed:
                        continue
                    guest = vs.gpu_jobs(n, g)[1]
                    vs.unpack(n, g)
                    if self._move_to_free(guest, self._types_for(guest), moved) is None:
                        vs.pack(n, g)
            if len(self.pools) > 1:
                for jid in sorted(self.where, key=lambda j: (-self._weight(j, views[j].attained_gpu_seconds), j)):
                    t0 = self.where[jid]
                    vs = self.pools[t0]
                    if jid in moved or vs.partner(jid) is not None or not vs.is_exclusive(jid) \
                            or len(vs.slots[jid]) != self._job(jid).gpus:
                        continue
                    better = [u for u in self._types_for(jid)
                              if self._speed(jid, u) >= self.better_fit * self._speed(jid, t0)]
                    if better and self._move_to_free(jid, better, moved) is not None:
                        self.counts["type_moves"] += 1
        # 5. grow-shrink
        if m.grow_shrink:
            for t, vs in self.pools.items():
                self.counts["grows"] += sum(self.gs[t].step(vs, state.time).values())
        # 6. who runs: weighted round-robin per GPU (packed GPUs run both jobs)
        running: list[str] = []
        for vs in self.pools.values():
            busy: set[tuple[int, int]] = set()
            order = sorted(vs.jobs, key=lambda j: (self.vt.get(j, 0.0), views[j].arrival, j))
            now: set[str] = set()
            for jid in order:
                if jid in now:
                    continue
                sl = vs.slots[jid]
                if any(s in busy for s in sl):
                    continue
                busy.update(sl)
                now.add(jid)
                running.append(jid)
                p = vs.partner(jid)
                if p is not None:
                    now.add(p)
                    running.append(p)
        for jid in running:
            self.vt[jid] = self.vt.get(jid, 0.0) + 1.0 / self._weight(jid, views[jid].attained_gpu_seconds)
        return self._decision(state, views, running, moved)

    def _best_fit(self, jid: str, cap: float | None) -> tuple[str, Any] | None:
        """(type, Algorithm 1's allocation): free GPUs before time-slicing; among those, the types within
        ``better_fit`` of the fastest one (no better-fit move would follow), by Algorithm 1's tier, then speed."""
        cands = [(k, u, a) for k, u in enumerate(self._types_for(jid)) if (a := self._find(jid, u, cap)) is not None]
        if not cands:
            return None
        free = [c for c in cands if c[2].tier != "timeslice"] or cands
        top = max(self._speed(jid, u) for _, u, _ in free)
        ok = [c for c in free if self._speed(jid, c[1]) * self.better_fit >= top] or free
        _k, u, a = min(ok, key=lambda c: (_TIER[c[2].tier], c[0]))
        return u, a

    def _pack_value(self, t: str, gpu: tuple[int, int], rates: Mapping[str, tuple[str, float]]) -> float:
        """The measured normalized throughput of a packed GPU (2 while not measured yet)."""
        v = 0.0
        for j in self.pools[t].gpu_jobs(*gpu):
            r, s = rates.get(j), self._solo_est(j, t)
            if r is None or r[0] != "packed" or not s:
                return 2.0
            v += r[1] / s
        return v

    def _queue_order(self, views: Mapping[str, Any]) -> list[str]:
        if self.mechanisms.priority:
            return sorted(self.queue, key=lambda j: (-self._weight(j, views[j].attained_gpu_seconds),
                                                     views[j].arrival, j))
        return list(self.queue)

    def _candidate_hosts(self, jid: str) -> list[tuple[float, float, str, tuple[int, int]]]:
        """(combined utilization, -speed of ``jid`` there, type, GPU) of every GPU ``jid`` may be packed onto."""
        job = self._job(jid)
        out = []
        for t, vs in self.pools.items():
            if self._solo_est(jid, t) is None:  # introspection needs both solo rates
                continue
            for n in range(len(vs.nodes)):
                for g in range(vs.nodes[n].gpus):
                    others = [o for o in vs.gpu_jobs(n, g) if o != jid]
                    if len(others) != 1 or (n, g) in vs.packed:  # one other job (with ``jid``: pack in place)
                        continue
                    h = vs.jobs[others[0]]
                    if h.gpus != 1 or len(vs.slots[h.id]) != 1 or frozenset((jid, h.id)) in self.bad_pairs \
                            or self._solo_est(h.id, t) is None:
                        continue
                    if h.memory + job.memory > vs.nodes[n].gpu_memory + 1e-9:
                        continue
                    u = h.utilization + job.utilization
                    if u <= self.pack_utilization + 1e-9:
                        out.append((u, -self._speed(jid, t), t, (n, g)))
        out.sort()
        return out

    def _sliced_singles(self, t: str) -> list[str]:
        vs = self.pools[t]
        return [j for j in vs.jobs if self._job(j).gpus == 1 and len(vs.slots[j]) == 1 and vs.time_share(j) < 1.0]

    def _pack_greedy(self, waiting: list[str], moved: set[str]) -> list[str]:
        # jobs that could be packed: waiting 1-GPU jobs, then time-sliced 1-GPU jobs, least utilized first
        sliced = [j for t in self.pools for j in self._sliced_singles(t)]
        rest = []
        for jid in waiting + sorted(sliced, key=lambda j: (self._job(j).utilization, j)):
            if self._job(jid).gpus != 1:
                rest.append(jid)
                continue
            hosts = self._candidate_hosts(jid)
            if not hosts:
                rest.append(jid)
                continue
            _, _, t, (n, g) = hosts[0]
            if jid in self.where and (self.where[jid] != t or self.pools[t].slots[jid] != [(n, g)]):
                self._remove(jid)
                moved.add(jid)
            if jid not in self.where:
                self._place(jid, t, [(n, g)])
            self.pools[t].pack(n, g)
            self.counts["packs"] += 1
        return [j for j in rest if j not in self.where]

    def _pack_exact(self, waiting: list[str], moved: set[str]) -> list[str]:
        for t in list(self.pools):
            vs = self.pools[t]
            sliced = self._sliced_singles(t)
            cands = [j for j in waiting if self._job(j).gpus == 1 and j not in self.where] + sliced
            if not cands:
                continue
            old = {j: list(vs.slots[j]) for j in sliced}
            for j in sliced:
                self._remove(j)
            jobs = [self._job(j) for j in cands]
            pk = pack_exact(vs, jobs, self.backend, profiles=self.prof, time_limit=self.time_limit)
            if not pk.has_solution:
                for j in sliced:
                    self._place(j, t, old[j])
                continue
            keep = {j: s for j, s in pk.assignment.items()
                    if not any(frozenset((j, o)) in self.bad_pairs for o in pk.assignment if pk.assignment[o] == s)}
            self.pools[t] = apply_packing(vs, [self._job(j) for j in keep], replace(pk, assignment=keep))
            self.counts["packs"] += sum(1 for ids in replace(pk, assignment=keep).gpus().values() if len(ids) == 2)
            for j in keep:
                self.where[j] = t
                others = [o for o in keep if o != j and keep[o] == keep[j]]
                self.vt[j] = min((self.vt.get(o, 0.0) for o in others), default=self.vt.get(j, 0.0))
                if j in old and old[j] != [keep[j]]:
                    moved.add(j)
            for j in sliced:
                if j not in keep:
                    self._place(j, t, old[j])
        return [j for j in waiting if j not in self.where]

    def _decision(self, state: RoundState, views: Mapping[str, Any], running: list[str],
                  moved: set[str]) -> Decision:
        R = state.round_seconds
        nodes: dict[str, dict[str, int]] = {}
        colocate: dict[str, str] = {}
        restart: dict[str, float] = {}
        ran: dict[str, _Ran] = {}
        run = set(running)
        for jid in running:
            t = self.where[jid]
            vs, ids = self.pools[t], self.node_ids[t]
            p = vs.partner(jid)
            sl = vs.slots[jid]
            if p is not None and p in run and vs.gpu_jobs(*sl[0])[0] == p:
                colocate[jid] = p  # the earlier job on the GPU hosts
                nm = {ids[sl[0][0]]: 1}
                self.shared.append((state.time, state.time + R, p, jid))
            else:
                nm = {}
                for n, _ in sl:
                    nm[ids[n]] = nm.get(ids[n], 0) + 1
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
            ran[jid] = _Ran(mode, v.progress, R - (cost if changed else 0.0), t)
        for jid in views:
            if jid not in run and views[jid].current_nodes:
                self.counts["suspends"] += 1
        self.ran = ran
        rate: dict[str, float] = {}
        for t, vs in self.pools.items():
            rate.update(true_rates(vs, [j for j in running if self.where[j] == t], self.prof,
                                   self.fragmentation_penalty))
        sliced = sum(1 for t, vs in self.pools.items() for j in vs.jobs if vs.time_share(j) < 1.0)
        info = {"queued": len(self.queue), "time_sliced": sliced,
                "packed_gpus": sum(len(vs.packed) for vs in self.pools.values()),
                "suspended": len(self.where) - len(running), **self.counts}
        return Decision(nodes=nodes, colocate=colocate, rate=rate, restart=restart, info=info)
