"""HiveD buddy allocator: the safety theorem (stateful), split/merge, preemption, fairness, bad nodes."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from schedopt.errors import InputError
from schedopt.hived import BuddyAllocator, CellType, PhysicalCellSpec, PhysicalCluster, Request, VirtualCluster
from schedopt.hived.allocator import weighted_max_min
from schedopt.hived.strategies import cluster_and_valid_vcs


def two_level(tops: int = 2, width: int = 2) -> PhysicalCluster:
    """``tops`` nodes of ``width`` GPUs (level 2 = node, level 1 = GPU)."""
    return PhysicalCluster([CellType("N", "G", width, is_node_level=True)],
                           [PhysicalCellSpec("N", f"n{i}") for i in range(tops)])


def rack_cluster() -> PhysicalCluster:
    """1 rack (level 4) of 2 nodes (level 3), 2 sockets each (level 2), 2 GPUs per socket: 8 GPUs."""
    types = [CellType("S", "G", 2), CellType("N", "S", 2, is_node_level=True), CellType("R", "N", 2)]
    return PhysicalCluster(types, [PhysicalCellSpec("R", "r0", children=[PhysicalCellSpec(address="a"),
                                                                          PhysicalCellSpec(address="b")])])


# ------------------------------------------------------------------------------------------------ theorem
class SafetyMachine(RuleBasedStateMachine):
    """Valid assignment + in-quota guaranteed requests (with opportunistic noise) => never a failure."""

    @initialize(cv=cluster_and_valid_vcs(), data=st.data())
    def setup(self, cv, data) -> None:
        self.cluster, self.vcs = cv
        self.al = BuddyAllocator(self.cluster, self.vcs)
        self.initial = self.al.free_lists()
        self.live: dict[int, list[tuple[str, int]]] = {}
        self.guaranteed: set[int] = set()

    @rule(data=st.data())
    def allocate_guaranteed(self, data) -> None:
        vc = data.draw(st.sampled_from(self.vcs)).name
        chain = data.draw(st.sampled_from(self.cluster.chain_names))
        ch = self.cluster.chains[chain]
        k = data.draw(st.integers(1, ch.node_level))  # a pod runs on one machine
        g = data.draw(st.integers(ch.gpus[k - 1] + 1 if k > 1 else 1, ch.gpus[k]))
        pods = data.draw(st.integers(1, 3))
        fits = self.al.virtual_free(vc, chain, k) >= pods
        a = self.al.allocate(Request(vc, chain, g, pods))
        if fits:
            assert a.ok, f"in-quota guaranteed request failed: {a.reason} {a.message}"
            assert a.level == k and len(a.pods) == pods and all(len(p.gpus) == g for p in a.pods)
            for h in a.preempted:
                self.live.pop(h, None)
            self.live[a.handle] = [(p.node, x) for p in a.pods for x in p.gpus]
            self.guaranteed.add(a.handle)
        else:
            assert not a.ok and a.reason == "vc_quota"

    @rule(data=st.data())
    def allocate_opportunistic(self, data) -> None:
        vc = data.draw(st.sampled_from(self.vcs)).name
        chain = data.draw(st.sampled_from(self.cluster.chain_names))
        ch = self.cluster.chains[chain]
        g = data.draw(st.integers(1, ch.gpus[ch.node_level]))
        a = self.al.allocate(Request(vc, chain, g, data.draw(st.integers(1, 2)), "opportunistic"))
        for h in a.preempted:
            self.live.pop(h, None)
        if a.ok:
            self.live[a.handle] = [(p.node, x) for p in a.pods for x in p.gpus]

    @precondition(lambda self: bool(self.live))
    @rule(data=st.data())
    def release(self, data) -> None:
        h = data.draw(st.sampled_from(sorted(self.live)))
        self.al.release(h)
        del self.live[h]
        self.guaranteed.discard(h)

    @invariant()
    def consistent(self) -> None:
        if not hasattr(self, "al"):
            return
        assert self.al.check_invariants() == []
        seen: set[tuple[str, int]] = set()
        for gpus in self.live.values():  # model-free: no GPU held by two running jobs
            assert seen.isdisjoint(gpus)
            seen.update(gpus)
        assert set(self.live) == set(self.al.jobs)
        quota = self.al.table.total
        bound = self.al.bound_cells()
        for vi, v in enumerate(self.vcs):
            for chain, k, _ in bound[v.name]:
                assert sum(1 for c, lv, _ in bound[v.name] if (c, lv) == (chain, k)) <= quota[vi, self.cluster.chain_names.index(chain), k]

    def teardown(self) -> None:
        if hasattr(self, "al"):
            for h in list(self.al.jobs):
                self.al.release(h)
            assert self.al.free_lists() == self.initial  # everything merged back
            assert self.al.check_invariants() == []


SafetyMachine.TestCase.settings = settings(max_examples=60, stateful_step_count=30, deadline=None,
                                           suppress_health_check=[HealthCheck.too_slow])
TestSafetyTheorem = SafetyMachine.TestCase


# ------------------------------------------------------------------------------------------------ hand cases
def test_split_and_merge_restore_free_lists() -> None:
    """Allocating a GPU splits r0 -> nodes -> sockets -> GPUs (one free buddy per level); releasing merges back."""
    cl = rack_cluster()
    al = BuddyAllocator(cl, [VirtualCluster("a", {("R", 1): 3})])
    init = al.free_lists()
    assert init[("R", 4)] == ["r0"] and init[("R", 1)] == []
    a = al.allocate(Request("a", "R", 1))
    fl = al.free_lists()
    assert [len(fl[("R", k)]) for k in (1, 2, 3, 4)] == [1, 1, 1, 0]
    b = al.allocate(Request("a", "R", 1))  # takes the free buddy GPU: no new split
    assert b.pods[0].node == a.pods[0].node and {a.pods[0].gpus, b.pods[0].gpus} == {(0,), (1,)}
    assert al.free_lists()[("R", 1)] == []
    al.release(a.handle)
    al.release(b.handle)
    assert al.free_lists() == init


def test_request_level_and_gpus() -> None:
    """3 GPUs per pod -> the smallest cell holding 3 is the 4-GPU node (level 3 of S=2 GPUs... here node=4)."""
    cl = rack_cluster()
    al = BuddyAllocator(cl, [VirtualCluster("a", {("R", 3): 2})])
    r = al.allocate(Request("a", "G", 3, pods=2))
    assert r.ok and r.level == 3 and sorted(p.node for p in r.pods) == ["a", "b"]
    assert all(p.gpus == (0, 1, 2) for p in r.pods)
    w = al.allocate(Request("a", "R", 1))
    assert not w.ok and w.reason == "vc_quota"


def test_malformed_requests_raise() -> None:
    al = BuddyAllocator(rack_cluster(), [VirtualCluster("a", {("R", 3): 1})])
    with pytest.raises(InputError) as e:
        al.allocate(Request("nope", "R", 1))
    assert e.value.field == "request.vc"
    with pytest.raises(InputError) as e:
        al.allocate(Request("a", "R", 9))
    assert e.value.field == "request.gpus_per_pod"
    with pytest.raises(InputError) as e:
        al.allocate(Request("a", "X", 1))
    assert e.value.field == "request.chain"
    with pytest.raises(InputError) as e:
        al.allocate(Request("a", "R", 1, pods=0))
    assert e.value.field == "request.pods"
    with pytest.raises(InputError):
        al.release(12345)


def test_opportunistic_preempted_only_when_needed() -> None:
    """Two 2-GPU nodes; VC g owns one node. An opportunistic 2-GPU job sits on one node. g's request takes the
    clean node (no preemption); after the other tenant fills ... a second guaranteed node request must preempt."""
    cl = two_level(2, 2)
    al = BuddyAllocator(cl, [VirtualCluster("g", {("N", 2): 2}), VirtualCluster("o", {})])
    o = al.allocate(Request("o", "N", 2, priority="opportunistic"))
    assert o.ok
    r1 = al.allocate(Request("g", "N", 2))
    assert r1.ok and r1.preempted == [] and r1.pods[0].node != o.pods[0].node
    assert o.handle in al.jobs
    r2 = al.allocate(Request("g", "N", 2))
    assert r2.ok and r2.preempted == [o.handle] and o.handle not in al.jobs
    assert al.check_invariants() == []


def test_preempt_cell_with_fewest_opportunistic_gpus() -> None:
    """Nodes n0 (2 opportunistic GPUs) and n1 (1 opportunistic GPU): a guaranteed node goes to n1."""
    cl = two_level(2, 2)
    al = BuddyAllocator(cl, [VirtualCluster("g", {("N", 2): 1}), VirtualCluster("o", {})])
    big = al.allocate(Request("o", "N", 2, priority="opportunistic"))
    small = al.allocate(Request("o", "N", 1, priority="opportunistic"))
    assert big.pods[0].node != small.pods[0].node
    r = al.allocate(Request("g", "N", 2))
    assert r.ok and r.pods[0].node == small.pods[0].node and r.preempted == [small.handle]
    assert big.handle in al.jobs


def test_weighted_max_min() -> None:
    """capacity 10, demands a=8 b=8 c=1, weights 1, 3, 1: c gets 1; 9 left split 1:3 -> a 2.25, b 6.75."""
    s = weighted_max_min(10, {"a": 8, "b": 8, "c": 1}, {"a": 1, "b": 3, "c": 1})
    assert s == pytest.approx({"a": 2.25, "b": 6.75, "c": 1.0})
    assert weighted_max_min(10, {"a": 2, "b": 3}, {"a": 1, "b": 1}) == {"a": 2.0, "b": 3.0}


def test_opportunistic_fair_share_preemption() -> None:
    """4 nodes of 1 GPU; tenant a holds all 4 opportunistically; b (same weight) asks 1: its share is 2, so one of
    a's jobs is preempted; a asking for more waits with reason fair_share."""
    cl = two_level(4, 1)
    al = BuddyAllocator(cl, [VirtualCluster("a", {}), VirtualCluster("b", {})])
    hs = [al.allocate(Request("a", "N", 1, priority="opportunistic")).handle for _ in range(4)]
    r = al.allocate(Request("b", "N", 1, priority="opportunistic"))
    assert r.ok and len(r.preempted) == 1 and r.preempted[0] in hs
    w = al.allocate(Request("a", "N", 1, priority="opportunistic"))
    assert not w.ok and w.reason == "fair_share"


def test_bad_node_breaks_and_restores_guarantee() -> None:
    """Two 2-GPU nodes, VC a owns both. Marking n1 bad: guarantee unmeetable (reported, names VC a and the node
    level); the second node request waits for bad hardware. mark_healthy restores everything."""
    cl = two_level(2, 2)
    al = BuddyAllocator(cl, [VirtualCluster("a", {("N", 2): 2})])
    init = al.free_lists()
    rep = al.mark_bad("n1")
    assert rep.valid is False and rep.vc == "a" and rep.level == 2 and rep.cause == "bad_hardware"
    assert al.free_lists()[("N", 2)] == ["n0"]
    r1 = al.allocate(Request("a", "N", 2))
    assert r1.ok and r1.pods[0].node == "n0"
    r2 = al.allocate(Request("a", "N", 2))
    assert not r2.ok and r2.reason == "bad_hardware" and r2.guarantee is not None and not r2.guarantee.valid
    assert al.mark_healthy("n1").valid
    r3 = al.allocate(Request("a", "N", 2))
    assert r3.ok and r3.pods[0].node == "n1"
    al.release(r1.handle)
    al.release(r3.handle)
    assert al.free_lists() == init and al.check_invariants() == []


def test_bad_node_inside_rack_is_split_off() -> None:
    """Rack r0 of nodes a, b; b bad: the rack splits, a is free as a node, b leaves the free lists. A VC with one
    node still fits (guarantee valid); a rack request cannot be met."""
    cl = rack_cluster()
    al = BuddyAllocator(cl, [VirtualCluster("x", {("R", 3): 1})])
    rep = al.mark_bad("b")
    assert rep.valid
    fl = al.free_lists()
    assert fl[("R", 4)] == [] and fl[("R", 3)] == ["r0/a"]
    r = al.allocate(Request("x", "R", 4))
    assert r.ok and r.pods[0].node == "a"
    al.release(r.handle)
    al.mark_healthy("b")
    assert al.free_lists()[("R", 4)] == ["r0"]
    al2 = BuddyAllocator(cl, [VirtualCluster("y", {("R", 4): 1})])
    rep2 = al2.mark_bad("a")
    assert not rep2.valid and rep2.vc == "y" and rep2.level == 4
    with pytest.raises(InputError):  # 8 GPUs exceed one node: no pod spans machines
        al2.allocate(Request("y", "R", 8))


def test_pinned_cell_bound_at_start() -> None:
    """A pinned node is bound to its VC from the start and never on the free lists."""
    cl = PhysicalCluster([CellType("N", "G", 2, is_node_level=True)],
                         [PhysicalCellSpec("N", "n0", pinned_id="P"), PhysicalCellSpec("N", "n1")])
    al = BuddyAllocator(cl, [VirtualCluster("a", {}, pinned=["P"]), VirtualCluster("b", {("N", 2): 1})])
    assert al.free_lists()[("N", 2)] == ["n1"]
    r = al.allocate(Request("a", "N", 2))
    assert r.ok and r.pods[0].node == "n0"
    assert al.allocate(Request("b", "N", 2)).pods[0].node == "n1"
