"""Pyomo: ``LinearModel.to_pyomo()`` gives a real ``ConcreteModel`` (one indexed ``Var`` per block, one indexed
``Constraint`` per family, named alike); the backend solves it through pyomo's current solver interface
(``pyomo.contrib.solver``) with HiGHS. Users who live in pyomo can take the model and go on from there.

Building a pyomo model costs Python objects per variable and per row: this backend is for interoperability, not
speed (the ``highs`` backend hands the same arrays to the same solver in one call).

Ctrl-C: pyomo's solver interfaces offer no cancel call and no handle on the running solver. Its HiGHS plugin turns
HiGHS's keyboard-interrupt handling on, so a Ctrl-C raises ``KeyboardInterrupt`` out of a HiGHS callback mid-solve,
which used to escape as a raw traceback: the backend catches it and reports NO_SOLUTION_FOUND with
Limit.INTERRUPTED (pyomo's results are lost with the exception: no incumbent is claimed). With
``in_child_process=True`` the solve runs in a forked child that Ctrl-C kills (:mod:`schedopt.backends.isolate`),
which also stops solvers that ignore SIGINT.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import InputError
from ..export import rest_point, to_pyomo
from ..results import Limit, SolveResult, TerminationReason
from .base import Backend, Capabilities, SolveParams
from .highs import MAX_THREADS
from .isolate import IN_CHILD_OPTION, ChildProcessDied, pop_in_child_option, run_forked

if TYPE_CHECKING:
    from ..model import LinearModel


def solver_kind(name: Any) -> str:
    """``"contrib"`` for a name of pyomo's current solver interface (``pyomo.contrib.solver``: highs, ipopt,
    gurobi_direct, ...), ``"appsi"`` for an APPSI name (``appsi_highs``, ``appsi_cbc``, ...); anything else is an
    :class:`~schedopt.errors.InputError` listing both."""
    import pyomo.environ  # noqa: F401  (registers the solver plugins)
    from pyomo.contrib.appsi.base import SolverFactory as AppsiFactory
    from pyomo.contrib.solver.common.factory import SolverFactory

    contrib = sorted(SolverFactory._cls)
    appsi = sorted(f"appsi_{n}" for n in AppsiFactory._cls)
    if isinstance(name, str) and name in contrib:
        return "contrib"
    if isinstance(name, str) and name in appsi:
        return "appsi"
    raise InputError("options.solver", name, f"is no pyomo solver name; known: {', '.join(contrib + appsi)}")



def _primal_vector(prim: Any, pm: Any, arr: Any) -> np.ndarray:
    """The solution in the model's column order from a pyomo var -> value map (either interface's loader); a
    variable the solver left out of the map sits at its rest point."""
    x0 = rest_point(arr)
    return np.array([prim.get(v, x0[j]) for j, v in enumerate(pm._schedopt_vars)], dtype=float)

class PyomoBackend(Backend):
    """Pyomo's current solver interface with HiGHS (``solver=`` picks another pyomo solver)."""

    name = "pyomo"
    capabilities = Capabilities(lp=True, mip=True, duals=False, iis=False, warm_start=False)
    requires = ("pyomo", "highspy")
    install_hint = "pip install pyomo highspy==1.12.0"

    def version(self) -> str:
        import pyomo.version

        return str(pyomo.version.version)

    def known_options(self) -> frozenset[str]:
        """``solver`` (a pyomo solver name) and HiGHS's options (passed as ``solver_options``); another solver's
        options go through ``raw_options``."""
        from .highs import highs_option_names

        return frozenset({"solver", IN_CHILD_OPTION}) | highs_option_names()

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
        opts = dict(params.solver_options)
        forked = pop_in_child_option(opts)
        solver_name = opts.pop("solver", "highs")
        kind = solver_kind(solver_name)
        t0 = time.perf_counter()
        pm = to_pyomo(model)
        if kind == "appsi":
            return self._solve_appsi(model, pm, solver_name, params, opts, arr, t0, forked)
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
            kw["threads"] = min(int(params.threads), MAX_THREADS)  # HiGHS starts them all at once
        if opts:
            kw["solver_options"] = opts
        t1 = time.perf_counter()

        def run() -> tuple[Any, bool, np.ndarray | None, float | None]:
            res = opt.solve(pm, **kw)
            has = res.solution_status in (SolutionStatus.feasible, SolutionStatus.optimal)
            x = None
            if has:
                x = _primal_vector(res.solution_loader.get_vars(), pm, arr)
            return res.termination_condition, has, x, res.objective_bound

        out = self._run(model, run, forked, t0, t1)
        if not isinstance(out, tuple):
            return out
        t2 = time.perf_counter()
        tc, has_sol, x_found, objective_bound = out
        TC = TerminationCondition
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
            x = x_found
        elif reason in (TerminationReason.OPTIMAL, TerminationReason.FEASIBLE):
            reason = TerminationReason.ERROR
        bound = None if objective_bound is None or not arr.is_mip else float(objective_bound)
        return self.result(
            model, reason, (t0, t1, t2), limit=limit, detail=f"{solver_name}: {tc.name}", x=x, bound=bound, stats={"solver": solver_name, IN_CHILD_OPTION: forked}
        )

    def _run(self, model: LinearModel, run: Callable[[], tuple[Any, ...]], forked: bool, t0: float,
             t1: float) -> tuple[Any, ...] | SolveResult:
        """``run()`` in place or in a child process (``forked``); a Ctrl-C that stops it, or a child that dies,
        gives the :class:`SolveResult` to return instead of ``run()``'s value."""
        def stopped(detail: str) -> SolveResult:
            return self.result(model, TerminationReason.NO_SOLUTION_FOUND, (t0, t1, time.perf_counter()),
                               limit=Limit.INTERRUPTED, detail=detail)

        if forked:
            try:
                value, interrupted = run_forked(run)
            except ChildProcessDied as exc:
                return self.result(model, TerminationReason.ERROR, (t0, t1, time.perf_counter()), detail=str(exc))
            if interrupted:
                return stopped("Ctrl-C: the solve's child process was stopped (its incumbent with it)")
            return tuple(value)
        try:
            return run()
        except KeyboardInterrupt:
            # pyomo's HiGHS plugin lets Ctrl-C raise out of a HiGHS callback: the solve and its results are gone
            return stopped("Ctrl-C: pyomo's solve raised KeyboardInterrupt (its results are lost with it)")

    def _solve_appsi(self, model: LinearModel, pm: Any, solver_name: str, params: SolveParams, opts: dict[str, Any],
                     arr: Any, t0: float, forked: bool = False) -> SolveResult:
        """Through pyomo's APPSI interface (``solver="appsi_highs"``, ``"appsi_cbc"``, ...)."""
        from pyomo.contrib.appsi.base import SolverFactory as AppsiFactory
        from pyomo.contrib.appsi.base import TerminationCondition as ATC

        base = solver_name[len("appsi_"):]
        opt = AppsiFactory(base)
        opt.config.load_solution = False
        opt.config.stream_solver = bool(params.verbose)
        if params.time_limit is not None:
            opt.config.time_limit = float(params.time_limit)
        if params.mip_rel_gap is not None:
            opt.config.mip_gap = float(params.mip_rel_gap)
        solver_opts = getattr(opt, f"{base}_options", None)
        if opts:
            if solver_opts is None:
                raise InputError("options", sorted(opts), f"pyomo's {solver_name} takes no solver options")
            solver_opts.update(opts)
        t1 = time.perf_counter()

        def run() -> tuple[Any, bool, np.ndarray | None, float | None]:
            res = opt.solve(pm)
            has = res.best_feasible_objective is not None
            x = None
            if has:
                x = _primal_vector(res.solution_loader.get_primals(), pm, arr)
            return res.termination_condition, has, x, res.best_objective_bound

        out = self._run(model, run, forked, t0, t1)
        if not isinstance(out, tuple):
            return out
        t2 = time.perf_counter()
        tc, has_sol, x_found, best_bound = out
        limit = None
        if tc == ATC.optimal:
            reason = TerminationReason.OPTIMAL
        elif tc in (ATC.maxTimeLimit, ATC.maxIterations, ATC.objectiveLimit, ATC.minStepLength, ATC.interrupted):
            reason = TerminationReason.FEASIBLE if has_sol else TerminationReason.NO_SOLUTION_FOUND
            limit = {ATC.maxTimeLimit: Limit.TIME, ATC.maxIterations: Limit.ITERATION,
                     ATC.interrupted: Limit.INTERRUPTED}.get(tc, Limit.OTHER)
        elif tc == ATC.infeasible:
            reason = TerminationReason.INFEASIBLE
        elif tc == ATC.unbounded:
            reason = TerminationReason.UNBOUNDED
        elif tc == ATC.infeasibleOrUnbounded:
            reason = TerminationReason.INFEASIBLE_OR_UNBOUNDED
        else:
            reason = TerminationReason.ERROR
        x = x_found if has_sol and reason in (TerminationReason.OPTIMAL, TerminationReason.FEASIBLE) else None
        bound = best_bound
        bound = float(bound) if bound is not None and arr.is_mip and np.isfinite(bound) else None
        return self.result(model, reason, (t0, t1, t2), limit=limit, detail=f"{solver_name}: {tc.name}", x=x,
                           bound=bound, stats={"solver": solver_name, IN_CHILD_OPTION: forked})

    def _fixed_point(self, model: LinearModel) -> SolveResult:
        x = rest_point(model.to_arrays())
        reason = TerminationReason.INFEASIBLE if model.violations(x) else TerminationReason.OPTIMAL
        t = time.perf_counter()
        return self.result(model, reason, (t, t, t), detail="no free variable appears: checked without a solver", x=x)
