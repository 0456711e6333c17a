"""One fuzz case in its own process, with a time limit (issue 41).

A case that crashes the interpreter (a C extension's recursion, a segfault), hangs inside C code where SIGALRM cannot
reach it, or leaves state behind (a solver's thread pool, a patched module) must not take the fuzzer with it.
:func:`run_isolated` runs a case of a registry in a child process started by ``multiprocessing``'s ``forkserver``
(a clean server forked once, so a child never inherits a solver's threads from the parent) and classifies what came
back: the child's own :class:`~schedopt.testing.fuzz.Outcome` (it runs the case under
:func:`~schedopt.testing.fuzz.time_limit`), ``hang`` when it sent nothing within the limit plus a grace second (it is
then killed), or ``raw`` when it died without an answer (the exit code or signal is said).

A case is named by ``(registry, surface, label)``: ``registry`` is the importable name of a module with a
``run_named_case(surface, label, timeout) -> Outcome`` function (:mod:`schedopt.testing.fuzz.inputs` has one), so
that nothing unpicklable (lambdas, open files) crosses the process boundary.
"""

from __future__ import annotations

import importlib
import multiprocessing
import time
from typing import Any

from .catalog import Bad
from .runner import Case, Outcome

__all__ = ["GRACE_SECONDS", "START_SECONDS", "run_isolated"]

#: seconds the parent waits past the case's limit before it kills the child (the child's own alarm fires first)
GRACE_SECONDS = 1.0
#: seconds a child may take to start (a fork of the server on a loaded machine): not the case's time
START_SECONDS = 60.0


def _child(conn: Any, registry: str, surface: str, label: str, timeout: float) -> None:
    try:
        conn.send(("started",))  # the case's clock starts now, not when the parent asked (a loaded machine forks late)
        out = importlib.import_module(registry).run_named_case(surface, label, timeout)
        conn.send((out.status, out.detail, out.seconds))
    except BaseException as exc:  # the harness itself failed: say so, as a raw outcome
        conn.send(("raw", f"the fuzz harness failed in the child: {type(exc).__name__}: {exc}", 0.0))
    finally:
        conn.close()


#: registries whose modules every case process finds imported: the forkserver is one per process and takes its
#: preload list when it starts, so the list names every registry, whichever runs first
REGISTRIES = ("schedopt.testing.fuzz.inputs",)


def _context(registry: str) -> Any:
    """The forkserver context, its server preloading every registry of :data:`REGISTRIES` (and ``registry``) and the
    modules each names in ``PRELOAD``, so that a case's process starts warm: the imports happen once in the server,
    not once per case. (A server some other code started earlier keeps its own list: the cases then run, slower.)"""
    if "forkserver" not in multiprocessing.get_all_start_methods():  # pragma: no cover - not POSIX
        return multiprocessing.get_context("spawn")
    ctx = multiprocessing.get_context("forkserver")
    if not _preloaded:
        mods: set[str] = {__name__}
        for reg in {*REGISTRIES, registry}:
            mods |= {reg, *getattr(importlib.import_module(reg), "PRELOAD", ())}
        ctx.set_forkserver_preload(sorted(mods))
        _preloaded.append(True)
    return ctx


_preloaded: list[bool] = []


def run_isolated(registry: str, surface: str, label: str, timeout: float = 5.0, *, reject: bool = True) -> Outcome:
    """Run case ``label`` of ``surface`` from ``registry`` in its own process (see the module doc)."""
    ctx = _context(registry)
    _start_server(ctx)
    recv, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(send, registry, surface, label, timeout), daemon=True)
    case = Case("input", Bad(label, None, reject))
    t0 = time.perf_counter()
    proc.start()
    send.close()
    try:
        if recv.poll(START_SECONDS) and recv.recv() == ("started",) and recv.poll(timeout + GRACE_SECONDS):
            status, detail, seconds = recv.recv()
            return Outcome(status, surface, case, detail, seconds)
        return Outcome("hang", surface, case, f"no answer within {timeout} s (+{GRACE_SECONDS} s grace): killed",
                       time.perf_counter() - t0)
    except EOFError:
        proc.join(5.0)
        return Outcome("raw", surface, case, f"the process died without an answer (exit code {proc.exitcode})",
                       time.perf_counter() - t0)
    finally:
        recv.close()
        if proc.is_alive():
            proc.kill()
        proc.join(5.0)


def _ping() -> None:
    """The first child: its start starts the server (and its imports), which is no case's time."""


def _start_server(ctx: Any) -> None:
    if _started:
        return
    proc = ctx.Process(target=_ping, daemon=True)
    proc.start()
    proc.join(300.0)
    _started.append(True)


_started: list[bool] = []


def run_named_case(surface: str, label: str, timeout: float = 5.0) -> Outcome:
    """This module as a registry of its own, the cases the isolation exists for (the fuzzer's own test): ``exit``
    (the process dies mid-case), ``deaf hang`` (SIGALRM blocked, then a sleep: only the parent's kill ends it),
    ``named`` (a SchedoptError, the child answering normally)."""
    import os
    import signal

    from ...errors import InputError
    from .runner import EntryPoint, run_case

    def call() -> None:
        if label == "exit":
            os._exit(3)
        if label == "deaf hang":
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
            time.sleep(3600)
        raise InputError("x", label, "a named error")

    return run_case(EntryPoint(surface, call, dict, {}), None, timeout)
