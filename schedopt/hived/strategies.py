"""Hypothesis strategies for HiveD: random chains, clusters, valid and invalid VC assignments, built directly."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from .cells import CellType, PhysicalCellSpec, PhysicalCluster
from .vc import VirtualCluster

__all__ = ["cluster_and_invalid_vcs", "cluster_and_valid_vcs", "clusters", "invalid_assignments", "valid_assignments"]


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
def cluster_and_valid_vcs(draw: Any, **kw: Any) -> tuple[PhysicalCluster, list[VirtualCluster]]:
    cl = draw(clusters(**kw))
    return cl, draw(valid_assignments(cl))


@st.composite
def cluster_and_invalid_vcs(draw: Any, **kw: Any) -> tuple[PhysicalCluster, list[VirtualCluster]]:
    cl = draw(clusters(**kw))
    return cl, draw(invalid_assignments(cl))
