"""Replaying a trace as it happened (issue 42 item 1): schedopt.traces.replay and schedopt.sim.asis."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest

from schedopt.errors import InputError
from schedopt.sia import Cluster, GpuType
from schedopt.sim.asis import SPEEDS, AsIsJobModel, adaptive_workload, as_is_app
from schedopt.traces import read_trace
from schedopt.traces.replay import (
    as_is_jobs,
    as_is_workload,
    hived_trace_of,
    peak_demand,
    replay,
    trace_cluster,
)

DATA = Path(__file__).parent / "data" / "traces"


def _philly_csv(tmp_path: Path, rows: list[tuple[int, float, int, str]]) -> Path:
    """A Pollux-style Philly CSV: (seconds after 2017-10-01 00:00:00, duration, GPUs, virtual cluster)."""
    p = tmp_path / "mini.csv"
    lines = ["timestamp,duration,num_gpus,gpu_time,cluster"]
    for off, dur, g, vc in rows:
        h, m, s = off // 3600, off % 3600 // 60, off % 60
        lines.append(f"2017-10-01 {h:02d}:{m:02d}:{s:02d},{dur},{g},{dur * g},{vc}")
    p.write_text("\n".join(lines) + "\n")
    return p


def test_fifo_replay_matches_the_hand_computed_schedule(tmp_path: Path) -> None:
    """One node of 4 GPUs, 60 s rounds, strict FIFO, no restart delay. By hand:
    round 0 (t=0): A (2 GPUs) starts, ends at 0 + 100 = 100.
    round 1 (t=60): B (4 GPUs, arrived 10) does not fit beside A (2 free): it waits, and C (arrived 20) behind it.
    round 2 (t=120): A is gone; B starts, ends at 170; C (1 GPU) finds no GPU free.
    round 3 (t=180): C starts (ends 210) and D (2 GPUs, arrived 130) starts (ends 180 + 200 = 380)."""
    t = read_trace(_philly_csv(tmp_path, [(0, 100.0, 2, "a"), (10, 50.0, 4, "b"), (20, 30.0, 1, "a"),
                                          (130, 200.0, 2, "b")]))
    res = replay(t, "fifo", cluster=Cluster((GpuType("v100", 4, 1),)))
    got = {j.id: (j.arrival, j.start, j.finish) for j in res.jobs}
    assert got == {"0": (0.0, 0.0, 100.0), "1": (10.0, 120.0, 170.0), "2": (20.0, 180.0, 210.0),
                   "3": (130.0, 180.0, 380.0)}
    rep = res.meta.details["as_is"]["report"]
    assert rep["per_vc"]["a"]["queueing_delay_s"]["mean"] == (0.0 + 160.0) / 2
    assert rep["per_vc"]["b"]["queueing_delay_s"]["mean"] == (110.0 + 50.0) / 2
    # utilization: GPU-seconds held (200 + 200 + 30 + 400) over 4 GPUs x 380 s
    assert rep["utilization"] == pytest.approx(830.0 / (4 * 380.0))
    assert res.meta.job_model == "as-is" and res.meta.details["as_is"]["cluster_rule"] == "given"


def test_backfill_and_the_derived_cluster(tmp_path: Path) -> None:
    """Peak concurrent demand: A [0, 100) 2 GPUs, B [10, 60) 4 GPUs, C [20, 50) 1 GPU -> 7 GPUs at t = 20..50; a
    job ending at t frees its GPUs before one starting at t (D at 100 takes A's)."""
    t = read_trace(_philly_csv(tmp_path, [(0, 100.0, 2, "a"), (10, 50.0, 4, "b"), (20, 30.0, 1, "a"),
                                          (100, 10.0, 2, "b")]))
    jobs, left = as_is_jobs(t)
    assert peak_demand(jobs) == 7 and left == {"cpu_only": 0, "no_run_time": 0, "zero_run_time": 0}
    cl, rule = trace_cluster(t)
    assert cl == Cluster((GpuType("v100", 8, 1),)) and rule.startswith("peak: the peak concurrent demand (7 GPUs")
    res = replay(t, "fifo")  # 8 GPUs: every job starts at the first round after its arrival
    assert {j.id: j.start for j in res.jobs} == {"0": 0.0, "1": 60.0, "2": 60.0, "3": 120.0}


def _recorded_gpu_seconds(fmt: str) -> dict[str, float]:
    """GPU-seconds per job read from the raw fixture, without the readers."""
    if fmt == "helios":
        with open(DATA / "helios_cluster_log.csv") as f:
            return {r["job_id"]: int(r["gpu_num"]) * float(r["duration"]) for r in csv.DictReader(f)}
    if fmt == "acme":
        with open(DATA / "acme_trace_seren.csv") as f:
            return {r["job_id"]: float(r["gpu_time"]) for r in csv.DictReader(f)}
    if fmt == "pai2023":
        with open(DATA / "openb_pod_list_default.csv") as f:
            return {r["name"]: int(r["num_gpu"]) * (float(r["deletion_time"]) - float(r["scheduled_time"]))
                    for r in csv.DictReader(f) if r["deletion_time"] and r["scheduled_time"]}
    if fmt == "philly":
        from datetime import datetime

        out = {}
        for rec in json.loads((DATA / "philly_cluster_job_log.json").read_text()):
            gs = 0.0
            for a in rec["attempts"]:
                if a.get("start_time") not in (None, "None") and a.get("end_time") not in (None, "None"):
                    dt = (datetime.fromisoformat(a["end_time"]) - datetime.fromisoformat(a["start_time"]))
                    gs += dt.total_seconds() * sum(len(d["gpus"]) for d in a["detail"])
            out[rec["jobid"]] = gs
        return out
    assert fmt == "pai2020"
    tasks: dict[str, list[float]] = {}
    with open(DATA / "pai2020" / "pai_task_table.csv") as f:
        for r in csv.reader(f):
            if r[0] == "job_name" or not r[4] or not r[5]:
                continue
            a = tasks.setdefault(r[0], [0.0, math.inf, -math.inf])
            a[0] += float(r[2] or 1) * float(r[8] or 0)
            a[1], a[2] = min(a[1], float(r[4])), max(a[2], float(r[5]))
    return {j: math.ceil(a[0] / 100 - 1e-9) * (a[2] - a[1]) for j, a in tasks.items()}


@pytest.mark.parametrize("fmt,path", [("helios", "helios_cluster_log.csv"), ("acme", "acme_trace_seren.csv"),
                                      ("pai2023", "openb_pod_list_default.csv"),
                                      ("philly", "philly_cluster_job_log.json"), ("pai2020", "pai2020")])
def test_each_format_fixture_replays_its_recorded_gpu_seconds(fmt: str, path: str) -> None:
    """Every kept job's work x GPUs is its recorded GPU-seconds (from the raw file), and under FIFO on the derived
    cluster each job holds exactly that many GPU-seconds (failed and killed jobs too)."""
    t = read_trace(DATA / path, fmt)
    jobs, left = as_is_jobs(t)
    assert jobs and len(jobs) + sum(left.values()) == len(t)
    raw = _recorded_gpu_seconds(fmt)
    for a in jobs:
        assert a.gpu_seconds == pytest.approx(raw[a.job.job_id], rel=1e-12), a.job.job_id
    # PAI 2023's node list names an anonymised type G3: its speed is the user's to give
    sp = {**SPEEDS, "g3": 1.0}
    res = replay(t, "fifo", speeds=sp)
    assert res.meta.unfinished == 0
    own = {a.job.job_id: a.gpu_type for a in jobs}
    # GPU-seconds held, in the job's own type's terms (a PAI 2020 P100 job may run on the machine list's V100s)
    held = {j.id: sum(g * sp[t] / sp[own[j.id]] for t, g in j.gpu_seconds.items()) for j in res.jobs}
    assert held == pytest.approx({a.job.job_id: a.gpu_seconds for a in jobs}, rel=1e-9)
    statuses = {a.job.status for a in jobs}
    if fmt in ("helios", "acme"):
        assert "FAILED" in statuses  # failed jobs run for their recorded time


def test_a_trace_without_run_times_is_refused() -> None:
    t = read_trace(DATA / "gavel_physical.trace", "gavel")
    jobs, left = as_is_jobs(t)
    assert not jobs and left["no_run_time"] == len(t)
    with pytest.raises(InputError, match="no job with GPUs and a run time"):
        replay(t, "fifo")


def test_machine_list_cluster_and_the_speed_table() -> None:
    """PAI 2020 ships its machines: the cluster is theirs. A job runs at speed[t] / speed[own] off its own type."""
    t = read_trace(DATA / "pai2020", "pai2020")
    cl, rule = trace_cluster(t)
    assert rule.startswith("machines:") and set(cl.type_names) == {k.lower() for k in t.capacity or {}}
    jm = AsIsJobModel("as-is", rigid_apps={}, speeds={"v100": 1.0, "t4": 0.4}, types=("v100", "t4"))
    app = as_is_app("v100", 120.0)
    m = jm.truth(app)
    assert float(m.params["v100"].step_time(1, 1, 1)) == 1.0  # 1 work-second per second on its own type
    assert float(m.params["t4"].step_time(2, 4, 1)) == pytest.approx(1.0 / 0.4)
    with pytest.raises(InputError, match="no relative speed"):
        AsIsJobModel("as-is", rigid_apps={}, speeds={"v100": 1.0}, types=("v100", "k80")).truth(app)


def test_adaptive_mapping_takes_the_recorded_time_at_the_recorded_gpus() -> None:
    """An adaptive job's curve is its zoo application's scaled so that alone on its recorded GPUs of its own type it
    takes its recorded run time: a job run alone there by the engine's own JobState finishes at that time."""
    from schedopt.sia import Config
    from schedopt.sim.jobs import JobState
    from schedopt.sim.workloads import Workload, WorkloadJob

    wl = Workload("w", (WorkloadJob("j", 0.0, as_is_app("v100", 5000.0), 4, 4),))
    jm = AsIsJobModel("as-is", rigid_apps={}, speeds={"v100": 1.0}, types=("v100",))
    aw = adaptive_workload(wl, {"v100": 8})
    w = aw.jobs[0]
    assert w.application == "as-is:v100:5000.0:deepspeech2:4:8"  # 4 x 5000 s = 5.6 GPU-h: the < 10 GPU-h class
    j = JobState("j", w.application, 0.0, 4, w.batch_size, True, jm, estimator="oracle")
    j.nodes, j.config, j.started, j.start = {"n0": 4}, Config(1, 4, "v100"), True, 0.0
    j.rebatch()
    t = 0.0
    while j.finish is None:
        j.advance(t, 60.0)
        t += 60.0
    assert j.finish == pytest.approx(5000.0, rel=1e-9)


def test_hived_replay_has_the_trace_virtual_clusters_as_tenants(tmp_path: Path) -> None:
    """Quota = share of GPU-seconds in whole nodes: a uses 100x2 + 30x1 + 10x16 = 390, b 50x4 + 200x2 = 600 of 990
    GPU-s; 2 nodes -> a 0.79, b 1.21 -> floors 0, 1 and the left node to the largest remainder (a). A job bigger
    than its tenant's quota (16 GPUs = 2 pods of 8 in a) is opportunistic."""
    t = read_trace(_philly_csv(tmp_path, [(0, 100.0, 2, "a"), (10, 50.0, 4, "b"), (20, 30.0, 1, "a"),
                                          (130, 200.0, 2, "b"), (140, 10.0, 16, "a")]))
    ht = hived_trace_of(t, Cluster((GpuType("v100", 8, 2),)))
    assert ht.cluster.tenants == ("a", "b")
    prio = {j.id: (j.tenant, j.priority) for j in ht.jobs}
    assert prio == {"0": ("a", 0), "1": ("b", 0), "2": ("a", 0), "3": ("b", 0), "4": ("a", -1)}
    for pol in ("hived", "hived:quota"):
        res = replay(t, pol, cluster=Cluster((GpuType("v100", 8, 2),)))
        assert res.meta.unfinished == 0 and set(res.meta.details["as_is"]["report"]["per_vc"]) == {"a", "b"}


def test_as_is_workload_names_and_cli(tmp_path: Path) -> None:
    from schedopt.sim.sweep import SimTask, run_task

    p = _philly_csv(tmp_path, [(0, 100.0, 2, "a"), (10, 50.0, 4, "b")])
    wl = as_is_workload(read_trace(p))
    assert [(w.name, w.time, w.application, w.num_replicas) for w in wl.jobs] == [
        ("0", 0.0, "as-is:v100:100.0", 2), ("1", 10.0, "as-is:v100:50.0", 4)]
    res = run_task(SimTask("tiresias", f"trace:{p}:as-is:rule=peak"))
    assert res.meta.job_model == "as-is" and res.meta.cluster == {"v100": (1, 8)}
    assert [j.finish for j in res.jobs] == [100.0, 110.0]
    with pytest.raises(InputError, match="options after :as-is"):
        run_task(SimTask("fifo", f"trace:{p}:as-is:cluster=x"))


@pytest.mark.parametrize("policy", ["fifo", "tiresias", "hived"])
def test_a_streamed_replay_writes_the_record_of_the_replay_in_memory(tmp_path: Path, policy: str) -> None:
    """replay(records=PATH) streams the record as jobs finish: the file is a whole record (read_record) holding the
    same jobs (in finish order), rounds, meta and report as the replay kept in memory; the result holds the meta."""
    from schedopt.sim.records import check_record, read_record

    rows = [(0, 500.0, 4, "a"), (10, 30.0, 2, "b"), (20, 200.0, 8, "a"), (700, 100.0, 1, "c"), (715, 3000.0, 4, "b"),
            (800, 60.0, 4, "a")]
    t = read_trace(_philly_csv(tmp_path, rows))
    cl = Cluster((GpuType("v100", 4, 2),))
    mem = replay(t, policy, cluster=cl)
    path = tmp_path / "rec.jsonl"
    res = replay(t, policy, cluster=cl, records=path)
    assert check_record(path) is None and not list(tmp_path.glob(".rec.jsonl.*"))  # whole; no spool left
    disk = read_record(path)
    assert sorted(disk.jobs, key=lambda j: j.id) == sorted(mem.jobs, key=lambda j: j.id) and len(disk.jobs) == 6
    assert [r.to_dict() | {"policy_seconds": 0, "policy_cpu_seconds": 0} for r in disk.rounds] == \
        [r.to_dict() | {"policy_seconds": 0, "policy_cpu_seconds": 0} for r in mem.rounds]
    info = res.meta.details["as_is"]
    assert disk.meta.details["as_is"]["report"] == info["report"]
    assert json.dumps(info["report"]) == json.dumps(mem.meta.details["as_is"]["report"])
    if policy != "hived":  # streamed by the engine: the result holds the meta only
        assert res.jobs == () and res.rounds == ()
        assert info["records"] == {"path": str(path), "jobs": 6, "rounds": len(mem.rounds)}
        # jobs in the order they finished: the 30 s job of 2 GPUs first
        assert disk.jobs[0].id == mem.jobs[1].id and disk.jobs[0].finish == min(j.finish for j in mem.jobs)


def test_a_streamed_run_capped_writes_its_unfinished_jobs(tmp_path: Path) -> None:
    """A run stopped at its time cap streams the finished jobs, then the unfinished (running, queued, not yet
    arrived) ones, with the meta's counts."""
    from schedopt.sim.records import read_record

    rows = [(0, 100.0, 4, "a"), (0, 5000.0, 4, "a"), (30, 5000.0, 4, "a"), (9000, 10.0, 1, "a")]
    t = read_trace(_philly_csv(tmp_path, rows))
    path = tmp_path / "cap.jsonl"
    with pytest.warns(RuntimeWarning, match="time cap"):
        res = replay(t, "fifo", cluster=Cluster((GpuType("v100", 4, 2),)), max_time=600.0, records=path)
    disk = read_record(path)
    assert res.meta.unfinished == 3 and res.meta.capped and disk.meta.unfinished == 3
    assert [(j.finish is not None, j.start is not None) for j in disk.jobs] == [
        (True, True), (False, True), (False, True), (False, False)]
    assert len(disk.rounds) == 11  # rounds at 0, 60, ..., 600
