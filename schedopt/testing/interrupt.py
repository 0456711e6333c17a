"""Send Ctrl-C to a solve in a child process, the way a user would (for tests of interrupted solves)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass

__all__ = ["Interrupted", "sigint_child", "sigint_default"]


@dataclass(frozen=True)
class Interrupted:
    returncode: int
    stdout: str  #: what the child printed after its "ready" line
    stderr: str
    waited: float  #: seconds from the SIGINT to the child's exit


def sigint_default() -> None:
    """``preexec_fn`` for a child that a test interrupts: SIGINT back to its default disposition, so the child's
    Python turns it into ``KeyboardInterrupt`` even when the test runs where SIGINT is ignored (a background job of
    a non-interactive shell, ``nohup CMD &``, passes SIG_IGN down to every process it starts)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def sigint_child(code: str, *args: str, delay: float = 1.0, timeout: float = 20.0) -> Interrupted:
    """Run ``python -c code *args`` (this directory on ``PYTHONPATH``); once it prints ``ready``, wait ``delay``
    seconds, send SIGINT and collect what it prints until it exits (killed after ``timeout``)."""
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    p = subprocess.Popen([sys.executable, "-c", code, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, env=env, preexec_fn=sigint_default)
    try:
        assert p.stdout is not None and p.stderr is not None
        first = p.stdout.readline().strip()
        if first != "ready":
            raise AssertionError(f"the child did not get ready: {first!r} {p.stderr.read()}")
        time.sleep(delay)
        t0 = time.perf_counter()
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=timeout)
        waited = time.perf_counter() - t0
    finally:
        if p.poll() is None:
            p.kill()
    return Interrupted(p.returncode, out, err, waited)
