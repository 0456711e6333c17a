"""Running sweeps of simulations: the executor layer under :func:`~schedopt.sim.sweep.simulate_many` and
``schedopt simulate``.

:func:`run_tasks` runs a list of tasks (:class:`~schedopt.sim.sweep.SimTask`) on

* nothing (``executor=None`` and ``workers=1``, or a single task; ``in_process=False`` sends these to a pool of
  ``workers`` processes too): one after the other in this process;
* a local pool of ``workers`` processes of our own (``executor=None``; default the CPU count). Its workers die with
  this process (``PR_SET_PDEATHSIG`` on Linux, a parent watch elsewhere), ignore a terminal's Ctrl-C (this process
  decides), and are killed at once when the sweep stops: on Ctrl-C, and on the first failing task;
* a ``concurrent.futures`` executor, a Dask ``distributed.Client`` (``submit``), a pool with ``apply_async``
  (``multiprocessing.Pool``, Ray's ``ray.util.multiprocessing.Pool``), or an object with ``map`` only. On these,
  Ctrl-C and a failure cancel the work not yet started; a simulation already running on someone else's executor
  runs to its end (we do not own its processes).

**Nothing finished is lost.** With ``output_dir``, each simulation's record is written the moment it finishes
(:func:`~schedopt.sim.records.write_record`: atomic, with a checksummed end marker) as
``<policy>__<workload>__seed<k>.jsonl``, and ``summary.csv`` is rewritten (atomically) with one row per finished
simulation. ``resume=True`` reads the folder first: a simulation whose record is whole and was written for the same
task, from the same content of every file the task reads (its end marker holds their SHA-256), is not run again; a
cut-short or torn file, or one written from another version of a trace or workload file, is named in a warning and
redone. Output errors (a file where the
folder should be, a read-only folder, a full disk) are :class:`~schedopt.errors.InputError` naming the path, and
leave no file that reads as a record.

**Failures.** ``on_error="raise"`` (default): the first failing simulation stops the sweep at once (the pool is not
drained first); the error is raised with ``.results`` holding what finished (also on disk). ``on_error="record"``:
the failure is kept as a :class:`SimFailure` in its place of the returned list (and as
``<name>.failed.json`` in ``output_dir``) while the rest go on.

**Heartbeat.** ``progress=None``: a bar on a terminal, else a plain block every ``heartbeat`` seconds (default 30)
and one at the end; ``True`` forces the bar, ``False`` silences it. Each block names every running simulation with
its rounds done, simulated time and jobs finished / total, also before any simulation has finished. Workers report
through the engine's ``observer`` hook into a small status file per task (local machine only: on a remote Dask or
Ray cluster the heartbeat shows completions only).

Ctrl-C raises :class:`SweepInterrupted` (a ``KeyboardInterrupt``) with ``.results`` once the workers are stopped.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import gc
import hashlib
import json
import logging
import math
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ..errors import InputError, SchedoptError
from ..progress import Progress
from .metrics import SUMMARY_COLUMNS as _COLUMNS
from .metrics import SimResult, keep_summary, summary_row
from .records import (
    atomic_write_text,
    check_record,
    input_files,
    output_error,
    output_folder,
    read_record,
    record_inputs,
    record_task,
    record_view,
    task_key,
    write_record,
)

__all__ = [
    "ON_ERROR",
    "SUMMARY_COLUMNS",
    "SimFailure",
    "SimulationFailed",
    "StatusFile",
    "SweepInterrupted",
    "checkpoint_path",
    "record_name",
    "run_tasks",
    "summary_csv",
    "task_label",
]

log = logging.getLogger(__name__)

#: What a sweep does when a simulation fails: raise at once, or record the failure and go on.
ON_ERROR = ("raise", "record")

#: the first columns of ``summary.csv`` (the other flat columns of
#: :func:`~schedopt.sim.metrics.summary_row` follow in their order)
SUMMARY_COLUMNS = ("policy", "workload", "seed", "jobs", "finished", "unfinished", "capped", "avg_jct_s",
                   "median_jct_s", "p99_jct_s", "makespan_s", "gpu_hours", "avg_restarts", "mean_utilization", "mean_queue_length", "rounds",
                   "policy_s_median", "policy_s_p95", "policy_s_max", "worst_rho", "unfair_fraction", "jain_rho")


# ------------------------------------------------------------------------------------------------ outcomes
@dataclass(frozen=True)
class SimFailure:
    """A simulation that raised (kept in place of its result with ``on_error="record"``)."""

    task: Any
    error: str  #: ``"TypeError: message"``
    traceback: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"task": task_key(self.task), "error": self.error, "traceback": self.traceback}


class SimulationFailed(SchedoptError):
    """A simulation of a sweep raised; ``.task``, ``.error`` (type and message), ``.traceback`` (the worker's) and
    ``.results`` (what finished before: results, None for the rest)."""

    def __init__(self, task: Any, error: str, tb: str = "", results: Sequence[Any] = ()) -> None:
        self.task, self.error, self.traceback, self.results = task, error, tb, list(results)
        super().__init__(f"simulation {task_label(task)} failed: {error}")


class SweepInterrupted(KeyboardInterrupt):
    """Ctrl-C stopped the sweep: ``.results`` holds what finished (None for the rest; also on disk)."""

    def __init__(self, results: Sequence[Any], total: int, out: str | os.PathLike[str] | None) -> None:
        self.results, self.total, self.out = list(results), total, out
        n = sum(r is not None for r in results)
        super().__init__(f"interrupted after {n} of {total} simulations")


@dataclass(frozen=True)
class _Failed:
    """A failure shipped back from a worker (exceptions such as InputError do not always survive pickling)."""

    type: str
    message: str
    traceback: str
    field: str | None = None
    value: str | None = None

    @classmethod
    def of(cls, exc: BaseException) -> _Failed:
        tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__, limit=-8))
        if isinstance(exc, InputError):
            return cls("InputError", exc.message, tb, exc.field, _short(exc.value))
        return cls(type(exc).__name__, str(exc), tb)

    def raise_for(self, task: Any, results: Sequence[Any]) -> None:
        if self.type == "InputError" and self.field is not None:
            exc: Exception = InputError(self.field, _Raw(self.value or ""), f"{self.message} (simulation {task_label(task)})")
        else:
            exc = SimulationFailed(task, f"{self.type}: {self.message}", self.traceback, results)
        exc.results = list(results)  # type: ignore[attr-defined]
        raise exc


class _Raw(str):
    """A value already shown as text (its repr is itself)."""

    def __repr__(self) -> str:
        return str(self)


def _short(v: Any) -> str:
    t = repr(v)
    return t if len(t) <= 80 else t[:77] + "..."


def task_label(task: Any) -> str:
    """A task as a progress line names it: ``policy on workload seed N``."""
    pol = getattr(task, "policy", task)
    pol = pol if isinstance(pol, str) else str(getattr(pol, "name", type(pol).__name__))
    wl = str(getattr(task, "workload", ""))
    wl = Path(wl).stem if wl.lower().endswith(".csv") else wl
    return f"{pol} on {wl} seed {getattr(task, 'seed', 0)}"


# ------------------------------------------------------------------------------------------------ heartbeat
class StatusFile:
    """An engine ``observer`` that keeps ``path`` holding the simulation's latest ``rounds sim_time finished
    total`` (rewritten at most every ``every`` seconds, atomically; errors ignored: it is only a heartbeat)."""

    def __init__(self, path: str, every: float = 1.0) -> None:
        self.path, self.every = path, every
        self._last = -math.inf

    def __getstate__(self) -> dict[str, Any]:
        return {"path": self.path, "every": self.every, "_last": -math.inf}

    def __call__(self, rounds_done: int, sim_time_s: float, jobs_finished: int, jobs_total: int) -> None:
        now = time.monotonic()
        if now - self._last < self.every:
            return
        self._last = now
        tmp = f"{self.path}.{os.getpid()}"
        try:
            with open(tmp, "w") as f:
                f.write(f"{rounds_done} {sim_time_s!r} {jobs_finished} {jobs_total}\n")
            os.replace(tmp, self.path)
        except OSError:
            pass

    @staticmethod
    def read(path: str) -> tuple[int, float, int, int] | None:
        try:
            with open(path) as f:
                a, b, c, d = f.read().split()
            return int(a), float(b), int(c), int(d)
        except (OSError, ValueError):
            return None


def _hours(s: float) -> str:
    return f"{s / 3600:.1f} h" if s >= 3600 else f"{s / 60:.0f} min"


class _Heartbeat:
    """The sweep's progress: :class:`~schedopt.progress.Progress` for the overall count, plus the state of
    every running simulation (from the status files, or this process's own observer when running serially)."""

    def __init__(self, items: Sequence[Any], progress: bool | None, interval: float, done: int,
                 stream: Any = None) -> None:
        self.bar = Progress(len(items), progress, stream=stream, interval=interval)
        self.bar.done = done
        self.items = items
        self.mode = self.bar.mode
        self.interval = interval if self.mode == "lines" else 0.5
        self.next = time.monotonic() + self.interval
        self.dir = tempfile.mkdtemp(prefix="schedopt-sim-status-") if self.mode != "off" else None
        self.live: dict[int, tuple[int, float, int, int]] = {}

    def status_path(self, i: int) -> str | None:
        return None if self.dir is None else os.path.join(self.dir, f"{i}.status")

    def observer(self, i: int) -> Callable[[int, float, int, int], None] | None:
        if self.mode == "off":
            return None

        def observe(rounds_done: int, sim_time_s: float, jobs_finished: int, jobs_total: int) -> None:
            self.live[i] = (rounds_done, sim_time_s, jobs_finished, jobs_total)
            if time.monotonic() >= self.next:
                self.tick([i])

        return observe

    def _state(self, i: int) -> tuple[int, float, int, int] | None:
        if i in self.live:
            return self.live[i]
        p = self.status_path(i)
        return StatusFile.read(p) if p else None

    def tick(self, running: Iterable[int], force: bool = False) -> None:
        now = time.monotonic()
        if self.mode == "off" or (not force and now < self.next):
            return
        self.next = now + self.interval
        states = []
        for i in sorted(running):
            st = self._state(i)
            if st is None:
                states.append((i, "starting", "starting"))
            else:
                r, t, f, n = st
                states.append((i, f"round {r}, {_hours(t)} simulated, {f}/{n} jobs finished", f"r{r} {_hours(t)} {f}/{n}"))
        s = self.bar.stream
        if self.mode == "lines":
            lines = [self.bar.plain(f"{len(states)} running")]
            lines += [f"  {task_label(self.items[i])}: {long}" for i, long, _ in states]
            s.write("\n".join(lines) + "\n")
        else:
            short = "; ".join(f"{task_label(self.items[i])} {sh}" for i, _, sh in states)
            s.write("\r\x1b[2K" + self.bar.line(short)[:200])
        s.flush()

    def finished(self, i: int, running: Iterable[int]) -> None:
        self.bar.done = min(self.bar.total, self.bar.done + 1)
        self.live.pop(i, None)
        p = self.status_path(i)
        if p:
            with contextlib.suppress(OSError):
                os.unlink(p)
        if self.mode == "bar":
            self.tick(running, force=True)

    def close(self) -> None:
        self.bar.close()
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)


# ------------------------------------------------------------------------------------------------ one task
@dataclass(frozen=True)
class _Output:
    """Where a worker streams its task's record (``run_tasks(stream=True)``): the output folder, how often to
    checkpoint (None: never) and whether to go on from a checkpoint found there."""

    dir: str
    checkpoint_every: Any = None
    resume: bool = False


def _stem(task: Any) -> str:
    """``<policy>__<workload>__seed<k>__<task hash>``: the names of a streamed task's spools, checkpoint and staged
    record in the output folder (one per task; the record's own name comes from its meta when it is whole)."""
    h = hashlib.sha256(json.dumps(task_key(task), sort_keys=True).encode()).hexdigest()[:10]
    pol = getattr(task, "policy", task)
    pol = pol if isinstance(pol, str) else str(getattr(pol, "name", type(pol).__name__))
    wl = str(getattr(task, "workload", ""))
    wl = Path(wl).stem if wl.lower().endswith(".csv") else wl
    return f"{_safe(pol)}__{_safe(wl)}__seed{getattr(task, 'seed', 0)}__{h}"


def _staged(folder: str | os.PathLike[str], task: Any) -> Path:
    """The whole record a streamed task's worker leaves for the sweep to name (``.<stem>.record``)."""
    return Path(folder) / f".{_stem(task)}.record"


def checkpoint_path(folder: str | os.PathLike[str], task: Any) -> Path:
    """Where a streamed task's checkpoint is kept in the output ``folder``: ``<policy>__<workload>__seed<k>__<task
    hash>.checkpoint`` (:mod:`schedopt.sim.checkpoint`)."""
    return Path(folder) / f"{_stem(task)}.checkpoint"


def _call(task: Any, observer: Callable[[int, float, int, int], None] | None, out: _Output | None = None) -> SimResult:
    from .families import run_task  # the families sit above the runner's callers, not below it

    if out is None:
        return run_task(task, observer)
    from .checkpoint import Checkpoint, RunHooks, run_hooks
    from .records import RecordStream

    staged = _staged(out.dir, task)
    shown = Path(out.dir) / f"{_stem(task).rpartition('__')[0]}.jsonl"  # the record's usual name, for errors
    ckpt = None
    every = out.checkpoint_every
    if every is None and out.resume:  # a run killed with checkpoints goes on from its last one, at its interval
        every = Checkpoint.every_of(checkpoint_path(out.dir, task))
    if every is not None:
        ckpt = Checkpoint(checkpoint_path(out.dir, task), task, every, resume=out.resume)
        stream = ckpt.open_stream(staged, _stem(task), shown)
    else:
        stream = RecordStream(staged, task, shown=shown)
    hooks = RunHooks(stream, ckpt)
    try:
        with run_hooks(hooks):
            res = run_task(task, observer)
    except BaseException:
        if ckpt is not None and hooks.taken:
            stream.release()  # the spools and the last checkpoint stay: the next run goes on from them
        else:
            stream.discard()
        raise
    if not hooks.taken:  # a family with its own event loop (Synergy, Gandiva, HiveD): its records are in memory
        stream.discard()
        if ckpt is not None:
            ckpt.remove()
        return res
    keep_summary(res)  # from the records read back from the spools, one at a time
    stream.close(res.meta, res.hopeless)
    if ckpt is not None:
        ckpt.remove()
    light = SimResult(res.meta, (), (), res.hopeless)
    object.__setattr__(light, "_summary", res.__dict__["_summary"])
    object.__setattr__(light, "_staged", str(staged))
    return light


def _execute(task: Any, status_path: str | None = None, out: _Output | None = None) -> SimResult | _Failed:
    """Run one task (in a worker); a failure comes back as a value, never as a raised exception."""
    try:
        return _call(task, StatusFile(status_path) if status_path else None, out)
    except Exception as exc:
        return _Failed.of(exc)


def _execute_pair(pair: tuple[Any, str | None]) -> SimResult | _Failed:
    return _execute(*pair)


# ------------------------------------------------------------------------------------------------ our own pool
def _die_with_parent(ppid: int) -> None:
    """Make this worker die with the process that started it: ``PR_SET_PDEATHSIG`` on Linux, else a thread that
    watches the parent pid."""
    armed = False
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            armed = libc.prctl(1, int(signal.SIGKILL), 0, 0, 0) == 0  # 1 = PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            armed = False
    if os.getppid() != ppid:  # the parent died before the signal was armed
        os._exit(1)
    if not armed:
        def watch() -> None:
            while os.getppid() == ppid:
                time.sleep(0.5)
            os._exit(1)

        threading.Thread(target=watch, daemon=True, name="schedopt-parent-watch").start()


def _worker_main(conn: Any, ppid: int, registered: Sequence[Any] = ()) -> None:
    _die_with_parent(ppid)
    if registered:  # a spawned worker does not inherit the parent's registrations (register_policy & co.)
        from .registry import restore

        restore(registered)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a terminal's Ctrl-C reaches the group: the parent decides
    # the worker's garbage collector (no result depends on it): what the worker inherited (the modules, the warmed
    # families and policies) is frozen, so that full collections no longer walk it, and young collections come
    # every 10,000 net container allocations instead of 700 (a simulation makes many short-lived containers and
    # little cyclic garbage); saturn/1 under sia: 0.22 s of CPU in 352 collections -> 0.05 s in 22, same peak memory
    gc.freeze()
    gc.set_threshold(10_000, 10, 10)
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return
        if msg is None:
            return
        i, task, spath, summarize, where = msg
        out = _execute(task, spath, where)
        if summarize and isinstance(out, SimResult):
            with contextlib.suppress(Exception):  # the parent summarises it again and shows the error there
                keep_summary(out)
        try:
            conn.send((i, out))
        except Exception as exc:  # a result that does not pickle
            conn.send((i, _Failed.of(exc)))


class _LocalPool:
    """``n`` worker processes of our own, one task at a time each, over a pipe per worker."""

    def __init__(self, n: int, summaries: bool = False, out: _Output | None = None) -> None:
        import multiprocessing as mp

        methods = mp.get_all_start_methods()
        # fork is fast and safe in a single-threaded process; with threads about (a Dask client, a notebook), spawn
        self.ctx: Any = mp.get_context("fork" if "fork" in methods and threading.active_count() == 1 else "spawn")
        self.n = n
        self.summaries = summaries  # each worker summarises its result (keep_summary) before sending it
        self.out = out  # where workers stream their records (None: they send them back)
        self.workers: list[tuple[Any, Any]] = []  # (process, connection)
        self.busy: dict[int, int] = {}  # worker slot -> task index
        self.queue: list[tuple[int, Any, str | None]] = []

    def _spawn(self) -> tuple[Any, Any]:
        a, b = self.ctx.Pipe()
        # not daemonic: a policy may start processes of its own (daemonic processes may not); the worker dies with
        # this process anyway (PR_SET_PDEATHSIG), and stop() / close() end it
        from .registry import snapshot

        reg = snapshot() if self.ctx.get_start_method() != "fork" else []
        p = self.ctx.Process(target=_worker_main, args=(b, os.getpid(), reg), daemon=False,
                             name="schedopt-sim-worker")
        p.start()
        b.close()
        return p, a

    def _warm(self, work: list[tuple[int, Any, str | None]]) -> None:
        """Import here, once, what every simulation imports on first use (the families, their policies): forked
        workers inherit it instead of each importing it anew (8 workers on 2 cores: 7 s before their first round)."""
        if self.ctx.get_start_method() != "fork":
            return
        from .families import system_for
        from .registry import policy_entry

        for p in {t.policy for _, t, _ in work if isinstance(getattr(t, "policy", None), str)}:
            with contextlib.suppress(Exception):
                # the families the tasks run on only: another family's modules (HiveD's with PyYAML, Gandiva's,
                # Synergy's) would cost every run about 0.1 s of CPU here for nothing
                list(system_for(p).policy_names())
            with contextlib.suppress(Exception):
                policy_entry(p).load()

    def submit(self, work: list[tuple[int, Any, str | None]]) -> None:
        self._warm(work)
        self.queue = list(work)
        while len(self.workers) < min(self.n, len(self.queue)):
            self.workers.append(self._spawn())
        for slot in range(len(self.workers)):
            self._feed(slot)

    def _feed(self, slot: int) -> None:
        """Give the worker in ``slot`` the next task (a fresh worker if its pipe is broken), or leave it idle."""
        self.busy.pop(slot, None)
        if not self.queue:
            return
        item = self.queue.pop(0)
        for _ in range(2):
            try:
                self.workers[slot][1].send((*item, self.summaries, self.out))
                self.busy[slot] = item[0]
                return
            except OSError:  # the worker is gone: replace it
                self._replace(slot)
        self.queue.insert(0, item)
        raise RuntimeError("cannot start a simulation worker process")

    def _replace(self, slot: int) -> None:
        p, c = self.workers[slot]
        with contextlib.suppress(Exception):
            p.kill()
        p.join(1)
        c.close()
        self.workers[slot] = self._spawn()

    def running(self) -> list[int]:
        return list(self.busy.values())

    def poll(self, timeout: float) -> list[tuple[int, Any]]:
        from multiprocessing.connection import wait

        if not self.busy:
            return []
        conns = {self.workers[s][1]: s for s in self.busy}
        sentinels = {self.workers[s][0].sentinel: s for s in self.busy}
        ready = wait(list(conns) + list(sentinels), timeout)
        out: list[tuple[int, Any]] = []
        free: set[int] = set()
        for r in ready:
            if r in conns:
                slot = conns[r]
                conn: Any = r
                try:
                    out.append(conn.recv())
                except (EOFError, OSError):
                    continue  # the worker died without answering: its sentinel says so
                free.add(slot)
        for r in ready:
            if r in sentinels:
                slot = sentinels[r]
                proc = self.workers[slot][0]
                proc.join(0.1)
                if slot not in free:  # it died running a task: that task failed
                    out.append((self.busy[slot], _Failed(
                        "WorkerDied", f"the simulation's worker process died (exit code {proc.exitcode}: killed by "
                        "a signal, or out of memory)", "")))
                    free.add(slot)
                if self.queue:
                    self._replace(slot)
        for slot in sorted(free):
            self._feed(slot)
        return out

    def stop(self) -> None:
        """Kill every worker now (Ctrl-C, a failure)."""
        self.queue = []
        for p, _c in self.workers:
            with contextlib.suppress(Exception):
                p.kill()
        for p, c in self.workers:
            p.join(5)
            c.close()
        self.workers, self.busy = [], {}

    def close(self) -> None:
        for _, c in self.workers:
            with contextlib.suppress(Exception):
                c.send(None)
        for p, c in self.workers:
            p.join(5)
            if p.is_alive():
                p.kill()
                p.join(1)
            c.close()
        self.workers = []


# ------------------------------------------------------------------------------------------------ other executors
class _Foreign:
    """Someone else's executor: submit / apply_async / map; running = submitted, not done, with a status file."""

    def __init__(self, executor: Any, hb: _Heartbeat) -> None:
        from ..executors import kind_of

        self.ex, self.kind, self.hb = executor, kind_of(executor), hb
        self.pending: dict[Any, int] = {}
        self.mapped: list[tuple[int, Any]] = []

    def submit(self, work: list[tuple[int, Any, str | None]]) -> None:
        ex = self.ex
        if self.kind == "dask":
            for i, t, sp in work:
                self.pending[ex.submit(_execute, t, sp, pure=False)] = i
        elif self.kind in ("futures", "submit"):
            for i, t, sp in work:
                self.pending[ex.submit(_execute, t, sp)] = i
        elif self.kind == "pool" and hasattr(ex, "apply_async"):
            for i, t, sp in work:
                self.pending[ex.apply_async(_execute, (t, sp))] = i
        else:  # map only: results come at the end, together
            idx = [i for i, _, _ in work]
            self.mapped = list(zip(idx, ex.map(_execute_pair, [(t, sp) for _, t, sp in work]), strict=True))

    def running(self) -> list[int]:
        out = []
        for i in self.pending.values():
            p = self.hb.status_path(i)
            if p and os.path.exists(p):
                out.append(i)
        return out

    def poll(self, timeout: float) -> list[tuple[int, Any]]:
        if self.mapped:
            out, self.mapped = self.mapped, []
            return out
        if not self.pending:
            return []
        futs = list(self.pending)
        if self.kind == "futures" and all(isinstance(f, cf.Future) for f in futs):
            done, _ = cf.wait(futs, timeout, return_when=cf.FIRST_COMPLETED)
        elif self.kind == "dask":
            from distributed import wait

            with contextlib.suppress(Exception):  # distributed's TimeoutError
                wait(futs, timeout=timeout, return_when="FIRST_COMPLETED")
            done = {f for f in futs if f.done()}
        else:
            end = time.monotonic() + timeout
            while True:
                done = {f for f in futs if (f.ready() if hasattr(f, "ready") else f.done())}
                if done or time.monotonic() >= end:
                    break
                time.sleep(0.05)
        out = []
        for f in done:
            i = self.pending.pop(f)
            try:
                res = f.get() if hasattr(f, "get") and not hasattr(f, "result") else f.result()
            except Exception as exc:  # the executor itself failed (a lost worker, a broken pool)
                res = _Failed.of(exc)
            out.append((i, res))
        return out

    def stop(self) -> None:
        if self.kind == "dask":
            with contextlib.suppress(Exception):
                self.ex.cancel(list(self.pending))
        else:
            for f in self.pending:
                with contextlib.suppress(Exception):
                    f.cancel()
        self.pending = {}

    def close(self) -> None:
        pass


# ------------------------------------------------------------------------------------------------ the output folder
def _meta(result: SimResult, key: str, default: Any = None) -> Any:
    m = result.meta
    v = None if isinstance(m, dict) else getattr(m, key, None)  # a typed meta record: its attribute
    return v if v is not None else (m.get(key, default) if isinstance(m, dict) else default)


def _safe(name: Any) -> str:
    """A file-name-safe form of a policy or workload name (``synergy:fifo/tune`` -> ``synergy-fifo-tune``)."""
    return "".join(c if c.isalnum() or c in "._-" else "-" for c in str(name))


def record_name(result: SimResult) -> str:
    """``<policy>__<workload>__seed<k>`` of a result (its record is ``<name>.jsonl``)."""
    return "__".join(_safe(x) for x in (_meta(result, "policy"), _meta(result, "workload"))) + \
        f"__seed{_meta(result, 'seed', 0)}"


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return "" if math.isnan(v) else f"{v:.6g}"
    return "" if v is None else str(v)


def summary_csv(rows: Sequence[Mapping[str, Any]]) -> str:
    """``summary.csv``'s text: :data:`SUMMARY_COLUMNS` first, then every other column of the rows."""
    import csv
    import io

    cols = list(SUMMARY_COLUMNS)
    for r in rows:
        cols += [k for k in r if k not in cols and not isinstance(r[k], Mapping)]
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(cols)
    for r in rows:
        w.writerow([_fmt(r.get(c, "")) for c in cols])
    return out.getvalue()


@contextlib.contextmanager
def _sigint_deferred() -> Any:
    """Hold a Ctrl-C that comes while a finished simulation's record is written (a fraction of a second) and raise
    it after: the record is kept, whole."""
    if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGINT) in (
            None, signal.SIG_IGN):
        yield
        return
    got: list[int] = []
    old = signal.signal(signal.SIGINT, lambda signum, frame: got.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)
    if got:
        raise KeyboardInterrupt


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


class _Folder:
    """The output folder of a sweep: records as they finish, ``summary.csv`` rewritten with each."""

    def __init__(self, out: str | os.PathLike[str], items: Sequence[Any], stream: bool = False) -> None:
        self.dir = output_folder(out)  # a file there, a read-only or full folder: named here, before any run
        self.items = items
        self.stream = stream  # records streamed by the workers: results found on resume are read one record at a time
        self.keys = [task_key(t) for t in items]
        self.names: dict[int, str] = {}
        self.rows: dict[int, dict[str, Any]] = {}

    def resume(self) -> list[tuple[int, SimResult]]:
        """The tasks with a whole record of the same task in the folder (read back); bad files, and records written
        from another version of a file the task reads, named and redone; temporary files of killed runs removed."""
        for pattern in (".*.tmp-*", ".*.jobs-*", ".*.rounds-*"):  # a killed run's temporary files and spools
            for tmp in self.dir.glob(pattern):
                pid = tmp.name.rpartition("-")[2]
                if pid.isdigit() and not _pid_alive(int(pid)):
                    with contextlib.suppress(OSError):
                        tmp.unlink()
        found: list[tuple[int, SimResult]] = []
        free = list(range(len(self.items)))
        hashes: dict[str, str] = {}  # each input file read once, whatever number of records name it
        for p in sorted(self.dir.glob(".*.record")):  # whole, written by a worker the sweep did not name yet
            key = record_task(p)
            i = next((k for k in free if self.keys[k] == key), None)
            if i is not None and check_record(p) is None:
                with contextlib.suppress(OSError, ValueError, KeyError):
                    with open(p, "rb") as f:
                        f.readline()
                        meta = json.loads(f.readline())["meta"]
                    os.replace(p, self.dir / self._name(i, record_name(SimResult(meta, (), ()))))
        for p in sorted(self.dir.glob("*.jsonl")):
            key = record_task(p)
            i = next((k for k in free if self.keys[k] == key), None)
            why = check_record(p)
            if why is not None:
                log.warning("%s %s: %s", p, why, "redoing it" if i is not None else "left alone (no task of this "
                            "sweep matches its header; it will be overwritten if one writes the same name)")
                continue
            if i is None:
                continue
            written = record_inputs(p)
            if written:  # a file the task reads may have changed since (its settings alone cannot tell)
                now = input_files(self.items[i], hashes)
                if written != now:
                    changed = sorted(f for f in {*written, *now} if written.get(f) != now.get(f))
                    log.warning("%s was written from another version of %s: redoing it", p, ", ".join(changed))
                    continue
            res = _light(record_view(p)) if self.stream else read_record(p)
            free.remove(i)
            self.names[i] = p.name
            self.rows[i] = summary_row(res)
            found.append((i, res))
        if found:
            self._summary()
        return found

    def _name(self, i: int, base: str) -> str:
        taken = {n for k, n in self.names.items() if k != i}
        name = f"{base}.jsonl"
        if name in taken:  # two tasks of one sweep with the same policy, workload and seed (other settings differ)
            h = hashlib.sha256(json.dumps(self.keys[i], sort_keys=True).encode()).hexdigest()[:8]
            name = f"{base}__{h}.jsonl"
        return name

    def write(self, i: int, result: SimResult) -> Path:
        name = self.names.get(i) or self._name(i, record_name(result))
        staged = result.__dict__.get("_staged")
        if staged is None:
            path = write_record(self.dir / name, result, self.items[i])
        else:  # a worker streamed it, whole, beside: it only gets its name
            path = self.dir / name
            try:
                os.replace(staged, path)
            except OSError as exc:
                raise output_error(path, exc) from None
            kept = result.__dict__.get("_summary", ((),))[0]
            if kept != tuple(f"{f.__module__}.{f.__qualname__}" for f in _COLUMNS):  # summarised under other columns
                result = _light(record_view(path))
        self.names[i] = name
        failed = self._failure_path(i)  # an earlier run's failure of this task, redone now
        if failed.exists():
            with contextlib.suppress(OSError):
                failed.unlink()
        self.rows[i] = summary_row(result)
        self._summary()
        return path

    def _failure_path(self, i: int) -> Path:
        t = self.items[i]
        pol = getattr(t, "policy", "task")
        wl = str(getattr(t, "workload", ""))
        base = "__".join(_safe(x) for x in (pol if isinstance(pol, str) else type(pol).__name__,
                                            Path(wl).stem if wl.lower().endswith(".csv") else wl))
        return self.dir / f"{base}__seed{getattr(t, 'seed', 0)}.failed.json"

    def write_failure(self, i: int, f: SimFailure) -> Path:
        return atomic_write_text(self._failure_path(i), json.dumps(f.to_dict(), indent=1) + "\n")

    def _summary(self) -> None:
        atomic_write_text(self.dir / "summary.csv", summary_csv([self.rows[k] for k in sorted(self.rows)]),
                          fsync=False)


def _check_checkpointable(items: Sequence[Any]) -> None:
    """Every task's policy, placer and admission rule can be checkpointed, on the elastic engine; else an
    InputError naming it, before any run."""
    from .asis import is_as_is
    from .checkpoint import check_checkpointable
    from .families import system_for
    from .policies import make_policy
    from .roles import make_admission, make_placer

    seen: set[str] = set()
    for t in items:
        pol: Any = getattr(t, "policy", None)
        key = json.dumps(task_key({"p": pol, "o": getattr(t, "policy_params", {}), "pl": getattr(t, "placer", None),
                                   "a": getattr(t, "admission", None)}), sort_keys=True)
        if key in seen:
            continue
        seen.add(key)
        if isinstance(pol, str):
            fam = system_for(pol).name
            if (pol.split(":", 1)[0] == "hived") if is_as_is(getattr(t, "workload", None)) else fam != "elastic":
                raise InputError("checkpoint_every", pol, f"policy {pol} runs on the {fam} family's own event loop, "
                                 "which has no checkpoints: run it without --checkpoint-every")
        check_checkpointable("policy", make_policy(pol, getattr(t, "policy_params", None), seed=getattr(t, "seed", 0)))
        check_checkpointable("placer", make_placer(getattr(t, "placer", None)))
        check_checkpointable("admission", make_admission(getattr(t, "admission", None)))


def _light(view: SimResult) -> SimResult:
    """``view`` (a record read one record at a time) summarised, as a result that holds its meta and summary only."""
    keep_summary(view)
    light = SimResult(view.meta, (), (), view.hopeless)
    object.__setattr__(light, "_summary", view.__dict__["_summary"])
    return light


# ------------------------------------------------------------------------------------------------ run_tasks
def run_tasks(
    tasks: Iterable[Any],
    *,
    executor: Any = None,
    workers: int | None = None,
    progress: bool | None = None,
    output_dir: str | os.PathLike[str] | None = None,
    resume: bool = False,
    on_error: Literal["raise", "record"] = "raise",
    heartbeat: float = 30.0,
    in_process: bool | None = None,
    summaries: bool = False,
    stream: bool = False,
    checkpoint_every: Any = None,
) -> list[SimResult | SimFailure]:
    """Run every task; results in task order (:class:`~schedopt.sim.metrics.SimResult`, or :class:`SimFailure`
    where a task failed with ``on_error="record"``). See the module's documentation for executors, the output
    folder, ``resume``, failures, the heartbeat and Ctrl-C.

    ``in_process`` (no ``executor`` only): None runs here when ``workers=1`` or there is one task, else on our pool;
    False always uses our pool (``workers`` processes, default the CPU count), so that Ctrl-C stops a simulation at
    once even inside a policy's solve (a solver's own Ctrl-C handling returns its incumbent and lets the simulation
    go on) -- what ``schedopt simulate`` does; True runs everything here, one after the other.

    ``summaries``: each of our pool's workers also summarises its result (:func:`~schedopt.sim.metrics.keep_summary`)
    before sending it back, where the simulation's caches are warm; ``summarize`` of the result then answers at
    once (``schedopt simulate`` prints every summary).

    ``stream`` (with ``output_dir``, no ``executor``): each simulation on the elastic engine writes its record as
    it runs (:class:`~schedopt.sim.records.RecordStream`: a job's line when it finishes, a round's when it ends; the
    same bytes as a record written at the end), so that its process holds only the active jobs; its result then
    holds the meta and the summary, not the jobs and rounds (read them with
    :func:`~schedopt.sim.records.read_record`). ``checkpoint_every`` (implies ``stream``): every N rounds or T seconds
    of CPU (:func:`schedopt.sim.checkpoint.parse_every`: ``"600s"``, ``"5000r"``) such a run saves its whole state
    beside its record (:func:`checkpoint_path`), and ``resume=True`` goes on from there; a policy, placer or
    admission rule that cannot be restored exactly, and the families with their own event loops, are refused
    before any run (:mod:`schedopt.sim.checkpoint`)."""
    items = list(tasks)
    if on_error not in ON_ERROR:
        raise InputError("on_error", on_error, f"must be one of {list(ON_ERROR)}")
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise InputError("workers", workers, "must be an integer >= 1 (or None: the CPU count)")
    if not (isinstance(heartbeat, (int, float)) and 0 < heartbeat < math.inf):
        raise InputError("heartbeat", heartbeat, "must be a number of seconds > 0")
    if resume and output_dir is None:
        raise InputError("resume", resume, "needs an output folder (output_dir, -o) to resume from")
    if executor is not None:
        from ..executors import kind_of

        kind_of(executor)  # validates it
    if checkpoint_every is not None:
        from .checkpoint import parse_every

        checkpoint_every = parse_every(checkpoint_every)
        if output_dir is None:
            raise InputError("checkpoint_every", str(checkpoint_every), "needs an output folder (output_dir, -o): "
                             "checkpoints are kept beside the records")
        if executor is not None:
            raise InputError("checkpoint_every", str(checkpoint_every), "is written by schedopt's own worker "
                             "processes: run without an executor (--executor, --dask, --ray)")
        _check_checkpointable(items)
        stream = True
    streaming = bool(stream) and output_dir is not None and executor is None
    folder = _Folder(output_dir, items, streaming) if output_dir is not None else None
    out = _Output(str(folder.dir), checkpoint_every, resume) if folder is not None and streaming else None
    results: list[Any] = [None] * len(items)
    if folder is not None and resume:
        for i, res in folder.resume():
            results[i] = res
    todo = [i for i in range(len(items)) if results[i] is None]
    if folder is not None and resume:
        log.info("resuming: %d of %d simulations already recorded in %s", len(items) - len(todo), len(items),
                 folder.dir)
    hb = _Heartbeat(items, progress, float(heartbeat), len(items) - len(todo))

    def finish(i: int, res: Any, running: Callable[[], Iterable[int]]) -> None:
        if isinstance(res, _Failed):
            if on_error == "raise":
                res.raise_for(items[i], results)
            results[i] = SimFailure(items[i], f"{res.type}: {res.message}", res.traceback)
            log.warning("simulation %s failed: %s", task_label(items[i]), results[i].error)
            if folder is not None:
                with _sigint_deferred():
                    folder.write_failure(i, results[i])
        else:
            results[i] = res
            if folder is not None:
                with _sigint_deferred():
                    folder.write(i, res)
        hb.finished(i, running())

    try:
        serial = bool(in_process) if in_process is not None else (workers == 1 or len(todo) <= 1)
        if executor is None and serial:
            for i in todo:
                one: SimResult | _Failed
                try:
                    one = _call(items[i], hb.observer(i), out)
                except Exception as exc:
                    one = _Failed.of(exc)
                    if on_error == "raise":  # here, the original exception with its traceback
                        exc.results = list(results)  # type: ignore[attr-defined]
                        raise
                finish(i, one, list)
        elif todo:
            driver: Any = (_LocalPool(workers or os.cpu_count() or 1, summaries, out) if executor is None
                           else _Foreign(executor, hb))
            try:
                driver.submit([(i, items[i], hb.status_path(i)) for i in todo])
                left = set(todo)
                while left:
                    for i, res in driver.poll(min(hb.interval, 0.5)):
                        left.discard(i)
                        finish(i, res, driver.running)
                    hb.tick(driver.running())
            except BaseException:
                driver.stop()
                raise
            driver.close()
    except KeyboardInterrupt:
        raise SweepInterrupted(results, len(items), output_dir) from None
    finally:
        hb.close()
    return results  # every entry set: a result, or a failure kept with on_error="record"
