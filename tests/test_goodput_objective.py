"""The fit's objective evaluation (``schedopt.goodput._throughput._FitObjective``) against the formula evaluated step
by step (the evaluation as it was before its numpy calls were merged): the same value and gradient, bit for bit."""

from __future__ import annotations

import math

import numpy as np
import pytest

from schedopt.goodput._throughput import _SMOOTH, NET_EPS, NET_PRIOR, _FitObjective


def _steps(n: np.ndarray, r: np.ndarray, b: np.ndarray, log_comp: np.ndarray, log_step: np.ndarray, free: list[int],
           fixed: dict[int, float], x: np.ndarray) -> tuple[float, np.ndarray]:
    """The objective and its gradient over the free log-parameters, one numpy expression per quantity."""
    k = b.size
    cls = np.where(n > 1, 2, np.where(r > 1, 1, 0))
    xr = np.maximum(r - 2, NET_EPS)
    th = np.empty(7)
    for i, v in fixed.items():
        th[i] = v
    th[np.array(free, dtype=np.intp)] = x
    ac, bc, dan, dbn, ar, br = np.exp(th[:6]).tolist()
    an, bn = NET_PRIOR * ar + dan, NET_PRIOR * br + dbn
    g = float(th[6])
    dc = np.empty((2, k))
    dc[0] = ac
    dc[1] = b * bc
    t_c = dc[1] + ac
    ab = np.array([[NET_EPS, ar, an], [NET_EPS, br, bn]])[:, cls]
    t_n = ab[1] * xr
    t_n += ab[0]
    tt = np.stack([t_c, t_n])
    m = np.maximum(t_c, t_n)
    u = tt / m
    ug = u ** g
    S = ug[0] + ug[1]
    t_o = m * S ** (1.0 / g)
    to = (tt / t_o) ** (g - 1.0)
    gc = np.zeros((7, k))
    go = np.empty((7, k))
    gc[:2] = dc / t_c
    go[:2] = dc * to[0]
    xc = np.stack([np.ones(k), xr, np.ones(k), xr])
    go[2:6] = np.array([[0.0, 0.0, dan], [0.0, 0.0, dbn], [0.0, ar, NET_PRIOR * ar],
                        [0.0, br, NET_PRIOR * br]])[:, cls] * xc * to[1]
    p = ug * np.log(u)
    go[6] = t_o * (-np.log(S) / g ** 2 + (p[0] + p[1]) / (g * S))
    rc = np.log(t_c) - log_comp
    ro = np.log(t_o) - log_step
    err_c = math.sqrt(np.add.reduce(rc * rc) / k + _SMOOTH)
    err_o = math.sqrt(np.add.reduce(ro * ro) / k + _SMOOTH)
    grad = gc @ rc / (k * err_c) + (go / t_o) @ ro / (k * err_o)
    f = err_c + err_o + 1e-3 * (g - 1.0) ** 2 + 1e-2 * ((ar / an) ** 2 + (br / bn) ** 2)
    qa, qb = ar / an, br / bn
    grad += np.array([0.0, 0.0, 1e-2 * 2 * qa * (-ar * dan / an ** 2), 1e-2 * 2 * qb * (-br * dbn / bn ** 2),
                      1e-2 * 2 * qa * (ar / an - ar * NET_PRIOR * ar / an ** 2),
                      1e-2 * 2 * qb * (br / bn - br * NET_PRIOR * br / bn ** 2), 2e-3 * (g - 1.0)])
    return f, grad[np.array(free, dtype=np.intp)]


@pytest.mark.parametrize("seed", range(4))
def test_the_objective_equals_the_formula_step_by_step_bit_for_bit(seed: int) -> None:
    """Random rows (1 to 70 of them, every network class: one GPU, within a node, across nodes), random free sets
    and log-parameters, gammas at the bounds and at numpy's fast-path exponents (1, 2: ``u ** 1`` and ``u ** 2`` are
    not ``pow`` there): the value and every gradient entry are the step-by-step route's floats."""
    rng = np.random.default_rng(seed)
    for _ in range(40):
        k = int(rng.integers(1, 71))
        n = rng.integers(1, 5, k).astype(float)
        r = n * rng.integers(1, 9, k)
        b = rng.integers(1, 512, k).astype(float)
        comp = np.exp(rng.normal(-3, 1, k))
        step = comp + np.where(r > 1, np.exp(rng.normal(-4, 1, k)), 0.0)
        log_comp, log_step = np.log(comp), np.log(step)
        fixed = {int(i): float(rng.normal(-5, 2)) for i in rng.choice(6, int(rng.integers(0, 4)), replace=False)}
        free = [i for i in range(7) if i not in fixed]
        obj = _FitObjective(n, r, b, log_comp, log_step, free, fixed)
        for _ in range(5):
            x = rng.normal(-3, 2, len(free))
            if free[-1] == 6:
                x[-1] = rng.choice([1.0, 2.0, 10.0, float(rng.uniform(1, 10))])
            f, g = obj(x)
            f0, g0 = _steps(n, r, b, log_comp, log_step, free, fixed, x)
            assert f.hex() == f0.hex()
            assert g.dtype == np.float64 and g.shape == g0.shape
            assert g.tobytes() == g0.tobytes(), (g, g0)
