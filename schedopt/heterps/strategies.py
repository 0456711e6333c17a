"""Hypothesis strategies that build valid HeterPS problems directly (hypothesis is imported only here)."""

from __future__ import annotations

from hypothesis import strategies as st

from .spec import CPU_PRICE, GPU_PRICE, HeterPSProblem, Layer, ResourceType

__all__ = ["layers", "problems"]

_TIME = st.floats(min_value=0.01, max_value=1.0, allow_nan=False, allow_infinity=False)
_FRAC = st.floats(min_value=0.0, max_value=1.0, allow_nan=False, allow_infinity=False)


@st.composite
def layers(draw: st.DrawFn, n: int, type_names: tuple[str, ...]) -> tuple[Layer, ...]:
    """``n`` layers with times in [0.01, 1] s (ODT may be 0) and fractions in [0, 1]."""
    out = []
    for i in range(n):
        out.append(Layer(
            name=f"l{i}", kind=draw(st.sampled_from(["embedding", "fc", "concat"])),
            oct={t: draw(_TIME) for t in type_names},
            odt={t: draw(st.one_of(st.just(0.0), _TIME)) for t in type_names},
            alpha=draw(_FRAC), beta=draw(_FRAC),
            input_size=draw(st.integers(0, 1000)), weight_size=draw(st.integers(0, 10**6)),
        ))
    return tuple(out)


@st.composite
def problems(draw: st.DrawFn, max_layers: int = 6, max_units: int = 4, n_types: int = 2) -> HeterPSProblem:
    """Small problems: 1..``max_layers`` layers, ``n_types`` types (CPU and GPU at the paper's prices, then extra
    types), 1..``max_units`` units per type, a throughput floor between ``base_batch / 8`` and ``base_batch * 8``
    samples/s (so both feasible and infeasible floors occur)."""
    names = ("CPU", "GPU", "XPU", "NPU")[:n_types]
    prices = (CPU_PRICE, GPU_PRICE, 1.0, 0.5)[:n_types]
    types = tuple(ResourceType(n, p, draw(st.integers(1, max_units))) for n, p in zip(names, prices))
    L = draw(st.integers(1, max_layers))
    base = draw(st.sampled_from([32.0, 64.0, 128.0]))
    limit = base * 2.0 ** draw(st.floats(min_value=-3.0, max_value=3.0, allow_nan=False))
    return HeterPSProblem(draw(layers(L, names)), types, base * draw(st.sampled_from([1, 2])), base,
                          draw(st.sampled_from([1e4, 1e6])), draw(st.sampled_from([1.0, 3.0])), limit)
