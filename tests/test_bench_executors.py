"""schedopt.executors on real engines: the serial path, concurrent.futures pools, a Dask LocalCluster, a Ray pool
(skipped with the reason where ray does not install), and a benchmark sweep on a Dask cluster that gives the same
records as the local run."""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing as mp
import time

import pytest

from schedopt import bench
from schedopt.errors import InputError
from schedopt.executors import describe, kind_of, map_ordered, map_unordered, open_executor, validate_spec


def cube(x: int) -> int:
    return x**3


def slow_then_fast(x: float) -> float:
    time.sleep(x)
    return x


def test_serial_runs_in_order_and_takes_closures():
    seen = []
    assert map_ordered(lambda x: seen.append(x) or x + 1, [3, 1, 2]) == [4, 2, 3]
    assert seen == [3, 1, 2] and kind_of(None) == "serial"


def test_thread_and_process_pools_agree_and_keep_order():
    k = 7
    with cf.ThreadPoolExecutor(2) as pool:
        assert map_ordered(cube, range(6), pool) == [0, 1, 8, 27, 64, 125]
        # unordered yields the fast one first, with its index
        assert [i for i, _ in map_unordered(slow_then_fast, [0.4, 0.0], pool)] == [1, 0]
    with open_executor("processes:2") as pool:
        assert kind_of(pool) == "futures" and describe(pool) == "processes"
        assert map_ordered(lambda x: x + k, [1, 2, 3], pool) == [8, 9, 10]  # a closure, sent by cloudpickle


def test_multiprocessing_pool_is_driven_through_imap_unordered():
    with mp.get_context("spawn").Pool(2) as pool:
        assert kind_of(pool) == "pool"
        assert map_ordered(cube, [2, 3, 4], pool) == [8, 27, 64]


def test_dask_local_cluster():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        with distributed.Client(cluster) as client:
            assert kind_of(client) == "dask" and describe(client).startswith("dask(tcp://")
            assert map_ordered(cube, range(5), client) == [0, 1, 8, 27, 64]
            off = 100
            assert map_ordered(lambda x: x + off, [1, 2], client) == [101, 102]
            # a spec string naming the running scheduler connects to it
            with open_executor(cluster.scheduler_address) as again:
                assert map_ordered(cube, [5], again) == [125]


@pytest.mark.slow
def test_ray_pool():
    """(slow: a Ray start takes ~15 s here.)"""
    pytest.importorskip("ray", reason="ray is not installed here (pip install ray)")
    with open_executor("ray:2") as pool:
        assert kind_of(pool) == "pool"
        assert map_ordered(cube, [1, 2, 3], pool) == [1, 8, 27]


@pytest.mark.parametrize("spec", ["serial", "threads", "threads:3", "processes:2", "dask", "dask:2",
                                  "dask://10.0.0.1:8786", "tcp://h:1", "ray", "ray:4", "ray://h:10001"])
def test_spec_strings_are_recognised(spec: str):
    validate_spec(spec)


@pytest.mark.parametrize("spec", ["pigeon", "threads:0", "threads:x", "dask://", "spark://h:7077"])
def test_bad_spec_strings_name_the_executor(spec: str):
    with pytest.raises(InputError) as ei:
        validate_spec(spec)
    assert ei.value.field == "executor"


def test_an_object_without_an_engine_interface_is_refused():
    with pytest.raises(InputError, match="executor"):
        kind_of(object())


@pytest.mark.slow
def test_bench_sweep_on_dask_gives_the_local_records():
    """HeterPS at 4 GPUs, DP and greedy: a Dask cluster (given as a spec string) returns the same records,
    in the sweep's order, as the serial run (times apart). (slow: ~20 s, each run a fresh process.)"""
    pytest.importorskip("distributed")
    kw = {"sizes": [4], "seeds": [1], "backends": ["dp", "greedy"]}
    local = bench.run("heterps", **kw)
    dask = bench.run("heterps", **kw, executor="dask:2")
    key = [(r.instance_hash, r.seed, r.backend, r.termination, r.limit, r.objective, r.bound) for r in local]
    assert key == [(r.instance_hash, r.seed, r.backend, r.termination, r.limit, r.objective, r.bound) for r in dask]
    assert [r.termination for r in local] == ["optimal", "feasible"]
