"""Baselines: brute force (small L), a greedy local search and a genetic algorithm over type assignments.

The heuristics search plans (one type per layer); each plan gets its unit counts from ``provisioning``:
``"exact"`` (:func:`~schedopt.heterps.core.provision`, the optimal k for that plan) or ``"paper"`` (the paper's
balancing rule, :func:`~schedopt.heterps.core.provision_paper`).
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import InputError
from ..problem import heuristic_termination
from ..results import Termination, TerminationReason
from .core import NO_PLAN_FOUND, TAU_RTOL, HeterPSPlan, make_plan, plan_max_throughput, provision, provision_paper
from .cost import stages_of
from .exact import diagnose_infeasibility
from .spec import HeterPSProblem

__all__ = ["PlanCoster", "solve_bruteforce", "solve_genetic", "solve_greedy"]


class PlanCoster:
    """Cost of a plan (type indices per layer) under a provisioning rule, cached. Infeasible plans cost inf and
    carry a shortfall ``max(0, 1 - reachable throughput / limit)``."""

    def __init__(self, problem: HeterPSProblem, provisioning: str = "exact") -> None:
        if provisioning not in ("exact", "paper"):
            raise InputError("provisioning", provisioning, "must be 'exact' or 'paper'")
        self.problem = problem
        self.fn = provision if provisioning == "exact" else provision_paper
        self.cache: dict[tuple[int, ...], tuple[float, tuple[int, ...] | None, float]] = {}
        self.evaluations = 0

    def names(self, idx: Sequence[int]) -> tuple[str, ...]:
        return tuple(self.problem.type_names[int(i)] for i in idx)

    def __call__(self, idx: Sequence[int] | np.ndarray) -> tuple[float, tuple[int, ...] | None, float]:
        key = tuple(int(i) for i in idx)
        hit = self.cache.get(key)
        if hit is not None:
            return hit
        self.evaluations += 1
        plan = self.names(key)
        got = self.fn(self.problem, plan)
        if got is None:
            tp = plan_max_throughput(self.problem, plan)
            out: tuple[float, tuple[int, ...] | None, float] = (
                math.inf, None, max(0.0, 1.0 - tp / self.problem.throughput_limit))
        else:
            out = (got[1], got[0], 0.0)
        self.cache[key] = out
        return out

    def result(self, idx: Sequence[int] | None, method: str, t0: float, **info: Any) -> HeterPSPlan:
        """The plan record: FEASIBLE with the heuristic limit; when no feasible plan was found, NO_SOLUTION_FOUND with
        the heuristic limit (not a proof of infeasibility) and the plan searched last with every stage at its type's full limit (``feasible`` then says
        whether that happens to meet the constraints)."""
        seconds = time.perf_counter() - t0
        info = dict(info, plan_evaluations=self.evaluations)
        if idx is None or self(idx)[1] is None:
            idx = idx if idx is not None else [0] * self.problem.num_layers
            plan = self.names(idx)
            k = tuple(int(self.problem.types[self.problem.type_names.index(t)].limit) for _, _, t in stages_of(plan))
            return make_plan(self.problem, plan, k, method, NO_PLAN_FOUND, seconds, **info)
        return make_plan(self.problem, self.names(idx), self(idx)[1] or (), method, heuristic_termination(), seconds,
                         **info)


# ------------------------------------------------------------------------------------------------ brute force
def _stage_table(problem: HeterPSProblem, stages: list[tuple[int, int, str]], kmax: int) -> np.ndarray:
    """tau_i(k) for k = 1..kmax, from plain sums over the layers (independent of the solvers' prefix arrays)."""
    rows = []
    for a, b, t in stages:
        ls = problem.layers[a:b]
        S = sum(x.oct[t] * (1 - x.alpha) for x in ls)
        P = sum(x.oct[t] * x.alpha for x in ls)
        R = sum(x.odt[t] * (1 - x.beta) for x in ls)
        Q = sum(x.odt[t] * x.beta for x in ls)
        ks = np.arange(1, kmax + 1, dtype=float)
        rows.append(np.maximum(S + P / ks, R + Q / ks))
    return np.array(rows)


def solve_bruteforce(problem: HeterPSProblem, max_plans: int = 200_000, max_combos: int = 2_000_000) -> HeterPSPlan:
    """Every plan and every unit vector (k_i in 1..N_t per stage): the reference optimum for small L.

    Raises InputError when the enumeration exceeds ``max_plans`` plans or ``max_combos`` unit vectors for a plan,
    and :class:`~schedopt.heterps.HeterPSInfeasibleError` when nothing is feasible."""
    t0 = time.perf_counter()
    L, m = problem.num_layers, len(problem.types)
    if m**L > max_plans:
        raise InputError("problem.layers", L, f"brute force over {m}^{L} plans exceeds max_plans={max_plans}")
    N, price = problem.limits, problem.prices
    tau_lim = problem.base_batch / problem.throughput_limit
    C0, B0 = problem.sample_hours, problem.base_batch
    best: tuple[float, tuple[str, ...], tuple[int, ...]] | None = None
    for idx in itertools.product(range(m), repeat=L):
        plan = tuple(problem.type_names[i] for i in idx)
        stages = stages_of(plan)
        ts = np.array([problem.type_names.index(s[2]) for s in stages])
        combos = int(np.prod(N[ts].astype(float)))
        if combos > max_combos:
            raise InputError("problem.types", combos, f"brute force over {combos} unit vectors exceeds max_combos")
        table = _stage_table(problem, stages, int(N[ts].max()))
        grids = np.indices(tuple(int(x) for x in N[ts])).reshape(len(stages), -1)  # k_i - 1
        tau = table[np.arange(len(stages))[:, None], grids].max(axis=0)
        units = np.zeros((m, grids.shape[1]))
        np.add.at(units, ts, grids + 1)
        ok = (tau <= tau_lim * (1 + TAU_RTOL)) & (units <= N[:, None]).all(axis=0)
        if not ok.any():
            continue
        cost = np.where(ok, C0 * (price @ units) * tau / B0, np.inf)
        j = int(np.argmin(cost))
        if best is None or cost[j] < best[0]:
            best = (float(cost[j]), plan, tuple(int(x) for x in grids[:, j] + 1))
    if best is None:
        err = diagnose_infeasibility(problem)
        assert err is not None
        raise err
    return make_plan(problem, best[1], best[2], "bruteforce", Termination(TerminationReason.OPTIMAL, detail="every plan enumerated"),
                     time.perf_counter() - t0)


# ------------------------------------------------------------------------------------------------ greedy
def solve_greedy(problem: HeterPSProblem, provisioning: str = "exact", max_rounds: int = 1000) -> HeterPSPlan:
    """Start from each layer on its cheapest type per unit of work (``price_t * max(OCT_t, ODT_t)``), then flip the
    single layer (or the whole stage) that lowers the plan's cost most, until no flip helps. While no plan is
    feasible, flips are ranked by the throughput shortfall instead."""
    t0 = time.perf_counter()
    coster = PlanCoster(problem, provisioning)
    L, m = problem.num_layers, len(problem.types)
    arr = problem.arrays()
    work = np.maximum(arr["oct"], arr["odt"]) * np.maximum(problem.prices, 1e-12)[None, :]
    cur = [int(x) for x in np.argmin(work, axis=1)]

    def key(idx: Sequence[int]) -> tuple[float, float]:
        c, _, short = coster(idx)
        return (0.0 if math.isfinite(c) else 1.0, c if math.isfinite(c) else short)

    cur_key = key(cur)
    rounds = 0
    for rounds in range(1, max_rounds + 1):  # noqa: B007
        moves: list[list[int]] = []
        for i in range(L):
            for t in range(m):
                if t != cur[i]:
                    nxt = cur.copy()
                    nxt[i] = t
                    moves.append(nxt)
        for a, b, tn in stages_of(coster.names(cur)):
            for t in range(m):
                if problem.type_names[t] != tn:
                    nxt = cur.copy()
                    nxt[a:b] = [t] * (b - a)
                    moves.append(nxt)
        best_move = min(moves, key=key, default=None)
        if best_move is None or key(best_move) >= cur_key:
            break
        cur, cur_key = best_move, key(best_move)
    feasible = math.isfinite(coster(cur)[0])
    return coster.result(cur if feasible else None, f"greedy-{provisioning}", t0, rounds=rounds)


# ------------------------------------------------------------------------------------------------ genetic
def solve_genetic(problem: HeterPSProblem, seed: int = 0, population: int = 40, generations: int = 60,
                  mutation: float | None = None, provisioning: str = "exact") -> HeterPSPlan:
    """A seeded genetic algorithm over type assignments: tournament selection (size 3), one-point crossover,
    per-layer mutation (rate ``1/L`` by default), elitism (the best two survive). Fitness: the provisioned cost;
    infeasible plans rank after every feasible one, by their shortfall."""
    t0 = time.perf_counter()
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise InputError("seed", seed, "must be an integer")
    for name, v in (("population", population), ("generations", generations)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 2:
            raise InputError(name, v, "must be an integer >= 2")
    rng = np.random.default_rng(seed)
    coster = PlanCoster(problem, provisioning)
    L, m = problem.num_layers, len(problem.types)
    rate = 1.0 / L if mutation is None else float(mutation)
    pop = rng.integers(0, m, size=(population, L))
    pop[0] = 0
    if m > 1:
        pop[1] = 1

    def fitness(idx: np.ndarray) -> float:
        c, _, short = coster(idx)
        return c if math.isfinite(c) else 1e300 * (1 + short)

    fit = np.array([fitness(p) for p in pop])
    for _ in range(generations):
        order = np.argsort(fit, kind="stable")
        children = [pop[order[0]].copy(), pop[order[1]].copy()]
        while len(children) < population:
            par = []
            for _ in range(2):
                c = rng.integers(0, population, size=3)
                par.append(pop[c[np.argmin(fit[c])]])
            cut = int(rng.integers(1, L)) if L > 1 else 0
            child = np.r_[par[0][:cut], par[1][cut:]]
            flip = rng.random(L) < rate
            child[flip] = rng.integers(0, m, size=int(flip.sum()))
            children.append(child)
        pop = np.array(children)
        fit = np.array([fitness(p) for p in pop])
    j = int(np.argmin(fit))
    best = pop[j] if math.isfinite(coster(pop[j])[0]) else None
    return coster.result(None if best is None else best.tolist(), f"genetic-{provisioning}", t0, seed=seed)
