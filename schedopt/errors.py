"""The schedopt error hierarchy.

Every error raised on purpose by schedopt derives from :class:`SchedoptError`. Errors about bad input
are raised before any solve and name the offending field and value.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "BackendCapabilityError",
    "BackendError",
    "BackendUnavailableError",
    "InfeasibleError",
    "InputError",
    "NoSolutionError",
    "ResultInvariantError",
    "SchedoptError",
    "SolveFailedError",
    "StructureError",
    "short_repr",
]


def short_repr(value: Any, limit: int = 80) -> str:
    """``repr(value)`` cut to ``limit`` characters (``...`` at the end): how an error message shows a bad value."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _rebuild(cls: type[BaseException], args: tuple[Any, ...], state: dict[str, Any]) -> BaseException:
    err = cls.__new__(cls, *args)
    err.args = args
    err.__dict__.update(state)
    return err


class SchedoptError(Exception):
    """Base class of every error schedopt raises on purpose.

    Every subclass pickles (a worker process's error reaches the parent whole, with its fields), whatever its
    ``__init__`` takes: the error is rebuilt from its ``args`` and attributes without calling ``__init__`` again.
    """

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (type(self), self.args, dict(self.__dict__)))


class InputError(SchedoptError, ValueError):
    """Bad input: names the field and the offending value.

    >>> raise InputError("col_lower", -1.0, "must be <= col_upper")  # doctest: +SKIP
    """

    def __init__(self, field: str, value: Any, message: str) -> None:
        self.field = field
        self.value = value
        self.message = message
        super().__init__(f"{field}={short_repr(value)}: {message}")


class BackendError(SchedoptError):
    """Something about a solver backend."""


class BackendUnavailableError(BackendError, ImportError):
    """The backend is unknown or its solver package is not installed."""

    def __init__(self, backend: str, reason: str) -> None:
        self.backend = backend
        self.reason = reason
        super().__init__(f"backend {backend!r} is not available: {reason}")


class BackendCapabilityError(BackendError):
    """The backend cannot solve this kind of model (e.g. CP-SAT and continuous variables)."""

    def __init__(self, backend: str, reason: str) -> None:
        self.backend = backend
        self.reason = reason
        super().__init__(f"backend {backend!r} cannot solve this model: {reason}")


class NoSolutionError(SchedoptError, LookupError):
    """A solution was read from a result that holds none."""


class SolveFailedError(SchedoptError):
    """Raised by ``SolveResult.raise_for_status`` when the solve did not reach the requested status."""

    def __init__(self, message: str, result: Any = None) -> None:
        self.result = result
        super().__init__(message)


class InfeasibleError(SolveFailedError):
    """The model (or a problem's forced part) is infeasible; ``explanation`` names the constraint groups."""

    def __init__(self, message: str, result: Any = None, explanation: Any = None) -> None:
        self.explanation = explanation
        super().__init__(message, result)


class StructureError(SchedoptError):
    """A model does not have the structure a specialised backend or algorithm needs."""


class ResultInvariantError(SchedoptError):
    """A :class:`~schedopt.SolveResult` or :class:`~schedopt.Termination` was built inconsistent (a limit without a
    FEASIBLE / NO_SOLUTION_FOUND reason, a bound on the wrong side of the objective, a solution where the reason
    holds none, ...): a defect in the backend or code that built it, refused rather than reported."""
