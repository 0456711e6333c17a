"""HiGHS through highspy: the model is handed over as arrays in one ``passModel`` call (the default backend)."""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING, Any

import numpy as np

from ..results import Limit, SolveResult, Termination, TerminationReason, Timings
from .base import Backend, Capabilities, SolveParams

if TYPE_CHECKING:
    from ..model import LinearModel


def to_highs(model: LinearModel, names: bool = False) -> Any:
    """A ``highspy.Highs`` instance holding ``model`` (silent), passed as one row-wise matrix."""
    import highspy

    arr = model.to_arrays()
    lp = highspy.HighsLp()
    lp.num_col_ = arr.num_cols
    lp.num_row_ = arr.num_rows
    lp.col_cost_ = arr.c
    lp.col_lower_ = arr.col_lower
    lp.col_upper_ = arr.col_upper
    lp.row_lower_ = arr.row_lower
    lp.row_upper_ = arr.row_upper
    lp.offset_ = arr.constant
    lp.sense_ = highspy.ObjSense.kMaximize if arr.maximize else highspy.ObjSense.kMinimize
    A = arr.A
    lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
    lp.a_matrix_.num_col_ = arr.num_cols
    lp.a_matrix_.num_row_ = arr.num_rows
    lp.a_matrix_.start_ = A.indptr.astype(np.int32)
    lp.a_matrix_.index_ = A.indices.astype(np.int32)
    lp.a_matrix_.value_ = A.data
    if arr.is_mip:
        lp.integrality_ = [highspy.HighsVarType(int(v)) for v in arr.integrality]
    if names:
        lp.col_names_ = model.column_names()
        lp.row_names_ = model.row_names()
        lp.model_name_ = model.name
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.passModel(lp)
    return h


_STATUS = {
    "kOptimal": TerminationReason.OPTIMAL,
    "kInfeasible": TerminationReason.INFEASIBLE,
    "kUnbounded": TerminationReason.UNBOUNDED,
    "kUnboundedOrInfeasible": TerminationReason.INFEASIBLE_OR_UNBOUNDED,
}
_LIMITS = {
    "kTimeLimit": Limit.TIME,
    "kIterationLimit": Limit.ITERATION,
    "kSolutionLimit": Limit.SOLUTION,
    "kInterrupt": Limit.INTERRUPTED,
    "kObjectiveBound": Limit.OTHER,
    "kObjectiveTarget": Limit.OTHER,
}


class HighsBackend(Backend):
    name = "highs"
    capabilities = Capabilities(lp=True, mip=True, duals=True, iis=True, warm_start=True)
    requires = ("highspy",)
    install_hint = "pip install highspy==1.12.0"

    def version(self) -> str:
        import highspy

        return f"{highspy.HIGHS_VERSION_MAJOR}.{highspy.HIGHS_VERSION_MINOR}.{highspy.HIGHS_VERSION_PATCH}"

    def solve(self, model: LinearModel, params: SolveParams) -> SolveResult:
        t0 = time.perf_counter()
        h = to_highs(model)
        arr = model.to_arrays()
        h.setOptionValue("output_flag", bool(params.verbose))
        h.setOptionValue("threads", int(params.threads))
        h.setOptionValue("random_seed", int(params.seed))
        if params.time_limit is not None:
            h.setOptionValue("time_limit", float(params.time_limit))
        if params.mip_rel_gap is not None:
            h.setOptionValue("mip_rel_gap", float(params.mip_rel_gap))
        for k, v in params.options.items():
            h.setOptionValue(k, v)
        if params.warm_start is not None:
            import highspy

            sol = highspy.HighsSolution()
            sol.col_value = list(np.asarray(params.warm_start, dtype=float))
            sol.value_valid = True
            h.setSolution(sol)
        t1 = time.perf_counter()
        h.run()
        t2 = time.perf_counter()
        ms = h.getModelStatus()
        sname = ms.name if hasattr(ms, "name") else str(ms).split(".")[-1]
        info = h.getInfo()
        has_primal = int(info.primal_solution_status) == 2  # kSolutionStatusFeasible
        if sname == "kModelEmpty":
            # no columns: the model is the constant objective, feasible iff every row admits activity 0
            ok = bool(np.all(arr.row_lower <= 1e-9) and np.all(arr.row_upper >= -1e-9))
            sname = "kModelEmpty (decided without a solve)"
            reason, limit = (TerminationReason.OPTIMAL if ok else TerminationReason.INFEASIBLE), None
            has_primal = ok
        elif sname in _STATUS:
            reason = _STATUS[sname]
            limit = None
        elif sname in _LIMITS:
            reason = TerminationReason.FEASIBLE if has_primal else TerminationReason.NO_SOLUTION_FOUND
            limit = _LIMITS[sname]
        elif sname == "kSolveError" or sname == "kPostsolveError":
            reason, limit = TerminationReason.NUMERICAL_ERROR, None
        else:
            reason, limit = TerminationReason.ERROR, None
        if reason is TerminationReason.OPTIMAL and not has_primal:
            reason = TerminationReason.ERROR
        x = None
        obj = math.nan
        duals = rc = None
        if has_primal and reason in (TerminationReason.OPTIMAL, TerminationReason.FEASIBLE):
            sol = h.getSolution()
            x = np.asarray(sol.col_value, dtype=float) if arr.num_cols else np.zeros(0)
            obj = float(arr.c @ x + arr.constant)
            if not arr.is_mip and sol.dual_valid:
                duals = np.asarray(sol.row_dual, dtype=float)
                rc = np.asarray(sol.col_dual, dtype=float)
        if arr.is_mip:
            bound = float(info.mip_dual_bound)
            if not math.isfinite(bound) and reason is TerminationReason.OPTIMAL:
                bound = obj
        else:
            bound = obj if reason is TerminationReason.OPTIMAL else (math.inf if arr.maximize else -math.inf)
        if reason is TerminationReason.INFEASIBLE:
            bound = -math.inf if arr.maximize else math.inf
        stats = {
            "simplex_iterations": int(info.simplex_iteration_count),
            "mip_nodes": int(info.mip_node_count) if arr.is_mip else 0,
        }
        return SolveResult(
            termination=Termination(reason, limit, sname),
            backend=self.name,
            model=model,
            _x=x,
            _objective=obj,
            bound=bound,
            duals=duals,
            reduced_costs=rc,
            timings=Timings(handoff=t1 - t0, solve=t2 - t1),
            backend_version=self.version(),
            stats=stats,
        )
