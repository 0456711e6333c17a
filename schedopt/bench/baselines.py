"""Baseline routes for the benchmark: the Sia model expressed in cvxpy, the way the published Sia code does it.

The published Sia scheduler states its configuration ILP in cvxpy (an integer jobs x configurations matrix, an
elementwise-product objective, per-type GPU sums through a configurations x types matrix) and solves it with
GLPK_MI or CBC. :func:`build_sia_cvxpy` writes the *same* model as :meth:`schedopt.sia.SiaProblem.build` from the
problem's arrays (valid pairs, utilities, GPU counts, virtual-node rows, forced pairs):

* ``form="pairs"`` (default): one boolean per valid (job, configuration) pair — exactly the LinearModel's columns,
  so the comparison measures the modelling layer and the solver, not a different model;
* ``form="dense"``: the published layout — an integer ``(jobs x configs)`` matrix in ``[0, 1]`` with the invalid
  pairs fixed to 0, ``cp.multiply`` for the objective and ``X @ R`` for the per-type GPU counts.

A baseline route returns ``(SolveResult, phases)`` where ``phases`` holds ``build`` (cvxpy model construction),
``handoff`` (cvxpy's compilation to the solver's standard form), ``solve`` (the solver) and ``decode`` (reading
``X.value`` back onto the model's columns). The ``SolveResult`` carries the LinearModel so the problem's own decode
reads it like any other backend's. cvxpy reports no MIP dual bound for GLPK_MI or CBC: ``bound`` is unknown (NaN);
the record's LP bound still shows the distance to the relaxation.

GLPK_MI needs ``cvxopt`` and CBC needs ``cylp`` next to cvxpy (``pip install cvxopt cylp``); a missing one makes the
route unavailable (skipped by the harness, and by the tests), never an error.
"""

from __future__ import annotations

import importlib.util
import math
import time
import warnings
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..params import SolveParams
from ..results import Limit, SolveResult, Termination, TerminationReason, Timings

__all__ = ["BASELINES", "baseline_unavailable", "build_sia_cvxpy", "sia_cvxpy_cbc", "sia_cvxpy_glpk", "solve_cvxpy"]

#: baseline route name -> (cvxpy solver name, model form, Python modules it needs)
BASELINES: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "cvxpy-glpk": ("GLPK_MI", "pairs", ("cvxpy", "cvxopt")),
    "cvxpy-cbc": ("CBC", "pairs", ("cvxpy", "cylp")),
    "cvxpy-glpk-dense": ("GLPK_MI", "dense", ("cvxpy", "cvxopt")),
    "cvxpy-cbc-dense": ("CBC", "dense", ("cvxpy", "cylp")),
}


def baseline_unavailable(name: str) -> str:
    """Why the baseline route ``name`` cannot run here ("" when it can). Never imports cvxpy."""
    if name not in BASELINES:
        return f"unknown baseline (known: {', '.join(BASELINES)})"
    for mod in BASELINES[name][2]:
        if importlib.util.find_spec(mod) is None:
            return f"the Python package {mod!r} is not installed (pip install {mod})"
    return ""


class CvxpySia:
    """A cvxpy Problem for a SiaProblem and the variable(s) to read the pair values back from."""

    def __init__(self, problem: Any, var: Any, form: str, pairs: Any) -> None:
        self.problem = problem
        self.var = var
        self.form = form
        self.pairs = pairs

    def pair_values(self) -> np.ndarray:
        v = np.asarray(self.var.value, dtype=float)
        if self.form == "dense":
            return v[self.pairs.job, self.pairs.config]
        return v.reshape(-1)


def build_sia_cvxpy(problem: Any, form: str = "pairs") -> CvxpySia:
    """The SiaProblem's configuration ILP as a cvxpy Problem (see the module docstring for the two forms)."""
    import cvxpy as cp

    pt = problem.valid_pairs()
    cfg = problem.configs
    J, P, C = pt.n_jobs, len(pt), pt.n_configs
    T = len(problem.cluster.type_names)
    coef, const, sense = problem.objective_coefficients()
    col = np.arange(P)
    gpus = cfg.n_gpus[pt.config].astype(np.float64)
    tix = cfg.type_index[pt.config]
    A3, up3, _ = problem.virtual_rows()
    avail = problem.available.astype(np.float64)
    fcols = np.flatnonzero(pt.forced)
    cons = []
    if form == "pairs":
        x = cp.Variable(P, boolean=True, name="x")
        A1 = sp.csr_matrix((np.ones(P), (pt.job, col)), shape=(J, P))
        A2 = sp.csr_matrix((gpus, (tix, col)), shape=(T, P))
        cons.append(A1 @ x <= 1)
        cons.append(A2 @ x <= avail)
        if A3.shape[0]:
            cons.append(A3 @ x <= up3)
        if fcols.size:
            cons.append(x[fcols] == 1)
        expr = coef @ x + const
        var = x
    elif form == "dense":
        X = cp.Variable((J, C), integer=True, name="X")
        mask = np.zeros((J, C))
        mask[pt.job, pt.config] = 1.0
        U = np.zeros((J, C))
        U[pt.job, pt.config] = coef
        # per-config columns of the GPU-type and virtual-node rows (they depend on the configuration only)
        R = np.zeros((C, T))
        R[np.arange(C), cfg.type_index] = cfg.n_gpus
        cons += [X >= 0, X <= mask, cp.sum(X, axis=1) <= 1, cp.sum(X @ R, axis=0) <= avail]
        if A3.shape[0]:
            V = np.zeros((C, A3.shape[0]))
            V[pt.config] = A3.T.toarray()
            cons.append(cp.sum(X @ V, axis=0) <= up3)
        if fcols.size:
            cons.append(X[pt.job[fcols], pt.config[fcols]] == 1)
        expr = cp.sum(cp.multiply(U, X)) + const
        var = X
    else:
        from ..errors import InputError

        raise InputError("form", form, "must be 'pairs' or 'dense'")
    obj = cp.Maximize(expr) if sense == "maximize" else cp.Minimize(expr)
    return CvxpySia(cp.Problem(obj, cons), var, form, pt)


def _solver_options(solver: str, params: SolveParams) -> dict[str, Any]:
    gap = params.mip_rel_gap
    tl = params.time_limit
    opts: dict[str, Any] = {}
    if solver == "GLPK_MI":
        if gap is not None:
            opts["mip_gap"] = float(gap)
        if tl is not None:
            opts["tm_lim"] = max(1, math.ceil(float(tl) * 1000))
    elif solver == "CBC":
        if gap is not None:
            opts["allowablePercentageGap"] = float(gap) * 100.0  # as the published Sia code sets it
        if tl is not None:
            opts["maximumSeconds"] = float(tl)
        opts["numberThreads"] = params.threads or 1  # cylp exposes no random seed for CBC
    return opts


def solve_cvxpy(built: CvxpySia, model: Any, solver: str, params: SolveParams) -> tuple[SolveResult, dict[str, float]]:
    """Solve a built cvxpy problem; phases ``handoff`` (compilation) and ``solve`` are timed apart."""
    import cvxpy as cp

    prob = built.problem
    opts = _solver_options(solver, params)
    model.to_arrays()  # assembled before the clock starts
    t0 = time.perf_counter()
    data, chain, inv = prob.get_problem_data(solver=solver)
    t1 = time.perf_counter()
    raw = chain.solve_via_data(prob, data, warm_start=False, verbose=False, solver_opts=opts)
    t2 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "solution may be inaccurate": read from the status below
        prob.unpack_results(raw, chain, inv)
    status = prob.status
    tl = params.time_limit
    hit_time = tl is not None and (t2 - t1) >= 0.95 * float(tl)
    x = None
    limit = None
    if status in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE) and built.var.value is not None:
        x = built.pair_values()
        xr = np.round(x)
        x = np.where(np.abs(x - xr) <= 1e-6, xr, x) + 0.0
        if not hit_time:
            # GLPK_MI ('feasible') and CBC ('stopped on gap') report optimal_inaccurate when they stop at the
            # requested gap: proven within the gap, which is what OPTIMAL means in schedopt
            reason = TerminationReason.OPTIMAL
        else:
            reason, limit = TerminationReason.FEASIBLE, (Limit.TIME if hit_time else Limit.OTHER)
    elif status in (cp.INFEASIBLE, cp.INFEASIBLE_INACCURATE):
        reason = TerminationReason.INFEASIBLE
    elif status in (cp.UNBOUNDED, cp.UNBOUNDED_INACCURATE):
        reason = TerminationReason.UNBOUNDED
    elif hit_time:
        reason, limit = TerminationReason.NO_SOLUTION_FOUND, Limit.TIME
    else:
        reason = TerminationReason.ERROR
    t3 = time.perf_counter()
    res = SolveResult.create(
        model,
        Termination(reason, limit, f"cvxpy {solver}: {status}"),
        backend=f"cvxpy-{solver.lower()}",
        x=x,
        timings=Timings(handoff=t1 - t0, solve=t2 - t1, decode=t3 - t2),
        backend_version=_cvxpy_version(solver),
        stats={"cvxpy_status": str(status), "form": built.form},
        params=params.as_record(),
    )
    return res, {"handoff": t1 - t0, "solve": t2 - t1, "decode": t3 - t2}


def _cvxpy_version(solver: str) -> str:
    from importlib import metadata

    parts = [f"cvxpy {metadata.version('cvxpy')}"]
    pkg = {"GLPK_MI": "cvxopt", "CBC": "cylp"}.get(solver)
    if pkg:
        try:
            parts.append(f"{pkg} {metadata.version(pkg)}")
        except metadata.PackageNotFoundError:
            pass
    return " / ".join(parts)


def _route(name: str, problem: Any, model: Any, params: SolveParams) -> tuple[SolveResult, dict[str, float]]:
    solver, form, _ = BASELINES[name]
    t0 = time.perf_counter()
    built = build_sia_cvxpy(problem, form)
    t1 = time.perf_counter()
    res, phases = solve_cvxpy(built, model, solver, params)
    res = res.replace(backend=name).with_timings(build=t1 - t0)
    return res, {"build": t1 - t0, **phases}


def sia_cvxpy_glpk(problem: Any, model: Any, params: SolveParams) -> tuple[SolveResult, dict[str, float]]:
    """The published route with GLPK_MI (cvxopt's GLPK), on the valid pairs."""
    return _route("cvxpy-glpk", problem, model, params)


def sia_cvxpy_cbc(problem: Any, model: Any, params: SolveParams) -> tuple[SolveResult, dict[str, float]]:
    """The published route with CBC (cylp), on the valid pairs."""
    return _route("cvxpy-cbc", problem, model, params)


def sia_cvxpy_glpk_dense(problem: Any, model: Any, params: SolveParams) -> tuple[SolveResult, dict[str, float]]:
    """The published layout (jobs x configs integer matrix) with GLPK_MI."""
    return _route("cvxpy-glpk-dense", problem, model, params)


def sia_cvxpy_cbc_dense(problem: Any, model: Any, params: SolveParams) -> tuple[SolveResult, dict[str, float]]:
    """The published layout (jobs x configs integer matrix) with CBC."""
    return _route("cvxpy-cbc-dense", problem, model, params)
