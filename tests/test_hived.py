"""HiveD: cells, the two validity checks (counting vs exact model), max extra quota, configs, instances."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import schedopt
from schedopt import instances
from schedopt.errors import InfeasibleError, InputError
from schedopt.hived import (
    CellType,
    PhysicalCellSpec,
    PhysicalCluster,
    VirtualCluster,
    build_exact_model,
    check_vc_assignment,
    dump_hived_config,
    generate_cluster,
    generate_vcs,
    load_hived_config,
    max_extra_quota,
    verify_mapping,
)
from schedopt.hived.check import counting_table
from schedopt.hived.io import (
    PROBLEM_IO,
    HivedAnswer,
    HivedInstance,
    Release,
    explain_instance,
    from_data,
    solve_instance,
    to_data,
)
from schedopt.hived.strategies import cluster_and_invalid_vcs, cluster_and_pinned_vcs, cluster_and_valid_vcs
from schedopt.hived.vc import demand_table
from schedopt.problem import Formulation, SolveOptions
from schedopt.results import TerminationReason
from schedopt.testing import backends_for

EXAMPLE = Path(schedopt.__file__).parent / "hived" / "examples" / "example.yaml"
ROOT = Path(__file__).resolve().parents[1]


def two_level(tops: int = 2, width: int = 2, pinned: dict[int, str] | None = None) -> PhysicalCluster:
    pinned = pinned or {}
    return PhysicalCluster([CellType("N", "G", width, is_node_level=True)],
                           [PhysicalCellSpec("N", f"n{i}", pinned.get(i)) for i in range(tops)])


def rack_cluster() -> PhysicalCluster:
    """1 rack (level 4) of nodes a, b (level 3), 2 sockets each (level 2), 2 GPUs per socket (level 1)."""
    types = [CellType("S", "G", 2), CellType("N", "S", 2, is_node_level=True), CellType("R", "N", 2)]
    return PhysicalCluster(types, [PhysicalCellSpec("R", "r0", children=[PhysicalCellSpec(address="a"),
                                                                          PhysicalCellSpec(address="b")])])


def both(cl, vcs, **kw):
    return check_vc_assignment(cl, vcs, "counting", **kw), check_vc_assignment(cl, vcs, "exact", **kw)


# ------------------------------------------------------------------------------------------------ cells
def test_chain_structure_and_arrays() -> None:
    cl = rack_cluster()
    ch = cl.chains["R"]
    assert ch.types == ("", "G", "S", "N", "R") and ch.gpus == (0, 1, 2, 4, 8) and ch.node_level == 3
    assert cl.n_cells == 15 and cl.num_gpus == 8
    assert [cl.num_cells("R", k) for k in (1, 2, 3, 4)] == [8, 4, 2, 1]
    # preorder: every subtree is a contiguous id range; the graph is a forest with the same edges
    g = cl.graph
    assert g.number_of_nodes() == 15 and g.number_of_edges() == 14
    for c in range(cl.n_cells):
        import networkx as nx

        assert set(nx.descendants(g, c)) | {c} == set(range(c, int(cl.end[c])))
    assert cl.gpus_of(cl.by_address["r0/b"]) == [("b", i) for i in range(4)]
    assert cl.gpus_of(cl.by_address["r0/b/1/3"]) == [("b", 3)]  # socket 1 of node b, GPU index 3 (node-relative)


def test_address_inference_follows_hivedscheduler() -> None:
    """Top cells default to their index; above the node level children get parent_index * n + i; below it the
    index restarts at every node (GPU index within the node). Nodes whose address is inferred are named by their full address."""
    types = [CellType("N", "G", 2, is_node_level=True), CellType("R", "N", 2)]
    cl = PhysicalCluster(types, [PhysicalCellSpec("R"), PhysicalCellSpec("R")])
    assert cl.address[:7] == ["0", "0/0", "0/0/0", "0/0/1", "0/1", "0/1/0", "0/1/1"]
    assert "1/3/1" in cl.by_address and "1/2" in cl.by_address
    assert sorted(cl.node_names) == ["0/0", "0/1", "1/2", "1/3"]


def test_generated_topology_2048() -> None:
    cl = generate_cluster(2048)
    ch = cl.chains["V100-RACK"]
    assert cl.num_gpus == 2048 and ch.levels == 5 and ch.gpus == (0, 1, 2, 4, 8, 128)
    assert len(cl.node_names) == 256
    het = generate_cluster(4096, gpu_types=("V100", "A100"))
    assert het.num_gpus == 4096 and het.chain_names == ["V100-RACK", "A100-RACK"]


def test_cluster_input_errors() -> None:
    with pytest.raises(InputError) as e:
        PhysicalCluster([CellType("N", "G", 2)], [PhysicalCellSpec("N", "n0")])
    assert "node-level" in e.value.message
    with pytest.raises(InputError) as e:
        PhysicalCluster([CellType("N", "G", 2, True)], [PhysicalCellSpec("N", "n0", children=[PhysicalCellSpec()])])
    assert e.value.field == "physicalCells[0].cellChildren"
    with pytest.raises(InputError) as e:
        PhysicalCluster([CellType("N", "G", 2, True)], [PhysicalCellSpec("N", "n0"), PhysicalCellSpec("N", "n0")])
    assert "appears twice" in e.value.message or "same full address" in e.value.message
    with pytest.raises(InputError) as e:
        PhysicalCluster([CellType("N", "G", 2, True)], [PhysicalCellSpec("X", "n0")])
    assert e.value.field == "physicalCells[0].cellType"


# ------------------------------------------------------------------------------------------------ hand-drawn verdicts
@pytest.mark.parametrize(
    ("cells_b", "valid", "level"),
    [
        # 2 nodes of 2 GPUs; VC a has one node. left_2 = 2 - 1 = 1, so 2 GPUs are left at level 1
        ({("N", 1): 2}, True, None),
        ({("N", 1): 3}, False, 1),  # left_1 = 1*2 - 3 = -1
        ({("N", 2): 2}, False, 2),  # left_2 = 2 - 3 = -1
    ],
)
def test_two_level_verdicts(cells_b, valid, level) -> None:
    cl = two_level()
    vcs = [VirtualCluster("a", {("N", 2): 1}), VirtualCluster("b", cells_b)]
    for rep in both(cl, vcs):
        assert rep.valid is valid
        assert rep.level == level
        assert rep.vc == (None if valid else "b") and rep.chain == (None if valid else "N")


def test_rack_verdicts_and_counting_table() -> None:
    """x: 1 node, y: 1 socket, z: 2 GPUs. left_4 = 1, left_3 = 2-1 = 1, left_2 = 2-1 = 1, left_1 = 2-2 = 0."""
    cl = rack_cluster()
    vcs = [VirtualCluster("x", {"R.N": 1}), VirtualCluster("y", {"R.N.S": 1}), VirtualCluster("z", {"R.N.S.G": 2})]
    c, e = both(cl, vcs)
    assert c.valid and e.valid and c.left["R"][1:] == [0, 1, 1, 1]
    # the exact mapping passes the model-free checker
    mapping = {v: [cl.by_address[a] for a in cells] for v, cells in e.mapping.items()}
    assert verify_mapping(cl, vcs, mapping) == []
    # one more GPU for z: left_1 = -1
    vcs[2] = VirtualCluster("z", {"R.N.S.G": 3})
    c, e = both(cl, vcs)
    assert (c.valid, c.level, c.vc, c.cell_type) == (False, 1, "z", "G")
    assert (e.valid, e.level, e.vc, e.cell_type) == (False, 1, "z", "G")


def test_counting_never_valid_when_pinned_cells_straddle_every_top_cell() -> None:
    """Regression (issue 17): 2 nodes of 2 GPUs, one GPU of each node pinned to VC a, VC b wants a whole node.
    The old counting rule (pinned cells only counted) said valid: left_2 = 2 - 1 = 1, left_1 = 2 - 2 = 0. Every node
    holds a pinned GPU, so no node is left: both checks now say invalid, at level 1 (the pinned GPUs are level-1
    demand), VC b, cause pinned; the counting table shows left_2 = 0 - 1 = -1."""
    types = [CellType("N", "G", 2, is_node_level=True)]
    specs = [PhysicalCellSpec("N", f"n{i}", children=[PhysicalCellSpec(pinned_id=f"P{i}"), PhysicalCellSpec()]) for i in range(2)]
    cl = PhysicalCluster(types, specs)
    vcs = [VirtualCluster("a", {}, pinned=["P0", "P1"]), VirtualCluster("b", {("N", 2): 1})]
    c, e = both(cl, vcs)
    for rep in (c, e):
        assert (rep.valid, rep.level, rep.vc, rep.cause) == (False, 1, "b", "pinned")
        assert rep.termination.reason is TerminationReason.INFEASIBLE
    assert c.left["N"][2] == -1
    assert check_vc_assignment(cl, vcs[:1], "counting").valid and check_vc_assignment(cl, vcs[:1], "exact").valid
    # b asking for the two free GPUs instead fits: left_1 = 2 free GPUs - 2
    ok = [vcs[0], VirtualCluster("b", {("N", 1): 2})]
    assert check_vc_assignment(cl, ok, "counting").valid and check_vc_assignment(cl, ok, "exact").valid


def test_counting_never_valid_on_nested_pinned_cells() -> None:
    """Regression (issue 17): node n0 pinned to VC a and its GPU 0 pinned to VC b (nested): no mapping exists (a
    cell cannot be used whole by a and in part by b). The old counting rule said valid; both now say invalid."""
    types = [CellType("N", "G", 2, is_node_level=True)]
    specs = [PhysicalCellSpec("N", "n0", "PN", children=[PhysicalCellSpec(pinned_id="PG"), PhysicalCellSpec()]),
             PhysicalCellSpec("N", "n1")]
    cl = PhysicalCluster(types, specs)
    vcs = [VirtualCluster("a", {}, pinned=["PN"]), VirtualCluster("b", {}, pinned=["PG"])]
    c, e = both(cl, vcs)
    assert (c.valid, c.vc, c.cause) == (False, "b", "pinned")
    assert (e.valid, e.vc, e.cause) == (False, "b", "pinned")
    assert c.level == e.level == 1


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cv=cluster_and_pinned_vcs(), data=st.data())
def test_counting_never_wrong_on_pinned_cells(cv, data) -> None:
    """Random clusters with pinned cells (disjoint or nested, owned or not) and random quotas: the counting rule
    gives the exact model's verdict, chain, level and VC (never a wrong "valid")."""
    cl, vcs = cv
    bad = _random_bad(data, cl)
    for b in ([], bad):
        c, e = both(cl, vcs, bad_nodes=b)
        assert e.valid is not None
        assert c.valid == e.valid, (c.message, e.message)
        assert (c.chain, c.level, c.vc) == (e.chain, e.level, e.vc)


def test_bad_hardware_verdicts() -> None:
    """2 nodes, VC a has both: n1 bad -> invalid at level 2 (bad hardware); a VC of 1 node and 2 GPUs: with n1 bad
    only n0 is left: left_2 = 1 - 1 = 0 -> GPUs left 0 -> invalid at level 1."""
    cl = two_level()
    for rep in both(cl, [VirtualCluster("a", {("N", 2): 2})], bad_nodes=["n1"]):
        assert (rep.valid, rep.level, rep.vc, rep.cause) == (False, 2, "a", "bad_hardware")
    vcs = [VirtualCluster("a", {("N", 2): 1, ("N", 1): 2})]
    for rep in both(cl, vcs, bad_nodes=["n1"]):
        assert (rep.valid, rep.level) == (False, 1)
    for rep in both(cl, vcs):
        assert rep.valid


def test_bad_node_inside_rack_counting_pieces() -> None:
    """Rack of a, b with b bad: the rack is unusable, a stays whole: h_4 = 0, h_3 = 1 -> a node fits, a rack not."""
    cl = rack_cluster()
    bad = cl.bad_cell_mask(["b"])
    total = np.zeros(5, dtype=np.int64)
    total[3] = 1
    assert counting_table(cl, total, 0, bad)[1:] == [0, 0, 0, 0]
    c, e = both(cl, [VirtualCluster("x", {"R.N": 1})], bad_nodes=["b"])
    assert c.valid and e.valid
    c, e = both(cl, [VirtualCluster("x", {"R": 1})], bad_nodes=["b"])
    assert not c.valid and not e.valid and c.level == e.level == 4


def test_max_extra_quota_hand_checked() -> None:
    """Rack of 2 nodes (8 GPUs), VC x holds one node: the other node gives 2 sockets / 4 GPUs / 1 node / 0 racks.
    With node b bad as well, nothing is left."""
    cl = rack_cluster()
    vcs = [VirtualCluster("x", {"R.N": 1})]
    assert [max_extra_quota(cl, vcs, "R", k) for k in (1, 2, 3, 4)] == [4, 2, 1, 0]
    assert max_extra_quota(cl, vcs, "R", "S", bad_nodes=["b"]) == 0
    with pytest.raises(InfeasibleError):
        max_extra_quota(cl, [VirtualCluster("x", {"R": 2})], "R", 1)


# ------------------------------------------------------------------------------------------------ counting = exact
def _random_bad(data, cl):
    names = sorted(cl.node_names)
    return data.draw(st.lists(st.sampled_from(names), max_size=2, unique=True))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cv=cluster_and_valid_vcs(), data=st.data())
def test_counting_equals_exact_on_random_instances(cv, data) -> None:
    cl, vcs = cv
    bad = _random_bad(data, cl)
    for b in ([], bad):
        c, e = both(cl, vcs, bad_nodes=b)
        assert c.valid == e.valid
        assert (c.chain, c.level, c.vc) == (e.chain, e.level, e.vc)
        if not b:
            assert c.valid  # built valid
        if e.valid:
            mp = {v: [cl.by_address[a] for a in cells] for v, cells in e.mapping.items()}
            assert verify_mapping(cl, vcs, mp, bad_nodes=b) == []


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cv=cluster_and_invalid_vcs())
def test_invalid_assignments_detected_by_both(cv) -> None:
    cl, vcs = cv
    c, e = both(cl, vcs)
    assert c.valid is False and e.valid is False
    assert (c.chain, c.level, c.vc) == (e.chain, e.level, e.vc)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cv=cluster_and_valid_vcs(max_chains=1), data=st.data())
def test_max_extra_quota_matches_counting_formula(cv, data) -> None:
    """Counting: x extra level-k cells fit iff left_j - x * span(k, j) >= 0 for all j <= k."""
    cl, vcs = cv
    chain = cl.chain_names[0]
    ch = cl.chains[chain]
    k = data.draw(st.integers(1, ch.levels))
    left = counting_table(cl, demand_table(cl, vcs).chain_total(0), 0)
    expect = min(left[j] // ch.span(k, j) for j in range(1, k + 1))
    assert max_extra_quota(cl, vcs, chain, k) == expect


def test_backends_agree_on_the_exact_model() -> None:
    """Every installed backend (at least highs and scipy) finds the same max extra quota and the same verdicts."""
    cl = generate_cluster(64, nodes_per_rack=4)
    vcs = generate_vcs(cl, 3, seed=1, fill=0.8)
    em = build_exact_model(cl, vcs, extra=("V100-RACK", 2))
    names = backends_for(em.model)
    assert {"highs", "scipy"} <= set(names)
    c = counting_table(cl, demand_table(cl, vcs).chain_total(0), 0)
    expect = min(c[1] // 2, c[2])
    for b in names:
        assert max_extra_quota(cl, vcs, "V100-RACK", 2, backend=b) == expect
        assert check_vc_assignment(cl, vcs, "exact", backend=b).valid
        bad = [*vcs, VirtualCluster("more", {("V100-RACK", 3): c[3] + 1})]
        rep = check_vc_assignment(cl, bad, "exact", backend=b)
        assert (rep.valid, rep.level, rep.vc) == (False, 3, "more")


def test_model_names_match_formulation_card() -> None:
    text = (ROOT / "formulations" / "hived.md").read_text()
    sec = text.split("## Names", 1)[1].split("\n## ", 1)[0]
    names = set(re.findall(r"^- `([A-Za-z_]+)`", sec, flags=re.M))
    types = [CellType("N", "G", 2, is_node_level=True)]
    cl = PhysicalCluster(types, [PhysicalCellSpec("N", "n0", "P"), PhysicalCellSpec("N", "n1")])
    em = build_exact_model(cl, [VirtualCluster("a", {("N", 1): 1}, pinned=["P"])], bad_nodes=["n1"], extra=("N", 1))
    model_names = set(em.model.blocks) | set(em.model.families)
    assert model_names == {"assign", "extra", "demand", "disjoint_path", "pinned", "bad_hardware", "new_vc_demand"}
    assert model_names <= names
    # the other names are the answer fields: each one readable on a CheckReport or a HivedAnswer
    inst = HivedInstance(cl, [VirtualCluster("a", {("N", 1): 1})])
    ans = PROBLEM_IO.solve(inst, SolveOptions())
    fields = names - model_names
    assert fields == {"valid", "chain", "level", "cell_type", "vc", "cause", "left", "mapping", "allocations"}
    assert all(hasattr(ans.check, f) or hasattr(ans, f) for f in fields)


# ------------------------------------------------------------------------------------------------ configs
def test_load_example_config() -> None:
    cl, vcs = load_hived_config(EXAMPLE)
    assert cl.num_gpus == 72 and cl.chain_names == ["V100-RACK", "K80-NODE"]
    assert cl.gpus_of(cl.by_address["k80-1"]) == [("k80-1", g) for g in (4, 5, 6, 7)]
    assert cl.address[cl.pinned["TEAM-X-NODE"]] == "rack-a/v100-a1"
    assert [v.name for v in vcs] == ["team-x", "team-y", "team-z"]
    c, e = both(cl, vcs)
    assert c.valid and e.valid
    # the pinned node a1 blocks rack-a: racks 1 (rack-b) - 1 = 0; nodes a0, a2, a3 + 0 * 4 - 2 = 1;
    # sockets 1 * 2 - 1 = 1; switches 1 * 2 = 2; GPUs 2 * 2 - 3 = 1
    assert c.left["V100-RACK"][1:] == [1, 2, 1, 1, 0]


def test_config_round_trip(tmp_path) -> None:
    cl, vcs = load_hived_config(EXAMPLE)
    out = tmp_path / "dump.yaml"
    doc = dump_hived_config(cl, vcs, out)
    cl2, vcs2 = load_hived_config(out)
    assert cl2.address == cl.address and cl2.pinned == cl.pinned and cl2.cell_types == cl.cell_types
    assert vcs2 == vcs and dump_hived_config(cl2, vcs2) == doc
    assert np.array_equal(demand_table(cl, vcs).total, demand_table(cl2, vcs2).total)
    g = generate_cluster(512)
    vg = generate_vcs(g, 3, seed=2)
    g2, vg2 = load_hived_config(dump_hived_config(g, vg))
    assert g2.address == g.address and np.array_equal(demand_table(g, vg).total, demand_table(g2, vg2).total)


def test_openpai_wrapper_and_design_style_config() -> None:
    """The services-configuration wrapper (YAML text under hivedscheduler.config) and fully qualified VC types."""
    text = """
physicalCluster:
  skuTypes: {DT: {gpu: 1}}
  cellTypes:
    DT-NODE: {childCellType: DT, childCellNumber: 4, isNodeLevel: true}
    DT-NODE-POOL: {childCellType: DT-NODE, childCellNumber: 3}
  physicalCells:
  - cellType: DT-NODE-POOL
    cellChildren: [{cellAddress: worker1}, {cellAddress: worker2}, {cellAddress: worker3}]
virtualClusters:
  default:
    virtualCells: [{cellType: DT-NODE-POOL.DT-NODE, cellNumber: 3}]
"""
    cl, vcs = load_hived_config({"hivedscheduler": {"config": text}})
    assert sorted(cl.node_names) == ["worker1", "worker2", "worker3"]
    assert demand_table(cl, vcs).total[0, 0, 2] == 3
    assert check_vc_assignment(cl, vcs).valid


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda d: d["physicalCluster"]["cellTypes"]["V100-NODE"].pop("childCellNumber"),
         "physicalCluster.cellTypes.V100-NODE.childCellNumber"),
        (lambda d: d["physicalCluster"]["cellTypes"]["V100-NODE"].update(isNodeLevel="yes"),
         "physicalCluster.cellTypes.V100-NODE.isNodeLevel"),
        (lambda d: d["physicalCluster"]["physicalCells"][0].update(cellType="NOPE"),
         "physicalCluster.physicalCells[0].cellType"),
        (lambda d: d["physicalCluster"]["physicalCells"][0]["cellChildren"].pop(),
         "physicalCluster.physicalCells[0].cellChildren"),
        (lambda d: d["virtualClusters"]["team-y"]["virtualCells"][1].update(cellType="V100-RACK.K80"),
         "virtualClusters.team-y.virtualCells[1].cellType"),
        (lambda d: d["virtualClusters"]["team-y"]["virtualCells"][0].update(cellNumber=-1),
         "virtualClusters.team-y.virtualCells[0].cellNumber"),
        (lambda d: d["virtualClusters"]["team-y"].update(pinnedCells=[{"pinnedCellId": "TEAM-X-NODE"}]),
         "virtualClusters.team-y.pinnedCells[0].pinnedCellId"),
        (lambda d: d["virtualClusters"]["team-z"].update(quota=3), "virtualClusters.team-z.quota"),
        (lambda d: d.pop("physicalCluster"), "physicalCluster"),
    ],
)
def test_config_errors_name_the_field(mutate, field) -> None:
    import yaml

    doc = yaml.safe_load(EXAMPLE.read_text())
    mutate(doc)
    with pytest.raises(InputError) as e:
        load_hived_config(doc)
    assert e.value.field == field


def test_config_never_checks_quota() -> None:
    import yaml

    doc = yaml.safe_load(EXAMPLE.read_text())
    doc["virtualClusters"]["team-z"]["virtualCells"][0]["cellNumber"] = 1000
    cl, vcs = load_hived_config(doc)
    assert not check_vc_assignment(cl, vcs).valid


# ------------------------------------------------------------------------------------------------ instances
def _example_instance() -> HivedInstance:
    cl, vcs = load_hived_config(EXAMPLE)
    from schedopt.hived import Request

    ops = [Request("team-y", "V100", 8, 2, name="j1"), Request("team-z", "K80", 1, 2, "opportunistic", name="j2"),
           Release("j1"), Request("team-x", "V100-RACK", 8, 3, name="j3")]
    return HivedInstance(cl, vcs, ops, [])


def test_instance_round_trip_and_solve() -> None:
    inst = _example_instance()
    data = to_data(inst)
    back = from_data(data)
    assert to_data(back) == data
    text = instances.dumps(inst)
    assert to_data(instances.loads(text)) == data
    ans = PROBLEM_IO.solve(inst, SolveOptions())
    assert isinstance(ans, HivedAnswer) and ans.method == "exact" and ans.valid is True
    assert ans.termination.reason is TerminationReason.OPTIMAL and ans.has_solution
    # j3 asks team-x for 3 nodes: it has 2 plus its pinned node, which only requests naming it may use (as in
    # hivedscheduler), so j3 waits
    assert [a.ok for a in ans.allocations] == [True, True, False] and ans.allocations[2].reason == "vc_quota"
    assert PROBLEM_IO.check(inst, ans) == []
    rows = ans.rows()
    assert sum(1 for r in rows if "cell" in r) == sum(len(v) for v in ans.check.mapping.values())
    assert ans.to_dict()["termination"]["reason"] == "optimal"
    counting = PROBLEM_IO.solve(inst, SolveOptions(method="counting"))
    assert counting.valid is True and counting.method == "counting"
    assert PROBLEM_IO.methods[0] == "exact" and PROBLEM_IO.size(inst) == (72, 3)
    form = PROBLEM_IO.build(inst)
    assert isinstance(form, Formulation) and form.inverse.chains == ("V100-RACK", "K80-NODE") and not form.model.meta
    dec = PROBLEM_IO.decode(inst, form, schedopt.solve(form.model, "highs"))
    assert dec.valid is True and PROBLEM_IO.check(inst, dec) == []
    with pytest.warns(DeprecationWarning):
        (rep, allocs), rows, summary = solve_instance(inst)
    assert summary["valid"] is True and rep.valid and [a.ok for a in allocs] == [True, True, False]
    assert "chain V100-RACK" in explain_instance(inst)


def test_checker_catches_a_doctored_answer() -> None:
    """The model-free checker flags a mapping with a cell given twice and a replay with a shared GPU."""
    inst = _example_instance()
    ans = PROBLEM_IO.solve(inst, SolveOptions())
    vc, cells = next((v, c) for v, c in ans.check.mapping.items() if c)
    ans.check.mapping[vc] = [*cells, cells[0]]
    a0, a1 = ans.allocations[0], ans.allocations[1]
    a1.pods[0] = type(a1.pods[0])(a0.pods[0].node, a0.pods[0].gpus[:1], a0.pods[0].cell, 1)
    paths = {v.path for v in PROBLEM_IO.check(inst, ans)}
    assert any(p.startswith("cells[") for p in paths) and "ops[1]" in paths


def test_pinned_and_lazy_ops_round_trip() -> None:
    from schedopt.hived import Request

    inst = _example_instance()
    inst.ops.append(Request("team-x", "V100-RACK", 8, 1, 7, "j4", pinned_cell="TEAM-X-NODE", lazy_preemption=True))
    data = to_data(inst)
    assert data["ops"][-1]["pinned_cell"] == "TEAM-X-NODE" and data["ops"][-1]["lazy_preemption"] is True
    assert to_data(from_data(data)) == data
    ans = PROBLEM_IO.solve(from_data(data), SolveOptions(method="counting"))
    assert ans.allocations[-1].ok and ans.allocations[-1].pods[0].node == "v100-a1"
    data["ops"][-1]["pinned_cell"] = "NOPE"
    with pytest.raises(InputError) as e:
        from_data(data)
    assert e.value.field == "data.ops[4].pinned_cell"
    data["ops"][-1]["pinned_cell"] = "TEAM-X-NODE"
    data["ops"][-1]["priority"] = 2000
    with pytest.raises(InputError) as e:
        from_data(data)
    assert e.value.field == "data.ops[4].priority"


def test_instance_errors_name_the_path() -> None:
    data = to_data(_example_instance())
    data["ops"][0]["vc"] = "nobody"
    with pytest.raises(InputError) as e:
        from_data(data)
    assert e.value.field == "data.ops[0].vc"
    data = to_data(_example_instance())
    data["bad_nodes"] = ["ghost"]
    with pytest.raises(InputError) as e:
        from_data(data)
    assert e.value.field == "data.bad_nodes[0]"
    data = to_data(_example_instance())
    del data["config"]["physicalCluster"]["cellTypes"]["K80-NODE"]["childCellType"]
    with pytest.raises(InputError) as e:
        from_data(data)
    assert e.value.field == "data.config.physicalCluster.cellTypes.K80-NODE.childCellType"


def test_instance_with_bad_node_explains() -> None:
    """Node v100-b3 bad: rack-b is broken and rack-a holds team-x's pinned node, so team-y's rack cannot fit (the
    guarantee is broken). As in hivedscheduler, team-y's rack is then doomed to the failed rack-b and j1's two 8-GPU
    pods still run on its healthy nodes."""
    inst = _example_instance()
    inst.bad_nodes = ["v100-b3"]
    ans = PROBLEM_IO.solve(inst, SolveOptions())
    rep = ans.check
    # racks alone still fit (rack-a), but with the node-level cells (team-x, pinned a1) they do not: level 4
    assert ans.valid is False and (rep.chain, rep.level, rep.cause) == ("V100-RACK", 4, "bad_hardware")
    assert ans.termination.reason is TerminationReason.INFEASIBLE and not ans.has_solution
    j1 = ans.allocations[0]
    assert j1.ok and sorted(p.node for p in j1.pods) != [] and all(p.node in ("v100-b0", "v100-b1", "v100-b2") for p in j1.pods)
    assert PROBLEM_IO.check(inst, ans) == []


def test_generated_instance_is_valid_and_shipped_instances_load() -> None:
    inst = instances.problems()["hived"].generate(gpus=512, seed=3)
    assert check_vc_assignment(inst.cluster, inst.vcs).valid
    for p in sorted((ROOT / "instances" / "hived").glob("*.json")):
        obj = instances.load(p)
        assert isinstance(obj, HivedInstance)


# ------------------------------------------------------------------ issue 20: bad input is a named error, fast
def test_sizes_above_max_gpus_are_named_errors_not_hangs(tmp_path: Path) -> None:
    from schedopt.hived.cells import MAX_GPUS

    assert MAX_GPUS == 2**16  # 2**20 was a hang: one rack of 128,629 nodes took 26 s to build (long fuzz run)
    with pytest.raises(InputError, match=r"^gpus_per_pcie=65537: exceeds hived.MAX_GPUS"):
        generate_cluster(64, gpus_per_pcie=MAX_GPUS + 1)
    with pytest.raises(InputError, match=r"^nodes_per_rack=128629: exceeds hived.MAX_GPUS = 65536"):
        generate_cluster(64, nodes_per_rack=128629)
    with pytest.raises(InputError, match=r"^gpus=64: with racks of 131072 GPUs, the cluster exceeds hived.MAX_GPUS"):
        generate_cluster(64, nodes_per_rack=16384)
    # each size fits, their product does not: one rack of 16 * 2 * 2 * 2**11 = 2**17 GPUs
    with pytest.raises(InputError, match=r"^gpus=.*racks of 131072 GPUs, the cluster exceeds hived.MAX_GPUS"):
        generate_cluster(64, gpus_per_pcie=2**11, nodes_per_rack=16)
    with pytest.raises(InputError, match=r"^physicalCells\[1\]='R': makes the cluster exceed"):
        PhysicalCluster([CellType("N", "G", 2**8, True), CellType("R", "N", 2**8)], [{"cellType": "R"}] * 2)
    with pytest.raises(InputError, match=r"virtualCells\[x\]\.cellNumber=65537: exceeds"):
        VirtualCluster("v", {"x": MAX_GPUS + 1})
    cfg = tmp_path / "huge.yaml"
    cfg.write_text("physicalCluster:\n  cellTypes:\n    N: {childCellType: G, childCellNumber: 1000000000000000000000,"
                   " isNodeLevel: true}\n  physicalCells:\n  - cellType: N\n")
    with pytest.raises(InputError) as info:
        load_hived_config(cfg)
    assert info.value.field == f"{cfg}:physicalCluster.cellTypes.N.childCellNumber"


def test_yaml_duplicate_keys_directories_and_encodings_are_named(tmp_path: Path) -> None:
    cfg = tmp_path / "dup.yaml"
    cfg.write_text("physicalCluster:\n  cellTypes:\n    N: {childCellType: G, childCellNumber: 2, isNodeLevel: true}\n"
                   "    N: {childCellType: G, childCellNumber: 4, isNodeLevel: true}\n  physicalCells:\n"
                   "  - cellType: N\n")
    with pytest.raises(InputError, match=r"is written twice \(lines 3 and 4\)") as info:
        load_hived_config(cfg)
    assert info.value.field == f"{cfg}:physicalCluster.cellTypes.N"
    with pytest.raises(InputError, match="is a directory"):
        load_hived_config(tmp_path)
    (tmp_path / "latin1.yaml").write_bytes("physicalCluster: café\n".encode("latin-1"))
    with pytest.raises(InputError, match="is not UTF-8 text"):
        load_hived_config(tmp_path / "latin1.yaml")
    with pytest.raises(InputError, match=r"^physicalClustr=.*is no known field of a hivedscheduler config"):
        load_hived_config({"physicalClustr": {}, "physicalCluster": {}})
    # a hivedscheduler config's other documented keys are accepted
    cluster, _ = load_hived_config({"webServerAddress": ":30096", "physicalCluster": {
        "cellTypes": {"N": {"childCellType": "G", "childCellNumber": 2, "isNodeLevel": True}},
        "physicalCells": [{"cellType": "N"}]}})
    assert cluster.n_cells == 3
