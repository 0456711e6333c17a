"""The command line end to end, as a shell user runs it: every subcommand, --json against its schema, every exit
code, one-line argument errors, Ctrl-C.

jsonschema (a test dependency) validates the --json documents against schedopt/schemas/cli.schema.json: a schema
checker written by others is the independent check the documents need.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import jsonschema
import pytest

from schedopt import schemas
from schedopt.testing.interrupt import sigint_default

PROBLEMS = ["sia", "synergy", "heterps", "gandiva", "hived", "gavel", "pollux"]
ROOT = Path(__file__).resolve().parents[1]
CLI_SCHEMA = jsonschema.Draft202012Validator(schemas.load("cli"))


def run_subprocess(*args: str, timeout: float = 180, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """The real thing: ``python -m schedopt ...`` in a fresh process (this tree's code first on the path)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", "schedopt", *args], capture_output=True, text=True, timeout=timeout,
                          env=env, cwd=cwd)


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


def parsed(r: subprocess.CompletedProcess) -> dict:
    """The --json document: strict JSON (NaN / Infinity refused), valid against the CLI schema, exit code inside."""
    def no_constants(name: str) -> None:
        raise AssertionError(f"non-standard JSON constant {name} in the output")

    doc = json.loads(r.stdout, parse_constant=no_constants)
    CLI_SCHEMA.validate(doc)
    assert doc["exit_code"] == r.returncode
    return doc


# --------------------------------------------------------------------------------------------- every problem
@pytest.mark.parametrize("problem", PROBLEMS)
def test_generate_then_solve(problem, tmp_path: Path):
    """(sia, synergy, hived pass once their packages' typed ProblemIO is merged.)"""
    f = tmp_path / f"{problem}.json"
    g = run("generate", problem, "--gpus", "64", "--seed", "2", "-o", str(f), "--json")
    assert g.returncode == 0, g.stderr
    gd = parsed(g)
    assert gd["size"]["gpus"] >= 1 and gd["output"] == str(f)
    doc = json.loads(f.read_text())
    assert doc["schema"] == "schedopt.instance" and doc["problem"] == problem
    assert doc["generator"] == {"problem": problem, "gpus": 64, "seed": 2}
    s = (run_subprocess if problem == "sia" else run)("solve", str(f), "--json")
    assert s.returncode == 0, s.stderr
    out = parsed(s)
    assert out["problem"] == problem and out["command"] == "solve"
    assert out["answer"]["termination"]["reason"] in ("optimal", "feasible")
    if problem != "hived":  # HiveD's validity check is a feasibility problem: no objective (null)
        assert isinstance(out["answer"]["objective"], float)
    text = run("solve", str(f))
    assert text.returncode == 0 and "termination" in text.stdout
    e = run("explain", str(f), "--json")
    assert e.returncode == 0 and parsed(e)["feasible"] is True


def test_generate_is_deterministic(tmp_path: Path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    for f in (a, b):
        assert run("generate", "heterps", "--gpus", "8", "--seed", "5", "-o", str(f)).returncode == 0
    assert a.read_text() == b.read_text()


def test_heterps_json_carries_the_typed_answer(tmp_path: Path):
    """nce with 4 GPUs: the DP's optimum, the greedy's FEASIBLE/heuristic answer (no bound: null, never NaN), the
    MILP's agreement, and the structured plan."""
    f = tmp_path / "h.json"
    assert run("generate", "heterps", "--gpus", "4", "--param", "model=nce", "-o", str(f)).returncode == 0
    dp = parsed(run("solve", str(f), "--json"))["answer"]
    assert dp["termination"] == {"reason": "optimal", "limit": None, "detail": "DP over levels"}
    assert dp["bound"] == dp["objective"] == dp["cost"] and dp["gap"] == 0.0
    assert sum(st["stop"] - st["first"] for st in dp["stages"]) == len(dp["plan"])
    greedy = parsed(run("solve", str(f), "--json", "--method", "greedy"))["answer"]
    assert greedy["termination"]["reason"] == "feasible" and greedy["termination"]["limit"] == "heuristic"
    assert greedy["bound"] is None and greedy["gap"] is None and greedy["objective"] >= dp["objective"] - 1e-12
    milp = parsed(run("solve", str(f), "--json", "--backend", "highs", "--threads", "1", "--gap", "0"))["answer"]
    assert milp["backend"] == "highs" and milp["objective"] == pytest.approx(dp["objective"], rel=1e-7)


def test_gandiva_operations_from_the_command_line(tmp_path: Path):
    for op, kind in (("pack", "assignment"), ("defragment", "moves"), ("allocate", "allocations")):
        f = tmp_path / f"{op}.json"
        assert run("generate", "gandiva", "--gpus", "16", "--param", f"operation={op}", "-o", str(f)).returncode == 0
        ans = parsed(run("solve", str(f), "--json"))["answer"]
        assert kind in ans
        if op == "allocate":
            assert ans["termination"]["limit"] == "heuristic" and ans["method"] == "algorithm1"
        else:
            assert ans["termination"]["reason"] == "optimal"


def test_backends_lists_capabilities():
    r = run("backends", "--json")
    info = {b["name"]: b for b in parsed(r)["backends"]}
    assert info["highs"]["available"] and info["highs"]["mip"] and info["highs"]["version"]
    assert info["cpsat"]["integer_only"]
    assert "LP" in run("backends").stdout


def test_demo_prints_a_placed_allocation():
    """(passes once Sia's typed ProblemIO is merged.)"""
    r = run_subprocess("demo")
    assert r.returncode == 0, r.stderr
    assert "termination: OPTIMAL" in r.stdout
    assert "GPUs used per type" in r.stdout and "a100-0:" in r.stdout
    d = parsed(run_subprocess("demo", "--json"))
    assert d["answer"]["termination"]["reason"] == "optimal" and sum(d["gpus_used"].values()) > 0


# --------------------------------------------------------------------------------------------- exit codes
def _infeasible_heterps(tmp_path: Path) -> Path:
    from schedopt import heterps, instances

    f = tmp_path / "tight.json"
    instances.save(heterps.generate("nce", 0, gpus=4).with_limit(1e9), f)
    return f


def test_exit_0_for_a_heuristic_answer_and_for_a_limit_with_incumbent(tmp_path: Path):
    f = tmp_path / "g.json"
    assert run("generate", "gandiva", "--gpus", "16", "-o", str(f)).returncode == 0
    r = run("solve", str(f), "--method", "greedy", "--json")
    assert r.returncode == 0 and parsed(r)["answer"]["termination"]["limit"] == "heuristic"


def test_exit_1_no_solution_with_an_answer_on_stdout(tmp_path: Path):
    """A throughput floor of 1e9 samples/s: no plan reaches it; solve and explain both exit 1 and say why."""
    f = _infeasible_heterps(tmp_path)
    r = run("solve", str(f), "--json")
    assert r.returncode == 1
    ans = parsed(r)["answer"]
    assert ans["termination"]["reason"] == "infeasible" and ans["objective"] is None
    assert "throughput_limit" in ans["explanation"]
    t = run("solve", str(f))
    assert t.returncode == 1 and "throughput_limit" in t.stderr
    e = run("explain", str(f), "--json")
    assert e.returncode == 1
    ed = parsed(e)
    assert ed["feasible"] is False and "out of reach" in ed["explanation"] + ed["answer"]["explanation"]


def test_exit_2_bad_input_names_the_field(tmp_path: Path):
    missing = run("solve", str(tmp_path / "nope.json"), "--json")
    assert missing.returncode == 2 and "does not exist" in missing.stderr
    assert parsed(missing)["error"]["field"] == "path"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"schema": "schedopt.instance", "version": 1, "problem": "heterps",
                               "data": {"layers": []}}))
    r = run("solve", str(bad))
    assert r.returncode == 2 and "data.types" in r.stderr
    r = run("generate", "nosuchproblem", "-o", str(tmp_path / "x.json"))
    assert r.returncode == 2 and "nosuchproblem" in r.stderr


def test_exit_3_unknown_backend_in_solve_and_bench(tmp_path: Path):
    f = tmp_path / "h.json"
    assert run("generate", "heterps", "--gpus", "4", "-o", str(f)).returncode == 0
    r = run("solve", str(f), "--backend", "nosuchsolver", "--json")
    assert r.returncode == 3 and "nosuchsolver" in r.stderr and parsed(r)["error"]["type"] == "BackendUnavailableError"
    r = run("bench", "--problem", "heterps", "--backends", "dp,nosuchsolver", "-o", str(tmp_path / "r.csv"))
    assert r.returncode == 3 and "nosuchsolver" in r.stderr and not (tmp_path / "r.csv").exists()


def test_exit_4_internal_error_reports_the_bug():
    """A problem package whose solve has a bug: exit 4, the traceback on stderr, an error object on stdout."""
    from dataclasses import dataclass

    from schedopt.problem import ProblemIO, problems, register_problem

    @dataclass
    class Broken:
        n: int

    def buggy_solve(spec, options):
        return {}["no such key"]

    register_problem(ProblemIO("test-broken", Broken, lambda s: {"n": s.n}, lambda d: Broken(d["n"]),
                               solve=buggy_solve, generate=lambda gpus, seed: Broken(gpus)))
    try:
        import tempfile

        with tempfile.TemporaryDirectory() as d:
            f = Path(d) / "b.json"
            assert run("generate", "test-broken", "-o", str(f)).returncode == 0
            r = run("solve", str(f), "--json")
            assert r.returncode == 4 and "Traceback" in r.stderr and "KeyError" in r.stderr
            assert parsed(r)["error"]["type"] == "KeyError"
    finally:
        from schedopt import problem as problem_module

        problem_module.unregister_problem("test-broken")
        assert "test-broken" not in problems()


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (["generate", "heterps", "--gpus", "0", "-o", "x.json"], "--gpus"),
        (["generate", "heterps", "--gpus", "x", "-o", "x.json"], "--gpus"),
        (["generate", "heterps", "--param", "oops", "-o", "x.json"], "--param"),
        (["generate", "heterps", "--param", "nosuch=1", "-o", "x.json"], "--param"),
        (["bench", "--sizes", "64,abc"], "--sizes"),
        (["bench", "--seeds", "x"], "--seeds"),
        (["bench", "--repeat", "0"], "--repeat"),
        (["bench", "--problem", "nosuch"], "--problem"),
        (["bench", "--executor", "carrier-pigeon"], "--executor"),
        (["bench", "--progress-every", "0"], "--progress-every"),
        (["solve", "x.json", "--time-limit", "-3"], "--time-limit"),
        (["solve", "x.json", "--gap", "2"], "--gap"),
        (["solve", "x.json", "--threads", "-1"], "--threads"),
        (["demo", "--gpus", "0"], "--gpus"),
    ],
)
def test_argument_errors_are_one_line_naming_the_flag(argv, flag, tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    r = run(*argv)
    assert r.returncode == 2, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and flag in lines[0] and "Traceback" not in r.stderr, r.stderr
    j = run(*argv, "--json")
    assert j.returncode == 2 and parsed(j)["error"]["message"]


@pytest.mark.parametrize(
    "cmd", [[], ["solve"], ["generate"], ["explain"], ["backends"], ["demo"], ["bench"], ["bench", "report"]]
)
def test_help_on_every_command_documents_the_exit_codes(cmd):
    r = run(*cmd, "--help")
    assert r.returncode == 0 and "usage:" in r.stdout
    assert "exit codes:" in r.stdout and "130" in r.stdout and "--json" in r.stdout


def test_readme_documents_the_exit_codes():
    """The tour's table (docs/guides/tour.md; the CLI page's is generated from EXIT_CODES itself)."""
    from schedopt.cli_support import EXIT_CODES

    text = (ROOT / "docs" / "guides" / "tour.md").read_text()
    for code in EXIT_CODES:
        assert f"| {code} " in text, code


# --------------------------------------------------------------------------------------------- bench
def test_bench_progress_lines_off_a_terminal_and_the_flag_that_silences_them(tmp_path: Path):
    """stderr is no terminal here: --progress auto writes plain lines (no carriage return), the last one 'finished';
    --progress off writes none; the records are the same either way."""
    args = ("bench", "--problem", "heterps", "--sizes", "64", "--backends", "dp")
    r = run(*args, "--progress-every", "0.001", "-o", str(tmp_path / "a.csv"))
    assert r.returncode == 0, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith("progress: ")]
    assert "\r" not in r.stderr and lines[-1].startswith("progress: 1/1 (100%)") and lines[-1].endswith("finished")
    q = run(*args, "--progress", "off", "-o", str(tmp_path / "b.csv"))
    assert q.returncode == 0 and "progress" not in q.stderr and "\r" not in q.stderr, q.stderr
    on = run(*args, "--progress", "on", "-o", str(tmp_path / "c.csv"))
    assert on.returncode == 0 and "\r\x1b[2K[" in on.stderr and "1/1 elapsed" in on.stderr


def test_bench_and_report_from_the_command_line(tmp_path: Path):
    out = tmp_path / "results.csv"
    r = run("bench", "--problem", "heterps", "--sizes", "4", "--backends", "dp,greedy", "-o", str(out), "--json",
            "--executor", "threads:2")
    assert r.returncode == 0, r.stderr
    doc = parsed(r)
    assert doc["runs"] == 2 and [x["backend"] for x in doc["records"]] == ["dp", "greedy"]
    dp, greedy = doc["records"]
    assert dp["termination"] == "optimal" and greedy["termination"] == "feasible" and greedy["limit"] == "heuristic"
    assert greedy["objective"] >= dp["objective"] - 1e-12 and dp["t_solve"] > 0 and greedy["t_solve"] > 0
    assert out.exists() and out.read_text().count("\n") == 3
    rep = run("bench", "report", str(out), "-o", str(tmp_path / "report"), "--json")
    assert rep.returncode == 0, rep.stderr
    assert parsed(rep)["output"].endswith("report.md") and (tmp_path / "report" / "report.md").exists()


def test_bench_without_output_writes_a_default_file_and_says_where(tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    r = run("bench", "--problem", "heterps", "--sizes", "4", "--backends", "greedy")
    assert r.returncode == 0, r.stderr
    written = list(tmp_path.glob("bench-heterps-*.csv"))
    assert len(written) == 1 and written[0].name in r.stderr and written[0].name in r.stdout
    assert written[0].read_text().count("\n") == 2


def test_ctrl_c_keeps_the_finished_runs_and_exits_130(tmp_path: Path):
    """SIGINT to a running sweep (the first run done, the second a MILP of about 10 s, so the signal lands in it even
    when this test's process is slow to be scheduled: with a 2 s MILP the sweep once ended first): exit 130, a
    message, the finished run kept in the output file."""
    out = tmp_path / "r.csv"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen(
        [sys.executable, "-m", "schedopt", "bench", "--problem", "heterps", "--sizes", "16", "--backends",
         "greedy,milp@highs", "-o", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        preexec_fn=sigint_default)
    t0 = time.time()
    while not (out.exists() and out.read_text().count("\n") >= 2) and time.time() - t0 < 120:
        time.sleep(0.1)
    assert out.exists(), "the first run never finished"
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert "interrupted" in stderr and "kept 1 of 2 runs" in stderr and "Traceback" not in stderr
    rows = out.read_text().splitlines()
    assert len(rows) == 2 and ",greedy," in rows[1]


@pytest.mark.slow
def test_bench_on_a_real_dask_cluster_matches_the_local_run(tmp_path: Path):
    """The same sweep on --dask (a LocalCluster) and serially: the same records, apart from times. (slow: 8 runs;
    tests/test_bench_executors.py runs a smaller sweep on Dask in the default run.)"""
    pytest.importorskip("distributed")
    args = ["bench", "--problem", "heterps", "--sizes", "4", "--seeds", "0,1", "--backends", "dp,greedy", "--json"]
    local = parsed(run(*args, "-o", str(tmp_path / "a.csv")))["records"]
    dask = parsed(run(*args, "--dask", "-o", str(tmp_path / "b.csv")))["records"]
    keys = ("instance_hash", "backend", "termination", "limit", "objective", "bound")
    assert [tuple(r[k] for k in keys) for r in local] == [tuple(r[k] for k in keys) for r in dask]
    assert len(local) == 4


def test_ctrl_c_stops_a_long_scipy_solve_at_once_from_the_command_line(tmp_path: Path):
    """scipy's HiGHS has no cancel hook; `schedopt solve` runs it in a child process that Ctrl-C kills, so a solve
    that would run to its 60 s limit (Synergy-OPT's packing LP at 2048 GPUs) ends within seconds of SIGINT with exit
    130 and no traceback, where it used to run on to the limit."""
    inst = tmp_path / "syn.json"
    assert run("generate", "synergy", "--gpus", "2048", "--seed", "0", "-o", str(inst)).returncode == 0
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen(
        [sys.executable, "-m", "schedopt", "solve", str(inst), "--method", "opt", "--backend", "scipy",
         "--time-limit", "60"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        preexec_fn=sigint_default)
    time.sleep(4.0)  # imports, load, build: the LP is running by now
    assert proc.poll() is None, proc.communicate()
    t0 = time.time()
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert time.time() - t0 < 10, "Ctrl-C waited for the solve"
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr


def test_solve_that_holds_nothing_prints_its_termination_and_exits_1(tmp_path: Path):
    """A limit hit before any incumbent (Synergy-OPT's packing LP at 2048 GPUs in 0.5 s) is an answer, not an error:
    the summary with its bound, 'no solution: ...' on stderr, exit 1 (rows() of an empty answer used to raise and
    turn it into 'error: no solution is held')."""
    inst = tmp_path / "syn.json"
    assert run("generate", "synergy", "--gpus", "2048", "--seed", "0", "-o", str(inst)).returncode == 0
    r = run("solve", str(inst), "--method", "opt", "--backend", "highs", "--time-limit", "0.5")
    assert r.returncode == 1, r.stderr
    assert "termination: NO_SOLUTION_FOUND (time limit)" in r.stdout and "bound:" in r.stdout
    assert "schedopt: no solution: NO_SOLUTION_FOUND" in r.stderr and "error" not in r.stderr
