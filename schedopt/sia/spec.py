"""Sia's specs: configurations and jobs (frozen, validated dataclasses); the GPU types and the cluster are the shared
cluster model of :mod:`schedopt.cluster` (re-exported here: ``schedopt.sia.Cluster`` is ``schedopt.cluster.Cluster``).

Every check raises :class:`~schedopt.errors.InputError` naming the field and the value. A :class:`Job` built
directly names itself ``job[<id>].<field>``; :class:`~schedopt.sia.SiaProblem` and the JSON reader re-raise with
their own paths (``jobs[3].min_gpus``, ``data.jobs[3].min_gpus``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from ..cluster import MAX_GPUS, Cluster, GpuType, is_int, need_int
from ..errors import InputError

__all__ = ["MAX_GPUS", "MAX_RESTARTS", "Cluster", "Config", "GpuType", "Job", "JobId", "JobKind", "config_parts",
           "pow2_blocks", "rewrap", "virtual_bins"]

#: A job's kind in the Sia ILP: adaptive, strong-scaling or rigid.
JobKind = Literal["adaptive", "strong", "rigid"]
#: A job's id: a string or an integer.
JobId = str | int
KINDS = ("adaptive", "strong", "rigid")

#: the largest restart count of a job
MAX_RESTARTS = 2**20


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))


def _int_field(p: str, name: str, v: Any, low: int, high: int = MAX_GPUS) -> int:
    """``need_int(f"{p}.{name}", ...)`` with the common case (a plain int in range) first: the path is only
    formatted for an error (a simulator builds hundreds of jobs a round)."""
    if type(v) is int and low <= v <= high:
        return v
    return need_int(f"{p}.{name}", v, low, high)


def _num_field(p: str, name: str, v: Any, low: float) -> float:
    """``_need_num(f"{p}.{name}", ...)`` with the common case (a finite float or int >= low) first."""
    t = type(v)
    if (t is float and low <= v < _INF) or (t is int and low <= v <= _BIG_INT):
        return float(v)
    return _need_num(f"{p}.{name}", v, low)


_INF = float("inf")
_BIG_INT = 2**53


def _need_num(path: str, v: Any, low: float) -> float:
    if not _is_num(v):
        raise InputError(path, v, "must be a finite number")
    try:
        f = float(v)
    except OverflowError:
        raise InputError(path, v, "must be a finite number") from None
    if not np.isfinite(f):
        raise InputError(path, v, "must be a finite number")
    if f < low:
        raise InputError(path, v, f"must be >= {low}")
    return f


def is_pow2(n: int) -> bool:
    return n >= 1 and (n & (n - 1)) == 0


def virtual_bins(gpus_per_node: int) -> tuple[int, ...]:
    """Sizes of the power-of-two virtual nodes one physical node of ``gpus_per_node`` GPUs is split into
    (its binary digits, largest first): 8 -> (8,), 6 -> (4, 2), 7 -> (4, 2, 1)."""
    return tuple(1 << k for k in range(int(gpus_per_node).bit_length() - 1, -1, -1) if gpus_per_node >> k & 1)


def config_parts(gpus_per_node: int, n_nodes: int, n_gpus: int) -> tuple[int, int]:
    """(whole nodes, remainder GPUs) of a configuration on nodes of ``gpus_per_node`` GPUs: a partial
    configuration (one node, a power of two <= the largest virtual node) is ``(0, n_gpus)``; anything else takes
    ``n_gpus // R`` whole nodes plus ``n_gpus % R`` GPUs placed as power-of-two blocks (a rigid job's shape)."""
    R = int(gpus_per_node)
    if n_nodes == 1 and is_pow2(n_gpus) and n_gpus <= 1 << (R.bit_length() - 1):
        return 0, int(n_gpus)
    return int(n_gpus) // R, int(n_gpus) % R


def pow2_blocks(part: int) -> tuple[int, ...]:
    """The power-of-two blocks of a remainder (its binary digits, largest first): 6 -> (4, 2)."""
    return virtual_bins(part) if part > 0 else ()


def rewrap(err: InputError, old_prefix: str, new_prefix: str) -> InputError:
    """The same error with its field path re-rooted (``job[j3].min_gpus`` -> ``jobs[3].min_gpus``)."""
    f = err.field
    if f.startswith(old_prefix):
        f = new_prefix + f[len(old_prefix) :]
    return InputError(f, err.value, err.message)


@dataclass(frozen=True)
class Config:
    """A configuration: ``n_nodes`` nodes holding ``n_gpus`` GPUs of type ``gpu_type`` in total."""

    n_nodes: int
    n_gpus: int
    gpu_type: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "n_nodes", need_int("config.n_nodes", self.n_nodes, 1))
        object.__setattr__(self, "n_gpus", need_int("config.n_gpus", self.n_gpus, 1))
        if self.n_gpus < self.n_nodes:
            raise InputError("config.n_gpus", self.n_gpus, f"must be >= n_nodes ({self.n_nodes})")
        if not isinstance(self.gpu_type, str) or not self.gpu_type:
            raise InputError("config.gpu_type", self.gpu_type, "must be a non-empty string")

    @property
    def label(self) -> str:
        """``<n_nodes>x<n_gpus>x<gpu_type>`` (n_gpus is the total): ``2x16xa100``, ``1x4xt4``."""
        return f"{self.n_nodes}x{self.n_gpus}x{self.gpu_type}"

    def __str__(self) -> str:
        return self.label


def _types_tuple(path: str, v: Any) -> tuple[str, ...] | None:
    if v is None:
        return None
    if isinstance(v, str) or not isinstance(v, Iterable):
        raise InputError(path, v, "must be a sequence of GPU type names or None")
    out = tuple(v)
    if not out:
        raise InputError(path, list(out), "must name at least one GPU type (None: every type)")
    for i, t in enumerate(out):
        if not isinstance(t, str):
            raise InputError(f"{path}[{i}]", t, "must be a GPU type name")
    if len(set(out)) != len(out):
        raise InputError(path, list(out), "names a GPU type twice")
    return out


@dataclass(frozen=True)
class Job:
    """One job of the round.

    * ``kind``: ``"adaptive"`` (batch size and GPUs free; goodput), ``"strong"`` (fixed batch size; goodput is
      throughput), ``"rigid"`` (fixed GPU count ``rigid_gpus`` and batch size: only the GPU type is chosen).
    * ``min_gpus`` / ``max_gpus`` / ``scale_unit`` (GPU counts must be multiples of it) and the growth rule
      (at most ``max(2 * max_profiled_gpus, u)`` GPUs, ``u`` the smallest valid count) prune configurations.
    * ``allowed_types``: GPU types the job may use (``None``: all).
    * ``current``: the configuration it runs in now (``None``: not running); with ``preemptible=False`` that
      configuration is forced for the next round.
    * ``age_s``, ``restarts``, ``restart_cost_s``: the restart factor's inputs.
    * ``batch_size``: the fixed batch of strong/rigid jobs when the goodput comes from a model with a
      ``throughput`` method (``None``: the model's ``init_batch``). Not in the paper's API (an extension).
    * ``attained_gpu_seconds``: the service the job has received (GPU-seconds); read only by the published rule
      for rigid jobs' restart factor (:attr:`SiaSettings.rigid_restart_by_attained
      <schedopt.sia.SiaSettings.rigid_restart_by_attained>`).
    """

    id: JobId
    kind: str = "adaptive"
    min_gpus: int = 1
    max_gpus: int | None = None
    scale_unit: int = 1
    max_profiled_gpus: int = 0
    allowed_types: Sequence[str] | None = None
    current: Config | None = None
    age_s: float = 0.0
    restarts: int = 0
    restart_cost_s: float = 0.0
    preemptible: bool = True
    rigid_gpus: int | None = None
    batch_size: float | None = field(default=None, compare=True)
    attained_gpu_seconds: float = 0.0

    def __post_init__(self) -> None:
        jid = self.id
        if not (is_int(jid) or (isinstance(jid, str) and jid and not any(c in jid for c in " @,[]()"))):
            raise InputError("job.id", jid, "must be an int or a non-empty string without spaces or @,[]()")
        if is_int(jid):
            object.__setattr__(self, "id", int(jid))
        p = f"job[{jid}]"
        if self.kind not in KINDS:
            raise InputError(f"{p}.kind", self.kind, f"must be one of {', '.join(KINDS)}")
        set_ = object.__setattr__
        set_(self, "min_gpus", _int_field(p, "min_gpus", self.min_gpus, 1))
        if self.max_gpus is not None:
            set_(self, "max_gpus", _int_field(p, "max_gpus", self.max_gpus, self.min_gpus))
        set_(self, "scale_unit", _int_field(p, "scale_unit", self.scale_unit, 1))
        set_(self, "max_profiled_gpus", _int_field(p, "max_profiled_gpus", self.max_profiled_gpus, 0))
        if self.allowed_types is not None:
            set_(self, "allowed_types", _types_tuple(f"{p}.allowed_types", self.allowed_types))
        if self.current is not None and not isinstance(self.current, Config):
            raise InputError(f"{p}.current", self.current, "must be a Config or None")
        set_(self, "age_s", _num_field(p, "age_s", self.age_s, 0.0))
        set_(self, "restarts", _int_field(p, "restarts", self.restarts, 0, MAX_RESTARTS))
        set_(self, "restart_cost_s", _num_field(p, "restart_cost_s", self.restart_cost_s, 0.0))
        if not isinstance(self.preemptible, (bool, np.bool_)):
            raise InputError(f"{p}.preemptible", self.preemptible, "must be a bool")
        set_(self, "preemptible", bool(self.preemptible))
        if self.kind == "rigid":
            if self.rigid_gpus is None:
                raise InputError(f"{p}.rigid_gpus", None, "a rigid job needs its fixed GPU count")
            set_(self, "rigid_gpus", _int_field(p, "rigid_gpus", self.rigid_gpus, 1))
        elif self.rigid_gpus is not None:
            raise InputError(f"{p}.rigid_gpus", self.rigid_gpus, f"is only for rigid jobs (kind is {self.kind!r})")
        if self.batch_size is not None:
            set_(self, "batch_size", _num_field(p, "batch_size", self.batch_size, 1e-12))
        set_(self, "attained_gpu_seconds", _num_field(p, "attained_gpu_seconds", self.attained_gpu_seconds, 0.0))
        if self.kind != "rigid" and self.smallest_count() is None:
            raise InputError(
                f"{p}.scale_unit",
                self.scale_unit,
                f"no multiple of it lies in [min_gpus={self.min_gpus}, max_gpus={self.max_gpus}]",
            )

    def smallest_count(self) -> int | None:
        """``u``: the smallest GPU count the job may run at (the rigid count for rigid jobs)."""
        if self.kind == "rigid":
            return self.rigid_gpus
        u = -(-self.min_gpus // self.scale_unit) * self.scale_unit
        if self.max_gpus is not None and u > self.max_gpus:
            return None
        return u

    def growth_limit(self) -> int:
        """The growth rule: at most ``max(2 * max_profiled_gpus, u)`` GPUs (a new job starts at ``u``, 1 for
        data-parallel jobs)."""
        u = self.smallest_count() or 1
        return max(2 * self.max_profiled_gpus, u)

    def restart_factor(self, by_attained: bool = False) -> float:
        """``r = max(T - N S, 0) / (T + S)``; 1 while ``T < S`` (and when ``T = S = 0``). With ``by_attained``
        (the published rule for rigid jobs) the guard compares the attained GPU-seconds instead: 1 while
        ``attained_gpu_seconds < S``."""
        T, N, S = self.age_s, self.restarts, self.restart_cost_s
        young = (self.attained_gpu_seconds if by_attained else T) < S
        if young or T + S == 0:
            return 1.0
        return max(T - N * S, 0.0) / (T + S)
