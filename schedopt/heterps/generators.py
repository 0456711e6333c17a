"""Seeded instance generators shaped like the paper's recommendation models (CTR-DNN, MATCHNET, 2EMB, NCE).

The per-layer times are synthetic (the paper publishes no per-layer table): sparse embedding layers are
data-intensive (cheap compute, costly host-to-device transfer of sparse parameters on a GPU, so they suit CPUs), dense
layers are compute-intensive (about a hundred times faster on a GPU). Each base time gets a seeded log-normal
factor (sigma 0.2). The throughput floor is ``limit_fraction`` times the best throughput any plan reaches with every
stage given all units of its type, so an instance is feasible stage by stage by construction.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..errors import InputError
from .core import max_throughput
from .spec import CPU_PRICE, GPU_PRICE, MAX_UNITS, HeterPSProblem, Layer, ResourceType, check_int, check_num

__all__ = ["MAX_BATCH", "MODELS", "generate"]

#: the largest batch size generate takes (samples per iteration)
MAX_BATCH = 2**24

# base (CPU oct, CPU odt, GPU oct, GPU odt, alpha, beta) per layer kind, seconds per iteration of 512 samples
_KINDS: dict[str, tuple[float, float, float, float, float, float]] = {
    "embedding": (0.030, 0.020, 0.006, 0.150, 0.97, 0.80),
    "pool": (0.010, 0.004, 0.002, 0.010, 0.95, 0.70),
    "concat": (0.006, 0.006, 0.001, 0.004, 0.90, 0.60),
    "fc": (1.000, 0.010, 0.009, 0.006, 0.99, 0.85),
    "cosine": (0.050, 0.004, 0.002, 0.003, 0.95, 0.70),
    "nce": (1.600, 0.060, 0.015, 0.040, 0.98, 0.80),
}

#: layer sequences (kind, input size, weight size) of each model family
MODELS: dict[str, Sequence[tuple[str, float, float]]] = {
    "ctrdnn": [("embedding", 1, 1e6 * 9)] * 6 + [("concat", 54, 0)] + [("fc", 400, 400 * 400)] * 3 + [("fc", 400, 400)],
    "matchnet": ([("embedding", 1, 1e6 * 128), ("pool", 128, 0), ("fc", 128, 128 * 128), ("fc", 128, 128 * 128)] * 2
                 + [("cosine", 256, 0)]),
    "2emb": [("embedding", 1, 1e6 * 64), ("embedding", 1, 1e6 * 64), ("concat", 128, 0), ("fc", 128, 128 * 256),
             ("fc", 256, 256 * 64), ("fc", 64, 64)],
    "nce": [("embedding", 1, 1e6 * 128), ("embedding", 1, 1e6 * 128), ("concat", 256, 0), ("fc", 256, 256 * 256),
            ("fc", 256, 256 * 128), ("nce", 128, 1e5 * 128)],
}


def generate(model: str = "ctrdnn", seed: int = 0, *, cpus: int = 64, gpus: int = 8, limit_fraction: float = 0.5,
             batch_size: int = 512, samples: float = 1e8, epochs: float = 1.0) -> HeterPSProblem:
    """A seeded instance of ``model`` (``ctrdnn``, ``matchnet``, ``2emb``, ``nce``) with ``cpus`` CPU and ``gpus`` GPU
    units at the paper's prices (CPU 0.04 $/h, GPU 2.42 $/h)."""
    if not isinstance(model, str) or model not in MODELS:
        raise InputError("model", model, f"must be one of {sorted(MODELS)}")
    seed = check_int("seed", seed, lo=0)
    cpus = check_int("cpus", cpus, lo=1, hi=MAX_UNITS)
    gpus = check_int("gpus", gpus, lo=1, hi=MAX_UNITS)
    check_num("limit_fraction", limit_fraction, lo=0.0, lo_open=True, hi=1.0)
    batch_size = check_int("batch_size", batch_size, lo=1, hi=MAX_BATCH)
    rng = np.random.default_rng([seed, sorted(MODELS).index(model)])
    layers = []
    counts: dict[str, int] = {}
    for kind, insz, wsz in MODELS[model]:
        co, cd, go, gd, al, be = _KINDS[kind]
        f = np.exp(rng.normal(0.0, 0.2, size=4))
        counts[kind] = counts.get(kind, 0) + 1
        layers.append(Layer(
            name=f"{kind}{counts[kind]}", kind=kind,
            oct={"CPU": round(co * f[0], 6), "GPU": round(go * f[1], 6)},
            odt={"CPU": round(cd * f[2], 6), "GPU": round(gd * f[3], 6)},
            alpha=round(float(np.clip(al + rng.normal(0, 0.01), 0, 1)), 4),
            beta=round(float(np.clip(be + rng.normal(0, 0.03), 0, 1)), 4),
            input_size=float(insz), weight_size=float(wsz),
        ))
    types = (ResourceType("CPU", CPU_PRICE, cpus), ResourceType("GPU", GPU_PRICE, gpus))
    probe = HeterPSProblem(tuple(layers), types, batch_size, 512, samples, epochs, 1.0)
    tp, _ = max_throughput(probe)
    return probe.with_limit(float(f"{tp * limit_fraction:.6g}"))
