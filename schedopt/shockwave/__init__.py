"""Shockwave (Zheng et al., NSDI'23) as the Sia artifact runs it: a market-based, finite-window plan (binary
schedules over the next ``rounds`` rounds, a piecewise-linear Nash social welfare of progress, a makespan term and
finish-time fairness rows) written as MILPs solved by any backend.

:class:`ShockwaveSpec` -> :func:`build` -> :class:`~schedopt.problem.Formulation` -> :func:`solve_spec` ->
:class:`ShockwavePlan` (an :class:`~schedopt.problem.Answer`), checked by :func:`check_plan`. The simulator's
``shockwave`` policy is a thin layer over it. Card: ``formulations/shockwave.md``.
"""

from __future__ import annotations

from .build import STAGES, ShockwaveIndex, build, build_rank, objective_weights
from .check import check_plan
from .solve import METHODS, ShockwavePlan, evaluate, fill_rounds, ftf_unreachable, relaxed_priorities, solve_spec
from .spec import LOG_BASES, LOG_ORIGIN, ShockwaveSpec

__all__ = [
    "LOG_BASES",
    "LOG_ORIGIN",
    "METHODS",
    "STAGES",
    "ShockwaveIndex",
    "ShockwavePlan",
    "ShockwaveSpec",
    "build",
    "build_rank",
    "check_plan",
    "evaluate",
    "fill_rounds",
    "ftf_unreachable",
    "objective_weights",
    "relaxed_priorities",
    "solve_spec",
]
