"""HiveD's allocator: VC placement at GPU granularity, dynamic virtual-to-physical binding by the buddy rule,
priorities with preemption, opportunistic pods anywhere idle, lazy preemption, pinned cells and failed nodes.

The pieces (after hivedscheduler's ``pkg/algorithm``):

* :mod:`~schedopt.hived.state` -- GPUs (owner, priority) and the physical buddy free lists (split / merge);
* :mod:`~schedopt.hived.binding` -- virtual cells onto physical cells (buddy allocation, backtracking);
* :mod:`~schedopt.hived.search` -- each VC's virtual cells and the topology-aware placement of pods;
* :mod:`~schedopt.hived.preemption` -- gang preemption of victims, lazy preemption, opportunistic fair shares;
* :mod:`~schedopt.hived.health` -- failed nodes and doomed bad cells;
* :mod:`~schedopt.hived.priority` -- priorities 0..1000 (guaranteed), -1 (opportunistic), wait reasons;
* :mod:`~schedopt.hived.invariants` -- the model-free consistency check of the whole state.

A **guaranteed** request (priority 0..1000) is placed inside its VC's virtual cells (several pods may share a
node, a pod takes any number of GPUs of one node), first without preemption, then treating the VC's GPUs of lower
priorities as free. The chosen virtual GPUs are then bound to physical GPUs: a preassigned (quota) virtual cell that
gets its first pod is bound to a free physical cell of its level by the buddy rule (the lowest free level is split,
children with the fewest opportunistic GPUs first); a lower virtual cell binds to a free physical child of its
parent's cell (fewest opportunistic GPUs first). Jobs running on the GPUs taken are preempted whole. A request naming
``pinned_cell`` is placed inside that pinned cell only (other requests never use pinned cells). An **opportunistic**
request (priority -1) takes idle GPUs anywhere, inside cells bound to VCs too, packed onto nodes that already run
opportunistic pods and away from guaranteed ones; guaranteed pods preempt it when their binding needs its GPUs.

Every operation walks one root-to-leaf path per GPU; placement scans the nodes of one VC (guaranteed) or one chain
(opportunistic).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import InputError
from ..problem import Violation, assert_valid
from .binding import BindingMixin
from .cells import PhysicalCluster
from .check import CheckReport, check_vc_assignment
from .health import HealthMixin
from .invariants import check_allocator
from .preemption import PreemptionMixin
from .priority import (
    FREE_PRIORITY,
    GUARANTEED,
    OPPORTUNISTIC,
    OPPORTUNISTIC_PRIORITY,
    WaitReason,
    priority_value,
    weighted_max_min,
)
from .search import BAD_NODE, NodeView, VirtualCell, build_virtual_tree, find_placement
from .state import PhysicalState
from .vc import VirtualCluster, demand_table

__all__ = ["Allocation", "BuddyAllocator", "PodPlacement", "Request", "weighted_max_min"]


@dataclass(frozen=True)
class Request:
    """A job (HiveD's affinity group): ``pods`` pods of ``gpus_per_pod`` GPUs each, for VC ``vc``, on a chain (or a
    leaf type, e.g. "V100", as hivedscheduler's ``leafCellType``).

    ``priority``: an int in 0..1000 (guaranteed; higher preempts lower inside the VC), -1 (opportunistic), or
    ``"guaranteed"`` (0) / ``"opportunistic"`` (-1). ``pinned_cell``: a pinnedCellId of the VC, to run inside that
    pinned cell (hivedscheduler's ``pinnedCellId``). ``lazy_preemption``: when a higher-priority job of the VC takes
    its GPUs, run on as opportunistic until its physical GPUs are needed (``lazyPreemptionEnable``).
    """

    vc: str
    chain: str
    gpus_per_pod: int
    pods: int = 1
    priority: str | int = GUARANTEED
    name: str | None = None
    pinned_cell: str | None = None
    lazy_preemption: bool = False

    def __post_init__(self) -> None:
        # the names are checked here (a list as ``vc`` would fail as unhashable later); the numbers, against the
        # cluster, by BuddyAllocator.allocate
        for f in ("vc", "chain"):
            v = getattr(self, f)
            if not isinstance(v, str) or not v:
                raise InputError(f"request.{f}", v, "must be a non-empty string")
        for f in ("name", "pinned_cell"):
            v = getattr(self, f)
            if v is not None and (not isinstance(v, str) or not v):
                raise InputError(f"request.{f}", v, "must be a non-empty string or None")
        priority_value(self.priority)

    @property
    def priority_value(self) -> int:
        return priority_value(self.priority)

    @property
    def kind(self) -> str:
        return GUARANTEED if self.priority_value >= 0 else OPPORTUNISTIC


@dataclass(frozen=True)
class PodPlacement:
    """One pod: the node, the GPU indices it uses, and the lowest physical cell (address, level) holding them."""

    node: str
    gpus: tuple[int, ...]
    cell: str
    level: int


@dataclass
class Allocation:
    """The result of :meth:`BuddyAllocator.allocate`: placed (``ok``) or must wait (``reason``, ``message``).

    ``preempted``: jobs preempted (released whole) to make room; ``lazy_preempted``: jobs of the VC that lost their
    virtual cells and run on as opportunistic. ``reason`` (a :class:`WaitReason`) when waiting.
    """

    ok: bool
    request: Request
    handle: int | None = None
    chain: str | None = None
    level: int | None = None
    pods: list[PodPlacement] = field(default_factory=list)
    preempted: list[int] = field(default_factory=list)
    reason: str = ""
    message: str = ""
    guarantee: CheckReport | None = None
    lazy_preempted: list[int] = field(default_factory=list)

    def __bool__(self) -> bool:
        return self.ok


@dataclass(eq=False)
class Job:
    """A running job: its GPUs per pod and, while guaranteed, the virtual GPU each one is bound to."""

    handle: int
    request: Request
    prio: int
    ci: int
    level: int
    gpus: list[list[int]]
    vcells: list[VirtualCell] = field(default_factory=list)
    lazy_preempted: bool = False

    @property
    def is_opportunistic(self) -> bool:
        return self.prio < 0 or self.lazy_preempted

    @property
    def kind(self) -> str:
        return OPPORTUNISTIC if self.is_opportunistic else GUARANTEED

    def gpu_list(self) -> list[int]:
        return [j for pod in self.gpus for j in pod]


class BuddyAllocator(BindingMixin, PreemptionMixin, HealthMixin):
    """HiveD's allocator over ``cluster`` for the VCs ``vcs`` (see the module docstring).

    ``allocate(request) -> Allocation``, ``release(handle)``, ``mark_bad(node)`` / ``mark_healthy(node)`` (both return
    the guarantee report), ``free_lists()``, ``bound_cells()``, ``doomed_cells()``, ``vc_node_free()``,
    ``opportunistic_shares()``, ``check_invariants()`` / ``assert_invariants()``. ``fair_share=True`` adds weighted
    max-min preemption among opportunistic jobs (not in hivedscheduler). ``packing``: ``"best_fit"`` (default: inside
    a VC, among equally used cells a pod takes the smallest, so small pods do not use up node-level cells that large
    pods need) or ``"hived"`` (hivedscheduler's order: node-level cells first).
    """

    PACKINGS = ("best_fit", "hived")
    BUDDIES = ("healthy_first", "hived")

    def __init__(self, cluster: PhysicalCluster, vcs: Sequence[VirtualCluster], *, fair_share: bool = False,
                 packing: str = "best_fit", buddy: str = "healthy_first") -> None:
        if packing not in self.PACKINGS:
            raise InputError("packing", packing, f"must be one of {list(self.PACKINGS)}")
        if buddy not in self.BUDDIES:
            raise InputError("buddy", buddy, f"must be one of {list(self.BUDDIES)}")
        self.buddy = buddy
        self.cluster = cl = cluster
        self.vcs = list(vcs)
        self.fair_share = bool(fair_share)
        self.packing = packing
        self.table = demand_table(cl, self.vcs)
        self.vc_index = {v.name: i for i, v in enumerate(self.vcs)}
        self.validity = check_vc_assignment(cl, self.vcs, "counting")
        self.phys = ph = PhysicalState(cl)
        self.jobs: dict[int, Job] = {}
        self.bad_nodes: set[str] = set()
        self.bound_roots: set[int] = set()
        self._next = 1
        self.roots: list[VirtualCell] = []
        self._roots_by_level: dict[tuple[int, int, int], list[VirtualCell]] = {}
        self._views: dict[tuple[int, Any], list[VirtualCell]] = {}  # (vc, chain index | pinned id) -> nodes
        self._node_leaves: dict[int, list[VirtualCell]] = {}
        self._pinned: dict[tuple[int, str], VirtualCell] = {}
        self._order: dict[Any, list[int]] = {}  # persistent node order per view (sorted stably at each placement)
        # placement failures by request shape, valid while the VC's virtual GPUs and the nodes' health stay as they
        # were (a VC's view changes only through vuse_gpu / vfree_gpu, which bump its version): a waiting job is
        # tried again after every release anywhere, and its own VC's cells have usually not changed
        self._vc_version = [0] * len(self.vcs)
        self._health_epoch = 0
        self._maybe_doomed = False
        self._failed: dict[tuple[Any, ...], tuple[int, int, str, str]] = {}
        for vi, v in enumerate(self.vcs):
            for cell, pid in zip(self.table.pinned[vi], self.table.pinned_ids[vi]):
                ci, k = ph.ci[cell], ph.level[cell]
                u = build_virtual_tree(vi, ci, k, ph.chains[ci].child_count, pinned=cell)
                if not ph.carve(cell):
                    raise InputError(f"virtualClusters.{v.name}.pinnedCells", cl.address[cell],
                                     "lies inside another pinned cell")
                ph.blind.carve(cell)
                u.phys = cell
                ph.bound[cell] = u
                self.bound_roots.add(cell)
                self.roots.append(u)
                self._pinned[(vi, pid)] = u
                self._views[(vi, pid)] = self._node_cells([u])
            pinned_count = np.zeros_like(self.table.total[vi])
            for cell in self.table.pinned[vi]:
                pinned_count[ph.ci[cell], ph.level[cell]] += 1
            rest = self.table.total[vi] - pinned_count
            by_chain: dict[int, list[VirtualCell]] = {}
            for ci, k in sorted(zip(*np.nonzero(rest)), key=lambda t: (int(t[0]), -int(t[1]))):
                for _ in range(int(rest[ci, k])):
                    u = build_virtual_tree(vi, int(ci), int(k), ph.chains[int(ci)].child_count)
                    self.roots.append(u)
                    by_chain.setdefault(int(ci), []).append(u)
                    self._roots_by_level.setdefault((vi, int(ci), int(k)), []).append(u)
            for ci, us in by_chain.items():
                self._views[(vi, ci)] = self._node_cells(us)

    def _node_cells(self, roots: list[VirtualCell]) -> list[VirtualCell]:
        """The view's nodes: node-level virtual cells, then the roots below the node level (higher first)."""
        nl = self.phys.node_level[roots[0].ci]
        out: list[VirtualCell] = []
        for u in roots:
            if u.level >= nl:
                stack = [u]
                while stack:
                    x = stack.pop()
                    if x.level == nl:
                        out.append(x)
                    else:
                        stack.extend(reversed(x.children))
        out += sorted((u for u in roots if u.level < nl), key=lambda u: -u.level)
        for x in out:
            self._node_leaves[id(x)] = x.leaves()
        return out

    # ================================================================ requests
    def _parse(self, req: Any) -> tuple[int, list[int], int, int, VirtualCell | None]:
        if not isinstance(req, Request):
            raise InputError("request", req, "must be a hived.Request")
        if req.vc not in self.vc_index:
            raise InputError("request.vc", req.vc, f"names no VC ({sorted(self.vc_index)})")
        vi = self.vc_index[req.vc]
        cn = self.cluster.chain_names
        if req.chain in cn:
            chains = [cn.index(req.chain)]
        else:
            chains = [cn.index(c) for c in self.cluster.chains_with_leaf(req.chain)]
            if not chains:
                raise InputError("request.chain", req.chain, "names no chain and no leaf cell type")
        g = req.gpus_per_pod
        if isinstance(g, bool) or not isinstance(g, int | np.integer) or g < 1:
            raise InputError("request.gpus_per_pod", g, "must be a positive integer")
        if all(self.phys.chains[ci].gpus[self.phys.chains[ci].node_level] < g for ci in chains):
            raise InputError("request.gpus_per_pod", g, "exceeds the GPUs of one node (a pod runs on one machine)")
        p = req.pods
        if isinstance(p, bool) or not isinstance(p, int | np.integer) or p < 1:
            raise InputError("request.pods", p, "must be a positive integer")
        prio = priority_value(req.priority)
        pinned = None
        if req.pinned_cell is not None:
            if (vi, req.pinned_cell) not in self._pinned:
                raise InputError("request.pinned_cell", req.pinned_cell, f"is no pinned cell of VC {req.vc!r}")
            if prio < 0:
                raise InputError("request.priority", req.priority, "an opportunistic pod cannot use a pinned cell")
            pinned = self._pinned[(vi, req.pinned_cell)]
            if pinned.ci not in chains:
                raise InputError("request.chain", req.chain, f"does not hold pinned cell {req.pinned_cell!r}")
            chains = [pinned.ci]
        if not isinstance(req.lazy_preemption, bool):
            raise InputError("request.lazy_preemption", req.lazy_preemption, "must be true or false")
        return vi, chains, int(g), prio, pinned

    def allocate(self, request: Request) -> Allocation:
        """Place ``request`` or say why it must wait (an :class:`Allocation`; InputError for malformed requests)."""
        vi, chains, g, prio, pinned = self._parse(request)
        if prio >= 0:
            known = self.known_failure(request)
            out = known if known is not None else self._allocate_guaranteed(request, vi, chains, g, prio, pinned)
        else:
            out = self._allocate_opportunistic(request, chains, g)
        self.refresh_doomed()
        return out

    def _new_handle(self) -> int:
        h = self._next
        self._next += 1
        return h

    def _pod(self, gpus: list[int]) -> PodPlacement:
        ph = self.phys
        cells = [ph.leaf_cells[j] for j in gpus]
        k = 1
        while len({ph.ancestor_at(c, k) for c in cells}) > 1:
            k += 1
        lca = ph.ancestor_at(cells[0], k)
        node = self.cluster.node_name(cells[0]) or ""
        idx = tuple(sorted(int(self.cluster.gpu_index[j]) for j in gpus))
        return PodPlacement(node, idx, self.cluster.address[lca], k)

    @staticmethod
    def _shape(req: Request) -> tuple[Any, ...]:
        return (req.vc, req.chain, req.gpus_per_pod, req.pods, req.priority, req.pinned_cell)

    def known_failure(self, request: Request) -> Allocation | None:
        """The failed :class:`Allocation` a guaranteed ``request`` gets, when known without a search: a request of
        the same shape (VC, chain, GPUs per pod, pods, priority, pinned cell) found no place in the VC's cells, and
        neither those cells (their jobs) nor any node's health changed since; ``None`` otherwise (then
        :meth:`allocate` searches). Placement in a VC's view depends on nothing else, and a search that fails
        changes nothing (its stable re-sort of the view's node order is a no-op on unchanged cells), so the answer
        is the one a search would give."""
        hit = self._failed.get(self._shape(request))
        if hit is None or self.bad_nodes or self._maybe_doomed or hit[1] != self._health_epoch \
                or hit[0] != self._vc_version[self.vc_index[request.vc]]:
            return None
        return Allocation(False, request, reason=hit[2], message=hit[3])

    def known_failure_shape(self, shape: tuple[Any, ...], vc_index: int) -> bool:
        """:meth:`known_failure` without building the answer: is the failure of a guaranteed request of ``shape``
        (its ``(vc, chain, gpus_per_pod, pods, priority, pinned_cell)``, the VC at ``vc_index`` in ``vcs``) known
        now? A caller that tries many waiting requests of few shapes asks this first (a dictionary look-up)."""
        hit = self._failed.get(shape)
        return not (hit is None or self.bad_nodes or self._maybe_doomed or hit[1] != self._health_epoch
                    or hit[0] != self._vc_version[vc_index])

    def _vc_view(self, key: tuple[int, Any], threshold: int) -> list[NodeView]:
        ph = self.phys
        out = []
        for u in self._views.get(key, []):
            leaves = self._node_leaves[id(u)]
            healthy = not (u.phys >= 0 and ph.is_bad(u.phys))
            out.append(NodeView(u, leaves, [x.prio for x in leaves], healthy, u.used))
        return out

    def _allocate_guaranteed(self, req: Request, vi: int, chains: list[int], g: int, prio: int,
                             pinned: VirtualCell | None) -> Allocation:
        reason, message = WaitReason.VC_QUOTA, ""
        version, searched_only = self._vc_version[vi], True
        for ci in chains:
            key = (vi, req.pinned_cell) if pinned is not None else (vi, ci)
            if key not in self._views:
                continue
            top = self.phys.node_level[ci]
            placement, why = None, ""
            for threshold in ((OPPORTUNISTIC_PRIORITY,) if prio <= 0 else (OPPORTUNISTIC_PRIORITY, prio)):
                nodes = self._vc_view(key, threshold)
                order = self._order.setdefault(key, list(range(len(nodes))))
                placement, why = find_placement(nodes, g, req.pods, threshold, VirtualCell.ancestor_at, top, order,
                                                best_fit=self.packing == "best_fit")
                if placement is not None:
                    break
            if placement is None:
                reason = WaitReason.BAD_HARDWARE if why == BAD_NODE else WaitReason.VC_QUOTA
                message = f"VC {req.vc!r}: {why} for {req.pods} pod(s) of {g} GPUs on chain {self.cluster.chain_names[ci]!r}"
                continue
            leaves = [u for pod in placement for u in pod]
            lazy: list[tuple[Job, list[tuple[VirtualCell, int]]]] = []
            for h in sorted({u.job for u in leaves} - {-1}):
                job = self.jobs[h]
                if job.request.lazy_preemption and not job.lazy_preempted:
                    lazy.append((job, self.lazy_preempt(job)))
            mapped = self.map_leaves(leaves)
            if mapped is None:
                searched_only = False  # the binding failed: that depends on the physical state too
                for job, pairs in reversed(lazy):
                    self.revert_lazy_preempt(job, pairs)
                bad = any(self.phys.badcnt[t] > 0 for t in self.cluster.cells_at[(self.cluster.chain_names[ci],
                                                                                    self.phys.chains[ci].levels)].tolist())
                reason = WaitReason.BAD_HARDWARE if bad else WaitReason.INVALID_ASSIGNMENT
                message = (f"no healthy free physical cell of chain {self.cluster.chain_names[ci]!r} for VC {req.vc!r}"
                           + (": its guarantee cannot be met because of bad hardware" if bad else
                              ": the VC assignment is invalid"))
                continue
            handle = self._new_handle()
            gpus = [[self.phys.leaf_lo[mapped[id(u)]] for u in pod] for pod in placement]
            flat = [j for pod in gpus for j in pod]
            victims = self.victims_on(flat, handle)
            for u in leaves:  # counted as used first, so a victim's release cannot unbind the cells just bound
                self.vuse_gpu(u, handle, prio)
            self.preempt(victims, keep={id(u) for u in leaves})
            for j in flat:
                self.phys.set_gpu(j, handle, prio)
            k = self.phys.chains[ci].level_for_gpus(g) or 1
            self.jobs[handle] = Job(handle, req, prio, ci, k, gpus, leaves)
            return Allocation(True, req, handle, self.cluster.chain_names[ci], k, [self._pod(p) for p in gpus],
                              victims, lazy_preempted=[j.handle for j, _ in lazy if j.handle not in victims])
        if not message:
            message = f"VC {req.vc!r} has no quota on {req.chain!r} for {req.pods} pod(s) of {g} GPUs"
        alloc = Allocation(False, req, reason=reason, message=message)
        if searched_only and not self.bad_nodes and self._vc_version[vi] == version:
            self._failed[self._shape(req)] = (version, self._health_epoch, reason, message)
        if reason == WaitReason.BAD_HARDWARE:
            alloc.guarantee = self.guarantee_report()
        return alloc

    def release_job(self, job: Job, keep: Any = frozenset()) -> None:
        """Free a job's GPUs (virtual GPUs whose ``id`` is in ``keep`` stay bound, for a preemptor)."""
        ph = self.phys
        if job.vcells:
            for u, j in zip(job.vcells, job.gpu_list()):
                if id(u) in keep:
                    continue
                ph.set_gpu(j, -1, FREE_PRIORITY)
                self.vfree_gpu(u)
        else:
            for j in job.gpu_list():
                ph.set_gpu(j, -1, FREE_PRIORITY)

    # ---------------------------------------------------------------- rebuilding from bound allocations
    @classmethod
    def rebuild(cls, cluster: PhysicalCluster, vcs: Sequence[VirtualCluster],
                bound: Sequence[tuple[Any, ...]], **options: Any) -> BuddyAllocator:
        """An allocator whose cells and VCs hold the jobs already bound on the cluster: ``bound`` lists each running
        job as ``(request, pods)`` or ``(request, pods, cell_levels)`` (see :meth:`adopt`), oldest first. New
        requests are then allocated, and preempt, by the same rules as in an allocator that placed them; where
        nodes tie under those rules the order may differ (a view's node order is history, not state: as
        hivedscheduler's after a restart)."""
        a = cls(cluster, vcs, **options)
        for k, item in enumerate(bound):
            if not isinstance(item, tuple) or len(item) not in (2, 3):
                raise InputError(f"bound[{k}]", item, "must be (Request, [(node, GPU indices), ...][, cell levels])")
            got = a.adopt(*item)
            if not got:
                raise InputError(f"bound[{k}]", item[0].name or k, got.message)
        return a

    def adopt(self, request: Request, pods: Sequence[tuple[str, Sequence[int]]],
              cell_levels: Sequence[int] | None = None) -> Allocation:
        """Take a job that already runs on ``pods`` (node name, GPU indices per pod) into the state, as if this
        allocator had placed it there: its GPUs are marked used at its priority; a guaranteed job's GPUs are bound
        to its VC's virtual cells: under the VC's cell already bound around them, else by binding one of the VC's
        unbound preassigned cells to the physical cell around them, of the level ``cell_levels`` gives per pod
        (hivedscheduler records it with each pod, its ``preassignedCellTypes``, for this very rebuild), else the
        smallest level holding all the job's GPUs not yet under a bound cell (else the smallest). An
        :class:`Allocation` that is not ``ok`` says why (GPUs not free, outside the VC's quota, another VC's cell);
        nothing changes then."""
        vi, chains, g, prio, pinned = self._parse(request)
        ph = self.phys
        if not hasattr(self, "_gpu_at"):
            self._gpu_at = {pair: j for j in range(self.cluster.num_gpus)
                            for pair in self.cluster.gpus_of(int(self.cluster.leaf_cells[j]))}
        if isinstance(pods, (str, bytes)) or len(pods) != request.pods:
            raise InputError("pods", pods, f"must list the request's {request.pods} pod(s)")
        gpus: list[list[int]] = []
        for k, pod in enumerate(pods):
            if not isinstance(pod, tuple) or len(pod) != 2 or isinstance(pod[1], (str, bytes)):
                raise InputError(f"pods[{k}]", pod, "must be (node name, GPU indices)")
            node, idx = pod
            if len(idx) != g or len(set(idx)) != g:
                raise InputError(f"pods[{k}]", pod, f"must hold {g} distinct GPUs (gpus_per_pod)")
            js = []
            for i in idx:
                j = self._gpu_at.get((node, i))
                if j is None:
                    raise InputError(f"pods[{k}]", (node, i), "names no GPU of the cluster")
                js.append(j)
            gpus.append(js)
        flat = [j for pod in gpus for j in pod]
        if cell_levels is not None and (isinstance(cell_levels, (str, bytes)) or len(cell_levels) != len(gpus)):
            raise InputError("cell_levels", cell_levels, f"must give one level per pod ({len(gpus)})")
        levels = None if cell_levels is None else [int(cell_levels[k]) for k, pod in enumerate(gpus) for _ in pod]
        ci = ph.ci[ph.leaf_cells[flat[0]]]
        if any(ph.ci[ph.leaf_cells[j]] != ci for j in flat) or ci not in chains:
            return Allocation(False, request, reason=WaitReason.INVALID_ASSIGNMENT,
                              message=f"pods {list(pods)} are not all on a chain of {request.chain!r}")
        busy = [j for j in flat if ph.gpu_job[j] >= 0]
        if busy:
            return Allocation(False, request, reason=WaitReason.NO_FREE_CELLS,
                              message=f"GPUs {[self.cluster.gpus_of(ph.leaf_cells[j])[0] for j in busy]} are not free")
        leaves: list[VirtualCell] = []
        plan = self._adopt_cells(vi, ci, flat, pinned, levels) if prio >= 0 else []
        if isinstance(plan, str):
            return Allocation(False, request, reason=WaitReason.VC_QUOTA, message=plan)
        handle = self._new_handle()
        if prio >= 0:
            for u, j in zip(plan, flat):
                self.bind_path(u, ph.leaf_cells[j])
                self.vuse_gpu(u, handle, prio)
            leaves = plan
        for j in flat:
            ph.set_gpu(j, handle, prio)
        k = ph.chains[ci].level_for_gpus(g) or 1
        self.jobs[handle] = Job(handle, request, prio, ci, k, gpus, leaves)
        self.refresh_doomed()
        return Allocation(True, request, handle, self.cluster.chain_names[ci], k, [self._pod(p) for p in gpus])

    def _adopt_cells(self, vi: int, ci: int, flat: list[int], pinned: VirtualCell | None,
                     levels: list[int] | None) -> list[VirtualCell] | str:
        """The VC's virtual GPU for each physical GPU of ``flat`` (see :meth:`adopt`), chosen without binding
        anything; a text saying why when the VC cannot hold them."""
        ph = self.phys
        chosen: dict[int, VirtualCell] = {}  # physical cell -> virtual cell picked (not yet bound)
        roots_taken: set[int] = set()
        out: list[VirtualCell] = []

        def virtual_of(c: int) -> VirtualCell | None:
            if ph.bound[c] is not None:
                return ph.bound[c]
            return chosen.get(c)

        for pos, j in enumerate(flat):
            leaf = ph.leaf_cells[j]
            # the lowest ancestor with a virtual cell (bound already, or picked for an earlier GPU of this job)
            p, v = leaf, None
            while p >= 0:
                v = virtual_of(p)
                if v is not None:
                    break
                p = ph.parent[p]
            if v is None:
                rest = [ph.leaf_cells[x] for x in flat[pos:]]
                span = 1
                while len({ph.ancestor_at(c, span) for c in rest}) > 1:
                    span += 1
                cands = [u for u in self.roots if u.vc == vi and u.ci == ci and u.phys < 0 and u.pinned < 0
                         and id(u) not in roots_taken and ph.free_ancestor(ph.ancestor_at(leaf, u.level)) >= 0
                         and (levels is None or u.level == levels[pos])]
                if pinned is not None or not cands:
                    return (f"VC {self.vcs[vi].name!r} has no unbound quota cell around GPU "
                            f"{self.cluster.gpus_of(leaf)[0]} (or the cell there is taken)")
                cands.sort(key=lambda u: (u.level < span, u.level if u.level >= span else -u.level))
                v = cands[0]
                roots_taken.add(id(v))
                p = ph.ancestor_at(leaf, v.level)
                chosen[p] = v
            elif v.vc != vi:
                return f"GPU {self.cluster.gpus_of(leaf)[0]} lies in a cell bound to VC {self.vcs[v.vc].name!r}"
            elif (pinned is not None) != (v.root.pinned >= 0) or (pinned is not None and v.root is not pinned):
                return f"GPU {self.cluster.gpus_of(leaf)[0]} is not in the request's {'pinned' if pinned else 'quota'} cells"
            while v.level > 1:  # down the physical path, through the virtual children bound or picked on it
                c = ph.ancestor_at(leaf, v.level - 1)
                w = virtual_of(c)
                if w is None:
                    free = [x for x in v.children if x.phys < 0 and x.used == 0 and id(x) not in
                            {id(y) for y in chosen.values()}]
                    if not free:
                        return f"VC {self.vcs[vi].name!r} has no free virtual cell left under {v!r}"
                    w = free[0]
                    chosen[c] = w
                v = w
            if v.job >= 0:
                return f"GPU {self.cluster.gpus_of(leaf)[0]} is a virtual GPU another job holds"
            out.append(v)
        return out

    # ---------------------------------------------------------------- opportunistic
    def _physical_view(self, ci: int) -> list[NodeView]:
        ph = self.phys
        name = self.cluster.chain_names[ci]
        out = []
        for c in self.cluster.cells_at[(name, ph.node_level[ci])].tolist():
            lo, hi = ph.leaf_lo[c], ph.leaf_hi[c]
            out.append(NodeView(c, list(range(lo, hi)), ph.gpu_prio[lo:hi], not ph.is_bad(c), ph.opp[c],
                                ph.used[c] - ph.opp[c]))
        return out

    def _allocate_opportunistic(self, req: Request, chains: list[int], g: int) -> Allocation:
        ph = self.phys
        anc = self.cluster.ancestor
        reason = WaitReason.NO_FREE_CELLS
        victims: list[int] = []
        for ci in chains:
            top = ph.node_level[ci]
            while True:
                nodes = self._physical_view(ci)
                order = self._order.setdefault(("physical", ci), list(range(len(nodes))))
                placement, _ = find_placement(nodes, g, req.pods, OPPORTUNISTIC_PRIORITY,
                                              lambda j, k: int(anc[ph.leaf_cells[j], k]), top, order)
                if placement is not None:
                    handle = self._new_handle()
                    for pod in placement:
                        for j in pod:
                            ph.set_gpu(j, handle, OPPORTUNISTIC_PRIORITY)
                    k = ph.chains[ci].level_for_gpus(g) or 1
                    self.jobs[handle] = Job(handle, req, OPPORTUNISTIC_PRIORITY, ci, k, placement)
                    return Allocation(True, req, handle, self.cluster.chain_names[ci], k,
                                      [self._pod(p) for p in placement], victims)
                if not self.fair_share:
                    break
                victim, within = self.fair_share_victim(req.vc, req.pods * g, ci)
                if not within:
                    reason = WaitReason.FAIR_SHARE
                    break
                if victim is None:
                    break
                self.preempt([victim])
                victims.append(victim)
        msg = {WaitReason.FAIR_SHARE: f"VC {req.vc!r} would exceed its weighted max-min share of opportunistic GPUs",
               WaitReason.NO_FREE_CELLS: f"too few idle GPUs for {req.pods} opportunistic pod(s) of {g} GPUs"}[reason]
        return Allocation(False, req, preempted=victims, reason=reason, message=msg)

    # ---------------------------------------------------------------- release
    def release(self, handle: int) -> None:
        """Release a job: its GPUs, its virtual cells and, when a preassigned cell has nothing running, its
        physical cell (merging physical buddies)."""
        if handle not in self.jobs:
            raise InputError("handle", handle, "names no running job")
        self.release_job(self.jobs.pop(handle))
        self.refresh_doomed()

    # ---------------------------------------------------------------- views
    def virtual_free(self, vc: str, chain: str, level: int) -> int:
        """How many level-``level`` cells of VC ``vc`` on ``chain`` (outside pinned cells) run nothing."""
        vi, ci = self.vc_index[vc], self.cluster.chain_names.index(chain)
        n = 0
        for u in self.roots:
            if u.vc == vi and u.ci == ci and u.pinned < 0 and u.level >= level:
                stack = [u]
                while stack:
                    x = stack.pop()
                    if x.level == level:
                        n += x.used == 0
                    else:
                        stack.extend(x.children)
        return n

    def vc_node_free(self, vc: str, chain: str | None = None, *, priority: int = OPPORTUNISTIC_PRIORITY,
                     pinned_cell: str | None = None, healthy_only: bool = True) -> list[int]:
        """Per node of the VC's view (its node-level virtual cells), the GPUs a request of ``priority`` may use
        (idle ones, and those of lower priorities)."""
        vi = self.vc_index[vc]
        key = (vi, pinned_cell) if pinned_cell is not None else (vi, self.cluster.chain_names.index(chain))
        thr = max(priority, OPPORTUNISTIC_PRIORITY)
        return [sum(1 for p in nd.prios if p < thr) for nd in self._vc_view(key, thr) if nd.healthy or not healthy_only]

    def free_lists(self, *, list_order: bool = False) -> dict[tuple[str, int], list[str]]:
        """Free physical cells per (chain, level), as sorted addresses; ``list_order=True``: in the lists' order
        (hivedscheduler's, which decides ties between equally good cells)."""
        cn = self.cluster.chain_names
        out = {}
        for (ci, k), d in self.phys.free.items():
            names = [self.cluster.address[c] for c in d]
            out[(cn[ci], k)] = names if list_order else sorted(names)
        return out

    def bound_cells(self) -> dict[str, list[tuple[str, int, str]]]:
        """Per VC, the bound preassigned (and pinned) cells as (chain, level, address)."""
        out: dict[str, list[tuple[str, int, str]]] = {v.name: [] for v in self.vcs}
        for u in self.roots:
            if u.phys >= 0:
                out[self.vcs[u.vc].name].append((self.cluster.chain_names[u.ci], u.level, self.cluster.address[u.phys]))
        return out

    def doomed_cells(self) -> dict[str, list[str]]:
        """Per VC, the physical addresses of its doomed bad cells."""
        out: dict[str, list[str]] = {v.name: [] for v in self.vcs}
        for u in self.roots:
            if u.doomed:
                out[self.vcs[u.vc].name].append(self.cluster.address[u.phys])
        return out

    # ---------------------------------------------------------------- invariants
    def check_invariants(self) -> list[Violation]:
        """Consistency of the whole state, checked from plain arrays ([] when consistent): see
        :func:`schedopt.hived.invariants.check_allocator`."""
        return check_allocator(self)

    def assert_invariants(self) -> None:
        """Raise :class:`~schedopt.problem.ViolationError` listing every inconsistency."""
        assert_valid(self.check_invariants(), "hived allocator state")
