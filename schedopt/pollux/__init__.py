"""Pollux (OSDI'21): the round's allocation problem, maximising the power mean of per-job speedups with the
re-allocation penalty (card: ``formulations/pollux.md``).

:class:`PolluxSpec` (jobs, their goodput tables and fair-share goodput, the cluster's columns, current allocations)
-> :func:`solve_spec` -> :class:`PolluxAnswer` (an :class:`~schedopt.problem.Answer`), checked by
:func:`check_allocation`. Methods (:data:`METHODS`): ``ga``, the published genetic search
(:func:`genetic_search`, :class:`GeneticSearch`), and ``exact``, the same objective over Sia's configurations as a
model (:func:`build` -> :class:`~schedopt.problem.Formulation` -> any MILP backend -> :func:`decode`). Registered as
problem ``"pollux"`` (:data:`PROBLEM_IO`); the simulator's ``pollux``, ``pollux-exact`` and ``pollux-unaware``
policies are a thin layer over it.
"""

from __future__ import annotations

from ..problem import ProblemIO
from . import io as _io
from .check import check_allocation
from .io import from_data, generate, to_data
from .objective import SpeedupTable, allocation_speedups, power_mean
from .search import GeneticSearch, first_unique
from .solve import (
    METHODS,
    PolluxAnswer,
    PolluxIndex,
    allocation_nodes,
    build,
    current_configs,
    decode,
    evaluate,
    genetic_search,
    mean_of_sum,
    solve_exact,
    solve_spec,
)
from .spec import (
    EPS,
    MAX_NODES,
    MAX_REPLICAS,
    P_FAIRNESS,
    RESTART_DELAY_S,
    Columns,
    GoodputFill,
    PolluxSpec,
    node_columns,
    restart_factor,
)

__all__ = [
    "EPS",
    "MAX_NODES",
    "MAX_REPLICAS",
    "METHODS",
    "PROBLEM_IO",
    "P_FAIRNESS",
    "RESTART_DELAY_S",
    "Columns",
    "GeneticSearch",
    "GoodputFill",
    "PolluxAnswer",
    "PolluxIndex",
    "PolluxSpec",
    "SpeedupTable",
    "allocation_nodes",
    "allocation_speedups",
    "build",
    "check_allocation",
    "current_configs",
    "decode",
    "evaluate",
    "first_unique",
    "from_data",
    "generate",
    "genetic_search",
    "mean_of_sum",
    "node_columns",
    "power_mean",
    "restart_factor",
    "solve_exact",
    "solve_spec",
    "to_data",
]

#: Pollux's registration: file format, generator, builder, decoder and checker.
PROBLEM_IO = ProblemIO(
    name="pollux",
    cls=PolluxSpec,
    to_data=to_data,
    from_data=from_data,
    solve=_io.solve_instance,
    generate=generate,
    # build/decode stay None: the default method (the genetic search) builds no model; schedopt.pollux.build and
    # decode are public for the exact model
    check=_io.check_instance,
    size=_io.size,
    explain=_io.explain_instance,
    methods=METHODS,
)
