

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
