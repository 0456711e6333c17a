"""The job model of :mod:`schedopt.sim` (the Pollux OSDI'21 / Sia SOSP'23 simulators' model; card: ``formulations/sim.md``).

* :class:`Application` -- one application's training curve from the public validation tables: scale-invariant
  progress per epoch and the gradient statistics (``grad_sqr``, ``grad_var``) per epoch and profiled batch size.
* :class:`JobModel` -- the constants that differ between the two published simulators (restart delay per
  application, calibration slowdowns, local-batch overrides, the GPU cap), with presets :data:`POLLUX` and
  :data:`SIA`.
* :class:`JobState` -- one job's state carried by the engine, advanced at its *true* rate; what the policy sees of
  its speed is :func:`goodput_estimate`: with ``estimator="bootstrap"`` (the default) Sia's online estimate
  (:class:`schedopt.goodput.GoodputEstimator` from the 1-GPU profiles, refitted to the configurations the job has
  run on), with ``"oracle"`` the true fitted model.

True throughput comes from the goodput zoo's fitted :class:`~schedopt.goodput.ThroughputParams` (fitted with
:func:`schedopt.goodput.fit_throughput` to the placements/scalability tables of each GPU type), not from
interpolating the tables as the published simulators do; the statistical efficiency follows the per-epoch tables.

A pipeline-model-parallel application (:mod:`schedopt.zoo.pmp`, ``gpt_pmp``) runs one replica per pipeline of ``P``
GPUs (:meth:`JobModel.scale_units`), at its measured pipeline time, with its batch fixed per pipeline. A job's
:attr:`JobState.kind` is ``adaptive``, ``strong`` (``JobModel.strong_jobs``: its requested batch on up to its
requested GPUs) or ``rigid``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache, cached_property, lru_cache
from importlib import resources
from itertools import pairwise
from types import MappingProxyType
from typing import Any

import numpy as np

from ..errors import InputError
from ..goodput import GoodputEstimator, JobGoodputModel, ThroughputParams
from ..goodput._goodput import best_point
from ..sia import Config
from .interp import interp
from .measured import lookup_shape
from .measured import step_time as measured_step_time

__all__ = [
    "ESTIMATORS",
    "FIT_STARTS",
    "POLLUX",
    "SIA",
    "SIA_MEASURED",
    "Application",
    "JobModel",
    "JobState",
    "application",
    "applications",
    "goodput_estimate",
    "job_model",
    "measured_times",
    "prior_estimate",
    "step_time_at",
    "true_model",
]

_EPS = 1e-8

#: What a policy sees of a job's throughput: ``"bootstrap"`` (Sia's online estimate; the default) or ``"oracle"``
#: (the true fitted model).
ESTIMATORS = ("bootstrap", "oracle")
#: Starting gammas of the estimator's refits: one, as the published simulators' ``fit_perf_params`` (one L-BFGS-B
#: start); ~0.15 s per fit instead of ~2.5 s for the six of ``fit_throughput``.
FIT_STARTS = (1.0,)


@dataclass(frozen=True, eq=False)
class Application:
    """One application's training curve (``applications.json``, derived by ``tools/derive_sim_data.py``).

    ``progress[e]``: scale-invariant progress (in initial-batch iterations) at the end of epoch ``e + 1``;
    ``grad_sqr[e, k]`` / ``grad_var[e, k]``: the gradient statistics during epoch ``e`` when training at
    ``batches[k]``. A job is complete at ``progress[epochs - 1]``.
    """

    name: str
    batches: np.ndarray
    epochs: int
    progress: np.ndarray
    grad_sqr: np.ndarray
    grad_var: np.ndarray

    @property
    def target(self) -> float:
        """Progress at completion (the end of the last epoch)."""
        return float(self.progress[-1])

    def grad_stats(self, batch: float, epoch: int) -> tuple[float, float]:
        """(grad_sqr, grad_var) during ``epoch`` at global batch ``batch``: linear in the batch between the
        profiled sizes (as the Pollux simulator's ``get_grad_stats``), clamped at the ends."""
        e = min(max(int(epoch), 0), self.epochs - 1)
        lists = self._lists
        if lists is None:
            b = self.batches
            return (float(np.interp(batch, b, self.grad_sqr[e])), float(np.interp(batch, b, self.grad_var[e])))
        bl, sqr, var = lists
        return interp(batch, bl, sqr[e]), interp(batch, bl, var[e])  # np.interp's floats (schedopt.sim.interp)

    @cached_property
    def _lists(self) -> tuple[list[float], list[list[float]], list[list[float]]] | None:
        """The tables as lists of floats for :func:`schedopt.sim.interp.interp` (None where the profiled batches are
        not strictly increasing: ``np.interp`` then)."""
        b = self.batches.tolist()
        if self.batches.ndim != 1 or not b or any(x >= y for x, y in pairwise(b)):
            return None
        return b, self.grad_sqr.tolist(), self.grad_var.tolist()


@cache
def applications() -> dict[str, Application]:
    """Every shipped application by name."""
    doc = json.loads(resources.files("schedopt.sim").joinpath("data/applications.json").read_text())
    out = {}
    for name, d in doc["applications"].items():
        out[name] = Application(
            name=name,
            batches=np.asarray(d["batches"], dtype=float),
            epochs=int(d["epochs"]),
            progress=np.asarray(d["progress"], dtype=float),
            grad_sqr=np.asarray(d["grad_sqr"], dtype=float),
            grad_var=np.asarray(d["grad_var"], dtype=float),
        )
    # -- sia-eval: pipeline-model-parallel applications (schedopt.zoo.pmp) train on their curve's tables --
    from ..zoo.pmp import PIPELINE_APPS, pipeline_application

    for name in PIPELINE_APPS:
        pa = pipeline_application(name)
        if pa is not None and pa.training_curve in out:
            c = out[pa.training_curve]
            out[name] = Application(name, c.batches, min(c.epochs, pa.epochs), c.progress[:pa.epochs], c.grad_sqr,
                                    c.grad_var)
    return out


def application(name: str) -> Application:
    """The zoo application ``name`` (``cifar10``, ``imagenet``, ...); an unknown name is an ``InputError``."""
    apps = applications()
    if name not in apps:
        raise InputError("application", name, f"unknown; have {sorted(apps)}")
    return apps[name]


@cache
def true_model(name: str) -> JobGoodputModel:
    """The throughput truth of application ``name``: the zoo's fitted model (every GPU type it was profiled on); for a
    pipeline application (:mod:`schedopt.zoo.pmp`) its measured pipeline time, one replica per pipeline."""
    from .. import zoo
    from ..zoo.pmp import pipeline_application

    pa = pipeline_application(name)
    return pa.goodput_model() if pa is not None else zoo.load_model(name)


@dataclass(frozen=True, eq=False)
class JobModel:
    """Constants of the job model that differ between the Pollux and Sia simulators.

    ``restart_seconds``: checkpoint-restore delay per application (``default_restart`` otherwise), paid on every
    start and re-allocation (GPUs held, no progress). ``slowdown``: the true rate is divided by it (Sia's
    calibration to its testbed; 1 in Pollux). ``max_local_bsz``: ``(application, gpu type) -> cap`` overriding the
    profiled local-batch maximum. ``gpu_cap``: at most this many GPUs per job (both simulators: 64). ``rigid_apps``:
    applications that run as rigid jobs even under adaptive policies, with their fixed batch (both: ncf, 1 GPU,
    batch 32768). ``apps``: extra applications (name -> (curve, true throughput model)), e.g. for hand-checked tests.
    ``elastic``: application -> most GPUs its rigid jobs may hold (Gandiva's grow-shrink; default: none).
    """

    name: str
    restart_seconds: Mapping[str, float] = field(default_factory=dict)
    default_restart: float = 30.0
    slowdown: Mapping[str, float] = field(default_factory=dict)
    max_local_bsz: Mapping[tuple[str, str], int] = field(default_factory=dict)
    gpu_cap: int = 64
    rigid_apps: Mapping[str, tuple[int, int]] = field(default_factory=lambda: {"ncf": (1, 32768)})
    apps: Mapping[str, tuple[Application, JobGoodputModel]] = field(default_factory=dict)
    elastic: Mapping[str, int] = field(default_factory=dict)  # app -> most GPUs its rigid jobs may grow to
    # -- sia-eval: measured truth (schedopt.sim.measured): jobs advance at the measured step times where measured --
    measured: bool = False
    # -- sia-eval: job ids that run rigid at their requested (GPUs, batch) under adaptive policies (limited
    # adaptivity, schedopt.sim.adaptivity.limit_adaptivity) --
    rigid_jobs: frozenset[str] = frozenset()
    # -- sia-eval: job ids that scale their GPU count (up to the request) at their requested batch (strong scaling;
    # the artifact's ``scale-gpus``) under adaptive policies --
    strong_jobs: frozenset[str] = frozenset()
    # -- sia-eval: applications whose policy estimate is the oracle (the fitted truth) even under the bootstrap
    # estimator: a diagnostic (tools/sim_measured.py names the deepspeech2 gap with it; card) --
    oracle_apps: frozenset[str] = frozenset()

    def scale_units(self, app: str) -> Mapping[str, int]:
        """GPU type -> GPUs per data-parallel replica of ``app``: the pipeline depth ``P`` of a pipeline application
        (:mod:`schedopt.zoo.pmp`); empty for a data-parallel one (1 on every type)."""
        return _scale_units(app) if app not in self.apps else _NO_UNITS

    def application(self, app: str) -> Application:
        """The training curve of ``app`` (``apps`` first, then the shipped ones)."""
        got = self.apps.get(app)
        return got[0] if got is not None else application(app)

    def truth(self, app: str) -> JobGoodputModel:
        """The true throughput model of ``app`` (``apps`` first, then the zoo's fitted model)."""
        got = self.apps.get(app)
        return got[1] if got is not None else true_model(app)

    def restart(self, app: str) -> float:
        return float(self.restart_seconds.get(app, self.default_restart))

    def speed_factor(self, app: str) -> float:
        return 1.0 / float(self.slowdown.get(app, 1.0))


#: petuum/adaptdl@osdi21-artifact simulator: 30 s restart for every job, no slowdown, yolov3 local batch <= 8.
POLLUX = JobModel("pollux", max_local_bsz={("yolov3", t): 8 for t in ("t4", "v100", "a100", "rtx6000", "rtx2080ti")})
#: siasosp23/artifacts sia-simulator: restart per application (applications.py), calibration slowdowns
#: (simulator_config.SLOWDOWNS), deepspeech2 local batch <= 57 on the RTX 2080Ti.
SIA = JobModel(
    "sia",
    restart_seconds={"cifar10": 50, "deepspeech2": 25, "bert": 120, "yolov3": 80, "imagenet": 250, "ncf": 15},
    slowdown={"cifar10": 1.8, "imagenet": 1.2, "yolov3": 1.2, "bert": 1.2, "deepspeech2": 1.2, "ncf": 1.5},
    max_local_bsz={("deepspeech2", "rtx2080ti"): 57},
)
# -- sia-eval: the SIA constants with the measured step times as the truth (schedopt.sim.measured) and ncf adaptive
# (the published Sia simulator's ncf check, ``'ncf' in job.applications``, tests GPU-type keys and never fires) --
#: The Sia job model with the measured step times as the truth and ncf adaptive (``schedopt reproduce sia``).
SIA_MEASURED = JobModel(
    "sia-measured", restart_seconds=SIA.restart_seconds, slowdown=SIA.slowdown, max_local_bsz=SIA.max_local_bsz,
    rigid_apps={}, measured=True,
)
_MODELS = {"pollux": POLLUX, "sia": SIA, "sia-measured": SIA_MEASURED}


_NO_UNITS: Mapping[str, int] = MappingProxyType({})


@cache
def _scale_units(app: str) -> Mapping[str, int]:
    from ..zoo.pmp import pipeline_application

    pa = pipeline_application(app)
    return _NO_UNITS if pa is None else MappingProxyType(dict(pa.stages))


def job_model(name: str | JobModel) -> JobModel:
    """The job model ``name`` (``pollux``, ``sia``, ``sia-measured``; a :class:`JobModel` passes through)."""
    if isinstance(name, JobModel):
        return name
    if name not in _MODELS:
        raise InputError("job_model", name, f"unknown; have {sorted(_MODELS)}")
    return _MODELS[name]


def local_limits(app: str, gpu_type: str, jm: JobModel) -> tuple[int, int]:
    lo, hi = jm.truth(app).local_bsz_limits[gpu_type]
    cap = jm.max_local_bsz.get((app, gpu_type))
    return int(lo), int(hi if cap is None else min(hi, cap))


@lru_cache(maxsize=200_000)
def adaptive_batch(app: str, gpu_type: str, jm: JobModel, nodes: int, replicas: int, epoch: int,
                    stats_batch: float) -> tuple[int, int]:
    """(local batch, accumulation steps) maximising goodput with the gradient statistics of ``epoch`` at
    ``stats_batch`` (Pollux's ``update_local_bsz`` with the job's current gradient parameters)."""
    m = jm.truth(app)
    sqr, var = _grad_stats(jm, app, stats_batch, epoch)
    lims = local_limits(app, gpu_type, jm)
    ok, local, accum = best_point(m.params[gpu_type], nodes, replicas, m.init_batch, m.max_batch, sqr, var, lims)
    if not ok:  # no candidate fits the limits: the smallest local batch, no accumulation
        return lims[0], 0
    return local, accum


def rigid_batch(app: str, gpu_type: str, jm: JobModel, replicas: int, batch: float) -> tuple[int, int]:
    """(local batch, accumulation steps) of a fixed global batch: the Pollux simulator's ``update_local_bsz`` with a
    target batch size (fewest accumulation steps within the local maximum; a 1-GPU job above the initial batch
    accumulates at least once; the realised batch never exceeds the maximum)."""
    m = jm.truth(app)
    hi = local_limits(app, gpu_type, jm)[1]
    local = math.ceil(batch / replicas - _EPS)
    s = math.ceil(local / hi - _EPS) - 1
    if replicas == 1 and batch > m.init_batch:
        s = max(1, s)
    b = math.ceil(local / (s + 1) - _EPS)
    b = min(b, int(m.max_batch / (replicas * (s + 1))))
    return max(b, 1), s


@lru_cache(maxsize=500_000)
def step_time_at(p: ThroughputParams, nodes: int, replicas: int, local_bsz: int, accum: int) -> float:
    """``p.step_time`` for one point (cached: many jobs share their shapes)."""
    return float(p.step_time(nodes, replicas, local_bsz, accum))


@lru_cache(maxsize=500_000)
def _grad_stats(jm: JobModel, app: str, batch: float, epoch: int) -> tuple[float, float]:
    return jm.application(app).grad_stats(batch, epoch)


@lru_cache(maxsize=65536)
def flexible_max_gpus(jm: JobModel, app: str, max_profiled: int, strong_cap: int | None) -> int:
    """:attr:`JobState.max_gpus` of a job that is not rigid (``strong_cap``: its requested GPUs when it scales
    strongly, else ``None``): a function of these alone, kept per process (the engine asks for every job every
    round)."""
    m = jm.truth(app)
    lo = min(v[0] for v in m.local_bsz_limits.values())
    units = jm.scale_units(app)
    if units:  # sia-eval: pipelines
        cap = int(min(jm.gpu_cap, int(m.max_batch // lo) * max(units.values())))
    else:
        cap = int(min(max(2 * max_profiled, 1), jm.gpu_cap, m.max_batch // lo))
    return min(cap, strong_cap) if strong_cap is not None else cap


@lru_cache(maxsize=200_000)
def true_rate(jm: JobModel, app: str, gpu_type: str, placement: tuple[int, ...], local_bsz: int, accum: int,
               epoch: int) -> float:
    """:meth:`JobState.rate` of a job of ``app`` holding ``placement`` (GPUs per node, in the job's node order) of
    ``gpu_type`` at (``local_bsz``, ``accum``) in ``epoch``: a function of these alone, kept per process (a job
    re-asks at every epoch boundary, and jobs of one application share their shapes)."""
    m = jm.truth(app)
    units = jm.scale_units(app)
    n, r = len(placement), sum(placement) // units.get(gpu_type, 1)  # sia-eval: replicas (pipelines: GPUs // P)
    B = r * local_bsz * (accum + 1)
    scale = B / m.init_batch
    sqr, var = _grad_stats(jm, app, float(B), epoch)
    den = var / scale + sqr
    gain = (var + sqr) / den if den > 0 else 1.0
    it = step_time_at(m.params[gpu_type], n, r, local_bsz, accum)
    # -- sia-eval: measured truth (schedopt.sim.measured), the fit only where nothing was measured --
    if jm.measured and not units:
        got = measured_step_time(app, gpu_type, placement, local_bsz, accum)
        it = it if got is None else got
    # -- end sia-eval --
    return gain / it * jm.speed_factor(app)


@dataclass(eq=False)
class JobState:
    """One job as the engine carries it (mutable; only the engine changes it)."""

    id: str
    app: str
    arrival: float
    requested_gpus: int
    batch_size: int
    adaptive: bool
    jm: JobModel
    progress: float = 0.0
    epoch: int = 0
    nodes: dict[str, int] = field(default_factory=dict)  # node id -> GPUs held
    config: Config | None = None
    restart_left: float = 0.0
    restarts: int = 0
    started: bool = False
    start: float | None = None
    finish: float | None = None
    attained: float = 0.0  # GPU-seconds held (Tiresias' attained service)
    max_profiled: int = 0
    local_bsz: int = 0
    accum: int = 0
    segments: list[list[Any]] = field(default_factory=list)  # [start, end, gpu type, GPUs]
    share: float = 1.0  # factor on the true rate this round (Decision.rate: co-location, growth)
    estimator: str = "oracle"  # what goodput_estimate shows the policy: "bootstrap" or "oracle"
    seen: tuple[tuple[str, int, int, int], ...] = ()  # (gpu type, nodes, GPUs, local batch) it has trained at, sorted
    rejected: bool = False  # refused by the admission rule (set by the engine when the run ends; it never ran)
    _rate: float | None = None

    @property
    def application(self) -> Application:
        return self.jm.application(self.app)

    @property
    def rigid_shape(self) -> tuple[int, int] | None:
        """(GPUs, batch) when the job runs rigid: always for rigid policies, and ``JobModel.rigid_apps``."""
        if not self.adaptive or self.id in self.jm.rigid_jobs:  # sia-eval: rigid_jobs
            return self.requested_gpus, self.batch_size
        return self.jm.rigid_apps.get(self.app)

    # -- sia-eval: job kinds and scale units (issue 31 items 1-2) --
    @property
    def kind(self) -> str:
        """``"rigid"`` (fixed GPUs and batch), ``"strong"`` (fixed batch, GPU count adaptive up to the request:
        ``JobModel.strong_jobs`` under an adaptive policy) or ``"adaptive"``."""
        if self.rigid_shape is not None:
            return "rigid"
        return "strong" if self.id in self.jm.strong_jobs else "adaptive"

    @property
    def scale_units(self) -> Mapping[str, int]:
        """GPU type -> GPUs per replica (a pipeline application's depth ``P``; empty: 1 on every type)."""
        return self.jm.scale_units(self.app)

    def replicas(self) -> int:
        """Data-parallel replicas now: GPUs held / the current type's scale unit."""
        g = sum(self.nodes.values())
        if not g or self.config is None:
            return 0
        return g // self.scale_units.get(self.config.gpu_type, 1)
    # -- end sia-eval --

    @property
    def max_gpus(self) -> int:
        """The cap a policy may give this round: rigid -> its count; adaptive -> Pollux's and Sia's
        ``min(max(2 x most GPUs run on, 1), 64, max_batch // min_local_bsz)``; strong-scaling -> at most its
        requested count too (the artifact's ``scale-gpus`` jobs: ``max_replicas = target_num_replicas``); a
        pipeline application -> ``max_batch // local batch`` pipelines of the deepest type, at most 64 GPUs (no
        growth rule: see the card)."""
        rs = self.rigid_shape
        if rs is not None:
            return rs[0]
        return flexible_max_gpus(self.jm, self.app, self.max_profiled, self.requested_gpus if self.kind == "strong" else None)

    @property
    def batch(self) -> int:
        """The global batch it trains at now (0 when not running)."""
        return self.replicas() * self.local_bsz * (self.accum + 1)

    def rebatch(self) -> None:
        """Choose (local batch, accumulation) for the current placement and epoch; reset the cached rate."""
        self._rate = None
        if not self.nodes or self.config is None:
            self.local_bsz = self.accum = 0
            return
        t, n, r = self.config.gpu_type, len(self.nodes), sum(self.nodes.values())
        units = self.scale_units
        if units:  # -- sia-eval: a pipeline job: GPUs in multiples of P, its batch fixed per pipeline --
            P = units.get(t)
            m = self.jm.truth(self.app)
            if P is None or r % P or (r // P) * m.local_bsz_limits[t][1] > m.max_batch:
                raise InputError(f"job[{self.id}].gpus", r, f"{self.app} on {t} runs in multiples of its pipeline "
                                 f"depth {P} GPUs, at most {int(m.max_batch // m.local_bsz_limits[t][1])} pipelines"
                                 if P is not None else f"{self.app} has no pipeline on {t}")
            self.local_bsz, self.accum = m.local_bsz_limits[t][1], 0
            return
        rs = self.rigid_shape
        if rs is not None:
            self.local_bsz, self.accum = rigid_batch(self.app, t, self.jm, r, rs[1])
        elif self.kind == "strong":  # sia-eval: the requested batch on any GPU count (the published update_local_bsz)
            self.local_bsz, self.accum = rigid_batch(self.app, t, self.jm, r, self.batch_size)
        else:
            cur = self.batch if self.local_bsz else self.jm.truth(self.app).init_batch
            self.local_bsz, self.accum = adaptive_batch(self.app, t, self.jm, n, r, self.epoch, float(cur))

    def rate(self) -> float:
        """True progress per second now: ``gain / iteration time`` (Pollux's simulated goodput), divided by the
        job model's slowdown."""
        if self._rate is None:
            assert self.config is not None
            self._rate = true_rate(self.jm, self.app, self.config.gpu_type, tuple(self.nodes.values()),
                                    self.local_bsz, self.accum, self.epoch)
        return self._rate

    def advance(self, t0: float, seconds: float) -> None:
        """Run from ``t0`` for ``seconds`` under the current placement: first the remaining restart delay, then
        training epoch by epoch (the batch is re-chosen at each epoch boundary); sets ``finish`` at the exact
        time the last epoch ends."""
        g = sum(self.nodes.values())
        if not g or self.finish is not None:
            return
        t, left = t0, seconds
        d = min(self.restart_left, left)
        self.restart_left -= d
        t += d
        left -= d
        app = self.application
        # fixed while the job holds this placement: what _observe records but the local batch, and whether rebatch
        # takes its adaptive data-parallel branch (then taken here, call for call)
        c = self.config
        assert c is not None
        units = self.scale_units
        obs = (c.gpu_type, len(self.nodes), g // units.get(c.gpu_type, 1))
        plain = not units and self.rigid_shape is None and self.id not in self.jm.strong_jobs
        while left > 0:
            rate = self.rate() * self.share
            if rate <= 0:  # held but stalled (a zero co-location factor)
                t += left
                break
            key = (*obs, int(self.local_bsz))  # self._observe()
            if key not in self.seen:
                self.seen = tuple(sorted((*self.seen, key)))
            need = (float(app.progress[self.epoch]) - self.progress) / rate
            if need > left:
                self.progress += rate * left
                t += left
                left = 0.0
                break
            t += need
            left -= need
            self.epoch += 1
            self.progress = float(app.progress[self.epoch - 1])
            if self.epoch >= app.epochs:
                self.finish = t
                break
            if plain:  # self.rebatch(): its adaptive branch, on the same GPUs (self.batch = g * local * (accum + 1))
                self._rate = None
                cur = g * self.local_bsz * (self.accum + 1) if self.local_bsz else self.jm.truth(self.app).init_batch
                self.local_bsz, self.accum = adaptive_batch(self.app, obs[0], self.jm, obs[1], g, self.epoch,
                                                            float(cur))
            else:
                self.rebatch()
        if self.finish is None:
            t = t0 + seconds  # exact round end (no drift from summing the pieces)
        held = t - t0
        self.attained += held * g
        if self.segments:
            self.segments[-1][1] = t


    def _observe(self) -> None:
        """Record the configuration it trains at now (what a real scheduler measures: one step time per
        (nodes, GPUs, local batch) on a GPU type, as both simulators' ``update_params`` keep one profile entry per
        key)."""
        assert self.config is not None
        key = (self.config.gpu_type, len(self.nodes), self.replicas(), int(self.local_bsz))
        if key not in self.seen:
            self.seen = tuple(sorted((*self.seen, key)))


@lru_cache(maxsize=4096)
def prior_estimate(jm: JobModel, app: str, epoch: int) -> JobGoodputModel:
    """The job model's own goodput estimate of ``app`` at ``epoch``, before anything is measured: its true
    throughput parameters with the gradient statistics of that epoch at the initial batch (what the ``oracle``
    estimator and a live job without measurements start from)."""
    m = jm.truth(app)
    a = jm.application(app)
    sqr, var = a.grad_stats(m.init_batch, epoch)
    return JobGoodputModel(m.name, m.params, m.init_batch, m.max_batch, m.local_bsz_limits, (m.init_batch,),
                           (max(sqr, 0.0),), (max(var, 0.0),), m.max_epochs)


@lru_cache(maxsize=65536)
def _online_throughput(jm: JobModel, app: str, seen: tuple[tuple[str, int, int, int], ...]) -> JobGoodputModel:
    """Sia's estimate after ``seen``: a :class:`GoodputEstimator` seeded with the application's 1-GPU profiles on
    every GPU type, fed the true (uncalibrated, as both simulators feed ``update_params``) step and sync time of
    each configuration the job has trained at. A function of (application, observations) only, so jobs with the
    same history share one fit."""
    return fitted_estimate(jm, app, tuple((key, measured_times(jm, app, key)) for key in seen))


@lru_cache(maxsize=65536)
def fitted_estimate(jm: JobModel, app: str,
                    observations: tuple[tuple[tuple[str, int, int, int], tuple[float, float]], ...]) -> JobGoodputModel:
    """A :class:`GoodputEstimator` over ``app``'s profile (``jm.truth(app)``: its 1-GPU profiles on every GPU type)
    fed ``observations`` in order, ``((gpu type, nodes, GPUs, local batch), (step time, sync time))`` each, fitted
    once from :data:`FIT_STARTS`: the simulator's online estimate (measured by the job model) and a live session's
    (measured by the job) alike. A function of its arguments alone, kept per process."""
    est = GoodputEstimator(jm.truth(app), fit_starts=FIT_STARTS)
    for key, (step, sync) in observations:
        est.observe(*key, step, sync)
    return est.estimate()


@lru_cache(maxsize=65536)
def measured_times(jm: JobModel, app: str, key: tuple[str, int, int, int]) -> tuple[float, float]:
    """(step time, sync time) the job measures at ``key`` = (gpu type, nodes, GPUs, local batch): the truth's, kept
    per configuration (every estimate of a job's history repeats its earlier configurations)."""
    t, n, r, b = key
    # -- sia-eval: a job observes the measured (step, sync) where measured (schedopt.sim.measured) --
    if jm.measured:
        got = lookup_shape(app, t, n, r, float(b))
        if got is not None and got[0] > 0:
            return got[0], min(max(got[1], 0.0), got[0] * (1 - 1e-9))
    # -- end sia-eval --
    p = jm.truth(app).params[t]
    step = float(p.step_time(n, r, b))
    return step, min(max(step - float(p.compute_time(b)), 0.0), step * (1 - 1e-9))


@lru_cache(maxsize=65536)
def _online(jm: JobModel, app: str, seen: tuple[tuple[str, int, int, int], ...], epoch: int) -> JobGoodputModel:
    return with_grad_stats(_online_throughput(jm, app, seen), jm, app, epoch)


def with_grad_stats(e: JobGoodputModel, jm: JobModel, app: str, epoch: int) -> JobGoodputModel:
    """``e`` with the gradient statistics of ``app``'s ``epoch`` at its initial batch (what a policy sees)."""
    sqr, var = jm.application(app).grad_stats(e.init_batch, epoch)
    return JobGoodputModel(e.name, e.params, e.init_batch, e.max_batch, e.local_bsz_limits, (e.init_batch,),
                           (max(sqr, 0.0),), (max(var, 0.0),), e.max_epochs, e.meta)


def goodput_estimate(job: JobState) -> JobGoodputModel:
    """What a policy sees of ``job``'s goodput, with the gradient statistics of the job's current epoch at the
    initial batch (as Pollux's scheduler sees the job's latest ``grad_params``).

    ``job.estimator == "bootstrap"`` (adaptive jobs): Sia's online estimate -- the 1-GPU profiles on every GPU type,
    refitted (:class:`~schedopt.goodput.GoodputEstimator`) to every configuration the job has trained at, other
    types bootstrapped from the measured one. ``"oracle"``, and every rigid job (Sia seeds a rigid job's profile with
    the measured placements of its own shape, ``seed_profiles_rigid``): the zoo's fitted (true) throughput model.
    One object per (application, observations, epoch), so jobs at the same point share it."""
    if (job.estimator == "oracle" or job.rigid_shape is not None or job.scale_units  # sia-eval: pipelines: oracle
            or job.app in job.jm.oracle_apps):
        return prior_estimate(job.jm, job.app, job.epoch)
    return _online(job.jm, job.app, job.seen, job.epoch)
