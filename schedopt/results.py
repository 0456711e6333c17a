"""``SolveResult``: what happened in a solve, and the solution if there is one.

Modelled on OR-Tools MathOpt's result contract: a termination reason (with the limit that was hit) is kept apart
from the solution held; the objective bound is always present; reading a solution that does not exist raises
:class:`~schedopt.errors.NoSolutionError` instead of returning something that looks like an answer.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

import numpy as np

from .errors import InfeasibleError, NoSolutionError, SolveFailedError

if TYPE_CHECKING:
    from .model import LinearModel

__all__ = ["Limit", "SolveResult", "Termination", "TerminationReason", "Timings"]


class TerminationReason(StrEnum):
    """Why a solve stopped."""

    OPTIMAL = "optimal"  #: proven optimal within the requested gap
    FEASIBLE = "feasible"  #: a limit was hit; an incumbent is held
    NO_SOLUTION_FOUND = "no_solution_found"  #: a limit was hit before any feasible solution
    INFEASIBLE = "infeasible"
    UNBOUNDED = "unbounded"
    INFEASIBLE_OR_UNBOUNDED = "infeasible_or_unbounded"
    NUMERICAL_ERROR = "numerical_error"
    ERROR = "error"


class Limit(StrEnum):
    """The limit hit when the reason is FEASIBLE or NO_SOLUTION_FOUND."""

    TIME = "time"
    ITERATION = "iteration"
    NODE = "node"
    SOLUTION = "solution"
    INTERRUPTED = "interrupted"
    #: the method stops without a proof of optimality (a greedy rule, a rounding): the answer is feasible only
    HEURISTIC = "heuristic"
    OTHER = "other"


@dataclass(frozen=True)
class Termination:
    reason: TerminationReason
    limit: Limit | None = None
    detail: str = ""  #: the solver's own status text

    @property
    def is_optimal(self) -> bool:
        return self.reason is TerminationReason.OPTIMAL

    def __str__(self) -> str:
        s = self.reason.value.upper()
        if self.limit is not None:
            s += f" ({self.limit.value} limit)"
        if self.detail:
            s += f" [{self.detail}]"
        return s


@dataclass
class Timings:
    """Seconds spent in each phase: building the model, handing it to the solver, solving, decoding."""

    build: float = math.nan
    handoff: float = 0.0
    solve: float = 0.0
    decode: float = 0.0

    @property
    def total(self) -> float:
        return (0.0 if math.isnan(self.build) else self.build) + self.handoff + self.solve + self.decode

    def as_dict(self) -> dict[str, float]:
        return {"build": self.build, "handoff": self.handoff, "solve": self.solve, "decode": self.decode}


_HAS_SOLUTION = (TerminationReason.OPTIMAL, TerminationReason.FEASIBLE)


@dataclass
class SolveResult:
    """The outcome of :func:`schedopt.solve`.

    ``objective`` and ``x`` raise :class:`~schedopt.errors.NoSolutionError` when no feasible solution is held;
    ``bound`` (the best proven bound in the model's sense) and ``gap`` are always present (``±inf`` / ``inf``
    when unknown).
    """

    termination: Termination
    backend: str
    model: LinearModel | None = None
    _x: np.ndarray | None = None
    _objective: float = math.nan
    bound: float = math.nan
    duals: np.ndarray | None = None  #: d(objective)/d(active row bound), LP only
    reduced_costs: np.ndarray | None = None
    timings: Timings = field(default_factory=Timings)
    backend_version: str = ""
    stats: dict[str, Any] = field(default_factory=dict)  #: nodes, iterations, solver-specific figures
    params: dict[str, Any] = field(default_factory=dict)

    # ------------------------------------------------------------ accessors
    @property
    def status(self) -> TerminationReason:
        return self.termination.reason

    @property
    def has_solution(self) -> bool:
        return self._x is not None and self.termination.reason in _HAS_SOLUTION

    def _need_solution(self) -> None:
        if not self.has_solution:
            raise NoSolutionError(
                f"no feasible solution is held: the {self.backend!r} solve ended {self.termination}"
            )

    @property
    def x(self) -> np.ndarray:
        """The full column vector of the held solution."""
        self._need_solution()
        assert self._x is not None
        return self._x

    @property
    def objective(self) -> float:
        """Objective of the held solution (constant included)."""
        self._need_solution()
        return self._objective

    @property
    def objective_or_nan(self) -> float:
        return self._objective if self.has_solution else math.nan

    @property
    def values(self) -> Mapping[str, np.ndarray]:
        """The held solution per variable block, shaped like the block: ``res.values["x"]``."""
        self._need_solution()
        if self.model is None:
            return {"x": self.x}
        x = self.x
        return {b.name: x[b.start : b.stop].reshape(b.shape) for b in self.model.blocks.values()}

    @property
    def gap(self) -> float:
        """Relative gap ``|objective - bound| / max(|objective|, 1e-10)``; 0 when proven optimal, inf when unknown."""
        if not self.has_solution or not math.isfinite(self.bound):
            return 0.0 if self.termination.reason is TerminationReason.OPTIMAL and self.has_solution else math.inf
        diff = abs(self._objective - self.bound)
        if diff <= 1e-9 * max(1.0, abs(self._objective)):
            return 0.0
        return diff / max(abs(self._objective), 1e-10)

    def raise_for_status(self, allow_feasible: bool = False) -> SolveResult:
        """Raise unless the solve is OPTIMAL (or FEASIBLE with ``allow_feasible``); return self otherwise."""
        r = self.termination.reason
        if r is TerminationReason.OPTIMAL or (allow_feasible and r is TerminationReason.FEASIBLE):
            return self
        if r in (TerminationReason.INFEASIBLE, TerminationReason.INFEASIBLE_OR_UNBOUNDED):
            raise InfeasibleError(
                f"{self.backend}: the model is {r.value.replace('_', ' ')}; "
                "schedopt.explain_infeasibility(model) names the constraint families to blame",
                self,
            )
        raise SolveFailedError(f"{self.backend}: the solve ended {self.termination}", self)

    def summary(self) -> str:
        obj = f"{self._objective:.10g}" if self.has_solution else "n/a"
        return (
            f"{self.backend}: {self.termination}  objective={obj}  bound={self.bound:.10g}  gap={self.gap:.3g}  "
            f"solve={self.timings.solve:.4f}s handoff={self.timings.handoff:.4f}s"
        )

    def __repr__(self) -> str:
        return f"<SolveResult {self.summary()}>"
