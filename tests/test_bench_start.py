"""``bench.run(..., start=...)``: a run's process forked from the caller (the default where it can be: issue 26, a
lone run's fixed cost) gives the records a fresh interpreter gives, keeps its own session, guard, memory peak and
output apart, and falls back to a fresh interpreter where a fork is unsafe. Real processes and solvers throughout;
the Ctrl-C path of a forked run is tests/test_cli.py::test_ctrl_c_keeps_the_finished_runs_and_exits_130 (the
command forks its runs)."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import schedopt
from schedopt import bench
from schedopt.bench.registry import BenchSpec, ModelPipeline
from schedopt.bench.runner import fork_usable
from schedopt.errors import InputError

pytestmark = pytest.mark.skipif(fork_usable() != "", reason=f"no fork here: {fork_usable()}")

_FRESH = "SCHEDOPT_TEST_FRESH_INTERPRETER"


def in_a_process_that_can_fork(test):
    """Run ``test`` here when this process may fork, else in a fresh interpreter (pytest on the test's node id),
    asserting it passed there: an earlier test of the suite can leave a thread for good (Dask's offload thread after
    a LocalCluster), and a process with other threads refuses ``start="fork"``, as it must."""

    @functools.wraps(test)
    def wrapper(*args, **kwargs):
        why = fork_usable()
        if why == "" or os.environ.get(_FRESH):
            return test(*args, **kwargs)
        assert "other Python threads" in why, why
        node = os.environ["PYTEST_CURRENT_TEST"].rsplit(" ", 1)[0]
        root = Path(__file__).resolve().parents[1]
        done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", node], cwd=root,
                              env={**os.environ, _FRESH: "1"}, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0 and " passed" in done.stdout, done.stdout[-3000:] + done.stderr[-2000:]

    return wrapper


def knapsack(gpus: int, seed: int) -> schedopt.LinearModel:
    """max 3a + 4b + 5c + 6d s.t. 2a + 3b + 4c + 5d <= 7 + seed, binary: optimum 9 at seed 0 ({a,d} or {b,c}), 10
    at seed 1 ({b,d}; every triple weighs at least 9)."""
    m = schedopt.LinearModel("knapsack", sense="maximize")
    m.add_variables("x", 4, kind="binary", labels=list("abcd"))
    m.add_constraints("weight", {"x": [[2, 3, 4, 5]]}, upper=7 + seed, labels=["w"])
    m.set_objective({"x": [3, 4, 5, 6]})
    return m


def noisy_knapsack(gpus: int, seed: int) -> schedopt.LinearModel:
    """The knapsack, after writing to the run's stdout and stderr (Python's and the file descriptors)."""
    print("NOISE-PY-OUT")
    print("NOISE-PY-ERR", file=sys.stderr)
    os.write(1, b"NOISE-FD-OUT\n")
    os.write(2, b"NOISE-FD-ERR\n")
    return knapsack(gpus, seed)


def sleepy_route(state, model, params):  # a "solver" stuck far longer than the guard
    with open(os.environ["SCHEDOPT_TEST_PIDFILE"], "w") as f:
        f.write(str(os.getpid()))
    time.sleep(120)
    raise AssertionError("the guard should have killed this run")


def dying_route(state, model, params):  # the run's process ends without a word
    os.write(2, b"about to die on purpose\n")
    os._exit(3)


IDENT = "schedopt.bench.registry:model_identity"
KNAP = BenchSpec("test-start-knapsack", "knapsack", knapsack, ModelPipeline(build=IDENT), sizes=(64,), seeds=(0, 1),
                 backends=("highs",), params={"mip_rel_gap": 0.0})
NOISY = BenchSpec("test-start-noisy", "knapsack", noisy_knapsack, ModelPipeline(build=IDENT), sizes=(64,),
                  backends=("highs",), params={"mip_rel_gap": 0.0})
ODD = BenchSpec("test-start-odd", "knapsack", knapsack,
                ModelPipeline(build=IDENT, baselines={"sleepy": sleepy_route, "dying": dying_route}), sizes=(64,),
                backends=("sleepy", "dying", "highs"), params={"mip_rel_gap": 0.0})


def _start(rec: bench.Record) -> str:
    return str(json.loads(rec.extra)["start"])


@in_a_process_that_can_fork
def test_a_forked_run_gives_the_fresh_interpreters_record() -> None:
    forked = bench.run(KNAP, progress=False, start="fork")
    fresh = bench.run(KNAP, progress=False, start="exec")
    auto = bench.run(KNAP, progress=False)
    assert [_start(r) for r in forked + fresh + auto] == ["fork"] * 2 + ["exec"] * 2 + ["fork"] * 2
    for recs in (forked, fresh, auto):
        assert [r.objective for r in recs] == [9.0, 10.0]
        assert [r.lp_bound for r in recs] == [9.5, 10.75]  # seed 0: a, b, half of c; seed 1: a, b, 3/4 of c
        assert all(r.termination == "optimal" and r.error == "" for r in recs)
        assert all(0 < r.peak_rss_mb < 10_000 and r.base_rss_mb <= r.peak_rss_mb for r in recs)
    assert [r.instance_hash for r in forked] == [r.instance_hash for r in fresh]


@in_a_process_that_can_fork
def test_a_forked_runs_output_stays_out_of_the_callers(capfd: pytest.CaptureFixture[str]) -> None:
    (rec,) = bench.run(NOISY, progress=False, start="fork")
    assert rec.objective == 9.0 and _start(rec) == "fork"
    out, err = capfd.readouterr()
    assert "NOISE" not in out and "NOISE" not in err


@in_a_process_that_can_fork
def test_guard_kills_a_stuck_forked_run_and_a_dead_one_is_recorded(tmp_path, monkeypatch) -> None:
    pidfile = tmp_path / "pid"
    monkeypatch.setenv("SCHEDOPT_TEST_PIDFILE", str(pidfile))
    t0 = time.perf_counter()
    stuck, dead, ok = bench.run(ODD, guard_seconds=2, progress=False, start="fork")
    assert time.perf_counter() - t0 < 60  # never the 120 s sleep
    assert stuck.termination == "guard" and not stuck.has_incumbent and "'solve'" in stuck.outcome
    pid = int(pidfile.read_text())
    with pytest.raises(ProcessLookupError):  # killed and reaped: no such process any more
        os.kill(pid, 0)
    assert dead.termination == "error" and "exit code 3" in dead.error and "about to die on purpose" in dead.error
    assert ok.termination == "optimal" and ok.objective == 9.0
    assert [_start(r) for r in (stuck, dead, ok)] == ["fork"] * 3


def test_a_running_thread_makes_auto_exec_and_fork_refused() -> None:
    stop = threading.Event()
    t = threading.Thread(target=stop.wait)
    t.start()
    try:
        assert t.name in fork_usable() and "other Python threads" in fork_usable()
        (rec, _) = bench.run(KNAP, progress=False)
        assert _start(rec) == "exec" and rec.objective == 9.0
        with pytest.raises(InputError, match="start.*other Python threads"):
            bench.run(KNAP, progress=False, start="fork")
    finally:
        stop.set()
        t.join()


@pytest.mark.parametrize("start", ["fork", "exec"])
@in_a_process_that_can_fork
def test_a_warm_sweeps_kept_process_forks_or_execs(start: str) -> None:
    """``warm=True``: the kept process is forked or a fresh interpreter (``worker --serve``); either serves the runs
    one after another with the same records."""
    recs = bench.run(KNAP, repeat=2, progress=False, warm=True, start=start)
    assert [r.objective for r in recs] == [9.0, 9.0, 10.0, 10.0]
    assert [json.loads(r.extra) for r in recs] == [{"start": start, "warm_run": k} for k in (1, 2, 3, 4)]
    assert all(0 < r.peak_rss_mb < 10_000 for r in recs)


@in_a_process_that_can_fork
def test_runs_fork_after_a_solve_in_this_process() -> None:
    """A solve here leaves an idle solve worker thread (schedopt.interrupt): the run still forks, and its own solves
    do not wait for that thread, which its process does not have (they would hang until the guard)."""
    m = knapsack(64, 0)
    assert schedopt.solve(m, "highs").objective == 9.0
    assert fork_usable() == ""
    t0 = time.perf_counter()
    (rec, _) = bench.run(KNAP, progress=False, start="fork", guard_seconds=60)
    assert rec.objective == 9.0 and _start(rec) == "fork" and time.perf_counter() - t0 < 30


@pytest.mark.parametrize("kw", [{"start": "spawn"}, {"start": "fork", "workers": 2}, {"start": "fork", "executor": "serial"}])
def test_bad_start_is_refused_by_name_before_any_run(kw: dict) -> None:
    with pytest.raises(InputError, match="start"):
        bench.run(KNAP, progress=False, **kw)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork here")
def test_a_plain_fork_after_a_solve_gets_its_own_solve_workers() -> None:
    """schedopt.interrupt resets its worker pool at fork (os.register_at_fork): the parent's idle worker thread does
    not exist in the child, and a solve queued for it there used to wait forever."""
    from schedopt import interrupt

    first = interrupt.submit(lambda: 1)
    assert first.done.wait(10) and not interrupt.solve_workers_busy()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        task = interrupt.submit(lambda: 2)
        os._exit(0 if task.done.wait(5) and task.value == 2 else 3)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
