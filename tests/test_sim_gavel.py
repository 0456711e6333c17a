"""The Gavel policy of schedopt.sim: the max-min fairness LP solved by hand, backends agreeing on it, Gavel's
priority rounds written out round by round, and every decision within the cluster."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedopt import available_backends, solve
from schedopt.errors import InputError
from schedopt.sia import Cluster, Config, GpuType
from schedopt.sim.policies.base import JobView, RoundState
from schedopt.sim.policies.gavel import GavelPolicy, build_gavel_lp, gavel_throughputs
from schedopt.zoo import load_model

LP_BACKENDS = [b for b in ("highs", "scipy", "glpk", "mathopt") if b in available_backends()
               and available_backends()[b].available]

CIFAR = load_model("cifar10")
BERT = load_model("bert")


def view(jid: str, est, requested: int, *, nodes: dict[str, int] | None = None, current: Config | None = None,
         batch: int | None = None) -> JobView:
    return JobView(id=jid, application=est.name, arrival=0.0, age=100.0, attained_gpu_seconds=0.0, restarts=0,
                   requested_gpus=requested, batch_size=int(batch or est.init_batch), adaptive=False,
                   current=current, current_nodes=dict(nodes or {}), estimate=est, progress=0.0, max_gpus=requested)


def state(cluster: Cluster, jobs: list[JobView], k: int = 0) -> RoundState:
    return RoundState(time=60.0 * k, round_index=k, round_seconds=60.0, cluster=cluster, jobs=tuple(jobs),
                      placement=None)


# ---------------------------------------------------------------------------------------------- the LP by hand
def test_lp_three_jobs_one_type_by_hand():
    """One type with 2 GPUs, equal throughputs, scale factors 1, 1, 2: normalised rates x1, x2, 2 x3, capacity
    x1 + x2 + 2 x3 <= 2, so t* = 2/3 with x = (2/3, 2/3, 1/3) (equal GPU time); the second LP keeps it (the sum
    of the minima already fills the type)."""
    lp = build_gavel_lp(np.ones((3, 1)), np.array([1, 1, 2]), np.array([2.0]))
    for backend in LP_BACKENDS:
        r = solve(lp.model, backend)
        assert r.termination.is_optimal
        assert r.objective == pytest.approx(2 / 3, abs=1e-7)
    lp2 = build_gavel_lp(np.ones((3, 1)), np.array([1, 1, 2]), np.array([2.0]), min_t=2 / 3 - 1e-9)
    r2 = solve(lp2.model, "highs")
    assert r2.values["x"].ravel() == pytest.approx([2 / 3, 2 / 3, 1 / 3], abs=1e-6)


def test_lp_two_types_by_hand():
    """Types A, B with 1 GPU each; X = [[1, 2], [1, 1]]. Equal-split throughputs prop = (1.5, 1), normalised rates
    (2/3, 4/3) and (1, 1). Job 2's time budget caps it at 1 and job 1 reaches 1 with 3/4 of B, so t* = 1. The
    second LP maximises 2/3 x1A + 4/3 x1B + x2A + x2B with both >= 1: job 1 all on B, job 2 all on A."""
    X = np.array([[1.0, 2.0], [1.0, 1.0]])
    pol = GavelPolicy()
    cl = Cluster((GpuType("a", 1, 1), GpuType("b", 1, 1)))
    x, ans = pol.solve_lp(X, np.array([1, 1]), cl, ["j1", "j2"])
    assert ans.is_optimal and ans.objective == pytest.approx(1.0, abs=1e-7)
    assert x == pytest.approx(np.array([[0.0, 1.0], [1.0, 0.0]]), abs=1e-7)
    assert ans.efficient is not None and ans.efficient.objective == pytest.approx(4 / 3 + 1, abs=1e-7)


def test_lp_excludes_jobs_that_run_nowhere_and_validates():
    lp = build_gavel_lp(np.array([[1.0], [0.0]]), np.array([1, 1]), np.array([1.0]), ["a", "b"], ("t",))
    assert lp.rows.tolist() == [0]
    assert lp.model.families["fairness"].labels == ("a",)
    with pytest.raises(InputError, match="scale_factors"):
        build_gavel_lp(np.ones((2, 1)), np.array([1, 0]), np.array([1.0]))
    with pytest.raises(InputError, match="throughputs"):
        build_gavel_lp(-np.ones((1, 1)), np.array([1]), np.array([1.0]))


@pytest.mark.parametrize("seed", [0, 1])
def test_backends_agree_on_a_real_round(seed):
    """The LP from the zoo's throughputs for 12 rigid jobs on Sia's 64-GPU cluster: every LP backend finds the
    same t* (the max-min value is unique even when x is not)."""
    from schedopt.sia import cluster

    rng = np.random.default_rng(seed)
    cl = cluster(64)
    apps = [load_model(a) for a in ("cifar10", "bert", "imagenet", "deepspeech2", "yolov3")]
    jobs = [view(f"j{i}", apps[int(rng.integers(5))], int(rng.choice([1, 2, 4, 8]))) for i in range(12)]
    X, sf = gavel_throughputs(cl, jobs)
    lp = build_gavel_lp(X, sf, cl.total_gpus, [v.id for v in jobs], cl.type_names)
    vals = [solve(lp.model, b).objective for b in LP_BACKENDS]
    assert len(LP_BACKENDS) >= 2
    assert np.ptp(vals) <= 1e-6 * max(vals)


# ---------------------------------------------------------------------------------------------- the rounds
def test_priority_rounds_by_hand():
    """The three jobs of the first LP test on one 2-GPU node. Round 0: every job starts at half a round (30 s)
    of 90 s, fraction 1/3, priority x / (1/3) = (2, 2, 1): jobs 1 and 2 run. Round 1: times (90, 90, 30) of
    210 s, priorities (2/3)/(3/7) = 14/9, 14/9 and (1/3)/(1/7) = 7/3: job 3 takes both GPUs. Round 2: (90, 90, 90)
    of 270 s: priorities (2, 2, 1) again."""
    cl = Cluster((GpuType("t4", 2, 1),))
    js = [view("j1", CIFAR, 1), view("j2", CIFAR, 1), view("j3", CIFAR, 2)]
    pol = GavelPolicy(round_seconds=60)
    d0 = pol.decide(state(cl, js, 0))
    assert d0.answer.objective == pytest.approx(2 / 3, abs=1e-7)
    assert [d0.answer.priorities[j]["t4"] for j in ("j1", "j2", "j3")] == pytest.approx([2, 2, 1], rel=1e-6)
    assert d0.nodes == {"j1": {"t4-0": 1}, "j2": {"t4-0": 1}}
    run1 = [view("j1", CIFAR, 1, nodes={"t4-0": 1}, current=Config(1, 1, "t4")),
            view("j2", CIFAR, 1, nodes={"t4-0": 1}, current=Config(1, 1, "t4")), view("j3", CIFAR, 2)]
    d1 = pol.decide(state(cl, run1, 1))
    assert [d1.answer.priorities[j]["t4"] for j in ("j1", "j2", "j3")] == pytest.approx([14 / 9, 14 / 9, 7 / 3],
                                                                                          rel=1e-6)
    assert d1.nodes == {"j3": {"t4-0": 2}}
    run2 = [view("j1", CIFAR, 1), view("j2", CIFAR, 1), view("j3", CIFAR, 2, nodes={"t4-0": 2},
                                                            current=Config(1, 2, "t4"))]
    d2 = pol.decide(state(cl, run2, 2))
    assert [d2.answer.priorities[j]["t4"] for j in ("j1", "j2", "j3")] == pytest.approx([2, 2, 1], rel=1e-6)
    assert d2.nodes == {"j1": {"t4-0": 1}, "j2": {"t4-0": 1}}


def test_placement_keeps_jobs_and_fills_servers_in_order():
    """Two 4-GPU servers. j-big (4 GPUs) ran on t4-1 and keeps it; the two 2-GPU jobs fill t4-0 in order."""
    cl = Cluster((GpuType("t4", 4, 2),))
    js = [view("small1", CIFAR, 2), view("big", CIFAR, 4, nodes={"t4-1": 4}, current=Config(1, 4, "t4")),
          view("small2", BERT, 2)]
    d = GavelPolicy().decide(state(cl, js))
    assert d.nodes == {"big": {"t4-1": 4}, "small1": {"t4-0": 2}, "small2": {"t4-0": 2}}


def test_new_simulation_resets_the_history():
    cl = Cluster((GpuType("t4", 2, 1),))
    js = [view("j1", CIFAR, 1), view("j2", CIFAR, 1), view("j3", CIFAR, 2)]
    pol = GavelPolicy(round_seconds=0)
    first = pol.decide(state(cl, js, 0)).nodes
    pol.decide(state(cl, js, 1))
    assert pol.decide(state(cl, js, 0)).nodes == first


# ---------------------------------------------------------------------------------------------- properties
def check(cluster: Cluster, jobs, nodes) -> list[str]:
    """Independent checker: nodes exist, capacity per node, one type per job, exactly the requested GPUs."""
    cap = {f"{t.name}-{k}": (t.name, t.gpus_per_node) for t in cluster.gpu_types for k in range(t.nodes)}
    req = {v.id: v.requested_gpus for v in jobs}
    used: dict[str, int] = {}
    out = []
    for jid, nd in nodes.items():
        if jid not in req or any(n not in cap for n in nd):
            out.append(f"{jid}: unknown job or node")
            continue
        if sum(nd.values()) != req[jid]:
            out.append(f"{jid}: {sum(nd.values())} GPUs, requested {req[jid]}")
        if len({cap[n][0] for n in nd}) != 1:
            out.append(f"{jid}: spans types")
        for n, c in nd.items():
            used[n] = used.get(n, 0) + c
    return out + [f"{n}: {u} > {cap[n][1]}" for n, u in used.items() if u > cap[n][1]]


@st.composite
def rounds(draw):
    types = tuple(GpuType(name, draw(st.sampled_from([2, 4, 8])), draw(st.integers(1, 3)))
                  for name in draw(st.sampled_from([("t4",), ("t4", "a100"), ("t4", "a100", "rtx2080ti")])))
    cl = Cluster(types)
    jobs = [view(f"j{i}", draw(st.sampled_from([CIFAR, BERT])), draw(st.sampled_from([1, 2, 4, 8])))
            for i in range(draw(st.integers(1, 8)))]
    return cl, jobs, draw(st.integers(1, 4))


@settings(max_examples=15)
@given(rounds())
def test_every_round_fits_the_cluster(case):
    """Several rounds in a row, each fed the previous decision as the jobs' current nodes."""
    cl, jobs, n = case
    pol = GavelPolicy(round_seconds=0)
    ntype = {f"{t.name}-{k}": t.name for t in cl.gpu_types for k in range(t.nodes)}
    for k in range(n):
        d = pol.decide(state(cl, jobs, k))
        assert check(cl, jobs, d.nodes) == []
        fr = d.answer.fractions
        for t in cl.type_names:  # the LP's time fractions fit each type
            assert sum(fr[v.id][t] * v.requested_gpus for v in jobs) <= cl[t].total_gpus + 1e-6
        jobs = [view(v.id, v.estimate, v.requested_gpus, nodes=d.nodes.get(v.id),
                     current=Config(len(d.nodes[v.id]), v.requested_gpus, ntype[next(iter(d.nodes[v.id]))])
                     if v.id in d.nodes else None) for v in jobs]


def test_bad_parameters_name_the_field():
    with pytest.raises(InputError, match="backend"):
        GavelPolicy(backend="")
    with pytest.raises(InputError, match="state"):
        GavelPolicy().decide("round 0")  # type: ignore[arg-type]


def test_max_sum_throughput_by_hand():
    """Gavel's max_sum_throughput_perf (the Sia artifact's default for its Gavel runs) on the two-type case:
    maximise x1A + 2 x1B + x2A + x2B within one GPU per type and one unit of time per job: job 1 on B, job 2 on A,
    sum 3 (any split of A between the jobs ties; B goes to job 1)."""
    cl = Cluster((GpuType("a", 1, 1), GpuType("b", 1, 1)))
    x, ans = GavelPolicy(objective="max_sum_throughput").solve_lp(np.array([[1.0, 2.0], [1.0, 1.0]]),
                                                                  np.array([1, 1]), cl, ["j1", "j2"])
    assert ans.objective == pytest.approx(3.0, abs=1e-7)
    assert x[0, 1] == pytest.approx(1.0, abs=1e-7) and x[:, 0].sum() == pytest.approx(1.0, abs=1e-7)
    assert "fairness" not in build_gavel_lp(np.ones((1, 1)), np.array([1]), np.array([1.0]),
                                            objective="max_sum_throughput").model.families
    with pytest.raises(InputError, match="objective"):
        GavelPolicy(objective="fifo")


def test_jobs_keep_their_nodes_within_gavel_round():
    """Gavel's own round is 360 s: with 60 s engine rounds the policy plans at t = 0 and 360 and keeps every job
    where it is in between (the job that finished, j2, leaves its GPU idle until the next plan)."""
    cl = Cluster((GpuType("t4", 2, 1),))
    pol = GavelPolicy()
    d0 = pol.decide(state(cl, [view("j1", CIFAR, 1), view("j2", CIFAR, 1), view("j3", CIFAR, 2)], 0))
    assert d0.nodes == {"j1": {"t4-0": 1}, "j2": {"t4-0": 1}} and d0.info["replanned"]
    running = [view("j1", CIFAR, 1, nodes={"t4-0": 1}, current=Config(1, 1, "t4")), view("j3", CIFAR, 2)]
    for k in range(1, 6):
        d = pol.decide(state(cl, running, k))
        assert d.nodes == {"j1": {"t4-0": 1}} and not d.info["replanned"] and d.answer is None
    d6 = pol.decide(state(cl, running, 6))
    assert d6.info["replanned"] and d6.nodes == {"j3": {"t4-0": 2}}
    with pytest.raises(InputError, match="round_seconds"):
        GavelPolicy(round_seconds=-1)
