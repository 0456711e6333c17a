"""Pollux's seven-parameter throughput model: evaluation and fitting (see formulations/goodput.md)."""

from __future__ import annotations

import math
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass, fields
from typing import Any, cast

import numpy as np
from threadpoolctl import ThreadpoolController

from . import lbfgsb
from ._validate import (
    InputError,
    as_float_array,
    check_integral,
    check_nonnegative,
    check_placement,
    check_positive,
)

__all__ = ["GAMMA_STARTS", "PARAM_NAMES", "ThroughputParams", "blas_threads", "fit_throughput", "prediction_errors"]

#: The throughput model's seven parameters, in the order of :class:`ThroughputParams`.
PARAM_NAMES = ("alpha_c", "beta_c", "alpha_n", "beta_n", "alpha_r", "beta_r", "gamma")

#: Network time (seconds) used for a single replica, and the ``eps`` in ``max(r - 2, eps)`` (as in Pollux).
NET_EPS = 1e-8
#: Lower bound of every alpha / beta in the fit (Pollux uses 1e-8 too).
PARAM_FLOOR = 1e-8
#: Prior enforced by the fit: alpha_n >= NET_PRIOR * alpha_r and beta_n >= NET_PRIOR * beta_r.
NET_PRIOR = 1.1


@dataclass(frozen=True)
class ThroughputParams:
    """Per (job, GPU type) throughput parameters; times in seconds, batch sizes in samples.

    ``T_c(b) = alpha_c + beta_c b``; ``T_net(n, r)`` uses (alpha_n, beta_n) across nodes, (alpha_r, beta_r)
    within one node; ``T_o = (T_c^gamma + T_net^gamma)^(1/gamma)``; an iteration with ``s`` accumulation
    steps takes ``s T_c + T_o``.
    """

    alpha_c: float
    beta_c: float
    alpha_n: float
    beta_n: float
    alpha_r: float
    beta_r: float
    gamma: float

    def __post_init__(self) -> None:
        for f in fields(self):
            v = getattr(self, f.name)
            try:
                fv = float(v)
            except (TypeError, ValueError):
                raise InputError(f.name, v, "must be a real number") from None
            if not np.isfinite(fv):
                raise InputError(f.name, v, "must be finite")
            object.__setattr__(self, f.name, fv)
        for name in PARAM_NAMES[:6]:
            if getattr(self, name) < 0:
                raise InputError(name, getattr(self, name), "must be >= 0")
        if not 1.0 <= self.gamma <= 10.0:
            raise InputError("gamma", self.gamma, "must be in [1, 10]")

    # ------------------------------------------------------------------ evaluation
    def compute_time(self, local_bsz: Any) -> np.ndarray:
        """Time of one forward/backward pass on one GPU with local batch ``local_bsz``."""
        b = as_float_array("local_bsz", local_bsz)
        check_positive("local_bsz", b)
        return self.alpha_c + self.beta_c * b

    def network_time(self, nodes: Any, replicas: Any) -> np.ndarray:
        """All-reduce time for ``replicas`` GPUs on ``nodes`` nodes (``NET_EPS``-ish for one replica)."""
        n, r = check_placement(nodes, replicas)
        return self._network_time(n, r)

    def _network_time(self, n: np.ndarray, r: np.ndarray) -> np.ndarray:
        multi, within = n > 1, r > 1  # np.select over (multi, within) written as two wheres (faster, same values)
        alpha = np.where(multi, self.alpha_n, np.where(within, self.alpha_r, NET_EPS))
        beta = np.where(multi, self.beta_n, np.where(within, self.beta_r, NET_EPS))
        return alpha + beta * np.maximum(r - 2, NET_EPS)

    def _overlap(self, t_c: np.ndarray, t_n: np.ndarray) -> np.ndarray:
        g = self.gamma
        m = np.maximum(t_c, t_n)
        m_safe = np.where(m > 0, m, 1.0)
        return m * ((t_c / m_safe) ** g + (t_n / m_safe) ** g) ** (1.0 / g)

    def _step_time(self, n: np.ndarray, r: np.ndarray, b: np.ndarray, s: np.ndarray) -> np.ndarray:
        t_c = self.alpha_c + self.beta_c * b
        return s * t_c + self._overlap(t_c, self._network_time(n, r))

    def _step_time1(self, n: float, r: float, b: float, s: float) -> float:
        """:meth:`_step_time` of one valid point in Python floats: the same IEEE operations in the same order, so
        the same float (``tests/test_sim_fastpaths.py`` compares them on random points)."""
        t_c = self.alpha_c + self.beta_c * b
        if n > 1:
            t_n = self.alpha_n + self.beta_n * max(r - 2, NET_EPS)
        elif r > 1:
            t_n = self.alpha_r + self.beta_r * max(r - 2, NET_EPS)
        else:
            t_n = NET_EPS + NET_EPS * max(r - 2, NET_EPS)
        g = self.gamma
        m = t_c if t_c >= t_n else t_n
        m_safe = m if m > 0 else 1.0
        return s * t_c + m * ((t_c / m_safe) ** g + (t_n / m_safe) ** g) ** (1.0 / g)

    def step_time(self, nodes: Any, replicas: Any, local_bsz: Any, accum_steps: Any = 0) -> np.ndarray:
        """Seconds per optimizer step: ``s T_c + T_o`` (broadcasts over all arguments)."""
        pt = _valid_point(nodes, replicas, local_bsz, accum_steps)
        if pt is not None:  # one valid point of plain numbers: the same value as below, without arrays
            # numpy's scalar: what the array path returns for one point too (the annotation names the array case)
            return cast(np.ndarray, np.float64(self._step_time1(*pt)))
        n, r = check_placement(nodes, replicas)
        b = as_float_array("local_bsz", local_bsz)
        check_positive("local_bsz", b)
        s = as_float_array("accum_steps", accum_steps)
        check_nonnegative("accum_steps", s)
        check_integral("accum_steps", s)
        try:
            np.broadcast_shapes(n.shape, b.shape, s.shape)
        except ValueError:
            raise InputError("local_bsz", b.shape, f"shape does not broadcast with nodes shape {n.shape}") from None
        return self._step_time(n, r, b, s)

    def throughput(self, nodes: Any, replicas: Any, local_bsz: Any, accum_steps: Any = 0) -> np.ndarray:
        """Samples per second: ``r b (s + 1) / (s T_c + T_o)``."""
        pt = _valid_point(nodes, replicas, local_bsz, accum_steps)
        if pt is not None:  # one valid point of plain numbers: the same value as below, without arrays
            _, r1, b1, s1 = pt
            t1 = self._step_time1(*pt)
            if t1 != 0:  # (zero step time, only with zero parameters: numpy's inf and its warning, below)
                return cast(np.ndarray, np.float64(r1 * b1 * (s1 + 1) / t1))  # numpy's scalar, as above
        t = self.step_time(nodes, replicas, local_bsz, accum_steps)
        r = np.asarray(replicas, dtype=float)
        return r * np.asarray(local_bsz, float) * (np.asarray(accum_steps, float) + 1) / t

    def scaled(self, factor: float) -> ThroughputParams:
        """Parameters whose step times are ``factor`` times these (T_o is 1-homogeneous in T_c, T_net)."""
        f = float(factor)
        if not (np.isfinite(f) and f > 0):
            raise InputError("factor", factor, "must be finite and > 0")
        vals = {k: getattr(self, k) * f for k in PARAM_NAMES[:6]}
        return ThroughputParams(**vals, gamma=self.gamma)

    # ------------------------------------------------------------------ (de)serialisation
    def to_dict(self) -> dict[str, float]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ThroughputParams:
        missing = [k for k in PARAM_NAMES if k not in d]
        if missing:
            raise InputError("params", dict(d), f"missing keys {missing}")
        return cls(**{k: d[k] for k in PARAM_NAMES})

    def as_array(self) -> np.ndarray:
        return np.array([getattr(self, k) for k in PARAM_NAMES])


#: number types whose ``float()`` is numpy's conversion to float64 (``bool`` is not among them: it takes the
#: general path)
_PLAIN = frozenset({float, int, np.float64, np.int64})


def _valid_point(nodes: Any, replicas: Any, local_bsz: Any, accum_steps: Any) -> tuple[float, float, float, float] | None:
    """``(n, r, b, s)`` as floats when the four arguments are plain numbers that pass every check of
    :meth:`ThroughputParams.step_time` (integral nodes >= 1, integral replicas >= nodes, a finite local batch > 0,
    integral accumulation steps >= 0), else ``None``: the caller then takes the checked array path, which raises
    for bad input as it always did."""
    if not (type(nodes) in _PLAIN and type(replicas) in _PLAIN and type(local_bsz) in _PLAIN
            and type(accum_steps) in _PLAIN):
        return None
    n, r, b, s = float(nodes), float(replicas), float(local_bsz), float(accum_steps)
    if (1 <= n <= r and b > 0 and s >= 0 and math.isfinite(r) and math.isfinite(b) and math.isfinite(s)
            and n.is_integer() and r.is_integer() and s.is_integer()):
        return n, r, b, s
    return None


# ---------------------------------------------------------------------- fitting
def _check_rows(
    nodes: Any, replicas: Any, local_bsz: Any, step_time: Any, sync_time: Any
) -> tuple[np.ndarray, ...]:
    names = ("nodes", "replicas", "local_bsz", "step_time", "sync_time")
    arrs = [as_float_array(k, v).ravel() for k, v in zip(names, (nodes, replicas, local_bsz, step_time, sync_time))]
    sizes = {k: a.size for k, a in zip(names, arrs)}
    if len(set(sizes.values())) != 1:
        raise InputError("sync_time" if sizes["sync_time"] != sizes["nodes"] else "replicas", sizes,
                         "all observation arrays must have the same length")
    if arrs[0].size == 0:
        raise InputError("nodes", [], "need at least one observation")
    n, r = check_placement(arrs[0], arrs[1])
    b, step, sync = arrs[2:]
    check_positive("local_bsz", b)
    check_positive("step_time", step)
    check_nonnegative("sync_time", sync)
    bad = sync >= step
    if bad.any():
        raise InputError("sync_time", sync[bad][0].item(), "must be < step_time (compute = step - sync > 0)")
    return n, r, b, step, sync


def _raw(alpha_c, beta_c, alpha_n, beta_n, alpha_r, beta_r, gamma) -> ThroughputParams:
    """Build without validation (used inside the optimiser loop)."""
    p = object.__new__(ThroughputParams)
    for k, v in zip(PARAM_NAMES, (alpha_c, beta_c, alpha_n, beta_n, alpha_r, beta_r, gamma)):
        object.__setattr__(p, k, float(v))
    return p


def _theta_to_params(theta: np.ndarray) -> ThroughputParams:
    e = np.exp(theta[:6])
    return _raw(e[0], e[1], NET_PRIOR * e[4] + e[2], NET_PRIOR * e[5] + e[3], e[4], e[5], theta[6])


_SMOOTH = 1e-10


def _objective(theta: np.ndarray, n, r, b, log_comp, log_step) -> float:
    p = _theta_to_params(theta)
    t_c = p.alpha_c + p.beta_c * b
    t_o = p._overlap(t_c, p._network_time(n, r))
    # RMS log errors, smoothed at 0 (sqrt has an infinite slope there, which stalls L-BFGS-B).
    err_c = np.sqrt(np.mean((np.log(t_c) - log_comp) ** 2) + _SMOOTH)
    err_o = np.sqrt(np.mean((np.log(t_o) - log_step) ** 2) + _SMOOTH)
    reg_gamma = 1e-3 * (p.gamma - 1.0) ** 2
    reg_retro = 1e-2 * ((p.alpha_r / p.alpha_n) ** 2 + (p.beta_r / p.beta_n) ** 2)
    return float(err_c + err_o + reg_gamma + reg_retro)


class _FitObjective:
    """The fit's objective (:func:`_objective`) and its exact gradient over the free log-parameters, for one fit's
    rows (L-BFGS-B would otherwise estimate the gradient by finite differences, eight objective calls per gradient;
    a test checks it against central differences). What does not change between evaluations (the rows' network
    class, ``max(r - 2, eps)``, the fixed parameters, the work arrays and their row views) is computed once per fit.

    An evaluation is about 40 numpy calls on arrays of one fit's rows, each element the same sequence of IEEE
    operations as the formula written out: the per-row parameters of both network terms are gathered from one
    small table in one call; the logs of the step time, the compute time, the overlap's shares and its sum are
    taken in one call over one work array (numpy's ``log`` is the same function on every element); both residuals
    are made, squared and summed per row in one call each (a row's sum is its own pairwise sum, as of a 1-d array);
    the gradient's seven entries are combined in Python floats from the two matrix products, as numpy's elementwise
    division and additions would combine them. ``tests/test_goodput_objective.py`` compares it with the formula
    evaluated step by step, bit for bit, on random rows and parameters; the 19,066 evaluations of saturn/1's fits
    (both job models) were replayed against the previous evaluation, bit for bit."""

    def __init__(self, n: np.ndarray, r: np.ndarray, b: np.ndarray, log_comp: np.ndarray, log_step: np.ndarray,
                 free: list[int], fixed: Mapping[int, float]) -> None:
        k = b.size
        # network class per row: 0 one GPU (NET_EPS), 1 several GPUs on one node (alpha_r, beta_r), 2 several nodes
        cls = np.where(n > 1, 2, np.where(r > 1, 1, 0))
        self.cls = cls
        self.x = np.maximum(r - 2, NET_EPS)
        self.xc = np.stack([np.ones(k), self.x, np.ones(k), self.x])  # d t_n / d (d_alpha_n, d_beta_n, ar, br)
        self.b, self.k, self.log_comp, self.log_step = b, k, log_comp, log_step
        self.theta = np.empty(7)
        for i, v in fixed.items():
            self.theta[i] = v
        self.free = np.array(free, dtype=np.intp)
        self.free_list = [int(i) for i in free]
        # the (6, 3) table of per-class parameters, flattened, gathered per row: row q of class c is entry 3 q + c
        self.pick = np.arange(0, 18, 3)[:, None] + cls
        self.dc = np.empty((2, k))  # d t_c / d (log alpha_c, log beta_c)
        # the work array whose logs are taken in one call: t_o, t_c, t_n, u_c, u_n, S
        self.w = w = np.empty((6, k))
        self.logs = np.empty((6, k))
        self.obs = np.stack([log_step, log_comp])  # what rows t_o and t_c of the logs are compared with
        self.res = np.empty((2, k))  # the residuals of t_o and t_c
        self.gc = np.zeros((7, k))  # d t_c / d theta / t_c (rows 2-6 stay 0)
        self.go = np.empty((7, k))  # d t_o / d theta
        self.t_o, self.t_c, self.t_n, self.tt, self.u, self.S = w[0], w[1], w[2], w[1:3], w[3:5], w[5]
        self.dc0, self.dc1 = self.dc
        self.gc2, self.go2, self.go26, self.go6 = self.gc[:2], self.go[:2], self.go[2:6], self.go[6]
        self.log_o, self.log_u, self.log_S, self.log_oc = self.logs[0], self.logs[3:5], self.logs[5], self.logs[:2]
        self.res_o, self.res_c = self.res

    def full(self, x: np.ndarray) -> np.ndarray:
        """The seven log-parameters with the free ones at ``x``."""
        th = self.theta.copy()
        th[self.free] = x
        return th

    def __call__(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        th = self.theta
        th[self.free] = x
        ac, bc, dan, dbn, ar, br = np.exp(th[:6]).tolist()
        an, bn = NET_PRIOR * ar + dan, NET_PRIOR * br + dbn  # alpha_n = 1.1 alpha_r + d_alpha_n
        g = float(th[6])
        k = self.k
        dc, tt, t_c, t_n, t_o, u, S = self.dc, self.tt, self.t_c, self.t_n, self.t_o, self.u, self.S
        self.dc0.fill(ac)
        np.multiply(self.b, bc, out=self.dc1)
        np.add(self.dc1, ac, out=t_c)
        # per row: (alpha, beta) of its network class, then d t_n / d (d_alpha_n, d_beta_n, alpha_r, beta_r) / x
        prm = np.array((NET_EPS, ar, an, NET_EPS, br, bn, 0.0, 0.0, dan, 0.0, 0.0, dbn,
                        0.0, ar, NET_PRIOR * ar, 0.0, br, NET_PRIOR * br)).take(self.pick)
        np.multiply(prm[1], self.x, out=t_n)
        t_n += prm[0]
        # t_o = m S^(1/g), S = uc^g + un^g, (uc, un) = (t_c, t_n) / m
        m = np.maximum(t_c, t_n)
        np.divide(tt, m, out=u)
        ug = u ** g
        np.add(ug[0], ug[1], out=S)
        np.multiply(m, S ** (1.0 / g), out=t_o)
        to = (tt / t_o) ** (g - 1.0)  # d t_o / d t_c, d t_o / d t_n
        np.divide(dc, t_c, out=self.gc2)
        np.multiply(dc, to[0], out=self.go2)
        go26 = self.go26
        np.multiply(prm[2:], self.xc, out=go26)
        go26 *= to[1]
        np.log(self.w, out=self.logs)
        p = ug * self.log_u
        # t_o * (-log(S) / g^2 + (p_c + p_n) / (g S)): -a / c is a / -c, bit for bit
        v = np.divide(self.log_S, -(g ** 2))
        v += (p[0] + p[1]) / (g * S)
        np.multiply(t_o, v, out=self.go6)
        res = np.subtract(self.log_oc, self.obs, out=self.res)  # log t_o - log step, log t_c - log comp
        so, sc = np.add.reduce(res * res, axis=1).tolist()
        err_c = math.sqrt(sc / k + _SMOOTH)
        err_o = math.sqrt(so / k + _SMOOTH)
        vc = (self.gc @ self.res_c).tolist()
        vo = ((self.go / t_o) @ self.res_o).tolist()
        f = err_c + err_o + 1e-3 * (g - 1.0) ** 2 + 1e-2 * ((ar / an) ** 2 + (br / bn) ** 2)
        # the regularisers: gamma's, and retro's q = ar/an (d q/d th4 = ar/an - ar*1.1ar/an^2; d q/d th2 =
        # -ar*dan/an^2), likewise for beta
        qa, qb = ar / an, br / bn
        reg = (0.0, 0.0, 1e-2 * 2 * qa * (-ar * dan / an ** 2), 1e-2 * 2 * qb * (-br * dbn / bn ** 2),
               1e-2 * 2 * qa * (ar / an - ar * NET_PRIOR * ar / an ** 2),
               1e-2 * 2 * qb * (br / bn - br * NET_PRIOR * br / bn ** 2), 2e-3 * (g - 1.0))
        kc, ko = k * err_c, k * err_o
        return f, np.array([vc[i] / kc + vo[i] / ko + reg[i] for i in self.free_list])


def _objective_and_grad(theta: np.ndarray, n, r, b, log_comp, log_step) -> tuple[float, np.ndarray]:
    """:func:`_objective` and its gradient over all seven log-parameters (:class:`_FitObjective`)."""
    return _FitObjective(n, r, b, log_comp, log_step, list(range(7)), {})(theta)


_BLAS: list[Any] = []  # the process's BLAS libraries (a threadpoolctl selection), found once


def _blas_libraries() -> Any:
    """The BLAS libraries loaded in this process (numpy's and scipy's OpenBLAS; scipy's comes with the fit's
    compiled routine, :func:`schedopt.goodput.lbfgsb.routine`, loaded here before the scan), found once per process:
    ``threadpoolctl.threadpool_limits`` scans every loaded library on each entry (about 4 ms with a simulator's
    imports; 572 fits of a saturn/1 run spent 2.3 s there), a kept selection sets the limit in microseconds."""
    lbfgsb.routine()  # loads scipy's OpenBLAS, which the fit uses, before the scan

    if not _BLAS:
        _BLAS.append(ThreadpoolController().select(user_api="blas"))
    return _BLAS[0]


@contextmanager
def blas_threads(limit: int | None = 1) -> Iterator[None]:
    """Run the ``with`` block with the process's BLAS libraries limited to ``limit`` threads (None: leave the pool
    as it is), restored on exit. The libraries are found once per process (:func:`_blas_libraries`), so entering
    costs microseconds. :func:`schedopt.sim.simulate` runs a whole simulation under ``blas_threads(1)``: its fits,
    goodput searches and measured-table lookups work on vectors of tens of elements, where OpenBLAS's threads only
    spin (on saturn/1 under the ``sia-measured`` job model they burned about 1 s of CPU on the second core, with
    no wall time saved; ``tools/profile_sim.py`` shows CPU above wall without the limit).

    The limit is a setting of the whole process, so ``blas_threads(1)`` is counted across threads: the first block
    to enter sets one thread and the last to leave restores what the first found, whatever order they leave in (two
    simulations on a thread pool: the one that ends first does not lift the other's limit, nor does the other then
    leave the process at one thread). Other limits are set and restored around their block alone. OpenBLAS 0.3.31
    here ignores a count set from a thread other than the main one once the main thread has set one, so from a
    thread pool the limit may not take effect: a matter of speed, never of results."""
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, (int, np.integer)) or limit < 1):
        raise InputError("blas_threads", limit, "must be an integer >= 1, or None (leave the pool as it is)")
    if limit is None:
        yield
        return
    if limit != 1:
        with _blas_libraries().limit(limits=int(limit)):
            yield
        return
    with _ONE_THREAD_LOCK:
        if not _ONE_THREAD:
            _ONE_THREAD.append(_blas_libraries().limit(limits=1))  # applied now; restored by the last to leave
        _ONE_THREAD.append(None)
    try:
        yield
    finally:
        with _ONE_THREAD_LOCK:
            _ONE_THREAD.pop()
            if len(_ONE_THREAD) == 1:
                _ONE_THREAD.pop().restore_original_limits()


_ONE_THREAD_LOCK = threading.Lock()
#: [the limiter of blas_threads(1), then one entry per block inside it]; empty outside every such block
_ONE_THREAD: list[Any] = []
_limit_blas = blas_threads  # (fit_throughput's argument of that name hides the function)


#: the gamma values :func:`fit_throughput` starts L-BFGS-B from (one run each; the best is kept)
GAMMA_STARTS = (1.0, 1.5, 2.0, 3.0, 5.0, 8.0)


def fit_throughput(
    nodes: Any, replicas: Any, local_bsz: Any, step_time: Any, sync_time: Any, *,
    gamma_starts: Any = GAMMA_STARTS, blas_threads: int | None = 1,
) -> ThroughputParams:
    """Fit the seven parameters to observed rows (one per measurement).

    ``step_time`` is the whole optimizer step (no accumulation), ``sync_time`` its gradient-sync part, so the
    per-GPU compute time is ``step_time - sync_time``.  Minimises (L-BFGS-B, log-parameterised) the RMS log error
    of the compute-time predictions plus that of the step-time predictions, with Pollux's two small
    regularisers.  Pins what the data cannot identify: ``alpha_c = mean(compute)/2`` if one batch size was
    seen; (alpha_n, beta_n) = 1.1 (alpha_r, beta_r) without multi-node rows; alpha_r (beta_r) at the floor
    without single-node rows with r > 1 (r > 2).  ``alpha_n >= 1.1 alpha_r`` and ``beta_n >= 1.1 beta_r``
    always hold (the fit parameterises ``alpha_n = 1.1 alpha_r + d_alpha_n`` with ``d_alpha_n > 0``).
    ``gamma_starts``: the starting gammas (default ``GAMMA_STARTS``; a refit may start from the last gamma
    alone, six times faster). ``blas_threads``: the BLAS threads the fit may use (default 1: OpenBLAS's pool makes
    L-BFGS-B on seven parameters 5-8x slower; None leaves the pool as it is).
    """
    if blas_threads is not None and (isinstance(blas_threads, bool) or not isinstance(blas_threads, (int, np.integer))
                                     or blas_threads < 1):
        raise InputError("blas_threads", blas_threads, "must be an integer >= 1, or None (leave the pool as it is)")
    starts = [float(g) for g in np.atleast_1d(np.asarray(gamma_starts, dtype=float))]
    if not starts or any(not 1.0 <= g <= 10.0 for g in starts):
        raise InputError("gamma_starts", gamma_starts, "must be one or more values in [1, 10]")
    n, r, b, step, sync = _check_rows(nodes, replicas, local_bsz, step_time, sync_time)
    return fit_checked(n, r, b, step, sync, starts, blas_threads)


def _median(v: list[float]) -> float:
    """``float(np.median(v))`` of a non-empty list of floats without nan: the middle value, or the two middle values'
    sum halved (``np.mean`` of two: their sum over 2), as numpy computes it."""
    v = sorted(v)
    k = len(v) // 2
    return v[k] if len(v) % 2 else (v[k - 1] + v[k]) / 2


def fit_checked(n: np.ndarray, r: np.ndarray, b: np.ndarray, step: np.ndarray, sync: np.ndarray, starts: list[float],
                 blas_threads: int | None) -> ThroughputParams:
    """:func:`fit_throughput` on rows it has checked (1-d float arrays of one length: integral ``1 <= n <= r``,
    ``b > 0``, ``0 <= sync < step``, all finite) from ``starts`` (gammas in [1, 10])."""
    comp = step - sync
    log_comp, log_step = np.log(comp), np.log(step)
    # ``np.unique(b).size > 1`` of finite rows, without its sort: two values differ exactly when min < max
    varied_b = bool(b.min() < b.max())
    lo, hi = np.log(PARAM_FLOOR), np.log(1e4)

    # Initial guess: least squares line for compute time; network from the sync times.
    if varied_b:
        beta_c0, alpha_c0 = np.polyfit(b, comp, 1)
    else:
        beta_c0, alpha_c0 = np.mean(comp) / 2 / b[0], np.mean(comp) / 2
    alpha_c0 = max(alpha_c0, 1e-2 * np.min(comp))
    beta_c0 = max(beta_c0, 1e-2 * np.min(comp) / np.max(b))
    single_multi = (n == 1) & (r > 1)
    multi_node = n > 1

    def net_start(gamma0: float) -> list[float]:
        """(d_alpha_n, d_beta_n, alpha_r, beta_r) from line fits to the network times implied by gamma0."""
        t_net = np.maximum(step**gamma0 - comp**gamma0, 0.0) ** (1.0 / gamma0)

        def line(mask: np.ndarray) -> tuple[float, float]:
            if not mask.any():
                return PARAM_FLOOR, PARAM_FLOOR
            x = np.maximum(r[mask] - 2, 0)
            if x.min() < x.max():  # np.unique(x).size > 1
                slope, icpt = np.polyfit(x, t_net[mask], 1)
            else:
                slope, icpt = 0.0, float(np.mean(t_net[mask]))
            med = _median(t_net[mask].tolist()) + PARAM_FLOOR
            return max(icpt, 1e-3 * med), max(slope, 1e-4 * med)

        a_r, b_r = line(single_multi)
        a_n, b_n = line(multi_node)
        return [max(a_n - NET_PRIOR * a_r, 1e-3 * a_n), max(b_n - NET_PRIOR * b_r, 1e-3 * b_n), a_r, b_r]

    fixed: dict[int, float] = {}
    if not varied_b:
        fixed[0] = np.log(np.mean(comp) / 2)
    if not multi_node.any():
        fixed[2] = fixed[3] = lo
    if not single_multi.any():
        fixed[4] = lo
    if not (single_multi & (r > 2)).any():
        fixed[5] = lo
    free = [i for i in range(7) if i not in fixed]
    objective = _FitObjective(n, r, b, log_comp, log_step, free, fixed)

    lo_b = np.array([lo if i < 6 else 1.0 for i in free])
    hi_b = np.array([hi if i < 6 else 10.0 for i in free])
    best_val, best_theta = np.inf, None
    # OpenBLAS's thread pool makes L-BFGS-B on these few parameters 5-8x slower (its threads spin on tiny
    # vectors): by default the fit runs on one BLAS thread (formulations/sim.md has the measurement).
    # L-BFGS-B through lbfgsb.minimize: scipy's routine without scipy.optimize.minimize's per-call and
    # per-evaluation overhead, the same iterates (its compiled routine is loaded by the first fit, in
    # _blas_libraries, not at import; scipy.optimize itself is not imported where the self-check's record holds)
    with _limit_blas(blas_threads):
        for gamma0 in starts:
            start = np.clip(np.log([alpha_c0, beta_c0, *net_start(gamma0)]), lo, hi)
            start = np.append(start, gamma0)
            for i, v in fixed.items():
                start[i] = v
            x, fun = lbfgsb.minimize(objective, start[free], lo_b, hi_b, maxiter=1000)
            if fun < best_val:
                best_val, best_theta = fun, objective.full(x)
    if best_theta is None:  # every start ended on a non-finite objective (degenerate measurements)
        raise InputError("measurements", len(starts), "the throughput fit found no finite optimum from any start")
    p = _theta_to_params(best_theta)
    return ThroughputParams(**{k: getattr(p, k) for k in PARAM_NAMES})


def prediction_errors(
    params: ThroughputParams, nodes: Any, replicas: Any, local_bsz: Any, step_time: Any
) -> tuple[float, float]:
    """(RMS log error, max relative error) of predicted vs observed step times (no accumulation)."""
    obs = as_float_array("step_time", step_time)
    check_positive("step_time", obs)
    pred = params.step_time(nodes, replicas, local_bsz)
    if pred.shape != obs.shape:
        raise InputError("step_time", obs.shape, f"length must match the placements ({pred.shape})")
    rms = float(np.sqrt(np.mean((np.log(pred) - np.log(obs)) ** 2)))
    mx = float(np.max(np.abs(pred / obs - 1.0)))
    return rms, mx
