"""The one module of the service that calls :mod:`schedopt.live`'s session API: opening a session (restored from
the state file, or made from an init document), events from their documents, decisions as documents, the state
document and the gauges of the metrics page."""

from __future__ import annotations

import itertools
import math
import time
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import InputError, SchedoptError
from ..goodput import blas_threads
from ..live import ClusterState, Session, event_from_dict
from ..live.persist import SCHEMA as SESSION_SCHEMA
from ..live.plan import Plan
from .columns import PROGRESS_BATCH, TOO_LARGE, ProgressColumns, progress_columns, row_field
from .events import fast_progress
from .state import ServiceState, read_state

__all__ = ["INIT_SCHEMA", "DecisionFailed", "EventRefused", "LiveSession", "open_session", "session_from_init"]

#: The ``schema`` field of the document that starts a session in the service.
INIT_SCHEMA = "schedopt.serve.init"

#: how many events one batch may hold (a batch is applied on the event loop)
MAX_EVENTS = 100_000


class EventRefused(InputError):
    """An event of a batch was refused (HTTP 400, naming the field and the value); ``applied``: how many events
    of the batch before it had been applied (the service then puts the session back)."""

    def __init__(self, field: str, value: Any, message: str, applied: int) -> None:
        super().__init__(field, value, message)
        self.applied = applied


class DecisionFailed(SchedoptError):
    """The policy, placer or admission rule failed (HTTP 500): the message names them and the job; the session is
    left as it was."""

    def __init__(self, exc: InputError) -> None:
        self.field = exc.field
        self.value = exc.value
        super().__init__(str(exc))


def _event(doc: Any, path: str) -> Any:
    """:func:`schedopt.live.event_from_dict`, its error rooted at ``path`` when it names the event's class instead
    (``JobSubmitted.time`` -> ``events[3].time``: which event of the batch)."""
    try:
        return event_from_dict(doc, path)
    except OverflowError:  # an integer beyond a float's range where a number is read as a float: a 400, not a 500
        raise InputError(path, doc, TOO_LARGE) from None
    except InputError as exc:
        if exc.field.startswith(path):
            raise
        rest = exc.field.partition(".")[2]
        raise InputError(f"{path}.{rest}" if rest else path, exc.value, exc.message) from None


class LiveSession:
    """A :class:`schedopt.live.Session` as the service's :class:`~schedopt.serve.service.SessionPort`."""

    def __init__(self, session: Session) -> None:
        session.state_path = None  # the service writes the state file (its own document wraps the session's)
        self.session = session
        #: the session's summary as of the last change (None: to be read again): the gauges and the service's
        #: answer both take it, read once a change (a sum over the running jobs)
        self._summary: dict[str, Any] | None = None
        self._gauges = self._read_gauges()
        self._origin: tuple[list[Any], list[tuple[int, int | None]]] = ([], [])
        #: CPU seconds of the last ``Session.decide`` (on the thread that ran it)
        self.decision_cpu: float | None = None

    def parse_events(self, docs: Any, field: str) -> list[Any]:
        if not isinstance(docs, list):
            raise InputError(field, docs, "must be a list of events")
        if len(docs) > MAX_EVENTS:
            raise InputError(field, len(docs), f"holds more than {MAX_EVENTS} events: send them in batches")
        out: list[Any] = []
        origin: list[tuple[int, int | None]] = []  # each event's document, and its row when it came in columns
        rows = 0  # the rows of the column documents beyond one each
        for i, d in enumerate(docs):  # progress reports in one pass; anything else (or refused) the general route
            e = fast_progress(d)
            if e is not None:
                out.append(e)
                origin.append((i, None))
            elif type(d) is dict and d.get("type") == PROGRESS_BATCH:  # progress reports in columns
                got = progress_columns(d, f"{field}[{i}]")
                if isinstance(got, ProgressColumns):  # every value passed: applied as columns, no event a row
                    out.append(got)
                    origin.append((i, -1))
                    rows += len(got) - 1
                else:
                    out.extend(got)
                    origin.extend(zip(itertools.repeat(i), range(len(got))))
            else:
                out.append(_event(d, f"{field}[{i}]"))
                origin.append((i, None))
        if len(out) + rows > MAX_EVENTS:
            raise InputError(field, len(out) + rows, f"holds more than {MAX_EVENTS} events: send them in batches")
        self._origin = (out, origin)
        return out

    def apply(self, events: list[Any], field: str = "events") -> Mapping[str, int]:
        """Apply ``events`` in order. A refused event raises an InputError naming ``{field}[i]`` and its field, with
        ``applied = i``: the events before it in the batch have then changed the session, and the caller restores it
        (all or none)."""
        counts: Counter[str] = Counter()
        self._summary = None  # the session changes (when an event is refused half-way too)
        # one BLAS limit for the batch: each progress event with measurements refits its job under blas_threads(1),
        # whose outermost entry costs ~50 us of threadpoolctl (nested entries are free)
        with blas_threads(1):
            for i, e in enumerate(events):
                if type(e) is ProgressColumns:  # checked as JobProgress's fields already; all or none
                    try:
                        self.session.apply_progress(e.time, e.job_id, progress=e.progress, epoch=e.epoch,
                                                    measured=e.measured, local_batch=e.local_batch,
                                                    accumulation=e.accumulation,
                                                    attained_gpu_seconds=e.attained_gpu_seconds,
                                                    grad_sqr=e.grad_sqr, grad_var=e.grad_var, checked=True)
                    except InputError as exc:
                        raise EventRefused(f"{self._where(events, i, field, '')}{exc.field}", exc.value, exc.message,
                                           i) from None
                    counts["JobProgress"] += len(e)
                    continue
                try:
                    self.session.apply(e)
                except InputError as exc:
                    raise EventRefused(self._where(events, i, field, exc.field.removeprefix("event.")), exc.value,
                                       exc.message, i) from None
                counts[type(e).__name__] += 1
        self._gauges = self._read_gauges()
        return counts

    def _where(self, events: list[Any], i: int, field: str, rest: str) -> str:
        """The name of field ``rest`` of event ``i`` of ``events`` as the request said it: ``events[3].job_id``, or
        for an event that came in columns ``events[3].job_id[17]`` (document 3, row 17)."""
        parsed, origin = self._origin
        if parsed is events:
            doc, row = origin[i]
            if row == -1:  # a column document applied as columns: the session's error names column and row
                return f"{field}[{doc}]."
            if row is not None:
                return row_field(f"{field}[{doc}]", row, rest)
            i = doc
        return f"{field}[{i}].{rest}"

    def decide(self, now: float) -> Plan:
        self._summary = None
        c0 = time.thread_time()
        try:
            plan = self.session.decide(now)
            self.decision_cpu = time.thread_time() - c0
        except InputError as exc:
            if exc.field == "now":
                raise
            raise DecisionFailed(exc) from None
        self._gauges = self._read_gauges()
        return plan

    def to_document(self) -> dict[str, Any]:
        return self.session.to_document()

    def restore(self, doc: dict[str, Any]) -> None:
        """Put the session back as ``doc`` (its last saved document) says."""
        self.session = Session.from_document(doc)
        self._summary = None
        self._gauges = self._read_gauges()

    def summary(self) -> dict[str, Any]:
        if self._summary is None:
            self._summary = self.session.summary()
        return self._summary

    def _read_gauges(self) -> dict[str, tuple[str, dict[tuple[tuple[str, str], ...], float]]]:
        s = self._summary = self.session.summary()
        return {
            "schedopt_jobs": ("Jobs the session holds, by state (running: holds GPUs; queued: admitted, waiting; "
                              "pending: submitted, not admitted yet).",
                              {(("state", k),): float(s[f"jobs_{k}"]) for k in ("running", "queued", "pending")}),
            "schedopt_gpus": ("GPUs of the cluster (in_use: held by jobs; usable: up and not failed; total).",
                              {(("state", k),): float(s[f"gpus_{k}"]) for k in ("in_use", "usable", "total")}),
        }

    def gauges(self) -> Mapping[str, tuple[str, Mapping[tuple[tuple[str, str], ...], float]]]:
        return self._gauges


def _setting(doc: Mapping[str, Any], key: str, kinds: tuple[type, ...], default: Any) -> Any:
    v = doc.get(key, default)
    if v is not None and ((isinstance(v, bool) and bool not in kinds) or not isinstance(v, kinds)):
        raise InputError(f"init.{key}", v, f"must be {' or '.join(k.__name__ for k in kinds)} or null")
    return v


def session_from_init(doc: Any) -> Session:
    """A new session from an init document (``schedopt.serve.init``: the cluster, the roles and settings) or from a
    session document (``schedopt.live.session``, written by :meth:`schedopt.live.Session.save`)."""
    if not isinstance(doc, dict):
        raise InputError("init", type(doc).__name__, "must be a JSON object")
    if doc.get("schema") == SESSION_SCHEMA:
        return Session.from_document(doc)
    if doc.get("schema") != INIT_SCHEMA:
        raise InputError("init.schema", doc.get("schema"), f"must be {INIT_SCHEMA!r} or {SESSION_SCHEMA!r}")
    if doc.get("version") != 1:
        raise InputError("init.version", doc.get("version"), "must be 1")
    known = {"schema", "version", "cluster", "policy", "placer", "admission", "round_duration", "job_model",
             "estimator", "adaptive"}
    for k in doc:
        if k not in known:
            raise InputError(f"init.{k}", doc[k], f"is not a field (known: {sorted(known)})")
    if "cluster" not in doc:
        raise InputError("init.cluster", None, "is required")
    cluster = ClusterState.from_dict(doc["cluster"], "init.cluster")
    rd = _setting(doc, "round_duration", (int, float), 60.0)
    if rd is not None and not math.isfinite(rd):
        raise InputError("init.round_duration", rd, "must be finite")
    return Session(cluster, _setting(doc, "policy", (str,), "sia") or "sia",
                   placer=_setting(doc, "placer", (str,), None), admission=_setting(doc, "admission", (str,), None),
                   round_duration=60.0 if rd is None else float(rd),
                   job_model=_setting(doc, "job_model", (str,), "pollux") or "pollux",
                   estimator=_setting(doc, "estimator", (str,), "bootstrap") or "bootstrap",
                   adaptive=_setting(doc, "adaptive", (bool,), None))


def open_session(state: Path, init: Path | None) -> tuple[LiveSession, ServiceState]:
    """The session of the state file ``state`` when it exists (``init`` is then ignored), else a new one from
    ``init``; with the service's part of the state."""
    if state.exists():
        meta, session_doc = ServiceState.from_document(read_state(state), "state")
        return LiveSession(Session.from_document(session_doc)), meta
    if init is None:
        raise InputError("init", None, f"is needed: the state file {state} does not exist yet")
    return LiveSession(session_from_init(read_state(init, "init"))), ServiceState()
