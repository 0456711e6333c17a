"""Ctrl-C for native solves: a solve runs in a worker thread while the main thread waits where a SIGINT handler can
run, and every solve nested in it (mckp's residual sub-solves, its race) joins the same stop scope.

A core module (no backend, no solver): the backends (:mod:`schedopt.backends.base` re-exports these names) and the
mckp solver both use it, so the mckp package needs nothing from the backends package (tests/test_import_graph.py).
"""

from __future__ import annotations

import importlib
import os
import queue
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["StopScope", "WorkerTask", "nested_stop_scope", "run_interruptible", "submit"]


class StopScope:
    """The stops of the solves running in one interruptible call's worker thread: a SIGINT in the main thread calls
    the outer solve's stop and every nested solve's (a CP-SAT residual inside mckp, ...)."""

    def __init__(self) -> None:
        # reentrant: the SIGINT handler runs cancel() in the main thread, possibly between two bytecodes of this
        # very scope's push or pop there (a nested in-place solve), which hold the lock; a plain Lock would hang
        self._lock = threading.RLock()
        self._stops: list[Callable[[], None]] = []
        self.cancelled = False

    def cancel(self) -> None:
        with self._lock:
            self.cancelled = True
            stops = list(self._stops)
        for stop in stops:
            stop()

    def push(self, stop: Callable[[], None]) -> None:
        with self._lock:
            self._stops.append(stop)
            cancelled = self.cancelled
        if cancelled:  # the stop came first: the nested solve is asked to stop at once
            stop()

    def pop(self, stop: Callable[[], None]) -> None:
        with self._lock:
            self._stops.remove(stop)


#: the C module under :mod:`signal`: its ``getsignal`` / ``signal`` take and return the raw handlers (ints or
#: callables) that :mod:`signal` wraps in enums both ways (about 10 us of a solve's 3 handler calls); a handler read
#: raw and set back raw is the same handler
_RAW_SIGNAL: Any = importlib.import_module("_signal")

_THREAD = threading.local()  #: ``scope``: the StopScope of the interruptible call this worker thread runs


@contextmanager
def nested_stop_scope() -> Iterator[StopScope]:
    """Run the ``with`` body under a fresh stop scope in this thread: every solve nested in it
    (:func:`run_interruptible`) registers its stop there, so ``scope.cancel()`` from any thread stops just those
    solves (mckp's race: HiGHS on the whole model won, its residual solve is stopped), while a cancel of the
    enclosing scope (a Ctrl-C) still reaches them."""
    parent: StopScope | None = getattr(_THREAD, "scope", None)
    scope = StopScope()
    if parent is not None:
        parent.push(scope.cancel)
    _THREAD.scope = scope
    try:
        yield scope
    finally:
        _THREAD.scope = parent
        if parent is not None:
            parent.pop(scope.cancel)


class WorkerTask:
    """One call handed to the :func:`submit` pool: ``done`` is set when it ended, with ``value`` or ``error``."""

    def __init__(self, call: Callable[[], Any], scope: StopScope | None) -> None:
        self.call, self.scope = call, scope
        self.done = threading.Event()
        self.value: Any = None
        self.error: BaseException | None = None

    def run(self) -> None:
        """Run the call (``done`` is set by the worker once it is idle again, so a waiter woken by it finds the
        worker free for its next call)."""
        _THREAD.scope = self.scope
        try:
            self.value = self.call()
        except BaseException as exc:  # handed to whoever waits on the task
            self.error = exc
        finally:
            _THREAD.scope = None

    def result(self) -> Any:
        """Wait in Python (0.05 s slices, so a SIGINT handler of this thread runs) and return the value."""
        while not self.done.wait(0.05):
            pass
        if self.error is not None:
            raise self.error
        return self.value


class _Workers:
    """Daemon worker threads kept for the process's solves: an idle one takes the next task, a new one is started
    only when none is idle (a thread start per solve cost 0.1-0.2 ms on a quiet machine and several ms on a loaded
    one: 606 of them were 5 s of a saturn/1 profile at load 14). Daemon, as the one-thread-per-solve workers were:
    a solve still running after a second Ctrl-C never holds up the interpreter's exit."""

    def __init__(self) -> None:
        self._tasks: queue.SimpleQueue[WorkerTask] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0
        self.started = 0

    def submit(self, task: WorkerTask) -> WorkerTask:
        with self._lock:
            spawn = self._idle == 0
            if spawn:
                self.started += 1
            else:
                self._idle -= 1
        if spawn:
            threading.Thread(target=self._loop, name="schedopt-solve", daemon=True).start()
        self._tasks.put(task)
        return task

    def _loop(self) -> None:
        while True:
            task = self._tasks.get()
            try:
                task.run()
            finally:
                with self._lock:
                    self._idle += 1
                task.done.set()

    def busy(self) -> bool:
        """Whether a solve is running (or queued) on a worker thread right now."""
        with self._lock:
            return self._idle != self.started


_WORKERS = _Workers()


def _fresh_workers_after_fork() -> None:
    """A forked child has none of its parent's worker threads (a fork copies only the calling thread): without this
    reset, a task queued for an "idle" inherited worker would wait forever (found by the forked benchmark runs)."""
    global _WORKERS
    _WORKERS = _Workers()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_fresh_workers_after_fork)


def solve_workers_busy() -> bool:
    """Whether one of the process's solve worker threads is running a solve (a fork now would copy a half-done one's
    locks): :func:`schedopt.bench.runner.fork_usable` asks before it forks."""
    return _WORKERS.busy()


def submit(call: Callable[[], Any], scope: StopScope | None = None) -> WorkerTask:
    """Run ``call()`` on one of the process's solve worker threads (``scope``: its stop scope there, so the solves
    nested in ``call`` register their stops with it); returns the :class:`WorkerTask` to wait on."""
    return _WORKERS.submit(WorkerTask(call, scope))


def _in_worker(call: Callable[[], Any], scope: StopScope) -> Any:
    """``call()`` on a worker thread whose nested solves join ``scope``, while this (main) thread waits in Python,
    where the SIGINT handler installed by the caller can run."""
    return submit(call, scope).result()


def run_interruptible(call: Callable[[], Any], stop: Callable[[], None], *,
                      in_place: bool = False) -> tuple[Any, bool]:
    """Run ``call()`` so that Ctrl-C (SIGINT) stops it promptly: returns ``(value, interrupted)``.

    In the main thread the call runs in a worker thread (the solvers used here release the GIL) while the main
    thread waits in Python, where a SIGINT handler can run: the first SIGINT calls ``stop()`` (the solver's own
    cancel: ``CpSolver.stop_search``, ``Highs.cancelSolve``, MathOpt's ``SolveInterrupter``) and the solve returns
    what it holds, which the backend reports with :attr:`Limit.INTERRUPTED`; a second SIGINT raises
    ``KeyboardInterrupt`` at once.

    ``in_place=True`` is for a call that runs Python code between short native calls (mckp's own loop, whose
    ``stop`` sets a flag it checks): it runs in the main thread itself, with the same handler (a signal handler
    runs between two bytecodes of the main thread), so it costs no thread (about 0.2 ms wall per call, many
    times a 64-GPU round's native work). A solve nested in it that is not in place (mckp's CP-SAT residual)
    still gets its worker thread, and the same first SIGINT stops both.

    A call made from that worker thread (a sub-solve: mckp's CP-SAT residual problem), or from inside an in-place
    call, registers its ``stop`` with the outer call for as long as it runs, so the same SIGINT stops it too, and it
    reports ``interrupted``; a stop that came before it started is passed on at once. Any other thread (no signal
    handler can be installed there) runs ``call()`` directly."""
    main = threading.current_thread() is threading.main_thread()
    scope: StopScope | None = getattr(_THREAD, "scope", None)
    if scope is not None:  # nested: in a worker thread, or in the main thread inside an in-place call
        scope.push(stop)
        try:
            value = _in_worker(call, scope) if main and not in_place else call()
        finally:
            scope.pop(stop)
        return value, scope.cancelled
    if not main:
        return call(), False
    raw = _RAW_SIGNAL
    old = raw.getsignal(signal.SIGINT)
    if old is None:  # a handler installed from C: leave it alone
        return call(), False
    outer = StopScope()  # cancelled only by on_sigint (its ``cancelled``: a first SIGINT came)
    outer.push(stop)

    def on_sigint(signum: int, frame: Any) -> None:
        if outer.cancelled:
            raise KeyboardInterrupt
        outer.cancel()

    raw.signal(signal.SIGINT, on_sigint)
    try:
        if in_place:
            _THREAD.scope = outer
            try:
                value = call()
            finally:
                _THREAD.scope = None
        else:
            value = _in_worker(call, outer)
    finally:
        raw.signal(signal.SIGINT, old)
    return value, outer.cancelled
