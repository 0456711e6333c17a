"""OR-Tools MathOpt: SCIP (GSCIP) for MIP, GLOP for LP, as shipped in the ortools pip wheel.

The model is handed over as a MathOpt ``ModelProto`` filled from the arrays (whole repeated fields at once), then
``mathopt.Model.from_model_proto``. Pass ``solver="pdlp"`` (or ``"highs"``, ``"cp_sat"``, ``"glop"``, ``"gscip"``)
to pick another MathOpt solver.
"""

from __future__ import annotations

import datetime
import re
import time
from typing import TYPE_CHECKING, Any

import numpy as np

from ..results import Limit, SolveResult, TerminationReason
from ..stdio import filtered_stderr
from .base import Backend, Capabilities, SolveParams, interrupted_reason, run_interruptible

if TYPE_CHECKING:
    from ..model import LinearModel

_INF = float("inf")
#: the most threads handed to a MathOpt solver (SCIP's parallel/maxnthreads range is [0, 64])
MAX_THREADS = 64


def to_mathopt(model: LinearModel) -> Any:  # a mathopt.Model (ortools ships no type information)
    from ortools.math_opt import model_pb2
    from ortools.math_opt.python import mathopt

    arr = model.to_arrays()
    p = model_pb2.ModelProto(name=model.name)
    n, m = arr.num_cols, arr.num_rows
    p.variables.ids.extend(range(n))
    p.variables.lower_bounds.extend(arr.col_lower.tolist())
    p.variables.upper_bounds.extend(arr.col_upper.tolist())
    p.variables.integers.extend((arr.integrality == 1).tolist())
    p.objective.maximize = arr.maximize
    p.objective.offset = arr.constant
    nz = np.flatnonzero(arr.c)
    p.objective.linear_coefficients.ids.extend(nz.tolist())
    p.objective.linear_coefficients.values.extend(arr.c[nz].tolist())
    p.linear_constraints.ids.extend(range(m))
    p.linear_constraints.lower_bounds.extend(arr.row_lower.tolist())
    p.linear_constraints.upper_bounds.extend(arr.row_upper.tolist())
    A = arr.A.tocsr()
    A.sort_indices()
    rows = np.repeat(np.arange(m), np.diff(A.indptr))
    p.linear_constraint_matrix.row_ids.extend(rows.tolist())
    p.linear_constraint_matrix.column_ids.extend(A.indices.tolist())
    p.linear_constraint_matrix.coefficients.extend(A.data.tolist())
    return mathopt.Model.from_model_proto(p)


#: OR-Tools 9.15's SCIP prints these two lines whenever a SolveInterrupter is attached; interrupting still works
_SCIP_INTERRUPTER_NOISE = re.compile(r"SCIPcatchEvent does not support variable or row change events|"
                                     r"gscip_event_handler\.cc:\d+\] ERROR: Error <-9>")

class MathOptBackend(Backend):
    name = "mathopt"
    capabilities = Capabilities(lp=True, mip=True, duals=True, iis=False, warm_start=False)
    requires = ("ortools",)
    install_hint = "pip install ortools==9.15.6755"

    def version(self) -> str:
        from importlib.metadata import version

        return version("ortools")

    def known_options(self) -> frozenset[str]:
        """``solver`` (gscip, glop, cp_sat, pdlp, highs, ...) and the fields of ``mathopt.SolveParameters``."""
        import dataclasses

        from ortools.math_opt.python import mathopt

        return frozenset({"solver"} | {f.name for f in dataclasses.fields(mathopt.SolveParameters)})

    def solve(self, model: LinearModel, params: SolveParams) -> SolveResult:
        from ortools.math_opt.python import mathopt

        arr = model.to_arrays()
        t0 = time.perf_counter()
        mm = to_mathopt(model)
        opts = dict(params.solver_options)
        solver_name = str(opts.pop("solver", "gscip" if arr.is_mip else "glop")).upper()
        solver_name = {"SCIP": "GSCIP", "CPSAT": "CP_SAT"}.get(solver_name, solver_name)
        stype = getattr(mathopt.SolverType, solver_name)
        sp = mathopt.SolveParameters(enable_output=bool(params.verbose))
        if params.time_limit is not None:
            sp.time_limit = datetime.timedelta(seconds=float(params.time_limit))
        if params.mip_rel_gap is not None and arr.is_mip:
            sp.relative_gap_tolerance = float(params.mip_rel_gap)
        if params.threads:
            # SCIP takes at most 64 (parallel/maxnthreads); more made ortools fail with an internal AttributeError
            sp.threads = min(int(params.threads), MAX_THREADS)
        if stype != mathopt.SolverType.GLOP:
            sp.random_seed = int(params.seed)
        for k, v in opts.items():
            setattr(sp, k, v)
        from ortools.util.python.solve_interrupter import SolveInterrupter

        interrupter = SolveInterrupter()
        t1 = time.perf_counter()
        try:
            with filtered_stderr(_SCIP_INTERRUPTER_NOISE, active=stype == mathopt.SolverType.GSCIP and not params.verbose):
                res, interrupted = run_interruptible(
                    lambda: mathopt.solve(mm, stype, params=sp, interrupter=interrupter), interrupter.interrupt)
        except (ValueError, RuntimeError, AttributeError, TypeError) as exc:  # the solver refused a parameter
            t2 = time.perf_counter()
            return self.result(model, TerminationReason.ERROR, (t0, t1, t2),
                               detail=f"{solver_name}: the solve failed: {type(exc).__name__}: {exc}")
        t2 = time.perf_counter()
        tr = res.termination.reason
        TR = mathopt.TerminationReason
        mapping = {
            TR.OPTIMAL: TerminationReason.OPTIMAL,
            TR.FEASIBLE: TerminationReason.FEASIBLE,
            TR.NO_SOLUTION_FOUND: TerminationReason.NO_SOLUTION_FOUND,
            TR.INFEASIBLE: TerminationReason.INFEASIBLE,
            TR.UNBOUNDED: TerminationReason.UNBOUNDED,
            TR.INFEASIBLE_OR_UNBOUNDED: TerminationReason.INFEASIBLE_OR_UNBOUNDED,
            TR.IMPRECISE: TerminationReason.NUMERICAL_ERROR,
            TR.NUMERICAL_ERROR: TerminationReason.NUMERICAL_ERROR,
            TR.OTHER_ERROR: TerminationReason.ERROR,
        }
        reason = mapping.get(tr, TerminationReason.ERROR)
        limit = None
        if res.termination.limit is not None and reason in (TerminationReason.FEASIBLE, TerminationReason.NO_SOLUTION_FOUND):
            limit = {
                mathopt.Limit.TIME: Limit.TIME,
                mathopt.Limit.ITERATION: Limit.ITERATION,
                mathopt.Limit.NODE: Limit.NODE,
                mathopt.Limit.SOLUTION: Limit.SOLUTION,
                mathopt.Limit.INTERRUPTED: Limit.INTERRUPTED,
            }.get(res.termination.limit, Limit.OTHER)
        if interrupted:
            reason, limit = interrupted_reason(reason, res.has_primal_feasible_solution())
        x = None
        duals = rc = None
        if reason in (TerminationReason.OPTIMAL, TerminationReason.FEASIBLE) and res.has_primal_feasible_solution():
            vals = res.variable_values()
            x = np.array([vals[v] for v in mm.variables()], dtype=float)
            if not arr.is_mip and res.has_dual_feasible_solution():
                dv = res.dual_values()
                duals = np.array([dv[c] for c in mm.linear_constraints()], dtype=float)
                rcv = res.reduced_costs()
                rc = np.array([rcv[v] for v in mm.variables()], dtype=float)
        elif reason in (TerminationReason.OPTIMAL, TerminationReason.FEASIBLE):
            reason = TerminationReason.ERROR
        return self.result(
            model,
            reason,
            (t0, t1, t2),
            limit=limit,
            detail=f"{solver_name}: {res.termination.detail}".strip(),
            x=x,
            bound=float(res.termination.objective_bounds.dual_bound),
            duals=duals,
            reduced_costs=rc,
            stats={"solver": solver_name},
        )
