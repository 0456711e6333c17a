"""The estimator's fit costs (issue 26): one BLAS-library scan per process, and one fit per (profile, rows) shared by
every estimator that holds those rows, with exactly the values of a fresh fit."""

from __future__ import annotations

from threadpoolctl import threadpool_info

from schedopt import zoo
from schedopt.goodput import GoodputEstimator, fit_throughput
from schedopt.goodput._estimator import _fit_rows
from schedopt.goodput._throughput import _blas_libraries


def test_blas_selection_covers_every_blas_library_and_restores_the_pools() -> None:
    """The kept selection holds every BLAS library threadpoolctl finds now, limits each to one thread inside, and
    the pools are back at their size after a fit."""
    kept = {lib["filepath"] for lib in _blas_libraries().info()}
    now = {i["filepath"]: i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"}
    assert kept == set(now) and kept
    with _blas_libraries().limit(limits=1):
        assert all(i["num_threads"] == 1 for i in threadpool_info() if i["user_api"] == "blas")
    fit_throughput([1, 1, 2], [1, 4, 8], [32, 32, 32], [0.2, 0.3, 0.5], [0.0, 0.1, 0.3], gamma_starts=[1.0])
    assert {i["filepath"]: i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"} == now


def _history(est: GoodputEstimator, truth, rows) -> None:
    for t, n, r, b in rows:
        step = float(truth.params[t].step_time(n, r, b))
        est.observe(t, n, r, b, step, step - float(truth.params[t].compute_time(b)))


def test_estimators_with_the_same_rows_share_one_fit_equal_to_a_fresh_fit() -> None:
    """Two cifar10 estimators: the same a100 rows, different t4 rows. Their a100 models are one object, equal to
    fit_throughput's on the profile plus the rows; their t4 models differ."""
    truth = zoo.load_model("cifar10")
    a100 = [("a100", 1, 2, 128), ("a100", 1, 4, 128), ("a100", 2, 8, 64)]
    e1 = GoodputEstimator(truth, fit_starts=(1.0,))
    e2 = GoodputEstimator(truth, fit_starts=(1.0,))
    _history(e1, truth, [*a100, ("t4", 1, 2, 64)])
    _history(e2, truth, [("t4", 1, 4, 64), *a100])
    assert e1.model("a100") is e2.model("a100")
    assert e1.model("t4") != e2.model("t4")
    prof = e1.profiles["a100"]
    ms = e1.measurements("a100")
    fresh = fit_throughput([1] * len(prof) + [m.nodes for m in ms], [1] * len(prof) + [m.replicas for m in ms],
                           [b for b, _ in prof] + [m.local_bsz for m in ms],
                           [s for _, s in prof] + [m.step_time for m in ms],
                           [0.0] * len(prof) + [m.sync_time for m in ms], gamma_starts=(1.0,))
    assert e1.model("a100") == fresh
    assert _fit_rows.cache_info().hits >= 1
