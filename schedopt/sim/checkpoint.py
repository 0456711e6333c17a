"""Checkpoints inside a simulation: a killed whole-trace run goes on from its last checkpoint (``schedopt simulate
--checkpoint-every``; docs: ``docs/scale/replay.md``).

A sweep's worker (:func:`schedopt.sim.runs.run_tasks` with an output folder) hands the engine a
:class:`RunHooks` for one task (:func:`run_hooks`, taken once by :func:`~schedopt.sim.simulate`): a
:class:`~schedopt.sim.records.RecordStream` that writes the job and round records as the run makes them, and, with
``checkpoint_every``, a :class:`Checkpoint`. Every N rounds or T seconds of CPU (:class:`CheckpointEvery`) the
engine saves its whole state -- the loop's (clock, round index, counters, the previous placement and round record),
every arrived job's :class:`~schedopt.sim.jobs.JobState`, the policy, placer and admission objects (their queues,
caches and random generators), the global random states -- and the record stream's position (the spools flushed
and fsynced first) to ``<stem>.checkpoint`` beside the record, atomically (a temporary file renamed over it).

The file is a magic line, a JSON header line and a pickle. The header holds the format and :data:`CHECKPOINT_VERSION`,
the schedopt version and a hash of the simulator's code (the engine, job and record modules and the policy's,
placer's and admission's own modules), a hash of the task (:func:`~schedopt.sim.records.task_key`), the SHA-256 of
every file the task names by path (:func:`input_files`: a trace or workload file), the stream's position and the
payload's length and SHA-256. A checkpoint of another version, other code, another task or a file that changed since
is refused (a warning naming the file and why; the run starts over and overwrites it); a cut-short, torn or unreadable
one is ignored with a warning (the run starts over), never a crash. The cluster and the job model are not pickled
but named (the resumed run's own objects take their place), so identities the engine and policies test (``is``)
hold after a resume.

**What may be checkpointed.** Only an object that says it restores exactly: a policy, placer or admission rule with
``checkpointable = True`` (its whole state pickles, and a run resumed from a pickle of it decides as the
uninterrupted run; ``fifo``, ``tiresias`` and ``sia`` are tested so, by a run killed with SIGKILL and resumed,
against an uninterrupted one). Any other is refused before the run with an :class:`~schedopt.errors.InputError`
naming it. The families with their own event loops (Synergy, Gandiva, HiveD) have no checkpoints.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import json
import logging
import math
import os
import re
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputError
from .records import RecordError, RecordStream, atomic_write_bytes, input_files, task_key

__all__ = ["CHECKPOINT_FORMAT", "CHECKPOINT_VERSION", "Checkpoint", "CheckpointEvery", "RunHooks", "input_files",
           "parse_every", "run_hooks", "take_run_hooks"]

log = logging.getLogger(__name__)

#: The ``format`` field of a checkpoint's header.
CHECKPOINT_FORMAT = "schedopt.sim.checkpoint"
#: The checkpoint layout's version (a checkpoint of another is refused).
CHECKPOINT_VERSION = 1
_MAGIC = b"schedopt.sim.checkpoint\n"


@dataclass(frozen=True)
class CheckpointEvery:
    """How often a run saves a checkpoint: every ``rounds`` rounds, or every ``cpu_seconds`` of this process's CPU
    time (whichever comes first; at least one is set)."""

    rounds: int | None = None
    cpu_seconds: float | None = None

    def __post_init__(self) -> None:
        if self.rounds is None and self.cpu_seconds is None:
            raise InputError("checkpoint_every", None, "needs rounds or cpu_seconds")
        if self.rounds is not None and (isinstance(self.rounds, bool) or not isinstance(self.rounds, int)
                                        or self.rounds < 1):
            raise InputError("checkpoint_every.rounds", self.rounds, "must be an integer >= 1")
        if self.cpu_seconds is not None and not (isinstance(self.cpu_seconds, (int, float)) and
                                                 0 < self.cpu_seconds < math.inf):
            raise InputError("checkpoint_every.cpu_seconds", self.cpu_seconds, "must be a number of seconds > 0")


_UNITS = {"": 1.0, "s": 1.0, "sec": 1.0, "min": 60.0, "m": 60.0, "h": 3600.0}


def parse_every(text: str | CheckpointEvery) -> CheckpointEvery:
    """``--checkpoint-every``: ``600`` or ``600s`` (seconds of CPU), ``10min``, ``1h``; ``5000r`` or ``5000rounds``
    (rounds). A :class:`CheckpointEvery` passes through."""
    if isinstance(text, CheckpointEvery):
        return text
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([a-z]*)\s*", str(text).lower())
    if m is not None and m.group(2) in ("r", "round", "rounds"):
        if "." not in m.group(1) and int(m.group(1)) >= 1:
            return CheckpointEvery(rounds=int(m.group(1)))
    elif m is not None and m.group(2) in _UNITS and float(m.group(1)) > 0:
        return CheckpointEvery(cpu_seconds=float(m.group(1)) * _UNITS[m.group(2)])
    raise InputError("--checkpoint-every", text, "must be seconds of CPU (600, 600s, 10min, 1h) or rounds (5000r)")


# ------------------------------------------------------------------------------------------------ what may be saved
def check_checkpointable(role: str, obj: object) -> None:
    """An :class:`~schedopt.errors.InputError` naming ``role`` unless ``obj`` says it restores exactly
    (``checkpointable = True``) and pickles."""
    import pickle

    name = str(getattr(obj, "name", type(obj).__name__))
    where = f"{type(obj).__module__}:{type(obj).__qualname__}"
    if getattr(obj, "checkpointable", False) is not True:
        raise InputError(f"{role}[{name}]", where, "cannot be checkpointed: it does not say that a pickle of it "
                         "restores its decisions exactly (give its class `checkpointable = True` once its whole "
                         "state pickles and a resumed run decides as an uninterrupted one), or run without "
                         "--checkpoint-every")
    try:
        pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as exc:
        raise InputError(f"{role}[{name}]", where, f"says it is checkpointable but does not pickle: "
                         f"{type(exc).__name__}: {exc}") from None


def code_hash(*objs: object) -> str:
    """A hash of the simulator's code that a checkpoint depends on: the engine, job, record and checkpoint modules
    and the modules of ``objs`` (the policy's, placer's, admission's classes)."""
    mods = [sys.modules.get(f"{__package__}.{m}") for m in ("engine", "jobs", "metrics", "records", "checkpoint")]
    files = {getattr(m, "__file__", None) for m in mods}
    for o in objs:
        mod = sys.modules.get(type(o).__module__)
        if mod is not None and getattr(mod, "__file__", None):
            files.add(mod.__file__)
    h = hashlib.sha256()
    for f in sorted(x for x in files if x):
        with contextlib.suppress(OSError):
            h.update(Path(f).read_bytes())
    return h.hexdigest()


def _task_hash(task: Any) -> str:
    return hashlib.sha256(json.dumps(task_key(task), sort_keys=True).encode()).hexdigest()


def _version() -> str:
    from .. import __version__

    return str(__version__)


# ------------------------------------------------------------------------------------------------ the file
class Checkpoint:
    """One run's checkpoint file (module doc): :meth:`open_stream` (the record stream, continued from the
    checkpoint when it is valid), then in the engine :meth:`check_roles`, :meth:`restore`, :meth:`due` and
    :meth:`save`; :meth:`remove` when the run's record is written."""

    def __init__(self, path: str | os.PathLike[str], task: Any, every: CheckpointEvery | str, *,
                 resume: bool = True) -> None:
        self.path = Path(path)
        self.task, self.every = task, parse_every(every)
        self.resume = resume
        self.stream: RecordStream | None = None
        self.saved = 0  #: checkpoints written by this run
        self.resumed_from: int | None = None  #: the rounds done when the run was resumed (None: from the start)
        self._header: dict[str, Any] | None = None
        self._payload: bytes | None = None
        self._code = ""
        self._inputs: dict[str, str] | None = None
        self._last_rounds, self._last_cpu = 0, time.process_time()

    @staticmethod
    def every_of(path: str | os.PathLike[str]) -> CheckpointEvery | None:
        """How often the run that wrote the checkpoint at ``path`` saved (None: no readable checkpoint there): a
        ``--resume`` without ``--checkpoint-every`` goes on from it at that interval."""
        try:
            with open(path, "rb") as f:
                if f.readline() != _MAGIC:
                    return None
                ev = json.loads(f.readline().decode())["every"]
            return CheckpointEvery(rounds=ev.get("rounds"), cpu_seconds=ev.get("cpu_seconds"))
        except (OSError, ValueError, KeyError, TypeError, AttributeError, InputError):
            return None

    # -- reading
    def _read(self) -> tuple[dict[str, Any], bytes] | None:
        """The header and payload of the file, or None (a warning says why) when there is none to use."""
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            log.warning("checkpoint %s cannot be read (%s): starting the run over", self.path, exc.strerror or exc)
            return None
        head, _, rest = raw[len(_MAGIC):].partition(b"\n") if raw.startswith(_MAGIC) else (b"", b"", b"")
        try:
            header = json.loads(head.decode())
            assert isinstance(header, dict) and header.get("format") == CHECKPOINT_FORMAT
        except (ValueError, UnicodeDecodeError, AssertionError):
            log.warning("checkpoint %s is not a schedopt checkpoint (cut short or corrupt): ignored, starting the "
                        "run over", self.path)
            return None
        pay = header.get("payload") or {}
        if len(rest) != pay.get("bytes") or hashlib.sha256(rest).hexdigest() != pay.get("sha256"):
            log.warning("checkpoint %s is cut short or torn (%d payload bytes, its header says %s): ignored, "
                        "starting the run over", self.path, len(rest), pay.get("bytes"))
            return None
        why = None
        if header.get("version") != CHECKPOINT_VERSION:
            why = f"is checkpoint version {header.get('version')!r}; this schedopt writes {CHECKPOINT_VERSION}"
        elif header.get("schedopt") != _version():
            why = f"was written by schedopt {header.get('schedopt')}; this is {_version()}"
        elif header.get("python") != list(sys.version_info[:2]):
            why = f"was written by Python {header.get('python')}; this is {list(sys.version_info[:2])}"
        elif header.get("task") != _task_hash(self.task):
            why = "was written for another task (its settings differ from this run's)"
        elif (changed := self._changed_inputs(header.get("inputs"))):
            why = f"was written when {changed} held other bytes (the file changed since)"
        if why is not None:
            log.warning("checkpoint %s %s: refused, starting the run over", self.path, why)
            return None
        return header, rest

    def inputs(self) -> dict[str, str]:
        """:func:`input_files` of this run's task, computed once."""
        if self._inputs is None:
            self._inputs = input_files(self.task)
        return self._inputs

    def _changed_inputs(self, saved: Any) -> str:
        """The first of the task's input files whose hash differs from ``saved`` (a header's ``inputs``; a
        checkpoint without it, from before this field, is compared on the task alone), else ``""``."""
        if not isinstance(saved, dict):
            return ""
        now = self.inputs()
        for path in sorted(set(saved) | set(now)):
            if saved.get(path) != now.get(path):
                return path
        return ""

    def open_stream(self, record: str | os.PathLike[str], spool: str,
                    shown: str | os.PathLike[str] | None = None) -> RecordStream:
        """The run's record stream (spools ``.<spool>.jobs`` / ``.rounds`` beside ``record``): continued from the
        checkpoint when there is a valid one (``resume``), else new."""
        got = self._read() if self.resume else None
        stream = None
        if got is not None:
            header, payload = got
            try:
                pos = [int(x) for x in header["stream"]]
                stream = RecordStream(record, self.task, spool=spool, resume_at=(pos[0], pos[1], pos[2], pos[3]),
                                      shown=shown)
                self._header, self._payload = header, payload
            except (RecordError, KeyError, TypeError, ValueError, IndexError) as exc:
                why = exc.message if isinstance(exc, RecordError) else f"has no stream position ({exc})"
                log.warning("checkpoint %s: its record spool %s: starting the run over", self.path, why)
        if stream is None:
            stream = RecordStream(record, self.task, spool=spool, shown=shown)
        self.stream = stream
        return stream

    # -- the engine's side
    def check_roles(self, policy: object, placer: object, admission: object) -> None:
        """Refuse (InputError naming it) a policy, placer or admission rule that cannot be checkpointed; before
        any round."""
        for role, obj in (("policy", policy), ("placer", placer), ("admission", admission)):
            check_checkpointable(role, obj)
        self._code = code_hash(policy, placer, admission)
        if self._header is not None and self._header.get("code") != self._code:
            log.warning("checkpoint %s was written by other code of the simulator (changed since): refused, "
                        "starting the run over", self.path)
            self._drop()

    def _drop(self) -> None:
        """Forget the checkpoint read and start the stream over."""
        self._header = self._payload = None
        if self.stream is not None:
            self.stream.reset()

    def restore(self, cluster: object, job_model: object) -> dict[str, Any] | None:
        """The state the engine saved (:meth:`save`), with this run's ``cluster`` and ``job_model`` (and the
        job model presets) in place of those named at saving; None when the run starts from the beginning."""
        if self._payload is None:
            return None
        import pickle

        ids = {k: v for v, k in _named(cluster, job_model)}

        class _Unpickler(pickle.Unpickler):
            def persistent_load(self, pid: Any) -> Any:
                if pid not in ids:
                    raise pickle.UnpicklingError(f"names {pid!r}, which this run does not have")
                return ids[pid]

        import io

        try:
            state: dict[str, Any] = _Unpickler(io.BytesIO(self._payload)).load()
        except Exception as exc:
            log.warning("checkpoint %s cannot be restored (%s: %s): starting the run over", self.path,
                        type(exc).__name__, exc)
            self._drop()
            return None
        self._payload = None
        rng = state.pop("rng", None)
        if rng is not None:
            import random

            import numpy as np

            random.setstate(rng[0])
            np.random.set_state(rng[1])
        self.resumed_from = int(state.get("rounds", 0))
        self._last_rounds = self.resumed_from
        log.info("resuming %s from its checkpoint: round %d, %.4g h simulated", self.path.name, self.resumed_from,
                 float(state.get("time", 0.0)) / 3600)
        return state

    def due(self, rounds_done: int) -> bool:
        """Whether a checkpoint is due after ``rounds_done`` rounds."""
        ev = self.every
        if ev.rounds is not None and rounds_done - self._last_rounds >= ev.rounds:
            return True
        return ev.cpu_seconds is not None and time.process_time() - self._last_cpu >= ev.cpu_seconds

    def save(self, state: dict[str, Any], cluster: object, job_model: object) -> None:
        """Write ``state`` (with ``rounds`` and ``time``) and the stream's position atomically; ``cluster``,
        ``job_model`` and the job model presets are named, not pickled."""
        import io
        import pickle
        import random

        import numpy as np

        assert self.stream is not None
        named = {id(o): k for o, k in _named(cluster, job_model)}

        class _Pickler(pickle.Pickler):
            def persistent_id(self, obj: Any) -> Any:
                return named.get(id(obj))

        buf = io.BytesIO()
        _Pickler(buf, protocol=pickle.HIGHEST_PROTOCOL).dump({**state, "rng": (random.getstate(),
                                                                                np.random.get_state())})
        payload = buf.getvalue()
        header = {"format": CHECKPOINT_FORMAT, "version": CHECKPOINT_VERSION, "schedopt": _version(),
                  "python": list(sys.version_info[:2]), "code": self._code, "task": _task_hash(self.task),
                  "inputs": self.inputs(),
                  "rounds": int(state.get("rounds", 0)), "time": float(state.get("time", 0.0)),
                  "every": {"rounds": self.every.rounds, "cpu_seconds": self.every.cpu_seconds},
                  "stream": list(self.stream.position()),
                  "payload": {"bytes": len(payload), "sha256": hashlib.sha256(payload).hexdigest()}}
        data = _MAGIC + json.dumps(header).encode() + b"\n" + payload
        atomic_write_bytes(self.path, data)
        self.saved += 1
        self._last_rounds, self._last_cpu = int(state.get("rounds", 0)), time.process_time()

    def remove(self) -> None:
        """Delete the checkpoint (the run's record is whole)."""
        with contextlib.suppress(OSError):
            self.path.unlink()


def _named(cluster: object, job_model: object) -> list[tuple[object, str]]:
    """The objects a checkpoint names instead of pickling: this run's cluster and job model, the job model presets
    (a policy's own, e.g. Sia's restart delays)."""
    from .jobs import POLLUX, SIA, SIA_MEASURED

    return [(POLLUX, "job_model:pollux"), (SIA, "job_model:sia"), (SIA_MEASURED, "job_model:sia-measured"),
            (job_model, "job_model"), (cluster, "cluster")]


# ------------------------------------------------------------------------------------------------ the hand-over
@dataclass
class RunHooks:
    """What a sweep's worker hands :func:`~schedopt.sim.simulate` for one task: the record stream and the
    checkpoint (None: no checkpoints). ``taken``: a simulation took them (the families with their own loops
    do not: their records are written from memory as before)."""

    stream: RecordStream
    checkpoint: Checkpoint | None = None
    taken: bool = field(default=False)


_HOOKS: contextvars.ContextVar[RunHooks | None] = contextvars.ContextVar("schedopt_sim_run_hooks", default=None)


@contextlib.contextmanager
def run_hooks(hooks: RunHooks) -> Iterator[RunHooks]:
    """Offer ``hooks`` to the first :func:`~schedopt.sim.simulate` call inside the block."""
    token = _HOOKS.set(hooks)
    try:
        yield hooks
    finally:
        _HOOKS.reset(token)


def take_run_hooks() -> RunHooks | None:
    """The hooks offered by :func:`run_hooks`, once (a nested simulation does not get them)."""
    h = _HOOKS.get()
    if h is None or h.taken:
        return None
    h.taken = True
    return h
