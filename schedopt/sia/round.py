"""What the builder and the checkers read of one Sia round: the :class:`SiaRound` protocol.

:class:`~schedopt.sia.SiaProblem` satisfies it; :mod:`schedopt.sia.build` and :mod:`schedopt.sia.check` are typed
against this protocol rather than the problem class, so the problem module depends on them and not the other way
round (one direction in the import graph).
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from .configs import ConfigTable
from .pairs import PairTable
from .settings import SiaSettings
from .spec import Cluster, Job, JobId

__all__ = ["SiaRound"]


class SiaRound(Protocol):
    """One validated Sia round as the builder and the checkers see it."""

    cluster: Cluster
    jobs: tuple[Job, ...]
    p: float
    lam: float
    settings: SiaSettings
    configs: ConfigTable
    max_gpus_per_job: int | None
    available: np.ndarray
    goodput: Any  #: the goodput input as given (array, callable or mapping of models)

    def job_index(self, job_id: JobId) -> int: ...

    def valid_pairs(self) -> PairTable: ...
