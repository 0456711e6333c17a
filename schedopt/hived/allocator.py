"""HiveD's buddy cell allocator: free lists per chain and level, split / merge, dynamic virtual-to-physical binding,
guaranteed vs opportunistic priority with preemption, weighted max-min opportunistic shares, and bad hardware.

Two buddy systems are stacked, as in HiveD:

* **inside each VC** (virtual cells): a pod needing a level-k cell takes a free virtual level-k cell of its VC, or
  splits the lowest free higher virtual cell; release merges virtual buddies back;
* **physical** (shared by all VCs): when a VC's *preassigned* (top-level, quota) virtual cell gets its first pod, it
  is bound to a free physical cell of the same level taken from the free list of that level, or by splitting the
  lowest free higher-level cell (the split-off buddies go on their free lists); a lower virtual cell binds to a free
  physical child of its parent's physical cell. A virtual cell with nothing running is unbound; a preassigned cell
  that unbinds gives its physical cell back, and buddies merge upward while all are free.

Every operation walks one root-to-leaf path (times the fan-out), i.e. O(levels). Free lists hold healthy cells
only (bad nodes are split off into a per-node bad list), so allocation avoids bad hardware.

Opportunistic pods take whole free cells of the level they need inside the free physical space, searched from the
highest level down (far from the guaranteed cells, which the buddy rule packs low). A guaranteed binding chooses,
among the buddy-legal free cells of a level, the one with the fewest opportunistic GPUs, and preempts only the
opportunistic jobs on the GPUs its pods actually take.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import InputError
from .cells import PhysicalCluster
from .check import CheckReport, check_vc_assignment
from .vc import VirtualCluster, demand_table

__all__ = ["Allocation", "BuddyAllocator", "PodPlacement", "Request", "weighted_max_min"]

GUARANTEED = "guaranteed"
OPPORTUNISTIC = "opportunistic"


@dataclass(frozen=True)
class Request:
    """A job: ``pods`` pods of ``gpus_per_pod`` GPUs each, for VC ``vc``, on a chain (or a leaf type, e.g. "V100").

    ``priority``: ``"guaranteed"`` (uses the VC's quota) or ``"opportunistic"``; an int is accepted too
    (``>= 0`` guaranteed, ``< 0`` opportunistic, as in hivedscheduler where -1 is opportunistic).
    """

    vc: str
    chain: str
    gpus_per_pod: int
    pods: int = 1
    priority: str | int = GUARANTEED
    name: str | None = None

    @property
    def kind(self) -> str:
        if isinstance(self.priority, str):
            return self.priority
        return GUARANTEED if self.priority >= 0 else OPPORTUNISTIC


@dataclass(frozen=True)
class PodPlacement:
    """One pod: the node, the GPU indices it uses, and the physical cell (address, level) that holds them."""

    node: str
    gpus: tuple[int, ...]
    cell: str
    level: int


@dataclass
class Allocation:
    """The result of :meth:`BuddyAllocator.allocate`: placed (``ok``) or must wait (``reason``, ``message``).

    ``reason`` when waiting: ``"vc_quota"`` (the VC's free virtual cells cannot hold the pods), ``"bad_hardware"``
    (a guaranteed cell cannot be bound because of failed nodes), ``"invalid_assignment"`` (no free physical cell
    although the VC has quota: only possible when the VC assignment is invalid), ``"no_free_cells"`` (opportunistic:
    no free cell of that size), ``"fair_share"`` (opportunistic: above its weighted max-min share).
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

    def __bool__(self) -> bool:
        return self.ok


class _VCell:
    __slots__ = ("children", "ci", "level", "nfree", "parent", "phys", "pinned", "root", "state", "vc")

    def __init__(self, vc: int, ci: int, level: int, parent: _VCell | None, pinned: int = -1) -> None:
        self.vc = vc
        self.ci = ci
        self.level = level
        self.parent = parent
        self.children: list[_VCell] | None = None
        self.state = 0  # 0 free (in the VC free list), 1 split, 2 used by a pod, 3 merged into its parent
        self.phys = -1
        self.pinned = pinned
        self.root: _VCell = self if parent is None else parent.root
        self.nfree = 0  # children currently free


@dataclass
class _Job:
    handle: int
    request: Request
    kind: str
    ci: int
    level: int
    vcells: list[_VCell | None]
    cells: list[int]


def weighted_max_min(capacity: float, demand: dict[str, float], weight: dict[str, float]) -> dict[str, float]:
    """Weighted max-min fair shares of ``capacity`` for the given demands (water filling)."""
    share = {k: 0.0 for k in demand}
    active = [k for k in demand if demand[k] > 0]
    cap = float(capacity)
    while active and cap > 1e-12:
        wsum = sum(weight[k] for k in active)
        level = cap / wsum
        sat = [k for k in active if demand[k] - share[k] <= level * weight[k] + 1e-12]
        if not sat:
            for k in active:
                share[k] += level * weight[k]
            break
        for k in sat:
            cap -= demand[k] - share[k]
            share[k] = float(demand[k])
        active = [k for k in active if k not in sat]
    return share


class BuddyAllocator:
    """HiveD's buddy cell allocator over ``cluster`` for the VCs ``vcs``.

    ``allocate(request) -> Allocation``, ``release(handle)``, ``mark_bad(node)`` / ``mark_healthy(node)`` (both
    return the guarantee report: whether all VCs' quotas still fit on the healthy hardware), ``free_lists()``,
    ``opportunistic_shares()``, ``check_invariants()``.
    """

    def __init__(self, cluster: PhysicalCluster, vcs: Sequence[VirtualCluster]) -> None:
        self.cluster = cl = cluster
        self.vcs = list(vcs)
        self.table = demand_table(cl, self.vcs)
        self.vc_index = {v.name: i for i, v in enumerate(self.vcs)}
        self.validity = check_vc_assignment(cl, self.vcs, "counting")
        n = cl.n_cells
        self._level = cl.level.tolist()
        self._parent = cl.parent.tolist()
        self._end = cl.end.tolist()
        self._ci = cl.chain_index.tolist()
        self._node_cell = cl.node_cell.tolist()
        self._leaf_lo = cl.leaf_lo.tolist()
        self._leaf_hi = cl.leaf_hi.tolist()
        self._children = cl.children
        self._chains = [cl.chains[c] for c in cl.chain_names]
        self._node_level = [c.node_level for c in self._chains]
        self.is_free = [False] * n
        self.free_children = [0] * n
        self.bound: list[_VCell | None] = [None] * n
        self.opp = [0] * n
        self.badcnt = [0] * n
        self.bad_nodes: set[str] = set()
        self._bad_free: dict[int, set[int]] = {}
        self._clean: dict[tuple[int, int], dict[int, None]] = {}
        self._dirty: dict[tuple[int, int], dict[int, None]] = {}
        for ci, ch in enumerate(self._chains):
            for k in range(1, ch.levels + 1):
                self._clean[(ci, k)] = {}
                self._dirty[(ci, k)] = {}
        ng = cl.num_gpus
        self.g_owner = [-1] * ng
        self.o_owner = [-1] * ng
        self.jobs: dict[int, _Job] = {}
        self._next = 1
        for top in np.flatnonzero(cl.parent < 0).tolist():
            self._free_add(top)
        # virtual cells: pinned roots first (bound for good), then the quota roots
        self._vfree: dict[tuple[int, int, int], dict[_VCell, None]] = {}
        self.roots: list[_VCell] = []
        for vi in range(len(self.vcs)):
            for ci, ch in enumerate(self._chains):
                for k in range(1, ch.levels + 1):
                    self._vfree[(vi, ci, k)] = {}
            for cell in self.table.pinned[vi]:
                u = _VCell(vi, self._ci[cell], self._level[cell], None, pinned=cell)
                if not self._carve(cell):
                    raise InputError(f"virtualClusters.{self.vcs[vi].name}.pinnedCells", self.cluster.address[cell],
                                     "lies inside another pinned cell")
                u.phys = cell
                self.bound[cell] = u
                self._vfree[(vi, u.ci, u.level)][u] = None
                self.roots.append(u)
            pinned_count = np.zeros_like(self.table.total[vi])
            for cell in self.table.pinned[vi]:
                pinned_count[self._ci[cell], self._level[cell]] += 1
            rest = self.table.total[vi] - pinned_count
            for ci, k in zip(*np.nonzero(rest)):
                for _ in range(int(rest[ci, k])):
                    u = _VCell(vi, int(ci), int(k), None)
                    self._vfree[(vi, int(ci), int(k))][u] = None
                    self.roots.append(u)

    # ================================================================ physical free lists
    def _is_bad(self, c: int) -> bool:
        if self._level[c] <= self._node_level[self._ci[c]]:
            return self.badcnt[self._node_cell[c]] > 0
        return self.badcnt[c] > 0

    def _list_of(self, c: int) -> dict[int, None]:
        key = (self._ci[c], self._level[c])
        return self._clean[key] if self.opp[c] == 0 else self._dirty[key]

    def _free_add(self, c: int) -> None:
        """Put healthy cell ``c`` on its free list and merge buddies upward while all are free."""
        while True:
            self.is_free[c] = True
            self._list_of(c)[c] = None
            p = self._parent[c]
            if p < 0:
                return
            self.free_children[p] += 1
            if self.free_children[p] < len(self._children[p]):
                return
            for ch in self._children[p]:
                self._free_remove(ch)
            c = p

    def _free_remove(self, c: int) -> None:
        self.is_free[c] = False
        key = (self._ci[c], self._level[c])
        self._clean[key].pop(c, None)
        self._dirty[key].pop(c, None)
        p = self._parent[c]
        if p >= 0:
            self.free_children[p] -= 1

    def _release_phys(self, c: int) -> None:
        """Give cell ``c`` (nothing bound inside) back: healthy parts to the free lists, bad parts aside."""
        if not self._is_bad(c):
            self._free_add(c)
        elif self._level[c] <= self._node_level[self._ci[c]]:
            self._bad_free.setdefault(self._node_cell[c], set()).add(c)
        else:
            for ch in self._children[c]:
                self._release_phys(ch)

    def _free_ancestor(self, c: int) -> int:
        a = c
        while a >= 0 and not self.is_free[a]:
            a = self._parent[a]
        return a

    def _carve(self, cell: int) -> bool:
        """Take ``cell`` out of the free space (splitting its free ancestor); False if it was not free."""
        f = self._free_ancestor(cell)
        if f < 0:
            return False
        self._free_remove(f)
        path = []
        a = cell
        while a != f:
            path.append(a)
            a = self._parent[a]
        for a in reversed(path):  # from below f down to cell: free the siblings
            for sib in self._children[self._parent[a]]:
                if sib != a:
                    self._release_phys(sib)
        return True

    def _take(self, ci: int, k: int) -> int:
        """A free physical level-k cell by the buddy rule (lowest free level, fewest opportunistic GPUs); -1 if none."""
        L = self._chains[ci].levels
        for lv in range(k, L + 1):
            clean, dirty = self._clean[(ci, lv)], self._dirty[(ci, lv)]
            if clean:
                c = next(iter(clean))
            elif dirty:
                c = min(dirty, key=self.opp.__getitem__)
            else:
                continue
            self._free_remove(c)
            while self._level[c] > k:
                kids = self._children[c]
                best = min(kids, key=self.opp.__getitem__)
                for ch in kids:
                    if ch != best:
                        self._free_add(ch)
                c = best
            return c
        return -1

    # ================================================================ virtual cells (intra-VC buddy)
    def _vtake(self, vi: int, ci: int, k: int) -> _VCell | None:
        L = self._chains[ci].levels
        for lv in range(k, L + 1):
            lst = self._vfree[(vi, ci, lv)]
            if lst:
                u = next(iter(lst))
                break
        else:
            return None
        del lst[u]
        if u.parent is not None:
            u.parent.nfree -= 1
        while u.level > k:
            u.state = 1
            if u.children is None:
                u.children = [_VCell(vi, ci, u.level - 1, u) for _ in range(self._chains[ci].child_count[u.level])]
            for ch in u.children[1:]:
                ch.state = 0
                self._vfree[(vi, ci, ch.level)][ch] = None
            u.nfree = len(u.children) - 1
            u = u.children[0]
        u.state = 2
        return u

    def _vfree_add(self, u: _VCell) -> None:
        """Virtual cell ``u`` has nothing running any more: unbind it, free it and merge virtual buddies."""
        while True:
            self._unbind(u)
            u.state = 0
            self._vfree[(u.vc, u.ci, u.level)][u] = None
            p = u.parent
            if p is None:
                return
            p.nfree += 1
            if p.nfree < len(p.children):  # type: ignore[arg-type]
                return
            for ch in p.children:  # type: ignore[union-attr]
                del self._vfree[(ch.vc, ch.ci, ch.level)][ch]
                ch.state = 3
            p.nfree = 0
            u = p

    def _unbind(self, u: _VCell) -> None:
        if u.phys < 0 or u.pinned >= 0:
            return
        c = u.phys
        self.bound[c] = None
        u.phys = -1
        if u.parent is None:
            self._release_phys(c)

    def _bind(self, u: _VCell) -> str:
        """Bind ``u`` (and its unbound ancestors) to physical cells; '' on success, else the reason."""
        if u.phys >= 0:
            return ""
        if u.parent is None:
            c = self._take(u.ci, u.level)
            if c < 0:
                return "bad_hardware" if self._chain_has_bad(u.ci) else "invalid_assignment"
        else:
            why = self._bind(u.parent)
            if why:
                return why
            cand = [ch for ch in self._children[u.parent.phys] if self.bound[ch] is None and not self._is_bad(ch)]
            if not cand:
                return "bad_hardware" if self._chain_has_bad(u.ci) else "invalid_assignment"
            c = min(cand, key=self.opp.__getitem__)
        u.phys = c
        self.bound[c] = u
        return ""

    def _chain_has_bad(self, ci: int) -> bool:
        return any(self.badcnt[t] > 0 for t in self.cluster.cells_at[(self.cluster.chain_names[ci], self._chains[ci].levels)].tolist())

    def _vavail(self, vi: int, ci: int, k: int) -> int:
        ch = self._chains[ci]
        return sum(len(self._vfree[(vi, ci, lv)]) * ch.span(lv, k) for lv in range(k, ch.levels + 1))

    def virtual_free(self, vc: str, chain: str, level: int) -> int:
        """How many level-``level`` cells VC ``vc`` can still get on ``chain`` from its own free virtual cells."""
        return self._vavail(self.vc_index[vc], self.cluster.chain_names.index(chain), int(level))

    # ================================================================ requests
    def _parse(self, req: Any) -> tuple[int, list[int], int, str]:
        if not isinstance(req, Request):
            raise InputError("request", req, "must be a hived.Request")
        if req.vc not in self.vc_index:
            raise InputError("request.vc", req.vc, f"names no VC ({sorted(self.vc_index)})")
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
        if all(self._chains[ci].gpus[self._chains[ci].node_level] < g for ci in chains):
            raise InputError("request.gpus_per_pod", g, "exceeds the GPUs of one node (a pod runs on one machine)")
        p = req.pods
        if isinstance(p, bool) or not isinstance(p, int | np.integer) or p < 1:
            raise InputError("request.pods", p, "must be a positive integer")
        pr = req.priority
        if isinstance(pr, bool) or not (pr in (GUARANTEED, OPPORTUNISTIC) or isinstance(pr, int | np.integer)):
            raise InputError("request.priority", pr, "must be 'guaranteed', 'opportunistic' or an integer")
        return self.vc_index[req.vc], chains, int(g), req.kind

    def allocate(self, request: Request) -> Allocation:
        """Place ``request`` or say why it must wait (an :class:`Allocation`; InputError for malformed requests)."""
        vi, chains, g, kind = self._parse(request)
        if kind == GUARANTEED:
            return self._allocate_guaranteed(request, vi, chains, g)
        return self._allocate_opportunistic(request, vi, chains, g)

    def _pod(self, cell: int, g: int) -> PodPlacement:
        lo = self._leaf_lo[cell]
        gpus = tuple(int(x) for x in self.cluster.gpu_index[lo : lo + g])
        node = self.cluster.node_name(cell) or ""
        return PodPlacement(node, gpus, self.cluster.address[cell], self._level[cell])

    def _allocate_guaranteed(self, req: Request, vi: int, chains: list[int], g: int) -> Allocation:
        reason, message = "vc_quota", f"VC {req.vc!r} has no quota on {req.chain!r} for {req.pods} pod(s) of {g} GPUs"
        for ci in chains:
            k = self._chains[ci].level_for_gpus(g)
            if k is None or self._vavail(vi, ci, k) < req.pods:
                continue
            placed: list[_VCell] = []
            why = ""
            for _ in range(req.pods):
                u = self._vtake(vi, ci, k)
                assert u is not None  # _vavail guarantees it
                why = self._bind(u)
                placed.append(u)
                if why:
                    break
            if why:
                for u in placed:
                    self._vfree_add(u)
                reason = why
                cname = self.cluster.chain_names[ci]
                message = (f"no healthy free physical level-{k} cell of chain {cname!r} for VC {req.vc!r}"
                           + (": its guarantee cannot be met because of bad hardware" if why == "bad_hardware" else
                              ": the VC assignment is invalid"))
                continue
            handle = self._next
            self._next += 1
            cells = [u.phys for u in placed]
            victims: set[int] = set()
            for c in cells:
                for j in range(self._leaf_lo[c], self._leaf_hi[c]):
                    self.g_owner[j] = handle
                    if self.o_owner[j] >= 0:
                        victims.add(self.o_owner[j])
            for h in sorted(victims):
                self._release_opp(self.jobs.pop(h))
            self.jobs[handle] = _Job(handle, req, GUARANTEED, ci, k, list(placed), cells)
            return Allocation(True, req, handle, self.cluster.chain_names[ci], k, [self._pod(c, g) for c in cells],
                              sorted(victims))
        alloc = Allocation(False, req, reason=reason, message=message)
        if reason == "bad_hardware":
            alloc.guarantee = self.guarantee_report()
        return alloc

    # ---------------------------------------------------------------- opportunistic
    def _opp_find(self, ci: int, k: int) -> int:
        L = self._chains[ci].levels
        for lv in range(L, k - 1, -1):  # far from the guaranteed cells: the largest free cells first
            clean = self._clean[(ci, lv)]
            if clean:
                c = next(iter(clean))
                while self._level[c] > k:
                    c = self._children[c][-1]
                return c
        for lv in range(L, k - 1, -1):
            for c in self._dirty[(ci, lv)]:
                r = self._zero_opp_below(c, k)
                if r >= 0:
                    return r
        return -1

    def _zero_opp_below(self, c: int, k: int) -> int:
        if self.opp[c] == 0:
            while self._level[c] > k:
                c = self._children[c][-1]
            return c
        if self._level[c] == k:
            return -1
        for ch in self._children[c]:
            if self.opp[ch] < self._leaf_hi[ch] - self._leaf_lo[ch]:
                r = self._zero_opp_below(ch, k)
                if r >= 0:
                    return r
        return -1

    def _opp_mark(self, cell: int, handle: int) -> None:
        size = self._leaf_hi[cell] - self._leaf_lo[cell]
        delta = size if handle >= 0 else -size
        for j in range(self._leaf_lo[cell], self._leaf_hi[cell]):
            self.o_owner[j] = handle
        for d in range(cell, self._end[cell]):
            self._set_opp(d, (self._leaf_hi[d] - self._leaf_lo[d]) if handle >= 0 else 0)
        a = self._parent[cell]
        while a >= 0:
            self._set_opp(a, self.opp[a] + delta)
            a = self._parent[a]

    def _set_opp(self, c: int, value: int) -> None:
        if self.is_free[c]:
            key = (self._ci[c], self._level[c])
            self._clean[key].pop(c, None)
            self._dirty[key].pop(c, None)
            self.opp[c] = value
            self._list_of(c)[c] = None
        else:
            self.opp[c] = value

    def _release_opp(self, job: _Job) -> None:
        for c in job.cells:
            self._opp_mark(c, -1)

    def opportunistic_usage(self) -> dict[str, int]:
        use = {v.name: 0 for v in self.vcs}
        for j in self.jobs.values():
            if j.kind == OPPORTUNISTIC:
                use[j.request.vc] += sum(self._leaf_hi[c] - self._leaf_lo[c] for c in j.cells)
        return use

    def opportunistic_shares(self, extra: dict[str, int] | None = None) -> dict[str, float]:
        """Weighted max-min shares of the GPUs that guaranteed pods do not hold, for the current opportunistic
        usage (plus ``extra`` pending demand per VC)."""
        healthy = sum(1 for j, leaf in enumerate(self.cluster.leaf_cells.tolist()) if not self._is_bad(leaf) and self.g_owner[j] < 0)
        demand = {k: float(v) for k, v in self.opportunistic_usage().items()}
        for k, v in (extra or {}).items():
            demand[k] += v
        return weighted_max_min(healthy, demand, {v.name: float(v.weight) for v in self.vcs})

    def _allocate_opportunistic(self, req: Request, vi: int, chains: list[int], g: int) -> Allocation:
        handle = self._next
        reason = "no_free_cells"
        victims: list[int] = []
        for ci in chains:
            k = self._chains[ci].level_for_gpus(g)
            if k is None:
                continue
            need = req.pods * self._chains[ci].gpus[k]
            while True:
                cells: list[int] = []
                for _ in range(req.pods):
                    c = self._opp_find(ci, k)
                    if c < 0:
                        break
                    self._opp_mark(c, handle)
                    cells.append(c)
                if len(cells) == req.pods:
                    self._next += 1
                    self.jobs[handle] = _Job(handle, req, OPPORTUNISTIC, ci, k, [None] * len(cells), cells)
                    return Allocation(True, req, handle, self.cluster.chain_names[ci], k,
                                      [self._pod(c, g) for c in cells], victims)
                for c in cells:
                    self._opp_mark(c, -1)
                # weighted max-min: preempt an opportunistic job of the VC furthest above its share, if the
                # requester stays within its own share
                share = self.opportunistic_shares({req.vc: need})
                usage = self.opportunistic_usage()
                if usage[req.vc] + need > share[req.vc] + 1e-9:
                    reason = "fair_share"
                    break
                over = [(usage[v] - share[v], h) for h, j in self.jobs.items() if j.kind == OPPORTUNISTIC
                        and j.ci == ci and (v := j.request.vc) != req.vc and usage[v] > share[v] + 1e-9]
                if not over:
                    reason = "no_free_cells"
                    break
                _, h = max(over)
                self._release_opp(self.jobs.pop(h))
                victims.append(h)
        msg = {"fair_share": f"VC {req.vc!r} would exceed its weighted max-min share of opportunistic GPUs",
               "no_free_cells": f"no free cells for {req.pods} opportunistic pod(s) of {g} GPUs"}[reason]
        return Allocation(False, req, preempted=victims, reason=reason, message=msg)

    # ---------------------------------------------------------------- release
    def release(self, handle: int) -> None:
        """Release a job: its GPUs, its virtual cells (merging buddies) and, when a preassigned cell has nothing
        running, its physical cell (merging physical buddies)."""
        if handle not in self.jobs:
            raise InputError("handle", handle, "names no running job")
        job = self.jobs.pop(handle)
        if job.kind == OPPORTUNISTIC:
            self._release_opp(job)
            return
        for u, c in zip(job.vcells, job.cells):
            for j in range(self._leaf_lo[c], self._leaf_hi[c]):
                self.g_owner[j] = -1
            assert u is not None
            self._vfree_add(u)

    # ---------------------------------------------------------------- bad hardware
    def mark_bad(self, node: str) -> CheckReport:
        """Mark a node bad: its free cells leave the free lists. Returns the guarantee report (``valid`` False
        names the chain / level / VC whose guarantee can no longer be met on the healthy hardware)."""
        for nc in self.cluster.node_cells_of(node):
            if self.badcnt[nc] > 0:
                continue
            a = nc
            while a >= 0:
                self.badcnt[a] += 1
                a = self._parent[a]
            f = self._free_ancestor(nc)
            if f >= 0:
                self._free_remove(f)
                self._release_phys(f)
            else:
                for d in range(nc, self._end[nc]):
                    if self.is_free[d]:
                        self._free_remove(d)
                        self._bad_free.setdefault(nc, set()).add(d)
        self.bad_nodes.add(node)
        return self.guarantee_report()

    def mark_healthy(self, node: str) -> CheckReport:
        """Mark a node healthy again: its free cells return to the free lists and merge with their buddies."""
        for nc in self.cluster.node_cells_of(node):
            if self.badcnt[nc] == 0:
                continue
            a = nc
            while a >= 0:
                self.badcnt[a] -= 1
                a = self._parent[a]
            for c in sorted(self._bad_free.pop(nc, set())):
                self._release_phys(c)
        self.bad_nodes.discard(node)
        return self.guarantee_report()

    def guarantee_report(self) -> CheckReport:
        """Do all VCs' quotas still fit on the healthy hardware? (the counting rule with bad nodes removed)"""
        return check_vc_assignment(self.cluster, self.vcs, "counting", bad_nodes=sorted(self.bad_nodes))

    # ---------------------------------------------------------------- views and checks
    def free_lists(self) -> dict[tuple[str, int], list[str]]:
        """Free physical cells per (chain, level), as sorted addresses."""
        cn = self.cluster.chain_names
        out = {}
        for (ci, k), d in self._clean.items():
            cells = list(d) + list(self._dirty[(ci, k)])
            out[(cn[ci], k)] = sorted(self.cluster.address[c] for c in cells)
        return out

    def bound_cells(self) -> dict[str, list[tuple[str, int, str]]]:
        """Per VC, the bound preassigned cells as (chain, level, address)."""
        out: dict[str, list[tuple[str, int, str]]] = {v.name: [] for v in self.vcs}
        for u in self.roots:
            if u.phys >= 0:
                out[self.vcs[u.vc].name].append((self.cluster.chain_names[u.ci], u.level, self.cluster.address[u.phys]))
        return out

    def check_invariants(self) -> list[str]:
        """Model-free consistency check of the whole state; returns the problems found ([] when consistent)."""
        cl = self.cluster
        bad: list[str] = []
        n = cl.n_cells
        # every leaf lies in exactly one of: a free cell, a bound preassigned cell, a bad-free cell
        cover = np.zeros(cl.num_gpus, dtype=np.int64)
        free = [c for c in range(n) if self.is_free[c]]
        listed = [c for d in self._clean.values() for c in d] + [c for d in self._dirty.values() for c in d]
        if sorted(free) != sorted(listed):
            bad.append("is_free flags and free lists differ")
        roots = [u for u in self.roots if u.phys >= 0]
        for c in free + [u.phys for u in roots] + [c for s in self._bad_free.values() for c in s]:
            cover[self._leaf_lo[c] : self._leaf_hi[c]] += 1
        if (cover != 1).any():
            j = int(np.flatnonzero(cover != 1)[0])
            bad.append(f"GPU {cl.gpus_of(int(cl.leaf_cells[j]))[0]} is covered {int(cover[j])} times (double-booked or lost)")
        for c in free:
            if self._is_bad(c):
                bad.append(f"free cell {cl.address[c]} is bad")
            if self.bound[c] is not None:
                bad.append(f"free cell {cl.address[c]} is bound")
        # quota: bound preassigned cells per (vc, chain, level) within quota; GPU ownership inside own cells
        cnt = np.zeros_like(self.table.total)
        for u in roots:
            cnt[u.vc, u.ci, u.level] += 1
            if self._level[u.phys] != u.level or self._ci[u.phys] != u.ci:
                bad.append(f"virtual cell of VC {self.vcs[u.vc].name} bound to a cell of another level / chain")
        if (cnt > self.table.total).any():
            bad.append("a VC holds more bound cells than its quota")
        for job in self.jobs.values():
            if job.kind != GUARANTEED:
                continue
            for u, c in zip(job.vcells, job.cells):
                assert u is not None
                r = u.root
                if r.phys < 0 or not (r.phys <= c < self._end[r.phys]):
                    bad.append(f"job {job.handle}: cell {cl.address[c]} outside its VC's bound cell")
                if any(self.o_owner[j] >= 0 for j in range(self._leaf_lo[c], self._leaf_hi[c])):
                    bad.append(f"job {job.handle}: an opportunistic pod shares its GPUs")
                if any(self.g_owner[j] != job.handle for j in range(self._leaf_lo[c], self._leaf_hi[c])):
                    bad.append(f"job {job.handle}: GPUs of cell {cl.address[c]} owned by another job")
        used = sum(1 for h in self.g_owner if h >= 0)
        expect = sum(self._leaf_hi[c] - self._leaf_lo[c] for j in self.jobs.values() if j.kind == GUARANTEED for c in j.cells)
        if used != expect:
            bad.append(f"{used} GPUs owned by guaranteed pods, expected {expect} (a GPU double-booked)")
        return bad
