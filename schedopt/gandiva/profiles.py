"""Job profiles for Gandiva: solo throughput, GPU utilization, GPU memory and pairwise interference factors.

The shipped table (``profiles.json``) is derived offline by ``tools/derive_gandiva_profiles.py`` from the public
Gavel measurements (stanford-futuredata/gavel, MIT): 26 job types measured alone and co-located in pairs on one
V100. ``factor[i, j]`` is the fraction of its solo throughput type ``i`` keeps when sharing a GPU with type ``j``.
See ``formulations/gandiva.md`` for how utilization and memory (which Gavel does not publish) are derived.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

import numpy as np

from .._validate import indices_of
from ..errors import InputError

__all__ = ["Profiles", "load_profiles", "philly_distribution"]


def _real_array(v: Any, path: str) -> np.ndarray:
    """``v`` as a float array; strings, booleans, None and objects are rejected, never half-converted."""
    try:
        arr = np.asarray(v)
    except ValueError as exc:  # ragged nesting
        raise InputError(path, v, f"must be a rectangular array of numbers ({exc})") from None
    if arr.dtype.kind not in "iuf":
        raise InputError(path, v, "must hold numbers only")
    return arr.astype(float)


@dataclass(frozen=True, eq=False)
class Profiles:
    """A table of job types: ``factor[i, j]`` = throughput share type ``i`` keeps when packed with type ``j``."""

    types: tuple[str, ...]
    solo_throughput: np.ndarray
    utilization: np.ndarray
    memory: np.ndarray
    factor: np.ndarray

    def __post_init__(self) -> None:
        types = self.types
        if isinstance(types, str | bytes) or not isinstance(types, Sequence):
            raise InputError("profiles.types", types, "must be a list of job type names")
        for i, t in enumerate(types):
            if not isinstance(t, str) or not t:
                raise InputError(f"profiles.types[{i}]", t, "must be a non-empty string")
        n = len(types)
        if n == 0:
            raise InputError("profiles.types", [], "needs at least one job type")
        if len(set(types)) != n:
            raise InputError("profiles.types", list(types), "must be distinct")
        object.__setattr__(self, "types", tuple(types))
        for name in ("solo_throughput", "utilization", "memory"):
            arr = _real_array(getattr(self, name), f"profiles.{name}")
            if arr.shape != (n,):
                raise InputError(f"profiles.{name}", arr.shape, f"needs one value per type ({n})")
            if not np.isfinite(arr).all() or (arr < 0).any():
                i = int(np.flatnonzero(~np.isfinite(arr) | (arr < 0))[0])
                raise InputError(f"profiles.{name}[{i}]", float(arr[i]), "must be finite and >= 0")
            object.__setattr__(self, name, arr)
        f = _real_array(self.factor, "profiles.factor")
        if f.shape != (n, n):
            raise InputError("profiles.factor", f.shape, f"must be {n} x {n}")
        bad = ~np.isfinite(f) | (f < 0) | (f > 1)
        if bad.any():
            i, j = (int(v) for v in np.argwhere(bad)[0])
            raise InputError(f"profiles.factor[{i}][{j}]", float(f[i, j]), "must be in [0, 1]")
        object.__setattr__(self, "factor", f)

    @classmethod
    def from_values(cls, types: Any, solo_throughput: Any, utilization: Any, memory: Any, factor: Any) -> Profiles:
        """A table from plain values (lists, JSON): each array is read (and checked, naming its field) as numbers."""
        return cls(types, _real_array(solo_throughput, "profiles.solo_throughput"),
                   _real_array(utilization, "profiles.utilization"), _real_array(memory, "profiles.memory"),
                   _real_array(factor, "profiles.factor"))

    def index(self, job_type: str, path: str = "job_type") -> int:
        try:
            return self.types.index(job_type)
        except ValueError:
            raise InputError(path, job_type, f"is not a profiled job type ({len(self.types)} known)") from None

    def indices(self, job_types: Sequence[str], path: str = "jobs") -> np.ndarray:
        return indices_of(
            job_types, self.types, lambda i: f"{path}[{i}].job_type", f"is not a profiled job type ({len(self.types)} known)"
        )

    def subset(self, job_types: Sequence[str]) -> Profiles:
        """The table restricted to ``job_types`` (kept in first-seen order)."""
        names = list(dict.fromkeys(job_types))
        idx = self.indices(names)
        return Profiles(
            tuple(names),
            self.solo_throughput[idx],
            self.utilization[idx],
            self.memory[idx],
            self.factor[np.ix_(idx, idx)],
        )

    def job(self, job_id: str, job_type: str, gpus: int = 1, **kw: Any) -> Any:
        """A :class:`GandivaJob` of ``job_type`` with its profiled utilization, memory and solo throughput."""
        from .state import GandivaJob

        i = self.index(job_type)
        return GandivaJob(
            id=job_id,
            gpus=gpus,
            job_type=job_type,
            utilization=float(self.utilization[i]),
            memory=float(self.memory[i]),
            throughput=float(self.solo_throughput[i]),
            **kw,
        )

    def to_data(self) -> dict[str, Any]:
        return {
            "types": list(self.types),
            "solo_throughput": self.solo_throughput.tolist(),
            "utilization": self.utilization.tolist(),
            "memory": self.memory.tolist(),
            "factor": self.factor.tolist(),
        }


def _read_json() -> dict[str, Any]:
    return json.loads(resources.files(__package__).joinpath("profiles.json").read_text())


@lru_cache(maxsize=1)
def load_profiles() -> Profiles:
    """The shipped Gavel-derived profile table (26 job types)."""
    d = _read_json()
    return Profiles(tuple(d["types"]), d["solo_throughput"], d["utilization"], d["memory"], d["factor"])


@lru_cache(maxsize=1)
def philly_distribution() -> dict[str, Any]:
    """The shipped Philly job-size probabilities and per-size log10-duration quantiles."""
    return _read_json()["philly"]
