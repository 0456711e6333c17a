"""Simulated families: the :class:`SimSystem` protocol, their registry (:func:`register_system`, :func:`system_for`,
group ``schedopt.sim_systems``), :func:`run_task`, and the built-in families.

* ``elastic`` (:class:`ElasticSystem`): Sia, Pollux, Gavel, Tiresias, FIFO and every user policy, on the Sia and
  Pollux clusters with the Sia/Pollux job models and the shipped workloads; placement and admission are roles.
* ``synergy`` (:class:`SynergySystem`): ``synergy[:<queue>/<method>]`` on Synergy's CPU/memory-aware servers.
* ``gandiva`` (:class:`GandivaSystem`): ``gandiva[:<variant>]`` with packing, migration and time slicing.
* ``hived`` (:class:`HivedSystem`): ``hived`` and ``hived:quota``, tenants with virtual clusters of cells.

Each family states its own default cluster and round length here, once.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Sequence
from importlib import metadata
from typing import Protocol, runtime_checkable

from ..errors import InputError
from .engine import DEFAULT_ROUND_SECONDS, Observer, simulate
from .metrics import SimResult
from .policies import make_policy
from .registry import parse_spec, policies, policy_entry
from .task import SimTask

__all__ = ["ElasticSystem", "GandivaSystem", "HivedSystem", "SimSystem", "SynergySystem", "iter_names", "register_system",
           "run_task", "system_for", "systems"]


@runtime_checkable
class SimSystem(Protocol):
    """A simulated family: its clusters, its default round length, its workloads and policies, and how it runs a
    :class:`~schedopt.sim.sweep.SimTask` on the engine."""

    name: str
    default_round_seconds: float

    @property
    def default_cluster(self) -> str | None:
        """The cluster preset a task without one runs on (None: the workload decides, as Synergy's)."""
        ...

    def cluster_presets(self) -> Sequence[str]: ...

    def owns(self, policy: str) -> bool:
        """Whether this family runs the policy spec ``policy``."""
        ...

    def policy_names(self) -> Sequence[str]: ...

    def takes_solver_options(self, policy: str) -> bool:
        """Whether ``policy`` takes ``backend`` / ``time_limit`` (the CLI passes them only there)."""
        ...

    def run(self, task: SimTask, observer: Observer | None = None) -> SimResult: ...


_SYSTEMS: dict[str, SimSystem] = {}
_SYSTEM_EPS_LOADED = False


def register_system(system: SimSystem, *, replace: bool = False) -> None:
    """Add a family; the elastic one (``elastic``) is the fallback for every policy no other family owns."""
    if not isinstance(system, SimSystem):
        raise InputError("system", type(system).__name__, "must implement schedopt.sim.families.SimSystem")
    if system.name in _SYSTEMS and not replace:
        raise InputError("system.name", system.name, "is registered already (pass replace=True)")
    _SYSTEMS[system.name] = system


def _systems() -> dict[str, SimSystem]:
    global _SYSTEM_EPS_LOADED
    # the built-in families register when this module is imported (bottom of the file)
    if not _SYSTEM_EPS_LOADED:
        from ..plugins import PluginError, load_entry_point

        for ep in metadata.entry_points(group="schedopt.sim_systems"):
            if ep.name in _SYSTEMS:
                continue
            obj = load_entry_point(ep)  # a broken plug-in: PluginError naming it, on every call until it is fixed
            try:
                register_system(obj() if isinstance(obj, type) else obj)
            except InputError as exc:
                raise PluginError(ep.group, ep.name, f"the plug-in {ep.name!r} ({ep.value}) is not a simulated "
                                  f"family: {exc.message}") from None
        _SYSTEM_EPS_LOADED = True
    return _SYSTEMS


def systems() -> list[SimSystem]:
    """The registered families (elastic first)."""
    return list(_systems().values())


def system_for(policy: object) -> SimSystem:
    """The family that runs ``policy`` (a spec or a policy object: objects run on the elastic engine)."""
    fams = _systems()
    if isinstance(policy, str):
        for s in fams.values():
            if s.name != "elastic" and s.owns(policy):
                return s
    return fams["elastic"]


def iter_names() -> Iterator[str]:
    """Every policy name a user can give on the command line (families' and the elastic engine's)."""
    for s in systems():
        yield from s.policy_names()


def run_task(task: SimTask, observer: Observer | None = None) -> SimResult:
    """Run one :class:`~schedopt.sim.task.SimTask` on its family (top-level, so process pools and Dask workers can
    import it; also ``schedopt.sim.sweep.run_task``)."""
    if not isinstance(task, SimTask):
        raise InputError("task", type(task).__name__, "must be a schedopt.sim.SimTask")
    from .asis import is_as_is

    if is_as_is(task.workload):  # a trace replayed as it happened, under any family's policy (schedopt.sim.asis)
        from .asis import run_task as run_as_is

        return run_as_is(task, observer)
    return system_for(task.policy).run(task, observer)


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


# the built-in families implement SimSystem (tests/test_sim_families.py checks it): registered without the runtime
# protocol check, whose ``hasattr`` reads every member, ``default_cluster`` included -- a property that imports
# Gandiva's and HiveD's workload modules, and with them the whole HiveD package and PyYAML (about 0.1 s of every
# process that imports the simulator, which a run of another family never uses)
for _s in (ElasticSystem(), SynergySystem(), GandivaSystem(), HivedSystem()):
    _SYSTEMS[_s.name] = _s
