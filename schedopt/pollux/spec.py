"""The Pollux (OSDI'21) allocation problem's spec: one scheduling round's jobs, their goodput, and the cluster's
columns (nodes) the allocation matrix is over (card: ``formulations/pollux.md``)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ..errors import InputError
from ..sia import Cluster

__all__ = ["EPS", "MAX_ABS_P", "MAX_NODES", "MAX_REPLICAS", "P_FAIRNESS", "RESTART_DELAY_S", "Columns", "GoodputFill",
           "PolluxSpec", "node_columns", "restart_factor"]

#: the power-mean exponent of the published policy (``p = -1``: more negative is fairer)
P_FAIRNESS = -1.0
#: the published additive guard inside the power mean, ``(s + 1e-3)^p``
EPS = 1e-3
#: the re-allocation delay the published policy charges in its restart factor (seconds)
RESTART_DELAY_S = 30.0
#: the published cap on GPUs per job ("simulator can't handle more")
MAX_REPLICAS = 64
#: the published cap on nodes per job (repair step)
MAX_NODES = 16

#: the largest power-mean exponent in magnitude: ``(s + EPS)^p`` stays finite and non-zero in double precision for
#: speedups up to 1e6 (``EPS^-50 = 1e150``, ``1e6^50 = 1e300``)
MAX_ABS_P = 50.0

#: ``fill(job, type index, nodes, replicas) -> goodput`` for entries of :attr:`PolluxSpec.goodput` still NaN
GoodputFill = Callable[[int, int, np.ndarray, np.ndarray], np.ndarray]


@dataclass(frozen=True, eq=False)
class Columns:
    """The columns of the allocation matrix: ``ids`` (node ids), ``gpus`` (GPUs per column), ``types`` (GPU type
    index per column, into ``PolluxSpec.types``)."""

    ids: tuple[str, ...]
    gpus: np.ndarray
    types: np.ndarray

    def __len__(self) -> int:
        return len(self.ids)


def node_columns(cluster: Cluster) -> Columns:
    """The cluster's nodes, in cluster order (its node ids: ``<type>-<k>`` or the names it was given), as columns,
    each of the node's own GPUs (:attr:`schedopt.cluster.GpuType.sizes`: AdaptDL's Pollux reads each node's own
    resources, so a node with failed GPUs or a pool of mixed sizes is searched as it is)."""
    ids: list[str] = []
    cap: list[int] = []
    typ: list[int] = []
    for k, t in enumerate(cluster.gpu_types):
        ids += cluster.node_ids(t.name)
        cap += list(t.sizes)
        typ += [k] * t.nodes
    return Columns(tuple(ids), np.array(cap, dtype=np.int64), np.array(typ, dtype=np.int64))


def restart_factor(age: np.ndarray, restarts: np.ndarray, delay: float = RESTART_DELAY_S) -> np.ndarray:
    """The published re-allocation factor ``max(age - restarts * delay, 0) / (age + delay)`` (1 for ``delay = 0``)."""
    age = np.asarray(age, dtype=np.float64)
    restarts = np.asarray(restarts, dtype=np.float64)
    if delay > 0:
        return np.asarray(np.maximum(age - restarts * delay, 0.0) / (age + delay))
    return np.ones(age.shape)


def _ints(name: str, v: Any, shape: tuple[int, ...], lo: int) -> np.ndarray:
    a = np.asarray(v)
    if a.shape != shape or (a.size and not np.issubdtype(a.dtype, np.integer)):
        raise InputError(name, a.tolist() if a.size <= 16 else f"array {a.shape}", f"must be integers of shape {shape}")
    bad = np.argwhere(a < lo)
    if bad.size:
        k = tuple(int(i) for i in bad[0])
        raise InputError(f"{name}{list(k)}", int(a[k]), f"must be >= {lo}")
    return a.astype(np.int64)


def _check_current(cur: np.ndarray, cols: Columns, jobs: tuple[str, ...]) -> None:
    """The allocation held now fits the nodes: no job holds more GPUs of a column than it has, nor do all jobs
    together (an allocation the cluster cannot hold is no state a round starts from)."""
    over = np.argwhere(cur > cols.gpus[None, :])
    if over.size:
        j, k = (int(v) for v in over[0])
        raise InputError(f"current[{jobs[j]}][{cols.ids[k]}]", int(cur[j, k]),
                         f"more GPUs than node {cols.ids[k]} has ({int(cols.gpus[k])} GPUs)")
    held = cur.sum(axis=0)
    full = np.flatnonzero(held > cols.gpus)
    if full.size:
        k = int(full[0])
        who = [jobs[j] for j in np.flatnonzero(cur[:, k]).tolist()]
        raise InputError(f"current[*][{cols.ids[k]}]", int(held[k]),
                         f"{int(held[k])} GPUs held by jobs {who[:8]} on node {cols.ids[k]} of {int(cols.gpus[k])} GPUs")


@dataclass(frozen=True, eq=False)
class PolluxSpec:
    """One round of Pollux's allocation problem.

    ``jobs`` in the published order (attained GPU-seconds, arrival, id): the repair gives contested nodes in that
    order. ``goodput[j, t, n, r]`` is job ``j``'s goodput on ``n`` nodes holding ``r`` GPUs of type ``types[t]``
    (shape ``(J, T, max_nodes + 1, max_replicas + 1)``; 0: infeasible; NaN: not computed yet, filled by ``fill``,
    which only an in-memory spec has). ``base[j]``: the job's goodput at its fair share, so
    ``speedup_j = goodput / base_j * scale`` (``scale``: the published ``N / G``). ``current`` (jobs x columns):
    the allocation the jobs hold now; a job whose allocation changes is charged ``restart_factor[j]``. ``cap``:
    GPUs a job may hold; ``rigid``: the exact GPU count of rigid jobs (0: adaptive). ``view`` (optional): the GPU
    type each job is evaluated on whatever its columns' types (``pollux-unaware``), -1 for the linear speedup
    ``r / base_j * scale``. ``columns`` defaults to the cluster's nodes (:func:`node_columns`); the exact method
    needs them (its configurations are the cluster's).
    """

    cluster: Cluster
    jobs: tuple[str, ...]
    goodput: np.ndarray
    base: np.ndarray
    current: np.ndarray | None = None
    restart_factor: np.ndarray | None = None
    cap: np.ndarray | None = None
    rigid: np.ndarray | None = None
    p: float = P_FAIRNESS
    scale: float | None = None
    columns: Columns | None = None
    view: np.ndarray | None = None
    fill: GoodputFill | None = field(default=None, repr=False)
    meta: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.cluster, Cluster):
            raise InputError("cluster", type(self.cluster).__name__, "must be a schedopt.sia.Cluster")
        jobs = tuple(str(j) for j in self.jobs)
        if len(set(jobs)) != len(jobs):
            dup = next(j for i, j in enumerate(jobs) if j in jobs[:i])
            raise InputError("jobs", dup, "is a duplicate job id")
        object.__setattr__(self, "jobs", jobs)
        J = len(jobs)
        T = len(self.cluster.gpu_types)
        cols = self.columns if self.columns is not None else node_columns(self.cluster)
        if not isinstance(cols, Columns):
            raise InputError("columns", type(cols).__name__, "must be a schedopt.pollux.Columns")
        N = len(cols)
        if cols.gpus.shape != (N,) or cols.types.shape != (N,) or (N and (cols.gpus.min() < 1 or cols.types.min() < 0
                                                                          or cols.types.max() >= T)):
            raise InputError("columns", cols.ids[:8], f"need {N} GPU counts >= 1 and type indices in 0..{T - 1}")
        object.__setattr__(self, "columns", cols)
        g = np.asarray(self.goodput, dtype=np.float64)
        if g.ndim != 4 or g.shape[:2] != (J, T) or g.shape[2] < 2 or g.shape[3] < 2:
            raise InputError("goodput", list(g.shape), f"must have shape ({J}, {T}, max_nodes + 1, max_replicas + 1)")
        known = g[~np.isnan(g)]
        if known.size and (not np.isfinite(known).all() or known.min() < 0):
            raise InputError("goodput", float(known[~np.isfinite(known) | (known < 0)][0]),
                             "entries must be finite and >= 0 (NaN: to be filled)")
        if np.isnan(g).any() and self.fill is None:
            raise InputError("goodput", "NaN", "has entries not computed and the spec has no fill")
        object.__setattr__(self, "goodput", g)
        b = np.asarray(self.base, dtype=np.float64).reshape(-1)
        if b.shape != (J,) or not (np.isfinite(b).all() and (b > 0).all()):
            raise InputError("base", b.tolist()[:8], f"must be {J} finite numbers > 0 (goodput at the fair share)")
        object.__setattr__(self, "base", b)
        cur = np.zeros((J, N), np.int64) if self.current is None else _ints("current", self.current, (J, N), 0)
        _check_current(cur, cols, jobs)
        object.__setattr__(self, "current", cur)
        rf = np.ones(J) if self.restart_factor is None else np.asarray(self.restart_factor, dtype=np.float64)
        if rf.shape != (J,) or not (np.isfinite(rf).all() and (rf >= 0).all() and (rf <= 1).all()):
            raise InputError("restart_factor", rf.tolist()[:8], f"must be {J} numbers in [0, 1]")
        object.__setattr__(self, "restart_factor", rf)
        max_reps = g.shape[3] - 1
        cap = np.full(J, max_reps, np.int64) if self.cap is None else _ints("cap", self.cap, (J,), 0)
        rig = np.zeros(J, np.int64) if self.rigid is None else _ints("rigid", self.rigid, (J,), 0)
        object.__setattr__(self, "rigid", rig)
        object.__setattr__(self, "cap", np.where(rig > 0, rig, np.minimum(cap, max_reps)))
        if not (isinstance(self.p, (int, float)) and not isinstance(self.p, bool) and math.isfinite(self.p)
                and self.p != 0 and abs(self.p) <= MAX_ABS_P):
            raise InputError("p", self.p, f"must be a non-zero number with |p| <= {MAX_ABS_P:g} (the power-mean "
                             "exponent, Pollux uses -1; the mean takes (s + 1e-3)^p, and 1e-3^-50 = 1e150: past "
                             "|p| = 50 the terms overflow or vanish in double precision and the objective is inf or "
                             "a division by zero)")
        G = int(self.cluster.num_gpus)
        sc = (len(cols) / G if G else 0.0) if self.scale is None else self.scale
        if not (isinstance(sc, (int, float)) and math.isfinite(sc) and sc > 0):
            raise InputError("scale", sc, "must be a finite number > 0 (Pollux: nodes / GPUs)")
        object.__setattr__(self, "scale", float(sc))
        if self.view is not None:
            v = _ints("view", self.view, (J,), -1)
            if (v >= T).any():
                raise InputError("view", v.tolist()[:8], f"must be GPU type indices < {T} or -1 (linear)")
            object.__setattr__(self, "view", v)

    # typed accessors of what __post_init__ filled in
    @property
    def cols(self) -> Columns:
        assert self.columns is not None
        return self.columns

    @property
    def current_matrix(self) -> np.ndarray:
        assert self.current is not None
        return self.current

    @property
    def restart(self) -> np.ndarray:
        assert self.restart_factor is not None
        return self.restart_factor

    @property
    def job_cap(self) -> np.ndarray:
        assert self.cap is not None
        return self.cap

    @property
    def rigid_gpus(self) -> np.ndarray:
        assert self.rigid is not None
        return self.rigid

    @property
    def speedup_scale(self) -> float:
        assert self.scale is not None
        return self.scale

    @property
    def types(self) -> tuple[str, ...]:
        return self.cluster.type_names

    @property
    def num_jobs(self) -> int:
        return len(self.jobs)

    @property
    def max_nodes(self) -> int:
        """The most nodes a job may span (the goodput table's node axis)."""
        return int(self.goodput.shape[2]) - 1

    @property
    def max_replicas(self) -> int:
        """The most GPUs a job may hold (the goodput table's replica axis)."""
        return int(self.goodput.shape[3]) - 1

    def replace(self, **changes: Any) -> PolluxSpec:
        return replace(self, **changes)
