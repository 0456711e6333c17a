"""The event loop of HiveD in closed loop, its metrics, and the sweep's ``run_task``.

:func:`simulate_hived` replays a :class:`~schedopt.sim.hived.HivedTrace` under one scheduler. Events, at each time
in this order: finishes, node repairs, node failures (the jobs on a failed node are dropped and queued again, from
the beginning), arrivals; then one scheduling pass: the waiting jobs, guaranteed before opportunistic, higher
priority first, then by arrival (then id), each tried once (a job that cannot start does not block the ones behind
it; a job is not tried again until some GPUs were released, as nothing else can make it fit; the pass is repeated
while a preemption released GPUs). A preempted job is queued again and restarts from the beginning. After the pass the state holds until the next event, so every metric
below is exact (integrated between events):

* queueing delay of a job = its first start - its arrival (per tenant and overall, guaranteed and opportunistic:
  mean and p95);
* a **repack anomaly** (:data:`ANOMALY_TEST`): a guaranteed job waits although its tenant's private cluster of
  quota size could host it next to the tenant's running guaranteed jobs repacked
  (:class:`~schedopt.sim.hived.private.PrivateQuota`, the exact cell-mapping rule); counted as jobs that ever were
  in that state and anomaly-seconds, split by whether a node was down at the time;
* under HiveD, the paper's **sharing anomaly** (``vc_room_jobs`` / ``vc_room_seconds``): a guaranteed job waits,
  no node down, although its VC's own virtual cells -- its private cluster with the same allocation rule and
  history -- hold it on idle GPUs as they are;
* GPU utilization (guaranteed, opportunistic, total; over all GPUs), fragmentation (of the idle GPUs on healthy
  nodes, the share outside wholly idle nodes; time-weighted mean and a sample per event in the round records);
* opportunistic jobs run and preempted, preemptions, GPU-seconds lost to preemptions and to failures, jobs dropped
  by failures, failed node-seconds.
"""

from __future__ import annotations

import bisect
import heapq
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...errors import InputError
from ..metrics import JobRecord, RoundRecord, SimMeta, SimResult
from .private import PrivateQuota
from .schedulers import HivedScheduler, Placed, QuotaScheduler, make_scheduler
from .workload import (
    CLUSTER_PRESETS,
    DEFAULT_CLUSTER,
    HivedJob,
    HivedTrace,
    cluster_preset,
    parse_workload,
    synthetic_trace,
)

__all__ = ["ANOMALY_TEST", "POLICIES", "JobHistory", "compare", "run_task", "simulate_hived"]

#: What ``anomaly_jobs`` / ``anomaly_seconds`` count (``meta.details["hived"]["anomaly_test"]``): a waiting guaranteed
#: job whose tenant's running guaranteed pods and its own pods could be *repacked* into the tenant's quota cells (the
#: counting rule of :class:`~schedopt.sim.hived.private.PrivateQuota`, no allocation history). HiveD's paper counts
#: a job that its tenant's private cluster -- the same cells, allocation rule and history -- would run; for HiveD
#: that private cluster is its VC's own virtual cells, counted as ``vc_room_jobs`` / ``vc_room_seconds``.
ANOMALY_TEST = "repack"

#: policy name -> scheduler
POLICIES: dict[str, str] = {"hived": "hived", "hived:quota": "quota"}
_FINISH, _HEAL, _FAIL, _ARRIVE = 0, 1, 2, 3
Observer = Callable[[int, float, int, int], Any]


@dataclass
class JobHistory:
    """One job's history in the loop (the engine's own record; :class:`~schedopt.sim.JobRecord` is derived)."""

    job: HivedJob
    start: float | None = None
    finish: float | None = None
    restarts: int = 0
    preempted: int = 0
    killed: int = 0
    segments: list[tuple[float, float, str, float]] = field(default_factory=list)
    running_since: float | None = None
    epoch: int = 0
    anomaly_seconds: float = 0.0
    anomaly_failure_seconds: float = 0.0
    vc_room_seconds: float = 0.0
    last_try: int = -1

    @property
    def delay(self) -> float | None:
        return None if self.start is None else self.start - self.job.arrival


def _stats(xs: list[float]) -> dict[str, float]:
    a = np.asarray(xs, float)
    if not a.size:
        return {"n": 0, "mean": math.nan, "p95": math.nan}
    return {"n": int(a.size), "mean": float(a.mean()), "p95": float(np.percentile(a, 95))}


def simulate_hived(trace: HivedTrace, scheduler: str = "hived", *, max_time: float | None = None,
                   observer: Observer | None = None, check_room: bool = False,
                   **params: Any) -> SimResult:
    """Replay ``trace`` under ``scheduler`` (``"hived"`` or ``"quota"``; ``params`` go to it). ``check_room``:
    after every pass, raise AssertionError if HiveD leaves a guaranteed job waiting while its tenant's virtual
    cells hold it on idle healthy GPUs and no node is down (the property tests use it). ``observer(events, t,
    finished, total)`` is called after every event time. The result's ``meta.details["hived"]`` holds the metrics (module
    docstring)."""
    hc = trace.cluster
    sch = make_scheduler(scheduler, hc, **params)
    if check_room and not isinstance(sch, HivedScheduler):
        raise InputError("check_room", check_room, "only the hived scheduler has virtual cells to check")
    private = PrivateQuota(hc)
    known = sch.waits_known if isinstance(sch, HivedScheduler) else None
    hist = {j.id: JobHistory(j) for j in trace.jobs}
    total = len(hist)
    ev: list[tuple[float, int, int, str, int]] = []
    seq = 0

    def push(t: float, kind: int, key: str, epoch: int = 0) -> None:
        nonlocal seq
        heapq.heappush(ev, (t, kind, seq, key, epoch))
        seq += 1

    for j in trace.jobs:
        push(j.arrival, _ARRIVE, j.id)
    for f in trace.failures:
        push(f.start, _FAIL, f.node)
        if math.isfinite(f.end):
            push(f.end, _HEAL, f.node)
    waiting: dict[str, None] = {}
    # the waiting jobs in the pass's order (guaranteed first, higher priority first, then by arrival, then id),
    # kept sorted as jobs come and go instead of sorted at every pass
    okey = {j.id: (not j.guaranteed, -j.priority, j.arrival, j.id) for j in trace.jobs}
    queue: list[tuple[bool, int, float, str]] = []
    # per job, what the per-event anomaly test reads: guaranteed?, and its shape (tenant, chain, GPUs per pod, pods)
    gflag = {j.id: j.guaranteed for j in trace.jobs}
    shape_of = {j.id: (j.tenant, j.chain, j.gpus_per_pod, j.pods) for j in trace.jobs}
    running: dict[str, None] = {}
    down: set[str] = set()
    release_version = 0
    finished = 0
    n_events = 0
    rounds: list[RoundRecord] = []
    acc = {"used_g": 0.0, "used_o": 0.0, "frag": 0.0, "healthy": 0.0, "down_node_s": 0.0, "span": 0.0,
           "anomaly_s": 0.0, "anomaly_fail_s": 0.0, "vc_room_s": 0.0}
    counters = {"preemptions": 0, "preempted_gpu_s": 0.0, "failure_kills": 0, "failure_lost_gpu_s": 0.0,
                "guaranteed_preempted": 0, "opportunistic_preempted": 0}
    cl = hc.cluster
    node_gpus = {n: int(cl.leaf_hi[cs[0]] - cl.leaf_lo[cs[0]]) for n, cs in cl.node_names.items()}
    leaf_node = [cl.node_name(int(c)) or "" for c in cl.leaf_cells.tolist()]
    node_leaves: dict[str, list[int]] = {}
    for jj, n in enumerate(leaf_node):
        node_leaves.setdefault(n, []).append(jj)
    # a node's GPUs are consecutive leaves (cells number their leaves depth first): idle GPUs are a slice's count
    node_span = {n: (lv[0], lv[-1] + 1) for n, lv in node_leaves.items()}
    if any(lv != list(range(lv[0], lv[-1] + 1)) for lv in node_leaves.values()):  # pragma: no cover - by construction
        raise AssertionError("a node's GPUs are not consecutive leaves")
    G = cl.num_gpus
    t = 0.0
    policy_seconds = 0.0
    # the running jobs and down nodes change only at some events: the state's sums are kept until they do
    state_version = 0
    memo_version = -1
    used_g = used_o = 0
    frag = 0.0
    run_demand: dict[tuple[str, str], Any] = {}  # (tenant, chain) -> cells per level its running guaranteed pods need
    shape_demand: dict[tuple[str, str, int, int], Any] = {}
    # per waiting shape: (the repack test, and under HiveD: do the VC's own cells, as they are, hold it?)
    fit: dict[tuple[str, str, int, int], tuple[bool, bool]] = {}
    hived_sch = sch if isinstance(sch, HivedScheduler) else None

    def enqueue(jid: str) -> None:
        waiting[jid] = None
        bisect.insort(queue, okey[jid])

    def running_add(job: HivedJob, sign: int) -> None:
        """A job starts (``sign`` 1) or stops (-1): the running GPUs and the tenant's demand follow."""
        nonlocal used_g, used_o
        if job.guaranteed:
            used_g += sign * job.gpus
            key = (job.tenant, job.chain)
            d = run_demand.get(key)
            if d is None:
                d = run_demand[key] = private.demand(job.chain, ())
            d += sign * demand_of(job)
        else:
            used_o += sign * job.gpus

    def demand_of(job: HivedJob) -> Any:
        s = shape_of[job.id]
        d = shape_demand.get(s)
        if d is None:
            d = shape_demand[s] = private.demand(job.chain, [(job.gpus_per_pod, job.pods)])
        return d

    def stop(h: JobHistory, now: float) -> float:
        """End the running spell; returns its GPU-seconds."""
        nonlocal state_version
        assert h.running_since is not None
        state_version += 1
        gs = (now - h.running_since) * h.job.gpus
        if now > h.running_since:
            h.segments.append((h.running_since, now, h.job.chain, float(h.job.gpus)))
        h.running_since = None
        h.epoch += 1
        if running.pop(h.job.id, 0) is None:
            running_add(h.job, -1)
        return gs

    def requeue(h: JobHistory) -> None:
        h.restarts += 1
        enqueue(h.job.id)

    def _schedule_pass() -> None:
        nonlocal release_version, state_version
        failing: set[tuple[tuple[str, str, int, int], int]] = set()
        for k in queue[:]:
            jid = k[3]
            h = hist[jid]
            if jid not in waiting or h.last_try == release_version:
                continue
            if known is not None and gflag[jid]:
                # try_start would return a remembered failure: a shape seen to fail since the pass's last start
                # (only a start or a preemption changes what the allocator remembers as failing), or one the
                # allocator says so of now
                c = shape_of[jid], h.job.priority
                if c in failing or known(h.job):
                    failing.add(c)
                    h.last_try = release_version
                    continue
            out = sch.try_start(h.job)
            if isinstance(out, Placed):
                failing.clear()
                del waiting[jid]
                del queue[bisect.bisect_left(queue, k)]
                for v in out.preempted:
                    hv = hist[v]
                    counters["preempted_gpu_s"] += stop(hv, t)
                    counters["preemptions"] += 1
                    counters["guaranteed_preempted" if hv.job.guaranteed else "opportunistic_preempted"] += 1
                    hv.preempted += 1
                    requeue(hv)
                    hv.last_try = -1
                if out.preempted:
                    release_version += 1
                if h.start is None:
                    h.start = t
                h.running_since = t
                running[jid] = None
                running_add(h.job, 1)
                state_version += 1
                push(t + h.job.duration, _FINISH, jid, h.epoch)
            else:
                h.last_try = release_version

    while ev:
        t = ev[0][0]
        if max_time is not None and t > max_time:
            t = max_time
            break
        while ev and ev[0][0] == t:
            _, kind, _, key, epoch = heapq.heappop(ev)
            if kind == _FINISH:
                h = hist[key]
                if epoch != h.epoch or h.running_since is None:
                    continue  # a stale finish: the job was preempted or dropped since
                sch.release(key)
                stop(h, t)
                h.finish = t
                finished += 1
                release_version += 1
            elif kind == _HEAL:
                sch.heal_node(key)
                down.discard(key)
                state_version += 1
                release_version += 1
            elif kind == _FAIL:
                for jid in sch.fail_node(key):
                    h = hist[jid]
                    counters["failure_lost_gpu_s"] += stop(h, t)
                    counters["failure_kills"] += 1
                    h.killed += 1
                    requeue(h)
                down.add(key)
                state_version += 1
                release_version += 1
            else:
                enqueue(key)
        # ---- one scheduling pass
        c0 = time.perf_counter()
        pass_version = -1
        while pass_version != release_version:  # again while a preemption released GPUs beyond its own needs
            pass_version = release_version
            _schedule_pass()
        policy_seconds += time.perf_counter() - c0
        # ---- the state until the next event
        nxt = ev[0][0] if ev else t
        if max_time is not None:
            nxt = min(nxt, max_time)
        dt = nxt - t
        if memo_version != state_version:
            memo_version = state_version
            owner = sch.gpu_owner()
            idle_total = idle_whole = 0
            for n, (lo, hi) in node_span.items():
                if n in down:
                    continue
                idle = owner[lo:hi].count(None)
                idle_total += idle
                if idle == node_gpus[n]:
                    idle_whole += idle
            frag = 1.0 - idle_whole / idle_total if idle_total else 0.0
            # the counting rule once per tenant's running demand and waiting shape (waiting jobs share their shapes)
            fit = {}
        anomalies = []
        room_on = hived_sch is not None and not down
        for jid in waiting:
            if not gflag[jid]:
                continue
            shape = shape_of[jid]
            if (memo := fit.get(shape)) is None:
                jw = hist[jid].job
                base = run_demand.get(shape[:2])
                d = demand_of(jw)
                # the repack test, and under HiveD the VC's own cells as they are (a shape whose search failed on
                # the VC's unchanged cells has no room: a look-up; check_room asks the cells themselves)
                memo = fit[shape] = (
                    private.fits_demand(shape[0], shape[1], d if base is None else d + base),
                    room_on and (check_room or not sch.waits_known(jw)) and sch.vc_has_room(jw))  # type: ignore[union-attr]
            if memo[0]:
                anomalies.append(jid)
                if down:
                    hist[jid].anomaly_failure_seconds += dt
                else:
                    hist[jid].anomaly_seconds += dt
            if memo[1]:
                hist[jid].vc_room_seconds += dt
                acc["vc_room_s"] += dt
                if check_room:
                    raise AssertionError(f"t={t:g}: guaranteed job {jid} of {shape[0]} waits while its virtual "
                                         f"cells hold it on idle GPUs")
        healthy_gpus = G - sum(node_gpus[n] for n in down)
        acc["used_g"] += used_g * dt
        acc["used_o"] += used_o * dt
        acc["frag"] += frag * dt
        acc["healthy"] += healthy_gpus * dt
        acc["down_node_s"] += len(down) * dt
        acc["span"] += dt
        acc["anomaly_fail_s" if down else "anomaly_s"] += len(anomalies) * dt
        rounds.append(RoundRecord(n_events, t, 0.0, len(running),
                                  info={"waiting": len(waiting), "used_gpus": used_g + used_o,
                                        "opportunistic_gpus": used_o, "fragmentation": round(frag, 6),
                                        "anomalies": len(anomalies), "down_nodes": len(down)}))
        n_events += 1
        if observer is not None:
            observer(n_events, t, finished, total)
        if not ev:
            break
    end = t
    for h in hist.values():
        if h.running_since is not None:
            h.segments.append((h.running_since, max(end, h.running_since), h.job.chain, float(h.job.gpus)))
    meta = _meta(trace, sch, hist, acc, counters, end, policy_seconds)
    jobs = tuple(JobRecord(h.job.id, f"{h.job.tenant}/{'guaranteed' if h.job.guaranteed else 'opportunistic'}",
                           h.job.arrival, h.start, h.finish, h.restarts, h.job.gpus, 0, tuple(h.segments))
                 for h in sorted(hist.values(), key=lambda h: (h.job.arrival, h.job.id)))
    return SimResult(SimMeta.from_dict(meta), jobs, tuple(rounds))


def _meta(trace: HivedTrace, sch: QuotaScheduler | HivedScheduler, hist: Mapping[str, JobHistory],
          acc: Mapping[str, float], counters: Mapping[str, float], end: float, policy_seconds: float) -> dict[str, Any]:
    hc = trace.cluster
    G = hc.gpus
    span = acc["span"] or 1.0
    tenants: dict[str, Any] = {}
    hived_sch = isinstance(sch, HivedScheduler)
    for v in hc.tenants:
        hs = [h for h in hist.values() if h.job.tenant == v]
        g = [h for h in hs if h.job.guaranteed]
        o = [h for h in hs if not h.job.guaranteed]
        tenants[v] = {
            "jobs": len(hs),
            "guaranteed_delay_s": _stats([h.delay for h in g if h.delay is not None]),
            "opportunistic_delay_s": _stats([h.delay for h in o if h.delay is not None]),
            "anomaly_jobs": sum(1 for h in g if h.anomaly_seconds > 0),
            "anomaly_seconds": float(sum(h.anomaly_seconds for h in g)),
            "anomaly_jobs_during_failures": sum(1 for h in g if h.anomaly_failure_seconds > 0),
            "vc_room_jobs": sum(1 for h in g if h.vc_room_seconds > 0) if hived_sch else None,
            "never_started": sum(1 for h in hs if h.start is None),
        }
    g_all = [h for h in hist.values() if h.job.guaranteed]
    o_all = [h for h in hist.values() if not h.job.guaranteed]
    hived = {
        "scheduler": sch.name,
        "end_s": end,
        "guaranteed_delay_s": _stats([h.delay for h in g_all if h.delay is not None]),
        "opportunistic_delay_s": _stats([h.delay for h in o_all if h.delay is not None]),
        "anomaly_jobs": sum(1 for h in g_all if h.anomaly_seconds > 0),
        "anomaly_seconds": acc["anomaly_s"],
        "anomaly_jobs_during_failures": sum(1 for h in g_all if h.anomaly_failure_seconds > 0),
        "anomaly_seconds_during_failures": acc["anomaly_fail_s"],
        "anomaly_test": ANOMALY_TEST,
        "vc_room_jobs": sum(1 for h in g_all if h.vc_room_seconds > 0) if hived_sch else None,
        "vc_room_seconds": acc["vc_room_s"] if hived_sch else None,
        "gpu_utilization": (acc["used_g"] + acc["used_o"]) / (G * span),
        "guaranteed_utilization": acc["used_g"] / (G * span),
        "opportunistic_utilization": acc["used_o"] / (G * span),
        "healthy_gpu_fraction": acc["healthy"] / (G * span),
        "mean_fragmentation": acc["frag"] / span,
        "opportunistic_jobs": len(o_all),
        "opportunistic_started": sum(1 for h in o_all if h.start is not None),
        "opportunistic_finished": sum(1 for h in o_all if h.finish is not None),
        "preemptions": int(counters["preemptions"]),
        "opportunistic_preempted": int(counters["opportunistic_preempted"]),
        "guaranteed_preempted": int(counters["guaranteed_preempted"]),
        "preempted_gpu_seconds": counters["preempted_gpu_s"],
        "avoidable_bindings": sch.avoidable if isinstance(sch, HivedScheduler) else 0,
        "failures": len(trace.failures),
        "failure_kills": int(counters["failure_kills"]),
        "failure_lost_gpu_seconds": counters["failure_lost_gpu_s"],
        "failed_node_seconds": acc["down_node_s"],
        "tenants": tenants,
    }
    return {"system": "hived", "policy": "hived" if isinstance(sch, HivedScheduler) else "hived:quota",
            "workload": trace.name, "scheduler": sch.name, "cluster_preset": hc.name, "gpus": G, "round_seconds": 60.0,
            "end_time": end, "trace": trace.name, "policy_seconds_total": policy_seconds, "hived": hived}


def run_task(task: Any, observer: Observer | None = None) -> SimResult:
    """Run one :class:`schedopt.sim.sweep.SimTask` whose policy is ``hived`` (HiveD's buddy cell allocator) or
    ``hived:quota`` (the quota-only baseline): ``cluster`` a name of
    :data:`~schedopt.sim.hived.CLUSTER_PRESETS` (None: ``three-tenant``), ``workload``
    ``hived/synthetic[:key=value...]`` drawn with ``seed`` (:func:`~schedopt.sim.hived.parse_workload`),
    ``policy_params`` ``packing`` / ``buddy`` for ``hived``; ``job_model`` and ``round_seconds`` must be None (the
    loop is event-driven); ``max_time`` stops the run. ``observer(events, t, finished, total)``."""
    if task.policy not in POLICIES:
        raise InputError("policy", task.policy, f"must be one of {', '.join(POLICIES)}")
    cname = task.cluster or DEFAULT_CLUSTER
    if cname not in CLUSTER_PRESETS:
        raise InputError("cluster", cname, f"unknown HiveD cluster; have {', '.join(CLUSTER_PRESETS)}")
    if task.job_model is not None:
        raise InputError("job_model", task.job_model, "must be None for hived policies (jobs carry run times)")
    if task.round_seconds is not None:
        raise InputError("round_seconds", task.round_seconds, "must be None for hived policies (event-driven)")
    p = parse_workload(task.workload)
    trace = synthetic_trace(cluster_preset(cname), p["jobs"], task.seed, load=p["load"], failures=p["failures"],
                            repair_h=p["repair_h"], long=p["long"], name=task.workload)
    res = simulate_hived(trace, POLICIES[task.policy], max_time=task.max_time, observer=observer,
                         **dict(task.policy_params))
    meta = res.meta.replace(policy=task.policy, workload=task.workload, seed=task.seed, cluster_preset=cname,
                            policy_params=dict(task.policy_params))
    return SimResult(meta, res.jobs, res.rounds, res.hopeless)


def compare(trace: HivedTrace, **params: Any) -> dict[str, SimResult]:
    """The same trace under the quota-only baseline and HiveD: ``{"hived:quota": ..., "hived": ...}``."""
    return {"hived:quota": simulate_hived(trace, "quota"), "hived": simulate_hived(trace, "hived", **params)}
