"""A live job as the simulator's decision step carries it (:class:`LiveJobState`), and its goodput estimate."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from ..goodput import JobGoodputModel
from ..sim.jobs import Application, JobModel, JobState, fitted_estimate, with_grad_stats

__all__ = ["LiveJobState", "online_estimate", "profile_application"]


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
    _shape: tuple[int, int] | None = field(default=None, init=False, repr=False)
    _kind: str = field(default="adaptive", init=False, repr=False)

    def __post_init__(self) -> None:
        # a live job's shape and kind never change (its kind, requested GPUs and batch are given at submission):
        # computed once (the decision step asks for them tens of thousands of times a round at 2,048 GPUs)
        shape: tuple[int, int] | None
        if self.live_kind == "rigid":
            shape = (self.requested_gpus, self.batch_size)
        elif self.live_kind in ("adaptive", "strong") and self.adaptive:
            shape = None
        else:
            shape = JobState.rigid_shape.fget(self)  # type: ignore[attr-defined]
        self._shape = shape
        self._kind = ("strong" if self.live_kind == "strong" and self.adaptive and shape is None
                      else JobState.kind.fget(self))  # type: ignore[attr-defined]

    @property
    def rigid_shape(self) -> tuple[int, int] | None:
        return self._shape

    @property
    def kind(self) -> str:
        return self._kind


@lru_cache(maxsize=65536)
def online_estimate(jm: JobModel, app: str, obs: tuple[tuple[tuple[str, int, int, int], tuple[float, float]], ...],
            epoch: int) -> JobGoodputModel:
    """The live estimate: the profile refitted to what the job measured (shared by jobs with the same history,
    as the simulator shares its estimates)."""
    return with_grad_stats(fitted_estimate(jm, app, obs), jm, app, epoch)


def profile_application(m: JobGoodputModel) -> Application:
    """A training curve for a job known only by its goodput profile: one 'epoch' over the whole job (progress is
    what the job reports), with the profile's gradient statistics."""
    return Application(m.name, np.asarray(m.grad_batch, float), 1, np.ones(1), np.asarray([m.grad_sqr], float),
                       np.asarray([m.grad_var], float))
