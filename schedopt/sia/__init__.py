"""Sia (SOSP'23): heterogeneity-aware, goodput-optimised cluster scheduling as a configuration ILP.

Specs (:class:`GpuType`, :class:`Cluster`, :class:`Config`, :class:`Job`), the (n, r, t) configuration pruning layer
(:func:`generate_configs`), the knobs of the published code (:class:`SiaSettings`, :func:`published_settings`), the
ILP (:class:`SiaProblem` -> :class:`~schedopt.problem.Formulation` -> :class:`SiaSolution`, an
:class:`~schedopt.problem.Answer`), the placer (:func:`place`), independent checkers, seeded generators and JSON IO
(problem ``"sia"``, :data:`PROBLEM_IO`). Formulation: ``formulations/sia.md``.
"""

from __future__ import annotations

from ..problem import ProblemIO
from . import io as _io
from .build import SiaBuildCache
from .check import (
    allocation_errors,
    assert_allocation,
    assert_placement,
    check_allocation,
    check_placement,
    objective_value,
    placement_errors,
)
from .configs import ConfigTable, generate_configs
from .generate import SiaInstance, cluster, generate_instance
from .io import from_data, to_data
from .pairs import PairTable
from .placement import Placement, place
from .problem import SiaProblem, SiaSolution, default_backend_for
from .settings import PUBLISHED_MAX_PHYSICAL_NODES, SiaSettings, published_settings
from .spec import MAX_GPUS, Cluster, Config, GpuType, Job, virtual_bins

__all__ = [
    "MAX_GPUS",
    "PROBLEM_IO",
    "PUBLISHED_MAX_PHYSICAL_NODES",
    "Cluster",
    "Config",
    "ConfigTable",
    "GpuType",
    "Job",
    "PairTable",
    "Placement",
    "SiaBuildCache",
    "SiaInstance",
    "SiaProblem",
    "SiaSettings",
    "SiaSolution",
    "allocation_errors",
    "assert_allocation",
    "assert_placement",
    "check_allocation",
    "check_placement",
    "cluster",
    "default_backend_for",
    "from_data",
    "generate_configs",
    "generate_instance",
    "objective_value",
    "place",
    "placement_errors",
    "published_settings",
    "to_data",
    "virtual_bins",
]

#: Sia's registration: file format, generator, builder, decoder and checker.
PROBLEM_IO = ProblemIO(
    name="sia",
    cls=SiaInstance,
    to_data=to_data,
    from_data=from_data,
    solve=_io.solve_instance,
    explain=_io.explain_instance,
    generate=_io.generate,
    build=_io.build_instance,
    decode=_io.decode_instance,
    check=_io.check_instance,
    size=_io.size,
    methods=_io.METHODS,
    backend_methods=_io.METHODS,
    bench_specs=_io.bench_specs,
)
