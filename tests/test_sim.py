"""schedopt.sim: the engine, the job model, the fifo / tiresias / sia policies, metrics (issue 14)."""

from __future__ import annotations

import functools

import numpy as np
import pytest

# ---------------------------------------------------------------------------------------------------- a toy world
# One GPU type "g" (1 node x 2 GPUs). Two applications whose true rate is exactly 1 progress unit per second on any
# GPU count: T_c = alpha_c = 1 s per step (beta_c = 0), no network time within a node (alpha_r = beta_r = 0),
# gamma = 1, and grad_var = 0 so the gain is 1 at every batch. "short" needs 20 units (epochs end at 10, 20),
# "long" 80 (epochs end at 40, 80). Restart delay 30 s.
from sim_toy import TOY, TOY_CLUSTER, _toy_app  # noqa: F401 - the shared toy world (tests/sim_toy.py)

from schedopt.errors import InputError
from schedopt.sia import Cluster, Config, GpuType
from schedopt.sim import (
    POLLUX,
    SIA,
    Decision,
    Workload,
    WorkloadJob,
    cluster_preset,
    get_policy,
    load_workload,
    read_jsonl,
    simulate,
    summarize,
)
from schedopt.sim.jobs import JobState, application, local_limits
from schedopt.sim.metrics import queue_length, utilization


def test_hand_computed_two_jobs_three_rounds() -> None:
    """fifo, 60 s rounds. Round 0 (t=0): A (short, 2 GPUs, arrived 0) starts: 30 s restart, then 20 s of training:
    finishes at t=50, JCT 50. B (long, 2 GPUs) arrives at 30, is admitted at round 1 (t=60) and starts: 30 s restart,
    30 s training (progress 30). Round 2 (t=120): 50 more units -> finishes at 170, JCT 170 - 30 = 140. No round 3."""
    w = Workload("toy", (WorkloadJob("A", 0.0, "short", 2, 8), WorkloadJob("B", 30.0, "long", 2, 8)))
    res = simulate(TOY_CLUSTER, w, get_policy("fifo"), job_model=TOY)
    a, b = res.jobs
    # 1 GPU would add NET_EPS-sized network time; on 2 GPUs within a node the step is exactly 1 s
    assert (a.start, a.finish, a.jct) == (0.0, 50.0, 50.0)
    assert (b.start, b.finish, b.jct) == (60.0, 170.0, 140.0)
    assert (a.restarts, b.restarts) == (0, 0)
    assert a.gpu_seconds == {"g": 100.0} and b.gpu_seconds == {"g": 220.0}
    assert [r.time for r in res.rounds] == [0.0, 60.0, 120.0]
    s = summarize(res)
    assert s["avg_jct_s"] == 95.0 and s["makespan_s"] == 170.0
    assert s["gpu_hours"] == pytest.approx(320 / 3600)
    # utilization sampled at 0, 60, 120, 180: held 2 of 2 GPUs at 0 (A), 60 and 120 (B), free at 180
    t, u = utilization(res)
    assert list(t) == [0.0, 60.0, 120.0, 180.0] and list(u) == [1.0, 1.0, 1.0, 0.0]
    t, q = queue_length(res, step=10)  # B waited from 30 to 60
    assert [float(x) for x, n in zip(t, q) if n] == [30.0, 40.0, 50.0] and q.max() == 1


class _Preempt:
    """Gives B the GPUs at round 1 (preempting A), then A again at round 2: A restarts once."""

    name = "preempt-test"
    adaptive = False

    def decide(self, state):  # type: ignore[no-untyped-def]
        ids = {v.id for v in state.jobs}
        who = "B" if state.round_index == 1 and "B" in ids else ("A" if "A" in ids else "B")
        return Decision(nodes={who: {"g-0": 2}})


def test_preemption_restart_and_progress_kept() -> None:
    """A (long) runs 30 s at round 0 (progress 30), is preempted at round 1 while B (short, arrived 10) runs
    30 + 20 s and finishes at 110 (JCT 100); A resumes at round 2 (t=120) with one restart: 30 s restart, 30 s of
    training (progress 60); round 3: 20 more -> finishes at 200, JCT 200."""
    w = Workload("toy", (WorkloadJob("A", 0.0, "long", 2, 8), WorkloadJob("B", 10.0, "short", 2, 8)))
    res = simulate(TOY_CLUSTER, w, _Preempt(), job_model=TOY)
    a, b = res.jobs
    assert (b.start, b.finish, b.jct, b.restarts) == (60.0, 110.0, 100.0, 0)
    assert (a.start, a.finish, a.jct, a.restarts) == (0.0, 200.0, 200.0, 1)
    assert a.segments == ((0.0, 60.0, "g", 2), (120.0, 200.0, "g", 2))
    assert a.gpu_seconds == {"g": 2 * (60 + 80)}


class _Bad:
    name = "bad"
    adaptive = False

    def __init__(self, decision: Decision) -> None:
        self.d = decision

    def decide(self, state):  # type: ignore[no-untyped-def]
        return self.d


@pytest.mark.parametrize(
    ("decision", "field"),
    [
        (Decision(nodes={"A": {"g-0": 3}}), "policy[bad].nodes[A]"),          # more than requested (rigid)
        (Decision(nodes={"A": {"g-0": 1}}), "policy[bad].nodes[A]"),          # rigid gets exactly 2 or none
        (Decision(nodes={"Z": {"g-0": 2}}), "policy[bad].nodes[Z]"),          # unknown job
        (Decision(nodes={"A": {"g-7": 2}}), "policy[bad].nodes[A][g-7]"),     # unknown node
        (Decision(allocation={"A": Config(1, 4, "g")}), "policy[bad].allocation[A]"),  # not a shape of the cluster
        (Decision(allocation={"A": Config(1, 2, "g")}, nodes={}), "policy[bad].decision"),
    ],
)
def test_bad_decisions_name_the_policy_and_the_job(decision: Decision, field: str) -> None:
    w = Workload("toy", (WorkloadJob("A", 0.0, "short", 2, 8),))
    with pytest.raises(InputError) as e:
        simulate(TOY_CLUSTER, w, _Bad(decision), job_model=TOY)
    assert e.value.field == field


def test_node_capacity_is_checked() -> None:
    cl = Cluster((GpuType("g", 2, 1),))
    w = Workload("toy", (WorkloadJob("A", 0.0, "short", 2, 8), WorkloadJob("B", 0.0, "short", 2, 8)))
    with pytest.raises(InputError, match="node g-0 holds 2 GPUs; jobs A, B ask for 4"):
        simulate(cl, w, _Bad(Decision(nodes={"A": {"g-0": 2}, "B": {"g-0": 2}})), job_model=TOY)


def test_rigid_job_larger_than_any_type_is_rejected_up_front() -> None:
    w = Workload("toy", (WorkloadJob("A", 0.0, "short", 4, 8),))
    with pytest.raises(InputError) as e:
        simulate(TOY_CLUSTER, w, get_policy("fifo"), job_model=TOY)
    assert e.value.field == "workload.jobs[0].num_replicas"


# ---------------------------------------------------------------------------------------------------- job model
def test_job_model_rate_matches_the_pollux_formula() -> None:
    """cifar10 rigid on 4 T4s in one node at batch 512: local 128, no accumulation; rate = gain / step time with the
    epoch-0 statistics interpolated at 512 (exactly a profiled batch)."""
    j = JobState("c", "cifar10", 0.0, 4, 512, False, POLLUX)
    j.nodes, j.config = {"t4-0": 4}, Config(1, 4, "t4")
    j.rebatch()
    assert (j.local_bsz, j.accum, j.batch) == (128, 0, 512)
    app = application("cifar10")
    k = list(app.batches).index(512.0)
    sqr, var = app.grad_sqr[0, k], app.grad_var[0, k]
    gain = (var + sqr) / (var / 4 + sqr)
    from schedopt import zoo

    step = float(zoo.load_model("cifar10").params["t4"].step_time(1, 4, 128, 0))
    assert j.rate() == pytest.approx(gain / step, rel=1e-12)
    # Sia's calibration divides the rate by its slowdown (1.8 for cifar10)
    js = JobState("c", "cifar10", 0.0, 4, 512, False, SIA)
    js.nodes, js.config = dict(j.nodes), j.config
    js.rebatch()
    assert js.rate() == pytest.approx(j.rate() / 1.8, rel=1e-12)


def test_pollux_one_gpu_accumulation_quirk_and_yolov3_cap() -> None:
    """A 1-GPU job above the initial batch accumulates at least once (Pollux's update_local_bsz); yolov3's local
    batch is capped at 8 in the Pollux simulator."""
    j = JobState("c", "cifar10", 0.0, 1, 256, False, POLLUX)
    j.nodes, j.config = {"t4-0": 1}, Config(1, 1, "t4")
    j.rebatch()
    assert (j.local_bsz, j.accum) == (128, 1)
    y = JobState("y", "yolov3", 0.0, 1, 64, False, POLLUX)
    y.nodes, y.config = {"t4-0": 1}, Config(1, 1, "t4")
    y.rebatch()
    assert (y.local_bsz, y.accum) == (8, 7)


def test_restart_delays_follow_each_simulator() -> None:
    assert POLLUX.restart("imagenet") == 30.0 and POLLUX.restart("cifar10") == 30.0
    assert SIA.restart("imagenet") == 250.0 and SIA.restart("bert") == 120.0 and SIA.restart("cifar10") == 50.0


def test_adaptive_cap_grows_with_profiled_gpus() -> None:
    j = JobState("c", "cifar10", 0.0, 4, 512, True, POLLUX)
    assert j.max_gpus == 1
    j.max_profiled = 4
    assert j.max_gpus == 8
    j.max_profiled = 48
    assert j.max_gpus == 64
    assert JobState("n", "ncf", 0.0, 4, 512, True, POLLUX).max_gpus == 1  # ncf: rigid, 1 GPU


# ---------------------------------------------------------------------------------------------------- real traces
def _head(name: str, n: int) -> Workload:
    w = load_workload(name)
    return Workload(f"{name}[:{n}]", w.jobs[:n])


class _Recorder:
    """Wraps a policy and checks every decision with an independent checker (written without the engine)."""

    def __init__(self, inner, check_sia: bool = False) -> None:  # type: ignore[no-untyped-def]
        self.inner, self.name = inner, inner.name
        self.adaptive = getattr(inner, "adaptive", False)
        self.check_sia = check_sia
        self.rounds = 0

    def decide(self, state):  # type: ignore[no-untyped-def]
        cap = {nid: t.gpus_per_node for t in state.cluster.gpu_types for nid in state.cluster.node_ids(t.name)}
        if state.placement is not None:  # the previous round's placement never exceeds a node
            for nid, used in state.placement.node_usage().items():
                assert used <= cap[nid], (nid, used)
        if self.check_sia:
            from schedopt.sia import check_allocation

            prob = self.inner.problem(state)
        d = self.inner.decide(state)
        views = {v.id: v for v in state.jobs}
        if d.nodes is not None:
            use: dict[str, int] = {}
            for jid, m in d.nodes.items():
                v = views[jid]
                assert len({n.rsplit("-", 1)[0] for n in m}) == 1
                assert sum(m.values()) == v.requested_gpus if not v.adaptive else sum(m.values()) <= v.max_gpus
                for n, g in m.items():
                    use[n] = use.get(n, 0) + g
            assert all(use[n] <= cap[n] for n in use)
        if self.check_sia:
            assert check_allocation(prob, dict(d.allocation or {})) == []
        self.rounds += 1
        return d


@pytest.mark.parametrize("policy", ["fifo", "tiresias", "sia"])
def test_conservation_on_a_real_trace(policy: str) -> None:
    """Every job finishes exactly once, GPUs held never exceed a type's capacity at any time, and each JCT is at
    least the restart delay plus the job's ideal run time (its whole target at the best rate any allowed
    configuration reaches in any epoch)."""
    cl = cluster_preset("sia-64")
    w = _head("saturn/2", 6 if policy == "sia" else 14)
    rec = _Recorder(get_policy(policy), check_sia=policy == "sia")
    res = simulate(cl, w, rec, job_model="sia")
    assert [j.id for j in res.jobs] == [j.name for j in w.jobs]
    assert all(j.finish is not None and j.start is not None and j.start >= j.arrival for j in res.jobs)
    assert rec.rounds == len(res.rounds) > 0
    # capacity per type over time, from the records
    edges = sorted({s for j in res.jobs for s, _, _, _ in j.segments})
    for t in edges:
        for ty in cl.type_names:
            held = sum(g for j in res.jobs for s, e, tt, g in j.segments if tt == ty and s <= t < e)
            assert held <= cl[ty].total_gpus
    for rec_j, wj in zip(res.jobs, w.jobs):
        ideal = _ideal_seconds(wj.application, wj.num_replicas, wj.batch_size, policy == "sia")
        assert rec_j.jct >= SIA.restart(wj.application) + ideal - 1e-6


@functools.cache
def _ideal_seconds(app_name: str, num_replicas: int, batch_size: int, adaptive: bool) -> float:
    """The target over an upper bound of the true rate. Adaptive: the gain never exceeds the batch scale
    (efficiency <= 1), so rate <= throughput / M0 / slowdown, maximised over every (type, one node or several,
    GPUs <= 64, local batch in the type's limits, accumulation steps) with a global batch <= the maximum. Rigid: its
    batch rule on one node or on several (the throughput model only tells one node from several), every epoch."""
    cl = cluster_preset("sia-64")
    app, truth = application(app_name), SIA.truth(app_name)
    best = 0.0
    for t in cl.gpu_types:
        p = truth.params[t.name]
        lo, hi = local_limits(app_name, t.name, SIA)
        if adaptive:
            for multi in (False, True):
                for r in range(1, min(64, t.total_gpus) + 1):
                    if (not multi and r > t.gpus_per_node) or (multi and r < 2):
                        continue
                    b, acc = np.meshgrid(np.arange(lo, hi + 1, dtype=float), np.arange(0, 64, dtype=float))
                    B = r * b * (acc + 1)
                    ok = B <= truth.max_batch
                    if ok.any():
                        xput = B[ok] / p.step_time(2 if multi else 1, r, b[ok], acc[ok])
                        best = max(best, float(xput.max()) / truth.init_batch / SIA.slowdown.get(app_name, 1.0))
        elif num_replicas <= t.total_gpus:
            for n in ({1} if num_replicas <= t.gpus_per_node else set()) | ({2} if num_replicas >= 2 else set()):
                j = JobState("x", app_name, 0.0, num_replicas, batch_size, False, SIA)
                j.nodes = {f"{t.name}-{k}": 1 for k in range(n)}
                j.nodes[f"{t.name}-0"] += num_replicas - n
                j.config = Config(n, num_replicas, t.name)
                for e in range(app.epochs):
                    j.epoch = e
                    j.rebatch()
                    best = max(best, j.rate())
    return app.target / best


def test_determinism_same_records_bit_for_bit() -> None:
    cl = cluster_preset("sia-64")
    w = _head("saturn/3", 6)
    r1 = simulate(cl, w, get_policy("sia"), job_model="sia")
    r2 = simulate(cl, w, get_policy("sia"), job_model="sia")
    assert r1.jobs == r2.jobs
    assert [r.answer["objective"] for r in r1.rounds] == [r.answer["objective"] for r in r2.rounds]


def test_policies_swap_without_touching_the_engine() -> None:
    """Any object with name and decide() runs on the same engine call as the registered ones."""

    class LargestFirst:
        name = "largest-first"
        adaptive = False

        def decide(self, state):  # type: ignore[no-untyped-def]
            free = {n: t.gpus_per_node for t in state.cluster.gpu_types for n in state.cluster.node_ids(t.name)}
            out = {}
            for v in sorted(state.jobs, key=lambda v: (-v.requested_gpus, v.arrival)):
                if v.current_nodes:
                    out[v.id] = dict(v.current_nodes)
                    for n, g in v.current_nodes.items():
                        free[n] -= g
            for v in sorted(state.jobs, key=lambda v: (-v.requested_gpus, v.arrival)):
                if v.current_nodes:
                    continue
                n = next((n for n, f in free.items() if f >= v.requested_gpus), None)
                if n is not None:
                    out[v.id] = {n: v.requested_gpus}
                    free[n] -= v.requested_gpus
            return Decision(nodes=out)

    cl = cluster_preset("pollux")
    w = Workload("small", tuple(j for j in load_workload("pollux/1").jobs if j.num_replicas <= 4)[:8])
    out = {p.name: simulate(cl, w, p, job_model="pollux").summary()["finished"]
           for p in (LargestFirst(), get_policy("fifo"), get_policy("tiresias"))}
    assert out == {"largest-first": 8, "fifo": 8, "tiresias": 8}


def test_tiresias_demotes_after_sixteen_gpu_hours() -> None:
    """With a 60 GPU-second threshold a 2-GPU job is demoted after its first round (120 GPU-s held); a job arriving
    later in queue 0 then preempts it."""
    pol = get_policy("tiresias", threshold=60.0)
    w = Workload("toy", (WorkloadJob("A", 0.0, "long", 2, 8), WorkloadJob("B", 10.0, "short", 2, 8)))
    res = simulate(TOY_CLUSTER, w, pol, job_model=TOY)
    a, b = res.jobs
    # round 1: A demoted (120 GPU-s >= 60), B in queue 0 first -> B runs 60..110, A resumes at 120 (one restart)
    assert (b.start, b.finish) == (60.0, 110.0)
    assert (a.restarts, a.finish) == (1, 200.0)
    assert get_policy("tiresias").threshold == 57600.0


def test_records_round_trip_through_jsonl() -> None:
    res = simulate(TOY_CLUSTER, Workload("toy", (WorkloadJob("A", 0.0, "short", 2, 8),)), get_policy("fifo"),
                   job_model=TOY)
    back = read_jsonl(res.to_jsonl())
    assert back.jobs == res.jobs and back.meta.policy == "fifo"
    assert summarize(back) == summarize(res)
    assert res.jobs_csv().splitlines()[1] == "A,short,0.0,0.0,50.0,50.0,0,2,8,100.0"


def test_sia_policy_any_backend_same_first_round() -> None:
    """mckp and highs solve the same round-0 ILP to the same objective (both prove optimality here)."""
    from schedopt.sim.policies.base import RoundState

    cl = cluster_preset("sia-64")
    w = _head("saturn/1", 12)
    outs = {}
    for backend in ("mckp", "highs"):
        pol = get_policy("sia", backend=backend, time_limit=10)
        seen = []

        class Spy:
            name, adaptive = "sia", True

            def decide(self, state: RoundState, pol=pol, seen=seen):  # type: ignore[no-untyped-def]
                d = pol.decide(state)
                seen.append(d.answer)
                return d

        simulate(cl, w, Spy(), job_model="sia", max_time=w.jobs[0].time + 120)
        outs[backend] = seen[0]
    assert outs["mckp"].is_optimal and outs["highs"].is_optimal
    assert outs["mckp"].objective == pytest.approx(outs["highs"].objective, rel=1e-6)


def test_card_names_are_the_code() -> None:
    """formulations/sim.md's `## Names` are public names of schedopt.sim (and used in the card's text)."""
    import re
    from pathlib import Path

    import schedopt.sim as sim_pkg
    from schedopt.sim import jobs, sweep

    text = (Path(__file__).resolve().parents[1] / "formulations" / "sim.md").read_text()
    sec = text.split("## Names", 1)[1].split("\n## ", 1)[0]
    names = re.findall(r"^- `([A-Za-z_]+)`", sec, flags=re.M)
    assert names
    body = text.replace(sec, "")
    for n in names:
        assert any(hasattr(m, n) for m in (sim_pkg, jobs, sweep)), n
        assert re.search(rf"\b{n}\b", body), n


def test_sia_policy_cached_rows_equal_the_models_goodput() -> None:
    """The policy's cached (jobs x configs) goodput equals what SiaProblem computes from the estimates directly."""
    from schedopt.sia import SiaProblem

    states = []

    class Grab:
        name, adaptive = "sia", True

        def __init__(self) -> None:
            self.inner = get_policy("sia")

        def decide(self, state):  # type: ignore[no-untyped-def]
            states.append(state)
            return self.inner.decide(state)

    w = _head("pollux/2", 12)  # has ncf (rigid under sia) and adaptive jobs
    simulate(cluster_preset("sia-64"), w, Grab(), job_model="sia", max_time=w.jobs[-1].time + 600)
    pol = get_policy("sia")
    kinds = set()
    mixed = [x for x in states if len({v.adaptive for v in x.jobs}) == 2]
    for st_ in mixed[:4] + states[-2:]:
        jobs = pol.jobs(st_)
        direct = SiaProblem(st_.cluster, jobs, {v.id: v.estimate for v in st_.jobs}, max_gpus_per_job=64).valid_pairs()
        cached = pol.problem(st_).valid_pairs()
        assert np.array_equal(direct.config, cached.config) and np.array_equal(direct.job, cached.job)
        np.testing.assert_allclose(cached.goodput, direct.goodput, rtol=1e-12)
        kinds |= {v.adaptive for v in st_.jobs}
    assert kinds == {True, False}


def test_charge_policy_time_delays_the_changed_jobs() -> None:
    """A policy that takes >= 0.2 s per round: with charge_policy_time the first start of A waits that long too,
    so A finishes at least 0.2 s later than at 50 s; without it, exactly at 50 s."""
    import time as _time

    class Slow:
        name, adaptive = "slow", False

        def __init__(self) -> None:
            self.inner = get_policy("fifo")

        def decide(self, state):  # type: ignore[no-untyped-def]
            _time.sleep(0.2)
            return self.inner.decide(state)

    w = Workload("toy", (WorkloadJob("A", 0.0, "short", 2, 8),))
    plain = simulate(TOY_CLUSTER, w, Slow(), job_model=TOY)
    charged = simulate(TOY_CLUSTER, w, Slow(), job_model=TOY, charge_policy_time=True)
    assert plain.jobs[0].finish == 50.0
    assert 50.2 <= charged.jobs[0].finish <= 60.0
    assert charged.rounds[0].policy_seconds >= 0.2 and charged.meta.charge_policy_time is True
