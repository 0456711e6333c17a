"""The exact feasibility model of the VC-cell to physical-cell mapping, on :class:`schedopt.LinearModel`.

Variables ``assign[p]`` (binary, one per physical cell ``p`` of a (chain, level) where some VC has quota): ``p`` is
used whole as one VC cell of its level. VC cells are aggregated by (vc, chain, level) counts and, since VCs are
interchangeable at one level, summed over VCs: one column per physical cell (never one per (VC cell, physical cell),
nor per (VC, physical cell), which would add symmetric copies). :func:`decode_mapping` hands the used cells to the VCs.

Families (see ``formulations/hived.md``):

* ``demand[chain,level]``: ``sum_p assign[p] = sum_v d[v,c,k]`` (pinned cells included in ``d``; the row label lists
  the VCs and their counts);
* ``disjoint_path[cell]``: for every cell ``q`` of the lowest demanded level of a chain, the cells on the path from
  ``q`` to its top hold at most one VC cell (a used cell excludes its ancestors and descendants);
* ``pinned[vc:id]``: ``assign[pinned cell] = 1``;
* ``bad_hardware[cell]``: ``assign[p] = 0`` for cells containing or inside a bad node;
* ``new_vc_demand`` (``max_extra_quota`` only): replaces the demand row of the new VC's (chain, level):
  ``sum_p assign[p] - extra = sum_v d[v,c,k]``.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from ..errors import InfeasibleError, InputError
from ..model import LinearModel
from ..problem import Formulation, Structure, Violation, assert_valid
from ..results import SolveResult, TerminationReason
from ..solve import solve
from .cells import PhysicalCluster
from .vc import DemandTable, VirtualCluster, demand_table

__all__ = ["ExactModel", "MappingInverse", "assert_mapping", "build_exact_model", "check_mapping", "decode_mapping",
           "max_extra_quota", "verify_mapping"]

NEW_VC = "<new>"


@dataclass(frozen=True, eq=False)
class MappingInverse:
    """The typed inverse map of the mapping model: what is needed to read a solution back."""

    cell_of_col: np.ndarray  #: physical cell of each ``assign`` column
    table: DemandTable
    chains: tuple[str, ...]
    min_level: int = 1
    bad: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    extra: tuple[str, int] | None = None  #: the (chain, level) of ``max_extra_quota``'s new VC


@dataclass(frozen=True, eq=False)
class ExactModel(Formulation[MappingInverse]):
    """The built mapping model (a :class:`~schedopt.problem.Formulation`); ``cell_of_col``, ``table``, ``chains``,
    ``min_level`` and ``bad`` read the typed inverse map."""

    @property
    def cell_of_col(self) -> np.ndarray:
        return self.inverse.cell_of_col

    @property
    def table(self) -> DemandTable:
        return self.inverse.table

    @property
    def chains(self) -> list[str]:
        return list(self.inverse.chains)

    @property
    def min_level(self) -> int:
        return self.inverse.min_level

    @property
    def bad(self) -> np.ndarray:
        return self.inverse.bad


def build_exact_model(
    cluster: PhysicalCluster,
    vcs: Sequence[VirtualCluster] | DemandTable,
    *,
    bad_nodes: Iterable[str] = (),
    chains: Sequence[str] | None = None,
    min_level: int = 1,
    extra: tuple[str, int] | None = None,
) -> ExactModel:
    """Build the mapping model.

    ``chains`` restricts the model to some chains (chains are independent); ``min_level`` drops the demand below that
    level (used to locate the level at fault); ``extra=(chain, level)`` adds a new VC whose number of level-k cells
    ``extra`` is maximised (``max_extra_quota``).

    Examples
    --------
    >>> import schedopt
    >>> from schedopt import hived
    >>> cluster = hived.generate_cluster(64, nodes_per_rack=4)
    >>> vcs = hived.generate_vcs(cluster, 3, seed=1, fill=0.8)
    >>> em = hived.build_exact_model(cluster, vcs)
    >>> schedopt.solve(em, backend="highs").termination.reason.value
    'optimal'
    """
    t0 = time.perf_counter()
    table = vcs if isinstance(vcs, DemandTable) else demand_table(cluster, vcs)
    chain_sel = list(cluster.chain_names) if chains is None else list(chains)
    for c in chain_sel:
        cluster.chain_for(c, "chains")
    bad = cluster.bad_cell_mask(bad_nodes)
    total = table.total.copy()
    total[:, :, :min_level] = 0
    if extra is not None:
        ec, ek = cluster.resolve_cell(extra, "extra")
        extra = (ec, ek)
        if ec not in chain_sel:
            chain_sel.append(ec)
    # entries: (chain, level, total demand of all VCs) for every demanded (chain, level), top level first
    entries: list[tuple[str, int, int]] = []
    for c in chain_sel:
        ci = cluster.chain_names.index(c)
        for k in range(cluster.chains[c].levels, 0, -1):
            dk = int(total[:, ci, k].sum())
            if dk > 0 or extra == (c, k):
                entries.append((c, k, dk))
    cols_cell = [cluster.cells_at[(c, k)] for (c, k, _) in entries]
    sizes = np.array([a.size for a in cols_cell], dtype=np.int64)
    offs = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    ncol = int(offs[-1])
    cell_of_col = np.concatenate(cols_cell) if cols_cell else np.zeros(0, dtype=np.int64)
    labels = [cluster.address[i] for i in cell_of_col.tolist()]
    m = LinearModel("hived_mapping", sense="maximize" if extra is not None else "minimize")
    m.add_variables("assign", ncol, kind="binary", labels=labels)

    def who(c: str, k: int) -> str:
        ci = cluster.chain_names.index(c)
        parts = [f"{table.vc_names[v]}:{int(total[v, ci, k])}" for v in np.flatnonzero(total[:, ci, k])]
        return f"{c},{k} ({' '.join(parts)})"

    # demand[chain,level]: the cells of the level used as VC cells = the VCs' total demand there
    fixed = [i for i, e in enumerate(entries) if extra != (e[0], e[1])]
    if fixed:
        rows = np.repeat(np.arange(len(fixed)), sizes[fixed])
        cols = np.concatenate([np.arange(offs[i], offs[i + 1]) for i in fixed])
        A = sp.csr_matrix((np.ones(cols.size), (rows, cols)), shape=(len(fixed), ncol))
        rhs = np.array([entries[i][2] for i in fixed], dtype=float)
        m.add_constraints("demand", {"assign": A}, lower=rhs, upper=rhs,
                          labels=[who(entries[i][0], entries[i][1]) for i in fixed])
    # disjoint_path[cell]: one row per cell of the lowest demanded level of each chain
    prow: list[np.ndarray] = []
    pcol: list[np.ndarray] = []
    plabels: list[str] = []
    nrow = 0
    for c in chain_sel:
        idx = [i for i, e in enumerate(entries) if e[0] == c]
        if not idx:
            continue
        kmin = min(entries[i][1] for i in idx)
        base = cluster.cells_at[(c, kmin)]
        for i in idx:
            anc = cluster.ancestor[base, entries[i][1]]
            prow.append(nrow + np.arange(base.size))
            pcol.append(offs[i] + cluster.pos_in_level[anc])
        plabels.extend(cluster.address[q] for q in base.tolist())
        nrow += base.size
    if nrow:
        r = np.concatenate(prow)
        cc = np.concatenate(pcol)
        A = sp.csr_matrix((np.ones(r.size), (r, cc)), shape=(nrow, ncol))
        m.add_constraints("disjoint_path", {"assign": A}, upper=1.0, labels=plabels)
    # pinned[vc:id]
    entry_of = {(c, k): i for i, (c, k, _) in enumerate(entries)}
    pcl: list[int] = []
    plab: list[str] = []
    for v in range(len(table.vc_names)):
        for cell, pid in zip(table.pinned[v], table.pinned_ids[v]):
            c = cluster.chain_names[int(cluster.chain_index[cell])]
            k = int(cluster.level[cell])
            if c not in chain_sel or k < min_level:
                continue
            pcl.append(int(offs[entry_of[(c, k)]] + cluster.pos_in_level[cell]))
            plab.append(f"{table.vc_names[v]}:{pid}")
    if plab:
        A = sp.csr_matrix((np.ones(len(pcl)), (np.arange(len(pcl)), pcl)), shape=(len(plab), ncol))
        m.add_constraints("pinned", {"assign": A}, lower=1.0, upper=1.0, labels=plab)
    # bad_hardware[cell]
    badcols = np.flatnonzero(bad[cell_of_col]) if ncol else np.zeros(0, dtype=np.int64)
    if badcols.size:
        A = sp.csr_matrix((np.ones(badcols.size), (np.arange(badcols.size), badcols)), shape=(badcols.size, ncol))
        m.add_constraints("bad_hardware", {"assign": A}, upper=0.0, labels=[labels[j] for j in badcols.tolist()])
    if extra is not None:
        ie = entry_of[extra]
        cap = int(sizes[ie])
        m.add_variables("extra", 1, kind="integer", lower=0, upper=cap, labels=[f"{extra[0]},{extra[1]}"])
        A = sp.csr_matrix((np.ones(cap), (np.zeros(cap, dtype=np.int64), np.arange(offs[ie], offs[ie + 1]))),
                          shape=(1, ncol))
        d = float(entries[ie][2])
        m.add_constraints("new_vc_demand", {"assign": A, "extra": [[-1.0]]}, lower=d, upper=d,
                          labels=[f"{NEW_VC} + {who(*extra)}"])
        m.set_objective({"extra": [1.0]})
    else:
        m.set_objective(np.zeros(m.num_cols))
    m.build_seconds = time.perf_counter() - t0
    inverse = MappingInverse(cell_of_col, table, tuple(chain_sel), min_level, bad, extra)
    return ExactModel(m, inverse, Structure.GENERAL, "hived")


def decode_mapping(em: Formulation[MappingInverse], res: SolveResult, cluster: PhysicalCluster) -> dict[str, list[int]]:
    """VC name -> physical cells (from a solution): pinned cells to their owners, the other used cells of each
    (chain, level) handed out to the VCs in order of their counts (VCs of one level are interchangeable)."""
    inv = em.inverse
    x = res.values["assign"]
    used = inv.cell_of_col[x > 0.5]
    t = inv.table
    out: dict[str, list[int]] = {n: [] for n in t.vc_names}
    pinned_set: set[int] = set()
    for v, cells in enumerate(t.pinned):
        for c in cells:
            if cluster.chain_names[int(cluster.chain_index[c])] in inv.chains and int(cluster.level[c]) >= inv.min_level:
                out[t.vc_names[v]].append(int(c))
                pinned_set.add(int(c))
    pools: dict[tuple[int, int], list[int]] = {}
    for c in used.tolist():
        if c not in pinned_set:
            pools.setdefault((int(cluster.chain_index[c]), int(cluster.level[c])), []).append(c)
    for (ci, k), cells in pools.items():
        pos = 0
        for v, name in enumerate(t.vc_names):
            n_pin = sum(1 for c in t.pinned[v] if int(cluster.chain_index[c]) == ci and int(cluster.level[c]) == k)
            n = int(t.total[v, ci, k]) - n_pin
            out[name].extend(cells[pos : pos + n])
            pos += n
        if pos < len(cells):  # cells beyond the VCs' quota: the new VC of max_extra_quota
            out.setdefault(NEW_VC, []).extend(cells[pos:])
    return out


def check_mapping(
    cluster: PhysicalCluster,
    vcs: Sequence[VirtualCluster],
    mapping: dict[str, list[int]],
    *,
    bad_nodes: Iterable[str] = (),
    chains: Sequence[str] | None = None,
) -> list[Violation]:
    """Check a VC -> physical cells mapping without any model (plain numpy): one :class:`Violation` per problem
    (``[]`` when the mapping is valid)."""
    table = demand_table(cluster, vcs)
    problems: list[Violation] = []
    chain_sel = set(cluster.chain_names if chains is None else chains)
    cover = np.zeros(cluster.n_cells, dtype=np.int64)
    used = [c for cells in mapping.values() for c in cells]
    for c in used:
        cover[c : cluster.end[c]] += 1  # a cell's subtree
    used_set = set(used)
    for c in used:
        if cover[c] != 1:
            problems.append(Violation(f"cells[{cluster.address[c]}]", "overlaps another mapped cell"))
        a = int(cluster.parent[c])
        while a >= 0:
            if a in used_set:
                problems.append(Violation(f"cells[{cluster.address[c]}]", f"lies inside mapped cell {cluster.address[a]}"))
            a = int(cluster.parent[a])
    bad = cluster.bad_cell_mask(bad_nodes)
    for c in used:
        if bad[c]:
            problems.append(Violation(f"cells[{cluster.address[c]}]", "contains bad hardware"))
    for vi, name in enumerate(table.vc_names):
        got = np.zeros_like(table.total[vi])
        for c in mapping.get(name, []):
            got[int(cluster.chain_index[c]), int(cluster.level[c])] += 1
        for ci, cname in enumerate(cluster.chain_names):
            if cname in chain_sel and not np.array_equal(got[ci], table.total[vi, ci]):
                problems.append(Violation(f"vcs[{name}].chains[{cname}]", f"mapped {got[ci].tolist()} != quota {table.total[vi, ci].tolist()}"))
        for cell, pid in zip(table.pinned[vi], table.pinned_ids[vi]):
            if cluster.chain_names[int(cluster.chain_index[cell])] in chain_sel and cell not in mapping.get(name, []):
                problems.append(Violation(f"vcs[{name}].pinned[{pid}]", "pinned cell not mapped to it"))
    return problems


def assert_mapping(cluster: PhysicalCluster, vcs: Sequence[VirtualCluster], mapping: dict[str, list[int]], *,
                   bad_nodes: Iterable[str] = (), chains: Sequence[str] | None = None) -> None:
    """Raise :class:`~schedopt.problem.ViolationError` listing every problem :func:`check_mapping` finds."""
    assert_valid(check_mapping(cluster, vcs, mapping, bad_nodes=bad_nodes, chains=chains), "hived mapping")


def verify_mapping(cluster: PhysicalCluster, vcs: Sequence[VirtualCluster], mapping: dict[str, list[int]], *,
                   bad_nodes: Iterable[str] = (), chains: Sequence[str] | None = None) -> list[str]:
    """The problems of :func:`check_mapping` as text lines (``[]`` = ok); kept for earlier callers."""
    return [str(v) for v in check_mapping(cluster, vcs, mapping, bad_nodes=bad_nodes, chains=chains)]


def max_extra_quota(
    cluster: PhysicalCluster,
    vcs: Sequence[VirtualCluster],
    chain: str,
    level: int | str,
    *,
    bad_nodes: Iterable[str] = (),
    backend: str | None = "highs",
    time_limit: float | None = None,
) -> int:
    """The largest number of extra level-``level`` cells of ``chain`` a new VC could still get on top of ``vcs``.

    Maximises ``extra`` over the exact mapping model (bad nodes removed, pinned cells honoured). Raises
    :class:`~schedopt.errors.InfeasibleError` when the existing assignment is already invalid, and
    :class:`~schedopt.errors.SolveFailedError` when the solver stops before proving the optimum.
    """
    ch, lv = cluster.resolve_cell((chain, level), "level")
    em = build_exact_model(cluster, vcs, bad_nodes=bad_nodes, chains=[ch], extra=(ch, lv))
    res = solve(em.model, backend, time_limit=time_limit, mip_rel_gap=0.0)
    if res.termination.reason in (TerminationReason.INFEASIBLE, TerminationReason.INFEASIBLE_OR_UNBOUNDED):
        raise InfeasibleError(f"the VC assignment on chain {ch!r} is already invalid", res)
    res.raise_for_status()
    if not res.has_solution:  # pragma: no cover - raise_for_status covers it
        raise InputError("chain", chain, "no solution")
    return round(float(res.values["extra"][0]))
