"""HeterPS instances in the versioned JSON envelope (problem name ``"heterps"``) and the command-line hooks."""

from __future__ import annotations

import math
from typing import Any

from ..errors import InputError
from ..instances import ProblemIO, field
from .core import max_throughput
from .exact import HeterPSInfeasibleError, solve_exact
from .spec import HeterPSProblem, Layer, ResourceType

__all__ = ["HETERPS_IO", "PROBLEM_IO", "from_data", "to_data"]

_LAYER_KEYS = ("name", "kind", "oct", "odt", "alpha", "beta", "input_size", "weight_size")
_TYPE_KEYS = ("name", "price_per_hour", "limit")
_TOP_KEYS = ("layers", "types", "batch_size", "base_batch", "samples", "epochs", "throughput_limit")


def to_data(problem: HeterPSProblem) -> dict:
    """The JSON-ready ``data`` part of an instance file."""
    return {
        "layers": [
            {"name": x.name, "kind": x.kind, "oct": dict(x.oct), "odt": dict(x.odt), "alpha": x.alpha, "beta": x.beta,
             "input_size": x.input_size, "weight_size": x.weight_size}
            for x in problem.layers
        ],
        "types": [{"name": t.name, "price_per_hour": t.price_per_hour, "limit": t.limit} for t in problem.types],
        **{k: getattr(problem, k) for k in _TOP_KEYS[2:]},
    }


def _unknown(d: dict, allowed: tuple[str, ...], path: str) -> None:
    extra = sorted(set(d) - set(allowed))
    if extra:
        raise InputError(f"{path}.{extra[0]}", d[extra[0]], f"is not a known field ({', '.join(allowed)})")


def _rethrow(exc: InputError, old: str, new: str) -> InputError:
    f = exc.field
    f = new + f[len(old):] if f.startswith(old) else f"{new}.{f}"
    return InputError(f, exc.value, exc.message)


def from_data(data: dict) -> HeterPSProblem:
    """Validate ``data`` and build the problem; InputError names the path (``data.layers[2].oct.GPU``)."""
    path = "data"
    if not isinstance(data, dict):
        raise InputError(path, type(data).__name__, "must be a JSON object")
    _unknown(data, _TOP_KEYS, path)
    layers_raw = field(data, "layers", path, list)
    types_raw = field(data, "types", path, list)
    types = []
    for j, t in enumerate(types_raw):
        p = f"{path}.types[{j}]"
        if not isinstance(t, dict):
            raise InputError(p, t, "must be a JSON object")
        _unknown(t, _TYPE_KEYS, p)
        name = field(t, "name", p, str)
        price = field(t, "price_per_hour", p, float)
        limit = field(t, "limit", p, int)
        try:
            types.append(ResourceType(name, price, limit))
        except InputError as exc:
            raise _rethrow(exc, f"ResourceType({name})", p) from None
    layers = []
    for i, x in enumerate(layers_raw):
        p = f"{path}.layers[{i}]"
        if not isinstance(x, dict):
            raise InputError(p, x, "must be a JSON object")
        _unknown(x, _LAYER_KEYS, p)
        name = field(x, "name", p, str)
        kw = {
            "kind": field(x, "kind", p, str),
            "oct": field(x, "oct", p, dict),
            "odt": field(x, "odt", p, dict),
            "alpha": field(x, "alpha", p, float),
            "beta": field(x, "beta", p, float),
            "input_size": field(x, "input_size", p, float, 0.0),
            "weight_size": field(x, "weight_size", p, float, 0.0),
        }
        try:
            layers.append(Layer(name, **kw))
        except InputError as exc:
            raise _rethrow(exc, f"Layer({name!r})", p) from None
    top = {k: field(data, k, path, float) for k in _TOP_KEYS[2:]}
    try:
        return HeterPSProblem(tuple(layers), tuple(types), **top)
    except InputError as exc:
        raise InputError(f"{path}.{exc.field}", exc.value, exc.message) from None


def _cli_solve(problem: HeterPSProblem, backend: str | None = None, time_limit: float | None = None
               ) -> tuple[Any, list[dict], dict]:
    method = "dp" if backend is None else "milp"
    try:
        r = solve_exact(problem, method, backend, time_limit=time_limit, explain=False)
    except HeterPSInfeasibleError as exc:
        return None, [], {"termination": "infeasible", "family": exc.family, "message": str(exc),
                          "objective": math.nan, "bound": math.nan, "gap": math.inf}
    rows = []
    for s, ((a, b, t), k) in enumerate(zip(r.stages, r.k)):
        for layer in problem.layers[a:b]:
            rows.append({"layer": layer.name, "kind": layer.kind, "type": t, "stage": s, "stage_units": k})
    summary = {"termination": r.status, "objective": r.cost, "bound": r.cost if r.status == "optimal" else math.nan,
               "gap": 0.0 if r.status == "optimal" else math.inf, "throughput": r.throughput,
               "time_hours": r.time_hours, "units": r.units, "method": r.method, "seconds": r.seconds}
    return r, rows, summary


def _cli_explain(problem: HeterPSProblem) -> str:
    tp, plan = max_throughput(problem)
    kinds: dict[str, int] = {}
    for x in problem.layers:
        kinds[x.kind] = kinds.get(x.kind, 0) + 1
    lines = [
        f"HeterPS: {problem.num_layers} layers ({', '.join(f'{n} {k}' for k, n in kinds.items())}), types "
        + ", ".join(f"{t.name} ({t.price_per_hour:g} $/h, limit {t.limit})" for t in problem.types),
        f"throughput_limit {problem.throughput_limit:g} samples/s; best reachable with every stage given all units "
        f"of its type: {tp:.6g} (plan {list(plan)})",
    ]
    try:
        r = solve_exact(problem, "dp")
        lines.append(f"optimal cost {r.cost:.6g} $ at throughput {r.throughput:.6g} with plan {list(r.plan)}, k={list(r.k)}")
    except HeterPSInfeasibleError as exc:
        lines.append(str(exc))
    return "\n".join(lines)


def _cli_generate(gpus: int = 8, seed: int = 0, **kw: Any) -> HeterPSProblem:
    from .generators import generate

    return generate(kw.pop("model", "ctrdnn"), seed, gpus=gpus, **kw)


PROBLEM_IO = HETERPS_IO = ProblemIO(
    name="heterps", cls=HeterPSProblem, to_data=to_data, from_data=from_data, solve=_cli_solve,
    explain=_cli_explain, generate=_cli_generate,
)
