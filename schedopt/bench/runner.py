"""Run benchmark sweeps: one process per run, every phase timed apart, a wall-clock guard outside the solver.

Each run executes in a process of its own, started one of two ways (``run(..., start=)``): a fork of the caller
(``"fork"``, the default on Linux for a serial sweep from a single-threaded process: the caller has imported the
package and the problem to find the spec, so the run starts in milliseconds), or a fresh interpreter, ``python -m
schedopt.bench.worker`` (``"exec"``: pool and executor runs, other platforms, a caller with threads; it imports the
package again, about 1.5-2 s of CPU, and never re-imports the caller's ``__main__`` as multiprocessing's spawn
would). Either way the process has its own session (a kill takes every process it started), its stdout on
/dev/null and its stderr in a log whose tail an error record quotes, and its memory peak its own (a forked process
resets the high-water mark it inherits). The child does a tiny warm-up solve with the same backend (so the
backend's import and first-call costs are not charged to the measured phases; they are recorded as ``t_warmup``),
then generates the instance and goes through the phases, sending each phase's result to the parent as it finishes.
The parent waits at most ``guard_seconds`` after the child reports ready; past that it kills the child and records
the run as ``termination="guard"`` — a killed run never holds an incumbent, which is kept apart from a solver time
limit that returned one (``feasible`` with ``limit="time"``).

Peak memory is the child's (``ru_maxrss``, or the high-water mark since its start in a forked or warm process: the
whole process, Python objects, numpy arrays and the solver's own memory), with ``base_rss_mb`` (after imports and
warm-up) recorded next to it.
"""

from __future__ import annotations

import json
import math
import os
import secrets
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO

from ..errors import InputError
from ..params import SolveParams
from ..progress import Progress
from .pipelines import execute, reset_peak_rss, rss_mb
from .records import Record, machine_info, write_records
from .registry import BenchSpec, ProblemIOPipeline, get_spec

__all__ = ["START_METHODS", "Progress", "SweepInterrupted", "WarmWorkers", "child_main", "default_output", "execute",
           "fork_usable", "run"]

_STARTUP_SECONDS = 180.0  #: the most a child may take to import and warm up before its guard starts


# ------------------------------------------------------------------------------------------------------- child
def child_main(conn: Any, task: dict[str, Any], close: bool = True) -> None:
    """The body of ``python -m schedopt.bench.worker``: run ``task`` and report every outcome on ``conn`` (closed
    at the end unless ``close`` is False: a serving worker keeps it for its next task)."""
    def send(kind: str, payload: Any) -> None:
        conn.send((kind, payload))

    try:
        fields = execute(task, send)
        fields["peak_rss_mb"] = rss_mb()
        send("done", fields)
    except BaseException as exc:  # report every failure as a record, never hang the sweep
        tb = traceback.format_exc(limit=6)
        try:
            send("error", {"error": f"{type(exc).__name__}: {exc}", "traceback": tb, "peak_rss_mb": rss_mb()})
        except Exception:
            pass
    finally:
        if close:
            conn.close()


def read_message(stdin: BinaryIO) -> bytes | None:
    """One length-prefixed message (8 bytes of length, little endian, then the bytes), or None at the end of the
    input."""
    head = stdin.read(8)
    if len(head) < 8:
        return None
    n = int.from_bytes(head, "little")
    data = stdin.read(n)
    return data if len(data) == n else None


def serve(conn: Any, stdin: BinaryIO) -> int:
    """Run the length-prefixed task pickles read from ``stdin`` one after another, each reported on ``conn``, until
    the input ends: the body of ``python -m schedopt.bench.worker FD --serve`` and of a forked warm process."""
    import pickle

    while (data := read_message(stdin)) is not None:
        try:
            task = pickle.loads(data)
        except Exception as exc:  # a hook that does not import here
            conn.send(("error", {"error": f"cannot load the task in the run's process: {type(exc).__name__}: {exc}"}))
            continue
        reset_peak_rss()
        child_main(conn, task, close=False)
    conn.close()
    return 0


# ------------------------------------------------------------------------------------------------------ parent
def _kill_group(proc: Any) -> None:
    import signal

    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()


def _payload(task: dict[str, Any]) -> bytes:
    import pickle

    try:
        return pickle.dumps(task)
    except Exception as exc:
        raise InputError("spec", task["spec"].name, f"its hooks must be picklable (module-level functions or "
                         f"'module:function' strings): {exc}") from exc


START_METHODS = ("auto", "fork", "exec")  #: how a run's process starts (see :func:`run`'s ``start``)


def fork_usable() -> str:
    """Why a run's process cannot be forked from this one here ("" when it can): fork needs Linux (the run's memory
    peak is reset with ``/proc/self/clear_refs``; macOS's system libraries are not fork-safe), this process's main
    thread, and no other Python thread but idle solve workers (:mod:`schedopt.interrupt` keeps them after a solve;
    the forked process starts its own). A fork copies only the calling thread, so a lock another thread held would
    stay held in the child."""
    import threading

    from .. import interrupt

    if not sys.platform.startswith("linux") or not hasattr(os, "fork"):
        return f"no fork with a resettable memory peak on {sys.platform}"
    if not os.access("/proc/self/clear_refs", os.W_OK):
        return "/proc/self/clear_refs is not writable (the run's memory peak could not be reset)"
    if threading.current_thread() is not threading.main_thread():
        return "the sweep runs outside the main thread"
    others = [t for t in threading.enumerate() if t is not threading.current_thread()]
    solve_workers = sum(t.name == "schedopt-solve" and t.daemon for t in others)
    if len(others) > solve_workers or interrupt.solve_workers_busy():  # a thread of its own, or a solve running
        return f"other Python threads run in this process ({', '.join(sorted(t.name for t in others))})"
    return ""


class _Forked:
    """A run's process forked from this one, with the part of :class:`subprocess.Popen`'s interface the runner
    uses (``pid``, ``returncode``, ``poll``, ``wait``, ``kill``)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None
        self.stdin: BinaryIO | None = None  #: a warm process's task pipe

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:  # reaped elsewhere (SIGCHLD ignored): its status is lost
                self.returncode = -1
                return self.returncode
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        import subprocess

        end = None if timeout is None else time.perf_counter() + timeout
        pause = 0.0005
        while (code := self.poll()) is None:
            if end is not None and time.perf_counter() >= end:
                raise subprocess.TimeoutExpired(f"forked run process {self.pid}", timeout or 0.0)
            time.sleep(pause)
            pause = min(pause * 2, 0.05)
        return code

    def kill(self) -> None:
        import signal

        if self.poll() is None:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def _forked_main(task: dict[str, Any] | None, rfd: int, wfd: int, errfd: int,
                 tasks_fd: int | None = None) -> None:  # pragma: no cover - the child
    """The body of a forked run's process: a session of its own (a kill takes its group; a terminal's Ctrl-C reaches
    only the parent, which decides), stdout to /dev/null and stderr to the run's log as a fresh process has them,
    the memory peak reset, then :func:`child_main` on ``task``, or (``tasks_fd``, a warm process) the tasks read
    from that pipe, as ``python -m schedopt.bench.worker --serve`` reads them from its stdin. It never returns
    into the parent's stack (``os._exit``)."""
    import signal

    code = 1
    try:
        os.setsid()
        os.close(rfd)
        null = os.open(os.devnull, os.O_RDWR)
        os.dup2(null, 0)
        os.dup2(null, 1)
        os.dup2(errfd, 2)
        os.close(null)
        os.close(errfd)
        sys.stdin, sys.stdout, sys.stderr = (open(fd, mode, closefd=False) for fd, mode in ((0, "r"), (1, "w"),
                                                                                            (2, "w")))
        signal.signal(signal.SIGINT, signal.default_int_handler)  # what a fresh interpreter has
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
        from multiprocessing.connection import Connection

        conn = Connection(wfd, readable=False)
        if tasks_fd is not None:
            code = serve(conn, os.fdopen(tasks_fd, "rb"))
        else:
            assert task is not None
            reset_peak_rss()
            child_main(conn, task)
            code = 0
    except BaseException:
        try:
            traceback.print_exc()
            sys.stderr.flush()
        except BaseException:
            pass
    finally:
        os._exit(code)


class _Child:
    """A run's process: ``python -m schedopt.bench.worker FD [--serve]`` started with the parent's ``sys.path``, or
    (``fork``) a fork of this process (:func:`fork_usable`) that runs ``task``. With ``serve`` it runs task after
    task (a warm process kept across runs) until its input closes."""

    def __init__(self, serve: bool = False, fork: bool = False, task: dict[str, Any] | None = None) -> None:
        import pickle
        import subprocess
        import tempfile
        from multiprocessing.connection import Connection

        rfd, wfd = os.pipe()
        self.errlog = tempfile.TemporaryFile()
        self.serve = serve
        self.runs = 0
        self.forked = fork
        self.proc: Any
        if fork:
            try:
                self._fork(task, rfd, wfd)
            except BaseException:  # a Ctrl-C delivered as the fork returned: leave no process behind
                if hasattr(self, "proc"):
                    self.proc.kill()
                    self.proc.wait()
                for fd in (rfd, wfd):
                    os.close(fd)
                self.errlog.close()
                raise
        else:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "schedopt.bench.worker", str(wfd), *(["--serve"] if serve else [])],
                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=self.errlog, pass_fds=(wfd,),
                close_fds=True, start_new_session=True,  # its own process group: a kill also takes its solvers
            )
        os.close(wfd)
        self.recv = Connection(rfd, writable=False)
        if not fork:
            self._send(pickle.dumps(list(sys.path)), last=False)

    def _fork(self, task: dict[str, Any] | None, rfd: int, wfd: int) -> None:
        import gc
        import signal

        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()  # the child inherits unflushed buffers: write them once, here
            except (AttributeError, ValueError, OSError):
                pass
        # SIGINT stays blocked until the child has its own session (a Ctrl-C in between would otherwise raise
        # KeyboardInterrupt in the child's copy of this stack) and until the parent holds the child's handle
        old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        tasks_r, tasks_w = os.pipe() if self.serve else (None, None)
        freeze = gc.get_freeze_count() == 0  # a caller's own frozen objects stay frozen
        if freeze:
            gc.freeze()  # the child's collections then leave the inherited objects' pages shared (no copy on write)
        try:
            pid = os.fork()
            if pid == 0:  # pragma: no cover - the child
                if tasks_w is not None:
                    os.close(tasks_w)
                _forked_main(task, rfd, wfd, self.errlog.fileno(), tasks_r)
            self.proc = _Forked(pid)
            if tasks_r is not None and tasks_w is not None:
                os.close(tasks_r)
                self.proc.stdin = os.fdopen(tasks_w, "wb")
        finally:
            if freeze:
                gc.unfreeze()
            signal.pthread_sigmask(signal.SIG_SETMASK, old)

    def _send(self, data: bytes, last: bool) -> bool:
        """Write one pickle to the process's stdin (length-prefixed when it serves; ``last`` closes the input of a
        one-run process)."""
        assert self.proc.stdin is not None
        try:
            if self.serve:
                self.proc.stdin.write(len(data).to_bytes(8, "little"))
            self.proc.stdin.write(data)
            self.proc.stdin.flush()
            if last and not self.serve:
                self.proc.stdin.close()
            return True
        except (BrokenPipeError, OSError):
            return False

    def exchange(self, payload: bytes, guard: float) -> tuple[tuple[str, Any] | None, dict[str, Any], str]:
        """Send one task and collect its messages: (final message or None when the guard or start-up limit hit,
        the fields reported, the last phase)."""
        self.runs += 1
        fields: dict[str, Any] = {}
        phase = "startup"
        deadline = time.perf_counter() + _STARTUP_SECONDS
        final: tuple[str, Any] | None = None
        if self.serve or not self.forked:  # a forked one-run process has its task already
            self._send(payload, last=True)
        while final is None:
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                break
            if self.recv.poll(min(remaining, 0.25)):
                try:
                    kind, msg = self.recv.recv()
                except (EOFError, OSError):
                    final = ("died", None)
                    break
                if kind == "update":
                    fields.update(msg)
                elif kind == "phase":
                    phase = msg
                elif kind == "ready":
                    phase = "ready"
                    deadline = time.perf_counter() + guard
                elif kind in ("done", "error"):
                    final = (kind, msg)
            elif self.proc.poll() is not None and not self.recv.poll(0):
                final = ("died", None)
        return final, fields, phase

    def close(self, kill: bool) -> str:
        """End the process (``kill``: at once, with its group); returns the tail of its stderr."""
        import subprocess

        if kill:
            _kill_group(self.proc)
        elif self.serve and self.proc.stdin is not None:
            try:
                self.proc.stdin.close()  # a serving worker ends at the end of its input
            except OSError:
                pass
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:  # pragma: no cover - a child that ignores its end
            self.proc.kill()
            self.proc.wait(timeout=30)
        self.recv.close()
        self.errlog.seek(0)
        tail = self.errlog.read()[-2000:].decode(errors="replace")
        self.errlog.close()
        return tail


def _finish(fields: dict[str, Any], final: tuple[str, Any] | None, phase: str, guard: float, wall: float,
            returncode: int | None, err_tail: str) -> dict[str, Any]:
    fields["t_wall"] = wall
    if final is None:
        where = "during startup" if phase == "startup" else f"in phase {phase!r}"
        fields.update(
            termination="guard",
            limit="guard",
            has_incumbent=False,
            outcome=f"guard: killed after {guard:g} s {where}, no incumbent",
            objective=None,
            bound=None,
            gap=None,
            error=f"wall-clock guard ({guard:g} s) hit {where}",
        )
    elif final[0] == "done":
        fields.update(final[1] or {})
    else:
        report: dict[str, Any] = final[1] or {}
        msg = report.get("error") or (
            f"the run's process died (exit code {returncode}) in phase {phase!r}: {err_tail.strip()[-500:]}"
        )
        fields.update(termination="error", limit="", has_incumbent=False, outcome=f"error in phase {phase!r}",
                      objective=None, bound=None, gap=None, error=msg)
        if report.get("peak_rss_mb") is not None:
            fields["peak_rss_mb"] = report["peak_rss_mb"]
    fields.pop("traceback", None)
    return fields


def _run_in_child(task: dict[str, Any], guard: float, start: str = "exec") -> dict[str, Any]:
    """Run ``task`` in a process of its own (``start``: ``"exec"``, ``python -m schedopt.bench.worker``, or
    ``"fork"``, a fork of this one); kill it ``guard`` seconds after it reports ready."""
    payload = _payload(task)  # also for a fork: hooks must pickle whichever way the run starts
    t0 = time.perf_counter()
    child = _Child(fork=True, task=task) if start == "fork" else _Child()
    final: tuple[str, Any] | None = None
    try:
        final, fields, phase = child.exchange(payload, guard)
    finally:
        err_tail = child.close(kill=final is None or final[0] == "died")
    out = _finish(fields, final, phase, guard, time.perf_counter() - t0, child.proc.returncode, err_tail)
    extra = json.loads(out["extra"]) if out.get("extra") else {}
    extra["start"] = start  # how the run's process started (fork: it inherited this process's loaded modules)
    out["extra"] = json.dumps(extra)
    return out


class WarmWorkers:
    """Runs one task after another in a kept process (``run(..., warm=True)``): the interpreter's start, the
    imports and the backends' first calls are paid once per process instead of once per run. A run killed by the
    guard, or whose process died, takes its process with it; the next run starts a fresh one. Each run's peak
    memory is the process's high-water mark reset at the run's start (Linux ``/proc/self/clear_refs``), so
    ``peak_rss_mb`` stays the run's own; what a run inherits is loaded modules and their caches (a backend's
    first-call cost, memoised model pieces), so keep ``warm=False`` where a run's cold cost is the measurement."""

    def __init__(self, start: str = "auto") -> None:
        self.child: _Child | None = None
        self.started = 0  #: processes started so far
        self.start = start  #: how a process starts (:func:`run`'s ``start``), decided at each start for ``"auto"``

    def run(self, task: dict[str, Any], guard: float) -> dict[str, Any]:
        payload = _payload(task)
        t0 = time.perf_counter()
        if self.child is None or self.child.proc.poll() is not None:
            self.child = _Child(serve=True, fork=self.start != "exec" and not fork_usable())
            self.started += 1
        child = self.child
        final: tuple[str, Any] | None = None
        err_tail = ""
        try:
            final, fields, phase = child.exchange(payload, guard)
        finally:
            if final is None or final[0] == "died":
                err_tail = child.close(kill=True)
                self.child = None
        out = _finish(fields, final, phase, guard, time.perf_counter() - t0, child.proc.returncode, err_tail)
        extra = json.loads(out["extra"]) if out.get("extra") else {}
        extra["start"] = "fork" if child.forked else "exec"
        extra["warm_run"] = child.runs  # the runs its process has served, this one included (1: a cold process)
        out["extra"] = json.dumps(extra)
        return out

    def close(self, kill: bool = False) -> None:
        """End the kept process (at the end of its input; ``kill``: at once)."""
        if self.child is not None:
            self.child.close(kill=kill)
            self.child = None


def _sizes_arg(spec: BenchSpec, sizes: Sequence[int] | str | None) -> list[int]:
    if sizes is None or sizes == "default":
        return list(spec.sizes)
    if sizes == "large":
        return list(spec.large_sizes)
    if sizes == "all":
        return list(spec.sizes) + list(spec.large_sizes)
    if isinstance(sizes, str):
        try:
            return [int(s) for s in sizes.split(",") if s.strip()]
        except ValueError as exc:
            raise InputError("sizes", sizes, "must be GPU counts like '64,512,2048' or default/large/all") from exc
    out = []
    for i, s in enumerate(sizes):
        if isinstance(s, bool) or not isinstance(s, int) or s < 1:
            raise InputError(f"sizes[{i}]", s, "must be a positive number of GPUs")
        out.append(int(s))
    return out


def _lp_gap(rec: Record) -> float | None:
    if rec.objective is None or rec.lp_bound is None or not math.isfinite(rec.objective):
        return None
    return abs(rec.objective - rec.lp_bound) / max(abs(rec.objective), 1e-10)


class SweepInterrupted(KeyboardInterrupt):
    """Raised by :func:`run` on Ctrl-C: ``records`` holds the runs that finished (already written to ``out``)."""

    def __init__(self, records: list[Record], total: int, out: str | os.PathLike[str] | None) -> None:
        self.records = records
        self.total = total
        self.out = out
        super().__init__(f"interrupted after {len(records)} of {total} runs")


def default_output(spec_name: str, directory: str | os.PathLike[str] = ".") -> Path:
    """Where ``schedopt bench`` writes without ``-o``: ``bench-<spec>-<UTC time>.csv`` in ``directory``."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    return Path(directory) / f"bench-{spec_name}-{stamp}.csv"


def _run_task(task: dict[str, Any]) -> dict[str, Any]:
    """One guarded run (module level, so executors on other processes or machines can receive it)."""
    return _run_in_child(task, task["guard"])


def run(
    spec_or_name: BenchSpec | str,
    sizes: Sequence[int] | str | None = None,
    seeds: Sequence[int] | None = None,
    backends: Sequence[str] | None = None,
    repeat: int = 1,
    time_limit: float | None = None,
    guard_seconds: float | None = None,
    threads: int = 1,
    progress: bool | None = None,
    out: str | os.PathLike[str] | None = None,
    *,
    loads: Sequence[str] | None = None,
    mip_rel_gap: float | None = None,
    solver_seed: int | None = None,
    on_record: Callable[[Record], None] | None = None,
    workers: int = 1,
    executor: Any = None,
    progress_interval: float = 30.0,
    warm: bool = False,
    start: str = "auto",
) -> list[Record]:
    """Run a sweep: every (size, seed, load) x repetition x backend in its own process; one :class:`Record` each.
    A seed draws one generated instance per size (the problem's ``generate(gpus, seed)``: the same seed, the same
    instance); ``solver_seed`` is the solver's own (docs/reference/seeds.md).

    ``sizes``: GPU counts, or ``"default"`` / ``"large"`` (4096-16384) / ``"all"``; ``backends`` default to the
    spec's (for a ProblemIO spec, an entry may also be a method of the problem or ``method@backend``). A name that
    is no backend, route or method raises :class:`~schedopt.errors.InputError`, and so does a requested backend that
    is not installed here; default backends that are not installed are skipped with a warning on the
    ``schedopt.bench`` logger. ``time_limit`` is the solver's own limit; ``guard_seconds`` (default
    ``2 * time_limit + 60``, or 600 s without a limit) is the wall-clock guard that kills a stuck run. ``progress``:
    ``None`` (auto) draws a bar on stderr when it is a terminal and otherwise writes a plain progress line every
    ``progress_interval`` seconds and one at the end (for logs and CI); ``True`` forces the bar, ``False`` silences
    it (see :class:`~schedopt.bench.progress.Progress`). ``out``: a ``.csv`` / ``.jsonl`` path
    rewritten after every run.

    ``workers`` > 1 runs that many guarded runs at once (each still in its own process) on a local thread pool that
    drives the child processes; ``executor`` runs them on anything :mod:`schedopt.executors` accepts (a
    ``concurrent.futures`` executor, a Dask ``Client``, a Ray pool, or a spec string such as ``"dask://HOST:PORT"``).
    Runs that share cores time each other: use it for sweeps whose point is the objective and the gap, keep
    ``workers=1`` for timings. Records keep the sweep order.

    ``warm``: run the sweep's runs one after another in a kept process (:class:`WarmWorkers`; serial only) instead
    of a process each: the start-up, imports and the backends' first calls are paid once (about 0.1-0.3 s of CPU
    per run against a forked process, 1.5-2 s against a fresh interpreter, for a 64-GPU Sia run whose measured
    path is 0.02-0.07 s); each record's ``extra`` says which run of its process it was
    (``warm_run``), its ``peak_rss_mb`` is reset at the run's start, and what it inherits is loaded modules and their
    caches, so timings of first calls belong to ``warm=False`` sweeps.

    ``start``: how a run's own process (with ``warm``, the kept one) starts. ``"exec"``: a fresh interpreter, ``python -m
    schedopt.bench.worker``, which imports the package and the problem again (about 1.5-2 s of CPU per run);
    ``"fork"``: a fork of this process, which has imported them already to find the spec (a few ms); ``"auto"``
    (default): fork where :func:`fork_usable` allows it (Linux, the main thread, no other thread but idle solve
    workers) on a serial sweep, else exec. Either way the run has its own process, session and guard, imports and
    exercises its backend in ``warm_up`` (``t_warmup``), and its ``peak_rss_mb`` is its own process's (a forked
    run's high-water mark is reset at its start and counts the pages it holds, inherited ones included, as a
    fresh process counts its own imports); each record's ``extra`` says which (``start``). Pool and executor runs
    always exec.

    Ctrl-C stops the sweep: the finished runs are written to ``out`` and :class:`SweepInterrupted` (a
    ``KeyboardInterrupt``) carries them.
    """
    import logging

    from ..executors import map_unordered, open_executor

    spec = get_spec(spec_or_name)
    size_list = _sizes_arg(spec, sizes)
    seed_list = list(spec.seeds if seeds is None else seeds)
    for i, sd in enumerate(seed_list):
        if isinstance(sd, bool) or not isinstance(sd, int):
            raise InputError(f"seeds[{i}]", sd, "must be an integer")
    load_list = list(spec.loads if loads is None else loads) or [""]
    if isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 1:
        raise InputError("repeat", repeat, "must be a positive integer")
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 0:
        raise InputError("threads", threads, "must be a non-negative integer")
    if time_limit is not None and (not isinstance(time_limit, (int, float)) or time_limit <= 0):
        raise InputError("time_limit", time_limit, "must be a positive number of seconds or None")
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise InputError("workers", workers, "must be a positive integer")
    if not isinstance(warm, bool):
        raise InputError("warm", warm, "must be True or False")
    if start not in START_METHODS:
        raise InputError("start", start, f"must be one of {', '.join(START_METHODS)}")
    if start == "fork":
        why = fork_usable() or ("a pool or an executor runs the sweep: its runs exec" if workers > 1 or executor
                                is not None else "")
        if why:
            raise InputError("start", start, f"cannot fork here: {why}")
    if warm and (workers > 1 or executor is not None):
        raise InputError("warm", warm, "runs the sweep serially in one kept process: use it with workers=1 and no "
                         "executor")
    if isinstance(progress_interval, bool) or not isinstance(progress_interval, (int, float)) or not (
            math.isfinite(progress_interval) and progress_interval > 0):
        raise InputError("progress_interval", progress_interval, "must be a positive number of seconds")
    tl = time_limit if time_limit is not None else spec.params.get("time_limit")
    guard = float(guard_seconds) if guard_seconds is not None else (2.0 * tl + 60.0 if tl else 600.0)
    if guard <= 0:
        raise InputError("guard_seconds", guard_seconds, "must be positive")
    ok, skipped = spec.available_backends(backends)
    if backends is not None and skipped:
        raise InputError("backends", list(skipped), "cannot run here: " + "; ".join(
            f"{b} ({why})" for b, why in skipped.items()))
    if not ok:
        raise InputError("backends", list(spec.backends), f"none can run here: {skipped}")
    if skipped:
        logging.getLogger("schedopt.bench").warning(
            "skipping " + "; ".join(f"{b} ({why})" for b, why in skipped.items()))
    params: dict[str, Any] = {
        "time_limit": tl,
        "mip_rel_gap": mip_rel_gap if mip_rel_gap is not None else spec.params.get("mip_rel_gap", 1e-6),
        "threads": threads,
        "solver_seed": solver_seed if solver_seed is not None else int(spec.params.get("solver_seed", 0)),
    }
    # the solver parameters, validated once, here, before any run (a bad gap or seed is an InputError naming it)
    solve_params = SolveParams(time_limit=tl, mip_rel_gap=params["mip_rel_gap"], threads=threads,
                               seed=params["solver_seed"])
    sweep = datetime.now(UTC).strftime("%Y%m%dT%H%M%S") + "-" + secrets.token_hex(3)
    machine = machine_info()
    tasks = [
        {"spec": spec, "gpus": gpus, "seed": seed, "load": load, "repeat": rep, "backend": backend, "params": params,
         "solve_params": solve_params, "guard": guard}
        for gpus in size_list
        for seed in seed_list
        for load in load_list
        for rep in range(repeat)
        for backend in ok  # interleaved: every backend sees the same conditions
    ]
    bar = Progress(len(tasks), progress, interval=progress_interval)

    def label(task: dict[str, Any]) -> str:
        load = task["load"]
        return f"{spec.name} {task['gpus']} GPUs{' ' + load if load else ''} seed {task['seed']} #{task['repeat']} {task['backend']}"

    def record(task: dict[str, Any], fields: dict[str, Any]) -> Record:
        gpus, load, seed = task["gpus"], task["load"], task["seed"]
        rec = Record(
            sweep=sweep, spec=spec.name, problem=spec.problem,
            instance_id=f"{spec.problem}-{gpus}g{'-' + load if load else ''}-s{seed}",
            seed=seed, load=load, repeat=task["repeat"], gpus=gpus, backend=task["backend"],
            route="problemio" if isinstance(spec.pipeline, ProblemIOPipeline) else "schedopt",
            threads=threads, solver_seed=params["solver_seed"], time_limit=params["time_limit"],
            mip_rel_gap=params["mip_rel_gap"], guard_seconds=guard,
            timestamp=datetime.now(UTC).isoformat(timespec="seconds"), **machine,
        )
        known = set(Record.__dataclass_fields__)
        for k, v in fields.items():
            if k in known and v is not None:
                setattr(rec, k, v)
        rec.lp_gap = _lp_gap(rec)
        return rec

    done: dict[int, Record] = {}

    def finish(i: int, fields: dict[str, Any]) -> None:
        done[i] = record(tasks[i], fields)
        if on_record is not None:
            on_record(done[i])
        if out is not None:
            write_records([done[k] for k in sorted(done)], out)
        bar.update(label(tasks[i]), advance=1)

    engine = executor if executor is not None else (f"threads:{workers}" if workers > 1 else None)
    kept = WarmWorkers(start) if warm else None
    try:
        if engine is None:
            for i, task in enumerate(tasks):
                bar.update(label(task))
                if kept is not None:
                    finish(i, kept.run(task, guard))
                else:  # decided per run: a thread started by a hook or the caller makes the next run exec
                    finish(i, _run_in_child(task, guard, "fork" if start != "exec" and not fork_usable() else
                                            "exec"))
        else:
            with open_executor(engine, workers) as ex:
                for i, fields in map_unordered(_run_task, tasks, ex):
                    finish(i, fields)
    except KeyboardInterrupt:
        if kept is not None:
            kept.close(kill=True)
        bar.close()
        records = [done[k] for k in sorted(done)]
        if out is not None:
            write_records(records, Path(out))
        raise SweepInterrupted(records, len(tasks), out) from None
    finally:
        if kept is not None:
            kept.close()
    bar.close()
    records = [done[k] for k in sorted(done)]
    if out is not None:
        write_records(records, Path(out))
    return records
