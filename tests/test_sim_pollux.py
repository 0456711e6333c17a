"""The Pollux policies of schedopt.sim: the published genetic search (``pollux``) and its exact variant over Sia's
configurations (``pollux-exact``), checked by hand and against brute force written here without the policy code."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedopt.errors import InputError
from schedopt.goodput import JobGoodputModel, ThroughputParams
from schedopt.results import Limit, TerminationReason
from schedopt.sia import Cluster, Config, GpuType, generate_configs
from schedopt.sim.policies.base import Decision, JobView, RoundState
from schedopt.sim.policies.pollux import PolluxExactPolicy, PolluxPolicy, node_table
from schedopt.zoo import load_model

# ---------------------------------------------------------------------------------------------- helpers
# Synthetic estimates with goodput known in closed form: batch fixed at 64 (init = max batch), efficiency 1
# (grad_sqr = 0), gamma = 1, so T_o = T_c + T_net and goodput(r) = r b / (beta_c b + T_net) with b = ceil(64 / r).
LINEAR = JobGoodputModel("linear", {"g": ThroughputParams(0.0, 0.01, 0.0, 0.0, 0.0, 0.0, 1.0)}, 64, 64,
                         {"g": (1, 64)}, (64.0,), (0.0,), (1.0,))          # goodput(r) = 100 r
SYNCED = JobGoodputModel("synced", {"g": ThroughputParams(0.0, 0.01, 0.16, 0.0, 0.16, 0.0, 1.0)}, 64, 64,
                         {"g": (1, 64)}, (64.0,), (0.0,), (1.0,))          # r = 1: 100; r = 2: 64 / 0.48


def view(jid: str, est: JobGoodputModel, *, age: float = 90.0, restarts: int = 0, max_gpus: int = 64,
         nodes: dict[str, int] | None = None, current: Config | None = None, adaptive: bool = True,
         requested: int = 1, attained: float = 0.0, arrival: float = 0.0, batch: int = 64) -> JobView:
    return JobView(id=jid, application=est.name, arrival=arrival, age=age, attained_gpu_seconds=attained,
                   restarts=restarts, requested_gpus=requested, batch_size=batch, adaptive=adaptive,
                   current=current, current_nodes=dict(nodes or {}), estimate=est, progress=0.0, max_gpus=max_gpus)


def state(cluster: Cluster, jobs: list[JobView], round_index: int = 0) -> RoundState:
    return RoundState(time=60.0 * round_index, round_index=round_index, round_seconds=60.0, cluster=cluster,
                      jobs=tuple(jobs), placement=None)


def check_nodes(cluster: Cluster, jobs: list[JobView] | tuple[JobView, ...], nodes: dict) -> list[str]:
    """Independent checker of a node-level decision (plain Python over the spec)."""
    cap = {f"{t.name}-{k}": (t.name, t.gpus_per_node) for t in cluster.gpu_types for k in range(t.nodes)}
    views = {v.id: v for v in jobs}
    used: dict[str, int] = {}
    distributed_on: dict[str, int] = {}
    out = []
    for jid, nd in nodes.items():
        if jid not in views:
            out.append(f"{jid}: unknown job")
            continue
        v = views[jid]
        if any(n not in cap for n in nd):
            out.append(f"{jid}: unknown node")
            continue
        if any(c <= 0 for c in nd.values()):
            out.append(f"{jid}: non-positive count")
        if len({cap[n][0] for n in nd}) > 1:
            out.append(f"{jid}: spans GPU types")
        tot = sum(nd.values())
        if not v.adaptive and tot != v.requested_gpus:
            out.append(f"{jid}: rigid job holds {tot}, requested {v.requested_gpus}")
        if tot > v.max_gpus:
            out.append(f"{jid}: {tot} GPUs > max_gpus {v.max_gpus}")
        for n, c in nd.items():
            used[n] = used.get(n, 0) + c
            if len(nd) > 1:
                distributed_on[n] = distributed_on.get(n, 0) + 1
    out += [f"node {n}: {u} > {cap[n][1]}" for n, u in used.items() if u > cap[n][1]]
    out += [f"node {n}: {k} distributed jobs" for n, k in distributed_on.items() if k > 1]
    return out


_GP: dict[tuple, float] = {}


def gp(est: JobGoodputModel, t: str, n: int, r: int) -> float:
    key = (id(est), t, n, r)
    if key not in _GP:
        _GP[key] = float(est.goodput(t, nodes=n, replicas=r).goodput)
    return _GP[key]


def pollux_value(cluster: Cluster, jobs: list[JobView], alloc: dict[str, tuple[str, int, int]],
                 moved: set[str]) -> float:
    """Pollux's power mean (p = -1) written out: speedup over the fair share, scaled by N / G, restart factor on
    moved jobs, (mean (s + 1e-3)^-1)^-1. ``alloc``: job -> (GPU type, nodes, GPUs)."""
    G, N, J = cluster.num_gpus, int(cluster.nodes.sum()), len(jobs)
    ref = cluster.type_names[int(np.argmax(cluster.total_gpus))]
    fair_r, fair_n = math.ceil(G / J), math.ceil(N / G)
    tot = 0.0
    for v in jobs:
        s = 0.0
        if v.id in alloc:
            t, n, r = alloc[v.id]
            g = gp(v.estimate, t, n, r)
            base = gp(v.estimate, ref, fair_n, fair_r)
            s = g / base * N / G
        if v.id in moved:
            s *= max(v.age - 30 * v.restarts, 0) / (v.age + 30)
        tot += 1.0 / (s + 1e-3)
    return J / tot


# ---------------------------------------------------------------------------------------------- hand-checked
ONE_NODE = Cluster((GpuType("g", 4, 1),))


def test_closed_form_goodputs():
    g = LINEAR.goodput("g", nodes=[1, 1, 1, 1], replicas=[1, 2, 3, 4]).goodput
    assert g == pytest.approx([100, 200, 300, 400], rel=1e-6)
    g = SYNCED.goodput("g", nodes=[1, 1], replicas=[1, 2]).goodput
    assert g == pytest.approx([100, 64 / 0.48], rel=1e-6)


def test_ga_beats_sia_configurations_by_hand():
    """One 4-GPU node, two queued jobs aged 90 s (restart factor 90 / 120 = 0.75), fair share 2 GPUs, scale 1/4:
    s = 0.1875 x goodput / goodput(2). The Sia configurations (1, 2, 4 GPUs) give (2, 2): s = 0.1875 each,
    M = 0.1885. Node-level counts also allow (3, 1): s_a = 0.28125, s_b = 0.1875 x 100 / 133.33 = 0.140625,
    M = 2 / (1 / 0.28225 + 1 / 0.141625) = 0.18861 > 0.1885. Job b may hold at most 2 GPUs."""
    jobs = [view("a", LINEAR, attained=0.0), view("b", SYNCED, max_gpus=2, attained=1.0)]
    d = PolluxPolicy(seed=0).decide(state(ONE_NODE, jobs))
    assert d.nodes == {"a": {"g-0": 3}, "b": {"g-0": 1}}
    m31 = 2 / (1 / (0.28125 + 1e-3) + 1 / (0.140625 + 1e-3))
    assert d.answer.objective == pytest.approx(m31, rel=1e-6)
    assert d.answer.speedups == pytest.approx({"a": 0.28125, "b": 0.140625}, rel=1e-6)
    assert d.answer.termination.reason is TerminationReason.FEASIBLE
    assert d.answer.termination.limit is Limit.HEURISTIC
    e = PolluxExactPolicy().decide(state(ONE_NODE, jobs))
    assert e.allocation == {"a": Config(1, 2, "g"), "b": Config(1, 2, "g")}
    assert e.answer.is_optimal
    assert e.answer.objective == pytest.approx(0.1885, rel=1e-6)
    assert e.answer.bound == pytest.approx(0.1885, rel=1e-6)


def test_restart_penalty_keeps_a_running_job():
    """Job a runs on 2 GPUs (restarted twice, age 90: factor max(90 - 60, 0) / 120 = 0.25 if moved); job b is
    queued (factor 0.75 when started). Kept at 2, s_a = 0.25 x 1 = 0.25; b on 2: s_b = 0.25 x 1 x 0.75 = 0.1875.
    Moving a to 3 would give s_a = 0.25 x 1.5 x 0.25 = 0.09375 and b on 1 s_b = 0.09375: worse."""
    jobs = [view("a", LINEAR, restarts=2, nodes={"g-0": 2}, current=Config(1, 2, "g")),
            view("b", LINEAR, attained=1.0)]
    d = PolluxPolicy(seed=1).decide(state(ONE_NODE, jobs))
    assert d.nodes == {"a": {"g-0": 2}, "b": {"g-0": 2}}
    assert d.answer.speedups == pytest.approx({"a": 0.25, "b": 0.1875}, rel=1e-6)
    e = PolluxExactPolicy().decide(state(ONE_NODE, jobs))
    assert e.allocation == {"a": Config(1, 2, "g"), "b": Config(1, 2, "g")}
    assert e.answer.objective == pytest.approx(2 / (1 / 0.251 + 1 / 0.1885), rel=1e-6)


# ---------------------------------------------------------------------------------------------- brute force
TINY = Cluster((GpuType("t4", 2, 2), GpuType("a100", 2, 1)))  # 3 nodes, 6 GPUs, two types
ZOO = {a: load_model(a) for a in ("cifar10", "bert", "imagenet")}


def tiny_jobs() -> list[JobView]:
    return [view("j0", ZOO["cifar10"], age=600, max_gpus=4, attained=0),
            view("j1", ZOO["bert"], age=300, restarts=1, max_gpus=2, attained=5,
                 nodes={"t4-0": 1}, current=Config(1, 1, "t4")),
            view("j2", ZOO["imagenet"], age=1200, max_gpus=4, attained=9)]


def brute_nodes(cluster: Cluster, jobs: list[JobView]) -> float:
    """The best M over every node-level allocation obeying Pollux's rules (capacity, one type per job, max GPUs,
    one distributed job per node)."""
    ids, cap, typ = node_table(cluster)
    names = cluster.type_names
    best = -1.0
    rows = []
    for v in jobs:
        opts = [r for r in itertools.product(*[range(c + 1) for c in cap.tolist()])
                if sum(r) <= v.max_gpus and len({typ[k] for k in range(len(r)) if r[k]}) <= 1]
        rows.append(opts)
    for combo in itertools.product(*rows):
        a = np.array(combo)
        if (a.sum(axis=0) > cap).any():
            continue
        dist = (a > 0).sum(axis=1) > 1
        if (((a > 0) & dist[:, None]).sum(axis=0) > 1).any():
            continue
        alloc, moved = {}, set()
        for v, r in zip(jobs, combo):
            cur = tuple(v.current_nodes.get(n, 0) for n in ids)
            if cur != tuple(r):
                moved.add(v.id)
            if sum(r):
                t = names[int(typ[next(k for k in range(len(r)) if r[k])])]
                alloc[v.id] = (t, sum(1 for x in r if x), sum(r))
        best = max(best, pollux_value(cluster, jobs, alloc, moved))
    return best


def brute_configs(cluster: Cluster, jobs: list[JobView]) -> float:
    """The best M over every choice of one Sia configuration (or none) per job within the GPUs of each type."""
    table = generate_configs(cluster)
    best = -1.0
    opts = [[None] + [c for c in table.configs if c.n_gpus <= v.max_gpus] for v in jobs]
    for combo in itertools.product(*opts):
        use = dict.fromkeys(cluster.type_names, 0)
        for c in combo:
            if c is not None:
                use[c.gpu_type] += c.n_gpus
        if any(use[t.name] > t.total_gpus for t in cluster.gpu_types):
            continue
        alloc = {v.id: (c.gpu_type, c.n_nodes, c.n_gpus) for v, c in zip(jobs, combo) if c is not None}
        moved = {v.id for v, c in zip(jobs, combo) if c != v.current}
        best = max(best, pollux_value(cluster, jobs, alloc, moved))
    return best


def test_exact_matches_brute_force_over_configurations():
    jobs = tiny_jobs()
    want = brute_configs(TINY, jobs)
    for backend in ("mckp", "highs"):
        d = PolluxExactPolicy(backend=backend).decide(state(TINY, jobs))
        assert d.answer.is_optimal
        assert d.answer.objective == pytest.approx(want, rel=1e-9)
        got = pollux_value(TINY, jobs, {j: (c.gpu_type, c.n_nodes, c.n_gpus) for j, c in d.allocation.items() if c},
                           {v.id for v in jobs if d.allocation[v.id] != v.current})
        assert got == pytest.approx(want, rel=1e-9)


def test_ga_reaches_the_brute_force_optimum():
    jobs = tiny_jobs()
    want = brute_nodes(TINY, jobs)
    d = PolluxPolicy(seed=3).decide(state(TINY, jobs))
    assert check_nodes(TINY, jobs, d.nodes) == []
    assert d.answer.objective == pytest.approx(want, rel=1e-9)
    # the node-level optimum is at least the configuration optimum (configurations are node-level allocations)
    assert want >= brute_configs(TINY, jobs) - 1e-12


def test_ga_is_deterministic_and_warm_starts():
    jobs = tiny_jobs()
    a, b = (PolluxPolicy(seed=5, population=30, generations=20) for _ in range(2))
    assert a.decide(state(TINY, jobs)).nodes == b.decide(state(TINY, jobs)).nodes
    # the next round starts from the kept population: same inputs, same answer again
    assert a.decide(state(TINY, jobs, 1)).nodes == b.decide(state(TINY, jobs, 1)).nodes


# ---------------------------------------------------------------------------------------------- properties
@st.composite
def small_states(draw):
    types = []
    for k in range(draw(st.integers(1, 2))):
        types.append(GpuType(("t4", "a100")[k], draw(st.sampled_from([1, 2, 4])), draw(st.integers(1, 3))))
    cluster = Cluster(tuple(types))
    ids, cap, typ = node_table(cluster)
    free = cap.copy()
    jobs = []
    for j in range(draw(st.integers(1, 5))):
        app = draw(st.sampled_from(sorted(ZOO)))
        adaptive = draw(st.booleans()) or j == 0
        req = draw(st.sampled_from([1, 2, 4]))
        nodes: dict[str, int] = {}
        if draw(st.booleans()):  # currently running somewhere that fits
            k = draw(st.integers(0, len(ids) - 1))
            g = min(int(free[k]), req if not adaptive else draw(st.integers(1, 4)))
            if g > 0 and (adaptive or g == req):
                free[k] -= g
                nodes = {ids[k]: g}
        cur = Config(1, sum(nodes.values()), cluster.type_names[int(typ[ids.index(next(iter(nodes)))])]) \
            if nodes else None
        jobs.append(view(f"j{j}", ZOO[app], age=draw(st.floats(0, 5000)), restarts=draw(st.integers(0, 5)),
                         max_gpus=draw(st.integers(1, 8)) if adaptive else req, nodes=nodes, current=cur,
                         adaptive=adaptive, requested=req, attained=draw(st.floats(0, 1e5)),
                         batch=int(ZOO[app].init_batch)))
    return state(cluster, jobs, draw(st.integers(0, 3)))


@settings(max_examples=25)
@given(small_states(), st.integers(0, 2**16))
def test_ga_never_returns_an_infeasible_allocation(s, seed):
    d = PolluxPolicy(seed=seed, population=12, generations=4).decide(s)
    assert isinstance(d, Decision) and d.allocation is None
    assert check_nodes(s.cluster, s.jobs, d.nodes) == []
    assert d.answer.has_solution and math.isfinite(d.answer.objective)


@settings(max_examples=15)
@given(small_states())
def test_exact_allocation_fits_its_types(s):
    d = PolluxExactPolicy().decide(s)
    use = dict.fromkeys(s.cluster.type_names, 0)
    views = {v.id: v for v in s.jobs}
    for jid, c in d.allocation.items():
        if c is None:
            continue
        use[c.gpu_type] += c.n_gpus
        assert c.n_gpus <= views[jid].max_gpus
        if not views[jid].adaptive:
            assert c.n_gpus == views[jid].requested_gpus
    assert all(use[t.name] <= t.total_gpus for t in s.cluster.gpu_types)
    assert d.answer.is_optimal


def test_bad_parameters_name_the_field():
    with pytest.raises(InputError, match="population"):
        PolluxPolicy(population=1)
    with pytest.raises(InputError, match="^p="):
        PolluxExactPolicy(p=0)
    with pytest.raises(InputError, match="current_nodes"):
        PolluxPolicy().decide(state(ONE_NODE, [view("a", LINEAR, nodes={"nope-3": 1})]))


def test_no_jobs_gives_an_empty_decision():
    assert PolluxPolicy().decide(state(ONE_NODE, [])).nodes == {}
    assert PolluxExactPolicy().decide(state(ONE_NODE, [])).allocation == {}


def test_card_names_match_the_built_models():
    """formulations/sim_policies.md (a section of sim.md once merged) lists exactly the blocks and families the two
    models build."""
    import re
    from pathlib import Path

    from schedopt.sim.policies.gavel import build_gavel_lp

    root = Path(__file__).resolve().parents[1] / "formulations"
    card = root / "sim_policies.md" if (root / "sim_policies.md").exists() else root / "sim.md"
    text = card.read_text()
    assert "## Names" in text
    section = text.split("## Names", 1)[1].split("\n## ", 1)[0]
    listed = set(re.findall(r"^- `([A-Za-z_][A-Za-z0-9_]*)`", section, flags=re.M))
    six = Cluster((GpuType("g6", 6, 2),))  # 6 GPUs per node: Sia's virtual-node rows appear
    obj_state = state(six, [view("a", LINEAR.with_bootstrap("g6", "g", 1.0, 1.0, (1, 64)), max_gpus=8)])
    from schedopt.sim.policies.pollux import PolluxObjective

    m = PolluxExactPolicy().build(PolluxObjective(obj_state))[0]
    lp = build_gavel_lp(np.ones((2, 1)), np.array([1, 1]), np.array([2.0])).model
    built = set(m.blocks) | set(m.families) | set(lp.blocks) | set(lp.families)
    assert listed == built


@pytest.mark.slow
@pytest.mark.parametrize("name", ["pollux", "pollux-exact", "gavel"])
def test_engine_runs_the_policy_to_completion(name):
    """A four-job trace on a 6-GPU two-type cluster through the engine: every job finishes, every decision passed
    the engine's validation, and the record says which policy ran."""
    from schedopt import sim
    from schedopt.sim.policies import get_policy

    w = sim.read_workload("name,time,application,num_replicas,batch_size\nj0,0,bert,2,24\nj1,30,bert,1,12\n"
                          "j2,100,ncf,1,32768\nj3,200,bert,4,48\n", "tiny")
    cl = Cluster((GpuType("t4", 4, 1), GpuType("a100", 2, 1)))
    params = {"population": 10, "generations": 3} if name == "pollux" else {}
    r = sim.simulate(cl, w, get_policy(name, **params), job_model="sia", progress=False)
    assert all(j.finish is not None for j in r.jobs)
    assert r.meta.policy == name
