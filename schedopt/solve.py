"""``schedopt.solve``: one entry point for every backend."""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from .backends import get_backend
from .backends.base import SolveParams
from .errors import BackendCapabilityError, InputError
from .model import LinearModel
from .results import SolveResult, Termination, TerminationReason

__all__ = ["default_backend", "solve"]


def default_backend(model: LinearModel) -> str:
    """The backend schedopt picks for ``model``: the structure-exploiting ``mckp`` solver when the model has the
    one-configuration-per-job structure and that backend is registered, HiGHS otherwise."""
    if model.meta.get("structure") == "mckp":
        from .backends import available_backends

        if "mckp" in available_backends():
            return "mckp"
    return "highs"


def solve(
    model: LinearModel,
    backend: str | None = None,
    *,
    time_limit: float | None = None,
    mip_rel_gap: float | None = 1e-6,
    threads: int = 1,
    seed: int = 0,
    warm_start: Any = None,
    verbose: bool = False,
    **backend_options: Any,
) -> SolveResult:
    """Solve ``model`` with ``backend`` (``None``: :func:`default_backend`).

    Never raises for infeasible, unbounded or a hit limit: read ``result.termination`` or call
    ``result.raise_for_status()``. Raises :class:`~schedopt.errors.InputError` for bad parameters and
    :class:`~schedopt.errors.BackendUnavailableError` / :class:`~schedopt.errors.BackendCapabilityError` when the
    backend is missing or cannot solve this kind of model, all before any solve.
    """
    if not isinstance(model, LinearModel):
        raise InputError("model", type(model).__name__, "must be a schedopt.LinearModel")
    if time_limit is not None and (not isinstance(time_limit, (int, float)) or math.isnan(time_limit) or time_limit < 0):
        raise InputError("time_limit", time_limit, "must be a non-negative number of seconds or None")
    if mip_rel_gap is not None and (not isinstance(mip_rel_gap, (int, float)) or not 0 <= mip_rel_gap < 1):
        raise InputError("mip_rel_gap", mip_rel_gap, "must be in [0, 1) or None")
    if not isinstance(threads, int) or threads < 0:
        raise InputError("threads", threads, "must be a non-negative integer (0: the solver's choice)")
    if not isinstance(seed, int):
        raise InputError("seed", seed, "must be an integer")
    name = backend or default_backend(model)
    if not isinstance(name, str):
        raise InputError("backend", backend, "must be a backend name (see schedopt.available_backends())")
    b = get_backend(name)
    if model.num_cols == 0:
        return _empty_model_result(model, name)
    why = b.check_model(model)
    if why:
        raise BackendCapabilityError(name, why)
    if warm_start is not None:
        if not b.capabilities.warm_start:
            raise BackendCapabilityError(name, "it takes no warm start")
        ws = np.asarray(warm_start, dtype=float)
        if ws.shape != (model.num_cols,):
            raise InputError("warm_start", ws.shape, f"needs one value per column ({model.num_cols})")
        warm_start = ws
    params = SolveParams(
        time_limit=time_limit,
        mip_rel_gap=mip_rel_gap,
        threads=threads,
        seed=seed,
        warm_start=warm_start,
        verbose=verbose,
        options=dict(backend_options),
    )
    t0 = time.perf_counter()
    model.to_arrays()
    t_arrays = time.perf_counter() - t0
    res = b.solve(model, params)
    res.timings.handoff += t_arrays
    if res._x is not None:
        # integer columns within the solver's feasibility tolerance are reported as exact integers
        integ = model.to_arrays().integrality == 1
        if integ.any():
            xi = res._x[integ]
            r = np.round(xi)
            close = np.abs(xi - r) <= 1e-6
            res._x = res._x.copy()
            res._x[integ] = np.where(close, r, xi) + 0.0
    if model.build_seconds is not None:
        res.timings.build = model.build_seconds
    res.params = {
        "time_limit": time_limit,
        "mip_rel_gap": mip_rel_gap,
        "threads": threads,
        "seed": seed,
        **backend_options,
    }
    return res


def _empty_model_result(model: LinearModel, backend: str) -> SolveResult:
    """A model without columns is its constant objective, feasible iff every row admits activity 0; solvers
    disagree on how to report it (HiGHS: kModelEmpty), so it is decided here, for every backend alike."""
    arr = model.to_arrays()
    ok = bool(np.all(arr.row_lower <= 1e-9) and np.all(arr.row_upper >= -1e-9))
    reason = TerminationReason.OPTIMAL if ok else TerminationReason.INFEASIBLE
    bound = arr.constant if ok else (-math.inf if arr.maximize else math.inf)
    return SolveResult(
        termination=Termination(reason, None, "empty model: decided without a solve"),
        backend=backend,
        model=model,
        _x=np.zeros(0) if ok else None,
        _objective=arr.constant if ok else math.nan,
        bound=bound,
    )
