"""``bench.run(..., warm=True)``: a sweep's runs one after another in one kept process (issue 26: the harness's
fixed cost per run), with the same records as fresh processes, a guard that still kills a stuck run (and a fresh
process for the next), and each run's own memory peak. Real processes and real solvers throughout."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

import schedopt
from schedopt import bench
from schedopt.bench.registry import BenchSpec, ModelPipeline
from schedopt.errors import InputError


def knapsack(gpus: int, seed: int) -> schedopt.LinearModel:
    """max 3a + 4b + 5c + 6d s.t. 2a + 3b + 4c + 5d <= 7 + seed, binary.

    Capacity 7 (seed 0): optimum 9 ({a,d} or {b,c}; no triple fits). Capacity 8 (seed 1): 10 ({b,d}, weight 8;
    every triple weighs at least 9).
    """
    m = schedopt.LinearModel("knapsack", sense="maximize")
    m.add_variables("x", 4, kind="binary", labels=list("abcd"))
    m.add_constraints("weight", {"x": [[2, 3, 4, 5]]}, upper=7 + seed, labels=["w"])
    m.set_objective({"x": [3, 4, 5, 6]})
    return m


def sleepy_route(state, model, params):  # a "solver" stuck far longer than the guard
    time.sleep(120)
    raise AssertionError("the guard should have killed this run")


IDENT = "schedopt.bench.registry:model_identity"
KNAP = BenchSpec("test-warm-knapsack", "knapsack", knapsack, ModelPipeline(build=IDENT), sizes=(64,),
                 seeds=(0, 1), backends=("highs",), params={"mip_rel_gap": 0.0})
STUCK = BenchSpec("test-warm-stuck", "knapsack", knapsack,
                  ModelPipeline(build=IDENT, baselines={"sleepy": sleepy_route}), sizes=(64,), seeds=(0,),
                  backends=("sleepy", "highs"), params={"mip_rel_gap": 0.0})


def _warm_run(rec: bench.Record) -> int:
    return int(json.loads(rec.extra)["warm_run"])


def test_warm_sweep_gives_the_fresh_records_in_one_process() -> None:
    fresh = bench.run(KNAP, progress=False)
    warm = bench.run(KNAP, repeat=2, progress=False, warm=True)
    assert [r.objective for r in fresh] == [9.0, 10.0]
    assert [r.objective for r in warm] == [9.0, 9.0, 10.0, 10.0]
    assert all(r.termination == "optimal" for r in warm)
    assert [_warm_run(r) for r in warm] == [1, 2, 3, 4]  # one process served the four runs
    assert all(json.loads(r.extra)["start"] in ("fork", "exec") and "warm_run" not in r.extra for r in fresh)
    assert all(r.peak_rss_mb > 0 for r in warm)


def test_warm_guard_kills_a_stuck_run_and_the_next_run_gets_a_fresh_process() -> None:
    t0 = time.perf_counter()
    stuck, ok = bench.run(STUCK, guard_seconds=2, progress=False, warm=True)
    assert time.perf_counter() - t0 < 60  # never the 120 s sleep
    assert stuck.backend == "sleepy" and stuck.termination == "guard" and not stuck.has_incumbent
    assert ok.backend == "highs" and ok.termination == "optimal" and ok.objective == 9.0
    assert _warm_run(ok) == 1  # the killed process went with its run


def test_warm_is_serial_only() -> None:
    with pytest.raises(InputError, match="warm"):
        bench.run(KNAP, warm=True, workers=2, progress=False)
    with pytest.raises(InputError, match="warm"):
        kw: dict = {"warm": "yes"}
        bench.run(KNAP, progress=False, **kw)


def test_cli_warm_flag_runs_in_one_process_and_refuses_workers(tmp_path: Path) -> None:
    """``schedopt bench --warm``: every record of the sweep comes from one kept process (warm_run 1, 2, ...);
    with ``--workers 2`` it is refused by the flag's name before anything runs."""
    from schedopt.cli import main

    out = tmp_path / "w.jsonl"
    assert main(["bench", "--problem", "sia", "--sizes", "64", "--seeds", "0,1", "--backends", "highs", "--warm",
                 "-o", str(out)]) == 0
    recs = [json.loads(line) for line in out.read_text().splitlines()]
    assert sorted(json.loads(r["extra"])["warm_run"] for r in recs) == list(range(1, len(recs) + 1))
    assert main(["bench", "--problem", "sia", "--sizes", "64", "--seeds", "0", "--backends", "highs", "--warm",
                 "--workers", "2", "-o", str(tmp_path / "x.csv")]) != 0
    assert not (tmp_path / "x.csv").exists()
