"""The benchmark harness: a real smoke sweep, the report, the wall-clock guard, a solver time limit, round trips.

Every run goes through the real harness (a process per run, forked or a fresh interpreter, real solvers). Test-only
specs use module-level hooks so a fresh interpreter can import them.
"""

from __future__ import annotations

import io
import math
import time

import numpy as np
import pytest

import schedopt
import schedopt.testing
from schedopt import bench
from schedopt.bench.records import COLUMNS, Record
from schedopt.bench.registry import BenchSpec, ModelPipeline
from schedopt.errors import InputError

# ----------------------------------------------------------------------------------------- test-only hooks/specs


def knapsack(gpus: int, seed: int) -> schedopt.LinearModel:
    """max 3a + 4b + 5c + 6d s.t. 2a + 3b + 4c + 5d <= 7, binary.

    Integer optimum 9 (pairs within weight 7: {a,b}=7, {a,c}=8, {a,d}=9, {b,c}=9; no triple fits).
    LP relaxation: take by value/weight ratio a (1.5), b (1.33), then half of c (weight 2 left of 4): 3 + 4 + 2.5 = 9.5.
    """
    m = schedopt.LinearModel("knapsack", sense="maximize")
    m.add_variables("x", 4, kind="binary", labels=list("abcd"))
    m.add_constraints("weight", {"x": [[2, 3, 4, 5]]}, upper=7, labels=["w"])
    m.set_objective({"x": [3, 4, 5, 6]})
    return m


def market_split(gpus: int, seed: int) -> schedopt.LinearModel:
    """The market-split instance of schedopt.testing as a benchmark generator (sizes and seeds ignored)."""
    return schedopt.testing.market_split()


def sleepy_route(state, model, params):  # a "solver" stuck far longer than the guard
    time.sleep(120)
    raise AssertionError("the guard should have killed this run")


def broken_generator(gpus: int, seed: int):
    raise ValueError("generator exploded on purpose")


IDENT = "schedopt.bench.registry:model_identity"
KNAP = BenchSpec("test-knapsack", "knapsack", knapsack, ModelPipeline(build=IDENT), sizes=(64,),
                 backends=("highs", "scipy"), params={"mip_rel_gap": 0.0})
SPLIT = BenchSpec("test-market-split", "market_split", market_split, ModelPipeline(build=IDENT), sizes=(64,))
SLEEPY = BenchSpec("test-sleepy", "knapsack", knapsack, ModelPipeline(build=IDENT, baselines={"sleepy": sleepy_route}),
                   sizes=(64,), backends=("sleepy",))
BROKEN = BenchSpec("test-broken", "knapsack", broken_generator, ModelPipeline(build=IDENT), sizes=(64,))


# ------------------------------------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    """The Sia spec at its smallest size (64 GPUs, 1 seed, normal load) with highs and scipy, plus the knapsack."""
    d = tmp_path_factory.mktemp("bench")
    path = d / "results.csv"
    recs = bench.run("sia", sizes=[64], seeds=[0], loads=["normal"], backends=["highs", "scipy"], progress=False,
                     out=path)
    recs += bench.run(KNAP, backends=["highs"], progress=False)
    bench.write_records(recs, path)
    return path, recs


# ------------------------------------------------------------------------------------------------------------ tests
def test_smoke_run_writes_a_valid_table(smoke):
    path, recs = smoke
    header = path.read_text().splitlines()[0].split(",")
    assert tuple(header) == COLUMNS
    back = bench.read_records(path)
    assert back == recs
    sia = [r for r in back if r.problem == "sia"]
    assert [r.backend for r in sia] == ["highs", "scipy"]
    for r in sia:
        assert r.termination == "optimal" and r.has_incumbent and r.outcome == "optimal", (r.outcome, r.error)
        assert r.gpus == 64 and r.jobs == 32  # normal load: one job per 2 GPUs
        assert r.variables > 0 and r.constraints > 0 and r.nonzeros >= r.variables and r.integer_variables == r.variables
        assert r.threads == 1 and r.solver_seed == 0 and r.mip_rel_gap == pytest.approx(1e-4)
        assert r.backend_version and r.machine_cores >= 1 and "numpy=" in r.packages and r.python
        assert len(r.instance_hash) == 16
        for p in bench.PHASES:
            assert getattr(r, f"t_{p}") is not None and getattr(r, f"t_{p}") >= 0, p
        assert r.t_path == pytest.approx(sum(getattr(r, f"t_{p}") for p in bench.PHASES))
        assert r.t_place > 0 and r.t_goodput > 0 and r.t_lp is not None
        assert r.peak_rss_mb >= r.base_rss_mb > 0
        # Sia with p < 0 minimises: the LP relaxation bound is below every integer solution
        assert r.sense == "minimize"
        assert r.lp_bound <= r.objective + 1e-7
        assert r.lp_gap == pytest.approx(abs(r.objective - r.lp_bound) / abs(r.objective))
    assert sia[0].instance_hash == sia[1].instance_hash
    assert sia[0].objective == pytest.approx(sia[1].objective, rel=2e-4)  # both proven within the 1e-4 gap
    knap = [r for r in back if r.problem == "knapsack"]
    assert [r.backend for r in knap] == ["highs"]
    for r in knap:
        assert r.sense == "maximize" and r.termination == "optimal"
        assert r.objective == pytest.approx(9) and r.lp_bound == pytest.approx(9.5)
        assert r.lp_bound >= r.objective  # maximisation: the LP bound is above
        assert (r.variables, r.constraints, r.nonzeros) == (4, 1, 4)


def test_report_from_table(smoke, tmp_path):
    path, _ = smoke
    md = bench.report(path, tmp_path / "report")
    text = md.read_text()
    assert "| highs |" in text and "| scipy |" in text
    assert "ratio vs highs" in text and "1.00×" in text
    assert "## sia — normal load" in text and "## knapsack" in text
    for name in ("time_vs_gpus_sia.png", "gap_vs_time_sia.png", "phase_share_sia.png", "time_vs_gpus_knapsack.png",
                 "phase_share_knapsack.png", "gap_vs_time_knapsack.png"):
        f = tmp_path / "report" / name
        assert f.exists() and f.stat().st_size > 1000, name
        assert f.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert f"({name})" in text
    rows = bench.summarize(bench.read_records(path))
    ref = {(r["problem"], r["gpus"]): r for r in rows if r["backend"] == "highs"}
    for r in rows:
        if r["backend"] == "highs":
            assert r["ratio"] == 1.0
        else:
            mine, theirs = r["path_median"], ref[(r["problem"], r["gpus"])]["path_median"]
            assert r["ratio"] == pytest.approx(mine / theirs)


def test_guard_records_a_stuck_run_without_hanging(tmp_path):
    t0 = time.perf_counter()
    (rec,) = bench.run(SLEEPY, guard_seconds=2, progress=False, out=tmp_path / "g.jsonl")
    elapsed = time.perf_counter() - t0
    assert elapsed < 20, elapsed  # 2 s guard + process start-up, never the 120 s sleep
    assert rec.termination == "guard" and rec.limit == "guard"
    assert rec.has_incumbent is False and "no incumbent" in rec.outcome and "'solve'" in rec.outcome
    assert rec.objective is None and rec.gap is None
    assert rec.t_generate is not None and rec.t_build is None  # the phases done before the kill are kept
    assert 2 <= rec.t_wall < 20
    (back,) = bench.read_records(tmp_path / "g.jsonl")
    assert back == rec


def test_time_limit_with_incumbent_is_feasible():
    (rec,) = bench.run(SPLIT, backends=["highs"], time_limit=0.5, guard_seconds=60, progress=False)
    assert rec.termination == "feasible" and rec.limit == "time", (rec.outcome, rec.error)
    assert rec.has_incumbent and rec.outcome == "time limit with incumbent"
    assert rec.time_limit == 0.5 and 0.3 <= rec.t_solve < 5
    assert rec.sense == "minimize"
    assert rec.bound <= rec.objective + 1e-6 and rec.lp_bound <= rec.objective + 1e-6
    assert rec.gap > 0


def test_a_failing_run_is_recorded_not_raised():
    (rec,) = bench.run(BROKEN, progress=False)
    assert rec.termination == "error" and not rec.has_incumbent
    assert "generator exploded on purpose" in rec.error and "generate" in rec.outcome


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_records_round_trip(tmp_path, suffix):
    a = Record(sweep="s1", spec="sia", problem="sia", gpus=64, jobs=32, backend="highs", termination="optimal",
               has_incumbent=True, objective=1.5, bound=1.5, gap=0.0, t_solve=0.01, time_limit=None,
               packages="numpy=2;scipy=1", error='quote " and, comma')
    b = Record(sweep="s1", spec="sia", problem="sia", gpus=128, backend="cvxpy-glpk", termination="guard",
               limit="guard", has_incumbent=False, objective=None, gap=math.inf, bound=-math.inf, jobs=None,
               time_limit=2.5, outcome="guard: killed after 2 s, no incumbent")
    p = bench.write_records([a, b], tmp_path / f"t{suffix}")
    back = bench.read_records(p)
    assert back == [a, b]
    assert back[1].gap == math.inf and back[1].objective is None and back[0].has_incumbent is True


def test_bad_table_and_arguments_name_the_field(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("backend,termination,gpus\nhighs,optimal,sixty-four\n")
    with pytest.raises(schedopt.errors.InputError, match="gpus"):
        bench.read_records(bad)
    with pytest.raises(schedopt.errors.InputError, match="problem"):
        bench.run("no-such-problem")
    with pytest.raises(schedopt.errors.InputError, match="repeat"):
        bench.run(KNAP, repeat=0)
    with pytest.raises(schedopt.errors.InputError, match="path"):
        bench.write_records([], tmp_path / "x.txt")


def test_progress_writes_plain_lines_off_a_terminal_a_bar_when_forced_and_nothing_when_off():
    # auto off a terminal: plain lines (no carriage returns), at most one per interval, and one at the end
    log = io.StringIO()
    p = bench.Progress(4, None, stream=log, interval=3600.0)
    assert p.mode == "lines"
    p.update("a", advance=1)
    assert log.getvalue() == ""  # the interval has not passed
    p.update("b", advance=3)
    p.close()
    p.close()  # closing twice writes once
    lines = log.getvalue().splitlines()
    assert len(lines) == 1 and "\r" not in log.getvalue()
    assert lines[0].startswith("progress: 4/4 (100%) elapsed ") and lines[0].endswith(" finished")
    every = io.StringIO()
    p = bench.Progress(4, None, stream=every, interval=1e-9)
    p.update("sia 64 GPUs", advance=1)
    p.close()
    assert every.getvalue().splitlines() == [every.getvalue().splitlines()[0], every.getvalue().splitlines()[1]]
    assert every.getvalue().splitlines()[0].startswith("progress: 1/4 (25%)")
    assert every.getvalue().splitlines()[0].endswith("sia 64 GPUs")
    assert every.getvalue().splitlines()[1].endswith(" stopped")  # closed before all tasks were done
    # forced on: the bar with an estimate even though the stream is no terminal
    loud = io.StringIO()
    p = bench.Progress(4, True, stream=loud)
    assert p.mode == "bar"
    p.update("a", advance=2)
    assert "2/4" in loud.getvalue() and "left ~" in loud.getvalue() and "[############............]" in loud.getvalue()
    # forced off: nothing at all
    quiet = io.StringIO()
    p = bench.Progress(4, False, stream=quiet, interval=1e-9)
    p.update("a", advance=4)
    p.close()
    assert quiet.getvalue() == "" and not p.enabled


def test_bench_run_writes_progress_lines_to_a_non_terminal_stderr(capsys):
    bench.run(KNAP, backends=["highs"], progress=None, progress_interval=1e-9)
    err = capsys.readouterr().err.splitlines()
    lines = [e for e in err if e.startswith("progress: ")]
    # the serial sweep says which run starts (0/1, its label), then that it ended, then the closing line
    assert lines[0].startswith("progress: 0/1 (0%)") and lines[0].endswith("test-knapsack 64 GPUs seed 0 #0 highs")
    assert lines[-1].startswith("progress: 1/1 (100%)") and lines[-1].endswith("finished") and len(lines) == 3
    with pytest.raises(schedopt.errors.InputError, match="progress_interval"):
        bench.run(KNAP, backends=["highs"], progress_interval=0)


def test_specs_registry():
    all_specs = bench.specs()
    sia = all_specs["sia"]
    assert sia.sizes == (64, 128, 256, 512, 1024, 2048) and sia.large_sizes == (4096, 8192, 16384)
    assert sia.loads == ("normal", "heavy")
    for b in ("highs", "mckp", "cpsat", "glpk", "scipy", "cvxpy-glpk", "cvxpy-cbc", "pyomo"):
        assert b in sia.backends
    ok, skipped = sia.available_backends()
    assert "highs" in ok and "scipy" in ok and set(ok) | set(skipped) == set(sia.backends)
    bench.register_spec(KNAP)
    assert bench.specs()["test-knapsack"] is KNAP


@pytest.mark.parametrize("form", ["pairs", "dense"])
def test_cvxpy_baseline_is_the_same_model(form):
    """The cvxpy builder writes the LinearModel's model: both optima agree (cvxpy's bundled HiGHS, tight gap)."""
    pytest.importorskip("cvxpy")
    from schedopt.bench.baselines import build_sia_cvxpy
    from schedopt.sia import generate_instance

    problem = generate_instance(64, 1).problem()
    ref = schedopt.solve(problem.build(), "highs", mip_rel_gap=1e-9)
    built = build_sia_cvxpy(problem, form)
    built.problem.solve(solver="HIGHS", mip_rel_gap=1e-9)
    assert built.problem.value == pytest.approx(ref.objective, rel=1e-7)
    x = built.pair_values()
    assert problem.build().violations(np.round(x)) == {}
    assert problem.build().evaluate(np.round(x)) == pytest.approx(ref.objective, rel=1e-7)


def test_parallel_sweep_on_a_pool_keeps_order_and_results(smoke):
    """workers=2 (a local pool) and a user-supplied executor give the same records, in sweep order."""
    import concurrent.futures as cf

    _, recs = smoke
    seq = {r.backend: r.objective for r in recs if r.problem == "sia"}
    par = bench.run("sia", sizes=[64], seeds=[0], loads=["normal"], backends=["highs", "scipy"], progress=False, workers=2)
    assert [r.backend for r in par] == ["highs", "scipy"]
    assert {r.backend: r.objective for r in par} == pytest.approx(seq)
    with cf.ThreadPoolExecutor(2) as pool:
        ext = bench.run(KNAP, backends=["highs", "scipy"], progress=False, executor=pool)
    assert [r.objective for r in ext] == pytest.approx([9.0, 9.0])
    with pytest.raises(schedopt.errors.InputError, match="workers"):
        bench.run(KNAP, backends=["highs"], workers=0)


@pytest.mark.parametrize(("kw", "field"), [({"mip_rel_gap": 1.5}, "mip_rel_gap"), ({"solver_seed": -1}, "seed")])
def test_solver_parameters_are_validated_once_before_any_run(kw, field):
    """Issue 27: the sweep's SolveParams is built (and checked) in the parent, then handed to every run as it is."""
    with pytest.raises(InputError) as err:
        bench.run(KNAP, backends=["highs"], progress=False, **kw)
    assert err.value.field == field
