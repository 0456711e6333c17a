"""schedopt.gavel: Gavel's allocation LPs as a problem package (issue 29). Golden instances
(``instances/golden/gavel/*.json``, optimum derived by hand) replayed on every LP backend; the card's names against
the built models; the independent checker; the command line and the benchmark harness through ProblemIO."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import schedopt
from schedopt.errors import InputError
from schedopt.gavel import (
    OBJECTIVES,
    PROBLEM_IO,
    GavelSpec,
    build,
    check_allocation,
    evaluate,
    from_data,
    generate,
    isolated_allocation,
    solve_spec,
    to_data,
)
from schedopt.problem import SolveOptions, register_problem

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = sorted((ROOT / "instances" / "golden" / "gavel").glob("*.json"))


def _lp_backend(name: str) -> None:
    info = schedopt.available_backends()[name]
    if not info.capabilities.lp or info.capabilities.integer_only:
        pytest.skip(f"{name} solves no LP")


@pytest.mark.parametrize("path", GOLDEN, ids=[p.stem for p in GOLDEN])
def test_golden_objectives_agree_across_backends(path: Path, any_backend: str) -> None:
    _lp_backend(any_backend)
    d = json.loads(path.read_text())
    assert len(d["derivation"]) > 60
    spec = from_data(d["instance"]["data"])
    ans = solve_spec(spec, SolveOptions(backend=any_backend))
    assert ans.is_optimal, ans.termination
    assert ans.objective == pytest.approx(d["expected"]["objective"], rel=2e-6)
    assert check_allocation(spec, ans) == []
    assert evaluate(spec, ans.x) == pytest.approx(d["expected"]["objective"], rel=2e-6)


def test_golden_files_cover_every_objective() -> None:
    got = {json.loads(p.read_text())["instance"]["data"]["objective"] for p in GOLDEN}
    assert got == set(OBJECTIVES)


def _three(**kw):  # type: ignore[no-untyped-def]
    return GavelSpec.of({"fast": 1, "slow": 1}, {"j0": {"fast": 4, "slow": 1}, "j1": {"fast": 1, "slow": 1},
                                                 "j2": {"fast": 1, "slow": 1}}, **kw)


def test_ftf_matches_a_brute_force_over_the_allocations() -> None:
    """Worst rho of the LP bisection equals the best over a grid of allocations (fast to j0 a, slow to j0 b, the
    rest split evenly between the symmetric j1 and j2), up to the grid's resolution, and the bound is below it."""
    spec = _three(objective="ftf", steps_remaining={"j0": 4, "j1": 1, "j2": 1}, time_since_start={"j0": 3, "j1": 0})
    ans = solve_spec(spec)
    # vectorised grid: thr / rho of every job for every (a, b)
    a, b = np.meshgrid(np.linspace(0, 1, 801), np.linspace(0, 1, 81), indexing="ij")
    b = b * (1 - a)
    X = spec.throughputs
    thr = [X[0, 0] * a + X[0, 1] * b, X[1, 0] * (1 - a) / 2 + X[1, 1] * (1 - b) / 2]
    thr.append(thr[1])
    iso = (X * isolated_allocation(spec)).sum(axis=1)
    rho = [(spec.time_since_start[j] + spec.steps_remaining[j] / np.maximum(thr[j], 1e-12))
           / (spec.time_since_start[j] + spec.steps_remaining[j] / iso[j]) for j in range(3)]
    best = float(np.max(rho, axis=0).min())
    assert ans.bound <= ans.objective <= best + 1e-9
    assert ans.objective == pytest.approx(best, abs=2e-3)
    assert ans.objective < 1.0  # better than the isolated split, which gives every job rho = 1
    assert evaluate(spec, isolated_allocation(spec)) == pytest.approx(1.0)


def test_isolated_allocation_water_fills() -> None:
    """Scale factors 1, 1, 4 on 4 GPUs (2 + 2): level L with 1 + 1 + min(4, L) = 4 -> L = 2: fractions 1, 1, 1/2."""
    spec = GavelSpec(("a", "b"), np.array([2.0, 2.0]), ("x", "y", "z"), np.ones((3, 2)), np.array([1.0, 1.0, 4.0]))
    x = isolated_allocation(spec)
    assert x.sum(axis=1) == pytest.approx([1.0, 1.0, 0.5])
    assert spec.scale_factors @ x == pytest.approx([2.0, 2.0])


def test_card_names_match_the_built_models() -> None:
    text = (ROOT / "formulations" / "gavel.md").read_text()
    section = text.split("## Names", 1)[1].split("\n## ", 1)[0]
    names = set(re.findall(r"^- `([A-Za-z_][A-Za-z0-9_]*)`", section, flags=re.M))
    built: set[str] = set()
    for obj in OBJECTIVES:
        spec = generate(64, 0, objective=obj)
        f = build(spec, rho=1.0) if obj == "ftf" else build(spec)
        built |= set(f.model.blocks) | set(f.model.families)
    f = build(generate(64, 0), stage="efficient", t_min=0.0)
    built |= set(f.model.blocks) | set(f.model.families)
    assert built == names


def test_checker_catches_a_bad_allocation() -> None:
    spec = _three(objective="max_sum_throughput")
    ans = solve_spec(spec)
    assert ans.objective == pytest.approx(5.0)
    ans.x = ans.x.copy()
    ans.x[1, 0] = 0.5  # fast now over-used (j0 holds it all) and the objective no longer matches
    paths = {v.path for v in check_allocation(spec, ans)}
    assert "type_capacity[fast]" in paths and "objective" in paths


def test_infeasible_slos_end_infeasible_without_an_allocation() -> None:
    spec = _three(objective="cost_slo", steps_remaining={"j1": 3.0}, slos={"j1": 2.0})  # needs 1.5 steps/s > 1
    ans = solve_spec(spec)
    assert not ans.has_solution
    with pytest.raises(schedopt.errors.InfeasibleError):
        ans.raise_for_status()
    assert "slo" in PROBLEM_IO.explain(spec)  # type: ignore[misc]


@pytest.mark.parametrize(
    ("kw", "field"),
    [
        ({"objective": "fastest"}, "objective"),
        ({"objective": "makespan"}, "steps_remaining"),
        ({"objective": "ftf", "steps_remaining": [1.0, 0.0, 1.0]}, "steps_remaining[j1]"),
        ({"priority_weights": [1.0, -1.0, 1.0]}, "priority_weights[1]"),
        ({"slos": [1.0, 0.0, 1.0]}, "slos"),
    ],
)
def test_bad_specs_name_the_field(kw, field) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InputError) as e:
        _three(**kw)
    assert e.value.field == field


def test_data_round_trip_and_bad_data() -> None:
    for obj in OBJECTIVES:
        spec = generate(64, 3, objective=obj)
        back = from_data(json.loads(json.dumps(to_data(spec))))
        assert to_data(back) == to_data(spec)
    d = to_data(_three())
    d["jobs"][1]["scale_factor"] = 0
    with pytest.raises(InputError, match=r"data\.scale_factors"):
        from_data(d)
    d = to_data(_three())
    d["jobs"][0]["throughputs"] = [1.0]
    with pytest.raises(InputError, match=r"data\.jobs\[0\]\.throughputs"):
        from_data(d)


@pytest.mark.parametrize("objective", OBJECTIVES)
def test_generated_instances_solve_and_check(objective: str) -> None:
    spec = generate(128, 1, objective=objective)
    a = solve_spec(spec, SolveOptions(backend="highs"))
    b = solve_spec(spec, SolveOptions(backend="scipy"))
    assert a.has_solution and b.has_solution
    assert check_allocation(spec, a) == [] and check_allocation(spec, b) == []
    assert a.objective == pytest.approx(b.objective, rel=1e-5)


def _entry_point_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Declare ``gavel`` through a ``schedopt.problems`` entry point of a distribution on the path (what the
    pyproject entry point gives an installed schedopt), so the benchmark's worker processes find it too."""
    import os

    dist = tmp_path / "ep" / "schedopt_gavel_entry-0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: schedopt-gavel-entry\nVersion: 0\n")
    (dist / "entry_points.txt").write_text("[schedopt.problems]\ngavel = schedopt.gavel:PROBLEM_IO\n")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), str(tmp_path / "ep"), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.syspath_prepend(str(tmp_path / "ep"))


def test_cli_solves_a_gavel_instance(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import contextlib
    import io

    from schedopt import instances
    from schedopt.cli import main

    register_problem(PROBLEM_IO)
    _entry_point_on_path(tmp_path, monkeypatch)
    path = tmp_path / "g.json"
    instances.save(generate(64, 2, objective="makespan"), path)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["solve", str(path), "--json", "--backend", "highs"])
    assert code == 0
    doc = json.loads(out.getvalue())
    assert doc["answer"]["termination"]["reason"] == "optimal" and doc["answer"]["objective"] > 0


@pytest.mark.slow
def test_bench_runs_gavel_through_its_entry_point(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``schedopt bench --problem gavel``: every run in a worker process that finds the problem by its entry point."""
    import contextlib
    import io

    from schedopt.cli import main

    _entry_point_on_path(tmp_path, monkeypatch)
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = main(["bench", "--problem", "gavel", "--sizes", "64", "--seeds", "0", "--backends", "highs,scipy",
                     "--executor", "threads:1", "--progress", "off", "-o", str(tmp_path / "bench.csv")])
    assert code == 0, out.getvalue()
    import csv

    rows = list(csv.DictReader((tmp_path / "bench.csv").open()))
    assert len(rows) == 2 and all(r["termination"] == "optimal" and not r["error"] for r in rows), rows
    assert float(rows[0]["objective"]) == pytest.approx(float(rows[1]["objective"]), rel=1e-6)


# ------------------------------------------------------------------------------------- properties (hypothesis)
@st.composite
def specs(draw):  # type: ignore[no-untyped-def]
    """Valid specs built directly: 1-3 GPU types with 1-8 GPUs, 1-6 jobs with scale factors that fit some type,
    throughputs in (0, 10] (some zero), work and ages > 0."""
    T = draw(st.integers(1, 3))
    cap = [draw(st.integers(1, 8)) for _ in range(T)]
    J = draw(st.integers(1, 6))
    X, sf = [], []
    for _ in range(J):
        s = draw(st.sampled_from([1, 2, 4]))
        row = [draw(st.sampled_from([0.0, 0.5, 1.0, 2.5, 7.0])) for _ in range(T)]
        if not any(row):
            row[draw(st.integers(0, T - 1))] = 1.0
        X.append(row)
        sf.append(s)
    rem = [draw(st.sampled_from([10.0, 100.0, 1000.0])) for _ in range(J)]
    tss = [draw(st.sampled_from([0.0, 50.0, 500.0])) for _ in range(J)]
    return GavelSpec(tuple(f"t{k}" for k in range(T)), np.array(cap, float), tuple(f"j{j}" for j in range(J)),
                     np.array(X), np.array(sf, float), steps_remaining=np.array(rem), time_since_start=np.array(tss))


@settings(max_examples=12)
@given(specs())
def test_every_objective_checks_and_beats_the_isolated_split(spec: GavelSpec) -> None:
    """Every answer passes the independent checker, and no objective does worse than the isolated allocation
    (which is feasible): max-min and throughput at least its value, ftf and makespan at most (ftf: at most 1)."""
    x_iso = np.where(spec.throughputs > 0, isolated_allocation(spec), 0.0)
    for obj in ("max_min", "ftf", "makespan", "max_sum_throughput"):
        s = spec.replace(objective=obj)
        ans = solve_spec(s)
        assert ans.is_optimal and check_allocation(s, ans) == []
        iso = evaluate(s, x_iso)
        if obj in ("ftf", "makespan"):
            assert ans.objective <= iso * (1 + 1e-6)
            assert ans.bound <= ans.objective * (1 + 1e-9)
        else:
            assert ans.objective >= iso * (1 - 1e-6)
    assert evaluate(spec.replace(objective="ftf"), x_iso) == pytest.approx(1.0)
