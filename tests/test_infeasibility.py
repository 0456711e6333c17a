"""explain_infeasibility says "undecided" (with the reason) unless a solve decided the question."""

from __future__ import annotations

import numpy as np

import schedopt
from schedopt import Limit, TerminationReason


def _hard_equality_knapsack() -> schedopt.LinearModel:
    """Three equality rows over 40 binaries with weights 50..99: HiGHS finds no point in zero time."""
    rng = np.random.default_rng(0)
    A = rng.integers(50, 100, (3, 40))
    half = A.sum(axis=1) // 2
    return schedopt.LinearModel.from_arrays(c=np.zeros(40), A=A, row_lower=half, row_upper=half, col_upper=1,
                                            integrality=1)


def test_time_limit_without_solution_is_undecided_not_feasible():
    # regression: the old code returned feasible=True whenever the solve did not end INFEASIBLE
    m = _hard_equality_knapsack()
    rep = schedopt.explain_infeasibility(m, time_limit=0.0)
    assert rep.feasible is None and not rep.decided
    assert rep.termination is not None
    assert rep.termination.reason is TerminationReason.NO_SOLUTION_FOUND
    assert rep.termination.limit is Limit.TIME
    assert str(rep).startswith("undecided: the feasibility solve ended NO_SOLUTION_FOUND (time limit)")


def test_feasible_needs_a_found_point():
    m = schedopt.LinearModel.from_arrays(c=[1.0, 1.0], A=[[1.0, 1.0]], row_lower=[1.0], row_upper=[1.0],
                                         col_upper=1, integrality=1)
    rep = schedopt.explain_infeasibility(m)
    assert rep.feasible is True and rep.decided
    assert rep.termination is not None and rep.termination.reason is TerminationReason.OPTIMAL


def test_infeasible_names_the_family_and_keeps_the_termination():
    # x + y >= 3 with binaries x, y: infeasible, the family "rows" (row 0) is to blame
    m = schedopt.LinearModel.from_arrays(c=[1.0, 1.0], A=[[1.0, 1.0]], row_lower=[3.0], col_upper=1, integrality=1)
    rep = schedopt.explain_infeasibility(m)
    assert rep.feasible is False
    assert rep.families == ["rows"] and rep.rows == ["rows[0]"]
    assert rep.termination is not None and rep.termination.reason is TerminationReason.INFEASIBLE
