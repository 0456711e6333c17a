"""mckp's fast paths (issue 26): prices from one LP solve, the LP rounding start, the residual's depth-first search
(identical jobs never permuted) and its dynamic programme over the capacities; each proves only what it proves and
agrees with brute force or HiGHS."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import schedopt
from schedopt.errors import InputError
from schedopt.mckp import Aggregate, LagrangianDual, ResidualClosure, aggregate, analyze
from schedopt.results import TerminationReason

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_mckp import _gap_model, brute_force, make_dup_mckp, make_mckp


def _closure(m: schedopt.LinearModel, search_nodes: int, table: bool) -> tuple[ResidualClosure, Aggregate]:
    """The residual closure of ``m`` at its LP prices (aggregated), as the solver builds it."""
    a = aggregate(analyze(m))
    d = LagrangianDual(a.st, method="lp").solve()
    bestg = np.maximum(d.gmax, 0.0)
    delta = bestg[a.st.group] - d.rc
    cl = ResidualClosure(a, delta, bestg, schedopt.solve, gap_tol=1e-9, lam=d.lam, search_nodes=search_nodes,
                         table=table)
    return cl, a


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(1, 7), st.integers(1, 5), st.integers(1, 3), st.integers(0, 10_000), st.floats(0.1, 0.9),
       st.sampled_from(["maximize", "minimize"]))
def test_lp_prices_give_the_kelley_bound_and_never_cut_the_optimum(n: int, c: int, K: int, seed: int, frac: float,
                                                                   sense: str) -> None:
    """The LP relaxation's row duals minimise the Lagrangian function: the bound there equals Kelley's (1e-6) and
    the brute-force optimum never passes it; the LP's counts, rounded down, fit every row."""
    m = make_mckp(n, c, K, seed, cap_frac=frac, sense=sense)
    a = aggregate(analyze(m)).st
    lp = LagrangianDual(a, method="lp").solve()
    ke = LagrangianDual(a, method="kelley", tolerance=1e-12).solve()
    scale = max(1.0, abs(ke.best.L))
    assert lp.best.L == pytest.approx(ke.best.L, abs=1e-6 * scale)
    opt = brute_force(m) if m.num_cols <= 14 else schedopt.solve(m, "highs", mip_rel_gap=0.0).objective
    sign = 1.0 if m.maximize else -1.0
    assert lp.best.L + a.const >= sign * opt - 1e-9 * scale  # maximisation form
    if lp.y_lp is not None:
        y = np.floor(lp.y_lp + 1e-7)
        assert np.all(a.weights_csr(np.arange(a.n)) @ y <= a.cap + 1e-6)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(1, 4), st.lists(st.integers(1, 4), min_size=4, max_size=4), st.integers(1, 3), st.integers(1, 3),
       st.integers(0, 10_000), st.floats(0.1, 0.8), st.sampled_from(["search", "table"]))
def test_search_and_table_solve_the_whole_problem_as_brute_force(n_base: int, reps: list[int], c: int, K: int,
                                                                 seed: int, frac: float, how: str) -> None:
    """The residual with nothing fixed (gap and threshold unbounded, an empty incumbent) is the whole aggregated
    problem: the search alone (no table) and the table alone (no search) each return its brute-force optimum, a
    feasible choice, and a bound that is neither below the optimum nor more than the half gap above it."""
    m = make_dup_mckp(n_base, reps, c, K, seed, cap_frac=frac)
    if m.num_cols > 14:
        return
    opt = brute_force(m)
    cl, a = _closure(m, 10**6 if how == "search" else 0, how == "table")
    ast = a.st
    rs = cl.restricted(np.zeros(ast.n, dtype=np.int64), 1e9, 1e9, None, search=True)
    if ast.n == 0:  # every column presolved away: nothing to search, the empty choice is the optimum
        assert rs.columns == 0 and opt == pytest.approx(ast.const)
        return
    assert rs.method == how and rs.counts is not None and not math.isnan(rs.bound)
    assert np.all(ast.weights_csr(np.arange(ast.n)) @ rs.counts <= ast.cap + 1e-9)
    assert np.all(np.add.reduceat(rs.counts, ast.starts) <= ast.mult)
    value = float(ast.value @ rs.counts) + ast.const
    assert value == pytest.approx(opt, abs=1e-9 * max(1.0, abs(opt)))
    assert opt - 1e-9 <= rs.bound <= opt + 1e-9 * max(1.0, abs(opt)) + 1e-9


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(1, 6), st.lists(st.integers(1, 6), min_size=6, max_size=6), st.integers(1, 4), st.integers(1, 3),
       st.integers(0, 10_000), st.sampled_from(["maximize", "minimize"]), st.integers(0, 2), st.floats(0.1, 0.8),
       st.sampled_from([{}, {"residual_table": False}, {"search_nodes": 0}, {"dual_method": "kelley"},
                        {"lp_rounding": False}]))
def test_every_path_equals_highs_on_duplicated_jobs(n_base: int, reps: list[int], c: int, K: int, seed: int,
                                                    sense: str, forced: int, frac: float, opts: dict) -> None:
    """Many identical jobs (the hard case for a search without symmetry): every combination of the fast paths
    ends OPTIMAL at HiGHS's optimum (gap 0) with a feasible answer and its bound on the right side."""
    m = make_dup_mckp(n_base, reps, c, K, seed, sense=sense, forced=forced, cap_frac=frac)
    ref = schedopt.solve(m, "highs", mip_rel_gap=0.0, time_limit=30)
    r = schedopt.solve(m, "mckp", mip_rel_gap=0.0, **opts)
    if ref.termination.reason is TerminationReason.INFEASIBLE:
        assert r.termination.reason is TerminationReason.INFEASIBLE
        return
    assert r.termination.reason is TerminationReason.OPTIMAL
    assert m.violations(r.x) == {}
    tol = 1e-7 * max(1.0, abs(ref.objective))
    assert r.objective == pytest.approx(ref.objective, abs=tol)
    assert (r.bound >= ref.objective - tol) if m.maximize else (r.bound <= ref.objective + tol)


def test_search_never_permutes_identical_jobs() -> None:
    """Seven identical jobs of value 2 needing 2 GPUs, 13 GPUs: the LP bound is 13 at a price of 1 a GPU, where
    every choice (run, or not) loses nothing, so the Lagrangian loss prunes nothing. The members take their choices
    in a fixed order (the first k run, the others do not), and a member that stops leaves the GPUs no later member
    can use: at least 1 GPU unused, 1 below the bound, no better than the incumbent 12. So the search visits the 6
    nodes of the path "run, run, ..." and proves the optimum 12 (six jobs); members chosen independently would
    reach each count of running jobs in every order. Without the search, the table (7 members x 1 option x 14
    capacity states) proves it too."""
    r = schedopt.solve(_gap_model(7), "mckp")
    assert r.termination.reason is TerminationReason.OPTIMAL and r.objective == pytest.approx(12.0)
    assert r.bound == pytest.approx(12.0)
    assert r.stats["residual_backend"] == "search" and r.stats["search_nodes"] == 6
    assert r.stats["dual_method"] == "lp" and r.stats["prices"] == {"gpu_capacity[0]": pytest.approx(1.0)}


def test_table_proves_what_the_search_leaves() -> None:
    """The same model without the search: the table (7 members x 1 option x 14 capacity states) proves 12."""
    r = schedopt.solve(_gap_model(7), "mckp", search_nodes=0)
    assert r.termination.reason is TerminationReason.OPTIMAL and r.objective == pytest.approx(12.0)
    assert r.stats["residual_backend"] == "table" and r.stats["table_cells"] == 14 * 7
    assert r.bound == pytest.approx(12.0)


def test_table_needs_integer_weights() -> None:
    """Weights 2.5 on capacity 13: no table; the search (or the sub-solver) proves the optimum 10 (five jobs)."""
    m = schedopt.LinearModel("frac", sense="maximize")
    m.add_variables("x", 7, kind="binary")
    m.add_constraints("gpu_capacity", {"x": [[2.5] * 7]}, upper=13)
    m.set_objective({"x": [2] * 7})
    r = schedopt.solve(m, "mckp", search_nodes=0)
    assert r.objective == pytest.approx(10.0) and r.termination.reason is TerminationReason.OPTIMAL
    assert r.stats["residual_backend"] not in ("table", "search")
    r2 = schedopt.solve(m, "mckp")
    assert r2.objective == pytest.approx(10.0) and r2.stats["residual_backend"] == "search"


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_sia_64_rounds_equal_highs_by_the_fast_paths(seed: int) -> None:
    """Generated 64-GPU Sia instances in the three modes (exact, preset, preset with lambda_a): mckp's answer
    equals HiGHS's within the gap, proved OPTIMAL, with the prices from the LP, and no residual left for a
    sub-solver (the search or the table closes it)."""
    sia = pytest.importorskip("schedopt.sia")
    for la in (None, 0.0, 0.01):
        settings_ = None if la is None else sia.published_settings(change_penalty=la)
        m = sia.generate_instance(64, seed, settings=settings_).problem().build()
        r = schedopt.solve(m.copy(), "mckp", mip_rel_gap=1e-6)
        h = schedopt.solve(m.copy(), "highs", mip_rel_gap=1e-9)
        assert r.termination.reason is TerminationReason.OPTIMAL
        assert m.violations(r.x) == {}
        assert r.objective == pytest.approx(h.objective, rel=1e-6)
        assert r.stats["dual_method"] == "lp"
        assert r.stats.get("residual_backend", "search") in ("search", "table")


def test_lp_rounding_meets_the_bound_on_a_tied_instance() -> None:
    """Generated 256-GPU Sia instance, preset (coefficients rounded to 0.01, no lambda_a), seed 0: the LP optimum
    rounded down and improved greedily (66.42) is already within the gap of the bound (no local search, no
    residual); without the rounding the Lagrangian choice repaired is 67.26, and the local search has to close it."""
    sia = pytest.importorskip("schedopt.sia")
    m = sia.generate_instance(256, 0, settings=sia.published_settings(change_penalty=0.0)).problem().build()
    r = schedopt.solve(m.copy(), "mckp", mip_rel_gap=1e-4)
    assert r.termination.reason is TerminationReason.OPTIMAL
    assert r.stats["lp_rounding_objective"] == pytest.approx(r.objective)
    assert "residual_columns" not in r.stats and "lagrangian_repair_objective" not in r.stats
    r0 = schedopt.solve(m.copy(), "mckp", mip_rel_gap=1e-4, lp_rounding=False)
    assert r0.objective == pytest.approx(r.objective, rel=1e-4)
    assert r.objective == pytest.approx(66.42)
    assert r0.stats["repair_objective"] == pytest.approx(67.26)  # minimisation: the repair alone is worse


@pytest.mark.parametrize(("name", "value"), [("search_nodes", -1), ("search_nodes", 1.5), ("dual_method", "simplex"),
                                             ("lp_rounding", 1), ("residual_table", "yes")])
def test_new_options_are_checked(name: str, value: object) -> None:
    with pytest.raises(InputError, match=f"options.{name}"):
        schedopt.solve(make_mckp(3, 2, 1, 0), "mckp", **{name: value})


def test_time_limit_before_the_search_keeps_the_contract() -> None:
    """A zero time limit: no proof is claimed; the answer is FEASIBLE with the limit (or NO_SOLUTION_FOUND), never
    OPTIMAL unless the bound itself proves it."""
    m = _gap_model(9)
    r = schedopt.solve(m, "mckp", time_limit=0.0)
    if r.termination.reason is TerminationReason.OPTIMAL:
        assert r.bound == pytest.approx(r.objective, rel=1e-6)
    else:
        assert r.termination.limit is not None
