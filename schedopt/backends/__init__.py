"""Solver backends behind one interface, each importing its solver lazily.

``available_backends()`` lists what is installed here with its capabilities; :func:`get_backend` returns an
adapter or raises :class:`~schedopt.errors.BackendUnavailableError` saying which and why.

Pins (see pyproject.toml): highspy 1.15.x and ortools 9.15 each carry their own HiGHS library and importing both
in one process fails with undefined-symbol errors, in either order; highspy 1.12.0 matches the HiGHS inside ortools
9.15.6755, and both then import and solve together.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import BackendUnavailableError
from .base import Backend, Capabilities, SolveParams

__all__ = [
    "Backend",
    "BackendInfo",
    "Capabilities",
    "SolveParams",
    "available_backends",
    "get_backend",
    "register_backend",
    "registered_backends",
]

_REGISTRY: dict[str, Backend] = {}


def register_backend(backend: Backend, *, replace: bool = False) -> Backend:
    """Register a backend instance under ``backend.name`` (how third parties add a solver)."""
    if not backend.name:
        raise ValueError("a backend needs a non-empty name")
    if backend.name in _REGISTRY and not replace:
        raise ValueError(f"backend {backend.name!r} is already registered")
    _REGISTRY[backend.name] = backend
    return backend


@dataclass(frozen=True)
class BackendInfo:
    name: str
    available: bool
    reason: str
    capabilities: Capabilities

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "available": self.available, "reason": self.reason, **self.capabilities.as_dict()}


def get_backend(name: str) -> Backend:
    """The named backend, checked to be installed."""
    if name not in _REGISTRY:
        import difflib

        close = difflib.get_close_matches(str(name), sorted(_REGISTRY), n=1)
        hint = f"; did you mean {close[0]}?" if close else ""
        raise BackendUnavailableError(name, f"unknown backend; known backends: {', '.join(sorted(_REGISTRY))}{hint}")
    b = _REGISTRY[name]
    ok, why = b.available()
    if not ok:
        raise BackendUnavailableError(name, why)
    return b


def registered_backends() -> dict[str, Backend]:
    """Every registered backend by name, installed or not (a copy: registering goes through
    :func:`register_backend`)."""
    return dict(_REGISTRY)


def available_backends(include_missing: bool = False) -> dict[str, BackendInfo]:
    """Installed backends (or all registered ones) with their capabilities."""
    out: dict[str, BackendInfo] = {}
    for name, b in _REGISTRY.items():
        ok, why = b.available()
        if ok or include_missing:
            out[name] = BackendInfo(name, ok, why, b.capabilities)
    return out


def _register_builtins() -> None:
    # each module imports its solver lazily, inside solve(): importing them here loads no solver
    from .cpsat import CpSatBackend
    from .glpk import GlpkBackend
    from .highs import HighsBackend
    from .mathopt import MathOptBackend
    from .mckp import MckpBackend
    from .pyomo_backend import PyomoBackend
    from .scipy_backend import ScipyBackend

    for cls in (HighsBackend, ScipyBackend, CpSatBackend, MathOptBackend, PyomoBackend, GlpkBackend, MckpBackend):
        register_backend(cls())


_register_builtins()
