"""The plan a :class:`schedopt.live.Session` decides: per job an :class:`Action`, where it runs and its batch."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import numpy as np

__all__ = ["Action", "JobPlan", "Plan"]


class Action(StrEnum):
    """What a plan asks the cluster to do with one job."""

    START = "start"      #: start it (it held no GPUs)
    KEEP = "keep"        #: leave it where it is (same GPUs)
    RESIZE = "resize"    #: give it another GPU count or type (checkpoint, restart there)
    MOVE = "move"        #: same GPU count and type, other GPUs (checkpoint, restart there)
    PREEMPT = "preempt"  #: take its GPUs away (checkpoint; it waits)
    QUEUE = "queue"      #: it waits (held no GPUs, gets none)
    REJECT = "reject"    #: the admission rule refused it: it never runs


@dataclass(frozen=True)
class JobPlan:
    """One job's part of a plan: the action, where it runs (node name -> GPU indices; empty: nowhere), its GPU
    type and count, the batch it trains at (``batch_size`` global = GPUs per replica aside, ``local_batch`` x
    replicas x (``accumulation`` + 1); None when it does not run) and the checkpoint-restore delay the session
    charges it for this change (None: the change is no restart: it did not move, or the placer moved it within the
    same configuration, which the simulator does not charge)."""

    job_id: str
    action: Action
    placement: Mapping[str, tuple[int, ...]]
    gpu_type: str | None = None
    gpus: int = 0
    batch_size: int | None = None
    local_batch: int | None = None
    accumulation: int | None = None
    restart_seconds: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"job_id": self.job_id, "action": self.action.value,
                "placement": {n: list(g) for n, g in self.placement.items()}, "gpu_type": self.gpu_type,
                "gpus": self.gpus, "batch_size": self.batch_size, "local_batch": self.local_batch,
                "accumulation": self.accumulation, "restart_seconds": self.restart_seconds}


@dataclass(frozen=True)
class Plan:
    """One decision: per job (running, queued, deferred or just rejected) a :class:`JobPlan`, in the order the
    policy saw the jobs; ``policy_seconds`` / ``policy_cpu_seconds`` the policy's time (timing fields: they differ
    between identical runs); ``info`` the policy's own notes."""

    time: float
    round_index: int
    policy: str
    jobs: Mapping[str, JobPlan]
    policy_seconds: float = 0.0
    policy_cpu_seconds: float = 0.0
    info: Mapping[str, Any] = field(default_factory=dict)

    def running(self) -> dict[str, JobPlan]:
        """The jobs that hold GPUs under this plan."""
        return {j: p for j, p in self.jobs.items() if p.placement}

    def to_dict(self) -> dict[str, Any]:
        return {"time": self.time, "round_index": self.round_index, "policy": self.policy,
                "jobs": [p.to_dict() for p in self.jobs.values()], "policy_seconds": self.policy_seconds,
                "policy_cpu_seconds": self.policy_cpu_seconds, "info": _jsonable(self.info)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Plan:
        jobs = {}
        for p in d["jobs"]:
            jobs[p["job_id"]] = JobPlan(p["job_id"], Action(p["action"]),
                                        {n: tuple(g) for n, g in p["placement"].items()}, p["gpu_type"], p["gpus"],
                                        p["batch_size"], p["local_batch"], p["accumulation"], p["restart_seconds"])
        return cls(d["time"], d["round_index"], d["policy"], jobs, d["policy_seconds"], d["policy_cpu_seconds"],
                   d.get("info", {}))


def _jsonable(v: Any) -> Any:
    if isinstance(v, Mapping):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, (bool, int, str)) or v is None:
        return v
    if isinstance(v, (float, np.floating)):
        f = float(v)
        return f if math.isfinite(f) else str(f)
    if isinstance(v, np.integer):
        return int(v)
    return str(v)
