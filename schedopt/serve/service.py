"""The decision service's core, apart from HTTP: one session, one decision at a time, a deadline, the state saved
after every change and restored at start.

Concurrency: requests are handled on one asyncio event loop. A decision runs on a single worker thread so that
health, readiness, metrics, state and plan keep answering while it runs; while it runs, another decision or an
event batch is refused with :class:`Busy` (HTTP 409, ``Retry-After``) rather than queued: a caller that gave up on
a slow decision learns at once that it is still running, and nothing waits on a queue it cannot see.

Deadline: a decision not done within its deadline is answered with the previous plan and the status
``deadline_exceeded``; the decision is not cancelled (a solver cannot be stopped safely half-way): it finishes on
its thread, becomes the session's plan (``GET /v1/plan``) and is saved, and until then changes get 409.

Saving: every change is saved before it is answered, as one record appended to the journal
(:mod:`.journal`: the request's body, synced); the whole state is written to the state file (a snapshot) every
``snapshot_every`` decisions, after the decision's answer, and at a clean stop, and the journal is emptied then.
Any change waits for a snapshot being written. At start the snapshot is read and the journal's records applied
again (:meth:`Service.replay`). Should the state on disk still be behind the client (a journal lost), a decision
request carrying ``known_round`` (the round of the last answer the client has) is refused with :class:`Behind`
(409), and the client sends the lost round's request again -- the same events and time give the same plan -- then
its new one (:class:`schedopt.live.client.ServiceSession` does this).

Plans as deltas: every answer names its plan by ``plan_id``, a number drawn anew by each start of the process (and
after a refused batch is taken back), so that no two plans this or another start of the service answered share
one. A decision request carrying ``since``, the ``plan_id`` of the plan the client holds, is answered with
``plan_delta`` (:func:`schedopt.live.plan.plan_delta`: the plan's own fields, the job entries that changed, the
order of the jobs when it changed) in place of the whole ``plan``, when ``since`` names the plan answered or the
one before it; any other ``since`` (a plan of an earlier start, of another service, one too old) gets the whole
plan, never a delta against a plan this process does not hold. The service keeps the plans themselves
(:class:`~schedopt.live.Plan`), finds the changed entries from them (:func:`schedopt.live.plan.plan_changes`) and
writes the answer from the :class:`~schedopt.live.plan.JobPlan` objects (:func:`schedopt.serve.body.encode_json`):
no document is made for each job each round; the state file holds the plan's document.

Idempotency: asking again for a decision at the same ``now`` with no event batch applied in between returns the
last plan (``repeated: true``) without running the policy again, so a retried request cannot advance the session
twice. Event batches may carry a sequence number ``seq``; a batch whose ``seq`` is not above the last one applied is
acknowledged as a duplicate and not applied again.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import queue
import secrets
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from ..errors import InputError, SchedoptError
from ..live.persist import write_document
from ..live.plan import Plan, plan_changes, plan_delta
from .body import encode_json, parse_json
from .journal import Journal, Record, read_journal
from .metrics import Metrics
from .state import ServiceState

__all__ = ["JOURNAL_LIMIT", "Behind", "Busy", "DecideRequest", "EventsRequest", "Service", "SessionPort"]

#: the journal's size (bytes) past which an event batch is followed by a snapshot (decisions take one every
#: ``snapshot_every``; a stream of event batches alone would grow the journal without end)
JOURNAL_LIMIT = 64 * 2**20

log = logging.getLogger("schedopt.serve")


class Busy(SchedoptError):
    """A decision is running: the request changes the session and is refused (HTTP 409)."""

    def __init__(self, round_: int) -> None:
        self.field = "session"
        self.value = f"deciding round {round_}"
        super().__init__(f"a decision (round {round_}) is running: retry when it is done")


class Behind(SchedoptError):
    """The client has an answer of a later round than the service holds: the service restarted from its state file
    before that round was saved (HTTP 409). The client sends that round's request again (the same plan comes
    back: decisions are a function of the events and the time), then its new one."""

    def __init__(self, known: int, held: int) -> None:
        self.field = "known_round"
        self.value = known
        super().__init__(f"known_round={known}: the service holds round {held} (it restarted from its state file "
                         f"before round {held + 1} was saved): send the requests of rounds {held + 1}..{known} "
                         "again, then this one")


class _Worker:
    """The thread decisions run on: one daemon thread, started with the first decision and kept (a thread started
    a decision cost 0.1-0.2 ms of CPU, more on a loaded machine). Daemon: a service told to stop while a decision
    overruns exits without waiting for it. One decision at a time runs (the service refuses another while one
    runs), so a task never waits behind another."""

    def __init__(self) -> None:
        self._tasks: queue.SimpleQueue[tuple[Callable[..., None], tuple[Any, ...]]] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None

    def run(self, work: Callable[..., None], *args: Any) -> None:
        """Run ``work(*args)`` on the worker thread (returns at once)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="schedopt-decide", daemon=True)
            self._thread.start()
        self._tasks.put((work, args))

    def _loop(self) -> None:
        while True:
            work, args = self._tasks.get()
            try:
                work(*args)  # _work posts its own outcome, errors included, to the event loop
            except BaseException:  # pragma: no cover - _work catches its own; the thread stays for the next one
                log.exception("the decision thread's task failed")


class SessionPort(Protocol):
    """What the service needs of a session (:mod:`schedopt.serve.adapter` gives it for :mod:`schedopt.live`)."""

    def parse_events(self, docs: Any, field: str) -> list[Any]:
        """Typed events from their documents; an InputError names ``{field}[i].key`` and the value."""
        ...

    def apply(self, events: list[Any]) -> Mapping[str, int]:
        """Apply the events in order (all or none); the count applied by kind."""
        ...

    def decide(self, now: float) -> Plan:
        """The plan at ``now``."""
        ...

    def to_document(self) -> dict[str, Any]:
        """The session's versioned state document."""
        ...

    def restore(self, doc: dict[str, Any]) -> None:
        """Put the session back as its document ``doc`` says (an event batch refused half-way is undone so)."""
        ...

    def summary(self) -> dict[str, Any]:
        """Counts of the session now (jobs running, queued, pending; GPUs in use, usable, total)."""
        ...

    def gauges(self) -> Mapping[str, tuple[str, Mapping[tuple[tuple[str, str], ...], float]]]:
        """Gauges for the metrics page: name -> (help, {label pairs: value})."""
        ...


def _keys(doc: dict[str, Any], allowed: set[str], required: set[str]) -> None:
    for k in doc:
        if k not in allowed:
            raise InputError(k, doc[k], f"unknown field (allowed: {sorted(allowed)})")
    for k in sorted(required - doc.keys()):
        raise InputError(k, None, "is required")


def _number(doc: dict[str, Any], key: str) -> float:
    v = doc[key]
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise InputError(key, v, "must be a number")
    return float(v)


def _seq(doc: dict[str, Any]) -> int | None:
    seq = doc.get("seq")
    if seq is not None and (isinstance(seq, bool) or not isinstance(seq, int) or seq < 0 or seq >= 2**63):
        raise InputError("seq", seq, "must be an integer in [0, 2**63)")
    return seq


def _count(doc: dict[str, Any], key: str) -> int | None:
    v = doc.get(key)
    if v is not None and (isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < 2**63):
        raise InputError(key, v, "must be an integer in [0, 2**63)")
    return v


def _events(doc: dict[str, Any]) -> list[Any] | None:
    events = doc.get("events")
    if events is not None and not isinstance(events, list):
        raise InputError("events", events, "must be a list of events")
    return events


@dataclass(frozen=True)
class EventsRequest:
    """``POST /v1/events``: ``events`` (a list of event documents, applied in order, all or none) and an optional
    ``seq`` (an integer >= 0; a batch whose ``seq`` is not above the last applied one is a duplicate)."""

    events: list[Any]
    seq: int | None = None

    @classmethod
    def from_document(cls, doc: dict[str, Any]) -> EventsRequest:
        _keys(doc, {"events", "seq"}, {"events"})
        events = _events(doc)
        if events is None:
            raise InputError("events", None, "must be a list of events")
        return cls(events, _seq(doc))


@dataclass(frozen=True)
class DecideRequest:
    """``POST /v1/decide``: ``now`` (seconds, the cluster's clock, not before the last decision's), an optional
    ``deadline_s`` (> 0; at most the service's own deadline, which applies when it is left out), and optionally the
    events since the last request (``events``, ``seq``: as ``POST /v1/events``, applied first; the state in, the
    decision out, in one request and one save), and ``known_round``, the round of the last answer the client has
    (a service behind it refuses with :class:`Behind`), and ``since``, the ``plan_id`` of the plan the client
    holds (the answer then gives the plan as a delta from it, when the service holds that plan)."""

    now: float
    deadline_s: float | None = None
    events: list[Any] | None = None
    seq: int | None = None
    known_round: int | None = None
    since: int | None = None

    @classmethod
    def from_document(cls, doc: dict[str, Any]) -> DecideRequest:
        _keys(doc, {"now", "deadline_s", "events", "seq", "known_round", "since"}, {"now"})
        now = _number(doc, "now")
        if now < 0:
            raise InputError("now", now, "must be >= 0")
        deadline = None
        if doc.get("deadline_s") is not None:
            deadline = _number(doc, "deadline_s")
            if deadline <= 0:
                raise InputError("deadline_s", deadline, "must be > 0")
        events, seq = _events(doc), _seq(doc)
        if seq is not None and events is None:
            raise InputError("seq", seq, "numbers an event batch: give events with it")
        return cls(now, deadline, events, seq, _count(doc, "known_round"), _count(doc, "since"))


class Service:
    """One session behind the HTTP API. ``deadline``: the longest a decision request waits (seconds);
    ``journal``: where changes are recorded between snapshots (None: the state file is written after every
    change); ``snapshot_every``: decisions between two snapshots of the state file."""

    def __init__(self, session: SessionPort, state_path: Path, deadline: float, meta: ServiceState | None = None,
                 journal: Journal | None = None, snapshot_every: int = 1) -> None:
        if not deadline > 0:
            raise InputError("deadline", deadline, "must be > 0 seconds")
        if isinstance(snapshot_every, bool) or not isinstance(snapshot_every, int) or snapshot_every < 1:
            raise InputError("snapshot_every", snapshot_every, "must be an integer >= 1")
        self.session = session
        self.state_path = state_path
        self.deadline = deadline
        self.meta = meta or ServiceState()
        self.journal = journal
        self.snapshot_every = snapshot_every if journal is not None else 1
        self.metrics = Metrics()
        self.ready = True
        self._running: asyncio.Future[Any] | None = None
        self._saving: asyncio.Future[Any] | None = None
        self._answered = threading.Event()
        #: the last snapshot written (or read at start): the state a refused batch goes back to, with the journal
        self._snapshot = self.meta.to_document(session.to_document())
        self._document: tuple[tuple[int, int], dict[str, Any]] = ((self.meta.round, self.meta.changes),
                                                                  self._snapshot)
        self._since_snapshot = 0
        self._replaying = False
        self._cpu: float | None = None
        self._events_cpu: float | None = None  # the CPU of the last request's Session.apply, on the loop's thread
        self._summary = session.summary()
        self._worker = _Worker()
        self._new_plan_ids()

    # ------------------------------------------------------------------ plan ids
    def _new_plan_ids(self) -> None:
        """Plan ids of a new start (or of the state after a refused batch was taken back): none the client may
        hold names a plan of this one, so every request gets the whole plan until it holds one of these."""
        self._epoch = secrets.randbits(31)
        #: the plan answered before the current one: (its plan_id, the plan); deltas are made from it or from the
        #: current one only
        self._base: tuple[int, Plan | dict[str, Any]] | None = None

    def plan_id(self, round_: int) -> int:
        """The ``plan_id`` of the plan of round ``round_`` in this start of the service."""
        return (self._epoch << 32) | (round_ & 0xFFFFFFFF)

    # ------------------------------------------------------------------ persistence
    def save(self, meta: ServiceState | None = None) -> None:
        """Write the whole state to the state file (atomically) and empty the journal (a snapshot), keeping
        ``meta`` (default: the current one)."""
        t0 = time.perf_counter()
        meta = meta or self.meta
        doc = meta.to_document(self.session.to_document())
        write_document(str(self.state_path), doc)
        if self.journal is not None:
            self.journal.reset()
        self.meta, self._snapshot, self._summary = meta, doc, self.session.summary()
        self._document = ((meta.round, meta.changes), doc)
        self._since_snapshot = 0
        self.metrics.save_latency.observe(time.perf_counter() - t0)

    def _record(self, op: str, meta: ServiceState, body: bytes) -> None:
        """Make one change durable before it is answered: a journal record, or (no journal) the state file."""
        if self.journal is None:
            self.save(meta)
            return
        t0 = time.perf_counter()
        try:
            self.journal.append(op, meta.round, meta.changes, body)
        except OSError as exc:  # the change is in the session: made durable by the whole state file instead
            self.metrics.error("save", 0)
            log.error("the journal %s could not be written (%s): the state file is written instead",
                      self.journal.path, exc)
            self.save(meta)
            return
        self.metrics.journal_latency.observe(time.perf_counter() - t0)
        if self.journal.size > JOURNAL_LIMIT:  # event batches without decisions: a snapshot bounds the journal
            self.save(meta)

    def replay(self, records: list[Record]) -> int:
        """Apply again the journal's ``records`` that come after the state held (at start, or to undo a refused
        batch), in order, as they were applied: each event batch, each decision at its time. The count applied.
        A record that does not lead where it says (a journal of another state file) is an InputError."""
        n = 0
        for r in records:
            m = self.meta
            if r.round <= m.round and r.changes <= m.changes:
                continue  # the snapshot holds it
            try:
                self._replaying = True  # a refusal here is no batch to take back: the journal does not fit
                self._replay_one(r)
            except InputError as exc:
                raise InputError("journal", f"round {r.round}, changes {r.changes}",
                                 f"cannot be applied to the state file (round {self.meta.round}, changes "
                                 f"{self.meta.changes}): {exc}") from None
            finally:
                self._replaying = False
            if (self.meta.round, self.meta.changes) != (r.round, r.changes):
                raise InputError("journal", f"round {r.round}, changes {r.changes}",
                                 f"does not follow the state file (it leads to round {self.meta.round}, changes "
                                 f"{self.meta.changes}): the journal belongs to another state")
            n += 1
        self._summary = self.session.summary()
        return n

    def _replay_one(self, r: Record) -> None:
        doc = parse_json(r.body)
        if "now" in doc:
            req: DecideRequest | None = DecideRequest.from_document(doc)
            assert req is not None
            events, seq = req.events, req.seq
        else:
            ev = EventsRequest.from_document(doc)
            events, seq, req = ev.events, ev.seq, None
        if events is not None:
            self._apply_batch(events, seq)
        if r.op == "decide" and req is not None:
            plan = self.session.decide(req.now)
            self.meta = self._after_decision(self.meta, req.now, plan)

    @staticmethod
    def _after_decision(m: ServiceState, now: float, plan: Plan) -> ServiceState:
        return dataclasses.replace(m, round=m.round + 1, now=now, plan=plan, plan_changes=m.changes)

    async def document(self) -> dict[str, Any]:
        """The state now (the service's part and the session's document: what a restart restores); refused with
        :class:`Busy` while a decision runs (the session is changing)."""
        if self._running is not None:
            raise Busy(self.meta.round + 1)
        await self._saved()
        if self._running is not None:
            raise Busy(self.meta.round + 1)
        key = (self.meta.round, self.meta.changes)
        if self._document[0] != key:
            self._document = (key, self.meta.to_document(self.session.to_document()))
        return self._document[1]

    def plan_document(self) -> dict[str, Any]:
        """``GET /v1/plan``'s answer (the plan's job entries as :class:`~schedopt.live.plan.JobPlan` objects: see
        :func:`_whole`)."""
        m = self.meta
        return {"round": m.round, "now": m.now, "plan": _whole(m.plan),
                "plan_id": None if m.plan is None else self.plan_id(m.round), "pending": self._running is not None}

    @property
    def busy(self) -> bool:
        return self._running is not None

    # ------------------------------------------------------------------ changes
    def _apply_batch(self, docs: list[Any], seq: int | None) -> tuple[str, int]:
        """Apply a batch to the session (not saved); ("duplicate", 0) for a ``seq`` already applied. A refused
        event leaves the session as it was (when part of the batch went in: the last snapshot, and the journal's
        records after it applied again)."""
        m = self.meta
        if seq is not None and seq <= m.seq:
            return "duplicate", 0
        events = self.session.parse_events(docs, "events")
        c0 = time.thread_time()
        try:
            counts = self.session.apply(events)
        except InputError as exc:
            if getattr(exc, "applied", 1) > 0 and len(events) > 1 and not self._replaying:  # some went in: back
                self._rollback()
            raise
        self._events_cpu = time.thread_time() - c0
        self.meta = dataclasses.replace(m, changes=m.changes + 1, seq=m.seq if seq is None else seq)
        for kind, n in counts.items():
            self.metrics.events[kind] += n
        return "ok", sum(counts.values())

    async def _saved(self) -> None:
        """Wait for the save of the last decision (a change waits for it: the state on disk is never more than the
        one answered decision behind the session)."""
        while self._saving is not None:
            with contextlib.suppress(Exception):
                await asyncio.shield(self._saving)
            # a done future is awaited without yielding: let its callbacks (_stored clears _saving) run, or this
            # loop would spin forever on the event loop's own thread (seen: a replay hung at round 36)
            await asyncio.sleep(0)

    def _rollback(self) -> None:
        """Back to the state before the batch being applied: the last snapshot, and the journal after it."""
        meta, session_doc = ServiceState.from_document(self._snapshot, "snapshot")
        self.session.restore(session_doc)
        self.meta = meta
        self._new_plan_ids()  # the plans decided again below are not the objects answered before
        self._document = ((-1, -1), self._snapshot)  # built again when asked
        if self.journal is not None:
            self.replay(read_journal(self.journal.path))

    async def events(self, req: EventsRequest, body: bytes | None = None) -> dict[str, Any]:
        """Apply an event batch (on the event loop: it is short) and save it before answering (``body``: the
        request's body as received, recorded as it is; None: ``req`` encoded)."""
        if self._running is not None:
            raise Busy(self.meta.round + 1)
        await self._saved()
        if self._running is not None:  # a decision started while this request waited
            raise Busy(self.meta.round + 1)
        status, applied = self._apply_batch(req.events, req.seq)
        if applied:
            self._record("events", self.meta, body if body is not None else
                         encode_json({"events": req.events, "seq": req.seq}))
        return {"status": status, "applied": applied, "seq": self.meta.seq, "changes": self.meta.changes}

    async def decide(self, req: DecideRequest, body: bytes | None = None) -> dict[str, Any]:
        """The decision of ``req`` (``body``: the request's body as received, recorded as it is in the journal;
        None: ``req`` encoded)."""
        if body is None:
            body = encode_json({k: v for k, v in (("now", req.now), ("events", req.events), ("seq", req.seq))
                                if v is not None})
        if self._running is not None:
            raise Busy(self.meta.round + 1)
        await self._saved()
        if self._running is not None:  # another request started a decision while this one waited
            raise Busy(self.meta.round + 1)
        if req.known_round is not None and req.known_round > self.meta.round:
            raise Behind(req.known_round, self.meta.round)
        applied = 0
        self._events_cpu = None
        if req.events is not None:
            applied = self._apply_batch(req.events, req.seq)[1]
        m = self.meta
        if m.now is not None and req.now == m.now and m.plan_changes == m.changes:
            self.metrics.decisions["repeated"] += 1
            return self._answer("ok", repeated=True, seconds=0.0, applied=applied, since=req.since)
        deadline = min(self.deadline, req.deadline_s) if req.deadline_s is not None else self.deadline
        loop = asyncio.get_running_loop()
        t0 = time.perf_counter()
        decided: asyncio.Future[Any] = loop.create_future()
        saved: asyncio.Future[Any] = loop.create_future()
        self._running, self._saving = decided, saved
        decided.add_done_callback(lambda f: self._decided(f, t0))
        saved.add_done_callback(self._stored)
        self._answered = threading.Event()
        self._since_snapshot += 1
        snapshot = self._since_snapshot >= self.snapshot_every
        self._worker.run(self._work, loop, decided, saved, req.now, self._answered, body, snapshot)
        try:
            await asyncio.wait_for(asyncio.shield(decided), deadline)
        except TimeoutError:
            self.metrics.decisions["deadline_exceeded"] += 1
            return self._answer("deadline_exceeded", repeated=False, seconds=time.perf_counter() - t0,
                                pending_round=m.round + 1, applied=applied, since=req.since)
        except Exception:
            if applied:  # the decision failed and changed nothing; the events it came with stay, saved
                await self._saved()
                self._record("events", self.meta, body)
            raise
        return self._answer("ok", repeated=False, seconds=time.perf_counter() - t0, applied=applied, cpu=self._cpu,
                            since=req.since)

    def answered(self) -> None:
        """The answer to the last decision request is written: its save may start (it would otherwise take the
        interpreter from the answer's serialization: hundreds of milliseconds at 2,048 GPUs)."""
        self._answered.set()

    def _work(self, loop: asyncio.AbstractEventLoop, decided: asyncio.Future[Any],
              saved: asyncio.Future[Any], now: float, answered: threading.Event, body: bytes, snapshot: bool
              ) -> None:
        """On a daemon thread (a service told to stop while a decision overruns exits without it): the decision,
        recorded in the journal, answered; then, when a snapshot is due (or the journal could not be written),
        once the answer is serialized (:meth:`answered`; at most 10 s), the state file written. No change reaches
        the session before that is done (changes wait for it), so the document saved is the session right after
        this decision."""

        def settle(fut: asyncio.Future[Any], result: Any, exc: BaseException | None) -> None:
            if fut.cancelled():
                return
            if exc is None:
                fut.set_result(result)
            else:
                fut.set_exception(exc)

        def post(fut: asyncio.Future[Any], result: Any, exc: BaseException | None = None) -> None:
            try:
                loop.call_soon_threadsafe(settle, fut, result, exc)
            except RuntimeError:  # the loop was closed: the service stopped while this ran
                pass

        try:
            plan = self.session.decide(now)
            meta = self._after_decision(self.meta, now, plan)
            summary = self.session.summary()
            cpu = getattr(self.session, "decision_cpu", None)
        except BaseException as exc:
            post(decided, None, exc)
            post(saved, None)
            return
        recorded: float | BaseException | None = None
        if self.journal is not None:  # durable before it is answered
            t0 = time.perf_counter()
            try:
                self.journal.append("decide", meta.round, meta.changes, body)
                recorded = time.perf_counter() - t0
            except BaseException as exc:  # no journal: the whole state file instead, right after the answer
                recorded, snapshot = exc, True
        post(decided, (meta, summary, recorded, cpu))
        if not snapshot:
            post(saved, None)
            return
        answered.wait(10.0)
        t0 = time.perf_counter()
        try:
            doc = meta.to_document(self.session.to_document())
            write_document(str(self.state_path), doc)
            if self.journal is not None:
                self.journal.reset()
        except BaseException as exc:
            post(saved, None, exc)
            return
        post(saved, (doc, time.perf_counter() - t0))

    def _decided(self, fut: asyncio.Future[Any], t0: float) -> None:
        self._running = None
        if fut.cancelled():
            return
        exc = fut.exception()
        if exc is None:
            old = self.meta
            self.meta, self._summary, recorded, self._cpu = fut.result()
            self._base = None if old.plan is None else (self.plan_id(old.round), old.plan)
            self.metrics.latency.observe(time.perf_counter() - t0)
            if isinstance(recorded, float):
                self.metrics.journal_latency.observe(recorded)
            elif recorded is not None:
                self.metrics.error("save", 0)
                log.error("the journal %s could not be written (%s): the state file is written instead",
                          self.journal.path if self.journal is not None else None, recorded)
            self.metrics.decisions["ok"] += 1
        else:
            self.metrics.decisions["failed"] += 1
            if not isinstance(exc, SchedoptError):
                log.error("decision failed", exc_info=exc)

    def _stored(self, fut: asyncio.Future[Any]) -> None:
        self._saving = None
        if fut.cancelled():
            return
        exc = fut.exception()
        if exc is not None:
            self.metrics.error("save", 0)
            log.error("the state could not be saved to %s: %s", self.state_path, exc)
        elif fut.result() is not None:
            doc, seconds = fut.result()
            self._snapshot, self._document = doc, ((doc["round"], doc["changes"]), doc)
            self._since_snapshot = 0
            self.metrics.save_latency.observe(seconds)

    def _answer(self, status: str, repeated: bool, seconds: float, pending_round: int | None = None,
                applied: int = 0, cpu: float | None = None, since: int | None = None) -> dict[str, Any]:
        m = self.meta
        plan = m.plan
        pid = None if plan is None else self.plan_id(m.round)
        delta = None
        if since is not None and plan is not None:
            if since == pid:  # the client holds this plan already
                delta = _delta(plan, plan)
            elif self._base is not None and since == self._base[0]:
                delta = _delta(self._base[1], plan)
            if delta is not None:
                delta["since"] = since
                plan = None
        # every float of the answer is finite: the plan's are checked where its document is made (_whole,
        # _delta), ``now`` when the request was read, the timings and the summary's time are the clock's
        return {"status": status, "round": m.round, "now": m.now, "plan": _whole(plan), "plan_id": pid,
                "plan_delta": delta, "repeated": repeated, "seconds": seconds, "cpu_seconds": cpu,
                "events_cpu_seconds": self._events_cpu if applied else None,
                "pending_round": pending_round, "applied": applied, "seq": m.seq, "summary": self._summary}

    # ------------------------------------------------------------------ shutdown
    async def drain(self, timeout: float) -> bool:
        """Wait (at most ``timeout`` s) for a running decision and its save; True when none is left running."""
        try:
            async with asyncio.timeout(timeout):
                for fut in (self._running, self._saving):
                    if fut is not None:
                        with contextlib.suppress(Exception):
                            await asyncio.shield(fut)
        except TimeoutError:
            return False
        return True

    def gauges(self) -> Mapping[str, tuple[str, Mapping[tuple[tuple[str, str], ...], float]]]:
        out = dict(self.session.gauges())
        out["schedopt_round"] = ("Decisions made by the session (its round).", {(): float(self.meta.round)})
        out["schedopt_decision_running"] = ("1 while a decision is running.", {(): float(self.busy)})
        out["schedopt_state_saving"] = ("1 while the state file is written after a decision (a snapshot).",
                                        {(): float(self._saving is not None)})
        return out


def _whole(plan: Plan | dict[str, Any] | None) -> dict[str, Any] | None:
    """The whole plan's document as answered: a decided plan's job entries as :class:`~schedopt.live.plan.JobPlan`
    objects (:meth:`~schedopt.live.Plan.entries_document`: the answer's writer makes each one's document; no dict
    is made for 4,096 jobs every round), a plan read from the state file as its document."""
    return plan.entries_document() if isinstance(plan, Plan) else plan


def _delta(old: Plan | dict[str, Any], new: Plan | dict[str, Any]) -> dict[str, Any]:
    """:func:`~schedopt.live.plan.plan_delta` from ``old`` to ``new``: from the plans themselves when both were
    decided by this process (:func:`~schedopt.live.plan.plan_changes`: the changed entries as objects), from their
    documents when one was read from the state file (the first decision after a start)."""
    if isinstance(old, Plan) and isinstance(new, Plan):
        changed, order = ([], None) if old is new else plan_changes(old, new)
        out = {k: v for k, v in new.entries_document(changed).items() if k != "jobs"}
        out["jobs"] = changed
        out["order"] = order
        return out
    return plan_delta(old.to_dict() if isinstance(old, Plan) else old, new.to_dict() if isinstance(new, Plan) else new)
