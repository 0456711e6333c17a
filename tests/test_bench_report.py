"""The bench report for ProblemIO problems (issue 18, item 7): times and incumbents recorded from the typed answers,
one figure set per problem, runs stopped by a limit counted and drawn apart, no warnings."""

from __future__ import annotations

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
