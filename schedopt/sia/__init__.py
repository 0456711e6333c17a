"""Sia (SOSP'23): heterogeneity-aware, goodput-optimised cluster scheduling as a configuration ILP.

Specs (:class:`GpuType`, :class:`Cluster`, :class:`Config`, :class:`Job`), the (n, r, t) configuration pruning layer
(:func:`generate_configs`), the ILP (:class:`SiaProblem` -> :class:`SiaSolution`), the placer (:func:`place`),
independent checkers, seeded generators and JSON IO (problem ``"sia"``). Formulation: ``formulations/sia.md``.
"""

from __future__ import annotations

from ..instances import ProblemIO
from . import io as _io
from .check import check_allocation, check_placement, objective_value
from .configs import ConfigTable, generate_configs
from .generate import SiaInstance, cluster, generate_instance
from .io import from_data, to_data
from .placement import Placement, place
from .problem import PairTable, SiaProblem, SiaSolution
from .spec import Cluster, Config, GpuType, Job, virtual_bins

__all__ = [
    "PROBLEM_IO",
    "Cluster",
    "Config",
    "ConfigTable",
    "GpuType",
    "Job",
    "PairTable",
    "Placement",
    "SiaInstance",
    "SiaProblem",
    "SiaSolution",
    "check_allocation",
    "check_placement",
    "cluster",
    "from_data",
    "generate_configs",
    "generate_instance",
    "objective_value",
    "place",
    "to_data",
    "virtual_bins",
]

PROBLEM_IO = ProblemIO(
        name="sia",
        cls=SiaInstance,
        to_data=to_data,
        from_data=from_data,
        solve=_io.solve_instance,
        explain=_io.explain_instance,
        generate=_io.generate,
)
