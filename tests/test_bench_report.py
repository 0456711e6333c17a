"""The bench report for ProblemIO problems (issue 18, item 7): times and incumbents recorded from the typed answers,
one figure set per problem, runs stopped by a limit counted and drawn apart, no warnings."""

from __future__ import annotations

import re
import warnings

import pytest

from schedopt import bench


@pytest.fixture(scope="module")
def records():
    """HeterPS (the DP to its optimum; the MILP stopped at 0.05 s: the DP honours a time limit too, so it gets its
    own run) and Gandiva (greedy packing) through the real harness."""
    h = bench.run("heterps", sizes=[4], backends=["dp"], time_limit=60)
    h += bench.run("heterps", sizes=[4], backends=["milp@highs"], time_limit=0.05)
    g = bench.run("gandiva", sizes=[16], backends=["greedy"])
    return h + g


def test_problemio_records_keep_times_incumbents_and_limits(records):
    dp, milp, greedy = records
    assert dp.termination == "optimal" and dp.limit == "" and dp.objective == dp.bound and dp.gap == 0.0
    assert dp.t_solve > 0 and dp.t_path >= dp.t_solve and dp.jobs == 1 and dp.gpus == 4
    # the MILP stopped by its time limit: an incumbent is kept (feasible) or none was found, never an "error"
    assert milp.termination in ("feasible", "no_solution_found") and milp.limit == "time"
    assert milp.has_incumbent == (milp.objective is not None)
    assert milp.variables and milp.lp_bound is None  # a Dinkelbach loop: no single model's LP bound applies
    assert greedy.termination == "feasible" and greedy.limit == "heuristic" and greedy.bound is None
    assert greedy.objective > 0 and greedy.t_solve is not None


def test_report_has_one_figure_set_per_problem_and_no_warnings(records, tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        md = bench.report(records, tmp_path)
    names = sorted(p.name for p in tmp_path.glob("*.png"))
    assert names == ["gap_vs_time_heterps.png", "phase_share_gandiva.png", "phase_share_heterps.png",
                     "time_vs_gpus_gandiva.png", "time_vs_gpus_heterps.png"]  # gandiva's greedy has no gap
    text = md.read_text()
    rows = {r["backend"]: r for r in bench.summarize(records)}
    assert rows["milp@highs"]["limited"] == 1 and rows["dp"]["limited"] == 0 and rows["greedy"]["limited"] == 0
    assert rows["dp"]["solve_median"] > 0 and rows["greedy"]["path_median"] > 0  # times shown, not "-"
    line = next(ln for ln in text.splitlines() if "| dp |" in ln)
    assert "optimal×1 | 0 |" in line and "| – | – | – |" not in line


def test_records_name_the_method_that_ran(records):
    """The answer's own method name, beside the sweep entry."""
    got = [(r.backend, r.method) for r in records]
    assert got == [("dp", "exact-dp"), ("milp@highs", "exact-milp"), ("greedy", "greedy")]


def test_every_report_table_has_one_time_unit_written_in_its_header(records, tmp_path):
    md = bench.report(records, tmp_path).read_text()
    tables = [line for line in md.splitlines() if line.startswith("| GPUs")]
    assert len(tables) == 2
    for header in tables:
        units = set(re.findall(r"\((ms|s)\)", header))
        assert len(units) == 1 and header.count(f"({units.pop()})") == 7, header
    rows = [line for line in md.splitlines() if line.startswith("| ") and not line.startswith("| GPUs")]
    assert rows and not any(re.search(r"\d(ms|s)\b", r) for r in rows)  # numbers only: the unit is in the header


def test_one_time_unit_per_table_is_chosen_from_its_largest_time():
    from schedopt.bench.report import _fmt_t, _time_unit

    assert _time_unit([0.034, 0.5, None]) == "ms" and _time_unit([0.034, 30.02]) == "s"
    assert [_fmt_t(x, "ms") for x in (0.034, 0.0004567, 1.5)] == ["34.00", "0.457", "1500"]
    assert [_fmt_t(x, "s") for x in (0.034, 30.02, 250.0)] == ["0.034", "30.02", "250.0"]


@pytest.mark.parametrize(("entry", "method"), [("highs", "tune"), ("greedy@highs", "greedy")])
def test_the_harness_refuses_a_backend_the_method_does_not_use(entry, method):
    """Issue 27: `bench --problem synergy --backends highs` ran TUNE and recorded backend=highs."""
    from schedopt.bench.registry import get_spec
    from schedopt.errors import InputError

    spec = get_spec("synergy")
    with pytest.raises(InputError, match=f"method '{method}'.* uses no solver backend") as err:
        spec.available_backends([entry])
    assert err.value.field == "backends[0]" and err.value.value == entry
    assert spec.available_backends(["tune", "opt@highs"])[0] == ["tune", "opt@highs"]
    with pytest.raises(InputError, match="uses no solver backend"):
        get_spec("heterps").available_backends(["highs"])  # its default method is the DP


def test_synergy_refuses_a_backend_for_a_heuristic_method():
    from schedopt import synergy
    from schedopt.errors import InputError
    from schedopt.problem import SolveOptions
    from schedopt.synergy.io import solve_instance

    inst = synergy.generate_instance(16, 0)
    with pytest.raises(InputError, match="uses no solver backend") as err:
        solve_instance(inst, SolveOptions(backend="highs"))
    assert err.value.field == "backend"
    assert solve_instance(inst, SolveOptions(method="tune")).method


@pytest.mark.parametrize(("problem", "entry"), [("hived", "counting@highs"), ("gandiva", "greedy@highs")])
def test_every_problem_declares_which_methods_take_a_backend(problem, entry):
    from schedopt.bench.registry import get_spec
    from schedopt.errors import InputError
    from schedopt.problem import get_problem

    io = get_problem(problem)
    assert io.backend_methods is not None and set(io.backend_methods) < set(io.methods)
    with pytest.raises(InputError, match="uses no solver backend"):
        get_spec(problem).available_backends([entry])


def test_hived_counting_refuses_a_backend_it_would_not_use():
    from schedopt.errors import InputError
    from schedopt.problem import SolveOptions, get_problem

    io = get_problem("hived")
    with pytest.raises(InputError, match="uses no solver backend") as err:
        io.solve(io.generate(16, 0), SolveOptions(method="counting", backend="highs"))
    assert err.value.field == "backend"
