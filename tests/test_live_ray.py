"""schedopt.live.ray against a real local Ray cluster of logical nodes with logical GPUs started by the test
(schedopt.testing.local_engines.LocalRay). Skipped, with the reason, where Ray is not installed. Every test here is
slow: starting Ray alone takes 10-20 s on this 2-core machine and filling its worker pool (RayEngine's prestart)
as long again, over the default run's budget."""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

from schedopt.live.driver import LiveReplay, read_live_records
from schedopt.live.engines import short_workload
from schedopt.sim import get_policy, read_jsonl
from schedopt.testing.local_engines import LocalRay, ray_missing

pytestmark = [pytest.mark.skipif(ray_missing() is not None, reason=str(ray_missing())), pytest.mark.slow]

NODES = {f"t4-{k}": ("t4", 4) for k in range(3)}


@pytest.fixture(scope="module")
def ray_cluster():
    rc = LocalRay(NODES).start()
    try:
        yield rc
    finally:
        rc.stop()


def _engine(rc: LocalRay, tag: str):
    from schedopt.live.ray import RayEngine

    return RayEngine(address=rc.address, tag=tag)


def _finishes(run: Path) -> Counter[str]:
    out: Counter[str] = Counter()
    for ev in run.glob("jobs/*/events.jsonl"):
        out[ev.parent.name] += sum(1 for line in ev.read_text().splitlines() if json.loads(line)["event"] == "finish")
    return out


def test_ray_nodes_and_smoke(ray_cluster: LocalRay, tmp_path: Path) -> None:
    eng = _engine(ray_cluster, "smoke")
    assert {n: (i.gpu_type, i.gpus, i.up) for n, i in eng.nodes().items()} == {n: ("t4", 4, True) for n in NODES}
    rep = LiveReplay(eng, short_workload(2), get_policy("tiresias"), run_dir=tmp_path, time_scale=600.0)
    res = rep.run(max_wall=120)
    assert all(j.finish is not None for j in res.jobs)
    assert rep.counters["mismatches"] == 0 and rep.counters["starts"] == 2
    assert _finishes(tmp_path) == {"cifar10-0": 1, "cifar10-1": 1}
    _, live = read_live_records(tmp_path / "records.jsonl")
    realized = [d["engine"] for d in live if "engine" in d and d["engine"]["did"] == "running"]
    assert len(realized) == 2 and all(sum(len(g) for g in r["realized"].values()) == 4 for r in realized)


def test_ray_replay_20_jobs_under_sia(ray_cluster: LocalRay, tmp_path: Path) -> None:
    rep = LiveReplay(_engine(ray_cluster, "sia20"), short_workload(20), get_policy("sia"), run_dir=tmp_path,
                     time_scale=30.0)
    res = rep.run(max_wall=900)
    assert all(j.finish is not None for j in res.jobs)
    assert rep.counters["mismatches"] == 0
    assert _finishes(tmp_path) == {j.id: 1 for j in res.jobs}
    assert read_jsonl((tmp_path / "records.jsonl").read_text()).jcts() == res.jcts()
    # the members ran on Ray's pooled workers, not a new process per start (each wrote its process id)
    pids = [json.loads(f.read_text())["pid"] for f in tmp_path.glob("jobs/*/gang/*-*.json")]
    assert len(pids) > len(res.jobs) and len(set(pids)) <= len(pids) // 2


def test_ray_driver_restart_and_node_down(ray_cluster: LocalRay, tmp_path: Path) -> None:
    """The driver object is dropped mid-replay (its gangs killed, as a dead driver's are) and a new one restores
    from the run folder; then a node leaves the cluster: its jobs are placed again and every job finishes once."""
    wl = short_workload(10)
    first = LiveReplay(_engine(ray_cluster, "restart"), wl, get_policy("sia"), run_dir=tmp_path, time_scale=40.0)
    first.run(max_wall=40)
    first.engine.close()
    second = LiveReplay(_engine(ray_cluster, "restart"), wl, get_policy("sia"), run_dir=tmp_path, time_scale=40.0)
    victims: set[str] = set()

    def take_down() -> None:
        end = time.monotonic() + 300
        while time.monotonic() < end and not victims:  # as soon as a job runs there
            time.sleep(1)
            victims.update(j for j, a in dict(second.real).items() if "t4-2" in a)
        ray_cluster.remove_node("t4-2")

    th = threading.Thread(target=take_down)
    th.start()
    try:
        res = second.run(max_wall=900)
    finally:
        th.join()
        ray_cluster.add_node("t4-2")
    assert all(j.finish is not None for j in res.jobs)
    assert _finishes(tmp_path) == {j.id: 1 for j in res.jobs}
    starts = res.meta.details["live"]["driver_starts"]
    assert [s["restored"] for s in starts] == [False, True]
    _, live = read_live_records(tmp_path / "records.jsonl")
    lost = {d["engine"]["job"] for d in live if "engine" in d and d["engine"]["did"] == "lost"}
    assert victims and victims <= lost
