"""Every backend on golden models with hand-checked optima, brute force, limits, and the one-process pin."""

from __future__ import annotations

import itertools
import math
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import schedopt
import schedopt.testing
from schedopt import TerminationReason as TR
from schedopt.errors import BackendCapabilityError, BackendUnavailableError, InputError, NoSolutionError

ALL = list(schedopt.available_backends())
LP_BACKENDS = [b for b in ALL if schedopt.available_backends()[b].capabilities.lp]
MIP_BACKENDS = [b for b in ALL if schedopt.available_backends()[b].capabilities.mip and b != "mckp"]


def knapsack() -> schedopt.LinearModel:
    """max 3a + 4b + 5c + 6d, 2a + 3b + 4c + 5d <= 7, binary.

    Hand check: pairs within weight 7: {a,b}=7 (w5), {a,c}=8 (w6), {a,d}=9 (w7), {b,c}=9 (w7); no triple fits
    (lightest triple a,b,c weighs 9). Optimum 9.
    """
    m = schedopt.LinearModel("knapsack", sense="maximize")
    m.add_variables("x", 4, kind="binary", labels=list("abcd"))
    m.add_constraints("weight", {"x": [[2, 3, 4, 5]]}, upper=7, labels=["w"])
    m.set_objective({"x": [3, 4, 5, 6]})
    return m


def assignment() -> schedopt.LinearModel:
    """3 jobs x 3 machines, minimise cost; cost matrix [[4,1,3],[2,0,5],[3,2,2]].

    Hand check: of the 6 permutations, (j0->m1, j1->m0, j2->m2) costs 1 + 2 + 2 = 5 and is the unique minimum.
    """
    C = np.array([[4, 1, 3], [2, 0, 5], [3, 2, 2]], dtype=float)
    m = schedopt.LinearModel("assignment")
    m.add_variables("x", (3, 3), kind="binary", labels=(["j0", "j1", "j2"], ["m0", "m1", "m2"]))
    rows = np.kron(np.eye(3), np.ones((1, 3)))
    cols = np.kron(np.ones((1, 3)), np.eye(3))
    m.add_constraints("one_machine_per_job", {"x": rows}, lower=1, upper=1, labels=["j0", "j1", "j2"])
    m.add_constraints("one_job_per_machine", {"x": cols}, lower=1, upper=1, labels=["m0", "m1", "m2"])
    m.set_objective({"x": C})
    return m


def lp_with_dual() -> schedopt.LinearModel:
    """max 3x + 2y s.t. x + y <= 5 (slack at the optimum), x + 3y <= 6, 0 <= x <= 3.

    Optimum x = 3, y = 1, objective 11. Raising the second row's bound by 1 gives y = 4/3: its dual is 2/3;
    the first row is slack (3 + 1 < 5), dual 0.
    """
    return schedopt.LinearModel.from_arrays(
        c=[3, 2], A=[[1, 1], [1, 3]], row_upper=[5, 6], col_upper=[3, np.inf], sense="maximize"
    )


def infeasible() -> schedopt.LinearModel:
    m = schedopt.LinearModel("infeasible")
    m.add_variables("x", 2, kind="integer", upper=10)
    m.add_constraints("capacity", {"x": [[1, 1]]}, upper=3, labels=["gpu"])
    m.add_constraints("demand", {"x": np.eye(2)}, lower=2, labels=["j0", "j1"])
    return m


def unbounded() -> schedopt.LinearModel:
    return schedopt.LinearModel.from_arrays(c=[1, 1], A=[[1, -1]], row_upper=[1], sense="maximize")


market_split = schedopt.testing.market_split


@pytest.mark.parametrize("backend", MIP_BACKENDS)
def test_knapsack(backend):
    res = schedopt.solve(knapsack(), backend)
    assert res.termination.reason is TR.OPTIMAL
    assert res.objective == pytest.approx(9)
    assert res.bound == pytest.approx(9, abs=1e-6)
    assert res.gap == pytest.approx(0, abs=1e-6)
    assert res.values["x"].sum() == 2


@pytest.mark.parametrize("backend", MIP_BACKENDS)
def test_assignment(backend):
    res = schedopt.solve(assignment(), backend)
    assert res.objective == pytest.approx(5)
    assert res.values["x"].tolist() == [[0, 1, 0], [1, 0, 0], [0, 0, 1]]


@pytest.mark.parametrize("backend", LP_BACKENDS)
def test_lp_known_dual(backend):
    res = schedopt.solve(lp_with_dual(), backend)
    assert res.objective == pytest.approx(11)
    assert res.x == pytest.approx([3, 1])
    if schedopt.available_backends()[backend].capabilities.duals:
        assert res.duals == pytest.approx([0, 2 / 3], abs=1e-7)


@pytest.mark.parametrize("backend", MIP_BACKENDS)
def test_infeasible_is_reported_not_raised(backend):
    res = schedopt.solve(infeasible(), backend)
    assert res.termination.reason in (TR.INFEASIBLE, TR.INFEASIBLE_OR_UNBOUNDED)
    assert not res.has_solution
    with pytest.raises(NoSolutionError, match="no feasible solution"):
        _ = res.x
    with pytest.raises(NoSolutionError):
        _ = res.values
    with pytest.raises(schedopt.errors.InfeasibleError):
        res.raise_for_status()


@pytest.mark.parametrize("backend", LP_BACKENDS)
def test_unbounded(backend):
    res = schedopt.solve(unbounded(), backend)
    assert res.termination.reason in (TR.UNBOUNDED, TR.INFEASIBLE_OR_UNBOUNDED)
    with pytest.raises(schedopt.errors.SolveFailedError):
        res.raise_for_status()


@pytest.mark.parametrize("backend", MIP_BACKENDS)
def test_time_limit_returns_status_and_incumbent(backend):
    model = market_split()
    res = schedopt.solve(model, backend, time_limit=0.3)
    assert res.termination.reason in (TR.FEASIBLE, TR.NO_SOLUTION_FOUND), res.termination
    assert res.termination.limit is schedopt.Limit.TIME
    if res.has_solution:
        assert model.violations(res.x) == {}
        assert res.objective >= res.bound - 1e-6  # minimisation: the incumbent is never below the bound
        assert res.objective == pytest.approx(model.evaluate(res.x))
    else:
        with pytest.raises(NoSolutionError):
            _ = res.objective
    with pytest.raises(schedopt.errors.SolveFailedError):
        res.raise_for_status()


def test_explain_infeasibility_names_families_and_labels():
    rep = schedopt.explain_infeasibility(infeasible())
    assert not rep.feasible
    assert set(rep.families) == {"capacity", "demand"}
    assert "capacity[gpu]" in rep.rows
    assert schedopt.explain_infeasibility(knapsack()).feasible


def test_explain_integer_only_infeasibility():
    """2x + 2y == 3 has LP solutions but no integer one: the deletion filter must name `parity` only."""
    m = schedopt.LinearModel("parity")
    m.add_variables("x", 2, kind="integer", upper=5)
    m.add_constraints("parity", {"x": [[2, 2]]}, lower=3, upper=3, labels=["p"])
    m.add_constraints("harmless", {"x": [[1, -1]]}, upper=4)
    rep = schedopt.explain_infeasibility(m)
    assert rep.families == ["parity"]
    assert rep.rows == ["parity[p]"]


# ---------------------------------------------------------------- brute force and agreement (hypothesis)
@st.composite
def small_ips(draw):
    n = draw(st.integers(1, 5))
    m = draw(st.integers(1, 3))
    ub = draw(st.lists(st.integers(0, 2), min_size=n, max_size=n))
    A = draw(st.lists(st.lists(st.integers(-3, 4), min_size=n, max_size=n), min_size=m, max_size=m))
    b = draw(st.lists(st.integers(0, 8), min_size=m, max_size=m))
    c = draw(st.lists(st.integers(-5, 5), min_size=n, max_size=n))
    return np.array(A, float), np.array(b, float), np.array(c, float) / 2, np.array(ub, float)


@given(small_ips(), st.sampled_from(["minimize", "maximize"]))
def test_mip_backends_match_brute_force(ip, sense):
    A, b, c, ub = ip
    model = schedopt.LinearModel.from_arrays(c=c, A=A, row_upper=b, col_upper=ub, integrality=1, sense=sense)
    best = None
    for x in itertools.product(*[range(int(u) + 1) for u in ub]):
        x = np.array(x, float)
        if np.all(A @ x <= b + 1e-9):
            v = c @ x
            if best is None or (v > best if sense == "maximize" else v < best):
                best = v
    for backend in MIP_BACKENDS:
        res = schedopt.solve(model, backend)
        if best is None:
            assert res.termination.reason in (TR.INFEASIBLE, TR.INFEASIBLE_OR_UNBOUNDED), backend
        else:
            assert res.termination.reason is TR.OPTIMAL, backend
            assert res.objective == pytest.approx(best, abs=1e-6), backend
            assert model.violations(res.x) == {}, backend


@given(
    st.integers(1, 4).flatmap(
        lambda n: st.tuples(
            st.lists(st.lists(st.floats(-3, 3), min_size=n, max_size=n), min_size=1, max_size=4),
            st.lists(st.floats(-3, 3), min_size=n, max_size=n),
        )
    )
)
def test_lp_backends_agree(data):
    A, c = (np.round(np.array(v, float), 3) for v in data)
    b = np.abs(A).sum(axis=1) + 1.0  # x = 0 feasible; boxes keep it bounded
    model = schedopt.LinearModel.from_arrays(c=c, A=A, row_upper=b, col_lower=-2, col_upper=2)
    ref = schedopt.solve(model, "highs")
    assert ref.termination.reason is TR.OPTIMAL
    for backend in LP_BACKENDS:
        res = schedopt.solve(model, backend)
        assert res.objective == pytest.approx(ref.objective, abs=1e-6), backend


# ---------------------------------------------------------------- round trips
def test_write_mps_and_lp_round_trip(tmp_path):
    import highspy

    for model, opt in ((knapsack(), 9.0), (assignment(), 5.0)):
        for ext in ("mps", "lp"):
            path = tmp_path / f"{model.name}.{ext}"
            getattr(model, f"write_{ext}")(str(path))
            h = highspy.Highs()
            h.setOptionValue("output_flag", False)
            h.readModel(str(path))
            h.run()
            assert h.getInfo().objective_function_value == pytest.approx(opt)
    text = (tmp_path / "assignment.lp").read_text()
    assert "one_machine_per_job(j1)" in text and "x(j2,m1)" in text


def test_to_pyomo_same_optimum():
    import pyomo.environ as pyo

    pm = assignment().to_pyomo()
    assert {c.name for c in pm.component_objects(pyo.Var)} == {"x"}
    assert {c.name for c in pm.component_objects(pyo.Constraint)} == {"one_machine_per_job", "one_job_per_machine"}
    from pyomo.contrib.solver.common.factory import SolverFactory

    SolverFactory("highs").solve(pm)
    assert pyo.value(pm.objective) == pytest.approx(5)
    # indexed by the model's labels (j0 -> m1 is in the unique optimum), rows by their labels too
    assert pyo.value(pm.x["j0", "m1"]) == pytest.approx(1) and pyo.value(pm.x["j0", "m0"]) == pytest.approx(0)
    assert set(pm.one_machine_per_job.keys()) == {"j0", "j1", "j2"}
    # a block without labels keeps positions
    k = knapsack()
    k.add_variables("y", 2, kind="binary")
    assert set(k.to_pyomo().y.keys()) == {0, 1}


@pytest.mark.parametrize("solver", ["highs", "appsi_highs"])
def test_pyomo_backend_current_and_appsi_solver_names(solver):
    r = schedopt.solve(assignment(), "pyomo", solver=solver)
    assert r.termination.reason is TR.OPTIMAL and r.objective == pytest.approx(5)
    assert r.stats["solver"] == solver
    r = schedopt.solve(knapsack(), "pyomo", solver=solver, time_limit=10)
    assert r.objective == pytest.approx(9) and r.bound == pytest.approx(9, abs=1e-6)


def test_pyomo_backend_names_an_unknown_solver():
    with pytest.raises(InputError, match=r"options.solver='cplx'.*appsi_highs"):
        schedopt.solve(knapsack(), "pyomo", solver="cplx")


def test_every_backend_in_one_process():
    """highspy and ortools each carry HiGHS; the pins must let every backend import and solve in one process."""
    code = (
        "import schedopt, numpy as np\n"
        "m = schedopt.LinearModel.from_arrays(c=[1, 2], A=[[1, 1]], row_lower=[1], col_upper=1, integrality=1)\n"
        "names = [b for b in schedopt.available_backends() if b != 'mckp']\n"
        "for b in names + names[::-1]:\n"
        "    r = schedopt.solve(m, b); assert abs(r.objective - 1) < 1e-9, (b, r)\n"
        "print(len(names))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert int(out.stdout.strip()) >= 5  # highs, scipy, cpsat, mathopt, pyomo (+ glpk where installed)


# ---------------------------------------------------------------- error paths
def test_unknown_backend():
    with pytest.raises(BackendUnavailableError, match="'nope'.*unknown backend"):
        schedopt.solve(knapsack(), "nope")


def test_cpsat_refuses_continuous_models():
    if "cpsat" not in ALL:
        pytest.skip("ortools missing")
    with pytest.raises(BackendCapabilityError, match="integer"):
        schedopt.solve(lp_with_dual(), "cpsat")


def test_cpsat_real_objective_matches_highs():
    rng = np.random.default_rng(7)
    n = 25
    w = rng.integers(1, 30, n)
    c = rng.random(n) * 10
    m = schedopt.LinearModel.from_arrays(c=c, A=[w], row_upper=[w.sum() // 3], col_upper=1, integrality=1, sense="maximize")
    a, b = schedopt.solve(m, "highs", mip_rel_gap=0), schedopt.solve(m, "cpsat", mip_rel_gap=0)
    assert b.objective == pytest.approx(a.objective, rel=1e-9)
    assert b.bound >= b.objective - 1e-9


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [({"time_limit": -1}, "time_limit"), ({"mip_rel_gap": 2}, "mip_rel_gap"), ({"threads": -1}, "threads")],
)
def test_bad_parameters(kwargs, field):
    with pytest.raises(InputError) as ei:
        schedopt.solve(knapsack(), "highs", **kwargs)
    assert ei.value.field == field


def test_warm_start_shape_checked():
    with pytest.raises(InputError, match="warm_start"):
        schedopt.solve(knapsack(), "highs", warm_start=[1, 0])
    res = schedopt.solve(knapsack(), "highs", warm_start=[1, 0, 0, 1])
    assert res.objective == pytest.approx(9)


def test_available_backends_lists_capabilities():
    info = schedopt.available_backends()
    assert {"highs", "scipy"} <= set(info)
    assert info["highs"].capabilities.iis and info["highs"].capabilities.duals
    assert info["scipy"].available and info["scipy"].reason == ""


def test_result_gap_and_summary():
    res = schedopt.solve(knapsack(), "highs")
    assert math.isfinite(res.timings.solve) and res.timings.solve >= 0
    assert "OPTIMAL" in res.summary()


@pytest.mark.parametrize("backend", ALL)
def test_empty_model_is_its_constant(backend):
    """Regression: HiGHS answers kModelEmpty and scipy raises on a model without columns."""
    m = schedopt.LinearModel("empty", sense="maximize")
    m.set_objective(np.zeros(0), constant=3.0)
    res = schedopt.solve(m, backend)
    assert res.termination.reason is TR.OPTIMAL
    assert res.objective == 3.0 and res.x.shape == (0,)


@pytest.mark.parametrize("backend", MIP_BACKENDS)
def test_bound_stays_valid_when_stopping_at_a_gap(backend):
    """Regression: GLPK stopping at its relative gap (GLP_EMIPGAP) reported bound = incumbent, above the optimum."""
    rng = np.random.default_rng(11)
    n = 40
    W = rng.integers(5, 40, size=(3, n))
    m = schedopt.LinearModel.from_arrays(
        c=rng.integers(10, 60, n) + rng.random(n), A=W, row_upper=W.sum(axis=1) // 4, col_upper=1, integrality=1, sense="maximize"
    )
    opt = schedopt.solve(m, "highs", mip_rel_gap=0).objective
    res = schedopt.solve(m, backend, mip_rel_gap=0.05, time_limit=30)
    assert res.has_solution
    assert res.objective <= opt + 1e-6
    assert res.bound >= opt - 1e-6
    assert res.gap <= 0.05 + 1e-9 or res.termination.reason is TR.FEASIBLE


def test_cpsat_reaches_the_requested_relative_gap_on_small_objectives():
    """Regression: CP-SAT's default absolute gap (1e-4 in objective units) made it stop and claim OPTIMAL 2-6%
    short of the optimum when every objective coefficient is about 1e-5."""
    rng = np.random.default_rng(3)
    n = 60
    W = rng.integers(5, 40, size=(3, n))
    c = (rng.integers(10, 60, n) + rng.random(n)) * 1e-6
    m = schedopt.LinearModel.from_arrays(
        c=c, A=W, row_upper=W.sum(axis=1) // 4, col_upper=1, integrality=1, sense="maximize"
    )
    a = schedopt.solve(m, "highs", mip_rel_gap=0)
    b = schedopt.solve(m, "cpsat", mip_rel_gap=1e-9)
    assert b.termination.reason is TR.OPTIMAL
    assert b.objective == pytest.approx(a.objective, rel=1e-8, abs=0)


def test_registered_backends_lists_missing_ones_too():
    from schedopt.backends import registered_backends

    reg = registered_backends()
    assert set(schedopt.available_backends()) <= set(reg)
    assert set(reg) == set(schedopt.available_backends(include_missing=True))
    assert reg["highs"].name == "highs"
    reg.pop("highs")  # a copy: the registry is untouched
    assert "highs" in registered_backends()


@pytest.mark.parametrize(
    ("backend", "good", "typo"),
    [("highs", {"presolve": "off"}, "presolv"), ("scipy", {"presolve": True}, "presolv"),
     ("cpsat", {"num_workers": 1}, "num_worker"), ("mathopt", {"solver": "gscip"}, "solvr"),
     ("pyomo", {"presolve": "off"}, "presolv"), ("mckp", {"exact": True}, "exakt")],
)
def test_solver_options_are_checked_by_name(backend, good, typo):
    if backend not in schedopt.available_backends():
        pytest.skip(f"{backend} not installed")
    m = knapsack()
    assert schedopt.solve(m, backend, **good).objective == pytest.approx(9.0)
    with pytest.raises(InputError, match=rf"options\.{typo}=.*is not a {backend} option") as ei:
        schedopt.solve(m, backend, **{typo: good[next(iter(good))]})
    assert ei.value.field == f"options.{typo}"
    assert next(iter(good)) in str(ei.value)  # the closest known name is listed


def test_raw_options_pass_through_unchecked():
    m = knapsack()
    # handed to HiGHS verbatim (no name check) and recorded in the result's params
    r = schedopt.solve(m, "highs", raw_options={"mip_feasibility_tolerance": 1e-7})
    assert r.objective == pytest.approx(9.0) and r.params["mip_feasibility_tolerance"] == 1e-7
    with pytest.raises(InputError, match="raw_options"):
        schedopt.solve(m, "highs", raw_options=[("presolve", "off")])


def test_c_level_stdout_goes_to_stderr_while_solving(capfd):
    import os

    from schedopt.stdio import stdout_to_stderr

    with stdout_to_stderr():
        os.write(1, b"from C\n")
    os.write(1, b"after\n")
    out, err = capfd.readouterr()
    assert out == "after\n" and err == "from C\n"
    schedopt.solve(knapsack(), "highs")  # a silent MIP solve writes nothing to stdout
    assert capfd.readouterr().out == ""


def test_verbose_mckp_logs_its_phases_at_info(caplog, capfd):
    import logging

    m = knapsack()
    with caplog.at_level(logging.INFO, logger="schedopt"):
        schedopt.solve(m, "mckp", verbose=True)
    msgs = [r.getMessage() for r in caplog.records if r.name.startswith("schedopt")]
    assert any(s.startswith("mckp: dual bound") for s in msgs)
    assert any(s.startswith("mckp: repaired incumbent") for s in msgs)
    assert any(s.startswith("mckp: ") and "(objective 9, bound 9)" in s for s in msgs)
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="schedopt"):
        schedopt.solve(m, "mckp")  # not verbose: nothing at INFO
    assert not [r for r in caplog.records if r.levelno >= logging.INFO and r.name.startswith("schedopt")]
    assert capfd.readouterr().out == ""


@pytest.mark.parametrize("backend", [b for b in ("highs", "scipy", "cpsat", "mathopt", "pyomo", "mckp")
                                     if b in schedopt.available_backends()])
def test_infinite_time_limit_means_no_limit(backend):
    r = schedopt.solve(knapsack(), backend, time_limit=math.inf)
    assert r.termination.reason is TR.OPTIMAL and r.objective == pytest.approx(9.0)
    assert r.params["time_limit"] is None


def test_warm_start_must_be_finite_and_threads_bounded():
    with pytest.raises(InputError, match="warm_start"):
        schedopt.solve(knapsack(), "highs", warm_start=[1.0, np.nan, 0.0, 0.0])
    with pytest.raises(InputError, match="warm_start"):
        schedopt.solve(knapsack(), "highs", warm_start=["a", "b", "c", "d"])
    with pytest.raises(InputError, match="threads"):
        schedopt.solve(knapsack(), "highs", threads=10**9)


# ------------------------------------------------------------------ issue 20: backend cases found by the fuzzer
def _have(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


needs_glpk = pytest.mark.skipif(not _have("swiglpk"), reason="glpk regressions need swiglpk (pip install swiglpk)")
needs_pyomo = pytest.mark.skipif(not _have("pyomo"), reason="needs pyomo (pip install pyomo highspy)")


def test_cpsat_time_limit_zero_claims_no_bound():
    # max 3a + 4b + 5c, 2a + 3b + 4c <= 7, binary (optimum 9): at time_limit=0 CP-SAT stops UNKNOWN and leaves
    # best_objective_bound at the proto default 0.0, which was reported as a bound below the optimum
    res = schedopt.solve(knapsack_7(), "cpsat", time_limit=0)
    assert res.termination.reason is TR.NO_SOLUTION_FOUND
    assert res.bound == math.inf  # unknown, for a maximisation


def knapsack_7() -> schedopt.LinearModel:
    return schedopt.LinearModel.from_arrays([3, 4, 5], [[2, 3, 4]], row_upper=[7], col_upper=1, integrality=1,
                                            sense="maximize")


@needs_glpk
def test_glpk_tiny_coefficient_is_not_a_wrong_optimal():
    # max 3x0 + 4x1 + 5x2, x integer in [0, 10], 1e-12 x0 + x1 + x2 <= 7: x = (10, 0, 7) gives 65 (by hand: x0 is
    # free in effect, x2 has the best ratio); GLPK's presolve answered OPTIMAL 30 before the tiny entry was dropped
    m = schedopt.LinearModel.from_arrays([3, 4, 5], [[1e-12, 1, 1]], row_upper=[7], col_upper=10, integrality=1,
                                         sense="maximize")
    res = schedopt.solve(m, "glpk")
    assert res.termination.reason is TR.OPTIMAL
    assert res.objective == pytest.approx(65.0) and res.x.tolist() == [10.0, 0.0, 7.0]


@needs_glpk
def test_glpk_integer_bound_2_40_is_not_optimal_past_its_bound():
    # max x0 + x1, x0 - x1 <= 3, x integer in [0, 2**40]: GLPK returns x0 = 2**40 + 3, past its bound, as OPTIMAL;
    # the solution check refuses it (the optimum 2**41 at x0 = x1 = 2**40 is not what GLPK gives)
    m = schedopt.LinearModel.from_arrays([1, 1], [[1, -1]], row_upper=[3], col_upper=2**40, integrality=1,
                                         sense="maximize")
    res = schedopt.solve(m, "glpk")
    if res.termination.reason is TR.OPTIMAL:  # a fixed GLPK
        assert res.objective == 2.0**41
    else:
        assert res.termination.reason is TR.NUMERICAL_ERROR and not res.has_solution
        assert "outside its bounds" in res.termination.detail


@needs_glpk
def test_glpk_1e_200_coefficient_is_dropped_before_glpk_sees_it():
    # a coefficient of 1e-200 aborted the interpreter inside GLPK; the model drops it (below TINY_COEFFICIENT)
    m = schedopt.LinearModel.from_arrays([3, 4, 5], [[1e-200, 1, 1]], row_upper=[7], col_upper=1, integrality=1,
                                         sense="maximize")
    assert m.dropped_coefficients == 1 and m.to_arrays().A.nnz == 2
    res = schedopt.solve(m, "glpk")
    assert res.termination.reason is TR.OPTIMAL and res.objective == pytest.approx(12.0)  # all three: 3 + 4 + 5


def test_pyomo_free_row_is_skipped():
    # max x0 + x1, x0 - x1 free (no bound), x0 + x1 <= 3, x integer >= 0: optimum 3; the free row crashed to_pyomo
    m = schedopt.LinearModel.from_arrays([1, 1], [[1, -1], [1, 1]], row_upper=[np.inf, 3], integrality=1,
                                         sense="maximize")
    res = schedopt.solve(m, "pyomo")
    assert res.termination.reason is TR.OPTIMAL and res.objective == pytest.approx(3.0)


@pytest.mark.parametrize("where", ["row_lower", "row_upper", "col_upper", "A", "c"])
def test_pyomo_and_mathopt_1e20_magnitudes_are_refused_by_the_model(where):
    # pyomo returned OPTIMAL with a violated row at a row lower bound >= 1e20 and mathopt crashed on bounds or
    # coefficients >= 1e20 (both read 1e20 as infinity): the model refuses them, naming the field
    kw = {"c": [1.0, 1.0], "A": [[1.0, 1.0]], "row_lower": [0.0], "row_upper": [3.0], "col_upper": 5.0}
    kw[where] = {"row_lower": [1e20], "row_upper": [1e20], "col_upper": 1e21, "A": [[1e20, 1]], "c": [1e20, 1]}[where]
    with pytest.raises(InputError, match="magnitude must be below 1e"):
        schedopt.LinearModel.from_arrays(**kw)


def test_scipy_unbounded_mip_is_infeasible_or_unbounded_not_error():
    # max x0 + x1, x0 - x1 <= 3, x integer >= 0: unbounded (x1 grows freely); scipy.milp says status 4
    m = schedopt.LinearModel.from_arrays([1, 1], [[1, -1]], row_upper=[3], integrality=1, sense="maximize")
    res = schedopt.solve(m, "scipy")
    assert res.termination.reason in (TR.UNBOUNDED, TR.INFEASIBLE_OR_UNBOUNDED)


# ------------------------------------------------------------------ Ctrl-C (issue 20)
_SIGINT_CHILD = """
import sys, schedopt
from schedopt.testing import market_split
backend = sys.argv[1]
kw = {"in_child_process": True} if sys.argv[2:] == ["forked"] else {}
m = market_split()
schedopt.solve(m, backend, time_limit=0.05, **kw)  # load the solver: the interrupt must land in the real solve
print("ready", flush=True)
r = schedopt.solve(m, backend, time_limit=60, **kw)
print(r.termination.reason.value, r.termination.limit.value if r.termination.limit else None, r.has_solution,
      round(r.timings.solve, 2), flush=True)
"""


@pytest.mark.parametrize("backend", ["cpsat", pytest.param("highs", marks=pytest.mark.slow),
                                     pytest.param("mathopt", marks=pytest.mark.slow),
                                     pytest.param("glpk", marks=needs_glpk),
                                     pytest.param("pyomo", marks=[needs_pyomo, pytest.mark.slow])])
def test_ctrl_c_stops_the_solve_promptly_and_reports_interrupted(backend):
    """SIGINT one second into a 60 s solve of the market-split instance (no solver proves it in a minute): the solve
    stops within seconds and says INTERRUPTED, with the incumbent it holds (every x is feasible through the
    slacks). glpk stops through a ctypes call that releases the GIL and a shortened tm_lim; pyomo's HiGHS raises
    KeyboardInterrupt out of a callback, which the backend reports as INTERRUPTED without a solution."""
    from schedopt.testing.interrupt import sigint_child

    run = sigint_child(_SIGINT_CHILD, backend, delay=1.0)
    assert run.returncode == 0, run.stderr
    out, waited = run.stdout, run.waited
    reason, limit, has_solution, solve_seconds = out.split()
    assert (reason, limit) in (("feasible", "interrupted"), ("no_solution_found", "interrupted"))
    assert has_solution == ("True" if reason == "feasible" else "False")
    assert waited < 10 and float(solve_seconds) < 15
    if backend == "glpk":  # it holds an incumbent after a second, and returns it
        assert reason == "feasible" and waited < 3


@pytest.mark.parametrize("backend", ["scipy", pytest.param("pyomo", marks=needs_pyomo)])
def test_ctrl_c_kills_the_child_process_of_a_forked_solve(backend):
    """``in_child_process=True``: scipy's HiGHS ignores SIGINT (a Ctrl-C waited for the 60 s limit); in a child
    process the first Ctrl-C kills it: NO_SOLUTION_FOUND, INTERRUPTED, at once (the incumbent dies with the child)."""
    from schedopt.testing.interrupt import sigint_child

    run = sigint_child(_SIGINT_CHILD, backend, "forked", delay=1.0)
    assert run.returncode == 0, run.stderr
    reason, limit, has_solution, solve_seconds = run.stdout.split()
    assert (reason, limit, has_solution) == ("no_solution_found", "interrupted", "False")
    assert run.waited < 3 and float(solve_seconds) < 5


@pytest.mark.parametrize("backend", ["scipy", pytest.param("pyomo", marks=needs_pyomo)])
def test_a_forked_solve_answers_like_one_in_place(backend):
    for model, opt in ((knapsack_7(), 9.0), (schedopt.LinearModel.from_arrays([3, 4, 5], [[2, 3, 4]], row_upper=[7],
                                                                              col_upper=1, sense="maximize"), 9.5)):
        res = schedopt.solve(model, backend, in_child_process=True)
        assert res.termination.reason is TR.OPTIMAL and res.objective == pytest.approx(opt)
    with pytest.raises(InputError, match="in_child_process"):
        schedopt.solve(knapsack_7(), backend, in_child_process="yes")


def test_the_in_child_default_is_switchable_and_an_explicit_option_wins():
    from schedopt.backends.isolate import set_in_child_default

    assert set_in_child_default(True) is False
    try:
        res = schedopt.solve(knapsack_7(), "scipy")  # forked by default now: same answer
        assert res.termination.reason is TR.OPTIMAL and res.objective == pytest.approx(9.0)
        assert res.stats["in_child_process"] is True
        res = schedopt.solve(knapsack_7(), "scipy", in_child_process=False)
        assert res.objective == pytest.approx(9.0) and res.stats["in_child_process"] is False
    finally:
        assert set_in_child_default(False) is True
    with pytest.raises(InputError, match="flag"):
        set_in_child_default("yes")  # type: ignore[arg-type]


def test_run_forked_returns_raises_and_reports_a_dead_child():
    import os
    import signal

    from schedopt.backends.isolate import ChildProcessDied, run_forked

    assert run_forked(lambda: {"x": [1.5, 2]}) == ({"x": [1.5, 2]}, False)

    def fails() -> None:
        raise ValueError("inside the child")

    with pytest.raises(ValueError, match="inside the child"):
        run_forked(fails)
    with pytest.raises(ChildProcessDied, match="signal 9"):
        run_forked(lambda: os.kill(os.getpid(), signal.SIGKILL))


def test_highs_threads_above_64_are_clamped_not_a_five_second_start():
    """The long fuzz run: threads=1024 made HiGHS start 1,024 threads before a 0.006 s knapsack (5.1 s here, a
    'hang' under load); highs and pyomo clamp to MAX_THREADS = 64. A fresh process, so that no earlier solve has set
    HiGHS's global scheduler up."""
    code = ("import time, schedopt\n"
            "m = schedopt.LinearModel.from_arrays([3, 4, 5], [[2, 3, 4]], row_upper=[7], col_upper=1, integrality=1,"
            " sense='maximize')\n"
            "t = time.perf_counter(); r = schedopt.solve(m, 'highs', threads=1024)\n"
            "print(r.objective, time.perf_counter() - t)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    objective, seconds = out.stdout.split()
    assert float(objective) == pytest.approx(9.0) and float(seconds) < 2.0


def test_mathopt_threads_above_scips_64_are_clamped_not_a_crash():
    # threads=151 made SCIP refuse parallel/maxnthreads and ortools fail with an internal AttributeError
    res = schedopt.solve(knapsack_7(), "mathopt", threads=151)
    assert res.termination.reason is TR.OPTIMAL and res.objective == pytest.approx(9.0)


@needs_glpk
def test_glpk_time_limit_past_its_int_milliseconds_is_no_limit():
    # 23,421,796 s is 2.3e10 ms, past GLPK's C int tm_lim: it raised OverflowError inside swiglpk
    res = schedopt.solve(knapsack_7(), "glpk", time_limit=23421796)
    assert res.termination.reason is TR.OPTIMAL and res.objective == pytest.approx(9.0)


def test_mathopt_scip_solve_prints_no_interrupter_noise() -> None:
    """OR-Tools' SCIP prints two ERROR lines whenever a SolveInterrupter is attached (interrupting still works):
    a silent solve keeps them off stderr, and other stderr output still shows."""
    import subprocess
    import sys

    code = (
        "import schedopt, sys\n"
        "m = schedopt.LinearModel('k', sense='maximize')\n"
        "m.add_variables('x', 4, kind='binary')\n"
        "m.add_constraints('w', {'x': [[2, 3, 4, 5]]}, upper=7)\n"
        "m.set_objective({'x': [3, 4, 5, 6]})\n"
        "r = schedopt.solve(m, 'mathopt')\n"
        "print(r.objective)\n"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert p.stdout.strip() == "9.0"
    assert "SCIPcatchEvent" not in p.stderr and "Error <-9>" not in p.stderr, p.stderr


def test_filtered_stderr_keeps_other_lines(capfd: pytest.CaptureFixture[str]) -> None:
    import os
    import re

    from schedopt.stdio import filtered_stderr

    with filtered_stderr(re.compile("noise")):
        os.write(2, b"noise line\nkept line\n")
    assert capfd.readouterr().err == "kept line\n"


def test_solve_worker_threads_are_kept_and_reused() -> None:
    """Ten solves one after another in the main thread start at most one new worker thread (an idle one takes the
    next), each answers what the solver answers (3-binary knapsack, optimum 5), a worker runs under the task's stop
    scope and an error inside a task reaches the caller."""
    from schedopt import interrupt as base  # the worker pool lives in schedopt.interrupt (backends.base re-exports)

    m = schedopt.LinearModel("knap", sense="maximize")
    m.add_variables("x", 3, kind="binary")
    m.add_constraints("cap", {"x": [[2, 3, 4]]}, upper=5)
    m.set_objective({"x": [2, 3, 4]})
    before = base._WORKERS.started
    objs = [schedopt.solve(m, "highs").objective for _ in range(10)]
    assert objs == [pytest.approx(5.0)] * 10
    assert base._WORKERS.started - before <= 1
    scope = base.StopScope()
    assert base.submit(lambda: base._THREAD.scope is scope, scope).result() is True

    def boom() -> None:
        raise ValueError("inside the worker")

    with pytest.raises(ValueError, match="inside the worker"):
        base.submit(boom).result()


def test_highs_answers_whatever_thread_count_started_its_scheduler() -> None:
    """HiGHS sizes one thread scheduler per process at its first solve and refuses a later run asking another count
    (kError before solving, with a bound of 0 in its info). The backend then runs on the scheduler there is and says
    so; an answer at every count, each the optimum (9: items of value 5 and 4, two of three fit)."""
    pytest.importorskip("highspy")
    m = schedopt.LinearModel("threads")
    m.add_variables("x", 3, kind="binary")
    m.add_constraints("c", [[1, 1, 1]], upper=2)
    m.set_objective({"x": [4, 5, 3]}, sense="maximize")
    seen = []
    try:
        for threads in (3, 1, 2, 0, 1):
            r = schedopt.solve(m, "highs", threads=threads)
            assert r.termination.reason is TR.OPTIMAL, (threads, r.termination)
            assert r.objective == pytest.approx(9.0) and r.bound == pytest.approx(9.0)
            seen.append("not applied" in (r.termination.detail or ""))
    finally:  # the next solve in this process starts a scheduler of its own count (mckp's LP asks for one thread)
        import highspy

        highspy.Highs.resetGlobalScheduler(True)
    assert any(seen)  # (at least one count differed from the scheduler's: the note was given)
