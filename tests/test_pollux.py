"""schedopt.pollux: Pollux's allocation problem as a package (issue 29). Golden instances
(``instances/golden/pollux/*.json``, optimum derived by hand) for both methods, the exact model on every MILP
backend; brute force over every node-level allocation of tiny instances; the card's names against the built model;
the independent checker; JSON IO; the command line and the benchmark harness through ProblemIO."""

from __future__ import annotations

import itertools
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import schedopt
from schedopt.errors import InputError
from schedopt.pollux import (
    PROBLEM_IO,
    PolluxAnswer,
    PolluxSpec,
    build,
    check_allocation,
    evaluate,
    from_data,
    generate,
    genetic_search,
    solve_spec,
    to_data,
)
from schedopt.problem import SolveOptions, register_problem
from schedopt.sia import Cluster, GpuType

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = sorted((ROOT / "instances" / "golden" / "pollux").glob("*.json"))


def _linear(cl: Cluster, J: int, nmax: int, rmax: int, slope: list[float] | None = None) -> np.ndarray:
    """Goodput = slope x GPUs at every feasible (type, nodes, GPUs) point of ``cl``."""
    G = np.zeros((J, len(cl.gpu_types), nmax + 1, rmax + 1))
    for t, gt in enumerate(cl.gpu_types):
        for n in range(1, min(nmax, gt.nodes) + 1):
            for r in range(n, min(n * gt.gpus_per_node, rmax) + 1):
                G[:, t, n, r] = r
    if slope is not None:
        G *= np.asarray(slope)[:, None, None, None]
    return G


def test_golden_files_are_well_formed() -> None:
    assert len(GOLDEN) >= 2
    for p in GOLDEN:
        d = json.loads(p.read_text())
        assert d["format"] == "schedopt-pollux-golden/1" and d["name"] == p.stem and len(d["derivation"]) > 100
        assert set(d["expected"]["objective"]) == {"ga", "exact"}


@pytest.mark.parametrize("path", GOLDEN, ids=[p.stem for p in GOLDEN])
def test_golden_genetic_search(path: Path) -> None:
    d = json.loads(path.read_text())
    spec = from_data(d["instance"]["data"])
    ans = solve_spec(spec, SolveOptions(seed=3))
    assert not ans.is_optimal and ans.has_solution  # a heuristic: no proof claimed
    assert ans.objective == pytest.approx(d["expected"]["objective"]["ga"], rel=1e-9)
    assert check_allocation(spec, ans) == []


@pytest.mark.parametrize("path", GOLDEN, ids=[p.stem for p in GOLDEN])
def test_golden_exact_on_every_backend(path: Path, any_backend: str) -> None:
    info = schedopt.available_backends()[any_backend]
    if not info.capabilities.mip:
        pytest.skip(f"{any_backend} solves no MILP")
    d = json.loads(path.read_text())
    spec = from_data(d["instance"]["data"])
    ans = solve_spec(spec, SolveOptions(method="exact", backend=any_backend))
    assert ans.is_optimal, ans.termination
    assert ans.objective == pytest.approx(d["expected"]["objective"]["exact"], rel=1e-6)
    assert ans.bound == pytest.approx(ans.objective, rel=1e-6)
    assert check_allocation(spec, ans) == []


def _brute_force(spec: PolluxSpec) -> float:
    """The best M over every node-level allocation the repair rules allow (plain loops over the spec)."""
    J, N = spec.num_jobs, len(spec.cols)
    best = -math.inf
    gpus = spec.cols.gpus
    for flat in itertools.product(*[range(int(gpus[k]) + 1) for _ in range(J) for k in range(N)]):
        x = np.array(flat).reshape(J, N)
        if (x.sum(axis=0) > gpus).any() or (x.sum(axis=1) > spec.job_cap).any():
            continue
        dist = np.count_nonzero(x, axis=1) > 1
        if (((x > 0) & dist[:, None]).sum(axis=0) > 1).any():
            continue
        if any(len(set(spec.cols.types[np.flatnonzero(x[j])].tolist())) > 1 for j in range(J)):
            continue
        r = x.sum(axis=1)
        if ((spec.rigid_gpus > 0) & (r != spec.rigid_gpus) & (r > 0)).any():
            continue
        best = max(best, evaluate(spec, x)[0])
    return best


@settings(max_examples=8, deadline=None)
@given(st.lists(st.sampled_from([0.5, 1.0, 2.0, 3.0]), min_size=2, max_size=2),
       st.sampled_from([1.0, 0.5, 0.1]), st.integers(0, 2))
def test_search_finds_the_brute_force_optimum_and_exact_never_beats_it(slope: list[float], rf: float,
                                                                      held: int) -> None:
    """Two jobs on two 2-GPU nodes of two types (81 matrices): the search with the published settings finds the
    best one, the exact method (configurations only) is never better, and both pass the checker."""
    cl = Cluster((GpuType("x", 2, 1), GpuType("y", 2, 1)))
    G = _linear(cl, 2, 2, 4, slope)
    G[:, 1] *= 2.0  # type y twice as fast
    cur = np.zeros((2, 2), np.int64)
    cur[0, 0] = held
    spec = PolluxSpec(cl, ("a", "b"), G, np.array([1.0, 2.0]), current=cur, restart_factor=np.array([rf, rf]))
    want = _brute_force(spec)
    ga = genetic_search(spec, rng=0)
    assert ga.objective == pytest.approx(want, rel=1e-12)
    assert check_allocation(spec, ga) == []
    ex = solve_spec(spec, SolveOptions(method="exact", backend="highs"))
    assert ex.objective <= want * (1 + 1e-9) and check_allocation(spec, ex) == []


def test_evaluate_by_hand() -> None:
    """Linear goodput, base 1, scale 2 / 4: a on 2 GPUs of node 0 (held: no restart), b on 1 GPU of node 1 (moved:
    factor 0.5): s = (1, 0.25), M = 2 / (1 / 1.001 + 1 / 0.251)."""
    cl = Cluster((GpuType("g", 2, 2),))
    cur = np.array([[2, 0], [0, 0]])
    spec = PolluxSpec(cl, ("a", "b"), _linear(cl, 2, 2, 4), np.array([1.0, 1.0]), current=cur,
                      restart_factor=np.array([0.5, 0.5]))
    M, s = evaluate(spec, np.array([[2, 0], [0, 1]]))
    assert s == pytest.approx([1.0, 0.25])
    assert M == pytest.approx(2 / (1 / 1.001 + 1 / 0.251))


def test_card_names_match_the_built_model() -> None:
    text = (ROOT / "formulations" / "pollux.md").read_text()
    section = text.split("## Names", 1)[1].split("\n## ", 1)[0]
    names = set(re.findall(r"^- `([A-Za-z_][A-Za-z0-9_]*)`", section, flags=re.M))
    f = build(generate(64, 0))
    built = set(f.model.blocks) | set(f.model.families)
    cl = Cluster((GpuType("six", 6, 2),))  # 6 GPUs per node: not a power of two, so Sia's virtual-node rows
    g = build(PolluxSpec(cl, ("a", "b"), _linear(cl, 2, 2, 12), np.array([1.0, 1.0])))
    assert "virtual_node_capacity" in g.model.families
    built |= set(g.model.blocks) | set(g.model.families)
    assert built == names
    body = text.replace(section, "")
    assert all(re.search(rf"\b{n}\b", body) for n in names)


def test_checker_catches_a_bad_allocation() -> None:
    cl = Cluster((GpuType("g", 2, 2),))
    spec = PolluxSpec(cl, ("a", "b"), _linear(cl, 2, 2, 4), np.array([1.0, 1.0]), cap=np.array([4, 1]))
    ans = genetic_search(spec, rng=0)
    assert check_allocation(spec, ans) == []
    bad = PolluxAnswer(termination=ans.termination, objective_value=ans.objective_value, method="ga",
                       nodes={"a": {"g-0": 2, "g-1": 1}, "b": {"g-0": 1, "g-1": 1}})
    got = {v.path for v in check_allocation(spec, bad)}
    assert {"node_capacity[g-0]", "one_distributed_job[g-1]", "job_cap[b]", "objective"} <= got


def test_io_round_trip_and_errors() -> None:
    spec = generate(64, 1)
    again = from_data(json.loads(json.dumps(to_data(spec))))
    assert again.jobs == spec.jobs and np.array_equal(again.goodput, spec.goodput)
    assert np.array_equal(again.current_matrix, spec.current_matrix) and np.allclose(again.restart, spec.restart)
    a, b = solve_spec(spec, SolveOptions(seed=1)), solve_spec(again, SolveOptions(seed=1))
    assert a.objective == b.objective and check_allocation(spec, a) == []
    d = to_data(spec)
    d["jobs"][2]["current"] = {"t4-99": 1}
    with pytest.raises(InputError, match=r"data\.jobs\[2\]\.current\.t4-99"):
        from_data(d)
    d = to_data(spec)
    d["jobs"][0]["base"] = 0.0
    with pytest.raises(InputError, match=r"data\.base"):
        from_data(d)
    with pytest.raises(InputError, match="gpus"):
        generate(100, 0)
    with pytest.raises(InputError, match="options.pop"):
        solve_spec(spec, SolveOptions(options={"pop": 3}))


def test_generated_instance_both_methods() -> None:
    spec = generate(64, 2)
    ga = solve_spec(spec, SolveOptions(seed=0, options={"generations": 30}))
    ex = solve_spec(spec, SolveOptions(method="exact", backend="highs"))
    assert ga.generations == 30 and check_allocation(spec, ga) == [] and check_allocation(spec, ex) == []
    assert ex.is_optimal and ex.bound >= ex.objective * (1 - 1e-6)
    mckp = solve_spec(spec, SolveOptions(method="exact"))
    assert mckp.objective == pytest.approx(ex.objective, rel=1e-6)


def test_search_in_int16_and_int64_agree_bit_for_bit() -> None:
    """The search holds its population in int16 while every prefix sum fits (``GeneticSearch._set_dtype``); forced to
    int64 it draws the same numbers and returns the same population and fitness."""
    from schedopt.pollux import GeneticSearch

    spec = generate(64, 2)
    init = np.concatenate([spec.current_matrix[None], np.zeros((1, spec.num_jobs, len(spec.cols)), np.int64)])
    outs = []
    for force in (False, True):
        gs = GeneticSearch(spec, np.random.default_rng(7))
        if force:
            gs._set_dtype(2**15)
        outs.append((gs.dtype, gs.run(init, 40, 20)))
    (d16, a), (d64, b) = outs
    assert d16 == np.int16 and d64 == np.int64
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1]) and a[0].dtype == np.int64


@pytest.mark.parametrize("seed", [2, 5])
def test_search_by_products_and_by_loops_agree_bit_for_bit(seed: int) -> None:
    """On small blocks the repair's prefix sums over jobs and its first-distributed-job rule run as products with
    triangular matrices in float64 (``GeneticSearch._small``); forced onto the loop and argmax path they give the
    same population and fitness, and the prefix sums equal numpy's cumsum on either path."""
    from schedopt.pollux import GeneticSearch

    spec = generate(64, seed)
    init = np.concatenate([spec.current_matrix[None], np.zeros((1, spec.num_jobs, len(spec.cols)), np.int64)])
    outs = []
    for small in (True, False):
        gs = GeneticSearch(spec, np.random.default_rng(7))
        assert gs._small(40) is (spec.num_jobs >= 2)
        if not small:
            gs._small = lambda P: False  # type: ignore[method-assign]
        blk = np.random.default_rng(seed).integers(0, 5, (len(spec.cols), spec.num_jobs, 40)).astype(gs.dtype)
        assert np.array_equal(gs._cumsum_jobs(blk), np.cumsum(blk, axis=1, dtype=gs.dtype))
        outs.append(gs.run(init, 40, 20))
    (a, b) = outs
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])


def test_search_takes_an_init_beyond_int16() -> None:
    """An initial individual with an entry no int16 prefix sum holds switches the search to int64; the repair brings
    it within the node's GPUs (regression: the population type must follow what ``init`` holds)."""
    spec = generate(64, 2)
    big = np.zeros((1, spec.num_jobs, len(spec.cols)), np.int64)
    big[0, 0, 0] = 40_000
    ans = genetic_search(spec, population=20, generations=5, rng=1, init=big)
    assert check_allocation(spec, ans) == []
    assert ans.population is not None and ans.population.max() <= spec.cols.gpus.max()


def _entry_point_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Declare ``pollux`` through a ``schedopt.problems`` entry point of a distribution on the path (what the
    pyproject entry point gives an installed schedopt), so the benchmark's worker processes find it too."""
    import os

    dist = tmp_path / "ep" / "schedopt_pollux_entry-0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: schedopt-pollux-entry\nVersion: 0\n")
    (dist / "entry_points.txt").write_text("[schedopt.problems]\npollux = schedopt.pollux:PROBLEM_IO\n")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), str(tmp_path / "ep"), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.syspath_prepend(str(tmp_path / "ep"))


def test_cli_solves_a_pollux_instance(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import contextlib
    import io

    from schedopt import instances
    from schedopt.cli import main

    register_problem(PROBLEM_IO)
    _entry_point_on_path(tmp_path, monkeypatch)
    path = tmp_path / "p.json"
    instances.save(generate(64, 2), path)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["solve", str(path), "--json"])
    assert code == 0
    doc = json.loads(out.getvalue())
    assert doc["answer"]["objective"] > 0 and doc["answer"]["generations"] == 100


@pytest.mark.slow
def test_bench_runs_pollux_through_its_entry_point(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``schedopt bench --problem pollux``: both methods, in worker processes that find the problem by its entry
    point."""
    import contextlib
    import csv
    import io

    from schedopt.cli import main

    _entry_point_on_path(tmp_path, monkeypatch)
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = main(["bench", "--problem", "pollux", "--sizes", "64", "--seeds", "0", "--backends", "ga,exact@highs",
                     "--executor", "threads:1", "--progress", "off", "-o", str(tmp_path / "bench.csv")])
    assert code == 0, out.getvalue()
    rows = list(csv.DictReader((tmp_path / "bench.csv").open()))
    assert len(rows) == 2 and not any(r["error"] for r in rows), rows
    assert [(r["method"], r["termination"]) for r in rows] == [("ga", "feasible"), ("exact", "optimal")]
    assert float(rows[1]["bound"]) == pytest.approx(float(rows[1]["objective"]), rel=1e-6)
