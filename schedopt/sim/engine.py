"""The round-based engine of :mod:`schedopt.sim`.

Each round (``round_seconds``, default 60 s, starting at t = 0): admit the jobs that have arrived, ask the policy
for a :class:`~schedopt.sim.policies.base.Decision`, validate it, place it (``schedopt.sia.place`` for a
configuration per job, the policy's own node map otherwise), start the checkpoint-restore delay of every job whose
node map changed, advance every running job at its true rate over the round and retire each finished job at the
exact time it finished. All state is here (:class:`~schedopt.sim.jobs.JobState`); policies see
:class:`~schedopt.sim.policies.base.RoundState` only. Deterministic: the same inputs give the same records bit for
bit (the policy's wall time is recorded, and only enters the simulation with ``charge_policy_time=True``).
"""

from __future__ import annotations

import math
import numbers
import sys
import time
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from ..errors import InputError
from ..sia import Cluster, Config, Placement, place
from ..sia.check import config_shape_ok
from .feasibility import hopeless_jobs
from .jobs import ESTIMATORS, JobModel, JobState, goodput_estimate
from .jobs import job_model as get_job_model
from .limits import check_flag, check_max_time, check_round_seconds, check_rounds, default_stop
from .metrics import JobRecord, RoundRecord, SimResult
from .policies.base import Decision, JobView, Policy, RoundState
from .workloads import Workload

__all__ = ["ADAPTIVE_POLICIES", "simulate"]

#: policies that adapt GPUs and batch size (the others run the workload's requests as rigid jobs)
ADAPTIVE_POLICIES = frozenset({"sia", "pollux", "pollux-exact", "pollux-unaware"})


class _Progress:
    """A one-line progress report on a terminal (nothing when stderr is not a TTY, or when disabled)."""

    def __init__(self, enabled: bool | None, total: int, label: str) -> None:
        self.on = sys.stderr.isatty() if enabled is None else bool(enabled)
        self.total, self.label, self.last = total, label, 0.0

    def update(self, t: float, done: int, force: bool = False) -> None:
        now = time.monotonic()
        if self.on and (force or now - self.last > 0.5):
            self.last = now
            sys.stderr.write(f"\r{self.label}: t={t / 3600:7.2f} h  {done}/{self.total} jobs done")
            sys.stderr.flush()

    def close(self, t: float, done: int) -> None:
        if self.on:
            self.update(t, done, force=True)
            sys.stderr.write("\n")


def _view(j: JobState, t: float) -> JobView:
    rs = j.rigid_shape
    return JobView(
        id=j.id,
        application=j.app,
        arrival=j.arrival,
        age=t - j.arrival,
        attained_gpu_seconds=j.attained,
        restarts=j.restarts,
        requested_gpus=rs[0] if rs else j.requested_gpus,
        batch_size=rs[1] if rs else j.batch_size,
        adaptive=rs is None,
        current=j.config,
        current_nodes=MappingProxyType(dict(j.nodes)),
        estimate=goodput_estimate(j),
        progress=min(j.progress / j.application.target, 1.0 - 1e-12),
        max_gpus=j.max_gpus,
    )


def _node_types(cluster: Cluster) -> dict[str, tuple[str, int]]:
    return {nid: (t.name, t.gpus_per_node) for t in cluster.gpu_types for nid in cluster.node_ids(t.name)}


def _check_counts(who: str, j: JobState, n: int) -> None:
    rs = j.rigid_shape
    grow = j.jm.elastic.get(j.app, 0) if rs is not None else 0  # rigid jobs of elastic applications may grow
    if rs is not None and n != rs[0] and not rs[0] < n <= grow:
        raise InputError(f"{who}", n, f"rigid job {j.id} must get exactly {rs[0]} GPUs or none")
    if n > max(j.max_gpus, grow):
        raise InputError(f"{who}", n, f"job {j.id} may get at most {j.max_gpus} GPUs this round")


def _from_nodes(cluster: Cluster, pname: str, nodes: Mapping[str, Mapping[str, int]], active: dict[str, JobState],
                previous: Placement | None, colocate: Mapping[str, str] | None = None) -> Placement:
    """Validate a node-level decision and give it GPU indices (unchanged jobs keep theirs)."""
    ntype = _node_types(cluster)
    used: dict[str, int] = {}
    want: dict[str, dict[str, int]] = {}
    configs: dict[str, Config] = {}
    for jid, m in nodes.items():
        who = f"policy[{pname}].nodes[{jid}]"
        if jid not in active:
            raise InputError(who, dict(m), "names no active job")
        mm = {}
        for nid, g in m.items():
            if nid not in ntype:
                raise InputError(f"{who}[{nid}]", g, "names no node of the cluster")
            if isinstance(g, bool) or not isinstance(g, numbers.Real) or not math.isfinite(g) or int(g) != g or g < 0:
                raise InputError(f"{who}[{nid}]", g, "must be a GPU count >= 0")
            if g:
                mm[nid] = int(g)
                used[nid] = used.get(nid, 0) + int(g)
        if not mm:
            continue
        types = {ntype[n][0] for n in mm}
        if len(types) > 1:
            raise InputError(who, dict(mm), f"job {jid} spans GPU types {sorted(types)}")
        _check_counts(who, active[jid], sum(mm.values()))
        want[jid] = mm
        configs[jid] = Config(len(mm), sum(mm.values()), types.pop())
    for nid, g in used.items():
        if g > ntype[nid][1]:
            users = sorted(j for j, m in want.items() if nid in m)
            raise InputError(f"policy[{pname}].nodes", {nid: g},
                             f"node {nid} holds {ntype[nid][1]} GPUs; jobs {', '.join(users)} ask for {g}")
    occ: dict[str, list[str | None]] = {nid: [None] * ntype[nid][1] for nid in used}
    assignments: dict[str, list[tuple[str, tuple[int, ...]]]] = {}
    moving = []
    for jid, mm in want.items():
        prev = previous.assignments.get(jid) if previous is not None else None
        if prev is not None and {n: len(g) for n, g in prev} == mm:
            for n, gs in prev:
                for g in gs:
                    occ[n][g] = jid
            assignments[jid] = [(n, tuple(gs)) for n, gs in prev]
        else:
            moving.append(jid)
    for jid in moving:
        slots = []
        for n, g in sorted(want[jid].items()):
            free = [k for k, o in enumerate(occ[n]) if o is None][:g]
            for k in free:
                occ[n][k] = jid
            slots.append((n, tuple(free)))
        assignments[jid] = slots
    for guest, host in (colocate or {}).items():  # packing: the guest shares the host's GPUs
        who = f"policy[{pname}].colocate[{guest}]"
        if guest not in active or guest in want:
            raise InputError(who, host, "must name an active job without a node map of its own")
        if host not in want or host in (colocate or {}):
            raise InputError(who, host, "must name a job placed by `nodes`")
        _check_counts(who, active[guest], configs[host].n_gpus)
        assignments[guest], configs[guest] = assignments[host], configs[host]
    return Placement(assignments=assignments, configs=configs)


def _from_allocation(cluster: Cluster, pname: str, alloc: Mapping[str, Config | None], active: dict[str, JobState],
                     previous: Placement | None) -> Placement:
    """Validate a configuration per job and place it with Sia's placer (unchanged jobs keep their GPUs)."""
    used = dict.fromkeys(cluster.type_names, 0)
    chosen: dict[str, Config] = {}
    for jid, c in alloc.items():
        who = f"policy[{pname}].allocation[{jid}]"
        if jid not in active:
            raise InputError(who, c, "names no active job")
        if c is None:
            continue
        if not isinstance(c, Config):
            raise InputError(who, c, "must be a schedopt.sia.Config or None")
        why = config_shape_ok(cluster, c)
        if why:
            raise InputError(who, c.label, why)
        _check_counts(who, active[jid], c.n_gpus)
        used[c.gpu_type] += c.n_gpus
        chosen[jid] = c
    for t in cluster.type_names:
        if used[t] > cluster[t].total_gpus:
            raise InputError(f"policy[{pname}].allocation", {t: used[t]},
                             f"{used[t]} {t} GPUs allocated > {cluster[t].total_gpus} in the cluster")
    prev = None
    if previous is not None:
        prev = Placement(assignments={j: s for j, s in previous.assignments.items() if j in active},
                         configs={j: c for j, c in previous.configs.items() if j in active})
    # a job inside its checkpoint-restore delay that keeps its configuration is never the one moved for another
    # (Sia: jobs in checkpoint-restore are non-preemptible, `preserve_ckpt_allocs`)
    pinned = [jid for jid, c in chosen.items() if active[jid].restart_left > 0 and active[jid].config == c]
    pl = place(cluster, chosen, prev, pinned=pinned)
    if pl.unplaced:
        raise InputError(f"policy[{pname}].allocation[{pl.unplaced[0]}]", chosen[pl.unplaced[0]].label,
                         "cannot be placed on the cluster next to the other jobs")
    return pl


def simulate(
    cluster: Cluster,
    workload: Workload,
    policy: Policy,
    *,
    round_seconds: float = 60.0,
    job_model: str | JobModel = "pollux",
    adaptive: bool | None = None,
    charge_policy_time: bool = False,
    estimator: str = "bootstrap",
    max_time: float | None = None,
    progress: bool | None = None,
    label: str = "",
) -> SimResult:
    """Replay ``workload`` on ``cluster`` under ``policy``; per-job and per-round records in a :class:`SimResult`.

    ``job_model``: ``"pollux"`` or ``"sia"`` (:data:`~schedopt.sim.jobs.POLLUX` / :data:`~schedopt.sim.jobs.SIA`,
    restart delays and calibration) or a :class:`~schedopt.sim.jobs.JobModel`. ``adaptive``: whether jobs adapt GPUs
    and batch size (default: the policy's ``adaptive`` attribute, else whether its name is in
    :data:`ADAPTIVE_POLICIES`). ``charge_policy_time``: every job whose placement changes also waits the policy's
    wall time of that round (capped at the round). ``estimator``: what the policy sees of each adaptive job's
    throughput (:func:`~schedopt.sim.jobs.goodput_estimate`): ``"bootstrap"`` (default; Sia's online estimate from
    1-GPU profiles, refitted to the configurations the job has run on) or ``"oracle"`` (the true model). ``max_time``: stop there (unfinished jobs keep ``finish=None``;
    default: last arrival + 60 days). ``progress``: a progress line on stderr (default: only on a terminal).
    """
    if not isinstance(cluster, Cluster):
        raise InputError("cluster", type(cluster).__name__, "must be a schedopt.sia.Cluster")
    if not isinstance(workload, Workload):
        raise InputError("workload", type(workload).__name__, "must be a schedopt.sim.Workload")
    if not callable(getattr(policy, "decide", None)):
        raise InputError("policy", type(policy).__name__, "must have decide(state) -> Decision")
    # -- input bounds, one rule for simulate / simulate_many / the CLI (schedopt.sim.limits; issue 25) --
    round_seconds = check_round_seconds(round_seconds)
    max_time = check_max_time(max_time)
    adaptive = check_flag(adaptive, "adaptive", allow_none=True)
    charge_policy_time = bool(check_flag(charge_policy_time, "charge_policy_time"))
    progress = check_flag(progress, "progress", allow_none=True)
    if not isinstance(label, str):
        raise InputError("label", label, "must be a text")
    if not isinstance(job_model, (str, JobModel)):
        raise InputError("job_model", job_model, "must be 'pollux', 'sia' or a schedopt.sim.JobModel")
    if not isinstance(estimator, str):
        raise InputError("estimator", estimator, f"must be one of {list(ESTIMATORS)}")
    check_rounds(default_stop(workload) if max_time is None else max_time, round_seconds)
    # -- end of input bounds --
    jm = get_job_model(job_model)
    if estimator not in ESTIMATORS:
        raise InputError("estimator", estimator, f"must be one of {list(ESTIMATORS)}")
    pname = str(getattr(policy, "name", type(policy).__name__))
    if adaptive is None:
        adaptive = bool(getattr(policy, "adaptive", pname in ADAPTIVE_POLICIES))
    R = float(round_seconds)
    jobs = [JobState(w.name, w.application, w.time, w.num_replicas, w.batch_size, adaptive, jm, estimator=estimator)
            for w in workload.jobs]
    biggest = max(t.total_gpus for t in cluster.gpu_types)
    for k, j in enumerate(jobs):
        j.application  # noqa: B018 - raises InputError for an unknown application
        missing = [t for t in cluster.type_names if t not in jm.truth(j.app).params]
        if missing:
            raise InputError(f"workload.jobs[{k}].application", j.app, f"has no throughput model on {missing}")
        rs = j.rigid_shape
        if rs is not None and rs[0] > biggest:
            raise InputError(f"workload.jobs[{k}].num_replicas", rs[0],
                             f"no GPU type of the cluster has that many GPUs (largest: {biggest})")
    # -- hopeless jobs: said before the run, carried in the result (schedopt.sim.feasibility; issue 25) --
    stop_at = default_stop(workload) if max_time is None else float(max_time)
    hopeless = tuple(hopeless_jobs(cluster, workload, jm, stop_at, adaptive=adaptive, round_seconds=float(round_seconds),
                                   max_rate=float(getattr(policy, "max_rate", 1.0))))
    # -- end of hopeless jobs --
    last = max((j.arrival for j in jobs), default=0.0)
    stop = last + 60 * 86400.0 if max_time is None else float(max_time)
    bar = _Progress(progress, len(jobs), label or f"{pname} on {workload.name}")
    rounds: list[RoundRecord] = []
    placement: Placement | None = None
    active: dict[str, JobState] = {}
    nxt, done, k = 0, 0, 0
    t = 0.0
    while done < len(jobs):
        t = k * R
        if t > stop:
            break
        while nxt < len(jobs) and jobs[nxt].arrival <= t:
            active[jobs[nxt].id] = jobs[nxt]
            nxt += 1
        if not active:  # idle: jump to the first round at or after the next arrival
            k = max(k + 1, math.ceil(jobs[nxt].arrival / R))
            continue
        state = RoundState(time=t, round_index=k, round_seconds=R, cluster=cluster,
                           jobs=tuple(_view(j, t) for j in active.values()), placement=placement)
        t0, c0 = time.perf_counter(), time.process_time()
        decision = policy.decide(state)
        dt, dc = time.perf_counter() - t0, time.process_time() - c0
        if not isinstance(decision, Decision):
            raise InputError(f"policy[{pname}].decide", type(decision).__name__, "must return a Decision")
        if decision.allocation is not None and decision.nodes is not None:
            raise InputError(f"policy[{pname}].decision", "allocation and nodes", "give one of them, not both")
        if decision.nodes is not None:
            placement = _from_nodes(cluster, pname, decision.nodes, active, placement, decision.colocate)
        else:
            if decision.colocate:
                raise InputError(f"policy[{pname}].colocate", dict(decision.colocate), "needs a `nodes` decision")
            placement = _from_allocation(cluster, pname, decision.allocation or {}, active, placement)
        extra = min(dt, R) if charge_policy_time else 0.0
        rates, restarts = decision.rate or {}, decision.restart or {}
        for hook, vals in (("rate", rates), ("restart", restarts)):
            for jid, v in vals.items():
                if jid not in active or not (isinstance(v, (int, float)) and math.isfinite(v) and v >= 0):
                    raise InputError(f"policy[{pname}].{hook}[{jid}]", v, "must name an active job and be a number >= 0")
        for j in active.values():
            j.share = float(rates.get(j.id, 1.0))
            slots = placement.assignments.get(j.id, [])
            new = {n: len(g) for n, g in slots}
            if new == j.nodes:
                continue
            same = decision.nodes is None and new and j.config is not None and placement.configs[j.id] == j.config
            j.nodes = new
            if same:  # our placer moved it, its configuration is unchanged: no restart (Sia's simulator restarts a
                continue  # job only when its allocation changes; same nodes and GPUs: same rate, same batch)
            if new:
                c = placement.configs[j.id]
                j.config = c
                j.restart_left = float(restarts.get(j.id, jm.restart(j.app))) + extra
                if j.started:
                    j.restarts += 1
                else:
                    j.started, j.start = True, t
                j.max_profiled = max(j.max_profiled, c.n_gpus)
                j.segments.append([t, t, c.gpu_type, c.n_gpus])
            else:
                j.config, j.restart_left = None, 0.0
            j.rebatch()
        for j in active.values():
            j.advance(t, R)
        finished = [jid for jid, j in active.items() if j.finish is not None]
        for jid in finished:
            del active[jid]
        done += len(finished)
        if finished:
            placement = Placement(assignments={j: s for j, s in placement.assignments.items() if j in active},
                                  configs={j: c for j, c in placement.configs.items() if j in active})
        rounds.append(RoundRecord.of(k, t, dt, len(state.jobs), decision, dc))
        bar.update(t + R, done)
        k += 1
    bar.close(t, done)
    meta: dict[str, Any] = {
        "policy": pname,
        "workload": workload.name,
        "cluster": {t.name: [t.nodes, t.gpus_per_node] for t in cluster.gpu_types},
        "gpus": cluster.num_gpus,
        "round_seconds": R,
        "job_model": jm.name,
        "adaptive": adaptive,
        "charge_policy_time": charge_policy_time,
        "estimator": estimator,
    }
    return SimResult(meta=meta, jobs=tuple(JobRecord.of(j) for j in jobs), rounds=tuple(rounds),
                     hopeless=hopeless)
