"""Strong-scaling and rigid jobs in closed loop (issue 31 item 1): seeded kinds, the engine's view, the Sia policy's
job kinds, and a strong-scaling job whose batch stays at its request while its GPU count adapts."""

from __future__ import annotations

import pytest

from schedopt.errors import InputError
from schedopt.sia import Cluster, Config, GpuType
from schedopt.sim import simulate
from schedopt.sim.adaptivity import job_kinds, limit_adaptivity, rigid_job_ids
from schedopt.sim.jobs import SIA, JobState, application, true_model
from schedopt.sim.policies.base import Decision, RoundState
from schedopt.sim.policies.sia import SiaPolicy
from schedopt.sim.workloads import Workload, WorkloadJob, load_workload


def test_job_kinds_are_exact_disjoint_and_nested() -> None:
    w = load_workload("saturn/1")  # 160 jobs
    r25, s25 = job_kinds(w, 0.25, 0.25, seed=0)
    assert (len(r25), len(s25)) == (40, 40) and not r25 & s25
    assert r25 == rigid_job_ids(w, 0.25, 0)  # the rigid draw is the existing one
    r50, s10 = job_kinds(w, 0.5, 0.1, seed=0)
    assert r25 <= r50 and (len(r50), len(s10)) == (80, 16) and not r50 & s10
    _, s50 = job_kinds(w, 0.25, 0.5, seed=0)
    assert s25 <= s50
    assert job_kinds(w, 0.25, 0.25, seed=1) != (r25, s25)
    with pytest.raises(InputError, match="rigid \\+ strong"):
        job_kinds(w, 0.75, 0.5)
    with pytest.raises(InputError, match="strong"):
        job_kinds(w, 0.0, -0.1)
    jm = limit_adaptivity(w, 0.25, strong=0.25, seed=0)
    assert jm.name == "sia:rigid=0.25:strong=0.25:seed=0" and jm.strong_jobs == s25 and jm.rigid_jobs == r25
    assert limit_adaptivity(w, 0.25, seed=0).name == "sia:rigid=0.25:seed=0"  # unchanged without strong jobs


def test_strong_job_keeps_its_batch_on_any_count() -> None:
    w = Workload("one", (WorkloadJob("s", 0.0, "cifar10", 4, 512),))
    jm = limit_adaptivity(w, 0.0, strong=1.0)
    j = JobState("s", "cifar10", 0.0, 4, 512, True, jm)
    assert j.kind == "strong"
    j.max_profiled = 8
    assert j.max_gpus == 4  # the request caps it (the artifact's max_replicas = target_num_replicas)
    # the published update_local_bsz with the target batch: 1 GPU accumulates once (512 > 128 = init batch)
    for g, (local, accum) in {1: (256, 1), 2: (256, 0), 4: (128, 0)}.items():
        j.nodes, j.config = {"a-0": g}, Config(1, g, "a100")
        j.rebatch()
        assert (j.local_bsz, j.accum, j.batch) == (local, accum, 512)
    adaptive = JobState("a", "cifar10", 0.0, 4, 512, True, SIA)
    assert adaptive.kind == "adaptive"
    rigid = JobState("r", "cifar10", 0.0, 4, 512, False, jm)
    assert rigid.kind == "rigid"  # a rigid policy runs every job rigid


def _progress(segments: tuple, finish: float, gpu_type: str = "a100") -> float:
    """Progress made over ``segments`` by hand: 50 s restart (cifar10's) at each segment's start, then per epoch
    gain(512) / step time of the fitted truth at the batch's (local, accumulation), / 1.8 (cifar10's slowdown)."""
    app, p = application("cifar10"), true_model("cifar10").params[gpu_type]
    shape = {1: (256, 1), 2: (256, 0), 4: (128, 0)}
    done, epoch = 0.0, 0
    for s, e, t, g in segments:
        assert t == gpu_type
        left = min(e, finish) - s - 50.0
        local, accum = shape[int(g)]
        while left > 1e-9 and epoch < app.epochs:
            sqr, var = app.grad_stats(512, epoch)
            rate = (var + sqr) / (var / (512 / 128) + sqr) / float(p.step_time(1, int(g), local, accum)) / 1.8
            need = (app.progress[epoch] - done) / rate
            if need > left:
                done += rate * left
                break
            left -= need
            done = float(app.progress[epoch])
            epoch += 1
    return done


def test_strong_job_in_closed_loop_grows_to_its_request_at_its_batch() -> None:
    cl = Cluster((GpuType("a100", 8, 1),))
    w = Workload("one", (WorkloadJob("s", 0.0, "cifar10", 4, 512),))
    jm = limit_adaptivity(w, 0.0, strong=1.0)
    seen: list[tuple] = []

    class Spy(SiaPolicy):
        def decide(self, state: RoundState) -> Decision:
            (v,) = state.jobs
            (job,) = self.jobs(state)
            seen.append((v.kind, v.max_gpus, job.kind, job.batch_size))
            return super().decide(state)

    r = simulate(cl, w, Spy(), job_model=jm, round_seconds=60, estimator="oracle")
    (j,) = r.jobs
    assert seen[0] == ("strong", 1, "strong", 512.0) and seen[-1] == ("strong", 4, "strong", 512.0)
    assert [int(s[3]) for s in j.segments] == [1, 2, 4]  # the growth rule, then its request
    assert j.finish is not None
    assert _progress(j.segments, j.finish) == pytest.approx(application("cifar10").target, rel=1e-9)
    # the same job adaptive takes the whole node and a larger batch: it finishes sooner
    r2 = simulate(cl, w, SiaPolicy(), job_model="sia", round_seconds=60, estimator="oracle")
    assert max(s[3] for s in r2.jobs[0].segments) == 8 and r2.jobs[0].finish < j.finish


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_sia_rows_for_strong_jobs_are_throughput_at_the_fixed_batch() -> None:
    cl = Cluster((GpuType("a100", 8, 1),))
    w = Workload("two", (WorkloadJob("s", 0.0, "cifar10", 4, 512), WorkloadJob("a", 0.0, "cifar10", 4, 512)))
    jm = limit_adaptivity(w, 0.0, strong=0.5, seed=0)
    (strong_id,) = jm.strong_jobs
    got: dict[str, object] = {}

    class Spy(SiaPolicy):
        def decide(self, state: RoundState) -> Decision:
            rows = self._rows(state)
            cfg = self._table[1] if self._table else None
            assert cfg is not None
            for i, v in enumerate(state.jobs):
                k = next(k for k in range(len(cfg)) if int(cfg.n_gpus[k]) == 1)
                got[v.id] = (v.kind, float(rows[i, k]), v.estimate)
            return super().decide(state)

    simulate(cl, w, Spy(), job_model=jm, round_seconds=60, max_time=60, estimator="oracle")
    kind, val, est = got[strong_id]
    assert kind == "strong"
    assert val == pytest.approx(float(est.throughput("a100", 1, 1, 512.0)))  # samples/s at batch 512
    other = next(k for k in got if k != strong_id)
    assert got[other][0] == "adaptive"
    assert got[other][1] == pytest.approx(float(est.goodput("a100", 1, 1).goodput))
