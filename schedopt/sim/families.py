"""The built-in simulated families, registered in :mod:`schedopt.sim.registry`.

* ``elastic`` (:class:`ElasticSystem`): Sia, Pollux, Gavel, Tiresias, FIFO and every user policy, on the Sia and
  Pollux clusters with the Sia/Pollux job models and the shipped workloads; placement and admission are roles.
* ``synergy`` (:class:`SynergySystem`): ``synergy[:<queue>/<method>]`` on Synergy's CPU/memory-aware servers.
* ``gandiva`` (:class:`GandivaSystem`): ``gandiva[:<variant>]`` with packing, migration and time slicing.
* ``hived`` (:class:`HivedSystem`): ``hived`` and ``hived:quota``, tenants with virtual clusters of cells.

Each family states its own default cluster and round length here, once.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from ..errors import InputError
from .engine import DEFAULT_ROUND_SECONDS, Observer, simulate
from .registry import make_policy, parse_spec, policies, policy_entry, register_system

if TYPE_CHECKING:
    from .metrics import SimResult
    from .sweep import SimTask

__all__ = ["ElasticSystem", "GandivaSystem", "HivedSystem", "SynergySystem"]


def _no_roles(family: str, task: SimTask) -> None:
    for role in ("placer", "admission"):
        if getattr(task, role) is not None:
            raise InputError(role, str(getattr(task, role)), f"{family} policies place and admit their own jobs")


class ElasticSystem:
    """The elastic engine's family: every policy no other family owns."""

    name = "elastic"
    default_cluster: str | None = "sia-64"
    default_round_seconds = DEFAULT_ROUND_SECONDS

    def cluster_presets(self) -> Sequence[str]:
        from .workloads import CLUSTERS

        return [*CLUSTERS, "sia-<multiple of 64>"]

    def owns(self, policy: str) -> bool:
        return True

    def policy_names(self) -> Sequence[str]:
        return policies()

    def takes_solver_options(self, policy: str) -> bool:
        return policy_entry(policy).takes("backend")

    def run(self, task: SimTask, observer: Observer | None = None) -> SimResult:
        from .workloads import cluster_preset, default_job_model, load_workload

        cluster = task.cluster or self.default_cluster or "sia-64"
        pol = make_policy(task.policy, task.policy_params, seed=task.seed)
        jm = task.job_model or default_job_model(cluster)
        res = simulate(cluster_preset(cluster), load_workload(task.workload), pol,
                       round_seconds=self.default_round_seconds if task.round_seconds is None else task.round_seconds,
                       job_model=jm,
                       charge_policy_time=task.charge_policy_time, estimator=task.estimator, max_time=task.max_time,
                       progress=False, observer=observer, placer=task.placer, admission=task.admission)
        name = task.policy if isinstance(task.policy, str) else res.meta.policy
        return type(res)(res.meta.replace(policy=name, seed=task.seed, cluster_preset=cluster, system=self.name,
                                          policy_params=dict(task.policy_params)), res.jobs, res.rounds, res.hopeless)


class _OwnLoopSystem:
    """A family with its own policies, clusters and workloads that places and admits its own jobs: the common part
    (it owns the specs whose first segment is its name, takes no solver options, fills the round length)."""

    name = ""
    default_round_seconds = 60.0
    event_driven = False  #: no rounds: a task's round_seconds must stay None

    def owns(self, policy: str) -> bool:
        return parse_spec(policy).name.split(":", 1)[0] == self.name

    def takes_solver_options(self, policy: str) -> bool:
        return False

    def _runner(self) -> Callable[[SimTask, Observer | None], SimResult]:
        raise NotImplementedError

    def run(self, task: SimTask, observer: Observer | None = None) -> SimResult:
        _no_roles(self.name, task)
        if task.round_seconds is None and not self.event_driven:
            task = dataclasses.replace(task, round_seconds=self.default_round_seconds)
        res = self._runner()(task, observer)
        return type(res)(res.meta.replace(system=self.name), res.jobs, res.rounds, res.hopeless)


class SynergySystem(_OwnLoopSystem):
    """Synergy's family (:mod:`schedopt.sim.synergy`)."""

    name = "synergy"
    default_cluster: str | None = None  # the cluster the workload was run on in the published configs
    default_round_seconds = 300.0

    def cluster_presets(self) -> Sequence[str]:
        from .synergy import CLUSTER_PRESETS

        return list(CLUSTER_PRESETS)

    def policy_names(self) -> Sequence[str]:
        from .synergy import METHODS, QUEUES

        return ["synergy", *(f"synergy:{q}/{m}" for q in QUEUES for m in METHODS)]

    def _runner(self) -> Callable[[SimTask, Observer | None], SimResult]:
        from .synergy import run_task

        return run_task


class GandivaSystem(_OwnLoopSystem):
    """Gandiva's family (:mod:`schedopt.sim.gandiva`)."""

    name = "gandiva"
    default_round_seconds = 60.0  # Gandiva's time slice

    @property
    def default_cluster(self) -> str | None:
        from .gandiva.workload import DEFAULT_CLUSTER

        return DEFAULT_CLUSTER

    def cluster_presets(self) -> Sequence[str]:
        from .gandiva.workload import CLUSTER_PRESETS

        return list(CLUSTER_PRESETS)

    def policy_names(self) -> Sequence[str]:
        from .gandiva.run import VARIANTS

        return ["gandiva", *(f"gandiva:{v}" for v in VARIANTS if v != "on")]

    def _runner(self) -> Callable[[SimTask, Observer | None], SimResult]:
        from .gandiva.run import run_task

        return run_task


class HivedSystem(_OwnLoopSystem):
    """HiveD's multi-tenant family (:mod:`schedopt.sim.hived`): ``hived`` (the buddy cell allocator) and
    ``hived:quota`` (the quota-only baseline), event-driven (no rounds)."""

    name = "hived"
    event_driven = True

    @property
    def default_cluster(self) -> str | None:
        from .hived.workload import DEFAULT_CLUSTER

        return DEFAULT_CLUSTER

    def cluster_presets(self) -> Sequence[str]:
        from .hived.workload import CLUSTER_PRESETS

        return list(CLUSTER_PRESETS)

    def policy_names(self) -> Sequence[str]:
        from .hived.run import POLICIES

        return list(POLICIES)

    def _runner(self) -> Callable[[SimTask, Observer | None], SimResult]:
        from .hived.run import run_task

        return run_task


for _s in (ElasticSystem(), SynergySystem(), GandivaSystem(), HivedSystem()):
    register_system(_s, replace=True)
