"""HeterPS instances in the versioned JSON envelope (problem name ``"heterps"``) and its typed :class:`ProblemIO`."""

from __future__ import annotations

import math
import time
from typing import Any

from ..errors import InputError, SolveFailedError
from ..instances import field
from ..problem import ProblemIO, SolveOptions
from ..results import Termination, TerminationReason
from .core import HeterPSPlan, max_throughput
from .cost import check_plan
from .exact import HeterPSInfeasibleError, solve_exact
from .heuristics import solve_bruteforce, solve_genetic, solve_greedy
from .rl import solve_rl
from .spec import HeterPSProblem, Layer, ResourceType

__all__ = ["HETERPS_IO", "METHODS", "PROBLEM_IO", "from_data", "size", "solve", "to_data"]

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


#: the methods :func:`solve` accepts, the default first (``milp`` takes a backend; the others use none)
METHODS = ("dp", "milp", "greedy", "genetic", "rl", "bruteforce")


def solve(problem: HeterPSProblem, options: SolveOptions | None = None) -> HeterPSPlan:
    """Solve ``problem`` by ``options.method`` (default ``dp``; ``milp`` when only a backend is given) and return the
    answer. Never raises for infeasibility: an infeasible problem gives an INFEASIBLE answer whose ``explanation``
    names the constraint group; a MILP stopped before any plan gives NO_SOLUTION_FOUND with the limit."""
    opts = options if options is not None else SolveOptions()
    method = opts.method or ("milp" if opts.backend is not None else "dp")
    if method not in METHODS:
        raise InputError("method", method, f"must be one of {list(METHODS)}")
    if opts.backend is not None and method != "milp":
        raise InputError("backend", opts.backend, f"method {method!r} uses no solver backend (only 'milp' does)")
    t0 = time.perf_counter()
    try:
        if method in ("dp", "milp"):
            kw = {"threads": opts.threads, "seed": opts.seed, "verbose": opts.verbose, **dict(opts.options)}
            if opts.mip_rel_gap is not None:
                kw["mip_rel_gap"] = min(opts.mip_rel_gap, 1e-9)  # Dinkelbach needs each step solved tightly
            return solve_exact(problem, method, opts.backend, time_limit=opts.time_limit, explain=False,
                               **(kw if method == "milp" else {}))
        if method == "greedy":
            return solve_greedy(problem)
        if method == "genetic":
            return solve_genetic(problem, seed=opts.seed)
        if method == "rl":
            return solve_rl(problem, seed=opts.seed)
        return solve_bruteforce(problem)
    except HeterPSInfeasibleError as exc:
        return HeterPSPlan(termination=Termination(TerminationReason.INFEASIBLE, detail=exc.family),
                           method=f"exact-{method}" if method in ("dp", "milp") else method,
                           backend=exc.result.backend if exc.result is not None else "", result=exc.result,
                           seconds=time.perf_counter() - t0, explanation=str(exc),
                           info={"family": exc.family, "best_throughput": exc.best_throughput})
    except SolveFailedError as exc:
        res = exc.result
        term = res.termination if res is not None else Termination(TerminationReason.ERROR, detail=str(exc))
        return HeterPSPlan(termination=term, method="exact-milp", backend=res.backend if res is not None else "",
                           result=res, seconds=time.perf_counter() - t0, bound=res.bound if res is not None else math.nan)


def size(problem: HeterPSProblem) -> tuple[int, int]:
    """(GPU units available, jobs): one DNN to schedule; the GPUs are the limits of types named like ``GPU``."""
    gpus = sum(t.limit for t in problem.types if "gpu" in t.name.lower())
    return int(gpus), 1


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

    if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 1:
        raise InputError("gpus", gpus, "must be a positive number of GPUs")
    return generate(kw.pop("model", "ctrdnn"), seed, gpus=gpus, **kw)


#: HeterPS's registration: file format, generator, builder, decoder and checker.
PROBLEM_IO = HETERPS_IO = ProblemIO(
    name="heterps", cls=HeterPSProblem, to_data=to_data, from_data=from_data, solve=solve, explain=_cli_explain,
    generate=_cli_generate, build=None, decode=None, check=check_plan, size=size, methods=METHODS,
    backend_methods=("milp",),
)
# build / decode are None: the answer is not one model's solution (the MILP route is a Dinkelbach loop over
# several solves of ``heterps.build(problem, lam)``; the default route is a DP).
