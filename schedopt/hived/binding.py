"""Binding in the HiveD allocator: virtual cells onto physical cells (hivedscheduler's ``cell_allocation.go``).

A mix-in of :class:`~schedopt.hived.BuddyAllocator` (it reads the allocator's ``phys``, ``cluster``,
``bound_roots``, ``buddy`` and the VCs' preassigned roots):

* :meth:`BindingMixin.map_leaves` binds the chosen virtual GPUs with their unbound ancestors: a preassigned (quota)
  cell gets a free physical cell of its level (:meth:`BindingMixin.take_root`: the buddy rule, or with
  ``buddy="hived"`` hivedscheduler's ``buddyAlloc`` / ``safeRelaxedBuddyAlloc`` on health-blind free lists), a lower
  virtual cell an unbound physical child of its parent's cell (fewest opportunistic GPUs first, backtracking past
  failed nodes: ``mapVirtualCellsToPhysical``);
* :meth:`BindingMixin.vfree_gpu` unbinds what nothing runs in any more (a preassigned cell then returns to the free
  lists), :meth:`BindingMixin.bind_path` re-binds a path (reverting a lazy preemption).
"""

from __future__ import annotations

from typing import Any

from .priority import FREE_PRIORITY
from .search import VirtualCell

__all__ = ["BindingMixin"]


class BindingMixin:
    """Virtual-to-physical binding (mixed into :class:`BuddyAllocator`)."""

    phys: Any
    cluster: Any
    bound_roots: set[int]
    buddy: str
    _roots_by_level: dict[tuple[int, int, int], list[VirtualCell]]
    _vc_version: list[int]

    def vuse_gpu(self, u: VirtualCell, handle: int, prio: int) -> None:
        self._vc_version[u.vc] += 1
        if u.job < 0:
            x: VirtualCell | None = u
            while x is not None:
                x.used += 1
                x = x.parent
        u.job, u.prio = handle, prio

    def vfree_gpu(self, u: VirtualCell) -> None:
        """Virtual GPU ``u`` runs nothing any more: unbind it (and ancestors left without bound children; a
        preassigned cell with nothing running goes back to the free lists)."""
        self._vc_version[u.vc] += 1
        x: VirtualCell | None = u
        while x is not None:
            x.used -= 1
            x = x.parent
        u.job, u.prio = -1, FREE_PRIORITY
        ph = self.phys
        nl = ph.node_level[u.ci]
        w = u
        while w.parent is not None:
            c = w.phys
            if c >= 0 and w.used == 0 and all(ch.phys < 0 for ch in w.children) and not (
                    ph.level[c] >= nl and ph.is_bad(c)):  # a failed node stays bound, so the VC sees it
                ph.bound[c] = None
                w.phys = -1
            w = w.parent
        if w.used == 0 and w.pinned < 0 and not w.doomed and w.phys >= 0:
            self.unbind_root(w)

    def unbind_root(self, root: VirtualCell) -> None:
        """Unbind a preassigned cell and everything below it; its physical cell returns to the free lists."""
        ph = self.phys
        c = root.phys
        stack = [root]
        while stack:
            x = stack.pop()
            if x.phys >= 0:
                ph.bound[x.phys] = None
                x.phys = -1
                stack.extend(x.children)
        root.doomed = False
        self.bound_roots.discard(c)
        ph.release(c)
        ph.blind.add(c)

    def bind_path(self, u: VirtualCell, cell: int) -> None:
        """Bind ``u`` to physical ``cell`` and each unbound ancestor to the matching physical ancestor."""
        ph = self.phys
        while u.phys < 0:
            u.phys = cell
            ph.bound[cell] = u
            if u.parent is None:
                if not ph.carve(cell):  # pragma: no cover - only reverts of lazy preemption get here
                    raise RuntimeError(f"cell {self.cluster.address[cell]} is not free")
                ph.blind.carve(cell)
                self.bound_roots.add(cell)
                return
            u, cell = u.parent, ph.parent[cell]

    def _candidates(self, cell: int) -> list[int]:
        ph = self.phys
        return sorted((ch for ch in ph.children[cell] if ph.usable(ch)), key=ph.opp.__getitem__)

    def _assign(self, vs: list[VirtualCell], cands: list[int], below: dict[int, list[VirtualCell]],
                out: dict[int, int]) -> bool:
        """Map virtual cells ``vs`` injectively onto ``cands`` (each one's children to bind recursively), with
        backtracking (hivedscheduler's ``mapVirtualCellsToPhysical``)."""
        if not vs:
            return True
        v, rest = vs[0], vs[1:]
        for c in cands:
            if c in out.values():
                continue
            trial = dict(out)
            trial[id(v)] = c
            kids = below.get(id(v), [])
            if kids and not self._assign(kids, self._candidates(c), below, trial):
                continue
            if self._assign(rest, cands, below, trial):
                out.clear()
                out.update(trial)
                return True
        return False

    def map_leaves(self, leaves: list[VirtualCell]) -> dict[int, int] | None:
        """Physical GPU cell per virtual GPU (by ``id``); binds what it maps; ``None`` (nothing changed) if some
        virtual cell cannot be mapped onto healthy free physical cells."""
        ph = self.phys
        out: dict[int, int] = {}
        below: dict[int, list[VirtualCell]] = {}
        tops: list[VirtualCell] = []
        seen: set[int] = set()
        cells: dict[int, VirtualCell] = {}
        for u in leaves:
            if u.phys >= 0:
                out[id(u)] = u.phys
                continue
            x = u
            while id(x) not in seen:
                seen.add(id(x))
                cells[id(x)] = x
                p = x.parent
                if p is None or p.phys >= 0:
                    tops.append(x)
                    break
                below.setdefault(id(p), []).append(x)
                x = p
        taken: list[VirtualCell] = []
        plan: dict[int, int] = {}
        groups: dict[int, list[VirtualCell]] = {}
        # hivedscheduler plans a request's cells on a copy of its free lists: a request that cannot be bound leaves
        # them (and their order) as they were
        saved = ph.save_free() if any(t.parent is None for t in tops) else None
        for t in tops:
            if t.parent is None:
                sub: dict[int, int] = {}
                c = self.take_root(t, below, sub)
                if c < 0:
                    self._undo_roots(taken, plan, saved)
                    return None
                plan[id(t)] = c
                ph.blind.carve(c)
                self.bound_roots.add(c)  # taken: the next root of this request must not see it free
                taken.append(t)
                plan.update(sub)
            else:
                groups.setdefault(id(t.parent), []).append(t)
        for vs in groups.values():
            sub = {}
            if not self._assign(vs, self._candidates(vs[0].parent.phys), below, sub):  # type: ignore[union-attr]
                self._undo_roots(taken, plan, saved)
                return None
            plan.update(sub)
        for key, c in plan.items():
            v = cells[key]
            v.phys = c
            ph.bound[c] = v
            if v.parent is None:
                self.bound_roots.add(c)
        for t in taken:
            if ph.is_bad(t.phys):  # a root bound to a cell with failed nodes (buddy="hived"): the VC sees them
                self._expose_bad_below(t)  # type: ignore[attr-defined]
        for u in leaves:
            out[id(u)] = u.phys
        return out

    def _undo_roots(self, taken: list[VirtualCell], plan: dict[int, int], saved: Any) -> None:
        """Give back the roots a request took before it failed (the free space as it was when ``saved``)."""
        for r in taken:
            self.bound_roots.discard(plan[id(r)])
        if saved is not None:
            self.phys.restore_free(saved)

    def take_root(self, t: VirtualCell, below: dict[int, list[VirtualCell]], sub: dict[int, int]) -> int:
        """A physical cell for preassigned virtual cell ``t`` (taken out of the free space), its subtree to bind
        mapped into ``sub``; -1 when none. ``buddy="healthy_first"``: the buddy rule on the healthy free lists
        (guarded next to failed nodes by ``split_allowed``); ``buddy="hived"``: hivedscheduler's buddy
        allocation on health-blind free lists (``buddyAlloc`` then ``safeRelaxedBuddyAlloc``)."""
        ph = self.phys
        ci, k = t.ci, t.level
        if self.buddy != "hived":
            c = ph.take(ci, k) if self.split_allowed(ci, k) else -1  # type: ignore[attr-defined]
            if c >= 0 and not self._assign(below.get(id(t), []), self._candidates(c), below, sub):  # pragma: no cover
                ph.release(c)
                return -1
            return c
        free = self.hived_free_cells(ci)
        levels = ph.chains[ci].levels
        lowest = next((lv for lv in range(k, levels + 1) if free.get(lv)), 0)
        if not lowest:
            return -1

        def fits(c: int) -> bool:
            trial: dict[int, int] = {}
            if self._assign(below.get(id(t), []), self._candidates(c), below, trial):
                sub.clear()
                sub.update(trial)
                return True
            return False

        def usable(cands: list[int]) -> list[int]:
            return sorted((c for c in cands if ph.usable(c)), key=ph.opp.__getitem__)

        def buddy(level: int, cands: list[int]) -> int:  # hivedscheduler's buddyAlloc (with backtracking)
            for c in usable(cands):
                if level == k:
                    if fits(c):
                        return c
                else:
                    r = buddy(level - 1, ph.children[c])
                    if r >= 0:
                        return r
            return -1

        c = buddy(lowest, free[lowest])
        if c < 0:  # safeRelaxedBuddyAlloc: split only what the VCs' unbound higher cells leave
            unbound: dict[int, int] = {}
            for (_vi, cj, lvl), roots in self._roots_by_level.items():
                if cj == ci:
                    unbound[lvl] = unbound.get(lvl, 0) + sum(1 for u in roots if u.phys < 0)
            ch = ph.chains[ci]
            splittable: dict[int, int] = {}
            for i in range(levels, k, -1):
                carry = splittable[i + 1] * ch.child_count[i + 1] if i < levels else 0
                splittable[i] = len(free.get(i, [])) - unbound.get(i, 0) + carry
            at_k = list(free.get(k, []))
            for lv in range(k + 1, levels + 1):
                n = min(len(free.get(lv, [])), splittable[lv])
                if n <= 0:
                    continue
                split, rest = [], free[lv]
                for _ in range(n):  # hivedscheduler takes the list's first cell n times (its slot takes the last)
                    split.append(rest[0])
                    rest[0] = rest[-1]
                    rest.pop()
                splittable[lv] -= n
                for _ in range(lv, k, -1):
                    split = [x for y in split for x in ph.children[y]]
                at_k = split + at_k
                c = next((x for x in usable(at_k) if fits(x)), -1)
                if c >= 0:
                    break
        if c < 0:
            return -1
        if not ph.carve(c):
            ph.take_out(c)
        return c

    def hived_free_cells(self, ci: int) -> dict[int, list[int]]:
        """hivedscheduler's free lists of chain ``ci`` (health-blind: the largest cells no VC cell touches), in its
        list order, as level -> copy of the list (its buddy allocation plans on a copy)."""
        lists = self.phys.blind.lists
        return {k: list(lists[(ci, k)]) for k in range(1, self.phys.chains[ci].levels + 1) if lists[(ci, k)]}
