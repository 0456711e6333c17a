"""The one typed form every trace reader yields: :class:`TraceJob` rows in a :class:`Trace`."""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from ..errors import InputError

__all__ = ["RowErrors", "Trace", "TraceJob", "parse_time"]

_EPOCH = datetime(1970, 1, 1)


@dataclass(frozen=True, slots=True)
class TraceJob:
    """One job of a public trace, in the trace's own terms (card ``formulations/traces.md``, "Column maps").

    ``submit_s``: submission, seconds on the trace's clock (local wall-clock seconds since 1970 for traces with dates;
    the trace's own offset otherwise: PAI, Gavel, the Alibaba 2023 pods, workload CSVs). ``gpus``: whole GPUs
    requested (0 for a CPU-only job; fractional requests rounded up). ``duration_s``: run time in seconds, or None
    when the trace has none (a job that never ran, a Gavel job given in steps). ``work``: the trace's own work measure
    where it has one (Gavel ``total_steps``), else None. ``row``: the 1-based record of the source file the job comes
    from (a line of a CSV, an element of Philly's JSON array), so every job can be traced back.
    """

    job_id: str
    submit_s: float
    gpus: int
    duration_s: float | None
    user: str = ""
    vc: str = ""
    gpu_type: str = ""
    status: str = ""
    application: str = ""
    work: float | None = None
    row: int = 0

    @property
    def gpu_time_s(self) -> float | None:
        """GPUs x run time (GPU-seconds), None when the duration is unknown."""
        return None if self.duration_s is None else self.gpus * self.duration_s


@dataclass(frozen=True)
class Trace:
    """A job trace read from one of the public formats (:data:`schedopt.traces.FORMATS`).

    ``jobs`` keep the file's order. ``skipped`` lists ``(row, reason)`` for rows dropped because the caller asked
    (``skip_bad=True``); without that a bad row raises :class:`~schedopt.errors.InputError`. ``day_offset_s`` is
    added to ``submit_s`` to get local wall-clock seconds (for the time of day Pollux's generator samples by): 0 for
    dated traces, 8 h for PAI 2020 (its README: the shifted clock keeps the time of day in UTC+8). ``capacity`` is
    GPUs per type where the trace ships its machines (PAI 2020 machine specs, the 2023 node list).
    """

    name: str
    format: str
    source: str
    jobs: tuple[TraceJob, ...]
    skipped: tuple[tuple[int, str], ...] = ()
    day_offset_s: float = 0.0
    capacity: dict[str, int] | None = field(default=None, hash=False, compare=False)

    def __len__(self) -> int:
        return len(self.jobs)

    def __iter__(self) -> Iterator[TraceJob]:
        return iter(self.jobs)

    @property
    def start_s(self) -> float:
        """The earliest submission (0.0 for an empty trace)."""
        return min((j.submit_s for j in self.jobs), default=0.0)

    def time_of_day_s(self, job: TraceJob) -> float:
        """Seconds since local midnight of a job's submission."""
        return (job.submit_s + self.day_offset_s) % 86400.0

    def check_cluster(self, total_gpus: int, *, skip_bad: bool = False, cluster: str = "cluster") -> Trace:
        """Jobs asking for more GPUs than ``total_gpus`` raise (or, with ``skip_bad``, move to ``skipped``)."""
        keep, skipped = [], list(self.skipped)
        for j in self.jobs:
            if j.gpus > total_gpus:
                if not skip_bad:
                    raise InputError(f"{self.source}:row {j.row}.gpus", j.gpus,
                                     f"job {j.job_id!r} asks for more GPUs than {cluster} has ({total_gpus})")
                skipped.append((j.row, f"gpus={j.gpus} > {total_gpus} on {cluster}"))
            else:
                keep.append(j)
        return Trace(self.name, self.format, self.source, tuple(keep), tuple(skipped), self.day_offset_s,
                     self.capacity)


class RowErrors:
    """A reader's bad-row policy: raise an InputError naming file, row and field, or count the row as skipped."""

    def __init__(self, source: str | Path, skip_bad: bool) -> None:
        self.source = str(source)
        self.skip_bad = skip_bad
        self.skipped: list[tuple[int, str]] = []
        self.seen: set[str] = set()

    def bad(self, row: int, fieldname: str, value: object, message: str) -> None:
        """Raise, or record the skip (the caller then drops the row)."""
        if not self.skip_bad:
            raise InputError(f"{self.source}:row {row}.{fieldname}", value, message)
        self.skipped.append((row, f"{fieldname}={value!r}: {message}"))

    def bad_span(self, first: int, last: int, fieldname: str, value: object, message: str) -> None:
        """A bad record covering rows ``first..last`` (a quote left open): raise naming the first, or count every
        row it swallowed as skipped (the skip count stays true)."""
        if not self.skip_bad:
            raise InputError(f"{self.source}:row {first}.{fieldname}", value, message)
        self.skipped.extend((r, f"{fieldname}: {message}") for r in range(first, last + 1))

    def unique(self, row: int, fieldname: str, job_id: str) -> bool:
        """False (after :meth:`bad`) when ``job_id`` was seen before."""
        if job_id in self.seen:
            self.bad(row, fieldname, job_id, "duplicate job id")
            return False
        self.seen.add(job_id)
        return True

    def trace(self, name: str, fmt: str, jobs: Iterable[TraceJob], *, day_offset_s: float = 0.0,
              capacity: dict[str, int] | None = None) -> Trace:
        return Trace(name, fmt, self.source, tuple(jobs), tuple(self.skipped), day_offset_s, capacity)


def parse_time(text: str) -> float:
    """``YYYY-MM-DD HH:MM:SS[+HH:MM]`` -> local wall-clock seconds since 1970 (a zone suffix is dropped: the clock the
    cluster's users saw). Raises ValueError on anything else."""
    dt = datetime.fromisoformat(text.strip())
    if dt.tzinfo is not None:
        dt = dt.replace(tzinfo=None)
    return (dt - _EPOCH).total_seconds()


def parse_seconds(text: str) -> float:
    """A finite number of seconds (ValueError otherwise)."""
    x = float(text)
    if not math.isfinite(x):
        raise ValueError(text)
    return x
