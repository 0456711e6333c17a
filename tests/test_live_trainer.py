"""The pieces of the engine drivers that need no engine: Slurm's host lists and GRES details, the --local node
shapes, the short workloads, and the training-like program run in this process against the simulator's job model."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from schedopt.errors import InputError
from schedopt.live.engines import parse_nodes, short_workload
from schedopt.live.trainer import TrainerSpec, gres_indices, run, slurm_allocation, write_json
from schedopt.sia import Config
from schedopt.sim.jobs import JobState, job_model


def test_hostlists_and_gres_details() -> None:
    from schedopt.live.slurm import expand_hostlist

    assert expand_hostlist("t4-[0-1,3],v100-2") == ["t4-0", "t4-1", "t4-3", "v100-2"]
    assert expand_hostlist("n[08-10]") == ["n08", "n09", "n10"]
    assert gres_indices("gpu:3(IDX:0-1,3)") == (0, 1, 3) and gres_indices("gpu:0") == ()
    # outside a step Slurm sets no CUDA_VISIBLE_DEVICES for file-backed GPUs: the count per node, indices from 0
    env = {"SLURM_JOB_NODELIST": "t4-[0-1]", "SLURM_GPUS_ON_NODE": "2"}
    assert slurm_allocation(env) == {"t4-0": [0, 1], "t4-1": [0, 1]}
    assert slurm_allocation({**env, "CUDA_VISIBLE_DEVICES": "2,3"}) == {"t4-0": [2, 3], "t4-1": [2, 3]}
    assert slurm_allocation({}) is None


def test_local_node_shapes_and_short_workloads() -> None:
    assert parse_nodes("t4:4x2,v100:8x1") == {"t4-0": ("t4", 4), "t4-1": ("t4", 4), "v100-0": ("v100", 8)}
    with pytest.raises(InputError, match="--local"):
        parse_nodes("t4:4")
    wl = short_workload(5)
    assert len(wl) == 5 and wl.jobs[0].time == 0.0 and all(j.num_replicas <= 4 for j in wl.jobs)
    assert {j.application for j in wl.jobs} == {"cifar10"}
    with pytest.raises(InputError, match="n_jobs"):
        short_workload(0)


def _job_dir(tmp: Path, scale: float, decided: float) -> tuple[Path, TrainerSpec]:
    spec = TrainerSpec("j", "cifar10", 0.0, 4, 256, False, "pollux", scale, time.time(), {"t4-0": "t4"})
    write_json(tmp / "spec.json", spec.to_dict())
    write_json(tmp / "attempt.json", {"number": 0, "decided_at": decided})
    return tmp, spec


def test_the_program_follows_the_job_model(tmp_path: Path) -> None:
    """A rigid 4-GPU cifar10 job on a clock 2,000 times the wall clock: it finishes exactly when the simulator's job
    model says (the restart delay counted from the deciding round, then the model's rate epoch by epoch), however
    its ticks fall."""
    scale = 2000.0
    d, _ = _job_dir(tmp_path, scale, decided=0.0)
    assert run(d, {"t4-0": [0, 1, 2, 3]}, source="test", tick=0.05) == "finished"
    start = json.loads((d / "events.jsonl").read_text().splitlines()[0])
    jm = job_model("pollux")
    j = JobState("j", "cifar10", 0.0, 4, 256, False, jm)
    j.nodes, j.config, j.started = {"t4-0": 4}, Config(1, 4, "t4"), True
    j.rebatch()
    # it started at t0 and paid what was left of the 30-s restart delay counted from the deciding round (t = 0)
    t = start["sim_time"]
    j.restart_left = start["restart_paid"]
    assert j.restart_left == pytest.approx(max(0.0, jm.restart("cifar10") - t))
    while j.finish is None:
        j.advance(t, 60.0)
        t += 60.0
    prog = json.loads((d / "progress.json").read_text())
    assert prog["status"] == "finished" and "no real GPU work" in prog["note"]
    assert prog["finish"] == pytest.approx(j.finish, abs=1e-6 * j.finish)
    events = [json.loads(x)["event"] for x in (d / "events.jsonl").read_text().splitlines()]
    assert events == ["start", "finish"]
    # a finished job is never run again: a second start says so and does nothing
    assert run(d, {"t4-0": [0, 1, 2, 3]}, source="test", tick=0.05) == "finished"
    events = [json.loads(x)["event"] for x in (d / "events.jsonl").read_text().splitlines()]
    assert events == ["start", "finish", "already-finished"]


def test_the_program_checkpoints_on_stop_and_resumes(tmp_path: Path) -> None:
    d, spec = _job_dir(tmp_path, 200.0, decided=0.0)
    stop = threading.Event()
    threading.Timer(0.6, stop.set).start()
    assert run(d, {"t4-0": [0, 1]}, source="test", stop=stop, tick=0.05) == "checkpointed"
    ck = json.loads((d / "checkpoint.json").read_text())
    assert 0 < ck["progress"] and ck["finished"] is None
    decided = spec.now()
    write_json(d / "attempt.json", {"number": 1, "decided_at": decided})
    stop2 = threading.Event()
    threading.Timer(0.3, stop2.set).start()
    assert run(d, {"t4-0": [0, 1, 2, 3]}, source="test", stop=stop2, tick=0.05) == "checkpointed"
    starts = [json.loads(x) for x in (d / "events.jsonl").read_text().splitlines() if '"start"' in x]
    assert starts[1]["progress"] == ck["progress"]  # resumed from the checkpoint, not from zero
    # the job model's restart delay (30 s), counted from the deciding round: what is left of it when it starts
    assert starts[1]["restart_paid"] == pytest.approx(max(0.0, 30.0 - (starts[1]["sim_time"] - decided)))


def test_a_ray_gang_runs_the_program_once_every_member_is_placed(tmp_path: Path) -> None:
    """The members of a Ray gang (schedopt.live.ray.gang_member, run here in threads: the protocol needs no Ray):
    the program starts only when every member has written its node and GPUs, on all of them; the driver's stop file
    checkpoints it; the other members end with it. A gang stopped before it is complete runs nothing."""
    from schedopt.live.ray import gang_member

    spec = TrainerSpec("j", "cifar10", 0.0, 4, 256, False, "pollux", 50.0, time.time(), {"t4-0": "t4", "t4-1": "t4"})
    write_json(tmp_path / "spec.json", spec.to_dict())
    write_json(tmp_path / "attempt.json", {"number": 0, "decided_at": 0.0})
    names = {"id0": "t4-0", "id1": "t4-1"}
    got: dict[int, str] = {}

    def member(k: int, token: str, size: int, gpus: list[int]) -> None:
        got[k] = gang_member(str(tmp_path), token, k, size, names, f"id{k}", gpus)

    lead = threading.Thread(target=member, args=(0, "a", 2, [0, 1]))
    lead.start()
    time.sleep(0.3)
    assert not (tmp_path / "progress.json").exists()  # the second member is not placed yet: nothing runs
    other = threading.Thread(target=member, args=(1, "a", 2, [2, 3]))
    other.start()
    end = time.monotonic() + 30
    while time.monotonic() < end and "running" != json.loads(
            (tmp_path / "progress.json").read_text() if (tmp_path / "progress.json").exists() else "{}").get("status"):
        time.sleep(0.05)
    write_json(tmp_path / "gang" / "a.stop", {})
    lead.join(30)
    other.join(30)
    assert got == {0: "checkpointed", 1: "member"}
    events = [json.loads(x) for x in (tmp_path / "events.jsonl").read_text().splitlines()]
    assert [e["event"] for e in events] == ["start", "checkpoint"]
    assert events[0]["allocation"] == {"t4-0": [0, 1], "t4-1": [2, 3]}
    # a gang whose second member never came: stopped before the program started
    write_json(tmp_path / "gang" / "b.stop", {})
    assert gang_member(str(tmp_path), "b", 0, 2, names, "id0", [0, 1]) == "stopped"
    assert len((tmp_path / "events.jsonl").read_text().splitlines()) == 2
