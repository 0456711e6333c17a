"""Replay a workload through a live session, the simulator's job model standing in for the cluster.

:class:`ReplayExecutor` plays the resource manager: it submits the workload's jobs as they arrive, asks the session
for a plan every round (at the simulator's round times, skipping idle stretches as :func:`schedopt.sim.simulate`
does), carries the plan out on the simulator's own :class:`~schedopt.sim.jobs.JobState` (checkpoint-restore delay,
true rate, epochs, batch re-chosen at epoch boundaries), and reports back what a job would report: progress, epoch,
the measured step and sync time of each configuration it trained at (:func:`schedopt.sim.jobs.measured_times`, the
simulator's measurement), the batch it trains at, and its finish. The session sees only events, as it would on a
real cluster; the same trace therefore runs both ways, and the decisions can be compared round for round.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

from ..errors import InputError
from ..sia import Config
from ..sim.jobs import JobState, measured_times
from ..sim.limits import check_max_time
from ..sim.metrics import JobRecord
from ..sim.workloads import Workload
from .session import Action, Plan, Session
from .state import JobFinished, JobProgress, JobSubmitted, LiveJob, Measurement

__all__ = ["ReplayExecutor"]


class ReplayExecutor:
    """Drive ``session`` from ``workload`` (see the module doc). :meth:`run` plays to the end (or ``rounds``
    rounds); :meth:`step` one round; ``plans`` every plan so far; :meth:`records` the jobs' records, as
    :func:`schedopt.sim.simulate` gives them. The session's job model is the cluster's truth; ``max_time`` stops
    the replay there (default: last arrival + 60 days, as the simulator)."""

    def __init__(self, session: Session, workload: Workload, *, max_time: float | None = None) -> None:
        if not isinstance(session, Session):
            raise InputError("session", type(session).__name__, "must be a schedopt.live.Session")
        if not isinstance(workload, Workload):
            raise InputError("workload", type(workload).__name__, "must be a schedopt.sim.Workload")
        max_time = check_max_time(max_time)
        self.session = session
        self.workload = workload
        jm = session.base_job_model
        self.jobs = [JobState(w.name, w.application, w.time, w.num_replicas, w.batch_size, session.adaptive, jm,
                              estimator=session.estimator) for w in workload.jobs]
        last = max((j.arrival for j in self.jobs), default=0.0)
        self.stop = last + 60 * 86400.0 if max_time is None else float(max_time)
        self.R = session.round_duration
        self.k = 0
        self.nxt = 0
        self.active: dict[str, JobState] = {}
        self.done = 0
        self.reported: dict[str, set[tuple[str, int, int, int]]] = {}
        self.plans: list[Plan] = []
        self.capped = False

    @property
    def finished(self) -> bool:
        return self.done >= len(self.jobs) or self.capped

    def step(self) -> Plan | None:
        """One round: submit the arrivals, decide, carry the plan out over the round, report. None when the replay
        is over."""
        s = self.session
        while not self.finished:
            t = self.k * self.R
            if t > self.stop:
                self.capped = True
                return None
            while self.nxt < len(self.jobs) and self.jobs[self.nxt].arrival <= t:
                j = self.jobs[self.nxt]
                s.apply(JobSubmitted(j.arrival, LiveJob(j.id, j.app, j.arrival, j.requested_gpus, j.batch_size)))
                self.nxt += 1
            plan = s.decide(t)
            self.done += sum(1 for jp in plan.jobs.values() if jp.action is Action.REJECT)
            if not s.jobs:  # idle: the simulator's jump to the first round at or after the next arrival
                if s.pending or self.nxt >= len(self.jobs):
                    self.k += 1
                else:
                    self.k = max(self.k + 1, math.ceil(self.jobs[self.nxt].arrival / self.R))
                continue
            self._carry_out(plan, t)
            self.plans.append(plan)
            self.k += 1
            return plan
        return None

    def run(self, rounds: int | None = None) -> list[Plan]:
        """Play ``rounds`` rounds (None: to the end); the plans of those rounds."""
        out: list[Plan] = []
        while rounds is None or len(out) < rounds:
            p = self.step()
            if p is None:
                break
            out.append(p)
        return out

    def __iter__(self) -> Iterator[Plan]:
        while (p := self.step()) is not None:
            yield p

    def _carry_out(self, plan: Plan, t: float) -> None:
        s = self.session
        by_id = {j.id: j for j in self.jobs}
        self.active = {jid: by_id[jid] for jid in s.jobs}
        for j in self.active.values():
            jp = plan.jobs[j.id]
            new = {n: len(g) for n, g in jp.placement.items()}
            if new == j.nodes:
                continue
            j.nodes = new
            if new and jp.restart_seconds is None:  # moved within its configuration: no restart (the simulator's rule)
                continue
            if new:
                assert jp.gpu_type is not None
                c = Config(len(new), jp.gpus, jp.gpu_type)
                j.config = c
                j.restart_left = float(jp.restart_seconds or 0.0)
                if j.started:
                    j.restarts += 1
                else:
                    j.started, j.start = True, t
                j.max_profiled = max(j.max_profiled, c.n_gpus)
                j.segments.append([t, t, c.gpu_type, c.n_gpus])
            else:
                j.config, j.restart_left = None, 0.0
            j.rebatch()
        end = t + self.R
        for j in self.active.values():
            j.advance(t, self.R)
        for jid, j in list(self.active.items()):
            if j.finish is not None:
                s.apply(JobFinished(j.finish, jid))
                del self.active[jid]
                self.done += 1
                continue
            seen = self.reported.setdefault(jid, set())
            new_keys = [k for k in j.seen if k not in seen]
            seen.update(new_keys)
            ms = tuple(Measurement(k[0], k[1], k[2], k[3], *measured_times(j.jm, j.app, k)) for k in new_keys)
            batch = (j.local_bsz, j.accum) if j.local_bsz else (None, None)
            s.apply(JobProgress(end, jid, j.progress / j.application.target, j.epoch, ms, *batch))

    def records(self) -> tuple[JobRecord, ...]:
        """Every job's record (arrival, start, finish, restarts, GPU-seconds by type), as the simulator's."""
        return tuple(JobRecord.of(j) for j in self.jobs)
