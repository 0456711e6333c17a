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
def _fits(free: list[int], g: int, pods: int) -> bool:
    """Equal pods of g GPUs fit nodes with these idle GPU counts iff sum(floor(free / g)) >= pods."""
    return sum(f // g for f in free) >= pods


class SafetyMachine(RuleBasedStateMachine):
    """Valid assignment + guaranteed requests that fit the VC's own virtual nodes => always placed, at GPU
    granularity (odd pod sizes, several pods per node), with priorities, lazy preemption, pinned-cell requests and
    opportunistic pods on idle GPUs (inside VC-bound cells too) interleaved and preempted."""

    BUDDY = "healthy_first"

    @initialize(cv=cluster_and_valid_vcs(pinned=True), data=st.data())
    def setup(self, cv, data) -> None:
        self.cluster, self.vcs = cv
        self.al = BuddyAllocator(self.cluster, self.vcs, buddy=self.BUDDY)
        self.initial = self.al.free_lists()
        self.live: dict[int, list[tuple[str, int]]] = {}
        self.owner: dict[int, tuple[str, int]] = {}  # guaranteed handle -> (vc, priority)

    @rule(data=st.data())
    def allocate_guaranteed(self, data) -> None:
        v = data.draw(st.sampled_from(self.vcs))
        pin = data.draw(st.sampled_from([None, *v.pinned]))
        if pin is None:
            chain = data.draw(st.sampled_from(self.cluster.chain_names))
        else:
            chain = self.cluster.chain_names[int(self.cluster.chain_index[self.cluster.pinned[pin]])]
        ch = self.cluster.chains[chain]
        g = data.draw(st.integers(1, ch.gpus[ch.node_level]))  # any size up to a node: odd sizes too
        pods = data.draw(st.integers(1, 3))
        prio = data.draw(st.sampled_from([0, 1, 5]))
        lazy = data.draw(st.booleans())
        free_now = self.al.vc_node_free(v.name, chain, pinned_cell=pin)
        free_prio = self.al.vc_node_free(v.name, chain, priority=prio, pinned_cell=pin)
        a = self.al.allocate(Request(v.name, chain, g, pods, prio, pinned_cell=pin, lazy_preemption=lazy))
        if self.al.bad_nodes:  # failed hardware: no guarantee, only consistency (checked by the invariant)
            if a.ok:
                self.live[a.handle] = [(p.node, x) for p in a.pods for x in p.gpus]
                self.owner[a.handle] = (v.name, prio)
            for h in a.preempted:
                self.live.pop(h)
                self.owner.pop(h, None)
            for h in a.lazy_preempted:
                self.owner.pop(h)
            return
        if _fits(free_now, g, pods) or _fits(free_prio, g, pods):
            assert a.ok, f"guaranteed request within the VC's virtual cells failed: {a.reason} {a.message}"
            assert len(a.pods) == pods and all(len(p.gpus) == g for p in a.pods)
            if _fits(free_now, g, pods):  # no preemption inside the VC when idle virtual GPUs suffice
                assert not [h for h in a.preempted + a.lazy_preempted if h in self.owner]
            for h in a.preempted:
                if h in self.owner:  # only lower priorities of the same VC
                    assert self.owner[h][0] == v.name and self.owner[h][1] < prio
                self.live.pop(h)
                self.owner.pop(h, None)
            for h in a.lazy_preempted:  # same VC, lower priority; runs on (now opportunistic)
                name, low = self.owner.pop(h)
                assert name == v.name and low < prio and h in self.al.jobs and self.al.jobs[h].kind == "opportunistic"
            self.live[a.handle] = [(p.node, x) for p in a.pods for x in p.gpus]
            self.owner[a.handle] = (v.name, prio)
        else:
            assert not a.ok and a.reason == "vc_quota"

    @rule(data=st.data())
    def allocate_opportunistic(self, data) -> None:
        vc = data.draw(st.sampled_from(self.vcs)).name
        chain = data.draw(st.sampled_from(self.cluster.chain_names))
        ch = self.cluster.chains[chain]
        g = data.draw(st.integers(1, ch.gpus[ch.node_level]))
        pods = data.draw(st.integers(1, 2))
        idle = {}
        held = {x for gpus in self.live.values() for x in gpus}
        for nc in self.cluster.cells_at[(chain, ch.node_level)].tolist():
            if self.cluster.node_name(nc) not in self.al.bad_nodes:  # idle GPUs of healthy nodes
                idle[nc] = sum(1 for x in self.cluster.gpus_of(nc) if x not in held)
        a = self.al.allocate(Request(vc, chain, g, pods, "opportunistic"))
        assert a.preempted == []  # opportunistic pods never preempt (fair_share is off)
        assert a.ok == _fits(list(idle.values()), g, pods)  # any idle GPU, inside VC-bound cells too
        if a.ok:
            self.live[a.handle] = [(p.node, x) for p in a.pods for x in p.gpus]

    @rule(data=st.data())
    def fail_or_heal_node(self, data) -> None:
        node = data.draw(st.sampled_from(sorted(self.cluster.node_names)))
        if node in self.al.bad_nodes:
            self.al.mark_healthy(node)
        elif data.draw(st.integers(0, 3)) == 0:  # failures rarer than the other steps
            self.al.mark_bad(node)

    @precondition(lambda self: bool(self.live))
    @rule(data=st.data())
    def release(self, data) -> None:
        h = data.draw(st.sampled_from(sorted(self.live)))
        self.al.release(h)
        del self.live[h]
        self.owner.pop(h, None)

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
        cl = self.cluster
        for vi, v in enumerate(self.vcs):
            for chain, k, _ in bound[v.name]:
                assert sum(1 for c, lv, _ in bound[v.name] if (c, lv) == (chain, k)) <= quota[vi, cl.chain_names.index(chain), k]
            # every GPU of the VC's guaranteed jobs lies inside a physical cell bound to the VC
            mine = {x for _, _, addr in bound[v.name] for x in cl.gpus_of(cl.by_address[addr])}
            for h, (name, _) in self.owner.items():
                if name == v.name:
                    assert set(self.live[h]) <= mine

    def teardown(self) -> None:
        if hasattr(self, "al"):
            for h in list(self.al.jobs):
                self.al.release(h)
            for node in sorted(self.al.bad_nodes):
                self.al.mark_healthy(node)
            assert self.al.free_lists() == self.initial  # everything merged back
            assert self.al.check_invariants() == []


class HivedBuddyMachine(SafetyMachine):
    """The same with hivedscheduler's health-blind buddy free lists (``buddy="hived"``)."""

    BUDDY = "hived"


SafetyMachine.TestCase.settings = settings(max_examples=60, stateful_step_count=30, deadline=None,
                                           suppress_health_check=[HealthCheck.too_slow])
HivedBuddyMachine.TestCase.settings = settings(max_examples=30, stateful_step_count=30, deadline=None,
                                               suppress_health_check=[HealthCheck.too_slow])
TestSafetyTheorem = SafetyMachine.TestCase
TestSafetyTheoremHivedBuddy = HivedBuddyMachine.TestCase


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
    """3 GPUs per pod: the smallest cell holding 3 is the 4-GPU node (level 3); two pods fill 3 of 4 GPUs of each
    node. GPU granularity (as hivedscheduler): the idle 4th GPU of each node still takes a 1-GPU pod of the VC, a
    third 1-GPU pod waits."""
    cl = rack_cluster()
    al = BuddyAllocator(cl, [VirtualCluster("a", {("R", 3): 2})])
    r = al.allocate(Request("a", "G", 3, pods=2))
    assert r.ok and r.level == 3 and sorted(p.node for p in r.pods) == ["a", "b"]
    assert all(p.gpus == (0, 1, 2) for p in r.pods)
    assert al.vc_node_free("a", "R") == [1, 1]
    w1 = al.allocate(Request("a", "R", 1))
    w2 = al.allocate(Request("a", "R", 1))
    assert w1.ok and w2.ok and {(w1.pods[0].node, w1.pods[0].gpus), (w2.pods[0].node, w2.pods[0].gpus)} == {("a", (3,)), ("b", (3,))}
    w = al.allocate(Request("a", "R", 1))
    assert not w.ok and w.reason == "vc_quota"
    assert al.check_invariants() == []


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
    al = BuddyAllocator(cl, [VirtualCluster("a", {}), VirtualCluster("b", {})], fair_share=True)
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
    assert al.doomed_cells() == {"a": ["n1"]}  # a's second node is doomed to the failed n1: the VC sees it
    r2 = al.allocate(Request("a", "N", 2))
    assert not r2.ok and r2.reason == "bad_hardware" and r2.guarantee is not None and not r2.guarantee.valid
    assert al.mark_healthy("n1").valid
    assert al.doomed_cells() == {"a": []}
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


def test_pinned_cell_bound_at_start_and_named_by_requests() -> None:
    """A pinned node is bound to its VC from the start and never on the free lists; only requests naming it
    (hivedscheduler's pinnedCellId) run there; an opportunistic pod cannot name it."""
    cl = PhysicalCluster([CellType("N", "G", 2, is_node_level=True)],
                         [PhysicalCellSpec("N", "n0", pinned_id="P"), PhysicalCellSpec("N", "n1")])
    al = BuddyAllocator(cl, [VirtualCluster("a", {}, pinned=["P"]), VirtualCluster("b", {("N", 2): 1})])
    assert al.free_lists()[("N", 2)] == ["n1"]
    w = al.allocate(Request("a", "N", 2))  # a has no non-pinned quota
    assert not w.ok and w.reason == "vc_quota"
    r = al.allocate(Request("a", "N", 1, pinned_cell="P"))
    r2 = al.allocate(Request("a", "N", 1, pinned_cell="P"))
    assert r.ok and r2.ok and {r.pods[0].gpus, r2.pods[0].gpus} == {(0,), (1,)} and r.pods[0].node == "n0"
    assert not al.allocate(Request("a", "N", 1, pinned_cell="P")).ok
    assert al.allocate(Request("b", "N", 2)).pods[0].node == "n1"
    with pytest.raises(InputError) as e:
        al.allocate(Request("a", "N", 1, priority="opportunistic", pinned_cell="P"))
    assert e.value.field == "request.priority"
    with pytest.raises(InputError) as e:
        al.allocate(Request("b", "N", 1, pinned_cell="P"))
    assert e.value.field == "request.pinned_cell"
    al.release(r.handle)
    al.release(r2.handle)
    assert al.bound_cells()["a"] == [("N", 2, "n0")]  # pinned: bound for good


def test_several_pods_per_node_and_odd_sizes() -> None:
    """Two 4-GPU nodes, VC a has one node: pods of 3 and 1 GPUs share the node (the VC's second request binds no new
    cell), the other node stays free; a 2-GPU pod waits; releasing both merges everything back."""
    cl = two_level(2, 4)
    al = BuddyAllocator(cl, [VirtualCluster("a", {("N", 2): 1})])
    init = al.free_lists()
    r3 = al.allocate(Request("a", "N", 3))
    r1 = al.allocate(Request("a", "N", 1))
    assert r3.ok and r1.ok and r3.pods[0].node == r1.pods[0].node
    assert sorted(r3.pods[0].gpus + r1.pods[0].gpus) == [0, 1, 2, 3]
    assert len(al.free_lists()[("N", 2)]) == 1
    w = al.allocate(Request("a", "N", 2))
    assert not w.ok and w.reason == "vc_quota"
    al.release(r3.handle)
    al.release(r1.handle)
    assert al.free_lists() == init


def test_opportunistic_on_idle_gpus_of_a_vc_cell_then_preempted() -> None:
    """One 4-GPU node bound to VC g by a 1-GPU pod; an opportunistic 2-GPU pod of o runs on idle GPUs of that node
    (hivedscheduler does this; the free lists are empty); g's 3-GPU pod needs them and preempts it."""
    cl = two_level(1, 4)
    al = BuddyAllocator(cl, [VirtualCluster("g", {("N", 2): 1}), VirtualCluster("o", {})])
    a = al.allocate(Request("g", "N", 1))
    assert a.ok and al.free_lists()[("N", 2)] == []
    o = al.allocate(Request("o", "N", 2, priority="opportunistic"))
    assert o.ok and o.pods[0].node == "n0" and set(o.pods[0].gpus).isdisjoint(a.pods[0].gpus)
    b = al.allocate(Request("g", "N", 3))
    assert b.ok and b.preempted == [o.handle] and o.handle not in al.jobs
    assert al.check_invariants() == []


def test_priorities_inside_a_vc() -> None:
    """VC a has one 2-GPU node: a priority-0 job holds it; an equal priority waits; priority 5 preempts it (gang:
    both pods); priority 3 then waits (lower than 5)."""
    cl = two_level(2, 2)
    al = BuddyAllocator(cl, [VirtualCluster("a", {("N", 2): 1}), VirtualCluster("b", {("N", 2): 1})])
    low = al.allocate(Request("a", "N", 1, pods=2, priority=0))
    assert low.ok
    assert al.allocate(Request("a", "N", 1, priority=0)).reason == "vc_quota"
    high = al.allocate(Request("a", "N", 2, priority=5))
    assert high.ok and high.preempted == [low.handle] and high.pods[0].node == low.pods[0].node
    assert al.allocate(Request("a", "N", 1, priority=3)).reason == "vc_quota"
    with pytest.raises(InputError) as e:
        al.allocate(Request("a", "N", 1, priority=1001))
    assert e.value.field == "request.priority"


def test_lazy_preemption_keeps_the_job_running_until_its_gpus_are_needed() -> None:
    """VC a has one 2-GPU node of two. A lazy low-priority job runs on node X; a priority-5 job of a takes its virtual
    node: the low job loses its virtual cell and runs on as opportunistic on X, while the new job is bound to the
    clean node Y. With a single node the same request preempts the lazy job for real."""
    cl = two_level(2, 2)
    al = BuddyAllocator(cl, [VirtualCluster("a", {("N", 2): 1})])
    low = al.allocate(Request("a", "N", 2, priority=0, lazy_preemption=True))
    high = al.allocate(Request("a", "N", 2, priority=5))
    assert high.ok and high.preempted == [] and high.lazy_preempted == [low.handle]
    assert high.pods[0].node != low.pods[0].node
    assert al.jobs[low.handle].kind == "opportunistic" and al.check_invariants() == []
    al.release(high.handle)
    al.release(low.handle)
    one = BuddyAllocator(two_level(1, 2), [VirtualCluster("a", {("N", 2): 1})])
    low = one.allocate(Request("a", "N", 2, priority=0, lazy_preemption=True))
    high = one.allocate(Request("a", "N", 2, priority=5))
    assert high.ok and high.preempted == [low.handle] and low.handle not in one.jobs


def test_doomed_bad_cell_lets_the_vc_use_the_healthy_nodes_of_a_failed_rack() -> None:
    """Rack r0 of nodes a, b; VC y has the rack. b fails: no healthy rack is left, so y's rack is doomed to the
    failed r0 (hivedscheduler's doomed bad cell); y still runs a 4-GPU pod on a, a second waits (bad hardware)."""
    cl = rack_cluster()
    al = BuddyAllocator(cl, [VirtualCluster("y", {("R", 4): 1})])
    rep = al.mark_bad("b")
    assert not rep.valid and al.doomed_cells() == {"y": ["r0"]}
    r = al.allocate(Request("y", "R", 4))
    assert r.ok and r.pods[0].node == "a"
    w = al.allocate(Request("y", "R", 4))
    assert not w.ok and w.reason == "bad_hardware"
    al.mark_healthy("b")
    assert al.doomed_cells() == {"y": []} and al.allocate(Request("y", "R", 4)).pods[0].node == "b"
    assert al.check_invariants() == []


def test_best_fit_keeps_a_node_for_a_later_8_gpu_pod() -> None:
    """Issue 17's in-VC packing case (schedopt knowingly does better): two 8-GPU nodes; VC a has one node and one
    GPU cell. hivedscheduler's order puts node-level cells first, so its 1-GPU pod takes a GPU of a's node and a's
    later 8-GPU pod (within quota) waits; best fit puts the 1-GPU pod in a's GPU cell and the 8-GPU pod binds.
    (Checked against the published scheduler, outside the repository: bind, then wait.)"""
    cl = PhysicalCluster([CellType("N", "G", 8, is_node_level=True), CellType("R", "N", 2)],
                         [PhysicalCellSpec("R", "r0", children=[PhysicalCellSpec(address="n0"), PhysicalCellSpec(address="n1")])])
    vcs = [VirtualCluster("a", {("R", 2): 1, ("R", 1): 1}), VirtualCluster("b", {("R", 1): 7})]
    outcomes = {}
    for packing in ("best_fit", "hived"):
        al = BuddyAllocator(cl, vcs, packing=packing)
        small, big = al.allocate(Request("a", "G", 1)), al.allocate(Request("a", "G", 8))
        outcomes[packing] = (small.ok, big.ok, big.reason)
    assert outcomes == {"best_fit": (True, True, ""), "hived": (True, False, "vc_quota")}
    with pytest.raises(InputError) as e:
        BuddyAllocator(cl, vcs, packing="tightest")
    assert e.value.field == "packing"


def test_preemptor_cells_stay_bound_when_a_victim_leaves_a_shared_node() -> None:
    """Regression (found by the soak run): VC a has two 2-GPU nodes; a priority-0 job of three 1-GPU pods fills node
    X and one GPU of node Y. A priority-5 job of three 1-GPU pods takes X's two GPUs (preempting) and Y's idle GPU.
    Releasing the victim's GPU on Y must not unbind Y, where the preemptor's new pod already runs."""
    cl = two_level(2, 2)
    al = BuddyAllocator(cl, [VirtualCluster("a", {("N", 2): 2})])
    low = al.allocate(Request("a", "N", 1, pods=3, priority=0))
    assert low.ok and sorted(p.node for p in low.pods).count(low.pods[0].node) in (1, 2)
    high = al.allocate(Request("a", "N", 1, pods=3, priority=5))
    assert high.ok and high.preempted == [low.handle]
    assert al.check_invariants() == []
    assert sorted(al.bound_cells()["a"]) == [("N", 2, "n0"), ("N", 2, "n1")]
    al.release(high.handle)
    assert al.bound_cells()["a"] == [] and al.check_invariants() == []


def test_known_failure_shape_follows_the_vc_and_node_health() -> None:
    """VC a owns one 2-GPU node, b the other. A second 2-GPU request of a fails and is remembered (by shape: the
    look-up and the answer agree); b's jobs do not change a's cells, a's release does; a bad node forgets it."""
    cl = two_level(2, 2)
    al = BuddyAllocator(cl, [VirtualCluster("a", {("N", 2): 1}), VirtualCluster("b", {("N", 2): 1})])
    req = Request("a", "N", 2)
    shape, va = BuddyAllocator._shape(req), al.vc_index["a"]
    assert not al.known_failure_shape(shape, va) and al.known_failure(req) is None  # nothing failed yet
    r1 = al.allocate(req)
    assert r1.ok
    assert not al.allocate(Request("a", "N", 2)).ok
    assert al.known_failure_shape(shape, va) and al.known_failure(req) is not None
    assert not al.known_failure_shape(BuddyAllocator._shape(Request("a", "N", 1)), va)  # another shape
    rb = al.allocate(Request("b", "N", 2))
    assert rb.ok and al.known_failure_shape(shape, va)  # b's cells only
    al.release(rb.handle)
    assert al.known_failure_shape(shape, va)
    al.release(r1.handle)
    assert not al.known_failure_shape(shape, va) and al.known_failure(req) is None  # a's cells changed
    r2 = al.allocate(req)
    assert r2.ok and not al.allocate(Request("a", "N", 2)).ok and al.known_failure_shape(shape, va)
    al.mark_bad("n1")
    assert not al.known_failure_shape(shape, va) and al.known_failure(req) is None
