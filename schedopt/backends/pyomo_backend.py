"""Pyomo: ``LinearModel.to_pyomo()`` gives a real ``ConcreteModel`` (one indexed ``Var`` per block, one indexed
``Constraint`` per family, named alike); the backend solves it through pyomo's current solver interface
(``pyomo.contrib.solver``) with HiGHS. Users who live in pyomo can take the model and go on from there.

Building a pyomo model costs Python objects per variable and per row: this backend is for interoperability, not
speed (the ``highs`` backend hands the same arrays to the same solver in one call).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import numpy as np

from ..results import Limit, SolveResult, TerminationReason
from .base import Backend, Capabilities, SolveParams

if TYPE_CHECKING:
    from ..model import LinearModel


def _index(shape: tuple[int, ...]) -> list[Any]:
    if len(shape) == 1:
        return list(range(shape[0]))
    return [tuple(int(i) for i in idx) for idx in np.ndindex(*shape)]


def _rest_point(arr: Any) -> np.ndarray:
    """Values for variables that appear nowhere: 0 clipped into their bounds (rounded inward for integers)."""
    x = np.clip(0.0, arr.col_lower, arr.col_upper)
    return np.where(arr.integrality == 1, np.clip(np.round(x), np.ceil(arr.col_lower), np.floor(arr.col_upper)), x)


def to_pyomo(model: LinearModel) -> Any:
    """A pyomo ``ConcreteModel``: ``m.<block>[i, j]`` variables, ``m.<family>[row]`` constraints, ``m.objective``.

    ``m._schedopt_vars`` lists every pyomo variable in the model's column order.
    """
    import pyomo.environ as pyo
    from pyomo.core.expr.numeric_expr import LinearExpression

    arr = model.to_arrays()
    pm = pyo.ConcreteModel(name=model.name)
    cols: list[Any] = []
    for b in model.blocks.values():
        lo = arr.col_lower[b.start : b.stop]
        up = arr.col_upper[b.start : b.stop]
        integ = bool(arr.integrality[b.start : b.stop].any())
        idx = _index(b.shape) if b.shape else [None]
        pos = {k: i for i, k in enumerate(idx)}

        def bounds(_m, *key, lo=lo, up=up, pos=pos):
            i = pos[key[0] if len(key) == 1 else tuple(key)] if key else 0
            return (None if not np.isfinite(lo[i]) else float(lo[i]), None if not np.isfinite(up[i]) else float(up[i]))

        domain = pyo.Integers if integ else pyo.Reals
        if b.shape:
            var = pyo.Var(idx, domain=domain, bounds=bounds)
        else:
            var = pyo.Var(domain=domain, bounds=bounds)
        pm.add_component(b.name, var)
        cols.extend(var[k] for k in idx) if b.shape else cols.append(var)
    A = arr.A.tocsr()
    for f in model.families.values():

        def rule(_m, r, f=f):
            g = f.start + r
            s, e = A.indptr[g], A.indptr[g + 1]
            lo = arr.row_lower[g]
            up = arr.row_upper[g]
            expr = LinearExpression(
                constant=0.0, linear_coefs=A.data[s:e].tolist(), linear_vars=[cols[j] for j in A.indices[s:e]]
            )
            return (None if not np.isfinite(lo) else float(lo), expr, None if not np.isfinite(up) else float(up))

        pm.add_component(f.name, pyo.Constraint(range(f.size), rule=rule))
    nz = np.flatnonzero(arr.c)
    obj = LinearExpression(
        constant=float(arr.constant), linear_coefs=arr.c[nz].tolist(), linear_vars=[cols[j] for j in nz]
    )
    pm.objective = pyo.Objective(expr=obj, sense=pyo.maximize if arr.maximize else pyo.minimize)
    pm._schedopt_vars = cols
    return pm


class PyomoBackend(Backend):
    """Pyomo's current solver interface with HiGHS (``solver=`` picks another pyomo solver)."""

    name = "pyomo"
    capabilities = Capabilities(lp=True, mip=True, duals=False, iis=False, warm_start=False)
    requires = ("pyomo", "highspy")
    install_hint = "pip install pyomo highspy==1.12.0"

    def version(self) -> str:
        import pyomo.version

        return str(pyomo.version.version)

    def solve(self, model: LinearModel, params: SolveParams) -> SolveResult:
        from pyomo.contrib.solver.common.factory import SolverFactory
        from pyomo.contrib.solver.common.results import SolutionStatus, TerminationCondition

        arr = model.to_arrays()
        used = np.zeros(arr.num_cols, dtype=bool)
        used[arr.A.indices] = True
        used[np.flatnonzero(arr.c)] = True
        used &= arr.col_lower != arr.col_upper
        if arr.num_cols and not used.any():
            # no free variable appears anywhere: pyomo hands HiGHS an empty model and reports 'unknown'
            return self._fixed_point(model)
        t0 = time.perf_counter()
        pm = to_pyomo(model)
        opts = dict(params.options)
        solver_name = opts.pop("solver", "highs")
        opt = SolverFactory(solver_name)
        kw: dict[str, Any] = {
            "load_solutions": False,
            "raise_exception_on_nonoptimal_result": False,
            "tee": bool(params.verbose),
        }
        if params.time_limit is not None:
            kw["time_limit"] = float(params.time_limit)
        if params.mip_rel_gap is not None:
            kw["rel_gap"] = float(params.mip_rel_gap)
        if params.threads:
            kw["threads"] = int(params.threads)
        if opts:
            kw["solver_options"] = opts
        t1 = time.perf_counter()
        res = opt.solve(pm, **kw)
        t2 = time.perf_counter()
        tc = res.termination_condition
        TC = TerminationCondition
        has_sol = res.solution_status in (SolutionStatus.feasible, SolutionStatus.optimal)
        limit = None
        if tc == TC.convergenceCriteriaSatisfied:
            reason = TerminationReason.OPTIMAL
        elif tc in (TC.maxTimeLimit, TC.iterationLimit, TC.objectiveLimit, TC.minStepLength, TC.interrupted):
            reason = TerminationReason.FEASIBLE if has_sol else TerminationReason.NO_SOLUTION_FOUND
            limit = {TC.maxTimeLimit: Limit.TIME, TC.iterationLimit: Limit.ITERATION, TC.interrupted: Limit.INTERRUPTED}.get(
                tc, Limit.OTHER
            )
        elif tc in (TC.provenInfeasible, TC.locallyInfeasible):
            reason = TerminationReason.INFEASIBLE
        elif tc == TC.unbounded:
            reason = TerminationReason.UNBOUNDED
        elif tc == TC.infeasibleOrUnbounded:
            reason = TerminationReason.INFEASIBLE_OR_UNBOUNDED
        else:
            reason = TerminationReason.ERROR
        x = None
        if has_sol and reason in (TerminationReason.OPTIMAL, TerminationReason.FEASIBLE):
            prim = res.solution_loader.get_vars()
            x0 = _rest_point(arr)
            x = np.array([prim.get(v, x0[j]) for j, v in enumerate(pm._schedopt_vars)], dtype=float)
        elif reason in (TerminationReason.OPTIMAL, TerminationReason.FEASIBLE):
            reason = TerminationReason.ERROR
        bound = None if res.objective_bound is None or not arr.is_mip else float(res.objective_bound)
        return self.result(
            model, reason, (t0, t1, t2), limit=limit, detail=f"{solver_name}: {tc.name}", x=x, bound=bound, stats={"solver": solver_name}
        )

    def _fixed_point(self, model: LinearModel) -> SolveResult:
        x = _rest_point(model.to_arrays())
        reason = TerminationReason.INFEASIBLE if model.violations(x) else TerminationReason.OPTIMAL
        t = time.perf_counter()
        return self.result(model, reason, (t, t, t), detail="no free variable appears: checked without a solver", x=x)
