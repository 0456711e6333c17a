"""GoodputEstimator: bootstrap from 1-GPU profiles, measurements, refits, and which estimates are bootstrapped."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schedopt import zoo
from schedopt.errors import InputError
from schedopt.goodput import GoodputEstimator, JobGoodputModel, ThroughputParams, bootstrap_params, profile_params

#: configurations a job runs in as it grows (single-node multi-GPU and multi-node rows, two local batches)
RUNS = [(1, 2, 1.0), (1, 4, 1.0), (1, 4, 0.5), (2, 8, 1.0), (2, 8, 0.5), (4, 16, 1.0), (1, 8, 0.5), (3, 12, 1.0)]


def _measure(truth: ThroughputParams, n: int, r: int, b: float) -> tuple[float, float]:
    step = float(truth.step_time(n, r, b))
    return step, step - float(truth.compute_time(b))


def test_profile_params_recovers_a_compute_line() -> None:
    """Step times 0.01 + 0.001 b at b = 16, 32, 64: the closed form returns the line, network at the floor."""
    b = np.array([16.0, 32.0, 64.0])
    p = profile_params(b, 0.01 + 0.001 * b)
    assert p.alpha_c == pytest.approx(0.01) and p.beta_c == pytest.approx(0.001)
    assert p.alpha_r == p.beta_r == 1e-8 and p.gamma == 1.0
    # near-linear scaling: 8 GPUs do ~8x the samples of one
    assert float(p.throughput(1, 8, 64) / p.throughput(1, 1, 64)) == pytest.approx(8.0, rel=1e-5)


def test_lifecycle_profile_bootstrap_measured() -> None:
    """cifar10: every type starts from its profile; after multi-GPU measurements on a100, a100 is measured and
    every other type is Sia's bootstrap from it (xput_B(N) = xput_B(1) / xput_A(1) * xput_A(N)); measurements on
    t4 drop t4's bootstrap."""
    truth = zoo.load_model("cifar10")
    est = GoodputEstimator(truth, fit_starts=(1.5,))  # one starting gamma: a fast test
    assert set(est.bootstrapped_types) == set(truth.gpu_types) and est.source("t4") == "profile"
    assert est.model("t4") == profile_params(*zip(*truth.meta["seed_1gpu"]["t4"]))
    for n, r, f in RUNS[:4]:
        b = 256 * f
        est.observe("a100", n, r, b, *_measure(truth.params["a100"], n, r, b))
    assert "a100" not in est.bootstrapped_types and est.source("a100") == "measured" and est.source("t4") == "bootstrap"
    a = est.model("a100")
    b0 = est.common_batch("a100", "t4")
    want = bootstrap_params(a, float(profile_params(*zip(*truth.meta["seed_1gpu"]["a100"])).throughput(1, 1, b0)),
                            float(profile_params(*zip(*truth.meta["seed_1gpu"]["t4"])).throughput(1, 1, b0)))
    assert est.model("t4") == want
    est.observe("t4", 1, 4, 128, *_measure(truth.params["t4"], 1, 4, 128))
    assert "t4" not in est.bootstrapped_types and est.source("t4") == "measured"
    e = est.estimate()
    assert isinstance(e, JobGoodputModel) and e.meta["estimate_sources"]["v100"] == "bootstrap"
    assert est.goodput("t4", [1, 2], [4, 8]).goodput.shape == (2,)


def test_observe_rejects_bad_rows() -> None:
    est = GoodputEstimator(zoo.load_model("ncf") if "ncf" in zoo.list_models() else zoo.load_model("cifar10"))
    t = est.gpu_types[0]
    with pytest.raises(InputError, match="gpu_type"):
        est.observe("h100", 1, 1, 32, 0.1, 0.0)
    with pytest.raises(InputError, match="sync_time"):
        est.observe(t, 1, 2, 32, 0.1, 0.2)
    with pytest.raises(InputError, match="replicas"):
        est.observe(t, 2, 1, 32, 0.1, 0.0)


@pytest.mark.slow
@settings(max_examples=5, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(zoo.list_models()), pick=st.integers(0, 100))
def test_estimate_converges_to_the_fitted_model(name: str, pick: int) -> None:
    """Noise-free measurements from the zoo's fitted model on one type, with the 1-GPU profiles that model
    implies: the estimate's step times approach it as measurements arrive (max relative error over the observed
    grid and a held-out grid under 2 % at the end, where the profile-only start is off by more)."""
    truth = zoo.load_model(name)
    t = truth.gpu_types[pick % len(truth.gpu_types)]
    p = truth.params[t]
    lo, hi = truth.local_bsz_limits[t]
    bs = np.unique(np.round(np.geomspace(lo, hi, 8)))
    profiles = {k: list(zip(bs.tolist(), np.asarray(truth.params[k].step_time(1, 1, bs)).tolist()))
                for k in truth.gpu_types if truth.local_bsz_limits[k] == (lo, hi) or k == t}
    est = GoodputEstimator(truth, profiles)
    grid = [(n, r, float(np.clip(f * hi / 2, lo, hi))) for n, r, f in RUNS]
    held = [(1, 2, float(np.clip(hi / 4, lo, hi))), (2, 16, float(np.clip(hi / 3, lo, hi))), (8, 32, float(hi / 2))]

    def err(points: list) -> float:
        m = est.model(t)
        return max(abs(float(m.step_time(n, r, b)) / float(p.step_time(n, r, b)) - 1) for n, r, b in points)

    start = err(grid)
    for n, r, b in grid:
        est.observe(t, n, r, b, *_measure(p, n, r, b))
    end, out = err(grid), err(held)
    assert end < 0.02 and out < 0.02 and end < start
