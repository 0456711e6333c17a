"""Every knob of the published Sia code (issue 16): a hand-computed case per knob, brute force with every knob on,
and the preset."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given
from hypothesis import settings as settings_
from hypothesis import strategies as st

import schedopt
from schedopt.errors import InputError
from schedopt.problem import Structure
from schedopt.sia import (
    Cluster,
    Config,
    GpuType,
    Job,
    SiaProblem,
    SiaSettings,
    check_allocation,
    check_placement,
    cluster,
    generate_configs,
    generate_instance,
    objective_value,
    place,
    published_settings,
)


def _matrix(prob_cluster: Cluster, rows: list[dict[Config, float]]) -> np.ndarray:
    table = generate_configs(prob_cluster)
    out = np.zeros((len(rows), len(table)))
    for i, row in enumerate(rows):
        for c, g in row.items():
            out[i, table.index(c)] = g
    return out


# ------------------------------------------------------------------------------------------ rounding and clip
def test_coefficient_rounding_flips_a_choice() -> None:
    """Types a, b, c (one 4-GPU node each; c has no free GPU but normalises: U = 4 G / G_c, G_c = 1, so
    U^-0.5 = x for G = 1 / (4 x^2)). Two 4-GPU jobs, one per type:

    * A = j1@a + j2@b: 0.494 + 0.494 = 0.988, rounded 0.49 + 0.49 = 0.98;
    * B = j1@b + j2@a: 0.496 + 0.4902 = 0.9862, rounded 0.50 + 0.49 = 0.99.

    The exact model picks B (0.9862 < 0.988), the published rounding picks A (0.98 < 0.99)."""
    cl = Cluster([GpuType("a", 4, 1), GpuType("b", 4, 1), GpuType("c", 4, 1)])
    g = lambda x: 1 / (4 * x * x)  # noqa: E731
    a4, b4, c4 = Config(1, 4, "a"), Config(1, 4, "b"), Config(1, 4, "c")
    G = _matrix(cl, [{a4: g(0.494), b4: g(0.496), c4: 1.0}, {a4: g(0.4902), b4: g(0.494), c4: 1.0}])
    jobs = [Job("j1", min_gpus=4, max_gpus=4), Job("j2", min_gpus=4, max_gpus=4)]
    avail = {"c": 0}
    exact = SiaProblem(cl, jobs, G, available=avail)
    rounded = SiaProblem(cl, jobs, G, available=avail, settings=SiaSettings(coef_decimals=2, coef_clip=3000.0))
    A, B = {"j1": a4, "j2": b4}, {"j1": b4, "j2": a4}
    for backend in ("highs", "mckp"):
        se, sr = exact.solve(backend), rounded.solve(backend)
        assert se.allocation == B and se.objective == pytest.approx(0.9862, abs=1e-9)
        assert sr.allocation == A and sr.objective == pytest.approx(0.98, abs=1e-9)
    assert objective_value(rounded, B) == pytest.approx(0.99) and objective_value(exact, A) == pytest.approx(0.988)


def test_coefficient_clip() -> None:
    """p = 1 (maximise U + lam): one 2-GPU job with U(1x1) = 1, U(1x2) = 1.8; clipping at 1.5 leaves 1x2 best
    (1.5 > 1) but values it at 1.5 (objective U + lam - lam)."""
    cl = Cluster([GpuType("a", 2, 1)])
    G = _matrix(cl, [{Config(1, 1, "a"): 1.0, Config(1, 2, "a"): 1.8}])
    prob = SiaProblem(cl, [Job("j", max_gpus=2, max_profiled_gpus=1)], G, p=1.0, lam=0.5,
                      settings=SiaSettings(coef_clip=1.5))
    sol = prob.solve("highs")
    assert sol.allocation == {"j": Config(1, 2, "a")} and sol.objective == pytest.approx(1.5)
    assert SiaProblem(cl, prob.jobs, G, p=1.0, lam=0.5).solve("highs").objective == pytest.approx(1.8)


# ------------------------------------------------------------------------------------------ node cap
def test_node_cap_removes_the_configurations_named_in_the_issue() -> None:
    """2048 GPUs (192 x 4 T4, 64 x 8 A100, 96 x 8 RTX 2080Ti), 64-GPU cap: 40 configurations; the published caps
    (T4 16 nodes, A100 2, RTX 3) leave 29, removing 3x24..8x64 on A100 and 4x32..8x64 on RTX."""
    cl = cluster(2048)
    capped = generate_configs(cl, 64)
    pub = generate_configs(cl, 64, max_nodes=published_settings().max_physical_nodes)
    assert len(capped) == 40 and len(pub) == 29
    gone = set(capped.labels.tolist()) - set(pub.labels.tolist())
    assert gone == {f"{n}x{8 * n}xa100" for n in range(3, 9)} | {f"{n}x{8 * n}xrtx2080ti" for n in range(4, 9)}
    prob = SiaProblem(cl, [Job("j", max_gpus=64, max_profiled_gpus=32)], lambda j, c: float(c.n_gpus),
                      settings=published_settings())
    assert len(prob.configs) == 29 and prob.max_gpus_per_job == 64
    with pytest.raises(InputError, match="settings.max_physical_nodes"):
        SiaSettings(max_physical_nodes={"a100": 0})


def test_node_cap_current_configuration_outside_the_table() -> None:
    """A preemptible job running on 3 A100 nodes (cut by a cap of 2) is accepted: its current configuration is no
    column, so every column pays the restart factor; a non-preemptible one raises, naming the field."""
    cl = Cluster([GpuType("a100", 8, 4)])
    st = SiaSettings(max_physical_nodes={"a100": 2})
    running = Job("j", max_profiled_gpus=16, current=Config(3, 24, "a100"), age_s=100.0, restarts=1, restart_cost_s=50.0)
    prob = SiaProblem(cl, [running], lambda j, c: float(c.n_gpus), settings=st)
    pt = prob.valid_pairs()
    r = (100 - 50) / 150
    assert np.allclose(pt.utility, np.array([1, 2, 4, 8, 16]) * r)
    with pytest.raises(InputError, match=r"jobs\[0\]\.current"):
        SiaProblem(cl, [Job("k", current=Config(3, 24, "a100"), preemptible=False)], lambda j, c: 1.0, settings=st)


# ------------------------------------------------------------------------------------------ rigid shapes
def test_rigid_12_gpus_on_8_gpu_nodes_gets_8_plus_4_and_places() -> None:
    """2 x 8 A100: a 12-GPU rigid job runs as one whole node + 4 GPUs (Config(2, 12)), next to a 4-GPU job; the
    exact model rejects the count (12 is neither a power of two <= 8 nor a multiple of 8)."""
    cl = Cluster([GpuType("a100", 8, 2)])
    jobs = [Job("r", kind="rigid", rigid_gpus=12), Job("s", min_gpus=4, max_gpus=4)]
    good = lambda j, c: float(c.n_gpus)  # noqa: E731
    with pytest.raises(InputError, match=r"jobs\[0\]\.rigid_gpus"):
        SiaProblem(cl, jobs, good)
    prob = SiaProblem(cl, jobs, good, settings=SiaSettings(rigid_any_count=True))
    assert prob.configs.rigid_only.tolist().count(True) == 1 and prob.configs[len(prob.configs) - 1] == Config(2, 12, "a100")
    sol = prob.solve("mckp", place=True)
    assert sol.allocation == {"r": Config(2, 12, "a100"), "s": Config(1, 4, "a100")}
    assert check_allocation(prob, sol.allocation) == []
    pl = sol.placement
    assert pl is not None and pl.unplaced == ()
    assert sorted(len(g) for _, g in pl["r"]) == [4, 8] and check_placement(cl, sol.allocation, pl) == []
    # the adaptive job never gets the rigid-only shape
    assert not (prob.valid_mask()[1] & prob.configs.rigid_only).any()


def test_rigid_6_gpus_on_8_gpu_node_blocks_4_plus_2() -> None:
    """A 6-GPU rigid job on one 8-GPU node is Config(1, 6): an aligned 4-block and a 2-block; two of them on 2
    nodes plus a 4-GPU job fill 16 GPUs and place from empty (the blocks may sit on different nodes)."""
    cl = Cluster([GpuType("a", 8, 2)])
    alloc = {"r1": Config(1, 6, "a"), "r2": Config(1, 6, "a"), "s": Config(1, 4, "a")}
    pl = place(cl, alloc, rigid=["r1", "r2"])  # rigid shapes only for jobs named rigid (issue 25)
    assert pl.unplaced == () and check_placement(cl, alloc, pl) == []
    jobs = [Job("r1", kind="rigid", rigid_gpus=6), Job("r2", kind="rigid", rigid_gpus=6), Job("s", min_gpus=4, max_gpus=4)]
    prob = SiaProblem(cl, jobs, lambda j, c: float(c.n_gpus), settings=SiaSettings(rigid_any_count=True))
    assert check_allocation(prob, alloc) == []
    over = {**alloc, "s": Config(1, 8, "a")}
    assert [v.path for v in check_allocation(prob, over)] == ["allocation[s]", "gpu_capacity[a]", "virtual_node_capacity[a]"]


def test_rigid_shape_checker_catches_bad_remainders() -> None:
    cl = Cluster([GpuType("a", 8, 2)])
    alloc = {"r": Config(2, 12, "a")}
    split = schedopt.sia.Placement({"r": [("a-0", (0, 1, 2, 3, 4, 5)), ("a-1", (0, 1, 2, 3, 4, 5))]}, dict(alloc))
    msgs = [v.message for v in check_placement(cl, alloc, split)]
    assert any("holds 0 whole nodes, needs 1" in m for m in msgs)
    crooked = schedopt.sia.Placement({"r": [("a-0", tuple(range(8))), ("a-1", (2, 3, 4, 5))]}, dict(alloc))
    assert any("remainder blocks [2, 2]" in v.message for v in check_placement(cl, alloc, crooked))


# ------------------------------------------------------------------------------------------ restart factor
def test_rigid_restart_factor_by_attained_gpu_seconds() -> None:
    """Age 1000 s, 2 restarts, restart cost 100 s: r = (1000 - 200) / 1100 = 0.72727. With 50 attained
    GPU-seconds (< 100) the published rule for rigid jobs keeps r = 1; adaptive jobs keep the age rule."""
    kw = dict(age_s=1000.0, restarts=2, restart_cost_s=100.0, attained_gpu_seconds=50.0)
    rigid = Job("r", kind="rigid", rigid_gpus=2, current=Config(1, 2, "a"), **kw)
    adaptive = Job("d", max_profiled_gpus=2, current=Config(1, 2, "a"), **kw)
    assert rigid.restart_factor() == pytest.approx(800 / 1100) and rigid.restart_factor(by_attained=True) == 1.0
    cl = Cluster([GpuType("a", 4, 1), GpuType("b", 4, 1)])
    G = lambda j, c: float(c.n_gpus) * (2.0 if c.gpu_type == "b" else 1.0)  # noqa: E731
    on = SiaProblem(cl, [rigid, adaptive], G, settings=SiaSettings(rigid_restart_by_attained=True))
    off = SiaProblem(cl, [rigid, adaptive], G)
    assert on.restart_factors() == pytest.approx([1.0, 800 / 1100])
    assert off.restart_factors() == pytest.approx([800 / 1100, 800 / 1100])
    # the rigid job's utility on b (U = 2 * 2 / 2 * 2 = 4 off its current) keeps its full value with the knob
    pt_on, pt_off = on.valid_pairs(), off.valid_pairs()
    k = next(i for i in range(len(pt_on)) if pt_on.job[i] == 0 and on.configs[int(pt_on.config[i])] == Config(1, 2, "b"))
    assert pt_on.utility[k] == pytest.approx(4.0) and pt_off.utility[k] == pytest.approx(4.0 * 800 / 1100)


# ------------------------------------------------------------------------------------------ lambda_a
def _stay_or_move(settings: SiaSettings | None) -> SiaProblem:
    """One job running at 1x2 (U = 2) that could move to 1x4 (U = 2.1; young, so no restart factor):
    2^-0.5 - 2.1^-0.5 = 0.70711 - 0.69007 = 0.01704 < 2 lambda_a = 0.02."""
    cl = Cluster([GpuType("a", 4, 1)])
    G = _matrix(cl, [{Config(1, 1, "a"): 1.0, Config(1, 2, "a"): 2.0, Config(1, 4, "a"): 2.1}])
    job = Job("j", max_profiled_gpus=2, current=Config(1, 2, "a"), age_s=10.0, restart_cost_s=60.0)
    return SiaProblem(cl, [job], G, settings=settings)


@pytest.mark.parametrize("form", ["linear", "auxiliary"])
def test_lambda_a_keeps_a_job_in_place_that_the_plain_model_moves(form: str) -> None:
    plain = _stay_or_move(None).solve("highs")
    assert plain.allocation == {"j": Config(1, 4, "a")} and plain.objective == pytest.approx(2.1**-0.5)
    prob = _stay_or_move(SiaSettings(change_penalty=0.01, change_form=form))  # type: ignore[arg-type]
    form_ = prob.formulation()
    assert form_.structure is (Structure.MCKP if form == "linear" else Structure.GENERAL)
    assert (set(form_.model.families) >= {"change_above", "change_below"}) == (form == "auxiliary")
    backends = ["highs", "mckp"] if form == "linear" else ["highs", "scipy"]
    for b in backends:
        sol = prob.solve(b)
        assert sol.allocation == {"j": Config(1, 2, "a")} and sol.objective == pytest.approx(2**-0.5)
    # moving costs 2 lambda_a, stopping lambda_a: the brute-force objective says the same
    assert objective_value(prob, {"j": Config(1, 4, "a")}) == pytest.approx(2.1**-0.5 + 0.02)
    assert objective_value(prob, {"j": None}) == pytest.approx(1.1 + 0.01)


def test_lambda_a_auxiliary_model_is_refused_by_mckp() -> None:
    prob = _stay_or_move(SiaSettings(change_penalty=0.01, change_form="auxiliary"))
    with pytest.raises(schedopt.errors.BackendCapabilityError):
        prob.solve("mckp")


# ------------------------------------------------------------------------------------------ brute force
def _tiny(seed: int, settings: SiaSettings, p: float) -> SiaProblem:
    rng = np.random.default_rng(seed)
    cl = Cluster([GpuType("a", 4, 2), GpuType("b", int(rng.choice([2, 6])), 1)])
    jobs = []
    for i in range(3):
        kind = str(rng.choice(["adaptive", "rigid"], p=[0.6, 0.4]))
        kw: dict = dict(age_s=float(rng.choice([5.0, 500.0])), restarts=int(rng.integers(0, 3)), restart_cost_s=60.0,
                        attained_gpu_seconds=float(rng.choice([10.0, 900.0])))
        if kind == "rigid":
            kw.update(kind="rigid", rigid_gpus=int(rng.choice([3, 5, 6])))
        else:
            kw.update(max_profiled_gpus=int(rng.choice([1, 2, 4])))
        jobs.append(Job(f"j{i}", **kw))
    prob0 = SiaProblem(cl, jobs, lambda j, c: 1.0, settings=settings)
    mask = prob0.valid_mask()
    for i, j in enumerate(jobs):  # a current configuration among the job's valid ones, for 60 % of the jobs
        cols = np.flatnonzero(mask[i])
        if rng.random() < 0.6 and cols.size:
            jobs[i] = Job(**{**j.__dict__, "current": prob0.configs[int(rng.choice(cols))]})
    table: dict = {}

    def good(j: Job, c: Config) -> float:
        key = (j.id, c)
        if key not in table:
            table[key] = float(c.n_gpus ** rng.uniform(0.6, 1.0) * (1.5 if c.gpu_type == "b" else 1.0))
        return table[key]

    return SiaProblem(cl, jobs, good, p=p, lam=1.1, settings=settings)


@pytest.mark.parametrize("seed", range(12))
def test_brute_force_with_every_knob_on(seed: int) -> None:
    """Every allocation of 3 jobs over the table (None or any configuration), kept when the independent checker
    passes: its best objective (recomputed per job, with rounding, clip and lambda_a) equals the solvers'."""
    p = -0.5 if seed % 3 else 0.5
    for form in ("linear", "auxiliary"):
        st = published_settings(max_physical_nodes={"a": 1}, change_form=form)  # type: ignore[arg-type]
        prob = _tiny(seed, st, p)
        choices = [None, *prob.configs.configs]
        best = None
        for combo in itertools.product(choices, repeat=len(prob.jobs)):
            alloc = dict(zip(prob.job_ids, combo))
            if check_allocation(prob, alloc):
                continue
            try:
                v = objective_value(prob, alloc)
            except KeyError:  # a configuration without utility (goodput 0) is no column
                continue
            best = v if best is None else (min(best, v) if p < 0 else max(best, v))
        assert best is not None
        for b in (["highs", "mckp"] if form == "linear" else ["highs"]):
            sol = prob.solve(b, mip_rel_gap=0)
            assert sol.objective == pytest.approx(best, abs=1e-7), (b, form)
            assert check_allocation(prob, sol.allocation) == []
            assert objective_value(prob, sol.allocation) == pytest.approx(best, abs=1e-7)
            pl = place(prob.cluster, sol.allocation, rigid=[j.id for j in prob.jobs if j.kind == "rigid"])
            assert pl.unplaced == () and check_placement(prob.cluster, sol.allocation, pl) == []


# ------------------------------------------------------------------------------------------ the preset
def test_published_settings_and_json_round_trip() -> None:
    st = published_settings()
    assert (st.coef_decimals, st.coef_clip, st.rigid_any_count, st.rigid_restart_by_attained, st.change_penalty,
            st.max_gpus_per_job) == (2, 3000.0, True, True, 0.01, 64)
    assert st.node_cap("a100") == 2 and st.node_cap("t4") == 16 and st.node_cap("rtx2080ti") == 3
    assert SiaSettings().is_exact and not st.is_exact and SiaSettings.from_dict(st.to_dict()) == st
    inst = generate_instance(64, 0, settings=st)
    again = schedopt.instances.loads(schedopt.instances.dumps(inst))
    assert again == inst and again.settings == st
    assert any(j.attained_gpu_seconds > 0 for j in inst.jobs)
    sol = inst.problem().solve()
    assert sol.backend == "mckp" and sol.is_optimal and check_allocation(inst.problem(), sol.allocation) == []
    data = schedopt.sia.to_data(inst)
    data["settings"]["change_form"] = "quadratic"
    with pytest.raises(InputError, match=r"data\.settings\.change_form"):
        schedopt.sia.from_data(data)


def test_rigid_shapes_keep_their_gpus_with_a_previous_placement() -> None:
    """Re-placing with the previous placement: unchanged rigid shapes keep their GPUs; a changed job is placed
    around them; everything checks."""
    cl = Cluster([GpuType("a", 8, 3)])
    first = {"r": Config(2, 12, "a"), "q": Config(1, 6, "a"), "s": Config(1, 2, "a")}
    pl1 = place(cl, first, rigid=first)
    assert pl1.unplaced == () and check_placement(cl, first, pl1) == []
    second = {**first, "s": Config(1, 4, "a"), "n": Config(1, 1, "a")}
    pl2 = place(cl, second, pl1, rigid=second)
    assert pl2.unplaced == () and check_placement(cl, second, pl2) == []
    assert sorted(pl2["r"]) == sorted(pl1["r"]) and sorted(pl2["q"]) == sorted(pl1["q"]) and pl2.evicted == ()


@settings_(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow,
                                                                                     HealthCheck.filter_too_much])
@given(data=st.data())
def test_every_checked_allocation_with_rigid_shapes_places_from_empty(data: st.DataObject) -> None:
    """Any allocation the independent checker accepts, rigid shapes of any count included (nodes of 2, 4, 6 or 8
    GPUs: power-of-two and virtual-node splits), places from an empty cluster and passes the placement checker."""
    types = [GpuType(f"t{k}", data.draw(st.sampled_from([2, 4, 6, 8])), data.draw(st.integers(1, 3)))
             for k in range(data.draw(st.integers(1, 2)))]
    cl = Cluster(types)
    n = data.draw(st.integers(1, 6))
    jobs, alloc = [], {}
    for i in range(n):
        t = data.draw(st.sampled_from(types))
        g = data.draw(st.integers(1, t.total_gpus))
        c = Config(-(-g // t.gpus_per_node), g, t.name)
        if g <= t.max_partial and g & (g - 1) == 0:
            c = Config(1, g, t.name)
        jobs.append(Job(f"j{i}", kind="rigid", rigid_gpus=g))
        alloc[f"j{i}"] = c
    prob = SiaProblem(cl, jobs, lambda j, c: 1.0, settings=SiaSettings(rigid_any_count=True))
    assume(check_allocation(prob, alloc) == [])
    pl = place(cl, alloc, rigid=alloc)
    assert pl.unplaced == () and check_placement(cl, alloc, pl) == []
