"""Synergy instances in the versioned JSON envelope (problem ``"synergy"``) and the command-line hooks."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ..errors import InputError
from ..instances import check_keys
from ..instances import field as jfield
from ..problem import Answer, Formulation, ProblemIO, SolveOptions, Violation
from ..results import SolveResult
from .spec import Server, SynergyInstance, SynergyJob

__all__ = ["METHODS", "PROBLEM_IO", "SynergyInstance", "check_instance", "explain_instance", "from_data", "size_of", "solve_instance", "to_data"]


def _num(v: Any) -> Any:
    f = float(v)
    return int(f) if f.is_integer() and abs(f) < 2**53 else f


def to_data(inst: SynergyInstance) -> dict:
    """The JSON ``data`` object of an instance (the inverse of :func:`from_data`)."""
    out: dict[str, Any] = {
        "servers": [{"gpus": int(s.gpus), "cpus": _num(s.cpus), "mem_gb": _num(s.mem_gb)} for s in inst.servers],
        "jobs": [
            {
                "id": j.id,
                "gpus": int(j.gpus),
                "cpu_grid": [_num(v) for v in j.cpu_grid],
                "mem_grid": [_num(v) for v in j.mem_grid],
                "throughput": [[_num(v) for v in row] for row in j.throughput],
            }
            for j in inst.jobs
        ],
        "weighted": bool(inst.weighted),
    }
    if inst.profiling:
        out["profiling"] = {k: [_num(v) for v in pts] for k, pts in inst.profiling.items()}
    return out


def _numbers(v: Any, path: str, depth: int) -> np.ndarray:
    def ok(x: Any) -> bool:
        return isinstance(x, (int, float)) and not isinstance(x, bool)

    if depth == 1:
        if not isinstance(v, list) or not all(ok(x) for x in v):
            raise InputError(path, v, "must be a list of numbers")
        try:
            return np.array(v, dtype=np.float64)
        except OverflowError:
            raise InputError(path, v, "numbers must be within float range") from None
    if not isinstance(v, list) or not v:
        raise InputError(path, v, "must be a non-empty list of lists of numbers")
    rows = [_numbers(r, f"{path}[{i}]", 1) for i, r in enumerate(v)]
    if len({r.size for r in rows}) != 1:
        raise InputError(path, [r.size for r in rows], "rows must have equal length")
    return np.vstack(rows)


def from_data(data: dict) -> SynergyInstance:
    """The :class:`~schedopt.synergy.SynergyInstance` of a JSON ``data`` object; bad input is an ``InputError``
    naming the field."""
    p = "data"
    if not isinstance(data, dict):
        raise InputError(p, type(data).__name__, "must be an object")
    check_keys(data, ("servers", "jobs", "weighted", "profiling"), p)
    raw_servers = jfield(data, "servers", p, list)
    servers = []
    for i, s in enumerate(raw_servers):
        sp_ = f"{p}.servers[{i}]"
        if not isinstance(s, dict):
            raise InputError(sp_, s, "must be an object")
        check_keys(s, ("gpus", "cpus", "mem_gb"), sp_)
        servers.append(Server(jfield(s, "gpus", sp_, int), jfield(s, "cpus", sp_, float), jfield(s, "mem_gb", sp_, float)))
    jobs = []
    for k, j in enumerate(jfield(data, "jobs", p, list)):
        jp = f"{p}.jobs[{k}]"
        if not isinstance(j, dict):
            raise InputError(jp, j, "must be an object")
        check_keys(j, ("id", "gpus", "cpu_grid", "mem_grid", "throughput"), jp)
        jobs.append(
            SynergyJob(
                jfield(j, "id", jp, str),
                jfield(j, "gpus", jp, int),
                _numbers(jfield(j, "cpu_grid", jp, list), f"{jp}.cpu_grid", 1),
                _numbers(jfield(j, "mem_grid", jp, list), f"{jp}.mem_grid", 1),
                _numbers(jfield(j, "throughput", jp, list), f"{jp}.throughput", 2),
            )
        )
    weighted = jfield(data, "weighted", p, bool, False)
    prof_raw = jfield(data, "profiling", p, dict, {})
    profiling = {str(k): [float(x) for x in _numbers(v, f"{p}.profiling.{k}", 1)] for k, v in prof_raw.items()}
    try:
        return SynergyInstance(servers, jobs, weighted, profiling)
    except InputError as exc:  # re-root the path at data.
        raise InputError(f"{p}.{exc.field}", exc.value, exc.message) from exc


#: the methods ``PROBLEM_IO.solve`` accepts; the first is the default (see :func:`solve_instance`)
METHODS = ("tune", "opt", "proportional", "greedy", "p1", "joint")
#: the methods that solve a model with a solver backend (the others are heuristics)
BACKEND_METHODS = ("opt", "p1", "joint")


def solve_instance(inst: SynergyInstance, options: SolveOptions | str | None = None, time_limit: float | None = None) -> Any:
    """Solve one round by ``options.method`` (default ``"tune"``) and return its :class:`SynergyAllocation`.

    The default is TUNE: it is what Synergy runs in production and what a simulator calls round after round
    (milliseconds, no solver), and it never gives a job less than its GPU-proportional share. ``"opt"`` (P1 +
    packing LP + rounding; a heuristic with the P1 bound), ``"joint"`` (the exact MILP; slow past a few dozen
    servers), ``"p1"`` (the cluster as one pool: a bound, not a placement), ``"greedy"`` and ``"proportional"`` are
    there by name. ``options.backend`` / ``time_limit`` / ``mip_rel_gap`` reach the model-based methods.

    Called the old way, ``solve_instance(inst, backend, time_limit)`` (a backend name or None in place of the
    options), it warns (DeprecationWarning) and returns the old ``(answer, rows, summary)`` of the joint model.
    """
    if not isinstance(options, SolveOptions):
        warnings.warn(
            "solve_instance(inst, backend, time_limit) is deprecated: call solve_instance(inst, SolveOptions(...)), "
            "which returns a SynergyAllocation",
            DeprecationWarning,
            stacklevel=2,
        )
        return _solve_legacy(inst, options, time_limit)
    method = options.method or METHODS[0]
    if method not in METHODS:
        raise InputError("method", method, f"must be one of {METHODS}")
    if options.backend is not None and method not in BACKEND_METHODS:
        raise InputError("backend", options.backend, f"method {method!r} uses no solver backend (only "
                         f"{', '.join(BACKEND_METHODS)} do: ask for one with options.method)")
    from .methods import solve_joint, solve_p1, synergy_opt
    from .tune import proportional, synergy_greedy, synergy_tune

    S, J, w = inst.servers, inst.jobs, inst.weighted
    be = options.backend or "highs"
    if method == "tune":
        return synergy_tune(S, J, weighted=w)
    if method == "greedy":
        return synergy_greedy(S, J, weighted=w)
    if method == "proportional":
        return proportional(S, J, weighted=w)
    if method == "opt":
        return synergy_opt(S, J, backend=be, weighted=w, time_limit=options.time_limit)
    if method == "p1":
        return solve_p1(J, sum(s.gpus for s in S), sum(s.cpus for s in S), sum(s.mem_gb for s in S), backend=be, weighted=w, time_limit=options.time_limit)
    return solve_joint(S, J, backend=be, weighted=w, time_limit=options.time_limit, mip_rel_gap=options.mip_rel_gap)


def _solve_legacy(inst: SynergyInstance, backend: str | None, time_limit: float | None) -> tuple[Any, list[dict], dict]:
    from .methods import solve_joint, synergy_opt
    from .tune import proportional, synergy_tune

    joint = solve_joint(inst.servers, inst.jobs, backend=backend, weighted=inst.weighted, time_limit=time_limit)
    joint.raise_for_status()
    summary: dict[str, Any] = {
        "method": "joint",
        "termination": str(joint.termination),
        "objective": joint.total_throughput,
        "bound": joint.bound,
        "gap": joint.gap,
        "times": joint.timings.as_dict(),
        "unplaced": list(joint.unplaced),
    }
    others = {
        "tune": synergy_tune(inst.servers, inst.jobs, weighted=inst.weighted),
        "proportional": proportional(inst.servers, inst.jobs, weighted=inst.weighted),
        "opt": synergy_opt(inst.servers, inst.jobs, backend=backend, weighted=inst.weighted, time_limit=time_limit),
    }
    for name, a in others.items():
        summary[f"{name}_total_throughput"] = a.total_throughput
    summary["opt_lp_bound"] = others["opt"].lp_bound
    return joint, joint.rows(), summary


def check_instance(inst: SynergyInstance, answer: Answer) -> list[Violation]:
    """The independent checker on an instance (:func:`~schedopt.synergy.check_allocation`)."""
    from .check import check_allocation

    return check_allocation(inst.servers, inst.jobs, answer)


def size_of(inst: SynergyInstance) -> tuple[int, int]:
    """(GPUs, jobs)."""
    return sum(int(s.gpus) for s in inst.servers), len(inst.jobs)


def explain_instance(inst: SynergyInstance) -> str:
    """The demand against the cluster's totals and what the relaxed model (P1) says of it."""
    from .methods import build_p1
    from .spec import proportional_share

    G = sum(s.gpus for s in inst.servers)
    share = proportional_share(inst.servers)
    asked = sum(j.gpus for j in inst.jobs)
    m = build_p1(inst.jobs, G, sum(s.cpus for s in inst.servers), sum(s.mem_gb for s in inst.servers), weighted=inst.weighted)
    return (
        f"Synergy instance: {len(inst.servers)} servers, {G} GPUs; {len(inst.jobs)} jobs asking for {asked} GPUs; "
        f"proportional share {share[0]:g} CPUs and {share[1]:g} GB per GPU; objective "
        f"{'GPU-weighted' if inst.weighted else 'sum of normalised'} throughput.\n"
        "Methods: TUNE (default; queue order), OPT (P1 + packing LP + rounding + P1 per server), proportional, "
        "GREEDY, P1 (cluster as one pool) and the exact joint MILP. No model is infeasible: every runnable job fits "
        "at its GPU-proportional share (jobs beyond the free GPUs are reported unplaced).\n"
        f"Pooled P1: {m.summary()}"
    )


def _generate(gpus: int = 128, seed: int = 0, **kw: Any) -> SynergyInstance:
    from .generators import generate_instance

    return generate_instance(gpus, seed, **kw)


def _build(inst: SynergyInstance) -> Formulation:
    from .methods import build

    return build(inst)


def _decode(inst: SynergyInstance, formulation: Formulation, result: SolveResult) -> Answer:
    from .methods import decode

    return decode(inst, formulation, result)


#: Synergy's registration: file format, generator, builder, decoder and checker.
PROBLEM_IO = ProblemIO(
    name="synergy",
    cls=SynergyInstance,
    to_data=to_data,
    from_data=from_data,
    solve=solve_instance,
    explain=explain_instance,
    generate=_generate,
    build=_build,
    decode=_decode,
    check=check_instance,
    size=size_of,
    methods=METHODS,
    backend_methods=BACKEND_METHODS,
)
