"""The backend interface: capabilities, parameters, and the registry entry every solver adapter fills in."""

from __future__ import annotations

import difflib
import functools
import importlib.util
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import InputError
from ..interrupt import StopScope, WorkerTask, nested_stop_scope, run_interruptible, submit
from ..params import SolveParams
from ..results import Limit, SolveResult, Termination, TerminationReason, Timings, bound_tolerance

if TYPE_CHECKING:
    from ..model import LinearModel

# StopScope ... submit live in schedopt.interrupt (a core module the mckp solver uses too); re-exported here
__all__ = ["Backend", "Capabilities", "SolveParams", "StopScope", "WorkerTask", "nested_stop_scope", "run_interruptible",
           "submit"]


@functools.cache
def package_installed(module: str) -> bool:
    """Whether ``module`` can be imported here (``importlib.util.find_spec``, asked once per process: every solve
    asks, and the search through ``sys.path`` cost about 1 ms a call; a package installed while the process runs is
    seen by the next process)."""
    return importlib.util.find_spec(module) is not None


@dataclass(frozen=True)
class Capabilities:
    """What a backend can do."""

    lp: bool = True
    mip: bool = True
    duals: bool = False
    iis: bool = False
    warm_start: bool = False
    time_limit_incumbent: bool = True  #: a time limit returns the best incumbent
    integer_only: bool = False  #: every variable must be integer (CP-SAT)
    structure: str | None = None  #: a model structure the backend requires (``"mckp"``), if any

    def as_dict(self) -> dict[str, Any]:
        return {
            "lp": self.lp,
            "mip": self.mip,
            "duals": self.duals,
            "iis": self.iis,
            "warm_start": self.warm_start,
            "time_limit_incumbent": self.time_limit_incumbent,
            "integer_only": self.integer_only,
            "structure": self.structure,
        }


def interrupted_reason(reason: TerminationReason, has_solution: bool) -> tuple[TerminationReason, Limit | None]:
    """What an interrupted solve reports: OPTIMAL and the proofs (INFEASIBLE, UNBOUNDED) stand; anything else is
    FEASIBLE (with a solution) or NO_SOLUTION_FOUND, with :attr:`Limit.INTERRUPTED`."""
    if reason in (TerminationReason.OPTIMAL, TerminationReason.INFEASIBLE, TerminationReason.UNBOUNDED,
                  TerminationReason.INFEASIBLE_OR_UNBOUNDED):
        return reason, None
    return (TerminationReason.FEASIBLE if has_solution else TerminationReason.NO_SOLUTION_FOUND), Limit.INTERRUPTED


class Backend:
    """One solver adapter. Subclasses import their solver lazily, inside :meth:`solve`."""

    name: str = ""
    capabilities: Capabilities = Capabilities()
    #: Python modules that must be importable
    requires: tuple[str, ...] = ()
    #: the pip extra or package that provides the solver, for error messages
    install_hint: str = ""

    def available(self) -> tuple[bool, str]:
        """Whether the solver can be used here, and why not when it cannot (never imports the solver)."""
        for mod in self.requires:
            if not package_installed(mod):
                return False, f"the Python package {mod!r} is not installed ({self.install_hint})"
        return True, ""

    def version(self) -> str:
        return ""

    def warm_up(self) -> None:
        """Load the solver libraries now, so that first-call costs (imports, JIT, thread pools) stay out of timed
        solves; benchmarks call it before measuring."""
        for mod in self.requires:
            importlib.import_module(mod)

    def known_options(self) -> frozenset[str] | None:
        """The names of the solver options this backend accepts as ``schedopt.solve(..., name=value)``, checked
        before any solve; ``None``: the backend declares none and its options are not checked (third-party
        backends that do not override this)."""
        return None

    def check_options(self, options: Mapping[str, Any]) -> None:
        """Raise :class:`~schedopt.errors.InputError` naming the first option this backend does not know, with the
        closest known names (all of them when there are few) and the escape hatch (``raw_options``)."""
        if not options:  # nothing to check (and no option list to build: about 10 us a solve for mckp's)
            return
        known = self.known_options()
        if known is None:
            return
        for name, value in options.items():
            if name in known:
                continue
            names = sorted(known)
            close = difflib.get_close_matches(name, names, n=5)
            hint = f" (did you mean {', '.join(close)}?)" if close else ""
            listing = ", ".join(names) if len(names) <= 40 else f"{len(names)} options, e.g. {', '.join(close or names[:10])}"
            raise InputError(
                f"options.{name}", value,
                f"is not a {self.name} option{hint}; known: {listing}. Options schedopt does not list go to the "
                "solver unchecked through raw_options={...}",
            )

    def check_model(self, model: LinearModel) -> str | None:
        """Why this backend cannot solve ``model`` (``None`` when it can)."""
        arr = model.to_arrays()
        if arr.is_mip and not self.capabilities.mip:
            return "the model has integer variables and this backend solves LPs only"
        if not arr.is_mip and not self.capabilities.lp:
            return "the model is a pure LP and this backend solves integer models only"
        if self.capabilities.integer_only and not bool(arr.integrality.all()):
            return "every variable must be integer (this backend is a CP solver)"
        return None

    def solve(self, model: LinearModel, params: SolveParams) -> SolveResult:  # pragma: no cover - abstract
        raise NotImplementedError

    def result(
        self,
        model: LinearModel,
        reason: TerminationReason,
        times: tuple[float, float, float],
        *,
        limit: Limit | None = None,
        detail: str = "",
        x: np.ndarray | None = None,
        bound: float | None = None,
        duals: np.ndarray | None = None,
        reduced_costs: np.ndarray | None = None,
        stats: dict[str, Any] | None = None,
    ) -> SolveResult:
        """The one place a backend's outcome becomes a :class:`SolveResult` (through :meth:`SolveResult.create`,
        which checks its invariants).

        ``times`` = (start, solver handed the model, solver returned). The objective is recomputed from ``x`` with
        the model's own coefficients; ``x`` is dropped unless the reason holds a solution. ``bound=None`` means the
        solver gave none: the objective when OPTIMAL, otherwise the trivial bound (``±inf``); an infeasible model's
        bound is always the trivial one of the other side. A solver that says FEASIBLE without handing over a
        solution is reported NO_SOLUTION_FOUND (what is true), and FEASIBLE / NO_SOLUTION_FOUND without a named
        limit gets :attr:`Limit.OTHER`.
        """
        has = x is not None and reason in (TerminationReason.OPTIMAL, TerminationReason.FEASIBLE)
        if reason is TerminationReason.FEASIBLE and not has:
            reason = TerminationReason.NO_SOLUTION_FOUND
        if reason is TerminationReason.OPTIMAL and not has:
            reason, detail = TerminationReason.ERROR, f"{detail} (optimal without a solution)".strip()
        if reason in (TerminationReason.FEASIBLE, TerminationReason.NO_SOLUTION_FOUND) and limit is None:
            limit = Limit.OTHER
        if has and bound is not None and not math.isnan(bound):
            arr = model.to_arrays()
            objv = float(arr.c @ np.asarray(x, dtype=float) + arr.constant)
            wrong = (objv - bound) if arr.maximize else (bound - objv)
            if wrong > bound_tolerance(objv):
                # the solver's bound contradicts its own solution: the solution is kept (the caller may check it),
                # the bound is not trusted, and nothing is called optimal on its strength
                detail = f"{detail} (solver bound {bound!r} contradicts the objective {objv!r}: not trusted)".strip()
                stats = {**(stats or {}), "untrusted_bound": float(bound)}
                bound = None
                if reason is TerminationReason.OPTIMAL:
                    reason, limit = TerminationReason.FEASIBLE, Limit.OTHER
        t0, t1, t2 = times
        return SolveResult.create(
            model,
            Termination(reason, limit, detail),
            backend=self.name,
            x=x if has else None,
            bound=bound,
            duals=duals,
            reduced_costs=reduced_costs,
            timings=Timings(handoff=t1 - t0, solve=t2 - t1),
            backend_version=self.version(),
            stats=stats,
        )
