"""schedopt.sim sweeps (local pool, Dask) and the simulate command, end to end."""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import csv
from pathlib import Path

import pytest

from schedopt.sim.cli import add_parser, parse_seeds
from schedopt.sim.sweep import SimTask, run_task, simulate_many


def test_simulate_many_order_and_meta(small_csv: str) -> None:
    res = simulate_many(["fifo", "tiresias"], [small_csv], seeds=[0, 1], cluster="pollux", workers=1)
    assert [(r.meta.policy, r.meta.seed) for r in res] == [("fifo", 0), ("fifo", 1), ("tiresias", 0), ("tiresias", 1)]
    assert all(r.meta.job_model == "pollux" and r.meta.gpus == 64 for r in res)
    assert res[0].jobs == res[1].jobs  # deterministic policies: the seed changes nothing
    assert all(len(r.jcts()) == 12 for r in res)


def test_thread_pool_equals_serial(small_csv: str) -> None:
    serial = simulate_many(["tiresias"], [small_csv], cluster="pollux", workers=1)
    with cf.ThreadPoolExecutor(2) as ex:
        pooled = simulate_many(["tiresias"], [small_csv], cluster="pollux", executor=ex)
    assert pooled[0].jobs == serial[0].jobs


def test_dask_local_cluster_equals_local(small_csv: str) -> None:
    distributed = pytest.importorskip("distributed", reason="dask[distributed] is an optional extra")
    local = simulate_many(["fifo", "tiresias"], [small_csv], cluster="pollux", workers=2)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None) as lc, \
            distributed.Client(lc) as client:
        remote = simulate_many(["fifo", "tiresias"], [small_csv], cluster="pollux", executor=client)
    assert [r.jobs for r in remote] == [r.jobs for r in local]
    assert [r.meta for r in remote] == [r.meta for r in local]


def test_run_task_is_a_plain_function(small_csv: str) -> None:
    r = run_task(SimTask("fifo", small_csv, cluster="pollux"))
    assert r.meta.policy == "fifo" and r.meta.cluster_preset == "pollux"


def test_parse_seeds() -> None:
    assert parse_seeds("0-3") == [0, 1, 2, 3] and parse_seeds("0,2,5") == [0, 2, 5]
    with pytest.raises(Exception, match="--seeds"):
        parse_seeds("a-b")


def test_cli_simulate_and_report_end_to_end(small_csv: str, tmp_path: Path) -> None:
    parser = argparse.ArgumentParser(prog="schedopt")
    add_parser(parser.add_subparsers(dest="command"))
    runs, rep = tmp_path / "runs", tmp_path / "report"
    a = parser.parse_args(["simulate", "--cluster", "pollux", "--workload", small_csv, "--policy", "fifo,tiresias",
                           "--seeds", "0", "-o", str(runs)])
    assert a.func(a) == 0
    files = sorted(p.name for p in runs.iterdir())
    assert files == ["fifo__small__seed0.jsonl", "summary.csv", "tiresias__small__seed0.jsonl"]
    b = parser.parse_args(["simulate", "report", str(runs), "-o", str(rep)])
    assert b.func(b) == 0
    assert sorted(p.name for p in rep.iterdir()) == ["jct_cdf.png", "report.md", "rho_cdf.png", "summary.csv",
                                                     "utilization.png"]
    rows = list(csv.DictReader((rep / "summary.csv").open()))
    direct = simulate_many(["fifo"], [small_csv], cluster="pollux", workers=1)[0].summary()
    fifo = next(r for r in rows if r["policy"] == "fifo")
    assert float(fifo["avg_jct_s"]) == pytest.approx(direct["avg_jct_s"], rel=1e-5)
    assert fifo["finished"] == "12"


@pytest.mark.slow
def test_ray_pool_equals_local(small_csv: str) -> None:
    """Ray's multiprocessing Pool (a map-only pool) gives the local records (slow: Ray starts a local cluster)."""
    ray = pytest.importorskip("ray", reason="ray is an optional extra")
    from ray.util.multiprocessing import Pool

    local = simulate_many(["fifo", "tiresias"], [small_csv], cluster="pollux", workers=1)
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
    try:
        with Pool(processes=1) as pool:
            remote = simulate_many(["fifo", "tiresias"], [small_csv], cluster="pollux", executor=pool)
    finally:
        ray.shutdown()
    assert [r.jobs for r in remote] == [r.jobs for r in local]


def test_cli_simulate_on_a_dask_scheduler_equals_the_local_run(small_csv: str, tmp_path: Path) -> None:
    """``schedopt simulate --dask HOST:PORT`` sends the simulations to a running Dask scheduler (a real
    LocalCluster) and writes the same records as the local pool; two executor flags at once are refused by name."""
    distributed = pytest.importorskip("distributed", reason="dask is an optional extra")
    from schedopt.errors import InputError

    parser = argparse.ArgumentParser(prog="schedopt")
    add_parser(parser.add_subparsers(dest="command"))
    base = ["simulate", "--cluster", "pollux", "--workload", small_csv, "--policy", "fifo,tiresias", "--seeds", "0"]
    local_dir, dask_dir = tmp_path / "local", tmp_path / "dask"
    a = parser.parse_args([*base, "-o", str(local_dir)])
    assert a.func(a) == 0
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None) as lc:
        b = parser.parse_args([*base, "-o", str(dask_dir), "--dask", lc.scheduler_address.replace("tcp://", "")])
        assert b.func(b) == 0
    for name in ("fifo__small__seed0.jsonl", "tiresias__small__seed0.jsonl"):
        assert (local_dir / name).exists() and (dask_dir / name).exists()
    rows = {d: {r["policy"]: r["avg_jct_s"] for r in csv.DictReader((d / "summary.csv").open())}
            for d in (local_dir, dask_dir)}
    assert rows[dask_dir] == rows[local_dir] and set(rows[local_dir]) == {"fifo", "tiresias"}
    c = parser.parse_args([*base, "--dask", "127.0.0.1:1", "--ray"])
    with pytest.raises(InputError, match="--executor"):
        c.func(c)
