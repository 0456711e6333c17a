"""Is a VC assignment valid? Two independent checks that must agree.

* ``method="counting"``: HiveD's level-by-level rule per chain, top down: ``left_L = avail_L - d_L``,
  ``avail_k = left_{k+1} * S_{k+1} (+ h_k)``, ``left_k = avail_k - d_k``; invalid as soon as some ``left_k < 0``
  (``d_k`` the VCs' level-k cells, pinned included). With bad nodes, ``h_k`` counts the maximal healthy level-k
  cells (healthy cells whose parent is bad), which keeps the rule exact for bad hardware (sizes are divisible).
  Pinned cells are only counted, so nested or badly placed pinned cells are beyond it.
* ``method="exact"``: the mapping model of :mod:`schedopt.hived.exact` solved by a backend.

Both report the **chain** (first invalid chain in cluster order), the **level** (the highest level ``k`` such that
the demand at levels ``>= k`` alone is already infeasible; for counting the first negative ``left`` top down) and
the **VC** (the first VC, in the given order, whose quota added to those before it makes the chain infeasible).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..errors import InputError
from ..results import SolveResult, TerminationReason
from ..solve import solve
from .cells import PhysicalCluster
from .exact import build_exact_model, decode_mapping, verify_mapping
from .vc import DemandTable, VirtualCluster, demand_table

__all__ = ["CheckReport", "check_vc_assignment", "counting_table"]


@dataclass
class CheckReport:
    """Verdict of a validity check. ``valid`` is ``None`` only when a solver stopped before deciding."""

    valid: bool | None
    method: str
    chain: str | None = None
    level: int | None = None
    cell_type: str | None = None
    vc: str | None = None
    cause: str = ""  #: "quota", "bad_hardware" or "pinned" when invalid
    message: str = ""
    left: dict[str, list[int]] = field(default_factory=dict)  #: counting: left per level, index = level
    mapping: dict[str, list[str]] = field(default_factory=dict)  #: exact: VC -> physical cell addresses
    results: list[SolveResult] = field(default_factory=list)
    seconds: float = 0.0

    def __bool__(self) -> bool:
        return bool(self.valid)

    def __str__(self) -> str:
        if self.valid:
            return f"valid ({self.method})"
        if self.valid is None:
            return f"undecided ({self.method}): {self.message}"
        return f"invalid ({self.method}): {self.message}"


def counting_table(
    cluster: PhysicalCluster, total: np.ndarray, ci: int, bad: np.ndarray | None = None
) -> list[int | None]:
    """``left[k]`` of the counting rule for chain ``ci`` (``total[k]`` the demand per level); entries below the
    first negative level are ``None``."""
    chain = cluster.chains[cluster.chain_names[ci]]
    L = chain.levels
    left: list[int | None] = [None] * (L + 1)
    carry = 0
    for k in range(L, 0, -1):
        cells = cluster.cells_at[(chain.name, k)]
        if bad is None:
            h = cells.size if k == L else 0
        else:
            healthy = ~bad[cells]
            par = cluster.parent[cells]
            top_or_bad_parent = (par < 0) | bad[np.maximum(par, 0)]
            h = int(np.count_nonzero(healthy & top_or_bad_parent))
        avail = carry * (chain.child_count[k + 1] if k < L else 0) + h
        left[k] = int(avail - total[k])
        if left[k] < 0:  # type: ignore[operator]
            break
        carry = left[k]
    return left


def _counting_ok(cluster: PhysicalCluster, total: np.ndarray, ci: int, bad: np.ndarray | None) -> tuple[bool, int | None]:
    left = counting_table(cluster, total, ci, bad)
    for k in range(len(left) - 1, 0, -1):
        if left[k] is not None and left[k] < 0:  # type: ignore[operator]
            return False, k
    return True, None


def _sub_table(table: DemandTable, upto: int) -> DemandTable:
    return DemandTable(table.vc_names[:upto], table.chain_names, table.total[:upto], table.pinned[:upto],
                       table.pinned_ids[:upto])


def check_vc_assignment(
    cluster: PhysicalCluster,
    vcs: Sequence[VirtualCluster],
    method: str = "counting",
    backend: str | None = "highs",
    *,
    bad_nodes: Iterable[str] = (),
    time_limit: float | None = None,
) -> CheckReport:
    """Check that all VCs' cells can be mapped one-to-one onto disjoint physical cells of the same level.

    ``method``: ``"counting"`` (HiveD's rule) or ``"exact"`` (the mapping model, solved by ``backend``).
    ``bad_nodes``: node names whose hardware has failed (their cells and every cell containing them are unusable).
    """
    t0 = time.perf_counter()
    if method not in ("counting", "exact"):
        raise InputError("method", method, "must be 'counting' or 'exact'")
    bad_nodes = list(bad_nodes)
    for b in bad_nodes:
        cluster.node_cells_of(b)
    table = demand_table(cluster, vcs)
    bad = cluster.bad_cell_mask(bad_nodes) if bad_nodes else None
    if method == "counting":
        rep = _check_counting(cluster, table, bad)
    else:
        rep = _check_exact(cluster, vcs, table, bad_nodes, backend, time_limit)
    rep.seconds = time.perf_counter() - t0
    return rep


def _describe(cluster: PhysicalCluster, rep: CheckReport) -> None:
    if rep.chain is not None and rep.level is not None:
        rep.cell_type = cluster.chains[rep.chain].types[rep.level]


def _check_counting(cluster: PhysicalCluster, table: DemandTable, bad: np.ndarray | None) -> CheckReport:
    rep = CheckReport(valid=True, method="counting")
    for ci, cname in enumerate(cluster.chain_names):
        left = counting_table(cluster, table.chain_total(ci), ci, bad)
        rep.left[cname] = [v if v is not None else 0 for v in left]
        if rep.valid:
            ok, k = _counting_ok(cluster, table.chain_total(ci), ci, bad)
            if not ok:
                rep.valid = False
                rep.chain, rep.level = cname, k
                for i in range(1, len(table.vc_names) + 1):
                    if not _counting_ok(cluster, table.total[:i, ci, :].sum(axis=0), ci, bad)[0]:
                        rep.vc = table.vc_names[i - 1]
                        break
                rep.cause = "quota"
                if bad is not None and _counting_ok(cluster, table.chain_total(ci), ci, None)[0]:
                    rep.cause = "bad_hardware"
    _describe(cluster, rep)
    if not rep.valid:
        rep.message = (
            f"chain {rep.chain!r} level {rep.level} ({rep.cell_type}): left = {rep.left[rep.chain][rep.level]} < 0; "  # type: ignore[index]
            f"VC {rep.vc!r} is the first whose quota does not fit" + (" (bad hardware)" if rep.cause == "bad_hardware" else "")
        )
    return rep


def _feasible(cluster: PhysicalCluster, table: DemandTable, chain: str, bad_nodes: list[str], backend: str | None,
              time_limit: float | None, rep: CheckReport, min_level: int = 1, drop: Sequence[str] = ()) -> bool | None:
    if not table.total[:, cluster.chain_names.index(chain), min_level:].any():
        return True
    em = build_exact_model(cluster, table, bad_nodes=bad_nodes, chains=[chain], min_level=min_level)
    model = em.model
    drop = [f for f in drop if f in model.families]
    if drop:
        model = model.without_families(drop)
    res = solve(model, backend, time_limit=time_limit)
    rep.results.append(res)
    r = res.termination.reason
    if r is TerminationReason.OPTIMAL or r is TerminationReason.FEASIBLE:
        if min_level == 1 and not drop:
            mp = decode_mapping(em, res, cluster)
            rep.mapping.update({v: rep.mapping.get(v, []) + [cluster.address[c] for c in cells] for v, cells in mp.items() if cells})
        return True
    if r in (TerminationReason.INFEASIBLE, TerminationReason.INFEASIBLE_OR_UNBOUNDED):
        return False
    rep.message = f"chain {chain!r}: the {res.backend} solve ended {res.termination}"
    return None


def _check_exact(cluster: PhysicalCluster, vcs: Sequence[VirtualCluster], table: DemandTable, bad_nodes: list[str],
                 backend: str | None, time_limit: float | None) -> CheckReport:
    rep = CheckReport(valid=True, method="exact")
    for cname in cluster.chain_names:
        ok = _feasible(cluster, table, cname, bad_nodes, backend, time_limit, rep)
        if ok is None:
            rep.valid = None
            rep.chain = cname
            return rep
        if ok:
            continue
        rep.valid = False
        rep.chain = cname
        chain = cluster.chains[cname]
        for k in range(chain.levels, 0, -1):
            if k == 1 or _feasible(cluster, table, cname, bad_nodes, backend, time_limit, rep, min_level=k) is False:
                rep.level = k
                break
        lo, hi = 1, len(table.vc_names)  # smallest prefix length that is infeasible lies in [lo, hi]
        while lo < hi:
            mid = (lo + hi) // 2
            if _feasible(cluster, _sub_table(table, mid), cname, bad_nodes, backend, time_limit, rep) is False:
                hi = mid
            else:
                lo = mid + 1
        rep.vc = table.vc_names[lo - 1]
        rep.cause = "quota"
        if bad_nodes and _feasible(cluster, table, cname, bad_nodes, backend, time_limit, rep, drop=["bad_hardware"]):
            rep.cause = "bad_hardware"
        elif any(table.pinned) and _feasible(cluster, table, cname, bad_nodes, backend, time_limit, rep, drop=["pinned"]):
            rep.cause = "pinned"
        _describe(cluster, rep)
        rep.message = (
            f"chain {cname!r} level {rep.level} ({rep.cell_type}): the VC cells at levels >= {rep.level} cannot be "
            f"mapped onto disjoint physical cells; VC {rep.vc!r} is the first whose quota does not fit"
            + {"bad_hardware": " (bad hardware)", "pinned": " (pinned cells)"}.get(rep.cause, "")
        )
        rep.mapping = {}
        return rep
    if rep.valid:
        problems = verify_mapping(cluster, vcs, {v: [cluster.by_address[a] for a in cells] for v, cells in rep.mapping.items()},
                                  bad_nodes=bad_nodes)
        if problems:  # the solver's answer fails the model-free checker: never report it as valid
            rep.valid = None
            rep.message = "solver mapping failed verification: " + "; ".join(problems[:3])
    return rep
