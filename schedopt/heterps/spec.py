"""The HeterPS problem specification: layers, resource types and the problem, validated on construction.

Every check raises :class:`~schedopt.errors.InputError` naming the field (``layers[3].oct.GPU``) and the value.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._validate import check_named_items, indices_of
from ..errors import InputError

__all__ = ["CPU_PRICE", "GPU_PRICE", "MAX_UNITS", "HeterPSProblem", "Layer", "ResourceType"]

#: the paper's prices, $ per unit-hour
CPU_PRICE = 0.04
#: the paper's GPU price, $ per unit-hour
GPU_PRICE = 2.42
#: the range of the problem's scalars (batch sizes, samples, epochs, throughput floor): far from float under/overflow
SCALAR_RANGE = (1e-30, 1e30)
#: the most units of one resource type (a larger ``limit`` is an InputError, not an array of 10**18 entries). 2**20
#: let a single greedy run take over 30 s (the exact provisioning of a plan scans every (stage, k) level: issue 20's
#: long fuzz run, ResourceType(limit=128629) took over 5 s); at 2**16 the greedy and the DP take about 2 s
MAX_UNITS = 2**16


def _num(path: str, value: Any, *, lo: float | None = None, hi: float | None = None, lo_open: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise InputError(path, value, "must be a number")
    try:
        v = float(value)
    except OverflowError:  # an int beyond float range
        v = math.inf
    if not math.isfinite(v):
        raise InputError(path, value, "must be finite")
    if lo is not None and (v < lo or (lo_open and v == lo)):
        raise InputError(path, value, f"must be {'>' if lo_open else '>='} {lo:g}")
    if hi is not None and v > hi:
        raise InputError(path, value, f"must be <= {hi:g}")
    return v


def check_int(path: str, value: Any, *, lo: int, hi: int | None = None) -> int:
    """``value`` an integer (not a bool) in ``[lo, hi]``, else :class:`InputError` naming ``path``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise InputError(path, value, "must be an integer")
    if int(value) < lo:
        raise InputError(path, value, f"must be >= {lo}")
    if hi is not None and int(value) > hi:
        raise InputError(path, value, f"must be <= {hi}")
    return int(value)


def check_num(path: str, value: Any, *, lo: float | None = None, hi: float | None = None,
              lo_open: bool = False) -> float:
    """``value`` a finite real (not a bool or a string) within the bounds, else :class:`InputError` naming ``path``."""
    return _num(path, value, lo=lo, hi=hi, lo_open=lo_open)


def _name(path: str, value: Any) -> str:
    if not isinstance(value, str) or not value or value != value.strip():
        raise InputError(path, value, "must be a non-empty string without surrounding blanks")
    return value


def _times(path: str, value: Any, positive: bool) -> dict[str, float]:
    if not isinstance(value, Mapping):
        raise InputError(path, value, "must be a mapping from resource-type name to seconds")
    out: dict[str, float] = {}
    for key, v in value.items():
        _name(f"{path}.{key}", key)
        out[key] = _num(f"{path}.{key}", v, lo=0.0, lo_open=positive)
    return out


@dataclass(frozen=True, eq=True)
class Layer:
    """One DNN layer.

    ``oct`` / ``odt``: per resource-type name, the measured compute / data-communication time (seconds) of one
    iteration at the base batch size on one unit of that type. ``alpha`` / ``beta``: the parallelizable fractions
    of compute / communication (Amdahl). ``input_size`` / ``weight_size`` are features for the RL policy only.
    """

    name: str
    kind: str
    oct: Mapping[str, float]
    odt: Mapping[str, float]
    alpha: float
    beta: float
    input_size: float = 0
    weight_size: float = 0

    def __post_init__(self) -> None:
        self._validate(f"Layer({self.name!r})")

    def _validate(self, path: str) -> None:
        _name(f"{path}.name", self.name)
        _name(f"{path}.kind", self.kind)
        object.__setattr__(self, "oct", _times(f"{path}.oct", self.oct, positive=True))
        object.__setattr__(self, "odt", _times(f"{path}.odt", self.odt, positive=False))
        object.__setattr__(self, "alpha", _num(f"{path}.alpha", self.alpha, lo=0.0, hi=1.0))
        object.__setattr__(self, "beta", _num(f"{path}.beta", self.beta, lo=0.0, hi=1.0))
        object.__setattr__(self, "input_size", _num(f"{path}.input_size", self.input_size, lo=0.0))
        object.__setattr__(self, "weight_size", _num(f"{path}.weight_size", self.weight_size, lo=0.0))

    __hash__ = None  # type: ignore[assignment]  # holds dicts


@dataclass(frozen=True)
class ResourceType:
    """A resource type: ``price_per_hour`` ($ per unit-hour) and ``limit`` (units available, N_t)."""

    name: str
    price_per_hour: float
    limit: int

    def __post_init__(self) -> None:
        _name("ResourceType.name", self.name)
        object.__setattr__(
            self, "price_per_hour", _num(f"ResourceType({self.name}).price_per_hour", self.price_per_hour, lo=0.0)
        )
        object.__setattr__(self, "limit", check_int(f"ResourceType({self.name}).limit", self.limit, lo=1, hi=MAX_UNITS))


@dataclass(frozen=True)
class HeterPSProblem:
    """Assign each layer a resource type and each stage a unit count: minimize cost s.t. throughput and type limits.

    ``batch_size`` B and ``base_batch`` B0 (samples per iteration), ``samples`` per epoch, ``epochs``,
    ``throughput_limit`` (samples/s, > 0). Arrays used by the solvers are cached on the instance.
    """

    layers: tuple[Layer, ...]
    types: tuple[ResourceType, ...]
    batch_size: float
    base_batch: float
    samples: float
    epochs: float
    throughput_limit: float
    _arrays: dict[str, np.ndarray] = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if isinstance(self.layers, (str, bytes)) or not isinstance(self.layers, Sequence):
            raise InputError("layers", self.layers, "must be a sequence of Layer")
        if isinstance(self.types, (str, bytes)) or not isinstance(self.types, Sequence):
            raise InputError("types", self.types, "must be a sequence of ResourceType")
        layers = tuple(self.layers)
        types = tuple(self.types)
        if not layers:
            raise InputError("layers", [], "must hold at least one layer")
        if not types:
            raise InputError("types", [], "must hold at least one resource type")
        tnames = check_named_items(types, ResourceType, "types", "is used by an earlier type")
        seen: set[str] = set()
        for i, layer in enumerate(layers):
            if not isinstance(layer, Layer):
                raise InputError(f"layers[{i}]", layer, "must be a Layer")
            if layer.name in seen:
                raise InputError(f"layers[{i}].name", layer.name, "is used by an earlier layer")
            seen.add(layer.name)
            for key in ("oct", "odt"):
                d = getattr(layer, key)
                for tn in tnames:
                    if tn not in d:
                        raise InputError(f"layers[{i}].{key}.{tn}", None, f"is missing (every layer needs a time on every type: {tnames})")
                extra = sorted(set(d) - set(tnames))
                if extra:
                    raise InputError(f"layers[{i}].{key}.{extra[0]}", d[extra[0]], f"names no resource type ({tnames})")
        object.__setattr__(self, "layers", layers)
        object.__setattr__(self, "types", types)
        # positive and within [1e-30, 1e30]: a base_batch of 2.2e-308 made every throughput underflow to 0 and the
        # cost a ZeroDivisionError (issue 20's long fuzz run); no meaningful size, count or rate is near either end
        for key in ("batch_size", "base_batch", "samples", "epochs", "throughput_limit"):
            object.__setattr__(self, key, _num(key, getattr(self, key), lo=SCALAR_RANGE[0], hi=SCALAR_RANGE[1]))

    # ------------------------------------------------------------------ conveniences
    @property
    def num_layers(self) -> int:
        return len(self.layers)

    @property
    def type_names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.types)

    @property
    def prices(self) -> np.ndarray:
        return np.array([t.price_per_hour for t in self.types], dtype=float)

    @property
    def limits(self) -> np.ndarray:
        return np.array([t.limit for t in self.types], dtype=np.int64)

    @property
    def sample_hours(self) -> float:
        """``epochs * samples / 3600``: training time in hours is this divided by the throughput (samples/s)."""
        return self.epochs * self.samples / 3600.0

    def with_limit(self, throughput_limit: float) -> HeterPSProblem:
        """The same problem with another throughput floor."""
        return HeterPSProblem(
            self.layers, self.types, self.batch_size, self.base_batch, self.samples, self.epochs, throughput_limit
        )

    def type_index(self, plan: Sequence[str], path: str = "plan") -> np.ndarray:
        """Type index per layer of a plan given as type names; InputError on a bad plan."""
        if isinstance(plan, (str, bytes)) or not isinstance(plan, Sequence):
            raise InputError(path, plan, "must be a sequence of resource-type names, one per layer")
        if len(plan) != self.num_layers:
            raise InputError(path, len(plan), f"needs one type per layer ({self.num_layers})")
        return indices_of(plan, self.type_names, lambda i: f"{path}[{i}]", f"names no resource type ({list(self.type_names)})")

    def arrays(self) -> dict[str, np.ndarray]:
        """Cached per-layer arrays (L x m): serial / parallel compute S, P and communication R, Q, plus prefix sums."""
        if not self._arrays:
            names = self.type_names
            octm = np.array([[layer.oct[t] for t in names] for layer in self.layers], dtype=float)
            odtm = np.array([[layer.odt[t] for t in names] for layer in self.layers], dtype=float)
            alpha = np.array([layer.alpha for layer in self.layers])[:, None]
            beta = np.array([layer.beta for layer in self.layers])[:, None]
            arr = {"oct": octm, "odt": odtm, "S": octm * (1 - alpha), "P": octm * alpha, "R": odtm * (1 - beta), "Q": odtm * beta}
            for key in ("S", "P", "R", "Q"):
                arr[key + "pre"] = np.vstack([np.zeros((1, len(names))), np.cumsum(arr[key], axis=0)])
            self._arrays.update(arr)
        return self._arrays
