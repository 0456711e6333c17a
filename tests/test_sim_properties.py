"""Property tests of schedopt.sim: over small random traces, every round's decision of every policy passes the
single-round checker of its model (Sia's ``check_allocation`` for ``sia``; node capacity and rigid counts, checked
without the engine, for ``fifo`` / ``tiresias``), and the records conserve GPUs and finish each job at most once."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schedopt.sia import Cluster, GpuType, check_allocation
from schedopt.sim import Workload, WorkloadJob, get_policy, simulate

CLUSTER = Cluster((GpuType("t4", 4, 2), GpuType("a100", 8, 1)))
BATCH = {"bert": 48, "deepspeech2": 80, "cifar10": 512, "yolov3": 32}


@st.composite
def traces(draw: st.DrawFn) -> Workload:
    n = draw(st.integers(1, 5))
    jobs = []
    for k in range(n):
        app = draw(st.sampled_from(sorted(BATCH)))
        jobs.append(WorkloadJob(f"{app}-{k}", float(draw(st.integers(0, 400))), app,
                                draw(st.sampled_from([1, 2, 4, 6, 8])), BATCH[app]))
    return Workload("random", tuple(sorted(jobs, key=lambda j: j.time)))


class Checked:
    """Wraps a policy; checks each round's decision independently of the engine."""

    def __init__(self, inner) -> None:  # type: ignore[no-untyped-def]
        self.inner, self.name, self.adaptive = inner, inner.name, getattr(inner, "adaptive", False)
        self.violations: list[str] = []

    def decide(self, state):  # type: ignore[no-untyped-def]
        cap = {nid: t.gpus_per_node for t in state.cluster.gpu_types for nid in state.cluster.node_ids(t.name)}
        prob = self.inner.problem(state) if self.name == "sia" else None
        d = self.inner.decide(state)
        views = {v.id: v for v in state.jobs}
        if prob is not None:
            self.violations += check_allocation(prob, dict(d.allocation or {}))
            for jid, c in (d.allocation or {}).items():
                if c is not None and c.n_gpus > views[jid].max_gpus:
                    self.violations.append(f"{jid}: {c.n_gpus} > cap {views[jid].max_gpus}")
        else:
            use: dict[str, int] = {}
            for jid, m in (d.nodes or {}).items():
                if sum(m.values()) != views[jid].requested_gpus:
                    self.violations.append(f"{jid}: {sum(m.values())} GPUs != {views[jid].requested_gpus}")
                if len({n.rsplit('-', 1)[0] for n in m}) != 1:
                    self.violations.append(f"{jid}: spans types {sorted(m)}")
                for n, g in m.items():
                    use[n] = use.get(n, 0) + g
            self.violations += [f"node {n}: {g} > {cap[n]}" for n, g in use.items() if g > cap[n]]
        return d


@pytest.mark.parametrize("policy", ["fifo", "tiresias", "sia"])
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(w=traces())
def test_every_round_passes_the_single_round_checker(policy: str, w: Workload) -> None:
    pol = Checked(get_policy(policy, time_limit=5) if policy == "sia" else get_policy(policy))
    res = simulate(CLUSTER, w, pol, job_model="sia", max_time=w.jobs[-1].time + 900)
    assert pol.violations == []
    for j in res.jobs:
        assert j.finish is None or j.finish >= j.arrival
        assert all(s <= e for s, e, _, _ in j.segments)
        if j.finish is not None:
            assert max(e for _, e, _, _ in j.segments) == j.finish
    times = sorted({s for j in res.jobs for s, _, _, _ in j.segments})
    for t in times:
        for ty in CLUSTER.type_names:
            held = sum(g for j in res.jobs for s, e, tt, g in j.segments if tt == ty and s <= t < e)
            assert held <= CLUSTER[ty].total_gpus
