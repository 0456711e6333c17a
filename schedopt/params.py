"""The one typed, validated object that carries solve parameters from the caller to a backend's solver call.

``schedopt solve --time-limit 5`` and ``SolveOptions(time_limit=5)`` build a :class:`SolveParams` (checked once, in
its constructor: a bad value is an :class:`~schedopt.errors.InputError` naming the field); :func:`schedopt.solve`
hands that same object (with the per-call warm start attached) to ``Backend.solve(model, params)``. No dict of
keyword arguments sits in between.

A core module: it imports no backend and no solver.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from .errors import InputError

if TYPE_CHECKING:
    from .results import SolveResult

__all__ = ["MAX_SEED", "MAX_THREADS", "NO_LIMIT_SECONDS", "SolveParams"]

#: the largest thread count accepted (larger values crash some solvers: std::bad_alloc in HiGHS)
MAX_THREADS = 1024
#: seeds are 31-bit (CP-SAT, SCIP and HiGHS take a C int; mckp's numpy generator no negative one)
MAX_SEED = 2**31 - 1
#: a time limit at or above this many seconds (about 31 years) is no limit, like ``inf``: glpk's millisecond count
#: and mathopt's duration overflow on 1e300
NO_LIMIT_SECONDS = 1e9


def _is_number(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


@dataclass(frozen=True)
class SolveParams:
    """Solver-independent parameters, validated when built.

    ``time_limit`` (seconds; None, ``inf`` or anything from :data:`NO_LIMIT_SECONDS` up: no limit, stored as None),
    ``mip_rel_gap`` in [0, 1) or None, ``threads`` in [0, :data:`MAX_THREADS`] (0: the solver's choice), ``seed`` in
    [0, :data:`MAX_SEED`]. ``options`` are backend options, checked by the backend against the names it knows
    before the solve; ``raw_options`` go to the solver verbatim, unchecked. Backends read both through
    :attr:`solver_options`. ``warm_start`` (one value per column) and ``sub_solve`` are attached per call by
    :func:`schedopt.solve`.
    """

    time_limit: float | None = None
    mip_rel_gap: float | None = 1e-6
    threads: int = 1
    seed: int = 0
    warm_start: np.ndarray | None = None
    verbose: bool = False
    options: Mapping[str, Any] = field(default_factory=dict)
    raw_options: Mapping[str, Any] = field(default_factory=dict)
    #: ``schedopt.solve`` itself, handed to backends that need a sub-solve (a residual problem, a sub-model), so
    #: that no backend imports the dispatcher; ``None`` outside ``schedopt.solve``
    sub_solve: Callable[..., SolveResult] | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        # the declared types are what a type-checked caller passes; the checks are for everyone else
        tl = self.time_limit
        if tl is not None and (not _is_number(tl) or math.isnan(tl) or tl < 0):
            raise InputError("time_limit", tl, "must be a non-negative number of seconds or None")
        gap = self.mip_rel_gap
        if gap is not None and (not _is_number(gap) or not 0 <= gap < 1):
            raise InputError("mip_rel_gap", gap, "must be in [0, 1) or None")
        threads: object = self.threads
        if not isinstance(threads, int) or isinstance(threads, bool) or not 0 <= threads <= MAX_THREADS:
            raise InputError("threads", threads, f"must be an integer in [0, {MAX_THREADS}] (0: the solver's choice)")
        seed: object = self.seed
        if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed <= MAX_SEED:
            raise InputError("seed", seed, f"must be an integer in [0, {MAX_SEED}]")
        if not isinstance(self.verbose, bool):
            raise InputError("verbose", self.verbose, "must be True or False")
        for name in ("options", "raw_options"):
            value: object = getattr(self, name)
            if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
                raise InputError(name, value, "must be a mapping of solver option names to values")
            object.__setattr__(self, name, dict(value))
        if self.time_limit is not None:
            # infinity (or 1e300) is the natural "no limit", on every backend
            object.__setattr__(self, "time_limit",
                               None if self.time_limit >= NO_LIMIT_SECONDS else float(self.time_limit))
        if self.mip_rel_gap is not None:
            object.__setattr__(self, "mip_rel_gap", float(self.mip_rel_gap))

    @property
    def time_limit_or_inf(self) -> float:
        return math.inf if self.time_limit is None else float(self.time_limit)

    @property
    def solver_options(self) -> dict[str, Any]:
        """The backend options and the raw options together (raw ones win), as the solver receives them."""
        return {**self.options, **self.raw_options}

    def as_record(self) -> dict[str, Any]:
        """The parameters as a result records them (``SolveResult.params``)."""
        return {"time_limit": self.time_limit, "mip_rel_gap": self.mip_rel_gap, "threads": self.threads,
                "seed": self.seed, **self.solver_options}

    def for_call(self, *, warm_start: np.ndarray | None, sub_solve: Callable[..., SolveResult] | None) -> SolveParams:
        """A copy carrying one call's warm start and sub-solve (the parameters are already checked: not again)."""
        # the fields copied as copy.copy does for a plain instance (its __dict__), without copy's reduce protocol
        out = object.__new__(type(self))
        d = out.__dict__
        d.update(self.__dict__)
        d["warm_start"] = warm_start
        d["sub_solve"] = sub_solve
        return out
