"""The Shockwave (NSDI'23) plan's spec: one re-solve of its finite-window schedule, as the Sia artifact runs it."""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._validate import number_vector
from ..errors import InputError

__all__ = ["LOG_BASES", "LOG_ORIGIN", "MAX_GPUS", "MAX_ROUNDS", "ShockwaveSpec"]

#: the breakpoints of the piecewise-linear log of normalised progress (the Sia artifact's ``logapx_bases``)
LOG_BASES: tuple[float, ...] = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)
#: the value standing in for 0 in ``log`` at the first breakpoint (``logapx_origin = {0.0: 1e-6}``)
LOG_ORIGIN = 1e-6


#: the largest pool: no cluster preset has more GPUs (HiveD's largest built cluster has 2**16)
MAX_GPUS = 2**16
#: the longest window: the plan has a binary per job and round, and the Sia artifact plans 5 rounds ahead; past a
#: thousand rounds the model of even ten jobs has 10,000 binaries re-solved every round
MAX_ROUNDS = 1000


def _pos(name: str, v: Any, *, strict: bool = True, integer: bool = False, hi: tuple[float, str] | None = None) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) or not math.isfinite(float(v)):
        raise InputError(name, v, "must be a finite number")
    if (float(v) <= 0 if strict else float(v) < 0) or (integer and float(v) != int(v)):
        raise InputError(name, v, f"must be {'an integer ' if integer else 'a number '}{'>' if strict else '>='} 0")
    if hi is not None and float(v) > hi[0]:
        raise InputError(name, v, f"must be <= {hi[0]:g} ({hi[1]})")
    return float(v)


@dataclass(frozen=True, eq=False)
class ShockwaveSpec:
    """One re-solve of Shockwave's plan over ``rounds`` future rounds of ``round_seconds`` on ``gpus`` GPUs
    (one homogeneous pool: the Sia artifact runs Shockwave heterogeneity-unaware).

    Per job ``j`` (``jobs[j]``): ``scale_factors`` (GPUs it runs on, rigid), ``step_seconds`` (predicted seconds per
    step: the Sia artifact's ``predict_iter_time_avg_cluster``, the mean over GPU types), ``steps_done`` and
    ``steps_total`` (``cur_step``, ``total_steps``), ``age`` (seconds since it arrived: ``round_ptr * round -
    creation_timestamp``) and ``ftf_target`` (seconds: the momentum-averaged finish-time estimate its finish-time
    fairness constraint compares with, ``finish_time_momentumed_average``).

    Knobs (defaults: the Sia artifact's ``multi_simulator_unaware.py``): ``k`` (weight of the makespan term),
    ``lam`` (the relaxed priority's power), ``rho_max`` (the finish-time fairness bound), ``priority_finish``
    (the power for a job that can finish within a round, ``priority_M``), ``log_bases`` / ``log_origin`` (the
    piecewise-linear log).
    """

    jobs: tuple[str, ...]
    gpus: int
    scale_factors: np.ndarray
    step_seconds: np.ndarray
    steps_done: np.ndarray
    steps_total: np.ndarray
    age: np.ndarray
    ftf_target: np.ndarray
    rounds: int = 5
    round_seconds: float = 60.0
    k: float = 1e-9
    lam: float = 12.0
    rho_max: float = 1.0
    priority_finish: float = 100.0
    log_bases: tuple[float, ...] = LOG_BASES
    log_origin: float = LOG_ORIGIN
    meta: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if isinstance(self.jobs, (str, bytes)) or not isinstance(self.jobs, Sequence):
            raise InputError("jobs", self.jobs, "must be a sequence of job ids")
        jobs = tuple(str(j) for j in self.jobs)
        if len(set(jobs)) != len(jobs):
            raise InputError("jobs", next(j for j in jobs if jobs.count(j) > 1), "job ids repeat")
        n = len(jobs)
        object.__setattr__(self, "jobs", jobs)
        object.__setattr__(self, "gpus", int(_pos("gpus", self.gpus, integer=True,
                                                  hi=(MAX_GPUS, "MAX_GPUS: no cluster preset has more"))))
        sf = number_vector("scale_factors", self.scale_factors, n, 0.0, strict=True)
        if (sf != np.round(sf)).any():
            k = int(np.flatnonzero(sf != np.round(sf))[0])
            raise InputError(f"scale_factors[{k}]", float(sf[k]), "must be a whole number of GPUs")
        big = np.flatnonzero(sf > self.gpus)
        if big.size:
            k = int(big[0])
            raise InputError(f"scale_factors[{jobs[k]}]", float(sf[k]), f"more than the {self.gpus} GPUs of the pool")
        object.__setattr__(self, "scale_factors", sf)
        object.__setattr__(self, "step_seconds", number_vector("step_seconds", self.step_seconds, n, 0.0, strict=True))
        total = number_vector("steps_total", self.steps_total, n, 0.0, strict=True)
        done = number_vector("steps_done", self.steps_done, n, 0.0)
        over = np.flatnonzero(done > total)
        if over.size:
            k = int(over[0])
            raise InputError(f"steps_done[{jobs[k]}]", float(done[k]), f"more than its steps_total {total[k]:g}")
        object.__setattr__(self, "steps_total", total)
        object.__setattr__(self, "steps_done", done)
        object.__setattr__(self, "age", number_vector("age", self.age, n, 0.0))
        object.__setattr__(self, "ftf_target", number_vector("ftf_target", self.ftf_target, n, 0.0, strict=True))
        object.__setattr__(self, "rounds", int(_pos("rounds", self.rounds, integer=True, hi=(
            MAX_ROUNDS, "MAX_ROUNDS: the plan has a binary per job and round; the Sia artifact plans 5 rounds"))))
        object.__setattr__(self, "round_seconds", _pos("round_seconds", self.round_seconds))
        object.__setattr__(self, "k", _pos("k", self.k, strict=False))
        object.__setattr__(self, "lam", _pos("lam", self.lam, strict=False))
        object.__setattr__(self, "rho_max", _pos("rho_max", self.rho_max))
        object.__setattr__(self, "priority_finish", _pos("priority_finish", self.priority_finish, strict=False))
        object.__setattr__(self, "log_origin", _pos("log_origin", self.log_origin))
        b = tuple(float(x) for x in self.log_bases)
        if len(b) < 2 or b[0] != 0.0 or b[-1] != 1.0 or any(x >= y for x, y in itertools.pairwise(b)):
            raise InputError("log_bases", b, "must rise strictly from 0 to 1 (at least two breakpoints)")
        if not (self.log_origin < b[1]):
            raise InputError("log_origin", self.log_origin, f"must be below the second breakpoint {b[1]:g}")
        object.__setattr__(self, "log_bases", b)

    @property
    def num_jobs(self) -> int:
        return len(self.jobs)

    @property
    def log_values(self) -> np.ndarray:
        """``log`` at each breakpoint (``log(log_origin)`` at 0): concave, so the hypograph rows are exact."""
        b = np.asarray(self.log_bases)
        return np.log(np.where(b > 0, b, self.log_origin))

    @property
    def share(self) -> float:
        """The uniform share ``min(1, gpus / jobs)`` the finish-time estimates divide by (the artifact's
        ``future_share``: GPUs per job, capped at 1, whatever the job's scale factor)."""
        return min(1.0, self.gpus / max(self.num_jobs, 1))

    @property
    def steps_left(self) -> np.ndarray:
        return self.steps_total - self.steps_done

    @property
    def remaining_seconds(self) -> np.ndarray:
        """Predicted seconds of work left, ``(total - done) * step_seconds`` (``predict_remaining_time``)."""
        return self.steps_left * self.step_seconds

    def progress_log(self, progress: np.ndarray) -> np.ndarray:
        """The piecewise-linear log of normalised progress (in [0, 1]) the plan maximises."""
        return np.interp(np.clip(progress, 0.0, 1.0), np.asarray(self.log_bases), self.log_values)
