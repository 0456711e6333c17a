"""The second pass on the Sia policy's per-round view and build (issue 26): each fast path gives what the general
path gives, and bad public input still raises an InputError naming the field.

* ``SiaBuildCache.valid`` (:class:`schedopt.sia.pairs.ValidMemo`): the last round's valid pairs, reused when the
  jobs' pruning fields are the previous round's;
* ``SiaBuildCache.labels`` reusing the whole label array (and its list) when the pair table is the previous one's;
* :func:`schedopt.sia.generate_configs` finding the table of the same cluster object by identity;
* :func:`schedopt.goodput.goodput_matrix` reading a one-entry gradient table directly.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from schedopt.errors import InputError
from schedopt.goodput import JobGoodputModel, ThroughputParams, goodput_matrix
from schedopt.sia import Cluster, Config, GpuType, Job, SiaBuildCache, SiaProblem, generate_configs
from schedopt.sia.pairs import ValidMemo, prune
from tests.test_sia_incremental import assert_same_model, built_model

CLUSTER = Cluster((GpuType("t4", 4, 3), GpuType("a100", 8, 2), GpuType("v6", 6, 2)))
CFG = generate_configs(CLUSTER, 64)
T4X8 = CFG[int(np.flatnonzero((CFG.n_gpus == 8) & (CFG.type_index == 0))[0])]


def _job(k: int, prof: int, current: Config | None = None, age: float = 100.0, **kw: object) -> Job:
    return Job(id=f"j{k}", max_gpus=64, max_profiled_gpus=prof, current=current, age_s=age, restart_cost_s=30.0,
               **kw)  # type: ignore[arg-type]


def _problem(jobs: list[Job], gp: np.ndarray, cache: SiaBuildCache | None) -> SiaProblem:
    return SiaProblem(CLUSTER, jobs, gp, max_gpus_per_job=64, build_cache=cache)


def _same_pairs(a: SiaProblem, b: SiaProblem) -> None:
    x, y = a.valid_pairs(), b.valid_pairs()
    for f in ("job", "config", "goodput", "utility", "forced", "current"):
        u, v = getattr(x, f), getattr(y, f)
        assert u.dtype == v.dtype and np.array_equal(u, v), f
    assert x.job_ids == y.job_ids


def test_valid_pairs_are_reused_only_while_the_pruning_fields_are_the_same() -> None:
    rng = np.random.default_rng(3)
    gp = rng.uniform(0.5, 10.0, size=(5, len(CFG)))
    a100x8 = CFG[int(np.flatnonzero((CFG.n_gpus == 8) & (CFG.type_index == 1))[0])]
    jobs = [_job(0, 4), _job(1, 8, current=a100x8), _job(2, 0), _job(3, 16, kind="strong"),
            _job(4, 2, allowed_types=("t4",))]
    cache = SiaBuildCache()
    first = _problem(jobs, gp, cache)
    first.formulation()
    assert cache.valid.hits == 0
    # a minute older, one more restart: the same valid pairs (reused), other utilities (the restart factor)
    older = [dataclasses.replace(j, age_s=j.age_s + 60.0, restarts=1) for j in jobs]
    again = _problem(older, gp, cache)
    assert_same_model(again.formulation().model, _problem(older, gp, None).formulation().model)
    _same_pairs(again, _problem(older, gp, None))
    assert cache.valid.hits == 1
    # each pruning field changed in turn: recomputed (no hit), and still the scratch model
    changes = [
        lambda js: [dataclasses.replace(js[0], max_profiled_gpus=8), *js[1:]],  # growth
        lambda js: [js[0], dataclasses.replace(js[1], preemptible=False), *js[2:]],  # forced
        lambda js: [js[0], dataclasses.replace(js[1], max_profiled_gpus=2), *js[2:]],  # forced beyond its growth
        lambda js: [js[0], dataclasses.replace(js[1], current=T4X8), *js[2:]],  # the forced configuration moves
        lambda js: [js[0], dataclasses.replace(js[1], current=None), *js[2:]],  # current
        lambda js: [*js[:4], dataclasses.replace(js[4], allowed_types=("t4", "v6"))],  # allowed types
        lambda js: [*js[:2], dataclasses.replace(js[2], min_gpus=2), *js[3:]],  # bounds
        lambda js: js[:4],  # a job leaves
    ]
    for change in changes:
        cur = change(older)
        g = gp[: len(cur)]
        hits = cache.valid.hits
        p = _problem(cur, g, cache)
        assert_same_model(p.formulation().model, _problem(cur, g, None).formulation().model)
        _same_pairs(p, _problem(cur, g, None))
        assert cache.valid.hits == hits
        older = cur
    # another table (another cap): never the memo's pairs
    hits = cache.valid.hits
    g8 = np.ones((len(older), len(generate_configs(CLUSTER, 8))))
    small = SiaProblem(CLUSTER, older, g8, max_gpus_per_job=8, build_cache=cache)
    assert_same_model(small.formulation().model,
                      SiaProblem(CLUSTER, older, g8, max_gpus_per_job=8).formulation().model)
    assert cache.valid.hits == hits
    assert int(small.configs.n_gpus[small.valid_pairs().config].max()) == 8


def test_a_reused_memo_still_rejects_bad_goodput_naming_the_pair() -> None:
    gp = np.ones((2, len(CFG)))
    jobs = [_job(0, 4), _job(1, 4)]
    cache = SiaBuildCache()
    _problem(jobs, gp, cache).formulation()
    for bad in (np.nan, np.inf, -1.0):
        g = gp.copy()
        col = int(np.flatnonzero(CFG.n_gpus == 4)[0])
        g[1, col] = bad
        with pytest.raises(InputError) as e:
            _problem(jobs, g, cache).formulation()
        assert e.value.field == f"goodput[j1, {CFG.labels[col]}]"
    # a non-preemptible job's current configuration with goodput 0
    cur = CFG[int(np.flatnonzero(CFG.n_gpus == 4)[0])]
    pinned = [_job(0, 4), _job(1, 4, current=cur, preemptible=False)]
    g = gp.copy()
    g[1, CFG.index(cur)] = 0.0
    with pytest.raises(InputError, match="non-preemptible") as e:
        _problem(pinned, g, cache).formulation()
    assert e.value.field.startswith("goodput[j1, ")


def test_prune_with_and_without_a_memo_is_the_same_table() -> None:
    rng = np.random.default_rng(5)
    jobs = [_job(k, [0, 2, 4, 16][k % 4], age=30.0 * k, restarts=k % 3) for k in range(8)]
    gp = rng.uniform(0.0, 4.0, size=(8, len(CFG)))
    gp[gp < 1.0] = 0.0  # some pairs cannot run: pruned
    p = _problem(jobs, gp, None)
    memo = ValidMemo()
    for _ in range(2):
        got = prune(p.jobs, p.configs, p.job_arrays, p.settings, p.goodput_of_pairs, memo)
        ref = p.valid_pairs()
        for f in ("job", "config", "goodput", "utility", "forced"):
            assert np.array_equal(getattr(got, f), getattr(ref, f))
            assert not getattr(got, f).flags.writeable
    assert memo.hits == 1
    assert len(ref) < int(p.valid_mask().sum())  # the zeros were pruned


def test_a_round_with_the_previous_pair_table_reuses_the_labels_whole() -> None:
    gp = np.random.default_rng(1).uniform(0.5, 10.0, size=(4, len(CFG)))
    jobs = [_job(k, 4, age=10.0 * k) for k in range(4)]
    cache = SiaBuildCache()
    m1 = built_model(_problem(jobs, gp, cache))
    older = [dataclasses.replace(j, age_s=j.age_s + 60.0) for j in jobs]
    m2 = built_model(_problem(older, gp, cache))
    assert cache.formatted == 0 and cache.reused == m2.num_cols
    assert m1.column_names() == m2.column_names()
    assert_same_model(m2, _problem(older, gp, None).formulation().model)
    # the same jobs under other ids: the same columns, new labels
    renamed = [dataclasses.replace(j, id=f"k{i}") for i, j in enumerate(older)]
    m3 = built_model(_problem(renamed, gp, cache))
    assert cache.formatted == m3.num_cols
    assert_same_model(m3, _problem(renamed, gp, None).formulation().model)
    assert all(n.startswith("k") for n in m3.blocks["x"].labels[0])  # type: ignore[index]


def test_generate_configs_by_identity_is_the_checked_table() -> None:
    a = generate_configs(CLUSTER, 64)
    assert generate_configs(CLUSTER, 64) is a
    assert generate_configs(CLUSTER, 64, rigid_counts=[]) is a
    b = generate_configs(CLUSTER, 8)
    assert b is not a and int(b.n_gpus.max()) == 8
    same = Cluster((GpuType("t4", 4, 3), GpuType("a100", 8, 2), GpuType("v6", 6, 2)))  # equal, another object
    assert generate_configs(same, 64) is a
    assert generate_configs(CLUSTER, None) is generate_configs(same, None)
    assert len(generate_configs(CLUSTER, None)) >= len(a)
    # bad input still raises, the identity path notwithstanding
    for cap in (0, -1, True, 2.5):
        with pytest.raises(InputError) as e:
            generate_configs(CLUSTER, cap)  # type: ignore[arg-type]
        assert e.value.field == "max_gpus_per_job"
    with pytest.raises(InputError) as e:
        generate_configs("sia-64", 64)  # type: ignore[arg-type]
    assert e.value.field == "cluster"


def test_a_full_table_cache_drops_its_oldest_table_not_the_newest() -> None:
    """63 tables built, then ``a`` (the 64th: the cache is full), then one more: the oldest table goes, so an equal
    cluster still finds ``a`` (the cache used to be cleared whole when full, and this lookup missed: the identity
    test above failed whenever its worker process had built 63 tables before it)."""
    from schedopt.sia import configs

    configs._TABLES.clear()
    configs._BY_ID.clear()
    first = generate_configs(CLUSTER, 1)
    for cap in range(2, 64):
        generate_configs(CLUSTER, cap)
    a = generate_configs(CLUSTER, 64)
    generate_configs(CLUSTER, 65)
    same = Cluster((GpuType("t4", 4, 3), GpuType("a100", 8, 2), GpuType("v6", 6, 2)))  # equal, another object
    assert generate_configs(same, 64) is a
    assert len(configs._TABLES) == len(configs._BY_ID) == configs._TABLES_MAX
    assert generate_configs(CLUSTER, 1) is not first  # the oldest went (an equal table, built again)
    assert generate_configs(CLUSTER, 1) == first


def _model(params: dict[str, ThroughputParams], init: float, batches: tuple[float, ...],
           sqr: tuple[float, ...], var: tuple[float, ...]) -> JobGoodputModel:
    return JobGoodputModel("m", params, init, init * 32, dict.fromkeys(params, (4, 128)), batches, sqr, var)


def test_goodput_matrix_reads_one_entry_tables_as_the_interpolation_does() -> None:
    types = [CLUSTER.type_names[k] for k in CFG.type_index.tolist()]
    th = {t: ThroughputParams(0.01 * (k + 1), 0.002, 0.03, 0.004, 0.02, 0.003, 2.0)
          for k, t in enumerate(CLUSTER.type_names)}
    models = [
        _model(th, 64.0, (64.0,), (0.5,), (2.0,)),  # the table's batch is init_batch
        _model(th, 64.0, (512.0,), (0.3,), (7.0,)),  # above it: clamped
        _model(th, 64.0, (8.0,), (0.0,), (1.5,)),  # below it: clamped
        _model(th, 64.0, (32.0, 256.0), (0.2, 0.9), (3.0, 1.0)),  # interpolated: the general path
        _model({"t4": th["t4"]}, 128.0, (128.0,), (1e-3,), (4.0,)),  # one type only
    ]
    cached = _model(th, 64.0, (100.0,), (0.25,), (0.5,))
    assert cached._stats_b0 == (0.25, 0.5)  # computed before: read from the model
    models.append(cached)
    for m in models[:3]:
        assert m._stats_b0 == (m.grad_sqr[0], m.grad_var[0])
    fresh = [dataclasses.replace(m) for m in models]  # statistics not computed yet: the one-entry path
    got = goodput_matrix(fresh, types, CFG.n_nodes, CFG.n_gpus)
    assert all("_stats_b0" not in m.__dict__ for m in fresh[:3])  # (the fast path read the tables)
    # the same matrix as with every model's statistics computed by its interpolation first
    for m in models:
        _ = m._stats_b0
    assert np.array_equal(got, goodput_matrix(models, types, CFG.n_nodes, CFG.n_gpus))
    ref = np.zeros_like(got)
    for i, m in enumerate(models):
        for t in m.params:
            sel = np.flatnonzero(CFG.type_index == CLUSTER.type_index(t))
            ref[i, sel] = m.goodput(t, CFG.n_nodes[sel], CFG.n_gpus[sel]).goodput
    # bit for bit the per-model search, also at gamma = 2 exactly (numpy squares and square-roots for a scalar
    # exponent of 2 or 0.5; goodput_matrix's per-point exponents do the same: goodput._goodput._pow)
    assert np.array_equal(got, ref)
    assert (got[4][np.array(types) != "t4"] == 0).all() and (got[:4] > 0).any(axis=1).all()
    # distinct statistics give distinct rows (the one-entry values are really read)
    assert not np.array_equal(got[0], got[1]) and not np.array_equal(got[1], got[2])


def test_generate_configs_names_an_unhashable_cap_before_any_lookup() -> None:
    """The lookup by identity is only for a cap of None or an int: a list (unhashable), a float or NaN reach the
    checks and raise InputError naming max_gpus_per_job (a list raised TypeError from the lookup; the slow fuzz
    test found it)."""
    import pytest

    from schedopt.errors import InputError
    from schedopt.sia import generate_configs

    generate_configs(CLUSTER)  # the identity table holds this cluster now
    for bad in ([], [1.0, 2.0], float("nan"), 2.5, "8"):
        with pytest.raises(InputError, match="max_gpus_per_job"):
            generate_configs(CLUSTER, bad)  # type: ignore[arg-type]
