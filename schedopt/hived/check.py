"""Is a VC assignment valid? Two independent checks that must agree.

* ``method="counting"``: HiveD's level-by-level rule per chain, top down: ``left_L = h_L - d_L``,
  ``left_k = left_{k+1} * S_{k+1} + h_k - d_k``; invalid as soon as some ``left_k < 0``. ``h_k`` counts the
  *maximal usable* level-k cells: cells that are neither bad, nor inside or above a pinned cell, whose parent is
  absent or unusable. Pinned cells are placed first (they are fixed), ``d_k`` is the remaining (non-pinned) demand.
  Treating pinned cells like failed hardware makes the rule exact for them too (sizes along a chain divide each
  other, so the free forest is filled greedily top down without stranding capacity); two pinned cells nested in
  each other, or a pinned cell on bad hardware, are invalid outright. The rule never answers a wrong "valid":
  ``tests/test_hived.py::test_counting_never_wrong_on_pinned_cells`` checks it against the exact model.
* ``method="exact"``: the mapping model of :mod:`schedopt.hived.exact` solved by a backend.

Both return a :class:`CheckReport` (an :class:`~schedopt.problem.Answer`): ``termination`` is OPTIMAL when the
verdict "valid" is proven (a mapping found and verified, or the exact counting rule), INFEASIBLE when "invalid" is
proven, and the solver's own termination (a limit, an error) when undecided; ``valid`` reads it as True / False /
None. Both name the **chain** (first invalid chain in cluster order), the **level** (the highest level ``k`` such that
the demand at levels ``>= k`` alone is already infeasible) and the **VC** (the first VC, in the given order, whose
quota added to those before it makes the chain infeasible).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import InputError
from ..problem import Answer
from ..results import SolveResult, Termination, TerminationReason, Timings
from ..solve import solve
from .cells import PhysicalCluster
from .exact import build_exact_model, check_mapping, decode_mapping
from .vc import DemandTable, VirtualCluster, demand_table

__all__ = ["CheckReport", "check_vc_assignment", "counting_table"]

METHODS = ("counting", "exact")
_VALID = TerminationReason.OPTIMAL
_INVALID = TerminationReason.INFEASIBLE


@dataclass(kw_only=True, eq=False)
class CheckReport(Answer):
    """Verdict of a validity check (an :class:`~schedopt.problem.Answer`).

    ``valid`` is read from ``termination``: True when proven valid (OPTIMAL), False when proven invalid
    (INFEASIBLE), ``None`` when a solver stopped before deciding (its termination is kept). ``bool(report)`` is
    ``valid is True``.
    """

    chain: str | None = None
    level: int | None = None
    cell_type: str | None = None
    vc: str | None = None
    cause: str = ""  #: "quota", "bad_hardware" or "pinned" when invalid
    message: str = ""
    left: dict[str, list[int]] = field(default_factory=dict)  #: counting: left per level, index = level
    mapping: dict[str, list[str]] = field(default_factory=dict)  #: exact: VC -> physical cell addresses
    results: list[SolveResult] = field(default_factory=list)

    @property
    def valid(self) -> bool | None:
        r = self.termination.reason
        if r is _VALID:
            return True
        if r is _INVALID:
            return False
        return None

    @property
    def seconds(self) -> float:
        return self.timings.total

    def __bool__(self) -> bool:
        return self.valid is True

    def __str__(self) -> str:
        if self.valid:
            return f"valid ({self.method})"
        if self.valid is None:
            return f"undecided ({self.method}): {self.message}"
        return f"invalid ({self.method}): {self.message}"

    def rows(self) -> list[dict[str, Any]]:
        return [{"vc": vc, "cell": a} for vc, cells in self.mapping.items() for a in cells]

    def to_dict(self) -> dict[str, Any]:
        d = super().to_dict()
        d.update({"valid": self.valid, "chain": self.chain, "level": self.level, "cell_type": self.cell_type,
                  "vc": self.vc, "cause": self.cause or None, "message": self.message,
                  "left": {k: list(v) for k, v in self.left.items()},
                  "mapping": {k: list(v) for k, v in self.mapping.items()}})
        return d


# ------------------------------------------------------------------------------------------------ counting
def _usable_roots(cluster: PhysicalCluster, blocked: np.ndarray, cells: np.ndarray) -> int:
    """How many of ``cells`` are maximal usable cells: not blocked, parent absent or blocked."""
    par = cluster.parent[cells]
    return int(np.count_nonzero(~blocked[cells] & ((par < 0) | blocked[np.maximum(par, 0)])))


def _left_table(cluster: PhysicalCluster, total: np.ndarray, ci: int, blocked: np.ndarray | None) -> list[int | None]:
    chain = cluster.chains[cluster.chain_names[ci]]
    L = chain.levels
    left: list[int | None] = [None] * (L + 1)
    carry = 0
    for k in range(L, 0, -1):
        cells = cluster.cells_at[(chain.name, k)]
        h = (cells.size if k == L else 0) if blocked is None else _usable_roots(cluster, blocked, cells)
        avail = carry * (chain.child_count[k + 1] if k < L else 0) + h
        lk = int(avail - total[k])
        left[k] = lk
        if lk < 0:
            break
        carry = lk
    return left


def counting_table(
    cluster: PhysicalCluster, total: np.ndarray, ci: int, bad: np.ndarray | None = None
) -> list[int | None]:
    """``left[k]`` of the counting rule for chain ``ci`` (``total[k]`` the demand per level, pinned cells counted as
    ordinary demand; ``bad`` the mask of unusable cells); entries below the first negative level are ``None``."""
    return _left_table(cluster, total, ci, bad)


@dataclass(frozen=True)
class _Counting:
    ok: bool
    left: list[int | None]
    why: str = ""  #: "pinned" when pinned cells overlap or lie on bad hardware


def _counting(cluster: PhysicalCluster, table: DemandTable, ci: int, bad: np.ndarray | None, *, upto: int | None = None,
              min_level: int = 1, pinned_exact: bool = True) -> _Counting:
    """The counting rule on chain ``ci`` for the first ``upto`` VCs and the demand at levels ``>= min_level``;
    with ``pinned_exact`` the pinned cells are placed first and block their subtrees and ancestors."""
    upto = len(table.vc_names) if upto is None else upto
    total = table.total[:upto, ci, :].sum(axis=0).copy()
    total[:min_level] = 0
    pins = [int(c) for v in range(upto) for c in table.pinned[v]
            if int(cluster.chain_index[c]) == ci and int(cluster.level[c]) >= min_level]
    if not pinned_exact or not pins:
        return _Counting(True, _left_table(cluster, total, ci, bad))
    blocked = np.zeros(cluster.n_cells, dtype=bool) if bad is None else bad.copy()
    cover = np.zeros(cluster.n_cells, dtype=np.int64)
    for p in pins:
        cover[p : cluster.end[p]] += 1
    pin_arr = np.asarray(pins, dtype=np.int64)
    if (cover[pin_arr] > 1).any() or blocked[pin_arr].any():  # nested / shared pinned cells, or on bad hardware
        return _Counting(False, [None] * (cluster.chains[cluster.chain_names[ci]].levels + 1), "pinned")
    for p in pins:
        blocked[p : cluster.end[p]] = True
        anc = cluster.ancestor[p, int(cluster.level[p]) + 1 :]
        blocked[anc[anc >= 0]] = True
        total[int(cluster.level[p])] -= 1
    return _Counting(True, _left_table(cluster, total, ci, blocked))


def _counting_ok(c: _Counting) -> bool:
    return c.ok and all(v is None or v >= 0 for v in c.left[1:])


def _first_negative(c: _Counting) -> int | None:
    for k in range(len(c.left) - 1, 0, -1):
        v = c.left[k]
        if v is not None and v < 0:
            return k
    return None


def _check_counting(cluster: PhysicalCluster, table: DemandTable, bad: np.ndarray | None) -> CheckReport:
    left: dict[str, list[int]] = {}
    fault: tuple[str, int, str, str] | None = None  # chain, level, vc, cause
    for ci, cname in enumerate(cluster.chain_names):
        full = _counting(cluster, table, ci, bad)
        left[cname] = [v if v is not None else 0 for v in full.left]
        if fault is not None or _counting_ok(full):
            continue
        L = cluster.chains[cname].levels
        level = next(k for k in range(L, 0, -1) if k == 1 or not _counting_ok(_counting(cluster, table, ci, bad, min_level=k)))
        vc = next(table.vc_names[i - 1] for i in range(1, len(table.vc_names) + 1)
                  if not _counting_ok(_counting(cluster, table, ci, bad, upto=i)))
        cause = "quota"
        if bad is not None and _counting_ok(_counting(cluster, table, ci, None)):
            cause = "bad_hardware"
        elif any(table.pinned) and _counting_ok(_counting(cluster, table, ci, bad, pinned_exact=False)):
            cause = "pinned"
        fault = (cname, level, vc, cause)
    if fault is None:
        return CheckReport(termination=Termination(_VALID, None, "counting rule: every left_k >= 0 (exact)"),
                           method="counting", left=left)
    cname, level, vc, cause = fault
    ct = cluster.chains[cname].types[level]
    neg = _first_negative(_counting(cluster, table, cluster.chain_names.index(cname), bad))
    detail = (f"left = {left[cname][neg]} < 0" if neg is not None else "pinned cells overlap or lie on bad hardware")
    msg = (f"chain {cname!r} level {level} ({ct}): {detail}; VC {vc!r} is the first whose quota does not fit"
           + {"bad_hardware": " (bad hardware)", "pinned": " (pinned cells)"}.get(cause, ""))
    return CheckReport(termination=Termination(_INVALID, None, msg), method="counting", chain=cname, level=level,
                       cell_type=ct, vc=vc, cause=cause, message=msg, left=left)


# ------------------------------------------------------------------------------------------------ exact
def _sub_table(table: DemandTable, upto: int) -> DemandTable:
    return DemandTable(table.vc_names[:upto], table.chain_names, table.total[:upto], table.pinned[:upto],
                       table.pinned_ids[:upto])


@dataclass
class _ExactRun:
    backend: str | None
    time_limit: float | None
    bad_nodes: list[str]
    results: list[SolveResult] = field(default_factory=list)
    mapping: dict[str, list[str]] = field(default_factory=dict)
    stopped: Termination | None = None
    message: str = ""


def _feasible(cluster: PhysicalCluster, table: DemandTable, chain: str, run: _ExactRun, min_level: int = 1,
              drop: Sequence[str] = ()) -> bool | None:
    if not table.total[:, cluster.chain_names.index(chain), min_level:].any():
        return True
    form = build_exact_model(cluster, table, bad_nodes=run.bad_nodes, chains=[chain], min_level=min_level)
    model = form.model
    drop = [f for f in drop if f in model.families]
    if drop:
        model = model.without_families(drop)
    res = solve(model, run.backend, time_limit=run.time_limit)
    run.results.append(res)
    r = res.termination.reason
    if r is TerminationReason.OPTIMAL or r is TerminationReason.FEASIBLE:
        if min_level == 1 and not drop:
            mp = decode_mapping(form, res, cluster)
            for v, cells in mp.items():
                if cells:
                    run.mapping.setdefault(v, []).extend(cluster.address[c] for c in cells)
        return True
    if r in (TerminationReason.INFEASIBLE, TerminationReason.INFEASIBLE_OR_UNBOUNDED):
        return False
    run.stopped = res.termination
    run.message = f"chain {chain!r}: the {res.backend} solve ended {res.termination}"
    return None


def _check_exact(cluster: PhysicalCluster, vcs: Sequence[VirtualCluster], table: DemandTable, run: _ExactRun) -> CheckReport:
    common: dict[str, Any] = {"method": "exact", "backend": run.backend or "", "results": run.results}
    for cname in cluster.chain_names:
        ok = _feasible(cluster, table, cname, run)
        if ok is None:
            return CheckReport(termination=run.stopped, chain=cname, message=run.message, **common)  # type: ignore[arg-type]
        if ok:
            continue
        chain = cluster.chains[cname]
        level = 1
        for k in range(chain.levels, 0, -1):
            if k == 1 or _feasible(cluster, table, cname, run, min_level=k) is False:
                level = k
                break
        lo, hi = 1, len(table.vc_names)  # smallest prefix length that is infeasible lies in [lo, hi]
        while lo < hi:
            mid = (lo + hi) // 2
            if _feasible(cluster, _sub_table(table, mid), cname, run) is False:
                hi = mid
            else:
                lo = mid + 1
        vc = table.vc_names[lo - 1]
        cause = "quota"
        if run.bad_nodes and _feasible(cluster, table, cname, run, drop=["bad_hardware"]):
            cause = "bad_hardware"
        elif any(table.pinned) and _feasible(cluster, table, cname, run, drop=["pinned"]):
            cause = "pinned"
        ct = chain.types[level]
        msg = (f"chain {cname!r} level {level} ({ct}): the VC cells at levels >= {level} cannot be "
               f"mapped onto disjoint physical cells; VC {vc!r} is the first whose quota does not fit"
               + {"bad_hardware": " (bad hardware)", "pinned": " (pinned cells)"}.get(cause, ""))
        return CheckReport(termination=Termination(_INVALID, None, msg), chain=cname, level=level, cell_type=ct, vc=vc,
                           cause=cause, message=msg, **common)
    mapping = run.mapping
    problems = check_mapping(cluster, vcs, {v: [cluster.by_address[a] for a in cells] for v, cells in mapping.items()},
                             bad_nodes=run.bad_nodes)
    if problems:  # the solver's answer fails the model-free checker: never report it as valid
        msg = "solver mapping failed verification: " + "; ".join(str(p) for p in problems[:3])
        return CheckReport(termination=Termination(TerminationReason.ERROR, None, msg), message=msg, **common)
    return CheckReport(termination=Termination(_VALID, None, "a mapping was found and verified without the model"),
                       mapping=mapping, **common)


# ------------------------------------------------------------------------------------------------ entry point
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

    ``method``: ``"counting"`` (HiveD's rule, exact here also for pinned cells) or ``"exact"`` (the mapping model,
    solved by ``backend``). ``bad_nodes``: node names whose hardware has failed (their cells and every cell containing
    them are unusable).
    """
    t0 = time.perf_counter()
    if method not in METHODS:
        raise InputError("method", method, f"must be one of {list(METHODS)}")
    bad_nodes = list(bad_nodes)
    for i, b in enumerate(bad_nodes):
        if not isinstance(b, str) or b not in cluster.node_names:
            raise InputError(f"bad_nodes[{i}]", b, "names no node")
    table = demand_table(cluster, vcs)
    if method == "counting":
        bad = cluster.bad_cell_mask(bad_nodes) if bad_nodes else None
        rep = _check_counting(cluster, table, bad)
    else:
        rep = _check_exact(cluster, vcs, table, _ExactRun(backend, time_limit, bad_nodes))
    seconds = time.perf_counter() - t0
    rep.timings = Timings(build=0.0, solve=seconds) if method == "counting" else Timings(
        build=0.0, solve=sum(r.timings.solve for r in rep.results), decode=max(0.0, seconds - sum(r.timings.solve for r in rep.results)))
    if rep.results:
        rep.result = rep.results[-1]
    return rep
