"""``pollux-unaware``: the Sia paper's heterogeneity-unaware Pollux baseline (virtual 4-GPU nodes, one throughput
model per job, drop-to-majority-type repair), checked by hand against the heterogeneity-aware ``pollux``."""

from __future__ import annotations

import dataclasses
import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedopt.errors import InputError
from schedopt.goodput import JobGoodputModel, ThroughputParams
from schedopt.sia import Cluster, Config, GpuType
from schedopt.sim.policies import get_policy
from schedopt.sim.policies.base import JobView, RoundState
from schedopt.sim.policies.pollux import PolluxPolicy
from schedopt.sim.policies.pollux_unaware import PolluxUnawarePolicy, virtual_nodes
from schedopt.zoo import load_model

# goodput(r) = r b / (beta_c b) = r / beta_c with the batch fixed at 64 and efficiency 1 (see test_sim_pollux.py)
P100 = ThroughputParams(0.0, 0.01, 0.0, 0.0, 0.0, 0.0, 1.0)      # 100 r
P1000 = ThroughputParams(0.0, 0.001, 0.0, 0.0, 0.0, 0.0, 1.0)    # 1000 r
LIM = {"t4": (1, 64), "a100": (1, 64)}
FAST = JobGoodputModel("fast", {"t4": P100, "a100": P1000}, 64, 64, LIM, (64.0,), (0.0,), (1.0,))
EVEN = JobGoodputModel("even", {"t4": P100, "a100": P100}, 64, 64, LIM, (64.0,), (0.0,), (1.0,))
TWO = Cluster((GpuType("t4", 4, 1), GpuType("a100", 4, 1)))        # two 4-GPU nodes: virtual nodes = nodes
MIXED = Cluster((GpuType("t4", 4, 1), GpuType("a100", 8, 1)))      # t4-0/0, a100-0/0, a100-0/1


def view(jid: str, est: JobGoodputModel, nodes: dict[str, int] | None = None, *, progress: float = 0.3,
         age: float = 3000.0, max_gpus: int = 4, attained: float = 0.0) -> JobView:
    nodes = dict(nodes or {})
    cur = None
    if nodes:
        cur = Config(len(nodes), sum(nodes.values()), next(iter(nodes)).rsplit("-", 1)[0])
    return JobView(id=jid, application=est.name, arrival=0.0, age=age, attained_gpu_seconds=attained, restarts=0,
                   requested_gpus=1, batch_size=64, adaptive=True, current=cur, current_nodes=nodes, estimate=est,
                   progress=progress if nodes else 0.0, max_gpus=max_gpus)


def state(cluster: Cluster, jobs: list[JobView], k: int = 0) -> RoundState:
    return RoundState(time=60.0 * k, round_index=k, round_seconds=60.0, cluster=cluster, jobs=tuple(jobs),
                      placement=None)


def test_virtual_nodes_split_eight_gpu_nodes():
    assert virtual_nodes(MIXED) == (["t4-0/0", "a100-0/0", "a100-0/1"], ["t4-0", "a100-0", "a100-0"],
                                    ["t4", "a100", "a100"], 4)


def test_unaware_keeps_a_fast_job_on_slow_gpus_where_aware_moves_it():
    """'fast' runs on the T4 node (100 r there, 1000 r on A100), 'even' on the A100 node (100 r on both).
    Fair share 4 GPUs on 1 node (base 400 each, on the reference type T4), scale N / G = 2 / 8: 4 GPUs at the base
    rate is speedup 0.25. Aware: swapping gives fast 4000 / 400 x 0.25 = 2.5 and even 0.25, both times the restart
    factor f = 3000 / 3030: M = 2 / (1/(2.5f + 1e-3) + 1/(0.25f + 1e-3)) = 0.45171 > keeping (0.25, 0.25):
    M = 0.251. Unaware: each job reads its model on the type it ran on (fast: T4, even: A100), so every 4-GPU
    choice is speedup 0.25 and a move only costs the restart factor: it keeps both (M = 0.251)."""
    jobs = [view("fast", FAST, {"t4-0": 4}), view("even", EVEN, {"a100-0": 4})]
    aware = PolluxPolicy(seed=1, population=40, generations=30).decide(state(TWO, jobs))
    unaware = PolluxUnawarePolicy(seed=1, population=40, generations=30).decide(state(TWO, jobs))
    f = 3000 / 3030
    assert aware.nodes == {"fast": {"a100-0": 4}, "even": {"t4-0": 4}}
    assert aware.answer.objective == pytest.approx(2 / (1 / (2.5 * f + 1e-3) + 1 / (0.25 * f + 1e-3)), rel=1e-9)
    assert unaware.nodes == {"fast": {"t4-0": 4}, "even": {"a100-0": 4}}
    assert unaware.answer.objective == pytest.approx(0.251, rel=1e-9)
    assert unaware.info["dropped_gpus"] == 0


def test_view_type_linear_speedup_and_cap():
    """A job that has not trained has the published linear speedup r / fair_r (x N / G); one that trained is read
    on the type it trained on; the cap is the fewest GPUs of any type (4 T4 here)."""
    pol = PolluxUnawarePolicy()
    s = state(MIXED, [view("new", EVEN, max_gpus=8), view("ran", FAST, {"a100-0": 2}, max_gpus=8)])
    obj = pol.objective(s)
    assert pol.view_types(s) == {"new": None, "ran": "a100"}
    # J = 2, G = 12: fair_r = 6; 3 virtual nodes: scale 3 / 12
    assert obj.fair_replicas == 6 and obj.scale == pytest.approx(0.25)
    assert list(obj.cap) == [4, 4]
    j_new, j_ran = obj.ids.index("new"), obj.ids.index("ran")
    sp = obj.speedups(np.array([j_new, j_ran, j_ran]), np.array([0, 0, 1]), np.array([1, 1, 1]), np.array([4, 4, 4]))
    # new: 4 / 6 x 0.25; ran on any node type: its A100 model, 4000 / (6000 at the fair share) x 0.25
    assert sp == pytest.approx([4 / 6 * 0.25, 4000 / 6000 * 0.25, 4000 / 6000 * 0.25])


def test_repair_keeps_the_majority_type_and_merges_virtual_nodes():
    pol = PolluxUnawarePolicy()
    s = state(MIXED, [view("a", EVEN), view("b", EVEN), view("c", EVEN)])
    obj = pol.objective(s)
    cols = virtual_nodes(MIXED)[0]
    best = np.zeros((3, 3), dtype=np.int64)
    best[obj.ids.index("a")] = [2, 2, 0]     # tie T4 / A100: the faster type (A100) is kept, 2 T4 GPUs dropped
    best[obj.ids.index("b")] = [0, 1, 1]     # both halves of a100-0: one real node, 2 GPUs
    best[obj.ids.index("c")] = [2, 1, 0]     # T4 majority: the A100 GPU dropped
    assert pol.to_nodes(obj, cols, best) == {"a": {"a100-0": 2}, "b": {"a100-0": 2}, "c": {"t4-0": 2}}


def rigid_view(jid: str, gpus: int, est: JobGoodputModel = EVEN, nodes: dict[str, int] | None = None) -> JobView:
    return dataclasses.replace(view(jid, est, nodes, max_gpus=gpus), adaptive=False, kind="rigid", requested_gpus=gpus)


def test_rigid_job_split_across_types_is_placed_again_on_its_majority_type():
    """Issue 29: the search sees untyped virtual nodes, so a rigid 4-GPU job may come out as 2 T4 + 2 A100 GPUs.
    The tie keeps A100 (TIE_PRIORITY); 2 A100 GPUs are short of 4, so the job is placed again on A100: the virtual
    node a100-0/0 where it holds its 2 has 4 free, so all 4 go there (one virtual node, not distributed). Before
    the fix the drop left it with nothing."""
    pol = PolluxUnawarePolicy()
    s = state(MIXED, [rigid_view("r", 4)])
    obj = pol.objective(s)
    cols = virtual_nodes(MIXED)[0]
    assert list(obj.rigid) == [4]
    assert pol.to_nodes(obj, cols, np.array([[2, 2, 0]])) == {"r": {"a100-0": 4}}
    assert pol._vprev == {"r": {"a100-0/0": 4}} and pol._dropped == 0
    # a rigid job whose count spans the two A100 virtual nodes: spread over both (no other distributed job there)
    s = state(MIXED, [rigid_view("r", 6)])
    obj = pol.objective(s)
    assert pol.to_nodes(obj, cols, np.array([[3, 2, 1]])) == {"r": {"a100-0": 6}}
    assert pol._vprev == {"r": {"a100-0/0": 4, "a100-0/1": 2}}


def test_rigid_job_gets_nothing_when_its_type_is_full():
    """'a' (adaptive) keeps both A100 virtual nodes whole (8 GPUs, first in job order: least attained service); the
    rigid 'r' comes out as 3 T4 + 1 A100 GPU on top, so T4 is its majority: 3 T4 GPUs are short of 4 and the T4
    node has 4 free GPUs: it gets all 4 there. With 'b' holding 2 of the T4 GPUs, 2 free T4 GPUs are too few: 'r'
    gets nothing this round and its 4 GPUs are counted as dropped."""
    pol = PolluxUnawarePolicy()
    jobs = [view("a", EVEN, max_gpus=8), rigid_view("r", 4)]
    jobs[1] = dataclasses.replace(jobs[1], attained_gpu_seconds=1.0)
    obj = pol.objective(state(MIXED, jobs))
    cols = virtual_nodes(MIXED)[0]
    assert obj.ids == ["a", "r"]
    assert pol.to_nodes(obj, cols, np.array([[0, 4, 4], [3, 1, 0]])) == {"a": {"a100-0": 8}, "r": {"t4-0": 4}}
    jobs.append(dataclasses.replace(jobs[0], id="b", attained_gpu_seconds=0.5))
    obj = pol.objective(state(MIXED, jobs))
    assert obj.ids == ["a", "b", "r"]
    nodes = pol.to_nodes(obj, cols, np.array([[0, 4, 4], [2, 0, 0], [1, 3, 0]]))
    # 'r': A100 majority (3), short of 4; both A100 virtual nodes are full: nothing
    assert nodes == {"a": {"a100-0": 8}, "b": {"t4-0": 2}} and pol._dropped == 4


def test_rigid_jobs_above_the_cap_finish_one_after_the_other():
    """Regression (issue 29): two rigid 8-GPU cifar10 jobs on one 4-GPU T4 node and one 8-GPU A100 node. Only the
    A100 node holds 8 GPUs of one type, so by hand: each runs there alone, on all 8, one after the other, and both
    finish. Before, the search valued them at 0 (the unaware cap, 4 GPUs = the fewest of any type, cut their
    goodput table short) and the repair dropped any split across types: neither ever ran."""
    from schedopt import sim
    from schedopt.sim.adaptivity import limit_adaptivity

    w = sim.read_workload("name,time,application,num_replicas,batch_size\nc0,0,cifar10,8,1024\n"
                          "c1,30,cifar10,8,1024\n", "rigid8")
    jm = limit_adaptivity(w, 1.0, job_model="sia")
    assert len(jm.rigid_jobs) == 2
    r = sim.simulate(MIXED, w, get_policy("pollux-unaware", population=20, generations=5), job_model=jm,
                     max_time=20_000, progress=False)
    assert all(j.finish is not None for j in r.jobs)
    segs = sorted(seg for j in r.jobs for seg in j.segments)
    assert segs and {(seg[2], seg[3]) for seg in segs} == {("a100", 8)}
    assert all(a[1] <= b[0] + 1e-9 for a, b in itertools.pairwise(segs))  # never both at once


def test_deterministic_across_rounds():
    jobs = [view("fast", FAST, {"t4-0": 2}), view("even", EVEN), view("x", EVEN, {"a100-0": 1})]
    a, b = (PolluxUnawarePolicy(seed=3, population=20, generations=10) for _ in range(2))
    for k in range(3):
        assert a.decide(state(MIXED, jobs, k)).nodes == b.decide(state(MIXED, jobs, k)).nodes


def test_registered_and_bad_parameters():
    assert isinstance(get_policy("pollux-unaware", seed=2, generations=5), PolluxUnawarePolicy)
    with pytest.raises(InputError, match="max_replicas"):
        PolluxUnawarePolicy(max_replicas=0)
    with pytest.raises(InputError, match="generations"):
        PolluxUnawarePolicy(generations=-1)


# ---------------------------------------------------------------------------------------------- properties
ZOO = {a: load_model(a) for a in ("bert", "cifar10", "imagenet")}


def check_round(cluster: Cluster, jobs: tuple[JobView, ...], nodes: dict) -> list[str]:
    """Single-round checker (plain Python): real-node capacity, one GPU type per job, the job's cap, and at most as
    many distributed jobs on a node as it has virtual nodes (one per virtual node, as published)."""
    spec = {f"{t.name}-{k}": (t.name, t.gpus_per_node) for t in cluster.gpu_types for k in range(t.nodes)}
    m = min(t.gpus_per_node for t in cluster.gpu_types)
    views = {v.id: v for v in jobs}
    used: dict[str, int] = {}
    dist: dict[str, int] = {}
    out = []
    for jid, nd in nodes.items():
        if jid not in views or any(n not in spec for n in nd) or any(c <= 0 for c in nd.values()):
            out.append(f"{jid}: bad entry {nd}")
            continue
        if len({spec[n][0] for n in nd}) > 1:
            out.append(f"{jid}: spans GPU types")
        if sum(nd.values()) > min(views[jid].max_gpus, min(t.total_gpus for t in cluster.gpu_types)):
            out.append(f"{jid}: over its cap")
        for n, c in nd.items():
            used[n] = used.get(n, 0) + c
            if len(nd) > 1:
                dist[n] = dist.get(n, 0) + 1
    out += [f"{n}: {u} GPUs" for n, u in used.items() if u > spec[n][1]]
    out += [f"{n}: {k} distributed jobs" for n, k in dist.items() if k > spec[n][1] // m]
    return out


@st.composite
def traces(draw):
    types = [GpuType("t4", 4, draw(st.integers(1, 2))), GpuType("a100", 8, draw(st.integers(1, 2)))]
    cluster = Cluster(tuple(types))
    jobs = [view(f"j{k}", ZOO[draw(st.sampled_from(sorted(ZOO)))], age=draw(st.floats(0, 5000)),
                 max_gpus=draw(st.integers(1, 16)), attained=draw(st.floats(0, 1e4)))
            for k in range(draw(st.integers(1, 6)))]
    return cluster, jobs, draw(st.integers(0, 2**16))


@settings(max_examples=12, deadline=None)
@given(traces())
def test_every_round_passes_the_checker(tr):
    """Three rounds of a small random trace: each job then holds what the policy gave it and has progressed (so its
    view type changes); every decision passes the checker."""
    cluster, jobs, seed = tr
    pol = PolluxUnawarePolicy(seed=seed, population=12, generations=4)
    for k in range(3):
        s = state(cluster, jobs, k)
        d = pol.decide(s)
        assert check_round(cluster, s.jobs, d.nodes) == []
        assert d.answer.has_solution and math.isfinite(d.answer.objective)
        jobs = [view(v.id, v.estimate, d.nodes.get(v.id), progress=0.1 * (k + 1), age=v.age + 60,
                     max_gpus=v.max_gpus, attained=v.attained_gpu_seconds) for v in jobs]


@pytest.mark.slow
def test_engine_runs_it_to_completion():
    from schedopt import sim

    w = sim.read_workload("name,time,application,num_replicas,batch_size\nj0,0,bert,2,24\nj1,30,bert,1,12\n"
                          "j2,100,ncf,1,32768\nj3,200,bert,4,48\nj4,200,cifar10,1,128\n", "tiny")
    r = sim.simulate(MIXED, w, get_policy("pollux-unaware", population=20, generations=5), job_model="sia",
                     progress=False)
    assert all(j.finish is not None for j in r.jobs)
    assert r.meta.policy == "pollux-unaware" and r.meta.adaptive is True
