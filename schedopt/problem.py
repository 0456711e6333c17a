"""The contract from spec to answer, shared by every problem package.

One path for every problem (Sia, Synergy, HeterPS, HiveD, Gandiva, POP)::

    spec (frozen, validated)
      -> build(spec) -> Formulation          # the LinearModel + a typed inverse map + the structure tag
      -> schedopt.solve(formulation, ...)    # the only dispatcher -> SolveResult
      -> decode(formulation, result) -> Answer

* :class:`Formulation` carries what cvxpy calls inverse data: the map from model columns back to the user's ids,
  typed (a frozen dataclass of the problem's own), never a string-keyed side channel on the model.
* :class:`Answer` is the base of every problem's answer. It carries the core :class:`~schedopt.Termination`
  (reason, limit, detail), the objective and bound where they exist, the timings, and one rule for failure:
  ``answer.raise_for_status()`` raises unless the answer is usable, and reading a solution that does not exist
  raises :class:`~schedopt.errors.NoSolutionError`. Heuristic answers (no proof of optimality) end FEASIBLE with
  the limit :attr:`~schedopt.Limit.HEURISTIC`: nothing claims "optimal" it did not prove.
* Checkers follow one convention: ``check_*(...) -> list[Violation]`` (a field path and a message each, empty when
  valid) and ``assert_*(...)``, which raises :class:`ViolationError` listing them.
* :class:`ProblemIO` is the typed protocol the command line, the benchmark harness and the simulator use; problem
  packages register through the ``schedopt.problems`` entry point group (see ``pyproject.toml``), read by
  :func:`problems`.
"""

from __future__ import annotations

import dataclasses
import enum
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

import numpy as np

from .errors import InfeasibleError, InputError, NoSolutionError, SchedoptError, SolveFailedError
from .model import LinearModel
from .params import SolveParams
from .results import Limit, SolveResult, Termination, TerminationReason, Timings
from .structure import Structure

__all__ = [
    "Answer",
    "Formulation",
    "ProblemIO",
    "SolveOptions",
    "Structure",
    "Violation",
    "ViolationError",
    "assert_valid",
    "checked_options",
    "get_problem",
    "heuristic_termination",
    "problem_names",
    "problems",
    "to_jsonable",
    "unregister_problem",
]

Inv = TypeVar("Inv")


@dataclass(frozen=True, eq=False)
class Formulation(Generic[Inv]):
    """A built model and its typed inverse map.

    ``model`` is the :class:`~schedopt.LinearModel`; ``inverse`` is the problem's own frozen dataclass that maps a
    solution back to the user's ids (for Sia: the valid-pair table); ``structure`` is a typed tag solvers may use.
    """

    model: LinearModel
    inverse: Inv
    structure: Structure = Structure.GENERAL
    problem: str = ""

    @property
    def name(self) -> str:
        return self.model.name


@dataclass(frozen=True)
class SolveOptions:
    """What a user can ask of any solve, in one typed place (the CLI, the harness and the simulator pass this).

    Validated once, when built: the solver parameters become :attr:`params`, a
    :class:`~schedopt.params.SolveParams` (a bad value raises :class:`~schedopt.errors.InputError` naming the
    field), which ``schedopt.solve(model, options=...)`` hands to the backend as it is. ``options`` are the
    backend's own options (checked against the names the backend knows), ``raw_options`` go to the solver
    unchecked."""

    backend: str | None = None
    time_limit: float | None = None
    mip_rel_gap: float | None = 1e-6
    threads: int = 1
    seed: int = 0
    verbose: bool = False
    method: str | None = None  #: a problem's method name (Synergy ``tune``, HeterPS ``dp``, ...); None: its default
    options: Mapping[str, Any] = field(default_factory=dict)  #: backend-specific options, checked by the backend
    raw_options: Mapping[str, Any] = field(default_factory=dict)  #: passed to the solver verbatim
    #: the validated solver parameters (built from the fields above)
    params: SolveParams = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.backend is not None and not isinstance(self.backend, str):
            raise InputError("backend", self.backend, "must be a backend name or None")
        if self.method is not None and not isinstance(self.method, str):
            raise InputError("method", self.method, "must be a method name or None")
        object.__setattr__(self, "params", SolveParams(
            time_limit=self.time_limit, mip_rel_gap=self.mip_rel_gap, threads=self.threads, seed=self.seed,
            verbose=self.verbose, options=self.options, raw_options=self.raw_options))

    def solve_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for :func:`schedopt.solve` (without the backend); prefer
        ``schedopt.solve(model, options=self)``, which passes the typed :attr:`params` instead."""
        p = self.params
        out: dict[str, Any] = {"time_limit": p.time_limit, "mip_rel_gap": p.mip_rel_gap, "threads": p.threads,
                               "seed": p.seed, "verbose": p.verbose, **p.options}
        if p.raw_options:
            out["raw_options"] = dict(p.raw_options)
        return out


def checked_options(options: SolveOptions | None, methods: Sequence[str]) -> SolveOptions:
    """``options`` (None: the defaults) checked for a problem whose methods are ``methods``: a named error for
    anything but a :class:`SolveOptions`, or a method the problem does not have."""
    opts = options if options is not None else SolveOptions()
    if not isinstance(opts, SolveOptions):
        raise InputError("options", type(opts).__name__, "must be a schedopt.problem.SolveOptions")
    if opts.method is not None and opts.method not in methods:
        raise InputError("options.method", opts.method, f"must be one of {', '.join(methods)}")
    return opts


def heuristic_termination(detail: str = "heuristic: no optimality proof") -> Termination:
    """The termination of an answer found without a proof of optimality (a greedy rule, a rounding)."""
    return Termination(TerminationReason.FEASIBLE, Limit.HEURISTIC, detail)


_HAS_SOLUTION = (TerminationReason.OPTIMAL, TerminationReason.FEASIBLE)


@dataclass(kw_only=True, eq=False)
class Answer:
    """The base of every problem's answer.

    ``termination`` says how it ended (for a heuristic: FEASIBLE with :attr:`Limit.HEURISTIC`); ``objective``
    raises :class:`NoSolutionError` when no solution is held; ``bound`` is the best proven bound in the objective's
    sense (``nan`` when the method proves none); ``result`` is the underlying :class:`SolveResult` when a model was
    solved. Subclasses add their domain fields (allocation, placement, ...).
    """

    termination: Termination
    objective_value: float = math.nan
    bound: float = math.nan
    backend: str = ""
    method: str = ""
    timings: Timings = field(default_factory=Timings)
    result: SolveResult | None = None

    @property
    def status(self) -> TerminationReason:
        return self.termination.reason

    @property
    def has_solution(self) -> bool:
        return self.termination.reason in _HAS_SOLUTION

    @property
    def is_optimal(self) -> bool:
        return self.termination.reason is TerminationReason.OPTIMAL

    def require_solution(self) -> None:
        """Raise :class:`NoSolutionError` unless a solution is held."""
        if not self.has_solution:
            who = f"{self.method or type(self).__name__}" + (f" ({self.backend})" if self.backend else "")
            raise NoSolutionError(f"no solution is held: {who} ended {self.termination}")

    @property
    def objective(self) -> float:
        self.require_solution()
        return self.objective_value

    @property
    def gap(self) -> float:
        """Relative gap between objective and bound; 0 when proven optimal, inf when unknown."""
        if not self.has_solution:
            return math.inf
        if self.is_optimal:
            return 0.0
        if not (math.isfinite(self.bound) and math.isfinite(self.objective_value)):
            return math.inf
        diff = abs(self.objective_value - self.bound)
        if diff <= 1e-9 * max(1.0, abs(self.objective_value)):
            return 0.0
        return diff / max(abs(self.objective_value), 1e-10)

    def raise_for_status(self, allow_feasible: bool = True) -> Answer:
        """Return self when usable (OPTIMAL, or FEASIBLE unless ``allow_feasible=False``); raise otherwise:
        :class:`InfeasibleError` for an infeasible problem, :class:`SolveFailedError` for anything else."""
        r = self.termination.reason
        if r is TerminationReason.OPTIMAL or (allow_feasible and r is TerminationReason.FEASIBLE):
            return self
        if r in (TerminationReason.INFEASIBLE, TerminationReason.INFEASIBLE_OR_UNBOUNDED):
            raise InfeasibleError(f"{self.method or type(self).__name__}: {self.termination}", self.result)
        raise SolveFailedError(f"{self.method or type(self).__name__}: ended {self.termination}", self.result)

    def rows(self) -> list[dict[str, Any]]:
        """One flat dict per allocated item, for the command line's table (subclasses override)."""
        return []

    def to_dataframe(self) -> Any:
        """:meth:`rows` as a ``pandas.DataFrame``, one row per allocated item (job, stage, ...), columns in the rows'
        order; the table's placeholder ``"-"`` (nothing allocated) becomes a missing value. An answer without rows
        gives an empty frame. Needs pandas (``pip install pandas``, or the ``schedopt[pandas]`` extra): without it,
        raises ``ImportError`` saying so."""
        try:
            import pandas as pd
        except ImportError:
            raise ImportError(f"{type(self).__name__}.to_dataframe() needs pandas, which is not installed: "
                              "pip install pandas (or pip install -e '.[pandas]' from a checkout)") from None
        rows = [{k: (None if isinstance(v, str) and v == "-" else v) for k, v in r.items()} for r in self.rows()]
        columns: dict[str, None] = {}
        for r in rows:
            columns.update(dict.fromkeys(r))
        return pd.DataFrame.from_records(rows, columns=list(columns))

    def to_dict(self) -> dict[str, Any]:
        """The common fields as JSON-ready values (numbers or null; the reason and limit as enum values).
        Subclasses extend it with their structured allocation."""
        t = self.termination
        return {
            "termination": {"reason": t.reason.value, "limit": t.limit.value if t.limit else None, "detail": t.detail},
            "method": self.method or None,
            "backend": self.backend or None,
            "objective": _num(self.objective_value) if self.has_solution else None,
            "bound": _num(self.bound),
            "gap": _num(self.gap),
            "timings": {k: _num(v) for k, v in self.timings.as_dict().items()},
        }


def _num(v: Any) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def to_jsonable(obj: Any) -> Any:
    """``obj`` as plain JSON values: enums by value, numpy scalars and arrays as numbers and lists, non-finite
    floats as ``None``, dataclasses and objects with ``to_dict()`` through it, tuples and sets as lists."""
    if obj is None or isinstance(obj, (bool, str)):
        return obj
    if isinstance(obj, enum.Enum):
        return to_jsonable(obj.value)
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        return _num(obj)
    if isinstance(obj, np.ndarray):
        return [to_jsonable(v) for v in obj.tolist()]
    if hasattr(obj, "to_dict") and callable(obj.to_dict):
        return to_jsonable(obj.to_dict())
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj) if not f.name.startswith("_")}
    if isinstance(obj, Mapping):
        return {str(to_jsonable(k)) if not isinstance(k, str) else k: to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set, frozenset)):
        items = sorted(obj, key=repr) if isinstance(obj, (set, frozenset)) else obj
        return [to_jsonable(v) for v in items]
    return str(obj)


# ------------------------------------------------------------------ checkers
@dataclass(frozen=True)
class Violation:
    """One problem found by a checker: ``path`` names the place (``jobs[j3].config``, ``nodes[2].cpus``)."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


class ViolationError(SchedoptError):
    """Raised by the ``assert_*`` checkers; ``violations`` lists every problem found."""

    def __init__(self, what: str, violations: Sequence[Violation]) -> None:
        self.violations = list(violations)
        head = "; ".join(str(v) for v in self.violations[:5])
        more = f" (+{len(self.violations) - 5} more)" if len(self.violations) > 5 else ""
        super().__init__(f"{what}: {len(self.violations)} violation(s): {head}{more}")


def assert_valid(violations: Iterable[Violation], what: str = "answer") -> None:
    """Raise :class:`ViolationError` when ``violations`` is not empty."""
    vs = list(violations)
    if vs:
        raise ViolationError(what, vs)


# ------------------------------------------------------------------ the problem protocol
class Generator(Protocol):
    def __call__(self, gpus: int, seed: int, **params: Any) -> Any: ...


@dataclass(frozen=True)
class ProblemIO:
    """How one problem reads, writes, generates, builds, solves, decodes, checks and explains its instances.

    Every hook is typed; the command line, the benchmark harness and the simulator call them directly:

    * ``to_data(spec) -> dict`` / ``from_data(dict) -> spec`` (the ``data`` of a versioned instance file),
    * ``generate(gpus, seed, **params) -> spec`` (the seed, ``0 <= seed < 2**32``, draws the instance's jobs, sizes
      and profiles: the same seed and parameters, the same instance; docs/reference/seeds.md),
    * ``solve(spec, options: SolveOptions) -> Answer`` (``options.method`` picks a method; None: the default),
    * ``build(spec) -> Formulation`` and ``decode(spec, formulation, result) -> Answer`` where the problem is one
      model (``None`` where the answer is not one model's solution),
    * ``check(spec, answer) -> list[Violation]`` (the independent checker),
    * ``explain(spec) -> str`` (which constraint groups make it infeasible),
    * ``size(spec) -> (gpus, jobs)`` for records,
    * ``methods``: the method names ``solve`` accepts, the first being the default,
    * ``backend_methods``: the methods that solve with a solver backend (``None``: not declared); the benchmark
      harness refuses a backend given with any other method rather than record a backend that did not run,
    * ``bench_specs() -> [schedopt.bench.BenchSpec, ...]``: the benchmark specs the package ships, richer than the
      harness's generic ProblemIO route (imported when the harness asks, so the core names no harness type).
    """

    name: str
    cls: type
    to_data: Callable[[Any], dict[str, Any]]
    from_data: Callable[[dict[str, Any]], Any]
    solve: Callable[[Any, SolveOptions], Answer] | None = None
    explain: Callable[[Any], str] | None = None
    generate: Generator | None = None
    build: Callable[[Any], Formulation[Any]] | None = None
    decode: Callable[[Any, Formulation[Any], SolveResult], Answer] | None = None
    check: Callable[[Any, Answer], list[Violation]] | None = None
    size: Callable[[Any], tuple[int, int]] | None = None
    methods: tuple[str, ...] = ()
    backend_methods: tuple[str, ...] | None = None
    bench_specs: Callable[[], Sequence[Any]] | None = None


ENTRY_POINT_GROUP = "schedopt.problems"
_PROBLEMS: dict[str, ProblemIO] = {}
_LOADED = False


def register_problem(io: ProblemIO) -> ProblemIO:
    """Register a problem (packages outside schedopt may call this, or declare a ``schedopt.problems`` entry point
    naming their :class:`ProblemIO`)."""
    if not isinstance(io, ProblemIO):
        raise InputError("io", type(io).__name__, "must be a schedopt.problem.ProblemIO")
    _PROBLEMS[io.name] = io
    return io


def unregister_problem(name: str) -> None:
    """Remove a problem registered by hand (tests, plug-ins); entry-point problems return on the next process."""
    _PROBLEMS.pop(name, None)


def problems() -> dict[str, ProblemIO]:
    """Every registered problem: the ``schedopt.problems`` entry points (loaded once) and any registered by hand.

    Examples
    --------
    >>> from schedopt.problem import problems
    >>> problems()["sia"].name, "pollux" in problems()
    ('sia', True)
    """
    global _LOADED
    if not _LOADED:
        from importlib.metadata import entry_points

        from .plugins import PluginError, load_entry_point

        for ep in entry_points(group=ENTRY_POINT_GROUP):
            if ep.name not in _PROBLEMS:
                obj = load_entry_point(ep)  # a broken plug-in: PluginError naming it (every call, until fixed)
                try:
                    register_problem(obj)
                except InputError as exc:
                    raise PluginError(ep.group, ep.name, f"the plug-in {ep.name!r} ({ep.value}) is not a "
                                      f"schedopt.problem.ProblemIO: {exc.message}") from None
        _LOADED = True
    return dict(_PROBLEMS)


def problem_names() -> list[str]:
    """The names of every problem :func:`problems` would give (the entry points' names and those registered by
    hand), without importing any problem package (what ``schedopt generate --help`` lists)."""
    from importlib.metadata import entry_points

    names = [ep.name for ep in entry_points(group=ENTRY_POINT_GROUP)]
    return list(dict.fromkeys([*names, *_PROBLEMS]))


def get_problem(name: str) -> ProblemIO:
    """The registered problem ``name`` (``sia``, ``synergy``, ...); an unknown name is an ``InputError`` listing the
    known ones.

    Examples
    --------
    >>> from schedopt.problem import get_problem
    >>> io = get_problem("heterps")
    >>> inst = io.generate(8, 0)
    >>> io.solve(inst).termination.reason.value
    'optimal'
    """
    probs = problems()
    if name not in probs:
        raise InputError("problem", name, f"must be one of {sorted(probs)}")
    return probs[name]


def problem_of(spec: Any) -> ProblemIO:
    """The registered problem whose spec type ``spec`` is."""
    for io in problems().values():
        if isinstance(spec, io.cls):
            return io
    raise InputError("instance", type(spec).__name__, f"is no registered problem type ({', '.join(sorted(_PROBLEMS))})")
