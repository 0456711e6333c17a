"""schedopt.sim: the policy sees Sia's online goodput estimate (issue 14 item 2), and the placer never restarts a job
whose configuration the policy kept."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from schedopt.errors import InputError
from schedopt.goodput import JobGoodputModel, ThroughputParams
from schedopt.sia import Cluster, Config, GpuType
from schedopt.sim import Decision, JobModel, Workload, WorkloadJob, cluster_preset, get_policy, load_workload, simulate
from schedopt.sim.jobs import Application
from schedopt.sim.sweep import SimTask, run_task

# One GPU type "g", one node of 4 GPUs. True step time (gamma = 1, local batch fixed at 8, no accumulation):
# T_c = 0.1 + 0.01 * 8 = 0.18 s; T_net(1 node, r GPUs) = alpha_r + beta_r * (r - 2) = 0.2 + 0.05 (r - 2) for r > 1;
# step = T_c + T_net: 0.18 (1 GPU), 0.38 (2), 0.48 (4). grad_var = 0: the gain is 1 at every batch, so the
# goodput-best batch is the smallest, r * 8 (no accumulation). 1-GPU profile only: near-linear scaling, i.e. the
# estimator predicts 0.18 s at every GPU count until it has measured more than one GPU.
TRUE = ThroughputParams(0.1, 0.01, 0.3, 0.06, 0.2, 0.05, 1.0)


def _app(name: str, progress: list[float]) -> tuple[Application, JobGoodputModel]:
    e = len(progress)
    app = Application(name, np.array([8.0]), e, np.array(progress), np.ones((e, 1)), np.zeros((e, 1)))
    truth = JobGoodputModel(name, {"g": TRUE}, 8, 64, {"g": (8, 8)}, (8.0,), (1.0,), (0.0,))
    return app, truth


JM = JobModel("est", default_restart=10.0, apps={"w": _app("w", [1e6])})


class _Grow:
    """Every round: the job's cap (1 GPU, then 2, then 4) on the one node; records the estimate it saw."""

    name = "grow"
    adaptive = True

    def __init__(self) -> None:
        self.seen: list[tuple[float, float, float, str]] = []

    def decide(self, state):  # type: ignore[no-untyped-def]
        v = state.jobs[0]
        p = v.estimate.params["g"]
        self.seen.append((float(p.step_time(1, 2, 8)), float(p.step_time(1, 4, 8)), float(p.step_time(1, 3, 8)),
                          v.estimate.meta.get("estimate_sources", {}).get("g", "oracle")))
        return Decision(allocation={v.id: Config(1, min(v.max_gpus, 4), "g")})


def _grow(estimator: str) -> list[tuple[float, float, float, str]]:
    pol = _Grow()
    simulate(Cluster((GpuType("g", 4, 1),)), Workload("one", (WorkloadJob("A", 0.0, "w", 1, 8),)), pol,
             job_model=JM, estimator=estimator, max_time=240.0)
    return pol.seen


def test_estimate_starts_from_the_profile_and_converges_to_the_truth() -> None:
    seen = _grow("bootstrap")
    # round 0: nothing run; round 1: ran on 1 GPU (extends the 1-GPU profile): near-linear, 0.18 s everywhere
    for k in (0, 1):
        assert seen[k][0] == pytest.approx(0.18, rel=1e-3) and seen[k][1] == pytest.approx(0.18, rel=1e-3)
        assert seen[k][3] == "profile"
    # round 2: measured on 2 GPUs (one multi-GPU row: beta_r is pinned at the floor) -> 2 GPUs exact, 4 not yet
    assert seen[2][3] == "measured"
    assert seen[2][0] == pytest.approx(0.38, rel=1e-3)
    assert seen[2][1] == pytest.approx(0.38, rel=1e-2)
    # round 3 on: measured on 2 and 4 GPUs -> the truth, including the unmeasured 3 GPUs (0.18 + 0.25 = 0.43)
    for k in (3, 4):
        assert seen[k][0] == pytest.approx(0.38, rel=1e-3)
        assert seen[k][1] == pytest.approx(0.48, rel=1e-3)
        assert seen[k][2] == pytest.approx(0.43, rel=1e-3)


def test_oracle_shows_the_truth_from_the_start() -> None:
    seen = _grow("oracle")
    assert seen[0][:3] == pytest.approx((0.38, 0.48, 0.43), rel=1e-8)
    assert {s[3] for s in seen} == {"oracle"}


def test_estimator_is_checked_and_recorded() -> None:
    w = Workload("one", (WorkloadJob("A", 0.0, "w", 1, 8),))
    with pytest.raises(InputError, match="estimator"):
        simulate(Cluster((GpuType("g", 4, 1),)), w, _Grow(), job_model=JM, estimator="truth")
    res = simulate(Cluster((GpuType("g", 4, 1),)), w, _Grow(), job_model=JM, max_time=60.0)
    assert res.meta.estimator == "bootstrap"


def test_bootstrap_is_deterministic_and_differs_from_the_oracle() -> None:
    cl = cluster_preset("sia-64")
    w = Workload("head", load_workload("saturn/3").jobs[:6])
    r1 = simulate(cl, w, get_policy("sia"), job_model="sia", estimator="bootstrap")
    r2 = simulate(cl, w, get_policy("sia"), job_model="sia", estimator="bootstrap")
    r3 = simulate(cl, w, get_policy("sia"), job_model="sia", estimator="oracle")
    assert r1.jobs == r2.jobs
    assert [r.answer["objective"] for r in r1.rounds] == [r.answer["objective"] for r in r2.rounds]
    assert [r.answer["objective"] for r in r1.rounds] != [r.answer["objective"] for r in r3.rounds]


def test_sim_task_carries_the_estimator() -> None:
    t = SimTask("fifo", "pollux/1", cluster="pollux", max_time=600.0)
    assert t.estimator == "bootstrap"
    res = run_task(SimTask("fifo", "pollux/1", cluster="pollux", max_time=600.0, estimator="oracle"))
    assert res.meta.estimator == "oracle"


# ---------------------------------------------------------------------------------------------------- pinning
# Two nodes of 4 GPUs, rigid jobs at 1 progress unit/s needing 80 units, restart delay 100 s. Round 0: J1..J8 on one
# GPU each (both nodes full). Round 1 (t = 60, every job still restoring): the policy keeps the two jobs on GPU 1 of
# each node and adds J9 (4 GPUs: a whole node) and J10 (2). No node is free, so the placer has to move a kept job
# to the other node. Sia's simulator restarts a job only when its allocation changes: the kept jobs run on and
# finish at 100 + 80 = 180 with no restart. (Before: the moved one restarted its delay at t = 60 and finished at
# 240 with one restart.)
PIN = JobModel("pin", default_restart=100.0,
               apps={"r": (Application("r", np.array([8.0]), 1, np.array([80.0]), np.ones((1, 1)), np.zeros((1, 1))),
                           JobGoodputModel("r", {"g": ThroughputParams(1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0)}, 8, 64,
                                           {"g": (1, 8)}, (8.0,), (1.0,), (0.0,)))})


class _Keep:
    name = "keep"
    adaptive = False

    def __init__(self) -> None:
        self.keep: list[str] | None = None

    def decide(self, state):  # type: ignore[no-untyped-def]
        active = {v.id for v in state.jobs}
        if state.round_index == 0:
            return Decision(allocation={f"J{k}": Config(1, 1, "g") for k in range(1, 9)})
        if self.keep is None:
            self.keep = sorted(j for j, slots in state.placement.assignments.items() if slots[0][1] == (1,))
        alloc = {j: Config(1, 1, "g") for j in self.keep}
        alloc.update(J9=Config(1, 4, "g"), J10=Config(1, 2, "g"))
        return Decision(allocation={j: c for j, c in alloc.items() if j in active})


def test_a_kept_configuration_is_never_restarted_by_the_placer() -> None:
    jobs = tuple(WorkloadJob(f"J{k}", 0.0, "r", 1, 8) for k in range(1, 9))
    jobs += (WorkloadJob("J9", 0.0, "r", 4, 8), WorkloadJob("J10", 0.0, "r", 2, 8))
    pol = _Keep()
    res = simulate(Cluster((GpuType("g", 4, 2),)), Workload("pin", jobs), pol, job_model=PIN, max_time=400.0)
    assert pol.keep is not None and len(pol.keep) == 2
    by = {r.id: r for r in res.jobs}
    for j in pol.keep:
        assert (by[j].start, by[j].restarts) == (0.0, 0)
        assert by[j].finish == pytest.approx(180.0, abs=1e-5)  # step time 1 + 1e-8 s (the network floor)
        assert [s[2:] for s in by[j].segments] == [("g", 1)]
    for j in ("J9", "J10"):
        assert (by[j].start, by[j].restarts) == (60.0, 0)
        assert by[j].finish == pytest.approx(240.0, abs=1e-5)


def test_cli_estimator_flag(tmp_path: Path) -> None:
    import argparse

    from schedopt.sim.cli import add_parser

    p = tmp_path / "head.csv"
    p.write_text(Workload("head", load_workload("saturn/3").jobs[:4]).to_csv())
    parser = argparse.ArgumentParser(prog="schedopt")
    add_parser(parser.add_subparsers(dest="command"))
    assert parser.parse_args(["simulate", "--workload", str(p), "--policy", "sia"]).estimator == "bootstrap"
    a = parser.parse_args(["simulate", "--workload", str(p), "--policy", "sia", "--estimator", "oracle",
                           "--workers", "1", "-o", str(tmp_path / "runs")])
    assert a.func(a) == 0
    from schedopt.sim.records import read_record

    assert read_record(tmp_path / "runs" / "sia__head__seed0.jsonl").meta.estimator == "oracle"
    with pytest.raises(SystemExit):
        parser.parse_args(["simulate", "--workload", str(p), "--estimator", "truth"])


class _BlasSpy(_Grow):
    """:class:`_Grow` that records the BLAS pools' sizes while it decides."""

    def __init__(self) -> None:
        super().__init__()
        self.pools: list[int] = []

    def decide(self, state):  # type: ignore[no-untyped-def]
        from threadpoolctl import threadpool_info

        self.pools += [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]
        return super().decide(state)


def test_a_simulation_runs_on_one_blas_thread_and_gives_the_pools_back() -> None:
    """simulate runs under blas_threads(1) (issue 26: OpenBLAS's threads only spin on a simulation's small vectors):
    with the pools at two threads before, the policy sees one thread in every pool in every round, and the pools are
    at two again after."""
    import scipy.optimize  # noqa: F401  (loads scipy's OpenBLAS, as a simulation's first fit does)
    from threadpoolctl import threadpool_info, threadpool_limits

    with threadpool_limits(limits=2, user_api="blas"):
        before = [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]
        if not before or max(before) < 2:
            pytest.skip("this OpenBLAS cannot run two threads")
        pol = _BlasSpy()
        simulate(Cluster((GpuType("g", 4, 1),)), Workload("one", (WorkloadJob("A", 0.0, "w", 1, 8),)), pol,
                 job_model=JM, max_time=240.0)
        assert pol.pools and set(pol.pools) == {1}
        assert [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"] == before


def test_blas_threads_limits_restores_and_checks_its_argument() -> None:
    from threadpoolctl import threadpool_info, threadpool_limits

    from schedopt.goodput import blas_threads

    def pools() -> list[int]:
        return [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]

    with threadpool_limits(limits=2, user_api="blas"):
        before = pools()
        with blas_threads(1):
            assert set(pools()) == {1}
        assert pools() == before
        with blas_threads(None):
            assert pools() == before
    for bad in (0, -1, 1.5, True, "1"):
        with pytest.raises(InputError, match="blas_threads"), blas_threads(bad):  # type: ignore[arg-type]
            pass


def test_blas_threads_blocks_left_out_of_order_restore_when_the_last_leaves() -> None:
    """Two blas_threads(1) blocks left in the order they were entered (as two threads' simulations end): the pools
    stay at one thread until the second leaves, then are back at two (a limit restored by whichever block left first
    would put the second back at two threads, and the second's exit would leave the process at one)."""
    from threadpoolctl import threadpool_info, threadpool_limits

    from schedopt.goodput import blas_threads

    def pools() -> list[int]:
        return [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]

    import scipy.optimize  # noqa: F401  (scipy's OpenBLAS loaded before the pools are read)

    with threadpool_limits(limits=2, user_api="blas"):
        before = pools()
        if not before or max(before) < 2:
            pytest.skip("this OpenBLAS cannot run two threads")
        first, second = blas_threads(1), blas_threads(1)
        first.__enter__()
        second.__enter__()
        first.__exit__(None, None, None)
        assert set(pools()) == {1}
        second.__exit__(None, None, None)
        assert pools() == before


def test_simulations_on_a_thread_pool_give_the_pools_back() -> None:
    """Four simulations on two threads (each entering blas_threads(1), with fits inside): the pools are as before."""
    import concurrent.futures as cf

    import scipy.optimize  # noqa: F401  (scipy's OpenBLAS loaded before the pools are read)
    from threadpoolctl import threadpool_info, threadpool_limits

    def run() -> int:
        pol = _Grow()
        simulate(Cluster((GpuType("g", 4, 1),)), Workload("one", (WorkloadJob("A", 0.0, "w", 1, 8),)), pol,
                 job_model=JM, max_time=240.0)
        return len(pol.seen)

    with threadpool_limits(limits=2, user_api="blas"):
        before = [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]
        with cf.ThreadPoolExecutor(2) as ex:
            assert all(n > 0 for n in ex.map(lambda _: run(), range(4)))
        assert [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"] == before
