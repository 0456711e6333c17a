"""``schedopt serve``: a decision service over one :mod:`schedopt.live` session (issue 38).

An HTTP/JSON API (Starlette on uvicorn: the ``serve`` extra) to submit events, ask for a decision within a
deadline, read the state and the last plan, probe health and readiness and scrape metrics in the Prometheus text
format. Secure by default: 127.0.0.1, a bearer token from a file, request size limits, one decision at a time. The
state is saved atomically after every change and restored at start; SIGTERM stops cleanly.

Modules: ``service`` (the core, apart from HTTP), ``app`` (the routes), ``adapter`` (the only one that calls the
session's API), ``body`` (strict JSON bodies), ``state`` (the state file), ``metrics``, ``openapi``, ``run``
(uvicorn, the token) and ``cli``. The client is :class:`schedopt.live.ServiceClient`. This package imports neither
Starlette nor uvicorn until a service is made.
"""

from __future__ import annotations

__all__: list[str] = []
