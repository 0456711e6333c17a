"""Exact HeterPS solvers: a dynamic program over layers (``method="dp"``) and a MILP over enumerated
(stage, type, k) options solved by any schedopt backend (``method="milp"``). Both are proved in
``formulations/heterps.md``.

DP. Let ``tau`` be a time per B0 samples (throughput level ``B0 / tau``). For a level, every stage's minimal k is a
closed form (:func:`~schedopt.heterps.core.kmin`). The optimum's throughput equals some stage's ``B0 / tau_i(k_i)``
(its bottleneck), so the optimum is ``min over candidate levels tau_c of C0 * F(tau_c) * tau_c / B0`` where
``F(tau)`` is the cheapest ``sum price_t * units_t`` of a plan whose stages all run within ``tau`` under the type
limits. Candidates are all distinct ``tau(a, b, t, k) <= B0 / limit`` over stages [a, b), types t and k <= N_t.
``F`` is computed exactly by a DP over layer boundaries whose states keep the Pareto set of per-type unit vectors
(the type limits are handled exactly; dominated vectors can never lead to a cheaper or a feasible completion that
the dominating one cannot). The candidates are visited in increasing order of a lower bound (the same DP without the
cross-stage type limits, vectorised over all candidates at once) and the search stops when the bound reaches the
best actual cost found. The bounds themselves are computed lazily, block by block (:func:`_solve_dp`), so that a
short time limit still returns a plan and a proven bound.

MILP. Binary ``y[o]`` per option o = (stage [a, b), type t, k), a continuous ``theta`` (the pipeline throughput over
the limit), path-flow rows over layer boundaries, a type change at every internal boundary, the type limits, and
``theta <= throughput of the stage covering layer l`` for every layer. The objective ``C0 * sum price k / Theta`` is a
ratio; it is made linear exactly by Dinkelbach's method: solve ``min sum c y - lambda * Theta`` with lambda the
best ratio so far until the optimum is 0 (finitely many steps, each a MILP).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..errors import InfeasibleError, InputError, SolveFailedError
from ..model import LinearModel
from ..problem import Formulation, Structure
from ..results import Limit, SolveResult, Termination, TerminationReason, Timings
from .core import TAU_RTOL, HeterPSPlan, interval_sums, kmin, make_plan, max_throughput, stage_tau
from .spec import HeterPSProblem

__all__ = [
    "HeterPSInfeasibleError",
    "MilpOptions",
    "build",
    "build_milp",
    "candidate_levels",
    "decode_step",
    "diagnose_infeasibility",
    "set_dinkelbach_objective",
    "solve_exact",
]


class HeterPSInfeasibleError(InfeasibleError):
    """No plan meets the floor and the limits. ``family`` is ``"throughput_limit"`` (no plan reaches the floor even
    when every stage gets all units of its type) or ``"type_limit"`` (the floor is reachable stage by stage but the
    types' unit limits, shared across stages, cannot cover a plan)."""

    def __init__(self, message: str, family: str, best_throughput: float, best_plan: tuple[str, ...],
                 result: Any = None, explanation: Any = None) -> None:
        self.family = family
        self.best_throughput = best_throughput
        self.best_plan = best_plan
        super().__init__(message, result, explanation)


def diagnose_infeasibility(problem: HeterPSProblem) -> HeterPSInfeasibleError | None:
    """None when some plan is feasible for the throughput alone; otherwise the error to raise. Used after a solver
    found no plan: names ``throughput_limit`` or ``type_limit[...]``."""
    tp, plan = max_throughput(problem)
    lim = problem.throughput_limit
    if problem.base_batch / tp > problem.base_batch / lim * (1 + TAU_RTOL):
        return HeterPSInfeasibleError(
            f"infeasible: throughput_limit={lim:g} samples/s is out of reach: the best plan reaches {tp:.6g} samples/s "
            f"even with every stage given all units of its type (plan {list(plan)}); the serial fractions and "
            "type limits bound it",
            "throughput_limit", tp, plan,
        )
    limits = ", ".join(f"type_limit[{t.name}]={t.limit}" for t in problem.types)
    return HeterPSInfeasibleError(
        f"infeasible: throughput_limit={lim:g} samples/s is reachable stage by stage (up to {tp:.6g} with plan "
        f"{list(plan)}) but no plan reaches it within the unit limits shared by its stages ({limits})",
        "type_limit", tp, plan,
    )


# ============================================================================================ the DP
class _OutOfTime(Exception):
    """The DP's time limit passed (caught in :func:`_solve_dp`)."""


def _check_clock(t_end: float | None) -> None:
    if t_end is not None and time.perf_counter() >= t_end:
        raise _OutOfTime


def candidate_levels(problem: HeterPSProblem) -> np.ndarray:
    """Distinct stage times ``tau(a, b, t, k)`` (k <= N_t) meeting the floor, ascending: the candidate bottleneck
    levels (throughput ``B0 / tau``). At most ``L (L + 1) / 2 * sum_t N_t`` values."""
    return _candidate_levels(problem, None)


def _candidate_levels(problem: HeterPSProblem, t_end: float | None) -> np.ndarray:
    _, _, S, P, R, Q = interval_sums(problem)
    tau_lim = problem.base_batch / problem.throughput_limit * (1 + TAU_RTOL)
    out = []
    for t, N in enumerate(problem.limits):
        _check_clock(t_end)
        ks = np.arange(1, int(N) + 1, dtype=float)
        taus = stage_tau(S[:, t, None], P[:, t, None], R[:, t, None], Q[:, t, None], ks[None, :])
        out.append(taus[taus <= tau_lim])
    return np.unique(np.concatenate(out))


def _relaxed_bounds(problem: HeterPSProblem, taus: np.ndarray, chunk: int = 1024, t_end: float | None = None
                    ) -> np.ndarray:
    """``F_relax(tau)``: the cheapest ``price . units`` of a plan within ``tau`` when each stage only respects its
    own type's limit (the sharing across stages is dropped): a lower bound on ``F(tau)``, for all levels at once."""
    L, m = problem.num_layers, len(problem.types)
    ia, ib, S, P, R, Q = interval_sums(problem)
    N, price = problem.limits, problem.prices
    ends = [np.flatnonzero(ib == b) for b in range(L + 1)]
    out = np.empty(taus.size)
    for c0 in range(0, taus.size, chunk):
        _check_clock(t_end)
        tau = taus[c0 : c0 + chunk]
        K = kmin(S[None], P[None], R[None], Q[None], tau[:, None, None], N[None, None, :])  # (C, n_int, m)
        U = np.where(np.isfinite(K), K * price, np.inf)
        f = np.full((tau.size, L + 1, m + 1), np.inf)
        f[:, 0, m] = 0.0
        for b in range(1, L + 1):
            sel = ends[b]
            a = ia[sel]
            fa = f[:, a, :]  # (C, n_a, m+1)
            for t in range(m):
                g = np.delete(fa, t, axis=2).min(axis=2)
                f[:, b, t] = (g + U[:, sel, t]).min(axis=1)
        out[c0 : c0 + chunk] = f[:, L, :m].min(axis=1)
    return out


def _pareto(U: np.ndarray, back: np.ndarray, price: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Keep the non-dominated unit vectors (rows of U), cheapest first; ``back`` rides along."""
    if U.shape[0] <= 1:
        return U, back
    order = np.lexsort((*U.T[::-1], U @ price))
    U, back = U[order], back[order]
    _, first = np.unique(U, axis=0, return_index=True)
    keep = np.zeros(U.shape[0], bool)
    keep[first] = True
    U, back = U[keep], back[keep]
    le = np.asarray((U[None, :, :] <= U[:, None, :]).all(axis=2))  # le[i, j]: U_j <= U_i
    np.fill_diagonal(le, False)
    dominated = le.any(axis=1)
    return U[~dominated], back[~dominated]


def _dp_level(problem: HeterPSProblem, tau: float, idx: np.ndarray, ia: np.ndarray, ib: np.ndarray,
              sums: tuple[np.ndarray, ...], t_end: float | None = None
              ) -> tuple[list[tuple[int, int, int, int]], float] | None:
    """``F(tau)`` exactly with the type limits: DP over boundaries with Pareto sets of unit vectors per
    (boundary, type of the stage ending there). Returns the stages [(a, b, t, k)] and ``price . units``."""
    L, m = problem.num_layers, len(problem.types)
    N, price = problem.limits, problem.prices
    S, P, R, Q = sums
    K = kmin(S, P, R, Q, tau, N[None, :])  # (n_int, m)
    units: dict[tuple[int, int], np.ndarray] = {(0, m): np.zeros((1, m), np.int64)}
    backs: dict[tuple[int, int], np.ndarray] = {(0, m): np.zeros((1, 3), np.int64)}
    for b in range(1, L + 1):
        for t in range(m):
            _check_clock(t_end)
            parts_u, parts_b = [], []
            for a in range(b):
                k = K[idx[a, b], t]
                if not np.isfinite(k):
                    continue
                for tp in range(m + 1):
                    if tp == t or (a, tp) not in units:
                        continue
                    U = units[(a, tp)].copy()
                    U[:, t] += int(k)
                    ok = U[:, t] <= N[t]
                    if not ok.any():
                        continue
                    n = int(ok.sum())
                    parts_u.append(U[ok])
                    parts_b.append(np.column_stack([np.full(n, a), np.full(n, tp), np.flatnonzero(ok)]))
            if parts_u:
                units[(b, t)], backs[(b, t)] = _pareto(np.vstack(parts_u), np.vstack(parts_b), price)
    finals = [(float(units[(L, t)][0] @ price), t) for t in range(m) if (L, t) in units]
    if not finals:
        return None
    value, t = min(finals)
    stages: list[tuple[int, int, int, int]] = []
    b, row = L, 0
    while b > 0:
        a, tp, prow = (int(v) for v in backs[(b, t)][row])
        stages.append((a, b, t, int(K[idx[a, b], t])))
        b, t, row = a, tp, prow
    return stages[::-1], value


@dataclass
class _DpOutcome:
    """The DP's best plan (empty when none was found), whether it is proven optimal, and the proven lower bound on
    the cost (NaN when none is proven)."""

    plan: tuple[str, ...]
    k: tuple[int, ...]
    optimal: bool
    bound: float
    info: dict[str, Any]


def _blocks(n: int) -> np.ndarray:
    """Starts of the contiguous blocks the sorted candidate levels are cut into for the lazy bounds: about
    ``sqrt(n)`` blocks of about ``sqrt(n)`` levels (at least 32 per block), plus the end ``n``."""
    size = max(32, math.isqrt(max(n, 1)) + 1)
    return np.r_[np.arange(0, n, size), n].astype(np.int64)


class _DpSearch:
    """The state of one DP search: the problem's interval sums, the clock, and the best plan found so far."""

    def __init__(self, problem: HeterPSProblem, t_end: float | None) -> None:
        self.problem, self.t_end, self.t0 = problem, t_end, time.perf_counter()
        L = problem.num_layers
        self.ia, self.ib, S, P, R, Q = interval_sums(problem)
        self.sums = (S, P, R, Q)
        self.idx = np.full((L + 1, L + 1), -1, dtype=np.int64)
        self.idx[self.ia, self.ib] = np.arange(self.ia.size)
        self.best_cost = math.inf
        self.best: list[tuple[int, int, int, int]] | None = None
        self.examined = 0
        self.first_plan_seconds = math.nan

    def examine(self, tau: float) -> None:
        """Solve level ``tau`` exactly and keep its plan if it is the cheapest so far (at its actual bottleneck)."""
        got = _dp_level(self.problem, tau, self.idx, self.ia, self.ib, self.sums, self.t_end)
        self.examined += 1
        if got is None:
            return
        stages, _ = got
        S, P, R, Q = self.sums
        a, b, t = (np.array([s[i] for s in stages]) for i in range(3))
        k = np.array([s[3] for s in stages], dtype=float)
        sidx = self.idx[a, b]
        tau_act = float(stage_tau(S[sidx, t], P[sidx, t], R[sidx, t], Q[sidx, t], k).max())
        p = self.problem
        cost = p.sample_hours * float(p.prices[t] @ k) * tau_act / p.base_batch
        if cost < self.best_cost:
            if self.best is None:
                self.first_plan_seconds = time.perf_counter() - self.t0
            self.best_cost, self.best = cost, stages


def _solve_dp(problem: HeterPSProblem, time_limit: float | None = None) -> _DpOutcome:
    """The DP; with ``time_limit`` it checks the clock between levels (and inside the bounds and each level) and
    stops with the best plan so far and a proven bound.

    The relaxed bounds are computed lazily (issue 20: computing all of them first took most of a short budget, so
    a 0.05 s limit ended with no plan). The sorted levels are cut into blocks of about ``sqrt(#levels)``; since
    ``F_relax`` is non-increasing in ``tau``, every level of a block ``[s, e)`` has a cost bound of at least
    ``C0 * F_relax(tau[e-1]) * tau[s] / B0``, one relaxed DP per block. A best-first search pops the smallest bound:
    a block is refined into its levels' own bounds, a level is solved exactly; it stops when the smallest bound left
    reaches the best cost (optimal), or at the time limit, where that smallest bound is the proven bound. Before any
    bound, the slowest level allowed is solved exactly, so that a plan is at hand after one level."""
    import heapq

    t0 = time.perf_counter()
    t_end = None if time_limit is None else t0 + time_limit
    B0, C0 = problem.base_batch, problem.sample_hours
    run = _DpSearch(problem, t_end)
    refined = 0
    bound, timed_out, n_cand = math.nan, False, 0
    t_bounds = 0.0
    try:
        taus = _candidate_levels(problem, t_end)
        n_cand = int(taus.size)
        if n_cand:
            # an incumbent before any bound: the slowest level allowed needs the fewest units, so it is the level
            # most likely to hold a plan under the type limits (F is finite there whenever any level's is)
            run.examine(float(taus[-1]))
        starts = _blocks(n_cand)
        tb = time.perf_counter()
        last = taus[starts[1:] - 1] if n_cand else np.zeros(0)
        f_last = _relaxed_bounds(problem, last, t_end=t_end) if n_cand else np.zeros(0)
        t_bounds += time.perf_counter() - tb
        # heap items: (cost bound, 0 = block / 1 = level, index); a level before a block of the same bound
        heap: list[tuple[float, int, int]] = [(float(C0 * f_last[i] * taus[starts[i]] / B0), 0, i)
                                              for i in range(starts.size - 1)]
        heapq.heapify(heap)
        while heap:
            lbj, kind, j = heap[0]
            if not math.isfinite(lbj) or lbj >= run.best_cost * (1 - 1e-12):
                break
            bound = lbj  # every item left has a bound >= this one
            _check_clock(t_end)
            heapq.heappop(heap)
            if kind == 0:
                tb = time.perf_counter()
                members = np.arange(starts[j], starts[j + 1])
                lb = C0 * _relaxed_bounds(problem, taus[members], t_end=t_end) * taus[members] / B0
                t_bounds += time.perf_counter() - tb
                refined += 1
                for jj, v in zip(members.tolist(), lb.tolist()):
                    if math.isfinite(v) and v < run.best_cost * (1 - 1e-12):
                        heapq.heappush(heap, (max(v, lbj), 1, jj))
            elif j != n_cand - 1:  # the slowest level was solved first
                run.examine(float(taus[j]))
    except _OutOfTime:
        timed_out = True
    info = {"candidates": n_cand, "levels_examined": run.examined, "blocks_refined": refined,
            "bound_seconds": t_bounds, "first_plan_seconds": run.first_plan_seconds}
    best, best_cost = run.best, run.best_cost
    if best is None and not timed_out:
        err = diagnose_infeasibility(problem)
        assert err is not None
        raise err
    plan: list[str] = []
    for a_, b_, t_, _ in best or ():
        plan.extend([problem.type_names[t_]] * (b_ - a_))
    if timed_out and math.isfinite(bound):
        bound = min(bound, best_cost)
    return _DpOutcome(tuple(plan), tuple(s[3] for s in best or ()), not timed_out,
                      bound if timed_out else best_cost, info)


# ============================================================================================ the MILP
def _options(problem: HeterPSProblem) -> dict[str, np.ndarray]:
    """Enumerated options (stage [a, b), type t, k): every k up to N_t at which the stage still gets faster
    (a k at which neither CT nor DT improves is dominated by k - 1 and is not created) and meets the throughput
    floor on its own (a slower stage can never be part of a feasible plan and is not created either)."""
    ia, ib, S, P, R, Q = interval_sums(problem)
    tau_lim = problem.base_batch / problem.throughput_limit * (1 + TAU_RTOL)
    oa, ob, ot, ok, otau = [], [], [], [], []
    for t, N in enumerate(problem.limits):
        ks = np.arange(1, int(N) + 1, dtype=float)
        taus = stage_tau(S[:, t, None], P[:, t, None], R[:, t, None], Q[:, t, None], ks[None, :])
        keep = np.ones_like(taus, dtype=bool)
        keep[:, 1:] = taus[:, 1:] < taus[:, :-1] * (1 - TAU_RTOL)
        keep &= taus <= tau_lim
        s_i, k_i = np.nonzero(keep)
        oa.append(ia[s_i])
        ob.append(ib[s_i])
        ot.append(np.full(s_i.size, t))
        ok.append(k_i + 1)
        otau.append(taus[s_i, k_i])
    cat = np.concatenate
    return {"a": cat(oa), "b": cat(ob), "t": cat(ot), "k": cat(ok).astype(np.int64), "tau": cat(otau)}


@dataclass(frozen=True, eq=False)
class MilpOptions:
    """The typed inverse map of the HeterPS MILP: option ``o`` is stage ``[a[o], b[o])`` on type ``t[o]`` with
    ``k[o]`` units and time ``tau[o]`` per B0 samples; ``scale`` is the throughput floor (``theta`` is in its units)
    and ``theta_max`` the largest ``theta`` any option reaches."""

    a: np.ndarray
    b: np.ndarray
    t: np.ndarray
    k: np.ndarray
    tau: np.ndarray
    scale: float
    theta_max: float

    @property
    def size(self) -> int:
        return int(self.a.size)


def build(problem: HeterPSProblem, lam: float = 0.0) -> Formulation[MilpOptions]:
    """The MILP of the Dinkelbach step ``min sum_o price_t(o) k(o) y[o] - lam * Theta`` (Theta = limit * theta) with
    its typed inverse map (:class:`MilpOptions`).

    Blocks ``y`` (binary, one per option) and ``theta``; families ``path_flow`` (layer boundaries), ``type_change``
    (internal boundary x type), ``type_limit`` (type), ``stage_throughput_floor`` (layer), ``throughput_limit``.

    Examples
    --------
    >>> import schedopt
    >>> from schedopt import heterps
    >>> p = heterps.generate("ctrdnn", seed=0)
    >>> f = heterps.build(p)
    >>> f.model.name, list(f.model.blocks)
    ('heterps', ['y', 'theta'])
    >>> schedopt.solve(f, backend="highs").termination.reason.value
    'optimal'
    """
    if not isinstance(problem, HeterPSProblem):
        raise InputError("problem", type(problem).__name__, "must be a HeterPSProblem")
    t0 = time.perf_counter()
    L, m = problem.num_layers, len(problem.types)
    names = np.array([layer.name for layer in problem.layers], dtype=object)
    tnames = np.array(problem.type_names, dtype=object)
    o = _options(problem)
    a, b, t, k, tau = o["a"], o["b"], o["t"], o["k"], o["tau"]
    n = a.size
    scale = problem.throughput_limit
    tp = problem.base_batch / tau / scale
    cols = np.arange(n)
    model = LinearModel("heterps", sense="minimize")
    labels = (names[a] + ".." + names[b - 1] + ":" + tnames[t] + ":k=" + k.astype(str).astype(object)).tolist()
    model.add_variables("y", n, kind="binary", labels=labels)
    model.add_variables("theta", 1, lower=0.0, upper=float(tp.max()) if n else 0.0, labels=["throughput/limit"])
    # path over boundaries 0..L: out(p) - in(p) = [1 at 0, -1 at L, 0 between]
    A = sp.csr_matrix((np.r_[np.ones(n), -np.ones(n)], (np.r_[a, b], np.r_[cols, cols])), shape=(L + 1, n))
    rhs = np.zeros(L + 1)
    rhs[0], rhs[L] = 1.0, -1.0
    bnames = ["start"] + [f"{names[p - 1]}|{names[p]}" for p in range(1, L)] + ["end"]
    model.add_constraints("path_flow", {"y": A}, lower=rhs, upper=rhs, labels=bnames)
    # no two adjacent stages share a type (stages are maximal runs): at boundary p, type t ends + starts <= 1
    end_in = (b >= 1) & (b <= L - 1)
    start_in = (a >= 1) & (a <= L - 1)
    rows = np.r_[(b[end_in] - 1) * m + t[end_in], (a[start_in] - 1) * m + t[start_in]]
    A = sp.csr_matrix((np.ones(rows.size), (rows, np.r_[cols[end_in], cols[start_in]])), shape=((L - 1) * m, n))
    model.add_constraints("type_change", {"y": A}, upper=1.0,
                          labels=[f"{bnames[p]}:{tn}" for p in range(1, L) for tn in problem.type_names])
    A = sp.csr_matrix((k.astype(float), (t, cols)), shape=(m, n))
    model.add_constraints("type_limit", {"y": A}, upper=problem.limits.astype(float), labels=list(problem.type_names))
    # theta <= throughput of the stage covering layer l (exactly one stage covers each layer)
    length = b - a
    starts = np.repeat(np.cumsum(length) - length, length)
    lrow = np.repeat(a, length) + (np.arange(length.sum()) - starts)
    A = sp.csr_matrix((-np.repeat(tp, length), (lrow, np.repeat(cols, length))), shape=(L, n))
    model.add_constraints("stage_throughput_floor", {"y": A, "theta": np.ones((L, 1))}, upper=0.0,
                          labels=names.tolist())
    model.add_constraints("throughput_limit", {"theta": np.ones((1, 1))}, lower=1.0, labels=["floor"])
    theta_max = float((problem.base_batch / tau).max() / scale) if n else 0.0
    inverse = MilpOptions(a, b, t, k, tau, float(scale), theta_max)
    form = Formulation(model, inverse, Structure.GENERAL, "heterps")
    set_dinkelbach_objective(problem, form, lam)
    model.build_seconds = time.perf_counter() - t0
    return form


def build_milp(problem: HeterPSProblem, lam: float = 0.0) -> LinearModel:
    """The Dinkelbach step's :class:`~schedopt.LinearModel` (``build(problem, lam).model``)."""
    return build(problem, lam).model


def set_dinkelbach_objective(problem: HeterPSProblem, form: Formulation[MilpOptions], lam: float) -> None:
    """Set ``min sum_o price k y - lam * Theta`` (plus a constant that keeps it non-negative, so that a relative gap
    stays meaningful near the fixed point) on ``form.model``."""
    o = form.inverse
    cy = problem.prices[o.t] * o.k
    form.model.set_objective({"y": cy, "theta": [-lam * o.scale]}, constant=lam * o.scale * o.theta_max)


def decode_step(problem: HeterPSProblem, form: Formulation[MilpOptions], y: np.ndarray
                ) -> tuple[list[str], list[int], float, float]:
    """One Dinkelbach step's solution as (plan, units per stage, ``sum price k``, throughput)."""
    o = form.inverse
    sel = np.flatnonzero(y > 0.5)
    sel = sel[np.argsort(o.a[sel])]
    plan: list[str] = []
    for j in sel:
        plan.extend([problem.type_names[o.t[j]]] * int(o.b[j] - o.a[j]))
    units_cost = float((problem.prices[o.t[sel]] * o.k[sel]).sum())
    theta = float((problem.base_batch / o.tau[sel]).min())
    return plan, [int(x) for x in o.k[sel]], units_cost, theta


@dataclass
class _Dinkelbach:
    """The outcome of the Dinkelbach loop: the best plan, its termination and the last solve."""

    plan: tuple[str, ...]
    k: tuple[int, ...]
    termination: Termination
    last: SolveResult
    backend: str
    build_seconds: float
    info: dict[str, Any]


def _solve_milp(problem: HeterPSProblem, backend: str | None, time_limit: float | None, explain: bool,
                solve_kw: dict[str, Any] | None = None) -> _Dinkelbach:
    from .. import solve
    from ..infeasibility import explain_infeasibility

    if candidate_levels(problem).size == 0:  # no stage meets the floor at any k: no option exists
        err = diagnose_infeasibility(problem)
        assert err is not None
        raise err
    form = build(problem, 0.0)
    model = form.model
    t_end = None if time_limit is None else time.perf_counter() + time_limit
    lam = 0.0
    best: tuple[float, list[str], list[int]] | None = None
    history: list[dict[str, Any]] = []
    term = Termination(TerminationReason.OPTIMAL, detail="Dinkelbach fixed point")
    kw = {"mip_rel_gap": 1e-9, **(solve_kw or {})}
    for it in range(100):
        remaining = None if t_end is None else max(0.0, t_end - time.perf_counter())
        set_dinkelbach_objective(problem, form, lam)
        res = solve(model, backend, time_limit=remaining, **kw)
        reason = res.termination.reason
        if reason in (TerminationReason.INFEASIBLE, TerminationReason.INFEASIBLE_OR_UNBOUNDED):
            err = diagnose_infeasibility(problem)
            assert err is not None
            err.result = res
            if explain:
                err.explanation = explain_infeasibility(model)
            raise err
        if not res.has_solution:
            if best is None:
                raise SolveFailedError(f"heterps MILP ({res.backend}): {res.termination} before any plan", res)
            term = Termination(TerminationReason.FEASIBLE, res.termination.limit or Limit.OTHER,
                               f"Dinkelbach step {it} ended {res.termination}")
            break
        plan, k, ucost, theta = decode_step(problem, form, res.values["y"])
        ratio = ucost / theta
        history.append({"lambda": lam, "ratio": ratio, "termination": res.termination.reason.value,
                        "solve_seconds": res.timings.solve, "backend": res.backend})
        if best is None or ratio < best[0]:
            best = (ratio, plan, k)
        if reason is not TerminationReason.OPTIMAL:
            term = Termination(TerminationReason.FEASIBLE, res.termination.limit or Limit.OTHER,
                               f"Dinkelbach step {it} ended {res.termination}")
            break
        if it > 0 and ucost - lam * theta >= -1e-9 * max(ucost, 1e-300):
            break
        lam = best[0]
    else:
        term = Termination(TerminationReason.FEASIBLE, Limit.ITERATION, "100 Dinkelbach steps without a fixed point")
    assert best is not None
    info = {"dinkelbach": history, "options": form.inverse.size, "model": model}
    return _Dinkelbach(tuple(best[1]), tuple(best[2]), term, res, res.backend, float(model.build_seconds or 0.0),
                       info)


# ============================================================================================ entry point
def solve_exact(problem: HeterPSProblem, method: str = "dp", backend: str | None = None, *,
                time_limit: float | None = None, explain: bool = True, **solve_kw: Any) -> HeterPSPlan:
    """The cheapest plan meeting ``throughput >= throughput_limit`` and the type limits.

    ``method="dp"`` (pure numpy/Python) or ``"milp"`` (Dinkelbach over a MILP, ``backend`` any schedopt backend;
    ``solve_kw`` such as ``threads`` or ``seed`` go to :func:`schedopt.solve`). Raises
    :class:`HeterPSInfeasibleError` (an :class:`~schedopt.errors.InfeasibleError`) naming ``throughput_limit`` or
    ``type_limit`` when no plan exists. A MILP stopped by a limit returns the best plan found, FEASIBLE with that
    limit (not proven optimal)."""
    if not isinstance(problem, HeterPSProblem):
        raise InputError("problem", type(problem).__name__, "must be a HeterPSProblem")
    t0 = time.perf_counter()
    if time_limit is not None and (not isinstance(time_limit, (int, float)) or isinstance(time_limit, bool)
                                   or math.isnan(time_limit) or time_limit < 0):
        raise InputError("time_limit", time_limit, "must be a number >= 0 (seconds) or None")
    if method == "dp":
        dp = _solve_dp(problem, None if time_limit is None or math.isinf(time_limit) else float(time_limit))
        if dp.optimal:
            term = Termination(TerminationReason.OPTIMAL, detail="DP over levels")
        elif dp.plan:
            term = Termination(TerminationReason.FEASIBLE, Limit.TIME,
                               f"DP stopped by time_limit after {dp.info['levels_examined']} levels")
        else:
            seconds = time.perf_counter() - t0
            return HeterPSPlan(
                termination=Termination(TerminationReason.NO_SOLUTION_FOUND, Limit.TIME,
                                        f"DP stopped by time_limit after {dp.info['levels_examined']} levels, "
                                        "no plan yet"),
                bound=dp.bound, method="exact-dp", timings=Timings(solve=seconds), seconds=seconds, info=dp.info)
        return make_plan(problem, dp.plan, dp.k, "exact-dp", term, time.perf_counter() - t0, bound=dp.bound,
                         **dp.info)
    if method == "milp":
        d = _solve_milp(problem, backend, time_limit, explain, solve_kw)
        return make_plan(problem, d.plan, d.k, "exact-milp", d.termination, time.perf_counter() - t0,
                         backend=d.backend, result=d.last, build_seconds=d.build_seconds, **d.info)
    raise InputError("method", method, "must be 'dp' or 'milp'")
