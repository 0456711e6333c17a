"""Records and metrics of :mod:`schedopt.sim`.

Per-job records (:class:`JobRecord`: arrival, start, finish, JCT, restarts, allocation segments, GPU-seconds by type)
and per-round records (:class:`RoundRecord`: the policy's wall time and its solver's answer) are the ground truth;
every summary (:func:`summarize`) and series (:func:`utilization`, :func:`queue_length`) is derived from them.
Records round-trip through JSONL (:meth:`SimResult.to_jsonl` / :func:`read_jsonl`); job rows also go to CSV.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import math
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeAlias

import numpy as np

from ..problem import to_jsonable

if TYPE_CHECKING:
    from .jobs import JobState
    from .policies.base import Decision

__all__ = ["SUMMARY_COLUMNS", "JSONValue", "JobRecord", "RoundRecord", "SimMeta", "SimResult", "keep_summary",
           "queue_length", "read_jsonl", "summaries", "summarize", "summary_row", "utilization"]

#: a JSON value (what a record's family-specific details may hold)
JSONValue: TypeAlias = "str | int | float | bool | Sequence[JSONValue] | Mapping[str, JSONValue] | None"


@dataclass(frozen=True)
class JobRecord:
    """One job's history. ``segments``: (start, end, GPU type, GPUs) per allocation spell (restart delays included;
    GPUs may be fractional where jobs share a GPU, e.g. 0.5 for each of a packed pair);
    ``finish`` is None when the simulation stopped before the job finished."""

    id: str
    application: str
    arrival: float
    start: float | None
    finish: float | None
    restarts: int
    requested_gpus: int
    batch_size: int
    segments: tuple[tuple[float, float, str, float], ...] = ()
    rejected: bool = False  #: refused by the admission rule: it never ran (``finish`` is None)

    @property
    def jct(self) -> float | None:
        return None if self.finish is None else self.finish - self.arrival

    @property
    def gpu_seconds(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for s, e, t, g in self.segments:
            out[t] = out.get(t, 0.0) + (e - s) * g
        return out

    @classmethod
    def of(cls, j: JobState) -> JobRecord:
        return cls(j.id, j.app, j.arrival, j.start, j.finish, j.restarts, j.requested_gpus, j.batch_size,
                   tuple((float(s), float(e), str(t), float(g)) for s, e, t, g in j.segments),
                   bool(getattr(j, "rejected", False)))

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "application": self.application, "arrival": self.arrival, "start": self.start,
                "finish": self.finish, "jct": self.jct, "restarts": self.restarts,
                "requested_gpus": self.requested_gpus, "batch_size": self.batch_size,
                "gpu_seconds": self.gpu_seconds, "segments": [list(s) for s in self.segments],
                "rejected": self.rejected}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> JobRecord:
        return cls(d["id"], d["application"], d["arrival"], d["start"], d["finish"], d["restarts"],
                   d["requested_gpus"], d["batch_size"], tuple(tuple(s) for s in d["segments"]),
                   bool(d.get("rejected", False)))


@dataclass(frozen=True)
class RoundRecord:
    """One round: its index and time, the policy's wall time and CPU time of this process (which a loaded machine
    does not inflate), the active jobs, and the solver's answer (if any)."""

    index: int
    time: float
    policy_seconds: float
    active: int
    answer: Mapping[str, Any] | None = None
    info: Mapping[str, Any] = field(default_factory=dict)
    policy_cpu_seconds: float = math.nan

    @classmethod
    def of(cls, k: int, t: float, dt: float, active: int, d: Decision, cpu: float = math.nan) -> RoundRecord:
        ans = d.answer.to_dict() if d.answer is not None else None
        return cls(k, t, dt, active, ans, to_jsonable(dict(d.info)) if d.info else {}, cpu)

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "time": self.time, "policy_seconds": self.policy_seconds,
                "policy_cpu_seconds": self.policy_cpu_seconds, "active": self.active, "answer": self.answer,
                "info": dict(self.info)}


_META_FIELDS = ("policy", "workload", "cluster", "gpus", "round_seconds", "job_model", "adaptive", "charge_policy_time",
                "estimator", "placer", "admission", "seed", "cluster_preset", "policy_params", "system", "capped",
                "unfinished", "rejected", "end_time", "details")


@dataclass(frozen=True)
class SimMeta:
    """What a simulation was and how it ended (frozen, typed; written as the record's first line).

    ``capped``: the run stopped at its time cap with ``unfinished`` jobs left (a warning was given); ``end_time``:
    the simulated time the run ended (the last finish, or the cap's round); ``rejected``: jobs the admission rule
    refused; ``details``: the family's own fields (Synergy's queue and servers, Gandiva's mechanisms and counts).
    ``meta["policy"]`` and ``meta.get(...)`` still work, with a DeprecationWarning: use the attributes."""

    policy: str
    workload: str
    cluster: Mapping[str, tuple[int, int]] = field(default_factory=dict)  #: GPU type -> (nodes, GPUs per node)
    gpus: int = 0
    round_seconds: float = 60.0
    job_model: str = ""
    adaptive: bool = False
    charge_policy_time: bool = False
    estimator: str = "bootstrap"
    placer: str = "sia"
    admission: str = "accept-all"
    seed: int = 0
    cluster_preset: str | None = None
    policy_params: Mapping[str, JSONValue] = field(default_factory=dict)
    system: str = "elastic"
    capped: bool = False
    unfinished: int = 0
    rejected: int = 0
    end_time: float = math.nan
    details: Mapping[str, JSONValue] = field(default_factory=dict)

    def to_dict(self) -> dict[str, JSONValue]:
        d: dict[str, JSONValue] = {k: getattr(self, k) for k in _META_FIELDS if k != "details"}
        d["cluster"] = {t: list(v) for t, v in self.cluster.items()}
        d["policy_params"] = dict(self.policy_params)
        d.update(self.details)  # flat, as records before the typed meta were written
        return to_jsonable(d)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> SimMeta:
        """The meta of a record (older records included: unknown keys become ``details``)."""
        kw: dict[str, Any] = {k: d[k] for k in _META_FIELDS if k in d and k != "details"}
        kw["cluster"] = {str(t): (int(v[0]), int(v[1])) for t, v in dict(d.get("cluster") or {}).items()}
        kw["policy_params"] = dict(d.get("policy_params") or {})
        kw.setdefault("policy", "")
        kw.setdefault("workload", "")
        if kw.get("end_time") is None:
            kw["end_time"] = math.nan
        details = dict(d.get("details") or {})
        details.update({k: v for k, v in d.items() if k not in _META_FIELDS})
        return cls(**kw, details=details)

    def replace(self, **changes: Any) -> SimMeta:
        """A copy with ``changes``; keys that are not fields go to ``details``."""
        extra = {k: changes.pop(k) for k in list(changes) if k not in _META_FIELDS}
        if extra:
            changes["details"] = {**self.details, **changes.get("details", {}), **extra}
        return dataclasses.replace(self, **changes)

    # -- the dict-like access of the untyped meta, kept for old code
    def _lookup(self, key: str) -> Any:
        warnings.warn(f"SimResult.meta[{key!r}] is deprecated: use meta.{key if key in _META_FIELDS else 'details'}"
                      f"{'' if key in _META_FIELDS else f'[{key!r}]'}", DeprecationWarning, stacklevel=3)
        if key in _META_FIELDS:
            return getattr(self, key)
        return self.details[key]

    def __getitem__(self, key: str) -> Any:
        return self._lookup(key)

    def get(self, key: str, default: Any = None) -> Any:
        try:
            return self._lookup(key)
        except KeyError:
            return default

    def __contains__(self, key: object) -> bool:
        return key in _META_FIELDS or key in self.details

    def keys(self) -> list[str]:
        return [k for k in _META_FIELDS if k != "details"] + list(self.details)

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys())


@dataclass(frozen=True)
class SimResult:
    """A simulation's records: ``meta`` (:class:`SimMeta`: policy, workload, cluster, round length, job model, how it
    ended), ``jobs``, ``rounds``. A plain mapping given as ``meta`` is read with :meth:`SimMeta.from_dict`."""

    meta: SimMeta
    jobs: tuple[JobRecord, ...]
    rounds: tuple[RoundRecord, ...]
    #: ids of the jobs that could not finish before the time cap even alone on their best configuration, found
    #: before the run (:func:`schedopt.sim.feasibility.hopeless_jobs`; issue 25)
    hopeless: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.meta, SimMeta):
            if not isinstance(self.meta, Mapping):
                raise TypeError(f"SimResult.meta must be a SimMeta, not {type(self.meta).__name__}")
            object.__setattr__(self, "meta", SimMeta.from_dict(self.meta))

    def jcts(self) -> dict[str, float]:
        """job id -> JCT of every finished job."""
        return {j.id: j.jct for j in self.jobs if j.jct is not None}

    def summary(self) -> dict[str, Any]:
        return summarize(self)

    def to_jsonl(self) -> str:
        lines = [json.dumps({"meta": self.meta.to_dict()})]
        lines += [json.dumps({"job": j.to_dict()}) for j in self.jobs]
        lines += [json.dumps({"round": r.to_dict()}) for r in self.rounds]
        if self.hopeless:  # issue 25: written only when there are some (older records stay byte-identical)
            lines.append(json.dumps({"hopeless": list(self.hopeless)}))
        return "\n".join(lines) + "\n"

    def to_dataframe(self) -> Any:
        """One row per job (a ``pandas.DataFrame``): id, application, arrival, start, finish, jct (seconds; missing
        for a job that did not start / finish), restarts, requested_gpus, batch_size and ``gpu_seconds_<type>`` per
        GPU type. Needs pandas (``pip install pandas``)."""
        return _frame(_job_rows(self))

    def jobs_csv(self) -> str:
        out = io.StringIO()
        w = csv.writer(out, lineterminator="\n")
        types = sorted({s[2] for j in self.jobs for s in j.segments})
        w.writerow(["id", "application", "arrival", "start", "finish", "jct", "restarts", "requested_gpus",
                    "batch_size"] + [f"gpu_seconds_{t}" for t in types])
        for j in self.jobs:
            gs = j.gpu_seconds
            w.writerow([j.id, j.application, j.arrival, _blank(j.start), _blank(j.finish), _blank(j.jct), j.restarts,
                        j.requested_gpus, j.batch_size] + [gs.get(t, 0.0) for t in types])
        return out.getvalue()


def _blank(v: float | None) -> Any:
    return "" if v is None else v


def read_jsonl(text: str) -> SimResult:
    """The :class:`SimResult` written by :meth:`SimResult.to_jsonl`."""
    meta: dict[str, Any] = {}
    jobs, rounds = [], []
    hopeless: tuple[str, ...] = ()
    for line in text.splitlines():
        if not line.strip():
            continue
        d = json.loads(line)
        if "meta" in d:
            meta = d["meta"]
        elif "job" in d:
            jobs.append(JobRecord.from_dict(d["job"]))
        elif "round" in d:
            r = d["round"]
            rounds.append(RoundRecord(r["index"], r["time"], r["policy_seconds"], r["active"], r["answer"], r["info"],
                                      r.get("policy_cpu_seconds", math.nan)))
        elif "hopeless" in d:
            hopeless = tuple(str(x) for x in d["hopeless"])
    return SimResult(SimMeta.from_dict(meta), tuple(jobs), tuple(rounds), hopeless)


def utilization(result: SimResult, step: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(times, fraction of the cluster's GPUs held) sampled every ``step`` seconds (default: the round length),
    from the job records' segments."""
    step = float(step or result.meta.round_seconds)
    end = _end(result, max((s[1] for j in result.jobs for s in j.segments), default=0.0))
    times = np.arange(0.0, end + step, step)
    used = np.zeros_like(times)
    for j in result.jobs:
        for s, e, _, g in j.segments:
            used[(times >= s) & (times < e)] += g
    return times, used / float(result.meta.gpus or 1)


def queue_length(result: SimResult, step: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(times, jobs arrived, unfinished and holding no GPUs) every ``step`` seconds, from the job records."""
    step = float(step or result.meta.round_seconds)
    end = _end(result, max((j.finish or j.arrival for j in result.jobs), default=0.0))
    times = np.arange(0.0, end + step, step)
    q = np.zeros_like(times)
    for j in result.jobs:
        fin = math.inf if j.finish is None else j.finish
        waiting = (times >= j.arrival) & (times < fin)
        for s, e, _, _ in j.segments:
            waiting &= ~((times >= s) & (times < e))
        q += waiting
    return times, q


def _end(result: SimResult, fallback: float) -> float:
    """When the run ended: the meta's ``end_time`` (the cap's round for a capped run), else ``fallback``."""
    e = result.meta.end_time
    return float(e) if e is not None and math.isfinite(e) else fallback


def _makespan(result: SimResult, fins: Sequence[float], first: float) -> float:
    if result.meta.capped:
        return _end(result, max(fins, default=math.nan)) - first
    return (max(fins) - first) if fins else math.nan


def _pct(xs: Iterable[float], q: float) -> float:
    a = np.asarray(list(xs), dtype=float)
    return float(np.percentile(a, q)) if a.size else math.nan


def summarize(result: SimResult) -> dict[str, Any]:
    """Average / median / p99 JCT, makespan, GPU-hours (by type), mean utilization and queue length, restarts,
    unfinished jobs and the policy's time per round (median, p95, max), all from the records. A capped run
    (``capped`` True, ``unfinished`` > 0) has its makespan at the cap: when the run ended, as its utilization.

    A result summarised where it ran (:func:`keep_summary`, ``run_tasks(summaries=True)``) answers from that."""
    kept = result.__dict__.get("_summary")
    if kept is not None and kept[0] == _column_names():
        return {**kept[1], "gpu_hours_by_type": dict(kept[1]["gpu_hours_by_type"])}
    jcts = [j.jct for j in result.jobs if j.jct is not None]
    fins = [j.finish for j in result.jobs if j.finish is not None]
    first = min((j.arrival for j in result.jobs), default=0.0)
    by_type: dict[str, float] = {}
    for j in result.jobs:
        for t, v in j.gpu_seconds.items():
            by_type[t] = by_type.get(t, 0.0) + v
    pt = [r.policy_seconds for r in result.rounds]
    pc = [r.policy_cpu_seconds for r in result.rounds]
    _, util = utilization(result)
    _, queue = queue_length(result)
    return {
        "policy": result.meta.policy,
        "workload": result.meta.workload,
        "seed": result.meta.seed,
        "jobs": len(result.jobs),
        "finished": len(jcts),
        "unfinished": sum(1 for j in result.jobs if j.finish is None and not j.rejected),
        "rejected": sum(1 for j in result.jobs if j.rejected),
        "capped": bool(result.meta.capped),
        "avg_jct_s": float(np.mean(jcts)) if jcts else math.nan,
        "median_jct_s": _pct(jcts, 50),
        "p99_jct_s": _pct(jcts, 99),
        "makespan_s": _makespan(result, fins, first),
        "gpu_hours": sum(by_type.values()) / 3600.0,
        "gpu_hours_by_type": {t: v / 3600.0 for t, v in sorted(by_type.items())},
        "avg_restarts": float(np.mean([j.restarts for j in result.jobs])) if result.jobs else math.nan,
        "mean_utilization": float(util.mean()) if util.size else math.nan,
        "mean_queue_length": float(queue.mean()) if queue.size else math.nan,
        "rounds": len(result.rounds),
        "policy_s_median": _pct(pt, 50),
        "policy_s_p95": _pct(pt, 95),
        "policy_s_max": max(pt) if pt else math.nan,
        "policy_s_total": float(sum(pt)),
        "policy_cpu_s_median": _pct(pc, 50),
        "policy_cpu_s_p95": _pct(pc, 95),
        # the columns of modules built on these records (schedopt.sim.fairness: worst_rho, unfair_fraction, jain_rho)
        **{k: v for columns in SUMMARY_COLUMNS for k, v in columns(result).items()},
    }


#: more summary columns, from modules that build on these records and register here (this module imports none of
#: them): ``columns(result) -> {name: value}``, in registration order (:func:`schedopt.sim.fairness.fairness_summary`)
SUMMARY_COLUMNS: list[Callable[[SimResult], dict[str, float]]] = []


def _column_names() -> tuple[str, ...]:
    return tuple(f"{f.__module__}.{f.__qualname__}" for f in SUMMARY_COLUMNS)


def keep_summary(result: SimResult) -> SimResult:
    """Summarise ``result`` now and keep the summary with it (it travels with the result when pickled), so that
    :func:`summarize` and :func:`summary_row` of it later answer without recomputing: a worker process summarises
    its simulation while its caches are warm (the isolated runs of the fairness columns reuse the simulation's
    rates and measured tables) and the parent prints it. The records are immutable, so the summary stays theirs;
    one kept under other registered :data:`SUMMARY_COLUMNS` is not used. Returns ``result``."""
    object.__setattr__(result, "_summary", (_column_names(), summarize(result)))
    return result


# ------------------------------------------------------------------ tables (pandas): to_dataframe, summaries
def _meta_get(meta: Any, key: str, default: Any = None) -> Any:
    """``meta.<key>`` of a typed meta record, else ``meta.get(key)`` of a mapping."""
    v = _MISSING if isinstance(meta, dict) else getattr(meta, key, _MISSING)
    if v is _MISSING:
        v = meta.get(key, default) if isinstance(meta, dict) else default
    return v


_MISSING = object()


def _job_rows(result: SimResult) -> list[dict[str, Any]]:
    types = sorted({s[2] for j in result.jobs for s in j.segments})
    rows = []
    for j in result.jobs:
        gs = j.gpu_seconds
        rows.append({"id": j.id, "application": j.application, "arrival": j.arrival, "start": j.start,
                     "finish": j.finish, "jct": j.jct, "restarts": j.restarts, "requested_gpus": j.requested_gpus,
                     "batch_size": j.batch_size, **{f"gpu_seconds_{t}": gs.get(t, 0.0) for t in types}})
    return rows


def _frame(rows: list[dict[str, Any]]) -> Any:
    try:
        import pandas as pd
    except ImportError:
        raise ImportError("schedopt.sim tables need pandas, which is not installed: pip install pandas "
                          "(or pip install -e '.[pandas]' from a checkout)") from None
    columns: dict[str, None] = {}
    for r in rows:
        columns.update(dict.fromkeys(r))
    return pd.DataFrame.from_records(rows, columns=list(columns))


def summary_row(result: SimResult) -> dict[str, Any]:
    """:func:`summarize` as one flat row with the run's seed, cluster preset, round length, job model and estimator
    (``gpu_hours_by_type`` becomes ``gpu_hours_<type>`` columns)."""
    s = summarize(result)
    by_type = s.pop("gpu_hours_by_type", {}) or {}
    row: dict[str, Any] = {"policy": s.pop("policy"), "workload": s.pop("workload"),
                           "seed": _meta_get(result.meta, "seed", 0)}
    for k in ("cluster_preset", "round_seconds", "job_model", "estimator"):
        row[k] = _meta_get(result.meta, k)
    row.update(s)
    row.update({f"gpu_hours_{t}": v for t, v in by_type.items()})
    return row


def summaries(results: Iterable[SimResult]) -> Any:
    """One row per simulation (a ``pandas.DataFrame`` of :func:`summary_row`): policy, workload, seed, the run's
    settings and every summary figure in flat columns (times in seconds, GPU time in hours). Needs pandas."""
    return _frame([summary_row(r) for r in results])
