"""The decision service's endpoints (``schedopt serve``, issue 38): bad HTTP requests, each of which must be
answered with a 4xx error document naming the field (the body path, the header, the route or the method), never
a 500, within a time limit, the service answering the next request as before.

:func:`service_cases` builds the requests (:class:`HttpCase`) from a valid event batch and a valid decision
request: no token or another one on every guarded route, unknown routes and methods, a missing or wrong
Content-Type, bodies that are not JSON, not an object, not UTF-8, nested too deep, with a duplicate key, with NaN or
Infinity, with a number Python cannot read, over the size limit (declared, and sent chunked without a length),
unknown and missing fields and wrong types in both requests (the event documents mutated leaf by leaf as the
instance documents are, :func:`~schedopt.testing.fuzz.documents.document_cases`), and the cases the caller knows
about its session (unknown jobs and nodes, events out of order: ``extra``). :func:`run_http_case` sends one to a
service at 127.0.0.1 and classifies the answer as an :class:`~schedopt.testing.fuzz.runner.Outcome` (``named``:
the expected refusal; ``ok``: accepted where accepting is allowed; ``raw``: a 5xx, a 4xx without the field, a
document not of the error schema; ``hang``: no answer in time; ``silent``: accepted what must be refused).
"""

from __future__ import annotations

import copy
import http.client
import json
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from .catalog import MISSING, Bad
from .documents import apply_document_case, document_cases
from .runner import Case, Outcome

__all__ = ["GUARDED", "HttpCase", "run_http_case", "service_cases", "service_survey", "session_cases"]

#: (method, path) of every route that needs the token
GUARDED = (("GET", "/metrics"), ("POST", "/v1/events"), ("POST", "/v1/decide"), ("GET", "/v1/plan"),
           ("GET", "/v1/state"))


@dataclass(frozen=True)
class HttpCase:
    """One request. ``expect``: the status it must get; ``field``: the field the error must name (a prefix: the
    error may name a deeper one), None for any; ``may_accept``: a 200 is fine too (a value some field may mean)."""

    label: str
    method: str
    path: str
    body: bytes | None
    headers: tuple[tuple[str, str], ...]
    expect: int
    field: str | None
    may_accept: bool = False
    chunked: bool = False

    def __repr__(self) -> str:
        return f"{self.method} {self.path} [{self.label}]"


def _dump(doc: Any) -> bytes:
    return json.dumps(doc, allow_nan=True).encode("utf-8")


def _with(doc: dict[str, Any], key: str, value: Any) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    if value is MISSING:
        out.pop(key, None)
    else:
        out[key] = value
    return out


def service_cases(token: str, max_body: int, events: list[dict[str, Any]], decide: dict[str, Any],
                  extra: Iterable[tuple[str, str, dict[str, Any], str]] = ()) -> list[HttpCase]:
    """Every case. ``events``: a valid event batch's documents (their leaves are mutated one at a time: a mutated
    batch is refused, or accepted where the value may mean something); ``decide``: a valid decision request (its
    ``now`` must be usable as sent, as the cases that may be accepted carry it); ``extra``: (label, path, body,
    field) of refusals that need the session's knowledge (an unknown job, a node, an event out of order)."""
    auth = (("Authorization", f"Bearer {token}"),)
    js = (("Content-Type", "application/json"),)
    good = auth + js
    out: list[HttpCase] = []
    events_doc = {"events": events}
    valid_body = {"/v1/events": _dump(events_doc), "/v1/decide": _dump(decide)}

    # the token: every guarded route, before anything else is looked at
    wrong_tokens: list[tuple[str, tuple[tuple[str, str], ...]]] = [
        ("no token", ()), ("wrong token", (("Authorization", f"Bearer {token}x"),)),
        ("token prefix", (("Authorization", f"Bearer {token[:-1]}"),)),
        ("basic scheme", (("Authorization", f"Basic {token}"),)), ("empty bearer", (("Authorization", "Bearer "),)),
        ("token and more", (("Authorization", f"Bearer {token} {token}"),)),
        ("two headers", (("Authorization", f"Bearer {token}"), ("Authorization", f"Bearer {token}"))),
    ]
    for method, path in GUARDED:
        for label, hdrs in wrong_tokens:
            out.append(HttpCase(label, method, path, valid_body.get(path), hdrs + js, 401, "Authorization"))
    out.append(HttpCase("no token, unknown route", "GET", "/v1/nope", None, (), 401, "Authorization"))

    # routes and methods
    out.append(HttpCase("unknown route", "GET", "/v1/nope", None, auth, 404, "path"))
    out.append(HttpCase("unknown route, long", "GET", "/" + "x" * 4000, None, auth, 404, "path"))
    for method, path in GUARDED:
        other = "GET" if method == "POST" else "POST"
        out.append(HttpCase("wrong method", other, path, b"{}" if other == "POST" else None, good, 405, "method"))
    out.append(HttpCase("DELETE", "DELETE", "/v1/state", None, auth, 405, "method"))

    for path in ("/v1/events", "/v1/decide"):
        body = valid_body[path]
        # media type
        out.append(HttpCase("no Content-Type", "POST", path, body, auth, 415, "Content-Type"))
        out.append(HttpCase("text/plain", "POST", path, body, (*auth, ("Content-Type", "text/plain")), 415,
                            "Content-Type"))
        # not a JSON object
        for label, raw in (("empty body", b""), ("whitespace", b"  \n"), ("truncated", body[: len(body) // 2]),
                           ("a list", b"[1, 2]"), ("null", b"null"), ("a string", b'"abc"'), ("a number", b"3"),
                           ("not UTF-8", b'{"now": "caf\xe9"}'), ("binary", bytes(range(256))),
                           ("nested too deep", b"[" * 20_000 + b"]" * 20_000),
                           ("duplicate key", b'{"now": 1, "now": 2}'), ("trailing garbage", body + b" x"),
                           ("huge integer", b'{"now": ' + b"9" * 5000 + b"}"), ("single quotes", b"{'now': 1}")):
            out.append(HttpCase(label, "POST", path, raw, good, 400, "body"))
        # non-finite numbers, top level and deep
        for label, text in (("NaN", "NaN"), ("Infinity", "Infinity"), ("-Infinity", "-Infinity")):
            key = "now" if path == "/v1/decide" else "seq"
            out.append(HttpCase(f"{key}={label}", "POST", path, f'{{"{key}": {text}}}'.encode(), good, 400,
                                f"body.{key}"))
        # size: declared over the limit, and sent chunked without a length
        huge = b'{"pad": "' + b"x" * (max_body + 16) + b'"}'
        out.append(HttpCase("over the size limit", "POST", path, huge, good, 413, "body"))
        out.append(HttpCase("over the size limit, chunked", "POST", path, huge, good, 413, "body", chunked=True))

    # the decision request
    for key, bads in (("now", [("missing", MISSING), ("null", None), ("'abc'", "abc"), ("[]", []), ("{}", {}),
                                ("true", True), ("-1", -1)]),
                      ("deadline_s", [("'abc'", "abc"), ("0", 0), ("-1", -1.0), ("[]", []), ("true", True)]),
                      ("known_round", [("-1", -1), ("'1'", "1"), ("1.5", 1.5), ("true", True), ("2**63", 2**63)]),
                      ("since", [("-1", -1), ("'1'", "1"), ("1.5", 1.5), ("true", True), ("2**63", 2**63),
                                 ("{}", {}), ("[1]", [1])])):
        for label, v in bads:
            out.append(HttpCase(f"{key}={label}", "POST", "/v1/decide", _dump(_with(decide, key, v)), good, 400,
                                key))
    out.append(HttpCase("unknown field", "POST", "/v1/decide", _dump({**decide, "nope": 1}), good, 400, "nope"))
    out.append(HttpCase("NaN in a nested field", "POST", "/v1/decide",
                        _dump({**decide, "deadline_s": [1.0, float("nan")]}), good, 400, "body.deadline_s[1]"))

    # the event batch: its own fields, then every leaf of its events
    for key, bads in (("events", [("missing", MISSING), ("null", None), ("'abc'", "abc"), ("{}", {}), ("3", 3)]),
                      ("seq", [("'abc'", "abc"), ("-1", -1), ("1.5", 1.5), ("true", True), ("2**64", 2**64)])):
        for label, v in bads:
            out.append(HttpCase(f"{key}={label}", "POST", "/v1/events", _dump(_with(events_doc, key, v)), good,
                                400, key))
    out.append(HttpCase("unknown field", "POST", "/v1/events", _dump({**events_doc, "nope": 1}), good, 400, "nope"))
    out.append(HttpCase("an event not an object", "POST", "/v1/events", _dump({"events": [3]}), good, 400,
                        "events[0]"))
    wrapped = {"events": events}
    for i, event in enumerate(events):  # every leaf of every event (document_cases walks a list's first item)
        for family in ("types", "numbers", "keys"):
            for c in document_cases({"events": [event]}, family):
                if c.field in ("data", "data.events"):
                    continue  # the batch's own field: above
                c = Case(c.field.replace("data.events[0]", f"data.events[{i}]", 1), c.bad)
                mutated = apply_document_case(wrapped, c)
                field = c.field.removeprefix("data.")
                if c.bad.label == "unknown key":
                    field = f"{field}.no_such_key"
                if c.bad.label in ("NaN", "Infinity"):
                    field = "body." + field
                out.append(HttpCase(f"{field}={c.bad.label}", "POST", "/v1/events", _dump(mutated), good, 400,
                                    field if c.bad.label != "missing key" else field.rsplit(".", 1)[0],
                                    may_accept=not c.bad.reject))
    for label, path, doc, field in extra:
        out.append(HttpCase(label, "POST", path, _dump(doc), good, 400, field))
    return out


def _send(port: int, case: HttpCase, timeout: float) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.putrequest(case.method, case.path, skip_accept_encoding=True)
        for k, v in case.headers:
            conn.putheader(k, v)
        if case.body is not None and case.chunked:
            conn.putheader("Transfer-Encoding", "chunked")
        elif case.body is not None and not any(k.lower() == "content-length" for k, _ in case.headers):
            conn.putheader("Content-Length", str(len(case.body)))
        conn.endheaders()
        if case.body is not None:
            try:
                if case.chunked:
                    step = 64 * 1024
                    for i in range(0, len(case.body), step):
                        part = case.body[i: i + step]
                        conn.send(f"{len(part):x}\r\n".encode() + part + b"\r\n")
                    conn.send(b"0\r\n\r\n")
                else:
                    conn.send(case.body)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the service answered (413) and closed before the whole body was sent: read its answer
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


_VALIDATORS: dict[int, Any] = {}


def _error_schema_problem(schema: dict[str, Any], doc: Any) -> str | None:
    """Why ``doc`` is not the service's error document (None: it is); one validator per schema, built once."""
    import jsonschema  # type: ignore[import-untyped]  # a test extra, without stubs here

    v = _VALIDATORS.get(id(schema))
    if v is None:
        v = _VALIDATORS[id(schema)] = jsonschema.Draft202012Validator({**schema, "$ref": "#/$defs/error"})
    err = jsonschema.exceptions.best_match(v.iter_errors(doc))
    return None if err is None else str(err.message)


def _names(field: str, expected: str) -> bool:
    """``field`` names ``expected``: the same path or a deeper one, or the same object and the same key by another
    spelling of the path between them (``events[0].job.job[f1].gpus`` for ``events[0].job.gpus``)."""
    if field.startswith(expected):
        return True
    head = expected.split(".", 1)[0]
    key = expected.rsplit(".", 1)[-1].split("[", 1)[0]
    return field.startswith(head + ".") and field.rsplit(".", 1)[-1].split("[", 1)[0] == key


def run_http_case(port: int, case: HttpCase, timeout: float = 10.0, schema: dict[str, Any] | None = None
                  ) -> Outcome:
    """Send ``case`` to the service on 127.0.0.1:``port`` and classify the answer. ``schema``: the service's JSON
    Schema (``schedopt.schemas.load("service")``); when given, the error document is validated against it."""
    entry = f"serve {case.method} {case.path[:40]}"
    c = Case(case.field or "-", Bad(case.label, None, not case.may_accept))
    t0 = time.perf_counter()
    try:
        status, payload = _send(port, case, timeout)
    except TimeoutError:
        return Outcome("hang", entry, c, f"no answer within {timeout} s", time.perf_counter() - t0)
    except (OSError, http.client.HTTPException) as exc:
        return Outcome("raw", entry, c, f"{type(exc).__name__}: {exc}", time.perf_counter() - t0)
    seconds = time.perf_counter() - t0
    if 200 <= status < 300:
        return Outcome("ok" if case.may_accept else "silent", entry, c, f"HTTP {status}", seconds)
    try:
        doc = json.loads(payload)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return Outcome("raw", entry, c, f"HTTP {status}, not JSON: {payload[:120]!r}", seconds)
    if schema is not None:
        problem = _error_schema_problem(schema, doc)
        if problem:
            return Outcome("raw", entry, c, f"HTTP {status}, not an error document: {problem}", seconds)
    err = doc.get("error") if isinstance(doc, dict) else None
    field = err.get("field") if isinstance(err, dict) else None
    detail = f"HTTP {status} {field}: {err.get('message') if isinstance(err, dict) else doc}"[:200]
    if status != case.expect and not (case.may_accept and 400 <= status < 500):
        return Outcome("raw", entry, c, f"expected HTTP {case.expect}; got {detail}", seconds)
    if not isinstance(field, str) or not field:
        return Outcome("raw", entry, c, f"names no field: {detail}", seconds)
    if case.field is not None and not case.may_accept and not _names(field, case.field):
        return Outcome("raw", entry, c, f"expected the field {case.field!r}; got {detail}", seconds)
    return Outcome("named", entry, c, detail, seconds)


def session_cases(token: str, max_body: int, now: float) -> list[HttpCase]:
    """:func:`service_cases` for a service whose last decision was before ``now`` (and after t = 1): a valid batch
    submits a job ``f1`` at ``now`` and reports its progress and a measurement, then twice more in columns (a
``JobProgressBatch``), then a measurement in columns; the extra cases name a job and a
    node the session does not have, an event before the last decision and a decision before it."""
    events = [{"type": "JobSubmitted", "time": now, "job": {"id": "f1", "application": "cifar10", "submitted": now,
                                                             "requested_gpus": 2}},
              {"type": "JobProgress", "time": now, "job_id": "f1", "progress": 0.1, "epoch": 1,
               "measurements": [{"gpu_type": "a100", "nodes": 1, "gpus": 2, "local_batch": 64, "step_time": 0.2,
                                 "sync_time": 0.01}]},
              {"type": "JobProgressBatch", "time": now, "job_id": ["f1", "f1"], "progress": [0.2, 0.3],
               "epoch": [1, 2], "attained_gpu_seconds": [None, 4.0]},
              {"type": "JobProgressBatch", "time": now, "job_id": ["f1"],
               "measurements": {"row": [0], "gpu_type": ["a100"], "nodes": [1], "gpus": [2], "local_batch": [64],
                                "step_time": [0.2], "sync_time": [0.01]}}]
    extra: list[tuple[str, str, dict[str, Any], str]] = [
        ("unknown job", "/v1/events", {"events": [{"type": "JobCancelled", "time": now, "job_id": "zz"}]},
         "events[0].job_id"),
        ("unknown node", "/v1/events", {"events": [{"type": "NodeDrained", "time": now, "node": "zz"}]},
         "events[0].node"),
        ("out of order", "/v1/events", {"events": [events[0] | {"time": 1.0}]}, "events[0].time"),
        ("decision before the last", "/v1/decide", {"now": 1.0}, "now"),
    ]
    return service_cases(token, max_body, events, {"now": now}, extra)


def service_survey(timeout: float = 10.0) -> list[Outcome]:
    """Every case of :func:`session_cases` against a real ``schedopt serve`` started for it (tiresias on three
    named nodes, in a temporary folder, stopped at the end): the outcomes, and a ``hang`` for any case after which
    ``/healthz`` did not answer."""
    import tempfile
    from pathlib import Path

    from ...live import ClusterState, NodeState
    from ...schemas import load
    from ..serve import ServiceProcess

    schema = load("service")
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        cluster = ClusterState((NodeState("a1", "a100", 8), NodeState("v1", "v100", 8, failed_gpus=(7,)),
                                NodeState("t1", "t4", 4)))
        (d / "init.json").write_text(json.dumps({"schema": "schedopt.serve.init", "version": 1, "policy": "tiresias",
                                                 "cluster": cluster.to_dict()}))
        max_body = 65536
        with ServiceProcess(d, d / "state.json", d / "init.json", extra=("--max-body", str(max_body))) as sp:
            with sp.client() as c:
                c.decide(60.0)
            out = []
            for case in session_cases(sp.token, max_body, 120.0):
                o = run_http_case(sp.port, case, timeout, schema)
                out.append(o)
                with sp.client(timeout=timeout) as c:
                    if not c.health():
                        out.append(Outcome("hang", o.entry, o.case, "/healthz did not answer after it"))
    return out
