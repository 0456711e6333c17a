"""Measured step times of the Sia artifact, looked up and interpolated as its simulator does (card:
``formulations/sim.md``, "The measured job model").

``data/measured_profiles.json`` (written offline by ``tools/derive_measured.py`` from
``siasosp23/artifacts@aaf7a0de sia-simulator/traces/<app>/placements-<type>.csv`` and ``scalability-<type>.csv``)
holds every measured (placement, local batch) -> (step time, sync time) row per application and GPU type.
:func:`lookup` answers as the published ``Application.get_throughput``:

1. the placement (GPUs per node) is normalised to its lexicographically smallest rotation; if that placement was
   measured, the step and sync times are linear in the local batch between its measured batches (``interp1d``);
2. otherwise they are linear over (nodes, replicas, local batch) in the Delaunay triangulation of the measured
   points (``LinearNDInterpolator`` over the placement rows averaged per (nodes, replicas, local batch) and the
   scalability rows; nodes capped at 16, as the published code does);
3. outside both (a local batch beyond the measured ones, a shape outside the measured hull) the answer is ``None``
   and the caller falls back to the fitted model (the published simulator returns -1 there and never asks).

The ``sia-measured`` job model (:data:`schedopt.sim.jobs.SIA_MEASURED`) advances jobs at these step times
(:func:`step_time`); :func:`fit_errors` compares the fitted zoo model with them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache, lru_cache
from importlib import resources
from itertools import pairwise
from typing import Any, cast

import numpy as np

from ..errors import InputError
from ..scipy_parts import load_extension
from .interp import interp

__all__ = ["MeasuredProfile", "fit_errors", "lookup", "lookup_shape", "measured_types", "normalize_placement",
           "profile", "step_time"]

MAX_NODES = 16  # the published interpolation caps nodes at 16 (its largest measured T4 placement)


def normalize_placement(placement: Sequence[int]) -> tuple[int, ...]:
    """Drop empty nodes and rotate to the lexicographically smallest rotation (the published key)."""
    p = tuple(int(x) for x in placement if int(x) > 0)
    if not p:
        raise InputError("placement", placement, "must hold at least one GPU")
    return min(p[i:] + p[:i] for i in range(len(p)))


def _key(p: tuple[int, ...]) -> str:
    return "".join(map(str, p)) if all(x < 10 for x in p) else ",".join(map(str, p))


@dataclass(eq=False)
class MeasuredProfile:
    """The measured rows of one (application, GPU type)."""

    app: str
    gpu_type: str
    placements: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]  # key -> (local batch, step, sync), by batch
    points: np.ndarray  # (k, 3): nodes, replicas, local batch
    values: np.ndarray  # (k, 2): step, sync
    _nd: Any = field(default=None, repr=False)
    _lists: dict[str, tuple[list[float], list[float], list[float]] | None] = field(default_factory=dict, repr=False)

    def measured(self, placement: Sequence[int]) -> bool:
        """Whether this placement (after normalisation) was measured."""
        return _key(normalize_placement(placement)) in self.placements

    def lookup(self, placement: Sequence[int], local_bsz: float) -> tuple[float, float] | None:
        """(step time, sync time) at ``placement`` and ``local_bsz``, or ``None`` outside the measurements."""
        p = normalize_placement(placement)
        key = _key(p)
        rows = self.placements.get(key)
        if rows is not None:
            b, st, sy = rows
            if not b[0] <= local_bsz <= b[-1]:
                return None
            got = self._lists.get(key)
            if got is None:  # the placement's rows as lists, where its batches increase (profile()'s always do)
                bl = b.tolist()
                got = self._lists[key] = (bl, st.tolist(), sy.tolist()) if all(
                    x < y for x, y in pairwise(bl)) else None
            if got is not None:
                bl, stl, syl = got
                return interp(local_bsz, bl, stl), interp(local_bsz, bl, syl)  # np.interp's floats
            return float(np.interp(local_bsz, b, st)), float(np.interp(local_bsz, b, sy))
        return self.lookup_shape(len(p), sum(p), local_bsz)

    def lookup_shape(self, nodes: int, replicas: int, local_bsz: float) -> tuple[float, float] | None:
        """(step, sync) by (nodes, replicas, local batch) in the triangulation of the measured points, or ``None``.

        A coordinate that every measured point shares (the artifact's rtx6000 rows are all on one node) leaves the
        points flat in three dimensions, where a triangulation does not exist (the published ``LinearNDInterpolator``
        raises ``QhullError``): the interpolation then runs over the coordinates that vary, and a query off the
        shared value is outside the measurements (``None``). Points that are degenerate otherwise (collinear in
        the varying coordinates) answer ``None`` too, so the caller falls back to the fitted model."""
        q = np.array([min(int(nodes), MAX_NODES), int(replicas), float(local_bsz)], dtype=float)
        if self._nd is None:
            self._nd = _Interpolator(self.points, self.values)
        got = self._nd(q)
        if got is None or not np.all(np.isfinite(got)):
            return None
        return float(got[0]), float(got[1])


class _Interpolator:
    """Linear interpolation over the measured points' varying coordinates (see :meth:`MeasuredProfile.lookup_shape`)."""

    def __init__(self, points: np.ndarray, values: np.ndarray) -> None:
        spread = np.ptp(points, axis=0)
        self.fixed, self.free = np.flatnonzero(spread == 0), np.flatnonzero(spread > 0)
        self.at = points[0, self.fixed]
        self.values = values
        self.nd: Any = None
        self.x: np.ndarray | None = None
        if self.free.size >= 2:
            try:
                self.nd = _linear_nd_interpolator()(points[:, self.free], values)
            except _qhull_error():  # degenerate in the varying coordinates too: nothing to interpolate in
                self.nd = None
        elif self.free.size == 1:
            x = points[:, self.free[0]]
            order = np.argsort(x, kind="stable")
            self.x, self.values = x[order], values[order]

    def __call__(self, q: np.ndarray) -> np.ndarray | None:
        if np.any(q[self.fixed] != self.at):
            return None
        if self.free.size >= 2:
            return None if self.nd is None else np.asarray(self.nd(q[self.free][None, :])[0])
        if self.free.size == 1:
            x = float(q[self.free[0]])
            if self.x is None or not self.x[0] <= x <= self.x[-1]:
                return None
            return np.array([np.interp(x, self.x, self.values[:, k]) for k in range(self.values.shape[1])])
        return np.asarray(self.values[0])


@cache
def _interpnd() -> Any:
    """scipy's compiled ``scipy.interpolate._interpnd``, loaded without ``scipy/interpolate/__init__.py``, which
    imports ``scipy.optimize`` (about 0.2 s of CPU a simulation otherwise never spends), nor
    ``scipy/spatial/__init__.py`` and ``scipy/linalg/__init__.py`` for the triangulation's ``scipy.spatial._qhull``
    (about 0.1 s more: ``scipy.linalg``, ``scipy.special``, the rotations; :func:`schedopt.scipy_parts.load_extension`);
    None on any problem (another scipy's layout: the callers take the public names)."""
    try:
        return load_extension("interpolate", "_interpnd", skip_init=("spatial", "linalg"))
    except Exception:
        return None


@cache
def _linear_nd_interpolator() -> Any:
    """scipy's ``LinearNDInterpolator`` class, from its compiled module (:func:`_interpnd`); the normal import
    on any problem."""
    mod = _interpnd()
    if mod is not None and hasattr(mod, "LinearNDInterpolator"):
        return mod.LinearNDInterpolator
    from scipy.interpolate import LinearNDInterpolator

    return LinearNDInterpolator


@cache
def _qhull_error() -> type[Exception]:
    """``scipy.spatial.QhullError``, the triangulation's error: taken from the module the compiled interpolator
    uses (:func:`_interpnd`), so that ``scipy.spatial``'s ``__init__.py`` need not run; the public name otherwise."""
    mod = _interpnd()
    err = getattr(getattr(mod, "qhull", None), "QhullError", None)
    if isinstance(err, type) and issubclass(err, Exception):
        return err
    from scipy.spatial import QhullError

    return cast(type[Exception], QhullError)


@cache
def _doc() -> dict[str, Any]:
    return json.loads(resources.files("schedopt.sim").joinpath("data/measured_profiles.json").read_text())


def measured_types(app: str) -> tuple[str, ...]:
    """GPU types with measurements of ``app`` (empty for an application without any)."""
    return tuple(sorted(_doc()["applications"].get(app, {})))


@cache
def profile(app: str, gpu_type: str) -> MeasuredProfile | None:
    """The measured rows of ``app`` on ``gpu_type`` (``None`` when there are none)."""
    d = _doc()["applications"].get(app, {}).get(gpu_type)
    if d is None:
        return None
    by: dict[str, dict[float, list[tuple[float, float]]]] = {}
    shape: dict[tuple[int, int, float], list[tuple[float, float]]] = {}
    for pid, b, st, sy in d["placements"]:
        p = normalize_placement([int(c) for c in pid])
        by.setdefault(_key(p), {}).setdefault(float(b), []).append((st, sy))
        shape.setdefault((len(p), sum(p), float(b)), []).append((st, sy))
    placements = {}
    for k, rows in by.items():
        bs = np.array(sorted(rows))
        v = np.array([_mean_row(rows[b]) for b in bs])
        placements[k] = (bs, v[:, 0].copy(), v[:, 1].copy())
    # placement rows averaged per (nodes, replicas, local batch), then the scalability rows at other points
    pts = {k: _mean_row(v) for k, v in shape.items()}
    extra: dict[tuple[int, int, float], list[tuple[float, float]]] = {}
    for n, r, b, st, sy in d["scalability"]:
        sk = (int(n), int(r), float(b))
        if sk not in pts:
            extra.setdefault(sk, []).append((st, sy))
    pts.update({k: _mean_row(v) for k, v in extra.items()})
    keys = sorted(pts)
    return MeasuredProfile(app, gpu_type, placements, np.array(keys, dtype=float),
                           np.array([pts[k] for k in keys], dtype=float))


def _mean_row(rows: list[tuple[float, float]]) -> tuple[float, float]:
    """``np.mean(rows, axis=0)`` as a pair of floats; one row (most keys) is its own mean (``x / 1``), without numpy."""
    if len(rows) == 1:
        st, sy = rows[0]
        return float(st), float(sy)
    st, sy = np.mean(rows, axis=0)
    return float(st), float(sy)


@lru_cache(maxsize=200_000)
def lookup(app: str, gpu_type: str, placement: tuple[int, ...], local_bsz: float) -> tuple[float, float] | None:
    """(step time, sync time) of ``app`` on ``gpu_type`` at ``placement`` (GPUs per node) and ``local_bsz``, or
    ``None`` where nothing was measured (see the module docstring)."""
    prof = profile(app, gpu_type)
    return None if prof is None else prof.lookup(placement, local_bsz)


@lru_cache(maxsize=200_000)
def lookup_shape(app: str, gpu_type: str, nodes: int, replicas: int, local_bsz: float) -> tuple[float, float] | None:
    """(step, sync) by shape: the placement rows of a shape averaged when measured at ``local_bsz``, else the
    triangulation; ``None`` outside the measurements."""
    prof = profile(app, gpu_type)
    return None if prof is None else prof.lookup_shape(nodes, replicas, local_bsz)


def step_time(app: str, gpu_type: str, placement: tuple[int, ...], local_bsz: int, accum: int) -> float | None:
    """Seconds per iteration with ``accum`` accumulation steps: ``step + accum * (step - sync)`` of the measured
    (interpolated) times (the published ``Job.step``), or ``None`` where nothing was measured."""
    got = lookup(app, gpu_type, placement, float(local_bsz))
    if got is None:
        return None
    st, sy = got
    return st + accum * (st - sy)


def fit_errors(apps: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """Per (application, GPU type): the fitted zoo model's error against the measured placement rows --
    ``rms_log_error`` of the step time, the worst relative error, and ``one_gpu_ratio`` = fitted / measured
    throughput on 1 GPU at the largest measured 1-GPU local batch."""
    from .. import zoo

    out = []
    for app in apps if apps is not None else sorted(_doc()["applications"]):
        m = zoo.load_model(app)
        for t in measured_types(app):
            prof = profile(app, t)
            if prof is None or t not in m.params:
                continue
            p = m.params[t]
            logs, rel = [], []
            for k, (bs, st, _) in prof.placements.items():
                pl = [int(c) for c in (k.split(",") if "," in k else k)]
                fit = np.asarray(p.step_time(len(pl), sum(pl), bs), dtype=float)
                logs.extend(np.log(fit / st))
                rel.extend(np.abs(fit / st - 1))
            b1, s1, _ = prof.placements["1"]
            ratio = float(s1[-1] / float(p.step_time(1, 1, b1[-1])))
            out.append({"app": app, "gpu_type": t, "rows": len(logs),
                        "rms_log_error": float(np.sqrt(np.mean(np.square(logs)))),
                        "max_rel_error": float(np.max(rel)), "one_gpu_local_bsz": int(b1[-1]),
                        "one_gpu_ratio": ratio})
    return out
