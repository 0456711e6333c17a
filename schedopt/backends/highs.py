"""HiGHS through highspy: the model is handed over as arrays in one ``passModel`` call (the default backend)."""

from __future__ import annotations

import functools
import math
import time
from typing import TYPE_CHECKING

import numpy as np

from ..export import to_highs
from ..results import Limit, SolveResult, TerminationReason
from ..stdio import stdout_to_stderr
from .base import Backend, Capabilities, SolveParams, interrupted_reason, run_interruptible

if TYPE_CHECKING:
    from ..model import LinearModel


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


#: the most threads handed to HiGHS: it starts them all at once in its global scheduler, and threads=1024 took 5 s
#: before the solve began (issue 20's long fuzz run: a "hang" of the 0.006 s knapsack); a larger request is clamped
MAX_THREADS = 64


@functools.cache
def highs_option_names() -> frozenset[str]:
    """Every HiGHS option name (read from ``highspy.Highs().getOptions()``; asking HiGHS about an unknown name
    would print an error line)."""
    import highspy

    return frozenset(a for a in dir(highspy.Highs().getOptions()) if not a.startswith("_"))


class HighsBackend(Backend):
    name = "highs"
    capabilities = Capabilities(lp=True, mip=True, duals=True, iis=True, warm_start=True)
    requires = ("highspy",)
    install_hint = "pip install highspy==1.12.0"

    def known_options(self) -> frozenset[str]:
        return highs_option_names()

    def version(self) -> str:
        import highspy

        return f"{highspy.HIGHS_VERSION_MAJOR}.{highspy.HIGHS_VERSION_MINOR}.{highspy.HIGHS_VERSION_PATCH}"

    def solve(self, model: LinearModel, params: SolveParams) -> SolveResult:
        t0 = time.perf_counter()
        h = to_highs(model)
        arr = model.to_arrays()
        h.setOptionValue("output_flag", bool(params.verbose))
        h.setOptionValue("threads", min(int(params.threads), MAX_THREADS))
        h.setOptionValue("random_seed", int(params.seed))
        if params.time_limit is not None:
            h.setOptionValue("time_limit", float(params.time_limit))
        if params.mip_rel_gap is not None:
            h.setOptionValue("mip_rel_gap", float(params.mip_rel_gap))
        for k, v in params.solver_options.items():
            h.setOptionValue(k, v)
        if params.warm_start is not None:
            import highspy

            sol = highspy.HighsSolution()
            sol.col_value = list(np.asarray(params.warm_start, dtype=float))
            sol.value_valid = True
            h.setSolution(sol)
        h.HandleUserInterrupt = True  # lets cancelSolve() stop the run (Ctrl-C through run_interruptible)
        t1 = time.perf_counter()
        with stdout_to_stderr(arr.is_mip and not params.verbose):
            status, interrupted = run_interruptible(h.run, h.cancelSolve)
        ms = h.getModelStatus()
        sname = ms.name if hasattr(ms, "name") else str(ms).split(".")[-1]
        threads_note = ""
        if not interrupted and sname == "kNotset" and _is_error(status) and int(params.threads) != 0:
            # HiGHS runs one thread scheduler per process, sized by the first solve that starts it; a later run
            # asking another count is refused before it starts (kError, nothing solved). The count is a speed knob:
            # run on the scheduler there is (threads=0), and say so
            h.setOptionValue("threads", 0)
            with stdout_to_stderr(arr.is_mip and not params.verbose):
                status, interrupted = run_interruptible(h.run, h.cancelSolve)
            ms = h.getModelStatus()
            sname = ms.name if hasattr(ms, "name") else str(ms).split(".")[-1]
            threads_note = (f"; threads={params.threads} not applied: HiGHS's thread scheduler in this process was "
                            "started with another count, so the solve ran on it (threads=0)")
        t2 = time.perf_counter()
        info = h.getInfo()
        has_primal = int(info.primal_solution_status) == 2  # kSolutionStatusFeasible
        if sname in _STATUS:
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
        if interrupted:
            reason, limit = interrupted_reason(reason, has_primal)
        x = duals = rc = None
        if has_primal and reason in (TerminationReason.OPTIMAL, TerminationReason.FEASIBLE):
            sol = h.getSolution()
            x = np.asarray(sol.col_value, dtype=float)
            if not arr.is_mip and sol.dual_valid:
                duals = np.asarray(sol.row_dual, dtype=float)
                rc = np.asarray(sol.col_dual, dtype=float)
        # a MIP's proven bound comes from HiGHS; an LP's is its optimum (None: the default rule in Backend.result);
        # a run that ended in an error proved none (HiGHS's info then holds its defaults: a bound of 0)
        mdb = float(info.mip_dual_bound)
        proved = not _is_error(status) and reason not in (TerminationReason.ERROR, TerminationReason.NUMERICAL_ERROR)
        bound = mdb if arr.is_mip and math.isfinite(mdb) and proved else None
        stats = {
            "simplex_iterations": int(info.simplex_iteration_count),
            "mip_nodes": int(info.mip_node_count) if arr.is_mip else 0,
        }
        return self.result(
            model, reason, (t0, t1, t2), limit=limit, detail=sname + threads_note, x=x, bound=bound, duals=duals,
            reduced_costs=rc, stats=stats
        )


def _is_error(status: object) -> bool:
    """Whether ``Highs.run``'s return is ``HighsStatus.kError``."""
    return getattr(status, "name", str(status).split(".")[-1]) == "kError"
