"""Synergy (OSDI'22): CPU and memory beyond GPU-proportional shares.

* :class:`Server`, :class:`SynergyJob` -- the data; :class:`SynergyAllocation` -- what every method returns.
* :func:`solve_p1` / :func:`build_p1` -- Synergy's P1 on the cluster as one pool.
* :func:`synergy_opt` -- P1, the multi-node packing LP, largest-remainder rounding, P1 per server.
* :func:`synergy_tune` -- the paper's greedy heuristic; :func:`proportional` -- the GPU-proportional baseline.
* :func:`solve_joint` -- an exact joint MILP (placement and CPU / memory at once).
* :func:`check_allocation` -- verifies any allocation from the data alone.
* :mod:`schedopt.synergy.generators` -- optimistic profiling and instance generation.

Math, names and deviations: ``formulations/synergy.md``.
"""

from .check import check_allocation
from .generators import (
    binary_search_cpu_profile,
    default_cluster,
    generate_instance,
    load_profiles,
    memory_throughput,
    optimistic_profile,
    profile_job,
)
from .io import PROBLEM_IO, SynergyInstance, from_data, to_data
from .methods import (
    build_p1,
    proportional,
    round_largest_remainder,
    solve_joint,
    solve_p1,
    synergy_opt,
    synergy_tune,
)
from .models import build_joint, build_p1_placed, build_packing_lp
from .spec import (
    AllocationCheckError,
    JobAllocation,
    Server,
    SynergyAllocation,
    SynergyJob,
    job_options,
    proportional_share,
    proportional_throughput,
    runnable,
    validate,
)

__all__ = [
    "PROBLEM_IO",
    "AllocationCheckError",
    "JobAllocation",
    "Server",
    "SynergyAllocation",
    "SynergyInstance",
    "SynergyJob",
    "binary_search_cpu_profile",
    "build_joint",
    "build_p1",
    "build_p1_placed",
    "build_packing_lp",
    "check_allocation",
    "default_cluster",
    "from_data",
    "generate_instance",
    "job_options",
    "load_profiles",
    "memory_throughput",
    "optimistic_profile",
    "profile_job",
    "proportional",
    "proportional_share",
    "proportional_throughput",
    "round_largest_remainder",
    "runnable",
    "solve_joint",
    "solve_p1",
    "synergy_opt",
    "synergy_tune",
    "to_data",
    "validate",
]
