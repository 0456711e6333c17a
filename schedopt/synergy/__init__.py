"""Synergy (OSDI'22): CPU and memory beyond GPU-proportional shares.

* :class:`Server`, :class:`SynergyJob` -- the data; :class:`SynergyAllocation` -- the answer of every method (an
  :class:`~schedopt.problem.Answer`: the core termination, the bound, the allocation).
* :func:`synergy_tune` -- the paper's greedy heuristic, in queue order (the published code) or largest first;
  :func:`synergy_greedy` -- demand or skip; :func:`proportional` -- the GPU-proportional baseline.
* :func:`solve_p1` / :func:`build_p1` -- Synergy's P1 on the cluster as one pool.
* :func:`synergy_opt` -- P1, the multi-node packing LP, largest-remainder rounding, P1 per server.
* :func:`solve_joint`, :func:`build` / :func:`decode` -- the exact joint MILP (placement and CPU / memory at once).
* :func:`order_jobs`, :func:`allocate_round` -- the published queue orders (FIFO, SRTF, LAS, FTF, Tetris, DRF) and
  one scheduling round, as a simulator calls it.
* :func:`check_allocation` (a list of violations) / :func:`assert_allocation` -- verify any allocation from the data.
* :mod:`schedopt.synergy.generators` -- optimistic profiling and instance generation.

Math, names and deviations: ``formulations/synergy.md``.
"""

from .check import allocation_usage, assert_allocation, check_allocation
from .generators import (
    binary_search_cpu_profile,
    default_cluster,
    generate_instance,
    load_profiles,
    memory_throughput,
    optimistic_profile,
    profile_job,
)
from .io import METHODS, PROBLEM_IO, SynergyInstance, from_data, to_data
from .methods import (
    SynergyInverse,
    build,
    build_p1,
    decode,
    round_largest_remainder,
    solve_joint,
    solve_p1,
    synergy_opt,
)
from .models import build_joint, build_p1_placed, build_packing_lp
from .queues import QUEUE_POLICIES, JobQueueInfo, QueueState, allocate_round, order_jobs
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
from .tune import TUNE_ORDERS, proportional, synergy_greedy, synergy_tune

__all__ = [
    "METHODS",
    "PROBLEM_IO",
    "QUEUE_POLICIES",
    "TUNE_ORDERS",
    "AllocationCheckError",
    "JobAllocation",
    "JobQueueInfo",
    "QueueState",
    "Server",
    "SynergyAllocation",
    "SynergyInstance",
    "SynergyInverse",
    "SynergyJob",
    "allocate_round",
    "allocation_usage",
    "assert_allocation",
    "binary_search_cpu_profile",
    "build",
    "build_joint",
    "build_p1",
    "build_p1_placed",
    "build_packing_lp",
    "check_allocation",
    "decode",
    "default_cluster",
    "from_data",
    "generate_instance",
    "job_options",
    "load_profiles",
    "memory_throughput",
    "optimistic_profile",
    "order_jobs",
    "profile_job",
    "proportional",
    "proportional_share",
    "proportional_throughput",
    "round_largest_remainder",
    "runnable",
    "solve_joint",
    "solve_p1",
    "synergy_greedy",
    "synergy_opt",
    "synergy_tune",
    "to_data",
    "validate",
]
