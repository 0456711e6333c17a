"""Pruning: the valid (job, configuration) pairs, their goodput and utility, as one :class:`PairTable`.

* :class:`JobArrays` -- the jobs' fields as arrays (one pass over the Python objects).
* :func:`restart_factors` -- ``r_i = max(T_i - N_i S_i, 0) / (T_i + S_i)``, 1 while young (vectorised).
* :func:`valid_sub` -- which configurations each job may use, by broadcasting.
* :func:`prune` -- the pairs with goodput > 0, row-normalised and multiplied by the restart factor off the job's
  current configuration: the model's columns, and the typed inverse map of the Sia formulation.
* :class:`ValidMemo` -- the last round's valid pairs, reused by :func:`prune` when the jobs' pruning fields are the
  same (a :class:`~schedopt.sia.SiaBuildCache` holds one).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import repeat
from operator import attrgetter, is_not

import numpy as np

from ..errors import InputError
from .configs import ConfigTable
from .settings import SiaSettings
from .spec import Job, JobId

__all__ = ["NO_LIMIT", "JobArrays", "PairTable", "ValidMemo", "job_arrays", "prune", "restart_factors", "valid_sub"]

_KIND_CODE = {"adaptive": 0, "strong": 1, "rigid": 2}
RIGID = _KIND_CODE["rigid"]
#: the upper bound array value of a job without max_gpus
NO_LIMIT = np.iinfo(np.int64).max // 4
_ZERO = np.zeros(1, dtype=np.intp)


@dataclass(frozen=True, eq=False)
class PairTable:
    """The valid (job, configuration) pairs, one per model column, with their goodput and utility.

    ``goodput`` is the raw estimate; ``utility`` is it row-normalised (``G * u_i / min_c G``) and multiplied by
    the restart factor off the job's current configuration. ``forced`` marks the forced (non-preemptible) pairs.
    ``job_ids``, ``configs`` and ``current`` (each job's current configuration's table position, -1 none, -2 a
    shape outside the table) map a solution back to the user's ids.
    """

    job: np.ndarray
    config: np.ndarray
    goodput: np.ndarray
    utility: np.ndarray
    forced: np.ndarray
    n_jobs: int
    n_configs: int
    seconds: float = 0.0  #: time spent pruning and normalising (excluding goodput-model evaluation)
    goodput_seconds: float = 0.0  #: time spent evaluating the goodput input
    job_ids: tuple[JobId, ...] = ()
    configs: ConfigTable | None = None
    current: np.ndarray | None = None

    def __len__(self) -> int:
        return int(self.job.shape[0])

    @property
    def mask(self) -> np.ndarray:
        """(jobs x configs) boolean: which pairs are variables."""
        m = np.zeros((self.n_jobs, self.n_configs), dtype=bool)
        m[self.job, self.config] = True
        return m

    @property
    def is_current(self) -> np.ndarray:
        """Per pair: is it its job's current configuration."""
        if self.current is None:
            return np.zeros(len(self), dtype=bool)
        return self.config == self.current[self.job]


@dataclass(frozen=True, eq=False)
class JobArrays:
    """The jobs' fields as arrays (rows in job order)."""

    kind: np.ndarray
    min: np.ndarray
    max: np.ndarray
    unit: np.ndarray
    growth: np.ndarray
    rigid: np.ndarray
    allowed: np.ndarray
    current: np.ndarray
    forced: np.ndarray
    age: np.ndarray
    restarts: np.ndarray
    rcost: np.ndarray
    attained: np.ndarray


_ID = attrgetter("id")
#: the :class:`Job` fields :func:`job_arrays` reads, in one C-level get per job
_FIELDS = attrgetter("kind", "min_gpus", "max_gpus", "scale_unit", "max_profiled_gpus", "rigid_gpus", "restarts",
                     "preemptible", "current", "age_s", "restart_cost_s", "attained_gpu_seconds", "allowed_types")


def job_arrays(jobs: Sequence[Job], type_names: Sequence[str], current: np.ndarray) -> JobArrays:
    """The jobs' fields as arrays (kind, GPU bounds, scale unit, restarts, allowed types) for the vectorized pair
    builder: the fields read once per job, then converted a column at a time (a round at 2,048 GPUs has 4,096
    jobs; tests/test_sim_round_fast.py compares it with a row-by-row reading)."""
    J, T = len(jobs), len(type_names)
    cols = list(zip(*map(_FIELDS, jobs))) if J else [()] * 13
    kinds, mins, maxs, units, profs, rigids, restarts, preempt, currents, ages, rcosts, attained, allowed_t = cols
    i64, f64 = np.int64, np.float64
    kind = np.fromiter(map(_KIND_CODE.__getitem__, kinds), i64, J)
    mn, unit, prof = np.array(mins, dtype=i64), np.array(units, dtype=i64), np.array(profs, dtype=i64)
    mx = np.array([-1 if m is None else m for m in maxs], dtype=i64)
    rigid = np.array([r or 0 for r in rigids], dtype=i64)
    forced = ~np.array(preempt, dtype=bool) & np.fromiter(map(is_not, currents, repeat(None)), bool, J)
    allowed = np.ones((J, T), dtype=bool)
    if allowed_t.count(None) != J:
        tpos = {t: k for k, t in enumerate(type_names)}
        for i, at in enumerate(allowed_t):
            if at is not None:
                allowed[i] = False
                allowed[i, [tpos[t] for t in at]] = True
    # Job.growth_limit() vectorised: max(2 max_profiled_gpus, u), u = the rigid count or the least multiple of
    # scale_unit >= min_gpus (a Job guarantees u <= max_gpus)
    u = np.where(kind == RIGID, rigid, -(-mn // unit) * unit)
    return JobArrays(
        kind=kind, min=mn, max=np.where(mx < 0, NO_LIMIT, mx), unit=unit, growth=np.maximum(2 * prof, u), rigid=rigid,
        allowed=allowed, current=current, forced=forced, age=np.array(ages, dtype=f64),
        restarts=np.array(restarts, dtype=i64).astype(f64), rcost=np.array(rcosts, dtype=f64),
        attained=np.array(attained, dtype=f64),
    )


def restart_factors(a: JobArrays, settings: SiaSettings) -> np.ndarray:
    """``r_i = max(T_i - N_i S_i, 0) / (T_i + S_i)``, 1 while ``T_i < S_i``; with
    ``settings.rigid_restart_by_attained`` a rigid job's guard compares its attained GPU-seconds with ``S_i``."""
    T, N, S = a.age, a.restarts, a.rcost
    den = T + S
    r = np.divide(np.maximum(T - N * S, 0.0), den, out=np.ones_like(T), where=den > 0)
    young = T < S
    if settings.rigid_restart_by_attained:
        young = np.where(a.kind == RIGID, a.attained < S, young)
    return np.where(young, 1.0, r)


def valid_sub(a: JobArrays, cfg: ConfigTable) -> tuple[np.ndarray, np.ndarray]:
    """(configuration columns that any job may use, jobs x those columns boolean), by broadcasting. Columns with
    more GPUs than any job's upper bound (or fewer than every lower bound) are skipped up front, which keeps the
    mask small on large clusters. Rigid-only columns go to rigid jobs alone."""
    rig = a.kind == RIGID
    ub = np.where(rig, a.rigid, np.minimum(a.max, a.growth))
    lb = np.where(rig, a.rigid, a.min)
    keep = np.zeros(len(cfg), dtype=bool)
    if ub.size:
        keep = (cfg.n_gpus <= ub.max()) & (cfg.n_gpus >= lb.min())
    f = np.flatnonzero(a.forced)
    keep[a.current[f]] = True
    cols = np.flatnonzero(keep)
    g = cfg.n_gpus[cols][None, :]
    free = (g >= a.min[:, None]) & (g <= ub[:, None]) & (g % a.unit[:, None] == 0) & ~cfg.rigid_only[cols][None, :]
    rigid = g == a.rigid[:, None]
    sub = np.where(rig[:, None], rigid, free)
    sub &= a.allowed[:, cfg.type_index[cols]]
    sub[f, np.searchsorted(cols, a.current[f])] = True
    return cols, sub


class ValidMemo:
    """The last :func:`valid_sub` answer, kept across rounds (in a :class:`~schedopt.sia.SiaBuildCache`): a round
    whose jobs have the fields :func:`valid_sub` reads (kinds, GPU bounds, units, growth, rigid counts, allowed
    types, current and forced configurations) equal to the previous round's, in the same table object, reuses its
    valid pairs instead of broadcasting again (the same arrays). ``hits``: rounds answered from it."""

    def __init__(self) -> None:
        self._key: tuple[object, ...] | None = None
        self._value: tuple[np.ndarray, np.ndarray] | None = None
        self.hits = 0

    def pairs(self, a: JobArrays, cfg: ConfigTable) -> tuple[np.ndarray, np.ndarray]:
        """``(jj, cc)``: the job and table column of every valid pair (row-major over jobs, as ``np.nonzero`` of
        :func:`valid_sub`'s mask); read-only arrays."""
        key = (cfg, a.allowed.shape, a.kind.tobytes(), a.min.tobytes(), a.max.tobytes(), a.unit.tobytes(),
               a.growth.tobytes(), a.rigid.tobytes(), a.allowed.tobytes(), a.current.tobytes(), a.forced.tobytes())
        if self._value is not None and self._key is not None and self._key[0] is cfg and self._key[1:] == key[1:]:
            self.hits += 1
            return self._value
        jj, cc = _valid_pairs(a, cfg)
        jj.setflags(write=False)
        cc.setflags(write=False)
        self._key, self._value = key, (jj, cc)
        return jj, cc


def _valid_pairs(a: JobArrays, cfg: ConfigTable) -> tuple[np.ndarray, np.ndarray]:
    cols, sub = valid_sub(a, cfg)
    jj, kk = np.nonzero(sub)
    return jj, cols[kk]


def prune(jobs: Sequence[Job], cfg: ConfigTable, a: JobArrays, settings: SiaSettings,
          evaluate: Callable[[np.ndarray, np.ndarray], np.ndarray], memo: ValidMemo | None = None) -> PairTable:
    """The model's columns: valid (job, config) pairs with goodput > 0 (``evaluate(jj, cc)`` gives the raw
    goodput of pairs) and their utilities. ``memo``: a :class:`ValidMemo` kept across rounds (the same table)."""
    t0 = time.perf_counter()
    jj, cc = _valid_pairs(a, cfg) if memo is None else memo.pairs(a, cfg)
    t1 = time.perf_counter()
    G = evaluate(jj, cc)
    t2 = time.perf_counter()
    forced_pair = a.forced[jj] & (cc == a.current[jj])
    if not ((G >= 0) & (G < np.inf)).all():  # (NaN fails both)
        bad = ~np.isfinite(G) | (G < 0)
        k = int(np.flatnonzero(bad)[0])
        raise InputError(
            f"goodput[{jobs[jj[k]].id}, {cfg.labels[cc[k]]}]", float(G[k]),
            "must be a finite number >= 0 for a valid (job, configuration) pair (0: cannot run there)",
        )
    keep = G > 0
    if not keep.all():
        zero_forced = forced_pair & ~keep
        if zero_forced.any():
            k = int(np.flatnonzero(zero_forced)[0])
            raise InputError(
                f"goodput[{jobs[jj[k]].id}, {cfg.labels[cc[k]]}]", float(G[k]),
                "a non-preemptible job's current configuration needs a positive goodput",
            )
        jj, cc, G, forced_pair = jj[keep], cc[keep], G[keep], forced_pair[keep]
    U = None
    if jj.size:
        # (np.concatenate rather than np.r_: the same int64 arrays at a quarter of the call cost)
        starts = np.concatenate((_ZERO, np.flatnonzero(jj[1:] != jj[:-1]) + 1))
        gmin = np.minimum.reduceat(G, starts)
        umin = np.minimum.reduceat(cfg.n_gpus[cc], starts)
        counts = np.diff(np.concatenate((starts, (jj.size,))))
        U = G * np.repeat(umin / gmin, counts)
        cur = a.current[jj]
        off = (cur != -1) & (cc != cur)
        U = np.where(off, U * restart_factors(a, settings)[jj], U)
        keep = (U > 0) | forced_pair
        if not keep.all():
            jj, cc, G, U, forced_pair = jj[keep], cc[keep], G[keep], U[keep], forced_pair[keep]
    t3 = time.perf_counter()
    # arrays of the table's own: astype copies; G may still be evaluate's (U is made here)
    jj = jj.astype(np.int64)
    cc = cc.astype(np.int64)
    G = G.copy()
    U = G.copy() if U is None else U
    for arr in (jj, cc, G, U, forced_pair):
        arr.setflags(write=False)
    return PairTable(
        jj, cc, G, U, forced_pair, len(jobs), len(cfg),
        seconds=(t1 - t0) + (t3 - t2), goodput_seconds=t2 - t1,
        job_ids=tuple(map(_ID, jobs)), configs=cfg, current=a.current,
    )
