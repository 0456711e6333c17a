"""Behavioural equivalence of the vectorised Sia path (placement, job arrays, model build, decode, goodput models)
with straightforward per-job / per-GPU reference implementations (the code they replaced). No timing asserts."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import schedopt
from schedopt import zoo
from schedopt.goodput import JobGoodputModel, ThroughputParams, goodput
from schedopt.goodput._throughput import NET_EPS
from schedopt.sia import (
    Cluster,
    Config,
    GpuType,
    SiaProblem,
    SiaSolution,
    check_allocation,
    check_placement,
    generate_configs,
    generate_instance,
    place,
    virtual_bins,
)
from schedopt.sia.pairs import NO_LIMIT
from schedopt.sia.strategies import allocations_that_fit, clusters, problems

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ------------------------------------------------------------------------------------------------ references
def reference_place(cluster: Cluster, allocation: dict) -> tuple[dict, tuple]:
    """The greedy grid placer from empty, one job at a time over an (nodes x GPUs) occupancy array per type:
    multi-node configurations first (the last fully free nodes), then partial ones largest first, each into the
    aligned free block whose virtual node has the fewest free GPUs (ties: lowest node, then earlier block).
    Returns (job id -> slots in allocation order, unplaced job ids in processing order)."""
    jobs = [(j, c) for j, c in allocation.items() if c is not None]
    occ = {t.name: np.full((t.nodes, t.gpus_per_node), -1) for t in cluster.gpu_types}

    def partial(c: Config) -> bool:
        return c.n_nodes == 1 and c.n_gpus <= cluster[c.gpu_type].max_partial

    order = sorted(range(len(jobs)), key=lambda k: (0 if not partial(jobs[k][1]) else 1, -jobs[k][1].n_gpus))
    failed = []
    for k in order:
        c = jobs[k][1]
        grid = occ[c.gpu_type]
        if not partial(c):
            whole = [n for n in range(grid.shape[0]) if (grid[n] < 0).all()]
            if len(whole) < c.n_nodes:
                failed.append(jobs[k][0])
                continue
            for n in whole[len(whole) - c.n_nodes:]:
                grid[n] = k
            continue
        best = None
        for n in range(grid.shape[0]):
            off = 0
            for b in virtual_bins(grid.shape[1]):
                for st_ in range(off, off + b, c.n_gpus) if b >= c.n_gpus else ():
                    if (grid[n, st_:st_ + c.n_gpus] < 0).all():
                        free = int((grid[n, off:off + b] < 0).sum())
                        if best is None or free < best[0]:
                            best = (free, n, st_)
                off += b
        if best is None:
            failed.append(jobs[k][0])
            continue
        grid[best[1], best[2]:best[2] + c.n_gpus] = k
    out = {}
    for k, (jid, c) in enumerate(jobs):
        slots = []
        for n in range(cluster[c.gpu_type].nodes):
            g = np.flatnonzero(occ[c.gpu_type][n] == k)
            if g.size:
                slots.append((f"{c.gpu_type}-{n}", tuple(g.tolist())))
        if slots:
            out[jid] = slots
    return out, tuple(failed)


def reference_goodput(params: ThroughputParams, nodes, replicas, *, init_batch, max_batch, grad_sqr, grad_var,
                      local_bsz_range=None, accumulation=True, n_candidates=50):
    """The candidate search as first written (np.select network time, explicit first-row mask)."""
    n, r = np.broadcast_arrays(np.asarray(nodes, float), np.asarray(replicas, float))
    shape = n.shape
    n, r = n.ravel(), r.ravel()
    B0, Bmax = float(init_batch), float(max_batch)
    lo_b, hi_b = (1.0, Bmax) if local_bsz_range is None else map(float, local_bsz_range)
    eps = 1e-8
    lo_B = np.maximum(B0, r * lo_b)
    hi_B = np.maximum(lo_B, Bmax)
    t = np.linspace(0.0, 1.0, int(n_candidates))[:, None]
    cand = np.exp(np.log(lo_B) + t * (np.log(hi_B) - np.log(lo_B)))
    local = cand / r
    s = np.maximum(np.ceil(local / hi_b - eps) - 1, 0) if accumulation else np.zeros_like(local)
    b = np.ceil(local / (s + 1) - eps)
    real_B = r * b * (s + 1)
    valid = (b >= lo_b - eps) & (b <= hi_b + eps) & (lo_B <= Bmax * (1 + eps))
    first = np.zeros_like(valid)
    first[0] = True
    valid &= (real_B <= Bmax * (1 + eps)) | first
    p = params
    t_c = p.alpha_c + p.beta_c * b
    conds = [n > 1, r > 1]
    t_n = (np.select(conds, [p.alpha_n, p.alpha_r], NET_EPS)
           + np.select(conds, [p.beta_n, p.beta_r], NET_EPS) * np.maximum(r - 2, NET_EPS))
    m = np.maximum(t_c, t_n)
    ms = np.where(m > 0, m, 1.0)
    step = s * t_c + m * ((t_c / ms) ** p.gamma + (t_n / ms) ** p.gamma) ** (1.0 / p.gamma)
    xput = r * b * (s + 1) / step
    scale = real_B / B0
    den = grad_var + grad_sqr * scale
    eff = np.where(den > 0, (grad_var + grad_sqr) / np.where(den > 0, den, 1.0), 1.0 / scale)
    gp = np.where(valid, xput * eff, -np.inf)
    idx = np.argmax(gp, axis=0)
    cols = np.arange(gp.shape[1])
    ok = valid[idx, cols]
    return {k: np.where(ok, a[idx, cols], 0).astype(dt).reshape(shape)
            for k, a, dt in (("goodput", gp, float), ("batch_size", real_B, np.int64), ("local_bsz", b, np.int64),
                             ("accum_steps", s, np.int64), ("throughput", xput, float), ("efficiency", eff, float))}


# ------------------------------------------------------------------------------------------------ placement
@st.composite
def overfull(draw, cluster: Cluster, max_jobs: int = 10) -> dict:
    """Extra configurations of every shape (may exceed the capacity: some jobs are then unplaced)."""
    table = generate_configs(cluster)
    extra = [table[i] for i in draw(st.lists(st.integers(0, len(table) - 1), max_size=max_jobs))]
    for t in cluster.gpu_types:  # a one-node whole-node config when R is not a power of two
        if t.gpus_per_node != t.max_partial and draw(st.booleans()):
            extra.append(Config(1, t.gpus_per_node, t.name))
    return {f"x{k}": c for k, c in enumerate(extra)}


@SETTINGS
@given(data=st.data())
def test_placement_from_empty_equals_greedy_grid_reference(data) -> None:
    """On random clusters (node sizes 1..8, so virtual splits such as 6 = 4 + 2 and 7 = 4 + 2 + 1) and allocations
    that fit — optionally with extra configurations beyond capacity, interleaved in any order — the vectorised
    placer returns exactly the grid reference: same slots, same job order, same unplaced jobs in the same order.
    Fitting allocations place completely and the checker accepts every placement."""
    cl = data.draw(clusters(max_types=3, max_nodes=5))
    alloc = data.draw(allocations_that_fit(cl, max_jobs=16))
    fits = data.draw(st.booleans())
    if not fits:
        alloc = {**alloc, **data.draw(overfull(cl))}
        keys = data.draw(st.permutations(list(alloc)))
        alloc = {k: alloc[k] for k in keys}
    pl = place(cl, alloc, rigid=alloc)  # the drawn shapes include rigid ones (issue 25)
    want, unplaced = reference_place(cl, alloc)
    assert list(pl.items()) == list(want.items())
    assert pl.unplaced == unplaced and pl.evicted == ()
    assert pl.configs == {j: alloc[j] for j in want}
    if fits:
        assert unplaced == ()
    assert check_placement(cl, {j: c for j, c in alloc.items() if j in pl}, pl) == []


@SETTINGS
@given(data=st.data())
def test_grid_path_with_empty_previous_equals_vectorised_path(data) -> None:
    """``previous={}`` runs the incremental grid placer (the path used when earlier placements exist); on a fitting
    allocation it must agree with the vectorised from-empty path exactly."""
    cl = data.draw(clusters(max_types=2, max_nodes=4))
    alloc = data.draw(allocations_that_fit(cl, max_jobs=12))
    a, b = place(cl, alloc), place(cl, alloc, {})
    assert dict(a) == dict(b) and list(a) == list(b) and b.unplaced == () and b.evicted == ()


@pytest.mark.parametrize("gpus,seed", [(64, 0), (512, 1), (1024, 2),
                                       pytest.param(2048, 3, marks=pytest.mark.slow)])
def test_generated_instances_place_like_reference(gpus: int, seed: int) -> None:
    """Generated instances: the current configurations (fitting by construction) and every job at its smallest
    allowed configuration on its first allowed type (over capacity at heavy load) place exactly as the reference."""
    inst = generate_instance(gpus, seed, load="heavy")
    cur = {j.id: j.current for j in inst.jobs}
    small = {}
    for j in inst.jobs:
        t = (j.allowed_types or inst.cluster.type_names)[0]
        small[j.id] = Config(1, j.rigid_gpus or 1 if j.kind == "rigid" else j.smallest_count() or 1, t)
    small = {k: c for k, c in small.items() if c.n_gpus <= inst.cluster[c.gpu_type].max_partial}
    for alloc in (cur, small):
        pl = place(inst.cluster, alloc)
        want, unplaced = reference_place(inst.cluster, alloc)
        assert list(pl.items()) == list(want.items()) and pl.unplaced == unplaced
        assert check_placement(inst.cluster, {j: c for j, c in alloc.items() if j in pl}, pl) == []
    assert place(inst.cluster, cur).unplaced == ()
    assert len(place(inst.cluster, small).unplaced) > 0  # the heavy-load smallest configs overflow some type


def test_previous_path_keeps_jobs_and_falls_back_to_the_vectorised_placer() -> None:
    """With ``previous``: unchanged jobs keep their GPUs; when greedy eviction gets stuck (pinned jobs block every
    block) the placer falls back to the from-empty placement, which is then exactly the vectorised one.

    Hand check: one 4-GPU node; previous a on GPU 1 and b on GPU 2 (both pinned). The new allocation keeps a, b and
    asks for c = 1x2: both aligned pairs {0,1} and {2,3} hold a pinned job, so no eviction is allowed and c fails
    on the grid path; placing afresh puts c on GPUs 0-1 and a, b on 2 and 3 (everything fits), so that wins."""
    cl = Cluster([GpuType("a", 4, 1)])
    prev = {"a": [("a-0", (1,))], "b": [("a-0", (2,))]}
    alloc = {"a": Config(1, 1, "a"), "b": Config(1, 1, "a"), "c": Config(1, 2, "a")}
    pl = place(cl, alloc, prev, pinned=["a", "b"])
    fresh = place(cl, alloc)
    assert pl.unplaced == () and dict(pl) == dict(fresh)
    assert fresh["c"] == [("a-0", (0, 1))] and fresh["a"] == [("a-0", (2,))] and fresh["b"] == [("a-0", (3,))]
    assert set(pl.evicted) == {"a", "b"} and pl.moved_from == prev
    # a larger instance: re-placing with its own placement moves nothing
    inst = generate_instance(512, 3)
    cur = {j.id: j.current for j in inst.jobs}
    first = place(inst.cluster, cur)
    again = place(inst.cluster, cur, first)
    assert again.evicted == () and dict(again) == dict(first)


def test_place_input_errors_unchanged() -> None:
    """Shapes that are no configuration raise (Config(1, 3) and Config(2, 6) on 4-GPU nodes are rigid shapes now:
    ceil(g / 4) nodes, placed as whole nodes plus aligned blocks)."""
    cl = Cluster([GpuType("a", 4, 2)])
    with pytest.raises(schedopt.errors.InputError, match=r"allocation\[j\]"):
        place(cl, {"ok": Config(1, 2, "a"), "j": Config(2, 3, "a")})
    with pytest.raises(schedopt.errors.InputError, match=r"allocation\[j\]"):
        place(cl, {"ok": Config(1, 2, "a"), "j": [1, 2]})  # type: ignore[dict-item]
    with pytest.raises(schedopt.errors.InputError, match=r"allocation\[j\]\.gpu_type"):
        place(cl, {"j": Config(1, 2, "zz")})
    with pytest.raises(schedopt.errors.InputError, match="whole nodes"):
        place(cl, {"j": Config(3, 6, "a")})


# ------------------------------------------------------------------------------------------------ problem
def _instances():
    yield generate_instance(64, 0)
    yield generate_instance(256, 1, load="heavy", max_gpus_per_job=16)


@pytest.mark.parametrize("inst", list(_instances()), ids=["64", "256-heavy-cap16"])
def test_job_arrays_and_model_match_per_job_reference(inst) -> None:
    """The vectorised job arrays equal the per-job methods; the model's families equal matrices assembled from
    COO triplets over the pair table; the configuration table's Configs equal validated ones."""
    prob = inst.problem()
    a = prob.job_arrays
    assert a.growth.tolist() == [j.growth_limit() for j in prob.jobs]
    assert a.max.tolist() == [j.max_gpus if j.max_gpus is not None else NO_LIMIT for j in prob.jobs]
    assert a.current.tolist() == [prob.configs.find(j.current) if j.current else -1 for j in prob.jobs]
    assert a.forced.tolist() == [(not j.preemptible) and j.current is not None for j in prob.jobs]
    assert np.allclose(prob.restart_factors(), [j.restart_factor() for j in prob.jobs], rtol=0, atol=1e-15)
    assert prob.configs.configs == [Config(int(n), int(g), prob.cluster.type_names[t]) for n, g, t in
                                    zip(prob.configs.n_nodes, prob.configs.n_gpus, prob.configs.type_index)]
    pt = prob.valid_pairs()
    m = prob.build()
    P, J, T = len(pt), len(prob.jobs), len(prob.cluster.type_names)
    arr = m.to_arrays()
    fam = m.families
    cfg = prob.configs

    def rows(name):
        f = fam[name]
        return arr.A[f.start:f.start + f.size].toarray()

    A1 = sp.coo_matrix((np.ones(P), (pt.job, np.arange(P))), shape=(J, P)).toarray()
    A2 = sp.coo_matrix((cfg.n_gpus[pt.config].astype(float), (cfg.type_index[pt.config], np.arange(P))),
                       shape=(T, P)).toarray()
    fc = np.flatnonzero(pt.forced)
    A4 = sp.coo_matrix((np.ones(fc.size), (np.arange(fc.size), fc)), shape=(fc.size, P)).toarray()
    assert np.array_equal(rows("one_config_per_job"), A1)
    assert np.array_equal(rows("gpu_capacity"), A2)
    assert np.array_equal(rows("forced_config"), A4)
    assert fam["forced_config"].labels == tuple(prob.jobs[i].id for i in pt.job[fc])
    assert prob.formulation().inverse is pt and set(m.meta) <= {"structure"}
    assert m.blocks["x"].labels[0] == tuple(f"{prob.jobs[j].id}@{cfg[c].label}" for j, c in zip(pt.job, pt.config))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(prob=problems(max_jobs=5))
def test_decoded_allocation_matches_reference_decode(prob: SiaProblem) -> None:
    """The decoded allocation equals decoding column by column (job of the column -> its Config), for the HiGHS
    and SciPy solutions, and passes the independent checker."""
    m = prob.build()
    if m.num_cols == 0:
        return
    pt = prob.valid_pairs()
    for backend in ("highs", "scipy"):
        res = schedopt.solve(m, backend)
        res.raise_for_status()
        sol = SiaSolution(problem=prob, model=m, result=res, backend=backend)
        want = {j.id: None for j in prob.jobs}
        for k in np.flatnonzero(res.values["x"] > 0.5):
            want[prob.jobs[pt.job[k]].id] = prob.configs[int(pt.config[k])]
        assert sol.allocation == want and list(sol.allocation) == list(want)
        assert check_allocation(prob, sol.allocation) == []


def test_generated_instance_decode_and_place_from_a_real_solve() -> None:
    """64 GPUs: HiGHS solves the model; the decoded allocation checks, places completely and matches the
    reference placement."""
    inst = generate_instance(64, 4)
    sol = inst.problem().solve("highs", time_limit=60)
    assert sol.is_optimal and sol.check() == []
    pl = place(inst.cluster, sol.allocation)
    want, unplaced = reference_place(inst.cluster, sol.allocation)
    assert list(pl.items()) == list(want.items()) and unplaced == () == pl.unplaced


# ------------------------------------------------------------------------------------------------ goodput
@pytest.mark.parametrize("name", ["bert", "cifar10", "deepspeech2", "imagenet", "yolov3"])
def test_goodput_paths_bitwise_equal_to_reference(name: str) -> None:
    """For every zoo model and GPU type: the public ``goodput`` equals the reference search field by field,
    bit for bit, and the unchecked ``goodput_values`` / ``throughput_values`` used by SiaProblem equal the public
    ``goodput(...).goodput`` / ``throughput``."""
    mdl: JobGoodputModel = zoo.load_model(name)
    nodes = np.r_[np.ones(4), np.arange(2, 80)].astype(float)
    for t in mdl.gpu_types:
        R = 8
        reps = np.r_[[1, 2, 4, 8], np.arange(2, 80) * R].astype(float)
        sqr, var = mdl.grad_stats()
        lo, hi = mdl.local_bsz_limits[t]
        for acc in (True, False):
            got = goodput(mdl.params[t], nodes, reps, init_batch=mdl.init_batch, max_batch=mdl.max_batch,
                          grad_sqr=float(sqr), grad_var=float(var), local_bsz_range=(lo, hi), accumulation=acc)
            ref = reference_goodput(mdl.params[t], nodes, reps, init_batch=mdl.init_batch, max_batch=mdl.max_batch,
                                    grad_sqr=float(sqr), grad_var=float(var), local_bsz_range=(lo, hi),
                                    accumulation=acc)
            for k, v in ref.items():
                assert np.array_equal(getattr(got, k), v), (t, k)
        res = mdl.goodput(t, nodes, reps)
        assert np.array_equal(mdl.goodput_values(t, nodes, reps), res.goodput)
        assert np.array_equal(mdl.goodput(t, nodes, reps, stats_batch=mdl.init_batch).goodput, res.goodput)
        for B in (mdl.init_batch, 3.5 * mdl.init_batch):
            assert np.array_equal(mdl.throughput_values(t, nodes, reps, float(B)), mdl.throughput(t, nodes, reps, B))
    p = next(iter(mdl.params.values()))
    n = np.array([1.0, 1, 1, 2, 3])
    r = np.array([1.0, 2, 3, 16, 24])
    ref = np.select([n > 1, r > 1], [p.alpha_n, p.alpha_r], NET_EPS) + np.select(
        [n > 1, r > 1], [p.beta_n, p.beta_r], NET_EPS) * np.maximum(r - 2, NET_EPS)
    assert np.array_equal(p.network_time(n, r), ref)
