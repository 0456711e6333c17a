"""Priorities and wait reasons of the HiveD allocator, and the weighted max-min share of opportunistic GPUs.

As in hivedscheduler (``pkg/api/constants.go``, ``pkg/algorithm/constants.go``): guaranteed priorities are the
integers 0..1000 (higher wins inside a VC), ``-1`` is opportunistic, and a free GPU has the internal priority ``-2``.
"""

from __future__ import annotations

import enum
from typing import Any

import numpy as np

from ..errors import InputError

__all__ = [
    "FREE_PRIORITY",
    "GUARANTEED",
    "MAX_GUARANTEED_PRIORITY",
    "MIN_GUARANTEED_PRIORITY",
    "OPPORTUNISTIC",
    "OPPORTUNISTIC_PRIORITY",
    "WaitReason",
    "priority_value",
    "weighted_max_min",
]

#: The two kinds of HiveD job: guaranteed (within its VC's quota) and opportunistic.
GUARANTEED = "guaranteed"
#: An opportunistic job runs on idle cells and is preempted first.
OPPORTUNISTIC = "opportunistic"
#: The highest priority of a guaranteed job.
MAX_GUARANTEED_PRIORITY = 1000
#: The lowest priority of a guaranteed job.
MIN_GUARANTEED_PRIORITY = 0
#: The priority every opportunistic job has.
OPPORTUNISTIC_PRIORITY = -1
#: The priority of a free GPU.
FREE_PRIORITY = -2


class WaitReason(enum.StrEnum):
    """Why a request must wait (an :class:`~schedopt.hived.Allocation` that is not ``ok``)."""

    #: the VC's own virtual cells cannot hold the pods, even preempting its lower-priority pods
    VC_QUOTA = "vc_quota"
    #: a guaranteed placement cannot be mapped onto healthy physical cells (failed nodes)
    BAD_HARDWARE = "bad_hardware"
    #: no free physical cell although the VC has quota: only possible when the VC assignment is invalid
    INVALID_ASSIGNMENT = "invalid_assignment"
    #: opportunistic: too few free GPUs in the cluster
    NO_FREE_CELLS = "no_free_cells"
    #: opportunistic (with ``fair_share=True``): above the VC's weighted max-min share
    FAIR_SHARE = "fair_share"


def priority_value(priority: Any, path: str = "request.priority") -> int:
    """The integer priority of ``"guaranteed"`` (0), ``"opportunistic"`` (-1) or an int in -1..1000."""
    if priority == GUARANTEED:
        return MIN_GUARANTEED_PRIORITY
    if priority == OPPORTUNISTIC:
        return OPPORTUNISTIC_PRIORITY
    if isinstance(priority, bool) or not isinstance(priority, int | np.integer):
        raise InputError(path, priority, "must be 'guaranteed', 'opportunistic' or an integer in -1..1000")
    if not OPPORTUNISTIC_PRIORITY <= int(priority) <= MAX_GUARANTEED_PRIORITY:
        raise InputError(path, priority, "must be -1 (opportunistic) or a guaranteed priority 0..1000")
    return int(priority)


def weighted_max_min(capacity: float, demand: dict[str, float], weight: dict[str, float]) -> dict[str, float]:
    """Weighted max-min fair shares of ``capacity`` for the given demands (water filling)."""
    share = {k: 0.0 for k in demand}
    active = [k for k in demand if demand[k] > 0]
    cap = float(capacity)
    while active and cap > 1e-12:
        wsum = sum(weight[k] for k in active)
        level = cap / wsum
        sat = [k for k in active if demand[k] - share[k] <= level * weight[k] + 1e-12]
        if not sat:
            for k in active:
                share[k] += level * weight[k]
            break
        for k in sat:
            cap -= demand[k] - share[k]
            share[k] = float(demand[k])
        active = [k for k in active if k not in sat]
    return share
