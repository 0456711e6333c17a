"""The three user guides, run as a reader runs them (issue 40: "each of the three guides takes a reader from a fresh
venv to its result without reading the source"; the hand walk is ``docs/reference/walkthrough.md``).

Default run: every ``schedopt`` command of the guides parses (the subcommand and every flag exist), every ``pip
install`` names declared extras, and the optimization guide's Python blocks run in order and print what the page
shows. Slow (``.ci/run``): the systems and platform guides' Python blocks, and every command of the three guides that
runs on this machine in minutes, in page order in one scratch folder; the others are listed in ``NOT_RUN`` with the
reason (a server, a live engine, hours of simulation, a file only the reader has).
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
import guide_blocks as gb

ROOT = gb.ROOT

#: commands of the guides the slow test does not run, by a part of the command, with the reason
NOT_RUN: dict[str, str] = {
    "python -m venv": "the test runs in the environment it was started in",
    "pip install": "checked against pyproject.toml's extras instead",
    "python -m pytest": "the test suite itself",
    "python tools/": "a measurement for the benchmark records (minutes to hours on 2 cores)",
    "git worktree": "a measurement between two checkouts",
    "git archive": "a measurement between two source trees (needs the repository's history, not a scratch folder)",
    "mkdir -p state": "the service's folder (for the server below)",
    "schedopt serve": "a server that runs until stopped (tests/test_serve.py runs it)",
    "TOKEN=": "talks to the server above",
    "curl ": "talks to the server above",
    "schedopt live replay": "a live engine (Slurm, Ray): tests/test_live_slurm.py and test_live_ray.py, slow",
    "runs/slurm-sia/records.jsonl": "reads the live replay's records",
    "reproduce sia -o out/ --workers 2": "the whole evaluation: hours",
    "--dask tcp://": "needs your Dask scheduler",
    "--workload trace:": "a whole trace replayed as it happened (hours), or a trace only the reader has",
}


#: Python blocks the slow test does not run, by a part of their text, with the reason
NOT_RUN_PYTHON: dict[str, str] = {
    "ServiceClient(": "talks to the server the page starts (walked by hand: docs/reference/walkthrough.md)",
    'replay(shipped_trace("philly")': "the whole Philly trace replayed (minutes of CPU: benchmarks/replay_philly.md)",
}


def _not_run(cmd: str) -> str | None:
    return next((why for part, why in NOT_RUN.items() if part in cmd), None)


def _schedopt_argv(cmd: str) -> list[str] | None:
    """The arguments after ``schedopt`` (environment assignments before it dropped), or None for another program."""
    words = shlex.split(cmd)
    while words and "=" in words[0] and not words[0].startswith("-"):
        words = words[1:]
    return words[1:] if words and words[0] == "schedopt" else None


def _all_blocks() -> list[gb.Block]:
    return [b for guide in gb.GUIDES for page in gb.pages(guide) for b in gb.blocks(page)]


def test_the_guides_have_their_blocks() -> None:
    """The extraction finds what a reader sees: each guide's Python blocks, outputs and commands."""
    for guide in gb.GUIDES:
        found = [b for page in gb.pages(guide) for b in gb.blocks(page)]
        assert sum(b.lang == "python" for b in found) >= 3, guide
        assert sum(b.output is not None for b in found) >= 1, guide
        assert sum(len(b.commands) for b in found) >= 3, guide
    assert [p.name for p in gb.pages("platform")][:4] == ["platform.md", "engines.md", "live-session.md", "service.md"]


def test_every_guide_command_parses_and_installs_declared_extras() -> None:
    """Each ``schedopt`` command's subcommand and flags exist (parsed, not run); ``pip install`` names only extras
    pyproject.toml declares and installs from the checkout (the package is not on PyPI)."""
    from schedopt.cli import _bench_report_parser, build_parser

    extras = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"])
    parser, parsed = build_parser(), 0
    for b in _all_blocks():
        for cmd in b.commands:
            if cmd.startswith("pip install"):
                spec = shlex.split(cmd)[-1]
                assert spec == "." or (spec.startswith(".[") and set(spec[2:-1].split(",")) <= extras), \
                    f"{b.page}:{b.line}: {cmd}"
                continue
            argv = _schedopt_argv(cmd)
            if argv is None:
                continue
            try:
                if argv[:2] == ["bench", "report"]:
                    _bench_report_parser().parse_args(argv[2:])
                else:
                    parser.parse_args(argv)
            except SystemExit as e:  # argparse's way to refuse (or --help's way to succeed)
                assert e.code == 0 and "--help" in argv, f"{b.page}:{b.line}: {cmd!r} does not parse"
            parsed += 1
    assert parsed >= 20


def _run_page(page: Path, workdir: Path) -> None:
    ns: dict[str, object] = {"__name__": "__main__"}
    for b in gb.blocks(page):
        if b.lang != "python":
            continue
        got = gb.run_python(b, ns)
        if b.output is not None:
            assert gb.normalized(got) == gb.normalized(b.output), f"{b.page}:{b.line} printed:\n{got}"


def test_the_optimization_guide_runs_as_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Its Python blocks in order, in a scratch folder, each printing what the page shows."""
    pytest.importorskip("hypothesis")
    monkeypatch.chdir(tmp_path)
    for page in gb.pages("optimization"):
        _run_page(page, tmp_path)


def _scratch(tmp_path: Path) -> Path:
    """A scratch folder that holds what the guides tell the reader to have: the package's folder as in the
    checkout's root, where the reader works (the systems guide reads the shipped trace at
    ``schedopt/traces/data/philly.csv.gz``, and ``PYTHONPATH=.`` finds the package there too), and a Helios
    ``cluster_log.csv`` (the sample of tests/data), standing for the reader's own trace in the replay page."""
    (tmp_path / "schedopt").symlink_to(ROOT / "schedopt", target_is_directory=True)
    shutil.copy(ROOT / "tests" / "data" / "traces" / "helios_cluster_log.csv", tmp_path / "cluster_log.csv")
    return tmp_path


@pytest.mark.slow
@pytest.mark.parametrize("guide", ["optimization", "systems", "platform"])
def test_a_guide_runs_as_written_commands_included(guide: str, tmp_path: Path) -> None:
    """Every block in page order in one scratch folder: Python blocks in one interpreter per page (a fresh
    process, as a reader starts one), commands through ``bash`` with ``schedopt`` on the PATH; each exits 0 and
    prints what the page shows. The commands of ``NOT_RUN`` are left out with their reason."""
    work = _scratch(tmp_path)
    shim = tmp_path / "bin"
    shim.mkdir()
    (shim / "schedopt").write_text(f"#!/bin/sh\nexec {sys.executable} -m schedopt \"$@\"\n")
    (shim / "schedopt").chmod(0o755)
    (shim / "python").symlink_to(sys.executable)
    env = {**os.environ, "PATH": f"{shim}{os.pathsep}{os.environ['PATH']}", "MPLBACKEND": "Agg",
           "PYTHONPATH": str(ROOT)}
    for page in gb.pages(guide):
        script = [f"import sys; sys.path.insert(0, {str(ROOT / 'tests')!r})", "import guide_blocks as gb",
                  "ns = {'__name__': '__main__'}"]
        for i, b in enumerate(gb.blocks(page)):
            if b.lang == "python" and not any(part in b.text for part in NOT_RUN_PYTHON):
                script.append(f"b = gb.blocks(gb.ROOT / {b.page!r})[{i}]; got = gb.run_python(b, ns)")
                script.append("assert b.output is None or gb.normalized(got) == gb.normalized(b.output), "
                              "f'{b.page}:{b.line} printed:\\n{got}'")
            for cmd in b.commands:
                if _not_run(cmd) is None:
                    script.append(f"import subprocess; r = subprocess.run(['bash', '-c', {cmd!r}], "
                                  "capture_output=True, text=True)")
                    script.append(f"assert r.returncode == 0, {f'{b.page}:{b.line}: {cmd}'!r} + r.stderr[-3000:]")
        out = subprocess.run([sys.executable, "-c", "\n".join(script)], cwd=work, env=env, capture_output=True,
                             text=True, timeout=3600)
        assert out.returncode == 0, out.stderr[-5000:]
