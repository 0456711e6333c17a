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
