"""HiveD (OSDI 2020): multi-level cells, virtual clusters, the cell-mapping feasibility model, the buddy allocator.

* :class:`CellType`, :class:`PhysicalCluster` (networkx forest + arrays), :func:`generate_cluster` (rack / node /
  socket / PCIe / GPU topologies of any size);
* :class:`VirtualCluster`, :func:`generate_vcs`;
* :func:`check_vc_assignment` (``"counting"`` | ``"exact"``), :func:`max_extra_quota`, :func:`build_exact_model`;
* :class:`BuddyAllocator`, :class:`Request`;
* :func:`load_hived_config` / :func:`dump_hived_config` (hivedscheduler YAML).

Math, theorem and deviations: ``formulations/hived.md``.
"""

from .allocator import Allocation, BuddyAllocator, PodPlacement, Request, weighted_max_min
from .cells import CellType, Chain, PhysicalCellSpec, PhysicalCluster, generate_cluster
from .check import CheckReport, check_vc_assignment
from .config import dump_hived_config, load_hived_config
from .exact import build_exact_model, max_extra_quota, verify_mapping
from .io import PROBLEM_IO, HivedInstance, Release
from .vc import VirtualCluster, demand_table, generate_vcs

__all__ = [
    "PROBLEM_IO",
    "Allocation",
    "BuddyAllocator",
    "CellType",
    "Chain",
    "CheckReport",
    "HivedInstance",
    "PhysicalCellSpec",
    "PhysicalCluster",
    "PodPlacement",
    "Release",
    "Request",
    "VirtualCluster",
    "build_exact_model",
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
