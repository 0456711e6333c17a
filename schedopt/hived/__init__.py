"""HiveD (OSDI 2020): multi-level cells, virtual clusters, the cell-mapping feasibility model, the buddy allocator.

* :class:`CellType`, :class:`PhysicalCluster` (networkx forest + arrays), :func:`generate_cluster` (rack / node /
  socket / PCIe / GPU topologies of any size);
* :class:`VirtualCluster`, :func:`generate_vcs`;
* :func:`check_vc_assignment` (``"counting"`` | ``"exact"``), :func:`max_extra_quota`, :func:`build_exact_model`;
* :class:`BuddyAllocator` (GPU-granular VC placement, dynamic binding, priorities 0..1000 with preemption,
  opportunistic pods on any idle GPU, lazy preemption, pinned-cell requests, failed nodes and doomed bad cells),
  :class:`Request`;
* ``PROBLEM_IO`` (typed: ``solve(spec, SolveOptions) -> HivedAnswer``, ``build``, ``decode``, ``check``, ...);
* :func:`load_hived_config` / :func:`dump_hived_config` (hivedscheduler YAML).

Math, theorem and deviations: ``formulations/hived.md``.
"""

from .allocator import Allocation, BuddyAllocator, Job, PodPlacement, Request, weighted_max_min
from .cells import CellType, Chain, PhysicalCellSpec, PhysicalCluster, generate_cluster
from .check import CheckReport, check_vc_assignment
from .config import dump_hived_config, load_hived_config
from .exact import (
    ExactModel,
    MappingInverse,
    assert_mapping,
    build_exact_model,
    check_mapping,
    max_extra_quota,
    verify_mapping,
)
from .io import PROBLEM_IO, HivedAnswer, HivedInstance, Release
from .priority import MAX_GUARANTEED_PRIORITY, OPPORTUNISTIC_PRIORITY, WaitReason
from .vc import VirtualCluster, demand_table, generate_vcs

__all__ = [
    "MAX_GUARANTEED_PRIORITY",
    "OPPORTUNISTIC_PRIORITY",
    "PROBLEM_IO",
    "Allocation",
    "BuddyAllocator",
    "CellType",
    "Chain",
    "CheckReport",
    "ExactModel",
    "HivedAnswer",
    "HivedInstance",
    "Job",
    "MappingInverse",
    "PhysicalCellSpec",
    "PhysicalCluster",
    "PodPlacement",
    "Release",
    "Request",
    "VirtualCluster",
    "WaitReason",
    "assert_mapping",
    "build_exact_model",
    "check_mapping",
    "check_vc_assignment",
    "demand_table",
    "dump_hived_config",
    "generate_cluster",
    "generate_vcs",
    "load_hived_config",
    "max_extra_quota",
    "verify_mapping",
    "weighted_max_min",
]
