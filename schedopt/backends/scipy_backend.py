"""scipy.optimize.milp / linprog: always present, the reference backend.

Ctrl-C: scipy hands the model to its bundled HiGHS with no callback, cancel or handle, and that HiGHS ignores
SIGINT, so a Ctrl-C waits for the solve to return (measured: until its 30 s time limit, then reported as a time
limit). ``in_child_process=True`` runs the call in a forked child that Ctrl-C kills at once (reported
NO_SOLUTION_FOUND with Limit.INTERRUPTED: the incumbent dies with the child); see :mod:`schedopt.backends.isolate`
for why this is an option and what it costs.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy

from ..model import LazyModule
from ..results import Limit, SolveResult, TerminationReason
from .base import Backend, Capabilities, SolveParams
from .isolate import IN_CHILD_OPTION, ChildProcessDied, pop_in_child_option, run_forked

if TYPE_CHECKING:
    import scipy.sparse as sp

    from ..model import LinearModel
else:
    sp = LazyModule("scipy.sparse", globals(), "sp")  # imported on first use (issue 42)


class ScipyBackend(Backend):
    name = "scipy"
    capabilities = Capabilities(lp=True, mip=True, duals=True, iis=False, warm_start=False)
    requires = ("scipy",)
    install_hint = "pip install scipy"

    def version(self) -> str:
        return str(scipy.__version__)

    def known_options(self) -> frozenset[str]:
        # scipy.optimize.milp's options and linprog(method="highs")'s
        return frozenset({"disp", "presolve", "time_limit", "node_limit", "mip_rel_gap", "maxiter",
                          "dual_feasibility_tolerance", "primal_feasibility_tolerance", "ipm_optimality_tolerance",
                          "simplex_dual_edge_weight_strategy", IN_CHILD_OPTION})

    def solve(self, model: LinearModel, params: SolveParams) -> SolveResult:
        arr = model.to_arrays()
        sign = -1.0 if arr.maximize else 1.0
        if arr.is_mip:
            return self._milp(model, params, sign)
        return self._linprog(model, params, sign)

    def _call(self, model: LinearModel, call: Callable[[], Any], forked: bool, t0: float,
              t1: float) -> tuple[Any, SolveResult | None]:
        """``call()``, or in a child process (``forked``); returns ``(scipy result, None)`` or ``(None, the
        SolveResult of an interrupted or crashed child)``."""
        if not forked:
            return call(), None
        try:
            res, interrupted = run_forked(call)
        except ChildProcessDied as exc:
            return None, self.result(model, TerminationReason.ERROR, (t0, t1, time.perf_counter()), detail=str(exc))
        if interrupted:
            return None, self.result(model, TerminationReason.NO_SOLUTION_FOUND, (t0, t1, time.perf_counter()),
                                     limit=Limit.INTERRUPTED,
                                     detail="Ctrl-C: the solve's child process was stopped (its incumbent with it)")
        return res, None

    def _milp(self, model: LinearModel, params: SolveParams, sign: float) -> SolveResult:
        from scipy.optimize import Bounds, LinearConstraint, milp

        arr = model.to_arrays()
        t0 = time.perf_counter()
        cons = [LinearConstraint(arr.A, arr.row_lower, arr.row_upper)] if arr.num_rows else []
        opts: dict[str, Any] = {"disp": bool(params.verbose)}
        if params.time_limit is not None:
            opts["time_limit"] = float(params.time_limit)
        if params.mip_rel_gap is not None:
            opts["mip_rel_gap"] = float(params.mip_rel_gap)
        opts.update(params.solver_options)
        forked = pop_in_child_option(opts)
        t1 = time.perf_counter()
        res, stopped = self._call(model, lambda: milp(sign * arr.c, integrality=arr.integrality,
                                                      bounds=Bounds(arr.col_lower, arr.col_upper),
                                                      constraints=cons, options=opts), forked, t0, t1)
        if stopped is not None:
            return stopped
        t2 = time.perf_counter()
        x = None if res.x is None else np.asarray(res.x, dtype=float)
        status = int(res.status)
        limit = None
        if status == 0:
            reason = TerminationReason.OPTIMAL
        elif status == 1:
            reason = TerminationReason.FEASIBLE if x is not None else TerminationReason.NO_SOLUTION_FOUND
            limit = Limit.TIME if "time" in str(res.message).lower() else Limit.OTHER
        elif status == 2:
            reason = TerminationReason.INFEASIBLE
        elif status == 3:
            reason = TerminationReason.UNBOUNDED
        elif "unbounded" in str(res.message).lower():
            # milp has no status for HiGHS's kUnboundedOrInfeasible and reports it as 4 ("other"), with this message
            infeasible_too = "infeasible" in str(res.message).lower()
            reason = TerminationReason.INFEASIBLE_OR_UNBOUNDED if infeasible_too else TerminationReason.UNBOUNDED
        else:
            reason = TerminationReason.ERROR
        mdb = getattr(res, "mip_dual_bound", None)
        bound = sign * float(mdb) + arr.constant if mdb is not None and math.isfinite(mdb) else None
        return self.result(
            model,
            reason,
            (t0, t1, t2),
            limit=limit,
            detail=str(res.message),
            x=x,
            bound=bound,
            stats={"mip_nodes": int(getattr(res, "mip_node_count", 0) or 0), IN_CHILD_OPTION: forked},
        )

    def _linprog(self, model: LinearModel, params: SolveParams, sign: float) -> SolveResult:
        from scipy.optimize import linprog

        arr = model.to_arrays()
        t0 = time.perf_counter()
        A = arr.A
        lo, up = arr.row_lower, arr.row_upper
        eq = np.isfinite(lo) & np.isfinite(up) & (lo == up)
        ub = np.isfinite(up) & ~eq
        lb = np.isfinite(lo) & ~eq
        A_ub = sp.vstack([A[ub], -A[lb]], format="csr") if (ub.any() or lb.any()) else None
        b_ub = np.concatenate([up[ub], -lo[lb]]) if A_ub is not None else None
        A_eq = A[eq] if eq.any() else None
        b_eq = lo[eq] if eq.any() else None
        col_bounds = np.column_stack(
            [np.where(np.isfinite(arr.col_lower), arr.col_lower, np.nan), np.where(np.isfinite(arr.col_upper), arr.col_upper, np.nan)]
        )
        bounds = [(None if np.isnan(a) else a, None if np.isnan(b) else b) for a, b in col_bounds]
        opts: dict[str, Any] = {"disp": bool(params.verbose)}
        if params.time_limit is not None:
            opts["time_limit"] = float(params.time_limit)
        opts.update(params.solver_options)
        forked = pop_in_child_option(opts)
        t1 = time.perf_counter()
        res, stopped = self._call(model, lambda: linprog(sign * arr.c, A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=b_eq,
                                                         bounds=bounds, method="highs", options=opts), forked, t0, t1)
        if stopped is not None:
            return stopped
        t2 = time.perf_counter()
        status = int(res.status)
        limit = None
        x = None
        if status == 0:
            reason = TerminationReason.OPTIMAL
            x = np.asarray(res.x, dtype=float)
        elif status == 1:
            reason, limit = TerminationReason.NO_SOLUTION_FOUND, Limit.ITERATION
        elif status == 2:
            reason = TerminationReason.INFEASIBLE
        elif status == 3:
            reason = TerminationReason.UNBOUNDED
        else:
            reason = TerminationReason.NUMERICAL_ERROR
        duals = None
        if x is not None:
            # scipy marginals are d(sign*obj)/d(b); map back to one dual per model row as d(obj)/d(bound)
            duals = np.zeros(arr.num_rows)
            if A_ub is not None:
                mu = np.asarray(res.ineqlin.marginals)
                nub = int(ub.sum())
                duals[ub] += sign * mu[:nub]
                duals[lb] += -sign * mu[nub:]
            if A_eq is not None:
                duals[eq] = sign * np.asarray(res.eqlin.marginals)
        return self.result(
            model,
            reason,
            (t0, t1, t2),
            limit=limit,
            detail=str(res.message),
            x=x,
            duals=duals,
            stats={"iterations": int(getattr(res, "nit", 0) or 0), IN_CHILD_OPTION: forked},
        )
