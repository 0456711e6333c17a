"""``schedopt.solve``: one entry point for every backend (the only dispatcher).

The registry of backends is imported inside the functions: the core modules (model, results, solve, problem,
infeasibility) import no backend at module level.
"""

from __future__ import annotations

import logging
import time
import warnings
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from .errors import BackendCapabilityError, InputError
from .model import LinearModel
from .params import MAX_SEED, MAX_THREADS, NO_LIMIT_SECONDS, SolveParams
from .problem import Formulation, SolveOptions, Structure
from .results import SolveResult, Termination, TerminationReason, Timings

if TYPE_CHECKING:
    from .backends.base import Backend

__all__ = ["MAX_SEED", "MAX_THREADS", "NO_LIMIT_SECONDS", "default_backend", "solve"]

log = logging.getLogger("schedopt")

def _structure_of(model: LinearModel, structure: Structure | None = None) -> Structure:
    """The structure tag: the given one (a Formulation's), else ``model.structure``, else the legacy
    ``model.meta["structure"]`` string (deprecated)."""
    if structure is not None and structure is not Structure.GENERAL:
        return structure
    if model.structure is not Structure.GENERAL:
        return model.structure
    legacy = model.meta.get("structure")
    if legacy == Structure.MCKP.value:
        warnings.warn(
            'model.meta["structure"] = "mckp" is deprecated: set model.structure = schedopt.problem.Structure.MCKP '
            "(or return a Formulation with that structure)",
            DeprecationWarning,
            stacklevel=3,
        )
        return Structure.MCKP
    return Structure.GENERAL


def default_backend(model: LinearModel | Formulation[Any] | Structure) -> str:
    """The backend schedopt picks (the one place that decides): the structure-exploiting ``mckp`` solver when the
    model (or formulation, or the structure itself) is tagged :attr:`Structure.MCKP <schedopt.problem.Structure.MCKP>`
    and that backend is installed, HiGHS otherwise."""
    from .backends import registered_backends

    if isinstance(model, Structure):
        structure = model
    elif isinstance(model, Formulation):
        structure = _structure_of(model.model, model.structure)
    elif isinstance(model, LinearModel):
        structure = _structure_of(model)
    else:
        raise InputError("model", type(model).__name__, "must be a schedopt.LinearModel, a Formulation or a Structure")
    if structure is Structure.MCKP:
        b = registered_backends().get("mckp")  # (what "mckp" in available_backends() says, without the others)
        if b is not None and b.available()[0]:
            return "mckp"
    return "highs"


#: the keyword defaults of :func:`solve` (``options=`` excludes giving any of them a different value)
_KEYWORD_DEFAULTS: dict[str, Any] = {"time_limit": None, "mip_rel_gap": 1e-6, "threads": 1, "seed": 0,
                                     "verbose": False, "raw_options": None}


def solve(
    model: LinearModel | Formulation[Any],
    backend: str | None = None,
    *,
    options: SolveOptions | SolveParams | None = None,
    time_limit: float | None = None,
    mip_rel_gap: float | None = 1e-6,
    threads: int = 1,
    seed: int = 0,
    warm_start: Any = None,
    verbose: bool = False,
    raw_options: Mapping[str, Any] | None = None,
    **backend_options: Any,
) -> SolveResult:
    """Solve ``model`` (a :class:`LinearModel` or a :class:`~schedopt.problem.Formulation`, whose model and
    structure tag are used) with ``backend`` (``None``: ``options.backend``, else :func:`default_backend`).

    The parameters come either typed, as ``options`` (a :class:`~schedopt.problem.SolveOptions`, what the command
    line and the problem packages pass, or a :class:`~schedopt.params.SolveParams`), or as the keywords
    ``time_limit``, ``mip_rel_gap``, ... (which build a ``SolveParams``); not both. Either way one validated
    ``SolveParams`` reaches the backend.

    Never raises for infeasible, unbounded or a hit limit: read ``result.termination`` or call
    ``result.raise_for_status()``. Raises :class:`~schedopt.errors.InputError` for bad parameters and
    :class:`~schedopt.errors.BackendUnavailableError` / :class:`~schedopt.errors.BackendCapabilityError` when the
    backend is missing or cannot solve this kind of model, all before any solve.

    ``backend_options`` are checked against what the backend knows (an unknown name is an ``InputError`` naming it
    and listing the known ones); ``raw_options`` go to the solver verbatim, unchecked (the escape hatch for options
    schedopt does not list).

    Examples
    --------
    >>> import schedopt
    >>> m = schedopt.LinearModel("knapsack", sense="maximize")
    >>> x = m.add_variables("x", 4, kind="binary", labels=list("abcd"))
    >>> m.add_constraints("weight", {"x": [[2, 3, 4, 5]]}, upper=7, labels=["w"])
    ConstraintFamily(name='weight', start=0, size=1, labels=('w',))
    >>> m.set_objective({"x": [3, 4, 5, 6]})
    >>> res = schedopt.solve(m, backend="highs", time_limit=10)
    >>> res.termination.reason, res.objective, res.bound, res.values["x"].tolist()
    (<TerminationReason.OPTIMAL: 'optimal'>, 9.0, 9.0, [0.0, 1.0, 1.0, 0.0])

    Another backend, same model (``schedopt.available_backends()`` lists what is installed):

    >>> schedopt.solve(m, backend="scipy").objective
    9.0
    """
    from .backends import get_backend

    if isinstance(model, Formulation):
        structure: Structure | None = model.structure
        model = model.model
        if not isinstance(model, LinearModel):
            raise InputError("formulation.model", type(model).__name__, "must be a schedopt.LinearModel")
    elif isinstance(model, LinearModel):
        structure = None
    else:
        raise InputError("model", type(model).__name__, "must be a schedopt.LinearModel or a Formulation")
    if options is None:
        if raw_options is not None and not isinstance(raw_options, Mapping):
            raise InputError("raw_options", raw_options, "must be a mapping of solver option names to values")
        params = SolveParams(time_limit=time_limit, mip_rel_gap=mip_rel_gap, threads=threads, seed=seed,
                             verbose=verbose, options=backend_options, raw_options=raw_options or {})
    else:
        given = {"time_limit": time_limit, "mip_rel_gap": mip_rel_gap, "threads": threads, "seed": seed,
                 "verbose": verbose, "raw_options": raw_options}
        both = sorted([k for k, v in given.items() if v != _KEYWORD_DEFAULTS[k]] + list(backend_options))
        if both:
            raise InputError("options", both, "give the solve parameters either as options=... or as keywords, "
                             "not both")
        if isinstance(options, SolveOptions):
            params = options.params
            if backend is None:
                backend = options.backend
        elif isinstance(options, SolveParams):
            params = options
        else:
            raise InputError("options", type(options).__name__,
                             "must be a schedopt.SolveOptions or a schedopt.params.SolveParams")
    name = default_backend(_structure_of(model, structure)) if backend is None else backend
    if not isinstance(name, str):
        raise InputError("backend", backend, "must be a backend name (see schedopt.available_backends())")
    b: Backend = get_backend(name)
    if model.num_cols == 0:
        return empty_model_result(model, name)
    why = b.check_model(model)
    if why:
        raise BackendCapabilityError(name, why)
    b.check_options(params.options)
    ws: np.ndarray | None = None
    if warm_start is not None:
        if not b.capabilities.warm_start:
            raise BackendCapabilityError(name, "it takes no warm start")
        try:
            ws = np.asarray(warm_start, dtype=float)
        except (TypeError, ValueError):
            raise InputError("warm_start", warm_start, "must be numbers, one per column") from None
        if ws.shape != (model.num_cols,):
            raise InputError("warm_start", ws.shape, f"needs one value per column ({model.num_cols})")
        if not np.isfinite(ws).all():
            raise InputError("warm_start", "non-finite", "values must be finite")
    call = params.for_call(warm_start=ws, sub_solve=solve)
    t0 = time.perf_counter()
    arr = model.to_arrays()
    t_arrays = time.perf_counter() - t0
    res = b.solve(model, call)
    changes: dict[str, Any] = {}
    if res.has_solution:
        # integer columns within the solver's feasibility tolerance are reported as exact integers
        integ = arr.integrality == 1
        if integ.any():
            xi = res.x[integ]
            r = np.round(xi)
            close = np.abs(xi - r) <= 1e-6
            xc = xi[close]
            if close.any() and (not np.array_equal(xc, r[close]) or bool(np.any((xc == 0) & np.signbit(xc)))):
                x = np.array(res.x)
                x[integ] = np.where(close, r, xi) + 0.0
                res = SolveResult.create(
                    model, res.termination, backend=res.backend, x=x, bound=res.bound, duals=res.duals,
                    reduced_costs=res.reduced_costs, timings=res.timings, backend_version=res.backend_version,
                    stats=res.stats, check=False,
                )
    timings = res.timings.add(handoff=t_arrays)
    if model.build_seconds is not None:
        timings = timings.replace(build=model.build_seconds)
    changes["timings"] = timings
    changes["params"] = params.as_record()
    res = res.replace(**changes)
    level = logging.INFO if params.verbose else logging.DEBUG
    if log.isEnabledFor(level):  # (the summary is formatted only for a logger that prints it)
        log.log(level, "%s", res.summary())
    return res


def empty_model_result(model: LinearModel, backend: str) -> SolveResult:
    """A model without columns is its constant objective, feasible iff every row admits activity 0; solvers
    disagree on how to report it (HiGHS: kModelEmpty), so it is decided here, for every backend alike."""
    arr = model.to_arrays()
    ok = bool(np.all(arr.row_lower <= 1e-9) and np.all(arr.row_upper >= -1e-9))
    reason = TerminationReason.OPTIMAL if ok else TerminationReason.INFEASIBLE
    timings = Timings() if model.build_seconds is None else Timings(build=model.build_seconds)
    return SolveResult.create(
        model,
        Termination(reason, None, "empty model: decided without a solve"),
        backend=backend,
        x=np.zeros(0) if ok else None,
        timings=timings,
    )
