"""Buddy free lists kept as hivedscheduler keeps them (issue 43).

:class:`CellLists` holds, per (chain, level), the free cells in hivedscheduler's list order: its ``CellList`` is a Go
slice where a cell is appended and a removed cell's slot takes the list's last cell (``CellList.remove``);
:meth:`CellLists.carve` is ``removeCellFromFreeList`` (from the cell up to the listed ancestor, each parent's
children are appended, then the cell on the path is removed) and :meth:`CellLists.add` is ``addCellToFreeList``
(while all of a cell's buddies are listed they leave the list in child order and the parent goes up instead). Where
several equally good cells tie, hivedscheduler takes the first in this order, so it decides which node a binding
picks. :class:`~schedopt.hived.state.PhysicalState` keeps two: the healthy lists its buddy rule takes from, and the
health-blind lists hivedscheduler itself has (``buddy="hived"``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

__all__ = ["CellLists"]

Saved = dict[tuple[int, int], list[int]]


class CellLists:
    """Free lists over a cell forest (``parent``, ``children``, chain index ``ci`` and ``level`` per cell), one per
    key in ``keys`` ((chain, level)); ``listed[c]``, ``pos[c]`` (index in its list, -1 when not listed) and
    ``listed_children[p]`` (children of ``p`` listed) are kept with them."""

    def __init__(self, parent: Sequence[int], children: Sequence[Sequence[int]], ci: Sequence[int],
                 level: Sequence[int], keys: Iterable[tuple[int, int]]) -> None:
        self.parent, self.children, self.ci, self.level = parent, children, ci, level
        n = len(parent)
        self.lists: dict[tuple[int, int], list[int]] = {k: [] for k in keys}
        self.pos = [-1] * n
        self.listed = [False] * n
        self.listed_children = [0] * n

    def list_of(self, c: int) -> list[int]:
        return self.lists[(self.ci[c], self.level[c])]

    def append(self, c: int) -> None:
        """List ``c`` at the end of its list (no merge)."""
        lst = self.list_of(c)
        self.pos[c] = len(lst)
        lst.append(c)
        self.listed[c] = True
        p = self.parent[c]
        if p >= 0:
            self.listed_children[p] += 1

    def remove(self, c: int) -> None:
        """Take listed ``c`` off its list: the list's last cell takes its slot."""
        lst = self.list_of(c)
        i = self.pos[c]
        last = lst.pop()
        if last != c:
            lst[i] = last
            self.pos[last] = i
        self.pos[c] = -1
        self.listed[c] = False
        p = self.parent[c]
        if p >= 0:
            self.listed_children[p] -= 1

    def add(self, c: int) -> None:
        """Give ``c`` back, merging with its buddies upward while all are listed."""
        while True:
            p = self.parent[c]
            if p < 0 or self.listed_children[p] < len(self.children[p]) - 1:
                self.append(c)
                return
            for b in self.children[p]:
                if b != c:
                    self.remove(b)
            c = p

    def listed_ancestor(self, c: int) -> int:
        """``c`` or its nearest listed ancestor; -1 when none is listed (``c`` is not free)."""
        a = c
        while a >= 0 and not self.listed[a]:
            a = self.parent[a]
        return a

    def carve(self, cell: int) -> bool:
        """Take ``cell`` out, splitting the listed cell around it; False if none is listed."""
        f = self.listed_ancestor(cell)
        if f < 0:
            return False
        c = cell
        while c != f:
            p = self.parent[c]
            for ch in self.children[p]:
                self.append(ch)
            self.remove(c)
            c = p
        self.remove(f)
        return True

    def cells(self) -> list[int]:
        return [c for lst in self.lists.values() for c in lst]

    def save(self) -> Saved:
        """The lists in order, for :meth:`restore`."""
        return {k: list(v) for k, v in self.lists.items()}

    def restore(self, saved: Saved) -> None:
        """Put the lists back as :meth:`save` saw them."""
        for lst in self.lists.values():
            for c in list(lst):
                self.remove(c)
        for lst in saved.values():
            for c in lst:
                self.append(c)
