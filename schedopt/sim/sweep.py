"""Sweeps: :func:`simulate_many` over policies x workloads x seeds.

Runs on a local process pool by default, or on any executor passed in: a ``concurrent.futures`` executor or a Dask
``distributed.Client`` (anything with ``submit`` returning futures), or a pool with ``map`` only (``multiprocessing``
or Ray's ``ray.util.multiprocessing.Pool``). Each task is a :class:`SimTask` (plain, picklable: a policy is a
registered name, a ``module:Class`` spec or a policy object); each result a :class:`~schedopt.sim.metrics.SimResult`
whose ``meta`` names the task. The family that runs a task is found in :mod:`schedopt.sim.registry`
(:func:`~schedopt.sim.registry.system_for`), never by a string here. Results come back in task order and are the
same on every executor (the simulation is deterministic). Progress: a bar on a terminal, a plain line every 30 s
otherwise (``progress=True`` forces the bar, ``False`` silences it).
"""

from __future__ import annotations

import concurrent.futures as cf
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..bench.progress import Progress
from ..errors import InputError
from .engine import Observer
from .metrics import SimResult
from .registry import system_for

if TYPE_CHECKING:
    from .policies.base import Policy
    from .roles import Admission, Placer

__all__ = ["SimTask", "run_task", "simulate_many", "tasks"]


@dataclass(frozen=True)
class SimTask:
    """One simulation: names (a shipped workload or a CSV path, a cluster preset) and specs, so it pickles
    anywhere. ``policy``: a registered name or spec (``sia:backend=highs``, ``synergy:las/opt``,
    ``mymod:MyPolicy:k=3``) or a policy object (copied per simulation)."""

    policy: str | Policy
    workload: str
    seed: int = 0
    cluster: str | None = None  #: None: the family's default (``sia-64`` for the elastic policies)
    job_model: str | None = None  #: None: the cluster preset's (``pollux`` for ``pollux``, else ``sia``)
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


def run_task(task: SimTask, observer: Observer | None = None) -> SimResult:
    """Run one :class:`SimTask` on its family (top-level, so process pools and Dask workers can import it)."""
    if not isinstance(task, SimTask):
        raise InputError("task", type(task).__name__, "must be a schedopt.sim.SimTask")
    return system_for(task.policy).run(task, observer)


def tasks(policies: Iterable[str | Policy], workloads: Iterable[str], seeds: Iterable[int] = (0,),
          **common: Any) -> list[SimTask]:
    """The task list policies x workloads x seeds (``common``: the other :class:`SimTask` fields;
    ``policy_params`` may map a policy name to its parameters)."""
    pp = common.pop("policy_params", None) or {}
    per_policy = bool(pp) and all(isinstance(v, Mapping) for v in pp.values())
    out = []
    for p in policies:
        key = p if isinstance(p, str) else None
        params = (pp.get(key, {}) if key is not None else {}) if per_policy else pp
        for w in workloads:
            for s in seeds:
                out.append(SimTask(policy=p, workload=w, seed=int(s), policy_params=dict(params), **common))
    return out


def _run_all(items: Sequence[SimTask], executor: Any, workers: int | None, progress: bool | None) -> list[SimResult]:
    """The one executor layer: serial, a local process pool, or the caller's executor."""
    n = len(items)
    bar = Progress(n, progress, interval=30.0)

    def tick(done: int) -> None:
        bar.update("simulate_many", advance=done - bar.done)
        if done == n:
            bar.close()

    if executor is None and (workers == 1 or n <= 1):
        out = []
        for k, t in enumerate(items):
            out.append(run_task(t))
            tick(k + 1)
        return out
    own = executor is None
    pool = cf.ProcessPoolExecutor(max_workers=workers or os.cpu_count() or 1) if own else executor
    try:
        if hasattr(pool, "submit"):
            futs = [pool.submit(run_task, t) for t in items]
            index = {id(f): k for k, f in enumerate(futs)}
            results: list[SimResult | None] = [None] * n
            done = 0
            pending = list(futs)
            while pending:
                f = pending.pop(0)
                results[index[id(f)]] = f.result()
                done += 1
                tick(done)
            return [r for r in results if r is not None]
        if hasattr(pool, "map"):
            out = list(pool.map(run_task, items))
            tick(n)
            return out
        raise InputError("executor", type(pool).__name__, "needs submit(fn, *args) -> future, or map(fn, items)")
    finally:
        if own:
            pool.shutdown()


def simulate_many(
    policies: Iterable[str | Policy] | str,
    workloads: Iterable[str] | str,
    seeds: Iterable[int] = (0,),
    *,
    cluster: str | None = None,
    job_model: str | None = None,
    round_seconds: float | None = None,
    policy_params: Mapping[str, Any] | None = None,
    charge_policy_time: bool = False,
    max_time: float | None = None,
    estimator: str = "bootstrap",
    placer: str | Placer | None = None,
    admission: str | Admission | None = None,
    executor: Any = None,
    workers: int | None = None,
    progress: bool | None = None,
) -> list[SimResult]:
    """Simulate every (policy, workload, seed); results in that order. ``policies``: registered names or specs
    (``sia:backend=highs``, ``mymod:MyPolicy``) or policy objects (pickled to workers, copied per simulation).
    ``executor``: None (a local process pool of ``workers`` processes, default the CPU count; ``workers=1`` runs
    here), a ``concurrent.futures`` executor, a Dask ``distributed.Client``, or a pool with ``map``.
    ``policy_params``: parameters for every policy, or a mapping policy name -> parameters. ``estimator``:
    ``"bootstrap"`` (default) or ``"oracle"``; ``placer``, ``admission``: see :func:`~schedopt.sim.engine.simulate`."""
    pols = [policies] if isinstance(policies, str) else list(policies)
    wls = [workloads] if isinstance(workloads, str) else list(workloads)
    if not pols or not wls:
        raise InputError("policies" if not pols else "workloads", [], "must name at least one")
    items = tasks(pols, wls, seeds, cluster=cluster, job_model=job_model, round_seconds=round_seconds,
                  policy_params=dict(policy_params or {}), charge_policy_time=charge_policy_time, max_time=max_time,
                  estimator=estimator, placer=placer, admission=admission)
    return _run_all(items, executor, workers, progress)
