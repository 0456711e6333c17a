"""Streamed readers for the public GPU-cluster traces, each in its own published format.

Column maps (which field of the file becomes which :class:`TraceJob` field) are in ``formulations/traces.md``. Every
reader reads the file record by record (CSV rows, or the elements of Philly's JSON array, decoded a chunk at a time),
checks each field, and raises :class:`~schedopt.errors.InputError` naming ``<file>:row <k>.<field>`` on a bad one;
with ``skip_bad=True`` the row is dropped and counted in :attr:`Trace.skipped` instead (never silently).
"""

from __future__ import annotations

import csv
import gzip
import io
import itertools
import json
import math
import re
import sys
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

from ..errors import InputError
from .trace import RowErrors, Trace, TraceJob, parse_seconds, parse_time

__all__ = ["FORMATS", "detect_format", "read_acme", "read_gavel", "read_helios", "read_pai2020", "read_pai2023",
           "read_philly", "read_philly_csv", "read_trace", "read_workload_trace", "source_record"]

PathLike = str | Path


class _GzipGuard(io.RawIOBase):
    """A gzip stream whose damage (a cut file, a file that is no gzip, corrupt blocks) is an :class:`InputError` naming
    the file: the rows after the damage are lost, so it is never a countable skip."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path
        self._gz = gzip.open(path, "rb")

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        try:
            return self._gz.readinto(b)
        except (EOFError, OSError, zlib.error) as exc:
            raise InputError(str(self.path), type(exc).__name__, f"is a damaged gzip file ({exc}): the rows after "
                             "the damage are lost, so it cannot be read or skipped row by row") from None

    def close(self) -> None:
        self._gz.close()
        super().close()


def _binary(path: PathLike) -> IO[bytes]:
    p = Path(path)
    if not p.is_file():
        raise InputError("trace", str(path), "is a folder, not a trace file" if p.is_dir() else "no such file")
    if p.suffix == ".gz":
        return io.BufferedReader(_GzipGuard(p))
    return open(p, "rb")


def _open(path: PathLike) -> IO[str]:
    """The file as text (a UTF-8 byte-order mark dropped). Bytes UTF-8 cannot decode are kept as lone surrogates (``surrogateescape``) so that the
    reader can name the row and field holding them (:func:`_undecodable`) instead of failing mid-file."""
    return io.TextIOWrapper(_binary(path), encoding="utf-8-sig", errors="surrogateescape", newline="")


_SURROGATE = re.compile("[\udc80-\udcff]")
_NOT_UTF8 = "is not UTF-8 text (a byte UTF-8 cannot decode: a Latin-1 or binary file? re-encode it as UTF-8)"


def _undecodable(text: str) -> bool:
    """Does ``text`` hold bytes the UTF-8 decoding could not read (kept as surrogates by :func:`_open`)?"""
    return not text.isascii() and _SURROGATE.search(text) is not None


def _raw(text: str) -> str:
    """The bytes of a text read with ``surrogateescape``, shown as Python writes bytes (``b'caf\\xe9'``)."""
    return repr(text.encode("utf-8", "surrogateescape"))


def _i(text: str) -> str:
    """Users, VCs, states and types repeat across millions of rows: one string object each (``sys.intern``)."""
    return sys.intern(text)


def _none(text: str | None) -> bool:
    return text is None or text.strip() in ("", "None", "nan", "NaN", "null")


class _Csv:
    """A CSV file's rows as ``(row number, {column: index})``, header checked once."""

    def __init__(self, path: PathLike, required: tuple[str, ...], errors: RowErrors,
                 header: tuple[str, ...] | None = None, delimiter: str = ",") -> None:
        self.path, self.required, self.errors = path, required, errors
        self.header, self.delimiter = header, delimiter

    def rows(self) -> Iterator[tuple[int, list[str], dict[str, int]]]:
        """``(line, fields, {column: index})`` per record; rows are numbered by their line in the file. A record the
        CSV reader cannot take (a field over its size limit), one spanning several lines (a quote left open swallows
        the lines after it: every one of them is a lost row, counted under ``skip_bad``), one with too few fields
        or bytes that are not UTF-8 is a bad row (:class:`RowErrors`)."""
        with _open(self.path) as f:
            reader = csv.reader(f, delimiter=self.delimiter)
            first = self._next(reader)
            if first is None:
                if self.header is None:  # a table that ships its header must have it
                    raise InputError(f"{self.path}:row 1", "", "is empty: the file has no header line and no rows")
                return
            pending: list[tuple[int, list[str] | None]] = []
            if first[1] is None:
                raise InputError(f"{self.path}:row 1.columns", None, "the header line is not a CSV record")
            if _undecodable("".join(first[1])):
                raise InputError(f"{self.path}:row 1.columns", _raw(",".join(first[1])), _NOT_UTF8)
            if self.header is None:
                hdr = [c.strip() for c in first[1]]
            else:  # a header-less table (PAI 2020 ships its headers apart); a first line equal to it is skipped
                hdr = list(self.header)
                if [c.strip() for c in first[1]] != hdr:
                    pending = [(1, first[1])]
            missing = [c for c in self.required if c not in hdr]
            if missing:
                raise InputError(f"{self.path}:row 1.columns", hdr, f"missing {', '.join(missing)}")
            idx = {c: i for i, c in reversed(list(enumerate(hdr)))}  # a repeated column name: its first
            n = len(hdr)
            while True:
                rec: list[str] | None
                if pending:
                    k, rec = pending.pop()
                    end = k
                else:
                    got = self._next(reader)
                    if got is None:
                        return
                    k, rec, end = got[0], got[1], reader.line_num
                if rec is None:  # the CSV reader refused the record
                    continue
                if not rec:
                    continue
                if end > k:
                    col = next((i for i, v in enumerate(rec) if "\n" in v or "\r" in v), 0)
                    name = hdr[col] if col < n else f"column {col + 1}"
                    self.errors.bad_span(k, end, name, rec[col][:40] + "...",
                                         f"opens a quote that runs over lines {k}-{end} (an unterminated quote: "
                                         f"{end - k + 1} rows lost)")
                    continue
                joined = "".join(rec)
                if "\x00" in joined:
                    col = next(i for i, v in enumerate(rec) if "\x00" in v)
                    self.errors.bad(k, hdr[col] if col < n else f"column {col + 1}", rec[col][:40],
                                    "holds a NUL byte (no text trace does: binary damage?)")
                elif _undecodable(joined):
                    col = next(i for i, v in enumerate(rec) if _undecodable(v))
                    self.errors.bad(k, hdr[col] if col < n else f"column {col + 1}", _raw(rec[col]), _NOT_UTF8)
                elif len(rec) < n:
                    self.errors.bad(k, "columns", len(rec), f"has {len(rec)} fields, the header {n}")
                else:
                    yield k, rec, idx

    def _next(self, reader: Any) -> tuple[int, list[str] | None] | None:
        """``(first line, record)``; the record is None after a bad row the reader refused; None at the end."""
        k = reader.line_num + 1
        try:
            rec = next(reader, None)
        except csv.Error as exc:
            self.errors.bad(k, "record", None, f"is not a CSV record ({exc})")
            return k, None
        return None if rec is None else (k, rec)


#: the most GPUs one job may ask for: no cluster preset has more (HiveD's largest built cluster has 2**16)
MAX_JOB_GPUS = 2**16
#: the longest run time: ten years, the simulator's longest simulated time (Philly's trace spans three months)
MAX_DURATION_S = 10 * 365 * 86400.0
#: the largest clock value in seconds: 1e10 s is the year 2286 in Unix time (the traces' clocks start near 0 or 1970)
MAX_CLOCK_S = 1e10
#: the most training steps a job may have: 10**12 steps at 1,000 steps/s are thirty years of training
MAX_STEPS = 1e12

_Bound = tuple[float, str]
_GPU_BOUND: _Bound = (MAX_JOB_GPUS, "MAX_JOB_GPUS: no cluster preset has more GPUs")
_CLOCK_BOUND: _Bound = (MAX_CLOCK_S, "MAX_CLOCK_S: 1e10 s is the year 2286 in Unix time")
_DURATION_BOUND: _Bound = (MAX_DURATION_S, "MAX_DURATION_S: ten years, the simulator's longest simulated time")


def _field(errors: RowErrors, row: int, name: str, text: str, parse: Callable[[str], Any],
           what: str, *, optional: bool = False, nonneg: bool = False, bound: _Bound | None = None) -> tuple[bool, Any]:
    """(ok, value): value is None for an optional empty field; ok is False after a bad field was recorded. Every
    number is bounded in magnitude (``bound``; by default GPUs by :data:`MAX_JOB_GPUS`, seconds by
    :data:`MAX_CLOCK_S`), so that no row can carry 1e300 GPUs or seconds into a workload."""
    if _none(text):
        if optional:
            return True, None
        errors.bad(row, name, text, f"is empty; must be {what}")
        return False, None
    try:
        v = parse(text)
    except (TypeError, ValueError, OverflowError):
        errors.bad(row, name, text, f"must be {what}")
        return False, None
    if nonneg and v < 0:
        errors.bad(row, name, text, "must be >= 0 (a negative value)")
        return False, None
    hi, why = bound or (_GPU_BOUND if parse is _gpus else _CLOCK_BOUND)
    if abs(v) > hi:
        errors.bad(row, name, text, f"must be {'<=' if nonneg else 'within +-'} {hi:g} ({why})")
        return False, None
    return True, v


def _gpus(text: str) -> int:
    x = float(text)
    if not math.isfinite(x) or x != int(x):
        raise ValueError(text)
    return int(x)


# --- Microsoft Philly: cluster_job_log (one JSON array of job objects) ---------------------------------------------

class _JsonArray:
    """The elements of a top-level JSON array, decoded a chunk at a time (the whole file is never held), by the JSON
    grammar: ``[`` elements separated by single commas ``]``, then only white space to the end of the file. A cut
    file (no closing ``]``), a second array after the first, a missing comma and an element nested deeper than the
    decoder's recursion limit are :class:`InputError` naming the file and the character (or the row)."""

    def __init__(self, f: IO[str], source: str, chunk: int = 1 << 20) -> None:
        self.f, self.source, self.chunk = f, source, chunk
        self.dec = json.JSONDecoder()
        self.buf, self.pos, self.base, self.eof = "", 0, 0, False

    def _fail(self, message: str, at: int | None = None) -> InputError:
        at = self.base + self.pos if at is None else at
        snippet = self.buf[self.pos:self.pos + 20]
        return InputError(f"{self.source}:char {at}", _raw(snippet) if _undecodable(snippet) else snippet, message)

    def _more(self) -> bool:
        """Read one more chunk onto the buffer (dropping what was consumed); False at the end of the file."""
        if self.eof:
            return False
        more = self.f.read(self.chunk)
        self.base += self.pos
        self.buf, self.pos = self.buf[self.pos:] + more, 0
        self.eof = not more
        return bool(more)

    def _peek(self) -> str:
        """The next character that is not white space ('' at the end of the file), not consumed."""
        while True:
            while self.pos < len(self.buf) and self.buf[self.pos] in " \t\r\n":
                self.pos += 1
            if self.pos < len(self.buf) or not self._more():
                return self.buf[self.pos:self.pos + 1]

    def elements(self) -> Iterator[tuple[Any, str]]:
        """``(element, its source text)`` in order."""
        if self._peek() != "[":
            raise self._fail("is not a JSON array (a Philly cluster_job_log is one array of job objects)")
        self.pos += 1
        if self._peek() == "]":
            self.pos += 1
        else:
            k = 0
            while True:
                k += 1
                if self._peek() == "":
                    raise self._fail("ends before the array's closing ']' (a cut file?)")
                yield self._element(k)
                c = self._peek()
                if c == "]":
                    self.pos += 1
                    break
                if c == "":
                    raise self._fail(f"ends before the array's closing ']' (after element {k}: a cut file?)")
                if c != ",":
                    raise self._fail(f"expected ',' or ']' after element {k}")
                self.pos += 1
        if self._peek() != "":
            raise self._fail("has data after the array's closing ']' (two arrays back to back? a file holds one)")

    def _element(self, k: int) -> tuple[Any, str]:
        while True:
            try:
                obj, end = self.dec.raw_decode(self.buf, self.pos)
                break
            except RecursionError:
                raise InputError(f"{self.source}:row {k}", self.buf[self.pos:self.pos + 20],
                                 "is nested too deep (deeper than the JSON decoder's recursion limit; a Philly job "
                                 "nests 4 levels)") from None
            except json.JSONDecodeError as exc:
                if self.eof or not self._more():
                    raise self._fail(f"is not valid JSON ({exc.msg})", self.base + exc.pos) from None
        text = self.buf[self.pos:end]
        self.pos = end
        return obj, text


def _json_array(f: IO[str], chunk: int = 1 << 20) -> Iterator[Any]:
    """The elements of a top-level JSON array (:class:`_JsonArray`), decoded a chunk at a time."""
    for obj, _ in _JsonArray(f, str(getattr(f, "name", "file")), chunk).elements():
        yield obj


def _surrogate_path(obj: Any, path: str = "") -> tuple[str, str] | None:
    """(path, text) of the first key or string of a decoded element holding bytes that are not UTF-8."""
    if isinstance(obj, str):
        return (path, obj) if _undecodable(obj) else None
    items = obj.items() if isinstance(obj, dict) else enumerate(obj) if isinstance(obj, list) else ()
    for key, v in items:
        sub = f"{path}[{key}]" if isinstance(key, int) else (f"{path}.{key}" if path else str(key))
        if isinstance(key, str) and _undecodable(key):
            return sub, key
        found = _surrogate_path(v, sub)
        if found:
            return found
    return None


def iter_philly(path: PathLike, errors: RowErrors) -> Iterator[TraceJob]:
    with _open(path) as f:
        for k, (rec, text) in enumerate(_JsonArray(f, str(path)).elements(), start=1):
            if _undecodable(text):
                where, bad = _surrogate_path(rec) or ("record", text)
                errors.bad(k, where, _raw(bad), _NOT_UTF8)
                continue
            job = _philly_job(k, rec, errors)
            if job is not None:
                yield job


def _text(errors: RowErrors, k: int, rec: dict[str, Any], key: str) -> str | None:
    """An optional text field of a Philly job (missing or null: ''); None after a bad value was recorded."""
    v = rec.get(key)
    if v is None:
        return ""
    if isinstance(v, bool) or not isinstance(v, str | int):
        errors.bad(k, key, v, "must be a string")
        return None
    return str(v)


def _attempt_gpus(errors: RowErrors, k: int, a: int, att: dict[str, Any]) -> int | None:
    """GPUs of one attempt: the GPU names listed over its ``detail`` (one entry per machine); None after a bad one."""
    det = att.get("detail")
    if det is None:
        return 0
    if not isinstance(det, list):
        errors.bad(k, f"attempts[{a}].detail", det, "must be a list of {ip, gpus} objects")
        return None
    n = 0
    for d, machine in enumerate(det):
        where = f"attempts[{a}].detail[{d}]"
        if not isinstance(machine, dict):
            errors.bad(k, where, machine, "must be an object {ip, gpus}")
            return None
        gpus = machine.get("gpus")
        if gpus is None:
            continue
        if not isinstance(gpus, list) or not all(isinstance(g, str) for g in gpus):
            errors.bad(k, f"{where}.gpus", gpus, "must be a list of GPU names (\"gpus\": [\"gpu0\", \"gpu1\"])")
            return None
        n += len(gpus)
    return n


def _philly_job(k: int, rec: Any, errors: RowErrors) -> TraceJob | None:
    if not isinstance(rec, dict):
        errors.bad(k, "record", type(rec).__name__, "must be a JSON object")
        return None
    for key in ("jobid", "submitted_time", "attempts", "status"):
        if key not in rec:
            errors.bad(k, key, None, "is missing")
            return None
    texts = {key: _text(errors, k, rec, key) for key in ("jobid", "status", "user", "vc")}
    if any(v is None for v in texts.values()):
        return None
    job_id = str(texts["jobid"])
    ok, submit = _field(errors, k, "submitted_time", str(rec["submitted_time"]), parse_time, "a date-time")
    if not ok or not errors.unique(k, "jobid", job_id):
        return None
    attempts = rec["attempts"]
    if attempts is None:
        attempts = []
    if not isinstance(attempts, list):
        errors.bad(k, "attempts", attempts, "must be a list")
        return None
    gpus, run, finished = 0, 0.0, True
    for a, att in enumerate(attempts):
        if not isinstance(att, dict):
            errors.bad(k, f"attempts[{a}]", att, "must be an object {start_time, end_time, detail}")
            return None
        n = _attempt_gpus(errors, k, a, att)
        if n is None:
            return None
        gpus = n or gpus
        s, e = att.get("start_time"), att.get("end_time")
        if _none(None if s is None else str(s)) or _none(None if e is None else str(e)):
            if a == len(attempts) - 1 and not _none(None if s is None else str(s)):
                finished = False  # the README: a last attempt without end_time was still running
            continue
        ok1, t0 = _field(errors, k, f"attempts[{a}].start_time", str(s), parse_time, "a date-time")
        ok2, t1 = _field(errors, k, f"attempts[{a}].end_time", str(e), parse_time, "a date-time")
        if not (ok1 and ok2):
            return None
        if t1 < t0:
            errors.bad(k, f"attempts[{a}].end_time", e, f"is before start_time {s} (a negative duration)")
            return None
        run += t1 - t0
    duration = run if attempts and finished else None
    status = str(texts["status"]) if finished else "Running"
    return TraceJob(job_id, submit, gpus, duration, _i(str(texts["user"])), _i(str(texts["vc"])), "",
                    _i(status), "", None, k)


def read_philly(path: PathLike, *, skip_bad: bool = False, name: str | None = None) -> Trace:
    """Microsoft Philly ``cluster_job_log`` (msr-fiddle/philly-traces): a JSON array of jobs with attempts."""
    err = RowErrors(path, skip_bad)
    return err.trace(name or Path(path).stem, "philly", iter_philly(path, err))


# --- Pollux's preprocessed Philly CSV (traces/philly.csv in the Pollux and Sia artifacts) --------------------------

def iter_philly_csv(path: PathLike, errors: RowErrors) -> Iterator[TraceJob]:
    for k, r, c in _Csv(path, ("timestamp", "duration", "num_gpus"), errors).rows():
        ok1, t = _field(errors, k, "timestamp", r[c["timestamp"]], parse_time, "a date-time")
        if not ok1:
            continue
        ok2, d = _field(errors, k, "duration", r[c["duration"]], parse_seconds, "seconds", nonneg=True,
                        bound=_DURATION_BOUND)
        if not ok2:
            continue
        ok3, g = _field(errors, k, "num_gpus", r[c["num_gpus"]], _gpus, "a whole number", nonneg=True)
        if ok3:
            yield TraceJob(str(k - 2), t, g, d, "", _i(r[c["cluster"]]) if "cluster" in c else "", "", "", "", None, k)


def read_philly_csv(path: PathLike, *, skip_bad: bool = False, name: str | None = None) -> Trace:
    """The Philly trace as preprocessed by Pollux: ``timestamp,duration,num_gpus,gpu_time,cluster``."""
    err = RowErrors(path, skip_bad)
    return err.trace(name or Path(path).stem, "philly-csv", iter_philly_csv(path, err))


# --- SenseTime Helios: <cluster>/cluster_log.csv ----------------------------------------------------------------------

def _slurm_rows(path: PathLike, errors: RowErrors, required: tuple[str, ...], vc: bool) -> Iterator[TraceJob]:
    for k, r, c in _Csv(path, required, errors).rows():
        job_id = r[c["job_id"]]
        ok1, t = _field(errors, k, "submit_time", r[c["submit_time"]], parse_time, "a date-time")
        if not ok1:
            continue
        ok2, g = _field(errors, k, "gpu_num", r[c["gpu_num"]], _gpus, "a whole number", nonneg=True)
        if not ok2:
            continue
        ok3, d = _field(errors, k, "duration", r[c["duration"]], parse_seconds, "seconds", optional=True,
                        nonneg=True, bound=_DURATION_BOUND)
        if not ok3 or not errors.unique(k, "job_id", job_id):
            continue
        app = _i(r[c["type"]]) if "type" in c else ""
        yield TraceJob(job_id, t, g, d, _i(r[c["user"]]), _i(r[c["vc"]]) if vc else "", "", _i(r[c["state"]]), app,
                       None, k)


def read_helios(path: PathLike, *, skip_bad: bool = False, name: str | None = None) -> Trace:
    """SenseTime Helios ``cluster_log.csv`` (one per cluster: Earth, Saturn, Uranus, Venus)."""
    err = RowErrors(path, skip_bad)
    req = ("job_id", "user", "vc", "gpu_num", "state", "submit_time", "duration")
    return err.trace(name or Path(path).parent.name or Path(path).stem, "helios", _slurm_rows(path, err, req, True))


def read_acme(path: PathLike, *, skip_bad: bool = False, name: str | None = None) -> Trace:
    """Shanghai AI Lab AcmeTrace ``trace_seren.csv`` / ``trace_kalos.csv`` (NSDI'24)."""
    err = RowErrors(path, skip_bad)
    req = ("job_id", "user", "gpu_num", "state", "submit_time", "duration")
    return err.trace(name or Path(path).stem, "acme", _slurm_rows(path, err, req, False))


# --- Alibaba PAI cluster-trace-gpu-v2020: pai_job_table + pai_task_table (+ pai_machine_spec) -----------------------

PAI_JOB = ("job_name", "inst_id", "user", "status", "start_time", "end_time")
PAI_TASK = ("job_name", "task_name", "inst_num", "status", "start_time", "end_time", "plan_cpu", "plan_mem",
            "plan_gpu", "gpu_type")
PAI_MACHINE = ("machine", "gpu_type", "cap_cpu", "cap_mem", "cap_gpu")


def _pai_tasks(path: PathLike, errors: RowErrors) -> dict[str, list[Any]]:
    """job_name -> [GPU percent, first task start, last task end, GPU types joined by '|'] (a small list per job:
    this map is what a 1-million-job PAI read holds besides the jobs; entries are dropped as the job table uses them)."""
    out: dict[str, list[Any]] = {}
    terr = RowErrors(path, errors.skip_bad)
    for k, r, c in _Csv(path, PAI_TASK, terr, header=PAI_TASK).rows():
        ok1, inst = _field(terr, k, "inst_num", r[c["inst_num"]], parse_seconds, "a number", optional=True,
                           nonneg=True, bound=_GPU_BOUND)
        ok2, pg = _field(terr, k, "plan_gpu", r[c["plan_gpu"]], parse_seconds, "a percentage", optional=True,
                         nonneg=True, bound=(100.0 * MAX_JOB_GPUS, "100 x MAX_JOB_GPUS percent"))
        ok3, s = _field(terr, k, "start_time", r[c["start_time"]], parse_seconds, "seconds", optional=True)
        ok4, e = _field(terr, k, "end_time", r[c["end_time"]], parse_seconds, "seconds", optional=True)
        if not (ok1 and ok2 and ok3 and ok4):
            continue
        if s is not None and e is not None and e < s:
            terr.bad(k, "end_time", e, f"is before start_time {s} (a negative duration)")
            continue
        gp = (inst or 1.0) * (pg or 0.0)
        gt = _i(r[c["gpu_type"]]) if gp > 0 and not _none(r[c["gpu_type"]]) else ""
        a = out.get(r[c["job_name"]])
        if a is None:
            out[r[c["job_name"]]] = [gp, s, e, gt]
            continue
        a[0] += gp
        if s is not None:
            a[1] = s if a[1] is None else min(a[1], s)
        if e is not None:
            a[2] = e if a[2] is None else max(a[2], e)
        if gt and gt not in a[3].split("|"):
            a[3] = _i("|".join(sorted({*a[3].split("|"), gt} - {""})))
    errors.skipped.extend((k, f"{path}: {m}") for k, m in terr.skipped)
    return out


def read_pai2020(path: PathLike, *, skip_bad: bool = False, name: str | None = None) -> Trace:
    """Alibaba ``cluster-trace-gpu-v2020``: a folder with ``pai_job_table.csv`` and ``pai_task_table.csv`` (header-less,
    as published; a first line equal to the published header is also accepted) and optionally
    ``pai_machine_spec.csv`` (then :attr:`Trace.capacity` holds GPUs per type)."""
    d = Path(path)
    if not d.is_dir():
        raise InputError("trace", str(path), "pai2020 needs the folder holding pai_job_table.csv and pai_task_table.csv")
    jobs_csv, tasks_csv = d / "pai_job_table.csv", d / "pai_task_table.csv"
    err = RowErrors(jobs_csv, skip_bad)
    tasks = _pai_tasks(tasks_csv, err)
    capacity: dict[str, int] | None = None
    spec = d / "pai_machine_spec.csv"
    if spec.is_file():
        capacity = {}
        merr = RowErrors(spec, skip_bad)
        for k, r, c in _Csv(spec, PAI_MACHINE, merr, header=PAI_MACHINE).rows():
            ok, g = _field(merr, k, "cap_gpu", r[c["cap_gpu"]], _gpus, "a whole number", optional=True, nonneg=True)
            if ok and g:
                capacity[r[c["gpu_type"]]] = capacity.get(r[c["gpu_type"]], 0) + g
        err.skipped.extend((k, f"{spec}: {m}") for k, m in merr.skipped)

    def jobs() -> Iterator[TraceJob]:
        for k, r, c in _Csv(jobs_csv, PAI_JOB, err, header=PAI_JOB).rows():
            job_id = r[c["job_name"]]
            ok1, t = _field(err, k, "start_time", r[c["start_time"]], parse_seconds, "seconds")
            ok2, e = _field(err, k, "end_time", r[c["end_time"]], parse_seconds, "seconds", optional=True)
            if not (ok1 and ok2):
                continue
            if e is not None and e < t:
                err.bad(k, "end_time", e, f"is before start_time {t} (a negative duration)")
                continue
            if not err.unique(k, "job_name", job_id):
                continue
            a = tasks.pop(job_id, None)
            if a is None:
                gpus, dur, types = 0, (None if e is None else e - t), ""
            else:
                gpus = math.ceil(a[0] / 100.0 - 1e-9)
                if gpus > MAX_JOB_GPUS:
                    err.bad(k, "gpus", gpus, f"its tasks ask for {gpus} GPUs in all, more than MAX_JOB_GPUS = "
                            f"{MAX_JOB_GPUS} (inst_num x plan_gpu / 100 over {tasks_csv.name})")
                    continue
                dur = a[2] - a[1] if a[1] is not None and a[2] is not None else None
                types = a[3]
            yield TraceJob(job_id, t, gpus, dur, _i(r[c["user"]]), "", _i(types), _i(r[c["status"]]), "", None, k)

    return err.trace(name or d.name, "pai2020", jobs(), day_offset_s=8 * 3600.0, capacity=capacity)


# --- Alibaba cluster-trace-gpu-v2023: openb_pod_list_*.csv (+ openb_node_list_*.csv) -------------------------------

PAI2023_POD = ("name", "num_gpu", "gpu_milli", "gpu_spec", "pod_phase", "creation_time", "deletion_time",
               "scheduled_time")


def read_pai2023(path: PathLike, *, skip_bad: bool = False, name: str | None = None,
                 nodes: PathLike | None = None) -> Trace:
    """Alibaba ``cluster-trace-gpu-v2023`` pods (``openb_pod_list_<x>.csv``). The node list (``nodes=``, default
    ``openb_node_list_all_node.csv`` beside the pod file when there) gives :attr:`Trace.capacity`."""
    err = RowErrors(path, skip_bad)
    node_csv = Path(nodes) if nodes is not None else Path(path).parent / "openb_node_list_all_node.csv"
    capacity: dict[str, int] | None = None
    if node_csv.is_file():
        capacity = {}
        nerr = RowErrors(node_csv, skip_bad)
        for k, r, c in _Csv(node_csv, ("sn", "gpu", "model"), nerr).rows():
            ok, g = _field(nerr, k, "gpu", r[c["gpu"]], _gpus, "a whole number", nonneg=True)
            if ok and g:
                capacity[r[c["model"]]] = capacity.get(r[c["model"]], 0) + g
        err.skipped.extend((k, f"{node_csv}: {m}") for k, m in nerr.skipped)

    def jobs() -> Iterator[TraceJob]:
        for k, r, c in _Csv(path, PAI2023_POD, err).rows():
            job_id = r[c["name"]]
            ok1, t = _field(err, k, "creation_time", r[c["creation_time"]], parse_seconds, "seconds")
            ok2, g = _field(err, k, "num_gpu", r[c["num_gpu"]], _gpus, "a whole number", nonneg=True)
            ok3, s = _field(err, k, "scheduled_time", r[c["scheduled_time"]], parse_seconds, "seconds",
                            optional=True)
            ok4, e = _field(err, k, "deletion_time", r[c["deletion_time"]], parse_seconds, "seconds", optional=True)
            if not (ok1 and ok2 and ok3 and ok4):
                continue
            dur = None
            if s is not None and e is not None:
                if e < s:
                    err.bad(k, "deletion_time", e, f"is before scheduled_time {s} (a negative duration)")
                    continue
                dur = e - s
            if not err.unique(k, "name", job_id):
                continue
            spec = "" if _none(r[c["gpu_spec"]]) else r[c["gpu_spec"]]
            yield TraceJob(job_id, t, g, dur, "", "", _i(spec), _i(r[c["pod_phase"]]), "", None, k)

    return err.trace(name or Path(path).stem, "pai2023", jobs(), capacity=capacity)


# --- Gavel .trace (tab-separated, no header) --------------------------------------------------------------------------

#: the two published layouts: scheduler/traces/physical_cluster (10 fields) and scheduler/traces/msr (7 fields)
GAVEL_10 = ("job_type", "command", "working_directory", "num_steps_arg", "needs_data_dir", "total_steps",
            "scale_factor", "priority_weight", "SLO", "arrival_time")
GAVEL_7 = ("job_type", "command", "num_steps_arg", "needs_data_dir", "total_steps", "arrival_time", "scale_factor")


def iter_gavel(path: PathLike, errors: RowErrors) -> Iterator[TraceJob]:
    with _open(path) as f:
        for k, line in enumerate(f, start=1):
            line = line.rstrip("\r\n")
            if not line.strip():
                continue
            parts = line.split("\t")
            cols = {10: GAVEL_10, 7: GAVEL_7}.get(len(parts))
            if cols is None:
                errors.bad(k, "columns", len(parts), "a Gavel .trace line has 10 tab-separated fields "
                           "(physical_cluster) or 7 (msr)")
                continue
            if "\x00" in line:
                col = next(i for i, v in enumerate(parts) if "\x00" in v)
                errors.bad(k, cols[col], parts[col][:40], "holds a NUL byte (no text trace does: binary damage?)")
                continue
            if _undecodable(line):
                col = next(i for i, v in enumerate(parts) if _undecodable(v))
                errors.bad(k, cols[col], _raw(parts[col]), _NOT_UTF8)
                continue
            r = dict(zip(cols, parts, strict=True))
            ok1, t = _field(errors, k, "arrival_time", r["arrival_time"], parse_seconds, "seconds", nonneg=True)
            ok2, w = _field(errors, k, "total_steps", r["total_steps"], parse_seconds, "a step count", nonneg=True,
                            bound=(MAX_STEPS, "MAX_STEPS: at 1,000 steps/s, thirty years of training"))
            ok3, g = _field(errors, k, "scale_factor", r["scale_factor"], _gpus, "a whole number", nonneg=True)
            if ok1 and ok2 and ok3:
                yield TraceJob(str(k - 1), t, g, None, "", "", "", "", _i(r["job_type"]), w, k)


def read_gavel(path: PathLike, *, skip_bad: bool = False, name: str | None = None) -> Trace:
    """Gavel's ``.trace`` job list (stanford-futuredata/gavel ``scheduler/traces``): work in steps, no durations."""
    err = RowErrors(path, skip_bad)
    return err.trace(name or Path(path).stem, "gavel", iter_gavel(path, err))


# --- the Pollux / Sia workload CSV (read by schedopt.sim.workloads) ------------------------------------------------

def read_workload_trace(path: PathLike, *, skip_bad: bool = False, name: str | None = None) -> Trace:
    """A Pollux/Sia workload CSV (``name,time,application,num_replicas,batch_size``) through
    :func:`schedopt.sim.read_workload` (its checks apply whole-file: ``skip_bad`` does not apply)."""
    from ..sim.workloads import decode_workload_bytes, read_workload

    p = Path(path)
    with _binary(p) as f:
        text = decode_workload_bytes(f.read(), str(p))
    w = read_workload(text, str(p))
    rows = {r[0]: k for k, r in enumerate(csv.reader(io.StringIO(text)), start=1) if r}
    jobs = tuple(TraceJob(j.name, j.time, j.num_replicas, None, "", "", "", "", j.application, None,
                          rows.get(j.name, 0)) for j in w.jobs)
    return Trace(name or p.stem, "workload", str(p), jobs)


_READERS: dict[str, Callable[..., Trace]] = {
    "philly": read_philly,
    "philly-csv": read_philly_csv,
    "helios": read_helios,
    "pai2020": read_pai2020,
    "pai2023": read_pai2023,
    "acme": read_acme,
    "gavel": read_gavel,
    "workload": read_workload_trace,
}
#: format name -> reader
FORMATS = tuple(_READERS)


def detect_format(path: PathLike) -> str:
    """Guess a trace's format from its layout (a folder: pai2020; ``.json``: philly; ``.trace``: gavel; a CSV header)."""
    p = Path(path)
    if p.is_dir():
        return "pai2020"
    name = p.name.removesuffix(".gz")
    if name.endswith(".json") or name == "cluster_job_log":
        return "philly"
    if name.endswith(".trace"):
        return "gavel"
    with _open(p) as f:
        head = set(c.strip() for c in f.readline().split(","))
    if {"name", "time", "application"} <= head:
        return "workload"
    if {"timestamp", "duration", "num_gpus"} <= head:
        return "philly-csv"
    if {"creation_time", "num_gpu"} <= head:
        return "pai2023"
    if {"job_id", "gpu_num", "vc"} <= head:
        return "helios"
    if {"job_id", "gpu_num"} <= head:
        return "acme"
    raise InputError("format", str(path), f"cannot tell the trace format from the file; pass one of {FORMATS}")


def read_trace(path: PathLike, format: str | None = None, *, skip_bad: bool = False,
               name: str | None = None) -> Trace:
    r"""Read a trace in one of :data:`FORMATS` (guessed by :func:`detect_format` when ``format`` is None).

    Examples
    --------
    A two-job Helios ``cluster_log.csv`` (the format is guessed from the file's name and columns):

    >>> import pathlib, tempfile
    >>> from schedopt import traces
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "cluster_log.csv"
    >>> _ = path.write_text(
    ...     "job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue\n"
    ...     "1,u1,vc1,1,1,1,COMPLETED,2020-06-09 18:41:01,2020-06-09 18:41:01,2020-06-10 04:55:09,36848,0\n"
    ...     "2,u2,vc1,8,16,1,COMPLETED,2020-06-09 18:45:00,2020-06-09 18:45:00,2020-06-09 19:45:00,3600,0\n")
    >>> trace = traces.read_trace(path)
    >>> trace.format, [(j.gpus, j.duration_s) for j in trace.jobs]
    ('helios', [(1, 36848.0), (8, 3600.0)])
    """
    fmt = format or detect_format(path)
    if fmt not in _READERS:
        raise InputError("format", fmt, f"must be one of {', '.join(FORMATS)}")
    return _READERS[fmt](path, skip_bad=skip_bad, name=name)


def source_record(trace: Trace, job: TraceJob) -> str:
    """The raw record ``job`` was read from (a CSV or ``.trace`` line; a Philly job re-encoded as JSON), read back
    from ``trace.source`` on demand so a million-row trace does not hold its text. For ``pai2020`` it is the job
    table's line (the task rows it joins are the lines with the same ``job_name`` in ``pai_task_table.csv``)."""
    if job.row < 1:
        raise InputError("job.row", job.row, "this job has no source row")
    path = Path(trace.source)
    if trace.format == "pai2020" and path.is_dir():
        path = path / "pai_job_table.csv"
    with _open(path) as f:
        if trace.format == "philly":
            rec = next(itertools.islice(_json_array(f), job.row - 1, None), None)
            text = None if rec is None else json.dumps(rec)
        else:
            text = next(itertools.islice(f, job.row - 1, None), None)
    if text is None:
        raise InputError("job.row", job.row, f"is past the end of {path}")
    return text.rstrip("\r\n")
