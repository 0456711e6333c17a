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

    @property
    def rigid_shape(self) -> tuple[int, int] | None:
        if self.live_kind == "rigid":
            return self.requested_gpus, self.batch_size
        if self.live_kind in ("adaptive", "strong") and self.adaptive:
            return None
        return JobState.rigid_shape.fget(self)  # type: ignore[attr-defined]

    @property
    def kind(self) -> str:
        if self.live_kind == "strong" and self.adaptive:
            return "strong"
        return JobState.kind.fget(self)  # type: ignore[attr-defined]


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
