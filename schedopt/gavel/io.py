"""JSON reading and writing of :class:`GavelSpec` (registered as problem ``"gavel"``), its seeded generator, and
the :class:`~schedopt.problem.ProblemIO` hooks.

``data`` layout::

    {"objective": "max_min", "types": ["t4", "a100"], "capacity": [24, 16],
     "jobs": [{"id": "j0", "throughputs": [1.5, 6.0], "scale_factor": 1, "priority_weight": 1.0,
               "steps_remaining": 1000.0, "time_since_start": 0.0, "slo": null}, ...],
     "costs": null | [0.53, 3.06], "efficient": true}
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..errors import InputError
from ..instances import check_keys, field
from ..problem import Formulation, Violation
from ..results import SolveResult
from .build import GavelIndex, build
from .check import check_allocation
from .solve import GavelAllocation, decode, solve_spec
from .spec import OBJECTIVES, GavelSpec

__all__ = ["build_instance", "check_instance", "decode_instance", "explain_instance", "from_data", "generate", "size",
           "to_data"]

_DATA = ("objective", "types", "capacity", "jobs", "costs", "efficient")
_JOB = ("id", "throughputs", "scale_factor", "priority_weight", "steps_remaining", "time_since_start", "slo")


def _f(v: float) -> float | None:
    return float(v) if math.isfinite(v) else None


def to_data(spec: GavelSpec) -> dict[str, Any]:
    """The JSON ``data`` object of a :class:`~schedopt.gavel.GavelSpec` (the inverse of :func:`from_data`)."""
    if not isinstance(spec, GavelSpec):
        raise InputError("instance", type(spec).__name__, "must be a GavelSpec")
    jobs = []
    for j, jid in enumerate(spec.jobs):
        jobs.append({"id": jid, "throughputs": [float(v) for v in spec.throughputs[j]],
                     "scale_factor": int(spec.scale_factors[j]), "priority_weight": float(spec.weights[j]),
                     "steps_remaining": float(spec.remaining[j]),
                     "time_since_start": float(spec.since_start[j]),
                     "slo": None if spec.slos is None else _f(spec.slos[j])})
    return {"objective": spec.objective, "types": list(spec.types), "capacity": [float(c) for c in spec.capacity],
            "jobs": jobs, "costs": [float(c) for c in spec.unit_costs], "efficient": spec.efficient}


def from_data(data: dict[str, Any]) -> GavelSpec:
    """Validate ``data`` and build the spec; errors name the field (``data.jobs[3].scale_factor``) and value."""
    if not isinstance(data, dict):
        raise InputError("data", type(data).__name__, "must be an object")
    check_keys(data, _DATA, "data")
    objective = field(data, "objective", "data", str, "max_min")
    if objective not in OBJECTIVES:
        raise InputError("data.objective", objective, f"must be one of {', '.join(OBJECTIVES)}")
    types = field(data, "types", "data", list)
    cap = field(data, "capacity", "data", list)
    rows = field(data, "jobs", "data", list)
    ids, X, sf, pw, rem, tss, slo = [], [], [], [], [], [], []
    for i, d in enumerate(rows):
        p = f"data.jobs[{i}]"
        if not isinstance(d, dict):
            raise InputError(p, d, "must be an object")
        check_keys(d, _JOB, p)
        ids.append(str(field(d, "id", p, (str, int))))
        xs = field(d, "throughputs", p, list)
        if len(xs) != len(types) or any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in xs):
            raise InputError(f"{p}.throughputs", xs, f"must be {len(types)} numbers (one per GPU type)")
        X.append([float(v) for v in xs])
        sf.append(field(d, "scale_factor", p, int, 1))
        pw.append(field(d, "priority_weight", p, float, 1.0))
        rem.append(field(d, "steps_remaining", p, float, 0.0))
        tss.append(field(d, "time_since_start", p, float, 0.0))
        s = field(d, "slo", p, (float, type(None)), None)
        if s is not None and not (math.isfinite(s) and s > 0):
            raise InputError(f"{p}.slo", s, "must be a finite number of seconds > 0, or null for no deadline")
        slo.append(math.inf if s is None else float(s))
    costs = field(data, "costs", "data", (list, type(None)), None)
    any_slo = any(math.isfinite(s) for s in slo)
    try:
        return GavelSpec(tuple(types), np.array(cap, dtype=float), tuple(ids),
                         np.array(X, dtype=float).reshape(len(ids), len(types)), np.array(sf, dtype=float),
                         objective=objective, priority_weights=np.array(pw), steps_remaining=np.array(rem),
                         time_since_start=np.array(tss), costs=None if costs is None else np.array(costs, dtype=float),
                         slos=np.array(slo) if any_slo else None, efficient=field(data, "efficient", "data", bool, True))
    except InputError as e:
        raise InputError(f"data.{e.field}", e.value, e.message) from None
    except (TypeError, ValueError) as e:
        raise InputError("data", str(e), "is not a valid Gavel instance") from None


#: the cluster shape generated instances scale (Sia's 64-GPU cluster: 6 x 4 T4, 2 x 8 A100, 3 x 8 RTX 2080Ti)
_SHAPE = (("t4", 24), ("a100", 16), ("rtx2080ti", 24))
#: AWS-like prices per GPU-hour (g4dn, p4d, and a 2080Ti-class instance), for ``cost_slo``
_PRICES = {"t4": 0.526, "a100": 4.10, "rtx2080ti": 0.90}


def generate(gpus: int, seed: int, objective: str = "max_min", jobs_per_gpu: float = 0.5,
             slo_fraction: float = 0.3, **unknown: Any) -> GavelSpec:
    """A seeded instance on ``gpus`` GPUs (a multiple of 64: Sia's 64-GPU cluster shape, scaled). Jobs: a zoo
    application each, Gavel's scale factors (1/2/4/8 with probabilities 0.70/0.10/0.15/0.05,
    ``scheduler/utils.py``) and duration (``60 * 10^U(1.5, 3)`` s with probability 0.8, else
    ``60 * 10^U(3, 4)``); throughput = the zoo model's samples/s at its initial batch on ``scale_factor`` GPUs of
    the fewest nodes, divided by the batch (steps/s); ``steps_remaining`` = duration x its 1-GPU T4 throughput
    x U(0.2, 1); ``time_since_start`` U(0, duration). ``cost_slo``: a fraction ``slo_fraction`` of jobs get a
    deadline 2-5 x their time on the whole of their best type."""
    if unknown:  # the ProblemIO generator contract takes any keywords: name the one this generator does not know
        bad = sorted(unknown)[0]
        raise InputError(f"generate.{bad}", unknown[bad], "is not a parameter (objective, jobs_per_gpu, slo_fraction)")
    from .. import zoo

    if not (isinstance(gpus, int) and gpus >= 64 and gpus % 64 == 0):
        raise InputError("gpus", gpus, "must be a multiple of 64 (Sia's cluster shape, scaled)")
    if objective not in OBJECTIVES:
        raise InputError("objective", objective, f"must be one of {', '.join(OBJECTIVES)}")
    k = gpus // 64
    types = tuple(t for t, _ in _SHAPE)
    cap = np.array([c * k for _, c in _SHAPE], dtype=float)
    per_node = {"t4": 4, "a100": 8, "rtx2080ti": 8}
    rng = np.random.default_rng(seed)
    n = max(2, round(gpus * jobs_per_gpu))
    apps = [a for a in zoo.list_models() if a != "ncf"]
    sf = rng.choice([1, 2, 4, 8], size=n, p=[0.70, 0.10, 0.15, 0.05]).astype(float)
    X = np.zeros((n, len(types)))
    rem = np.zeros(n)
    tss = np.zeros(n)
    models = {a: zoo.load_model(a) for a in apps}
    for j in range(n):
        m = models[apps[int(rng.integers(len(apps)))]]
        B = float(m.init_batch)
        for t_i, t in enumerate(types):
            s = int(sf[j])
            nodes = -(-s // per_node[t])
            X[j, t_i] = float(np.asarray(m.throughput(t, nodes, s, B))) / B
        dur = 60 * 10 ** rng.uniform(1.5, 3) if rng.random() < 0.8 else 60 * 10 ** rng.uniform(3, 4)
        one = float(np.asarray(m.throughput("t4", 1, 1, B))) / B
        rem[j] = dur * one * rng.uniform(0.2, 1.0)
        tss[j] = rng.uniform(0, dur)
    slos = None
    if objective == "cost_slo":
        alone = rem / (X * np.minimum(1.0, cap[None, :] / sf[:, None])).max(axis=1)
        slos = np.where(rng.random(n) < slo_fraction, alone * rng.uniform(2, 5, size=n) * max(1.0, n / gpus * 4),
                        math.inf)
    return GavelSpec(types, cap, tuple(f"j{j}" for j in range(n)), X, sf, objective=objective, steps_remaining=rem,
                     time_since_start=tss, costs=np.array([_PRICES[t] for t in types]), slos=slos,
                     meta={"generator": "schedopt.gavel.generate", "gpus": gpus, "seed": seed})


def build_instance(spec: GavelSpec) -> Formulation[GavelIndex]:
    """The first model of ``spec`` (for ftf: the model at the isolated level rho = 1)."""
    return build(spec, rho=1.0 if spec.objective == "ftf" else None)


def decode_instance(spec: GavelSpec, formulation: Formulation[GavelIndex], result: SolveResult) -> GavelAllocation:
    """The :class:`~schedopt.gavel.GavelAllocation` read from ``result`` (:func:`~schedopt.gavel.decode`)."""
    return decode(spec, formulation, result)


def check_instance(spec: GavelSpec, answer: Any) -> list[Violation]:
    """The violations of ``answer`` on ``spec`` (:func:`~schedopt.gavel.check_allocation`)."""
    return check_allocation(spec, answer)


def size(spec: GavelSpec) -> tuple[int, int]:
    """(GPUs, jobs)."""
    return int(spec.capacity.sum()), spec.num_jobs


def explain_instance(spec: GavelSpec) -> str:
    """Which constraint families make the instance infeasible (only SLO rows can), or that it is feasible."""
    from ..infeasibility import explain_infeasibility

    return str(explain_infeasibility(build_instance(spec).model))


def solve_instance(spec: GavelSpec, options: Any = None) -> GavelAllocation:
    return solve_spec(spec, options)
