"""A real ``schedopt serve`` process for tests and benchmarks: started on 127.0.0.1 with an ephemeral port, waited
for until ready, stopped with SIGTERM (or killed with SIGKILL, to test a crash)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import TracebackType
from typing import cast

from ..live import ReplayExecutor, Session
from ..live.client import ServiceClient, ServiceSession
from ..sim import Workload

__all__ = ["ServiceProcess", "ServiceReplay"]


class ServiceReplay(ReplayExecutor):
    """:class:`~schedopt.live.ReplayExecutor` with a service's session (:class:`~schedopt.live.client.ServiceSession`)
    in place of the in-process one: every decision comes from the service. ``settings``: an in-process session made
    as the service's (the same cluster, policy and round), from which the executor takes the job model's settings
    only; it decides nothing."""

    def __init__(self, remote: ServiceSession, workload: Workload, settings: Session) -> None:
        super().__init__(settings, workload)
        self.session = cast(Session, remote)


class ServiceProcess:
    """``schedopt serve --state STATE [--init INIT] --port 0`` in a child process. ``workdir`` holds the token file,
    the port file and the log (stderr). :meth:`start` returns once ``/readyz`` answers; :meth:`client` gives a
    :class:`~schedopt.live.client.ServiceClient`; :meth:`stop` sends SIGTERM and returns the exit status;
    :meth:`kill` sends SIGKILL. ``code``: the schedopt checkout to run (default: this one)."""

    def __init__(self, workdir: Path, state: Path, init: Path | None = None, extra: tuple[str, ...] = (),
                 start_timeout: float = 60.0, pythonpath: tuple[str, ...] = (), code: Path | None = None) -> None:
        self.workdir = Path(workdir)
        self.state = Path(state)
        self.init = init
        self.extra = extra
        self.start_timeout = start_timeout
        self.pythonpath = pythonpath
        #: the schedopt checkout the service runs (default: the one this module is in; a benchmark may run an older
        #: one beside the current)
        self.code = Path(__file__).resolve().parents[2] if code is None else Path(code)
        self.token_file = self.workdir / "token"
        self.port_file = self.workdir / "port"
        self.log = self.workdir / "serve.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.port = 0
        self._launched = 0.0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def token(self) -> str:
        return self.token_file.read_text().splitlines()[0].strip()

    def start(self, port: int = 0) -> ServiceProcess:
        """Start the service on ``port`` (0: any free one; the port of a killed service to restart it there) and
        return once it is ready."""
        return self.launch(port).wait_started()

    def launch(self, port: int = 0) -> ServiceProcess:
        """Start the process and return at once (:meth:`wait_started` waits for it: work can go on meanwhile)."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        if not self.token_file.exists():
            fd = os.open(self.token_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as fh:
                fh.write("test-token-" + os.urandom(16).hex() + "\n")
        self.port_file.unlink(missing_ok=True)
        cmd = [sys.executable, "-m", "schedopt", "serve", "--state", str(self.state), "--host", "127.0.0.1",
               "--port", str(port), "--port-file", str(self.port_file), "--token-file", str(self.token_file),
               *self.extra]
        if self.init is not None:
            cmd += ["--init", str(self.init)]
        path = [str(self.code), *self.pythonpath, os.environ.get("PYTHONPATH", "")]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in path if p)}
        with open(self.log, "ab") as log:
            # run from the checkout: `python -m` puts the working folder first on the path
            self.proc = subprocess.Popen(cmd, stdout=log, stderr=log, stdin=subprocess.DEVNULL, env=env,
                                         cwd=self.code)
        self._launched = time.monotonic()
        return self

    def wait_started(self) -> ServiceProcess:
        """Wait until the launched service listens and is ready (RuntimeError with its log if it exits or takes
        longer than ``start_timeout``)."""
        assert self.proc is not None, "launch() first"
        end = self._launched + self.start_timeout
        while not self.port_file.exists():
            if self.proc.poll() is not None:
                raise RuntimeError(f"schedopt serve exited with {self.proc.returncode}: {self.log_text()[-2000:]}")
            if time.monotonic() > end:
                self.kill()
                raise RuntimeError(f"schedopt serve did not start in {self.start_timeout} s: {self.log_text()}")
            time.sleep(0.02)
        self.port = int(self.port_file.read_text())
        with self.client() as c:
            c.wait_ready(max(1.0, end - time.monotonic()))
        return self

    def client(self, timeout: float = 60.0, retries: int = 0) -> ServiceClient:
        return ServiceClient(self.url, token_file=self.token_file, timeout=timeout, retries=retries)

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def stop(self, timeout: float = 60.0) -> int:
        """SIGTERM, then the exit status (SIGKILL after ``timeout`` s: the status is then -9)."""
        if self.proc is None:
            return 0
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        code = self.proc.returncode
        self.proc = None
        return code

    def kill(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None

    def __enter__(self) -> ServiceProcess:
        return self.start()

    def __exit__(self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        if self.proc is not None:
            self.stop()
