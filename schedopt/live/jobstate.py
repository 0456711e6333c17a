"""A live job as the simulator's decision step carries it (:class:`LiveJobState`), and its goodput estimate."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, cast

import numpy as np

from ..goodput import JobGoodputModel
from ..goodput._goodput import best_point
from ..sim.jobs import Application, JobModel, JobState, fitted_estimate, local_limits, with_grad_stats

__all__ = ["LiveJobState", "estimate_at_epoch", "online_estimate", "profile_application", "with_reported_stats"]


@dataclass(eq=False)
class LiveJobState(JobState):
    """A live job as the decision step carries it: the simulator's :class:`JobState` (kind, caps, restart count,
    configuration, batch) plus what the job reported (``frac``: progress fraction; ``measured``: (type, nodes,
    GPUs, local batch) -> (step, sync) seconds) and its explicit kind."""

    live_kind: str | None = None
    frac: float = 0.0
    measured: dict[tuple[str, int, int, int], tuple[float, float]] = field(default_factory=dict)
    #: ``measured`` as the sorted tuple the estimate is keyed by (None: to be made again after a measurement)
    observations: tuple[tuple[tuple[str, int, int, int], tuple[float, float]], ...] | None = None
    #: (grad_sqr, grad_var) the job reported (at the profile's initial batch); None: its profile's curve
    grad: tuple[float, float] | None = None
    #: the last estimate and what it was made from: (estimator, observations, epoch, grad, job model, estimate,
    #: the fit of the observations or None), the observations and job model as objects (Session._estimate: a refit
    #: after a measurement, found again by the decision's views without hashing the observations; never saved: a
    #: restored job fits again)
    fit: tuple[Any, ...] | None = field(default=None, repr=False)
    _shape: tuple[int, int] | None = field(default=None, init=False, repr=False)
    _kind: str = field(default="adaptive", init=False, repr=False)
    _units: tuple[Any, ...] | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        # a live job's shape and kind never change (its kind, requested GPUs and batch are given at submission):
        # computed once (the decision step asks for them tens of thousands of times a round at 2,048 GPUs)
        shape: tuple[int, int] | None
        if self.live_kind == "rigid":
            shape = (self.requested_gpus, self.batch_size)
        elif self.live_kind in ("adaptive", "strong") and self.adaptive:
            shape = None
        else:
            shape = super().rigid_shape
        self._shape = shape
        self._kind = "strong" if self.live_kind == "strong" and self.adaptive and shape is None else super().kind

    @property
    def rigid_shape(self) -> tuple[int, int] | None:
        return self._shape

    @property
    def kind(self) -> str:
        return self._kind

    @property
    def scale_units(self) -> Mapping[str, int]:
        # kept per job model (a function of the job model and the application: asked for every job every round)
        u = self._units
        if u is None or u[0] is not self.jm:
            u = self._units = (self.jm, self.jm.scale_units(self.app))
        return cast(Mapping[str, int], u[1])

    def rebatch(self) -> None:
        """:meth:`JobState.rebatch`; an adaptive job that reported its gradient statistics takes the batch its
        profile gives with those (Pollux's ``update_local_bsz`` with the job's own ``grad_params``)."""
        if self.grad is None or self._kind != "adaptive" or self.scale_units or not self.nodes or self.config is None:
            JobState.rebatch(self)
            return
        self._rate = None
        t = self.config.gpu_type
        m = self.jm.truth(self.app)
        lims = local_limits(self.app, t, self.jm)
        ok, local, accum = best_point(m.params[t], len(self.nodes), sum(self.nodes.values()), m.init_batch,
                                      m.max_batch, self.grad[0], self.grad[1], lims)
        self.local_bsz, self.accum = (local, accum) if ok else (lims[0], 0)


@lru_cache(maxsize=65536)
def online_estimate(jm: JobModel, app: str, obs: tuple[tuple[tuple[str, int, int, int], tuple[float, float]], ...],
            epoch: int) -> JobGoodputModel:
    """The live estimate: the profile refitted to what the job measured (shared by jobs with the same history,
    as the simulator shares its estimates)."""
    return with_grad_stats(fitted_estimate(jm, app, obs), jm, app, epoch)


#: (id of a job model, id of a fitted estimate of it, epoch) -> (the job model, the fitted estimate, the live
#: estimate of that epoch): online_estimate found from the fit itself (shared by the jobs with that history) instead
#: of its observations (hashed and compared at every lookup: a few microseconds a job each time its epoch changes)
_AT_EPOCH: dict[tuple[int, int, int], tuple[JobModel, JobGoodputModel, JobGoodputModel]] = {}


def estimate_at_epoch(jm: JobModel, app: str,
                      obs: tuple[tuple[tuple[str, int, int, int], tuple[float, float]], ...],
                      fitted: JobGoodputModel, epoch: int) -> JobGoodputModel:
    """:func:`online_estimate` ``(jm, app, obs, epoch)`` (that object), found by ``fitted`` (``fitted_estimate(jm,
    app, obs)``, the object) and ``epoch``."""
    key = (id(jm), id(fitted), epoch)
    got = _AT_EPOCH.get(key)
    if got is not None and got[0] is jm and got[1] is fitted:
        return got[2]
    if len(_AT_EPOCH) >= 65536:
        _AT_EPOCH.clear()
    out = online_estimate(jm, app, obs, epoch)
    _AT_EPOCH[key] = (jm, fitted, out)
    return out


#: (id of the estimate, grad_sqr, grad_var) -> (the estimate, with the statistics): one object per point, as the
#: simulator shares its estimates (Sia's policy keeps its goodput rows per estimate object)
_REPORTED: dict[tuple[int, float, float], tuple[JobGoodputModel, JobGoodputModel]] = {}


def with_reported_stats(e: JobGoodputModel, sqr: float, var: float) -> JobGoodputModel:
    """``e`` with the gradient statistics a job reported (at its initial batch)."""
    key = (id(e), sqr, var)
    got = _REPORTED.get(key)
    if got is not None and got[0] is e:
        return got[1]
    if len(_REPORTED) >= 65536:
        _REPORTED.clear()
    out = JobGoodputModel(e.name, e.params, e.init_batch, e.max_batch, e.local_bsz_limits, (e.init_batch,),
                          (max(sqr, 0.0),), (max(var, 0.0),), e.max_epochs, e.meta)
    _REPORTED[key] = (e, out)
    return out


def profile_application(m: JobGoodputModel) -> Application:
    """A training curve for a job known only by its goodput profile: one 'epoch' over the whole job (progress is
    what the job reports), with the profile's gradient statistics."""
    return Application(m.name, np.asarray(m.grad_batch, float), 1, np.ones(1), np.asarray([m.grad_sqr], float),
                       np.asarray([m.grad_var], float))
