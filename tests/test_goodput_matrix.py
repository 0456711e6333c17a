"""``goodput_matrix``: many models over many points in one search, bit for bit the per-model ``goodput`` values
(issue 26: the Sia policy's goodput rows are computed this way)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from schedopt import zoo
from schedopt.goodput import JobGoodputModel, ThroughputParams, goodput_matrix
from schedopt.sia import Cluster, GpuType, generate_configs

CLUSTER = Cluster((GpuType("t4", 4, 4), GpuType("a100", 8, 3), GpuType("v6", 6, 2)))
CFG = generate_configs(CLUSTER, 64)
TYPES = [CLUSTER.type_names[k] for k in CFG.type_index.tolist()]


def _per_model(models: list[JobGoodputModel]) -> np.ndarray:
    out = np.zeros((len(models), len(CFG)))
    for i, m in enumerate(models):
        for t in CLUSTER.type_names:
            if t not in m.params:
                continue
            sel = np.flatnonzero(CFG.type_index == CLUSTER.type_index(t))
            out[i, sel] = m.goodput(t, CFG.n_nodes[sel], CFG.n_gpus[sel]).goodput
    return out


def _model(name: str, params: dict[str, ThroughputParams], init: float, mx: float, lims: tuple[int, int],
           sqr: float, var: float) -> JobGoodputModel:
    return JobGoodputModel(name, params, init, mx, dict.fromkeys(params, lims), (init,), (sqr,), (var,))


def test_zoo_models_equal_the_per_model_search_bit_for_bit() -> None:
    models = []
    for name in zoo.list_models():
        z = zoo.load_model(name)
        # the zoo's types renamed onto this cluster's (a100 kept, others mapped), one type left out for one model
        src = list(z.params.values())
        params = {"t4": src[0], "a100": src[-1], "v6": src[len(src) // 2]}
        lims = z.local_bsz_limits[next(iter(z.params))]
        models.append(_model(name, params, z.init_batch, z.max_batch, lims, z.grad_sqr[0], z.grad_var[0]))
    models.append(_model("no-v6", {k: v for k, v in models[0].params.items() if k != "v6"}, 64, 4096, (8, 256),
                         0.5, 2.0))
    got = goodput_matrix(models, TYPES, CFG.n_nodes, CFG.n_gpus)
    ref = _per_model(models)
    assert np.array_equal(got, ref)
    assert (got[-1][np.array(TYPES) == "v6"] == 0).all()  # a type the model has no parameters for: 0
    assert (got[:, np.array(TYPES) == "t4"] > 0).all()


_pos = st.floats(1e-4, 0.5)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(_pos, _pos, _pos, _pos, _pos, _pos, st.floats(1.0, 10.0)), min_size=1, max_size=5),
       st.floats(16, 512), st.integers(1, 64), st.floats(0.0, 10.0), st.floats(0.0, 10.0))
def test_random_parameters_equal_the_per_model_search(thetas: list[tuple[float, ...]], init: float, grow: int,
                                                      sqr: float, var: float) -> None:
    models = [_model(f"m{k}", {t: ThroughputParams(*th) for t in CLUSTER.type_names}, init, init * grow, (4, 128),
                     sqr, var) for k, th in enumerate(thetas)]
    assert np.array_equal(goodput_matrix(models, TYPES, CFG.n_nodes, CFG.n_gpus), _per_model(models))


def test_empty_inputs() -> None:
    assert goodput_matrix([], TYPES, CFG.n_nodes, CFG.n_gpus).shape == (0, len(CFG))
    m = zoo.load_model("cifar10")
    assert goodput_matrix([m], [], np.zeros(0), np.zeros(0)).shape == (1, 0)


def test_kept_candidate_tables_give_the_per_model_values_when_models_come_back() -> None:
    """A model that comes back with new gradient statistics only (the same parameter objects: a simulated job's
    estimate at its next epoch) reuses its kept candidate table; mixed with new models, in another order, with a
    type left out, and on another point set, every row is still the per-model search's, bit for bit."""
    from schedopt.goodput import _goodput

    rng = np.random.default_rng(7)
    base = []
    for k in range(4):
        params = {t: ThroughputParams(*rng.uniform(1e-3, 0.3, 6), float(rng.choice([1.0, 2.0, rng.uniform(1, 9)])))
                  for t in CLUSTER.type_names if not (k == 3 and t == "v6")}
        base.append(_model(f"m{k}", params, 64.0, 4096.0, (4, 128), 0.5, 2.0))
    first = goodput_matrix(base, TYPES, CFG.n_nodes, CFG.n_gpus)
    assert np.array_equal(first, _per_model(base))
    kept = len(_goodput._CANDS)
    again = [_model(m.name, m.params, m.init_batch, m.max_batch, (4, 128), float(rng.uniform(0, 5)),
                    float(rng.uniform(0, 5))) for m in base[::-1]]
    fresh = _model("new", {t: ThroughputParams(0.01, 0.002, 0.05, 0.001, 0.02, 0.001, 1.5)
                           for t in CLUSTER.type_names}, 32.0, 2048.0, (2, 64), 1.0, 1.0)
    mixed = [again[0], fresh, *again[1:]]
    got = goodput_matrix(mixed, TYPES, CFG.n_nodes, CFG.n_gpus)
    assert np.array_equal(got, _per_model(mixed))
    assert not np.array_equal(got[[0, 2, 3, 4]], first[::-1])  # the new statistics do change the rows
    assert len(_goodput._CANDS) == kept + 1 or len(_goodput._CANDS) == _goodput._CANDS_MAX  # only `fresh` was new
    half = np.arange(len(CFG)) % 2 == 0  # another point set: its own tables
    types = [t for t, h in zip(TYPES, half) if h]
    got = goodput_matrix(mixed, types, CFG.n_nodes[half], CFG.n_gpus[half])
    assert np.array_equal(got, _per_model(mixed)[:, half])
