"""Limited adaptivity (Sia SOSP'23 section 5.4; issue 31 item 1): a seeded fraction of a workload's jobs run rigid,
at the GPU count and batch size their submitter asked for, while the others adapt.

The published artifact marks jobs with ``utils/categorize_jobs.py`` (a ``category`` column drawn i.i.d. from
adaptive / scale-gpus / rigid with the given percentages); here :func:`rigid_job_ids` draws *exactly*
``round(fraction * jobs)`` of them without replacement (so a 25 % point is 25 % in every workload) with a seeded
generator, nested: the rigid jobs at 25 % are among those at 50 %, and so on, so a sweep compares like with like.
:func:`limit_adaptivity` returns the job model that runs them rigid (``JobModel.rigid_jobs``).

Rigid Saturn jobs ask for 6, 10, 12 or 14 GPUs, counts no standard Sia configuration holds; the published optimizer
gives rigid jobs per-type variables (``ceil(g / R)`` nodes). :class:`SiaAnyRigid` (registered as ``sia-any-rigid``)
is the ``sia`` policy with ``SiaSettings(rigid_any_count=True)`` and the jobs' estimates as goodput models, so such
jobs can run; with no rigid job it decides exactly as ``sia``.

Strong-scaling jobs (the artifact's ``scale-gpus``: the requested batch on any GPU count up to the request, the
published ``max_replicas = target_num_replicas`` with batch-size tuning off) are a second seeded fraction
(``limit_adaptivity(..., strong=f)``, :func:`job_kinds`): the next ``round(f * jobs)`` of the same permutation, so the
rigid and strong sets never overlap and both nest as their fractions grow. The engine shows the kind to the policy
(``JobView.kind``) and ``sia`` maps it to its ILP's kind (``schedopt.sia.Job(kind="strong", batch_size=...)``).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from ..errors import InputError
from ..sia import Config, Job, SiaProblem, SiaSettings
from .jobs import JobModel
from .jobs import job_model as get_job_model
from .policies.base import Decision, RoundState
from .policies.sia import SiaPolicy
from .roles import GpuRequest
from .workloads import Workload, load_workload

__all__ = ["SiaAnyRigid", "job_kinds", "limit_adaptivity", "rigid_job_ids"]


def rigid_job_ids(workload: Workload | str, fraction: float, seed: int = 0) -> frozenset[str]:
    """``round(fraction * len(workload))`` job names drawn without replacement by ``numpy.random.default_rng(seed)``
    (one permutation per seed: a larger fraction keeps the smaller one's jobs)."""
    w = load_workload(workload) if isinstance(workload, str) else workload
    if not isinstance(fraction, (int, float)) or isinstance(fraction, bool) or not 0.0 <= float(fraction) <= 1.0:
        raise InputError("rigid", fraction, "must be a fraction in [0, 1]")
    order = np.random.default_rng(int(seed)).permutation(len(w.jobs))
    k = round(float(fraction) * len(w.jobs))
    return frozenset(w.jobs[i].name for i in order[:k])


def job_kinds(workload: Workload | str, rigid: float = 0.0, strong: float = 0.0,
              seed: int = 0) -> tuple[frozenset[str], frozenset[str]]:
    """(rigid job names, strong-scaling job names): the first ``round(rigid * n)`` of one seeded permutation
    (exactly :func:`rigid_job_ids`) and the next ``round(strong * n)``; ``rigid + strong`` must be at most 1."""
    w = load_workload(workload) if isinstance(workload, str) else workload
    for name, f in (("rigid", rigid), ("strong", strong)):
        if not isinstance(f, (int, float)) or isinstance(f, bool) or not 0.0 <= float(f) <= 1.0:
            raise InputError(name, f, "must be a fraction in [0, 1]")
    if float(rigid) + float(strong) > 1.0 + 1e-12:
        raise InputError("strong", strong, f"rigid + strong = {float(rigid) + float(strong):g} must be <= 1")
    order = np.random.default_rng(int(seed)).permutation(len(w.jobs))
    kr = round(float(rigid) * len(w.jobs))
    ks = min(round(float(strong) * len(w.jobs)), len(w.jobs) - kr)
    return (frozenset(w.jobs[i].name for i in order[:kr]), frozenset(w.jobs[i].name for i in order[kr:kr + ks]))


def limit_adaptivity(workload: Workload | str, rigid: float = 0.0, *, strong: float = 0.0, seed: int = 0,
                     job_model: str | JobModel = "sia") -> JobModel:
    """``job_model`` with a seeded fraction ``rigid`` of ``workload``'s jobs rigid at their requested (GPUs, batch)
    and a further fraction ``strong`` strong-scaling (their requested batch on 1 to their requested GPUs)
    (:func:`job_kinds`); named ``<job model>:rigid=<fraction>[:strong=<fraction>]:seed=<seed>``. Pass it as
    ``simulate(..., job_model=...)`` or ``SimTask(job_model=...)``."""
    base = get_job_model(job_model)
    rig, strg = job_kinds(workload, rigid, strong, seed)
    tag = f":strong={float(strong):g}" if strong else ""
    return dataclasses.replace(base, name=f"{base.name}:rigid={float(rigid):g}{tag}:seed={int(seed)}",
                               rigid_jobs=rig, strong_jobs=strg)


class _PipelineEstimate:
    """A pipeline job's estimate in GPUs: goodput at ``GPUs / P`` pipelines where the count is a multiple of the
    type's ``P``, 0 elsewhere (no ``throughput`` method: a pipeline's batch is its own, so every kind is valued by
    goodput, as ``sia``'s rows do)."""

    def __init__(self, estimate: Any, units: Any) -> None:
        self.estimate, self.units = estimate, dict(units)
        self.gpu_types = list(estimate.gpu_types)

    def goodput(self, gpu_type: str, nodes: Any, replicas: Any) -> np.ndarray:
        n, r = np.broadcast_arrays(np.asarray(nodes), np.asarray(replicas))
        u = int(self.units.get(gpu_type, 1))
        out = np.zeros(r.shape, dtype=np.float64)
        ok = (r % u == 0) & (r > 0)
        if ok.any():
            out[ok] = self.estimate.goodput(gpu_type, n[ok], r[ok] // u).goodput
        return out


class SiaAnyRigid(SiaPolicy):
    """:class:`~schedopt.sim.policies.sia.SiaPolicy` whose rigid jobs may hold any GPU count a type can host
    (``SiaSettings(rigid_any_count=True)``, the published optimizer's per-type rigid variables)."""

    name = "sia-any-rigid"

    def jobs(self, state: RoundState) -> list[Job]:
        """As ``sia``'s, with a rigid job's current placement read as its rigid shape (the placer may spread a
        request over more nodes than ``ceil(g / R)``, which is no configuration of the problem)."""
        per_node = {t.name: t.gpus_per_node for t in state.cluster.gpu_types}
        out = []
        for j in super().jobs(state):
            c = j.current
            if j.kind == "rigid" and c is not None and c.n_nodes != -(-c.n_gpus // per_node.get(c.gpu_type, 1)):
                j = dataclasses.replace(j, current=Config(-(-c.n_gpus // per_node[c.gpu_type]), c.n_gpus, c.gpu_type))
            out.append(j)
        return out

    def problem(self, state: RoundState) -> SiaProblem:
        if all(v.adaptive for v in state.jobs):
            return super().problem(state)
        jobs = self.jobs(state)
        models: dict[Any, Any] = {v.id: _PipelineEstimate(v.estimate, v.scale_units) if v.scale_units else v.estimate
                                  for v in state.jobs}
        return SiaProblem(state.cluster, jobs, models, p=self.p, lam=self.lam,
                          settings=SiaSettings(rigid_any_count=True, max_gpus_per_job=self.max_gpus_per_job))


    def decide(self, state: RoundState) -> Decision:
        d = super().decide(state)
        if d.allocation is None or all(v.adaptive for v in state.jobs):
            return d
        # a rigid shape no standard configuration holds (12 GPUs on 8-GPU nodes) goes to the placer as a request
        per_node = {t.name: t.gpus_per_node for t in state.cluster.gpu_types}
        alloc: dict[str, Any] = {}
        req: dict[str, GpuRequest] = {}
        for jid, c in d.allocation.items():
            r = per_node.get(c.gpu_type, 0) if c is not None else 0
            g = 0 if c is None else int(c.n_gpus)
            standard = c is None or (c.n_nodes == 1 and g <= r and g & (g - 1) == 0) or g == c.n_nodes * r
            if standard or c is None:
                alloc[jid] = c
            else:
                req[jid] = GpuRequest(int(c.n_gpus), c.gpu_type)
        if not req:
            return d
        return dataclasses.replace(d, allocation=alloc, requests=req)


def _register() -> None:
    from .registry import policies, register_policy

    if "sia-any-rigid" not in policies():
        register_policy("sia-any-rigid", SiaAnyRigid)


_register()
