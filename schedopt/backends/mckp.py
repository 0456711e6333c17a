"""The ``mckp`` backend: a thin adapter over :class:`schedopt.mckp.MckpSolver` (the structure-exploiting exact
solver for the one-configuration-per-job family; the algorithm and its public API live in :mod:`schedopt.mckp`).

Backend options (``schedopt.solve(model, "mckp", exact=..., ...)``) are the fields of
:class:`schedopt.mckp.MckpOptions`, checked by name and type: ``exact`` (default True), ``local_search`` (True),
``kick_seconds`` (0.03; 0.005 when ``mip_rel_gap < 1e-5``; at most 10 us per aggregated column), ``kicks`` (40), ``kick_size`` (3),
``residual_backend`` ("cpsat" when OR-Tools is installed, else "highs"), ``residual_form`` ("auto"),
``max_dual_iterations`` (500), ``dual_tolerance`` (1e-10), ``core_columns`` (2000), ``race_backend`` ("highs"),
``race_delay`` (None: the time taken so far, at least 0.05 s), ``race_max_columns`` (100,000: no race on a larger
model; None: no cap), ``dual_method`` ("auto": the prices from one LP of
the relaxation up to 2,000 aggregated columns, Kelley's cutting planes above; "lp"; "kelley"), ``lp_rounding``
(True: the repair starts from the LP's counts rounded down), ``search_nodes`` (1500: the residual's own depth-first
search with symmetry breaking; 0 turns it off) and ``residual_table`` (True: the residual's dynamic programme over
integer capacities). ``mip_rel_gap=None`` means 1e-4
(HiGHS's default). The residual problems of the exact mode are solved through the ``sub_solve`` callable that
:func:`schedopt.solve` hands over in :class:`SolveParams` (this module imports no dispatcher).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from ..errors import StructureError
from ..mckp import MAX_KNAPSACK_ROWS, MckpOptions, MckpSolver, analyze, default_residual_backend
from ..results import SolveResult
from .base import Backend, Capabilities, SolveParams, interrupted_reason, run_interruptible

if TYPE_CHECKING:
    from ..model import LinearModel

__all__ = ["MAX_KNAPSACK_ROWS", "MckpBackend"]


class MckpBackend(Backend):
    """The structure-exploiting exact solver for the one-configuration-per-job family (see :mod:`schedopt.mckp`)."""

    name = "mckp"
    capabilities = Capabilities(lp=False, mip=True, duals=False, iis=False, warm_start=True, structure="mckp")
    requires = ("highspy",)
    install_hint = "pip install highspy==1.12.0"

    def warm_up(self) -> None:
        """Also load and run the residual solver once (CP-SAT when installed): its first call costs ~0.3 s."""
        super().warm_up()
        if default_residual_backend() == "cpsat":
            from ortools.sat.python import cp_model

            m = cp_model.CpModel()
            v = m.new_int_var(0, 1, "v")
            m.maximize(v)
            cp_model.CpSolver().solve(m)

    def version(self) -> str:
        return "1.0"

    def known_options(self) -> frozenset[str]:
        return frozenset(MckpOptions.known())

    def check_model(self, model: LinearModel) -> str | None:
        arr = model.to_arrays()
        if not arr.is_mip:
            return "the model is a pure LP (the mckp family is binary)"
        try:
            analyze(model)
        except StructureError as exc:
            return f"outside the mckp family: {exc}"
        return None

    def solve(self, model: LinearModel, params: SolveParams) -> SolveResult:
        t0 = time.perf_counter()
        opts = MckpOptions.from_mapping(params.solver_options)
        st = analyze(model)
        t1 = time.perf_counter()
        solver = MckpSolver(st, mip_rel_gap=params.mip_rel_gap, time_limit=params.time_limit, seed=params.seed,
                            threads=params.threads, warm_start=params.warm_start, options=opts,
                            sub_solve=params.sub_solve, verbose=params.verbose, t_start=t0, model=model)
        # Ctrl-C sets the solver's stop flag (run_interruptible): it ends at its next check with the incumbent; its
        # loop is Python, so it runs in place (no worker thread; its CP-SAT / HiGHS residual gets one)
        out, interrupted = run_interruptible(solver.run, solver.stop, in_place=True)
        t2 = time.perf_counter()
        x = st.full_solution(out.choice) if out.choice is not None else None
        reason, limit = out.termination.reason, out.termination.limit
        if interrupted:
            reason, limit = interrupted_reason(reason, x is not None)
        return self.result(model, reason, (t0, t1, t2), limit=limit,
                           detail=out.termination.detail, x=x, bound=out.bound, stats=out.stats)
