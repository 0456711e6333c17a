"""Sia: placement, generators, JSON round trip and loader errors, canonical instances."""

from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import schedopt
from schedopt import instances
from schedopt.errors import InputError
from schedopt.problem import SolveOptions
from schedopt.sia import (
    Cluster,
    Config,
    GpuType,
    Job,
    Placement,
    SiaInstance,
    SiaSolution,
    check_placement,
    generate_instance,
    place,
)
from schedopt.sia import generate as gen
from schedopt.sia.strategies import allocations_that_fit, clusters

ROOT = pathlib.Path(__file__).resolve().parents[1]
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ------------------------------------------------------------------------------------------------ placement
@SETTINGS
@given(data=st.data())
def test_any_fitting_allocation_places_from_empty(data) -> None:
    """Any allocation that fits the per-type GPU counts (and, for node sizes that are not powers of two, the
    virtual-node rows) places from an empty cluster with no eviction; the checker accepts the placement."""
    cl = data.draw(clusters(max_types=2, max_nodes=4))
    alloc = data.draw(allocations_that_fit(cl))
    pl = place(cl, alloc)
    assert pl.unplaced == () and pl.evicted == ()
    assert set(pl) == set(alloc)
    assert check_placement(cl, alloc, pl) == []


def test_placement_keeps_unchanged_jobs_and_evicts_fewest() -> None:
    """One node of 4 GPUs. Previous: j1 on GPU 0, j2 on GPU 2 (1 GPU each). New allocation keeps j1 and j2 and adds
    j3 with 2 GPUs: the aligned blocks {0,1} and {2,3} each hold one old job, so exactly one job is evicted (moved)
    and all three are placed; j4 (new, 1x1) placed without moving anyone when there is room."""
    cl = Cluster([GpuType("a", 4, 1)])
    prev = Placement({"j1": [("a-0", (0,))], "j2": [("a-0", (2,))]},
                     {"j1": Config(1, 1, "a"), "j2": Config(1, 1, "a")})
    alloc = {"j1": Config(1, 1, "a"), "j2": Config(1, 1, "a"), "j3": Config(1, 2, "a")}
    pl = place(cl, alloc, prev)
    assert pl.unplaced == () and len(pl.evicted) == 1
    assert check_placement(cl, alloc, pl) == []
    stay = ({"j1", "j2"} - set(pl.evicted)).pop()
    assert pl[stay] == prev[stay]
    # a pinned job is never moved
    pl2 = place(cl, alloc, prev, pinned=["j1"])
    assert pl2.evicted == ("j2",) and pl2["j1"] == [("a-0", (0,))]
    # no fragmentation: nothing moves
    pl3 = place(cl, {"j1": Config(1, 1, "a"), "j2": Config(1, 1, "a"), "j4": Config(1, 1, "a")}, prev)
    assert pl3.evicted == () and pl3["j1"] == prev["j1"] and pl3["j2"] == prev["j2"]
    # a job whose configuration changed is re-placed (not counted as evicted)
    pl4 = place(cl, {"j1": Config(1, 2, "a"), "j2": Config(1, 1, "a")}, prev)
    assert pl4.evicted == () and pl4["j2"] == prev["j2"] and check_placement(cl, {"j1": Config(1, 2, "a"), "j2": Config(1, 1, "a")}, pl4) == []


def test_multi_node_whole_nodes_and_virtual_split() -> None:
    """Multi-node configs take whole nodes; on 6-GPU nodes (virtual 4 + 2) a 4-GPU job sits in GPUs 0-3 and a
    2-GPU job in 4-5 of one node."""
    cl = Cluster([GpuType("x", 6, 3)])
    alloc = {"m": Config(2, 12, "x"), "p4": Config(1, 4, "x"), "p2": Config(1, 2, "x")}
    pl = place(cl, alloc)
    assert check_placement(cl, alloc, pl) == []
    assert sorted(n for n, _ in pl["m"]) == ["x-1", "x-2"]
    assert pl["p4"] == [("x-0", (0, 1, 2, 3))] and pl["p2"] == [("x-0", (4, 5))]


def test_check_placement_catches_errors() -> None:
    """The checker is not a rubber stamp: double use, split partial configs, partial multi-node use, wrong counts."""
    cl = Cluster([GpuType("a", 4, 2)])
    alloc = {"j1": Config(1, 2, "a"), "j2": Config(1, 2, "a"), "m": Config(2, 8, "a")}
    bad = Placement({"j1": [("a-0", (0, 1))], "j2": [("a-0", (1, 2))], "m": [("a-0", (0, 1, 2, 3)), ("a-1", (0, 1, 2))]},
                    dict(alloc))
    errs = check_placement(cl, alloc, bad)
    msgs = [str(e) for e in errs]
    assert any("used by jobs" in e for e in msgs) and any(e.path == "gpu[a-0:1]" for e in errs)
    assert any("does not use all of a-1" in e for e in msgs)
    assert any("7 GPUs placed" in e for e in msgs)
    odd = Cluster([GpuType("x", 6, 1)])  # virtual nodes [0, 4) and [4, 6)
    across = Placement({"j": [("x-0", (3, 4))]}, {"j": Config(1, 2, "x")})
    assert any("cross a virtual-node boundary" in e.message for e in check_placement(odd, {"j": Config(1, 2, "x")}, across))
    split = Placement({"j1": [("a-0", (0,)), ("a-1", (0,))]}, {"j1": Config(1, 2, "a")})
    assert any("on 2 nodes" in e.message for e in check_placement(cl, {"j1": Config(1, 2, "a")}, split))
    with pytest.raises(InputError, match=r"allocation\[j\]"):
        place(cl, {"j": Config(2, 3, "a")})  # 3 GPUs on 2 nodes is no shape (Config(1, 3, "a") is a rigid shape)


# ------------------------------------------------------------------------------------------------ generators
def test_cluster_shape_scales() -> None:
    c = gen.cluster(64)
    assert [(t.name, t.gpus_per_node, t.nodes) for t in c.gpu_types] == [("t4", 4, 6), ("a100", 8, 2), ("rtx2080ti", 8, 3)]
    assert c.num_gpus == 64 and gen.cluster(2048).num_gpus == 2048 and gen.cluster(16384).num_gpus == 16384
    assert gen.cluster(2048)["t4"].nodes == 192
    for bad in (0, 100, -64, 64.0):
        with pytest.raises(InputError, match="gpus"):
            gen.cluster(bad)


def test_generator_deterministic_per_seed() -> None:
    a, b, c = generate_instance(128, 5), generate_instance(128, 5), generate_instance(128, 6)
    assert a == b and a != c
    assert len(a.jobs) == 64 and len(generate_instance(128, 5, load="heavy").jobs) == 128
    assert len(generate_instance(2048, 0).jobs) >= 1000
    assert len(generate_instance(64, 1, jobs=7).jobs) == 7
    prob = a.problem()
    # current configurations fit: forced + current use per type <= capacity
    use = {t: 0 for t in prob.cluster.type_names}
    for j in a.jobs:
        if j.current is not None:
            use[j.current.gpu_type] += j.current.n_gpus
    assert all(use[t.name] <= t.total_gpus for t in prob.cluster.gpu_types)
    kinds = {j.kind for j in generate_instance(512, 0).jobs}
    assert kinds == {"adaptive", "strong", "rigid"}
    with pytest.raises(InputError, match="load"):
        generate_instance(64, 0, load="light")


# -------------------------------------------------------------------------------------------- JSON
def test_json_round_trip_zoo_matrix_and_models() -> None:
    inst = generate_instance(64, seed=2)
    back = instances.loads(instances.dumps(inst, generator={"gpus": 64, "seed": 2}))
    assert isinstance(back, SiaInstance) and back == inst
    assert instances.dumps(back, generator={"gpus": 64, "seed": 2}) == instances.dumps(inst, generator={"gpus": 64, "seed": 2})
    assert back.problem().solve("highs").objective == pytest.approx(inst.problem().solve("highs").objective)
    # a matrix with "cannot run" (NaN -> null), available GPUs, a rigid and a forced job, int ids
    cl = Cluster([GpuType("a", 2, 1), GpuType("b", 4, 1)])
    G = np.array([[1.0, 2.0, np.nan, 3.0, 4.0], [1.0, np.nan, 2.0, 2.5, 3.0]])
    jobs = (Job(1, max_profiled_gpus=2, current=Config(1, 2, "a"), preemptible=False, age_s=10.5),
            Job(2, kind="rigid", rigid_gpus=2, allowed_types=["b"], batch_size=32.0))
    m = SiaInstance(cl, jobs, G, p=1.0, lam=0.5, max_gpus_per_job=None, available={"b": 3})
    back = instances.loads(instances.dumps(m))
    assert back == m and np.isnan(back.goodput[0, 2])
    # JobGoodputModel objects that are not zoo models are written in full
    zoo = pytest.importorskip("schedopt.zoo")
    mdl = zoo.load_model("cifar10").with_bootstrap("a", "t4", 1.0, 2.0, (1, 64))
    inst2 = SiaInstance(cl, (Job("x", max_profiled_gpus=2),), {"x": mdl})
    doc = json.loads(instances.dumps(inst2))
    assert doc["data"]["goodput"]["kind"] == "models"
    assert instances.loads(instances.dumps(inst2)) == inst2


def _doc(inst: SiaInstance) -> dict:
    return json.loads(instances.dumps(inst))


@pytest.mark.parametrize(
    ("path", "value", "match"),
    [
        (("jobs", 3, "min_gpus"), 0, r"data\.jobs\[3\]\.min_gpus=0"),
        (("jobs", 1, "kind"), "elastic", r"data\.jobs\[1\]\.kind='elastic'"),
        (("jobs", 0, "age_s"), "old", r"data\.jobs\[0\]\.age_s='old'"),
        (("jobs", 2, "current"), {"n_nodes": 1, "n_gpus": 3, "gpu_type": "t4"}, r"data\.jobs\[2\]\.current='1x3xt4'"),
        (("jobs", 2, "current"), {"n_nodes": 0, "n_gpus": 3, "gpu_type": "t4"}, r"data\.jobs\[2\]\.current\.n_nodes=0"),
        (("jobs", 0, "allowed_types"), ["v100"], r"data\.jobs\[0\]\.allowed_types\[0\]='v100'"),
        (("jobs", 0, "colour"), "red", r"data\.jobs\[0\]\.colour='red'"),
        (("cluster", 1, "nodes"), -1, r"data\.cluster\[1\]\.nodes=-1"),
        (("goodput", "models", 4), "resnet", r"data\.goodput\.models\[4\]='resnet'"),
        (("goodput", "kind"), "table", r"data\.goodput\.kind='table'"),
        (("p",), 0, r"data\.p=0"),
        (("lam",), -1, r"data\.lam=-1"),
        (("available",), {"t4": 99}, r"data\.available\[t4\]=99"),
    ],
)
def test_loader_errors_name_field_and_value(path: tuple, value, match: str) -> None:
    doc = _doc(generate_instance(64, seed=0))
    node = doc["data"]
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value
    with pytest.raises(InputError, match=match):
        instances.loads(json.dumps(doc))


def test_cli_hooks_registered() -> None:
    io = instances.problems()["sia"]
    inst = io.generate(gpus=64, seed=0)
    sol = io.solve(inst, SolveOptions(backend="highs", time_limit=30.0))
    rows, d = sol.rows(), sol.to_dict()
    assert isinstance(sol, SiaSolution) and sol.is_optimal and sol.backend == "highs"
    assert len(rows) == len(inst.jobs) and d["unplaced"] == [] and d["termination"]["reason"] == "optimal"
    assert json.loads(json.dumps(d)) == d  # JSON-ready
    assert {"job", "config", "gpus", "type", "nodes"} <= set(rows[0])
    assert io.check(inst, sol) == [] and io.size(inst) == (64, 32) and io.methods == ("ilp",)
    form = io.build(inst)
    again = io.decode(inst, form, schedopt.solve(form.model, "highs"))
    assert again.allocation == sol.allocation and again.objective == pytest.approx(sol.objective, rel=1e-9)
    with pytest.raises(InputError, match="options.method"):
        io.solve(inst, SolveOptions(method="greedy"))
    assert "feasible" in io.explain(inst)


# -------------------------------------------------------------------------------------------- canonical files
@pytest.mark.parametrize("gpus", [64, 512, 2048])
def test_canonical_instances(gpus: int) -> None:
    """instances/sia/sia_<gpus>_seed0.json: under 3 MB, loads, equals the generator's output for its settings."""
    path = ROOT / "instances" / "sia" / f"sia_{gpus}_seed0.json"
    assert path.stat().st_size < 3_000_000
    doc = json.loads(path.read_text())
    assert doc["generator"]["gpus"] == gpus and doc["generator"]["seed"] == 0
    inst = instances.load(path)
    settings_ = {k: v for k, v in doc["generator"].items() if k not in ("function",)}
    assert inst == generate_instance(**settings_)
