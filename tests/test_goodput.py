"""Tests of schedopt.goodput (synthetic data only; no file access)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedopt.goodput import (
    GoodputModel,
    GoodputResult,
    JobGoodputModel,
    ThroughputParams,
    bootstrap,
    bootstrap_params,
    efficiency,
    fit_throughput,
    goodput,
    prediction_errors,
)

TRUE = ThroughputParams(alpha_c=0.02, beta_c=0.001, alpha_n=0.1, beta_n=0.01, alpha_r=0.03, beta_r=0.003, gamma=2.0)


def synthetic_rows(p: ThroughputParams, seed: int = 0, size: int = 300, multi_node: bool = True,
                   multi_gpu: bool = True, batches=(8, 16, 32, 64, 128)):
    rng = np.random.default_rng(seed)
    n = rng.integers(1, 5, size) if multi_node else np.ones(size, int)
    r = n * rng.integers(1, 5, size) if multi_gpu else n.copy()
    b = rng.choice(batches, size)
    step = p.step_time(n, r, b)
    comp = p.alpha_c + p.beta_c * b
    return n, r, b, step, step - comp


# ---------------------------------------------------------------- step time / throughput by hand
def test_step_time_single_gpu_by_hand():
    p = ThroughputParams(0.1, 0.01, 0.5, 0.05, 0.2, 0.02, 1.0)
    # T_c = 0.1 + 0.01 * 10 = 0.2; one replica: T_net = 1e-8 + 1e-8 * 1e-8 ~ 1e-8; gamma = 1: T_o = 0.2 + 1e-8
    assert p.step_time(1, 1, 10) == pytest.approx(0.2, abs=1e-7)
    # throughput = 1 * 10 * 1 / 0.2 = 50 samples/s
    assert p.throughput(1, 1, 10) == pytest.approx(50.0, rel=1e-6)


def test_step_time_multi_node_gamma2_by_hand():
    p = ThroughputParams(0.1, 0.01, 0.5, 0.05, 0.2, 0.02, 2.0)
    # n=2, r=4, b=20: T_c = 0.1 + 0.2 = 0.3; T_net = alpha_n + beta_n * (4 - 2) = 0.5 + 0.1 = 0.6
    # T_o = sqrt(0.3^2 + 0.6^2) = sqrt(0.45) = 0.670820...
    assert p.step_time(2, 4, 20) == pytest.approx(math.sqrt(0.45), rel=1e-12)
    # n=1, r=2 (intra-node): T_net = alpha_r + beta_r * max(0, eps) = 0.2 (+2e-10); T_o = sqrt(0.09 + 0.04)
    assert p.step_time(1, 2, 20) == pytest.approx(math.sqrt(0.13), rel=1e-8)


def test_throughput_with_accumulation_by_hand():
    p = ThroughputParams(0.1, 0.01, 0.5, 0.05, 0.2, 0.02, 2.0)
    # s = 3: iteration = 3 * T_c + T_o = 0.9 + sqrt(0.45) = 1.570820...; samples = r b (s+1) = 4*20*4 = 320
    t = 0.9 + math.sqrt(0.45)
    assert p.step_time(2, 4, 20, 3) == pytest.approx(t, rel=1e-12)
    assert p.throughput(2, 4, 20, 3) == pytest.approx(320 / t, rel=1e-12)
    # broadcasting: arrays of configurations against a scalar batch
    out = p.step_time(np.array([1, 2]), np.array([2, 4]), 20)
    np.testing.assert_allclose(out, [math.sqrt(0.13), math.sqrt(0.45)], rtol=1e-8)


def test_scaled_params_scale_step_times():
    q = TRUE.scaled(2.5)
    n, r, b = np.array([1, 1, 2, 3]), np.array([1, 3, 4, 12]), np.array([8, 16, 32, 64])
    np.testing.assert_allclose(q.step_time(n, r, b, 2), 2.5 * TRUE.step_time(n, r, b, 2), rtol=1e-12)


# ---------------------------------------------------------------- fitting
@pytest.mark.parametrize("gamma", [1.0, 2.0, 3.0])
def test_fit_recovers_synthetic_parameters(gamma):
    p = ThroughputParams(0.02, 0.001, 0.1, 0.01, 0.03, 0.003, gamma)
    rows = synthetic_rows(p, seed=int(gamma))
    q = fit_throughput(*rows)
    rms, mx = prediction_errors(q, *rows[:4])
    assert rms < 1e-3 and mx < 1e-2
    np.testing.assert_allclose(q.as_array(), p.as_array(), rtol=0.02)


def test_fit_pins_alpha_c_with_one_batch_size():
    n, r, b, step, sync = synthetic_rows(TRUE, batches=(32,))
    q = fit_throughput(n, r, b, step, sync)
    assert q.alpha_c == pytest.approx(np.mean(step - sync) / 2, rel=1e-9)


def test_fit_pins_network_params_with_single_gpu_rows():
    n, r, b, step, sync = synthetic_rows(TRUE, multi_node=False, multi_gpu=False, size=40)
    q = fit_throughput(n, r, b, step, sync)
    # no multi-GPU rows: alpha_r, beta_r at the 1e-8 floor; alpha_n = 1.1 alpha_r + 1e-8 (pinned)
    assert q.alpha_r == pytest.approx(1e-8) and q.beta_r == pytest.approx(1e-8)
    assert q.alpha_n == pytest.approx(2.1e-8) and q.beta_n == pytest.approx(2.1e-8)
    # compute model still fitted
    assert q.alpha_c == pytest.approx(TRUE.alpha_c, rel=1e-3) and q.beta_c == pytest.approx(TRUE.beta_c, rel=1e-3)


def test_fit_pins_inter_node_params_without_multi_node_rows():
    n, r, b, step, sync = synthetic_rows(TRUE, multi_node=False, size=200)
    q = fit_throughput(n, r, b, step, sync)
    assert q.alpha_n == pytest.approx(1.1 * q.alpha_r + 1e-8, rel=1e-6)
    assert q.beta_n == pytest.approx(1.1 * q.beta_r + 1e-8, rel=1e-6)
    assert q.alpha_r == pytest.approx(TRUE.alpha_r, rel=0.02)


def test_fit_enforces_network_prior():
    # data generated with alpha_n < alpha_r (violates the prior): fit must still give alpha_n >= 1.1 alpha_r
    bad = ThroughputParams(0.02, 0.001, 0.01, 0.001, 0.05, 0.005, 1.5)
    q = fit_throughput(*synthetic_rows(bad, seed=3))
    assert q.alpha_n >= 1.1 * q.alpha_r and q.beta_n >= 1.1 * q.beta_r
    q2 = fit_throughput(*synthetic_rows(TRUE, seed=4))
    assert q2.alpha_n >= 1.1 * q2.alpha_r and q2.beta_n >= 1.1 * q2.beta_r


# ---------------------------------------------------------------- efficiency
@settings(max_examples=50, deadline=None)
@given(
    var=st.floats(1e-3, 1e3), sqr=st.floats(1e-3, 1e3), b0=st.floats(1.0, 1e4),
    steps=st.lists(st.floats(1.001, 3.0), min_size=1, max_size=7),
)
def test_efficiency_one_at_b0_and_strictly_decreasing(var, sqr, b0, steps):
    """Strictly decreasing wherever floating point can resolve it: batch scales at least 0.1% apart and
    sqr / var >= 1e-6 (regression: hypothesis once drew scales 1.0 and 1.0000000000000002, equal in floats)."""
    assert efficiency(b0, b0, sqr, var) == pytest.approx(1.0, abs=1e-12)
    B = b0 * np.cumprod([1.0, *steps])
    e = efficiency(B, b0, sqr, var)
    assert np.all(np.diff(e) < 0)
    assert np.all((e > 0) & (e <= 1.0 + 1e-12))


def test_efficiency_formula_by_hand():
    # var=3, sqr=1, scale=4: gain = (3+1)/(3/4+1) = 16/7; E = gain / 4 = 4/7
    assert efficiency(400, 100, 1.0, 3.0) == pytest.approx(4 / 7)


# ---------------------------------------------------------------- goodput
KW = dict(init_batch=64, max_batch=4096, grad_sqr=1.0, grad_var=50.0, local_bsz_range=(16, 128))


def test_goodput_uses_accumulation_when_best_batch_does_not_fit():
    # slow network (T_net = 0.5 + 0.05 * 6 = 0.8 s vs T_c <= 0.15 s) and a large noise scale (var/sqr = 1000):
    # accumulating amortises the all-reduce, so the best batch exceeds r * max_local = 8 * 128 = 1024
    p = ThroughputParams(0.02, 1e-3, 0.5, 0.05, 0.03, 0.003, 1.5)
    kw = {**KW, "grad_var": 1000.0}
    res = goodput(p, 2, 8, **kw)
    assert isinstance(res, GoodputResult)
    assert res.accum_steps > 0 and res.batch_size > 1024
    assert res.batch_size == 8 * res.local_bsz * (res.accum_steps + 1)
    assert 16 <= res.local_bsz <= 128
    # without accumulation the best is capped at the local limit, and is worse
    res0 = goodput(p, 2, 8, accumulation=False, **kw)
    assert res0.accum_steps == 0 and res0.batch_size <= 1024 and res0.goodput < res.goodput


def test_goodput_invariants_on_a_grid():
    n = np.repeat([1, 2, 4], 6)
    r = np.concatenate([np.array([1, 2, 3, 4, 6, 8]) * k for k in (1, 2, 4)])
    res = goodput(TRUE, n, r, **KW)
    assert res.goodput.shape == n.shape and res.feasible.all()
    np.testing.assert_array_equal(res.batch_size, r * res.local_bsz * (res.accum_steps + 1))
    assert np.all((res.local_bsz >= 16) & (res.local_bsz <= 128))
    assert np.all((res.batch_size >= 64) & (res.batch_size <= 4096))
    np.testing.assert_allclose(res.goodput, res.throughput * res.efficiency, rtol=1e-12)
    np.testing.assert_allclose(res.throughput, TRUE.throughput(n, r, res.local_bsz, res.accum_steps), rtol=1e-12)
    np.testing.assert_allclose(res.efficiency, efficiency(res.batch_size, 64, 1.0, 50.0), rtol=1e-12)


def test_goodput_vectorised_equals_scalar_loop():
    rng = np.random.default_rng(7)
    n = rng.integers(1, 9, (5, 8))
    r = n * rng.integers(1, 9, (5, 8))
    res = goodput(TRUE, n, r, **KW)
    for i in range(5):
        for j in range(8):
            one = goodput(TRUE, int(n[i, j]), int(r[i, j]), **KW)
            for f in ("goodput", "batch_size", "local_bsz", "accum_steps", "throughput", "efficiency"):
                assert getattr(res, f)[i, j] == pytest.approx(float(getattr(one, f)), rel=1e-12), f


def test_goodput_infeasible_config_is_flagged():
    # 64 replicas * min local 16 = 1024 > max_batch 512
    res = goodput(TRUE, [1, 16], [1, 64], init_batch=64, max_batch=512, grad_sqr=1.0, grad_var=5.0,
                  local_bsz_range=(16, 128))
    assert res.feasible.tolist() == [True, False]
    assert res.goodput[1] == 0 and res.goodput[0] > 0


# ---------------------------------------------------------------- bootstrap
def test_bootstrap_equals_formula():
    xa = TRUE.throughput([1, 2, 4], [4, 8, 16], 32)
    xa1, xb1 = float(TRUE.throughput(1, 1, 32)), 1234.5
    np.testing.assert_allclose(bootstrap(xb1, xa1, xa), xb1 / xa1 * xa, rtol=1e-15)
    conv = bootstrap(TRUE, xa1, xb1, [1, 2, 4], [4, 8, 16], 32)
    np.testing.assert_allclose(conv, xb1 / xa1 * xa, rtol=1e-12)
    pb = bootstrap_params(TRUE, xa1, xb1)
    np.testing.assert_allclose(pb.throughput([1, 2, 4], [4, 8, 16], 32), xb1 / xa1 * xa, rtol=1e-12)
    assert float(pb.throughput(1, 1, 32)) == pytest.approx(xb1, rel=1e-12)


# ---------------------------------------------------------------- JobGoodputModel
def _model() -> JobGoodputModel:
    return JobGoodputModel(
        name="toy", params={"a": TRUE, "b": TRUE.scaled(2.0)}, init_batch=64, max_batch=4096,
        local_bsz_limits={"a": (16, 128), "b": (16, 64)}, grad_batch=(64, 1024), grad_sqr=(1.0, 0.5),
        grad_var=(50.0, 100.0),
    )


def test_job_model_goodput_and_throughput():
    m = _model()
    assert GoodputModel is JobGoodputModel
    n, r = np.array([1, 1, 2]), np.array([1, 4, 8])
    g = m.goodput("a", n, r)
    ref = goodput(TRUE, n, r, **KW)
    np.testing.assert_allclose(g.goodput, ref.goodput)
    assert m.goodput("b", n, r).local_bsz.max() <= 64
    # stats interpolated in log batch: halfway (256) between 64 and 1024 -> mean of the two
    sqr, var = m.grad_stats(256)
    assert float(sqr) == pytest.approx(0.75) and float(var) == pytest.approx(75.0)
    # throughput at a global batch: 4 replicas, B=1024 -> b=256 > 128 -> s=1, b=128
    x = m.throughput("a", 1, 4, 1024)
    assert float(x) == pytest.approx(float(TRUE.throughput(1, 4, 128, 1)), rel=1e-12)
    m2 = JobGoodputModel.from_dict(m.to_dict())
    assert m2 == m
    m3 = m.with_bootstrap("c", "a", 100.0, 50.0, (8, 64))
    assert m3.params["c"] == TRUE.scaled(2.0)


# ---------------------------------------------------------------- validation
@pytest.mark.parametrize(
    "call, field, value",
    [
        (lambda: fit_throughput([1, 1], [1, 1], [8, 16], [-0.1, 0.2], [0.0, 0.0]), "step_time", -0.1),
        (lambda: fit_throughput([1, 1], [1, 1], [8, 16], [0.1, 0.2], [0.0]), "sync_time", None),
        (lambda: fit_throughput([1, 1], [1, 1], [8, np.nan], [0.1, 0.2], [0.0, 0.0]), "local_bsz", None),
        (lambda: ThroughputParams(0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 11.0), "gamma", 11.0),
        (lambda: ThroughputParams(-0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 1.0), "alpha_c", -0.1),
        (lambda: efficiency(100, 0, 1.0, 1.0), "init_batch", 0.0),
        (lambda: efficiency(100, -5, 1.0, 1.0), "init_batch", -5.0),
        (lambda: TRUE.step_time(2, 1, 8), "replicas", 1.0),
        (lambda: goodput(TRUE, 1, 1, init_batch=0, max_batch=10, grad_sqr=1, grad_var=1), "init_batch", 0.0),
    ],
)
def test_validation_errors_name_field_and_value(call, field, value):
    with pytest.raises(ValueError) as info:
        call()
    msg = str(info.value)
    assert field in msg
    assert getattr(info.value, "field", field) == field
    if value is not None:
        assert repr(value) in msg or str(value) in msg
