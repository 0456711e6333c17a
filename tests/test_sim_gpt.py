"""The pipeline-model-parallel GPT application in the simulator (issue 31 item 2): measured pipeline times, GPU
counts in multiples of the pipeline depth P, the Sia policy's scale unit, a hand-checked JCT."""

from __future__ import annotations

import math

import pytest

from schedopt.errors import InputError
from schedopt.sia import Config
from schedopt.sim import simulate
from schedopt.sim.jobs import SIA, JobState, application, true_model
from schedopt.sim.policies.base import Decision, GpuRequest, JobView, RoundState
from schedopt.sim.policies.sia import SiaPolicy
from schedopt.sim.workloads import GPT_REQUEST, Workload, WorkloadJob, cluster_preset, load_workload, with_gpt_jobs
from schedopt.zoo.pmp import gpt_pmp

# the artifact's gpt_pmp tables: one stage's forward time per micro-batch of 1 sample, the same in every placement
FWD = {"a100": 0.144, "rtx2080ti": 0.099}
P = {"a100": 2, "rtx2080ti": 8}
M = 48


def test_pipeline_time_is_the_published_formula_on_every_measured_placement() -> None:
    app, m = gpt_pmp(), true_model("gpt_pmp")
    for t in ("a100", "rtx2080ti"):
        it = 3 * ((P[t] - 1) + M) * FWD[t]  # a100: 3 * 49 * 0.144 = 21.168 s; rtx: 3 * 55 * 0.099 = 16.335 s
        assert app.pipeline_time(t) == pytest.approx(it, rel=1e-12)
        for key in app.rows[t]:
            placement = [int(c) for c in key]
            assert app.iteration_time(t, placement) == pytest.approx(it, rel=1e-12)
            pipes = sum(placement) // P[t]
            assert float(m.params[t].step_time(len(placement), pipes, M)) == pytest.approx(it, rel=1e-6)
    assert app.pipeline_time("a100") == pytest.approx(21.168)
    assert app.pipeline_time("rtx2080ti") == pytest.approx(16.335)
    # 4 pipelines (8 GPUs) on one A100 node: 4 x 48 samples per 21.168 s
    assert app.throughput("a100", [8]) == pytest.approx(192 / 21.168)
    assert app.throughput("a100", [3]) is None  # not a multiple of P = 2


def test_gpt_trains_on_berts_curve() -> None:
    a, b = application("gpt_pmp"), application("bert")
    assert a.epochs == 2 and a.target == b.target == 14774.0


def _lone(cluster_name: str) -> tuple[float, tuple]:
    w = Workload("one", (WorkloadJob("g", 0.0, "gpt_pmp", 8, 192),))
    r = simulate(cluster_preset(cluster_name), w, SiaPolicy(), job_model="sia", round_seconds=60)
    (j,) = r.jobs
    assert j.finish is not None
    return j.finish, j.segments


def _jct(pipes: int, gpu_type: str) -> float:
    """By hand: 30 s restart (the artifact's default), then each epoch's progress at gain(B) / iteration time,
    B = pipes x 48, the initial batch 12 (BERT's), no slowdown (the artifact's SLOWDOWNS['gpt_pmp'] = 1.0)."""
    a = application("bert")
    it = 3 * ((P[gpu_type] - 1) + M) * FWD[gpu_type]
    B, t, done = pipes * M, 30.0, 0.0
    for e in range(2):
        sqr, var = a.grad_stats(B, e)
        gain = (var + sqr) / (var / (B / 12) + sqr)
        t += (a.progress[e] - done) * it / gain
        done = a.progress[e]
    return t


def test_lone_gpt_job_hand_checked_jct_on_sia_cluster() -> None:
    # alone, Sia gives it the most goodput: all 16 A100s = 8 pipelines, the batch cap 384 = 8 x 48
    finish, segs = _lone("sia-gpt")
    assert [(s[2], s[3]) for s in segs] == [("a100", 16.0)]
    assert finish == pytest.approx(_jct(8, "a100"), rel=1e-9)
    assert finish == pytest.approx(10106.82, abs=0.01)


def test_lone_gpt_job_on_rtx_only_runs_whole_pipelines() -> None:
    from schedopt.sia import Cluster, GpuType

    cl = Cluster((GpuType("rtx2080ti", 8, 2),))
    w = Workload("one", (WorkloadJob("g", 0.0, "gpt_pmp", 8, 192),))
    r = simulate(cl, w, SiaPolicy(), job_model="sia", round_seconds=600)
    (j,) = r.jobs
    assert [(s[2], s[3]) for s in j.segments] == [("rtx2080ti", 16.0)]  # 2 pipelines of 8
    assert j.finish == pytest.approx(_jct(2, "rtx2080ti"), rel=1e-9)


@pytest.mark.filterwarnings("ignore::schedopt.sim.feasibility.HopelessJobWarning", "ignore::RuntimeWarning")
def test_sia_policy_passes_the_scale_unit_and_zeroes_other_counts() -> None:
    cl = cluster_preset("sia-gpt")
    w = Workload("one", (WorkloadJob("g", 0.0, "gpt_pmp", 8, 192),))
    seen: list[tuple] = []

    class Spy(SiaPolicy):
        def decide(self, state: RoundState) -> Decision:
            (v,) = state.jobs
            (job,) = self.jobs(state)
            prob = self.problem(state)
            rows = self._rows(state)[0]
            cfg = prob.configs
            pos = {(cl.type_names[cfg.type_index[k]], int(cfg.n_gpus[k])): rows[k] for k in range(len(cfg))}
            seen.append((v.kind, dict(v.scale_units), job.scale_unit, job.kind, pos))
            return super().decide(state)

    simulate(cl, w, Spy(), job_model="sia", round_seconds=600, max_time=600)
    kind, units, unit, jkind, pos = seen[0]
    assert (kind, units, unit, jkind) == ("adaptive", {"a100": 2, "rtx2080ti": 8}, 2, "adaptive")
    assert pos[("a100", 1)] == 0 and pos[("a100", 2)] > 0 and pos[("a100", 16)] > 0
    assert pos[("rtx2080ti", 1)] == pos[("rtx2080ti", 2)] == pos[("rtx2080ti", 4)] == 0
    assert pos[("rtx2080ti", 8)] > 0 and pos[("rtx2080ti", 24)] > 0


class _Give:
    name = "give"
    adaptive = True

    def __init__(self, gpus: int, gpu_type: str) -> None:
        self.req = GpuRequest(gpus, gpu_type)

    def decide(self, state: RoundState) -> Decision:
        return Decision(requests={v.id: self.req for v in state.jobs})


@pytest.mark.filterwarnings("ignore::schedopt.sim.feasibility.HopelessJobWarning")
@pytest.mark.parametrize(("gpus", "gpu_type"), [(3, "a100"), (4, "rtx2080ti"), (12, "rtx2080ti")])
def test_a_count_that_is_no_multiple_of_p_is_refused(gpus: int, gpu_type: str) -> None:
    w = Workload("one", (WorkloadJob("g", 0.0, "gpt_pmp", 8, 192),))
    with pytest.raises(InputError, match="multiples of its pipeline depth"):
        simulate(cluster_preset("sia-gpt"), w, _Give(gpus, gpu_type), job_model="sia", round_seconds=60, max_time=60)


def test_jobstate_batch_is_pipelines_times_microbatches() -> None:
    j = JobState("g", "gpt_pmp", 0.0, 8, 192, True, SIA)
    j.nodes, j.config = {"rtx-0": 8, "rtx-1": 8}, Config(2, 16, "rtx2080ti")
    j.rebatch()
    assert (j.replicas(), j.local_bsz, j.accum, j.batch) == (2, 48, 0, 96)
    sqr, var = application("bert").grad_stats(96, 0)
    assert j.rate() == pytest.approx((var + sqr) / (var / (96 / 12) + sqr) / 16.335, rel=1e-6)
    j.nodes, j.config = {"a-0": 8}, Config(1, 8, "a100")
    j.rebatch()
    assert (j.replicas(), j.batch) == (4, 192)
    assert j.max_gpus == 64  # 8 pipelines (384 / 48) of the deepest type (RTX, P = 8)


def test_view_defaults_keep_old_constructors_valid() -> None:
    v = JobView(id="x", application="cifar10", arrival=0.0, age=0.0, attained_gpu_seconds=0.0, restarts=0,
                requested_gpus=1, batch_size=128, adaptive=False, current=None, current_nodes={},
                estimate=true_model("cifar10"), progress=0.0, max_gpus=1)
    assert v.kind == "rigid" and v.scale_unit("a100") == 1
    with pytest.raises(InputError, match="kind"):
        JobView(**{**v.__dict__, "kind": "elastic"})
    with pytest.raises(InputError, match="contradicts"):
        JobView(**{**v.__dict__, "kind": "strong"})


def test_with_gpt_jobs_is_seeded_and_exact() -> None:
    w = load_workload("saturn/1")
    g = with_gpt_jobs(w, 0.1, seed=3)
    gpt = [j for j in g.jobs if j.application == "gpt_pmp"]
    assert len(gpt) == round(0.1 * len(w)) == 16
    assert all((j.num_replicas, j.batch_size) == GPT_REQUEST for j in gpt)
    assert [j.time for j in g.jobs] == [j.time for j in w.jobs]
    assert g == with_gpt_jobs(w, 0.1, seed=3) and g != with_gpt_jobs(w, 0.1, seed=4)
    assert g.name == "saturn/1+gpt=0.1:seed=3"
    assert load_workload(g.name) == g  # the name loads it back (schedopt simulate --workload ...)
    with pytest.raises(InputError, match="integer seed"):
        load_workload("saturn/1+gpt=0.1:seed=x")
    with pytest.raises(InputError, match="fraction"):
        with_gpt_jobs(w, 1.5)


@pytest.mark.parametrize("n", [8, pytest.param(16, marks=pytest.mark.slow)])
def test_mixed_workload_gpt_jobs_only_ever_hold_multiples_of_p(n: int) -> None:
    base = load_workload("saturn/1")
    w = with_gpt_jobs(Workload("s", base.jobs[:n]), 0.25, seed=1)
    assert sum(j.application == "gpt_pmp" for j in w.jobs) == n // 4
    r = simulate(cluster_preset("sia-gpt"), w, SiaPolicy(), job_model="sia", round_seconds=300, estimator="oracle")
    gpt = [j for j in r.jobs if j.application == "gpt_pmp"]
    assert all(j.finish is not None for j in r.jobs)
    for j in gpt:
        for s in j.segments:
            assert s[3] % P[s[2]] == 0 and s[3] // P[s[2]] <= 8, (j.id, s)
    assert not math.isnan(sum(j.finish - j.arrival for j in gpt))


@pytest.mark.parametrize(("seed", "rigid"), [(3, "c"), (0, "g")])
def test_sia_any_rigid_values_pipelines_in_multiples_of_p(seed: int, rigid: str) -> None:
    from schedopt.sim.adaptivity import SiaAnyRigid, limit_adaptivity

    w = Workload("two", (WorkloadJob("g", 0.0, "gpt_pmp", 8, 192), WorkloadJob("c", 0.0, "cifar10", 2, 256)))
    jm = limit_adaptivity(w, 0.5, seed=seed)
    assert jm.rigid_jobs == {rigid}  # one job rigid: the any-count path of sia-any-rigid
    r = simulate(cluster_preset("sia-gpt"), w, SiaAnyRigid(), job_model=jm, round_seconds=600, estimator="oracle")
    g = next(j for j in r.jobs if j.id == "g")
    assert g.finish is not None and all(s[3] % P[s[2]] == 0 for s in g.segments)
    if rigid == "g":
        assert all(s[3] == 8 for s in g.segments)
    else:
        assert all(s[3] == 2 for s in next(j for j in r.jobs if j.id == "c").segments)
