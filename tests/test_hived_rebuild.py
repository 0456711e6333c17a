"""HiveD's allocator rebuilt from allocations already bound (issue 38 item 2): BuddyAllocator.rebuild / adopt.

An allocator A places a random sequence of guaranteed (several priorities, pinned cells) and opportunistic requests
with releases; B is rebuilt from A's running jobs alone (request, GPUs and, as hivedscheduler records on each pod,
the level of the VC cell it runs in; oldest first). B then holds the same bound cells per VC, the same free lists
and consistent invariants, and the next requests succeed or wait for the same reasons, placed by the same rules
(where nodes tie under the rules, A's order comes from its history: there the two may part, as hivedscheduler's
after a restart)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedopt.errors import InputError
from schedopt.hived import BuddyAllocator, CellType, PhysicalCellSpec, PhysicalCluster, Request, VirtualCluster
from schedopt.hived.strategies import cluster_and_valid_vcs


def _bound(a: BuddyAllocator) -> list[tuple[Any, ...]]:
    """A's running jobs as the cluster knows them: request, pods (node name, GPU indices) and, per pod, the level
    of the VC's preassigned cell it runs in (what hivedscheduler writes on each pod), oldest first."""
    out: list[tuple[Any, ...]] = []
    for h in sorted(a.jobs):
        job = a.jobs[h]
        pods = []
        for pod in job.gpus:
            pairs = [a.cluster.gpus_of(int(a.cluster.leaf_cells[j]))[0] for j in pod]
            pods.append((pairs[0][0], [i for _, i in pairs]))
        levels = None
        if job.vcells:
            per = len(job.gpus[0])
            levels = [job.vcells[k * per].root.level for k in range(len(job.gpus))]
        out.append((job.request, pods, levels))
    return out


def _draw_request(data: Any, cluster: PhysicalCluster, vcs: list[VirtualCluster]) -> Request:
    v = data.draw(st.sampled_from(vcs))
    pin = data.draw(st.sampled_from([None, *v.pinned]))
    if pin is None:
        chain = data.draw(st.sampled_from(cluster.chain_names))
    else:
        chain = cluster.chain_names[int(cluster.chain_index[cluster.pinned[pin]])]
    ch = cluster.chains[chain]
    g = data.draw(st.integers(1, ch.gpus[ch.node_level]))
    prio = data.draw(st.sampled_from([-1, 0, 0, 3])) if pin is None else data.draw(st.sampled_from([0, 3]))
    return Request(v.name, chain, g, data.draw(st.integers(1, 2)), prio, pinned_cell=pin)


def _pods(al: BuddyAllocator, got: Any) -> list[tuple[str, tuple[int, ...]]]:
    return [(p.node, p.gpus) for p in got.pods]


@settings(max_examples=40)
@given(cv=cluster_and_valid_vcs(pinned=True), data=st.data())
def test_rebuilt_allocator_holds_the_same_state_and_decides_the_same(cv: Any, data: Any) -> None:
    cluster, vcs = cv
    a = BuddyAllocator(cluster, vcs)
    for _ in range(data.draw(st.integers(1, 12))):
        if a.jobs and data.draw(st.booleans()):
            a.release(data.draw(st.sampled_from(sorted(a.jobs))))
        else:
            a.allocate(_draw_request(data, cluster, vcs))
    b = BuddyAllocator.rebuild(cluster, vcs, _bound(a))
    b.assert_invariants()
    assert {k: sorted(v) for k, v in b.bound_cells().items()} == {k: sorted(v) for k, v in a.bound_cells().items()}
    assert b.free_lists() == a.free_lists()
    handle = dict(zip(sorted(a.jobs), sorted(b.jobs)))  # A's handle -> B's
    for _ in range(data.draw(st.integers(1, 6))):
        if a.jobs and data.draw(st.booleans()):
            h = data.draw(st.sampled_from(sorted(a.jobs)))
            a.release(h)
            b.release(handle.pop(h))
            continue
        req = _draw_request(data, cluster, vcs)
        ga, gb = a.allocate(req), b.allocate(req)
        assert (ga.ok, ga.reason) == (gb.ok, gb.reason)
        assert [len(p.gpus) for p in ga.pods] == [len(p.gpus) for p in gb.pods]
        b.assert_invariants()
        if _pods(a, ga) != _pods(b, gb) or sorted(handle[h] for h in ga.preempted) != sorted(gb.preempted):
            break  # nodes that tie under the rules, ordered by A's history: the two runs part here
        for h in ga.preempted:
            handle.pop(h)
        if ga.ok:
            assert ga.handle is not None and gb.handle is not None
            handle[ga.handle] = gb.handle


def _two_nodes() -> PhysicalCluster:
    return PhysicalCluster([CellType("N", "G", 4, is_node_level=True)],
                           [PhysicalCellSpec("N", f"n{i}") for i in range(2)])


def test_adopt_binds_the_vc_cell_around_the_running_gpus() -> None:
    """VC a has one node of quota: a job found running on n1's GPUs 2-3 binds a's node cell to n1 (not n0, where
    a fresh allocation would go), and a's next 2-GPU job goes to n1's GPUs 0-1; a third is beyond a's quota."""
    vcs = [VirtualCluster("a", {("N", 2): 1}), VirtualCluster("b", {("N", 2): 1})]
    al = BuddyAllocator.rebuild(_two_nodes(), vcs, [(Request("a", "N", 2), [("n1", [2, 3])])])
    assert al.bound_cells()["a"] == [("N", 2, "n1")]
    nxt = al.allocate(Request("a", "N", 2))
    assert nxt.ok and _pods(al, nxt) == [("n1", (0, 1))]
    assert not al.allocate(Request("a", "N", 2)).ok
    assert al.allocate(Request("b", "N", 4)).ok  # b's quota is the other node
    al.assert_invariants()


def test_adopt_refuses_what_the_state_cannot_hold() -> None:
    vcs = [VirtualCluster("a", {("N", 2): 1})]
    al = BuddyAllocator(_two_nodes(), vcs)
    assert al.adopt(Request("a", "N", 2), [("n0", [0, 1])]).ok
    busy = al.adopt(Request("a", "N", 2), [("n0", [1, 2])])
    assert not busy.ok and "not free" in busy.message
    other = al.adopt(Request("a", "N", 2), [("n1", [0, 1])])  # a's only node cell is bound to n0
    assert not other.ok and "quota" in other.message
    assert al.adopt(Request("a", "N", 2, priority=-1), [("n1", [0, 1])]).ok  # opportunistic: any idle GPUs
    with pytest.raises(InputError) as e:
        al.adopt(Request("a", "N", 2), [("n9", [0, 1])])
    assert e.value.field == "pods[0]"
    al.assert_invariants()
