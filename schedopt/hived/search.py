"""Cell search of the HiveD allocator: each VC's virtual cells and the topology-aware placement of pods.

* :class:`VirtualCell`: one cell of a VC's preassigned (quota) or pinned cell, built down to the GPUs; a virtual
  cell is bound to a physical cell of the same level while something runs below it (HiveD's dynamic binding).
* :func:`find_placement`: hivedscheduler's ``topologyAwareScheduler.Schedule`` at GPU granularity. The "nodes" are
  the node-level cells of a view (or its cells below the node level when they are whole top cells); nodes are
  sorted healthy first, then by used GPUs (most first: packing), then by GPUs of higher priorities (fewest first);
  pods (equal sizes) fill the nodes in that order; inside a node a pod takes the GPUs of best affinity (the lowest
  cell holding enough available GPUs; free GPUs before preemptible ones). A guaranteed request is tried first
  without preemption and then treating GPUs of lower priorities as free.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .priority import FREE_PRIORITY

__all__ = ["BAD_NODE", "INSUFFICIENT", "NodeView", "VirtualCell", "best_affinity", "build_virtual_tree", "find_placement"]

#: Why a placement failed: only a bad (failed) node could hold it.
BAD_NODE = "have to use at least one bad node"
#: Why a placement failed: not enough free capacity.
INSUFFICIENT = "insufficient capacity"


class VirtualCell:
    """A cell of a VC's virtual cluster (``level`` 1 = one GPU). ``phys``: the bound physical cell (-1 unbound);
    ``pinned``: the physical cell of a pinned root (-1 otherwise); leaves hold ``job`` / ``prio``; ``used`` counts
    the used GPUs below."""

    __slots__ = ("children", "ci", "doomed", "job", "level", "parent", "phys", "pinned", "prio", "root", "used", "vc")

    def __init__(self, vc: int, ci: int, level: int, parent: VirtualCell | None, pinned: int = -1) -> None:
        self.vc = vc
        self.ci = ci
        self.level = level
        self.parent = parent
        self.children: list[VirtualCell] = []
        self.phys = -1
        self.pinned = pinned
        self.root: VirtualCell = self if parent is None else parent.root
        self.used = 0
        self.job = -1
        self.prio = FREE_PRIORITY
        self.doomed = False  #: a root bound to a failed physical cell because too few healthy cells are left

    def leaves(self) -> list[VirtualCell]:
        if not self.children:
            return [self]
        return [x for ch in self.children for x in ch.leaves()]

    def ancestor_at(self, k: int) -> VirtualCell:
        u = self
        while u.level < k and u.parent is not None:
            u = u.parent
        return u

    def __repr__(self) -> str:
        return f"<VirtualCell vc={self.vc} chain={self.ci} level={self.level} phys={self.phys}>"


def build_virtual_tree(vc: int, ci: int, level: int, child_count: Sequence[int], pinned: int = -1) -> VirtualCell:
    """A root of ``level`` with all its descendants (``child_count[k]`` children at level k)."""
    root = VirtualCell(vc, ci, level, None, pinned)
    stack = [root]
    while stack:
        u = stack.pop()
        if u.level > 1:
            u.children = [VirtualCell(vc, ci, u.level - 1, u) for _ in range(child_count[u.level])]
            stack.extend(u.children)
    return root


@dataclass
class NodeView:
    """One node of a view: its GPUs (in tree order) with their priorities, and its sort keys."""

    key: Any  #: the virtual or physical cell
    leaves: list[Any]  #: GPU handles (VirtualCell leaves or physical leaf indices), in tree order
    prios: list[int]
    healthy: bool
    used: int  #: GPUs counted as "same priority" for packing (all used ones when packing across priorities)
    higher: int = 0  #: GPUs used by higher priorities (only without cross-priority packing)


def best_affinity(leaves: list[Any], avail: list[int], g: int, anc: Callable[[Any, int], Any], top: int) -> list[int]:
    """Positions (into ``leaves``) of ``g`` GPUs of best affinity among the available positions ``avail`` (in
    preference order): the lowest level whose some cell holds ``g`` of them; among those cells the one holding the
    earliest available GPU; in it the first ``g`` available GPUs (hivedscheduler's ``findLeafCellsInNode``)."""
    rank = {pos: i for i, pos in enumerate(avail)}
    for k in range(1, top + 1):
        groups: dict[Any, list[int]] = {}
        for pos in avail:
            groups.setdefault(anc(leaves[pos], k), []).append(pos)
        ok = [grp for grp in groups.values() if len(grp) >= g]
        if ok:
            best = min(ok, key=lambda grp: rank[grp[0]])
            return best[:g]
    return avail[:g]


def find_placement(nodes: list[NodeView], g: int, pods: int, threshold: int, anc: Callable[[Any, int], Any],
                   top: int, order: list[int] | None = None, best_fit: bool = False) -> tuple[list[list[Any]] | None, str]:
    """Place ``pods`` pods of ``g`` GPUs on ``nodes``: a GPU is available when its priority is below ``threshold``
    (free GPUs first, then preemptible ones). Returns the GPUs per pod, or ``None`` and the reason.

    ``order`` (node positions) is the view's order from its previous placement: it is sorted again, stably, in
    place, so ties keep their earlier order (hivedscheduler sorts one persistent node list per view). ``best_fit``
    (schedopt's default inside a VC): among nodes that tie in that order, those that can hold the whole request come
    first, smallest first -- a 1-GPU pod takes a VC's 1-GPU cell rather than a GPU of an idle 8-GPU node
    (hivedscheduler's view lists node-level cells first) -- while a request no single node holds is packed in
    hivedscheduler's order. This per-request order is not kept."""
    if order is None:
        order = list(range(len(nodes)))

    def key(i: int) -> tuple[bool, int, int]:
        return (not nodes[i].healthy, -nodes[i].used, nodes[i].higher)

    order.sort(key=key)
    walk = order
    if best_fit:
        need = g * pods
        free_of = {i: sum(1 for p in nodes[i].prios if p < threshold) for i in order}
        walk = sorted(order, key=lambda i: (*key(i), free_of[i] < need, len(nodes[i].leaves) if free_of[i] >= need else 0))
    picks: list[int] = []
    for i in walk:
        nd = nodes[i]
        free = sum(1 for p in nd.prios if p < threshold)
        while free >= g and len(picks) < pods:
            if not nd.healthy:
                return None, BAD_NODE
            picks.append(i)
            free -= g
        if len(picks) == pods:
            break
    else:
        return None, INSUFFICIENT
    out: list[list[Any]] = []
    taken: dict[int, set[int]] = {}
    for i in picks:
        nd = nodes[i]
        t = taken.setdefault(i, set())
        avail = [p for p in range(len(nd.leaves)) if nd.prios[p] == FREE_PRIORITY and p not in t]
        avail += [p for p in range(len(nd.leaves)) if FREE_PRIORITY < nd.prios[p] < threshold and p not in t]
        pos = best_affinity(nd.leaves, avail, g, anc, top)
        t.update(pos)
        out.append([nd.leaves[p] for p in pos])
    return out, ""
