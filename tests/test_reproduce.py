"""``schedopt reproduce sia``: the Sia paper's evaluation in one command (issue 31 item 5)."""

from __future__ import annotations

import json

import pytest

from schedopt.errors import InputError
from schedopt.reproduce import CLAIMS, SECTIONS, Plan, _Workloads, plan, reproduce_sia


def test_plans_cover_every_section_and_the_quick_one_is_small() -> None:
    full, quick = plan(), plan(quick=True)
    assert set(CLAIMS) == set(SECTIONS)
    assert full.rigid_fractions == (0.0, 0.25, 0.5, 0.75, 1.0) and full.scale_gpus[-1] == 2048
    assert len(full.main_workloads) == 18 and min(full.p_values) == -1.0 and max(full.p_values) == 1.0
    assert quick.truncate == 10 and quick.scale_gpus == (64, 128) and quick.estimator == "oracle"
    assert full.main_policies[:2] == quick.main_policies[:2] == ("sia", "sia:published")  # issue 43


def test_derived_workloads_scale_arrivals_and_repeat_jobs(tmp_path) -> None:
    from schedopt.sim import load_workload

    wl = _Workloads(tmp_path, 4, ("cifar10",))
    base = load_workload(wl.base("saturn/1"))
    assert len(base) == 4 and {j.application for j in base.jobs} == {"cifar10"}
    fast = load_workload(wl.loaded("saturn/1", 2.0))
    assert [j.time for j in fast.jobs] == pytest.approx([j.time / 2 for j in base.jobs])
    rep = load_workload(wl.repeated("saturn/1", 3))
    assert len(rep) == 12 and sorted(j.time for j in rep.jobs) == sorted(3 * [j.time for j in base.jobs])


def test_unknown_sections_are_refused(tmp_path) -> None:
    with pytest.raises(InputError, match="sections"):
        reproduce_sia(tmp_path, quick=True, sections=["nope"])


def test_cli_parses_reproduce() -> None:
    from schedopt.cli import build_parser

    a = build_parser().parse_args(["reproduce", "sia", "-o", "x", "--quick", "--sections", "main,load"])
    assert a.paper == "sia" and a.quick and a.sections == "main,load"


@pytest.mark.slow
def test_quick_reproduction_writes_every_table_and_resumes(tmp_path) -> None:
    rep = reproduce_sia(tmp_path, quick=True, workers=1, progress=False, log=lambda m: None)
    text = rep.read_text()
    for s in SECTIONS:
        assert CLAIMS[s] in text
    res = json.loads((tmp_path / "results.json").read_text())
    assert set(res["sections"]) == set(SECTIONS)
    main = res["sections"]["main"]
    assert main["sia"]["unfinished"] == 0 and main["pollux-unaware"]["unfinished"] == 0
    assert main["sia:published"]["unfinished"] == 0 and "sia:published" in text  # issue 43: the published preset
    assert main["vs_published"] == {}  # the quick workload is truncated: no published run of it
    # all-rigid: both policies run the same rigid jobs; the JCTs are finite and positive
    ad = res["sections"]["adaptivity"]
    assert all(v > 0 for v in ad.values())
    assert {k for k in ad if "@strong" in k} == {"schedopt.sim.adaptivity:SiaAnyRigid@strong1", "pollux@strong1"}
    assert (tmp_path / "adaptivity.png").is_file() and (tmp_path / "scale.png").is_file()
    assert (tmp_path / "adaptivity_strong.png").is_file()
    n = len(list((tmp_path / "raw").rglob("*.jsonl")))
    assert n == 3 + 6 + 4 + 4 + 2  # main, adaptivity (rigid 0 and 1, strong-scaling 1), load, sensitivity, scale
    # a rerun reads everything back from disk and writes the same tables
    logs: list[str] = []
    rep2 = reproduce_sia(tmp_path, quick=True, workers=1, progress=False, log=logs.append,
                         the_plan=Plan(**{**plan(quick=True).__dict__}))
    assert not logs  # nothing was simulated again
    strip = [ln for ln in text.splitlines() if "wall" not in ln]
    assert [ln for ln in rep2.read_text().splitlines() if "wall" not in ln] == strip


def test_a_stopped_group_keeps_the_simulations_that_finished(tmp_path) -> None:
    """A group's simulations are kept one by one (``<group>.parts``): a group stopped after its first simulation
    reruns only the others, and the kept record comes back unchanged (its measured policy times included, which a
    rerun could not reproduce to the bit)."""
    from schedopt.reproduce import _Runner, _slug
    from schedopt.sim import read_jsonl, simulate_many

    wl = _Workloads(tmp_path, 4, ("cifar10",))
    w = wl.base("saturn/1")
    kw = {"cluster": "sia-64", "max_time": 1800.0}
    d = tmp_path / "raw" / "main"
    # the state a stop leaves: fifo's simulation of the group finished and kept, tiresias' not
    simulate_many(["fifo"], [w], workers=1, progress=False, estimator="oracle", job_model="sia",
                  output_dir=d / f"{_slug('g')}.parts", **kw)
    (kept,) = [p for p in (d / "g.parts").iterdir() if p.suffix == ".jsonl"]
    before = kept.read_text()
    run = _Runner(tmp_path, 1, None, False, lambda m: None, "oracle", "sia")
    res = run.run("main", "g", ["fifo", "tiresias"], [w], **kw)
    times = [r.policy_seconds for r in read_jsonl(before).rounds]
    assert len(times) > 10 and [r.policy_seconds for r in res[("fifo", w)].rounds] == times
    assert res[("tiresias", w)].summary()["jobs"] == 4
    assert not (d / "g.parts").exists()  # the group's own files hold every record now
