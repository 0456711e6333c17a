"""schedopt.sim.fairness: finish-time fairness rho, hand-checked on a 3-job trace (issue 29)."""

from __future__ import annotations

import math

import numpy as np
import pytest

# The toy world of tests/test_sim.py: one type "g" (1 node x 2 GPUs), rate exactly 1 progress unit per second on 2
# GPUs of one node, restart 30 s; "short" needs 20 units, "long" 80.
from sim_toy import TOY, TOY_CLUSTER, _toy_app

from schedopt.errors import InputError
from schedopt.goodput import JobGoodputModel, ThroughputParams
from schedopt.sim import JobModel, Workload, WorkloadJob, get_policy, simulate, summarize
from schedopt.sim.fairness import (
    average_contention,
    finish_time_fairness,
    isolated_jct,
    isolated_time,
    jain_index,
)


@pytest.fixture(scope="module")
def three():  # type: ignore[no-untyped-def]
    """fifo, 60 s rounds, every job rigid at 2 GPUs. t=0: A runs (A, B active): 30 s restart + 20 s -> done at 50.
    t=60: B runs (B, C active; C arrived at 30): done at 110. t=120, 180: C alone: 30 + 80 -> done at 230.
    JCTs: A 50, B 110, C 200."""
    w = Workload("three", (WorkloadJob("A", 0.0, "short", 2, 8), WorkloadJob("B", 0.0, "short", 2, 8),
                           WorkloadJob("C", 30.0, "long", 2, 8)))
    return simulate(TOY_CLUSTER, w, get_policy("fifo"), job_model=TOY)


def test_three_jobs_jcts_and_contention(three) -> None:  # type: ignore[no-untyped-def]
    assert three.jcts() == {"A": 50.0, "B": 110.0, "C": 200.0}
    # rounds at 0 (2 active), 60 (2), 120 (1), 180 (1); A active in [0, 50), B in [0, 110), C in [30, 230)
    assert average_contention(three) == {"A": 2.0, "B": 2.0, "C": pytest.approx(4 / 3)}


def test_three_jobs_rho_sia_rule(three) -> None:  # type: ignore[no-untyped-def]
    """Sia's rule, rigid jobs: fair share v = 2 GPUs / N_avg (A, B: 1; C: 1.5); alone at 2 GPUs A and B take
    30 + 20 = 50 s, C waits 30 s for its first round then 30 + 80 s = 140 s; the lone JCT is scaled by
    requested / v = 2 (A, B) and 4/3 (C): 100, 100, 186.67 -> rho 0.5, 1.1, 200 / 186.67 = 1.0714."""
    f = finish_time_fairness(three, rule="sia", jm=TOY)
    assert f.share == {"A": 1.0, "B": 1.0, "C": pytest.approx(1.5)}
    assert f.isolated == {"A": 100.0, "B": 100.0, "C": pytest.approx(560 / 3)}
    assert f.rho == {"A": 0.5, "B": 1.1, "C": pytest.approx(15 / 14)}
    assert f.worst == 1.1
    assert f.unfair_fraction == pytest.approx(2 / 3)
    x = np.array([0.5, 1.1, 15 / 14])
    assert f.jain == pytest.approx(x.sum() ** 2 / (3 * (x * x).sum()))
    assert f.jain == pytest.approx(0.91215, abs=1e-5)
    assert f.by_group({"A": "alice", "B": "bob", "C": "bob"}) == {
        "alice": {"jobs": 1, "worst_rho": 0.5, "mean_rho": 0.5, "unfair_fraction": 0.0, "jain_rho": 1.0},
        "bob": {"jobs": 2, "worst_rho": 1.1, "mean_rho": pytest.approx((1.1 + 15 / 14) / 2), "unfair_fraction": 1.0,
                "jain_rho": pytest.approx(jain_index([1.1, 15 / 14]))}}


def test_three_jobs_rho_gavel_rule(three) -> None:  # type: ignore[no-untyped-def]
    """Gavel's rule: 1/N of the cluster's time at the requested 2 GPUs (fraction v / 2), no round phase, no
    restart: A, B 20 s of work at half the time -> 40 s; C 80 s at 0.75 -> 106.67 s. rho 1.25, 2.75, 1.875."""
    f = finish_time_fairness(three, rule="gavel", jm=TOY)
    assert f.isolated == {"A": pytest.approx(40.0), "B": pytest.approx(40.0), "C": pytest.approx(320 / 3)}
    assert f.rho == {"A": pytest.approx(1.25), "B": pytest.approx(2.75), "C": pytest.approx(1.875)}
    assert f.unfair_fraction == 1.0


def test_isolated_adaptive_interpolates_and_divides_below_one_gpu() -> None:
    """An adaptive job on a 1 x 8 node whose rate is 1 unit/s at any count >= 2 (network time only on 1 GPU), alone:
    it takes its best count among powers of two up to min(share, cap) (cap 1 at first, then 2 x most held). Below one
    GPU of share the 1-GPU JCT is divided by the share; between counts the JCTs are interpolated."""
    cl = {"g": (1, 2)}
    t1 = isolated_time("long", "g", 2, 1, TOY, 60.0, True, 1, 8)
    t2 = isolated_time("long", "g", 2, 2, TOY, 60.0, True, 1, 8)
    assert t2 <= t1
    assert isolated_jct("long", 0.0, 0.5, cl, TOY, 60.0) == pytest.approx(t1 / 0.5)
    assert isolated_jct("long", 0.0, 1.25, cl, TOY, 60.0) == pytest.approx(t1 + 0.25 * (t2 - t1))
    # arriving 20 s into a round: the lone run waits 40 s for its first round
    assert isolated_jct("long", 20.0, 1.0, cl, TOY, 60.0) == pytest.approx(40.0 + t1)


def test_rigid_isolated_time_is_restart_plus_work() -> None:
    assert isolated_time("long", "g", 2, 2, TOY, 60.0, False, 2, 8) == 110.0
    assert isolated_time("short", "g", 2, 2, TOY, 60.0, False, 2, 8) == 50.0


def test_summary_keys_and_bad_rule(three) -> None:  # type: ignore[no-untyped-def]
    s = summarize(three)  # job model "toy" is no preset: isolation cannot be rebuilt from the records alone
    assert math.isnan(s["worst_rho"]) and math.isnan(s["unfair_fraction"]) and math.isnan(s["jain_rho"])
    with pytest.raises(InputError, match="rule"):
        finish_time_fairness(three, rule="themis")
    with pytest.raises(InputError, match="share"):
        isolated_jct("long", 0.0, 0.0, {"g": (1, 2)}, TOY, 60.0)


def test_jain_index_values() -> None:
    assert jain_index([1, 1, 1]) == 1.0
    assert jain_index([1, 0, 0, 0]) == 0.25
    assert math.isnan(jain_index([]))


def test_summary_on_a_preset_workload_has_fairness() -> None:
    """A real (tiny) run on Pollux's cluster: every finished job gets a finite rho; the summary carries the keys."""
    from schedopt.sim import cluster_preset, load_workload

    w = load_workload("pollux/1")
    w = Workload("p1-8", w.jobs[:8])
    r = simulate(cluster_preset("pollux"), w, get_policy("fifo"), job_model="pollux")
    f = finish_time_fairness(r)
    assert set(f.rho) == set(r.jcts())
    assert all(math.isfinite(v) and v > 0 for v in f.rho.values())
    s = summarize(r)
    assert s["worst_rho"] == f.worst and s["jain_rho"] == f.jain and 0 < s["jain_rho"] <= 1



def test_rho_cdf_figure(tmp_path) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("matplotlib")
    from schedopt.sim import cluster_preset, load_workload
    from schedopt.sim.plots import rho_cdf

    w = Workload("p1-4", load_workload("pollux/1").jobs[:4])
    r = simulate(cluster_preset("pollux"), w, get_policy("fifo"), job_model="pollux")
    out = rho_cdf([r], tmp_path / "rho.png")
    assert out.exists() and out.stat().st_size > 1000
    with pytest.raises(InputError, match="rule"):
        rho_cdf([r], tmp_path / "bad.png", rule="themis")
    # a record of a job model without isolation (here the toy model, as Gandiva's and Synergy's records are) is
    # left out of the figure and said on it, beside the records that have rho (`schedopt simulate report` on a
    # folder with a Gandiva run raised before)
    toy = simulate(TOY_CLUSTER, Workload("toy", (WorkloadJob("a", 0.0, "short", 1, 32),)), get_policy("fifo"),
                   job_model=TOY, max_time=3600.0)
    with pytest.raises(InputError, match="job_model"):
        finish_time_fairness(toy)
    mixed = rho_cdf([r, toy], tmp_path / "mixed.png")
    assert mixed.exists() and mixed.stat().st_size > 1000
    with pytest.raises(InputError, match="rule"):
        rho_cdf([toy], tmp_path / "bad2.png", rule="themis")


def test_two_types_sia_averages_times_gavel_adds_throughputs() -> None:
    """Two types, one 2-GPU node each; on "h" the toy runs at half speed. A rigid 2-GPU "short" job alone takes
    30 + 20 = 50 s on "g" and 30 + 40 = 70 s on "h". With a fair share of 2 GPUs (no slow-down): Sia's rule
    averages the times weighted by GPUs, (2 x 50 + 2 x 70) / 4 = 60 s; Gavel's gives the job half of each type's
    time (c_k / (N s) = 2 / (2 x 2)) and adds the throughputs: 1 / (0.5 / 20 + 0.5 / 40) = 26.67 s of work."""
    app, _ = _toy_app("short", [10, 20])
    slow = JobGoodputModel("short", {"g": ThroughputParams(1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0),
                                     "h": ThroughputParams(2.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0)}, 8, 8,
                           {"g": (1, 8), "h": (1, 8)}, (8.0,), (1.0,), (0.0,))
    jm = JobModel("toy2", default_restart=30.0, apps={"short": (app, slow)})
    cl = {"g": (1, 2), "h": (1, 2)}
    assert isolated_jct("short", 0.0, 2.0, cl, jm, 60.0, adaptive=False, requested_gpus=2, batch_size=8) == 60.0
    assert isolated_jct("short", 0.0, 2.0, cl, jm, 60.0, adaptive=False, requested_gpus=2, batch_size=8,
                        rule="gavel") == pytest.approx(80 / 3)


def test_card_names_are_the_codes(three) -> None:  # type: ignore[no-untyped-def]
    """formulations/fairness.md's ``## Names`` are summary keys, FairnessReport fields or functions of the module."""
    import re
    from pathlib import Path

    import schedopt.sim.fairness as fm

    text = (Path(__file__).resolve().parents[1] / "formulations" / "fairness.md").read_text()
    names = re.findall(r"^- `([A-Za-z_][A-Za-z0-9_]*)`", text.split("## Names", 1)[1].split("\n## ", 1)[0], re.M)
    keys = set(summarize(three)) | set(finish_time_fairness(three, jm=TOY).summary())
    fields = set(fm.FairnessReport.__dataclass_fields__)
    aliases = {"n_avg": "average_contention"}
    for n in names:
        assert n in keys or n in fields or hasattr(fm, aliases.get(n, n)), n


def _rates_by_placement(jm: JobModel, app: str, job_id: str, adaptive: bool, req: int, batch: int, cap: int,
                        per_node: int, gpu_type: str, held: tuple[int, ...], held_type: str | None, local_bsz: int,
                        accum: int, epoch: int) -> dict[int, float]:
    """The lone run's candidate rates the way the engine gets a job's rate: a JobState placed on each count in
    turn, re-batched (the route ``fairness._candidate_rates`` keeps for rigid, strong and pipeline jobs, and the
    one its direct route replaced for the others, issue 42)."""
    from schedopt.sim import fairness

    j = fairness._held_job(jm, app, job_id, adaptive, req, batch, held, held_type, local_bsz, accum, epoch)
    return fairness._rates_by_placement(j, fairness._counts(cap, sum(held)), per_node, gpu_type)


@pytest.mark.parametrize("model", ["sia", "sia-measured", "pollux"])
def test_the_lone_runs_candidate_rates_equal_a_placed_jobs_bit_for_bit(model: str) -> None:
    """Every application, GPU type, node size, cap and held state (fresh, and mid-run at a re-batched local batch):
    the direct route gives the same floats as placing a JobState on each count, and the rigid ncf of the fitted
    models takes the placement route itself."""
    from schedopt.goodput import blas_threads
    from schedopt.sim.fairness import _candidate_rates
    from schedopt.sim.jobs import adaptive_batch, job_model

    with blas_threads(1):  # the measured tables' triangulations, as in a simulation
        n = _compare_candidate_rates(job_model(model), _candidate_rates, adaptive_batch)
    assert n > 250


def _compare_candidate_rates(jm: JobModel, candidate_rates, adaptive_batch) -> int:  # type: ignore[no-untyped-def]
    n = 0
    for app in ("cifar10", "imagenet", "bert", "deepspeech2", "yolov3", "ncf"):
        types = sorted(jm.truth(app).params)
        for t in types:
            for per_node, cap in ((4, 3), (4, 24), (8, 64)):
                for epoch in (0, 3):
                    states = [((), None, 0, 0)]
                    for held in ((1,), (4,) if per_node == 4 else (8,), (per_node, 2)):
                        lb, acc = adaptive_batch(app, t, jm, len(held), sum(held), epoch,
                                                 float(jm.truth(app).init_batch))
                        states.append((held, t, lb, acc))
                    for held, ht, lb, acc in states:
                        args = (jm, app, "isolated", True, 1, 0, cap, per_node, t, held, ht, lb, acc, epoch)
                        assert candidate_rates(*args) == _rates_by_placement(*args), (app, t, per_node, cap, held)
                        n += 1
    return n


def test_the_lone_runs_direct_route_equals_the_engines_route() -> None:
    """``isolated_time``'s direct route for an adaptive data-parallel job (``_lone_adaptive``, the job's state in
    local variables) finishes at the same float as the engine's route (``_lone_run``: ``_best_count``, ``_place``,
    ``JobState.advance``), under the fitted, the measured and Pollux's job model, for every application on two of
    its GPU types, caps below and above the node size, two round lengths; the rigid ncf of the fitted models and the
    toy rigid jobs take the engine's route."""
    from schedopt.goodput import blas_threads
    from schedopt.sim import fairness
    from schedopt.sim.jobs import JobState, job_model

    n = 0
    with blas_threads(1):
        for model in ("sia", "sia-measured", "pollux"):
            jm = job_model(model)
            for app in ("cifar10", "imagenet", "bert", "deepspeech2", "yolov3", "ncf"):
                fresh = JobState("isolated", app, 0.0, 1, 1, True, jm)
                if fresh.kind != "adaptive" or fresh.scale_units:
                    continue
                for t in sorted(jm.truth(app).params)[:2]:
                    for per_node, gpus, R in ((4, 1, 360.0), (4, 3, 60.0), (8, 13, 360.0), (2, 9, 360.0)):
                        direct = fairness._lone_adaptive(JobState("isolated", app, 0.0, 1, 1, True, jm), t,
                                                         per_node, gpus, R)
                        engine = fairness._lone_run(JobState("isolated", app, 0.0, 1, 1, True, jm), t, per_node,
                                                    gpus, R)
                        assert direct == engine and math.isfinite(direct), (model, app, t, per_node, gpus, R)
                        n += 1
    assert n >= 80
    assert isolated_time("long", "g", 2, 2, TOY, 60.0, False, 2, 8) == 110.0  # rigid: the engine's route


def test_an_adaptive_jobs_lone_run_does_not_depend_on_its_request() -> None:
    """``isolated_time`` shares one lone run among the adaptive data-parallel jobs of one application on one share
    (``_lone_adaptive_time``: the request and batch are not its key). That is right only if the engine's route, run
    with each job's own request and batch, finishes at the same float: checked for several requests and batches,
    two GPU types, caps below and above the node size; a strong-scaling job's request does change its run."""
    from schedopt.sim import fairness
    from schedopt.sim.jobs import JobModel, JobState, job_model

    jm = job_model("sia")
    for app in ("cifar10", "bert", "yolov3"):
        for t in sorted(jm.truth(app).params)[:2]:
            for per_node, gpus in ((4, 3), (8, 13)):
                shared = isolated_time(app, t, per_node, gpus, jm, 360.0, True, 1, 0)
                for req, bsz in ((2, 64), (16, 512), (5, 1)):
                    assert isolated_time(app, t, per_node, gpus, jm, 360.0, True, req, bsz) == shared
                    engine = fairness._lone_run(JobState("isolated", app, 0.0, req, bsz, True, jm), t, per_node, gpus,
                                                360.0)
                    assert engine == shared and math.isfinite(shared), (app, t, per_node, gpus, req, bsz)
    strong = JobModel("strong", restart_seconds=jm.restart_seconds, slowdown=jm.slowdown,
                      max_local_bsz=jm.max_local_bsz, strong_jobs=frozenset({"isolated"}))
    one, four = (isolated_time("cifar10", "t4", 4, 8, strong, 360.0, True, req, 128) for req in (1, 4))
    assert one != four
