"""The throughput fit's lean L-BFGS-B driver (schedopt.goodput.lbfgsb, issue 26): the same iterates as
scipy.optimize.minimize, bit for bit, on the fit's own problems; a stopping rule that matches scipy's; and a
fallback to scipy.optimize.minimize when its self-check fails."""

from __future__ import annotations

import numpy as np
import pytest
import scipy
import scipy.optimize

from schedopt.goodput import lbfgsb
from schedopt.goodput._throughput import PARAM_NAMES, ThroughputParams, fit_throughput


@pytest.fixture
def fresh_state():
    """Run a test with the process's self-check state cleared, and put it back afterwards."""
    saved = list(lbfgsb._STATE)
    lbfgsb._STATE.clear()
    yield lbfgsb._STATE
    lbfgsb._STATE[:] = saved


def _rows(rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    """Profile-like rows (1 GPU, several batches, no sync) plus measured rows at random shapes, with 3 % noise: the
    kind of problem the simulator's estimator hands the fit."""
    p = ThroughputParams(*np.exp(rng.uniform(np.log(1e-3), np.log(0.2), 6)), float(rng.uniform(1.0, 4.0)))
    p = ThroughputParams(p.alpha_c, p.beta_c / 100, max(p.alpha_n, 1.1 * p.alpha_r), max(p.beta_n, 1.1 * p.beta_r),
                         p.alpha_r, p.beta_r, p.gamma)
    k = int(rng.integers(0, 6))
    n = np.concatenate([np.ones(4, int), rng.integers(1, 4, k)])
    r = np.concatenate([np.ones(4, int), n[4:] * rng.integers(1, 5, k)])
    b = np.concatenate([[16.0, 32.0, 64.0, 128.0], rng.choice([16.0, 32.0, 64.0], k)])
    step = np.asarray(p.step_time(n, r, b), float) * rng.uniform(0.97, 1.03, n.size)
    sync = np.where(r > 1, np.clip(step - np.asarray(p.compute_time(b), float), 0, None) * 0.9, 0.0)
    return n, r, b, step, sync


def test_the_lean_driver_is_the_path_taken_on_this_scipy(fresh_state) -> None:
    """On scipy >= 1.15 (the C setulb the driver calls) the self-check passes, so the fast path is what runs."""
    if tuple(int(x) for x in scipy.__version__.split(".")[:2]) < (1, 15):
        pytest.skip("the lean driver targets scipy >= 1.15's setulb; older versions fall back")
    assert lbfgsb.lean_available() is True
    assert fresh_state == [True]


@pytest.mark.parametrize("starts", [(1.0,), (1.0, 2.0, 5.0)])
def test_fits_are_bit_identical_to_scipy_minimize(fresh_state, starts) -> None:
    """40 random fits (pinned and free parameters, one or several starts): every parameter is the very same float
    through the lean driver and through scipy.optimize.minimize."""
    if not lbfgsb.lean_available():
        pytest.skip("the lean driver is not available on this scipy")
    rng = np.random.default_rng(26)
    for _ in range(20):
        rows = _rows(rng)
        fresh_state[:] = [True]
        lean = fit_throughput(*rows, gamma_starts=starts)
        fresh_state[:] = [False]
        ref = fit_throughput(*rows, gamma_starts=starts)
        assert [getattr(lean, f) for f in PARAM_NAMES] == [getattr(ref, f) for f in PARAM_NAMES]


def _rosen(x: np.ndarray) -> tuple[float, np.ndarray]:
    f = float(np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2))
    g = np.zeros_like(x)
    g[:-1] = -400.0 * x[:-1] * (x[1:] - x[:-1] ** 2) - 2.0 * (1.0 - x[:-1])
    g[1:] += 200.0 * (x[1:] - x[:-1] ** 2)
    return f, g


@pytest.mark.parametrize("maxiter", [1, 3, 1000])
def test_minimize_matches_scipy_including_its_iteration_limit(maxiter) -> None:
    """Rosenbrock in 5 variables, one bound active at the optimum: the point and value equal scipy's, also when
    the iteration limit stops both early; a start outside the bounds is clipped as scipy clips it."""
    if not lbfgsb.lean_available():
        pytest.skip("the lean driver is not available on this scipy")
    lo, hi = np.full(5, -2.0), np.array([2.0, 2.0, 2.0, 0.8, 2.0])
    x0 = np.array([-1.2, 1.0, 3.0, 0.5, -1.0])  # x0[2] outside its bound
    x, f = lbfgsb.minimize(_rosen, x0, lo, hi, maxiter=maxiter)
    res = scipy.optimize.minimize(_rosen, x0, method="L-BFGS-B", jac=True, bounds=list(zip(lo, hi)),
                                  options={"maxiter": maxiter})
    assert np.array_equal(x, res.x) and f == res.fun
    if maxiter == 1000:
        assert res.success and x[3] == 0.8  # the bound holds the optimum
    else:
        assert res.nit == maxiter and not res.success


def test_a_failed_self_check_falls_back_to_scipy_minimize(fresh_state, monkeypatch) -> None:
    """Another scipy (here: a setulb that raises) makes the driver hand every call to scipy.optimize.minimize, with
    scipy's answer, and never retry the lean path in the process."""
    calls = []

    def broken(*args, **kwargs):
        calls.append(1)
        raise TypeError("setulb() takes 18 positional arguments")

    monkeypatch.setattr(lbfgsb, "_lean", broken)
    lo, hi = np.full(3, -2.0), np.full(3, 2.0)
    x, f = lbfgsb.minimize(_rosen, [0.0, 0.0, 0.0], lo, hi)
    assert fresh_state == [False] and len(calls) == 1
    np.testing.assert_allclose(x, [1.0, 1.0, 1.0], atol=1e-3)
    assert f == pytest.approx(0.0, abs=1e-6)
    lbfgsb.minimize(_rosen, [0.5, 0.5, 0.5], lo, hi)
    assert len(calls) == 1


def test_repeated_points_and_a_nan_region_count_evaluations_as_scipy() -> None:
    """Where the objective is NaN the routine asks again at points it already had; scipy's ScalarFunction answers
    those from its kept value, and so does the driver: the same point, value and count of real evaluations (which
    scipy's maxfun rule reads)."""
    if not lbfgsb.lean_available():
        pytest.skip("the lean driver is not available on this scipy")

    def fg(x: np.ndarray) -> tuple[float, np.ndarray]:
        if x[0] > 0.5:
            return float("nan"), np.full_like(x, np.nan)
        return float(np.sum((x - 1.0) ** 2)), 2.0 * (x - 1.0)

    lo, hi = np.full(3, -2.0), np.full(3, 2.0)
    x, f, nfev = lbfgsb._lean(fg, np.zeros(3), lo, hi, 1000)
    res = scipy.optimize.minimize(fg, np.zeros(3), method="L-BFGS-B", jac=True, bounds=list(zip(lo, hi)))
    assert np.array_equal(x, res.x) and np.isnan(f) and np.isnan(res.fun) and nfev == res.nfev


def test_the_recorded_check_answer_is_scipys_on_this_version() -> None:
    """The self-check's record for the installed scipy (when there is one) is exactly what scipy.optimize.minimize
    returns on the check problem: the record stands in for that solve, so it must be its answer, float for float."""
    rec = lbfgsb._RECORDED.get(scipy.__version__)
    if rec is None:
        pytest.skip(f"no record for scipy {scipy.__version__}: the self-check solves both ways")
    x0, lo, hi = np.array(lbfgsb._CHECK_START), np.array(lbfgsb._CHECK_LO), np.array(lbfgsb._CHECK_HI)
    x, f, nfev = lbfgsb._reference(lbfgsb._check_problem, x0, lo, hi, 1000)
    assert [v.hex() for v in x.tolist()] == list(rec[0]) and f.hex() == rec[1] and nfev == rec[2]
    assert lbfgsb._matches_record(lbfgsb._lean(lbfgsb._check_problem, x0, lo, hi, 1000))
    assert not lbfgsb._matches_record((x, np.nextafter(f, 1.0), nfev))  # one ulp off: not the record


def test_a_check_answer_off_the_record_is_solved_both_ways(fresh_state, monkeypatch) -> None:
    """A scipy version without a record (here: the record taken away) runs the check both ways, as before, and
    still takes the lean path when both agree."""
    monkeypatch.setattr(lbfgsb, "_RECORDED", {})
    calls = []
    reference = lbfgsb._reference

    def counted(*args):
        calls.append(1)
        return reference(*args)

    monkeypatch.setattr(lbfgsb, "_reference", counted)
    assert lbfgsb.lean_available() is (tuple(int(v) for v in scipy.__version__.split(".")[:2]) >= (1, 15))
    assert len(calls) == 1


def test_the_routine_loads_without_scipy_optimize_and_scipy_imports_it_as_usual() -> None:
    """In a fresh process the fit's routine is scipy's compiled module, loaded without running
    scipy/optimize/__init__.py; the self-check passes on its record; a later ``import scipy.optimize`` still has its
    own ``_lbfgsb`` (the same compiled setulb) and its minimize agrees with the lean driver."""
    import subprocess
    import sys
    from pathlib import Path

    code = (
        "import sys, numpy as np\n"
        "from schedopt.goodput import lbfgsb\n"
        "m = lbfgsb.routine()\n"
        "ok = lbfgsb.lean_available()\n"
        "print('optimize' , 'scipy.optimize' in sys.modules)\n"
        "import scipy.optimize\n"
        "print('same', scipy.optimize._lbfgsb.setulb is m.setulb, ok)\n"
        "fg = lambda x: (float(np.sum((x - 3.0) ** 2)), 2.0 * (x - 3.0))\n"
        "r = scipy.optimize.minimize(fg, np.zeros(3), jac=True, method='L-BFGS-B', bounds=[(-1, 2)] * 3)\n"
        "x, f = lbfgsb.minimize(fg, np.zeros(3), [-1] * 3, [2] * 3)\n"
        "print('agree', np.array_equal(x, r.x) and f == r.fun)\n"
    )
    root = Path(__file__).resolve().parents[1]
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True,
                         cwd=root).stdout
    recorded = scipy.__version__ in lbfgsb._RECORDED
    assert f"optimize {not recorded}" in out
    assert "same True True" in out and "agree True" in out
