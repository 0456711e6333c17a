"""Pollux (OSDI'21) goodput model as used by Sia (SOSP'23).

* :class:`ThroughputParams` -- the seven per-(job, GPU type) parameters; ``step_time`` / ``throughput``.
* :func:`fit_throughput` -- fit them to measured (nodes, replicas, local_bsz, step_time, sync_time) rows.
* :func:`efficiency` -- statistical efficiency from the gradient noise scale.
* :func:`goodput` -- best (batch, local batch, accumulation steps) per (nodes, replicas), vectorised.
* :func:`goodput_matrix` -- the goodput of many models over many points in one vectorised search.
* :func:`bootstrap` -- Sia's throughput estimate for an unseen GPU type.
* :class:`JobGoodputModel` (alias :data:`GoodputModel`) -- one job's model on all its GPU types.
* :class:`GoodputEstimator` -- one job's estimate over its lifetime: bootstrap from 1-GPU profiles on every GPU
  type, measurements (configuration, step time, sync time) as they arrive, refits, and which types are still
  bootstrapped.

Formulas and deviations from the Pollux / Sia code: ``formulations/goodput.md``.
"""

from ._estimator import EstimateSource, GoodputEstimator, Measurement, profile_params
from ._goodput import (
    N_CANDIDATES,
    GoodputModel,
    GoodputResult,
    JobGoodputModel,
    bootstrap,
    bootstrap_params,
    efficiency,
    goodput,
    goodput_matrix,
)
from ._throughput import PARAM_NAMES, ThroughputParams, blas_threads, fit_throughput, prediction_errors
from ._validate import InputError

__all__ = [
    "N_CANDIDATES",
    "PARAM_NAMES",
    "EstimateSource",
    "GoodputEstimator",
    "GoodputModel",
    "GoodputResult",
    "InputError",
    "JobGoodputModel",
    "Measurement",
    "ThroughputParams",
    "blas_threads",
    "bootstrap",
    "bootstrap_params",
    "efficiency",
    "fit_throughput",
    "goodput",
    "goodput_matrix",
    "prediction_errors",
    "profile_params",
]
