"""schedopt: the optimization models behind modern GPU-cluster schedulers.

``import schedopt`` imports no solver: every backend loads its solver when it first solves.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from . import errors
from . import export as export  # the model's conversions (LinearModel.write_lp, to_pyomo, ...) register here
from .model import ConstraintFamily, LinearModel, VarBlock, VarKind
from .results import Limit, SolveResult, Termination, TerminationReason, Timings
from .solve import default_backend, solve

if TYPE_CHECKING:
    from .backends import available_backends, get_backend, register_backend
    from .infeasibility import InfeasibilityReport, explain_infeasibility

#: public names imported on first use, and their modules (issue 42: ``import schedopt`` imports no backend and so
#: not ``scipy.sparse``, about 0.15-0.2 s of CPU, until a model is built, read or solved)
_LAZY = {
    "available_backends": ".backends", "get_backend": ".backends", "register_backend": ".backends",
    "InfeasibilityReport": ".infeasibility", "explain_infeasibility": ".infeasibility",
}


def __getattr__(name: str) -> Any:
    """The public names of :data:`_LAZY`, imported on first use."""
    where = _LAZY.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(where, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))

#: The package's version (equal to the installed distribution's metadata version).
__version__ = "0.2.0.dev0"

__all__ = [
    "ConstraintFamily",
    "InfeasibilityReport",
    "Limit",
    "LinearModel",
    "SolveResult",
    "Termination",
    "TerminationReason",
    "Timings",
    "VarBlock",
    "VarKind",
    "__version__",
    "available_backends",
    "default_backend",
    "errors",
    "explain_infeasibility",
    "get_backend",
    "register_backend",
    "solve",
]
