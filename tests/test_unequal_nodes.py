"""The policies that write node maps themselves (Pollux, pollux-unaware, Gavel, Shockwave, Optimus, FIFO, Tiresias,
Gandiva) on nodes of unequal sizes (issue 38): every node map fits each node's own GPUs (read here from the cluster,
without the policy) and keeps the policy's own rules; small cases checked by hand; a live session with a 6-GPU node
among 8-GPU nodes decides under each of them."""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schedopt.cluster import Cluster
from schedopt.gandiva import GandivaJob
from schedopt.goodput import JobGoodputModel, ThroughputParams
from schedopt.live import (
    ClusterState,
    JobSubmitted,
    LiveJob,
    NodeDown,
    NodeState,
    NodeUp,
    NodeUpdated,
    ReplayExecutor,
    Session,
)
from schedopt.pollux import node_columns
from schedopt.sia import Config
from schedopt.sim import Workload, load_workload, make_policy, simulate
from schedopt.sim.gandiva import GandivaPolicy, gandiva_trace
from schedopt.sim.policies.base import Decision, JobView, RoundState
from schedopt.sim.policies.gavel import GavelPolicy
from schedopt.sim.policies.optimus import OptimusPolicy
from schedopt.sim.policies.pollux import PolluxPolicy
from schedopt.sim.policies.pollux_unaware import virtual_node_gpus, virtual_nodes
from schedopt.sim.policies.shockwave import relabel_nodes, repair_to_types, virtual_servers

# short runs of long jobs: the time cap and the jobs that cannot finish by it are expected
pytestmark = [pytest.mark.filterwarnings("ignore:simulation .* stopped at its time cap"),
              pytest.mark.filterwarnings("ignore:.* cannot finish by t =")]

LIN = ThroughputParams(0.0, 0.01, 0.0, 0.0, 0.0, 0.0, 1.0)  # goodput 100 r at the batch 64, whatever the nodes
EST = JobGoodputModel("lin", {"a100": LIN, "t4": LIN}, 64, 64, {"a100": (1, 64), "t4": (1, 64)}, (64.0,), (0.0,), (1.0,))


def _view(jid: str, gpus: int = 1, nodes: Mapping[str, int] | None = None, *, max_gpus: int = 8,
          adaptive: bool = True, gpu_type: str = "a100") -> JobView:
    nodes = dict(nodes or {})
    cur = Config(len(nodes), sum(nodes.values()), gpu_type) if nodes else None
    return JobView(id=jid, application="lin", arrival=0.0, age=3000.0, attained_gpu_seconds=0.0, restarts=0,
                   requested_gpus=gpus, batch_size=64, adaptive=adaptive, current=cur, current_nodes=nodes,
                   estimate=EST, progress=0.3 if nodes else 0.0, max_gpus=max_gpus)


def _state(cluster: Cluster, jobs: list[JobView]) -> RoundState:
    return RoundState(time=0.0, round_index=0, round_seconds=60.0, cluster=cluster, jobs=tuple(jobs), placement=None)


def fits(cluster: Cluster, nodes: Mapping[str, Mapping[str, int]]) -> dict[str, int]:
    """Each job's GPUs, after checking the node maps against the cluster's node list alone: known nodes, one GPU type
    per job, at least one GPU per entry, and no node holding more than its own GPUs."""
    ntype = {n: t.name for t in cluster.gpu_types for n in t.ids}
    size = {n: g for t in cluster.gpu_types for n, g in zip(t.ids, t.sizes, strict=True)}
    used: Counter[str] = Counter()
    for jid, m in nodes.items():
        assert set(m) <= set(size), (jid, m)
        assert len({ntype[n] for n in m}) <= 1, (jid, m)
        assert all(int(c) >= 1 for c in m.values()), (jid, m)
        used.update({n: int(c) for n, c in m.items()})
    over = {n: (c, size[n]) for n, c in used.items() if c > size[n]}
    assert not over, over
    return {jid: sum(int(c) for c in m.values()) for jid, m in nodes.items()}


# ------------------------------------------------------------------------------------------ hand-checked cases
def test_gavel_places_server_by_server_on_each_servers_own_gpus() -> None:
    """Nodes small (6 GPUs) then big (8), jobs asking 8 and 6 on a100 (14 GPUs, the type's all): by decreasing scale
    factor from the server pointer, 8 = 6 of small + 2 of big, then 6 of big. Read as 8-GPU servers, the first job
    took 8 GPUs of the 6-GPU node."""
    cl = Cluster.from_nodes([("small", "a100", 6), ("big", "a100", 8)])
    jobs = (_view("j8", 8), _view("j6", 6))
    got = GavelPolicy.place(cl, jobs, {0: 0, 1: 0}, np.array([8, 6]))
    assert got == {"j8": {"small": 6, "big": 2}, "j6": {"big": 6}}


def test_optimus_takes_gpus_from_the_node_with_most_free_of_its_own() -> None:
    """Nodes a (8 GPUs) and s (3), counts z 3, x 4, y 4 (fewest first): z from a (8 free against 3) -> a 5 left; x 4
    from a -> a 1 left; y: 3 from s, then 1 from a. Read as 8-GPU nodes, x would have taken 4 GPUs of s."""
    cl = Cluster.from_nodes([("a", "a100", 8), ("s", "a100", 3)])
    st_ = _state(cl, [_view("x"), _view("y"), _view("z")])
    got = OptimusPolicy.place(st_, {"x": 4, "y": 4, "z": 3})
    assert got == {"z": {"a": 3}, "x": {"a": 4}, "y": {"s": 3, "a": 1}}


def test_pollux_searches_each_nodes_own_gpus() -> None:
    """One job, goodput 100 r on any nodes, cap 4, nodes of 2 and 1 GPUs: the best allocation is all 3 GPUs
    {a: 2, b: 1}. G = 3, N = 2, J = 1: fair share 3 GPUs on 1 node (goodput 300), scale N / G = 2 / 3, so the
    speedup is 300 / 300 x 2 / 3, times the restart factor 3000 / 3030 of a job that starts: M = s + 1e-3."""
    cl = Cluster.from_nodes([("a", "a100", 2), ("b", "a100", 1)])
    assert node_columns(cl).gpus.tolist() == [2, 1]  # the search's node capacities (read as 2-GPU nodes: [2, 2])
    d = PolluxPolicy(seed=0, population=30, generations=20).decide(_state(cl, [_view("j", max_gpus=4)]))
    assert d.nodes == {"j": {"a": 2, "b": 1}}
    assert d.answer is not None
    assert d.answer.objective == pytest.approx(2 / 3 * 3000 / 3030 + 1e-3, rel=1e-9)


def test_shockwave_virtual_servers_and_repair_on_unequal_nodes() -> None:
    """Servers of 4 GPUs (the smallest nominal node): a (8) holds two, s (6) one (2 GPUs past the multiple unused,
    as published), t (4) one, u (2 < 4) one of its own 2 GPUs. The repair admits y (6 workers on t4 servers) onto
    t4's 6 GPUs (t 4, u 2); z (4 more on t4) no longer fits the type and gets nothing (read as 4-GPU servers, u
    held 4 and z took 2 GPUs u does not have)."""
    cl = Cluster.from_nodes([("a", "a100", 8), ("s", "a100", 6), ("t", "t4", 4), ("u", "t4", 2)],
                            gpus_per_node={"a100": 8, "t4": 4})
    servers, gpus = virtual_servers(cl, 4)
    assert servers == [("a100", "a"), ("a100", "a"), ("a100", "s"), ("t4", "t"), ("t4", "u")]
    assert gpus == [4, 4, 4, 4, 2]
    got = repair_to_types(cl, {"y": (12, 13, 14, 15, 16, 17), "z": (12, 13, 14, 15)}, 4)
    assert got == {"y": {"t": 4, "u": 2}}


def test_shockwave_relabels_a_node_only_to_a_node_of_its_own_size() -> None:
    """x packed on a (8 GPUs) after running on b (8): a plays b's part, x stays on b. x packed on a after running
    on s (6): renaming a to s would put 8 GPUs on a 6-GPU node, so a keeps its name."""
    cl = Cluster.from_nodes([("a", "a100", 8), ("b", "a100", 8), ("s", "a100", 6)])
    assert relabel_nodes(cl, {"x": {"a": 8}}, {"x": {"b": 8}}) == {"x": {"b": 8}}
    assert relabel_nodes(cl, {"x": {"a": 8}}, {"x": {"s": 6}}) == {"x": {"a": 8}}


def test_pollux_unaware_virtual_nodes_of_unequal_nodes() -> None:
    """m = 4 (the t4 type's nodes): a (8) is two virtual nodes of 4, s (6) one of 4, u (2) one of its 2 GPUs."""
    cl = Cluster.from_nodes([("a", "a100", 8), ("s", "a100", 6), ("u", "t4", 2)], gpus_per_node={"a100": 8, "t4": 4})
    ids, real, _, m = virtual_nodes(cl)
    assert (ids, real, m) == (["a/0", "a/1", "s/0", "u/0"], ["a", "a", "s", "u"], 4)
    assert virtual_node_gpus(cl).tolist() == [4, 4, 4, 2]


def test_gandiva_places_a_job_on_the_node_that_holds_it() -> None:
    """P100 nodes big (4 GPUs) and small (2): the 4-GPU job fits only big; the 2-GPU job takes small."""
    cl = Cluster.from_nodes([("big", "p100", 4), ("small", "p100", 2)])
    pol = GandivaPolicy({"j": GandivaJob("j", 4), "k": GandivaJob("k", 2, arrival=1.0)})
    views = [_view("j", 4, adaptive=False, gpu_type="p100"), dataclasses.replace(_view("k", 2, adaptive=False), arrival=1.0)]
    d = pol.decide(_state(cl, views))
    assert d.nodes == {"j": {"big": 4}, "k": {"small": 2}}
    assert pol.pools["p100"].node_gpus.tolist() == [4, 2]  # Gandiva's own view of the nodes (read as [4, 4] before)


# ------------------------------------------------------------------------------------------ properties
class Checked:
    """A policy whose every decision is checked (:func:`fits` and ``rule``) before the engine sees it."""

    def __init__(self, inner: Any, rule: Callable[[RoundState, Decision, dict[str, int]], None]) -> None:
        self.__dict__.update(_inner=inner, _rule=rule, decisions=0)

    def __getattr__(self, k: str) -> Any:
        return getattr(self._inner, k)

    def decide(self, state: RoundState) -> Decision:
        d = self._inner.decide(state)
        if d.nodes is not None:
            self._rule(state, d, fits(state.cluster, d.nodes))
            self.__dict__["decisions"] += 1
        return d


def _pollux_rule(state: RoundState, d: Decision, held: dict[str, int]) -> None:
    views = {v.id: v for v in state.jobs}
    assert d.nodes is not None
    for jid, n in held.items():
        v = views[jid]
        assert n <= min(v.max_gpus, 64) if v.adaptive else n == v.requested_gpus
    spread = Counter(nid for m in d.nodes.values() if len(m) > 1 for nid in m)
    assert all(c == 1 for c in spread.values()), spread  # at most one distributed job per node


def _unaware_rule(state: RoundState, d: Decision, held: dict[str, int]) -> None:
    views = {v.id: v for v in state.jobs}
    for jid, n in held.items():
        assert n <= int(state.cluster.total_gpus.min()) if views[jid].adaptive else n == views[jid].requested_gpus


def _exact_rule(state: RoundState, d: Decision, held: dict[str, int]) -> None:
    """Rigid policies (Gavel, Shockwave, FIFO, Tiresias): a job runs on exactly the GPUs it asked for, or not at
    all."""
    views = {v.id: v for v in state.jobs}
    assert all(n == views[jid].requested_gpus for jid, n in held.items()), held


def _optimus_rule(state: RoundState, d: Decision, held: dict[str, int]) -> None:
    views = {v.id: v for v in state.jobs}
    for jid, n in held.items():
        v = views[jid]
        assert 1 <= n <= v.max_gpus if v.adaptive else n == v.requested_gpus


POLICIES: dict[str, tuple[Callable[[], Any], Callable[[RoundState, Decision, dict[str, int]], None]]] = {
    "pollux": (lambda: make_policy("pollux:population=16:generations=8"), _pollux_rule),
    "pollux-unaware": (lambda: make_policy("pollux-unaware:population=16:generations=8"), _unaware_rule),
    "gavel": (lambda: make_policy("gavel:round_seconds=0"), _exact_rule),
    "shockwave": (lambda: make_policy("shockwave"), _exact_rule),
    "shockwave:relabel": (lambda: make_policy("shockwave:nodes=relabel"), _exact_rule),
    "optimus": (lambda: make_policy("optimus"), _optimus_rule),
    "fifo": (lambda: make_policy("fifo"), _exact_rule),
    "tiresias": (lambda: make_policy("tiresias"), _exact_rule),
}

SATURN = load_workload("saturn/1")


@st.composite
def unequal_clusters(draw: st.DrawFn) -> Cluster:
    """1-3 GPU types of Sia's cluster, each of 1-3 nodes of 1..R GPUs (R 4 or 8, the type's nominal size)."""
    types = draw(st.lists(st.sampled_from(["t4", "a100", "rtx2080ti"]), min_size=1, max_size=3, unique=True))
    nodes = []
    nominal = {}
    for t in types:
        nominal[t] = draw(st.sampled_from([4, 8]))
        for k in range(draw(st.integers(1, 3))):
            nodes.append((f"{t}-n{k}", t, draw(st.integers(1, nominal[t]))))
    return Cluster.from_nodes(nodes, gpu_types=types, gpus_per_node=nominal)


@st.composite
def small_workloads(draw: st.DrawFn, cluster: Cluster) -> Workload:
    """3-6 saturn/1 jobs arriving in the first 4 minutes, their requests cut to the smallest type's GPUs."""
    picks = draw(st.lists(st.integers(0, len(SATURN.jobs) - 1), min_size=3, max_size=6, unique=True))
    cap = int(cluster.total_gpus.min())
    jobs = [dataclasses.replace(SATURN.jobs[i], time=float(60 * k), num_replicas=min(SATURN.jobs[i].num_replicas, cap))
            for k, i in enumerate(sorted(picks))]
    return Workload("small", tuple(jobs))


@pytest.mark.parametrize("name", list(POLICIES))
@settings(max_examples=3, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_every_node_map_fits_each_nodes_own_gpus(name: str, data: st.DataObject) -> None:
    """Random unequal clusters, a few saturn/1 jobs, 12 rounds: each decision's node maps fit every node's own GPUs
    (:func:`fits`) and keep the policy's rules (Pollux: caps, rigid counts, one distributed job per node; Gavel and
    Shockwave, FIFO, Tiresias: exactly the requested GPUs; Optimus: 1 GPU up to the cap)."""
    cl = data.draw(unequal_clusters())
    wl = data.draw(small_workloads(cl))
    make, rule = POLICIES[name]
    pol = Checked(make(), rule)
    simulate(cl, wl, pol, job_model="sia", max_time=720.0, progress=False)
    assert pol.decisions >= 1


@settings(max_examples=3, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(sizes=st.lists(st.integers(1, 4), min_size=1, max_size=4), seed=st.integers(0, 99))
def test_gandiva_node_maps_fit_each_nodes_own_gpus(sizes: list[int], seed: int) -> None:
    """Gandiva on P100 nodes of 1-4 GPUs (nominal 4) and a 15-job synthetic trace drawn for them: its node maps fit
    every node, a job holds at most its grow limit, and a guest's host has a node map of its own."""
    cl = Cluster.from_nodes([(f"p{k}", "p100", g) for k, g in enumerate(sizes)], gpus_per_node={"p100": 4})
    tr = gandiva_trace(15, seed, cl, arrival_rate=1 / 30.0, duration_scale=0.02, max_duration=1800.0)

    def rule(state: RoundState, d: Decision, held: dict[str, int]) -> None:
        for jid, n in held.items():
            assert 1 <= n <= tr.jobs[jid].grow_limit
        assert d.nodes is not None
        assert all(h in d.nodes for h in (d.colocate or {}).values())

    pol = Checked(GandivaPolicy(tr.jobs, priorities=tr.priorities, speeds=tr.speeds), rule)
    simulate(cl, tr.workload, pol, job_model=tr.job_model, adaptive=False, max_time=1800.0, progress=False)
    assert pol.decisions >= 1


# ------------------------------------------------------------------------------------------ a live session
LIVE_NODES = (NodeState("a", "a100", 8), NodeState("b", "a100", 8), NodeState("c", "a100", 6),
              NodeState("d", "a100", 8, failed_gpus=(0, 5)))


@pytest.mark.parametrize("name", list(POLICIES))
def test_live_session_with_a_six_gpu_node_decides_under_each_policy(name: str) -> None:
    """Nodes of 8, 8, 6 and 8-with-2-failed A100s: 10 rounds of a saturn/1 prefix replayed through the session;
    every plan holds only healthy GPUs, each at most once."""
    wl = Workload("prefix", tuple(dataclasses.replace(j, time=float(30 * k)) for k, j in enumerate(SATURN.jobs[:8])))
    s = Session(ClusterState(LIVE_NODES), POLICIES[name][0](), job_model="sia")
    plans = ReplayExecutor(s, wl, max_time=600.0).run()
    assert plans
    healthy = {n.name: set(n.healthy_gpus) for n in LIVE_NODES}
    for p in plans:
        held = [(n, g) for jp in p.jobs.values() for n, gs in jp.placement.items() for g in gs]
        assert len(held) == len(set(held)) and all(g in healthy[n] for n, g in held)
    assert any(jp.placement for p in plans for jp in p.jobs.values())


def test_live_session_under_gandiva_with_a_six_gpu_node() -> None:
    """Gandiva's policy object (its jobs' profiles from a synthetic trace) in a session on P100 nodes of 4, 4 and a
    node with one failed GPU (3 healthy): every plan holds only healthy GPUs (a packed guest shares its host's)."""
    nodes = (NodeState("p0", "p100", 4), NodeState("p1", "p100", 4), NodeState("p2", "p100", 4, failed_gpus=(2,)))
    cl = Cluster.from_nodes([("p0", "p100", 4), ("p1", "p100", 4), ("p2", "p100", 3)], gpus_per_node={"p100": 4})
    tr = gandiva_trace(10, 3, cl, arrival_rate=1 / 20.0, duration_scale=0.02, max_duration=1200.0)
    s = Session(ClusterState(nodes), GandivaPolicy(tr.jobs, priorities=tr.priorities, speeds=tr.speeds),
                job_model=tr.job_model, adaptive=False)
    plans = ReplayExecutor(s, tr.workload, max_time=900.0).run()
    healthy = {n.name: set(n.healthy_gpus) for n in nodes}
    for p in plans:
        assert all(g in healthy[n] for jp in p.jobs.values() for n, gs in jp.placement.items() for g in gs)
    assert any(jp.placement for p in plans for jp in p.jobs.values())


@pytest.mark.parametrize("name", list(POLICIES))
def test_live_session_through_failed_gpus_a_node_down_and_back(name: str) -> None:
    """A node's size changes between decisions (2 of a's 8 GPUs fail, then b goes down, then both come back): every
    policy keeps deciding, and no plan holds a GPU that is failed or on a node that is down. (Before, ``pollux-unaware``
    looked up virtual nodes that were gone, and Shockwave kept virtual workers past its smaller pool.)"""
    nodes = (NodeState("a", "a100", 8), NodeState("b", "a100", 8), NodeState("c", "a100", 6), NodeState("t", "t4", 4))
    s = Session(ClusterState(nodes), POLICIES[name][0](), job_model="sia")
    for k, g in enumerate([8, 6, 4, 2, 2, 1, 3]):
        s.apply(JobSubmitted(0.0, LiveJob(f"j{k}", "cifar10", 0.0, requested_gpus=g)))
    bad: set[tuple[str, int]] = set()
    steps = [(60.0, None), (120.0, NodeUpdated(70.0, NodeState("a", "a100", 8, failed_gpus=(1, 2)))),
             (180.0, NodeDown(130.0, "b")), (240.0, NodeUp(190.0, "b")),
             (300.0, NodeUpdated(250.0, NodeState("a", "a100", 8)))]
    s.decide(0.0)
    for now, event in steps:
        if isinstance(event, NodeUpdated):
            bad = {("a", g) for g in event.state.failed_gpus}
        elif isinstance(event, NodeDown):
            bad |= {("b", g) for g in range(8)}
        elif isinstance(event, NodeUp):
            bad = {x for x in bad if x[0] != "b"}
        if event is not None:
            s.apply(event)
        p = s.decide(now)
        held = [(n, g) for jp in p.jobs.values() for n, gs in jp.placement.items() for g in gs]
        assert len(held) == len(set(held)) and not set(held) & bad, (now, held)


def test_gandiva_follows_a_live_cluster_that_changes() -> None:
    """Gandiva's pools follow the cluster between rounds: after a GPU of p0 fails and p1 goes down, its jobs still on
    GPUs that exist stay there and the others are queued again; no plan holds a failed GPU or a node that is down
    (before, the pools were built once and a node map gave p0 its 4 GPUs after one had failed)."""
    nodes = (NodeState("p0", "p100", 4), NodeState("p1", "p100", 4), NodeState("p2", "p100", 4))
    cl = Cluster.from_nodes([(n.name, "p100", 4) for n in nodes])
    tr = gandiva_trace(10, 3, cl, arrival_rate=1 / 20.0, duration_scale=0.02, max_duration=1200.0)
    s = Session(ClusterState(nodes), GandivaPolicy(tr.jobs, priorities=tr.priorities, speeds=tr.speeds),
                job_model=tr.job_model, adaptive=False)
    ex = ReplayExecutor(s, tr.workload, max_time=1200.0)
    bad: set[tuple[str, int]] = set()
    for k in range(12):
        if k == 4:
            s.apply(NodeUpdated(float(s.time or 0.0) + 1, NodeState("p0", "p100", 4, failed_gpus=(1,))))
            bad = {("p0", 1)}
        if k == 8:
            s.apply(NodeDown(float(s.time or 0.0) + 1, "p1"))
            bad |= {("p1", g) for g in range(4)}
        p = ex.step()
        held = [(n, g) for jp in p.jobs.values() for n, gs in jp.placement.items() for g in gs]
        assert not set(held) & bad, (k, held)
    assert any(jp.placement for jp in p.jobs.values())
