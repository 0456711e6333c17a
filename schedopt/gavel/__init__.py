"""Gavel (OSDI'20): heterogeneity-aware allocation over a throughput matrix, as LPs solved by any backend.

:class:`GavelSpec` (throughputs jobs x GPU types, scale factors, capacities and what each objective needs) ->
:func:`build` -> :class:`~schedopt.problem.Formulation` -> :func:`solve_spec` -> :class:`GavelAllocation` (an
:class:`~schedopt.problem.Answer`), checked by :func:`check_allocation`. Objectives (:data:`OBJECTIVES`):
max-min fairness, finish-time fairness, minimum makespan, max-sum throughput, cost under SLOs. Registered as
problem ``"gavel"`` (:data:`PROBLEM_IO`); the simulator's ``gavel`` policies are a thin layer over it. Card:
``formulations/gavel.md``.
"""

from __future__ import annotations

from ..problem import ProblemIO
from . import io as _io
from .build import GavelIndex, build, ftf_need, isolated_allocation, normalized_weights, runnable
from .check import check_allocation
from .io import from_data, generate, to_data
from .solve import FTF_TOLERANCE, METHODS, GavelAllocation, decode, evaluate, solve_spec
from .spec import OBJECTIVES, GavelSpec

__all__ = [
    "FTF_TOLERANCE",
    "METHODS",
    "OBJECTIVES",
    "PROBLEM_IO",
    "GavelAllocation",
    "GavelIndex",
    "GavelSpec",
    "build",
    "check_allocation",
    "decode",
    "evaluate",
    "from_data",
    "ftf_need",
    "generate",
    "isolated_allocation",
    "normalized_weights",
    "runnable",
    "solve_spec",
    "to_data",
]

#: Gavel's registration: file format, generator, builder, decoder and checker.
PROBLEM_IO = ProblemIO(
    name="gavel",
    cls=GavelSpec,
    to_data=to_data,
    from_data=from_data,
    solve=_io.solve_instance,
    explain=_io.explain_instance,
    generate=generate,
    # build/decode stay None: an answer comes from one to ~25 LPs (max-min's tie-break, ftf's bisection) and is in
    # the objective's own terms (seconds, rho), so no single model's LP bound bounds it (schedopt.gavel.build and
    # decode are public for users who want one model)
    check=_io.check_instance,
    size=_io.size,
    methods=METHODS,
)
