"""Checkpoints inside a run (schedopt.sim.checkpoint, ``schedopt simulate --checkpoint-every``; issue 42 item 2).

A run killed with SIGKILL after a checkpoint exists, then resumed with ``--resume``, writes the record an
uninterrupted run writes (masked hash: the record holds the policy's wall times); bad checkpoints (another task,
another version, cut short, garbage) are refused or ignored with a warning and the run starts over; policies that
cannot be restored exactly are refused before any run."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from schedopt.errors import InputError
from schedopt.sim import SimTask
from schedopt.sim.checkpoint import CheckpointEvery, parse_every
from schedopt.sim.records import mask_wall_clock, read_record
from schedopt.sim.runs import _call, _Output, checkpoint_path, run_tasks

USER = Path(__file__).parent / "user_ckpt"
ROOT = Path(__file__).parent.parent


def _masked(path: Path) -> str:
    return hashlib.sha256(mask_wall_clock(path.read_text()).encode()).hexdigest()


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(USER), env.get("PYTHONPATH", "")])
    return env


def _cli(out: Path, policy: str, *extra: str) -> list[str]:
    return [sys.executable, "-m", "schedopt", "simulate", "--workload", "saturn/1", "--policy", policy,
            "-o", str(out), "--progress", "off", *extra]


def _header(p: Path) -> dict[str, object] | None:
    try:
        with open(p, "rb") as f:
            f.readline()
            return json.loads(f.readline())  # type: ignore[no-any-return]
    except (OSError, ValueError):
        return None


def _kill_after_checkpoint(cmd: list[str], out: Path, rounds: int) -> int:
    """Run ``cmd`` in its own process group and SIGKILL the group once a checkpoint of >= ``rounds`` rounds is on
    disk; the rounds of the checkpoint seen."""
    p = subprocess.Popen(cmd, env=_env(), start_new_session=True, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    try:
        end = time.monotonic() + 240
        while time.monotonic() < end:
            for c in out.glob("*.checkpoint"):
                h = _header(c)
                if h is not None and int(h["rounds"]) >= rounds:  # type: ignore[call-overload]
                    os.killpg(p.pid, signal.SIGKILL)
                    p.wait()
                    return int(h["rounds"])  # type: ignore[call-overload]
            assert p.poll() is None, "the run ended before its checkpoint was seen"
            time.sleep(0.002)
        raise AssertionError("no checkpoint within 240 s")
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()


def _killed_and_resumed(tmp_path: Path, policy: str, every: str = "40r", at: int = 120,
                        uninterrupted: str | None = None, *extra: str) -> None:
    """Kill a run of ``policy`` (CLI, ``extra`` options) once a checkpoint of ``at`` rounds exists, resume it, and
    compare its masked record with ``uninterrupted`` (default: an uninterrupted CLI run)."""
    whole, cut = tmp_path / "whole", tmp_path / "cut"
    if uninterrupted is None:
        subprocess.run(_cli(whole, policy, *extra), env=_env(), check=True, capture_output=True)
        (a,) = list(whole.glob("*.jsonl"))
        uninterrupted = _masked(a)
    seen = _kill_after_checkpoint(_cli(cut, policy, "--checkpoint-every", every, *extra), cut, at)
    assert seen >= at and not list(cut.glob("*.jsonl"))  # killed half way: no record yet, a checkpoint
    assert [p.name for p in cut.glob(".*.jobs")] and list(cut.glob("*.checkpoint"))
    r = subprocess.run(_cli(cut, policy, "--checkpoint-every", every, "--resume", "--verbose", *extra), env=_env(),
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "from its checkpoint: round" in r.stderr, r.stderr  # it went on from the checkpoint, not from zero
    resumed_at = int(r.stderr.split("from its checkpoint: round ")[1].split(",")[0])
    assert resumed_at >= seen
    (b,) = list(cut.glob("*.jsonl"))
    assert b.name == f"{policy.replace(':', '-')}__saturn-1__seed0.jsonl"
    assert _masked(b) == uninterrupted
    assert sorted(p.name for p in cut.iterdir()) == sorted([b.name, "summary.csv"])  # checkpoint and spools gone


def test_fifo_killed_after_a_checkpoint_resumes_to_the_uninterrupted_record(tmp_path: Path, uninterrupted: str) -> None:
    """SIGKILL (the process group: the command and its worker) once a checkpoint of 100 rounds is on disk."""
    _killed_and_resumed(tmp_path, "fifo", "100r", 100, uninterrupted)


@pytest.mark.slow
@pytest.mark.parametrize("policy", ["tiresias", "sia", "ckpt_policies:RandomFirst"])
def test_tiresias_sia_and_a_users_policy_killed_and_resumed_give_the_uninterrupted_record(tmp_path: Path,
                                                                                          policy: str) -> None:
    """Tiresias holds its queues; Sia the estimator's fits (shared estimate objects), its solver's build cache and
    configuration table; the user's policy a random generator drawn every round (rounds of 20 s: a longer run)."""
    _killed_and_resumed(tmp_path, policy, "25r", 60, None, "--round-seconds", "20")


# ------------------------------------------------------------------------------------------------ in process
class _Stop(Exception):
    pass


def _stopped(task: SimTask, out: Path, at: int, every: str = "30r") -> Path:
    """Run ``task`` streamed and checkpointed until round ``at`` (then stop it as a kill would: the spools and the
    last checkpoint stay); the checkpoint's path."""

    def observer(rounds: int, t: float, done: int, total: int) -> None:
        if rounds >= at:
            raise _Stop

    out.mkdir(parents=True, exist_ok=True)
    with pytest.raises(_Stop):
        _call(task, observer, _Output(str(out), parse_every(every), False))
    ck = checkpoint_path(out, task)
    assert ck.exists()
    return ck


FIFO = SimTask("fifo", "saturn/1")  # what `schedopt simulate --workload saturn/1 --policy fifo` runs


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory: pytest.TempPathFactory) -> str:
    out = tmp_path_factory.mktemp("whole")
    run_tasks([FIFO], output_dir=out, progress=False, stream=True)
    (rec,) = out.glob("*.jsonl")
    return _masked(rec)


def _resume(out: Path, every: str = "30r") -> Path:
    run_tasks([FIFO], output_dir=out, progress=False, resume=True, checkpoint_every=every)
    (rec,) = out.glob("*.jsonl")
    return rec


def test_resumed_in_process_is_the_uninterrupted_record(tmp_path: Path, uninterrupted: str,
                                                        caplog: pytest.LogCaptureFixture) -> None:
    """Resumed without ``checkpoint_every``: it goes on from the checkpoint, at the interval it was written at."""
    _stopped(FIFO, tmp_path, 100)
    with caplog.at_level(logging.INFO, logger="schedopt.sim.checkpoint"):
        run_tasks([FIFO], output_dir=tmp_path, progress=False, resume=True, stream=True)
    (rec,) = tmp_path.glob("*.jsonl")
    assert "from its checkpoint: round 90" in caplog.text
    assert _masked(rec) == uninterrupted
    assert read_record(rec).summary()["finished"] == 160


@pytest.mark.parametrize("damage", ["cut", *(pytest.param(d, marks=pytest.mark.slow)
                                             for d in ("task", "version", "code", "garbage", "spool"))])
def test_a_bad_checkpoint_is_refused_or_ignored_and_the_run_starts_over(tmp_path: Path, uninterrupted: str,
                                                                       caplog: pytest.LogCaptureFixture,
                                                                       damage: str) -> None:
    ck = _stopped(FIFO, tmp_path, 100)
    raw = ck.read_bytes()
    magic, head, payload = raw.split(b"\n", 2)
    h = json.loads(head)
    if damage in ("version", "task", "code"):
        h[{"version": "schedopt", "task": "task", "code": "code"}[damage]] = "other"
        ck.write_bytes(magic + b"\n" + json.dumps(h).encode() + b"\n" + payload)
    elif damage == "cut":
        ck.write_bytes(raw[: len(raw) - 100])
    elif damage == "garbage":
        ck.write_bytes(b"\x00garbage\n" * 10)
    else:  # the job spool lost its end
        (spool,) = tmp_path.glob(".*.rounds")
        spool.write_bytes(spool.read_bytes()[:50])
    with caplog.at_level(logging.INFO, logger="schedopt.sim.checkpoint"):
        rec = _resume(tmp_path)
    why = {"version": "was written by schedopt other", "task": "another task", "code": "other code",
           "cut": "cut short or torn", "garbage": "not a schedopt checkpoint", "spool": "is shorter"}[damage]
    assert why in caplog.text and "starting the run over" in caplog.text, caplog.text
    assert "from its checkpoint" not in caplog.text
    assert _masked(rec) == uninterrupted


def test_policies_that_cannot_be_restored_are_refused_before_any_run(tmp_path: Path) -> None:
    sys.path.insert(0, str(USER))
    try:
        for spec, why in (("ckpt_policies:Unsaid", "cannot be checkpointed"),
                          ("ckpt_policies:Unpicklable", "does not pickle"),
                          ("hived", "own event loop"), ("gandiva", "own event loop")):
            with pytest.raises(InputError, match=why) as e:
                run_tasks([SimTask(spec, "saturn/1")], output_dir=tmp_path, progress=False, checkpoint_every="10r")
            assert spec.split(":")[-1].lower() in str(e.value).lower()
        assert not list(tmp_path.glob("*"))  # nothing ran
    finally:
        sys.path.remove(str(USER))
    with pytest.raises(InputError, match="needs an output folder"):
        run_tasks([FIFO], checkpoint_every="10r")


def test_parse_every() -> None:
    assert parse_every("600") == parse_every("600s") == parse_every("10min") == CheckpointEvery(cpu_seconds=600.0)
    assert parse_every("1h") == CheckpointEvery(cpu_seconds=3600.0)
    assert parse_every("5000r") == parse_every("5000 rounds") == CheckpointEvery(rounds=5000)
    for bad in ("0", "-5", "0r", "1.5r", "often", ""):
        with pytest.raises(InputError, match="checkpoint-every"):
            parse_every(bad)


def test_a_checkpoint_of_a_trace_file_that_changed_since_is_refused(tmp_path: Path,
                                                                   caplog: pytest.LogCaptureFixture) -> None:
    """The task names its workload by path: the checkpoint holds the file's SHA-256, and a resume after the file
    changed (same path, same settings) starts over, with a warning naming the file; an unchanged file resumes."""
    from importlib import resources

    from schedopt.sim.checkpoint import input_files

    csv = tmp_path / "trace.csv"
    text = resources.files("schedopt.sim").joinpath("data", "workloads", "saturn", "workload-1.csv").read_text()
    csv.write_text(text)
    task = SimTask("fifo", str(csv))
    spec = SimTask("fifo", f"{csv}:load=2")  # a spec naming the file before its options
    digest = hashlib.sha256(text.encode()).hexdigest()
    assert input_files(task) == {str(csv.resolve()): digest} == input_files(spec)
    assert input_files(FIFO) == {}  # a shipped workload names no file

    out = tmp_path / "run"
    ck = _stopped(task, out, 60)
    assert json.loads(ck.read_bytes().split(b"\n")[1])["inputs"] == {str(csv.resolve()): digest}
    with caplog.at_level(logging.INFO, logger="schedopt.sim.checkpoint"):
        run_tasks([task], output_dir=out, progress=False, resume=True, checkpoint_every="30r")
    assert "from its checkpoint: round 30" in caplog.text, caplog.text

    caplog.clear()
    (out / next(p.name for p in out.glob("*.jsonl"))).unlink()
    ck = _stopped(task, out, 60)
    lines = text.splitlines(keepends=True)
    csv.write_text("".join(lines[:-1]))  # the trace lost its last job
    with caplog.at_level(logging.INFO, logger="schedopt.sim.checkpoint"):
        run_tasks([task], output_dir=out, progress=False, resume=True, checkpoint_every="30r")
    assert f"when {csv.resolve()} held other bytes" in caplog.text and "starting the run over" in caplog.text
    assert "from its checkpoint" not in caplog.text
    (rec,) = out.glob("*.jsonl")
    assert read_record(rec).summary()["finished"] == 159
