"""One simulation of a sweep, as plain data: :class:`SimTask` (what ``simulate_many``, the command line and
``schedopt.sim.families.run_task`` take; it pickles to any worker)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .jobs import JobModel
    from .policies.base import Policy
    from .roles import Admission, Placer

__all__ = ["SimTask"]


@dataclass(frozen=True)
class SimTask:
    """One simulation: names (a shipped workload or a CSV path, a cluster preset) and specs, so it pickles
    anywhere. ``policy``: a registered name or spec (``sia:backend=highs``, ``synergy:las/opt``,
    ``mymod:MyPolicy:k=3``) or a policy object (copied per simulation)."""

    policy: str | Policy
    workload: str
    seed: int = 0  #: varies a policy's random draws and generated workloads, never a shipped one (schedopt.sim.seeds)
    cluster: str | None = None  #: None: the family's default (``sia-64`` for the elastic policies)
    job_model: str | JobModel | None = None  #: None: the preset's (``pollux`` for ``pollux``, ``sia-measured`` for Sia's, else ``sia``)
    round_seconds: float | None = None  #: None: the family's default (60 s; Synergy 300 s)
    policy_params: Mapping[str, Any] = field(default_factory=dict)
    charge_policy_time: bool = False
    max_time: float | None = None
    estimator: str = "bootstrap"  #: what the policy sees of a job's throughput (``simulate(estimator=...)``)
    placer: str | Placer | None = None  #: None: the family's (Sia's placer on the elastic engine)
    admission: str | Admission | None = None  #: None: accept every job at arrival

    @property
    def policy_name(self) -> str:
        """The policy as records name it: the spec, or the object's ``name``."""
        return self.policy if isinstance(self.policy, str) else str(getattr(self.policy, "name",
                                                                            type(self.policy).__name__))
