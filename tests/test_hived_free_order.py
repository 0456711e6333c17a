"""HiveD's free lists in hivedscheduler's order after a split (issue 43 item 1).

hivedscheduler's ``CellList.remove`` moves the list's last cell into the removed cell's slot, and
``removeCellFromFreeList`` appends a split parent's children before removing the one it takes: on a rack of nodes
n0..n3, binding n0 leaves ``[n3 n1 n2]``, so the next node binding takes n3 (the first of the equally idle nodes),
not n1. Derived by hand from ``pkg/algorithm/types.go`` (``CellList.remove``), ``hived_algorithm.go``
(``removeCellFromFreeList``, ``addCellToFreeList``) and ``cell_allocation.go`` (``buddyAlloc``,
``getUsablePhysicalCells``: a stable sort by opportunistic GPUs, so list order breaks ties).
"""

from __future__ import annotations

from schedopt.hived import BuddyAllocator, Request, load_hived_config
from schedopt.sim.hived import HivedCluster, HivedJob, NodeFailure, hived_trace, simulate_hived

# one rack of four 2-GPU nodes; tenants a and b hold one node each, c two single GPUs
CONFIG = {
    "physicalCluster": {
        "cellTypes": {
            "NODE": {"childCellType": "GPU", "childCellNumber": 2, "isNodeLevel": True},
            "RACK": {"childCellType": "NODE", "childCellNumber": 4},
        },
        "physicalCells": [{"cellType": "RACK", "cellAddress": "rack",
                           "cellChildren": [{"cellAddress": f"n{i}"} for i in range(4)]}],
    },
    "virtualClusters": {
        "a": {"virtualCells": [{"cellType": "RACK.NODE", "cellNumber": 1}]},
        "b": {"virtualCells": [{"cellType": "RACK.NODE", "cellNumber": 1}]},
        "c": {"virtualCells": [{"cellType": "RACK.NODE.GPU", "cellNumber": 2}]},
    },
}


def _cluster() -> HivedCluster:
    cl, vcs = load_hived_config(CONFIG)
    return HivedCluster("one-rack", cl, tuple(vcs))


def _nodes(al: BuddyAllocator) -> list[str]:
    return [a.rsplit("/", 1)[-1] for a in al.free_lists(list_order=True)[("RACK", 2)]]


def test_free_lists_follow_hivedschedulers_removal_order() -> None:
    hc = _cluster()
    al = BuddyAllocator(hc.cluster, list(hc.vcs))
    assert al.free_lists(list_order=True)[("RACK", 3)] == ["rack"]
    a = al.allocate(Request("a", "RACK", 2, 1, 0))
    assert a.ok and a.pods[0].node == "n0"
    # the rack splits: [n0 n1 n2 n3] appended, n0 removed, n3 moved into its slot
    assert _nodes(al) == ["n3", "n1", "n2"] and al.free_lists()[("RACK", 2)] == ["rack/n1", "rack/n2", "rack/n3"]
    b = al.allocate(Request("b", "RACK", 2, 1, 0))
    assert b.ok and b.pods[0].node == "n3"  # the first of the equally idle nodes in list order
    assert _nodes(al) == ["n2", "n1"]
    # c's GPU splits the first free node: n2's GPUs [g0 g1] appended, g0 taken, [g1] left; n2 leaves its list
    c = al.allocate(Request("c", "RACK", 1, 1, 0))
    assert c.ok and c.pods[0].node == "n2" and _nodes(al) == ["n1"]
    # releases: a's n0 is appended; b's n3 after it; c's GPU merges n2 back (its buddy leaves the GPU list) and n2
    # goes to the end; then n1, n0, n3, n2 are all free but merge only when the last buddy comes back
    al.release(a.handle)
    assert _nodes(al) == ["n1", "n0"]
    al.release(c.handle)
    assert _nodes(al) == ["n1", "n0", "n2"]
    al.release(b.handle)  # n3 comes back: all four free, they merge into the rack (removed in child order)
    assert _nodes(al) == [] and al.free_lists(list_order=True)[("RACK", 3)] == ["rack"]


def test_an_undone_binding_leaves_the_lists_as_they_were() -> None:
    """hivedscheduler plans a binding on a copy of its free lists, so a request that cannot be bound changes no
    order; the allocator undoes a partial binding by restoring the free space it saved (a release would merge the
    split rack back at the end of its list)."""
    from schedopt.hived.invariants import check_allocator

    hc = _cluster()
    al = BuddyAllocator(hc.cluster, list(hc.vcs))
    a = al.allocate(Request("a", "RACK", 2, 1, 0))
    al.allocate(Request("c", "RACK", 1, 1, 0))  # n3 split for c's GPU: nodes [n2 n1]
    al.release(a.handle)  # nodes [n2 n1 n0]
    ph = al.phys
    before, flags = al.free_lists(list_order=True), (list(ph.is_free), list(ph.free_children))
    assert _nodes(al) == ["n2", "n1", "n0"]
    saved = ph.save_free()
    assert [ph.take(0, k) >= 0 for k in (2, 1, 1, 2)] == [True] * 4  # n2, n3's free GPU, a GPU of n1 (split), n0
    assert _nodes(al) == []
    ph.restore_free(saved)
    assert al.free_lists(list_order=True) == before and (list(ph.is_free), list(ph.free_children)) == flags
    assert check_allocator(al) == []


def test_split_then_fail_binds_n3_and_the_failure_kills_nothing() -> None:
    """The issue's scenario in closed loop: a splits the rack (n0), b binds a node, then n1 fails. hivedscheduler's
    order binds b to n3, so the failure hits an idle node: no job is killed (with the order kept, b was on n1 and
    was killed and restarted)."""
    jobs = [HivedJob("A1", "a", 0.0, 100.0, 2, 1, "", 0), HivedJob("B1", "b", 1.0, 100.0, 2, 1, "", 0)]
    tr = hived_trace(_cluster(), jobs, [NodeFailure("n1", 10.0, 50.0)], name="split-then-fail")
    for params in ({}, {"buddy": "hived", "packing": "hived"}):
        res = simulate_hived(tr, "hived", **params)
        by = {j.id: j for j in res.jobs}
        m = res.meta.details["hived"]
        assert m["failure_kills"] == 0 and m["failure_lost_gpu_seconds"] == 0.0, params
        assert [(by[i].start, by[i].finish, by[i].restarts) for i in ("A1", "B1")] == [(0, 100, 0), (1, 101, 0)]


def test_after_a_failure_both_buddy_modes_take_the_first_healthy_node_in_list_order() -> None:
    """a binds n0 ([n3 n1 n2]), then n1 fails. hivedscheduler's lists ignore health, and its buddy allocation skips
    the failed node (``getUsablePhysicalCells``): b binds n3. ``buddy="hived"`` takes from those lists; the
    healthy lists drop n1 (n2 takes its slot) and also give n3 (before issue 43 both modes took n2)."""
    for buddy in ("healthy_first", "hived"):
        hc = _cluster()
        al = BuddyAllocator(hc.cluster, list(hc.vcs), buddy=buddy)
        al.allocate(Request("a", "RACK", 2, 1, 0))
        al.mark_bad("n1")
        blind = al.phys.blind.lists[(0, 2)]
        assert [hc.cluster.address[c] for c in blind] == ["rack/n3", "rack/n1", "rack/n2"], buddy
        assert _nodes(al) == ["n3", "n2"], buddy
        b = al.allocate(Request("b", "RACK", 2, 1, 0))
        assert b.ok and b.pods[0].node == "n3", buddy
        assert [hc.cluster.address[c] for c in blind] == ["rack/n2", "rack/n1"] and _nodes(al) == ["n2"], buddy
