"""Hopeless jobs: jobs that cannot finish before a simulation's time cap, whatever the policy does.

:func:`hopeless_jobs` bounds each job's completion time from below with the job model's true throughput (the same
:class:`~schedopt.goodput.ThroughputParams` the engine advances jobs with) on the job's best configuration of an
empty cluster, and names every job whose bound ends after the cap. The bound is sound, never tight: it may miss a
hopeless job, it never names one that could finish.

Per GPU type ``t`` the job may run on, a step of ``s + 1`` micro-batches of ``b`` samples per GPU takes at least
``(s + 1) T_c(b)`` seconds (``T_c(b) = alpha_c + beta_c b``; network time and the overlap only add), and its
statistical gain is at most ``max(1, B / B0)`` for a global batch ``B`` (``B0`` the initial batch: the gain
``(var + sqr) / (var B0 / B + sqr)`` is below ``B / B0`` for ``B >= B0`` and below 1 otherwise). So the progress
rate on ``r`` GPUs is at most

* a rigid job (fixed global batch ``B``, the engine's own ``(b, s)`` for it): ``max(1, r b (s + 1) / B0) / ((s + 1)
  T_c(b))``;
* an adaptive job (any ``b`` in its local limits ``[lo, hi]``, any ``s``, ``B <= max_batch``): the smaller of
  ``max(1 / T_c(lo), r hi / (B0 T_c(hi)))`` (samples per second over ``B0``) and ``max(1, max_batch / B0) / T_c(lo)``,

times the job model's speed factor and ``max_rate`` (the largest factor a policy's ``Decision.rate`` may apply; 1
for every policy that does not speed jobs up). The job then needs at least ``target / rate`` seconds after the first
round at or after its arrival, and the last round that runs starts at or before ``stop_time``. The restart delay is
left out (a policy may set it to 0).
"""

from __future__ import annotations

import math
import warnings

from ..errors import InputError
from ..sia import Cluster
from .jobs import JobModel, local_limits, rigid_batch
from .jobs import job_model as get_job_model
from .workloads import Workload

__all__ = ["HopelessJobWarning", "hopeless_jobs", "min_seconds"]


class HopelessJobWarning(UserWarning):
    """A job cannot finish before the simulation's time cap, even alone on its best configuration."""


def _tc(p: object, b: float) -> float:
    return float(p.alpha_c + p.beta_c * b)  # type: ignore[attr-defined]


def _rate_bound(jm: JobModel, app: str, gpu_type: str, gpus: int, adaptive: bool, batch: int) -> float:
    """An upper bound on the progress per second of ``app`` on ``gpus`` GPUs of ``gpu_type`` (see the module doc)."""
    m = jm.truth(app)
    p = m.params[gpu_type]
    lo, hi = local_limits(app, gpu_type, jm)
    b0 = float(m.init_batch)
    if adaptive:
        t_lo, t_hi = _tc(p, lo), _tc(p, hi)
        if t_lo <= 0 or t_hi <= 0:
            return math.inf
        by_samples = max(1.0 / t_lo, gpus * hi / (b0 * t_hi))
        by_batch = max(1.0, float(m.max_batch) / b0) / t_lo
        return min(by_samples, by_batch)
    b, s = rigid_batch(app, gpu_type, jm, gpus, batch)
    t = (s + 1) * _tc(p, b)
    if t <= 0:
        return math.inf
    return max(1.0, gpus * b * (s + 1) / b0) / t


def min_seconds(cluster: Cluster, app: str, requested_gpus: int, batch_size: int, job_model: str | JobModel, *,
                adaptive: bool = True) -> float:
    """A lower bound on the seconds of training ``app`` needs on ``cluster`` (alone, on its best GPU type and count,
    no restart delay, at the job model's true rate): ``inf`` when no GPU type of the cluster can run it."""
    jm = get_job_model(job_model)
    target = jm.application(app).target
    rigid = jm.rigid_apps.get(app) if adaptive else (requested_gpus, batch_size)
    best = 0.0
    for t in cluster.gpu_types:
        if t.name not in jm.truth(app).params or t.total_gpus < 1:
            continue
        if rigid is not None:
            grow = jm.elastic.get(app, 0)
            counts = range(rigid[0], max(rigid[0], min(grow, t.total_gpus)) + 1)
            rates = [_rate_bound(jm, app, t.name, g, False, rigid[1]) for g in counts if g <= t.total_gpus]
        else:
            rates = [_rate_bound(jm, app, t.name, min(jm.gpu_cap, t.total_gpus), True, batch_size)]
        for r in rates:
            best = max(best, r * jm.speed_factor(app))
    return math.inf if best <= 0 else target / best


def hopeless_jobs(cluster: Cluster, workload: Workload, job_model: str | JobModel, stop_time: float, *,
                  adaptive: bool = True, round_seconds: float | None = None, max_rate: float = 1.0,
                  warn: bool = True) -> list[str]:
    """Ids of the jobs of ``workload`` that cannot finish by ``stop_time`` (the engine's ``max_time``) even alone on
    their best configuration of ``cluster``: those arriving after the cap and those whose :func:`min_seconds`
    (divided by ``max_rate``, the largest ``Decision.rate`` factor the policy applies) ends after it. With rounds of
    ``round_seconds`` a job starts at the first round at or after its arrival and the last round runs from the last
    round start at or before ``stop_time``. ``warn``: one :class:`HopelessJobWarning` naming them (and each job's
    bound)."""
    if not isinstance(cluster, Cluster):
        raise InputError("cluster", type(cluster).__name__, "must be a schedopt.sia.Cluster")
    if not isinstance(workload, Workload):
        raise InputError("workload", type(workload).__name__, "must be a schedopt.sim.Workload")
    jm = get_job_model(job_model)
    if isinstance(max_rate, bool) or not isinstance(max_rate, (int, float)) or not max_rate > 0:
        raise InputError("max_rate", max_rate, "must be a number > 0 (inf: no bound)")
    R = float(round_seconds) if round_seconds else 0.0
    end = (math.floor(stop_time / R) + 1) * R if R else float(stop_time)
    out: list[str] = []
    why: list[str] = []
    memo: dict[tuple[str, int, int], float] = {}
    for w in workload.jobs:
        start = math.ceil(w.time / R) * R if R else w.time
        if start > stop_time:
            out.append(w.name)
            why.append(f"{w.name} (arrives at {w.time:g} s, after the cap)")
            continue
        key = (w.application, w.num_replicas, w.batch_size)
        need = memo.get(key)
        if need is None:
            need = memo[key] = min_seconds(cluster, w.application, w.num_replicas, w.batch_size, jm,
                                           adaptive=adaptive)
        need /= float(max_rate)
        if start + need > end:
            out.append(w.name)
            why.append(f"{w.name} (needs >= {need:.4g} s from {start:g} s)")
    if out and warn:
        head = ", ".join(why[:10]) + (f" and {len(why) - 10} more" if len(why) > 10 else "")
        warnings.warn(f"{len(out)} job(s) of workload {workload.name!r} cannot finish by t = {stop_time:g} s even "
                      f"alone on their best configuration: {head}", HopelessJobWarning, stacklevel=2)
    return out
