"""schedopt.live.slurm against a real Slurm controller and slurmd daemons started by the test on this machine
(schedopt.testing.local_engines.LocalSlurm: Debian's slurm-wlm, auth/none, GPUs as file-backed generic resources).
Skipped, with the reason, only where Slurm is not installed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from schedopt.live.driver import LiveReplay, read_live_records
from schedopt.live.engines import short_workload
from schedopt.sia import Cluster, GpuType
from schedopt.sim import get_policy, read_jsonl, simulate
from schedopt.testing.local_engines import LocalSlurm, slurm_missing

pytestmark = pytest.mark.skipif(slurm_missing() is not None, reason=str(slurm_missing()))

NODES = {f"t4-{k}": ("t4", 4) for k in range(4)}


@pytest.fixture(scope="module")
def slurm(tmp_path_factory: pytest.TempPathFactory):
    with LocalSlurm(NODES, root=str(tmp_path_factory.mktemp("slurm"))) as s:
        yield s


def _engine(slurm: LocalSlurm, tag: str):
    from schedopt.live.slurm import SlurmEngine

    return SlurmEngine(slurm.env, tag=tag)


def _finishes(run: Path) -> Counter[str]:
    """How many times each job's program said it finished (its events.jsonl)."""
    out: Counter[str] = Counter()
    for ev in run.glob("jobs/*/events.jsonl"):
        out[ev.parent.name] += sum(1 for line in ev.read_text().splitlines() if json.loads(line)["event"] == "finish")
    return out


def test_local_slurm_runs_gpu_jobs_on_named_nodes(slurm: LocalSlurm) -> None:
    """The fixture's cluster: 4 nodes up with 4 GPUs each, as the engine reads them."""
    nodes = _engine(slurm, "nodes").nodes()
    assert {n: (i.gpu_type, i.gpus, i.up) for n, i in nodes.items()} == {n: ("t4", 4, True) for n in NODES}


def test_replay_smoke_two_jobs(slurm: LocalSlurm, tmp_path: Path) -> None:
    """Two rigid jobs under tiresias, fast clock: both finish once, on the GPUs the plan named, and the records
    read as a simulation's."""
    wl = short_workload(2)
    rep = LiveReplay(_engine(slurm, "smoke"), wl, get_policy("tiresias"), run_dir=tmp_path, time_scale=1200.0)
    res = rep.run(max_wall=60)
    assert [j.finish is not None for j in res.jobs] == [True, True]
    assert rep.counters["mismatches"] == 0 and rep.counters["starts"] == 2
    assert _finishes(tmp_path) == {"cifar10-0": 1, "cifar10-1": 1}
    back, live = read_live_records(tmp_path / "records.jsonl")
    assert back.jcts() == res.jcts() and back.meta.details["live"]["engine"] == "slurm"
    realized = [d["engine"] for d in live if "engine" in d and d["engine"]["did"] == "running"]
    assert len(realized) == 2 and all(r["matches_plan"] for r in realized)
    assert all(sum(len(g) for g in r["realized"].values()) == 4 for r in realized)  # each asked for 4 GPUs
    # the realized JCT is never below the simulator's (the engine only adds delay) and near it
    sim = simulate(Cluster((GpuType("t4", 4, 4),)), wl, get_policy("tiresias"))
    for j in res.jobs:
        assert j.jct is not None and j.jct >= 0.9 * sim.jcts()[j.id]


def _sia_run(slurm: LocalSlurm, run: Path, n: int, scale: float, tag: str, **kw: float) -> LiveReplay:
    return LiveReplay(_engine(slurm, tag), short_workload(n), get_policy("sia"), run_dir=run, time_scale=scale, **kw)


@pytest.mark.slow
def test_replay_24_jobs_under_sia(slurm: LocalSlurm, tmp_path: Path) -> None:
    rep = _sia_run(slurm, tmp_path, 24, 30.0, "sia24")
    res = rep.run(max_wall=900)
    assert all(j.finish is not None for j in res.jobs)
    assert rep.counters["mismatches"] == 0
    assert _finishes(tmp_path) == {j.id: 1 for j in res.jobs}  # none lost, none run twice
    assert read_jsonl((tmp_path / "records.jsonl").read_text()).jcts() == res.jcts()


@pytest.mark.slow
def test_driver_sigkill_and_restart(slurm: LocalSlurm, tmp_path: Path) -> None:
    """The driver (``schedopt live replay``, its own process) is killed with SIGKILL mid-replay and started again
    on the same run folder: every job finishes once, and the records say where the driver was restarted."""
    wl = tmp_path / "wl.csv"
    wl.write_text(short_workload(12).to_csv())
    run = tmp_path / "run"
    cmd = [sys.executable, "-m", "schedopt", "live", "replay", str(wl), "--engine", "slurm", "--policy", "sia",
           "--time-scale", "40", "--run-dir", str(run), "--max-wall", "600"]
    env = {**slurm.env, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    p = subprocess.Popen(cmd, env=env)
    time.sleep(25)
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    assert not (run / "records.jsonl").exists()
    p2 = subprocess.run(cmd, env=env, timeout=900)
    assert p2.returncode == 0
    res, _ = read_live_records(run / "records.jsonl")
    assert all(j.finish is not None for j in res.jobs)
    assert _finishes(run) == {j.id: 1 for j in res.jobs}
    starts = res.meta.details["live"]["driver_starts"]
    assert [s["restored"] for s in starts] == [False, True] and starts[1]["round"] > 0
    assert res.meta.details["live"]["mismatches"] == 0


@pytest.mark.slow
def test_node_down_mid_replay(slurm: LocalSlurm, tmp_path: Path) -> None:
    """A node taken down mid-replay: its jobs are requeued by Slurm, held by the loop, placed elsewhere and
    finish once."""
    import threading

    rep = _sia_run(slurm, tmp_path, 12, 40.0, "down")
    victims: set[str] = set()
    down_at: list[float] = []

    def take_down() -> None:
        end = time.monotonic() + 300
        while time.monotonic() < end and not victims:  # as soon as a job runs there
            time.sleep(1)
            victims.update(j for j, a in dict(rep.real).items() if "t4-3" in a)
        down_at.append(rep.clock.now())
        slurm.run("scontrol", "update", "NodeName=t4-3", "State=DOWN", "Reason=schedopt-test")

    th = threading.Thread(target=take_down)
    th.start()
    try:
        res = rep.run(max_wall=600)
    finally:
        th.join()
        slurm.run("scontrol", "update", "NodeName=t4-3", "State=RESUME", check=False)
    assert victims, "no job ran on t4-3 when it went down"
    assert all(j.finish is not None for j in res.jobs)
    assert _finishes(tmp_path) == {j.id: 1 for j in res.jobs}
    _, live = read_live_records(tmp_path / "records.jsonl")
    lost = {d["engine"]["job"] for d in live if "engine" in d and d["engine"]["did"] == "lost"}
    # the jobs seen on t4-3 a moment before it went down: those still there are requeued by Slurm and recorded
    # lost; one the loop stopped or moved in that second is not (seen once: 2 of 5), so at least one, not all
    assert victims & lost, (victims, lost)
    assert lost <= {j.id for j in res.jobs}
    later = [d["engine"] for d in live if "engine" in d and d["engine"]["did"] == "running"
             and d["engine"]["job"] in victims and d["engine"]["sim_time"] > down_at[0]]
    assert later and all("t4-3" not in r["realized"] for r in later)


@pytest.mark.slow
def test_sigterm_stops_the_local_clusters_daemons(tmp_path: Path) -> None:
    """``schedopt live replay --local`` stopped by SIGTERM (a service manager, ``timeout``) exits 143 and leaves no
    slurmctld or slurmd of its own running (it left all five before)."""
    wl = tmp_path / "wl.csv"
    wl.write_text(short_workload(4).to_csv())
    run = tmp_path / "run"
    cmd = [sys.executable, "-m", "schedopt", "live", "replay", str(wl), "--engine", "slurm", "--policy", "tiresias",
           "--time-scale", "10", "--run-dir", str(run), "--local", "t4:2x2", "--max-wall", "300"]
    p = subprocess.Popen(cmd, env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})

    def daemons() -> list[int]:
        out = []
        for d in Path("/proc").iterdir():
            try:
                if d.name.isdigit() and str(run / "slurm") in (d / "cmdline").read_bytes().decode(errors="replace"):
                    out.append(int(d.name))
            except OSError:
                pass
        return out

    end = time.monotonic() + 120
    while time.monotonic() < end and not (run / "live.jsonl").exists():  # the cluster is up and the loop runs
        time.sleep(0.5)
    assert daemons(), "the local cluster's daemons never started"
    p.send_signal(signal.SIGTERM)
    assert p.wait(timeout=60) == 143
    end = time.monotonic() + 20
    while time.monotonic() < end and daemons():
        time.sleep(0.5)
    assert daemons() == []
