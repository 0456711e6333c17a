"""``schedopt serve``: the decision service on the command line.

``add_parser(subparsers)`` registers::

    schedopt serve --state /var/lib/schedopt/state.json --init session.json        # first start
    schedopt serve --state /var/lib/schedopt/state.json                             # any later start: restores it

It binds 127.0.0.1 unless ``--host`` says otherwise, reads its bearer token from ``--token-file`` (default: the
state file's name plus ``.token``, made with a random token, mode 0600, when missing), saves every change
before answering it (appended to a journal beside the state file; the whole state every ``--snapshot-every``
decisions) and stops cleanly on SIGTERM. See ``docs/platform/service.md``.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..cli_support import parse_number, positive_float

__all__ = ["add_parser", "cmd_serve"]


def _port(text: str) -> int:
    return int(parse_number(text, int, lambda v: 0 <= v <= 65535, "an integer in [0, 65535]"))


def _bytes(text: str) -> int:
    return int(parse_number(text, int, lambda v: v >= 1024, "a number of bytes >= 1024"))


def _count(text: str) -> int:
    return int(parse_number(text, int, lambda v: 1 <= v <= 10_000, "an integer in [1, 10000]"))


def add_parser(sub: Any) -> None:
    """Add ``schedopt serve`` to the command line's subparsers ``sub``."""
    s = sub.add_parser("serve", help="run the decision service (HTTP/JSON; see docs/platform/service.md)",
                       description=__doc__.split("\n\n")[0] if __doc__ else None,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    s.add_argument("--state", type=Path, required=True,
                   help="the state file: restored at start when it exists, saved (with its journal) after every change")
    s.add_argument("--init", type=Path, default=None,
                   help="the session document to start from when the state file does not exist yet")
    s.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only)")
    s.add_argument("--port", type=_port, default=8677, help="port (default 8677; 0: any free port)")
    s.add_argument("--port-file", type=Path, default=None, help="write the port listened on to this file")
    s.add_argument("--token-file", type=Path, default=None,
                   help="the bearer token's file (default: STATE.token, made with a random token when missing)")
    s.add_argument("--max-body", type=_bytes, default=8 * 2**20, help="largest request body, bytes (default 8 MiB)")
    s.add_argument("--deadline", type=positive_float, default=30.0,
                   help="seconds a decision may take before the previous plan is answered (default 30)")
    s.add_argument("--snapshot-every", type=_count, default=10,
                   help="decisions between two writes of the whole state file; every change in between is "
                        "appended to STATE.journal before it is answered, and applied again at start (default 10)")
    s.add_argument("--verbose", action="store_true", help="log more")
    s.set_defaults(func=cmd_serve)


def cmd_serve(args: argparse.Namespace) -> int:
    """``schedopt serve``: run the decision service until SIGTERM or SIGINT; the exit code."""
    from ..errors import SchedoptError
    from .run import ServeConfig, serve

    config = ServeConfig(state=args.state, init=args.init, host=args.host, port=args.port,
                         token_file=args.token_file, port_file=args.port_file, max_body=args.max_body,
                         deadline=args.deadline, snapshot_every=args.snapshot_every)
    try:
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ModuleNotFoundError as exc:
        raise SchedoptError(f"schedopt serve needs {exc.name}: pip install starlette uvicorn, or pip install -e '.[serve]' from a checkout") from None
    return serve(config)
