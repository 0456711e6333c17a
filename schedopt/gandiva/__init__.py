"""Gandiva (Xiao et al., "Gandiva: Introspective Cluster Scheduling for Deep Learning", OSDI 2018).

Affinity-aware node allocation (Algorithm 1), GPU packing (Gandiva's greedy and an exact MILP), migration for
locality (Gandiva's greedy and a fewest-migrations MILP), time-slicing, grow-shrink, and a round-based replay.
The formulations are in ``formulations/gandiva.md``.
"""

from __future__ import annotations

from .allocate import TIERS, Allocation, allocate, find_nodes
from .check import (
    assert_defragmentation,
    assert_packing,
    assert_state,
    check_answer,
    check_defragmentation,
    check_packing,
    check_state,
    recompute,
)
from .growshrink import GrowShrink, grow, shrink
from .io import PROBLEM_IO, AllocationRun, GandivaInstance, run_allocation
from .migration import (
    DefragInverse,
    Defragmentation,
    Move,
    build_defrag,
    build_defrag_model,
    decode_defrag,
    defragment,
    fits,
    movable_jobs,
)
from .packing import (
    Packing,
    PackingInverse,
    apply_packing,
    build_packing,
    build_packing_model,
    decode_packing,
    idle_gpus,
    pack_exact,
    pack_greedy,
    packing_gap,
    packing_throughput,
)
from .profiles import Profiles, load_profiles, philly_distribution
from .replay import ReplayResult, generate_trace, replay, sample_philly, uniform_cluster
from .state import MIXED, ClusterState, GandivaJob, Node, nodes_needed

__all__ = [
    "MIXED",
    "PROBLEM_IO",
    "TIERS",
    "Allocation",
    "AllocationRun",
    "ClusterState",
    "DefragInverse",
    "Defragmentation",
    "GandivaInstance",
    "GandivaJob",
    "GrowShrink",
    "Move",
    "Node",
    "Packing",
    "PackingInverse",
    "Profiles",
    "ReplayResult",
    "allocate",
    "apply_packing",
    "assert_defragmentation",
    "assert_packing",
    "assert_state",
    "build_defrag",
    "build_defrag_model",
    "build_packing",
    "build_packing_model",
    "check_answer",
    "check_defragmentation",
    "check_packing",
    "check_state",
    "decode_defrag",
    "decode_packing",
    "defragment",
    "find_nodes",
    "fits",
    "generate_trace",
    "grow",
    "idle_gpus",
    "load_profiles",
    "movable_jobs",
    "nodes_needed",
    "pack_exact",
    "pack_greedy",
    "packing_gap",
    "packing_throughput",
    "philly_distribution",
    "recompute",
    "replay",
    "run_allocation",
    "sample_philly",
    "shrink",
    "uniform_cluster",
]
