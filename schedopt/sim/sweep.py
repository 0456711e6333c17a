"""Sweeps: :func:`simulate_many` over policies x workloads x seeds.

Runs on a local process pool by default, or on any executor passed in: a ``concurrent.futures`` executor or a Dask
``distributed.Client`` (anything with ``submit`` returning futures), or a pool with ``map`` only (``multiprocessing``
or Ray's ``ray.util.multiprocessing.Pool``). Each task is a :class:`SimTask` (plain, picklable: a policy is a
registered name, a ``module:Class`` spec or a policy object); each result a :class:`~schedopt.sim.metrics.SimResult`
whose ``meta`` names the task. The family that runs a task is found in :mod:`schedopt.sim.registry`
(``schedopt.sim.families.system_for``), never by a string here. Results come back in task order and are the
same on every executor (the simulation is deterministic). Progress: a bar on a terminal, a plain line every 30 s
otherwise (``progress=True`` forces the bar, ``False`` silences it).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Literal

from ..errors import InputError
from .families import run_task
from .limits import check_max_time, check_round_seconds, check_seeds, check_tasks, check_workers
from .metrics import SimResult
from .runs import SimFailure, run_tasks
from .task import SimTask

if TYPE_CHECKING:
    from .jobs import JobModel
    from .policies.base import Policy
    from .roles import Admission, Placer

__all__ = ["SimTask", "run_task", "simulate_many", "tasks"]


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


def simulate_many(
    policies: Iterable[str | Policy] | str,
    workloads: Iterable[str] | str,
    seeds: Iterable[int] = (0,),
    *,
    cluster: str | None = None,
    job_model: str | JobModel | None = None,
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
    output_dir: str | os.PathLike[str] | None = None,
    resume: bool = False,
    on_error: Literal["raise", "record"] = "raise",
) -> list[SimResult | SimFailure]:
    """Simulate every (policy, workload, seed); results in that order. ``policies``: registered names or specs
    (``sia:backend=highs``, ``mymod:MyPolicy``) or policy objects (pickled to workers, copied per simulation).
    ``executor``: None (a local process pool of ``workers`` processes, default the CPU count; ``workers=1`` runs
    here), a ``concurrent.futures`` executor, a Dask ``distributed.Client``, or a pool with ``map``.
    ``policy_params``: parameters for every policy, or a mapping policy name -> parameters. ``estimator``:
    ``"bootstrap"`` (default) or ``"oracle"``; ``seeds``: each goes to the policies that draw random numbers
    (Pollux's search) and to generated workloads (``gandiva/synthetic``, ``hived/synthetic``, ``synergy/philly``);
    shipped workloads and files are fixed, so seeds that can change nothing give identical runs and a
    :class:`~schedopt.sim.seeds.SeedWarning` (:mod:`schedopt.sim.seeds`); ``placer``, ``admission``: see :func:`~schedopt.sim.engine.simulate`.
    ``output_dir``: write each record the moment its simulation finishes (atomically, with ``summary.csv``);
    ``resume``: skip the tasks whose record there is whole; ``on_error="record"``: a failing simulation becomes a
    :class:`~schedopt.sim.runs.SimFailure` in its place while the others go on (default: the first failure stops the
    sweep at once). The executor layer is :func:`schedopt.sim.runs.run_tasks`.

    Examples
    --------
    Two policies on one shipped workload, run here (``workers=1``); records come back in (policy, workload, seed)
    order:

    >>> from schedopt import sim
    >>> runs = sim.simulate_many(["fifo", "tiresias"], "philly/1", seeds=[0], cluster="sia-64", workers=1,
    ...                          progress=False)
    >>> [(r.meta.policy, r.summary()["finished"]) for r in runs]
    [('fifo', 160), ('tiresias', 160)]
    """
    pols = [policies] if isinstance(policies, str) else list(policies)
    wls = [workloads] if isinstance(workloads, str) else list(workloads)
    if not pols or not wls:
        raise InputError("policies" if not pols else "workloads", [], "must name at least one")
    seeds = check_seeds(seeds)  # schedopt.sim.limits: the same rules as simulate's and the CLI's
    check_tasks(len(pols), len(wls), len(seeds))
    round_seconds = None if round_seconds is None else check_round_seconds(round_seconds)
    max_time = check_max_time(max_time)
    workers = check_workers(workers)
    if cluster is not None and (not isinstance(cluster, str) or not cluster.strip()):
        raise InputError("cluster", cluster, "must name a cluster preset (None: each family's default)")
    if job_model is not None:  # a registered name (pollux, sia, sia-measured) or a JobModel; unknown names refused
        from .jobs import JobModel as _JobModel
        from .jobs import job_model as _resolve_job_model

        if not isinstance(job_model, (str, _JobModel)):
            raise InputError("job_model", job_model, "must be a job model name, a JobModel or None (the preset's)")
        _resolve_job_model(job_model)
    items = tasks(pols, wls, seeds, cluster=cluster, job_model=job_model, round_seconds=round_seconds,
                  policy_params=dict(policy_params or {}), charge_policy_time=charge_policy_time, max_time=max_time,
                  estimator=estimator, placer=placer, admission=admission)
    from .seeds import SeedWarning, inert_seeds

    for msg in inert_seeds(items):
        warnings.warn(msg, SeedWarning, stacklevel=2)
    return run_tasks(items, executor=executor, workers=workers, progress=progress, output_dir=output_dir,
                     resume=resume, on_error=on_error)
