"""The physical state of the HiveD allocator: per-GPU owners and priorities, and the physical buddy free lists.

:class:`PhysicalState` holds, over a :class:`~schedopt.hived.PhysicalCluster`:

* per GPU (leaf index ``j``): the job that runs on it (``gpu_job[j]``, -1 when idle) and its priority
  (``gpu_prio[j]``: 0..1000 guaranteed, -1 opportunistic, -2 free); per cell the number of used and of
  opportunistic GPUs below it (``used``, ``opp``), kept up to date in O(levels) per GPU;
* the **buddy free lists** per (chain, level) (:class:`~schedopt.hived.freelists.CellLists`, in hivedscheduler's
  list order; issue 43): the cells not bound to any VC's preassigned cell, healthy ones only (a failed node's free
  parts are kept aside per node); :meth:`take` picks the lowest free level's first cell with the fewest
  opportunistic GPUs and splits it down (children likewise), :meth:`carve` takes one given cell out
  (``removeCellFromFreeList``), :meth:`free_add` puts one back (``addCellToFreeList``), :meth:`release` gives a
  cell back with its failed parts set aside; ``blind``: hivedscheduler's own health-blind lists, changed only when a
  preassigned cell is bound or unbound (``buddy="hived"`` takes from them);
* ``bound[c]``: the virtual cell a physical cell is bound to (or ``None``).

Every operation walks one root-to-leaf path (times the fan-out).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .cells import PhysicalCluster
from .freelists import CellLists, Saved
from .priority import FREE_PRIORITY, OPPORTUNISTIC_PRIORITY

__all__ = ["PhysicalState"]


class PhysicalState:
    """Physical cells, GPUs and free lists (see the module docstring)."""

    def __init__(self, cluster: PhysicalCluster) -> None:
        self.cluster = cl = cluster
        n = cl.n_cells
        self.level: list[int] = cl.level.tolist()
        self.parent: list[int] = cl.parent.tolist()
        self.end: list[int] = cl.end.tolist()
        self.ci: list[int] = cl.chain_index.tolist()
        self.node_cell: list[int] = cl.node_cell.tolist()
        self.leaf_lo: list[int] = cl.leaf_lo.tolist()
        self.leaf_hi: list[int] = cl.leaf_hi.tolist()
        self.leaf_cells: list[int] = cl.leaf_cells.tolist()
        self.children: list[list[int]] = cl.children
        self.chains = [cl.chains[c] for c in cl.chain_names]
        self.node_level: list[int] = [c.node_level for c in self.chains]
        self.bound: list[Any] = [None] * n
        self.opp = [0] * n
        self.used = [0] * n
        self.badcnt = [0] * n
        self.bad_free: dict[int, set[int]] = {}
        keys = [(ci, k) for ci, ch in enumerate(self.chains) for k in range(1, ch.levels + 1)]
        #: the healthy free lists the buddy rule takes from, in hivedscheduler's list order (see the module
        #: docstring); ``free``, ``is_free``, ``free_children``, ``pos`` are its arrays
        self.lists = CellLists(self.parent, self.children, self.ci, self.level, keys)
        self.free, self.is_free = self.lists.lists, self.lists.listed
        self.free_children, self.pos = self.lists.listed_children, self.lists.pos
        #: hivedscheduler's own free lists: health-blind, changed only when a preassigned cell is bound or unbound
        #: (``buddy="hived"`` takes from them)
        self.blind = CellLists(self.parent, self.children, self.ci, self.level, keys)
        ng = cl.num_gpus
        self.gpu_job = [-1] * ng
        self.gpu_prio = [FREE_PRIORITY] * ng
        for top in np.flatnonzero(cl.parent < 0).tolist():
            self.free_add(top)
            self.blind.append(top)

    # ------------------------------------------------------------------ sizes and health
    def gpus(self, c: int) -> int:
        return self.leaf_hi[c] - self.leaf_lo[c]

    def is_bad(self, c: int) -> bool:
        """A cell is bad when it contains (or lies inside) a failed node."""
        if self.level[c] <= self.node_level[self.ci[c]]:
            return self.badcnt[self.node_cell[c]] > 0
        return self.badcnt[c] > 0

    def usable(self, c: int) -> bool:
        """HiveD's ``getUsablePhysicalCells``: unbound, and not a cell of one failed node."""
        return self.bound[c] is None and not (self.level[c] <= self.node_level[self.ci[c]] and self.is_bad(c))

    def ancestor_at(self, c: int, k: int) -> int:
        while self.level[c] < k:
            c = self.parent[c]
        return c

    # ------------------------------------------------------------------ GPUs
    def set_gpu(self, j: int, job: int, prio: int) -> None:
        """GPU ``j`` now runs ``job`` at ``prio`` (``job=-1``, ``prio=FREE_PRIORITY``: idle)."""
        old = self.gpu_prio[j]
        self.gpu_job[j] = job
        self.gpu_prio[j] = prio
        du = (prio != FREE_PRIORITY) - (old != FREE_PRIORITY)
        do = (prio == OPPORTUNISTIC_PRIORITY) - (old == OPPORTUNISTIC_PRIORITY)
        if du == 0 and do == 0:
            return
        c = self.leaf_cells[j]
        while c >= 0:
            self.used[c] += du
            self.opp[c] += do
            c = self.parent[c]

    # ------------------------------------------------------------------ free lists (buddy)
    def free_add(self, c: int) -> None:
        """Put healthy cell ``c`` on its free list, merging buddies upward while all are free (hivedscheduler's
        ``addCellToFreeList``: the free buddies leave their list in child order, the parent goes up instead)."""
        self.lists.add(c)

    def free_remove(self, c: int) -> None:
        """Take listed cell ``c`` off its free list: the list's last cell takes its slot (Go's ``CellList.remove``)."""
        self.lists.remove(c)

    def release(self, c: int) -> None:
        """Give cell ``c`` (nothing bound inside) back: healthy parts to the free lists, failed nodes' parts aside."""
        if not self.is_bad(c):
            self.free_add(c)
        elif self.level[c] <= self.node_level[self.ci[c]]:
            self.bad_free.setdefault(self.node_cell[c], set()).add(c)
        else:
            for ch in self.children[c]:
                self.release(ch)

    def free_ancestor(self, c: int) -> int:
        return self.lists.listed_ancestor(c)

    def carve(self, cell: int) -> bool:
        """Take ``cell`` out of the free space, splitting its free ancestor; False if it was not free. As
        hivedscheduler's ``removeCellFromFreeList``: from ``cell`` up to the listed ancestor, each parent's children
        are appended to their list and the cell on the path is removed from it."""
        return self.lists.carve(cell)

    def take_out(self, cell: int) -> None:
        """Take every free or set-aside part of ``cell`` (a failed cell nobody holds) out of the free space."""
        lo, hi = cell, self.end[cell]
        for d in range(lo, hi):
            if self.is_free[d]:
                self.free_remove(d)
        for nc in list(self.bad_free):
            s = self.bad_free[nc]
            for d in [d for d in s if lo <= d < hi or d <= lo < self.end[d]]:
                s.discard(d)
                if d < lo:  # a set-aside cell around ``cell`` (cell below a node): keep its other parts aside
                    self._split_aside(d, cell)
            if not s:
                del self.bad_free[nc]

    def _split_aside(self, outer: int, cell: int) -> None:
        a = cell
        while a != outer:
            for sib in self.children[self.parent[a]]:
                if sib != a:
                    self.release(sib)
            a = self.parent[a]

    def take(self, ci: int, k: int) -> int:
        """A free level-k cell by the buddy rule (lowest free level; its first cell with the fewest opportunistic
        GPUs in list order, then down the children likewise: hivedscheduler's stable sort of
        ``getUsablePhysicalCells``), taken out by :meth:`carve`; -1 if none."""
        L = self.chains[ci].levels
        for lv in range(k, L + 1):
            lst = self.free[(ci, lv)]
            if not lst:
                continue
            c = min(lst, key=self.opp.__getitem__)
            while self.level[c] > k:
                c = min(self.children[c], key=self.opp.__getitem__)
            self.carve(c)
            return c
        return -1

    def lowest_free_level(self, ci: int, k: int) -> int:
        """The lowest level ``>= k`` holding a free (healthy) cell of chain ``ci``; 0 when none."""
        for lv in range(k, self.chains[ci].levels + 1):
            if self.free[(ci, lv)]:
                return lv
        return 0

    def free_count(self, ci: int, k: int) -> int:
        return len(self.free[(ci, k)])

    def healthy_left(self, ci: int, k: int) -> int:
        """Healthy level-k cells obtainable from the free lists (HiveD's ``totalLeftCellNum - badFreeCells``)."""
        ch = self.chains[ci]
        return sum(len(self.free[(ci, lv)]) * ch.span(lv, k)
                   for lv in range(k, ch.levels + 1))

    def free_cells(self) -> list[int]:
        return self.lists.cells()

    def save_free(self) -> tuple[Saved, Saved, dict[int, set[int]]]:
        """The free space (both lists in order, set-aside failed parts), for :meth:`restore_free`."""
        return self.lists.save(), self.blind.save(), {k: set(v) for k, v in self.bad_free.items()}

    def restore_free(self, saved: tuple[Saved, Saved, dict[int, set[int]]]) -> None:
        """Put the free space back as :meth:`save_free` saw it (an undone binding leaves hivedscheduler's lists as
        they were: it plans on a copy)."""
        self.lists.restore(saved[0])
        self.blind.restore(saved[1])
        self.bad_free = {k: set(v) for k, v in saved[2].items()}
