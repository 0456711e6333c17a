

def test_fit_is_the_same_on_one_blas_thread_and_on_the_pool_and_checks_the_thread_count() -> None:
    """The BLAS thread limit changes the fit's speed, never its answer; a bad count is a named error."""
    import numpy as np
    import pytest

    from schedopt.errors import InputError
    from schedopt.goodput import fit_throughput

    n, r, b = np.array([1, 1, 1, 2, 2, 1]), np.array([1, 2, 4, 8, 8, 1]), np.array([32, 32, 32, 32, 64, 64])
    step, sync = 0.1 + 0.002 * b + 0.01 * r, 0.01 * (r > 1) * r
    one = fit_throughput(n, r, b, step, sync, gamma_starts=[1.0])
    pool = fit_throughput(n, r, b, step, sync, gamma_starts=[1.0], blas_threads=None)
    assert one == pool
    assert np.allclose(one.step_time(n, r, b), step, rtol=0.05)
    for bad in (0, -1, 1.5, True, "2"):
        with pytest.raises(InputError, match="blas_threads"):
            fit_throughput(n, r, b, step, sync, blas_threads=bad)


def test_the_fit_objective_gradient_matches_central_differences() -> None:
    """fit_throughput hands L-BFGS-B the exact gradient; at random log-parameters (every network regime: one GPU,
    within a node, across nodes) it must equal central differences of the objective to 1e-6 relative."""
    import numpy as np

    from schedopt.goodput._throughput import _objective, _objective_and_grad

    n, r = np.array([1, 1, 1, 2, 2, 1, 4]), np.array([1, 2, 4, 8, 8, 1, 16])
    b = np.array([32, 32, 32, 32, 64, 64, 16.0])
    step, sync = 0.1 + 0.002 * b + 0.01 * r, 0.01 * (r > 1) * r
    args = (n, r, b, np.log(step - sync), np.log(step))
    rng = np.random.default_rng(1)
    for _ in range(5):
        th = np.append(rng.normal(-3, 1, 6), rng.uniform(1, 5))
        f, g = _objective_and_grad(th, *args)
        assert f == _objective(th, *args)
        num = np.array([(_objective(th + h, *args) - _objective(th - h, *args)) / 2e-6 for h in np.eye(7) * 1e-6])
        assert np.max(np.abs(num - g)) <= 1e-6 * np.max(np.abs(num))
