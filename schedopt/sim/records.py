"""Simulation records on disk: written atomically, read back only when whole.

A record is the JSON-lines text of one :class:`~schedopt.sim.metrics.SimResult`
(:meth:`~schedopt.sim.metrics.SimResult.to_jsonl`) between a header and an end marker::

    {"record": {"format": "schedopt.sim.record", "version": 1, "task": {...}}}     <- what was simulated
    {"meta": {...}}                                                                <- SimResult.to_jsonl()
    {"job": {...}}   ...one line per job
    {"round": {...}} ...one line per round
    {"end": {"sha256": "<hex of every byte above>", "lines": N, "jobs": J, "rounds": R}}

A file whose end marker is missing (cut short), whose checksum or counts disagree (torn or edited), or which is
empty, is *not a record*: :func:`read_record` raises :class:`RecordError` naming the file and what is wrong, and
:func:`check_record` says it without raising. :func:`write_record` writes through a temporary file in the same
folder (``.<name>.tmp-<pid>``, never matching ``*.jsonl``) that is flushed, fsynced and renamed over the target
(``os.replace``), so a reader sees either the old file, or the whole new one -- never a part.

**Determinism.** Identical inputs give byte-identical records except in the fields of :data:`WALL_CLOCK_FIELDS`
(the policy's wall and CPU time per round, the solver's phase timings, any ``seconds`` a policy reports in its
round ``info``, and a family's total policy time in the meta, HiveD's), and so the end marker's checksum. :func:`mask_wall_clock` blanks exactly those, so two records of
the same task compare equal byte for byte. (With ``charge_policy_time=True`` the policy's wall time enters the
simulation itself, and nothing after the first re-allocation is reproducible.)
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import hashlib
import json
import math
import os
import re
from array import array
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, BinaryIO, cast, overload

from ..errors import InputError
from .metrics import JobRecord, RoundRecord, SimMeta, SimResult, read_jsonl

__all__ = [
    "RECORD_FORMAT",
    "RECORD_VERSION",
    "WALL_CLOCK_FIELDS",
    "RecordError",
    "RecordStream",
    "StoredRecords",
    "atomic_write_bytes",
    "atomic_write_text",
    "check_record",
    "input_files",
    "mask_wall_clock",
    "output_error",
    "output_folder",
    "read_record",
    "record_inputs",
    "record_task",
    "record_text",
    "record_view",
    "task_key",
    "write_record",
]

#: The ``format`` field of a simulation record (``schedopt/schemas/sim_record.schema.json``).
RECORD_FORMAT = "schedopt.sim.record"
#: The simulation record's version.
RECORD_VERSION = 1

#: The fields of a record that are wall-clock measurements (they differ between identical runs), as
#: ``<line kind>.<path>``; a trailing ``.*`` means every key under it. Everything else is deterministic.
WALL_CLOCK_FIELDS: tuple[str, ...] = (
    "meta.policy_seconds_total",
    "round.policy_seconds",
    "round.policy_cpu_seconds",
    "round.answer.timings.*",
    "round.info.seconds",
    "end.sha256",
)


class RecordError(InputError):
    """A file that is not a whole simulation record (empty, cut short, torn, or not a record at all);
    ``field`` is ``"record"``, ``value`` the file's path."""

    def __init__(self, path: str | os.PathLike[str], message: str) -> None:
        super().__init__("record", str(path), _full(path, message))


def _full(path: str | os.PathLike[str], message: str) -> str:
    """``message``, ending with the whole path when the error's value (cut at 80 characters) would not show it."""
    return message if len(repr(str(path))) <= 80 else f"{message}: {path}"


def task_key(task: Any) -> dict[str, Any]:
    """A task as plain JSON values (what the record's header stores and ``--resume`` matches on): every field of a
    dataclass task; an object that JSON cannot hold (a policy object) by its ``module:qualname``."""
    if task is None:
        return {}
    if dataclasses.is_dataclass(task) and not isinstance(task, type):
        return {f.name: _plain(getattr(task, f.name)) for f in dataclasses.fields(task)}
    if isinstance(task, Mapping):
        return {str(k): _plain(v) for k, v in task.items()}
    return {"task": _plain(task)}


def _plain(v: Any) -> Any:
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, Mapping):
        return {str(k): _plain(x) for k, x in sorted(v.items(), key=lambda kv: str(kv[0]))}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    t = type(v)
    return f"{t.__module__}:{t.__qualname__}"


def _named_files(value: str) -> list[Path]:
    """The files a task's string names: the whole string, or a prefix of it ending before ``:`` or ``+`` (a
    workload ``FILE:load=2``, ``FILE+gpt=0.2``), when it is a regular file here."""
    cuts = [len(value)] + [m.start() for m in re.finditer(r"[:+]", value)]
    out: list[Path] = []
    for end in sorted(set(cuts)):
        head = value[:end]
        if head and "\x00" not in head:
            with contextlib.suppress(OSError, ValueError):
                if Path(head).is_file():
                    out.append(Path(head))
    return out


def input_files(task: Any, hashes: dict[str, str] | None = None) -> dict[str, str]:
    """The files a task reads by path (its workload, cluster or job model given as a file, or a trace named in a
    workload spec), each with the SHA-256 of its bytes: a checkpoint holds them, and a resume after a file changed
    is refused (the task's settings alone cannot tell), and a whole record's end marker holds them (``inputs``, left
    out when the task names no file), so that ``resume`` redoes a record written from another version of a file.
    Paths are as the task names them, resolved. ``hashes``: resolved path -> SHA-256 already read (filled here), for
    a caller asking of many tasks that share a file (a resumed sweep's records of one trace)."""
    out: dict[str, str] = {}
    for v in task_key(task).values():
        if not isinstance(v, str):
            continue
        for path in _named_files(v):
            name = str(path.resolve())
            digest = hashes.get(name) if hashes is not None else None
            if digest is None:
                h = hashlib.sha256()
                try:
                    with open(path, "rb") as f:
                        for block in iter(lambda: f.read(1 << 20), b""):
                            h.update(block)
                except OSError:
                    continue
                digest = h.hexdigest()
                if hashes is not None:
                    hashes[name] = digest
            out[name] = digest
    return out


def _end_marker(digest: str, lines: int, jobs: int, rounds: int, task: Any) -> dict[str, Any]:
    """A whole record's end marker: its checksum and counts, and the files its task reads (``inputs``, left out
    when there are none)."""
    end: dict[str, Any] = {"sha256": digest, "lines": lines, "jobs": jobs, "rounds": rounds}
    inputs = input_files(task)
    if inputs:
        end["inputs"] = inputs
    return end


def _dumps(obj: Any) -> str:
    return json.dumps(obj, sort_keys=False)


def record_text(result: SimResult, task: Any = None) -> str:
    """The whole record of ``result`` (header, :meth:`SimResult.to_jsonl`, end marker); ``task``: what was run (a
    :class:`~schedopt.sim.sweep.SimTask` or a mapping), stored in the header."""
    head = _dumps({"record": {"format": RECORD_FORMAT, "version": RECORD_VERSION, "task": task_key(task)}}) + "\n"
    body = head + result.to_jsonl()
    digest = hashlib.sha256(body.encode()).hexdigest()
    end = _end_marker(digest, body.count("\n"), len(result.jobs), len(result.rounds), task)
    return body + _dumps({"end": end}) + "\n"


def output_error(path: str | os.PathLike[str], exc: OSError) -> InputError:
    """An :class:`~schedopt.errors.InputError` naming ``path`` for an ``OSError`` met while writing there."""
    why = {errno.ENOSPC: "no space left on the device", errno.EDQUOT: "disk quota exceeded",
           errno.EROFS: "is on a read-only file system", errno.EACCES: "permission denied",
           errno.EPERM: "permission denied", errno.ENOTDIR: "is not a folder (or a part of it is a file)",
           errno.EEXIST: "exists and is not a folder", errno.EISDIR: "is a folder"}.get(exc.errno or 0)
    return InputError("output", str(path), _full(path, f"cannot be written: {why or exc.strerror or exc}"))


def output_folder(path: str | os.PathLike[str], field: str = "output", *, probe: bool = True) -> Path:
    """``path`` made a folder (created with its parents when missing) that can be written: a file there, a folder
    that cannot be made, or (``probe``) one that cannot be written (read-only, full) is an
    :class:`~schedopt.errors.InputError` naming ``field`` and the path, before any work."""
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise InputError(field, str(p), _full(p, "is a file, not a folder"))
    try:
        p.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        err = output_error(p, exc)
        raise InputError(field, err.value, err.message) from None
    if probe:
        test = p / f".schedopt-write-test-{os.getpid()}"
        try:
            atomic_write_text(test, "probe\n", fsync=False)
        except InputError as exc:
            raise InputError(field, exc.value, exc.message) from None
        with contextlib.suppress(OSError):
            os.unlink(test)
    return p


def atomic_write_text(path: str | os.PathLike[str], text: str, *, fsync: bool = True) -> Path:
    """Write ``text`` to ``path`` through ``.<name>.tmp-<pid>`` in the same folder and ``os.replace``: readers see
    the old file or the whole new one. An ``OSError`` (full disk, read-only folder, ...) removes the temporary file
    and becomes an :class:`~schedopt.errors.InputError` naming ``path``."""
    return atomic_write_bytes(path, text.encode(), fsync=fsync)


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes, *, fsync: bool = True) -> Path:
    """:func:`atomic_write_text` for bytes (a checkpoint's pickle)."""
    p = Path(path)
    tmp = p.with_name(f".{p.name}.tmp-{os.getpid()}")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            view = memoryview(data)
            while view:
                n = os.write(fd, view)
                view = view[n:]
            if fsync:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, p)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise output_error(p, exc) from None
    except BaseException:  # Ctrl-C mid-write: no temporary file left behind
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return p


def write_record(path: str | os.PathLike[str], result: SimResult, task: Any = None, *, fsync: bool = True) -> Path:
    """Write ``result``'s record (:func:`record_text`) to ``path`` atomically (:func:`atomic_write_text`)."""
    return atomic_write_text(path, record_text(result, task), fsync=fsync)


def _problem(text: str) -> str | None:
    """What makes ``text`` not a whole record, or None."""
    if not text.strip():
        return "is empty (no simulation record)"
    if not text.endswith("\n"):
        return "is cut short (its last line is incomplete)"
    body, _, last = text[:-1].rpartition("\n")
    try:
        end = json.loads(last).get("end")
    except (ValueError, AttributeError):
        end = None
    if not isinstance(end, dict):
        return ("has no end marker: cut short (a run killed while writing, a full disk), written by a schedopt "
                "older than checked records (run it again), or not a simulation record")
    body += "\n"
    if hashlib.sha256(body.encode()).hexdigest() != end.get("sha256"):
        return "fails its checksum (torn or edited after it was written)"
    try:
        first = json.loads(body.partition("\n")[0]).get("record", {})
    except (ValueError, AttributeError):
        first = {}
    if not isinstance(first, dict) or first.get("format") != RECORD_FORMAT:
        return "has no schedopt.sim.record header"
    if first.get("version") != RECORD_VERSION:
        return f"is record version {first.get('version')!r}; this schedopt reads version {RECORD_VERSION}"
    if body.count("\n") != end.get("lines"):
        return f"holds {body.count(chr(10))} lines, its end marker says {end.get('lines')}"
    return None


def _read_text(path: Path) -> str:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise RecordError(path, f"cannot be read: {exc.strerror or exc}") from None
    try:
        return raw.decode()
    except UnicodeDecodeError:
        raise RecordError(path, "is not UTF-8 text (not a schedopt simulation record)") from None


def check_record(path: str | os.PathLike[str]) -> str | None:
    """None when ``path`` holds a whole record; else what is wrong with it (empty, cut short, torn, ...)."""
    try:
        return _problem(_read_text(Path(path)))
    except RecordError as exc:
        return exc.message


def read_record(path: str | os.PathLike[str]) -> SimResult:
    """The :class:`~schedopt.sim.metrics.SimResult` held by the record at ``path``; :class:`RecordError` (naming
    the file) when it is not a whole record."""
    p = Path(path)
    text = _read_text(p)
    why = _problem(text)
    if why is not None:
        raise RecordError(p, why)
    try:
        result = read_jsonl(text)
    except (ValueError, KeyError, TypeError) as exc:
        raise RecordError(p, f"holds a line that is not a simulation record: {exc}") from None
    end = json.loads(text[:-1].rpartition("\n")[2])["end"]
    if (len(result.jobs), len(result.rounds)) != (end.get("jobs"), end.get("rounds")):
        raise RecordError(p, f"holds {len(result.jobs)} jobs and {len(result.rounds)} rounds, its end "
                          f"marker says {end.get('jobs')} and {end.get('rounds')}")
    return result


def record_inputs(path: str | os.PathLike[str]) -> dict[str, str] | None:
    """The input files (path -> SHA-256, :func:`input_files`) the end marker of the whole record at ``path`` holds:
    an empty dict when its task named no file (or it was written before records held them), None when the file has
    no readable end marker (see :func:`check_record`)."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - 65536))
            last = f.read().rstrip(b"\n").rpartition(b"\n")[2]
        end = json.loads(last.decode()).get("end")
    except (OSError, ValueError, AttributeError, UnicodeDecodeError):
        return None
    if not isinstance(end, dict):
        return None
    got = end.get("inputs", {})
    return {str(k): str(v) for k, v in got.items()} if isinstance(got, dict) else None


def record_task(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The task stored in the header of the record at ``path`` (read from its first line only; None when the file
    has no header). Says nothing about whether the record is whole: see :func:`check_record`."""
    try:
        with open(path, "rb") as f:
            first = f.readline()
        d = json.loads(first.decode()).get("record")
    except (OSError, ValueError, AttributeError, UnicodeDecodeError):
        return None
    return d.get("task") if isinstance(d, dict) and isinstance(d.get("task"), dict) else None


def _mask(obj: Any, path: list[str]) -> Any:
    if not path or not isinstance(obj, dict):
        return obj
    head, rest = path[0], path[1:]
    if head == "*":
        return {k: None for k in obj}
    if head not in obj:
        return obj
    return {**obj, head: None if not rest else _mask(obj[head], rest)}


def mask_wall_clock(text: str) -> str:
    """``text`` (a record, or :meth:`SimResult.to_jsonl` output) with every field of :data:`WALL_CLOCK_FIELDS` set
    to null: two runs of the same task give the same masked text byte for byte."""
    rules: dict[str, list[list[str]]] = {}
    for f in WALL_CLOCK_FIELDS:
        kind, _, rest = f.partition(".")
        rules.setdefault(kind, []).append(rest.split("."))
    out = []
    for line in text.splitlines():
        if not line.strip():
            continue
        d = json.loads(line)
        kind = next(iter(d), "")
        if kind in rules:
            body = d[kind]
            for r in rules[kind]:
                body = _mask(body, r)
            line = _dumps({kind: body})
        out.append(line)
    return "\n".join(out) + "\n"


class RecordStream:
    """A simulation's record written while it runs (:func:`~schedopt.sim.simulate` ``sink=``): each job's
    line when the job finishes, each round's when the round ends, so that a whole trace's run holds only its active
    jobs in memory. The lines go to two spool files beside ``path`` (``.<name>.jobs-<pid>``, ``.<name>.rounds-<pid>``;
    ``spool="<stem>"``: ``.<stem>.jobs`` and ``.<stem>.rounds``, names another process finds again, for a run that
    checkpoints); :meth:`close` writes the record -- header, meta, jobs, rounds, hopeless jobs, end marker, the layout
    of :func:`record_text`, which :func:`read_record` reads as any other -- through a temporary file renamed over
    ``path``, and removes the spools. The jobs are in the order they finished (the unfinished last), unless
    :meth:`result` was given the workload's order (a sweep's run: then the record is byte for byte what
    :func:`write_record` writes for the same run); everything else is what :func:`write_record` writes.

    ``resume_at``: a :meth:`position` saved by a checkpoint: the spools are cut back to it and written on from
    there (:mod:`schedopt.sim.checkpoint`); a spool shorter than it is a :class:`RecordError`."""

    def __init__(self, path: str | os.PathLike[str], task: Any = None, *, spool: str | None = None,
                 resume_at: tuple[int, int, int, int] | None = None,
                 shown: str | os.PathLike[str] | None = None) -> None:
        self.path, self.task = Path(path), task
        self.shown = Path(shown) if shown is not None else self.path  # the path errors name (a sweep's record)
        self.jobs_written = self.rounds_written = 0
        self._order: list[int] | None = None  # spool offsets of the job lines, in the record's order
        tail = (lambda k: f".{spool}.{k}") if spool is not None else (lambda k: f".{self.path.name}.{k}-{os.getpid()}")
        self._spool = {k: self.path.with_name(tail(k)) for k in ("jobs", "rounds")}
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._files: dict[str, BinaryIO] = {}
            if resume_at is None:
                self._files = {k: open(p, "wb") for k, p in self._spool.items()}
            else:
                for (k, p), size in zip(self._spool.items(), resume_at[:2], strict=True):
                    f = open(p, "r+b")
                    self._files[k] = f
                    have = f.seek(0, os.SEEK_END)
                    if have < size:
                        self.discard()
                        raise RecordError(p, f"is shorter ({have} bytes) than its checkpoint says ({size})")
                    f.truncate(size)
                    f.seek(size)
                self.jobs_written, self.rounds_written = resume_at[2], resume_at[3]
        except FileNotFoundError as exc:
            self.discard()
            raise RecordError(exc.filename, "is missing (the spool of the checkpointed run)") from None
        except OSError as exc:
            raise output_error(self.shown, exc) from None

    def _line(self, spool: str, doc: dict[str, Any]) -> None:
        try:
            self._files[spool].write((_dumps(doc) + "\n").encode())
        except OSError as exc:
            raise output_error(self.shown, exc) from None

    def job(self, record: JobRecord) -> None:
        """Write one job's line."""
        self._line("jobs", {"job": record.to_dict()})
        self.jobs_written += 1

    def round(self, record: RoundRecord) -> None:
        """Write one round's line."""
        self._line("rounds", {"round": record.to_dict()})
        self.rounds_written += 1

    def position(self) -> tuple[int, int, int, int]:
        """(bytes of the job spool, bytes of the round spool, jobs written, rounds written), flushed and fsynced:
        what a checkpoint saves to continue the stream from (``resume_at``)."""
        sizes = []
        try:
            for f in self._files.values():
                f.flush()
                os.fsync(f.fileno())
                sizes.append(f.tell())
        except OSError as exc:
            raise output_error(self.shown, exc) from None
        return sizes[0], sizes[1], self.jobs_written, self.rounds_written

    def job_records(self) -> Iterator[JobRecord]:
        """The job records written so far, read back one at a time from the spool (in the order written)."""
        self._files["jobs"].flush()
        with open(self._spool["jobs"], encoding="utf-8") as f:
            for line in f:
                yield JobRecord.from_dict(json.loads(line)["job"])

    def result(self, meta: SimMeta, hopeless: tuple[str, ...], order: Iterable[str]) -> SimResult:
        """The run's :class:`~schedopt.sim.metrics.SimResult` with its jobs and rounds read back from the spools as
        they are iterated (:class:`StoredRecords`: the memory of the run's active jobs only), the jobs in ``order``
        (the workload's job ids), which :meth:`close` then writes. Valid until :meth:`close`."""
        try:
            for f in self._files.values():
                f.flush()
        except OSError as exc:
            raise output_error(self.shown, exc) from None
        at: dict[str, int] = {}
        pos = 0
        with open(self._spool["jobs"], "rb") as sp:
            for line in sp:
                at[json.loads(line)["job"]["id"]] = pos
                pos += len(line)
        offsets = array("q", (at.pop(j) for j in order if j in at))
        offsets.extend(sorted(at.values()))  # (none: every job of the workload has its line)
        self._order = list(offsets)
        jobs = StoredRecords(self._spool["jobs"], offsets, JobRecord.from_dict, "job")
        rounds = StoredRecords.scan(self._spool["rounds"], "round")
        return SimResult(meta, cast("tuple[JobRecord, ...]", jobs), cast("tuple[RoundRecord, ...]", rounds), hopeless)

    def close(self, meta: SimMeta, hopeless: Iterable[str] = ()) -> Path:
        """Write the whole record to ``path`` (atomically, fsynced) with ``meta`` (known only when the run has
        ended) and remove the spools; returns ``path``."""
        try:
            for f in self._files.values():
                f.close()
        except OSError as exc:
            self.discard()
            raise output_error(self.shown, exc) from None
        tmp = self.path.with_name(f".{self.path.name}.tmp-{os.getpid()}")
        digest = hashlib.sha256()
        lines = 0
        try:
            with open(tmp, "wb") as out:
                def put(b: bytes) -> None:
                    nonlocal lines
                    digest.update(b)
                    out.write(b)
                    lines += b.count(b"\n")

                put((_dumps({"record": {"format": RECORD_FORMAT, "version": RECORD_VERSION,
                                        "task": task_key(self.task)}}) + "\n").encode())
                put((_dumps({"meta": meta.to_dict()}) + "\n").encode())
                with open(self._spool["jobs"], "rb") as sp:
                    if self._order is None:
                        for line in sp:
                            put(line)
                    else:
                        for off in self._order:
                            sp.seek(off)
                            put(sp.readline())
                with open(self._spool["rounds"], "rb") as sp:
                    for line in sp:
                        put(line)
                hop = list(hopeless)
                if hop:
                    put((_dumps({"hopeless": hop}) + "\n").encode())
                end = _end_marker(digest.hexdigest(), lines, self.jobs_written, self.rounds_written, self.task)
                out.write((_dumps({"end": end}) + "\n").encode())
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp, self.path)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise output_error(self.shown, exc) from None
        finally:
            self.discard()
        return self.path

    def reset(self) -> None:
        """Empty the spools (a checkpointed run that starts over after all)."""
        for f in self._files.values():
            f.seek(0)
            f.truncate()
        self.jobs_written = self.rounds_written = 0
        self._order = None

    def release(self) -> None:
        """Close the spools and keep them (a checkpointed run that stopped: its next run goes on from them)."""
        for f in getattr(self, "_files", {}).values():
            with contextlib.suppress(OSError):
                f.close()

    def discard(self) -> None:
        """Close and remove the spools (a run that failed or was interrupted leaves no record and no spool)."""
        self.release()
        for p in self._spool.values():
            with contextlib.suppress(OSError):
                os.unlink(p)


class StoredRecords(Sequence[Any]):
    """Records of one kind (``job`` or ``round`` lines) read back from a file each time they are iterated, one
    line at a time: what a streamed run's :class:`~schedopt.sim.metrics.SimResult` holds in place of its tuples,
    so that summarising a whole trace's run (:func:`~schedopt.sim.metrics.summarize`) holds one record at a time.
    ``offsets``: the lines' byte offsets, in order."""

    #: a file of at most this many bytes is parsed once and kept (a saturn-sized run's summary passes over its
    #: records several times; a whole trace's are read again each time)
    KEEP_BYTES = 4 << 20

    def __init__(self, path: str | os.PathLike[str], offsets: Sequence[int], parse: Any, kind: str) -> None:
        self.path, self.offsets, self.parse, self.kind = Path(path), offsets, parse, kind
        self._kept: tuple[Any, ...] | None = None

    @classmethod
    def scan(cls, path: str | os.PathLike[str], kind: str) -> StoredRecords:
        """Every ``kind`` line of the file at ``path``, in file order."""
        head = f'{{"{kind}": '.encode()
        offsets = array("q")
        pos = 0
        with open(path, "rb") as f:
            for line in f:
                if line.startswith(head):
                    offsets.append(pos)
                pos += len(line)
        return cls(path, offsets, JobRecord.from_dict if kind == "job" else _round_of, kind)

    def __len__(self) -> int:
        return len(self.offsets)

    def __iter__(self) -> Iterator[Any]:
        if self._kept is not None:
            return iter(self._kept)
        if self.path.stat().st_size <= self.KEEP_BYTES:
            self._kept = tuple(self._read())
            return iter(self._kept)
        return self._read()

    def _read(self) -> Iterator[Any]:
        with open(self.path, "rb") as f:
            pos = 0
            for off in self.offsets:
                if off != pos:
                    f.seek(off)
                line = f.readline()
                pos = off + len(line)
                yield self.parse(json.loads(line)[self.kind])

    @overload
    def __getitem__(self, i: int) -> Any: ...

    @overload
    def __getitem__(self, i: slice) -> list[Any]: ...

    def __getitem__(self, i: int | slice) -> Any:
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        with open(self.path, "rb") as f:
            f.seek(self.offsets[i])
            return self.parse(json.loads(f.readline())[self.kind])


def _round_of(r: Mapping[str, Any]) -> RoundRecord:
    return RoundRecord(r["index"], r["time"], r["policy_seconds"], r["active"], r["answer"], r["info"],
                       r.get("policy_cpu_seconds", math.nan))


def record_view(path: str | os.PathLike[str]) -> SimResult:
    """The record at ``path`` as a :class:`~schedopt.sim.metrics.SimResult` whose jobs and rounds are read from the
    file as they are iterated (:class:`StoredRecords`): a whole trace's record summarised one record at a time.
    :class:`RecordError` when it is not a whole record (:func:`check_record`)."""
    p = Path(path)
    why = check_record(p)
    if why is not None:
        raise RecordError(p, why)
    with open(p, "rb") as f:
        f.readline()
        meta = SimMeta.from_dict(json.loads(f.readline())["meta"])
        hopeless: tuple[str, ...] = ()
        for line in f:
            if line.startswith(b'{"hopeless": '):
                hopeless = tuple(str(x) for x in json.loads(line)["hopeless"])
    jobs, rounds = StoredRecords.scan(p, "job"), StoredRecords.scan(p, "round")
    return SimResult(meta, cast("tuple[JobRecord, ...]", jobs), cast("tuple[RoundRecord, ...]", rounds), hopeless)
