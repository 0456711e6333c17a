"""Statistical efficiency, goodput optimisation, Sia's bootstrap and the per-job bundle."""

from __future__ import annotations

import itertools
import math
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property, lru_cache
from typing import Any, Protocol

import numpy as np

from ._throughput import NET_EPS, PARAM_NAMES, ThroughputParams
from ._validate import (
    InputError,
    as_float_array,
    check_nonnegative,
    check_placement,
    check_positive,
)

__all__ = [
    "N_CANDIDATES",
    "GoodputModel",
    "GoodputResult",
    "JobGoodputModel",
    "bootstrap",
    "bootstrap_params",
    "efficiency",
    "goodput",
    "goodput_matrix",
]

#: Number of geometric candidate global batch sizes (as in Pollux's ``np.geomspace`` default).
N_CANDIDATES = 50
_EPS = 1e-8  # tolerance for floor / ceil


def efficiency(batch: Any, init_batch: Any, grad_sqr: Any, grad_var: Any) -> np.ndarray:
    """Pollux statistical efficiency ``E(B) = gain / scale``, ``scale = B / B0``.

    ``gain = (var + sqr) / (var / scale + sqr)``, i.e. ``E = (var + sqr) / (var + sqr * scale)``;
    ``E(B0) = 1`` and E is strictly decreasing in B when ``sqr > 0``.  If ``var + sqr * scale == 0``
    (no gradient signal at all) the gain is taken as 1, as in Pollux.
    """
    B = as_float_array("batch", batch)
    B0 = as_float_array("init_batch", init_batch)
    sqr = as_float_array("grad_sqr", grad_sqr)
    var = as_float_array("grad_var", grad_var)
    check_positive("batch", B)
    check_positive("init_batch", B0)
    check_nonnegative("grad_sqr", sqr)
    check_nonnegative("grad_var", var)
    return _efficiency(B, B0, sqr, var)


def _efficiency(B: np.ndarray, B0: Any, sqr: Any, var: Any) -> np.ndarray:
    scale = B / B0
    denom = var + sqr * scale
    safe = np.where(denom > 0, denom, 1.0)
    return np.where(denom > 0, (var + sqr) / safe, 1.0 / scale)


@dataclass(frozen=True)
class GoodputResult:
    """Best configuration per (nodes, replicas) point; arrays have the broadcast shape of the inputs.

    ``batch_size == replicas * local_bsz * (accum_steps + 1)`` exactly.  Infeasible points (no candidate
    batch fits the local-batch limits and the max batch) have ``feasible == False`` and zeros elsewhere.
    """

    goodput: np.ndarray
    batch_size: np.ndarray
    local_bsz: np.ndarray
    accum_steps: np.ndarray
    throughput: np.ndarray
    efficiency: np.ndarray
    feasible: np.ndarray


#: scalar types :func:`_check_scalar` checks in Python: their ``float()`` is numpy's conversion to float64
_PLAIN = frozenset({float, int, np.float64, np.int64})


def _check_scalar(name: str, value: Any, positive: bool = True) -> float:
    if type(value) in _PLAIN:  # the same checks, the same errors, without a 0-d array
        v = float(value)
        if not math.isfinite(v):
            raise InputError(name, v, "must be finite (no NaN or inf)")
        if positive and not v > 0:
            raise InputError(name, v, "must be > 0")
        return v
    arr = as_float_array(name, value)
    if arr.ndim != 0:
        raise InputError(name, value, "must be a scalar")
    if positive:
        check_positive(name, arr)
    return float(arr)


def goodput(
    params: ThroughputParams,
    nodes: Any,
    replicas: Any,
    *,
    init_batch: float,
    max_batch: float,
    grad_sqr: float,
    grad_var: float,
    local_bsz_range: tuple[float, float] | None = None,
    accumulation: bool = True,
    n_candidates: int = N_CANDIDATES,
) -> GoodputResult:
    """Maximise ``throughput * efficiency`` over global batch sizes for each (nodes, replicas) point.

    Candidates: ``n_candidates`` geometric points between ``max(B0, r * min_local)`` and ``max_batch``.
    For candidate ``B`` the local batch is ``B / r``; with accumulation ``s = ceil(B / r / max_local) - 1``
    and ``b = ceil(B / (r (s + 1)))``, without it ``s = 0`` and ``b = ceil(B / r)``.  The realised batch
    ``r b (s + 1)`` is what is evaluated and returned.  A candidate is valid when ``min_local <= b <= max_local``
    and the realised batch is at most ``max_batch`` (the first candidate may exceed it by the rounding).
    Fully vectorised: one (n_candidates x points) array pass, no Python loop over points.
    """
    if not isinstance(params, ThroughputParams):
        raise InputError("params", type(params).__name__, "must be a ThroughputParams")
    B0 = _check_scalar("init_batch", init_batch)
    Bmax = _check_scalar("max_batch", max_batch)
    if Bmax < B0:
        raise InputError("max_batch", max_batch, f"must be >= init_batch ({B0})")
    sqr = as_float_array("grad_sqr", grad_sqr)
    var = as_float_array("grad_var", grad_var)
    check_nonnegative("grad_sqr", sqr)
    check_nonnegative("grad_var", var)
    if local_bsz_range is None:
        lo_b, hi_b = 1.0, Bmax
    else:
        if len(local_bsz_range) != 2:
            raise InputError("local_bsz_range", local_bsz_range, "must be (min, max)")
        lo_b = _check_scalar("local_bsz_range[0]", local_bsz_range[0])
        hi_b = _check_scalar("local_bsz_range[1]", local_bsz_range[1])
        if hi_b < lo_b:
            raise InputError("local_bsz_range", local_bsz_range, "max must be >= min")
    if int(n_candidates) < 1:
        raise InputError("n_candidates", n_candidates, "must be >= 1")
    n, r = check_placement(nodes, replicas)
    shape = n.shape
    try:
        sqr = np.broadcast_to(sqr, shape).ravel()
        var = np.broadcast_to(var, shape).ravel()
    except ValueError:
        raise InputError("grad_sqr", sqr.shape, f"must broadcast to the placement shape {shape}") from None
    n, r = n.ravel(), r.ravel()

    gp, real_B, b, s, xput, eff, idx, cols, ok = _search(
        params, n, r, B0, Bmax, sqr, var, lo_b, hi_b, accumulation, int(n_candidates)
    )

    def pick(a: np.ndarray, dtype: Any = float) -> np.ndarray:
        return np.where(ok, a[idx, cols], 0).astype(dtype).reshape(shape)

    return GoodputResult(
        goodput=pick(gp),
        batch_size=pick(real_B, np.int64),
        local_bsz=pick(b, np.int64),
        accum_steps=pick(s, np.int64),
        throughput=pick(xput),
        efficiency=pick(eff),
        feasible=ok.reshape(shape),
    )


_GRIDS: dict[int, np.ndarray] = {}


def _unit_grid(n: int) -> np.ndarray:
    """``linspace(0, 1, n)[:, None]`` (read-only, cached per n)."""
    g = _GRIDS.get(n)
    if g is None:
        g = np.linspace(0.0, 1.0, n)[:, None]
        g.setflags(write=False)
        if len(_GRIDS) < 64:
            _GRIDS[n] = g
    return g


class _StepTimer(Protocol):
    def _step_time(self, n: np.ndarray, r: np.ndarray, b: np.ndarray, s: np.ndarray) -> np.ndarray: ...


class _ParamColumns:
    """The seven throughput parameters as arrays, one entry per point (a column of the candidate grid): the step
    time of :meth:`ThroughputParams._step_time` with per-point parameters, the same arithmetic in the same order
    (so the values are bit for bit those of the scalar path; ``tests/test_goodput_matrix.py`` checks it)."""

    def __init__(self, theta: np.ndarray) -> None:  # theta: (7, K)
        (self.alpha_c, self.beta_c, self.alpha_n, self.beta_n, self.alpha_r, self.beta_r,
         self.gamma) = (theta[k] for k in range(7))

    def _step_time(self, n: np.ndarray, r: np.ndarray, b: np.ndarray, s: np.ndarray) -> np.ndarray:
        t_c = self.alpha_c + self.beta_c * b
        multi, within = n > 1, r > 1
        alpha = np.where(multi, self.alpha_n, np.where(within, self.alpha_r, NET_EPS))
        beta = np.where(multi, self.beta_n, np.where(within, self.beta_r, NET_EPS))
        t_n = alpha + beta * np.maximum(r - 2, NET_EPS)
        g = self.gamma
        m = np.maximum(t_c, t_n)
        m_safe = np.where(m > 0, m, 1.0)
        return s * t_c + m * _pow(_pow(t_c / m_safe, g) + _pow(t_n / m_safe, g), 1.0 / g)


def _pow(x: np.ndarray, e: np.ndarray) -> np.ndarray:
    """``x ** e`` with an exponent per point, as numpy computes ``x ** float(e)`` point by point: a scalar exponent of
    2 or 0.5 is a square or a square root there (numpy's fast paths), which can differ from ``pow`` by one ulp (a
    gamma of exactly 2 did in about 5 % of points); other exponents are ``pow`` in both (1 gives ``x`` exactly)."""
    out = x ** e
    for v, f in ((2.0, np.square), (0.5, np.sqrt)):
        hit = e == v
        if np.any(hit):
            np.copyto(out, f(x), where=np.broadcast_to(hit, out.shape))
    return out


#: goodput_matrix's candidate tables per (points, model): what its search computes before the gradient statistics
#: (the realised batch, the validity and the throughput of every candidate at each of the model's points), kept for
#: the models that come back with other statistics only (a simulated job's estimate at its next epoch shares its
#: throughput parameters); at most :data:`_CANDS_MAX` entries, the least recently used dropped first
_CANDS: dict[tuple[Any, ...], tuple[tuple[Any, ...], np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = {}
_CANDS_MAX = 64
_POINTS: dict[tuple[Any, ...], int] = {}  # the point sets seen, numbered (the tables' keys name them by number)
_POINT_IDS = itertools.count()  # (never reused: a table kept under a forgotten point set's number is never hit)
_CANDS_LOCK = threading.Lock()  # simulations on threads share the tables


def goodput_matrix(models: Sequence[JobGoodputModel], gpu_types: Sequence[str], nodes: np.ndarray,
                   replicas: np.ndarray) -> np.ndarray:
    """``models[i].goodput_values(gpu_types[k], nodes[k], replicas[k])`` for every model and point, as one
    (models x points) array computed in one vectorised candidate search over all (model, point) pairs (no Python
    loop per model or type); 0 where a model has no parameters for the point's type. ``nodes`` / ``replicas``:
    valid integral points (nodes >= 1, replicas >= nodes; unchecked, as in :meth:`JobGoodputModel.goodput_values`).
    The values equal the per-model :meth:`JobGoodputModel.goodput` ones (the same arithmetic per point).

    The part of the search that does not depend on the gradient statistics (each candidate's batch, validity and
    throughput) is kept per (points, model's throughput parameters, batch limits), so a model that comes back with
    new statistics only (a simulated job's estimate at its next epoch) pays the statistics' part alone: the same
    floats, element for element (numpy's elementwise functions give an element the same value wherever it sits)."""
    from operator import attrgetter

    M, K = len(models), len(gpu_types)
    out = np.zeros((M, K))
    if not M or not K:
        return out
    names = sorted(set(gpu_types))
    pos = {t: k for k, t in enumerate(names)}
    tix = np.array([pos[t] for t in gpu_types], dtype=np.int64)
    n_all = np.asarray(nodes, dtype=np.float64)
    r_all = np.asarray(replicas, dtype=np.float64)
    pkey = (tuple(gpu_types), n_all.tobytes(), r_all.tobytes())
    with _CANDS_LOCK:
        pid = _POINTS.get(pkey)
        if pid is None:
            if len(_POINTS) > 64:
                _POINTS.clear()
                _CANDS.clear()
            pid = _POINTS[pkey] = next(_POINT_IDS)
    T = len(names)
    scal = []  # init_batch, max_batch, grad_sqr, grad_var at init_batch
    blocks: list[Any] = [None] * M  # per model: (kk, real_B, valid, xput), or its key when it is to be computed
    miss: list[int] = []
    for i, mdl in enumerate(models):
        params, limits = mdl.params, mdl.local_bsz_limits
        ps = tuple(params.get(t) for t in names)
        key = (pid, mdl.init_batch, mdl.max_batch, tuple(map(id, ps)),
               tuple(None if p is None else limits[t] for t, p in zip(names, ps)))
        with _CANDS_LOCK:
            got = _CANDS.pop(key, None)
            if got is not None:
                _CANDS[key] = got  # the most recently used last
        if got is not None and all(a is b for a, b in zip(got[0], ps)):
            blocks[i] = got[1:]
        else:
            blocks[i] = (key, ps)
            miss.append(i)
        stats = mdl.__dict__.get("_stats_b0")
        if stats is None:
            if type(mdl) is JobGoodputModel and len(mdl.grad_batch) == 1:
                # a one-entry table: the interpolation (clamped at both ends) is that entry whatever the batch
                stats = (mdl.grad_sqr[0], mdl.grad_var[0])
            else:
                stats = mdl._stats_b0
        scal.append((mdl.init_batch, mdl.max_batch, *stats))
    if miss:
        Mm = len(miss)
        theta = np.zeros((Mm, T, 7))
        lims = np.ones((Mm, T, 2))
        has = np.zeros((Mm, T), dtype=bool)
        at_i, at_k, th, lm = [], [], [], []  # (model, type) entries, gathered in Python and stored in one assignment
        values = attrgetter(*PARAM_NAMES)
        for j, i in enumerate(miss):
            limits = models[i].local_bsz_limits
            for k, p in enumerate(blocks[i][1]):
                if p is None:
                    continue
                at_i.append(j)
                at_k.append(k)
                th.append(values(p))
                lm.append(limits[names[k]])
        if at_i:
            has[at_i, at_k] = True
            theta[at_i, at_k] = th
            lims[at_i, at_k] = lm
        mm, kk = np.nonzero(has[:, tix])
        tt = tix[kk]
        sc = np.array([scal[i] for i in miss], dtype=np.float64)[mm]
        real_B, _, _, valid, xput = _candidates(_ParamColumns(theta[mm, tt].T), n_all[kk], r_all[kk], sc[:, 0],
                                                sc[:, 1], lims[mm, tt, 0], lims[mm, tt, 1], True, N_CANDIDATES)
        ends = np.searchsorted(mm, np.arange(Mm + 1)).tolist()  # each model's pairs (mm is sorted)
        for j, i in enumerate(miss):
            a, b = ends[j], ends[j + 1]
            key, ps = blocks[i]
            kk_i, rb_i, va_i, xp_i = kk[a:b], real_B[:, a:b], valid[:, a:b], xput[:, a:b]
            for arr in (kk_i, rb_i, va_i, xp_i):
                arr.setflags(write=False)
            with _CANDS_LOCK:
                while len(_CANDS) >= _CANDS_MAX:
                    del _CANDS[next(iter(_CANDS))]
                _CANDS[key] = (ps, kk_i, rb_i, va_i, xp_i)
            blocks[i] = (kk_i, rb_i, va_i, xp_i)
    sizes = [b[0].size for b in blocks]
    if not sum(sizes):
        return out
    mm = np.repeat(np.arange(M), sizes)
    kk, real_B, valid, xput = (np.concatenate(parts, axis=-1) for parts in zip(*blocks))
    sc = np.array(scal, dtype=np.float64)[mm]
    gp, _, idx, c, ok = _pick(real_B, valid, xput, sc[:, 0], sc[:, 2], sc[:, 3])
    out[mm, kk] = np.where(ok, gp[idx, c], 0.0)
    return out


def _search(params: _StepTimer, n: np.ndarray, r: np.ndarray, B0: Any, Bmax: Any, sqr: Any, var: Any,
            lo_b: Any, hi_b: Any, accumulation: bool, n_candidates: int) -> tuple[np.ndarray, ...]:
    """The candidate search of :func:`goodput` on validated flat (K,) float arrays ``n``, ``r`` (no input checks):
    (goodput, realised batch, local batch, accumulation steps, throughput, efficiency) as (C x K) arrays, then
    the best candidate row per point, the point indices and the feasibility per point."""
    real_B, b, s, valid, xput = _candidates(params, n, r, B0, Bmax, lo_b, hi_b, accumulation, n_candidates)
    gp, eff, idx, cols, ok = _pick(real_B, valid, xput, B0, sqr, var)
    return gp, real_B, b, s, xput, eff, idx, cols, ok


def _candidates(params: _StepTimer, n: np.ndarray, r: np.ndarray, B0: Any, Bmax: Any, lo_b: Any, hi_b: Any,
                accumulation: bool, n_candidates: int) -> tuple[np.ndarray, ...]:
    """The part of :func:`_search` that does not depend on the gradient statistics: (realised batch, local batch,
    accumulation steps, validity, throughput) per candidate and point."""
    lo_B = np.maximum(B0, r * lo_b)  # (K,)
    hi_B = np.maximum(lo_B, Bmax)
    t = _unit_grid(n_candidates)  # (C, 1)
    log_lo = np.log(lo_B)
    cand = np.exp(log_lo + t * (np.log(hi_B) - log_lo))  # (C, K)
    local = cand / r
    if accumulation:
        s = np.maximum(np.ceil(local / hi_b - _EPS) - 1, 0)
    else:
        s = np.zeros_like(local)
    b = np.ceil(local / (s + 1) - _EPS)
    real_B = r * b * (s + 1)
    valid = (b >= lo_b - _EPS) & (b <= hi_b + _EPS) & (lo_B <= Bmax * (1 + _EPS))
    valid[1:] &= real_B[1:] <= Bmax * (1 + _EPS)  # the first candidate may exceed max_batch by the rounding

    xput = real_B / params._step_time(n, r, b, s)
    return real_B, b, s, valid, xput


def _pick(real_B: np.ndarray, valid: np.ndarray, xput: np.ndarray, B0: Any, sqr: Any,
          var: Any) -> tuple[np.ndarray, ...]:
    """The rest of :func:`_search`: (goodput, efficiency, best row per point, point indices, feasibility)."""
    eff = _efficiency(real_B, B0, sqr, var)
    gp = np.where(valid, xput * eff, -np.inf)
    idx = np.argmax(gp, axis=0)
    cols = np.arange(gp.shape[1])
    ok = valid[idx, cols]
    return gp, eff, idx, cols, ok


@lru_cache(maxsize=8192)  # five arrays of 50 candidates each: at most ~20 MB
def _point_candidates(params: ThroughputParams, nodes: int, replicas: int, B0: float, Bmax: float, lo: float,
                      hi: float) -> tuple[np.ndarray, ...]:
    """:func:`_candidates` of one point with accumulation, kept per process (read-only): a simulator's jobs ask for
    the same (model, shape, limits) at every epoch boundary with new gradient statistics only."""
    out = _candidates(params, np.array([float(nodes)]), np.array([float(replicas)]), B0, Bmax, lo, hi, True,
                      N_CANDIDATES)
    for a in out:
        a.setflags(write=False)
    return out


def best_point(params: ThroughputParams, nodes: int, replicas: int, init_batch: float, max_batch: float,
               grad_sqr: float, grad_var: float, local_bsz_range: tuple[float, float]) -> tuple[bool, int, int]:
    """``(feasible, local_bsz, accum_steps)`` of :func:`goodput` with accumulation at one (nodes, replicas) point,
    for a caller whose arguments the library made (a simulator's truth): the same search on the same arrays, so the
    same answer, without the input checks. Arguments it cannot vouch for (negative or non-finite statistics, a
    point or range out of bounds) go through :func:`goodput`, which raises as it always does."""
    lo, hi = local_bsz_range
    if not (type(params) is ThroughputParams and type(nodes) is int and type(replicas) is int and 1 <= nodes <= replicas
            and grad_sqr >= 0 and grad_var >= 0
            and math.isfinite(grad_sqr) and math.isfinite(grad_var) and 0 < lo <= hi and math.isfinite(hi)
            and 0 < init_batch <= max_batch and math.isfinite(max_batch)):
        res = goodput(params, nodes, replicas, init_batch=init_batch, max_batch=max_batch, grad_sqr=grad_sqr,
                      grad_var=grad_var, local_bsz_range=local_bsz_range, accumulation=True)
        return bool(res.feasible), int(res.local_bsz), int(res.accum_steps)
    scale, xput, smin, b, s = _point_table(params, nodes, replicas, float(init_batch), float(max_batch), float(lo),
                                           float(hi))
    if not b:  # no valid candidate: _pick's argmax lands on an invalid one
        return False, 0, 0
    # _pick's search on this one point over its valid candidates (the invalid ones are -inf there, never the first
    # maximum), element for element the same IEEE operations: _efficiency's ``var + sqr * scale`` and
    # ``(var + sqr) / denom``, its where-branch when a denominator is not positive (which gives the other elements
    # the same values). Every denominator is positive exactly when ``var > 0`` or ``sqr * min(scale) > 0``
    # (``sqr, var >= 0`` and ``scale > 0``: ``var + sqr * scale`` is ``var`` plus a non-negative product, or that
    # product alone, which rounding keeps monotone in ``scale``)
    sqr, var = float(grad_sqr), float(grad_var)
    if var > 0 or sqr * smin > 0:
        gp = xput * ((var + sqr) / (var + sqr * scale))
    else:
        denom = var + sqr * scale
        pos = denom > 0
        gp = xput * np.where(pos, (var + sqr) / np.where(pos, denom, 1.0), 1.0 / scale)
    k = int(gp.argmax())
    return True, int(b[k]), int(s[k])


@lru_cache(maxsize=8192)
def _point_table(params: ThroughputParams, nodes: int, replicas: int, B0: float, Bmax: float, lo: float,
                 hi: float) -> tuple[Any, ...]:
    """:func:`best_point`'s view of :func:`_point_candidates`, its valid candidates only, in order: their
    ``scale = B / B0`` (as :func:`_efficiency` divides) and throughput as flat read-only arrays, the smallest scale
    (0.0 when none is valid), and their local batches and accumulation steps as lists (kept per process)."""
    real_B, b, s, valid, xput = _point_candidates(params, nodes, replicas, B0, Bmax, lo, hi)
    v = valid.ravel()
    scale, xp = (real_B / B0).ravel()[v], xput.ravel()[v]
    for a in (scale, xp):
        a.setflags(write=False)
    return scale, xp, float(scale.min()) if scale.size else 0.0, b.ravel()[v].tolist(), s.ravel()[v].tolist()


def bootstrap(xput_b_1gpu: Any, xput_a_1gpu: Any, xput_a: Any, *args: Any, **kwargs: Any) -> np.ndarray:
    """Sia's estimate of throughput on a GPU type B the job has not run on.

    ``est_xput_B(N) = xput_B(1) / xput_A(1) * xput_A(N)``, broadcasting over arrays.

    Convenience form: ``bootstrap(params_a, xput_a_1gpu, xput_b_1gpu, nodes, replicas, local_bsz,
    accum_steps=0)`` evaluates ``xput_A(N)`` from ``params_a`` (see :func:`bootstrap_params`).
    """
    if isinstance(xput_b_1gpu, ThroughputParams):
        params_a, xa1_, xb1_ = xput_b_1gpu, _check_scalar("xput_a_1gpu", xput_a_1gpu), _check_scalar("xput_b_1gpu", xput_a)
        return xb1_ / xa1_ * params_a.throughput(*_pad(args, kwargs))
    if args or kwargs:
        raise InputError("args", args or kwargs, "the formula form takes exactly three arguments")
    xb = as_float_array("xput_b_1gpu", xput_b_1gpu)
    xa1 = as_float_array("xput_a_1gpu", xput_a_1gpu)
    xa = as_float_array("xput_a", xput_a)
    check_positive("xput_b_1gpu", xb)
    check_positive("xput_a_1gpu", xa1)
    check_nonnegative("xput_a", xa)
    return xb / xa1 * xa


def _pad(args: tuple, kwargs: dict) -> tuple:
    names = ("nodes", "replicas", "local_bsz", "accum_steps")
    vals = list(args) + [kwargs[k] for k in names[len(args):] if k in kwargs]
    if len(vals) < 3:
        raise InputError("args", args, "convenience form needs nodes, replicas, local_bsz")
    return tuple(vals)


def bootstrap_params(params_a: ThroughputParams, xput_a_1gpu: float, xput_b_1gpu: float) -> ThroughputParams:
    """Throughput parameters for type B implied by Sia's bootstrap: type A's step times scaled by
    ``xput_A(1) / xput_B(1)`` (valid because T_o is 1-homogeneous in (T_c, T_net)), so that
    ``params_b.throughput(...) == xput_B(1) / xput_A(1) * params_a.throughput(...)`` everywhere."""
    if not isinstance(params_a, ThroughputParams):
        raise InputError("params_a", type(params_a).__name__, "must be a ThroughputParams")
    xa1 = _check_scalar("xput_a_1gpu", xput_a_1gpu)
    xb1 = _check_scalar("xput_b_1gpu", xput_b_1gpu)
    return params_a.scaled(xa1 / xb1)


def _interp_log(x: np.ndarray, xp: np.ndarray, fp: np.ndarray) -> np.ndarray:
    return np.interp(np.log(x), np.log(xp), fp)


def _sorted_stats(gb: Any, gs: Any, gv: Any) -> bool:
    """Whether a gradient table is valid and already what :class:`JobGoodputModel` makes of it, checked in Python:
    tuples or lists of plain numbers of one non-zero length, batches finite, > 0 and strictly increasing (so the sort
    keeps the order), statistics finite and >= 0. Anything else takes the general checks, which raise."""
    if not (type(gb) in _SEQ and type(gs) in _SEQ and type(gv) in _SEQ and 0 < len(gb) == len(gs) == len(gv)):
        return False
    last = 0.0
    for b, s, v in zip(gb, gs, gv):
        if not (type(b) in _PLAIN and type(s) in _PLAIN and type(v) in _PLAIN):
            return False
        b, s, v = float(b), float(s), float(v)
        if not (last < b and math.isfinite(b) and 0 <= s and math.isfinite(s) and 0 <= v and math.isfinite(v)):
            return False
        last = b
    return True


_SEQ = (tuple, list)


@dataclass(frozen=True)
class JobGoodputModel:
    """Everything the goodput model needs for one job (application), on every GPU type it has.

    ``grad_batch``/``grad_sqr``/``grad_var`` is a table of gradient statistics measured at those global
    batch sizes (length >= 1), interpolated linearly in log-batch and clamped at the ends.
    """

    name: str
    params: Mapping[str, ThroughputParams]
    init_batch: float
    max_batch: float
    local_bsz_limits: Mapping[str, tuple[int, int]]
    grad_batch: tuple[float, ...]
    grad_sqr: tuple[float, ...]
    grad_var: tuple[float, ...]
    max_epochs: int | None = None
    meta: Mapping[str, Any] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        B0 = _check_scalar("init_batch", self.init_batch)
        Bmax = _check_scalar("max_batch", self.max_batch)
        if Bmax < B0:
            raise InputError("max_batch", self.max_batch, f"must be >= init_batch ({B0})")
        object.__setattr__(self, "init_batch", B0)
        object.__setattr__(self, "max_batch", Bmax)
        if not self.params:
            raise InputError("params", dict(self.params), "need at least one GPU type")
        for k, p in self.params.items():
            if not isinstance(p, ThroughputParams):
                raise InputError(f"params[{k!r}]", p, "must be a ThroughputParams")
        if set(self.params) != set(self.local_bsz_limits):
            raise InputError("local_bsz_limits", sorted(self.local_bsz_limits),
                             f"keys must equal the params keys {sorted(self.params)}")
        lims = {}
        for k, (lo, hi) in self.local_bsz_limits.items():
            lo_f, hi_f = _check_scalar(f"local_bsz_limits[{k!r}]", lo), _check_scalar(f"local_bsz_limits[{k!r}]", hi)
            if hi_f < lo_f:
                raise InputError(f"local_bsz_limits[{k!r}]", (lo, hi), "max must be >= min")
            lims[k] = (int(lo_f), int(hi_f))
        object.__setattr__(self, "params", dict(self.params))
        object.__setattr__(self, "local_bsz_limits", lims)
        if _sorted_stats(self.grad_batch, self.grad_sqr, self.grad_var):  # already in the normal form
            for name in ("grad_batch", "grad_sqr", "grad_var"):
                object.__setattr__(self, name, tuple(float(v) for v in getattr(self, name)))
            return
        gb = as_float_array("grad_batch", self.grad_batch).ravel()
        gs = as_float_array("grad_sqr", self.grad_sqr).ravel()
        gv = as_float_array("grad_var", self.grad_var).ravel()
        if not (gb.size == gs.size == gv.size) or gb.size == 0:
            raise InputError("grad_batch", (gb.size, gs.size, gv.size),
                             "grad_batch, grad_sqr, grad_var must be non-empty and of equal length")
        check_positive("grad_batch", gb)
        check_nonnegative("grad_sqr", gs)
        check_nonnegative("grad_var", gv)
        order = np.argsort(gb)
        for name, arr in (("grad_batch", gb), ("grad_sqr", gs), ("grad_var", gv)):
            object.__setattr__(self, name, tuple(float(v) for v in arr[order]))

    @property
    def gpu_types(self) -> list[str]:
        return list(self.params)

    def with_batch_cap(self, cap: float) -> JobGoodputModel:
        """The same model with the global batch capped at ``cap`` (never below ``init_batch``, never above
        ``max_batch``): ``self`` when that changes nothing. The published Sia simulator values each adaptive job
        this way with the workload's requested batch as the cap (``job.py`` ``get_speedup_fn``:
        ``max_batch_size = target_batch_size``)."""
        c = _check_scalar("cap", cap)
        m = max(min(self.max_batch, c), self.init_batch)
        return self if m == self.max_batch else replace(self, max_batch=m)

    def _type(self, gpu_type: str) -> ThroughputParams:
        try:
            return self.params[gpu_type]
        except KeyError:
            raise InputError("gpu_type", gpu_type, f"unknown for {self.name!r}; have {sorted(self.params)}") from None

    def grad_stats(self, batch: Any | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(grad_sqr, grad_var) interpolated at global batch ``batch`` (default: init_batch)."""
        B = as_float_array("batch", self.init_batch if batch is None else batch)
        check_positive("batch", B)
        xp = np.array(self.grad_batch)
        return (_interp_log(B, xp, np.array(self.grad_sqr)), _interp_log(B, xp, np.array(self.grad_var)))

    @cached_property
    def _stats_b0(self) -> tuple[float, float]:
        """``grad_stats()`` at init_batch as floats (computed once; the model is frozen)."""
        sqr, var = self.grad_stats(None)
        return float(sqr), float(var)

    def efficiency(self, batch: Any, stats_batch: float | None = None) -> np.ndarray:
        """Statistical efficiency of ``batch`` with the gradient statistics at ``stats_batch`` (default B0)."""
        sqr, var = self.grad_stats(stats_batch)
        return efficiency(batch, self.init_batch, sqr, var)

    def goodput(self, gpu_type: str, nodes: Any, replicas: Any, *, stats_batch: float | None = None,
                accumulation: bool = True) -> GoodputResult:
        """Best goodput on ``gpu_type`` for every (nodes, replicas) point (vectorised).

        As in the Pollux simulator the gradient statistics are fixed for the candidate search: those
        measured at ``stats_batch`` (the job's current batch; default B0).
        """
        p = self._type(gpu_type)
        sqr, var = self._stats_b0 if stats_batch is None else self.grad_stats(stats_batch)
        return goodput(p, nodes, replicas, init_batch=self.init_batch, max_batch=self.max_batch,
                       grad_sqr=float(sqr), grad_var=float(var),
                       local_bsz_range=self.local_bsz_limits[gpu_type], accumulation=accumulation)

    def goodput_values(self, gpu_type: str, nodes: np.ndarray, replicas: np.ndarray) -> np.ndarray:
        """``goodput(gpu_type, nodes, replicas).goodput`` for 1-d float arrays of valid points (integral, nodes >= 1,
        replicas >= nodes, checked by the caller) without the input checks: the same arithmetic, values
        identical. For callers that evaluate many (model, type) groups, e.g. :class:`schedopt.sia.SiaProblem`."""
        lo, hi = self.local_bsz_limits[gpu_type]
        sqr, var = self._stats_b0
        gp, _, _, _, _, _, idx, cols, ok = _search(self._type(gpu_type), nodes, replicas, self.init_batch,
                                                   self.max_batch, sqr, var, float(lo), float(hi), True, N_CANDIDATES)
        return np.where(ok, gp[idx, cols], 0).astype(float)

    def throughput_values(self, gpu_type: str, nodes: np.ndarray, replicas: np.ndarray, batch: float) -> np.ndarray:
        """``throughput(gpu_type, nodes, replicas, batch)`` for 1-d float arrays of valid points and a positive
        float batch, without the input checks (values identical)."""
        p = self._type(gpu_type)
        hi = self.local_bsz_limits[gpu_type][1]
        s = np.maximum(np.ceil(batch / (replicas * hi) - _EPS) - 1, 0)
        b = batch / (replicas * (s + 1))
        return batch / p._step_time(nodes, replicas, b, s)

    #: the former private names of the two unchecked paths (kept for callers of earlier versions)
    _goodput_values = goodput_values
    _throughput_values = throughput_values

    def throughput(self, gpu_type: str, nodes: Any, replicas: Any, batch: Any) -> np.ndarray:
        """Samples/s when training at global batch ``batch`` on (nodes, replicas) GPUs of ``gpu_type``.

        Uses the fewest accumulation steps that keep the local batch within the type's maximum,
        ``s = ceil(B / (r max_local)) - 1``, and the (real-valued) local batch ``b = B / (r (s + 1))``.
        """
        p = self._type(gpu_type)
        n, r = check_placement(nodes, replicas)
        B = as_float_array("batch", batch)
        check_positive("batch", B)
        hi = self.local_bsz_limits[gpu_type][1]
        s = np.maximum(np.ceil(B / (r * hi) - _EPS) - 1, 0)
        b = B / (r * (s + 1))
        return B / p._step_time(n, r, b, s)

    def with_bootstrap(self, new_type: str, ref_type: str, xput_ref_1gpu: float, xput_new_1gpu: float,
                       local_bsz_limits: tuple[int, int]) -> JobGoodputModel:
        """A copy with ``new_type`` added via Sia's bootstrap from ``ref_type``'s full model."""
        p_new = bootstrap_params(self._type(ref_type), xput_ref_1gpu, xput_new_1gpu)
        params = {**self.params, new_type: p_new}
        lims = {**self.local_bsz_limits, new_type: (local_bsz_limits[0], local_bsz_limits[1])}
        return JobGoodputModel(self.name, params, self.init_batch, self.max_batch, lims, self.grad_batch,
                               self.grad_sqr, self.grad_var, self.max_epochs, self.meta)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "init_batch": self.init_batch,
            "max_batch": self.max_batch,
            "max_epochs": self.max_epochs,
            "params": {k: p.to_dict() for k, p in self.params.items()},
            "local_bsz_limits": {k: list(v) for k, v in self.local_bsz_limits.items()},
            "grad_stats": {"batch": list(self.grad_batch), "grad_sqr": list(self.grad_sqr),
                           "grad_var": list(self.grad_var)},
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> JobGoodputModel:
        try:
            gs = d["grad_stats"]
            return cls(
                name=d["name"],
                params={k: ThroughputParams.from_dict(v) for k, v in d["params"].items()},
                init_batch=d["init_batch"],
                max_batch=d["max_batch"],
                local_bsz_limits={k: tuple(v) for k, v in d["local_bsz_limits"].items()},
                grad_batch=tuple(gs["batch"]),
                grad_sqr=tuple(gs["grad_sqr"]),
                grad_var=tuple(gs["grad_var"]),
                max_epochs=d.get("max_epochs"),
                meta={k: v for k, v in d.items() if k not in {"name", "params", "init_batch", "max_batch",
                                                              "local_bsz_limits", "grad_stats", "max_epochs"}},
            )
        except KeyError as exc:
            raise InputError(str(exc.args[0]), None, "missing from the model dictionary") from None


#: Alias (the issue text names both).
GoodputModel = JobGoodputModel
