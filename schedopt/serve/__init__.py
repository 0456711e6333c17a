"""``schedopt serve``: a decision service over one :mod:`schedopt.live` session (issue 38).

An HTTP/JSON API (Starlette on uvicorn: the ``serve`` extra) to submit events, ask for a decision within a
deadline, read the state and the last plan, probe health and readiness and scrape metrics in the Prometheus text
format. Secure by default: 127.0.0.1, a bearer token from a file, request size limits, one decision at a time. Every
change is saved before it is answered (a journal record; the whole state, atomically, every few decisions) and
restored at start; SIGTERM stops cleanly.

Modules: ``service`` (the core, apart from HTTP), ``app`` (the routes), ``adapter`` (the only one that calls the
session's API), ``body`` (strict JSON bodies), ``events`` and ``columns`` (progress reports read fast), ``state`` (the state
file), ``journal`` (the changes since its last snapshot), ``metrics``, ``openapi``, ``run``
(uvicorn, the token) and ``cli``. The client is :class:`schedopt.live.ServiceClient`. This package imports neither
Starlette nor uvicorn until a service is made.
"""

from __future__ import annotations

__all__: list[str] = []
