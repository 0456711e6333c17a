"""Properties of every simulation over random small valid runs (issue 25): each job is recorded once and finishes at
most once, never before its arrival; a cluster type's GPUs are never over-committed; a finished job's JCT is at
least its ideal time (:func:`schedopt.sim.feasibility.min_seconds`, the job alone on its best configuration at its
true rate); a job said hopeless never finishes. Jobs are drawn in any order (``Workload`` sorts them). The strategy
and the checker are ``schedopt.testing.fuzz.small_workloads`` / ``run_invariants``.

The default run is deterministic and small (a few examples per policy, about 5 s); the longer run is ``-m slow`` with
``SCHEDOPT_SIM_EXAMPLES`` examples (default 200)."""

from __future__ import annotations

import os
import warnings

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schedopt.sia import Cluster, GpuType
from schedopt.sim import Workload, get_policy, simulate
from schedopt.testing.fuzz import run_invariants, small_workloads

CLUSTER = Cluster((GpuType("t4", 4, 2), GpuType("a100", 8, 1)))
ADAPTIVE = {"fifo": False, "tiresias": False, "sia": True}
LONG_EXAMPLES = int(os.environ.get("SCHEDOPT_SIM_EXAMPLES", "200"))


def check_run(policy: str, w: Workload, horizon: float) -> None:
    pol = get_policy(policy, time_limit=5) if policy == "sia" else get_policy(policy)
    cap = w.jobs[-1].time + horizon
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = simulate(CLUSTER, w, pol, job_model="sia", max_time=cap)
    assert run_invariants(res, w, CLUSTER, "sia", adaptive=ADAPTIVE[policy], max_time=cap) == []


@pytest.mark.parametrize(("policy", "examples"), [("fifo", 8), ("tiresias", 8), ("sia", 3)])
def test_random_runs_keep_their_invariants(policy: str, examples: int) -> None:
    @settings(max_examples=examples, deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.too_slow])
    @given(w=small_workloads())
    def run(w: Workload) -> None:
        check_run(policy, w, 1800.0)

    run()


@pytest.mark.slow
@pytest.mark.parametrize("policy", ["fifo", "tiresias", "sia"])
def test_random_runs_keep_their_invariants_long(policy: str) -> None:
    @settings(max_examples=LONG_EXAMPLES, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(w=small_workloads(), horizon=st.sampled_from([600.0, 3600.0, 6 * 3600.0]))
    def run(w: Workload, horizon: float) -> None:
        check_run(policy, w, horizon)

    run()


def test_the_invariants_catch_a_broken_record() -> None:
    """run_invariants is not vacuous: a record finishing before its arrival, a JCT below the ideal time, a finished
    hopeless job and an over-committed type are each reported."""
    import dataclasses

    from schedopt.sim import WorkloadJob

    w = Workload("one", (WorkloadJob("a", 100.0, "cifar10", 4, 512), WorkloadJob("b", 100.0, "cifar10", 8, 512)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = simulate(CLUSTER, w, get_policy("fifo"), job_model="sia")
    assert run_invariants(res, w, CLUSTER, "sia", adaptive=False, max_time=1e9) == []
    a = res.jobs[0]
    early = dataclasses.replace(a, finish=a.arrival + 1.0, segments=((a.start, a.arrival + 1.0, "t4", 4.0),))
    msgs = run_invariants(dataclasses.replace(res, jobs=(early, res.jobs[1])), w, CLUSTER, "sia", adaptive=False,
                          max_time=1e9)
    assert any("finishes at 101.0" in m for m in msgs) and any("< its ideal time" in m for m in msgs)
    assert any("said hopeless" in m for m in run_invariants(dataclasses.replace(res, hopeless=("a",)), w, CLUSTER,
                                                            "sia", adaptive=False, max_time=1e9))
    over = dataclasses.replace(res.jobs[1], segments=((a.start, a.finish, "t4", 8.0),))
    assert any("t4 GPUs held" in m for m in run_invariants(dataclasses.replace(res, jobs=(a, over)), w, CLUSTER,
                                                           "sia", adaptive=False, max_time=1e9))
