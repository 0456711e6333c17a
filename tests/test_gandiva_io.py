"""Gandiva instances: JSON round trip, loader errors naming field and value, the registered solve, the card."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest

import schedopt
from schedopt import instances
from schedopt.errors import InputError
from schedopt.gandiva import build_defrag_model, build_packing_model, check_packing
from schedopt.gandiva.io import GandivaInstance, from_data, generate, to_data
from schedopt.problem import SolveOptions, get_problem, heuristic_termination
from schedopt.results import Limit, TerminationReason

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("operation", ["pack", "defragment", "allocate"])
def test_round_trip_and_solve(operation: str, tmp_path: Path) -> None:
    inst = generate(32, seed=4, operation=operation)
    path = tmp_path / "g.json"
    instances.save(inst, path, generator={"gpus": 32, "seed": 4, "operation": operation})
    back = instances.load(path)
    assert isinstance(back, GandivaInstance) and back == inst
    assert to_data(back) == to_data(inst)
    assert json.loads(instances.dumps(back))["data"] == json.loads(path.read_text())["data"]
    io = get_problem("gandiva")
    if operation == "allocate":
        run = io.solve(back, SolveOptions())
        assert run.termination == heuristic_termination(run.termination.detail) and run.method == "algorithm1"
        assert set(run.allocations) == {j.id for j in inst.pending} and run.objective == run.placed
        assert io.check(back, run) == []
        with pytest.raises(InputError, match="backend"):
            io.solve(back, SolveOptions(backend="highs"))
        with pytest.raises(InputError, match="operation"):
            io.build(back)
    else:
        exact = io.solve(back, SolveOptions(backend="highs", time_limit=30.0))
        greedy = io.solve(back, SolveOptions(method="greedy"))
        assert exact.termination.reason is TerminationReason.OPTIMAL and exact.backend == "highs"
        assert greedy.termination.limit is Limit.HEURISTIC or not greedy.has_solution
        assert io.check(back, exact) == [] and io.check(back, greedy) == []
        # build + schedopt.solve + decode is the same path, with the typed inverse map
        form = io.build(back)
        again = io.decode(back, form, schedopt.solve(form.model, "highs"))
        assert again.objective == pytest.approx(exact.objective) and again.formulation is form
        if operation == "pack":
            assert exact.objective >= greedy.objective - 1e-9 and exact.bound == pytest.approx(exact.objective)
            assert len(exact.assignment) + len(exact.unplaced) == len(inst.pending)
            assert check_packing(back.state(), back.pending, exact, back.table()) == []
        else:
            assert exact.freed and exact.objective == exact.migrations
            assert not greedy.has_solution or exact.migrations <= greedy.migrations
        doc = json.loads(json.dumps(exact.to_dict(), allow_nan=False))
        assert doc["termination"]["reason"] == "optimal" and doc["objective"] == pytest.approx(exact.objective)
    assert "Gandiva" in io.explain(back)


def _doc() -> dict:
    return to_data(generate(16, seed=1, operation="pack"))


@pytest.mark.parametrize(
    ("mutate", "field", "value"),
    [
        (lambda d: d.__setitem__("operation", "melt"), "data.operation", "melt"),
        (lambda d: d["nodes"][1].__setitem__("gpus", 0), "data.nodes[1].gpus", 0),
        (lambda d: d["nodes"][0].__setitem__("gpu_memory", "big"), "data.nodes[0].gpu_memory", "big"),
        (lambda d: d["nodes"][2].__setitem__("name", "n0"), "data.nodes[2].name", "n0"),
        (lambda d: d["pending"][0].__setitem__("gpus", 2), "data.pending[0].gpus", 2),
        (lambda d: d["pending"][1].__setitem__("memory", -1.0), "data.pending[1].memory", -1.0),
        (lambda d: d["pending"][0].__setitem__("job_type", "Nope"), "data.pending[0].job_type", "Nope"),
        (lambda d: d["pending"][2].pop("id"), "data.pending[2].id", None),
        (lambda d: d["jobs"][0].__setitem__("slots", [[99, 0]]), "data.jobs[0].slots[0]", [99, 0]),
        (lambda d: d["jobs"][0].__setitem__("slots", [[0, "a"]]), "data.jobs[0].slots[0]", [0, "a"]),
        (lambda d: d["jobs"][0].__setitem__("utilization", 1.5), "data.jobs[0].utilization", 1.5),
        (lambda d: d.__setitem__("packed", [[0, 0]]), "data.packed[0]", [0, 0]),
        (lambda d: d["profiles"]["factor"][0].__setitem__(0, 2.0), "data.profiles.factor[0][0]", 2.0),
    ],
)
def test_loader_errors_name_field_and_value(mutate, field: str, value: object) -> None:
    d = copy.deepcopy(_doc())
    mutate(d)
    with pytest.raises(InputError) as ei:
        from_data(d)
    assert ei.value.field == field
    assert ei.value.value == value


def test_defragment_needs_one_incoming() -> None:
    d = to_data(generate(16, seed=1, operation="defragment"))
    d["pending"] = []
    with pytest.raises(InputError) as ei:
        from_data(d)
    assert ei.value.field == "data.pending" and ei.value.value == 0


def test_generate_errors() -> None:
    with pytest.raises(InputError) as ei:
        generate(10, 0)
    assert ei.value.field == "gpus" and ei.value.value == 10


def _card_names() -> set[str]:
    text = (ROOT / "formulations" / "gandiva.md").read_text()
    sec = text.split("## Names", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"^- `([A-Za-z_][A-Za-z0-9_]*)`", sec, flags=re.M))


def test_formulation_card_names_match_models() -> None:
    inst = generate(16, seed=1, operation="pack")
    st = inst.state()
    names: set[str] = set()
    for form in ("config", "assign"):
        m = build_packing_model(st, inst.pending[:3], profiles=inst.table(), formulation=form)
        names |= set(m.blocks) | set(m.families)
    d = generate(16, seed=1, operation="defragment")
    m = build_defrag_model(d.state(), d.pending[0])
    names |= set(m.blocks) | set(m.families)
    import dataclasses

    from schedopt.gandiva import AllocationRun, Defragmentation, Packing
    from schedopt.problem import Answer

    base = {f.name for f in dataclasses.fields(Answer)}
    for cls in (Packing, Defragmentation, AllocationRun):
        names |= {f.name for f in dataclasses.fields(cls)} - base
    assert _card_names() == names


def test_old_solve_call_still_works_with_a_deprecation_warning() -> None:
    from schedopt.gandiva.io import solve_instance

    inst = generate(16, seed=1, operation="pack")
    with pytest.warns(DeprecationWarning, match="SolveOptions"):
        ans, rows, summary = solve_instance(inst, "highs", 30.0)
    assert ans.termination.reason is TerminationReason.OPTIMAL and ans.backend == "highs"
    assert summary["termination"] == "optimal" and summary["objective"] == pytest.approx(ans.objective)
    assert len(rows) == len(ans.gpus())
