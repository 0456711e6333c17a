"""The two schedulers of the closed loop, over the same physical cluster and tenants.

* :class:`QuotaScheduler` -- multi-tenant clusters before HiveD: a guaranteed job is admitted when its tenant's
  running guaranteed GPUs plus its own stay within the tenant's quota in GPUs (on the job's chain); it is then
  placed by topology-aware packing on the shared physical cluster without any cell reservation (every pod on one
  node, nodes most used first, inside a node the GPUs of best affinity: ``schedopt.hived.search.find_placement``,
  hivedscheduler's ``topologyAwareScheduler``), first on idle GPUs only, then also on opportunistic ones (nodes
  with the fewest opportunistic GPUs first; those jobs are preempted). A job whose pods find no nodes waits (for
  its affinity) even when its quota has room. Guaranteed jobs never preempt each other.
* :class:`HivedScheduler` -- :class:`schedopt.hived.BuddyAllocator`: each tenant's VC of quota cells, placement
  inside the VC, dynamic binding of virtual to physical cells by the buddy rule (free cells with the fewest
  opportunistic GPUs first), opportunistic jobs anywhere idle, preemption of opportunistic (and, inside a VC, of
  lower-priority) jobs when a binding needs their GPUs.

Both place opportunistic jobs the same way (idle GPUs only; nodes with the most opportunistic GPUs first, then
the fewest guaranteed ones) and both drop a failed node's jobs (the engine restarts them) before taking the node
out. The interface is :class:`Scheduler`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from ...errors import InputError
from ...hived import BuddyAllocator, Request
from ...hived.priority import FREE_PRIORITY, OPPORTUNISTIC_PRIORITY
from ...hived.search import NodeView, find_placement
from .private import PrivateQuota
from .workload import HivedCluster, HivedJob

__all__ = ["SCHEDULERS", "HivedScheduler", "Placed", "QuotaScheduler", "Scheduler", "make_scheduler"]


@dataclass
class Placed:
    """A started job: the GPUs (leaf indices) per pod and the jobs preempted to make room (by id)."""

    gpus: list[list[int]]
    preempted: list[str] = field(default_factory=list)


class Scheduler(Protocol):
    """What the engine asks of a scheduler."""

    name: str

    def try_start(self, job: HivedJob) -> Placed | str:
        """Start ``job`` (a :class:`Placed`) or say why it waits (a reason string)."""

    def release(self, job_id: str) -> None:
        """A running job finished (or is dropped)."""

    def fail_node(self, node: str) -> list[str]:
        """Node ``node`` fails: drop the jobs running on it (returned) and take it out."""

    def heal_node(self, node: str) -> None:
        """Node ``node`` is repaired."""

    def gpu_owner(self) -> list[str | None]:
        """Per GPU (leaf index) the id of the job running on it."""


class _Physical:
    """GPU owners and priorities over the physical cluster, and the node views of ``find_placement``."""

    def __init__(self, hc: HivedCluster) -> None:
        self.hc = hc
        cl = hc.cluster
        self.owner: list[str | None] = [None] * cl.num_gpus
        self.prio: list[int] = [FREE_PRIORITY] * cl.num_gpus
        self.node_of_leaf: list[str] = [cl.node_name(int(c)) or "" for c in cl.leaf_cells.tolist()]
        self.nodes: dict[str, list[tuple[int, list[int]]]] = {}  # chain -> [(node cell, leaves)]
        for chain in cl.chain_names:
            ch = cl.chains[chain]
            self.nodes[chain] = [(c, list(range(int(cl.leaf_lo[c]), int(cl.leaf_hi[c]))))
                                 for c in cl.cells_at[(chain, ch.node_level)].tolist()]
        self.bad: set[str] = set()
        self.jobs: dict[str, tuple[HivedJob, list[list[int]]]] = {}
        self.orders: dict[tuple[str, str], list[int]] = {}

    def anc(self, j: int, k: int) -> int:
        return int(self.hc.cluster.ancestor[int(self.hc.cluster.leaf_cells[j]), k])

    def healthy_nodes(self, chain: str) -> list[tuple[int, list[int]]]:
        cl = self.hc.cluster
        return [(c, lv) for c, lv in self.nodes[chain] if (cl.node_name(c) or "") not in self.bad]

    def set(self, job: HivedJob, gpus: list[list[int]]) -> None:
        for pod in gpus:
            for j in pod:
                self.owner[j] = job.id
                self.prio[j] = job.priority
        self.jobs[job.id] = (job, gpus)

    def clear(self, job_id: str) -> None:
        _, gpus = self.jobs.pop(job_id)
        for pod in gpus:
            for j in pod:
                self.owner[j] = None
                self.prio[j] = FREE_PRIORITY

    def on_node(self, node: str) -> list[str]:
        return sorted({o for j, o in enumerate(self.owner) if o is not None and self.node_of_leaf[j] == node})

    def opportunistic(self, job: HivedJob) -> Placed | str:
        """Idle GPUs only; nodes with the most opportunistic GPUs first, then the fewest guaranteed (HiveD's
        opportunistic placement, ``BuddyAllocator._physical_view``)."""
        nodes = []
        for _c, leaves in self.healthy_nodes(job.chain):
            pr = [self.prio[j] for j in leaves]
            opp = sum(1 for p in pr if p == OPPORTUNISTIC_PRIORITY)
            nodes.append(NodeView(_c, leaves, pr, True, opp, sum(1 for p in pr if p >= 0)))
        ch = self.hc.cluster.chains[job.chain]
        order = self.orders.setdefault(("opp", job.chain), list(range(len(nodes))))
        if len(order) != len(nodes):
            order[:] = range(len(nodes))
        pl, why = find_placement(nodes, job.gpus_per_pod, job.pods, OPPORTUNISTIC_PRIORITY, self.anc,
                                 ch.node_level, order)
        if pl is None:
            return "no idle GPUs: " + why
        self.set(job, pl)
        return Placed(pl)


class QuotaScheduler:
    """The quota-only baseline (module docstring)."""

    name = "quota"

    def __init__(self, hc: HivedCluster) -> None:
        self.hc = hc
        self.ph = _Physical(hc)
        self.private = PrivateQuota(hc)
        self.used: dict[tuple[str, str], int] = {}

    def try_start(self, job: HivedJob) -> Placed | str:
        ph = self.ph
        if not job.guaranteed:
            return ph.opportunistic(job)
        key = (job.tenant, job.chain)
        if self.used.get(key, 0) + job.gpus > self.private.gpus[key]:
            return "quota: the tenant's running guaranteed GPUs plus this job exceed its quota"
        ch = self.hc.cluster.chains[job.chain]
        healthy = self.ph.healthy_nodes(job.chain)
        for threshold in (OPPORTUNISTIC_PRIORITY, 0):
            nodes = []
            for c, leaves in healthy:
                pr = [ph.prio[j] for j in leaves]
                if threshold == OPPORTUNISTIC_PRIORITY:
                    used = sum(1 for p in pr if p != FREE_PRIORITY)
                else:  # preempting: the nodes with the fewest opportunistic GPUs first
                    used = -sum(1 for p in pr if p == OPPORTUNISTIC_PRIORITY)
                nodes.append(NodeView(c, leaves, pr, True, used))
            order = list(range(len(nodes)))
            pl, _ = find_placement(nodes, job.gpus_per_pod, job.pods, threshold, ph.anc, ch.node_level, order)
            if pl is not None:
                victims = sorted({ph.owner[j] for pod in pl for j in pod} - {None})
                for v in victims:
                    self.release(v)
                ph.set(job, pl)
                self.used[key] = self.used.get(key, 0) + job.gpus
                return Placed(pl, victims)
        return "affinity: no set of nodes holds its pods (topology-aware packing, no cell reservation)"

    def release(self, job_id: str) -> None:
        job, _ = self.ph.jobs[job_id]
        self.ph.clear(job_id)
        if job.guaranteed:
            self.used[(job.tenant, job.chain)] -= job.gpus

    def fail_node(self, node: str) -> list[str]:
        out = self.ph.on_node(node)
        for j in out:
            self.release(j)
        self.ph.bad.add(node)
        return out

    def heal_node(self, node: str) -> None:
        self.ph.bad.discard(node)

    def gpu_owner(self) -> list[str | None]:
        return self.ph.owner


class HivedScheduler:
    """HiveD's buddy cell allocator (module docstring); ``packing`` and ``buddy`` as :class:`BuddyAllocator`."""

    name = "hived"

    def __init__(self, hc: HivedCluster, *, packing: str = "best_fit", buddy: str = "healthy_first") -> None:
        self.hc = hc
        self.alloc = BuddyAllocator(hc.cluster, list(hc.vcs), packing=packing, buddy=buddy)
        self.ph = _Physical(hc)  # mirrors the allocator's GPUs, for the metrics
        self.handle: dict[str, int] = {}
        self.job_of: dict[int, str] = {}
        #: root bindings that preempted although an opportunistic-free candidate cell was there (:meth:`_avoidable`)
        self.avoidable = 0
        self._requests: dict[str, Request] = {}
        self._shapes: dict[str, tuple[tuple[Any, ...], int]] = {}  # job id -> (request shape, VC index)

    def _avoidable(self, before: tuple[set[int], list[int], dict[tuple[int, int], list[int]]],
                   victim_gpus: list[int]) -> int:
        """Audit of the binding choice (read-only): for each preassigned cell this request bound to a physical cell
        holding a victim's GPU, was there another candidate the buddy rule allows (a level-k cell inside a free cell
        of the lowest free level, before the request) with no opportunistic GPU at all? Counts those bindings.
        hivedscheduler's greedy rule (fewest opportunistic GPUs at the free level, then at each level down) can
        miss such a cell; schedopt's allocator follows it."""
        roots, opp, free = before
        ph = self.alloc.phys
        new = [c for c in self.alloc.bound_roots - roots if not getattr(ph.bound[c], "doomed", False)]
        out = 0
        for c in new:
            lo, hi = ph.leaf_lo[c], ph.leaf_hi[c]
            if not any(lo <= j < hi for j in victim_gpus):
                continue
            ci, k = ph.ci[c], ph.level[c]
            lv = next((x for x in range(k, ph.chains[ci].levels + 1) if free[(ci, x)]), 0)
            cands = []
            for f in free.get((ci, lv), []):
                stack = [f]
                while stack:
                    x = stack.pop()
                    if ph.level[x] == k:
                        cands.append(x)
                    else:
                        stack.extend(ph.children[x])
            if any(x != c and x not in new and opp[x] == 0 and not ph.is_bad(x) for x in cands):
                out += 1
        return out

    def _request(self, job: HivedJob) -> Request:
        req = self._requests.get(job.id)
        if req is None:  # one per job until it finishes (a waiting job is tried after every release)
            req = self._requests[job.id] = Request(job.tenant, job.chain, job.gpus_per_pod, job.pods, job.priority,
                                                   name=job.id)
            self._shapes[job.id] = (BuddyAllocator._shape(req), self.alloc.vc_index.get(job.tenant, -1))
        return req

    def waits_known(self, job: HivedJob) -> bool:
        """Would :meth:`try_start` return the allocator's remembered failure for ``job`` now (a guaranteed job
        whose request shape found no place in its VC's cells, unchanged since: no search, nothing changes)? The
        engine asks this first, so a long queue of few shapes costs a look-up per job."""
        if not job.guaranteed:
            return False
        self._request(job)
        shape, vi = self._shapes[job.id]
        return vi >= 0 and self.alloc.known_failure_shape(shape, vi)

    def try_start(self, job: HivedJob) -> Placed | str:
        req = self._request(job)
        ph = self.alloc.phys
        if job.guaranteed and (known := self.alloc.known_failure(req)) is not None:
            return f"{known.reason}: {known.message}"  # the same shape failed on the VC's unchanged cells
        before = (set(self.alloc.bound_roots), list(ph.opp), {k: list(v) for k, v in ph.free.items()}) \
            if job.guaranteed else None
        a = self.alloc.allocate(req)
        preempted = [self.job_of[h] for h in a.preempted]
        if before is not None and a.ok and a.preempted:
            victim_gpus = [j for h in a.preempted for pod in self.ph.jobs[self.job_of[h]][1] for j in pod]
            self.avoidable += self._avoidable(before, victim_gpus)
        for jid in preempted:
            self._forget(jid)
        if not a.ok:
            return f"{a.reason}: {a.message}"
        assert a.handle is not None
        gpus = [list(p) for p in self.alloc.jobs[a.handle].gpus]
        self.handle[job.id] = a.handle
        self.job_of[a.handle] = job.id
        self.ph.set(job, gpus)
        return Placed(gpus, preempted)

    def _forget(self, job_id: str) -> None:
        h = self.handle.pop(job_id)
        del self.job_of[h]
        self.ph.clear(job_id)

    def release(self, job_id: str) -> None:
        self.alloc.release(self.handle[job_id])
        self._forget(job_id)
        self._requests.pop(job_id, None)
        self._shapes.pop(job_id, None)

    def fail_node(self, node: str) -> list[str]:
        out = self.ph.on_node(node)
        for j in out:
            self.release(j)
        self.alloc.mark_bad(node)
        self.ph.bad.add(node)
        return out

    def heal_node(self, node: str) -> None:
        self.alloc.mark_healthy(node)
        self.ph.bad.discard(node)

    def gpu_owner(self) -> list[str | None]:
        return self.ph.owner

    def vc_has_room(self, job: HivedJob) -> bool:
        """Do the tenant's own virtual cells hold the job on idle, healthy GPUs now (``sum_n floor(idle_n / g) >=
        pods`` over the nodes of its VC view: the safety theorem's premise)?"""
        try:
            free = self.alloc.vc_node_free(job.tenant, job.chain)
        except KeyError:
            return False
        return sum(f // job.gpus_per_pod for f in free) >= job.pods


#: HiveD's schedulers by name: the quota baseline and HiveD.
SCHEDULERS = {"quota": QuotaScheduler, "hived": HivedScheduler}


def make_scheduler(name: str, hc: HivedCluster, **params: Any) -> QuotaScheduler | HivedScheduler:
    """``quota`` or ``hived`` (``packing`` and ``buddy`` for the latter)."""
    if name not in SCHEDULERS:
        raise InputError("scheduler", name, f"must be one of {list(SCHEDULERS)}")
    if name == "quota":
        if params:
            raise InputError("policy_params", sorted(params)[0], "the quota scheduler takes no parameters")
        return QuotaScheduler(hc)
    bad = sorted(set(params) - {"packing", "buddy"})
    if bad:
        raise InputError(f"policy_params.{bad[0]}", params[bad[0]], "unknown; hived takes packing and buddy")
    return HivedScheduler(hc, **params)
