"""Synergy instances in the versioned JSON envelope (problem ``"synergy"``) and the command-line hooks."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import InputError
from ..instances import ProblemIO
from ..instances import field as jfield
from .spec import Server, SynergyJob, validate

__all__ = ["SynergyInstance", "explain_instance", "from_data", "solve_instance", "to_data"]


@dataclass
class SynergyInstance:
    """One round of Synergy: servers, jobs (in policy order), and whether throughput is GPU-weighted.

    ``profiling`` (optional): per job id, the CPU counts optimistic profiling measured for it.
    """

    servers: list[Server]
    jobs: list[SynergyJob]
    weighted: bool = False
    profiling: dict[str, list[float]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        validate(self.servers, self.jobs)


def _num(v: Any) -> Any:
    f = float(v)
    return int(f) if f.is_integer() and abs(f) < 2**53 else f


def to_data(inst: SynergyInstance) -> dict:
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
        return np.array(v, dtype=np.float64)
    if not isinstance(v, list) or not v:
        raise InputError(path, v, "must be a non-empty list of lists of numbers")
    rows = [_numbers(r, f"{path}[{i}]", 1) for i, r in enumerate(v)]
    if len({r.size for r in rows}) != 1:
        raise InputError(path, [r.size for r in rows], "rows must have equal length")
    return np.vstack(rows)


def from_data(data: dict) -> SynergyInstance:
    p = "data"
    raw_servers = jfield(data, "servers", p, list)
    servers = []
    for i, s in enumerate(raw_servers):
        sp_ = f"{p}.servers[{i}]"
        if not isinstance(s, dict):
            raise InputError(sp_, s, "must be an object")
        servers.append(Server(jfield(s, "gpus", sp_, int), jfield(s, "cpus", sp_, float), jfield(s, "mem_gb", sp_, float)))
    jobs = []
    for k, j in enumerate(jfield(data, "jobs", p, list)):
        jp = f"{p}.jobs[{k}]"
        if not isinstance(j, dict):
            raise InputError(jp, j, "must be an object")
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


def solve_instance(inst: SynergyInstance, backend: str | None = None, time_limit: float | None = None) -> tuple[Any, list[dict], dict]:
    """CLI solve: the exact joint model, with OPT, TUNE and proportional totals alongside."""
    from .check import check_allocation
    from .methods import proportional, solve_joint, synergy_opt, synergy_tune

    joint = solve_joint(inst.servers, inst.jobs, backend=backend, weighted=inst.weighted, time_limit=time_limit)
    check_allocation(inst.servers, inst.jobs, joint)
    res = joint.results["joint"]
    summary: dict[str, Any] = {
        "method": "joint",
        "termination": str(res.termination),
        "objective": joint.total_throughput,
        "bound": res.bound,
        "gap": res.gap,
        "times": res.timings.as_dict(),
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


def explain_instance(inst: SynergyInstance) -> str:
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
        "Methods: P1 (cluster as one pool), Synergy-OPT (P1 + packing LP + rounding + P1 per server), Synergy-TUNE "
        "(greedy), proportional, and the exact joint MILP.\n"
        f"Pooled P1: {m.summary()}"
    )


def _generate(gpus: int = 128, seed: int = 0, **kw: Any) -> SynergyInstance:
    from .generators import generate_instance

    return generate_instance(gpus, seed, **kw)


PROBLEM_IO = ProblemIO(
        name="synergy",
        cls=SynergyInstance,
        to_data=to_data,
        from_data=from_data,
        solve=solve_instance,
        explain=explain_instance,
        generate=_generate,
)
