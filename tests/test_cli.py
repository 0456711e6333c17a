"""The command line end to end, in subprocesses, as a shell user runs it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

PROBLEMS = ["sia", "synergy", "heterps", "gandiva", "hived"]


def run_subprocess(*args: str, timeout: float = 180) -> subprocess.CompletedProcess:
    """The real thing: ``python -m schedopt ...`` in a fresh process."""
    return subprocess.run(
        [sys.executable, "-m", "schedopt", *args], capture_output=True, text=True, timeout=timeout
    )


def run(*args: str, timeout: float = 180) -> subprocess.CompletedProcess:
    """``schedopt.cli.main`` in this process (the same code path, without paying an interpreter start per call)."""
    import contextlib
    import io

    from schedopt.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(args))
        except SystemExit as exc:  # argparse: --help and usage errors
            code = int(exc.code or 0)
    return subprocess.CompletedProcess(list(args), code, out.getvalue(), err.getvalue())


@pytest.mark.parametrize("problem", PROBLEMS)
def test_generate_then_solve(problem, tmp_path: Path):
    f = tmp_path / f"{problem}.json"
    g = run("generate", problem, "--gpus", "64", "--seed", "2", "-o", str(f))
    assert g.returncode == 0, g.stderr
    doc = json.loads(f.read_text())
    assert doc["schema"] == "schedopt.instance" and doc["problem"] == problem
    assert doc["generator"] == {"problem": problem, "gpus": 64, "seed": 2}
    s = (run_subprocess if problem == "sia" else run)("solve", str(f), "--json")
    assert s.returncode == 0, s.stderr
    out = json.loads(s.stdout)
    assert out["problem"] == problem
    assert str(out["summary"]["termination"]).split()[0].lower() in ("optimal", "feasible", "valid")
    assert out["allocation"], "an allocation table with at least one row"
    text = run("solve", str(f))
    assert text.returncode == 0 and "termination" in text.stdout


def test_generate_is_deterministic(tmp_path: Path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    for f in (a, b):
        assert run("generate", "sia", "--gpus", "128", "--seed", "5", "-o", str(f)).returncode == 0
    assert a.read_text() == b.read_text()


def test_demo_prints_a_placed_allocation():
    r = run_subprocess("demo")
    assert r.returncode == 0, r.stderr
    assert "termination: OPTIMAL" in r.stdout
    assert "GPUs used per type" in r.stdout and "a100-0:" in r.stdout


def test_backends_lists_capabilities():
    r = run("backends", "--json")
    info = {b["name"]: b for b in json.loads(r.stdout)}
    assert info["highs"]["available"] and info["highs"]["mip"] and info["highs"]["iis"]
    assert info["cpsat"]["integer_only"]
    assert "LP" in run("backends").stdout


def test_explain_names_the_forced_jobs(tmp_path: Path):
    """Two non-preemptible jobs each holding both A100 nodes (16 GPUs) cannot both keep them."""
    from schedopt import instances, sia

    inst = sia.generate_instance(64, seed=0)
    cfg = sia.Config(2, 16, "a100")
    jobs = list(inst.jobs)
    for i in (0, 1):
        jobs[i] = sia.Job(jobs[i].id, current=cfg, preemptible=False, max_profiled_gpus=16)
    bad = sia.SiaInstance(**{**inst.__dict__, "jobs": tuple(jobs)}) if hasattr(inst, "__dict__") else None
    assert bad is not None
    f = tmp_path / "bad.json"
    instances.save(bad, f)
    e = run("explain", str(f))
    assert e.returncode == 0, e.stderr
    assert "j0" in e.stdout and "j1" in e.stdout and "a100" in e.stdout
    s = run("solve", str(f))
    assert s.returncode == 1
    assert "a100" in s.stderr


def test_exit_codes_and_messages(tmp_path: Path):
    missing = run("solve", str(tmp_path / "nope.json"))
    assert missing.returncode == 2 and "path" in missing.stderr and "does not exist" in missing.stderr
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"schema": "schedopt.instance", "version": 1, "problem": "sia", "data": {"jobs": []}}))
    r = run("solve", str(bad))
    assert r.returncode == 2 and "data.cluster" in r.stderr
    f = tmp_path / "s.json"
    assert run("generate", "sia", "-o", str(f)).returncode == 0
    r = run("solve", str(f), "--backend", "nosuchsolver")
    assert r.returncode == 3 and "nosuchsolver" in r.stderr
    r = run("generate", "nosuchproblem", "-o", str(f))
    assert r.returncode == 2 and "nosuchproblem" in r.stderr


@pytest.mark.parametrize(
    "cmd", [[], ["solve"], ["generate"], ["explain"], ["backends"], ["demo"], ["bench"], ["bench", "report"]]
)
def test_help_on_every_command(cmd):
    r = run(*cmd, "--help")
    assert r.returncode == 0 and "usage:" in r.stdout


def test_bench_and_report_from_the_command_line(tmp_path: Path):
    out = tmp_path / "results.csv"
    r = run("bench", "--problem", "sia", "--sizes", "64", "--backends", "highs", "-o", str(out), timeout=300)
    assert r.returncode == 0, r.stderr
    assert out.exists() and out.read_text().count("\n") >= 3
    rep = run("bench", "report", str(out), "-o", str(tmp_path / "report"))
    assert rep.returncode == 0, rep.stderr
    assert (tmp_path / "report" / "report.md").exists()
