"""The OpenAPI 3.1 document of the service, built from ``schedopt/schemas/service.schema.json`` (OpenAPI 3.1 takes
JSON Schema 2020-12 as it is). The built document is committed as ``schedopt/schemas/openapi.json`` and served at
``GET /openapi.json``; ``python -m schedopt.serve.openapi`` writes it again after a change of the schema (a test
fails while the two differ)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

__all__ = ["build_openapi", "main"]

_JSON = "application/json"


def _ref(name: str) -> dict[str, Any]:
    return {"$ref": f"#/components/schemas/{name}"}


def _rewrite(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: (v.replace("#/$defs/", "#/components/schemas/") if k == "$ref" else _rewrite(v))
                for k, v in obj.items()}
    if isinstance(obj, list):
        return [_rewrite(v) for v in obj]
    return obj


def _errors(*codes: int) -> dict[str, Any]:
    say = {400: "bad input: the field and the value are named", 401: "no bearer token, or another one",
           404: "no such route", 405: "method not allowed",
           409: "a decision is running: retry (Retry-After); or, naming known_round, the service restarted behind "
                "the client's last answer: send that round's request again",
           413: "the body is over the service's limit", 415: "the body is not application/json",
           500: "the session or its policy failed (the message says how; no traceback)"}
    return {str(c): {"description": say[c], "content": {_JSON: {"schema": _ref("error")}}} for c in codes}


def _ok(name: str, what: str) -> dict[str, Any]:
    return {"200": {"description": what, "content": {_JSON: {"schema": _ref(name)}}}}


#: the request header of a body the client declares compact (schedopt.serve.app.BODY_HEADER)
_COMPACT = {"name": "Schedopt-Body", "in": "header", "required": False, "schema": {"enum": ["compact"]},
            "description": "compact: the body is compact JSON the client wrote itself, its integers within 64 bits; "
                           "the service then reads it without writing it back to prove it (about 0.5 ms less a "
                           "300 KB body). A key given twice is still refused; a false declaration gets no other "
                           "document: an integer beyond 64 bits reads as the same number where a number belongs "
                           "and is refused, naming the field, where an integer belongs. Left out: the body is "
                           "proved as it is. Any other value: 400 naming Schedopt-Body."}


def build_openapi() -> dict[str, Any]:
    """The OpenAPI document (a dict)."""
    from ..schemas import load

    schema = load("service")
    auth: list[dict[str, list[str]]] = [{"bearer": []}]
    open_: list[dict[str, list[str]]] = []
    paths = {
        "/healthz": {"get": {"summary": "liveness: the process answers", "security": open_,
                             "responses": _ok("health", "alive")}},
        "/readyz": {"get": {"summary": "readiness: the session is loaded and the service is not stopping",
                            "security": open_, "responses": {**_ok("ready", "ready"), "503": {
                                "description": "stopping", "content": {_JSON: {"schema": _ref("ready")}}}}}},
        "/openapi.json": {"get": {"summary": "this document", "security": open_,
                                  "responses": {"200": {"description": "the OpenAPI document"}}}},
        "/metrics": {"get": {"summary": "metrics in the Prometheus text format", "security": auth, "responses": {
            "200": {"description": "decision latency histogram, decisions, events, jobs, GPUs in use, errors",
                    "content": {"text/plain": {"schema": {"type": "string"}}}}, **_errors(401)}}},
        "/v1/events": {"post": {
            "summary": "apply an event batch (in order, all or none); saved before answered", "security": auth,
            "parameters": [_COMPACT],
            "requestBody": {"required": True, "content": {_JSON: {"schema": _ref("events_request")}}},
            "responses": {**_ok("events_response", "applied (or a duplicate seq, not applied again)"),
                          **_errors(400, 401, 409, 413, 415, 500)}}},
        "/v1/decide": {"post": {
            "summary": "the plan at now, within the deadline (past it: the previous plan); saved before answered",
            "security": auth, "parameters": [_COMPACT],
            "requestBody": {"required": True, "content": {_JSON: {"schema": _ref("decide_request")}}},
            "responses": {**_ok("decide_response", "the plan"), **_errors(400, 401, 409, 413, 415, 500)}}},
        "/v1/plan": {"get": {"summary": "the last plan", "security": auth,
                             "responses": {**_ok("plan_response", "the last plan"), **_errors(401)}}},
        "/v1/state": {"get": {"summary": "the state now: what a restart restores (the state file and its journal); "
                                         "409 while a decision runs", "security": auth,
                              "responses": {**_ok("state", "the state"), **_errors(401, 409)}}},
    }
    return {
        "openapi": "3.1.0",
        "info": {"title": "schedopt decision service", "version": "1",
                 "description": "schedopt serve: one scheduling session (schedopt.live) behind HTTP/JSON. "
                                "Every refusal is an error document naming the field and the value."},
        "servers": [{"url": "http://127.0.0.1:8677"}],
        "jsonSchemaDialect": "https://json-schema.org/draft/2020-12/schema",
        "security": auth,
        "paths": paths,
        "components": {"securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
                       "schemas": _rewrite(schema["$defs"])},
    }


def main(argv: list[str] | None = None) -> int:
    """Write the document to ``schedopt/schemas/openapi.json`` (or the path given)."""
    args = sys.argv[1:] if argv is None else argv
    out = Path(args[0]) if args else Path(__file__).resolve().parents[1] / "schemas" / "openapi.json"
    out.write_text(json.dumps(build_openapi(), indent=1) + "\n")
    print(out)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
