"""Sia's per-job goodput estimate over its lifetime: bootstrap from 1-GPU profiles, then refit as it runs.

:class:`GoodputEstimator` holds one job's estimate on every GPU type:

1. **Profile** (at start): each type's throughput model from the job's 1-GPU profile on that type (local batch ->
   step time). One GPU identifies only the compute line ``T_c = alpha_c + beta_c b``; the network terms sit at the
   fit's floor, so the estimate scales near-linearly (Sia's assumption until measured).
2. **Measured**: once a type has measurements with more than one GPU, its model is refitted
   (:func:`~schedopt.goodput.fit_throughput`) from those measurements plus its profile.
3. **Bootstrapped**: a type without multi-GPU measurements, while some other type has them, takes Sia's bootstrap
   from the measured type with the most multi-GPU rows: ``xput_B(N) = xput_B(1) / xput_A(1) * xput_A(N)``
   (:func:`~schedopt.goodput.bootstrap_params`). Its own measurements drop the bootstrap.

:attr:`GoodputEstimator.bootstrapped_types` lists the types whose estimate does not come from their own multi-GPU
measurements (profile or bootstrap). Refits are lazy: a type is refitted when its model is next read after new
measurements.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

import numpy as np

from ._goodput import GoodputResult, JobGoodputModel, bootstrap_params
from ._throughput import GAMMA_STARTS, NET_PRIOR, PARAM_FLOOR, ThroughputParams, fit_checked, fit_throughput
from ._validate import InputError

__all__ = ["EstimateSource", "GoodputEstimator", "Measurement", "profile_params"]

#: Where a goodput estimate comes from: the profiles, Sia's bootstrap, or measurements.
EstimateSource = Literal["profile", "bootstrap", "measured"]


@dataclass(frozen=True)
class Measurement:
    """One observed step: configuration, local batch, step time and its gradient-sync part (seconds)."""

    gpu_type: str
    nodes: int
    replicas: int
    local_bsz: float
    step_time: float
    sync_time: float


def profile_params(local_bsz: Sequence[float], step_time: Sequence[float]) -> ThroughputParams:
    """Throughput parameters from a 1-GPU profile alone: the compute line by least squares on relative error
    (non-negative, floored like :func:`fit_throughput`), network terms at the floor (``alpha_n = beta_n = 1.1``
    floor, as the fit pins them without multi-GPU rows), ``gamma = 1``. A closed form: the full fit cannot identify
    more from one GPU and takes seconds."""
    b = np.asarray(local_bsz, dtype=float).ravel()
    t = np.asarray(step_time, dtype=float).ravel()
    if b.size == 0 or b.size != t.size or not (np.isfinite(b).all() and np.isfinite(t).all()) or (b <= 0).any() or (t <= 0).any():
        raise InputError("profile", list(zip(b.tolist(), t.tolist())), "needs (local_bsz > 0, step_time > 0) rows")
    return _profile_params(tuple(b.tolist()), tuple(t.tolist()))


@lru_cache(maxsize=4096)
def _profile_params(b: tuple[float, ...], t: tuple[float, ...]) -> ThroughputParams:
    B, T = np.array(b), np.array(t)
    if np.unique(B).size > 1:
        w = 1.0 / T  # relative error
        A = np.stack([np.ones_like(B), B], axis=1) * w[:, None]
        (a, c), *_ = np.linalg.lstsq(A, T * w, rcond=None)
        if a < PARAM_FLOOR or c < PARAM_FLOOR:  # a non-negative line: refit the other term alone
            c1 = float(np.sum(B * T * w * w) / np.sum((B * w) ** 2))
            a1 = float(np.sum(T * w * w) / np.sum(w * w))
            ea = np.mean(((c1 * B) - T) ** 2 * w * w)
            eb = np.mean((a1 - T) ** 2 * w * w)
            a, c = (PARAM_FLOOR, c1) if ea <= eb else (a1, PARAM_FLOOR)
    else:
        a, c = float(T.mean()) / 2, float(T.mean()) / 2 / float(B[0])
    f = PARAM_FLOOR
    return ThroughputParams(max(float(a), f), max(float(c), f), NET_PRIOR * f, NET_PRIOR * f, f, f, 1.0)


@lru_cache(maxsize=16384)
def _checked_profile(rows: tuple[tuple[Any, Any], ...]) -> tuple[tuple[float, ...], tuple[float, ...], ThroughputParams]:
    """A type's 1-GPU profile rows checked and converted as :func:`profile_params` does (it raises for bad rows), with
    its fit: ``(local batches, step times, params)`` as floats (kept per process: every estimator of one
    application starts from the same profiles)."""
    params = profile_params([b for b, _ in rows], [s for _, s in rows])
    b = tuple(np.asarray([b for b, _ in rows], dtype=float).ravel().tolist())
    t = tuple(np.asarray([s for _, s in rows], dtype=float).ravel().tolist())
    return b, t, params


def _profile_rows(rows: tuple[Any, ...]) -> tuple[tuple[float, ...], tuple[float, ...], ThroughputParams]:
    """:func:`_checked_profile`, also for rows it cannot keep (a user's lists are not hashable)."""
    try:
        hash(rows)
    except TypeError:
        return _checked_profile.__wrapped__(rows)
    return _checked_profile(rows)


@lru_cache(maxsize=16384)
def _fit_rows(prof: tuple[tuple[float, float], ...], rows: tuple[tuple[int, int, float, float, float], ...],
              starts: tuple[float, ...]) -> ThroughputParams:
    """:func:`fit_throughput` of a type's profile rows plus its measured rows, kept per process: the fit is a
    function of exactly these arguments, so estimators that hold the same rows on a type (a simulator's jobs of one
    application with the same history on that type, or the same job after a measurement on another type) share
    one fit instead of refitting."""
    cols = ([1] * len(prof) + [m[0] for m in rows], [1] * len(prof) + [m[1] for m in rows],
            [b for b, _ in prof] + [m[2] for m in rows], [s for _, s in prof] + [m[3] for m in rows],
            [0.0] * len(prof) + [m[4] for m in rows])
    if starts and all(type(g) is float and 1.0 <= g <= 10.0 for g in starts):
        # the rows were checked as they came in (the profile by _checked_profile, each measurement by observe):
        # fit_throughput's fit without its checks, on the same float arrays (its conversion, np.asarray(float))
        n, r, b, step, sync = (np.asarray(c, dtype=float) for c in cols)
        if bool((sync < step).all()):  # (observe's rule; a profile row's sync is 0 < its step)
            return fit_checked(n, r, b, step, sync, list(starts), 1)
    return fit_throughput(*cols, gamma_starts=starts)


def _model_profiles(model: JobGoodputModel, n_points: int = 12) -> dict[str, list[tuple[float, float]]]:
    """1-GPU profiles of every type of ``model``: its ``seed_1gpu`` rows when it carries them (the zoo's models do),
    else its own 1-GPU step times over a log grid of local batches within the type's limits."""
    seeds = model.meta.get("seed_1gpu") if isinstance(model.meta, Mapping) else None
    out: dict[str, list[tuple[float, float]]] = {}
    for t in model.gpu_types:
        rows = seeds.get(t) if isinstance(seeds, Mapping) else None
        if rows:
            out[t] = [(float(b), float(s)) for b, s in rows]
            continue
        lo, hi = model.local_bsz_limits[t]
        grid = np.unique(np.round(np.geomspace(lo, hi, n_points)))
        st = model.params[t].step_time(np.ones_like(grid), np.ones_like(grid), grid)
        out[t] = list(zip(grid.tolist(), np.asarray(st, dtype=float).tolist()))
    return out


class GoodputEstimator:
    """One job's goodput estimate on every GPU type, learning as the job runs (see the module doc).

    ``model``: the job's application model (a :class:`JobGoodputModel`, e.g. ``schedopt.zoo.load_model(name)``):
    the estimator takes its batch limits and gradient statistics, and its 1-GPU profiles (``profiles`` overrides
    them: type -> ``[(local_bsz, step_time), ...]``; the types are the profiled ones). Its throughput parameters
    are *not* read: the estimate starts from the profiles alone. ``fit_starts``: the starting gammas of a type's
    first full fit (later refits start from the last fit's gamma); a full fit takes ~1-2 s on an idle core per
    starting gamma, so a simulator may pass one or two.

    >>> from schedopt import zoo
    >>> est = GoodputEstimator(zoo.load_model("cifar10"))
    >>> est.observe("a100", nodes=1, replicas=4, local_bsz=128, step_time=0.05, sync_time=0.01)
    >>> "a100" in est.bootstrapped_types
    False
    """

    def __init__(self, model: JobGoodputModel,
                 profiles: Mapping[str, Sequence[tuple[float, float]]] | None = None, *,
                 fit_starts: Sequence[float] = GAMMA_STARTS) -> None:
        if not isinstance(model, JobGoodputModel):
            raise InputError("model", type(model).__name__, "must be a JobGoodputModel (e.g. schedopt.zoo.load_model(name))")
        prof = _model_profiles(model) if profiles is None else {k: list(v) for k, v in profiles.items()}
        if not prof:
            raise InputError("profiles", profiles, "need a 1-GPU profile on at least one GPU type")
        for t in prof:
            if t not in model.local_bsz_limits:
                raise InputError(f"profiles[{t}]", t, f"has no local batch limits in the model ({sorted(model.local_bsz_limits)})")
        self.app = model
        self.profiles: dict[str, tuple[tuple[float, float], ...]] = {t: tuple(r) for t, r in prof.items()}
        checked = {t: _profile_rows(r) for t, r in self.profiles.items()}
        self._profile_fit = {t: c[2] for t, c in checked.items()}
        self._prof_b = {t: c[0] for t, c in checked.items()}  # the profiles' local batches and step times as floats
        self._prof_t = {t: c[1] for t, c in checked.items()}
        self._rows: dict[str, list[Measurement]] = {t: [] for t in self.profiles}
        self._n_multi = dict.fromkeys(self.profiles, 0)  # multi-GPU measurements per type
        self._fitted: dict[str, ThroughputParams] = {}
        self._dirty: set[str] = set()
        self._estimate: JobGoodputModel | None = None
        self.fit_starts = tuple(float(g) for g in fit_starts)

    # ------------------------------------------------------------------ measurements
    @property
    def gpu_types(self) -> tuple[str, ...]:
        return tuple(self.profiles)

    def observe(self, gpu_type: str, nodes: int, replicas: int, local_bsz: float, step_time: float,
                sync_time: float) -> None:
        """Record one measured step on ``gpu_type`` (a 1-GPU step extends the type's profile)."""
        if gpu_type not in self.profiles:
            raise InputError("gpu_type", gpu_type, f"has no profile for this job ({', '.join(self.profiles)})")
        n, r = int(nodes), int(replicas)
        if n != nodes or r != replicas or n < 1 or r < n:
            raise InputError("replicas", (nodes, replicas), "needs integers with 1 <= nodes <= replicas")
        for k, v in (("local_bsz", local_bsz), ("step_time", step_time), ("sync_time", sync_time)):
            if type(v) is float:  # the common case, checked without numpy
                if not math.isfinite(v):
                    raise InputError(k, v, "must be a finite number")
            elif isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) or not np.isfinite(v):
                raise InputError(k, v, "must be a finite number")
        if local_bsz <= 0 or step_time <= 0 or not 0 <= sync_time < step_time:
            raise InputError("sync_time", (local_bsz, step_time, sync_time),
                             "needs local_bsz > 0, step_time > 0 and 0 <= sync_time < step_time")
        self._rows[gpu_type].append(Measurement(gpu_type, n, r, float(local_bsz), float(step_time), float(sync_time)))
        if r > 1:
            self._n_multi[gpu_type] += 1
        self._dirty.add(gpu_type)
        self._estimate = None

    def measurements(self, gpu_type: str | None = None) -> list[Measurement]:
        """The measurements recorded (on one type, or all)."""
        if gpu_type is None:
            return [m for rows in self._rows.values() for m in rows]
        return list(self._rows[self._known(gpu_type)])

    def _known(self, gpu_type: str) -> str:
        if gpu_type not in self.profiles:
            raise InputError("gpu_type", gpu_type, f"has no profile for this job ({', '.join(self.profiles)})")
        return gpu_type

    def _multi(self, t: str) -> int:
        return self._n_multi[t]

    # ------------------------------------------------------------------ estimates
    def _own(self, t: str) -> ThroughputParams:
        """The type's model from its own rows (profile, plus measurements once it has multi-GPU ones)."""
        if self._multi(t) == 0:
            return self._profile_with(t, self._rows[t])
        if t in self._dirty or t not in self._fitted:
            ms = self._rows[t]
            prof = self.profiles[t]
            last = self._fitted.get(t)
            # a refit starts from the last fit's gamma (and 1.0) rather than all six starting gammas
            starts = self.fit_starts if last is None else sorted({1.0, last.gamma})
            measured = tuple((m.nodes, m.replicas, m.local_bsz, m.step_time, m.sync_time) for m in ms)
            self._fitted[t] = _fit_rows(prof, measured, tuple(starts))
            self._dirty.discard(t)
        return self._fitted[t]

    def reference_type(self) -> str | None:
        """The measured type other types bootstrap from (most multi-GPU rows; ties: the first profiled), or None."""
        best = max(self.profiles, key=lambda t: self._multi(t))
        return best if self._multi(best) > 0 else None

    def source(self, gpu_type: str) -> EstimateSource:
        """Where the estimate of ``gpu_type`` comes from now."""
        t = self._known(gpu_type)
        if self._multi(t) > 0:
            return "measured"
        return "bootstrap" if self.reference_type() is not None else "profile"

    @property
    def bootstrapped_types(self) -> tuple[str, ...]:
        """Types whose estimate is not yet fitted from their own multi-GPU measurements (profile or bootstrap)."""
        return tuple(t for t in self.profiles if self._multi(t) == 0)

    def model(self, gpu_type: str) -> ThroughputParams:
        """The current throughput estimate on ``gpu_type`` (refitted when new measurements arrived)."""
        t = self._known(gpu_type)
        src = self.source(t)
        if src != "bootstrap":
            return self._own(t)
        ref = self.reference_type()
        assert ref is not None
        a = self._own(ref)
        # xput_B(1) / xput_A(1) from the two types' 1-GPU profiles, at the same local batch
        b = self.common_batch(ref, t)
        xa1 = float(self._own_profile(ref).throughput(1, 1, b))
        xb1 = float(self._own(t).throughput(1, 1, b))
        return bootstrap_params(a, xa1, xb1)

    def _own_profile(self, t: str) -> ThroughputParams:
        """profile_params of the type's profile rows and its 1-GPU measurements."""
        return self._profile_with(t, [m for m in self._rows[t] if m.replicas == 1])

    def _profile_with(self, t: str, ms: Sequence[Measurement]) -> ThroughputParams:
        """profile_params of the type's profile rows and the measurements ``ms`` (checked floats already: the
        cached closed form, without the checks)."""
        if not ms:
            return self._profile_fit[t]
        return _profile_params(self._prof_b[t] + tuple(m.local_bsz for m in ms),
                               self._prof_t[t] + tuple(m.step_time for m in ms))

    def common_batch(self, a: str, b: str) -> float:
        """A local batch both profiles cover (the application's initial batch, clipped to the common range)."""
        pa, pb = self._prof_b[self._known(a)], self._prof_b[self._known(b)]
        lo = max(min(pa), min(pb))
        hi = min(max(pa), max(pb))
        return min(max(float(self.app.init_batch), lo), max(lo, hi))  # np.clip's maximum, then minimum

    def estimate(self) -> JobGoodputModel:
        """The current estimate as a :class:`JobGoodputModel` (what a policy sees; cached until the next
        measurement)."""
        if self._estimate is None:
            app = self.app
            params = {t: self.model(t) for t in self.profiles}
            lims = {t: app.local_bsz_limits[t] for t in self.profiles}
            self._estimate = JobGoodputModel(app.name, params, app.init_batch, app.max_batch, lims, app.grad_batch,
                                             app.grad_sqr, app.grad_var, app.max_epochs,
                                             {"estimate_sources": {t: self.source(t) for t in self.profiles}})
        return self._estimate

    def goodput(self, gpu_type: str, nodes: Any, replicas: Any, **kwargs: Any) -> GoodputResult:
        """Goodput of the current estimate on ``gpu_type`` (vectorised; see :meth:`JobGoodputModel.goodput`)."""
        return self.estimate().goodput(self._known(gpu_type), nodes, replicas, **kwargs)

    def throughput(self, gpu_type: str, nodes: Any, replicas: Any, batch: Any) -> np.ndarray:
        """Throughput of the current estimate at a fixed global batch (see :meth:`JobGoodputModel.throughput`)."""
        return self.estimate().throughput(self._known(gpu_type), nodes, replicas, batch)

    def __repr__(self) -> str:
        src = ", ".join(f"{t}:{self.source(t)}" for t in self.profiles)
        return f"GoodputEstimator({self.app.name}; {src}; {len(self.measurements())} measurements)"
