"""Properties of every simulation over random small valid runs (issue 25): each job is recorded once and finishes at
most once, never before its arrival; a cluster type's GPUs are never over-committed; a finished job's JCT is at
least its ideal time (:func:`schedopt.sim.feasibility.min_seconds`, the job alone on its best configuration at its
true rate); a job said hopeless never finishes. Jobs are drawn in any order (``Workload`` sorts them).

The default run is deterministic and small (a few examples per policy); the longer run is ``-m slow`` with
``SCHEDOPT_SIM_EXAMPLES`` examples (default 200)."""

from __future__ import annotations

import os
import warnings

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schedopt.sia import Cluster, GpuType
from schedopt.sim import Workload, WorkloadJob, get_policy, simulate
from schedopt.sim.feasibility import min_seconds

CLUSTER = Cluster((GpuType("t4", 4, 2), GpuType("a100", 8, 1)))
BATCH = {"bert": 48, "deepspeech2": 80, "cifar10": 512, "yolov3": 32, "ncf": 32768}
ADAPTIVE = {"fifo": False, "tiresias": False, "sia": True}
LONG_EXAMPLES = int(os.environ.get("SCHEDOPT_SIM_EXAMPLES", "200"))


@st.composite
def workloads(draw: st.DrawFn) -> Workload:
    n = draw(st.integers(1, 6))
    jobs = []
    for k in range(n):
        app = draw(st.sampled_from(sorted(BATCH)))
        jobs.append(WorkloadJob(f"{app}-{k}", float(draw(st.integers(0, 600))), app,
                                draw(st.sampled_from([1, 2, 4, 8])), BATCH[app]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Workload("random", tuple(jobs))  # any order: sorted (with a warning) when out of order


def check_run(policy: str, w: Workload, horizon: float) -> None:
    pol = get_policy(policy, time_limit=5) if policy == "sia" else get_policy(policy)
    cap = w.jobs[-1].time + horizon
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = simulate(CLUSTER, w, pol, job_model="sia", max_time=cap)
    ids = [j.id for j in res.jobs]
    assert sorted(ids) == sorted(j.name for j in w.jobs)  # each job recorded exactly once
    spec = {j.name: j for j in w.jobs}
    R = res.meta["round_seconds"]
    for j in res.jobs:
        assert j.arrival == spec[j.id].time
        if j.start is not None:
            assert j.start >= j.arrival
        if j.finish is None:
            continue
        assert j.start is not None and j.arrival <= j.start <= j.finish <= cap + R
        assert j.segments and max(e for _, e, _, _ in j.segments) == j.finish  # held GPUs until it finished, not after
        ideal = min_seconds(CLUSTER, j.application, spec[j.id].num_replicas, spec[j.id].batch_size, "sia",
                            adaptive=ADAPTIVE[policy])
        assert j.jct >= ideal - 1e-6, (j.id, j.jct, ideal)
        assert j.id not in res.hopeless
    for j in res.jobs:
        assert all(s <= e for s, e, _, _ in j.segments)
    for t in sorted({s for j in res.jobs for s, _, _, _ in j.segments}):
        for ty in CLUSTER.type_names:
            held = sum(g for j in res.jobs for s, e, tt, g in j.segments if tt == ty and s <= t < e)
            assert held <= CLUSTER[ty].total_gpus, (t, ty, held)


@pytest.mark.parametrize(("policy", "examples"), [("fifo", 8), ("tiresias", 8), ("sia", 3)])
def test_random_runs_keep_their_invariants(policy: str, examples: int) -> None:
    @settings(max_examples=examples, deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.too_slow])
    @given(w=workloads())
    def run(w: Workload) -> None:
        check_run(policy, w, 1800.0)

    run()


@pytest.mark.slow
@pytest.mark.parametrize("policy", ["fifo", "tiresias", "sia"])
def test_random_runs_keep_their_invariants_long(policy: str) -> None:
    @settings(max_examples=LONG_EXAMPLES, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(w=workloads(), horizon=st.sampled_from([600.0, 3600.0, 6 * 3600.0]))
    def run(w: Workload, horizon: float) -> None:
        check_run(policy, w, horizon)

    run()
