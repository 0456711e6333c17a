"""Issue 41: ``schedopt reproduce`` writes its results as the sweep records are written and checks them before it
trusts them on a rerun; its options are checked as ``simulate``'s; each claim gets a verdict."""

from __future__ import annotations

import json

import pytest

from schedopt.cli import main
from schedopt.errors import InputError
from schedopt.reproduce import FAILS, HOLDS, TOO_SMALL, Plan, judge, plan, reproduce_sia


def _code(argv: list[str]) -> int:
    """``schedopt ARGV``'s exit code (argparse's usage errors exit through SystemExit)."""
    try:
        return main(argv)
    except SystemExit as exc:
        return int(exc.code or 0)


def _tiny() -> Plan:
    return Plan(False, ("saturn/1",), main_policies=("fifo", "tiresias"), truncate=3, only_apps=("cifar10",),
                estimator="oracle", job_model="sia")


def test_a_cut_result_is_named_and_redone(tmp_path) -> None:
    from schedopt.sim.records import check_record

    logs: list[str] = []
    rep = reproduce_sia(tmp_path, sections=["main"], workers=1, progress=False, the_plan=_tiny(), log=logs.append)
    first = rep.read_text()
    files = sorted((tmp_path / "raw" / "main").glob("*.jsonl"))
    assert len(files) == 2 and all(check_record(f) is None for f in files)
    cut = files[0]
    cut.write_text("".join(cut.read_text().splitlines(keepends=True)[:5]))
    logs.clear()
    rep = reproduce_sia(tmp_path, sections=["main"], workers=1, progress=False, the_plan=_tiny(), log=logs.append)
    assert any(str(cut) in m and "redoing it" in m for m in logs), logs
    assert check_record(cut) is None
    res = json.loads((tmp_path / "results.json").read_text())
    assert res["redone"] == [str(cut)]
    keep = [ln for ln in first.splitlines() if "wall" not in ln]
    assert [ln for ln in rep.read_text().splitlines() if "wall" not in ln and "redone" not in ln] == keep
    # a result of other settings (another estimator) is not trusted either
    logs.clear()
    other = Plan(**{**_tiny().__dict__, "estimator": "bootstrap"})
    reproduce_sia(tmp_path, sections=["main"], workers=1, progress=False, the_plan=other, log=logs.append)
    assert sum("other settings" in m for m in logs) == 2


def test_output_that_is_a_file_is_named(tmp_path, capsys) -> None:
    f = tmp_path / "afile"
    f.write_text("x")
    assert main(["reproduce", "sia", "-o", str(f), "--quick"]) == 2
    err = capsys.readouterr().err
    assert "-o/--output" in err and "is a file" in err and "Traceback" not in err


@pytest.mark.parametrize("sections", [",", " , ", "main,,load", "nope"])
def test_sections_that_name_nothing_are_refused(tmp_path, capsys, sections: str) -> None:
    assert main(["reproduce", "sia", "-o", str(tmp_path / "r"), "--quick", "--sections", sections]) == 2
    assert "--sections" in capsys.readouterr().err
    assert not (tmp_path / "r" / "report.md").exists()


@pytest.mark.parametrize("argv, flag", [
    (["--workers", "0"], "--workers"), (["--workers", "x"], "--workers"), (["--workloads", ","], "--workloads"),
    (["--workloads", "nosuch/9"], "--workloads"), (["--executor", "pigeon"], "--executor"),
    (["--dask", "h:1", "--ray"], "--executor")])
def test_options_are_checked_as_simulates(tmp_path, capsys, argv: list[str], flag: str) -> None:
    assert _code(["reproduce", "sia", "-o", str(tmp_path / "r"), "--quick", *argv]) == 2
    err = capsys.readouterr().err
    assert flag in err and "Traceback" not in err


def test_api_checks() -> None:
    with pytest.raises(InputError, match="sections"):
        reproduce_sia("x", sections=[])
    with pytest.raises(InputError, match="sections"):
        reproduce_sia("x", sections=123)  # type: ignore[arg-type]  # TypeError before (found by the fuzz)
    with pytest.raises(InputError, match="workers"):
        reproduce_sia("x", workers=0)
    with pytest.raises(InputError, match="the_plan"):
        reproduce_sia("x", the_plan="quick")  # type: ignore[arg-type]


def test_verdicts_follow_the_numbers() -> None:
    full = plan()
    main_data = {"sia": {"sia_below_pct": []}, "pollux-unaware": {"sia_below_pct": [40.0, 50.0]},
                 "gavel": {"sia_below_pct": [35.0, 31.0]}}
    assert judge("main", main_data, full).verdict == HOLDS
    main_data["gavel"]["sia_below_pct"] = [35.0, 10.0]  # mean 22.5 % < 30 %
    v = judge("main", main_data, full)
    assert v.verdict == FAILS and "22 % below gavel" in v.reason  # 22.5 % rounds to even
    # load: the lead must grow with load
    pols = full.load_policies
    grow = {f"{pols[0]}@{x:g}": 100.0 for x in full.loads} | {f"{pols[1]}@{x:g}": 100 + 100 * x for x in full.loads}
    assert judge("load", grow, full).verdict == HOLDS
    shrink = {f"{pols[0]}@{x:g}": 100.0 for x in full.loads} | {f"{pols[1]}@{x:g}": 400 - 100 * x for x in full.loads}
    assert judge("load", shrink, full).verdict == FAILS
    # adaptivity: behind at any fraction -> does not hold
    ap = full.adaptivity_policies
    ad = {f"{p}@{f:g}": 100.0 for p in ap for f in full.rigid_fractions}
    ad |= {f"{ap[1]}@{f:g}": 200.0 for f in full.rigid_fractions} | {f"{ap[2]}@{f:g}": 150.0 for f in full.rigid_fractions}
    assert judge("adaptivity", ad, full).verdict == HOLDS
    ad[f"{ap[1]}@1"] = 90.0
    assert judge("adaptivity", ad, full).verdict == FAILS
    # sensitivity: within 25 % of the reference
    sens = {"avg_jct_s": {"sia:p=-0.5:lam=1.1": 100.0, "sia:p=1:lam=1.1": 120.0}}
    assert judge("sensitivity", sens, full).verdict == HOLDS
    sens["avg_jct_s"]["sia:p=1:lam=1.1"] = 130.0
    assert judge("sensitivity", sens, full).verdict == FAILS
    # scale: seconds per round at 2,048 GPUs, Pollux slower
    g = 2048
    sc = {f"{p}@{g}": {"cpu_s": 1.0 if p.startswith("sia") else 30.0} for p in full.scale_policies}
    assert judge("scale", sc, full).verdict == HOLDS
    sc[f"pollux-unaware@{g}"] = {"cpu_s": 0.5}
    assert judge("scale", sc, full).verdict == FAILS


def test_quick_sizes_cannot_tell() -> None:
    q = plan(quick=True)
    main_data = {"sia": {"sia_below_pct": [-5.0]}, "pollux-unaware": {"sia_below_pct": [-5.0]}}
    v = judge("main", main_data, q)
    assert v.verdict == TOO_SMALL and "10 jobs per workload" in v.reason and "-5 %" in v.reason
    assert judge("scale", {f"sia:backend=mckp@{g}": {"cpu_s": 0.1} for g in q.scale_gpus}, q).verdict == TOO_SMALL
    assert judge("load", {}, q).verdict == TOO_SMALL
