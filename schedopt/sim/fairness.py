"""Finish-time fairness of :mod:`schedopt.sim` results (card: ``formulations/fairness.md``).

Per job, ``rho = JCT in the shared cluster / JCT in isolation`` (Themis' finish-time fairness, as the Sia and Gavel
papers report it); ``rho > 1``: the job finished later than it would have on its own fair share of the cluster.

Isolation, as the published code defines it (both rules are here, ``rule=``):

* ``"sia"`` (default; siasosp23/artifacts ``sia-simulator/ftf_simulator.py``): the job's fair share is
  ``v = G / N_avg`` GPUs, ``G`` the cluster's GPUs and ``N_avg`` the mean number of active jobs over the rounds the
  job was active. The job is then run *alone* on each GPU type (same job model, same round length, the same phase
  of its arrival within a round) with at most ``floor(v)`` and ``ceil(v)`` GPUs, linearly interpolated; below one
  GPU the 1-GPU time is divided by ``v``. Rigid jobs (the Gavel runs) run at their requested GPUs and are slowed by
  ``requested / v`` when that exceeds 1. Per-type times are averaged with the type's GPU count as weight, over the
  types the job can run on.
* ``"gavel"`` (stanford-futuredata/gavel ``scheduler/policies/finish_time_fairness.py``): the job's isolated
  throughput is what it gets from ``1/N`` of every GPU type (Gavel's heterogeneity-agnostic max-min split of the
  cluster, time fraction ``c_k / (N s)`` on type ``k`` for a job of scale factor ``s``, at most 1 in total) at its
  requested size; isolated time = work / that throughput (no round phase, no restart delay). Gavel recomputes
  ``N`` every round inside its policy; post hoc we use the same ``N_avg`` as the Sia rule.

Isolated times come from the job model itself (:class:`~schedopt.sim.jobs.JobState` advanced round by round on a
private cluster, as the engine would with no other job): :func:`isolated_time`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from ..errors import InputError
from ..goodput import blas_threads
from ..sia import Config
from .jobs import JobModel, JobState, adaptive_batch, flexible_max_gpus, true_rate
from .jobs import job_model as get_job_model
from .metrics import SUMMARY_COLUMNS, SimResult

__all__ = ["RULES", "FairnessReport", "average_contention", "fairness_summary", "finish_time_fairness", "isolated_jct",
           "isolated_time", "jain_index"]

#: isolation rules: ``"sia"`` (ftf_simulator.py) and ``"gavel"`` (finish_time_fairness.py)
RULES = ("sia", "gavel")
_MAX_ROUNDS = 200_000


def jain_index(xs: Any) -> float:
    """Jain's fairness index ``(sum x)^2 / (n sum x^2)`` in ``(0, 1]`` (1: all equal); nan for no values."""
    a = np.asarray(list(xs), dtype=float)
    if a.size == 0:
        return math.nan
    s2 = float((a * a).sum())
    return float(a.sum() ** 2 / (a.size * s2)) if s2 > 0 else 1.0


def _nodes(gpus: int, per_node: int) -> dict[str, int]:
    out, k = {}, 0
    while gpus > 0:
        take = min(per_node, gpus)
        out[f"n{k}"] = take
        gpus -= take
        k += 1
    return out


@lru_cache(maxsize=4096)
def _shape(gpus: int, per_node: int) -> tuple[int, ...]:
    """GPUs per node of :func:`_nodes`."""
    return tuple(_nodes(gpus, per_node).values())


def _place(j: JobState, nodes: dict[str, int], gpu_type: str, t: float) -> None:
    """Give ``j`` ``nodes`` of ``gpu_type`` from time ``t`` (a restart delay when it changes), as the engine does."""
    if nodes == j.nodes:
        return
    j.nodes = nodes
    c = Config(len(nodes), sum(nodes.values()), gpu_type)
    j.config = c
    j.restart_left = j.jm.restart(j.app)
    if j.started:
        j.restarts += 1
    else:
        j.started, j.start = True, t
    j.max_profiled = max(j.max_profiled, c.n_gpus)
    j.segments.append([t, t, gpu_type, c.n_gpus])
    j.rebatch()


def _best_count(j: JobState, cap: int, per_node: int, gpu_type: str) -> int:
    """The GPU count (powers of two and ``cap``, at most ``cap``) with the highest true rate now, kept at the
    current count unless the move pays its restart delay over the remaining work: the job alone under a
    goodput-maximising scheduler."""
    cur = sum(j.nodes.values())
    if cap <= 1:
        return 1
    rates, best = _best_candidate(j.jm, j.app, j.id, j.adaptive, j.requested_gpus, j.batch_size, cap, per_node,
                                  gpu_type, tuple(j.nodes.values()), None if j.config is None else j.config.gpu_type,
                                  j.local_bsz, j.accum, j.epoch)
    if cur in rates and best != cur:
        left = j.application.target - j.progress
        if left / rates[best] + j.jm.restart(j.app) >= left / rates[cur]:
            return cur
    return best


@lru_cache(maxsize=65536)
def _candidate_rates(jm: JobModel, app: str, job_id: str, adaptive: bool, requested_gpus: int, batch_size: int,
                     cap: int, per_node: int, gpu_type: str, held: tuple[int, ...], held_type: str | None,
                     local_bsz: int, accum: int, epoch: int) -> dict[int, float]:
    """GPU count -> the true rate of a job in the state these arguments name (GPUs ``held`` per node of
    ``held_type`` at ``local_bsz`` and ``accum`` in ``epoch``) moved to that many GPUs of ``gpu_type``: each count
    re-batched from the previous count's batch, in increasing order, as :func:`_best_count` tries them. A function
    of its arguments alone (the batch choice and the rate are), kept per process: a lone run asks it every round,
    and its state changes only at epoch boundaries and moves."""
    cands = _counts(cap, sum(held))
    # JobState.kind == "adaptive" and no scale units, read from the job model without building the job
    if (adaptive and job_id not in jm.rigid_jobs and jm.rigid_apps.get(app) is None and job_id not in jm.strong_jobs
            and not jm.scale_units(app)):
        # JobState.rebatch's adaptive branch and JobState.rate, call for call, without a placement per count
        rates = {}
        init = jm.truth(app).init_batch
        for g in cands:
            shape = _shape(g, per_node)
            cur_batch = g * local_bsz * (accum + 1) if local_bsz else init
            local_bsz, accum = adaptive_batch(app, gpu_type, jm, len(shape), g, epoch, float(cur_batch))
            rates[g] = true_rate(jm, app, gpu_type, shape, local_bsz, accum, epoch)
        return rates
    j = _held_job(jm, app, job_id, adaptive, requested_gpus, batch_size, held, held_type, local_bsz, accum, epoch)
    return _rates_by_placement(j, cands, per_node, gpu_type)


@lru_cache(maxsize=65536)
def _best_candidate(jm: JobModel, app: str, job_id: str, adaptive: bool, requested_gpus: int, batch_size: int,
                    cap: int, per_node: int, gpu_type: str, held: tuple[int, ...], held_type: str | None,
                    local_bsz: int, accum: int, epoch: int) -> tuple[dict[int, float], int]:
    """(:func:`_candidate_rates`, the count with the highest rate, the fewest GPUs among equals), kept per state."""
    rates = _candidate_rates(jm, app, job_id, adaptive, requested_gpus, batch_size, cap, per_node, gpu_type, held,
                             held_type, local_bsz, accum, epoch)
    return rates, max(rates, key=lambda g: (rates[g], -g))


def _held_job(jm: JobModel, app: str, job_id: str, adaptive: bool, requested_gpus: int, batch_size: int,
              held: tuple[int, ...], held_type: str | None, local_bsz: int, accum: int, epoch: int) -> JobState:
    j = JobState(job_id, app, 0.0, requested_gpus, batch_size, adaptive, jm)
    if held:
        j.nodes = {f"n{k}": g for k, g in enumerate(held)}
        j.config = Config(len(held), sum(held), str(held_type))
    j.local_bsz, j.accum, j.epoch = local_bsz, accum, epoch
    return j


@lru_cache(maxsize=4096)
def _counts(cap: int, cur: int) -> tuple[int, ...]:
    """The counts a lone run tries: powers of two up to ``cap``, ``cap``, and the current count (kept)."""
    return tuple(sorted({1 << i for i in range(int(math.log2(cap)) + 1)} | {cap} | ({cur} if 0 < cur <= cap else set())))


def _rates_by_placement(j: JobState, cands: tuple[int, ...], per_node: int, gpu_type: str) -> dict[int, float]:
    """Count -> rate of ``j`` placed on each count in turn and re-batched (changes ``j``): the engine's route."""
    rates = {}
    for g in cands:
        nodes = _nodes(g, per_node)
        j.nodes, j.config = nodes, Config(len(nodes), g, gpu_type)
        j.rebatch()
        rates[g] = j.rate()
    return rates


@lru_cache(maxsize=65536)
def isolated_time(application: str, gpu_type: str, gpus_per_node: int, gpus: int, jm: JobModel,
                  round_seconds: float, adaptive: bool = True, requested_gpus: int = 1, batch_size: int = 0) -> float:
    """Seconds from the first round boundary after arrival to completion of a job of ``application`` alone with at
    most ``gpus`` GPUs of ``gpu_type`` (``gpus_per_node`` per node), restart delays included.

    Rigid jobs (``adaptive=False``, and the job model's ``rigid_apps``) hold their requested GPUs (packed on the
    fewest nodes) throughout; adaptive ones, each round, the count with the highest true rate among powers of two up
    to ``min(gpus, the job's cap)`` (the cap doubles with the most GPUs it has held, as in both published
    simulators), paying a restart on every change."""
    if gpus < 1:
        raise InputError("gpus", gpus, "must be >= 1")
    j = JobState("isolated", application, 0.0, int(requested_gpus), int(batch_size or 1), bool(adaptive), jm)
    if j.kind == "adaptive" and not j.scale_units:
        return _lone_adaptive_time(application, gpu_type, int(gpus_per_node), int(gpus), jm, float(round_seconds))
    return _lone_run(j, gpu_type, gpus_per_node, gpus, round_seconds)


@lru_cache(maxsize=65536)
def _lone_adaptive_time(application: str, gpu_type: str, per_node: int, gpus: int, jm: JobModel, R: float) -> float:
    """:func:`isolated_time` of an adaptive data-parallel job, kept per process by what it depends on: such a job
    picks its GPU count and batch itself, so its requested GPUs and batch do not enter its lone run (its candidate
    rates are :func:`_candidate_rates`' adaptive branch, which reads neither). A summary's jobs of one application
    on one share then share one run (saturn/1: 120 runs instead of 304)."""
    return _lone_adaptive(JobState("isolated", application, 0.0, 1, 1, True, jm), gpu_type, per_node, gpus, R)


def _lone_run(j: JobState, gpu_type: str, gpus_per_node: int, gpus: int, round_seconds: float) -> float:
    """:func:`isolated_time`'s lone run through the engine's own pieces (:func:`_best_count`, :func:`_place`,
    :meth:`JobState.advance`): the route of rigid, strong-scaling and pipeline jobs, and the reference the direct
    route of :func:`_lone_adaptive` is tested against."""
    rs = j.rigid_shape
    R = float(round_seconds)
    t = 0.0
    for _ in range(_MAX_ROUNDS):
        if rs is not None:
            want = rs[0]
        else:
            want = _best_count(j, min(int(gpus), j.max_gpus), gpus_per_node, gpu_type)
        _place(j, _nodes(want, gpus_per_node), gpu_type, t)
        j.advance(t, R)
        if j.finish is not None:
            return float(j.finish)
        t += R
    return math.inf


def _lone_adaptive(j: JobState, gpu_type: str, per_node: int, gpus: int, R: float) -> float:
    """:func:`_lone_run` of a fresh adaptive data-parallel job (``j``), operation for operation, with the job's state
    in local variables: the same candidate rates (:func:`_candidate_rates`), the same choice, the same restart and
    batch choice (:func:`adaptive_batch`, :func:`JobState.rebatch`'s adaptive branch), the same float updates of
    :meth:`JobState.advance` in the same order (time, progress, epoch; its records of GPU-seconds, segments and
    observed configurations, on which the finish time does not depend, are left out). A fairness summary runs a few
    hundred lone runs of about 80 rounds each; the engine's route re-derives the job's kind, cap, shape and
    placement every round."""
    jm, app, jid, req, bsz = j.jm, j.app, j.id, j.requested_gpus, j.batch_size
    a = j.application
    prog_at = a.progress.tolist()  # float(app.progress[e]) for every epoch
    epochs, target = a.epochs, a.target
    restart = jm.restart(app)
    init = jm.truth(app).init_batch
    g = 0  # GPUs held (on _nodes(g, per_node) of gpu_type); 0: not placed yet
    shape: tuple[int, ...] = ()
    local_bsz = accum = epoch = 0
    progress = restart_left = 0.0
    max_profiled = 0
    rate: float | None = None
    t = 0.0
    for _ in range(_MAX_ROUNDS):
        # _best_count(j, min(gpus, j.max_gpus), per_node, gpu_type)
        cap = min(gpus, flexible_max_gpus(jm, app, max_profiled, None))
        if cap <= 1:
            want = 1
        else:
            rates, want = _best_candidate(jm, app, jid, True, req, bsz, cap, per_node, gpu_type, shape,
                                          gpu_type if g else None, local_bsz, accum, epoch)
            if g in rates and want != g:
                left_work = target - progress
                if left_work / rates[want] + restart >= left_work / rates[g]:
                    want = g
        # _place(j, _nodes(want, per_node), gpu_type, t)
        if want != g:
            restart_left = restart
            max_profiled = max(max_profiled, want)
            cur = want * local_bsz * (accum + 1) if local_bsz else init  # rebatch's batch on the new GPUs
            g, shape = want, _shape(want, per_node)
            local_bsz, accum = adaptive_batch(app, gpu_type, jm, len(shape), g, epoch, float(cur))
            rate = None
        # j.advance(t, R)
        tt, left = t, R
        d = min(restart_left, left)
        restart_left -= d
        tt += d
        left -= d
        while left > 0:
            if rate is None:
                rate = true_rate(jm, app, gpu_type, shape, local_bsz, accum, epoch)
            if rate <= 0:  # (JobState.share is 1 alone)
                break
            need = (prog_at[epoch] - progress) / rate
            if need > left:
                progress += rate * left
                left = 0.0
                break
            tt += need
            left -= need
            epoch += 1
            progress = prog_at[epoch - 1]
            if epoch >= epochs:
                return float(tt)
            cur = g * local_bsz * (accum + 1) if local_bsz else init
            local_bsz, accum = adaptive_batch(app, gpu_type, jm, len(shape), g, epoch, float(cur))
            rate = None
        t += R
    return math.inf


def _runs(app: str, t: str, per_node: int, total: int, jm: JobModel, adaptive: bool, req: int) -> bool:
    try:
        jm.truth(app).params[t]
    except (KeyError, InputError):
        return False
    rs = JobState("x", app, 0.0, req, 1, adaptive, jm).rigid_shape
    return rs is None or rs[0] <= total


def isolated_jct(application: str, arrival: float, share: float, cluster: Mapping[str, tuple[int, int]],
                 jm: JobModel | str, round_seconds: float, *, adaptive: bool = True, requested_gpus: int = 1,
                 batch_size: int = 0, rule: str = "sia") -> float:
    """The JCT of one job in isolation on ``share`` GPUs (``cluster``: GPU type -> (nodes, GPUs per node)); see the
    module for the two rules. nan when the job can run on no GPU type."""
    if rule not in RULES:
        raise InputError("rule", rule, f"must be one of {', '.join(RULES)}")
    if not (isinstance(share, (int, float)) and share > 0 and math.isfinite(share)):
        raise InputError("share", share, "must be a number of GPUs > 0")
    jm = get_job_model(jm)
    R = float(round_seconds)
    if rule == "gavel":
        s = int(requested_gpus)
        rate = 0.0
        N = sum(n * g for n, g in cluster.values()) / share  # jobs sharing the cluster
        fr = {t: n * g / (N * s) for t, (n, g) in cluster.items()}
        tot = sum(fr.values())
        for t, (n, g) in cluster.items():
            if not _runs(application, t, g, n * g, jm, False, s):
                continue
            alone = isolated_time(application, t, g, s, jm, R, False, s, batch_size) - jm.restart(application)
            if alone > 0 and math.isfinite(alone):
                rate += fr[t] / max(tot, 1.0) / alone
        return 1.0 / rate if rate > 0 else math.nan
    wait = math.ceil(arrival / R - 1e-9) * R - arrival
    num = den = 0.0
    for t, (n, g) in cluster.items():
        total = n * g
        if not _runs(application, t, g, total, jm, adaptive, requested_gpus):
            continue
        # the JCT of the lone run includes the wait for its first round; Sia scales that JCT as a whole
        if not adaptive:
            req = int(requested_gpus)
            T = (wait + isolated_time(application, t, g, req, jm, R, False, req, batch_size)) * max(1.0, req / share)
        elif share < 1:
            T = (wait + isolated_time(application, t, g, 1, jm, R, True, requested_gpus, batch_size)) / share
        else:
            lo, hi = min(math.floor(share), total), min(math.ceil(share), total)
            T = wait + isolated_time(application, t, g, lo, jm, R, True, requested_gpus, batch_size)
            if hi > lo:
                T_hi = wait + isolated_time(application, t, g, hi, jm, R, True, requested_gpus, batch_size)
                T += (T_hi - T) * (share - lo)
        num += total * T
        den += total
    return num / den if den else math.nan


def average_contention(result: SimResult) -> dict[str, float]:
    """job id -> the mean number of active jobs over the rounds it was active (Sia's ``n_avg``, from the round
    records); nan for a job active in no recorded round."""
    times = np.array([r.time for r in result.rounds], dtype=float)
    active = np.array([r.active for r in result.rounds], dtype=float)
    out = {}
    for j in result.jobs:
        end = math.inf if j.finish is None else j.finish
        sel = (times >= j.arrival - 1e-9) & (times < end)
        out[j.id] = float(active[sel].mean()) if sel.any() else math.nan
    return out


@dataclass(frozen=True)
class FairnessReport:
    """Per-job ``rho`` (finished jobs), the isolated JCTs, and the summary numbers."""

    rule: str
    rho: dict[str, float]
    isolated: dict[str, float]
    share: dict[str, float]

    @property
    def worst(self) -> float:
        return max(self.rho.values()) if self.rho else math.nan

    @property
    def unfair_fraction(self) -> float:
        """Fraction of jobs with ``rho > 1``."""
        return float(np.mean([r > 1.0 for r in self.rho.values()])) if self.rho else math.nan

    @property
    def jain(self) -> float:
        return jain_index(self.rho.values())

    def by_group(self, groups: Mapping[str, str]) -> dict[str, dict[str, float]]:
        """Per user / virtual cluster (``groups``: job id -> group): worst rho, unfair fraction, Jain's index and
        the group's mean rho."""
        out: dict[str, list[float]] = {}
        for jid, r in self.rho.items():
            if jid in groups:
                out.setdefault(str(groups[jid]), []).append(r)
        return {g: {"jobs": len(v), "worst_rho": max(v), "mean_rho": float(np.mean(v)),
                    "unfair_fraction": float(np.mean([x > 1.0 for x in v])), "jain_rho": jain_index(v)}
                for g, v in sorted(out.items())}

    def summary(self) -> dict[str, float]:
        return {"worst_rho": self.worst, "unfair_fraction": self.unfair_fraction, "jain_rho": self.jain}


def finish_time_fairness(result: SimResult, rule: str = "sia", jm: JobModel | str | None = None) -> FairnessReport:
    """rho of every finished job of ``result`` under ``rule`` (isolation from the records' meta: cluster, job
    model, round length, whether jobs adapted). ``jm``: the job model when ``meta.job_model`` names none of the
    presets (a custom :class:`~schedopt.sim.jobs.JobModel`)."""
    if rule not in RULES:
        raise InputError("rule", rule, f"must be one of {', '.join(RULES)}")
    meta = result.meta
    cluster = {str(t): (int(v[0]), int(v[1])) for t, v in dict(meta.cluster or {}).items()}
    if not cluster:
        raise InputError("result.meta.cluster", None, "is needed for isolation (GPU type -> [nodes, GPUs per node])")
    model = get_job_model(jm if jm is not None else str(meta.job_model or "pollux"))
    R = float(meta.round_seconds)
    adaptive = bool(meta.adaptive)
    G = sum(n * g for n, g in cluster.values())
    navg = average_contention(result)
    rho, iso, share = {}, {}, {}
    # one BLAS thread, as the simulation itself: the lone runs' measured-table triangulations solve thousands of 3x3
    # systems, where a pool of two threads spins (0.57 s of CPU against 0.01 s for one of them); same answers
    with blas_threads(1):
        for j in result.jobs:
            if j.jct is None or not math.isfinite(navg[j.id]):
                continue
            v = G / max(navg[j.id], 1.0)
            req = j.requested_gpus
            T = isolated_jct(j.application, j.arrival, v, cluster, model, R, adaptive=adaptive,
                             requested_gpus=req, batch_size=j.batch_size, rule=rule)
            share[j.id], iso[j.id] = v, T
            if T > 0 and math.isfinite(T):
                rho[j.id] = j.jct / T
    return FairnessReport(rule, rho, iso, share)


def fairness_summary(result: SimResult) -> dict[str, float]:
    """``worst_rho``, ``unfair_fraction``, ``jain_rho`` under the Sia rule; nan when isolation cannot be computed
    from the records (no cluster in meta, or a job model that is not a preset)."""
    try:
        return finish_time_fairness(result).summary()
    except (InputError, KeyError, TypeError, ValueError):  # records of another simulator family (Synergy, Gandiva)
        return {"worst_rho": math.nan, "unfair_fraction": math.nan, "jain_rho": math.nan}


SUMMARY_COLUMNS.append(fairness_summary)  # every summary carries worst_rho, unfair_fraction and jain_rho
