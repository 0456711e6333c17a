"""One round's Sia instance from a running cluster (issue 38 item 3): node names and sizes, each job's placement,
`schedopt solve` keeping running jobs on their GPUs, a running job's growth rule, and the batch of adaptive jobs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from schedopt import instances, schemas, zoo
from schedopt.errors import InputError
from schedopt.sia import SiaInstance
from schedopt.sia.io import from_data, solve_instance, to_data

ROOT = Path(__file__).resolve().parents[1]


def _data(placement: dict[str, list[int]] | None) -> dict[str, Any]:
    rigid: dict[str, Any] = {"id": "r", "kind": "rigid", "rigid_gpus": 4, "age_s": 600.0, "restart_cost_s": 30.0}
    if placement is not None:
        rigid["placement"] = placement
    return {
        "cluster": [{"name": "a100", "gpus_per_node": 8, "nodes": 3, "node_names": ["gpu-a", "gpu-b", "gpu-c"],
                     "node_gpus": [8, 8, 6]}],
        "jobs": [rigid, {"id": "big", "current": {"n_nodes": 1, "n_gpus": 8, "gpu_type": "a100"}, "age_s": 600.0,
                         "restart_cost_s": 30.0, "placement": {"gpu-a": list(range(8))}},
                 {"id": "new"}],
        "goodput": {"kind": "zoo", "models": ["cifar10", "cifar10", "cifar10"]},
    }


def _doc(data: dict[str, Any]) -> dict[str, Any]:
    return {"schema": "schedopt.instance", "version": 1, "problem": "sia", "data": data}


def test_a_running_job_keeps_its_gpus_through_schedopt_solve(tmp_path: Path) -> None:
    """The rigid job runs on gpu-c's GPUs 2-5 (of 6): solve keeps it exactly there; without its placement the
    placer puts it on the first free aligned block instead (so the placement is what kept it)."""
    doc = _doc(_data({"gpu-c": [2, 3, 4, 5]}))
    jsonschema.Draft202012Validator(schemas.load("instance")).validate(doc)
    path = tmp_path / "running.json"
    path.write_text(json.dumps(doc))
    out = subprocess.run([sys.executable, "-m", "schedopt", "solve", str(path), "--json"], capture_output=True,
                         text=True, cwd=ROOT, timeout=120, check=True)
    got = json.loads(out.stdout)
    placement = got["answer"]["placement"] if "answer" in got else got["placement"]
    assert placement["r"] == [["gpu-c", [2, 3, 4, 5]]]
    assert got.get("answer", got)["allocation"]["big"] in ("1x8xa100", "2x16xa100")  # never capped below its 8
    fresh = solve_instance(from_data(_data(None)))
    assert fresh.placement is not None and fresh.placement["r"] != [("gpu-c", (2, 3, 4, 5))]


def test_a_running_jobs_growth_rule_counts_its_gpus() -> None:
    inst = from_data(_data({"gpu-c": [2, 3, 4, 5]}))
    jobs = {j.id: j for j in inst.jobs}
    assert jobs["big"].max_profiled_gpus == 8 and jobs["big"].growth_limit() == 16  # not capped at 1
    assert jobs["new"].max_profiled_gpus == 0 and jobs["r"].current is not None and jobs["r"].current.label == "1x4xa100"
    explicit = _data(None)
    explicit["jobs"][1]["max_profiled_gpus"] = 0
    assert {j.id: j for j in from_data(explicit).jobs}["big"].growth_limit() == 1  # the rule from scratch, if asked
    assert from_data(to_data(inst)) == inst  # node names, sizes and placements round-trip


def test_solution_gives_adaptive_jobs_their_batch() -> None:
    sol = solve_instance(from_data(_data({"gpu-c": [2, 3, 4, 5]})))
    batches = sol.batch_sizes()
    m = zoo.load_model("cifar10")
    for jid in ("big", "new"):
        c = sol.allocation[jid]
        assert c is not None
        best = m.goodput(c.gpu_type, c.n_nodes, c.n_gpus)
        assert batches[jid] == int(best.batch_size) > 0
    assert batches["r"] == int(m.init_batch)
    assert sol.to_dict()["batch_sizes"] == {k: v for k, v in batches.items()}


@pytest.mark.parametrize("change,field", [
    (lambda d: d["jobs"][0].update(placement={"gpu-z": [0]}), "data.jobs[0].placement[gpu-z]"),
    (lambda d: d["jobs"][0].update(placement={"gpu-c": [6]}), "data.jobs[0].placement[gpu-c]"),
    (lambda d: d["jobs"][0].update(placement={"gpu-a": [0, 1, 2, 3]}), "data.jobs[1].placement[gpu-a]"),
    (lambda d: d["jobs"][1].update(current={"n_nodes": 1, "n_gpus": 4, "gpu_type": "a100"}), "data.jobs[1].current"),
    (lambda d: d["cluster"][0].update(node_gpus=[8, 9, 6]), "data.cluster[0].node_gpus[1]"),
])
def test_bad_placements_name_the_field(change: Any, field: str) -> None:
    d = _data({"gpu-c": [2, 3, 4, 5]})
    change(d)
    with pytest.raises(InputError) as e:
        from_data(d)
    assert e.value.field == field


def test_instances_load_keeps_the_placement(tmp_path: Path) -> None:
    path = tmp_path / "i.json"
    path.write_text(json.dumps(_doc(_data({"gpu-c": [2, 3, 4, 5]}))))
    inst = instances.load(path)
    assert isinstance(inst, SiaInstance) and inst.placement == {"r": [("gpu-c", (2, 3, 4, 5))],
                                                                "big": [("gpu-a", tuple(range(8)))]}
