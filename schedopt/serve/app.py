"""The HTTP/JSON API of the decision service, as a Starlette application (ASGI).

Routes (every answer is JSON, but ``/metrics``; every refusal is an error document naming the field and the value):

==========================  ====  =======================================================================
``GET  /healthz``           open  the process answers (liveness)
``GET  /readyz``            open  the session is loaded and the service is not stopping (readiness; 503)
``GET  /openapi.json``      open  the OpenAPI document of this API
``GET  /metrics``           auth  Prometheus text: decision latency, decisions, events, jobs, GPUs, errors
``POST /v1/events``         auth  apply an event batch (all or none)
``POST /v1/decide``         auth  the plan at ``now``, within a deadline
``GET  /v1/plan``           auth  the last plan
``GET  /v1/state``          auth  the state now: what a restart restores (409 while a decision runs)
==========================  ====  =======================================================================

The bearer token is checked before anything else (before routing, before the body is read): a request without it,
or with another, is answered 401 whatever its path, unless the path is one of the three open ones (probes and
the API's description, which say nothing about the cluster).
"""

from __future__ import annotations

import contextlib
import hmac
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from importlib import resources
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..errors import InputError, SchedoptError, short_repr
from .body import TooLarge, encode_json, parse_json, read_limited
from .metrics import CONTENT_TYPE
from .service import Behind, Busy, DecideRequest, EventsRequest, Service

__all__ = ["BODY_HEADER", "ERROR_SCHEMA", "OPEN_PATHS", "ROUTES", "create_app", "error_document"]

log = logging.getLogger("schedopt.serve")

#: The ``schema`` field of every error response.
ERROR_SCHEMA = "schedopt.serve.error"
#: Paths answered without a bearer token (health, readiness, the OpenAPI document).
OPEN_PATHS = frozenset({"/healthz", "/readyz", "/openapi.json"})
#: (path, method) of every route: metrics label requests by these, anything else as "other"
ROUTES = (("/healthz", "GET"), ("/readyz", "GET"), ("/openapi.json", "GET"), ("/metrics", "GET"),
          ("/v1/events", "POST"), ("/v1/decide", "POST"), ("/v1/plan", "GET"), ("/v1/state", "GET"))
_PATHS = frozenset(p for p, _ in ROUTES)
#: The request header by which a client declares its body compact JSON it wrote itself, its integers within 64 bits
#: (``Schedopt-Body: compact``): the body is then read without writing it back
#: (:func:`schedopt.serve.body.parse_json`'s ``compact``); any other value is refused (400, naming the header).
BODY_HEADER = "Schedopt-Body"


def _value(v: Any) -> Any:
    """The value as it can be said in JSON: a short JSON scalar as itself, anything else as a short repr."""
    if v is None or isinstance(v, bool) or (isinstance(v, str) and len(v) <= 80):
        return v
    if isinstance(v, int) and abs(v) < 2**63:
        return v
    if isinstance(v, float) and v == v and abs(v) != float("inf"):
        return v
    return short_repr(v)


def error_document(status: int, exc: BaseException | None, message: str, field: str | None = None,
                   value: Any = None) -> dict[str, Any]:
    """The JSON error document of a response with HTTP ``status`` (the field and value at fault, when known)."""
    return {"schema": ERROR_SCHEMA, "version": 1, "status": status,
            "error": {"type": type(exc).__name__ if exc is not None else "HTTPError",
                      "field": getattr(exc, "field", field), "value": _value(getattr(exc, "value", value)),
                      "message": message}}


def _json(doc: Any, status: int = 200, headers: dict[str, str] | None = None, finite: bool = False) -> Response:
    """``doc`` as a JSON response; ``finite``: every float of ``doc`` was checked finite where it was made
    (:func:`~schedopt.serve.body.encode_json`)."""
    return Response(encode_json(doc, finite), status, headers=headers, media_type="application/json")


class _Guard:
    """Outermost layer: the bearer token, then the request's count by route and status (and the errors')."""

    def __init__(self, app: ASGIApp, token: str, service: Service) -> None:
        self.app = app
        self.expected = token.encode("ascii")
        self.service = service

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope.get("path", "")
        route = path if path in _PATHS else "other"
        method = scope.get("method", "")
        metrics = self.service.metrics
        status = [500]

        async def counted(message: Message) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
            await send(message)

        try:
            if path not in OPEN_PATHS and not self._authorized(scope):
                resp = _json(error_document(401, None, "a valid bearer token is required (Authorization: Bearer "
                                                       "<token>, the token the service reads from its token file)",
                                            field="Authorization", value=None),
                             401, {"WWW-Authenticate": 'Bearer realm="schedopt"'})
                await resp(scope, receive, counted)
                return
            await self.app(scope, receive, counted)
        finally:
            metrics.request(route, method if route != "other" else "other", status[0])
            if status[0] >= 400:
                metrics.error(_KINDS.get(status[0], "client" if status[0] < 500 else "server"), status[0])

    def _authorized(self, scope: Scope) -> bool:
        given = [v for k, v in scope.get("headers", []) if k == b"authorization"]
        if len(given) != 1:
            return False
        scheme, _, credentials = given[0].partition(b" ")
        return scheme.lower() == b"bearer" and hmac.compare_digest(credentials, self.expected)


_KINDS = {400: "input", 401: "auth", 404: "route", 405: "method", 409: "busy", 413: "size", 415: "media_type",
          500: "internal", 503: "unavailable"}


async def _body(request: Request, limit: int) -> tuple[bytes, dict[str, Any]]:
    """The body as received and as its JSON object."""
    ctype = request.headers.get("content-type", "")
    if ctype.split(";")[0].strip().lower() != "application/json":
        raise _MediaType(ctype)
    declared = request.headers.get(BODY_HEADER)
    if declared is not None and declared.strip().lower() != "compact":
        raise InputError(BODY_HEADER, declared, "must be 'compact' (or left out)")
    raw = await read_limited(request.stream(), request.headers.get("content-length"), limit)
    return raw, parse_json(raw, compact=declared is not None)


class _MediaType(SchedoptError):
    def __init__(self, ctype: str) -> None:
        self.field = "Content-Type"
        self.value = ctype
        super().__init__(f"Content-Type={ctype!r}: must be application/json")


def create_app(service: Service, token: str, max_body: int, drain_timeout: float = 30.0) -> ASGIApp:
    """The ASGI application serving ``service``; ``token``: the bearer token; ``max_body``: the largest request
    body accepted (bytes); ``drain_timeout``: how long a stop waits for a running decision."""
    if not token or token != token.strip() or not token.isprintable() or not token.isascii():
        raise InputError("token", "<hidden>", "must be a non-empty line of printable ASCII without spaces around it")
    if isinstance(max_body, bool) or not isinstance(max_body, int) or max_body < 1:
        raise InputError("max_body", max_body, "must be a positive number of bytes")
    openapi = resources.files("schedopt.schemas").joinpath("openapi.json").read_bytes()

    async def healthz(request: Request) -> Response:
        return _json({"status": "ok"})

    async def readyz(request: Request) -> Response:
        if not service.ready:
            return _json({"status": "stopping", "round": service.meta.round}, 503)
        return _json({"status": "ready", "round": service.meta.round, "deciding": service.busy})

    async def openapi_json(request: Request) -> Response:
        return Response(openapi, media_type="application/json")

    async def metrics(request: Request) -> Response:
        return Response(service.metrics.render(service.gauges()), media_type=CONTENT_TYPE)

    async def events(request: Request) -> Response:
        raw, doc = await _body(request, max_body)
        return _json(await service.events(EventsRequest.from_document(doc), raw), finite=True)

    async def decide(request: Request) -> Response:
        raw, doc = await _body(request, max_body)
        req = DecideRequest.from_document(doc)
        try:
            return _json(await service.decide(req, raw), finite=True)
        finally:
            service.answered()

    async def plan(request: Request) -> Response:
        return _json(service.plan_document(), finite=True)

    async def state(request: Request) -> Response:
        return _json(await service.document())

    async def input_error(request: Request, exc: Exception) -> Response:
        return _json(error_document(400, exc, str(exc)), 400)

    async def too_large(request: Request, exc: Exception) -> Response:
        return _json(error_document(413, exc, str(exc)), 413, {"Connection": "close"})

    async def busy(request: Request, exc: Exception) -> Response:
        return _json(error_document(409, exc, str(exc)), 409, {"Retry-After": "1"})

    async def behind(request: Request, exc: Exception) -> Response:
        return _json(error_document(409, exc, str(exc)), 409)

    async def media_type(request: Request, exc: Exception) -> Response:
        return _json(error_document(415, exc, str(exc)), 415)

    async def named(request: Request, exc: Exception) -> Response:  # a SchedoptError of the session or policy
        log.error("request failed: %s", exc)
        return _json(error_document(500, exc, f"the decision failed: {exc}"), 500)

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        field, value = ("path", request.url.path) if exc.status_code == 404 else ("method", request.method)
        return _json(error_document(exc.status_code, None, f"{field}={value!r}: {exc.detail}", field, value),
                     exc.status_code, dict(exc.headers or {}))

    async def internal(request: Request, exc: Exception) -> Response:
        log.exception("internal error")
        return _json(error_document(500, None, "internal error (a bug: the service's log has the traceback)"), 500)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        service.ready = True
        yield
        service.ready = False
        if await service.drain(drain_timeout):
            service.save()
            log.info("stopped; state saved to %s (round %d)", service.state_path, service.meta.round)
        else:
            log.warning("stopped while a decision overran %.0f s: the state file holds round %d", drain_timeout,
                        service.meta.round)

    handlers: dict[Any, Callable[[Request, Exception], Awaitable[Response]]] = {
        InputError: input_error, TooLarge: too_large, Busy: busy, Behind: behind, _MediaType: media_type, SchedoptError: named,
        HTTPException: http_error, Exception: internal}
    app = Starlette(routes=[
        Route("/healthz", healthz, methods=["GET"]), Route("/readyz", readyz, methods=["GET"]),
        Route("/openapi.json", openapi_json, methods=["GET"]), Route("/metrics", metrics, methods=["GET"]),
        Route("/v1/events", events, methods=["POST"]), Route("/v1/decide", decide, methods=["POST"]),
        Route("/v1/plan", plan, methods=["GET"]), Route("/v1/state", state, methods=["GET"]),
    ], exception_handlers=handlers, lifespan=lifespan)
    return _Guard(app, token, service)
