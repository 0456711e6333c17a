"""``schedopt.mckp``: the multiple-choice multi-knapsack family (one configuration per job), with a public API.

The family (detected from the :class:`~schedopt.LinearModel` itself)::

    max / min   sum_i v_i x_i + const
    s.t.        sum_{i in g} x_i <= 1          for every group g   (at-most-one rows: the GUB rows)
                sum_i W_ki x_i <= b_k          for k = 1..K        (knapsack rows, W >= 0, K <= 64)
                x_i in {0, 1}, some x_i fixed  (by bounds or single-column rows such as ``forced_config``)

The package, step by step (``formulations/mckp.md`` has the mathematics):

* :mod:`~schedopt.mckp.structure`: :func:`analyze` (detection and presolve into an :class:`MckpStructure`, a
  maximisation; :class:`~schedopt.errors.StructureError` names the row or column outside the family; the same steps
  on a model's array form, :func:`detect_arrays` and :func:`presolve_arrays`, and :func:`remember` for a problem
  that builds its structure directly, ``schedopt.sia.direct``);
* :mod:`~schedopt.mckp.aggregate`: :func:`aggregate` (identical groups collapsed into classes);
* :mod:`~schedopt.mckp.dual`: :class:`LagrangianDual` (the prices from one LP solve of the relaxation up to
  ``LP_DUAL_COLUMNS`` columns, Kelley's method with Wentges smoothing above; the LP's optimal counts for the repair);
* :mod:`~schedopt.mckp.heuristics`: :class:`GreedyRepair`, :func:`local_search`, :func:`kick_search`;
* :mod:`~schedopt.mckp.exact`: :class:`ResidualClosure` (reduced-cost fixing; the residual problem by its own
  depth-first search with identical jobs in a fixed order, by dynamic programming over integer capacities, or by a
  sub-solver it is handed);
* :mod:`~schedopt.mckp.solver`: :class:`MckpSolver`, the steps in order, and :func:`solve_structure`.

The ``mckp`` backend (``schedopt.solve(model, "mckp")``) is a thin adapter over :class:`MckpSolver`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ..results import SolveResult
from .aggregate import Aggregate, aggregate
from .dual import LP_DUAL_COLUMNS, ColumnSet, DualResult, LagrangianDual, OracleAnswer, columns_of_groups
from .exact import ResidualClosure, RestrictedSolve, default_residual_backend
from .heuristics import GreedyRepair, kick_search, local_search
from .solver import MckpOptions, MckpOutcome, MckpSolver
from .structure import (
    MAX_KNAPSACK_ROWS,
    TOL,
    Detected,
    MckpStructure,
    analyze,
    detect,
    detect_arrays,
    detect_structure,
    presolve,
    presolve_arrays,
    remember,
)

__all__ = [
    "LP_DUAL_COLUMNS",
    "MAX_KNAPSACK_ROWS",
    "TOL",
    "Aggregate",
    "ColumnSet",
    "Detected",
    "DualResult",
    "GreedyRepair",
    "LagrangianDual",
    "MckpOptions",
    "MckpOutcome",
    "MckpSolver",
    "MckpStructure",
    "OracleAnswer",
    "ResidualClosure",
    "RestrictedSolve",
    "aggregate",
    "analyze",
    "columns_of_groups",
    "default_residual_backend",
    "detect",
    "detect_arrays",
    "detect_structure",
    "kick_search",
    "local_search",
    "presolve",
    "presolve_arrays",
    "remember",
    "solve_structure",
]


def solve_structure(st: MckpStructure, *, mip_rel_gap: float | None = 1e-6, time_limit: float | None = None,
                    seed: int = 0, options: Mapping[str, Any] | MckpOptions | None = None,
                    sub_solve: Callable[..., SolveResult] | None = None, warm_start: np.ndarray | None = None,
                    verbose: bool = False) -> MckpOutcome:
    """Run :class:`MckpSolver` on a presolved structure (``options``: a mapping checked by
    :meth:`MckpOptions.from_mapping`, or :class:`MckpOptions`)."""
    opts = options if isinstance(options, MckpOptions) else MckpOptions.from_mapping(options or {})
    return MckpSolver(st, mip_rel_gap=mip_rel_gap, time_limit=time_limit, seed=seed, options=opts,
                      sub_solve=sub_solve, warm_start=warm_start, verbose=verbose).run()
