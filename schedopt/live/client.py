"""A Python client of ``schedopt serve`` (the decision service), on the standard library only.

    >>> from schedopt.live.client import ServiceClient  # doctest: +SKIP
    >>> with ServiceClient("http://127.0.0.1:8677", token_file="state.json.token") as c:  # doctest: +SKIP
    ...     c.events([{"kind": "submitted", ...}], seq=0)
    ...     answer = c.decide(now=60.0)
    ...     answer["plan"]

One HTTP/1.1 connection is kept open and made again when the service closed it (after a restart, say). A refusal
is raised as :class:`ServiceError` (a :class:`ServiceInputError` for a 400, which is also a ``ValueError``), with
the field and the value the service named; :class:`ServiceBusy` when a decision is running (409).
"""

from __future__ import annotations

import http.client
import json
import socket
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

from ..errors import InputError, SchedoptError
from .plan import Action, Plan
from .state import JobProgress, event_to_dict

__all__ = ["ServiceBusy", "ServiceClient", "ServiceError", "ServiceInputError", "ServiceSession", "event_documents"]


class ServiceError(SchedoptError):
    """The service refused a request: ``status`` (HTTP), ``field`` and ``value`` it named, its ``message`` and the
    whole error ``document``."""

    def __init__(self, status: int, document: Mapping[str, Any]) -> None:
        err = document.get("error") if isinstance(document.get("error"), dict) else {}
        assert isinstance(err, dict)
        self.status = status
        self.field: str | None = err.get("field")
        self.value: Any = err.get("value")
        self.message = str(err.get("message", document))
        self.document = dict(document)
        super().__init__(f"HTTP {status}: {self.message}")


class ServiceInputError(ServiceError, ValueError):
    """400: the request named a bad field (the service's InputError)."""


class ServiceBusy(ServiceError):
    """409: a decision is running; retry when it is done."""


def _document(event: Any) -> Any:
    """A :mod:`schedopt.live` event as its JSON document (a document as it is)."""
    return event if isinstance(event, Mapping) else event_to_dict(event)


_PROGRESS_COLUMNS = ("progress", "epoch", "local_batch", "accumulation", "attained_gpu_seconds", "grad_sqr",
                     "grad_var")


_MEASUREMENT_FIELDS = ("gpu_type", "nodes", "gpus", "local_batch", "step_time", "sync_time")


def _progress_columns(events: list[JobProgress]) -> dict[str, Any]:
    """``JobProgressBatch``: the progress reports ``events`` in columns (a column without a value left out, one
    ``time`` when every row has the same; the measurements as columns of their fields, with the row of each)."""
    times = [e.time for e in events]
    doc: dict[str, Any] = {"type": "JobProgressBatch",
                           "time": times[0] if all(t == times[0] for t in times) else times,
                           "job_id": [e.job_id for e in events]}
    for k in _PROGRESS_COLUMNS:
        col = [getattr(e, k) for e in events]
        if any(v is not None for v in col):
            doc[k] = col
    if any(e.measurements for e in events):  # in columns too: the row of each, then its fields
        rows = [r for r, e in enumerate(events) for _ in e.measurements]
        ms = [m for e in events for m in e.measurements]
        doc["measurements"] = {"row": rows, **{k: [getattr(m, k) for m in ms] for k in _MEASUREMENT_FIELDS}}
    return doc


def event_documents(events: Iterable[Any], columns: int = 2) -> list[Any]:
    """The JSON documents of ``events`` (:mod:`schedopt.live` events, or documents, kept as they are) for a
    request: a run of at least ``columns`` :class:`~schedopt.live.JobProgress` events in a row as one
    ``JobProgressBatch`` document (their fields in columns: the service reads and checks them at once; see
    :mod:`schedopt.serve.columns`), in the same order; ``columns=0``: every event as its own document (for a
    service older than the columns)."""
    out: list[Any] = []
    run: list[JobProgress] = []

    def flush() -> None:
        if columns and len(run) >= columns:
            out.append(_progress_columns(run))
        else:
            out.extend(event_to_dict(e) for e in run)
        run.clear()

    for e in events:
        if type(e) is JobProgress:
            run.append(e)
            continue
        flush()
        out.append(_document(e))
    flush()
    return out


class ServiceClient:
    """A client of one service at ``url`` (``http://host:port``). The token is ``token`` or the first line of
    ``token_file``. ``timeout``: seconds for one request; ``retries``: how many times a request that could not reach
    the service (refused, reset) is tried again, ``backoff`` seconds apart; ``compact``: declare every body it
    sends compact JSON it wrote itself (the ``Schedopt-Body: compact`` header; the service then reads it without
    writing it back: about 0.5 ms less a 300 KB body; a service older than the header ignores it; an integer
    beyond 64 bits in an event document given as it is then reads as a float: the same number where a number
    belongs, refused where an integer belongs). Not thread-safe: one client per thread."""

    def __init__(self, url: str, token: str | None = None, token_file: str | Path | None = None,
                 timeout: float = 60.0, retries: int = 0, backoff: float = 0.2, compact: bool = True) -> None:
        parts = urlsplit(url)
        if parts.scheme != "http" or not parts.hostname:
            raise InputError("url", url, "must be http://host:port (put TLS in a proxy in front of the service)")
        if (token is None) == (token_file is None):
            raise InputError("token", token, "give exactly one of token and token_file")
        if token_file is not None:
            try:
                lines = Path(token_file).read_text(encoding="ascii").splitlines()
            except (OSError, UnicodeDecodeError) as exc:
                raise InputError("token_file", str(token_file), f"cannot be read: {exc}") from None
            token = lines[0].strip() if lines else ""
        assert token is not None
        if not token:
            raise InputError("token", "", "must not be empty")
        if not (isinstance(timeout, (int, float)) and 0 < timeout < float("inf")):
            raise InputError("timeout", timeout, "must be a finite number of seconds > 0")
        if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
            raise InputError("retries", retries, "must be an integer >= 0")
        self.host = parts.hostname
        self.port = parts.port or 80
        self.timeout = float(timeout)
        self.retries = retries
        self.backoff = backoff
        self._headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
        self._body_headers = {**self._headers, "Content-Type": "application/json"}
        if compact:  # (schedopt.serve.app.BODY_HEADER)
            self._body_headers["Schedopt-Body"] = "compact"
        self._conn: http.client.HTTPConnection | None = None

    # ------------------------------------------------------------------ transport
    def _connection(self) -> http.client.HTTPConnection:
        if self._conn is None:
            conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
            conn.connect()
            # http.client writes a request's headers and body apart: without TCP_NODELAY the body waits for the
            # service's delayed ACK (40 ms a request on Linux)
            assert conn.sock is not None
            conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._conn = conn
        return self._conn

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __enter__(self) -> ServiceClient:
        return self

    def __exit__(self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def request(self, method: str, path: str, body: Any = None) -> tuple[int, bytes]:
        """One request; the status and the body. Connection failures are retried ``retries`` times."""
        data = None if body is None else json.dumps(body, allow_nan=False, separators=(",", ":")).encode("utf-8")
        headers = self._headers if data is None else self._body_headers
        attempt = 0
        while True:
            fresh = self._conn is None
            try:
                conn = self._connection()
                conn.request(method, path, body=data, headers=headers)
                resp = conn.getresponse()
                payload = resp.read()
                if resp.getheader("Connection", "").lower() == "close":
                    self.close()
                return resp.status, payload
            # IncompleteRead: the service died between an answer's head and its body (a SIGKILL there, seen in the
            # kill tests once the service answered faster): as a lost connection (requests are safe to repeat)
            except (ConnectionError, http.client.RemoteDisconnected, http.client.BadStatusLine,
                    http.client.IncompleteRead) as exc:
                self.close()
                if not fresh:  # a kept-alive connection the service had closed: try once on a new one
                    continue
                if attempt >= self.retries:
                    raise ServiceError(0, {"error": {"field": "url", "value": f"http://{self.host}:{self.port}",
                                                     "message": f"cannot reach the service: {exc}"}}) from exc
                attempt += 1
                time.sleep(self.backoff)
            except TimeoutError as exc:
                self.close()
                raise ServiceError(0, {"error": {"field": "timeout", "value": self.timeout,
                                                 "message": f"no answer within {self.timeout} s"}}) from exc

    def _call(self, method: str, path: str, body: Any = None) -> Any:
        status, payload = self.request(method, path, body)
        try:
            doc = json.loads(payload) if payload else {}
        except json.JSONDecodeError:
            doc = {"error": {"message": payload[:200].decode("utf-8", "replace")}}
        if status >= 400:
            cls = ServiceInputError if status == 400 else ServiceBusy if status == 409 else ServiceError
            raise cls(status, doc if isinstance(doc, dict) else {"error": {"message": str(doc)}})
        return doc

    # ------------------------------------------------------------------ the API
    def health(self) -> bool:
        """True when the service answers ``/healthz``."""
        try:
            return self.request("GET", "/healthz")[0] == 200
        except ServiceError:
            return False

    def ready(self) -> bool:
        """True when the service is ready to decide (``/readyz`` 200)."""
        try:
            return self.request("GET", "/readyz")[0] == 200
        except ServiceError:
            return False

    def events(self, events: Iterable[Any], seq: int | None = None) -> dict[str, Any]:
        """Send an event batch (:mod:`schedopt.live` events or their documents), applied all or none;
        ``seq`` makes a retried batch harmless (one whose ``seq`` is not above the last applied is not applied)."""
        body: dict[str, Any] = {"events": event_documents(events)}
        if seq is not None:
            body["seq"] = seq
        out: dict[str, Any] = self._call("POST", "/v1/events", body)
        return out

    def decide(self, now: float, deadline_s: float | None = None, events: Iterable[Any] | None = None,
               seq: int | None = None, known_round: int | None = None, since: int | None = None) -> dict[str, Any]:
        """The decision at ``now``, after ``events`` (the events since the last request, applied first, all or
        none; ``seq`` as in :meth:`events`; ``known_round``: the round of the last answer this client has, which a
        service that restarted behind it refuses with 409 naming ``known_round``; ``since``: the ``plan_id`` of
        the plan this client holds, to get the plan as ``plan_delta``, its changes from that one, when the service
        holds that plan): ``{"status", "round", "now", "plan", "plan_id", "plan_delta", "repeated", "seconds",
        "pending_round", "applied", "seq", "summary"}`` (``status`` ``deadline_exceeded``: the plan is the previous
        one; ``plan`` is null when ``plan_delta`` gives it: :meth:`schedopt.live.Plan.updated` rebuilds it)."""
        body: dict[str, Any] = {"now": now}
        if deadline_s is not None:
            body["deadline_s"] = deadline_s
        if events is not None:
            body["events"] = event_documents(events)
        if seq is not None:
            body["seq"] = seq
        if known_round is not None:
            body["known_round"] = known_round
        if since is not None:
            body["since"] = since
        out: dict[str, Any] = self._call("POST", "/v1/decide", body)
        return out

    def plan(self) -> dict[str, Any]:
        """The last plan: ``{"round", "now", "plan", "plan_id", "pending"}``."""
        out: dict[str, Any] = self._call("GET", "/v1/plan")
        return out

    def state(self) -> dict[str, Any]:
        """The state as the service last saved it (``schedopt.serve.state``)."""
        out: dict[str, Any] = self._call("GET", "/v1/state")
        return out

    def metrics(self) -> str:
        """The metrics page (Prometheus text format)."""
        status, payload = self.request("GET", "/metrics")
        if status != 200:
            self._call("GET", "/metrics")
        return payload.decode("utf-8")

    def wait_ready(self, timeout: float = 30.0, interval: float = 0.05) -> None:
        """Return once the service is ready; a ServiceError after ``timeout`` seconds."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self.ready():
                return
            time.sleep(interval)
        raise ServiceError(0, {"error": {"field": "url", "value": f"http://{self.host}:{self.port}",
                                         "message": f"not ready within {timeout} s"}})


def _decision(plan: Plan) -> tuple[Any, ...]:
    """A plan without its timing fields (the policy's wall and CPU time differ between identical runs)."""
    return plan.time, plan.round_index, plan.policy, dict(plan.jobs)


class ServiceSession:
    """The surface of :class:`schedopt.live.Session` that drives decisions (``apply``, ``decide``, ``jobs``,
    ``pending``, ``plan``), carried out by a service: events are buffered and sent with the next decision request
    as one batch (with the next sequence number), and the plan comes back as a :class:`~schedopt.live.Plan`.

    Use a client with ``retries`` to ride out a restart of the service: a batch sent again is not applied twice
    (its ``seq``), a decision asked again at the same time is the same plan, and a service that restarted behind
    the last answer (its save of that round was cut short: 409 naming ``known_round``) is sent the lost round's
    request again, which gives the same plan, before the new one. ``before_decide(now)``, when given, is called
    before each decision request is sent (a test kills the service there). ``columns``: a run of at least that
    many progress reports is sent in columns (``schedopt.live.client.event_documents``; 0: never). ``delta``:
    ask for each plan as its changes from the one held (``since``; the service answers the whole plan when it
    does not hold that one, after a restart say), rebuilt here (:meth:`schedopt.live.Plan.updated`) into the
    same :class:`~schedopt.live.Plan`; False: the whole plan every time (a service older than ``since``)."""

    def __init__(self, client: ServiceClient, before_decide: Any = None, columns: int = 2,
                 delta: bool = True) -> None:
        self.client = client
        self.before_decide = before_decide
        self.columns = columns
        self.delta = delta
        #: the ``plan_id`` of :attr:`plan` (None: no plan, or a service that does not name them)
        self.plan_id: int | None = None
        state = client.state()
        self.seq = int(state["seq"]) + 1
        self.round = int(state["round"])
        self._buffer: list[Any] = []
        self._last: dict[str, Any] | None = None  # the last decision request and its answer
        self.jobs: dict[str, None] = {}
        self.pending: list[str] = []
        self.plan: Plan | None = None
        self.answers: list[dict[str, Any]] = []

    def apply(self, event: Any) -> None:
        """Buffer one event (a :mod:`schedopt.live` event or its document) for the next decision request."""
        self._buffer.append(event)

    def _ask(self, request: dict[str, Any]) -> dict[str, Any]:
        try:
            return self.client.decide(**request)
        except ServiceBusy as exc:
            if exc.field != "known_round" or self._last is None:
                raise
        # the service restarted from a state saved before the last answered round: that round's request again,
        # for the whole plan (compared with the plan held), then this one
        last = self._last
        again = self.client.decide(**{k: v for k, v in last["request"].items() if k != "since"})
        if self.plan is None or _decision(Plan.from_dict(again["plan"])) != _decision(self.plan):
            raise ServiceError(409, {"error": {"field": "plan", "value": again["round"], "message":
                                               "the lost round, decided again, differs from its first answer"}})
        if "since" in request:
            request["since"] = self.plan_id = again.get("plan_id")
        return self.client.decide(**request)

    def _plan(self, answer: Mapping[str, Any]) -> Plan:
        """The answer's plan: its ``plan``, or its ``plan_delta`` applied to the plan held."""
        delta = answer.get("plan_delta")
        if delta is None:
            return Plan.from_dict(answer["plan"])
        if self.plan is None or delta.get("since") != self.plan_id:
            raise ServiceError(200, {"error": {"field": "plan_delta.since", "value": delta.get("since"),
                                               "message": f"is not the plan held ({self.plan_id})"}})
        try:
            return self.plan.updated(delta)
        except InputError as exc:
            raise ServiceError(200, {"error": {"field": exc.field, "value": exc.value, "message": exc.message}}) \
                from None

    def decide(self, now: float) -> Plan:
        """The plan at ``now``, the buffered events sent with the request (one request, one save)."""
        if self.before_decide is not None:
            self.before_decide(now)
        request: dict[str, Any] = {"now": now, "known_round": self.round}
        if self.delta and self.plan_id is not None:
            request["since"] = self.plan_id
        if self._buffer:
            request.update(events=event_documents(self._buffer, self.columns), seq=self.seq)
            self.seq += 1
            self._buffer = []
        answer = self._ask(request)
        if answer["status"] != "ok":
            raise ServiceError(200, {"error": {"field": "status", "value": answer["status"],
                                               "message": f"the decision at {now} was not made in time"}})
        plan = self._plan(answer)
        self._last = {"request": request, "answer": answer}
        self.round = int(answer["round"])
        self.plan_id = answer.get("plan_id")
        self.answers.append(answer)
        summary = answer["summary"]
        if summary["jobs_pending"]:  # which jobs wait for admission: only the state says
            doc = self.client.state()["session"]
            self.jobs = {d["id"]: None for d in doc["jobs"] if d["admitted"]}
            self.pending = [d["id"] for d in doc["jobs"] if not d["admitted"]]
        else:  # every job the plan names was admitted, but those it rejects
            self.jobs = {j: None for j, p in plan.jobs.items() if p.action is not Action.REJECT}
            self.pending = []
        self.plan = plan
        return plan
