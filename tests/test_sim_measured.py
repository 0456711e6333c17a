"""schedopt.sim.measured: the Sia artifact's measured step times, looked up and interpolated as its simulator does,
and the ``sia-measured`` job model that advances jobs at them (issue 31 item 0). Expected values are rows of
``siasosp23/artifacts@aaf7a0de sia-simulator/traces/yolov3/placements-dgx-ext.csv`` / ``scalability-rtx.csv``."""

from __future__ import annotations

import math

import pytest

from schedopt.errors import InputError
from schedopt.sia import Config
from schedopt.sim import measured
from schedopt.sim.jobs import SIA, SIA_MEASURED, JobState, job_model
from schedopt.sim.policies.sia import RESTART_PENALTY_S, SiaPolicy

# placements-dgx-ext.csv, placement 1: local_bsz,step_time,sync_time
A100_1 = {4: (0.24740348756313324, 0.0012252800092101095), 6: (0.3366726189851761, 0.0010762239769101143),
          16: (0.3395235687494278, 0.001078911989927292), 32: (0.3930736780166626, 0.001081152006983757)}


def test_a_measured_placement_returns_its_row() -> None:
    for b, want in A100_1.items():
        assert measured.lookup("yolov3", "a100", (1,), float(b)) == pytest.approx(want, rel=1e-12)


def test_between_measured_batches_the_times_are_linear_in_the_batch() -> None:
    st, sy = measured.lookup("yolov3", "a100", (1,), 5.0)
    assert st == pytest.approx((A100_1[4][0] + A100_1[6][0]) / 2, rel=1e-12)
    assert sy == pytest.approx((A100_1[4][1] + A100_1[6][1]) / 2, rel=1e-12)


def test_beyond_the_measured_batches_or_applications_there_is_no_answer() -> None:
    assert measured.lookup("yolov3", "a100", (1,), 33.0) is None
    assert measured.lookup("yolov3", "a100", (1,), 3.0) is None
    assert measured.lookup("no-such-app", "a100", (1,), 8.0) is None
    assert measured.lookup("yolov3", "no-such-gpu", (1,), 8.0) is None


def test_placements_are_keyed_by_their_smallest_rotation() -> None:
    assert measured.normalize_placement((0, 4, 2)) == (2, 4)
    assert measured.normalize_placement((3, 1, 2)) == (1, 2, 3)
    assert measured.lookup("cifar10", "t4", (4, 2), 64.0) == measured.lookup("cifar10", "t4", (2, 4), 64.0)
    with pytest.raises(InputError, match="placement"):
        measured.normalize_placement((0, 0))


def test_an_unmeasured_placement_is_interpolated_over_the_measured_shapes() -> None:
    # (3 nodes, 3 GPUs) on the RTX 2080Ti is a scalability row only (no placement "111" was measured): the
    # triangulation returns the row itself at its own point
    prof = measured.profile("yolov3", "rtx2080ti")
    assert prof is not None and not prof.measured((1, 1, 1))
    assert measured.lookup("yolov3", "rtx2080ti", (1, 1, 1), 4.0) == pytest.approx(
        (0.6113776564598083, 0.18992468881607058), rel=1e-9)
    # and between two measured local batches of that shape it is linear
    mid = measured.lookup("yolov3", "rtx2080ti", (1, 1, 1), 5.0)
    assert mid == pytest.approx(((0.6113776564598083 + 0.7937219142913818) / 2,
                                 (0.18992468881607058 + 0.25853020191192627) / 2), rel=1e-9)
    # outside the measured hull (96 GPUs on 3 nodes): nothing
    assert measured.lookup("yolov3", "rtx2080ti", (32, 32, 32), 4.0) is None


def test_shapes_measured_on_one_node_only_interpolate_over_the_coordinates_that_vary() -> None:
    """The artifact measured the RTX 6000 on one node only (placements 1-4): its points are flat in (nodes,
    replicas, batch), where the published LinearNDInterpolator raises QhullError. Ours interpolates over (replicas,
    batch): a measured point returns its row, a point on a grid edge the midpoint, another node count nothing."""
    prof = measured.profile("yolov3", "rtx6000")
    assert prof is not None and set(prof.points[:, 0]) == {1.0}
    assert measured.lookup_shape("yolov3", "rtx6000", 1, 3, 4.0) == pytest.approx(
        (0.37714863, 0.18048739), rel=1e-7)
    # (3 GPUs, batch 5) lies on the grid edge between batches 4 and 6 at 3 GPUs
    assert measured.lookup_shape("yolov3", "rtx6000", 1, 3, 5.0) == pytest.approx(
        ((0.37714863 + 0.49465001) / 2, (0.18048739 + 0.18019466) / 2), rel=1e-7)
    assert measured.lookup_shape("yolov3", "rtx6000", 2, 4, 8.0) is None  # never measured across nodes
    assert measured.lookup_shape("yolov3", "rtx6000", 1, 5, 8.0) is None  # beyond the measured GPU counts


def test_step_time_adds_the_compute_part_per_accumulation_step() -> None:
    st, sy = A100_1[16]
    assert measured.step_time("yolov3", "a100", (1,), 16, 0) == pytest.approx(st)
    assert measured.step_time("yolov3", "a100", (1,), 16, 2) == pytest.approx(st + 2 * (st - sy))


def test_fit_errors_name_the_yolov3_a100_gap_of_issue_31() -> None:
    rows = {(r["app"], r["gpu_type"]): r for r in measured.fit_errors(["yolov3"])}
    a100 = rows[("yolov3", "a100")]
    # the fitted model predicts 35 samples/s on one A100 at local batch 32 where the measurement is 81/s
    assert a100["one_gpu_local_bsz"] == 32
    assert a100["one_gpu_ratio"] == pytest.approx(0.43, abs=0.01)
    assert a100["rms_log_error"] == pytest.approx(0.277, abs=0.005)
    assert rows[("yolov3", "t4")]["rms_log_error"] < 0.15


def _job(jm_name: str) -> JobState:
    j = JobState("y", "yolov3", 0.0, 1, 16, True, job_model(jm_name))
    j.nodes = {"a100-0": 1}
    j.config = Config(1, 1, "a100")
    j.rebatch()
    return j


def test_the_measured_job_model_advances_at_the_measured_step_time() -> None:
    meas, fit = _job("sia-measured"), _job("sia")
    assert meas.local_bsz == fit.local_bsz and meas.accum == fit.accum  # the batch choice is the same
    b, s = meas.local_bsz, meas.accum
    st, sy = measured.lookup("yolov3", "a100", (1,), float(b))
    it = st + s * (st - sy)
    # same statistical efficiency, different time per iteration: the ratio of the rates is the ratio of the times
    fitted_it = float(SIA.truth("yolov3").params["a100"].step_time(1, 1, b, s))
    assert meas.rate() / fit.rate() == pytest.approx(fitted_it / it, rel=1e-9)
    assert not math.isclose(it, fitted_it, rel_tol=0.05)


def test_presets_and_the_ncf_rule() -> None:
    assert SIA_MEASURED.measured and not SIA.measured
    assert SIA.rigid_apps == {"ncf": (1, 32768)} and SIA_MEASURED.rigid_apps == {}
    assert SIA_MEASURED.restart("imagenet") == SIA.restart("imagenet") == 250


def test_sia_policy_restart_penalty_per_application() -> None:
    pol = SiaPolicy()
    assert pol.restart_penalty("imagenet") == RESTART_PENALTY_S["imagenet"] == 250
    assert pol.restart_penalty("yolov3") == 45 and pol.restart_penalty("ncf") == 30
    assert SiaPolicy(restart_cost_s=30).restart_penalty("imagenet") == 30


# ---------------------------------------------------------------------------------------------- limited adaptivity
def test_rigid_job_ids_are_an_exact_seeded_nested_fraction() -> None:
    from schedopt.sim.adaptivity import rigid_job_ids

    quarter, half = rigid_job_ids("saturn/1", 0.25, seed=3), rigid_job_ids("saturn/1", 0.5, seed=3)
    assert len(quarter) == 40 and len(half) == 80 and quarter < half  # 160 jobs
    assert rigid_job_ids("saturn/1", 0.25, seed=3) == quarter and rigid_job_ids("saturn/1", 0.25, seed=4) != quarter
    assert rigid_job_ids("saturn/1", 0.0) == frozenset() and len(rigid_job_ids("saturn/1", 1.0)) == 160
    with pytest.raises(InputError, match="rigid"):
        rigid_job_ids("saturn/1", 1.5)


def test_rigid_jobs_of_any_count_run_at_their_request_under_sia() -> None:
    from schedopt.sim import Workload, cluster_preset, load_workload, simulate
    from schedopt.sim.adaptivity import SiaAnyRigid, limit_adaptivity

    w = Workload("w", load_workload("saturn/1").jobs[:6])  # cifar10 jobs asking for 12, 12, 8, 6, 12, 4 GPUs
    jm = limit_adaptivity(w, rigid=1.0)
    assert jm.rigid_jobs == {j.name for j in w.jobs} and jm.name == "sia:rigid=1:seed=0"
    r = simulate(cluster_preset("sia-64"), w, SiaAnyRigid(), job_model=jm)
    asked = {j.name: j.num_replicas for j in w.jobs}
    for rec in r.jobs:
        assert rec.finish is not None
        assert {g for *_, g in rec.segments} == {asked[rec.id]}  # every spell at exactly the requested count


# ---------------------------------------------------------------------------------------------- pipeline-parallel GPT
def test_gpt_pmp_iteration_time_and_scale_unit_by_hand() -> None:
    from schedopt.zoo.pmp import gpt_pmp

    g = gpt_pmp()
    assert g.scale_unit("a100") == 2 and g.scale_unit("rtx2080ti") == 8 and g.training_curve == "bert"
    # placements-dgx-ext.csv "2", micro-batch 1: t_fwd = 0.144 s -> 3 * ((2 - 1) + 48) * 0.144 = 21.168 s for 48 samples
    assert g.iteration_time("a100", (2,)) == pytest.approx(21.168)
    assert g.throughput("a100", (2,)) == pytest.approx(48 / 21.168)
    # placements-rtx.csv "88": t_fwd = 0.099 s, P = 8 -> 3 * 55 * 0.099 = 16.335 s for 2 pipelines x 48 samples
    assert g.iteration_time("rtx2080ti", (8, 8)) == pytest.approx(16.335)
    assert g.iteration_time("rtx2080ti", (8, 8), with_sync=True) == pytest.approx(16.335 + 0.435)
    assert g.throughput("rtx2080ti", (8, 8)) == pytest.approx(96 / 16.335)
    assert g.iteration_time("rtx2080ti", (4,)) is None  # not a multiple of P
    assert g.iteration_time("a100", (3, 3)) is None  # not measured
    with pytest.raises(InputError, match="gpu_type"):
        g.scale_unit("t4")
