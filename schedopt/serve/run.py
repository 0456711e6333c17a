"""Starting the service: the token file, the listening socket, uvicorn, and a clean stop on SIGTERM / SIGINT.

uvicorn handles SIGTERM and SIGINT: it stops accepting connections, lets the requests in flight finish, then runs
the application's shutdown, which waits for a running decision and saves the state (see :mod:`.app`).
"""

from __future__ import annotations

import faulthandler
import gc
import logging
import os
import secrets
import signal
import socket
import stat
import sys
from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError

__all__ = ["GC_THRESHOLD", "ServeConfig", "read_token", "serve", "tune_gc"]

log = logging.getLogger("schedopt.serve")

LOOPBACK = frozenset({"127.0.0.1", "::1", "localhost"})


@dataclass(frozen=True)
class ServeConfig:
    """``schedopt serve``'s settings. ``port`` 0 takes any free port (written to ``port_file`` when given)."""

    state: Path
    init: Path | None = None
    host: str = "127.0.0.1"
    port: int = 8677
    token_file: Path | None = None
    port_file: Path | None = None
    max_body: int = 8 * 2**20
    deadline: float = 30.0
    snapshot_every: int = 10

    def __post_init__(self) -> None:
        if isinstance(self.port, bool) or not isinstance(self.port, int) or not 0 <= self.port <= 65535:
            raise InputError("port", self.port, "must be an integer in [0, 65535]")
        if isinstance(self.max_body, bool) or not isinstance(self.max_body, int) or self.max_body < 1024:
            raise InputError("max_body", self.max_body, "must be an integer >= 1024 bytes")
        if not (isinstance(self.deadline, (int, float)) and 0 < self.deadline < float("inf")):
            raise InputError("deadline", self.deadline, "must be a finite number of seconds > 0")
        if isinstance(self.snapshot_every, bool) or not isinstance(self.snapshot_every, int) or not (
                1 <= self.snapshot_every <= 10_000):
            raise InputError("snapshot_every", self.snapshot_every, "must be an integer in [1, 10000]")
        if not self.host:
            raise InputError("host", self.host, "must be a host name or address")

    @property
    def token_path(self) -> Path:
        return self.token_file if self.token_file is not None else self.state.with_name(self.state.name + ".token")


def read_token(path: Path, create: bool) -> str:
    """The bearer token: the first line of ``path``. With ``create``, a missing file is made with a new random
    token, readable by its owner only (0600). A file that group or others may read is refused."""
    if create and not path.exists():
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(secrets.token_urlsafe(32) + "\n")
        log.warning("wrote a new bearer token to %s (readable by you only)", path)
    try:
        mode = path.stat().st_mode
        text = path.read_text(encoding="ascii")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError("token_file", str(path), f"cannot be read: {exc}") from None
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise InputError("token_file", str(path), f"is open to group or others (mode {stat.S_IMODE(mode):o}): "
                         "chmod 600 it")
    lines = text.splitlines()
    token = lines[0].strip() if lines else ""
    if len(token) < 16 or not token.isprintable():
        raise InputError("token_file", str(path), "must hold a token of at least 16 printable characters on its "
                         "first line")
    return token


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # uvicorn writes a response's head and body apart; the connections accepted here inherit TCP_NODELAY, without
    # which the body waited for the client's delayed ACK (40 ms a request on a kept-alive connection, measured)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise InputError("port" if exc.errno == 98 else "host", port if exc.errno == 98 else host,
                         f"cannot listen there: {exc.strerror}") from None
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


#: the service's youngest-generation threshold of the cyclic garbage collector (Python's default is 700): net
#: allocations (allocated less freed) between two collections of the youngest generation
GC_THRESHOLD = 200_000


def tune_gc() -> None:
    """The collector set for a service holding a large session: what is alive once the state is restored (the
    modules, the session) is frozen out of every later collection (``gc.freeze``: most of it lives as long as the
    process; a part of it that later becomes garbage in a reference cycle is never freed: at most the restored
    state, once), and the youngest generation is collected every :data:`GC_THRESHOLD` net allocations instead of
    700. A round replaces most of what the session holds (views, plans, the answer): its new objects are alive
    until the next round frees them, so the net count rises by about a round's worth (about 100,000 objects at
    2,048 GPUs and 4,096 jobs: the decision runs with the collector paused, and the plan's documents follow) and
    falls back. A collection walks every young object alive, about 15 ms of CPU for a round's worth at that size
    (sia): with a threshold below a round's worth, one or more every request, each walking objects that the next
    round frees anyway; at 200,000, a collection when the session has grown by that much (measured, sia at 2,048
    GPUs, 30 rounds: 5 ms a round on average instead of 15 to 20, none in most requests). With the defaults, about
    110 collections in one request, 90 ms. Garbage in reference cycles waits longer to be freed (a round makes
    about a hundred such objects; at most 200,000 wait)."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(GC_THRESHOLD, 10, 10)


def serve(config: ServeConfig) -> int:
    """Run the service until SIGTERM or SIGINT; the exit status (0 after a clean stop)."""
    import uvicorn

    from ..goodput import blas_threads
    from ..live.persist import remove_temporaries
    from .adapter import open_session
    from .app import create_app
    from .journal import Journal, journal_path, read_journal
    from .service import Service

    if not config.state.parent.is_dir():  # before the token file, which is made beside the state by default
        raise InputError("state", str(config.state), f"its folder {str(config.state.parent)!r} does not exist "
                         "(the service saves its state there; create it first)")
    for left in remove_temporaries(config.state):  # a save cut short by a kill
        log.warning("removed %s, left by a save that was cut short", left)
    existed = config.state.exists()
    session, meta = open_session(config.state, config.init)
    token = read_token(config.token_path, create=config.token_file is None)
    jpath = journal_path(config.state)
    records = read_journal(jpath) if existed else []
    journal = Journal(jpath)
    service = Service(session, config.state, config.deadline, meta, journal=journal,
                      snapshot_every=config.snapshot_every)
    if not existed:
        service.save()  # the state file exists from the start: a crash before the first decision restarts here
    elif journal.size:  # the changes since the last snapshot, applied again; then a snapshot holds them
        replayed = service.replay(records)
        service.save()
        log.warning("restored round %d: the state file and %d change(s) from its journal", service.meta.round,
                    replayed)
    tune_gc()
    app = create_app(service, token, config.max_body, drain_timeout=config.deadline)
    if config.host not in LOOPBACK:
        log.warning("listening on %s, beyond this machine: the API is plain HTTP, put it behind a TLS proxy",
                    config.host)
    sock = _bind(config.host, config.port)
    port = sock.getsockname()[1]
    if config.port_file is not None:
        tmp = config.port_file.with_name(config.port_file.name + ".tmp")
        tmp.write_text(f"{port}\n")
        os.replace(tmp, config.port_file)
    print(f"schedopt serve: listening on http://{config.host}:{port} (state {config.state}, round {meta.round})",
          file=sys.stderr, flush=True)
    server = uvicorn.Server(uvicorn.Config(
        app, log_level="warning", access_log=False, lifespan="on", timeout_keep_alive=30,
        timeout_graceful_shutdown=int(config.deadline) + 5, h11_max_incomplete_event_size=64 * 1024,
        limit_concurrency=256, server_header=False))
    # uvicorn stops gracefully on SIGTERM / SIGINT, restores the handlers it found, then raises the signal again;
    # the handlers found are these no-ops, so that a stop asked for ends the process with status 0
    # kill -USR1 <pid>: every thread's stack on stderr (a service that seems stuck says where)
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    stops: list[int] = []
    previous = {sig: signal.signal(sig, lambda signum, frame: stops.append(signum))
                for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        # one BLAS thread for the process, set here on the main thread: the session limits BLAS to one thread around
        # every decision and refit (vectors of tens of elements: OpenBLAS's second thread only spins), but the
        # decision runs on a worker thread, and OpenBLAS ignores a count set from another thread once the main
        # thread has set one (the refits of an event batch do, on the event loop): the limit never took effect
        # there, and OpenBLAS's second thread spun through sia's decision (20 to 30 ms of CPU a round at 2,048
        # GPUs, on no thread the decision's own CPU time counts). The in-process session decides on one thread.
        with blas_threads(1):
            server.run(sockets=[sock])
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0 if server.started else 1
