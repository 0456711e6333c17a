"""The scheduling loop in front of a real resource manager, shared by :mod:`schedopt.live.slurm` and
:mod:`schedopt.live.ray`.

Every round (``round_seconds`` of the run's clock, which runs ``time_scale`` times faster than the wall clock) the
loop: submits the workload's jobs that have arrived (held: the loop decides where they run); reads the nodes (up
or down) and the run's jobs from the engine and each job's progress from its training program, and gives them to
the live session (:class:`schedopt.live.Session`: ``JobSubmitted``, ``JobProgress`` with the job's measurements,
``JobFinished``, ``NodeDown`` / ``NodeUp``), which runs the policy -- the same :class:`~schedopt.sim.Policy` object
and placer :func:`schedopt.sim.simulate` runs -- for the round's plan; and carries out the plan with the engine's
own means: stop (checkpoint, requeue held) every job that is
preempted, resized or moved, then start every job that starts or restarts on the plan's nodes and GPU counts. What
the engine refuses is recorded per job and retried the next round; nothing is dropped. Each realized allocation is
compared with the plan it carried out (``mismatches`` in the records).

The loop's own state is saved atomically after every round (``RUN_DIR/driver.json``), the session's after every
decision (``RUN_DIR/session.json``); a new driver process on the same run folder restores both, re-reads the
engine and carries on (the records say where: ``driver_starts``). A node that goes down leaves the cluster the
policy sees; its jobs, requeued by the engine, are held and placed again. A job the plan places but the engine
does not run (refused, or lost) is started again where the plan says: the plan is compared with what the engine
runs, never with what the loop asked for.

Records: ``RUN_DIR/records.jsonl`` is what :meth:`schedopt.sim.SimResult.to_jsonl` writes (so ``schedopt simulate
report`` and :func:`schedopt.sim.read_jsonl` / ``to_dataframe`` read it), with the live run's own lines after it:
``{"decision": ...}`` (per round: every job's action and planned nodes), ``{"engine": ...}`` (what the engine did:
starts, stops, refusals, requeues, realized allocations), ``{"driver": ...}`` (driver starts and restarts).
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ..errors import InputError
from ..sia import Config
from ..sim.jobs import JobState, job_model, measured_times
from ..sim.metrics import JobRecord, RoundRecord, SimMeta, SimResult
from ..sim.policies.base import Policy
from ..sim.workloads import Workload
from .session import Plan as SessionPlan
from .session import Session
from .state import (
    ClusterState,
    Event,
    JobFinished,
    JobProgress,
    JobSubmitted,
    LiveJob,
    Measurement,
    NodeDown,
    NodeState,
    NodeUp,
    NodeUpdated,
)
from .trainer import TrainerSpec, read_json, write_json

__all__ = ["STATE_VERSION", "Engine", "EngineJob", "EngineRefused", "LiveReplay", "NodeInfo", "Plan", "PlanItem",
           "read_live_records"]

#: version of ``driver.json``
STATE_VERSION = 1

Alloc = dict[str, tuple[int, ...]]  # node name -> GPU indices


@dataclass(frozen=True)
class NodeInfo:
    """One node as the engine reports it."""

    name: str
    gpu_type: str
    gpus: int
    up: bool


@dataclass(frozen=True)
class EngineJob:
    """One job of the run as the engine reports it: ``state`` is ``held`` (waiting for the loop), ``pending``
    (released, waiting for its GPUs or requeued by the engine), ``running``, ``stopping``, ``done`` or
    ``failed``; ``nodes``: the GPUs it holds (node -> indices) while running."""

    job_id: str
    engine_id: str
    state: str
    nodes: Alloc = field(default_factory=dict)
    reason: str = ""


class EngineRefused(Exception):
    """The engine would not do what the plan asked for a job (the loop records it and tries again)."""

    def __init__(self, job_id: str, action: str, reason: str) -> None:
        super().__init__(f"{action} of job {job_id} refused: {reason}")
        self.job_id, self.action, self.reason = job_id, action, reason


class Engine(Protocol):
    """What the loop needs of a resource manager."""

    name: str

    def nodes(self) -> dict[str, NodeInfo]: ...

    def submit(self, job_id: str, job_dir: Path) -> str: ...

    def jobs(self) -> dict[str, EngineJob]: ...

    def start(self, job_id: str, nodes: Mapping[str, int]) -> None: ...

    def stop(self, job_ids: Sequence[str]) -> dict[str, str]: ...

    def hold(self, job_id: str) -> None: ...

    def adopt(self, ids: Mapping[str, str], job_dirs: Mapping[str, Path]) -> None: ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class PlanItem:
    """One job's part of a round's plan: ``action`` is ``start``, ``keep``, ``resize``, ``move``, ``preempt`` or
    ``queue``; ``nodes``: node name -> GPU indices it should hold (empty: none); ``batch``: the global batch of an
    adaptive job (what the job model chooses on these GPUs, 0 when it holds none)."""

    job_id: str
    action: str
    nodes: Alloc
    batch: int = 0


@dataclass(frozen=True)
class Plan:
    """A round's decision in node names."""

    time: float
    round_index: int
    items: tuple[PlanItem, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"time": self.time, "round": self.round_index,
                "jobs": {i.job_id: {"action": i.action, "nodes": {n: list(g) for n, g in i.nodes.items()},
                                    "batch": i.batch} for i in self.items}}


def _counts(a: Mapping[str, Sequence[int]]) -> dict[str, int]:
    return {n: len(g) for n, g in a.items() if len(g)}


class _Clock:
    def __init__(self, epoch_wall: float, scale: float) -> None:
        self.epoch_wall, self.scale = epoch_wall, scale

    def now(self) -> float:
        return (time.time() - self.epoch_wall) * self.scale

    def sleep_until(self, t: float) -> None:
        wait = (t - self.now()) / self.scale
        if wait > 0:
            time.sleep(wait)


class LiveReplay:
    """Replay ``workload`` on a real ``engine`` under ``policy`` (see the module docstring). ``nodes`` of the
    cluster come from the engine; ``run_dir`` holds the job folders, the state document and the records."""

    def __init__(self, engine: Engine, workload: Workload, policy: Policy, *, run_dir: str | Path,
                 time_scale: float = 30.0, round_seconds: float = 60.0, job_model_name: str = "pollux",
                 policy_spec: str = "", placer: str = "sia", adaptive: bool | None = None) -> None:
        if not isinstance(time_scale, (int, float)) or not math.isfinite(time_scale) or time_scale <= 0:
            raise InputError("time_scale", time_scale, "must be a number > 0 (simulated seconds per wall second)")
        if not isinstance(round_seconds, (int, float)) or not math.isfinite(round_seconds) or round_seconds <= 0:
            raise InputError("round_seconds", round_seconds, "must be a number of seconds > 0")
        self.engine, self.workload, self.policy = engine, workload, policy
        self.dir = Path(run_dir).resolve()  # jobs run in their own folders: their paths must not be relative
        self.dir.mkdir(parents=True, exist_ok=True)
        self.scale, self.R = float(time_scale), float(round_seconds)
        self.jm_name = job_model_name
        self.jm = job_model(job_model_name)
        self.policy_spec = policy_spec or str(getattr(policy, "name", type(policy).__name__))
        self.placer_name = placer
        self.session: Session | None = None
        self.session_path = self.dir / "session.json"
        self.reported: dict[str, set[tuple[Any, ...]]] = {}  # job -> measurement keys given to the session
        self.adaptive = bool(getattr(policy, "adaptive", False)) if adaptive is None else bool(adaptive)
        self.pname = str(getattr(policy, "name", type(policy).__name__))
        self.jobs = {w.name: JobState(w.name, w.application, w.time, w.num_replicas, w.batch_size, self.adaptive,
                                      self.jm) for w in workload.jobs}
        for j in self.jobs.values():
            j.application  # noqa: B018 - raises InputError for an unknown application
        self.real: dict[str, Alloc] = {}  # job -> the GPUs the engine gave it (node names)
        self.attempt: dict[str, int] = {}  # job -> attempts started
        self.awaiting: dict[str, dict[str, Any]] = {}  # job -> the start not yet seen running (plan, when)
        self.submitted: dict[str, str] = {}
        self.finished: set[str] = set()
        self.state_path = self.dir / "driver.json"
        self.log_path = self.dir / "live.jsonl"
        self.rounds: list[RoundRecord] = []
        self.k = 0
        self.counters = {"mismatches": 0, "refusals": 0, "engine_requeues": 0, "placer_moves": 0, "starts": 0,
                         "stops": 0}
        self.driver_starts: list[dict[str, Any]] = []
        self.node_types: dict[str, str] = {}
        self.clock: _Clock
        self._restore()
        self.engine.adopt(self.submitted, {jid: self.job_dir(jid) for jid in self.submitted})

    # -- state -----------------------------------------------------------------------------------------------
    def _log(self, kind: str, doc: Mapping[str, Any]) -> None:
        with open(self.log_path, "a") as f:
            f.write(json.dumps({kind: dict(doc)}, sort_keys=True, default=str) + "\n")

    def _restore(self) -> None:
        doc = read_json(self.state_path)
        wall = time.time()
        if doc is None:
            self.clock = _Clock(wall, self.scale)
            self.driver_starts.append({"wall": wall, "sim_time": 0.0, "round": 0, "restored": False})
            self._log("driver", self.driver_starts[-1])
            return
        if doc.get("version") != STATE_VERSION:
            raise InputError(str(self.state_path), doc.get("version"), f"must be version {STATE_VERSION}")
        if doc.get("workload") != self.workload.name or float(doc.get("time_scale", -1)) != self.scale:
            raise InputError(str(self.state_path), doc.get("workload"),
                             "belongs to another run (workload or time scale differ): use a new run folder")
        self.clock = _Clock(float(doc["epoch_wall"]), self.scale)
        self.k = int(doc["round"])
        self.submitted = dict(doc["submitted"])
        self.finished = set(doc["finished"])
        self.attempt = {k: int(v) for k, v in doc["attempt"].items()}
        self.real = {j: {n: tuple(g) for n, g in a.items()} for j, a in doc["real"].items()}
        self.awaiting = dict(doc["awaiting"])
        self.counters.update(doc["counters"])
        self.driver_starts = list(doc["driver_starts"])
        self.rounds = [RoundRecord(r["index"], r["time"], r["policy_seconds"], r["active"], r["answer"], r["info"],
                                   r.get("policy_cpu_seconds", math.nan)) for r in doc["rounds"]]
        for jid, s in doc["jobs"].items():
            j = self.jobs[jid]
            for k in ("progress", "restart_left", "attained"):
                setattr(j, k, float(s[k]))
            for k in ("epoch", "restarts", "max_profiled", "local_bsz", "accum"):
                setattr(j, k, int(s[k]))
            j.started, j.start, j.finish = bool(s["started"]), s["start"], s["finish"]
            j.nodes = {n: int(g) for n, g in s["nodes"].items()}
            j.config = Config(*s["config"]) if s["config"] else None
            j.segments = [list(x) for x in s["segments"]]
            j.seen = tuple(tuple(x) for x in s["seen"])
        now = self.clock.now()
        self.driver_starts.append({"wall": wall, "sim_time": now, "round": self.k, "restored": True})
        self._log("driver", self.driver_starts[-1])

    def _save(self) -> None:
        jobs = {jid: {"progress": j.progress, "restart_left": j.restart_left, "attained": j.attained,
                      "epoch": j.epoch, "restarts": j.restarts, "max_profiled": j.max_profiled,
                      "local_bsz": j.local_bsz, "accum": j.accum, "started": j.started, "start": j.start,
                      "finish": j.finish, "nodes": dict(j.nodes),
                      "config": [j.config.n_nodes, j.config.n_gpus, j.config.gpu_type] if j.config else None,
                      "segments": j.segments, "seen": [list(x) for x in j.seen]} for jid, j in self.jobs.items()}
        write_json(self.state_path, {
            "version": STATE_VERSION, "workload": self.workload.name, "time_scale": self.scale,
            "epoch_wall": self.clock.epoch_wall, "round": self.k, "submitted": self.submitted,
            "finished": sorted(self.finished), "attempt": self.attempt,
            "real": {j: {n: list(g) for n, g in a.items()} for j, a in self.real.items()},
            "awaiting": self.awaiting, "counters": self.counters, "driver_starts": self.driver_starts,
            "rounds": [r.to_dict() for r in self.rounds], "jobs": jobs})

    # -- engine ----------------------------------------------------------------------------------------------
    def job_dir(self, jid: str) -> Path:
        return self.dir / "jobs" / jid

    def _submit_arrived(self, t: float, session: Session) -> None:
        known = {*session.jobs, *(p.id for p in session.pending), *session.closed}
        for w in self.workload.jobs:
            if w.time <= t and w.name not in known:  # arrived; the session hears of it once (it may be restored)
                session.apply(JobSubmitted(max(w.time, session.time or 0.0),
                                           LiveJob(w.name, w.application, w.time, w.num_replicas, w.batch_size)))
            if w.time > t or w.name in self.submitted:
                continue
            d = self.job_dir(w.name)
            d.mkdir(parents=True, exist_ok=True)
            spec = TrainerSpec(w.name, w.application, w.time, w.num_replicas, w.batch_size, self.adaptive,
                               self.jm_name, self.scale, self.clock.epoch_wall, self.node_types)
            write_json(d / "spec.json", spec.to_dict())
            eid = self.engine.submit(w.name, d)
            self.submitted[w.name] = eid
            self._log("engine", {"sim_time": self.clock.now(), "job": w.name, "did": "submit", "engine_id": eid})

    def _session(self, t: float, nodes: Mapping[str, NodeInfo]) -> Session:
        """The live session (made at the first round, restored after a driver restart), told of node changes."""
        for n in nodes.values():
            self.node_types[n.name] = n.gpu_type
        s = self.session
        if s is None and self.session_path.exists():
            s = Session.restore(str(self.session_path), policy=self.policy, placer=self.placer_name)
        if s is None:
            cs = ClusterState(tuple(NodeState(n.name, n.gpu_type, n.gpus, "up" if n.up else "down")
                                    for n in sorted(nodes.values(), key=lambda n: n.name)))
            s = Session(cs, self.policy, placer=self.placer_name, round_duration=self.R, job_model=self.jm,
                        adaptive=self.adaptive, state_path=str(self.session_path))
        self.session = s
        events: list[Event] = []
        for n in nodes.values():
            try:
                have = s.cluster_state.node(n.name)
            except InputError:
                events.append(NodeUpdated(t, NodeState(n.name, n.gpu_type, n.gpus, "up" if n.up else "down")))
                continue
            if n.up and have.health == "down":
                events.append(NodeUp(t, n.name))
            elif not n.up and have.health != "down":
                events.append(NodeDown(t, n.name))
        for known in s.cluster_state.nodes:  # a node the engine no longer lists is gone
            if known.name not in nodes and known.health != "down":
                events.append(NodeDown(t, known.name))
        for e in events:
            s.apply(e)
            self._log("engine", {"sim_time": t, "did": type(e).__name__, "node": getattr(e, "node", None)})
        return s

    def _sync(self, t: float, ejobs: Mapping[str, EngineJob], up: set[str]) -> None:
        """Fold what the engine and the training programs report into the jobs' state."""
        for jid, j in self.jobs.items():
            if jid in self.finished or jid not in self.submitted:
                continue
            ej = ejobs.get(jid)
            prog = read_json(self.job_dir(jid) / "progress.json")
            if prog is not None and int(prog.get("attempt", -1)) >= self.attempt.get(jid, 0) - 1:
                # a newer attempt than the state knows: started by a driver killed before it saved its state
                self.attempt[jid] = max(self.attempt.get(jid, 0), int(prog["attempt"]) + 1)
                j.progress = max(j.progress, float(prog["progress"]))
                j.epoch = max(j.epoch, int(prog["epoch"]))
                if prog.get("local_bsz"):
                    j.local_bsz, j.accum = int(prog["local_bsz"]), int(prog["accum"])
                j.seen = tuple(sorted({*j.seen, *(tuple(s) for s in prog.get("seen", []))}))
                if prog.get("status") == "finished" and prog.get("finish") is not None:
                    j.finish = float(prog["finish"])
                    self._close(j, j.finish)
                    if self.session is not None and jid in self.session.jobs:
                        self.session.apply(JobFinished(t, jid))
                    self.finished.add(jid)
                    self.real.pop(jid, None)
                    j.nodes, j.config = {}, None
                    self._log("engine", {"sim_time": t, "job": jid, "did": "finished", "finish": j.finish,
                                         "engine_state": ej.state if ej else None})
                    continue
            if prog is not None and self.session is not None and jid in self.session.jobs:
                keys = [tuple(k) for k in prog.get("seen", [])]
                told = self.reported.setdefault(jid, set())
                new = [k for k in keys if k not in told]
                told.update(new)
                ms = tuple(Measurement(str(k[0]), int(k[1]), int(k[2]), int(k[3]), *measured_times(self.jm, j.app, k))
                           for k in new)  # the step and sync time the job model gives that configuration
                lb = (int(prog["local_bsz"]), int(prog["accum"])) if prog.get("local_bsz") else (None, None)
                self.session.apply(JobProgress(t, jid, min(j.progress / j.application.target, 1.0 - 1e-9), j.epoch,
                                               ms, *lb))
            if ej is None:
                continue
            if jid in self.awaiting and ej.state == "running":
                want = self.awaiting.pop(jid)
                got = {n: tuple(g) for n, g in ej.nodes.items()}
                same = _counts(got) == {n: int(c) for n, c in want["counts"].items()}
                if not same:
                    self.counters["mismatches"] += 1
                self.real[jid] = got
                self._log("engine", {"sim_time": t, "job": jid, "did": "running", "attempt": want["attempt"],
                                     "plan": want["counts"], "realized": {n: list(g) for n, g in got.items()},
                                     "matches_plan": same, "decided_at": want["decided_at"]})
            if ej.state == "running" and jid not in self.awaiting and ej.nodes and (
                    _counts(ej.nodes) != _counts(self.real.get(jid, {})) or not j.nodes):
                # running where the state does not say: started by a driver killed before it saved; adopt it
                self._close(j, t)
                self.real[jid] = dict(ej.nodes)
                j.nodes = _counts(ej.nodes)
                j.config = Config(len(j.nodes), sum(j.nodes.values()), self.node_types[next(iter(j.nodes))])
                j.started = True
                j.start = t if j.start is None else j.start
                j.segments.append([t, t, j.config.gpu_type, j.config.n_gpus])
                self._log("engine", {"sim_time": t, "job": jid, "did": "adopted", "realized": dict(ej.nodes)})
            lost = j.nodes and (ej.state in ("held", "failed", "done")  # reset, died, or ended unfinished
                                or (ej.state == "pending" and jid not in self.awaiting)  # requeued by the engine
                                or any(n not in up for n in self.real.get(jid, {})))
            if lost:  # the engine requeued it (its node went down) or it died: hold it and place it again
                self.counters["engine_requeues"] += 1
                self._close(j, t)
                j.nodes, j.config = {}, None
                self.real.pop(jid, None)
                self.awaiting.pop(jid, None)
                j.local_bsz = j.accum = 0
                self._log("engine", {"sim_time": t, "job": jid, "did": "lost", "engine_state": ej.state,
                                     "reason": ej.reason})
                try:
                    self.engine.hold(jid)
                except EngineRefused as exc:
                    self._refused(t, exc)

    @staticmethod
    def _close(j: JobState, t: float) -> None:
        """The job's current spell runs until ``t``: its GPU time held so far (Tiresias' attained service)."""
        if j.nodes and j.segments and t > j.segments[-1][1]:
            j.attained += (t - j.segments[-1][1]) * sum(j.nodes.values())
            j.segments[-1][1] = t

    def _refused(self, t: float, exc: EngineRefused) -> None:
        self.counters["refusals"] += 1
        self._log("engine", {"sim_time": t, "job": exc.job_id, "did": "refused", "action": exc.action,
                             "reason": exc.reason})

    # -- one round -------------------------------------------------------------------------------------------
    def _plan(self, t: float, sp: SessionPlan) -> Plan:
        """The session's plan against what the engine runs: the action each job needs now."""
        items = []
        for jid, jp in sp.jobs.items():
            if jid in self.finished or jid not in self.jobs:
                continue
            j = self.jobs[jid]
            target: Alloc = {n: tuple(g) for n, g in jp.placement.items() if len(g)}
            cur = _counts(self.real.get(jid, {})) if jid in self.real else dict(j.nodes)
            want = _counts(target)
            if not want:
                action = "preempt" if j.nodes else "queue"
            elif not j.nodes:
                action = "start"
            elif want == cur:
                action = "keep"
            elif sum(want.values()) != sum(cur.values()):
                action = "resize"
            else:
                action = "move"
                self.counters["placer_moves"] += int(jp.restart_seconds is None)
            items.append(PlanItem(jid, action, target, int(jp.batch_size or 0)))
        return Plan(t, self.k, tuple(items))

    def _carry_out(self, t: float, plan: Plan) -> None:
        stop = [i.job_id for i in plan.items if i.action in ("preempt", "resize", "move")]
        if stop:
            got = self.engine.stop(stop)
            self.counters["stops"] += len(stop)
            for jid in stop:
                j = self.jobs[jid]
                self._close(j, t)
                j.nodes, j.config = {}, None
                self.real.pop(jid, None)
                self.awaiting.pop(jid, None)
                self._log("engine", {"sim_time": t, "job": jid, "did": "stopped", "how": got.get(jid, "")})
        for i in plan.items:
            if i.action not in ("start", "resize", "move"):
                continue
            j = self.jobs[i.job_id]
            counts = _counts(i.nodes)
            n = self.attempt.get(i.job_id, 0)
            preempted = i.action == "start" and j.started
            commanded = self.clock.now()
            write_json(self.job_dir(i.job_id) / "attempt.json",
                       {"number": n, "commanded_sim": commanded, "decided_at": t,
                        "plan": {k: list(g) for k, g in i.nodes.items()}, "reset_batch": preempted or not j.started})
            try:
                self.engine.start(i.job_id, counts)
            except EngineRefused as exc:
                self._refused(t, exc)
                continue
            self.attempt[i.job_id] = n + 1
            self.counters["starts"] += 1
            gtype = self.node_types[next(iter(counts))]
            j.nodes = counts
            j.config = Config(len(counts), sum(counts.values()), gtype)
            if j.started:
                j.restarts += 1
            else:
                j.started, j.start = True, t
            j.max_profiled = max(j.max_profiled, j.config.n_gpus)
            j.segments.append([t, t, gtype, j.config.n_gpus])
            self.awaiting[i.job_id] = {"counts": counts, "attempt": n, "decided_at": t}
            self._log("engine", {"sim_time": t, "job": i.job_id, "did": "start", "attempt": n, "action": i.action,
                                 "plan": {k: list(g) for k, g in i.nodes.items()}, "commanded_sim": commanded,
                                 "command_s": (self.clock.now() - commanded) / self.scale})

    def step(self) -> bool:
        """One round; False when every job has finished."""
        if len(self.finished) == len(self.jobs):
            return False
        self.k = max(self.k, int(self.clock.now() // self.R))  # a loop behind its clock skips the rounds it missed
        t = self.k * self.R
        self.clock.sleep_until(t)
        t_real = self.clock.now()
        nodes = {k: n for k, n in self.engine.nodes().items() if n.gpus > 0}  # GPU nodes only
        session = self._session(t, nodes)
        self._submit_arrived(t, session)
        ejobs = self.engine.jobs()
        self._sync(t, ejobs, {n for n, i in nodes.items() if i.up})
        for j in self.jobs.values():  # GPU time held so far this spell
            self._close(j, t)
        active = {jid: j for jid, j in self.jobs.items()
                  if jid in self.submitted and jid not in self.finished}
        if not active:
            nxt = min((w.time for w in self.workload.jobs if w.name not in self.submitted), default=None)
            self.k = self.k + 1 if nxt is None else max(self.k + 1, math.ceil(nxt / self.R))
            self._save()
            return len(self.finished) < len(self.jobs)
        sp = session.decide(t)
        plan = self._plan(t, sp)
        self._log("decision", {**plan.to_dict(), "loop_delay_s": (t_real - t) / self.scale,
                               "session": {jid: jp.action.value for jid, jp in sp.jobs.items()}})
        self._carry_out(t, plan)
        self.rounds.append(RoundRecord(self.k, t, sp.policy_seconds, len(active), None, dict(sp.info),
                                       sp.policy_cpu_seconds))
        self.k += 1
        self._save()
        return True

    def run(self, max_wall: float | None = None) -> SimResult:
        """Rounds until every job has finished (or ``max_wall`` wall seconds); then the records."""
        end = None if max_wall is None else time.monotonic() + max_wall
        while self.step():
            if end is not None and time.monotonic() > end:
                break
        return self.write_records()

    def result(self) -> SimResult:
        cl: dict[str, tuple[int, int]] = {}
        try:
            for n in self.engine.nodes().values():
                c = cl.get(n.gpu_type, (0, n.gpus))
                cl[n.gpu_type] = (c[0] + 1, n.gpus)
        except Exception:
            pass
        fins = [j.finish for j in self.jobs.values() if j.finish is not None]
        meta = SimMeta(policy=self.pname, workload=self.workload.name, cluster=cl,
                       gpus=sum(a * b for a, b in cl.values()), round_seconds=self.R, job_model=self.jm.name,
                       adaptive=self.adaptive, placer=self.placer_name, unfinished=len(self.jobs) - len(fins),
                       end_time=max(fins, default=math.nan),
                       details={"live": {"engine": self.engine.name, "time_scale": self.scale,
                                         "policy_spec": self.policy_spec, **self.counters,
                                         "driver_starts": self.driver_starts}})
        recs = []
        for j in self.jobs.values():
            r = JobRecord.of(j)
            recs.append(r)
        return SimResult(meta=meta, jobs=tuple(recs), rounds=tuple(self.rounds))

    def write_records(self) -> SimResult:
        res = self.result()
        extra = self.log_path.read_text() if self.log_path.exists() else ""
        tmp = self.dir / ".records.jsonl.tmp"
        tmp.write_text(res.to_jsonl() + extra)
        tmp.replace(self.dir / "records.jsonl")
        return res


def read_live_records(path: str | Path) -> tuple[SimResult, list[dict[str, Any]]]:
    """The :class:`~schedopt.sim.SimResult` of a live run's ``records.jsonl`` and its live lines (decision, engine
    and driver documents, in order)."""
    from ..sim.metrics import read_jsonl

    text = Path(path).read_text()
    live = [d for d in (json.loads(x) for x in text.splitlines() if x.strip())
            if any(k in d for k in ("decision", "engine", "driver"))]
    return read_jsonl(text), live
