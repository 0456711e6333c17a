"""Failed nodes in the HiveD allocator: bad-cell bookkeeping and "doomed bad cells".

A mix-in of :class:`~schedopt.hived.BuddyAllocator`, after hivedscheduler's ``setBadCell`` / ``setHealthyCell`` /
``tryBindDoomedBadCell`` / ``tryUnbindDoomedBadCell``:

* a failed node's free parts leave the free lists (kept aside per node) and return, merging with their buddies,
  when it is healthy again;
* a failed node inside a cell bound to a VC is bound to one of the VC's virtual cells, so the VC's placement sees
  the failure and avoids it (the binding goes when the node is healthy and nothing runs there);
* **doomed bad cells**: when a VC has more unbound preassigned level-k cells than healthy level-k cells are left in
  the free space, some of them are bound at once to free *failed* physical cells of that level ("doomed to be
  bad"). The VC's placement then sees which of its cells are bad and can still use the healthy nodes inside them;
  the binding is undone as soon as enough healthy cells are free again (and nothing runs in the doomed cell).
"""

from __future__ import annotations

from typing import Any

from .check import CheckReport, check_vc_assignment

__all__ = ["HealthMixin"]


class HealthMixin:
    """Bad nodes and doomed bad cells (mixed into :class:`BuddyAllocator`)."""

    phys: Any
    cluster: Any
    vcs: list[Any]
    bad_nodes: set[str]
    bound_roots: set[int]
    #: bumped by every mark_bad / mark_healthy (the allocator's cached placement failures hold while it stays)
    _health_epoch: int
    #: some root may be doomed (False after a refresh found none: refresh_doomed is then a no-op without bad nodes)
    _maybe_doomed: bool

    def mark_bad(self, node: str) -> CheckReport:
        """Mark a node bad: its free cells leave the free lists; a VC holding it sees the failure. Returns the
        guarantee report (``valid`` False names the chain / level / VC whose guarantee cannot be met)."""
        ph = self.phys
        for nc in self.cluster.node_cells_of(node):
            if ph.badcnt[nc] > 0:
                continue
            a = nc
            while a >= 0:
                ph.badcnt[a] += 1
                a = ph.parent[a]
            f = ph.free_ancestor(nc)
            if f >= 0:
                ph.free_remove(f)
                ph.release(f)
            else:
                for d in range(nc, ph.end[nc]):
                    if ph.is_free[d]:
                        ph.free_remove(d)
                        ph.bad_free.setdefault(nc, set()).add(d)
                self._expose_node(nc)
        self.bad_nodes.add(node)
        self._health_epoch += 1
        self.refresh_doomed()
        return self.guarantee_report()

    def mark_healthy(self, node: str) -> CheckReport:
        """Mark a node healthy again: its free cells return to the free lists and merge with their buddies."""
        ph = self.phys
        for nc in self.cluster.node_cells_of(node):
            if ph.badcnt[nc] == 0:
                continue
            a = nc
            while a >= 0:
                ph.badcnt[a] -= 1
                a = ph.parent[a]
            for c in sorted(ph.bad_free.pop(nc, set())):
                ph.release(c)
            self._unexpose_node(nc)
        self.bad_nodes.discard(node)
        self._health_epoch += 1
        self.refresh_doomed()
        return self.guarantee_report()

    def guarantee_report(self) -> CheckReport:
        """Do all VCs' quotas still fit on the healthy hardware? (the counting rule with the bad nodes removed)"""
        return check_vc_assignment(self.cluster, self.vcs, "counting", bad_nodes=sorted(self.bad_nodes))

    # ------------------------------------------------------------------ exposing failures to the VCs
    def _bound_root_over(self, c: int) -> int:
        a = c
        while a >= 0:
            if a in self.bound_roots:
                return a
            a = self.phys.parent[a]
        return -1

    def _expose_node(self, nc: int) -> None:
        """Bind the path from the bound root holding node cell ``nc`` down to ``nc`` (unbound virtual cells)."""
        ph = self.phys
        r = self._bound_root_over(nc)
        if r < 0:
            return
        u = ph.bound[r]
        for k in range(ph.level[r] - 1, ph.level[nc] - 1, -1):
            a = ph.ancestor_at(nc, k)
            if ph.bound[a] is None:
                free_kids = [ch for ch in u.children if ch.phys < 0]
                if not free_kids:  # pragma: no cover - the virtual tree mirrors the physical one
                    return
                v = free_kids[0]
                v.phys = a
                ph.bound[a] = v
            u = ph.bound[a]

    def _unexpose_node(self, nc: int) -> None:
        """Undo the bindings that exist only because node ``nc`` was bad (nothing runs below them)."""
        ph = self.phys
        a = nc
        while a >= 0 and a not in self.bound_roots:
            u = ph.bound[a]
            if u is not None and u.used == 0 and all(ch.phys < 0 for ch in u.children) and u.parent is not None:
                u.phys = -1
                ph.bound[a] = None
            a = ph.parent[a]

    def _expose_bad_below(self, u: Any) -> None:
        """Bind the failed node-level-or-above cells inside ``u``'s physical cell to ``u``'s virtual children."""
        ph = self.phys
        c = u.phys
        nl = ph.node_level[ph.ci[c]]
        if ph.level[c] <= nl:
            return
        for ch in ph.children[c]:
            if ph.is_bad(ch) and ph.bound[ch] is None:
                v = next(x for x in u.children if x.phys < 0)
                v.phys = ch
                ph.bound[ch] = v
                self._expose_bad_below(v)

    # ------------------------------------------------------------------ splitting next to failed cells
    def _unallocated(self, c: int) -> bool:
        return self._bound_root_over(c) < 0 and not any(c <= r < self.phys.end[c] for r in self.bound_roots)

    def _bad_free_levels(self, ci: int) -> dict[int, int]:
        """Level -> number of failed free cells as hivedscheduler's free lists hold them (its buddy lists ignore
        health: a failed node's free part sits in the largest unallocated cell around it)."""
        ph = self.phys
        tops: set[int] = set()
        for cells in ph.bad_free.values():
            for d in cells:
                if ph.ci[d] != ci:
                    continue
                a = d
                while ph.parent[a] >= 0 and self._unallocated(ph.parent[a]):
                    a = ph.parent[a]
                tops.add(a)
        out: dict[int, int] = {}
        for a in tops:
            if ph.is_bad(a):
                out[ph.level[a]] = out.get(ph.level[a], 0) + 1
        return out

    def split_allowed(self, ci: int, k: int) -> bool:
        """May a level-``k`` binding split the lowest healthy free higher cell? Always when the chain has no failed
        node. Otherwise hivedscheduler first looks at the lowest free level *including* failed cells; when that is
        below the healthy one, its buddy allocation fails there and its ``safeRelaxedBuddyAlloc`` splits a level-l
        cell only while the free level-l cells exceed the VCs' unbound level-l cells (plus what splitting higher
        cells brings), so a failed node does not make one VC take the cell another VC's quota needs whole."""
        ph = self.phys
        lv = ph.lowest_free_level(ci, k)
        if lv <= k or not any(ph.badcnt[t] > 0 for t in self.cluster.cells_at[(self.cluster.chain_names[ci],
                                                                                ph.chains[ci].levels)].tolist()):
            return True
        bad_at = self._bad_free_levels(ci)
        if not any(k <= lvl < lv for lvl in bad_at):
            return True  # hivedscheduler's lowest free level is the healthy one: the plain buddy split
        ch = ph.chains[ci]
        unbound: dict[int, int] = {}
        for (_vi, c, lvl), roots in self._roots_by_level.items():  # type: ignore[attr-defined]
            if c == ci:
                unbound[lvl] = unbound.get(lvl, 0) + sum(1 for u in roots if u.phys < 0)
        splittable = 0
        for i in range(ch.levels, k, -1):
            carry = splittable * ch.child_count[i + 1] if i < ch.levels else 0
            splittable = ph.free_count(ci, i) + bad_at.get(i, 0) - unbound.get(i, 0) + carry
            if i == lv:
                return splittable > 0
        return True  # pragma: no cover - lv lies in (k, levels]

    # ------------------------------------------------------------------ doomed bad cells
    def _free_bad_cell(self, ci: int, k: int) -> int:
        ph = self.phys
        name = self.cluster.chain_names[ci]
        for c in self.cluster.cells_at[(name, k)].tolist():
            if not ph.is_bad(c) or self._bound_root_over(c) >= 0:
                continue
            if any(c <= r < ph.end[c] for r in self.bound_roots):
                continue
            return c
        return -1

    def refresh_doomed(self) -> None:
        """Bind / unbind doomed bad cells until, per VC and level, the VC's unbound preassigned cells do not exceed
        the healthy free cells (hivedscheduler's per-VC rule), top level first."""
        roots_by: dict[tuple[int, int, int], list[Any]] = self._roots_by_level  # type: ignore[attr-defined]
        if not self.bad_nodes and not self._maybe_doomed:
            return
        ph = self.phys
        for us in roots_by.values():  # a doomed cell whose hardware is healthy again is an ordinary bound cell
            for u in us:
                if u.doomed and not ph.is_bad(u.phys):
                    u.doomed = False
                    if u.used == 0:
                        self.unbind_root(u)  # type: ignore[attr-defined]
        for ci, ch in enumerate(ph.chains):
            for k in range(ch.levels, 0, -1):
                h = ph.healthy_left(ci, k)
                for vi in range(len(self.vcs)):
                    roots = roots_by.get((vi, ci, k), [])
                    unbound = [u for u in roots if u.phys < 0]
                    doomed = [u for u in roots if u.doomed and u.used == 0]
                    while len(unbound) > h:
                        c = self._free_bad_cell(ci, k)
                        if c < 0:
                            break
                        u = unbound.pop(0)
                        ph.take_out(c)
                        ph.blind.carve(c)
                        u.phys = c
                        u.doomed = True
                        ph.bound[c] = u
                        self.bound_roots.add(c)
                        self._expose_bad_below(u)
                    while doomed and len(unbound) < h:
                        u = doomed.pop()
                        self.unbind_root(u)  # type: ignore[attr-defined]
                        unbound.append(u)
                    h = ph.healthy_left(ci, k)
        self._maybe_doomed = any(u.doomed for us in roots_by.values() for u in us)
