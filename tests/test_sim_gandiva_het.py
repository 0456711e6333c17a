"""Gandiva in closed loop: heterogeneous clusters, physical GPU-time accounting, the sweep's run_task and the CLI."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from schedopt.errors import InputError
from schedopt.gandiva import load_profiles
from schedopt.sia import Cluster, GpuType
from schedopt.sim.gandiva import (
    CLUSTER_PRESETS,
    VARIANTS,
    GandivaPolicy,
    Mechanisms,
    gandiva_cluster,
    gandiva_preset,
    gandiva_workload,
    load_type_speeds,
    parse_synthetic,
    share_packed_gpus,
    simulate_gandiva,
)
from schedopt.sim.metrics import JobRecord
from schedopt.sim.sweep import SimTask, run_task, simulate_many

PROF = load_profiles()
R50 = "ResNet-50 (batch size 64)"       # Gavel: 2.6195 steps/s on P100, 4.3948 on V100 -> P40 speed 0.596
REC = "Recommendation (batch size 512)"  # Gavel: 48.882 on P100, 23.318 on V100 -> P40 speed 2.0964
TWO = Cluster((GpuType("p100", 1, 1), GpuType("p40", 1, 1)))
ROOT = Path(__file__).resolve().parents[1]


def _job(jid, job_type=R50, duration=600.0, arrival=0.0, **kw):
    return PROF.job(jid, job_type, gpus=1, duration=duration, arrival=arrival, **kw)


def test_shipped_type_speeds():
    sp = load_type_speeds()
    assert set(sp.gpu_types) >= {"p100", "p40", "k80", "v100", "gpu"}
    assert all(sp.of(t, "p100") == 1.0 and sp.of(t, "gpu") == 1.0 for t in sp.job_types)
    assert sp.of(R50, "p40") == pytest.approx(2.6194694 / 4.3947748, abs=1e-4)
    assert sp.of(REC, "p40") == pytest.approx(48.882391 / 23.317635, abs=1e-4)
    assert sp.memory["p40"] == 1.5 and sp.memory["p100"] == 1.0
    assert gandiva_preset().num_gpus == 100 and {t.name: t.total_gpus for t in gandiva_preset().gpu_types} == \
        {"p100": 52, "p40": 48}
    assert gandiva_preset("gandiva-100-homogeneous").type_names == ("gpu",)


def test_each_job_starts_on_its_faster_type():
    # REC runs 2.0964x faster on the P40, R50 0.596x: each gets its own type; JCT = 600 / speed
    tr = gandiva_workload([_job("a", REC), _job("b", R50)], TWO)
    res = simulate_gandiva(tr, TWO)
    assert res.jcts() == pytest.approx({"a": 600 / 2.0964, "b": 600.0}, rel=1e-4)
    assert {j.id: set(j.gpu_seconds) for j in res.jobs} == {"a": {"p40"}, "b": {"p100"}}


def test_better_fit_migration_hand_computed():
    # a (120 s) takes the P100; b (600 s, 0.596x on a P40) starts on the free P40 rather than time-slicing.
    # a is done at t = 120; b has 120 x 0.596 = 71.52 done, moves to the P100 (10 s migration) and needs
    # 528.48 s more: done at 120 + 10 + 528.48 = 658.48
    tr = gandiva_workload([_job("a", duration=120.0), _job("b")], TWO)
    res = simulate_gandiva(tr, TWO)
    assert res.jcts() == pytest.approx({"a": 120.0, "b": 658.48}, abs=0.01)
    gs = {j.id: j.gpu_seconds for j in res.jobs}
    assert gs["b"] == pytest.approx({"p40": 120.0, "p100": 538.48}, abs=0.01)
    assert res.meta.details["counts"]["type_moves"] == 1 and res.meta.details["counts"]["migrations"] == 1
    # without migration b stays on the P40: 600 / 0.596 = 1006.7 s
    off = simulate_gandiva(tr, TWO, Mechanisms().without("migration"))
    assert off.jcts()["b"] == pytest.approx(600 / (2.6194694 / 4.3947748), rel=1e-4)


def test_share_packed_gpus_hand_computed():
    a = JobRecord("a", "x", 0.0, 0.0, 100.0, 0, 1, 1, ((0.0, 100.0, "p100", 1),))
    b = JobRecord("b", "x", 0.0, 40.0, 130.0, 0, 1, 1, ((40.0, 130.0, "p100", 1),))
    # packed in the rounds [60, 120) and [120, 180); a finishes at 100, so they share [60, 100)
    out = {j.id: j for j in share_packed_gpus((a, b), [(60.0, 120.0, "a", "b"), (120.0, 180.0, "a", "b")])}
    assert out["a"].segments == ((0.0, 60.0, "p100", 1), (60.0, 100.0, "p100", 0.5))
    assert out["b"].segments == ((40.0, 60.0, "p100", 1), (60.0, 100.0, "p100", 0.5), (100.0, 130.0, "p100", 1))
    assert out["a"].gpu_seconds["p100"] + out["b"].gpu_seconds["p100"] == 80.0 + 70.0


def test_packed_and_time_sliced_gpus_counted_once():
    cl = gandiva_cluster(nodes=1, gpus_per_node=1)
    # packing: a alone [0, 60), b alone [60, 120) (time-sliced), packed from 120 until b is done at 210, a alone
    # until 215: one GPU held for 215 s; a: 60 + 90 / 2 + 5 = 110, b: 60 + 90 / 2 = 105 (per job, the engine's
    # raw records charge 305)
    mech = Mechanisms(time_slicing=True, priority=False, packing="greedy", migration=None, grow_shrink=False)
    tr = gandiva_workload([_job("a", "ResNet-18 (batch size 16)", 150.0), _job("b", "ResNet-18 (batch size 32)",
                                                                            150.0)], cl)
    res = simulate_gandiva(tr, cl, mech, suspend_resume_seconds=5.0)
    assert res.jcts() == pytest.approx({"a": 215.0, "b": 210.0})
    assert {j.id: j.gpu_seconds["gpu"] for j in res.jobs} == pytest.approx({"a": 110.0, "b": 105.0})
    assert res.summary()["gpu_hours"] * 3600 == pytest.approx(215.0)
    assert res.summary()["mean_utilization"] <= 1.0
    # time-slicing alone: one job at a time in 60 s slices, a done at 280, the GPU idle until the next round at
    # 300, b done at 340: held 280 + 40 = 320 s
    ts = simulate_gandiva(tr, cl, Mechanisms(True, False, None, None, False), suspend_resume_seconds=5.0)
    assert ts.jcts() == pytest.approx({"a": 280.0, "b": 340.0})
    assert ts.summary()["gpu_hours"] * 3600 == pytest.approx(320.0)


def test_run_task_names_and_bad_input():
    assert set(VARIANTS) == {"on", "off", "no-time-slicing", "no-priority", "no-packing", "no-migration",
                             "no-grow-shrink", "exact"}
    assert "gandiva-100" in CLUSTER_PRESETS and "gandiva-100-homogeneous" in CLUSTER_PRESETS
    p = parse_synthetic("gandiva/synthetic:jobs=12:max_duration_h=0.5")
    assert (p["jobs"], p["interarrival"], p["max_duration_h"]) == (12, 80.0, 0.5)
    W = "gandiva/synthetic:jobs=4"
    cases = [
        (SimTask("gandiva:nope", W), "policy", "gandiva:no-packing"),
        (SimTask("gandiva", W, cluster="sia-64"), "cluster", "gandiva-100-homogeneous"),
        (SimTask("gandiva", "saturn/1"), "workload", "gandiva/synthetic"),
        (SimTask("gandiva", "gandiva/synthetic:jobs=x"), "workload.jobs", "integer"),
        (SimTask("gandiva", "gandiva/synthetic:size=3"), "workload", "interarrival"),
        (SimTask("gandiva", "gandiva/synthetic:interarrival=0"), "workload.interarrival", "> 0"),
        (SimTask("gandiva", W, policy_params={"speed": 2}), "policy_params", "migration_seconds"),
        (SimTask("gandiva", W, job_model="sia"), "job_model", "unset"),
    ]
    for task, fld, hint in cases:
        with pytest.raises(InputError) as e:
            run_task(task)
        assert e.value.field == fld and hint in str(e.value), (task, e.value)


def test_simulate_many_serial_equals_process_pool():
    args = (["gandiva", "gandiva:off"], "gandiva/synthetic:jobs=16:interarrival=60:max_duration_h=1")
    kw = {"seeds": [0, 1], "cluster": "gandiva-12", "progress": False}
    serial = simulate_many(*args, workers=1, **kw)
    pool = simulate_many(*args, workers=2, **kw)
    assert [r.meta.policy for r in serial] == ["gandiva", "gandiva", "gandiva:off", "gandiva:off"]
    assert [r.jobs for r in serial] == [r.jobs for r in pool]
    assert [r.meta for r in serial] == [r.meta for r in pool]
    on, off = serial[0].summary(), serial[2].summary()
    assert on["finished"] == off["finished"] == 16 and serial[0].meta.cluster == {"p100": (2, 4), "p40": (1, 4)}


@pytest.mark.slow
def test_cli_end_to_end(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    runs, rep = tmp_path / "runs", tmp_path / "report"
    cmd = [sys.executable, "-m", "schedopt", "simulate", "--policy", "gandiva,gandiva:off", "--workload",
           "gandiva/synthetic:jobs=10:interarrival=60:max_duration_h=0.5", "--cluster", "gandiva-12",
           "--workers", "1", "-o", str(runs)]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "| gandiva:off |" in out.stdout and "10/10" in out.stdout
    assert len(list(runs.glob("gandiva*__seed0.jsonl"))) == 2
    out2 = subprocess.run([sys.executable, "-m", "schedopt", "simulate", "report", str(runs), "-o", str(rep)],
                          env=env, capture_output=True, text=True, timeout=300)
    assert out2.returncode == 0, out2.stderr
    assert (rep / "summary.csv").read_text().count("gandiva") >= 2
    bad = subprocess.run([*cmd[:-2], "--cluster", "nope"], env=env, capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2 and "cluster" in bad.stderr


def test_policy_sees_one_state_per_type():
    pol = GandivaPolicy({}, Mechanisms())
    assert pol.placed() == set() and pol.vs is None


def test_fractional_gpu_segments_survive_the_jsonl_round_trip() -> None:
    """A packed pair charges 0.5 GPU each; the records written by ``schedopt simulate -o`` and read back by
    ``simulate report`` must keep the half, not truncate it to 0."""
    from schedopt.sim.metrics import JobRecord, SimResult, read_jsonl

    rec = JobRecord("j", "resnet", 0.0, 0.0, 215.0, 0, 1, 32, ((0.0, 110.0, "P100", 1.0), (110.0, 215.0, "P100", 0.5)))
    back = read_jsonl(SimResult({"policy": "gandiva", "workload": "w"}, [rec], []).to_jsonl()).jobs[0]
    assert back.segments[1][3] == 0.5
    assert back.gpu_seconds == {"P100": 110.0 + 52.5}
