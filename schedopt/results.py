"""``SolveResult``: what happened in a solve, and the solution if there is one.

Modelled on OR-Tools MathOpt's result contract: a termination reason (with the limit that was hit) is kept apart
from the solution held; the objective bound is always present; reading a solution that does not exist raises
:class:`~schedopt.errors.NoSolutionError` instead of returning something that looks like an answer.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

import numpy as np

from .errors import InfeasibleError, NoSolutionError, ResultInvariantError, SolveFailedError

if TYPE_CHECKING:
    from .model import LinearModel

__all__ = [
    "FEASIBILITY_TOLERANCE",
    "Limit",
    "SolveResult",
    "Termination",
    "TerminationReason",
    "Timings",
    "bound_tolerance",
    "solution_violation",
]


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


_LIMITED = (TerminationReason.FEASIBLE, TerminationReason.NO_SOLUTION_FOUND)


@dataclass(frozen=True)
class Termination:
    """Why a solve ended, checked when built (MathOpt's rule): ``limit`` is set exactly when ``reason`` is FEASIBLE
    or NO_SOLUTION_FOUND."""

    reason: TerminationReason
    limit: Limit | None = None
    detail: str = ""  #: the solver's own status text

    def __post_init__(self) -> None:
        if not isinstance(self.reason, TerminationReason):
            raise ResultInvariantError(f"Termination.reason={self.reason!r}: must be a TerminationReason")
        if self.limit is not None and not isinstance(self.limit, Limit):
            raise ResultInvariantError(f"Termination.limit={self.limit!r}: must be a Limit or None")
        limited = self.reason in _LIMITED
        if limited and self.limit is None:
            raise ResultInvariantError(
                f"Termination({self.reason.value}): a {self.reason.value.upper()} termination needs the limit that was hit"
            )
        if not limited and self.limit is not None:
            raise ResultInvariantError(
                f"Termination({self.reason.value}, limit={self.limit.value}): a limit is set only when the reason is "
                "FEASIBLE or NO_SOLUTION_FOUND"
            )

    @property
    def is_optimal(self) -> bool:
        return self.reason is TerminationReason.OPTIMAL

    def __format__(self, spec: str) -> str:
        """Format specs apply to the printed form (``f"{t:<22}"``), as they did when statuses were strings."""
        return format(str(self), spec)

    def __str__(self) -> str:
        s = self.reason.value.upper()
        if self.limit is not None:
            s += f" ({self.limit.value} limit)"
        if self.detail:
            s += f" [{self.detail}]"
        return s


@dataclass(frozen=True)
class Timings:
    """Seconds spent in each phase: building the model, handing it to the solver, solving, decoding.

    Frozen: derive a changed copy with :meth:`replace` (``t.replace(build=0.1)``) or :meth:`add`."""

    build: float = math.nan
    handoff: float = 0.0
    solve: float = 0.0
    decode: float = 0.0

    @property
    def total(self) -> float:
        return (0.0 if math.isnan(self.build) else self.build) + self.handoff + self.solve + self.decode

    def replace(self, **changes: float) -> Timings:
        """A copy with the given phases set."""
        # the constructor with every phase (what dataclasses.replace does, without its field walk: a solve makes
        # two of these copies); an unknown phase is the constructor's TypeError, as before
        return type(self)(**{**self.as_dict(), **changes})

    def add(self, **extra: float) -> Timings:
        """A copy with the given seconds added to their phases (a NaN build counts as 0)."""
        cur = self.as_dict()
        return type(self)(**{**cur, **{k: (0.0 if math.isnan(cur[k]) else cur[k]) + float(v) for k, v in extra.items()}})

    def as_dict(self) -> dict[str, float]:
        return {"build": self.build, "handoff": self.handoff, "solve": self.solve, "decode": self.decode}


_HAS_SOLUTION = (TerminationReason.OPTIMAL, TerminationReason.FEASIBLE)
_INFEASIBLE = (TerminationReason.INFEASIBLE, TerminationReason.INFEASIBLE_OR_UNBOUNDED)


def bound_tolerance(objective: float) -> float:
    """How far a bound may lie on the wrong side of the objective before the result is refused (solver
    feasibility and rounding tolerances): ``1e-6 * max(1, |objective|)``."""
    return 1e-6 * max(1.0, abs(objective))


#: how far a solver's solution may violate a row, a bound or integrality before it is refused, relative to the
#: row's magnitude ``max(1, sum_j |a_ij x_j|)`` (or the column's ``max(1, |x_j|)``; integrality: absolute 1e-5)
FEASIBILITY_TOLERANCE = 1e-6
_INTEGRALITY_TOLERANCE = 1e-5


def solution_violation(arrays: Any, x: np.ndarray, tol: float = FEASIBILITY_TOLERANCE) -> str | None:
    """Why ``x`` is not a solution of the model in array form ``arrays`` (a :class:`~schedopt.model.ModelArrays`),
    or ``None``: the worst row, bound or integrality violation beyond ``tol`` scaled by the row's magnitude
    ``max(1, |A| @ |x|)`` (the column's ``max(1, |x_j|)``; an integer column's bound by at most 0.5, so an integer
    one unit past its bound is a violation at any magnitude), and any non-finite value. Vectorized: one ``A @ x``
    and one ``|A| @ |x|``."""
    x = np.asarray(x, dtype=np.float64)
    if x.shape != (arrays.num_cols,):
        return f"the solution has shape {x.shape}, the model {arrays.num_cols} columns"
    if not np.isfinite(x).all():
        j = int(np.flatnonzero(~np.isfinite(x))[0])
        return f"column {j} = {x[j]!r} is not finite"
    ax = np.abs(x)
    if arrays.num_rows:
        # (a ModelArrays computes A @ x and |A| @ |x| itself: the Sia round's without making A)
        times = getattr(arrays, "row_activity", None)
        act = arrays.A @ x if times is None else times(x)
        raw = np.maximum(arrays.row_lower - act, act - arrays.row_upper)
        # with tol >= 0, the scaled violation raw / mag (mag >= 1) can exceed tol only where raw does: the
        # magnitudes |A| @ |x| (a new matrix |A|) are computed only then
        if tol < 0 or raw.max() > tol:
            mag = np.maximum(1.0, abs(arrays.A) @ ax if times is None else arrays.row_magnitude(ax))
            over = raw / mag
            i = int(np.argmax(over))
            if over[i] > tol:
                return (f"row {i} has activity {act[i]:.10g} outside [{arrays.row_lower[i]:.10g}, "
                        f"{arrays.row_upper[i]:.10g}] (by {over[i] * mag[i]:.3g}, {over[i]:.3g} of its magnitude)")
    integ = arrays.integrality == 1
    past = np.maximum(arrays.col_lower - x, x - arrays.col_upper)
    # every column's allowance is at least tol when 0 <= tol <= 0.5 (tol * max(1, |x|), or that capped at 0.5 for an
    # integer column): no column past its bounds by more than tol is no violation, and the allowances are not needed
    if past.size and not (0 <= tol <= 0.5 and past.max() <= tol):
        scale = np.maximum(1.0, ax)
        allowed = np.where(integ, np.minimum(tol * scale, 0.5), tol * scale)
        over = past - allowed
        j = int(np.argmax(over))
        if over[j] > 0:
            return (f"column {j} = {x[j]:.17g} outside its bounds [{arrays.col_lower[j]:.17g}, "
                    f"{arrays.col_upper[j]:.17g}]")
    if integ.any():
        frac = np.abs(x - np.round(x))
        if frac.max() > _INTEGRALITY_TOLERANCE:  # (a continuous column's fraction is no violation: looked at again)
            frac = np.where(integ, frac, 0.0)
            j = int(np.argmax(frac))
            if frac[j] > _INTEGRALITY_TOLERANCE:
                return f"integer column {j} = {x[j]:.10g} is fractional"
    return None


@dataclass(frozen=True, eq=False)
class SolveResult:
    """The outcome of :func:`schedopt.solve`: frozen, and checked when built, so it cannot be made to lie later.

    Build one with :meth:`create` (or, in a backend, ``Backend.result()``, which calls it). Invariants checked at
    construction (:class:`~schedopt.errors.ResultInvariantError` otherwise):

    * the termination's own rule (a limit is set exactly when the reason is FEASIBLE or NO_SOLUTION_FOUND);
    * a solution is held exactly when the reason is OPTIMAL or FEASIBLE, and its objective is finite;
    * the bound is never on the wrong side of the held objective (``bound >= objective`` for a maximisation, within
      :func:`bound_tolerance`), so ``gap >= 0`` always; an OPTIMAL result has a bound that is not NaN;
    * an INFEASIBLE result's bound is the trivial one (``-inf`` for a maximisation, ``+inf`` for a minimisation).

    ``objective`` and ``x`` raise :class:`~schedopt.errors.NoSolutionError` when no feasible solution is held;
    ``bound`` (the best proven bound in the model's sense) and ``gap`` are always present (``±inf`` / ``inf``
    when unknown). Changed copies: :meth:`replace`, :meth:`with_timings` (both re-checked).
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

    def __post_init__(self) -> None:
        self._check(copy_x=True)

    def _check(self, *, copy_x: bool) -> None:
        """The invariants (the class docstring); ``copy_x``: take the private read-only copy of ``_x`` (off only
        for :meth:`replace` keeping the checked copy of the result it was made from)."""
        t = self.termination
        if not isinstance(t, Termination):
            raise ResultInvariantError(f"SolveResult.termination={t!r}: must be a Termination")
        if not isinstance(self.timings, Timings):
            raise ResultInvariantError(f"SolveResult.timings={self.timings!r}: must be a Timings")
        holds = t.reason in _HAS_SOLUTION
        if holds and self._x is None:
            raise ResultInvariantError(f"{self.backend}: {t} holds no solution (report NO_SOLUTION_FOUND instead)")
        if not holds and self._x is not None:
            raise ResultInvariantError(f"{self.backend}: {t} cannot hold a solution")
        if self._x is not None:
            if copy_x:
                x = np.array(self._x, dtype=np.float64)  # a private, read-only copy
                x.setflags(write=False)
                object.__setattr__(self, "_x", x)
            if not math.isfinite(self._objective):
                raise ResultInvariantError(f"{self.backend}: {t} with a non-finite objective {self._objective!r}")
        maximize = self.model.maximize if self.model is not None else None
        b = float(self.bound)
        object.__setattr__(self, "bound", b)
        if t.reason is TerminationReason.OPTIMAL and math.isnan(b):
            raise ResultInvariantError(f"{self.backend}: OPTIMAL without a bound")
        if t.reason is TerminationReason.INFEASIBLE and maximize is not None:
            trivial = -math.inf if maximize else math.inf
            if b != trivial:
                raise ResultInvariantError(f"{self.backend}: INFEASIBLE with the bound {b!r} (must be {trivial!r})")
        if holds and maximize is not None and not math.isnan(b):
            wrong = (self._objective - b) if maximize else (b - self._objective)
            if wrong > bound_tolerance(self._objective):
                side = "below" if maximize else "above"
                raise ResultInvariantError(
                    f"{self.backend}: the bound {b!r} lies {side} the objective {self._objective!r} of a "
                    f"{'maximisation' if maximize else 'minimisation'} ({t})"
                )

    # ------------------------------------------------------------ the factory
    @classmethod
    def create(
        cls,
        model: LinearModel,
        termination: Termination,
        *,
        backend: str,
        x: np.ndarray | None = None,
        bound: float | None = None,
        duals: np.ndarray | None = None,
        reduced_costs: np.ndarray | None = None,
        timings: Timings | None = None,
        backend_version: str = "",
        stats: Mapping[str, Any] | None = None,
        params: Mapping[str, Any] | None = None,
        check: bool = True,
    ) -> SolveResult:
        """The one factory: the objective is recomputed from ``x`` with the model's own coefficients; ``x`` is kept
        only when the reason holds a solution. ``bound=None`` (or NaN) means none was proven: the objective when
        OPTIMAL, otherwise the trivial bound (``±inf``). An INFEASIBLE model's bound is always the trivial one of the
        other side; a bound within :func:`bound_tolerance` on the wrong side of the objective is set to the
        objective (solver tolerance), one beyond it is refused.

        The solution is checked before it is trusted (``check``; off only for a copy of an already checked one): an
        OPTIMAL or FEASIBLE claim whose ``x`` violates a row, a bound or integrality beyond
        :data:`FEASIBILITY_TOLERANCE` (:func:`solution_violation`) becomes NUMERICAL_ERROR, with the violation in the
        detail and ``stats["rejected_solution"]``; neither the solution nor the solver's bound is kept."""
        arr = model.to_arrays()
        reason = termination.reason
        has = x is not None and reason in _HAS_SOLUTION
        if has and check:
            why = solution_violation(arr, np.asarray(x, dtype=np.float64))
            if why is not None:
                detail = f"{termination.detail} (solver said {reason.name}, but {why})".strip()
                termination = Termination(TerminationReason.NUMERICAL_ERROR, None, detail)
                stats = {**(stats or {}), "rejected_solution": why}
                reason, has, bound = termination.reason, False, None
        xv = np.asarray(x, dtype=np.float64) if has else None
        objv = float(arr.c @ xv + arr.constant) if xv is not None else math.nan
        if reason is TerminationReason.INFEASIBLE:
            b = -math.inf if arr.maximize else math.inf
        elif bound is None or math.isnan(bound):
            b = objv if reason is TerminationReason.OPTIMAL and has else (math.inf if arr.maximize else -math.inf)
        else:
            b = float(bound)
            if has:
                wrong = (objv - b) if arr.maximize else (b - objv)
                if 0 < wrong <= bound_tolerance(objv):
                    b = objv
        return cls(
            termination=termination,
            backend=backend,
            model=model,
            _x=xv,
            _objective=objv,
            bound=b,
            duals=duals,
            reduced_costs=reduced_costs,
            timings=timings if timings is not None else Timings(),
            backend_version=backend_version,
            stats=dict(stats or {}),
            params=dict(params or {}),
        )

    def replace(self, **changes: Any) -> SolveResult:
        """A changed copy, checked like a new one (``res.replace(backend="cvxpy-glpk")``)."""
        if type(self) is not SolveResult:  # a subclass may check more in its own __post_init__
            return dataclasses.replace(self, **changes)
        unknown = [k for k in changes if k not in _RESULT_FIELDS]
        if unknown:
            raise TypeError(f"SolveResult.replace() got an unexpected keyword argument {unknown[0]!r}")
        # every field copied and the changed ones set, then the same checks as a new result (dataclasses.replace,
        # without its field walk: a solve makes one of these copies); an unchanged solution keeps its private
        # read-only copy instead of being copied again
        out = object.__new__(SolveResult)
        d = out.__dict__
        d.update(self.__dict__)
        d.update(changes)
        out._check(copy_x="_x" in changes)
        return out

    def with_timings(self, **changes: float) -> SolveResult:
        """A copy with the given timing phases set (``res.with_timings(build=0.02)``)."""
        return self.replace(timings=self.timings.replace(**changes))

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

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: termination (reason and limit as enum values), objective and ``x`` (null without a solution),
        bound, gap (numbers or null, never NaN / inf), duals and reduced costs where held, timings, stats."""

        def num(v: Any) -> float | None:
            f = float(v)
            return f if math.isfinite(f) else None

        def vec(a: np.ndarray | None) -> list[float | None] | None:
            return None if a is None else [num(v) for v in np.asarray(a, dtype=float).ravel().tolist()]

        t = self.termination
        return {
            "termination": {"reason": t.reason.value, "limit": t.limit.value if t.limit else None, "detail": t.detail},
            "backend": self.backend,
            "backend_version": self.backend_version or None,
            "objective": num(self._objective) if self.has_solution else None,
            "bound": num(self.bound),
            "gap": num(self.gap),
            "x": vec(self._x) if self.has_solution else None,
            "duals": vec(self.duals),
            "reduced_costs": vec(self.reduced_costs),
            "timings": {k: num(v) for k, v in self.timings.as_dict().items()},
            "stats": {str(k): (v if isinstance(v, (str, bool, int)) or v is None else
                               num(v) if isinstance(v, (float, np.floating, np.integer)) else str(v))
                      for k, v in self.stats.items()},
        }

    def summary(self) -> str:
        obj = f"{self._objective:.10g}" if self.has_solution else "n/a"
        return (
            f"{self.backend}: {self.termination}  objective={obj}  bound={self.bound:.10g}  gap={self.gap:.3g}  "
            f"solve={self.timings.solve:.4f}s handoff={self.timings.handoff:.4f}s"
        )

    def __repr__(self) -> str:
        return f"<SolveResult {self.summary()}>"


_RESULT_FIELDS = frozenset(f.name for f in dataclasses.fields(SolveResult))
