"""schedopt: the optimization models behind modern GPU-cluster schedulers.

``import schedopt`` imports no solver: every backend loads its solver when it first solves.
"""

from __future__ import annotations

from . import errors
from . import export as export  # the model's conversions (LinearModel.write_lp, to_pyomo, ...) register here
from .backends import available_backends, get_backend, register_backend
from .infeasibility import InfeasibilityReport, explain_infeasibility
from .model import ConstraintFamily, LinearModel, VarBlock, VarKind
from .results import Limit, SolveResult, Termination, TerminationReason, Timings
from .solve import default_backend, solve

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
