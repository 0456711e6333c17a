"""Hypothesis strategies for HiveD: random chains, clusters, valid and invalid VC assignments, built directly."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
from hypothesis import strategies as st

from .cells import CellType, PhysicalCellSpec, PhysicalCluster
from .vc import VirtualCluster

__all__ = ["cluster_and_invalid_vcs", "cluster_and_pinned_vcs", "cluster_and_valid_vcs", "clusters", "invalid_assignments",
           "valid_assignments", "with_pinned_cells"]


@st.composite
def clusters(draw: Any, min_levels: int = 2, max_levels: int = 5, max_chains: int = 2, max_tops: int = 3,
             max_children: int = 3) -> PhysicalCluster:
    """A cluster of 1..``max_chains`` chains, each of ``min_levels``..``max_levels`` levels with random child
    counts (2..``max_children``), a random node level and 1..``max_tops`` top cells."""
    n_chains = draw(st.integers(1, max_chains))
    types: list[CellType] = []
    specs: list[PhysicalCellSpec] = []
    for c in range(n_chains):
        L = draw(st.integers(min_levels, max_levels))
        counts = [draw(st.integers(2, max_children)) for _ in range(L - 1)]  # counts[i]: children of level i+2
        node = draw(st.integers(2, L))
        names = [f"C{c}L{k}" for k in range(1, L + 1)]
        for k in range(2, L + 1):
            types.append(CellType(names[k - 1], names[k - 2], counts[k - 2], is_node_level=(k == node)))
        for t in range(draw(st.integers(1, max_tops))):
            specs.append(PhysicalCellSpec(names[-1], f"c{c}t{t}"))
    return PhysicalCluster(types, specs)


def _spread(draw: Any, total: int, n: int) -> list[int]:
    cuts = sorted(draw(st.lists(st.integers(0, total), min_size=n - 1, max_size=n - 1)))
    parts = [b - a for a, b in zip([0, *cuts], [*cuts, total])]
    return parts


@st.composite
def valid_assignments(draw: Any, cluster: PhysicalCluster, max_vcs: int = 3) -> list[VirtualCluster]:
    """A valid assignment built top down with the counting rule (often tight: nothing left at the leaf level)."""
    n = draw(st.integers(1, max_vcs))
    cells: list[dict[Any, int]] = [{} for _ in range(n)]
    for cname, ch in cluster.chains.items():
        left = cluster.num_cells(cname, ch.levels)
        for k in range(ch.levels, 0, -1):
            if k < ch.levels:
                left *= ch.child_count[k + 1]
            d = left if (k == 1 and draw(st.booleans())) else draw(st.integers(0, left))
            for v, part in enumerate(_spread(draw, d, n)):
                if part:
                    cells[v][(cname, k)] = part
            left -= d
    return [VirtualCluster(f"vc{v}", cells[v]) for v in range(n)]


@st.composite
def invalid_assignments(draw: Any, cluster: PhysicalCluster, max_vcs: int = 3) -> list[VirtualCluster]:
    """A valid assignment plus one VC asking for more level-k cells of a chain than are left there."""
    vcs = draw(valid_assignments(cluster, max_vcs))
    cname = draw(st.sampled_from(cluster.chain_names))
    ch = cluster.chains[cname]
    k = draw(st.integers(1, ch.levels))
    used = 0  # level-k cells consumed by demand at levels >= k
    for v in vcs:
        for (c, lv), cnt in v.cells.items():
            if c == cname and lv >= k:
                used += cnt * ch.span(lv, k)
    free = cluster.num_cells(cname, k) - used
    extra = free + draw(st.integers(1, 3))
    return [*vcs, VirtualCluster("greedy", {(cname, k): extra})]


@st.composite
def with_pinned_cells(draw: Any, cluster: PhysicalCluster, max_pins: int = 3, nested: bool = False) -> PhysicalCluster:
    """``cluster`` (as drawn by :func:`clusters`) again with 0..``max_pins`` random cells given pinnedCellIds ``P0``,
    ``P1``, ... (disjoint unless ``nested``: then a pinned cell may lie inside another)."""
    picks = draw(st.lists(st.integers(0, cluster.n_cells - 1), max_size=max_pins, unique=True))
    chosen: list[int] = []
    for c in picks:
        inside = any(p <= c < cluster.end[p] or c <= p < cluster.end[c] for p in chosen)
        if nested or not inside:
            chosen.append(c)
    specs = copy.deepcopy(cluster.specs)
    flat: list[PhysicalCellSpec] = []

    def walk(s: PhysicalCellSpec, top: bool) -> None:
        flat.append(s)
        if not top:
            s.address = None  # inferred again (the clusters drawn here give addresses to top cells only)
        for ch in s.children or []:
            walk(ch, False)

    for s in specs:
        walk(s, True)
    for i, c in enumerate(chosen):
        flat[c].pinned_id = f"P{i}"
    types = [CellType(t.name, t.child_type, t.child_count, t.is_node_level) for t in cluster.cell_types.values()]
    return PhysicalCluster(types, specs)


@st.composite
def cluster_and_valid_vcs(draw: Any, pinned: bool = False, **kw: Any) -> tuple[PhysicalCluster, list[VirtualCluster]]:
    """A cluster and a valid assignment; with ``pinned``, disjoint pinned cells owned by random VCs, the other
    quota built top down on the cells the pinned ones leave (the counting rule with pinned cells blocked)."""
    cl = draw(clusters(**kw))
    if not pinned:
        return cl, draw(valid_assignments(cl))
    cl = draw(with_pinned_cells(cl))
    n = draw(st.integers(1, 3))
    pins: list[list[str]] = [[] for _ in range(n)]
    for pid in sorted(cl.pinned):
        pins[draw(st.integers(0, n - 1))].append(pid)
    blocked = np.zeros(cl.n_cells, dtype=bool)
    for c in cl.pinned.values():
        blocked[c : cl.end[c]] = True
        anc = cl.ancestor[c, int(cl.level[c]) + 1 :]
        blocked[anc[anc >= 0]] = True
    cells: list[dict[Any, int]] = [{} for _ in range(n)]
    for cname, ch in cl.chains.items():
        left = 0
        for k in range(ch.levels, 0, -1):
            at = cl.cells_at[(cname, k)]
            par = cl.parent[at]
            h = int(np.count_nonzero(~blocked[at] & ((par < 0) | blocked[np.maximum(par, 0)])))
            left = left * (ch.child_count[k + 1] if k < ch.levels else 0) + h
            d = draw(st.integers(0, left))
            for v, part in enumerate(_spread(draw, d, n)):
                if part:
                    cells[v][(cname, k)] = part
            left -= d
    vcs = [VirtualCluster(f"vc{v}", cells[v], pins[v]) for v in range(n)]
    return cl, vcs


@st.composite
def cluster_and_pinned_vcs(draw: Any, **kw: Any) -> tuple[PhysicalCluster, list[VirtualCluster]]:
    """A cluster with pinned cells (possibly nested) owned by random VCs and random quotas (valid or not)."""
    cl = draw(with_pinned_cells(draw(clusters(**kw)), max_pins=4, nested=True))
    n = draw(st.integers(1, 3))
    pins: list[list[str]] = [[] for _ in range(n)]
    for pid in sorted(cl.pinned):
        if draw(st.booleans()) or len(cl.pinned) < 3:
            pins[draw(st.integers(0, n - 1))].append(pid)
    cells: list[dict[Any, int]] = [{} for _ in range(n)]
    for cname, ch in cl.chains.items():
        for k in range(1, ch.levels + 1):
            cap = cl.num_cells(cname, k)
            for v in range(n):
                if draw(st.integers(0, 2)) == 0:
                    cells[v][(cname, k)] = draw(st.integers(1, max(1, cap // 2)))
    return cl, [VirtualCluster(f"vc{v}", cells[v], pins[v]) for v in range(n)]


@st.composite
def cluster_and_invalid_vcs(draw: Any, **kw: Any) -> tuple[PhysicalCluster, list[VirtualCluster]]:
    """Hypothesis strategy: a cluster (:func:`clusters`) and a VC assignment it cannot hold."""
    cl = draw(clusters(**kw))
    return cl, draw(invalid_assignments(cl))
