"""Sweeps: :func:`simulate_many` over policies x workloads x seeds.

Runs on a local process pool by default, or on any executor passed in: a ``concurrent.futures`` executor or a Dask
``distributed.Client`` (anything with ``submit`` returning futures), or a pool with ``map`` only (``multiprocessing``
or Ray's ``ray.util.multiprocessing.Pool``). Each task is a :class:`SimTask` (plain, picklable); each result a
:class:`~schedopt.sim.metrics.SimResult` whose ``meta`` names the task. Results come back in task order and are the
same on every executor (the simulation is deterministic). Progress: a bar on a terminal,
a plain line every 30 s otherwise (``progress=True`` forces the bar, ``False`` silences it).
"""

from __future__ import annotations

import concurrent.futures as cf
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..bench.progress import Progress
from ..errors import InputError
from .engine import Observer, simulate
from .metrics import SimResult
from .policies import get_policy
from .workloads import cluster_preset, default_job_model, load_workload

__all__ = ["SYSTEMS", "SimTask", "run_task", "simulate_many", "system_of", "tasks"]


@dataclass(frozen=True)
class SimTask:
    """One simulation: names only (a shipped workload or a CSV path, a cluster preset), so it pickles anywhere."""

    policy: str
    workload: str
    seed: int = 0
    cluster: str | None = None  #: None: the system's default (``sia-64`` for the elastic policies)
    job_model: str | None = None  #: None: the cluster preset's (``pollux`` for ``pollux``, else ``sia``)
    round_seconds: float | None = None  #: None: the system's default (60 s; Synergy 300 s)
    policy_params: Mapping[str, Any] = field(default_factory=dict)
    charge_policy_time: bool = False
    max_time: float | None = None
    estimator: str = "bootstrap"  #: what the policy sees of a job's throughput (``simulate(estimator=...)``)


#: Systems with their own cluster, workload and policy types on the same engine: a policy named ``<system>`` or
#: ``<system>:<variant>`` is run by that module's ``run_task(task) -> SimResult``, which resolves the task's cluster
#: (None: the system's default), workload and policy names itself.
SYSTEMS: dict[str, str] = {"gandiva": "schedopt.sim.gandiva", "synergy": "schedopt.sim.synergy"}


def system_of(policy: str) -> str | None:
    """The system that runs ``policy`` (a key of :data:`SYSTEMS`), or None for the elastic engine's policies."""
    head = policy.split(":", 1)[0]
    return head if head in SYSTEMS else None


def run_task(task: SimTask, observer: Observer | None = None) -> SimResult:
    """Run one :class:`SimTask` (top-level, so process pools and Dask workers can import it)."""
    system = system_of(task.policy)
    if system is not None:
        import importlib

        runner = importlib.import_module(SYSTEMS[system]).run_task
        return runner(task, observer)  # type: ignore[no-any-return]
    cluster = task.cluster or "sia-64"
    pol = get_policy(task.policy, seed=task.seed, **dict(task.policy_params))
    jm = task.job_model or default_job_model(cluster)
    res = simulate(cluster_preset(cluster), load_workload(task.workload), pol,
                   round_seconds=task.round_seconds or 60.0,
                   job_model=jm, charge_policy_time=task.charge_policy_time, estimator=task.estimator,
                   max_time=task.max_time, progress=False, observer=observer)
    meta = {**res.meta, "seed": task.seed, "cluster_preset": cluster, "policy_params": dict(task.policy_params)}
    return SimResult(meta, res.jobs, res.rounds)


def tasks(policies: Iterable[str], workloads: Iterable[str], seeds: Iterable[int] = (0,), **common: Any) -> list[SimTask]:
    """The task list policies x workloads x seeds (``common``: the other :class:`SimTask` fields;
    ``policy_params`` may map a policy name to its parameters)."""
    pp = common.pop("policy_params", None) or {}
    out = []
    for p in policies:
        params = pp.get(p, {}) if all(isinstance(v, Mapping) for v in pp.values()) else pp
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
    policies: Iterable[str] | str,
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
    executor: Any = None,
    workers: int | None = None,
    progress: bool | None = None,
) -> list[SimResult]:
    """Simulate every (policy, workload, seed); results in that order. ``executor``: None (a local process pool of
    ``workers`` processes, default the CPU count; ``workers=1`` runs here), a ``concurrent.futures`` executor, a
    Dask ``distributed.Client``, or a pool with ``map``. ``policy_params``: parameters for every policy, or a
    mapping policy name -> parameters. ``estimator``: ``"bootstrap"`` (default) or ``"oracle"``, see
    :func:`~schedopt.sim.engine.simulate`."""
    pols = [policies] if isinstance(policies, str) else list(policies)
    wls = [workloads] if isinstance(workloads, str) else list(workloads)
    if not pols or not wls:
        raise InputError("policies" if not pols else "workloads", [], "must name at least one")
    items = tasks(pols, wls, seeds, cluster=cluster, job_model=job_model, round_seconds=round_seconds,
                  policy_params=dict(policy_params or {}), charge_policy_time=charge_policy_time, max_time=max_time,
                  estimator=estimator)
    return _run_all(items, executor, workers, progress)


