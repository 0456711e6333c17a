"""One cluster model (schedopt.cluster): named nodes of unequal sizes, shared by Sia (configurations, placer,
checker), the simulator's placers and decision checks, and the live session. Uniform clusters are unchanged."""

from __future__ import annotations

import itertools

import pytest

import schedopt.sia as sia
from schedopt.cluster import Cluster, GpuType
from schedopt.errors import InputError
from schedopt.sia import Config, check_placement, generate_configs, place
from schedopt.sim import Decision, GpuRequest, PackingPlacer, SiaPlacer, Workload, WorkloadJob, simulate

MIXED = Cluster.from_nodes([("big1", "a100", 8), ("big2", "a100", 8), ("small", "a100", 6), ("t", "t4", 4)])


def test_sia_cluster_is_the_shared_model_and_defaults_compare_equal() -> None:
    assert sia.Cluster is Cluster and sia.GpuType is GpuType
    plain = Cluster((GpuType("a100", 8, 2),))
    spelled = Cluster((GpuType("a100", 8, 2, ("a100-0", "a100-1"), (8, 8)),))
    assert spelled == plain and hash(spelled) == hash(plain) and repr(spelled) == repr(plain)
    assert repr(GpuType("a100", 8, 2)) == "GpuType(name='a100', gpus_per_node=8, nodes=2)"


def test_named_nodes_of_unequal_sizes() -> None:
    a = MIXED["a100"]
    assert a.gpus_per_node == 8 and a.nodes == 3 and a.sizes == (8, 8, 6) and a.full_nodes == 2
    assert list(MIXED.total_gpus) == [22, 4] and MIXED.num_gpus == 26 and not MIXED.uniform
    assert MIXED.node_ids("a100") == ["big1", "big2", "small"]
    assert (MIXED.node_gpus("small"), MIXED.node_type("t"), MIXED.node_index("big2")) == (6, "t4", 1)
    with pytest.raises(InputError) as e:
        MIXED.node_gpus("nope")
    assert e.value.field == "node_id"
    with pytest.raises(InputError) as e:
        GpuType("a100", 4, 2, ("x", "y"), (4, 5))
    assert e.value.field == "gpu_type[a100].node_gpus[1]"
    with pytest.raises(InputError) as e:
        Cluster((GpuType("a", 4, 1, ("x",)), GpuType("b", 4, 1, ("x",))))
    assert e.value.field == "gpu_type[b].node_names"


def test_configurations_take_whole_full_size_nodes_only() -> None:
    """8+8+6 A100s: single-node 1, 2, 4, 8 and the 2-node 16 (two full-size nodes; no 3-node 24); 4 T4s: 1, 2, 4."""
    labels = [c.label for c in generate_configs(MIXED)]
    assert labels == ["1x1xa100", "1x2xa100", "1x4xa100", "1x8xa100", "2x16xa100", "1x1xt4", "1x2xt4", "1x4xt4"]


def _brute_force_fits(sizes: list[int], blocks: list[int]) -> bool:
    """Whether power-of-two blocks fit aligned into nodes of these sizes (each block within one node, aligned to
    its size, inside the node's GPUs): every assignment of blocks to nodes tried."""
    for assign in itertools.product(range(len(sizes)), repeat=len(blocks)):
        ok = True
        for n, size in enumerate(sizes):
            used: set[int] = set()
            for b in sorted((blocks[i] for i in range(len(blocks)) if assign[i] == n), reverse=True):
                start = next((s for s in range(0, size - b + 1, b) if not used & set(range(s, s + b))), None)
                if start is None:
                    ok = False
                    break
                used |= set(range(start, start + b))
            if not ok:
                break
        if ok:
            return True
    return False


@pytest.mark.parametrize("blocks", [[4, 2], [4, 4], [4, 2, 2], [2, 2, 2], [4, 4, 4, 4, 2], [8, 4, 2], [8, 8, 4, 2],
                                    [8, 8, 4, 4], [1, 1, 1, 1, 1, 1, 1], [4, 4, 4, 2, 2, 2, 2]])
def test_place_respects_each_nodes_own_gpus(blocks: list[int]) -> None:
    """Sia's placer on nodes of 8, 8 and 6 GPUs: it places every partial configuration inside its node's own GPUs
    (the checker, written against the cluster's node sizes, finds nothing) exactly when brute force finds room."""
    cl = Cluster.from_nodes([("x", "a100", 8), ("y", "a100", 8), ("small", "a100", 6)])
    alloc = {f"j{k}": Config(1, b, "a100") for k, b in enumerate(blocks)}
    pl = place(cl, alloc)
    fits = _brute_force_fits([8, 8, 6], blocks)
    assert (not pl.unplaced) == fits
    placed = {j: c for j, c in alloc.items() if j in pl.assignments}
    assert check_placement(cl, placed, pl) == []
    for slots in pl.assignments.values():
        for n, gs in slots:
            assert max(gs) < cl.node_gpus(n)


def test_multi_node_configurations_use_full_size_nodes() -> None:
    pl = place(MIXED, {"big": Config(2, 16, "a100"), "p": Config(1, 4, "a100")})
    assert sorted(n for n, _ in pl["big"]) == ["big1", "big2"] and pl["p"] == [("small", (0, 1, 2, 3))]
    kept = place(MIXED, {"big": Config(2, 16, "a100"), "p": Config(1, 4, "a100"), "q": Config(1, 2, "a100")}, pl)
    assert kept["big"] == pl["big"] and kept["p"] == pl["p"] and kept["q"] == [("small", (4, 5))]


def test_packing_and_sia_placers_fill_small_nodes_within_their_gpus() -> None:
    """Nodes of 4 and 3 T4s. Packing (most-free node first, spanning nodes): a 3-GPU request takes x's GPUs 0-2,
    a 4-GPU one x's last GPU and all 3 of y. Sia's placer: three 2-GPU blocks, two on x and one on y's GPUs 0-1
    (y has no GPU 3, so no second aligned block); a fourth waits."""
    cl = Cluster.from_nodes([("x", "t4", 4), ("y", "t4", 3)])
    pl = PackingPlacer().place(cl, {"a": GpuRequest(3, "t4"), "b": GpuRequest(4, "t4")}, None)
    assert pl.assignments["a"] == [("x", (0, 1, 2))] and pl.assignments["b"] == [("x", (3,)), ("y", (0, 1, 2))]
    want = {k: Config(1, 2, "t4") for k in "abcd"}
    pl2 = SiaPlacer().place(cl, want, None)
    assert sorted(s for v in pl2.assignments.values() for s in v) == [("x", (0, 1)), ("x", (2, 3)), ("y", (0, 1))]
    assert len(pl2.unplaced) == 1


class _Over:
    """Puts a 4-GPU job on the 3-GPU node (a node map past the node's own GPUs)."""

    name = "over"

    def decide(self, state: object) -> Decision:
        return Decision(nodes={"j": {"y": 4}})


def test_the_engine_checks_node_maps_against_each_nodes_gpus() -> None:
    cl = Cluster.from_nodes([("x", "t4", 4), ("y", "t4", 3)])
    wl = Workload("w", (WorkloadJob("j", 0.0, "cifar10", 4, 128),))
    with pytest.raises(InputError, match="node y holds 3 GPUs") as e:
        simulate(cl, wl, _Over())
    assert e.value.field == "policy[over].nodes"
