"""The simulator's fast paths (issue 26) return exactly what the general, checked paths return, and public
functions still raise InputError naming the field for bad input."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from schedopt.errors import InputError
from schedopt.goodput import GoodputEstimator, JobGoodputModel, ThroughputParams, bootstrap_params, goodput
from schedopt.goodput._estimator import profile_params
from schedopt.goodput._goodput import _check_scalar, best_point
from schedopt.sia import Cluster, Config, GpuType, place
from schedopt.sia.placement import _Grid, _kept_slots, _node_index

# ---------------------------------------------------------------------------------------------- ThroughputParams


def _random_params(rng: random.Random) -> ThroughputParams:
    def v() -> float:
        return rng.choice([0.0, rng.uniform(0, 1e-6), rng.uniform(0, 0.05), rng.uniform(0, 1)])

    return ThroughputParams(v(), v(), v(), v(), v(), v(), rng.choice([1.0, 2.0, 10.0, rng.uniform(1, 10)]))


def test_one_point_step_time_and_throughput_are_the_array_paths_floats() -> None:
    """Plain numbers take the Python path (_valid_point, _step_time1); 0-d arrays take the checked numpy path: the
    same float and type on 4,000 random points (every network regime, gamma 1, 2, 10 and random, zero terms)."""
    rng = random.Random(7)
    for _ in range(2000):
        p = _random_params(rng)
        n = rng.randint(1, 4)
        r = rng.choice([n, rng.randint(n, 64)])
        b = rng.choice([rng.randint(1, 1024), rng.uniform(0.01, 1024)])
        s = rng.randint(0, 3)
        for args in ((n, r, b, s), (np.int64(n), float(r), np.float64(b), np.int64(s))):
            arr = tuple(np.array(a) for a in (n, r, b, s))
            for f in ("step_time", "throughput"):
                with np.errstate(divide="ignore", invalid="ignore"):
                    fast, ref = getattr(p, f)(*args), getattr(p, f)(*arr)
                assert type(fast) is type(ref) is np.float64
                assert fast == ref or (math.isnan(fast) and math.isnan(ref)), (p, args, f)


def test_zero_step_time_takes_numpys_inf() -> None:
    """With zero compute and network terms the step time is 0: throughput is numpy's inf, as on the array path."""
    p = ThroughputParams(0, 0, 0, 0, 0, 0, 1.0)
    with np.errstate(divide="ignore"):
        assert p.throughput(1, 2, 32) == np.inf == p.throughput(np.array(1), np.array(2), np.array(32))


@pytest.mark.parametrize(("args", "field"), [
    ((0, 1, 32), "nodes"), ((1.5, 2, 32), "nodes"), ((2, 1, 32), "replicas"), ((1, 2.5, 32), "replicas"),
    ((1, 1, 0), "local_bsz"), ((1, 1, -3.0), "local_bsz"), ((1, 1, math.nan), "local_bsz"),
    ((1, 1, math.inf), "local_bsz"), ((1, 1, 32, -1), "accum_steps"), ((1, 1, 32, 0.5), "accum_steps"),
    ((math.nan, 1, 32), "nodes"), ((1, math.inf, 32), "replicas"), ((1, 1, "x"), "local_bsz"),
])
def test_bad_points_still_raise_naming_the_field(args: tuple, field: str) -> None:
    p = ThroughputParams(0.1, 0.01, 0.2, 0.02, 0.1, 0.01, 2.0)
    for f in (p.step_time, p.throughput):
        with pytest.raises(InputError) as e:
            f(*args)
        assert e.value.field == field


# ---------------------------------------------------------------------------------------------- _check_scalar


def test_check_scalar_fast_path_equals_the_array_path() -> None:
    rng = random.Random(3)
    for _ in range(500):
        v = rng.choice([rng.uniform(1e-9, 1e6), rng.randint(1, 10**6), 2**60 + 1])
        for x in (v, np.float64(v) if isinstance(v, float) else np.int64(v)):
            assert _check_scalar("x", x) == float(np.asarray(x, dtype=float))
    for bad, positive in ((0.0, True), (-1, True), (math.nan, False), (math.inf, True), (-math.inf, False)):
        with pytest.raises(InputError) as e:
            _check_scalar("init_batch", bad, positive)
        assert e.value.field == "init_batch"
    assert _check_scalar("x", -2, positive=False) == -2.0
    assert _check_scalar("x", True) == 1.0  # bool takes the array path, as before


def _model(**kw: object) -> JobGoodputModel:
    base: dict = dict(name="m", params={"a": ThroughputParams(0.1, 0.01, 0.2, 0.02, 0.1, 0.01, 2.0)},
                      init_batch=64, max_batch=4096, local_bsz_limits={"a": (8, 256)},
                      grad_batch=(64.0,), grad_sqr=(1.0,), grad_var=(2.0,))
    base.update(kw)
    return JobGoodputModel(**base)


def test_job_model_gradient_table_fast_path_equals_the_array_path() -> None:
    """Tuples of plain numbers already sorted take the Python check; arrays take numpy's (sort included): the same
    fields, on random tables (ties and unsorted ones take the general path)."""
    rng = random.Random(5)
    for _ in range(300):
        k = rng.randint(1, 6)
        gb = sorted(rng.sample(range(1, 10_000), k))
        if rng.random() < 0.3:
            rng.shuffle(gb)
        if rng.random() < 0.2 and k > 1:
            gb[1] = gb[0]
        gs = [rng.choice([0, rng.uniform(0, 5)]) for _ in range(k)]
        gv = [rng.uniform(0, 5) for _ in range(k)]
        fast = _model(grad_batch=tuple(gb), grad_sqr=tuple(gs), grad_var=tuple(gv), init_batch=rng.choice([64, 64.0]))
        ref = _model(grad_batch=np.array(gb, float), grad_sqr=np.array(gs), grad_var=np.array(gv),
                     init_batch=np.float64(64))
        for f in ("grad_batch", "grad_sqr", "grad_var", "init_batch", "max_batch", "local_bsz_limits"):
            assert getattr(fast, f) == getattr(ref, f)
            assert all(type(x) is float for x in getattr(fast, f)) if f.startswith("grad") else True


@pytest.mark.parametrize(("kw", "field"), [
    ({"init_batch": math.nan}, "init_batch"), ({"init_batch": 0}, "init_batch"), ({"max_batch": 32}, "max_batch"),
    ({"local_bsz_limits": {"a": (0, 8)}}, "local_bsz_limits['a']"),
    ({"local_bsz_limits": {"a": (8, math.inf)}}, "local_bsz_limits['a']"),
    ({"grad_batch": (0.0,)}, "grad_batch"), ({"grad_batch": (64.0, math.nan)}, "grad_batch"),
    ({"grad_sqr": (-1.0,)}, "grad_sqr"), ({"grad_var": (math.inf,)}, "grad_var"),
    ({"grad_batch": (1.0, 2.0)}, "grad_batch"),  # lengths differ
    ({"grad_sqr": ("x",)}, "grad_sqr"),
])
def test_job_model_still_names_the_bad_field(kw: dict, field: str) -> None:
    with pytest.raises(InputError) as e:
        _model(**kw)
    assert e.value.field == field


# ---------------------------------------------------------------------------------------------- best_point


def _assert_best_point_is_goodputs(rng: random.Random, sqr: float, var: float) -> None:
    """best_point on a random trusted point (random parameters, shape, limits and batches) with these statistics
    answers as goodput(): (feasible, local batch, accumulation)."""
    p = _random_params(rng)
    n = rng.randint(1, 4)
    r = rng.randint(n, 64)
    lo = rng.randint(1, 64)
    hi = rng.choice([lo, rng.randint(lo, 1024)])
    b0 = float(rng.choice([32, 64, 128, 256]))
    bmax = b0 * rng.choice([1, 4, 64, 512])
    res = goodput(p, n, r, init_batch=b0, max_batch=bmax, grad_sqr=sqr, grad_var=var, local_bsz_range=(lo, hi))
    got = best_point(p, n, r, b0, bmax, sqr, var, (lo, hi))
    assert got == (bool(res.feasible), int(res.local_bsz), int(res.accum_steps))


def test_best_point_is_goodputs_answer() -> None:
    """The simulator's adaptive batch (best_point: the same _search without the checks) equals goodput()'s
    (feasible, local batch, accumulation) on random trusted points, infeasible ones included."""
    rng = random.Random(11)
    for _ in range(400):
        sqr, var = rng.choice([0.0, rng.uniform(0, 3)]), rng.uniform(0, 3)
        _assert_best_point_is_goodputs(rng, sqr, var)


def test_best_point_takes_the_where_branch_as_goodput_does() -> None:
    """Statistics at and near zero (both zero: every denominator 0, the efficiency ``1 / scale``; a denormal
    ``sqr`` with ``var = 0``; ``var = -0.0``): best_point, which tests the denominators' sign on its valid
    candidates from ``var`` and the smallest scale, answers as goodput() on random trusted points."""
    rng = random.Random(17)
    for _ in range(300):
        sqr, var = rng.choice([(0.0, 0.0), (5e-324, 0.0), (1e-310, -0.0), (0.0, 1e-300), (rng.uniform(0, 1), 0.0)])
        _assert_best_point_is_goodputs(rng, sqr, var)


def test_best_point_reuses_a_points_candidates_across_gradient_statistics() -> None:
    """The candidates of a (model, point, limits) are kept across calls (_point_candidates and best_point's flat
    view of them, _point_table, read-only); with new gradient statistics every answer is still goodput()'s, and the
    kept arrays cannot be written."""
    from schedopt.goodput._goodput import _point_candidates, _point_table

    rng = random.Random(29)
    p = ThroughputParams(0.05, 0.002, 0.3, 0.01, 0.05, 0.004, 1.7)
    for _ in range(200):
        sqr, var = rng.choice([0.0, rng.uniform(0, 1)]), rng.choice([0.0, rng.uniform(0, 50)])
        res = goodput(p, 2, 8, init_batch=128.0, max_batch=8192.0, grad_sqr=sqr, grad_var=var,
                      local_bsz_range=(16, 512))
        assert best_point(p, 2, 8, 128.0, 8192.0, sqr, var, (16, 512)) == (
            bool(res.feasible), int(res.local_bsz), int(res.accum_steps))
    assert _point_table.cache_info().hits >= 199
    with pytest.raises(ValueError):
        _point_candidates(p, 2, 8, 128.0, 8192.0, 16.0, 512.0)[0][0, 0] = 1.0
    for k in range(2):
        with pytest.raises(ValueError):
            _point_table(p, 2, 8, 128.0, 8192.0, 16.0, 512.0)[k][0] = 1.0


def test_best_point_sends_what_it_cannot_vouch_for_through_goodput() -> None:
    p = ThroughputParams(0.1, 0.01, 0.2, 0.02, 0.1, 0.01, 2.0)
    for kw, field in (({"grad_sqr": -1.0}, "grad_sqr"), ({"grad_var": math.nan}, "grad_var"),
                      ({"nodes": 0}, "nodes"), ({"init_batch": 0.0}, "init_batch"),
                      ({"local_bsz_range": (0, 8)}, "local_bsz_range[0]")):
        args = {"nodes": 1, "replicas": 2, "init_batch": 64.0, "max_batch": 1024.0, "grad_sqr": 1.0,
                "grad_var": 1.0, "local_bsz_range": (8, 64), **kw}
        with pytest.raises(InputError) as e:
            best_point(p, args["nodes"], args["replicas"], args["init_batch"], args["max_batch"], args["grad_sqr"],
                       args["grad_var"], args["local_bsz_range"])
        assert e.value.field == field


# ---------------------------------------------------------------------------------------------- the job model


def _old_rate(jm, app: str, t: str, placement: tuple[int, ...], local_bsz: int, accum: int, epoch: int) -> float:
    """JobState.rate as it was computed before the cache, through the public, checked functions."""
    from schedopt.sim import measured

    m = jm.truth(app)
    n, r = len(placement), sum(placement)
    B = r * local_bsz * (accum + 1)
    scale = B / m.init_batch
    sqr, var = jm.application(app).grad_stats(float(B), epoch)
    den = var / scale + sqr
    gain = (var + sqr) / den if den > 0 else 1.0
    it = float(m.params[t].step_time(n, r, local_bsz, accum))
    if jm.measured:
        got = measured.step_time(app, t, placement, local_bsz, accum)
        it = it if got is None else got
    return gain / it * jm.speed_factor(app)


def test_true_rate_and_adaptive_batch_are_the_checked_computations() -> None:
    """jobs.true_rate (kept per application, placement, batch and epoch) equals the rate computed through the
    public checked functions, and jobs.adaptive_batch equals goodput()'s choice, on random shapes of every
    application under the fitted and the measured job models."""
    from schedopt.sim import jobs

    rng = random.Random(13)
    for jm in (jobs.SIA, jobs.SIA_MEASURED):
        for app in ("cifar10", "imagenet", "bert", "deepspeech2", "yolov3", "ncf"):
            a = jm.application(app)
            for _ in range(12):
                t = rng.choice(["t4", "a100", "rtx6000"])
                nodes = rng.randint(1, 3)
                placement = tuple(rng.choice([1, 2, 4]) for _ in range(nodes))
                lo, hi = jobs.local_limits(app, t, jm)
                b, s, e = rng.randint(lo, hi), rng.randint(0, 2), rng.randrange(a.epochs)
                assert jobs.true_rate(jm, app, t, placement, b, s, e) == _old_rate(jm, app, t, placement, b, s, e)
                stats = float(rng.randint(32, 4096))
                m = jm.truth(app)
                sqr, var = a.grad_stats(stats, e)
                res = goodput(m.params[t], nodes, sum(placement), init_batch=m.init_batch, max_batch=m.max_batch,
                              grad_sqr=sqr, grad_var=var, local_bsz_range=(lo, hi), accumulation=True)
                want = (int(res.local_bsz), int(res.accum_steps)) if bool(res.feasible) else (lo, 0)
                assert jobs.adaptive_batch(app, t, jm, nodes, sum(placement), e, stats) == want


def test_measured_mean_row_is_numpys_mean_on_every_shipped_row_group() -> None:
    from schedopt.sim import measured

    doc = measured._doc()["applications"]
    groups: dict[tuple, list[tuple[float, float]]] = {}
    for app, types in doc.items():
        for t, d in types.items():
            for pid, b, st, sy in d["placements"]:
                groups.setdefault((app, t, pid, float(b)), []).append((st, sy))
            for n, r, b, st, sy in d["scalability"]:
                groups.setdefault((app, t, "s", n, r, float(b)), []).append((st, sy))
    assert any(len(v) > 1 for v in groups.values()) and any(len(v) == 1 for v in groups.values())
    for rows in groups.values():
        assert measured._mean_row(rows) == tuple(float(x) for x in np.mean(rows, axis=0))


# ---------------------------------------------------------------------------------------------- the estimator


def _reference_model(est: GoodputEstimator, t: str) -> ThroughputParams:
    """GoodputEstimator.model as written before (public profile_params, np.clip, counts by scan)."""
    def multi(u: str) -> int:
        return sum(1 for m in est.measurements(u) if m.replicas > 1)

    def own_rows(u: str, one_gpu_only: bool) -> ThroughputParams:
        rows = [*est.profiles[u], *((m.local_bsz, m.step_time) for m in est.measurements(u)
                                    if m.replicas == 1 or not one_gpu_only)]
        return profile_params([b for b, _ in rows], [s for _, s in rows])

    def own(u: str) -> ThroughputParams:
        return est._own(u) if multi(u) else own_rows(u, False)

    ref = max(est.profiles, key=multi)
    if multi(t) or not multi(ref):
        return own(t)
    pa, pb = est.profiles[ref], est.profiles[t]
    lo = max(min(x for x, _ in pa), min(x for x, _ in pb))
    hi = min(max(x for x, _ in pa), max(x for x, _ in pb))
    b = float(np.clip(est.app.init_batch, lo, max(lo, hi)))
    return bootstrap_params(own(ref), float(own_rows(ref, True).throughput(1, 1, b)),
                            float(own(t).throughput(1, 1, b)))


def test_estimator_models_equal_the_reference_computation() -> None:
    """Random observation histories (1-GPU rows, multi-GPU rows, several types): every type's model and the
    common batch equal the computation through the public checked functions."""
    from schedopt import zoo

    rng = random.Random(17)
    m = zoo.load_model("cifar10")
    types = list(m.params)
    for _ in range(12):
        est = GoodputEstimator(m, fit_starts=(1.0,))
        for _ in range(rng.randint(0, 5)):
            t = rng.choice(types)
            r = rng.choice([1, 1, 2, 4])
            lo, hi = m.local_bsz_limits[t]
            b = float(rng.randint(lo, hi))
            step = float(m.params[t].step_time(1, r, b)) * rng.uniform(0.9, 1.1)
            sync = 0.0 if r == 1 else step * rng.uniform(0.05, 0.5)
            est.observe(t, 1, r, b, step, sync)
        for t in types:
            assert est.model(t) == _reference_model(est, t)
            assert est._multi(t) == sum(1 for x in est.measurements(t) if x.replicas > 1)
        a, c = rng.sample(types, 2)
        pa, pc = est.profiles[a], est.profiles[c]
        lo = max(min(x for x, _ in pa), min(x for x, _ in pc))
        hi = min(max(x for x, _ in pa), max(x for x, _ in pc))
        assert est.common_batch(a, c) == float(np.clip(m.init_batch, lo, max(lo, hi)))


def test_estimator_checks_what_users_give_it() -> None:
    from schedopt import zoo

    m = zoo.load_model("cifar10")
    t = next(iter(m.params))
    est = GoodputEstimator(m)
    for k, bad in (("local_bsz", math.nan), ("step_time", math.inf), ("sync_time", True), ("step_time", "1")):
        args = {"local_bsz": 32.0, "step_time": 0.1, "sync_time": 0.01, k: bad}
        with pytest.raises(InputError) as e:
            est.observe(t, 1, 2, **args)
        assert e.value.field == k
    with pytest.raises(InputError) as e:
        est.common_batch(t, "no-such-type")
    assert e.value.field == "gpu_type"
    # profiles as lists of lists (not hashable) still work and equal the tuple form
    lo, hi = m.local_bsz_limits[t]
    rows = [[lo, 0.05], [hi, 0.2]]
    a = GoodputEstimator(m, {t: rows})
    b = GoodputEstimator(m, {t: [tuple(x) for x in rows]})
    assert a.model(t) == b.model(t) == profile_params([lo, hi], [0.05, 0.2])
    with pytest.raises(InputError) as e:
        GoodputEstimator(m, {t: [[lo, -0.05]]})
    assert e.value.field == "profile"


# ---------------------------------------------------------------------------------------------- the placer


def _grid_assignments(cluster: Cluster, jobs: list[tuple[str, Config]], prev) -> dict:
    """The grid placer's assignments when every job keeps its GPUs (what _kept_slots shortcuts)."""
    grid = _Grid(cluster)
    idx = _node_index(cluster)
    for k, (jid, _) in enumerate(jobs):
        for node, gpus in prev[jid]:
            t, n = idx[node]
            grid.occ[t][n, list(gpus)] = k
    by = grid.slots_by_job()
    return {jid: by[k] for k, (jid, _) in enumerate(jobs) if k in by}


def test_unchanged_allocations_keep_their_gpus_as_the_grid_orders_them() -> None:
    """Random allocations placed from empty, then again with themselves as the previous placement (a Placement
    and a plain mapping): the assignments are the grid's (slots_by_job order), nothing evicted or unplaced."""
    rng = random.Random(19)
    for _ in range(60):
        cluster = Cluster([GpuType("a100", rng.choice([4, 8]), rng.randint(1, 4)),
                           GpuType("t4", rng.choice([4, 6]), rng.randint(1, 6))])
        alloc: dict[str, Config | None] = {}
        free = {t.name: t.total_gpus for t in cluster.gpu_types}
        for j in range(rng.randint(1, 12)):
            t = rng.choice(cluster.gpu_types)
            g = rng.choice([1, 2, 4])
            c = Config(1, g, t.name) if g <= t.max_partial else None
            if rng.random() < 0.15 and t.nodes >= 2:
                c = Config(2, 2 * t.gpus_per_node, t.name)
            if c is None or free[t.name] < c.n_gpus:
                alloc[f"j{j}"] = None
                continue
            free[t.name] -= c.n_gpus
            alloc[f"j{j}"] = c
        first = place(cluster, alloc)
        if first.unplaced:
            continue
        jobs = [(j, c) for j, c in alloc.items() if c is not None]
        shuffled = {j: [(n, tuple(reversed(g))) for n, g in reversed(sl)] for j, sl in first.assignments.items()}
        split = {j: [(n, (g,)) for n, gs in sl for g in gs] for j, sl in first.assignments.items()}  # one per GPU
        nodes_of = _node_index(cluster)
        for prev in (first, dict(first.assignments), shuffled, split):
            pc = {j: first.configs[j] for j in prev}
            assert _kept_slots(cluster, jobs, prev, pc, nodes_of) is not None  # the shortcut is what is tested
            again = place(cluster, alloc, prev)
            assert again.assignments == _grid_assignments(cluster, jobs, first.assignments)
            assert list(again.assignments) == [j for j, _ in jobs]
            # the same evicted rule as the grid path (a previous written in another order counts as moved)
            assert again.evicted == tuple(j for j in prev if sorted(again.assignments[j]) != sorted(prev[j]))
            assert again.unplaced == () and (prev is shuffled or prev is split or again.evicted == ())
            assert again.configs == {j: c for j, c in jobs}
    # a previous placement naming a node that does not exist still raises
    cluster = Cluster([GpuType("a100", 4, 2)])
    with pytest.raises(InputError) as e:
        place(cluster, {"x": Config(1, 2, "a100")}, {"x": [("a100-9", (0, 1))]})
    assert e.value.field == "previous.node_id"


def test_max_gpus_is_the_published_cap() -> None:
    """JobState.max_gpus (kept per application, most GPUs run on and strong cap) is Pollux's and Sia's
    ``min(max(2 x most GPUs run on, 1), 64, max_batch // min_local_bsz)``, capped at the request for a
    strong-scaling job and the count itself for a rigid one."""
    from dataclasses import replace

    from schedopt.sim import jobs

    rng = random.Random(23)
    for _ in range(200):
        app = rng.choice(["cifar10", "imagenet", "bert", "deepspeech2", "yolov3"])
        base = rng.choice([jobs.SIA, jobs.POLLUX, jobs.SIA_MEASURED])
        jm = replace(base, strong_jobs=frozenset({"s"}), rigid_jobs=frozenset({"r"}))
        jid = rng.choice(["a", "s", "r"])
        req = rng.randint(1, 16)
        j = jobs.JobState(jid, app, 0.0, req, 256, rng.random() < 0.9, jm, max_profiled=rng.randint(0, 40))
        m = jm.truth(app)
        cap = int(min(max(2 * j.max_profiled, 1), jm.gpu_cap, m.max_batch // min(v[0] for v in m.local_bsz_limits.values())))
        if not j.adaptive or jid == "r":
            cap = req
        elif jid == "s":
            cap = min(cap, req)
        assert j.max_gpus == cap
