"""The plan a :class:`schedopt.live.Session` decides: per job an :class:`Action`, where it runs and its batch."""

from __future__ import annotations

import math
import operator
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import numpy as np

from ..errors import InputError

__all__ = ["Action", "JobPlan", "Plan", "PlanDocuments", "mark_reused", "plan_changes", "plan_delta"]


class Action(StrEnum):
    """What a plan asks the cluster to do with one job."""

    START = "start"      #: start it (it held no GPUs)
    KEEP = "keep"        #: leave it where it is (same GPUs)
    RESIZE = "resize"    #: give it another GPU count or type (checkpoint, restart there)
    MOVE = "move"        #: same GPU count and type, other GPUs (checkpoint, restart there)
    PREEMPT = "preempt"  #: take its GPUs away (checkpoint; it waits)
    QUEUE = "queue"      #: it waits (held no GPUs, gets none)
    REJECT = "reject"    #: the admission rule refused it: it never runs

    # the member's string, read in C (Enum's own ``value`` is a Python descriptor: orjson reads it for every entry
    # of an answer, 1,700 of them a round at 2,048 GPUs: 0.15 ms of the entries' 0.76 before)
    value = property(operator.attrgetter("_value_"), doc="The action's string (as written in a plan's document).")


@dataclass(frozen=True)
class JobPlan:
    """One job's part of a plan: the action, where it runs (node name -> GPU indices; empty: nowhere), its GPU
    type and count, the batch it trains at (``batch_size`` global = GPUs per replica aside, ``local_batch`` x
    replicas x (``accumulation`` + 1); None when it does not run) and the checkpoint-restore delay the session
    charges it for this change (None: the change is no restart: it did not move, or the placer moved it within the
    same configuration, which the simulator does not charge)."""

    job_id: str
    action: Action
    placement: Mapping[str, tuple[int, ...]]
    gpu_type: str | None = None
    gpus: int = 0
    batch_size: int | None = None
    local_batch: int | None = None
    accumulation: int | None = None
    restart_seconds: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """The job's part as its JSON document (a non-finite ``restart_seconds`` is a ValueError: JSON has none,
        and the service writes these documents without looking at their numbers again)."""
        r = self.restart_seconds
        if r is not None and not math.isfinite(r):
            raise ValueError(f"job {self.job_id!r}: restart_seconds={r} is not a finite number")
        return {"job_id": self.job_id, "action": self.action.value,
                "placement": {n: list(g) for n, g in self.placement.items()}, "gpu_type": self.gpu_type,
                "gpus": self.gpus, "batch_size": self.batch_size, "local_batch": self.local_batch,
                "accumulation": self.accumulation, "restart_seconds": self.restart_seconds}

    @classmethod
    def from_dict(cls, p: Mapping[str, Any]) -> JobPlan:
        """The job's part of a plan from its document (:meth:`to_dict`)."""
        return cls(p["job_id"], Action(p["action"]), {n: tuple(g) for n, g in p["placement"].items()},
                   p["gpu_type"], p["gpus"], p["batch_size"], p["local_batch"], p["accumulation"],
                   p["restart_seconds"])


@dataclass(frozen=True)
class Plan:
    """One decision: per job (running, queued, deferred or just rejected) a :class:`JobPlan`, in the order the
    policy saw the jobs; ``policy_seconds`` / ``policy_cpu_seconds`` the policy's time (timing fields: they differ
    between identical runs); ``info`` the policy's own notes."""

    time: float
    round_index: int
    policy: str
    jobs: Mapping[str, JobPlan]
    policy_seconds: float = 0.0
    policy_cpu_seconds: float = 0.0
    info: Mapping[str, Any] = field(default_factory=dict)

    def __getstate__(self) -> dict[str, Any]:
        """The plan's fields for pickle and copy (without the note of :func:`mark_reused`: a weak reference)."""
        return {k: v for k, v in self.__dict__.items() if k != _REUSED}

    def running(self) -> dict[str, JobPlan]:
        """The jobs that hold GPUs under this plan."""
        return {j: p for j, p in self.jobs.items() if p.placement}

    def to_dict(self) -> dict[str, Any]:
        return self._document([p.to_dict() for p in self.jobs.values()])

    def _document(self, jobs: list[Any]) -> dict[str, Any]:
        for k in ("time", "policy_seconds", "policy_cpu_seconds"):
            if not math.isfinite(getattr(self, k)):  # as JobPlan.to_dict: JSON has no NaN or Infinity
                raise ValueError(f"plan {k}={getattr(self, k)} is not a finite number")
        return {"time": self.time, "round_index": self.round_index, "policy": self.policy, "jobs": jobs,
                "policy_seconds": self.policy_seconds, "policy_cpu_seconds": self.policy_cpu_seconds,
                "info": _jsonable(self.info)}

    def entries_document(self, entries: list[JobPlan] | None = None) -> dict[str, Any]:
        """:meth:`to_dict` with the job entries left as :class:`JobPlan` objects (``entries``: those, default
        every job's), for a writer that turns each into :meth:`JobPlan.to_dict`'s document itself (orjson writes a
        dataclass as its fields, in order: the same document) without a dict made for every job. The entries'
        ``restart_seconds`` are checked finite here, as :meth:`JobPlan.to_dict` checks them."""
        out = list(self.jobs.values()) if entries is None else entries
        for p in out:
            r = p.restart_seconds
            if r is not None and not math.isfinite(r):
                raise ValueError(f"job {p.job_id!r}: restart_seconds={r} is not a finite number")
        return self._document(out)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Plan:
        jobs = {}
        for p in d["jobs"]:
            jobs[p["job_id"]] = JobPlan.from_dict(p)
        return cls(d["time"], d["round_index"], d["policy"], jobs, d["policy_seconds"], d["policy_cpu_seconds"],
                   d.get("info", {}))

    def updated(self, delta: Mapping[str, Any], field: str = "plan_delta") -> Plan:
        """The plan that the delta document ``delta`` (:func:`plan_delta`, from this plan's document) leads to:
        its own fields from ``delta``, each job's entry from ``delta["jobs"]`` when it is there, else this plan's
        (the same object), in the order ``delta["order"]`` (null: this plan's order). A delta that does not fit
        this plan (a job in neither, a job twice, an entry outside the order) is an
        :class:`~schedopt.errors.InputError` naming ``field``: a plan is never rebuilt wrong."""
        prev = self.jobs
        changed = {}
        for d in delta["jobs"]:
            if d["job_id"] in changed:
                raise InputError(f"{field}.jobs", d["job_id"], "names a job twice")
            changed[d["job_id"]] = d
        order = list(prev) if delta["order"] is None else delta["order"]
        jobs: dict[str, JobPlan] = {}
        for jid in order:
            if jid in jobs:
                raise InputError(f"{field}.order", jid, "names a job twice")
            d = changed.pop(jid, None)
            if d is not None:
                jobs[jid] = JobPlan.from_dict(d)
            elif jid in prev:
                jobs[jid] = prev[jid]
            else:
                raise InputError(f"{field}.order", jid, "names a job that neither the plan held nor the delta has")
        if changed:
            raise InputError(f"{field}.jobs", next(iter(changed)), "is a job outside the plan's order")
        return Plan(delta["time"], delta["round_index"], delta["policy"], jobs, delta["policy_seconds"],
                    delta["policy_cpu_seconds"], delta.get("info", {}))


def plan_delta(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
    """The delta document from the plan document ``old`` to ``new`` (both :meth:`Plan.to_dict`): ``new``'s own
    fields (time, round, policy, timings, info), ``jobs``: the entries of ``new`` that are not in ``old`` as they
    are (in ``new``'s order), and ``order``: ``new``'s job ids in order when they are not ``old``'s, in the same
    order (null when they are). ``Plan.from_dict(old).updated(delta)`` is ``Plan.from_dict(new)``. An entry held
    by both documents as the same object (:class:`PlanDocuments` reuses them) is not compared further."""
    before = {d["job_id"]: d for d in old["jobs"]}
    jobs = new["jobs"]
    changed = [d for d in jobs if (o := before.get(d["job_id"])) is not d and o != d]
    ids = [d["job_id"] for d in jobs]
    out = {k: v for k, v in new.items() if k != "jobs"}
    out["jobs"] = changed
    out["order"] = None if ids == list(before) else ids
    return out


def plan_changes(old: Plan, new: Plan) -> tuple[list[JobPlan], list[str] | None]:
    """What :func:`plan_delta` finds, from the plans themselves: the entries of ``new`` that are not ``old``'s
    (another action, placement, batch, ...; in ``new``'s order) as :class:`JobPlan` objects, and ``new``'s job ids in
    order when they are not ``old``'s (None when they are). ``new.entries_document(changed)`` with ``order`` added
    is ``plan_delta(old.to_dict(), new.to_dict())`` (the entries as objects): no document is made for a job that
    did not change."""
    prev = old.jobs
    mark = new.__dict__.get(_REUSED)
    if mark is not None and mark[0]() is old:  # every entry equal to old's is old's object (mark_reused)
        jobs = new.jobs
        changed = [jobs[jid] for jid in mark[1]] if mark[1] is not None else [
            p for jid, p in jobs.items() if prev.get(jid) is not p]
    else:
        changed = [p for jid, p in new.jobs.items()
                   if (q := prev.get(jid)) is not p and (q is None or vars(q) != vars(p))]
    ids = list(new.jobs)
    return changed, None if ids == list(prev) else ids


_REUSED = "_entries_of"


def mark_reused(new: Plan, old: Plan, changed: list[str] | None = None) -> None:
    """Note on ``new`` that each of its entries equal to ``old``'s entry of that job IS that object (the maker of
    ``new`` reused them: :class:`schedopt.live.Session` does): :func:`plan_changes` from ``old`` then compares by
    identity alone, or takes ``changed`` (the ids of ``new``'s entries that are not ``old``'s objects, in ``new``'s
    order) as they are. Only a weak reference to ``old`` is kept (no chain of plans held alive)."""
    object.__setattr__(new, _REUSED, (weakref.ref(old), changed))


class PlanDocuments:
    """The documents of the plans of one session, one after another (:meth:`document`): a job whose
    :class:`JobPlan` equals its entry in the last plan gets the same entry (the same dict, not made again: a
    plan at 2,048 GPUs holds 4,096 entries, most of them the same from round to round), so that
    :func:`plan_delta` finds the changes by identity. The documents are not to be changed in place."""

    def __init__(self) -> None:
        self._last: dict[str, tuple[JobPlan, dict[str, Any]]] = {}

    def document(self, plan: Plan) -> dict[str, Any]:
        """``plan.to_dict()``, with the entries of the jobs whose part did not change since the last plan reused."""
        last = self._last
        now: dict[str, tuple[JobPlan, dict[str, Any]]] = {}
        docs = []
        for jid, p in plan.jobs.items():
            held = last.get(jid)
            if held is None or not (held[0] is p or vars(held[0]) == vars(p)):
                held = (p, p.to_dict())
            now[jid] = held
            docs.append(held[1])
        self._last = now
        return plan._document(docs)

    def reset(self) -> None:
        """Forget the last plan (its entries are not reused)."""
        self._last = {}


def _jsonable(v: Any) -> Any:
    if isinstance(v, Mapping):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, (bool, int, str)) or v is None:
        return v
    if isinstance(v, (float, np.floating)):
        f = float(v)
        return f if math.isfinite(f) else str(f)
    if isinstance(v, np.integer):
        return int(v)
    return str(v)
