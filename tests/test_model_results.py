"""SolveResult / Termination / Timings check their invariants when built and cannot be changed afterwards."""

from __future__ import annotations

import dataclasses
import math
import warnings

import numpy as np
import pytest

import schedopt
from schedopt import Limit, SolveResult, Termination, TerminationReason, Timings
from schedopt.errors import ResultInvariantError
from schedopt.problem import Formulation, Structure

T = TerminationReason


def knapsack() -> schedopt.LinearModel:
    """max 3a + 4b + 5c, 2a + 3b + 4c <= 5, binaries: optimum 7 (a and b fill the 5 exactly)."""
    m = schedopt.LinearModel("k", sense="maximize")
    m.add_variables("x", 3, kind="binary")
    m.add_constraints("w", {"x": [[2, 3, 4]]}, upper=5)
    m.set_objective({"x": [3, 4, 5]})
    return m


@pytest.mark.parametrize(
    ("reason", "limit"),
    [(T.FEASIBLE, None), (T.NO_SOLUTION_FOUND, None), (T.OPTIMAL, Limit.TIME), (T.INFEASIBLE, Limit.OTHER),
     (T.ERROR, Limit.TIME)],
)
def test_termination_limit_iff_feasible_or_no_solution(reason, limit):
    with pytest.raises(ResultInvariantError):
        Termination(reason, limit)


def test_termination_accepts_the_valid_pairs():
    assert Termination(T.FEASIBLE, Limit.HEURISTIC).limit is Limit.HEURISTIC
    assert Termination(T.NO_SOLUTION_FOUND, Limit.TIME).reason is T.NO_SOLUTION_FOUND
    assert Termination(T.OPTIMAL).limit is None


def test_result_is_frozen_and_its_solution_read_only():
    res = schedopt.solve(knapsack(), "highs")
    assert res.objective == 7.0
    with pytest.raises(dataclasses.FrozenInstanceError):
        res.bound = 100.0  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        res.timings.build = 1.0  # type: ignore[misc]
    with pytest.raises(ValueError):
        res.x[0] = 0.0


def test_create_refuses_a_bound_on_the_wrong_side():
    m = knapsack()
    x = np.array([1.0, 1.0, 0.0])  # objective 7
    with pytest.raises(ResultInvariantError, match="lies below the objective"):
        SolveResult.create(m, Termination(T.FEASIBLE, Limit.TIME), backend="t", x=x, bound=6.0)
    # within the tolerance: set to the objective (solver noise), gap 0
    r = SolveResult.create(m, Termination(T.FEASIBLE, Limit.TIME), backend="t", x=x, bound=7.0 - 1e-9)
    assert r.bound == 7.0 and r.gap == 0.0
    r = SolveResult.create(m, Termination(T.FEASIBLE, Limit.TIME), backend="t", x=x, bound=7.5)
    assert r.gap == pytest.approx(0.5 / 7)


def test_create_computes_the_objective_and_the_trivial_bounds():
    m = knapsack()
    r = SolveResult.create(m, Termination(T.OPTIMAL), backend="t", x=[1, 1, 0])
    assert r.objective == 7.0 and r.bound == 7.0
    r = SolveResult.create(m, Termination(T.INFEASIBLE), backend="t", bound=3.0)
    assert r.bound == -math.inf and not r.has_solution
    r = SolveResult.create(m, Termination(T.NO_SOLUTION_FOUND, Limit.TIME), backend="t")
    assert r.bound == math.inf and r.gap == math.inf


def test_a_solution_is_held_exactly_when_the_reason_says_so():
    m = knapsack()
    with pytest.raises(ResultInvariantError, match="holds no solution"):
        SolveResult(Termination(T.OPTIMAL), "t", m, None, math.nan, 7.0)
    with pytest.raises(ResultInvariantError, match="cannot hold a solution"):
        SolveResult(Termination(T.ERROR), "t", m, np.zeros(3), 0.0, math.nan)
    with pytest.raises(ResultInvariantError, match="OPTIMAL without a bound"):
        SolveResult(Termination(T.OPTIMAL), "t", m, np.array([1.0, 1.0, 0.0]), 7.0, math.nan)


def test_replace_and_with_timings_revalidate():
    res = schedopt.solve(knapsack(), "highs")
    r2 = res.with_timings(build=0.25)
    assert r2.timings.build == 0.25 and res.timings.build != 0.25
    assert r2.replace(backend="other").backend == "other"
    with pytest.raises(ResultInvariantError):
        res.replace(bound=1.0)  # below the objective 7 of a maximisation


def test_timings_replace_and_add():
    t = Timings(solve=1.0)
    assert t.replace(build=2.0).total == 3.0
    assert t.add(build=0.5, handoff=0.25).as_dict() == {"build": 0.5, "handoff": 0.25, "solve": 1.0, "decode": 0.0}


def test_solve_accepts_a_formulation_and_its_structure():
    m = knapsack()
    f = Formulation(model=m, inverse=None, structure=Structure.MCKP)
    assert schedopt.default_backend(f) == "mckp"
    assert schedopt.default_backend(m) == "highs"
    res = schedopt.solve(f)
    assert res.backend == "mckp" and res.objective == 7.0


def test_model_structure_is_typed_and_copied():
    m = knapsack()
    m.structure = "mckp"
    assert m.structure is Structure.MCKP and m.copy().structure is Structure.MCKP
    assert schedopt.default_backend(m) == "mckp"
    with pytest.raises(schedopt.errors.InputError, match="structure"):
        m.structure = "knapsack"


def test_legacy_meta_structure_still_works_with_a_deprecation_warning():
    m = knapsack()
    m.meta["structure"] = "mckp"
    with pytest.warns(DeprecationWarning, match="model.structure"):
        assert schedopt.default_backend(m) == "mckp"
    m.structure = Structure.MCKP
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert schedopt.default_backend(m) == "mckp"


def test_backend_result_distrusts_a_bound_that_contradicts_the_solution():
    # HiGHS's adapter factory given x = (a, b) with objective 7 and a "bound" of 6 for a maximisation: the bound
    # cannot be true, so it is dropped (trivial +inf) and OPTIMAL becomes FEASIBLE with the reason in the detail
    m = knapsack()
    b = schedopt.get_backend("highs")
    r = b.result(m, T.OPTIMAL, (0.0, 0.0, 0.0), x=np.array([1.0, 1.0, 0.0]), bound=6.0)
    assert r.termination.reason is T.FEASIBLE and r.termination.limit is Limit.OTHER
    assert r.bound == math.inf and r.objective == 7.0 and r.stats["untrusted_bound"] == 6.0
    assert "contradicts" in r.termination.detail
    # a FEASIBLE answer whose solver said FEASIBLE without a solution is NO_SOLUTION_FOUND
    r = b.result(m, T.FEASIBLE, (0.0, 0.0, 0.0), limit=Limit.TIME)
    assert r.termination.reason is T.NO_SOLUTION_FOUND and not r.has_solution


def test_the_relaxation_of_an_mckp_model_solves_with_the_default_backend():
    m = knapsack()
    m.structure = Structure.MCKP
    lp = m.relax()
    assert lp.structure is Structure.GENERAL and schedopt.default_backend(lp) == "highs"
    # LP bound of max 3a + 4b + 5c, 2a + 3b + 4c <= 5: a and b fill the 5 exactly (best ratios 1.5, 1.33): 7
    assert schedopt.solve(lp).objective == pytest.approx(7.0)


# ------------------------------------------------------------------ solver outputs checked before trusted (issue 20)
def _knapsack7() -> schedopt.LinearModel:
    # max 3a + 4b + 5c, 2a + 3b + 4c <= 7, binary: optimum 9 at (0, 1, 1)
    return schedopt.LinearModel.from_arrays([3, 4, 5], [[2, 3, 4]], row_upper=[7], col_upper=1, integrality=1,
                                            sense="maximize")


def test_solution_violation_names_the_worst_row_bound_or_fractional_column():
    from schedopt.results import solution_violation

    arr = _knapsack7().to_arrays()
    assert solution_violation(arr, np.array([0.0, 1.0, 1.0])) is None  # activity 7 = the bound
    assert "row 0 has activity 9 outside [-inf, 7]" in solution_violation(arr, np.array([1.0, 1.0, 1.0]))
    assert "column 0 = 2 outside its bounds [-0, 1]" in solution_violation(arr, np.array([2.0, 0.0, 0.0]))
    assert "fractional" in solution_violation(arr, np.array([0.0, 0.5, 0.0]))
    assert "not finite" in solution_violation(arr, np.array([0.0, np.nan, 0.0]))
    # scaled by the row's magnitude: 2e-7 over a row of magnitude 7 passes, 1e-4 does not
    assert solution_violation(arr, np.array([0.0, 1.0, 1.0 + 5e-8])) is None
    assert solution_violation(arr, np.array([0.0, 1.0, 1.0 + 2.5e-5])) is not None


def test_create_turns_a_violating_optimal_claim_into_numerical_error():
    model = _knapsack7()
    res = SolveResult.create(model, Termination(TerminationReason.OPTIMAL, None, "claimed"), backend="t",
                             x=np.ones(3), bound=12.0)
    assert res.termination.reason is TerminationReason.NUMERICAL_ERROR and not res.has_solution
    assert "solver said OPTIMAL, but row 0 has activity 9 outside" in res.termination.detail
    assert math.isinf(res.bound) and res.stats["rejected_solution"].startswith("row 0")
    ok = SolveResult.create(model, Termination(TerminationReason.FEASIBLE, Limit.TIME), backend="t",
                            x=[0.0, 1.0, 1.0], bound=12.0)
    assert ok.termination.reason is TerminationReason.FEASIBLE and ok.objective == 9.0
