"""Run a solver call in a forked child process that Ctrl-C kills: for solvers with no cancel hook (issue 20).

``scipy.optimize.milp`` / ``linprog`` hand the model to HiGHS with no way to reach the running solver (no callback,
no cancel, no handle), and pyomo's solver interface exposes none either (pyomo's HiGHS plugin even lets Ctrl-C
raise a raw ``KeyboardInterrupt`` out of a HiGHS callback, losing the solve). Where a prompt Ctrl-C matters (the
CLI, a notebook) these backends take ``in_child_process=True``: the call then runs in a ``fork``-ed child, the
parent waits in Python where a SIGINT handler can run, and the first Ctrl-C kills the child (SIGKILL) and returns at
once. The incumbent the child held is lost with it, so an interrupted call reports NO_SOLUTION_FOUND with
:attr:`~schedopt.results.Limit.INTERRUPTED`, never a guess; a second Ctrl-C raises ``KeyboardInterrupt``.

It is an option, off by default, because it costs a fork and a pickle of the answer per solve: measured by
``tools/bench_fork_overhead.py`` (medians of 11, shared 2-core machine, 2026-11-23, commit 9dd3814; the script is in
git history) at +23 ms (scipy) and
+67 ms (pyomo) on a 3-binary knapsack that solves in 1.4 / 9.3 ms, +50 / +58 ms on a 64-GPU Sia model (13.6 /
40.1 ms): many times a small solve, noise on a solve of seconds, the only kind a user interrupts. The CLI, where
Ctrl-C is how a user stops a long solve, is the place to turn it on. Outside the main thread, where no signal handler can be
installed, and on platforms without ``os.fork``, the call runs in place.

A child that dies without answering (a crash inside the solver) raises :class:`ChildProcessDied`: the backend
reports it as ERROR with the signal, where an in-process crash would have taken the interpreter down.
"""

from __future__ import annotations

import os
import pickle
import select
import signal
import sys
import threading
from collections.abc import Callable
from typing import Any

from ..errors import BackendError, InputError

__all__ = ["IN_CHILD_OPTION", "ChildProcessDied", "pop_in_child_option", "run_forked", "set_in_child_default"]

#: the backend option (scipy, pyomo) that runs the solve in a child process Ctrl-C can kill
IN_CHILD_OPTION = "in_child_process"


class ChildProcessDied(BackendError):
    """The child process running a solve exited without an answer (a crash inside the solver)."""


_DEFAULT = [False]


def set_in_child_default(flag: bool) -> bool:
    """Make ``in_child_process`` default to ``flag`` for every later scipy / pyomo solve of this process (a solve's
    own option still wins); returns the previous default. The CLI turns it on: there Ctrl-C is how a user stops a
    long solve, and a nested solve cannot be given the option by hand."""
    if not isinstance(flag, bool):
        raise InputError("flag", flag, "must be True or False")
    old, _DEFAULT[0] = _DEFAULT[0], flag
    return old


def pop_in_child_option(options: dict[str, Any]) -> bool:
    """Remove :data:`IN_CHILD_OPTION` from a backend's options (it is schedopt's, not the solver's) and return it
    (default: :func:`set_in_child_default`'s, False unless changed); anything but a bool is an
    :class:`~schedopt.errors.InputError` naming the option."""
    value = options.pop(IN_CHILD_OPTION, _DEFAULT[0])
    if not isinstance(value, bool):
        raise InputError(f"options.{IN_CHILD_OPTION}", value, "must be True or False")
    return value


def _can_fork() -> bool:
    return (hasattr(os, "fork") and threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGINT) is not None)


def _child(call: Callable[[], Any], w: int) -> None:  # pragma: no cover - runs in the forked child
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a terminal's Ctrl-C reaches the whole group: the parent decides
    try:
        try:
            payload = pickle.dumps(("value", call()), protocol=pickle.HIGHEST_PROTOCOL)
        except BaseException as exc:  # handed to the parent, which raises it
            try:
                payload = pickle.dumps(("error", exc), protocol=pickle.HIGHEST_PROTOCOL)
            except Exception:
                payload = pickle.dumps(("error", RuntimeError(f"{type(exc).__name__}: {exc}")))
        view = memoryview(payload)
        while view:
            view = view[os.write(w, view):]
    finally:
        os._exit(0)


def run_forked(call: Callable[[], Any]) -> tuple[Any, bool]:
    """Run ``call()`` (whose value must pickle) in a forked child: returns ``(value, False)``, or ``(None, True)``
    when Ctrl-C killed the child first. An exception in the child is raised here; a child that dies without an
    answer raises :class:`ChildProcessDied`."""
    if not _can_fork():
        return call(), False
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()  # the child inherits unflushed buffers: write them once, here
        except (AttributeError, ValueError, OSError):
            pass
    r, w = os.pipe()
    old = signal.getsignal(signal.SIGINT)
    hit = threading.Event()

    def on_sigint(signum: int, frame: Any) -> None:
        if hit.is_set():
            raise KeyboardInterrupt
        hit.set()

    signal.signal(signal.SIGINT, on_sigint)
    pid = -1
    try:
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            os.close(r)
            _child(call, w)
        os.close(w)
        chunks: list[bytes] = []
        while not hit.is_set():
            try:
                ready, _, _ = select.select([r], [], [], 0.05)
            except InterruptedError:
                continue
            if ready:
                data = os.read(r, 1 << 20)
                if not data:
                    break
                chunks.append(data)
        if hit.is_set():
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            pid = -1
            return None, True
        _, status = os.waitpid(pid, 0)
        pid = -1
    finally:
        os.close(r)
        if pid > 0:  # an exception (a second Ctrl-C) while the child runs: do not leave it behind
            try:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass
        signal.signal(signal.SIGINT, old)
    if not chunks:
        how = f"signal {-os.waitstatus_to_exitcode(status)}" if os.WIFSIGNALED(status) else \
            f"exit code {os.waitstatus_to_exitcode(status)}"
        raise ChildProcessDied(f"the solver's child process died without an answer ({how})")
    kind, value = pickle.loads(b"".join(chunks))
    if kind == "error":
        raise value
    return value, False
