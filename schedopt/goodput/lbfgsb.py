"""A lean driver of scipy's L-BFGS-B for the throughput fit's small problems (issue 26).

``scipy.optimize.minimize(method="L-BFGS-B")`` spends about a third of a seven-parameter fit outside the objective:
option checks, a ``ScalarFunction`` with its finite-difference machinery (unused with an exact gradient), a copy
and comparison of ``x`` per evaluation, and an ``OptimizeResult`` with an inverse-Hessian operator. :func:`minimize`
drives the same compiled routine (``scipy.optimize._lbfgsb.setulb``, the C translation of L-BFGS-B that scipy ships
since 1.15) with the same workspace, tolerances and stopping rules as ``scipy.optimize._lbfgsb_py._minimize_lbfgsb``,
so it visits the same iterates and returns the same numbers, bit for bit.

``setulb`` is private to scipy. The driver is therefore used only after a one-time self-check in the process: a
fixed bounded problem solved both ways must give the identical point, value and evaluation count; any difference
or error (another scipy, another signature) makes :func:`minimize` hand every call to ``scipy.optimize.minimize``
from then on. :func:`lean_available` says which path the process took.

Importing ``scipy.optimize`` costs about 0.26 s of CPU beyond ``scipy.sparse`` (its ``__init__`` loads the linear
programming, the global optimizers and ``scipy.linalg``), none of which the fit uses. So the driver loads the one
compiled module it calls, ``_lbfgsb``, from scipy's own ``optimize`` folder, without running
``scipy/optimize/__init__.py`` (:func:`routine`, through :func:`schedopt.scipy_parts.load_extension`; any problem
there takes the normal import). And the self-check compares against scipy's answer on the check problem as recorded for this scipy
version (:data:`_RECORDED`, float-exact, each entry checked against ``scipy.optimize.minimize`` by the tests): the
driver's control flow is Python of its own, the routine is scipy's, so the same point, value and evaluation count
as scipy gave on that version proves the same thing as solving it both ways. A version not recorded, or any
difference from the record (another platform's arithmetic), runs the check both ways, as before.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np

from ..scipy_parts import load_extension

__all__ = ["lean_available", "minimize", "routine"]

# scipy's defaults for L-BFGS-B (scipy.optimize._lbfgsb_py._minimize_lbfgsb)
_MAXCOR = 10
_FTOL = 2.2204460492503131e-09
_GTOL = 1e-5
_MAXFUN = 15000
_MAXLS = 20

_STATE: list[bool] = []  # [True] once the self-check passed, [False] once it failed
_ROUTINE: list[ModuleType] = []  # scipy's compiled _lbfgsb module, once loaded

#: scipy's answer on the self-check's problem (:func:`_check_problem` from ``_CHECK_START`` within ``_CHECK_LO``,
#: ``_CHECK_HI``, maxiter 1000), by scipy version: the point and value as ``float.hex`` and the evaluation count,
#: as ``scipy.optimize.minimize(method="L-BFGS-B")`` returned them (tests/test_goodput_lbfgsb.py checks the
#: entry of the installed version against it)
_RECORDED: dict[str, tuple[tuple[str, ...], str, int]] = {
    "1.17.1": (("0x1.d48e9606686aep-1", "0x1.acb3b9697414fp-1", "0x1.6666666666666p-1", "0x1.f5c28fe9c79aap-2"),
               "0x1.7a1f58b09087bp-3", 38),
}
_CHECK_START = (-1.2, 1.0, -0.5, 0.8)
_CHECK_LO = (-2.0, -2.0, -2.0, -2.0)
_CHECK_HI = (2.0, 2.0, 0.7, 2.0)


def routine() -> ModuleType:
    """scipy's compiled L-BFGS-B module (``scipy.optimize._lbfgsb``), loaded once per process: from its file
    alone where that works and ``scipy.optimize`` is not imported yet (about 2 ms), else by the normal import.
    Loading it also loads scipy's OpenBLAS, which :func:`schedopt.goodput.blas_threads` must see."""
    if not _ROUTINE:
        try:
            module = load_extension("optimize", "_lbfgsb")
            if not callable(getattr(module, "setulb", None)):
                raise ImportError("no setulb")
        except Exception:  # another layout or loader: the normal import
            module = importlib.import_module("scipy.optimize._lbfgsb")
        _ROUTINE.append(module)
    return _ROUTINE[0]


def _lean(fg: Callable[[np.ndarray], tuple[float, np.ndarray]], x0: np.ndarray, lo: np.ndarray, hi: np.ndarray,
          maxiter: int) -> tuple[np.ndarray, float, int]:
    """(x, f, evaluations) of L-BFGS-B on ``fg`` (value and gradient) from ``x0`` within ``[lo, hi]`` (finite)."""
    _lbfgsb = routine()

    n = x0.size
    m = _MAXCOR
    x = np.clip(x0, lo, hi).astype(np.float64)
    low, up = np.array(lo, dtype=np.float64), np.array(hi, dtype=np.float64)
    nbd = np.full(n, 2, dtype=np.int32)  # both bounds finite
    f: Any = np.array(0.0, dtype=np.float64)
    g = np.zeros(n, dtype=np.float64)
    wa = np.zeros(2 * m * n + 5 * n + 11 * m * m + 8 * m, dtype=np.float64)
    iwa = np.zeros(3 * n, dtype=np.int32)
    task = np.zeros(2, dtype=np.int32)
    ln_task = np.zeros(2, dtype=np.int32)
    lsave = np.zeros(4, dtype=np.int32)
    isave = np.zeros(44, dtype=np.int32)
    dsave = np.zeros(29, dtype=np.float64)
    factr = _FTOL / np.finfo(float).eps
    nit = 0
    # scipy's ScalarFunction: evaluated once at the (clipped) start, then again only at a point that differs from
    # the last one evaluated (a repeated point returns the kept value); ``nfev`` counts real evaluations, as scipy's
    # maxfun rule reads them; the routine gets a copy of the gradient, so the kept one stays as evaluated
    # the last point as a list: ``x.tolist() == last_x`` is np.array_equal's answer (by value, -0.0 == 0.0, a nan
    # never equal: tolist makes new float objects) at a tenth of its cost on seven numbers
    last_x = x.tolist()
    last_f, last_g = fg(x.copy())
    last_g = np.array(last_g, dtype=np.float64)
    nfev = 1
    while True:
        _lbfgsb.setulb(m, x, low, up, nbd, f, g, factr, _GTOL, wa, iwa, task, lsave, isave, dsave, _MAXLS, ln_task)
        if task[0] == 3:  # f and g at x
            xl = x.tolist()
            if xl != last_x:
                last_x = xl
                last_f, last_g = fg(x.copy())
                last_g = np.array(last_g, dtype=np.float64)
                nfev += 1
            f, g = last_f, last_g.copy()
        elif task[0] == 1:  # a new iterate
            nit += 1
            if nit >= maxiter:
                task[0], task[1] = 5, 504
            elif nfev > _MAXFUN:
                task[0], task[1] = 5, 502
        else:
            break
    return x, float(f), nfev


def _reference(fg: Callable[[np.ndarray], tuple[float, np.ndarray]], x0: np.ndarray, lo: np.ndarray,
               hi: np.ndarray, maxiter: int) -> tuple[np.ndarray, float, int]:
    import scipy.optimize

    res = scipy.optimize.minimize(fg, x0, method="L-BFGS-B", jac=True, bounds=list(zip(lo.tolist(), hi.tolist())),
                                  options={"maxiter": maxiter})
    return np.asarray(res.x, dtype=np.float64), float(res.fun), int(res.nfev)


def _check_problem(x: np.ndarray) -> tuple[float, np.ndarray]:
    """A bounded, non-quadratic test problem (Rosenbrock in four variables plus a log term) whose optimum sits on
    a bound for one variable: it exercises the line search, the BFGS updates and the projection."""
    r = 100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2
    f = float(np.sum(r) + 0.1 * np.log1p(x[0] ** 2))
    g = np.zeros_like(x)
    g[:-1] += -400.0 * x[:-1] * (x[1:] - x[:-1] ** 2) - 2.0 * (1.0 - x[:-1])
    g[1:] += 200.0 * (x[1:] - x[:-1] ** 2)
    g[0] += 0.2 * x[0] / (1.0 + x[0] ** 2)
    return f, g


def _scipy_version() -> str:
    import scipy

    return str(scipy.__version__)


def _matches_record(a: tuple[np.ndarray, float, int]) -> bool:
    """Whether the lean driver's answer on the check problem is scipy's as recorded for this scipy version."""
    rec = _RECORDED.get(_scipy_version())
    if rec is None:
        return False
    x, f, nfev = rec
    return a[0].tolist() == [float.fromhex(v) for v in x] and a[1] == float.fromhex(f) and a[2] == nfev


def lean_available() -> bool:
    """Whether :func:`minimize` drives ``setulb`` itself in this process (the self-check is run on first call)."""
    if not _STATE:
        ok = False
        try:
            x0, lo, hi = np.array(_CHECK_START), np.array(_CHECK_LO), np.array(_CHECK_HI)
            a = _lean(_check_problem, x0, lo, hi, 1000)
            if _matches_record(a):
                ok = True
            else:
                b = _reference(_check_problem, x0, lo, hi, 1000)
                ok = bool(np.array_equal(a[0], b[0]) and a[1] == b[1] and a[2] == b[2])
        except Exception:  # another scipy: the private routine's signature or behaviour differs
            ok = False
        _STATE.append(ok)
    return _STATE[0]


def minimize(fg: Callable[[np.ndarray], tuple[float, np.ndarray]], x0: Any, lo: Any, hi: Any, *,
             maxiter: int = 1000) -> tuple[np.ndarray, float]:
    """``(x, f)``: what ``scipy.optimize.minimize(fg, x0, method="L-BFGS-B", jac=True, bounds=..., options=
    {"maxiter": maxiter})`` returns as ``res.x`` and ``res.fun``, the same numbers, with less overhead where the
    lean driver passed its self-check. ``fg`` returns the value and the gradient; ``lo`` and ``hi`` are finite
    bounds per variable."""
    x0 = np.asarray(x0, dtype=np.float64).ravel()
    lo_a, hi_a = np.asarray(lo, dtype=np.float64).ravel(), np.asarray(hi, dtype=np.float64).ravel()
    if lean_available():
        x, f, _ = _lean(fg, x0, lo_a, hi_a, maxiter)
    else:
        x, f, _ = _reference(fg, x0, lo_a, hi_a, maxiter)
    return x, f
