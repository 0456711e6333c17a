"""A scheduling session over a live cluster: events in, one checked plan per decision out (see :mod:`schedopt.live`).

The session runs the simulator's own decision step (:func:`schedopt.sim.engine.decide_round`, then
:func:`~schedopt.sim.engine.apply_decision`) over the jobs as they are measured: what a policy sees of a job
(:class:`~schedopt.sim.JobView`) is built from the job's reported progress and measurements instead of the
simulator's job model, and the plan is written in the cluster's own node names and GPU indices.
"""

from __future__ import annotations

import base64
import dataclasses
import gc
import hashlib
import math
import operator
import os
import pickle
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, cast

from ..errors import InputError
from ..goodput import JobGoodputModel, blas_threads
from ..sia import Cluster, Config, GpuType, Placement
from ..sia.spec import JobId
from ..sim.engine import DEFAULT_ROUND_SECONDS, RoundDecision, admit_pending, apply_decision, decide_round, job_view
from ..sim.jobs import Application, JobModel, JobState, fitted_estimate, prior_estimate
from ..sim.jobs import job_model as get_job_model
from ..sim.policies import make_policy
from ..sim.policies.base import JobView, Policy
from ..sim.roles import AcceptAll, Admission, Placer, make_admission, make_placer
from .jobstate import LiveJobState, estimate_at_epoch, profile_application, with_reported_stats
from .persist import SCHEMA, VERSION, read_document, write_document
from .plan import Action, JobPlan, Plan, mark_reused
from .state import (
    ClusterState,
    Event,
    JobCancelled,
    JobFailed,
    JobFinished,
    JobProgress,
    JobSubmitted,
    LiveJob,
    Measurement,
    NodeDown,
    NodeDrained,
    NodeState,
    NodeUp,
    NodeUpdated,
)

__all__ = ["Action", "JobPlan", "Plan", "Session"]  # the plan types re-exported from .plan

Slots = list[tuple[str, tuple[int, ...]]]
#: one measurement as the session keeps it: (``Measurement.key``, (step time, sync time))
MeasuredPair = tuple[tuple[str, int, int, int], tuple[float, float]]


def _pairs(measurements: Sequence[Measurement]) -> list[MeasuredPair]:
    """The measurements as (key, (step time, sync time)) pairs, in order."""
    return [(m.key, (m.step_time, m.sync_time)) for m in measurements]


# ----------------------------------------------------------------------------------------------------- the layout


@dataclass(frozen=True)
class _Layout:
    """The cluster a policy sees (usable GPUs only) and the map between its node ids / GPU indices and the live
    cluster's node names / GPU indices."""

    cluster: Cluster
    name_of: Mapping[str, str]                     # policy node id -> live node name (the same names)
    id_of: Mapping[str, str]                       # live node name -> policy node id
    phys: Mapping[str, tuple[int, ...]]            # policy node id -> live GPU index of each of its GPUs
    logical: Mapping[str, Mapping[int, int]]       # live node name -> live GPU index -> policy GPU index
    drained: frozenset[str]                        # live names of drained nodes

    plain: bool = False                            # no GPU renumbered: the maps are the identity

    def to_policy(self, slots: Slots) -> Slots:
        if self.plain:
            return list(slots)
        return [(self.id_of[n], tuple(self.logical[n][g] for g in gs)) for n, gs in slots]

    def to_live(self, slots: Slots) -> Slots:
        if self.plain:
            return list(slots)
        return [(self.name_of[n], tuple(self.phys[n][g] for g in gs)) for n, gs in slots]


def _layout(cs: ClusterState, held: Mapping[str, set[int]]) -> _Layout:
    """The policy's cluster (:class:`schedopt.cluster.Cluster` with the live node names): up nodes with their
    healthy GPUs, drained nodes with the healthy GPUs jobs hold there (none: left out), down nodes left out. A
    type's nominal node size is its largest node's; a node with failed GPUs is a smaller node, its GPUs renumbered
    past the failed ones (the plan maps them back)."""
    per_type: dict[str, list[tuple[NodeState, tuple[int, ...]]]] = {t: [] for t in cs.gpu_types}
    nominal: dict[str, int] = dict.fromkeys(cs.gpu_types, 1)
    for n in cs.nodes:
        nominal[n.gpu_type] = max(nominal[n.gpu_type], n.gpus)
        if n.health == "down":
            continue
        gs = n.healthy_gpus
        if n.health == "drained":
            gs = tuple(g for g in gs if g in held.get(n.name, ()))
        if gs:
            per_type[n.gpu_type].append((n, gs))
    types = []
    name_of: dict[str, str] = {}
    phys: dict[str, tuple[int, ...]] = {}
    logical: dict[str, dict[int, int]] = {}
    for t in cs.gpu_types:
        nodes = per_type[t]
        types.append(GpuType(t, nominal[t], len(nodes), tuple(n.name for n, _ in nodes),
                             tuple(len(gs) for _, gs in nodes)))
        for n, gs in nodes:
            name_of[n.name], phys[n.name] = n.name, gs
            logical[n.name] = {g: i for i, g in enumerate(gs)}
    plain = all(gs == tuple(range(len(gs))) for gs in phys.values())
    return _Layout(Cluster(tuple(types)), name_of, name_of, phys, logical,
                   frozenset(n.name for n in cs.nodes if n.health == "drained"), plain)


# ---------------------------------------------------------------------------------------------------- the session

_PLAN_FIELDS = tuple(f.name for f in dataclasses.fields(JobPlan))
_PLAN_PLAIN = not hasattr(JobPlan, "__post_init__") and len(_PLAN_FIELDS) == 9


def _job_plan_of(*values: Any) -> JobPlan:
    """``JobPlan(*values)`` (all nine fields): a frozen dataclass without checks, filled at once (a decision at
    2,048 GPUs makes 4,096)."""
    if not _PLAN_PLAIN:
        return JobPlan(*values)
    p = object.__new__(JobPlan)
    p.__dict__.update(zip(_PLAN_FIELDS, values))
    return p



_plan_values = operator.attrgetter(*_PLAN_FIELDS)
#: whether a plan entry equal to the last plan's is that object (Session._job_plans; False: every entry a new
#: object, the reference the tests compare the kept entries with)
_KEEP_ENTRIES = True


def _same_plan(a: JobPlan, b: JobPlan) -> bool:
    """Whether the job entries ``a`` and ``b`` are equal field for field (the dataclass's ``==``, without its
    type check)."""
    return a is b or bool(_plan_values(a) == _plan_values(b))


class Session:
    """A scheduling session over a live cluster (see :mod:`schedopt.live`).

    ``cluster``: a :class:`ClusterState` (or a :class:`schedopt.sia.Cluster`: its ``<type>-<k>`` nodes).
    ``policy``, ``placer``, ``admission``: the simulator's objects or specs (``"sia"``, ``"tiresias"``,
    ``"mymod:MyPolicy:k=3"``; defaults ``sia``, Sia's placer, accept-all). ``round_duration``: the policy's round
    (seconds between decisions; the policies' ``round_seconds``). ``job_model``: restart costs, GPU caps and the
    applications' curves (``"pollux"`` as :func:`schedopt.sim.simulate`, ``"sia"``, or a JobModel).
    ``estimator``: ``"bootstrap"`` (the profile refitted to what each job measured) or ``"oracle"`` (the
    profile itself). ``adaptive``: whether jobs adapt (default: the policy's ``adaptive`` attribute).
    ``state_path``: where :meth:`save` writes after every decision (None: not saved).

    Examples
    --------
    >>> from schedopt.live import ClusterState, NodeState, LiveJob, JobSubmitted, Session
    >>> s = Session(ClusterState((NodeState("n1", "a100", 8),)), "tiresias")
    >>> s.apply(JobSubmitted(0.0, LiveJob("j1", "cifar10", submitted=0.0, requested_gpus=2)))
    >>> plan = s.decide(now=60.0)
    >>> plan.jobs["j1"].action.value, plan.jobs["j1"].placement
    ('start', {'n1': (0, 1)})
    """

    VERSION = 1

    def __init__(self, cluster: ClusterState | Cluster, policy: Policy | str = "sia", *,
                 placer: Placer | str | None = None, admission: Admission | str | None = None,
                 round_duration: float = DEFAULT_ROUND_SECONDS, job_model: str | JobModel = "pollux",
                 estimator: str = "bootstrap", adaptive: bool | None = None,
                 state_path: str | os.PathLike[str] | None = None) -> None:
        if isinstance(cluster, Cluster):
            cluster = ClusterState.from_cluster(cluster)
        if not isinstance(cluster, ClusterState):
            raise InputError("cluster", type(cluster).__name__, "must be a schedopt.live.ClusterState")
        if isinstance(round_duration, bool) or not isinstance(round_duration, (int, float)) or not (
                math.isfinite(round_duration) and 1e-3 <= round_duration <= 86400 * 7):
            raise InputError("round_duration", round_duration, "must be a number of seconds in [0.001, 604800]")
        if estimator not in ("bootstrap", "oracle"):
            raise InputError("estimator", estimator, "must be 'bootstrap' or 'oracle'")
        if adaptive is not None and not isinstance(adaptive, bool):
            raise InputError("adaptive", adaptive, "must be true, false or None")
        if isinstance(state_path, os.PathLike):
            state_path = os.fspath(state_path)
        if state_path is not None and not isinstance(state_path, str):
            raise InputError("state_path", state_path, "must be a path or None")
        if state_path is not None and not os.path.isdir(os.path.dirname(os.path.abspath(state_path))):
            raise InputError("state_path", state_path, f"its folder {os.path.dirname(os.path.abspath(state_path))!r} "
                             "does not exist (the session saves there after every decision; create it first)")
        self.specs = {k: v if isinstance(v, str) or v is None else None
                      for k, v in (("policy", policy), ("placer", placer), ("admission", admission))}
        self.policy: Policy = make_policy(policy) if isinstance(policy, str) else policy
        if not callable(getattr(self.policy, "decide", None)):
            raise InputError("policy", type(self.policy).__name__, "must have decide(state) -> Decision")
        self.placer: Placer = make_placer(placer) if placer is None or isinstance(placer, str) else placer
        if not callable(getattr(self.placer, "place", None)):
            raise InputError("placer", type(self.placer).__name__, "must have place(cluster, want, previous, pinned)")
        self.admission: Admission = (make_admission(admission) if admission is None or isinstance(admission, str)
                                     else admission)
        if not callable(getattr(self.admission, "admit", None)):
            raise InputError("admission", type(self.admission).__name__, "must have admit(job, state) -> Verdict")
        self.policy_name = str(getattr(self.policy, "name", type(self.policy).__name__))
        self.round_duration = float(round_duration)
        self.base_job_model = get_job_model(job_model)
        self.jm = self.base_job_model
        self._apps: dict[str, tuple[Application, JobGoodputModel]] = {}
        self.estimator = estimator
        self.adaptive = bool(getattr(self.policy, "adaptive", False)) if adaptive is None else adaptive
        self.state_path = state_path
        self.cluster_state = cluster
        self.jobs: dict[str, LiveJobState] = {}      # admitted (running or queued), in admission order
        self.pending: list[LiveJobState] = []        # submitted, not yet admitted (deferred, or arrived later)
        self.where: dict[str, Slots] = {}          # job -> [(node name, GPU indices)], in the placement's order
        self.configs: dict[str, Config] = {}       # job -> configuration it runs in
        self.closed: dict[str, str] = {}           # job -> "finished" | "failed" | "cancelled" | "rejected"
        self.time: float | None = None             # the last decision's time
        self.round_index = -1
        self.plan: Plan | None = None
        self.last_round: RoundDecision | None = None
        self._events_time = 0.0
        self._dirty = True
        self._layout_cache: tuple[tuple[Any, ...], _Layout] | None = None
        self._used: tuple[dict[str, Slots], int] | None = None  # (where, the GPUs it holds): for summary()
        self._largest: tuple[ClusterState, int] | None = None  # (cluster state, _largest_type())
        self._pending_memo: tuple[list[LiveJobState], int, set[str]] | None = None  # (pending, its length, ids)
        self._new_rejects: list[str] = []
        #: per job id (Session.view): (the job, its job model, the job's last view, the node map it was made from,
        #: the most GPUs the job had run on then)
        self._views: dict[str, tuple[LiveJobState, JobModel, JobView, dict[str, int], int]] = {}
        #: per job id (_round): (the job's entry in the last plan, what it was made from: action, slots,
        #: configuration, node map, running configuration, local batch, accumulation, restart delay charged)
        self._plan_inputs: dict[str, tuple[JobPlan, tuple[Any, ...]]] = {}
        #: (layout, per job id (_sync_nodes): (its slots, the node map made from them)), both as objects
        self._synced: tuple[_Layout | None, dict[str, tuple[Slots | None, dict[str, int]]]] = (None, {})

    # ------------------------------------------------------------------------------------------------ events
    def apply(self, event: Event) -> None:
        """Take one event into the state (validated first: a bad event changes nothing)."""
        if not isinstance(event, (JobSubmitted, JobFinished, JobFailed, JobCancelled, JobProgress, NodeDown, NodeUp,
                                  NodeDrained, NodeUpdated)):
            raise InputError("event", type(event).__name__, "must be a schedopt.live event")
        if self.time is not None and event.time < self.time:
            raise InputError("event.time", event.time, f"is before the last decision (t = {self.time:g})")
        if isinstance(event, JobSubmitted):
            self._submit(event.job)
        elif isinstance(event, (JobFinished, JobFailed, JobCancelled)):
            j = self._job(event.job_id, "event.job_id")
            self._drop(j.id, {JobFinished: "finished", JobFailed: "failed", JobCancelled: "cancelled"}[type(event)])
        elif isinstance(event, JobProgress):
            self._progress(event)
        elif isinstance(event, NodeUpdated):
            self._set_node(event.state)
        else:
            node = self.cluster_state.node(event.node)
            health = {NodeDown: "down", NodeUp: "up", NodeDrained: "drained"}[type(event)]
            self._set_node(dataclasses.replace(node, health=health))
        self._events_time = max(self._events_time, event.time)
        self._dirty = True
        self._used = None  # (the event may have changed the placement in place)

    def _job(self, jid: str, who: str) -> LiveJobState:
        j = self.jobs.get(jid)
        if j is None:
            j = next((p for p in self.pending if p.id == jid), None)
        if j is None:
            why = f"is {self.closed[jid]} already" if jid in self.closed else "names no job of the session"
            raise InputError(who, jid, why)
        return j

    def _submit(self, job: LiveJob) -> None:
        jid = job.id
        if jid in self.jobs or jid in self.closed or jid in self._pending_ids():
            raise InputError("job.id", jid, "is the id of a job the session has already")
        app = job.application
        if job.profile is not None:
            have = self._apps.get(app)
            if have is not None and have[1] != job.profile:
                raise InputError(f"job[{jid}].profile", app, "differs from the profile of that name the session has")
            if have is None and app in self.base_job_model.apps:
                raise InputError(f"job[{jid}].application", app, "names an application of the job model")
            if have is None:
                self._apps[app] = (profile_application(job.profile), job.profile)
                self.jm = dataclasses.replace(self.base_job_model, apps={**self.base_job_model.apps, **self._apps})
        jm = self.jm
        try:
            truth = jm.truth(app)
        except InputError as e:
            raise InputError(f"job[{jid}].application", app, e.message) from None
        missing = [t for t in self.cluster_state.gpu_types if t not in truth.params]
        if missing:
            raise InputError(f"job[{jid}].application", app, f"has no throughput model on {missing}")
        batch = job.batch_size if job.batch_size is not None else int(truth.init_batch)
        j = LiveJobState(jid, app, job.submitted, job.requested_gpus, batch, self.adaptive, jm, estimator=self.estimator,
                       live_kind=job.kind)
        j.frac, j.epoch, j.restarts, j.attained = job.progress, job.epoch, job.restarts, job.attained_gpu_seconds
        for m in job.measurements:
            self._measure(j, m, f"job[{jid}].measurements")
        rs = j.rigid_shape
        biggest = self._largest_type()
        if rs is not None and rs[0] > biggest:
            raise InputError(f"job[{jid}].requested_gpus", rs[0],
                             f"no GPU type of the cluster has that many GPUs (largest: {biggest})")
        if job.placement:
            slots = self._check_slots(jid, job.placement)
            t = self.cluster_state.node(slots[0][0]).gpu_type
            c = Config(len(slots), sum(len(g) for _, g in slots), t)
            j.started, j.start, j.config = True, job.submitted, c
            j.max_profiled = max(j.max_profiled, c.n_gpus)  # the growth rule counts what it runs on now
            self.where[jid], self.configs[jid] = slots, c
            j.nodes = {n: len(g) for n, g in slots}
            j.rebatch()  # the batch its profile gives there (until the job reports its own)
        ids = self._pending_ids()
        self.pending.append(j)
        ids.add(jid)
        self._pending_memo = (self.pending, len(self.pending), ids)

    def _pending_ids(self) -> set[str]:
        """The ids of the pending jobs (kept while ``pending`` is the same list of the same length: it is only
        appended to, by :meth:`_submit`, or replaced; a batch of 4,096 submissions looked through it 4,096 times)."""
        memo = self._pending_memo
        p = self.pending
        if memo is None or memo[0] is not p or memo[1] != len(p):
            memo = self._pending_memo = (p, len(p), {j.id for j in p})
        return memo[2]

    def _largest_type(self) -> int:
        """The healthy GPUs of the GPU type that has the most (kept per cluster state: a batch of 4,096 submissions
        at 2,048 GPUs counted them 4,096 times, ~2.5 s)."""
        cs = self.cluster_state
        memo = self._largest
        if memo is None or memo[0] is not cs:
            memo = self._largest = (cs, max((sum(len(n.healthy_gpus) for n in cs.nodes if n.gpu_type == t)
                                             for t in cs.gpu_types), default=0))
        return memo[1]

    def _check_slots(self, jid: str, placement: Mapping[str, tuple[int, ...]]) -> Slots:
        """A reported placement checked against the cluster and the other jobs' GPUs."""
        who = f"job[{jid}].placement"
        taken = {(n, g) for s in self.where.values() for n, gs in s for g in gs}
        types = set()
        for n, gs in placement.items():
            try:
                node = self.cluster_state.node(n)
            except InputError:
                raise InputError(f"{who}[{n}]", list(gs), "names no node of the cluster") from None
            if node.health == "down":
                raise InputError(f"{who}[{n}]", list(gs), "is a node that is down")
            for g in gs:
                if g >= node.gpus or g in node.failed_gpus:
                    raise InputError(f"{who}[{n}]", g, f"is not a healthy GPU of node {n}")
                if (n, g) in taken:
                    raise InputError(f"{who}[{n}]", g, "is a GPU another job holds")
            types.add(node.gpu_type)
        if len(types) > 1:
            raise InputError(who, dict(placement), f"spans GPU types {sorted(types)}")
        return [(n, tuple(gs)) for n, gs in sorted(placement.items())]

    def _measure(self, j: LiveJobState, m: Any, who: str) -> None:
        if m.gpu_type not in self.cluster_state.gpu_types:
            raise InputError(f"{who}.gpu_type", m.gpu_type, "names no GPU type of the cluster")
        j.measured[m.key] = (m.step_time, m.sync_time)
        j.max_profiled = max(j.max_profiled, m.gpus)
        j.seen = tuple(sorted(j.measured))
        j.observations = None

    def _progress(self, e: JobProgress) -> None:
        j = self._job(e.job_id, "event.job_id")
        for k, m in enumerate(e.measurements):  # checked before anything changes
            if m.gpu_type not in self.cluster_state.gpu_types:
                raise InputError(f"event.measurements[{k}].gpu_type", m.gpu_type, "names no GPU type of the cluster")
        self._progress_row(j, e.progress, e.epoch, _pairs(e.measurements), e.local_batch, e.accumulation,
                           e.attained_gpu_seconds, e.grad_sqr, e.grad_var)

    def _progress_row(self, j: LiveJobState, progress: float | None, epoch: int | None,
                      measurements: Sequence[MeasuredPair], local_batch: int | None, accumulation: int | None,
                      attained: float | None, grad_sqr: float | None, grad_var: float | None) -> None:
        """One progress report taken into job ``j`` (checked before: it changes the job, it raises nothing); its
        measurements as (key, (step time, sync time)) pairs (:func:`_pairs`)."""
        if measurements:  # as _measure, one by one (the GPU types checked before)
            measured = j.measured
            most = j.max_profiled
            changed = False
            for key, times in measurements:
                old = measured.get(key)
                if old is None or old != times or (times[1] == 0.0 and str(old[1]) != str(times[1])):  # (-0.0)
                    changed = True
                measured[key] = times
                if key[2] > most:  # (the measurement's GPUs)
                    most = key[2]
            j.max_profiled = most
            if changed:  # (the same values reported again, as a job does every round: the same fit, kept)
                j.seen = tuple(sorted(measured))
                j.observations = None
                if j.estimator == "bootstrap" and j.rigid_shape is None:
                    with blas_threads(1):  # refit now, off the decision's path (the fit is kept: the decision
                        self._estimate(j)  # finds it)
        if progress is not None:
            j.frac = progress
        if attained is not None:
            j.attained = attained
        epoch_changed = epoch is not None and epoch != j.epoch
        if epoch is not None:
            j.epoch = epoch
        if grad_sqr is not None and grad_var is not None:
            epoch_changed = epoch_changed or j.grad != (grad_sqr, grad_var)
            j.grad = (grad_sqr, grad_var)
        if local_batch is not None and accumulation is not None:
            j.local_bsz, j.accum, j._rate = local_batch, accumulation, None
        elif epoch_changed and j.config is not None and j.id in self.where:
            j.nodes = {n: len(g) for n, g in self.where[j.id]}
            j.rebatch()

    def apply_progress(self, time: float | Sequence[float], job_id: Sequence[str], *,
                       progress: Sequence[float | None] | None = None, epoch: Sequence[int | None] | None = None,
                       measurements: Sequence[Sequence[Measurement] | None] | None = None,
                       local_batch: Sequence[int | None] | None = None,
                       accumulation: Sequence[int | None] | None = None,
                       attained_gpu_seconds: Sequence[float | None] | None = None,
                       grad_sqr: Sequence[float | None] | None = None, grad_var: Sequence[float | None] | None = None,
                       checked: bool = False, measured: Sequence[Sequence[MeasuredPair] | None] | None = None) -> None:
        """Take many progress reports in columns: row ``r`` is ``JobProgress(time[r], job_id[r], progress[r], ...)``
        and the session ends as if those events were applied one by one, in row order (a column left None, or None
        in a row, is a field left out of that row's report). All or none: every row is checked before any changes
        the session, and a bad one raises an :class:`~schedopt.errors.InputError` naming the column and the row
        (``job_id[17]``, ``measurements[17][0].gpu_type``).

        Parameters
        ----------
        time
            The reports' times: one a row, or one for all.
        job_id
            The job of each row.
        progress, epoch, measurements, local_batch, accumulation, attained_gpu_seconds, grad_sqr, grad_var
            :class:`~schedopt.live.JobProgress`'s fields, one value a row (or None: left out of every row).
        checked
            True when every value is known to pass ``JobProgress``'s own checks already (as
            :mod:`schedopt.serve.columns` checks its columns, at once): no event object is built. Otherwise each row
            is checked as a ``JobProgress``.
        measured
            With ``checked`` only, in place of ``measurements``: each row's measurements as
            ``(Measurement.key, (step_time, sync_time))`` pairs, no :class:`~schedopt.live.Measurement` object made
            (:mod:`schedopt.serve.columns` reads them so; the session keeps them in that form).
        """
        if measured is not None:
            if not checked or measurements is not None:
                raise InputError("measured", "…", "is for rows already checked (checked=True), instead of measurements")
        ms_col: Sequence[Any] | None = measurements if measured is None else measured
        ids = list(job_id)
        n = len(ids)
        cols: dict[str, Sequence[Any] | None] = {
            "progress": progress, "epoch": epoch, "measurements": ms_col, "local_batch": local_batch,
            "accumulation": accumulation, "attained_gpu_seconds": attained_gpu_seconds, "grad_sqr": grad_sqr,
            "grad_var": grad_var}
        for k, c in cols.items():
            if c is not None and len(c) != n:
                raise InputError(k, len(c), f"must hold one value a row ({n}, as job_id)")
        if isinstance(time, (int, float)):
            times: Sequence[float] = [time] * n
        else:
            times = time
            if len(times) != n:
                raise InputError("time", len(times), f"must hold one value a row ({n}, as job_id) or be one number")
        none: list[Any] = [None] * n
        rows = list(zip(times, ids, *(none if c is None else c for c in cols.values())))
        if checked and measured is None and measurements is not None:  # the Measurement objects as pairs
            rows = [(*row[:4], _pairs(row[4] or ()), *row[5:]) for row in rows]
        if not checked:
            for r, row in enumerate(rows):
                try:
                    e = JobProgress(row[0], row[1], row[2], row[3], tuple(row[4] or ()), *row[5:])
                except InputError as exc:
                    rest = exc.field.partition(".")[2] if exc.field.startswith(("JobProgress", "event")) else ""
                    key, sep, tail = rest.partition("[") if "[" in rest.split(".", 1)[0] else rest.partition(".")
                    raise InputError(f"{key or 'job_id'}[{r}]{sep and (sep if sep == '[' else '.')}{tail}",
                                     exc.value, exc.message) from None
                rows[r] = (e.time, e.job_id, e.progress, e.epoch, _pairs(e.measurements), e.local_batch,
                           e.accumulation, e.attained_gpu_seconds, e.grad_sqr, e.grad_var)
        types = self.cluster_state.gpu_types
        jobs = []
        for r, row in enumerate(rows):  # everything checked before anything changes
            t = row[0]
            if self.time is not None and t < self.time:
                raise InputError(f"time[{r}]", t, f"is before the last decision (t = {self.time:g})")
            j = self.jobs.get(row[1])
            jobs.append(j if j is not None else self._job(row[1], f"job_id[{r}]"))
            for i, (key, _) in enumerate(row[4] or ()):
                if key[0] not in types:
                    raise InputError(f"measurements[{r}][{i}].gpu_type", key[0], "names no GPU type of the cluster")
        if not n:
            return
        with blas_threads(1):  # one BLAS limit for the rows' refits
            for j, row in zip(jobs, rows):
                self._progress_row(j, row[2], row[3], row[4] or (), *row[5:])
        self._events_time = max(self._events_time, max(times))
        self._dirty = True

    def _drop(self, jid: str, why: str) -> None:
        self.jobs.pop(jid, None)
        self.pending = [p for p in self.pending if p.id != jid]
        self.where.pop(jid, None)
        self.configs.pop(jid, None)
        self.closed[jid] = why

    def _set_node(self, node: NodeState) -> None:
        old = next((n for n in self.cluster_state.nodes if n.name == node.name), None)
        if old is not None and old.gpu_type != node.gpu_type:
            raise InputError(f"node[{node.name}].gpu_type", node.gpu_type, f"was {old.gpu_type}")
        if node.gpu_type not in self.cluster_state.gpu_types:
            for j in [*self.jobs.values(), *self.pending]:
                if node.gpu_type not in j.jm.truth(j.app).params:
                    raise InputError(f"node[{node.name}].gpu_type", node.gpu_type,
                                     f"job {j.id}'s application {j.app} has no throughput model on it")
        self.cluster_state = self.cluster_state.replace(node)
        bad = set(node.failed_gpus)
        for jid, slots in list(self.where.items()):  # jobs on lost GPUs lose their placement
            if any(n == node.name and (node.health == "down" or bad.intersection(gs)) for n, gs in slots):
                self._evict(jid)

    def _evict(self, jid: str) -> None:
        self.where.pop(jid, None)
        self.configs.pop(jid, None)
        j = self.jobs.get(jid) or next((p for p in self.pending if p.id == jid), None)
        if j is not None:
            j.nodes, j.config, j.restart_left = {}, None, 0.0
            j.rebatch()

    # -------------------------------------------------------------------------------------------------- views
    def _estimate(self, j: LiveJobState) -> JobGoodputModel:
        """The estimate a policy sees of ``j``: kept on the job (``j.fit``) until its estimator, observations (as
        an object: a measurement makes a new tuple), epoch, reported statistics or job model change."""
        f = j.fit
        if (f is not None and f[1] is j.observations and f[4] is j.jm and f[2] == j.epoch and f[3] == j.grad
                and f[0] == j.estimator):
            return cast(JobGoodputModel, f[5])
        jm = j.jm
        fitted = None
        if (j.estimator == "oracle" or j.rigid_shape is not None or j.scale_units or j.app in jm.oracle_apps):
            e = prior_estimate(jm, j.app, j.epoch)
        else:
            obs = j.observations
            if obs is None:
                obs = j.observations = tuple(sorted(j.measured.items()))
            if f is not None and f[6] is not None and f[1] is obs and f[4] is jm:
                fitted = f[6]  # (the same observations, another epoch or statistics: the same fit)
            else:
                fitted = fitted_estimate(jm, j.app, obs)
            e = estimate_at_epoch(jm, j.app, obs, fitted, j.epoch)
        if j.grad is not None:
            e = with_reported_stats(e, *j.grad)
        j.fit = (j.estimator, j.observations, j.epoch, j.grad, jm, e, fitted)
        return e

    def view(self, j: JobState, t: float) -> JobView:
        """What a policy sees of job ``j`` at ``t``: measured progress and the estimate from its measurements.

        Kept per job: the estimate until the job's measurements, epoch or reported statistics change; the view's
        fields of the job's own (id, application, arrival, request, batch, kind: fixed at submission) from its
        first view, the round's fields (age, service, restarts, configuration, nodes, estimate, progress, cap) set
        anew (tests/test_live_fastpaths.py: equal to the engine's ``job_view`` built from scratch)."""
        assert isinstance(j, LiveJobState)
        return self._views_of((j,), t)[0]

    def _views_of(self, jobs: Iterable[LiveJobState], t: float) -> list[JobView]:
        """:meth:`view` of each job of ``jobs`` at ``t``, in one pass (a decision at 2,048 GPUs makes 4,096)."""
        memo_all = self._views
        estimate = self._estimate
        new = object.__new__
        cap = 1.0 - 1e-12
        out = []
        for j in jobs:
            jm = j.jm
            f = j.fit  # (Session._estimate's own check, inline: most jobs' estimate is the one kept)
            if (f is not None and f[1] is j.observations and f[4] is jm and f[2] == j.epoch and f[3] == j.grad
                    and f[0] == j.estimator):
                est = f[5]
            else:
                est = estimate(j)
            frac = j.frac
            progress = cap if cap < frac else frac  # (min(frac, cap))
            nodes = j.nodes
            memo = memo_all.get(j.id)
            if memo is None or memo[0] is not j or memo[1] is not jm:
                v = job_view(j, t, est, progress)
            else:
                last = memo[2]
                cur = last.current_nodes
                if memo[3] is not nodes and cur != nodes:  # (node maps are replaced, never changed in place)
                    cur = MappingProxyType(dict(nodes))
                v = new(JobView)
                d = v.__dict__
                d.update(last.__dict__)
                d["age"], d["attained_gpu_seconds"], d["restarts"] = t - j.arrival, j.attained, j.restarts
                d["current"], d["current_nodes"], d["estimate"], d["progress"] = j.config, cur, est, progress
                # the cap: a function of the job's model, application, kind and request (fixed) and the most GPUs
                # it ran on
                d["max_gpus"] = last.max_gpus if memo[4] == j.max_profiled else j.max_gpus
            memo_all[j.id] = (j, jm, v, nodes, j.max_profiled)
            out.append(v)
        return out

    def layout(self) -> _Layout:
        cs = self.cluster_state
        memo = self._layout_cache
        if memo is not None and memo[0][0] is cs and not memo[0][1]:
            return memo[1]  # no drained node in this cluster state: the layout is its alone (what jobs hold unread)
        held: dict[str, set[int]] = {}
        for slots in self.where.values():
            for n, gs in slots:
                held.setdefault(n, set()).update(gs)
        drained = tuple((n.name, tuple(sorted(held.get(n.name, ())))) for n in cs.nodes if n.health == "drained")
        key = (cs, drained)
        lay = _layout(cs, held) if memo is None or memo[0] != key else memo[1]
        self._layout_cache = (key, lay)  # (an equal cluster state: the same layout, kept under this object)
        return lay

    @property
    def cluster(self) -> Cluster:
        """The cluster the policy sees now (usable GPUs only)."""
        return self.layout().cluster

    # ------------------------------------------------------------------------------------------------- decide
    def decide(self, now: float) -> Plan:
        """The plan for the round starting at ``now`` (seconds, never before the last decision): admit the jobs
        submitted by then, ask the policy, check and place its decision, carry it into the state and save it
        (``state_path``). Asked again at the same time with no event in between, the same plan (idempotent). A
        policy or placer error raises :class:`InputError` naming them and the job, and leaves the state as it
        was."""
        if isinstance(now, bool) or not isinstance(now, (int, float)) or not math.isfinite(now) or now < 0:
            raise InputError("now", now, "must be a finite time in seconds >= 0")
        now = float(now)
        if self.time is not None and now < self.time:
            raise InputError("now", now, f"is before the last decision (t = {self.time:g})")
        if self.plan is not None and now == self.time and not self._dirty:
            return self.plan
        paused = gc.isenabled()
        gc.disable()  # no cyclic-GC pause inside a decision (tens of ms at 2,048 GPUs); collected as usual after
        try:
            with blas_threads(1):
                plan = self._decide(now)
        finally:
            if paused:
                gc.enable()
        if self.state_path is not None:
            self.save(self.state_path)
        return plan

    def _decide(self, now: float) -> Plan:
        dt = 0.0 if self.time is None else now - self.time
        backup = [(j, j.attained, j.restart_left) for j in self.jobs.values()]
        pending0, jobs0 = list(self.pending), dict(self.jobs)
        try:
            where = self.where
            for j in self.jobs.values() if dt > 0 else ():  # the time since the last decision: GPUs held,
                slots = where.get(j.id)                      # restore delay spent
                if slots:
                    g = 0
                    for _, gs in slots:
                        g += len(gs)
                    if g:
                        j.restart_left -= min(j.restart_left, dt)
                        j.attained += dt * g
            plan = self._round(now)
        except BaseException:
            for j, a, r in backup:
                j.attained, j.restart_left = a, r
            self.pending, self.jobs = pending0, jobs0
            raise
        return plan

    def _round(self, now: float) -> Plan:
        lay = self.layout()
        cluster = lay.cluster
        arrived = [j for j in self.pending if j.arrival <= now]
        later = [j for j in self.pending if j.arrival > now]
        rejected: list[str] = []
        if arrived:
            if isinstance(self.admission, AcceptAll):
                for j in arrived:
                    self.jobs[j.id] = j
                arrived = []
            else:
                self._sync_nodes(lay)
                admit_pending(self.admission, cluster, cast(list[JobState], arrived),
                              cast(dict[str, JobState], self.jobs), rejected, now, self.view)
        k = max(self.round_index + 1, int(now // self.round_duration))
        jobs: dict[str, JobPlan] = {}
        changed: list[str] = []  # the ids of the admitted jobs' entries that are not the last plan's objects
        info: Mapping[str, Any] = {}
        dt_wall = dt_cpu = 0.0
        if self.jobs:
            self._sync_nodes(lay)
            previous = None
            if self.where:  # (plain layout: the slot lists as they are; nothing changes them, where is replaced)
                assignments: dict[JobId, Slots] = {}
                assignments.update(self.where if lay.plain else {j: lay.to_policy(s) for j, s in self.where.items()})
                configs: dict[JobId, Config] = {}
                configs.update(self.configs)
                previous = Placement(assignments=assignments, configs=configs)
            views = tuple(self._views_of(self.jobs.values(), now))
            active = cast(dict[str, JobState], self.jobs)
            rd = decide_round(self.policy, self.policy_name, self.placer, cluster, active, previous, now, k,
                              self.round_duration, views)
            rd = self._respect_drained(rd, lay)
            before = self.where  # (replaced below, never changed in place)
            restarts = {j.id: (j.restarts, j.started) for j in self.jobs.values()}
            apply_decision(active, rd, now, 0.0, self.jm)
            self.last_round = rd
            got = rd.placement.assignments
            self.where = (dict(zip(map(str, got), got.values())) if lay.plain
                          else {str(j): lay.to_live(s) for j, s in got.items()})
            self.configs = dict(zip(map(str, rd.placement.configs), rd.placement.configs.values()))
            jobs, changed = self._job_plans(before, restarts)
            info = dict(rd.decision.info)
            if rd.waiting:
                info = {**info, "unplaced_requests": rd.waiting}
            dt_wall, dt_cpu = rd.wall_seconds, rd.cpu_seconds
        head = len(jobs)
        for j in arrived:
            jobs[j.id] = JobPlan(j.id, Action.QUEUE, {})
        for jid in rejected:
            self.closed[jid] = "rejected"
            jobs[jid] = JobPlan(jid, Action.REJECT, {})
        self.pending = [*arrived, *later]
        if len(self._views) > 2 * (len(self.jobs) + len(self.pending)) + 256:
            live = {*self.jobs, *(j.id for j in self.pending)}  # forget the views of jobs gone
            self._views = {j: v for j, v in self._views.items() if j in live}
        self.time, self.round_index, self._dirty = now, k, False
        last = self.plan
        if last is not None:  # an entry equal to the last plan's is that object (fewer objects; found by identity)
            held = last.jobs
            rest = list(jobs)[head:]  # (the admitted jobs' entries are so already: _job_plans)
            if len(rest) != len(arrived) + len(rejected):  # (an id twice: all of them again)
                rest, changed = list(jobs), []
            for jid in rest:
                p = jobs[jid]
                q = held.get(jid)
                if q is not None and (q is p or _same_plan(q, p)):
                    jobs[jid] = q
                else:
                    changed.append(jid)
        self.plan = Plan(now, k, self.policy_name, jobs, dt_wall, dt_cpu, info)
        if last is not None:
            mark_reused(self.plan, last, changed)
        return self.plan

    def _sync_nodes(self, lay: _Layout) -> None:
        """Every admitted job's node map in the policy's node ids (what the decision step compares against).

        Made anew only for a job whose slots differ from the ones its map was last made from here (in this layout)
        or whose map is another object: slot lists in ``where`` and node maps are replaced, never changed in place
        (the decision step and the events assign new ones)."""
        where = self.where
        memo_lay, memo = self._synced
        if memo_lay is not lay:
            memo = {}
        made: dict[str, tuple[Slots | None, dict[str, int]]] = {}
        for j in self.jobs.values():
            slots = where.get(j.id)
            m = memo.get(j.id)
            if m is None or m[1] is not j.nodes or (m[0] is not slots and m[0] != slots):
                j.nodes = {} if not slots else {n: len(g) for n, g in lay.to_policy(slots)}
                m = (slots, j.nodes)
            made[j.id] = m
        self._synced = (lay, made)

    def _respect_drained(self, rd: RoundDecision, lay: _Layout) -> RoundDecision:
        """A drained node takes no job anew: a job placed on GPUs there it did not hold waits instead."""
        if not lay.drained:
            return rd
        bad = []
        for jid, slots in rd.placement.assignments.items():
            held = {(n, g) for n, gs in self.where.get(str(jid), ()) for g in gs}
            if any((n, g) not in held for n, gs in lay.to_live(slots) if n in lay.drained for g in gs):
                bad.append(jid)
        if not bad:
            return rd
        pl = rd.placement
        keep = Placement(assignments={j: s for j, s in pl.assignments.items() if j not in bad},
                         configs={j: c for j, c in pl.configs.items() if j not in bad}, evicted=pl.evicted,
                         unplaced=(*pl.unplaced, *bad), moved_from=pl.moved_from)
        info = {**rd.decision.info, "drained": sorted(map(str, bad))}
        return dataclasses.replace(rd, placement=keep, decision=dataclasses.replace(rd.decision, info=info))

    def _job_plans(self, before: Mapping[str, Slots],
                   was: Mapping[str, tuple[int, bool]]) -> tuple[dict[str, JobPlan], list[str]]:
        """Each admitted job's entry of the plan, from its slots before (``before``) and now (``self.where``) and
        its restart count and start before the decision (``was``).

        A job whose entry would be made from what the last plan's entry was made from (action, slots,
        configuration, node map, running configuration, local batch, accumulation, restart delay charged) gets
        that entry itself, not made again (most jobs of a round at 2,048 GPUs); the others a new one, or the last
        plan's entry where equal to it. Returns the entries and the ids of those that are not the last plan's
        objects, in order."""
        held = self.plan.jobs if self.plan is not None else {}
        memo = self._plan_inputs
        kept: dict[str, tuple[JobPlan, tuple[Any, ...]]] = {}
        where, configs = self.where, self.configs
        out: dict[str, JobPlan] = {}
        changed: list[str] = []
        for j in self.jobs.values():
            jid = j.id
            old = before.get(jid)
            now = where.get(jid)
            if not now:
                action = Action.PREEMPT if old else Action.QUEUE
                key: tuple[Any, ...] = (action,)
            else:
                c = configs[jid]
                if not old:
                    action = Action.START
                elif old == now or sorted(old) == sorted(now):
                    action = Action.KEEP
                else:
                    old_t = self.cluster_state.node(old[0][0]).gpu_type
                    same = sum(len(g) for _, g in old) == c.n_gpus and old_t == c.gpu_type
                    action = Action.MOVE if same else Action.RESIZE
                w = was[jid]
                charged = j.restarts != w[0] or (j.started and not w[1])
                key = (action, now, c, j.nodes, j.config, j.local_bsz, j.accum,
                       j.restart_left if charged else None)
            q = held.get(jid) if _KEEP_ENTRIES else None
            m = memo.get(jid)
            if q is not None and m is not None and m[0] is q and m[1] == key:
                p = q  # made from the same: the same entry
            else:
                if not now:  # (JobPlan(jid, action, {}) with its defaults: about half the jobs of a busy round)
                    values: tuple[Any, ...] = (jid, action, {}, None, 0, None, None, None, None)
                else:
                    values = (jid, action, dict(now), key[2].gpu_type, key[2].n_gpus, j.batch, j.local_bsz, j.accum,
                              key[7])
                if q is not None and _plan_values(q) == values:
                    p = q  # (equal to the last plan's entry field for field: that object, as _round keeps it)
                else:
                    p = _job_plan_of(*values)
            out[jid] = p
            kept[jid] = (p, key)
            if p is not q:
                changed.append(jid)
        self._plan_inputs = kept
        return out, changed

    # -------------------------------------------------------------------------------------------------- state
    def to_document(self) -> dict[str, Any]:
        """The session's state as a versioned JSON document (see :mod:`schedopt.live.persist`)."""
        return _session_document(self)

    @classmethod
    def from_document(cls, doc: Mapping[str, Any], *, policy: Policy | str | None = None,
                      placer: Placer | str | None = None, admission: Admission | str | None = None,
                      job_model: str | JobModel | None = None, state_path: str | None = None) -> Session:
        """A session restored from :meth:`to_document` (roles given here replace the saved ones)."""
        return _session_from_document(cls, doc, policy=policy, placer=placer, admission=admission,
                                     job_model=job_model, state_path=state_path)

    def save(self, path: str) -> None:
        """Write :meth:`to_document` to ``path`` atomically (a temporary file, fsync, rename)."""
        write_document(path, self.to_document())

    @classmethod
    def restore(cls, path: str, *, policy: Policy | str | None = None, placer: Placer | str | None = None,
                admission: Admission | str | None = None, job_model: str | JobModel | None = None,
                state_path: str | None = None) -> Session:
        """The session saved at ``path`` (:meth:`save`); it keeps saving there unless ``state_path`` says
        otherwise (and then first removes the temporary files a save there left when its process was killed
        mid-save)."""
        s = cls.from_document(read_document(path), policy=policy, placer=placer, admission=admission,
                              job_model=job_model, state_path=path if state_path is None else state_path)
        if s.state_path is not None:
            from .persist import remove_temporaries, same_file

            if same_file(s.state_path, path):
                remove_temporaries(path)
        return s

    def summary(self) -> dict[str, Any]:
        """Counts for a dashboard: jobs running, queued and pending, GPUs in use and usable."""
        memo = self._used
        if memo is not None and memo[0] is self.where:
            used = memo[1]
        else:  # (kept until the placement is replaced, or an event changes it in place: apply forgets it)
            used = 0
            for slots in self.where.values():
                for _, g in slots:
                    used += len(g)
            self._used = (self.where, used)
        return {"time": self.time, "round_index": self.round_index, "policy": self.policy_name,
                "jobs_running": len(self.where), "jobs_queued": len(self.jobs) - len(self.where),
                "jobs_pending": len(self.pending), "gpus_in_use": used, "gpus_usable": self.cluster.num_gpus,
                "gpus_total": self.cluster_state.num_gpus}


# ------------------------------------------------------------------------------------------- the saved document

_JOB_FIELDS = ("id", "app", "arrival", "requested_gpus", "batch_size", "adaptive", "epoch", "restart_left",
               "restarts", "started", "start", "attained", "max_profiled", "local_bsz", "accum", "estimator",
               "live_kind", "frac", "grad")


_job_values = operator.attrgetter(*_JOB_FIELDS)


def _config(c: Config | None) -> list[Any] | None:
    return None if c is None else [c.n_nodes, c.n_gpus, c.gpu_type]


def _session_document(s: Session) -> dict[str, Any]:
    roles = pickle.dumps((s.policy, s.placer, s.admission), protocol=pickle.HIGHEST_PROTOCOL)
    jobs = []
    for admitted, j in [*((True, j) for j in s.jobs.values()), *((False, j) for j in s.pending)]:
        d = dict(zip(_JOB_FIELDS, _job_values(j)))
        d["admitted"] = admitted
        d["config"] = _config(j.config)
        d["measured"] = [[*k, *v] for k, v in sorted(j.measured.items())]
        jobs.append(d)
    jm = s.base_job_model
    return {
        "schema": SCHEMA,
        "version": VERSION,
        "settings": {"round_duration": s.round_duration, "job_model": jm.name, "estimator": s.estimator,
                     "adaptive": s.adaptive, "policy_name": s.policy_name, **{k: v for k, v in s.specs.items()}},
        "cluster": s.cluster_state.to_dict(),
        "time": s.time,
        "round_index": s.round_index,
        "events_time": s._events_time,
        "dirty": s._dirty,
        "jobs": jobs,
        "placement": [{"job_id": j, "slots": [[n, list(g)] for n, g in slots], "config": _config(s.configs.get(j))}
                      for j, slots in s.where.items()],
        "closed": dict(s.closed),
        "profiles": {app: m.to_dict() for app, (_, m) in s._apps.items()},
        "plan": None if s.plan is None else s.plan.to_dict(),
        "roles": base64.b64encode(roles).decode("ascii"),
        "roles_sha256": hashlib.sha256(roles).hexdigest(),
    }


def _session_from_document(cls: type[Session], doc: Mapping[str, Any], *, policy: Policy | str | None,
                          placer: Placer | str | None, admission: Admission | str | None,
                          job_model: str | JobModel | None, state_path: str | None) -> Session:
    if not isinstance(doc, Mapping) or doc.get("schema") != SCHEMA:
        raise InputError("document.schema", doc.get("schema") if isinstance(doc, Mapping) else type(doc).__name__,
                         f"must be {SCHEMA!r}")
    if doc.get("version") != VERSION:
        raise InputError("document.version", doc.get("version"), f"this schedopt reads version {VERSION}")
    try:
        blob = base64.b64decode(doc["roles"])
        if hashlib.sha256(blob).hexdigest() != doc["roles_sha256"]:
            raise InputError("document.roles", doc["roles_sha256"], "does not match its SHA-256: the file is damaged")
        saved = pickle.loads(blob)  # the session's own state file (see the module doc)
    except (KeyError, ValueError, TypeError, pickle.UnpicklingError, AttributeError, ImportError) as e:
        raise InputError("document.roles", "…", f"cannot be read back ({type(e).__name__}: {e})") from None
    st = doc["settings"]
    if job_model is None:
        job_model = st["job_model"]
    s = cls(ClusterState.from_dict(doc["cluster"], "document.cluster"), policy if policy is not None else saved[0],
            placer=placer if placer is not None else saved[1],
            admission=admission if admission is not None else saved[2],
            round_duration=st["round_duration"], job_model=job_model, estimator=st["estimator"],
            adaptive=st["adaptive"], state_path=state_path)
    s.specs = {k: st.get(k) for k in ("policy", "placer", "admission")}
    for app, d in doc["profiles"].items():
        m = JobGoodputModel.from_dict(d)
        s._apps[app] = (profile_application(m), m)
    if s._apps:
        s.jm = dataclasses.replace(s.base_job_model, apps={**s.base_job_model.apps, **s._apps})
    for d in doc["jobs"]:
        j = LiveJobState(d["id"], d["app"], d["arrival"], d["requested_gpus"], d["batch_size"], d["adaptive"], s.jm,
                       estimator=d["estimator"], live_kind=d["live_kind"])
        for k in _JOB_FIELDS[6:]:
            setattr(j, k, d[k])
        j.grad = None if d["grad"] is None else (float(d["grad"][0]), float(d["grad"][1]))
        j.config = None if d["config"] is None else Config(*d["config"])
        j.measured = {(m[0], m[1], m[2], m[3]): (m[4], m[5]) for m in d["measured"]}
        j.seen = tuple(sorted(j.measured))
        if d["admitted"]:
            s.jobs[j.id] = j
        else:
            s.pending.append(j)
    for p in doc["placement"]:
        s.where[p["job_id"]] = [(n, tuple(g)) for n, g in p["slots"]]
        if p["config"] is not None:
            s.configs[p["job_id"]] = Config(*p["config"])
    s.closed = dict(doc["closed"])
    s.time, s.round_index = doc["time"], doc["round_index"]
    s._events_time, s._dirty = doc["events_time"], doc["dirty"]
    s.plan = None if doc["plan"] is None else Plan.from_dict(doc["plan"])
    s._sync_nodes(s.layout())
    return s
