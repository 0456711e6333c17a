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

import dataclasses
import functools
import math
import numbers
import sys
import time
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, ParamSpec, Protocol, TypeVar

from ..errors import InputError
from ..goodput import JobGoodputModel, blas_threads
from ..results import Limit
from ..sia import Cluster, Config, Placement
from ..sia.check import config_shape_ok
from .checkpoint import take_run_hooks
from .feasibility import hopeless_jobs
from .jobs import ESTIMATORS, JobModel, JobState, goodput_estimate
from .jobs import job_model as get_job_model
from .limits import check_flag, check_max_time, check_round_seconds, check_rounds, default_stop
from .metrics import JobRecord, RoundRecord, SimMeta, SimResult
from .policies.base import Decision, JobView, Policy, RoundState
from .registry import role_name
from .roles import (
    ACCEPT,
    REJECT,
    AcceptAll,
    Admission,
    AdmissionState,
    GpuRequest,
    Placer,
    Verdict,
    assign_gpus,
    make_admission,
    make_placer,
)
from .workloads import Workload

__all__ = ["DEFAULT_ROUND_SECONDS", "Observer", "RecordSink", "RoundDecision", "admit_pending", "apply_decision",
           "decide_round", "job_view", "simulate"]

#: ``observer(rounds_done, sim_time_s, jobs_finished, jobs_total)``, called after every round
Observer = Callable[[int, float, int, int], None]


class RecordSink(Protocol):
    """Where :func:`simulate` streams its records (``sink=``): :class:`~schedopt.sim.records.RecordStream`."""

    def job(self, record: JobRecord) -> None: ...

    def round(self, record: RoundRecord) -> None: ...

#: the elastic engine's round (Sia's and Pollux's scheduling interval); each family states its own
DEFAULT_ROUND_SECONDS = 60.0


def __getattr__(name: str) -> Any:
    if name == "ADAPTIVE_POLICIES":
        warnings.warn("schedopt.sim.ADAPTIVE_POLICIES is deprecated: a policy says it is adaptive with its "
                      "`adaptive` attribute", DeprecationWarning, stacklevel=2)
        return frozenset({"sia", "pollux", "pollux-exact", "pollux-unaware"})
    raise AttributeError(name)


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


def job_view(j: JobState, t: float, estimate: JobGoodputModel | None = None, progress: float | None = None) -> JobView:
    """What a policy sees of ``j`` at ``t``; ``estimate`` / ``progress`` (a fraction of the target) given by a caller
    that knows them otherwise (a live session: measured), else the job model's."""
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
        current_nodes=MappingProxyType(j.nodes),  # read only; the engine replaces a job's map, never edits it
        estimate=goodput_estimate(j) if estimate is None else estimate,
        progress=min(j.progress / j.application.target, 1.0 - 1e-12) if progress is None else progress,
        max_gpus=j.max_gpus,
        kind=j.kind, scale_units=j.scale_units,  # sia-eval (issue 31): job kind and pipeline scale units
    )


def _policy_copy(placement: Placement | None) -> Placement | None:
    """The previous placement as a policy gets it: a copy, so that a policy that edits it cannot change the
    engine's own (issue 41)."""
    if placement is None:
        return None
    return Placement(assignments={j: [(n, tuple(g)) for n, g in s] for j, s in placement.assignments.items()},
                     configs=dict(placement.configs), evicted=tuple(placement.evicted),
                     unplaced=tuple(placement.unplaced),
                     moved_from={j: [(n, tuple(g)) for n, g in s] for j, s in placement.moved_from.items()})


#: the fields of a Decision that map a job id to something, and what each value must be (issue 41: the engine
#: checks the containers as it checks the values)
_DECISION_MAPS = ("allocation", "nodes", "requests", "colocate", "rate", "restart")


def _check_containers(pname: str, decision: Decision) -> None:
    """Every mapping field of ``decision`` is None or a mapping (``nodes``: of mappings); else an InputError naming
    the policy and the field."""
    for name in _DECISION_MAPS:
        v = getattr(decision, name)
        if v is not None and not isinstance(v, Mapping):
            raise InputError(f"policy[{pname}].{name}", type(v).__name__,
                             "must be a mapping job id -> value (a dict), or None")
    for jid, m in (decision.nodes or {}).items():
        if not isinstance(m, Mapping):
            raise InputError(f"policy[{pname}].nodes[{jid}]", type(m).__name__,
                             "must be a mapping node id -> GPU count (a dict)")


def _node_types(cluster: Cluster) -> dict[str, tuple[str, int]]:
    return {nid: (t.name, g) for t in cluster.gpu_types for nid, g in zip(t.ids, t.sizes)}  # node -> (type, GPUs)


_NODE_TYPES: dict[Cluster, dict[str, tuple[str, int]]] = {}


def _node_types_of(cluster: Cluster) -> dict[str, tuple[str, int]]:
    """:func:`_node_types`, kept per cluster (a round checks every placement against it)."""
    got = _NODE_TYPES.get(cluster)
    if got is None:
        if len(_NODE_TYPES) > 64:
            _NODE_TYPES.clear()
        got = _NODE_TYPES[cluster] = _node_types(cluster)
    return got


def _check_counts(who: str, j: JobState, n: int) -> None:
    rs = j.rigid_shape
    grow = j.jm.elastic.get(j.app, 0) if rs is not None else 0  # rigid jobs of elastic applications may grow
    if rs is not None and n != rs[0] and not rs[0] < n <= grow:
        raise InputError(f"{who}", n, f"rigid job {j.id} must get exactly {rs[0]} GPUs or none")
    if n > max(j.max_gpus, grow):
        raise InputError(f"{who}", n, f"job {j.id} may get at most {j.max_gpus} GPUs this round")


@functools.lru_cache(maxsize=4096)
def _config(n_nodes: int, n_gpus: int, gpu_type: str) -> Config:
    """``Config(n_nodes, n_gpus, gpu_type)``, one object per value (frozen; a round makes one per running job)."""
    return Config(n_nodes, n_gpus, gpu_type)


def _from_nodes(cluster: Cluster, pname: str, nodes: Mapping[str, Mapping[str, int]], active: dict[str, JobState],
                previous: Placement | None, colocate: Mapping[str, str] | None = None) -> Placement:
    """Validate a node-level decision and give it GPU indices (unchanged jobs keep theirs)."""
    ntype = _node_types_of(cluster)
    used: dict[str, int] = {}
    want: dict[str, dict[str, int]] = {}
    configs: dict[str, Config] = {}
    for jid, m in nodes.items():
        j = active.get(jid)
        cur = j.nodes if j is not None else None
        if cur and len(m) == len(cur) and all(type(g) is int and cur.get(n) == g for n, g in m.items()):
            # the job keeps the map it holds: checked when it got it (nodes, counts, one type)
            for nid, g in cur.items():
                used[nid] = used.get(nid, 0) + g
            want[jid] = cur
            configs[jid] = _config(len(cur), sum(cur.values()), ntype[next(iter(cur))][0])
            continue
        who = f"policy[{pname}].nodes[{jid}]"
        if jid not in active:
            raise InputError(who, dict(m), "names no active job")
        mm: dict[str, int] = {}
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
        configs[jid] = _config(len(mm), sum(mm.values()), types.pop())
    for nid, g in used.items():
        if g > ntype[nid][1]:
            users = sorted(j for j, m in want.items() if nid in m)
            raise InputError(f"policy[{pname}].nodes", {nid: g},
                             f"node {nid} holds {ntype[nid][1]} GPUs; jobs {', '.join(users)} ask for {g}")
    assignments = assign_gpus(cluster, want, previous)
    for guest, host in (colocate or {}).items():  # packing: the guest shares the host's GPUs
        who = f"policy[{pname}].colocate[{guest}]"
        if guest not in active or guest in want:
            raise InputError(who, host, "must name an active job without a node map of its own")
        if host not in want or host in (colocate or {}):
            raise InputError(who, host, "must name a job placed by `nodes`")
        _check_counts(who, active[guest], configs[host].n_gpus)
        assignments[guest], configs[guest] = assignments[host], configs[host]
    return Placement(assignments={j: s for j, s in assignments.items()}, configs={j: c for j, c in configs.items()})


def _from_allocation(cluster: Cluster, pname: str, alloc: Mapping[str, Config | None],
                     requests: Mapping[str, GpuRequest | int], active: dict[str, JobState],
                     previous: Placement | None, placer: Placer) -> tuple[Placement, int]:
    """Validate a configuration or a GPU request per job and place them with ``placer`` (unchanged jobs keep their
    GPUs). A configuration that cannot be placed is an error; a request that cannot be placed waits (counted)."""
    used = dict.fromkeys(cluster.type_names, 0)
    chosen: dict[str, Config | GpuRequest] = {}
    shape_ok: set[int] = set()  # ids of the Config objects checked (a policy's allocation shares its table's)
    for jid, c in alloc.items():
        j = active.get(jid)
        if j is None:
            raise InputError(f"policy[{pname}].allocation[{jid}]", c, "names no active job")
        if c is None:
            continue
        if id(c) not in shape_ok:
            if not isinstance(c, Config):
                raise InputError(f"policy[{pname}].allocation[{jid}]", c, "must be a schedopt.sia.Config or None")
            why = config_shape_ok(cluster, c)
            if why:
                raise InputError(f"policy[{pname}].allocation[{jid}]", c.label, why)
            shape_ok.add(id(c))
        n = c.n_gpus
        if j.rigid_shape is not None or n > j.max_gpus:  # (_check_counts' only ways to fail: a Config has n >= 1)
            _check_counts(f"policy[{pname}].allocation[{jid}]", j, n)
        used[c.gpu_type] += n
        chosen[jid] = c
    for jid, r in requests.items():
        who = f"policy[{pname}].requests[{jid}]"
        if jid not in active:
            raise InputError(who, r, "names no active job")
        if jid in chosen:
            raise InputError(who, r, "the job has a configuration in `allocation` too")
        if isinstance(r, int) and not isinstance(r, bool):
            r = GpuRequest(r)
        if not isinstance(r, GpuRequest) or isinstance(r.gpus, bool) or not isinstance(r.gpus, int) or r.gpus < 0:
            raise InputError(who, r, "must be a GpuRequest(gpus >= 0, gpu_type) or a GPU count")
        if r.gpu_type is not None and r.gpu_type not in used:
            raise InputError(f"{who}.gpu_type", r.gpu_type, f"names no GPU type of the cluster ({list(used)})")
        if r.gpus == 0:
            continue
        _check_counts(who, active[jid], r.gpus)
        if r.gpu_type is not None:
            used[r.gpu_type] += r.gpus
        chosen[jid] = r
    for t in cluster.type_names:
        if used[t] > cluster[t].total_gpus:
            raise InputError(f"policy[{pname}].allocation", {t: used[t]},
                             f"{used[t]} {t} GPUs allocated > {cluster[t].total_gpus} in the cluster")
    prev = None
    if previous is not None:
        pa, pc = previous.assignments, previous.configs
        if pa.keys() <= active.keys() and pc.keys() <= active.keys():  # (no job gone: the copies, whole)
            prev = Placement(assignments=dict(pa), configs=dict(pc))
        else:
            prev = Placement(assignments={j: s for j, s in pa.items() if j in active},
                             configs={j: c for j, c in pc.items() if j in active})
    # a job inside its checkpoint-restore delay that keeps its configuration is never the one moved for another
    # (Sia: jobs in checkpoint-restore are non-preemptible, `preserve_ckpt_allocs`)
    pinned = [jid for jid, c in chosen.items() if active[jid].restart_left > 0 and active[jid].config == c]
    pl = placer.place(cluster, chosen, prev, pinned)
    bad = [(j, w) for j in pl.unplaced if isinstance(j, str) and isinstance(w := chosen.get(j), Config)]
    if bad and cluster.uniform:  # unequal nodes: fragmentation the policy's capacity rows cannot see; it waits
        raise InputError(f"policy[{pname}].allocation[{bad[0][0]}]", bad[0][1].label,
                         f"cannot be placed on the cluster next to the other jobs (placer {placer.name})")
    _check_placement(cluster, pname, placer, chosen, pl)
    return pl, len(pl.unplaced)


def _check_placement(cluster: Cluster, pname: str, placer: Placer, chosen: Mapping[str, Config | GpuRequest],
                     pl: Placement) -> None:
    """A placer is user code too: its placement must give each job what it asked for, on one GPU type, within
    every node's GPUs, with no GPU given twice."""
    ntype = _node_types_of(cluster)
    seen: dict[str, set[int]] = {}  # node -> GPUs given so far
    configs = pl.configs
    for jid, slots in pl.assignments.items():
        want = chosen.get(jid) if isinstance(jid, str) else None  # the simulator's job ids are strings
        if want is None:
            raise InputError(f"placer[{placer.name}].assignments[{jid}]", slots,
                             f"places a job policy {pname} did not ask to place")
        n = 0
        t0: str | None = None  # the type of the job's first non-empty slot
        mixed = False          # another type among its non-empty slots
        for nid, gs in slots:
            nt = ntype.get(nid) if isinstance(nid, str) else None
            if nt is None:
                raise InputError(f"placer[{placer.name}].assignments[{jid}]", nid, "names no node of the cluster")
            used = seen.get(nid)
            if used is None:
                used = seen[nid] = set()
            R = nt[1]
            if gs and (min(gs) < 0 or max(gs) >= R or not used.isdisjoint(gs) or len(set(gs)) != len(gs)):
                for g in gs:  # the first GPU out of the node or given twice
                    if not (0 <= g < R) or g in used:
                        raise InputError(f"placer[{placer.name}].assignments[{jid}]", (nid, g),
                                         "is not a free GPU of the node")
                    used.add(g)
            used.update(gs)
            if gs:
                if t0 is None:
                    t0 = nt[0]
                elif nt[0] != t0:
                    mixed = True
            n += len(gs)
        wt = want.gpu_type
        if n != (want.n_gpus if isinstance(want, Config) else want.gpus) or t0 is None or mixed or (
                wt is not None and t0 != wt):
            raise InputError(f"placer[{placer.name}].assignments[{jid}]", slots,
                             f"does not give the job what it asked for ({want})")
        if jid not in configs:
            raise InputError(f"placer[{placer.name}].configs", jid, "has no configuration for a placed job")


@dataclass(frozen=True)
class RoundDecision:
    """One round's decision, checked and placed by :func:`decide_round` (before any job state changes)."""

    state: RoundState        #: what the policy saw
    decision: Decision       #: what it answered
    placement: Placement     #: where every placed job runs now (unchanged jobs keep their GPUs)
    waiting: int             #: GPU requests the placer could not place this round (they wait)
    wall_seconds: float      #: the policy's wall time
    cpu_seconds: float       #: the policy's CPU time


def decide_round(policy: Policy, pname: str, plc: Placer, cluster: Cluster, active: dict[str, JobState],
                 placement: Placement | None, t: float, k: int, R: float,
                 views: tuple[JobView, ...] | None = None) -> RoundDecision:
    """One round's decision step (the simulator's and :class:`schedopt.live.Session`'s): show the policy the
    active jobs (``views``, default the job model's :func:`job_view`), check its :class:`Decision` (a bad one names
    policy and job) and place it with ``plc`` (jobs whose request is unchanged keep their GPUs)."""
    state = RoundState(time=t, round_index=k, round_seconds=R, cluster=cluster,
                       jobs=tuple(job_view(j, t) for j in active.values()) if views is None else views,
                       placement=_policy_copy(placement))
    t0, c0 = time.perf_counter(), time.process_time()
    decision = policy.decide(state)
    dt, dc = time.perf_counter() - t0, time.process_time() - c0
    if not isinstance(decision, Decision):
        raise InputError(f"policy[{pname}].decide", type(decision).__name__, "must return a Decision")
    _check_containers(pname, decision)
    if decision.answer is not None and decision.answer.termination.limit is Limit.INTERRUPTED:
        # a solver's own Ctrl-C handling returned its incumbent: the user asked to stop, so stop the simulation
        raise KeyboardInterrupt(f"policy {pname}'s solve was interrupted in round {k}")
    requests = decision.requests or {}
    if decision.nodes is not None and (decision.allocation is not None or requests):
        raise InputError(f"policy[{pname}].decision", "nodes and allocation/requests",
                         "give node maps, or configurations and GPU requests, not both")
    waiting = 0
    if decision.nodes is not None:
        placement = _from_nodes(cluster, pname, decision.nodes, active, placement, decision.colocate)
    else:
        if decision.colocate:
            raise InputError(f"policy[{pname}].colocate", dict(decision.colocate), "needs a `nodes` decision")
        placement, waiting = _from_allocation(cluster, pname, decision.allocation or {}, requests, active,
                                              placement, plc)
    rates, restarts = decision.rate or {}, decision.restart or {}
    for hook, vals in (("rate", rates), ("restart", restarts)):
        for jid, v in vals.items():
            if jid not in active or not (isinstance(v, (int, float)) and math.isfinite(v) and v >= 0):
                raise InputError(f"policy[{pname}].{hook}[{jid}]", v, "must name an active job and be a number >= 0")
    return RoundDecision(state, decision, placement, waiting, dt, dc)


def apply_decision(active: dict[str, JobState], rd: RoundDecision, t: float, extra: float, jm: JobModel) -> None:
    """Carry a checked round decision into the jobs' state: nodes, configuration, checkpoint-restore delay (the
    decision's ``restart`` or the job model's, plus ``extra``), restart count, start time, growth rule and batch."""
    decision, placement = rd.decision, rd.placement
    rates, restarts = decision.rate or {}, decision.restart or {}
    where = placement.assignments
    for j in active.values():
        j.share = float(rates.get(j.id, 1.0)) if rates else 1.0
        slots = where.get(j.id, ())
        held = j.nodes
        if len(slots) == 1 == len(held):  # (the common case without the map: one node before and now)
            n, g = slots[0]
            if held.get(n) == len(g):
                continue
        elif not slots and not held:
            continue
        new = {n: len(g) for n, g in slots}
        if new == held:
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


_P = ParamSpec("_P")
_R = TypeVar("_R")


def _one_blas_thread(fn: Callable[_P, _R]) -> Callable[_P, _R]:
    """``fn`` run under :func:`schedopt.goodput.blas_threads` ``(1)``: a simulation's numerical work is on vectors of
    tens of elements, where OpenBLAS's threads only spin (about 1 s of CPU on saturn/1 under ``sia-measured``)."""

    @functools.wraps(fn)
    def run(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        with blas_threads(1):
            return fn(*args, **kwargs)

    return run


@_one_blas_thread
def simulate(
    cluster: Cluster,
    workload: Workload,
    policy: Policy,
    *,
    round_seconds: float = DEFAULT_ROUND_SECONDS,
    job_model: str | JobModel = "pollux",
    adaptive: bool | None = None,
    charge_policy_time: bool = False,
    estimator: str = "bootstrap",
    max_time: float | None = None,
    progress: bool | None = None,
    label: str = "",
    observer: Observer | None = None,
    placer: Placer | str | None = None,
    admission: Admission | str | None = None,
    sink: RecordSink | None = None,
) -> SimResult:
    """Replay ``workload`` on ``cluster`` under ``policy``; per-job and per-round records in a :class:`SimResult`.

    ``job_model``: ``"pollux"`` or ``"sia"`` (:data:`~schedopt.sim.jobs.POLLUX` / :data:`~schedopt.sim.jobs.SIA`,
    restart delays and calibration) or a :class:`~schedopt.sim.jobs.JobModel`. ``adaptive``: whether jobs adapt GPUs
    and batch size (default: the policy's ``adaptive`` attribute, else False: the workload's requests run as rigid
    jobs). ``charge_policy_time``: every job whose placement changes also waits the policy's
    wall time of that round (capped at the round). ``estimator``: what the policy sees of each adaptive job's
    throughput (:func:`~schedopt.sim.jobs.goodput_estimate`): ``"bootstrap"`` (default; Sia's online estimate from
    1-GPU profiles, refitted to the configurations the job has run on) or ``"oracle"`` (the true model).
    ``max_time``: stop there (default: last arrival + 60 days); a run that stops with unfinished jobs warns and says
    so in its meta (``capped``, ``unfinished``, ``end_time``). ``progress``: a progress line on stderr (default: only
    on a terminal). ``observer``: called after every round as ``observer(rounds_done, sim_time_s, jobs_finished,
    jobs_total)`` (heartbeats of sweeps; it must not raise). ``placer``: maps configurations and GPU requests onto
    GPUs (:class:`~schedopt.sim.roles.Placer`, a registered name; default ``sia``). ``admission``: accepts, defers or
    rejects arriving jobs (:class:`~schedopt.sim.roles.Admission`, a registered name; default ``accept-all``).
    ``sink``: records streamed as the run makes them (:class:`~schedopt.sim.records.RecordStream`): each job's
    :class:`~schedopt.sim.JobRecord` when it finishes (the unfinished ones at the end), each
    :class:`~schedopt.sim.RoundRecord` when its round ends; the result then holds the meta and no job or round,
    and the run holds only the active jobs in memory.
    The whole run is on one BLAS thread (:func:`schedopt.goodput.blas_threads`; the pools are restored after).

    A policy may have ``stable_until(state, decision) -> float``: the engine then reuses a node-level decision
    without asking, in every round that starts before that time while no job arrives or finishes (a quiet round:
    the same record, with ``policy_seconds`` 0). FIFO and Tiresias have it; it must promise only what asking every
    round would give (``tests/test_sim_quiet_rounds.py`` checks both).

    Examples
    --------
    >>> from schedopt import sim
    >>> from schedopt.traces.named import shipped_trace
    >>> workload = sim.generate_workload(shipped_trace("philly"), jobs=16, load=1.0, window_h=2, seed=0)
    >>> res = sim.simulate(sim.cluster_preset("sia-64"), workload, sim.get_policy("fifo"))
    >>> s = res.summary()
    >>> s["jobs"], s["finished"], round(s["avg_jct_s"]), round(s["makespan_s"])
    (16, 16, 549, 4464)
    """
    if not isinstance(cluster, Cluster):
        raise InputError("cluster", type(cluster).__name__, "must be a schedopt.sia.Cluster")
    if not isinstance(workload, Workload):
        raise InputError("workload", type(workload).__name__, "must be a schedopt.sim.Workload")
    if isinstance(policy, type):
        raise InputError("policy", policy.__name__, f"is a class: pass an instance ({policy.__name__}()) or a name")
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
    plc = make_placer(placer) if placer is None or isinstance(placer, str) else placer
    adm = make_admission(admission) if admission is None or isinstance(admission, str) else admission
    if not callable(getattr(plc, "place", None)):
        raise InputError("placer", type(plc).__name__, "must have place(cluster, want, previous, pinned)")
    if not callable(getattr(adm, "admit", None)):
        raise InputError("admission", type(adm).__name__, "must have admit(job, state) -> Verdict")
    # a sweep's worker streams the records and may checkpoint the run (schedopt.sim.checkpoint)
    hooks = take_run_hooks() if sink is None else None
    ckpt = None if hooks is None else hooks.checkpoint
    if hooks is not None:
        sink = hooks.stream
    if ckpt is not None:
        ckpt.check_roles(policy, plc, adm)
    pname = str(getattr(policy, "name", type(policy).__name__))
    if adaptive is None:
        adaptive = bool(getattr(policy, "adaptive", False))
    R = float(round_seconds)
    wjobs = workload.jobs
    N = len(wjobs)

    def new_job(w: Any) -> JobState:
        return JobState(w.name, w.application, w.time, w.num_replicas, w.batch_size, adaptive, jm, estimator=estimator)

    biggest = max(t.total_gpus for t in cluster.gpu_types)
    for k, w in enumerate(wjobs):
        j = new_job(w)
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
    last = max((w.time for w in wjobs), default=0.0)
    stop = last + 60 * 86400.0 if max_time is None else float(max_time)
    bar = _Progress(progress, N, label or f"{pname} on {workload.name}")
    rounds: list[RoundRecord] = []
    placement: Placement | None = None
    active: dict[str, JobState] = {}
    pending: list[JobState] = []  # arrived, not yet admitted (the admission rule deferred them)
    accept_all = isinstance(adm, AcceptAll)
    rejected: list[str] = []
    nxt, done, k = 0, 0, 0
    t = 0.0
    capped = False
    # quiet rounds (a policy's optional ``stable_until``): the last decision stands, unasked, until then
    stable = getattr(policy, "stable_until", None)
    stable = stable if callable(stable) else None
    quiet_until, changed, last_rec = -math.inf, True, None
    n_rounds, last_time = 0, 0.0
    # the jobs that have arrived, in arrival order (streamed: those not yet written); made at arrival, so that a
    # streamed run holds the active jobs, not the trace
    arrived: dict[str, JobState] = {}
    finished_n, last_finish = 0, 0.0
    got = None if ckpt is None else ckpt.restore(cluster, jm)
    if got is not None:  # resumed: the loop's state, every arrived job and the roles as the checkpoint saved them
        (placement, active, pending, rejected, nxt, done, k, quiet_until, changed, last_rec, n_rounds, last_time,
         arrived, finished_n, last_finish) = got["loop"]
        policy, plc, adm = got["roles"]
        stable = getattr(policy, "stable_until", None)
    while done < N:
        t = k * R
        if t > stop:
            capped = True
            break
        while nxt < N and wjobs[nxt].time <= t:
            j = new_job(wjobs[nxt])
            arrived[j.id] = j
            pending.append(j)
            nxt += 1
        if pending:
            changed = True
            if accept_all:
                for j in pending:
                    active[j.id] = j
                pending = []
            else:
                done += admit_pending(adm, cluster, pending, active, rejected, t)
        if not active:  # idle: jump to the first round at or after the next arrival
            if pending or nxt >= N:
                k += 1
            else:
                k = max(k + 1, math.ceil(wjobs[nxt].time / R))
            changed = True
            continue
        if changed or pending or t >= quiet_until or last_rec is None:
            rd = decide_round(policy, pname, plc, cluster, active, placement, t, k, R)
            decision, placement, waiting = rd.decision, rd.placement, rd.waiting
            dt, dc = rd.wall_seconds, rd.cpu_seconds
            extra = min(dt, R) if charge_policy_time else 0.0
            apply_decision(active, rd, t, extra, jm)
            quiet_until = (float(stable(rd.state, decision)) if stable is not None and decision.nodes is not None
                           else -math.inf)
            rec = RoundRecord.of(k, t, dt, len(rd.state.jobs), decision, dc)
            if waiting:
                rec = RoundRecord(rec.index, rec.time, rec.policy_seconds, rec.active, rec.answer,
                                  {**rec.info, "unplaced_requests": waiting}, rec.policy_cpu_seconds)
            last_rec = rec
        else:  # a quiet round: nothing arrived or finished and the policy said its decision stands until then
            rec = dataclasses.replace(last_rec, index=k, time=t, policy_seconds=0.0, policy_cpu_seconds=0.0)
        finished = []
        for jid, j in active.items():
            j.advance(t, R)
            if j.finish is not None:
                finished.append(jid)
        for jid in finished:
            j = active.pop(jid)
            last_finish = max(last_finish, j.finish or 0.0)
            if sink is not None:
                sink.job(JobRecord.of(arrived.pop(jid)))
        done += len(finished)
        finished_n += len(finished)
        changed = bool(finished)
        if finished and placement is not None:  # (a job that ran was placed: never None here)
            placement = Placement(assignments={j: s for j, s in placement.assignments.items() if j in active},
                                  configs={j: c for j, c in placement.configs.items() if j in active})
        n_rounds += 1
        if sink is None:
            rounds.append(rec)
        else:
            sink.round(rec)
        bar.update(t + R, done)
        if observer is not None:
            observer(n_rounds, t + R, done, N)
        last_time = t
        k += 1
        if ckpt is not None and ckpt.due(n_rounds):
            ckpt.save({"loop": (placement, active, pending, rejected, nxt, done, k, quiet_until, changed, last_rec,
                                n_rounds, last_time, arrived, finished_n, last_finish),
                       "roles": (policy, plc, adm), "rounds": n_rounds, "time": t + R}, cluster, jm)
    bar.close(t, done)
    rest = list(arrived.values()) + [new_job(w) for w in wjobs[nxt:]]  # streamed: the unfinished only
    unfinished = N - finished_n - len(rejected)
    end_time = (last_time + R) if capped and n_rounds else last_finish
    if capped and unfinished:
        warnings.warn(f"simulation {label or f'{pname} on {workload.name}'} stopped at its time cap "
                      f"(t = {stop / 3600:.4g} h) with {unfinished} of {N} jobs unfinished",
                      RuntimeWarning, stacklevel=2)
    meta = SimMeta(
        policy=pname,
        workload=workload.name,
        cluster={t.name: (t.nodes, t.gpus_per_node) for t in cluster.gpu_types},
        gpus=cluster.num_gpus,
        round_seconds=R,
        job_model=jm.name,
        adaptive=adaptive,
        charge_policy_time=charge_policy_time,
        estimator=estimator,
        placer=role_name(plc, placer if placer is not None else "sia"),
        admission=role_name(adm, admission if admission is not None else "accept-all"),
        capped=capped and unfinished > 0,
        unfinished=unfinished,
        rejected=len(rejected),
        end_time=float(end_time),
    )
    rej = set(rejected)
    for j in rest:
        j.rejected = j.id in rej
    if sink is not None:  # streamed: the unfinished jobs' records last; the result holds no job or round
        for j in rest:
            sink.job(JobRecord.of(j))
        if hooks is not None:  # a sweep's run: its jobs and rounds read back from the spools, in the workload's order
            return hooks.stream.result(meta, hopeless, [w.name for w in wjobs])
        return SimResult(meta=meta, jobs=(), rounds=(), hopeless=hopeless)
    return SimResult(meta=meta, jobs=tuple(JobRecord.of(j) for j in rest), rounds=tuple(rounds),
                     hopeless=hopeless)


def admit_pending(adm: Admission, cluster: Cluster, pending: list[JobState], active: dict[str, JobState],
                  rejected: list[str], t: float, view: Callable[[JobState, float], JobView] = job_view) -> int:
    """Ask ``adm`` about every pending job in arrival order; move the accepted to ``active`` (in place). Returns the
    number rejected now (they count as done). ``view``: what the rule sees of a job (a live session: measured)."""
    views = [view(j, t) for j in active.values()]
    queued = sum(1 for j in active.values() if not j.nodes)
    keep: list[JobState] = []
    n_rej = 0
    for j in pending:
        v = view(j, t)
        verdict = adm.admit(v, AdmissionState(time=t, cluster=cluster, admitted=tuple(views), queued=queued))
        if not isinstance(verdict, Verdict):
            raise InputError(f"admission[{getattr(adm, 'name', type(adm).__name__)}].admit[{j.id}]", verdict,
                             "must return a schedopt.sim.roles.Verdict (ACCEPT, DEFER or REJECT)")
        if verdict is ACCEPT:
            active[j.id] = j
            views.append(v)
            queued += 1
        elif verdict is REJECT:
            rejected.append(j.id)
            n_rej += 1
        else:
            keep.append(j)
    pending[:] = keep
    return n_rej
