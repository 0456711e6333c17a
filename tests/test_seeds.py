"""Issue 41: what a seed varies is stated (schedopt.sim.seeds, the --help texts), a sweep whose seeds cannot change
anything is warned about, and the report's figures draw identical runs as one line with a note."""

from __future__ import annotations

import warnings

import pytest

from schedopt.cli import build_parser, main
from schedopt.sim import Workload, load_workload, simulate_many
from schedopt.sim.plots import distinct_runs, identical_note, utilization_figure
from schedopt.sim.seeds import SeedWarning, inert_seeds, seed_effect
from schedopt.sim.sweep import tasks


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> str:
    w = load_workload("saturn/1")
    p = tmp_path_factory.mktemp("w") / "tiny.csv"
    p.write_text(Workload("tiny", w.jobs[:3]).to_csv())
    return str(p)


@pytest.mark.parametrize("policy, workload, varies", [
    ("fifo", "saturn/1", None), ("sia", "saturn/1", None), ("tiresias", "philly/2", None),
    ("optimus", "saturn/1", None), ("gavel", "saturn/1", None), ("pollux", "saturn/1", "pollux's random draws"),
    ("pollux-unaware", "saturn/1", "pollux-unaware's random draws"),
    ("gandiva", "gandiva/synthetic", "synthetic trace"), ("hived", "hived/synthetic", "synthetic trace"),
    ("synergy", "synergy/philly", "generated trace"), ("synergy", "synergy/static", None),
])
def test_what_a_seed_varies(policy: str, workload: str, varies: str | None) -> None:
    got = seed_effect(policy, workload)
    assert (got is None) if varies is None else (got is not None and varies in got)


def test_inert_seeds_are_warned_and_give_identical_runs(tiny: str) -> None:
    with pytest.warns(SeedWarning, match=r"seeds 0-2 of fifo on .*tiny.csv cannot change anything"):
        res = simulate_many(["fifo"], [tiny], seeds=range(3), workers=1, progress=False)
    assert len(distinct_runs(res)) == 1  # the warning was right: one run, three times
    assert identical_note(res) and "seeds 0-2 gave identical runs" in identical_note(res)[0]
    fig = utilization_figure(res)
    labels = fig.axes[0].get_legend_handles_labels()[1]
    assert labels == ["fifo, seeds 0-2 (identical runs)"]
    # seeds that draw another trace: no warning, and the runs differ
    with warnings.catch_warnings():
        warnings.simplefilter("error", SeedWarning)
        gan = simulate_many(["gandiva"], ["gandiva/synthetic:jobs=6"], seeds=[0, 1], workers=1, progress=False)
    assert len(distinct_runs(gan)) == 2 and not identical_note(gan)
    assert not inert_seeds(tasks(["fifo"], [tiny], [0]))  # one seed: nothing to say


def test_cli_warns_and_the_report_says_it(tiny: str, tmp_path, caplog) -> None:
    out, rep = tmp_path / "runs", tmp_path / "rep"
    assert main(["simulate", "--policy", "fifo", "--workload", tiny, "--seeds", "0-1", "-o", str(out),
                 "--progress", "off"]) == 0
    assert any("seeds 0, 1 of fifo" in r.getMessage() and "cannot change anything" in r.getMessage()
               for r in caplog.records)
    assert main(["simulate", "report", str(out), "-o", str(rep)]) == 0
    text = (rep / "report.md").read_text()
    assert "Identical runs" in text and "seeds 0, 1 gave identical runs" in text


def test_help_texts_say_what_a_seed_varies() -> None:
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    for cmd, words in (("simulate", "random draws"), ("generate", "draws the instance"),
                       ("solve", "never the instance"), ("reproduce", "a seed varies only")):
        text = " ".join(sub.choices[cmd].format_help().split())  # type: ignore[union-attr]
        assert words in text, cmd
