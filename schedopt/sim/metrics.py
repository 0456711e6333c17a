"""Records and metrics of :mod:`schedopt.sim`.

Per-job records (:class:`JobRecord`: arrival, start, finish, JCT, restarts, allocation segments, GPU-seconds by type)
and per-round records (:class:`RoundRecord`: the policy's wall time and its solver's answer) are the ground truth;
every summary (:func:`summarize`) and series (:func:`utilization`, :func:`queue_length`) is derived from them.
Records round-trip through JSONL (:meth:`SimResult.to_jsonl` / :func:`read_jsonl`); job rows also go to CSV.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..problem import to_jsonable

if TYPE_CHECKING:
    from .jobs import JobState
    from .policies.base import Decision

__all__ = ["JobRecord", "RoundRecord", "SimResult", "queue_length", "read_jsonl", "summarize", "utilization"]


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
                   tuple((float(s), float(e), str(t), float(g)) for s, e, t, g in j.segments))

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "application": self.application, "arrival": self.arrival, "start": self.start,
                "finish": self.finish, "jct": self.jct, "restarts": self.restarts,
                "requested_gpus": self.requested_gpus, "batch_size": self.batch_size,
                "gpu_seconds": self.gpu_seconds, "segments": [list(s) for s in self.segments]}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> JobRecord:
        return cls(d["id"], d["application"], d["arrival"], d["start"], d["finish"], d["restarts"],
                   d["requested_gpus"], d["batch_size"], tuple(tuple(s) for s in d["segments"]))  # type: ignore[misc]


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


@dataclass(frozen=True)
class SimResult:
    """A simulation's records: ``meta`` (policy, workload, cluster, round length, job model), ``jobs``, ``rounds``."""

    meta: Mapping[str, Any]
    jobs: tuple[JobRecord, ...]
    rounds: tuple[RoundRecord, ...]

    def jcts(self) -> dict[str, float]:
        """job id -> JCT of every finished job."""
        return {j.id: j.jct for j in self.jobs if j.jct is not None}

    def summary(self) -> dict[str, Any]:
        return summarize(self)

    def to_jsonl(self) -> str:
        lines = [json.dumps({"meta": to_jsonable(dict(self.meta))})]
        lines += [json.dumps({"job": j.to_dict()}) for j in self.jobs]
        lines += [json.dumps({"round": r.to_dict()}) for r in self.rounds]
        return "\n".join(lines) + "\n"

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
    return SimResult(meta, tuple(jobs), tuple(rounds))


def utilization(result: SimResult, step: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(times, fraction of the cluster's GPUs held) sampled every ``step`` seconds (default: the round length),
    from the job records' segments."""
    step = float(step or result.meta.get("round_seconds", 60.0))
    end = max((s[1] for j in result.jobs for s in j.segments), default=0.0)
    times = np.arange(0.0, end + step, step)
    used = np.zeros_like(times)
    for j in result.jobs:
        for s, e, _, g in j.segments:
            used[(times >= s) & (times < e)] += g
    return times, used / float(result.meta.get("gpus", 1))


def queue_length(result: SimResult, step: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(times, jobs arrived, unfinished and holding no GPUs) every ``step`` seconds, from the job records."""
    step = float(step or result.meta.get("round_seconds", 60.0))
    end = max((j.finish or j.arrival for j in result.jobs), default=0.0)
    times = np.arange(0.0, end + step, step)
    q = np.zeros_like(times)
    for j in result.jobs:
        fin = math.inf if j.finish is None else j.finish
        waiting = (times >= j.arrival) & (times < fin)
        for s, e, _, _ in j.segments:
            waiting &= ~((times >= s) & (times < e))
        q += waiting
    return times, q


def _pct(xs: Iterable[float], q: float) -> float:
    a = np.asarray(list(xs), dtype=float)
    return float(np.percentile(a, q)) if a.size else math.nan


def summarize(result: SimResult) -> dict[str, Any]:
    """Average / median / p99 JCT, makespan, GPU-hours (by type), mean utilization and queue length, restarts,
    unfinished jobs and the policy's time per round (median, p95, max), all from the records."""
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
        "policy": result.meta.get("policy"),
        "workload": result.meta.get("workload"),
        "jobs": len(result.jobs),
        "finished": len(jcts),
        "avg_jct_s": float(np.mean(jcts)) if jcts else math.nan,
        "median_jct_s": _pct(jcts, 50),
        "p99_jct_s": _pct(jcts, 99),
        "makespan_s": (max(fins) - first) if fins else math.nan,
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
        # --- finish-time fairness (issue 29; schedopt.sim.fairness, Sia's isolation rule) ---
        **_fairness(result),
        # --- end finish-time fairness ---
    }


def _fairness(result: SimResult) -> dict[str, float]:
    """``worst_rho``, ``unfair_fraction``, ``jain_rho`` (:func:`schedopt.sim.fairness.fairness_summary`)."""
    from .fairness import fairness_summary

    return fairness_summary(result)
