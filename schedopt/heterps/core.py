"""Array helpers shared by the solvers: interval (stage) sums, minimal unit counts in closed form, the exact
provisioning of one plan, the paper's balancing rule and the plan record every solver returns.

Notation (per layer l and type t): S = OCT (1 - alpha) and P = OCT alpha (serial / parallel compute seconds per
iteration at B0 on one unit), R = ODT (1 - beta) and Q = ODT beta (communication). A stage's sums add up, and with
k units its time per B0 samples is ``tau(k) = max(S + P / k, R + Q / k)``; its throughput is ``B0 / tau(k)`` (the
batch size B cancels: ``B / ((B / B0) tau)``).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..problem import Answer, heuristic_termination
from ..results import Limit, SolveResult, Termination, TerminationReason, Timings
from .cost import evaluate, stages_of
from .spec import HeterPSProblem

__all__ = [
    "NO_PLAN_FOUND",
    "HeterPSPlan",
    "balance_units",
    "k1_lower_bound",
    "kmin",
    "make_plan",
    "max_throughput",
    "provision",
    "provision_paper",
]

TAU_RTOL = 1e-12


@dataclass(eq=False)
class HeterPSPlan(Answer):
    """A schedule: ``plan`` (type per layer), ``k`` (units per stage), ``stages`` ((first, stop, type) per stage),
    its ``throughput`` (samples/s), ``time_hours``, ``cost`` ($), ``feasible`` (the cost model's verdict on the plan);
    ``seconds`` and ``info`` (solver figures).

    An :class:`~schedopt.problem.Answer`: ``termination`` is OPTIMAL for the exact solvers (DP, MILP to optimality,
    brute force), FEASIBLE with the limit hit for a MILP stopped early, FEASIBLE with :attr:`~schedopt.Limit.HEURISTIC`
    for the heuristics, NO_SOLUTION_FOUND (heuristic limit) when a heuristic found no feasible plan, INFEASIBLE when
    no plan exists (``explanation`` then names ``throughput_limit`` or ``type_limit``). ``objective`` is the cost;
    ``status`` is the :class:`~schedopt.TerminationReason` (a string enum: ``plan.status == "optimal"`` holds)."""

    plan: tuple[str, ...] = ()
    k: tuple[int, ...] = ()
    stages: tuple[tuple[int, int, str], ...] = ()
    throughput: float = math.nan
    cost: float = math.nan
    time_hours: float = math.nan
    feasible: bool = False
    seconds: float = 0.0
    info: dict[str, Any] = field(default_factory=dict)
    explanation: str = ""  #: for an infeasible answer: which constraint group blocks every plan

    @property
    def units(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for (_, _, t), k in zip(self.stages, self.k):
            out[t] = out.get(t, 0) + k
        return out

    def rows(self) -> list[dict[str, Any]]:
        """One row per stage: its layers, type and units."""
        return [{"stage": s, "first": a, "stop": b, "type": t, "units": k}
                for s, ((a, b, t), k) in enumerate(zip(self.stages, self.k))]

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        held = self.has_solution
        out.update(
            plan=list(self.plan) if held else None,
            stages=[{"first": a, "stop": b, "type": t, "units": k} for (a, b, t), k in zip(self.stages, self.k)]
            if held else [],
            units=self.units if held else {},
            throughput=_finite(self.throughput) if held else None,
            cost=_finite(self.cost) if held else None,
            time_hours=_finite(self.time_hours) if held else None,
            feasible=bool(self.feasible) if held else False,
            explanation=self.explanation or None,
        )
        return out


def _finite(v: float) -> float | None:
    return float(v) if math.isfinite(v) else None


def make_plan(
    problem: HeterPSProblem, plan: Sequence[str], k: Sequence[int], method: str, termination: Termination,
    seconds: float = 0.0, *, bound: float = math.nan, backend: str = "", result: SolveResult | None = None,
    build_seconds: float = math.nan, **info: Any,
) -> HeterPSPlan:
    """A :class:`HeterPSPlan` whose figures come from :func:`~schedopt.heterps.evaluate`."""
    if isinstance(termination, str):  # the old status strings (before the Answer contract)
        warnings.warn("make_plan(..., status: str) is deprecated: pass a schedopt.Termination",
                      DeprecationWarning, stacklevel=2)
        termination = _STATUS.get(termination, heuristic_termination(termination))
    plan = tuple(plan)
    k = tuple(int(x) for x in k)
    ev = evaluate(problem, plan, k)
    held = termination.reason in (TerminationReason.OPTIMAL, TerminationReason.FEASIBLE)
    if termination.reason is TerminationReason.OPTIMAL:
        bound = ev.cost
    solve_s = seconds - (0.0 if math.isnan(build_seconds) else build_seconds)
    return HeterPSPlan(
        termination=termination, objective_value=ev.cost if held else math.nan, bound=bound, backend=backend,
        method=method, timings=Timings(build=build_seconds, solve=max(solve_s, 0.0)), result=result,
        plan=plan, k=k, stages=tuple(stages_of(plan)), throughput=ev.throughput, cost=ev.cost,
        time_hours=ev.time_hours, feasible=ev.feasible, seconds=seconds, info=dict(info, violations=ev.violations),
    )


_STATUS = {
    "optimal": Termination(TerminationReason.OPTIMAL),
    "heuristic": heuristic_termination(),
    "no_feasible_plan_found": Termination(TerminationReason.NO_SOLUTION_FOUND, Limit.HEURISTIC,
                                          "heuristic: no feasible plan found (not a proof of infeasibility)"),
    "time_limit": Termination(TerminationReason.FEASIBLE, Limit.TIME),
    "iteration_limit": Termination(TerminationReason.FEASIBLE, Limit.ITERATION),
}

#: a heuristic that found no feasible plan (not a proof of infeasibility)
NO_PLAN_FOUND = _STATUS["no_feasible_plan_found"]


# ---------------------------------------------------------------------------------------------- closed forms
def stage_tau(S: Any, P: Any, R: Any, Q: Any, k: Any) -> np.ndarray:
    """Seconds per B0 samples of a stage with sums S, P, R, Q on k units (broadcasting)."""
    k = np.asarray(k, dtype=float)
    return np.maximum(S + P / k, R + Q / k)


def _kmin_part(ser: np.ndarray, par: np.ndarray, tau: np.ndarray) -> np.ndarray:
    """Smallest k >= 1 with ``ser + par / k <= tau`` (relative tolerance 1e-12); inf if none."""
    tol_tau = tau * (1 + TAU_RTOL)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        slack = tol_tau - ser  # the tolerance keeps a negligible parallel part (P ~ 1e-20) meetable at k = 1
        x = np.where(par > 0, np.where(slack > 0, par / np.where(slack > 0, slack, 1.0), np.inf), 1.0)
        x = np.where((par <= 0) & (ser > tol_tau), np.inf, x)
        k = np.maximum(1.0, np.ceil(x - 1e-9))
        fin = np.isfinite(k)
        kk = np.where(fin, k, 1.0)
        up = fin & (ser + par / kk > tol_tau)
        kk = kk + up
        down = fin & (kk > 1) & (ser + par / np.maximum(kk - 1, 1) <= tol_tau)
        kk = kk - down
        # a fraction that is still too slow after the fix-ups cannot be met (only when tau ~ ser): no finite k
        bad = fin & (ser + par / kk > tol_tau)
    return np.where(fin & ~bad, kk, np.inf)


def kmin(S: Any, P: Any, R: Any, Q: Any, tau: Any, limit: Any = np.inf) -> np.ndarray:
    """The closed form: the smallest k with ``B0 / tau_stage(k) >= B0 / tau``, i.e.
    ``k = max(1, ceil(P / (tau - S)), ceil(Q / (tau - R)))``; inf when even k -> inf fails (``tau <= S`` with
    ``P > 0``, or a serial part alone above tau) or when k exceeds ``limit``."""
    S, P, R, Q, tau = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (S, P, R, Q, tau)))
    k = np.maximum(_kmin_part(S, P, tau), _kmin_part(R, Q, tau))
    return np.where(k <= limit, k, np.inf)


def _stage_sums(problem: HeterPSProblem, stages: Sequence[tuple[int, int, str]]) -> tuple[np.ndarray, ...]:
    arr = problem.arrays()
    names = problem.type_names
    a = np.array([s[0] for s in stages])
    b = np.array([s[1] for s in stages])
    t = np.array([names.index(s[2]) for s in stages])
    return (*(arr[key + "pre"][b, t] - arr[key + "pre"][a, t] for key in ("S", "P", "R", "Q")), t)


# ---------------------------------------------------------------------------------------------- provisioning
def provision(problem: HeterPSProblem, plan: Sequence[str]) -> tuple[tuple[int, ...], float, float] | None:
    """Exact optimal unit counts for a fixed plan: ``(k, cost, throughput)`` or ``None`` when no k meets both the
    throughput floor and the type limits.

    Exact: the optimum's throughput is some stage's ``B0 / tau_i(k_i)``; for each such candidate level every stage
    takes its minimal k (closed form), which is componentwise minimal, so the type limits are a plain check and the
    cost ``C0 * price.k * tau_actual / B0`` is at most the optimum's at the right level."""
    problem.type_index(plan)
    stages = stages_of(list(plan))
    S, P, R, Q, t = _stage_sums(problem, stages)
    N = problem.limits
    price = problem.prices
    kmax = int(N[t].max())
    ks = np.arange(1, kmax + 1, dtype=float)
    taus = stage_tau(S[:, None], P[:, None], R[:, None], Q[:, None], ks[None, :])  # (n_s, kmax)
    valid = ks[None, :] <= N[t][:, None]
    tau_lim = problem.base_batch / problem.throughput_limit
    # no level below a stage's fastest (all units of its type) is reachable: those candidates are not examined
    floor = float(stage_tau(S, P, R, Q, N[t].astype(float)).max()) * (1 - 4 * TAU_RTOL)
    cand = np.unique(taus[valid & (taus <= tau_lim * (1 + TAU_RTOL)) & (taus >= floor)])
    if cand.size == 0:
        return None
    K = kmin(S[None, :], P[None, :], R[None, :], Q[None, :], cand[:, None], N[t][None, :])  # (C, n_s)
    ok = np.isfinite(K).all(axis=1)
    if not ok.any():
        return None
    K = np.where(np.isfinite(K), K, 0.0)
    onehot = np.zeros((len(stages), len(N)))
    onehot[np.arange(len(stages)), t] = 1.0
    per_type = K @ onehot
    ok &= (per_type <= N[None, :]).all(axis=1)
    if not ok.any():
        return None
    tau_act = stage_tau(S[None, :], P[None, :], R[None, :], Q[None, :], np.maximum(K, 1)).max(axis=1)
    cost = problem.sample_hours * (per_type @ price) * tau_act / problem.base_batch
    cost = np.where(ok, cost, np.inf)
    j = int(np.argmin(cost))
    return tuple(int(x) for x in K[j]), float(cost[j]), float(problem.base_batch / tau_act[j])


def k1_lower_bound(problem: HeterPSProblem, plan: Sequence[str]) -> int | None:
    """The paper's lower bound on the first stage's units: the smallest k_1 with ``B / ET_1(k_1) >= limit``
    (closed form ``max(ceil(P_1 / (tau_lim - S_1)), ceil(Q_1 / (tau_lim - R_1)), 1)``); None if no k_1 within the
    type limit reaches the floor."""
    S, P, R, Q, t = _stage_sums(problem, stages_of(list(plan)))
    tau_lim = problem.base_batch / problem.throughput_limit
    k = float(kmin(S[0], P[0], R[0], Q[0], tau_lim, problem.limits[t[0]]))
    return int(k) if np.isfinite(k) else None


def balance_units(problem: HeterPSProblem, plan: Sequence[str], k1: int) -> tuple[int, ...] | None:
    """The paper's balancing rule: given k_1, each stage i takes the smallest k_i with ``ET_i(k_i) <= ET_1(k_1)``
    (so every stage runs at least as fast as stage 1: ``k_i = max(ceil(P_i / (ET_1 - S_i)), ceil(Q_i / (ET_1 -
    R_i)), 1)`` in per-B0 units). None when some stage cannot match stage 1 within its type's limit."""
    S, P, R, Q, t = _stage_sums(problem, stages_of(list(plan)))
    tau1 = float(stage_tau(S[0], P[0], R[0], Q[0], k1))
    K = kmin(S, P, R, Q, tau1, problem.limits[t])
    K[0] = k1
    if not np.isfinite(K).all():
        return None
    return tuple(int(x) for x in K)


def provision_paper(problem: HeterPSProblem, plan: Sequence[str]) -> tuple[tuple[int, ...], float, float] | None:
    """The paper's provisioning: k_1 from its lower bound up to the type limit, the other stages balanced to
    stage 1; the cheapest combination that fits the type limits. A heuristic (the optimum's bottleneck need not be
    stage 1); :func:`provision` is exact."""
    lb = k1_lower_bound(problem, plan)
    if lb is None:
        return None
    stages = stages_of(list(plan))
    t1 = problem.type_names.index(stages[0][2])
    best: tuple[tuple[int, ...], float, float] | None = None
    for k1 in range(lb, int(problem.limits[t1]) + 1):
        k = balance_units(problem, plan, k1)
        if k is None:
            continue
        ev = evaluate(problem, plan, k)
        if ev.feasible and (best is None or ev.cost < best[1]):
            best = (k, ev.cost, ev.throughput)
    return best


def plan_max_throughput(problem: HeterPSProblem, plan: Sequence[str]) -> float:
    """Throughput of ``plan`` when every stage gets all units of its type (type limits shared across stages
    ignored): an upper bound on what the plan can reach."""
    S, P, R, Q, t = _stage_sums(problem, stages_of(list(plan)))
    return float(problem.base_batch / stage_tau(S, P, R, Q, problem.limits[t]).max())


# ---------------------------------------------------------------------------------------------- intervals
def interval_sums(problem: HeterPSProblem) -> tuple[np.ndarray, ...]:
    """All candidate stages [a, b) (a < b): ``ia, ib`` (n_int,) and S, P, R, Q (n_int, m)."""
    L = problem.num_layers
    ia, ib = np.triu_indices(L + 1, 1)
    arr = problem.arrays()
    sums = tuple(arr[key + "pre"][ib] - arr[key + "pre"][ia] for key in ("S", "P", "R", "Q"))
    return (ia, ib, *sums)


def max_throughput(problem: HeterPSProblem) -> tuple[float, tuple[str, ...]]:
    """The highest throughput any plan reaches when every stage gets all units of its type (the cross-stage type
    limits ignored): a bottleneck (max-min) path DP over layer boundaries. Returns (throughput, plan)."""
    L, m = problem.num_layers, len(problem.types)
    ia, ib, S, P, R, Q = interval_sums(problem)
    tp = problem.base_batch / stage_tau(S, P, R, Q, problem.limits[None, :])  # (n_int, m)
    g = np.full((L + 1, m + 1), -np.inf)
    g[0, m] = np.inf
    back = np.zeros((L + 1, m, 2), dtype=np.int64)
    for b in range(1, L + 1):
        sel = np.flatnonzero(ib == b)
        a = ia[sel]
        for t in range(m):
            prev = np.delete(g[a], t, axis=1).max(axis=1)
            prev_t = np.delete(np.arange(m + 1), t)[np.delete(g[a], t, axis=1).argmax(axis=1)]
            val = np.minimum(prev, tp[sel, t])
            j = int(np.argmax(val))
            g[b, t] = val[j]
            back[b, t] = (a[j], prev_t[j])
    t = int(np.argmax(g[L, :m]))
    best = float(g[L, t])
    plan: list[str] = [""] * L
    b = L
    while b > 0:
        a, pt = back[b, t]
        plan[a:b] = [problem.type_names[t]] * (b - a)
        b, t = int(a), int(pt)
    return best, tuple(plan)
