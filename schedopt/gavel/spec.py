"""The Gavel (OSDI'20) allocation problem's spec: a throughput matrix and the quantities each objective needs."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._validate import number_vector
from ..errors import InputError

__all__ = ["OBJECTIVES", "GavelSpec"]

#: Gavel's objectives (stanford-futuredata/gavel ``scheduler/policies``): heterogeneity-aware max-min fairness
#: (``max_min_fairness.py``), finish-time fairness (``finish_time_fairness.py``), minimum makespan
#: (``min_total_duration.py``), max-sum throughput and cost under SLOs (``max_sum_throughput.py``)
OBJECTIVES = ("max_min", "ftf", "makespan", "max_sum_throughput", "cost_slo")


@dataclass(frozen=True, eq=False)
class GavelSpec:
    """One round of Gavel's allocation problem.

    ``throughputs[j, k]``: job ``j``'s throughput (steps/s) on GPU type ``types[k]`` when it runs on its
    ``scale_factors[j]`` GPUs of that type (0: cannot run there); ``capacity[k]``: GPUs of type ``k``. The
    allocation ``x[j, k]`` is the fraction of time job ``j`` runs on type ``k``. Per objective:

    * ``max_min``: ``priority_weights`` (default 1); ``efficient`` adds Gavel's tie-break LP (see the card).
    * ``ftf``: ``steps_remaining`` and ``time_since_start`` (seconds), ``priority_weights`` unused (as Gavel).
    * ``makespan``: ``steps_remaining``.
    * ``max_sum_throughput``: nothing more.
    * ``cost_slo``: ``costs`` (per GPU type, per GPU-hour; default 1) and, optionally, ``slos`` (seconds left to
      each job's deadline; ``inf``: none) with ``steps_remaining``.
    """

    types: tuple[str, ...]
    capacity: np.ndarray
    jobs: tuple[str, ...]
    throughputs: np.ndarray
    scale_factors: np.ndarray
    objective: str = "max_min"
    priority_weights: np.ndarray | None = None
    steps_remaining: np.ndarray | None = None
    time_since_start: np.ndarray | None = None
    costs: np.ndarray | None = None
    slos: np.ndarray | None = None
    efficient: bool = True
    meta: Mapping[str, Any] = field(default_factory=dict)

    # __post_init__ fills every optional array but ``slos``: these read them typed (never None after construction)
    @property
    def weights(self) -> np.ndarray:
        """``priority_weights`` as filled in (default 1)."""
        assert self.priority_weights is not None
        return self.priority_weights

    @property
    def remaining(self) -> np.ndarray:
        """``steps_remaining`` as filled in (default 0)."""
        assert self.steps_remaining is not None
        return self.steps_remaining

    @property
    def since_start(self) -> np.ndarray:
        """``time_since_start`` as filled in (default 0)."""
        assert self.time_since_start is not None
        return self.time_since_start

    @property
    def unit_costs(self) -> np.ndarray:
        """``costs`` as filled in (default 1 per type)."""
        assert self.costs is not None
        return self.costs

    def __post_init__(self) -> None:
        if self.objective not in OBJECTIVES:
            raise InputError("objective", self.objective, f"must be one of {', '.join(OBJECTIVES)}")
        types = tuple(self.types)
        if not types or not all(isinstance(t, str) and t for t in types) or len(set(types)) != len(types):
            raise InputError("types", list(types), "must be distinct non-empty GPU type names")
        jobs = tuple(str(j) for j in self.jobs)
        if len(set(jobs)) != len(jobs):
            dup = next(j for j in jobs if jobs.count(j) > 1)
            raise InputError("jobs", dup, "job ids must be distinct")
        J, T = len(jobs), len(types)
        cap = number_vector("capacity", self.capacity, T, 0.0)
        try:
            X = np.asarray(self.throughputs, dtype=np.float64)
        except (TypeError, ValueError):
            raise InputError("throughputs", self.throughputs, "must be a jobs x types array of numbers") from None
        if X.shape != (J, T):
            raise InputError("throughputs", X.shape, f"must be (jobs x types) = ({J}, {T})")
        bad = np.argwhere(~np.isfinite(X) | (X < 0))
        if bad.size:
            j, k = (int(v) for v in bad[0])
            raise InputError(f"throughputs[{jobs[j]}][{types[k]}]", float(X[j, k]), "must be a finite number >= 0")
        sf = number_vector("scale_factors", self.scale_factors, J, 1.0)
        nonint = np.flatnonzero(sf != np.round(sf))
        if nonint.size:
            raise InputError(f"scale_factors[{jobs[int(nonint[0])]}]", float(sf[nonint[0]]), "must be an integer >= 1")
        pw = number_vector("priority_weights", self.priority_weights, J, 0.0, 1.0, strict=True)
        need_rem = self.objective in ("ftf", "makespan") or (self.objective == "cost_slo" and self.slos is not None)
        rem = number_vector("steps_remaining", self.steps_remaining, J, 0.0, None if need_rem else 0.0)
        must = np.ones(J, bool)
        if self.objective == "cost_slo" and self.slos is not None:
            must = np.isfinite(np.asarray(self.slos, dtype=np.float64).reshape(-1)) if np.size(self.slos) == J else must
        if need_rem and (must & (rem <= 0)).any():
            k = int(np.flatnonzero(must & (rem <= 0))[0])
            raise InputError(f"steps_remaining[{jobs[k]}]", float(rem[k]), "must be > 0 (finished jobs leave the round)")
        tss = number_vector("time_since_start", self.time_since_start, J, 0.0, 0.0)
        costs = number_vector("costs", self.costs, T, 0.0, 1.0, strict=True)
        slos = None
        if self.slos is not None:
            s = np.asarray(self.slos, dtype=np.float64).reshape(-1)
            if s.shape != (J,) or np.isnan(s).any() or (s <= 0).any():
                raise InputError("slos", self.slos, f"needs {J} numbers > 0 (inf: no deadline)")
            slos = s
        for name, v in (("types", types), ("jobs", jobs), ("capacity", cap), ("throughputs", X), ("scale_factors", sf),
                        ("priority_weights", pw), ("steps_remaining", rem), ("time_since_start", tss),
                        ("costs", costs), ("slos", slos), ("efficient", bool(self.efficient)),
                        ("meta", dict(self.meta))):
            object.__setattr__(self, name, v)
        for a in (cap, X, sf, pw, rem, tss, costs, *(() if slos is None else (slos,))):
            a.setflags(write=False)

    @property
    def num_jobs(self) -> int:
        return len(self.jobs)

    @property
    def num_types(self) -> int:
        return len(self.types)

    def replace(self, **kw: Any) -> GavelSpec:
        d = {k: getattr(self, k) for k in ("types", "capacity", "jobs", "throughputs", "scale_factors", "objective",
                                           "priority_weights", "steps_remaining", "time_since_start", "costs", "slos",
                                           "efficient", "meta")}
        d.update(kw)
        return GavelSpec(**d)

    @classmethod
    def of(cls, capacity: Mapping[str, float], throughputs: Mapping[str, Mapping[str, float]],
           scale_factors: Mapping[str, int] | None = None, **kw: Any) -> GavelSpec:
        """From dicts as Gavel's policies take them: ``capacity`` (type -> GPUs), ``throughputs`` (job -> type ->
        steps/s), ``scale_factors`` (job -> GPUs; default 1); per-job extras (``steps_remaining``, ...) as
        job -> value mappings or arrays in job order."""
        types = tuple(capacity)
        jobs = tuple(throughputs)
        X = np.array([[float(throughputs[j].get(t, 0.0)) for t in types] for j in jobs]).reshape(len(jobs), len(types))
        sf = [int((scale_factors or {}).get(j, 1)) for j in jobs]
        for key in ("priority_weights", "steps_remaining", "time_since_start", "slos"):
            v = kw.get(key)
            if isinstance(v, Mapping):
                kw[key] = [v.get(j, math.inf if key == "slos" else (1.0 if key == "priority_weights" else 0.0))
                           for j in jobs]
        if isinstance(kw.get("costs"), Mapping):
            kw["costs"] = [kw["costs"][t] for t in types]
        return cls(types, np.array([capacity[t] for t in types], dtype=float), jobs, X, np.array(sf, dtype=float), **kw)


def as_types(v: Sequence[str]) -> tuple[str, ...]:
    return tuple(str(t) for t in v)
