"""HiveD (Zhao et al., OSDI 2020) in closed loop: tenants with virtual clusters over time (card:
``formulations/sim_hived.md``).

* Clusters with tenants from hivedscheduler YAML (:func:`cluster_preset`: ``three-tenant``, ``tiny``, ``example``);
  jobs with a cell-level affinity request, guaranteed (priority 0..1000) or opportunistic (-1)
  (:class:`HivedJob`); node failures (:class:`NodeFailure`); the seeded generator :func:`synthetic_trace`.
* Two schedulers over the same trace (:mod:`~schedopt.sim.hived.schedulers`): the quota-only baseline
  (:class:`QuotaScheduler`, policy ``hived:quota``) and HiveD's buddy cell allocator (:class:`HivedScheduler`,
  policy ``hived``).
* :func:`simulate_hived` (the event loop and its metrics in ``SimResult.meta.details["hived"]``), :func:`run_task` (the
  sweep's entry), :func:`compare`.
"""

from .private import PrivateQuota, pod_level
from .run import POLICIES, JobHistory, compare, run_task, simulate_hived
from .schedulers import SCHEDULERS, HivedScheduler, Placed, QuotaScheduler, Scheduler, make_scheduler
from .workload import (
    CLUSTER_PRESETS,
    DEFAULT_CLUSTER,
    PRESET_PROFILES,
    SYNTHETIC_BOUNDS,
    SYNTHETIC_PARAMS,
    HivedCluster,
    HivedJob,
    HivedTrace,
    NodeFailure,
    TenantProfile,
    cluster_preset,
    default_profiles,
    hived_trace,
    parse_workload,
    synthetic_trace,
)

__all__ = [
    "CLUSTER_PRESETS",
    "DEFAULT_CLUSTER",
    "POLICIES",
    "PRESET_PROFILES",
    "SCHEDULERS",
    "SYNTHETIC_BOUNDS",
    "SYNTHETIC_PARAMS",
    "HivedCluster",
    "HivedJob",
    "HivedScheduler",
    "HivedTrace",
    "JobHistory",
    "NodeFailure",
    "Placed",
    "PrivateQuota",
    "QuotaScheduler",
    "Scheduler",
    "TenantProfile",
    "cluster_preset",
    "compare",
    "default_profiles",
    "hived_trace",
    "make_scheduler",
    "parse_workload",
    "pod_level",
    "run_task",
    "simulate_hived",
    "synthetic_trace",
]
