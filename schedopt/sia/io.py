"""JSON reading and writing of :class:`SiaInstance` (registered as problem ``"sia"``).

``data`` layout::

    {"cluster": [{"name": "t4", "gpus_per_node": 4, "nodes": 6,
                  "node_names": ["n1", ...] (optional), "node_gpus": [4, 3, ...] (optional: GPUs per node)}, ...],
     "jobs": [{"id": "j0", "kind": "adaptive", "min_gpus": 1, "max_gpus": null, "scale_unit": 1,
               "max_profiled_gpus": 0, "allowed_types": null, "current": {"n_nodes": 1, "n_gpus": 2,
               "gpu_type": "a100"} | null, "age_s": 0.0, "restarts": 0, "restart_cost_s": 0.0,
               "preemptible": true, "rigid_gpus": null, "batch_size": null}, ...],
     "goodput": {"kind": "zoo", "models": ["cifar10", ...]}          # one zoo model name per job
              | {"kind": "models", "models": [{JobGoodputModel.to_dict()}, ...]}
              | {"kind": "matrix", "values": [[g or null, ...], ...]},  # jobs x generate_configs(cluster, cap)
     "p": -0.5, "lam": 1.1, "max_gpus_per_job": null, "available": null | {"t4": 20, ...},
     "settings": null | {SiaSettings.to_dict()}}                      # optional; null: the paper's exact model

Jobs may carry ``attained_gpu_seconds`` (default 0) and, on a running cluster, ``placement`` (where the job runs now:
``{"<node>": [GPU indices], ...}``, its ``current`` configuration then follows from it when left out); ``schedopt
solve`` keeps every job whose configuration does not change on exactly those GPUs. A running job's
``max_profiled_gpus`` defaults to its current GPU count (not 0), so the growth rule never caps a running 8-GPU job
at 1 GPU; give 0 explicitly for the paper's rule from scratch.

Instances store the job state and the goodput *model names* (not the goodput matrix): the matrix is recomputed
from ``schedopt.zoo`` on load, which keeps the 2048-GPU file well under 3 MB.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..errors import InputError
from ..instances import check_keys, field
from ..problem import Formulation, SolveOptions, Violation, checked_options
from ..results import SolveResult
from .check import check_allocation, check_placement
from .generate import SiaInstance, generate_instance
from .pairs import PairTable
from .placement import Placement
from .problem import SiaSolution
from .settings import SiaSettings
from .spec import Cluster, Config, GpuType, Job, rewrap

__all__ = ["METHODS", "build_instance", "check_instance", "decode_instance", "explain_instance", "from_data", "generate",
           "size", "solve_instance", "solve_options", "to_data"]

_DATA_FIELDS = ("cluster", "jobs", "goodput", "p", "lam", "max_gpus_per_job", "available", "settings")
_JOB_FIELDS = ("id", "kind", "min_gpus", "max_gpus", "scale_unit", "max_profiled_gpus", "allowed_types", "current",
               "age_s", "restarts", "restart_cost_s", "preemptible", "rigid_gpus", "batch_size", "attained_gpu_seconds")
_CLUSTER_FIELDS = ("name", "gpus_per_node", "nodes", "node_names", "node_gpus")

#: the methods ``solve`` accepts (the first is the default): the configuration ILP through ``schedopt.solve``
METHODS: tuple[str, ...] = ("ilp",)


def _config_data(c: Config | None) -> dict[str, Any] | None:
    return None if c is None else {"n_nodes": c.n_nodes, "n_gpus": c.n_gpus, "gpu_type": c.gpu_type}


def _is_zoo_model(m: Any) -> bool:
    name = getattr(m, "name", None)
    if not isinstance(name, str):
        return False
    try:
        from .. import zoo

        return name in zoo.list_models() and zoo.load_model(name) == m
    except ImportError:  # pragma: no cover
        return False


def to_data(inst: SiaInstance) -> dict[str, Any]:
    """The JSON-able ``data`` of ``inst``."""
    if not isinstance(inst, SiaInstance):
        raise InputError("instance", type(inst).__name__, "must be a SiaInstance")
    jobs = []
    for j in inst.jobs:
        d = {k: getattr(j, k) for k in _JOB_FIELDS}
        d["allowed_types"] = None if j.allowed_types is None else list(j.allowed_types)
        d["current"] = _config_data(j.current)
        if inst.placement is not None and j.id in inst.placement:
            d["placement"] = {n: list(g) for n, g in inst.placement[j.id]}
        jobs.append(d)
    g = inst.goodput
    if isinstance(g, Mapping):
        models = [g[j.id] for j in inst.jobs]
        if all(_is_zoo_model(m) for m in models):
            gd: dict[str, Any] = {"kind": "zoo", "models": [m.name for m in models]}
        elif all(callable(getattr(m, "to_dict", None)) for m in models):
            gd = {"kind": "models", "models": [m.to_dict() for m in models]}
        else:
            raise InputError("goodput", type(models[0]).__name__, "models need a to_dict() method to be written")
    elif callable(g):
        raise InputError("goodput", type(g).__name__, "a callable goodput cannot be written; use an array or models")
    else:
        arr = np.asarray(g, dtype=float)
        vals = [[None if np.isnan(v) else float(v) for v in row] for row in arr.tolist()]
        gd = {"kind": "matrix", "values": vals}
    return {
        "cluster": [_type_data(t) for t in inst.cluster.gpu_types],
        "jobs": jobs,
        "goodput": gd,
        "p": inst.p,
        "lam": inst.lam,
        "max_gpus_per_job": inst.max_gpus_per_job,
        "available": None if inst.available is None else dict(inst.available),
        "settings": None if inst.settings is None or inst.settings.is_exact else inst.settings.to_dict(),
    }


def _type_data(t: GpuType) -> dict[str, Any]:
    d: dict[str, Any] = {"name": t.name, "gpus_per_node": t.gpus_per_node, "nodes": t.nodes}
    if t.node_names is not None:
        d["node_names"] = list(t.node_names)
    if t.node_gpus is not None:
        d["node_gpus"] = list(t.node_gpus)
    return d


def _opt(d: dict, key: str, path: str, kind: type) -> Any:
    v = field(d, key, path, (kind, type(None)), None)
    if kind is float and isinstance(v, int) and not isinstance(v, bool):
        v = float(v)
    return v


def _config(d: Any, path: str) -> Config | None:
    if d is None:
        return None
    if not isinstance(d, dict):
        raise InputError(path, d, "must be an object {n_nodes, n_gpus, gpu_type} or null")
    check_keys(d, ("n_nodes", "n_gpus", "gpu_type"), path)
    n = field(d, "n_nodes", path, int)
    r = field(d, "n_gpus", path, int)
    t = field(d, "gpu_type", path, str)
    try:
        return Config(n, r, t)
    except InputError as e:
        raise rewrap(e, "config", path) from None


def _slots(d: Any, path: str, cluster: Cluster) -> list[tuple[str, tuple[int, ...]]]:
    """A job's ``placement`` (node -> GPU indices), checked against the cluster's nodes and their sizes."""
    if not isinstance(d, dict) or not d:
        raise InputError(path, d, "must be an object {node: [GPU indices], ...} with at least one node")
    out = []
    for n, gs in d.items():
        if not cluster.has_node(n):
            raise InputError(f"{path}[{n}]", gs, "names no node of the cluster")
        size = cluster.node_gpus(n)
        if not isinstance(gs, list) or not gs or len(set(map(repr, gs))) != len(gs) or any(
                isinstance(g, bool) or not isinstance(g, int) or not 0 <= g < size for g in gs):
            raise InputError(f"{path}[{n}]", gs, f"must be distinct GPU indices in 0..{size - 1}")
        out.append((n, tuple(sorted(gs))))
    types = {cluster.node_type(n) for n, _ in out}
    if len(types) > 1:
        raise InputError(path, d, f"spans GPU types {sorted(types)}")
    return sorted(out)


def _job(d: Any, path: str, cluster: Cluster | None = None,
         placed: dict[Any, list[tuple[str, tuple[int, ...]]]] | None = None) -> Job:
    if not isinstance(d, dict):
        raise InputError(path, d, "must be an object")
    unknown = sorted(set(d) - set(_JOB_FIELDS) - ({"placement"} if cluster is not None else set()))
    if unknown:
        raise InputError(f"{path}.{unknown[0]}", d[unknown[0]], f"is not a job field ({', '.join(_JOB_FIELDS)})")
    jid = field(d, "id", path, (str, int))
    kw: dict[str, Any] = {"id": jid}
    kw["kind"] = field(d, "kind", path, str, "adaptive")
    kw["min_gpus"] = field(d, "min_gpus", path, int, 1)
    kw["max_gpus"] = _opt(d, "max_gpus", path, int)
    kw["scale_unit"] = field(d, "scale_unit", path, int, 1)
    at = field(d, "allowed_types", path, (list, type(None)), None)
    kw["allowed_types"] = at
    kw["current"] = _config(d.get("current"), f"{path}.current")
    if d.get("placement") is not None and cluster is not None and placed is not None:
        slots = _slots(d["placement"], f"{path}.placement", cluster)
        here = Config(len(slots), sum(len(g) for _, g in slots), cluster.node_type(slots[0][0]))
        if kw["current"] is None:
            kw["current"] = here
        elif kw["current"] != here:
            raise InputError(f"{path}.current", kw["current"].label, f"differs from its placement ({here.label})")
        placed[jid] = slots
    # a running job's growth rule counts what it runs on now (the max_profiled_gpus=0 trap: a running 8-GPU job
    # capped at 1 GPU); give 0 explicitly for the rule from scratch
    cur = kw["current"]
    kw["max_profiled_gpus"] = field(d, "max_profiled_gpus", path, int, 0 if cur is None else cur.n_gpus)
    kw["age_s"] = field(d, "age_s", path, float, 0.0)
    kw["restarts"] = field(d, "restarts", path, int, 0)
    kw["restart_cost_s"] = field(d, "restart_cost_s", path, float, 0.0)
    kw["preemptible"] = field(d, "preemptible", path, bool, True)
    kw["rigid_gpus"] = _opt(d, "rigid_gpus", path, int)
    kw["batch_size"] = _opt(d, "batch_size", path, float)
    kw["attained_gpu_seconds"] = field(d, "attained_gpu_seconds", path, float, 0.0)
    try:
        return Job(**kw)
    except InputError as e:
        raise rewrap(e, f"job[{jid}]", path) from None


def _goodput(d: Any, jobs: tuple[Job, ...]) -> Any:
    path = "data.goodput"
    if not isinstance(d, dict):
        raise InputError(path, d, "must be an object with a 'kind'")
    kind = field(d, "kind", path, str)
    check_keys(d, ("kind", "values") if kind == "matrix" else ("kind", "models"), path)
    if kind == "matrix":
        vals = field(d, "values", path, list)
        if len(vals) != len(jobs) or not all(isinstance(r, list) for r in vals):
            raise InputError(f"{path}.values", f"{len(vals)} rows", f"must be {len(jobs)} lists (one per job)")
        widths = {len(r) for r in vals}
        if len(widths) > 1:
            raise InputError(f"{path}.values", sorted(widths), "rows differ in length")
        for i, row in enumerate(vals):
            for k, v in enumerate(row):
                if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))):
                    raise InputError(f"{path}.values[{i}][{k}]", v, "must be a number or null")
        return np.array([[np.nan if v is None else float(v) for v in r] for r in vals], dtype=float).reshape(len(jobs), -1)
    if kind in ("zoo", "models"):
        models = field(d, "models", path, list)
        if len(models) != len(jobs):
            raise InputError(f"{path}.models", len(models), f"must give one model per job ({len(jobs)})")
        from .. import zoo
        from ..goodput import JobGoodputModel

        out: dict[Any, Any] = {}
        cache: dict[str, Any] = {}
        for i, (m, j) in enumerate(zip(models, jobs)):
            if kind == "zoo":
                if not isinstance(m, str) or m not in zoo.list_models():
                    raise InputError(f"{path}.models[{i}]", m, f"must be a zoo model name ({', '.join(zoo.list_models())})")
                if m not in cache:
                    cache[m] = zoo.load_model(m)
                out[j.id] = cache[m]
            else:
                if not isinstance(m, dict):
                    raise InputError(f"{path}.models[{i}]", m, "must be a JobGoodputModel.to_dict() object")
                try:
                    out[j.id] = JobGoodputModel.from_dict(m)
                except InputError as e:
                    raise InputError(f"{path}.models[{i}].{e.field}", e.value, e.message) from None
                except (KeyError, TypeError, ValueError) as e:
                    raise InputError(f"{path}.models[{i}]", str(e), "is not a valid goodput model") from None
        return out
    raise InputError(f"{path}.kind", kind, "must be 'zoo', 'models' or 'matrix'")


def from_data(data: dict[str, Any]) -> SiaInstance:
    """Validate ``data`` and build the instance; errors name the field (``data.jobs[3].min_gpus``) and value."""
    if not isinstance(data, dict):
        raise InputError("data", type(data).__name__, "must be an object")
    check_keys(data, _DATA_FIELDS, "data")
    cl = field(data, "cluster", "data", list)
    types = []
    for i, t in enumerate(cl):
        p = f"data.cluster[{i}]"
        if not isinstance(t, dict):
            raise InputError(p, t, "must be an object {name, gpus_per_node, nodes}")
        check_keys(t, _CLUSTER_FIELDS, p)
        name = field(t, "name", p, str)
        names = field(t, "node_names", p, (list, type(None)), None)
        sizes = field(t, "node_gpus", p, (list, type(None)), None)
        try:
            types.append(GpuType(name, field(t, "gpus_per_node", p, int), field(t, "nodes", p, int),
                                 None if names is None else tuple(names), None if sizes is None else tuple(sizes)))
        except InputError as e:
            raise rewrap(rewrap(e, f"gpu_type[{name}]", p), "gpu_type", p) from None
    try:
        cluster = Cluster(tuple(types))
    except InputError as e:
        raise rewrap(e, "cluster.gpu_types", "data.cluster") from None
    placed: dict[Any, list[tuple[str, tuple[int, ...]]]] = {}
    jobs = tuple(_job(j, f"data.jobs[{i}]", cluster, placed) for i, j in enumerate(field(data, "jobs", "data", list)))
    held: dict[tuple[str, int], Any] = {}
    for jid, slots in placed.items():
        for n, gs in slots:
            for g in gs:
                if (n, g) in held:
                    raise InputError(f"data.jobs[{[j.id for j in jobs].index(jid)}].placement[{n}]", g,
                                     f"is a GPU job {held[(n, g)]} holds too")
                held[(n, g)] = jid
    p = field(data, "p", "data", float, -0.5)
    lam = field(data, "lam", "data", float, 1.1)
    cap = _opt(data, "max_gpus_per_job", "data", int)
    avail = field(data, "available", "data", (dict, type(None)), None)
    goodput = _goodput(field(data, "goodput", "data", dict), jobs)
    try:
        settings = SiaSettings.from_dict(field(data, "settings", "data", (dict, type(None)), None))
    except InputError as e:
        raise InputError(f"data.{e.field}", e.value, e.message) from None
    except TypeError as e:
        raise InputError("data.settings", str(e), "is not a valid settings object") from None
    inst = SiaInstance(cluster, jobs, goodput, p=p, lam=lam, max_gpus_per_job=cap, available=avail,
                       settings=None if settings.is_exact else settings, placement=placed or None)
    try:
        inst.problem()  # the problem-level checks (types, current configs, rigid counts, shapes)
    except InputError as e:
        raise InputError(f"data.{e.field}", e.value, e.message) from None
    return inst


def solve_options(options: SolveOptions | None) -> SolveOptions:
    """``options`` checked for Sia (its method must be one of :data:`METHODS`)."""
    return checked_options(options, METHODS)


def solve_instance(inst: SiaInstance, options: SolveOptions | None = None) -> SiaSolution:
    """Solve the instance's configuration ILP (``options.backend`` None: mckp for this structure), and place the
    allocation when one exists. The answer's ``rows()`` and ``to_dict()`` are what the command line prints."""
    opts = solve_options(options)
    sol = inst.problem().solve(options=opts)
    if sol.has_solution:
        prev = None
        if inst.placement:  # a running cluster: jobs whose configuration is unchanged keep their GPUs
            cur = {j.id: j.current for j in inst.jobs}
            prev = Placement(assignments={j: list(s) for j, s in inst.placement.items()},
                             configs={j: c for j in inst.placement if (c := cur.get(j)) is not None})
        sol.place(prev)
    return sol


def build_instance(inst: SiaInstance) -> Formulation[PairTable]:
    """The instance's formulation (model, pair table, structure)."""
    return inst.problem().formulation()


def decode_instance(inst: SiaInstance, formulation: Formulation[PairTable], result: SolveResult) -> SiaSolution:
    """The answer of ``result`` (a solve of ``formulation``; the allocation is read through the formulation's pair
    table, so the instance's problem is only validated again, not pruned)."""
    return SiaSolution.decode(inst.problem(), formulation, result)


def check_instance(inst: SiaInstance, answer: Any) -> list[Violation]:
    """The independent checkers over the answer's allocation (and its placement when it has one)."""
    if not isinstance(answer, SiaSolution):
        raise InputError("answer", type(answer).__name__, "must be a SiaSolution")
    if not answer.has_solution:
        return []
    out = check_allocation(inst.problem(), answer.allocation)
    if answer.placement is not None:
        out += check_placement(inst.cluster, answer.allocation, answer.placement)
    return out


def size(inst: SiaInstance) -> tuple[int, int]:
    """(GPUs, jobs)."""
    return int(inst.cluster.num_gpus), len(inst.jobs)


def explain_instance(inst: SiaInstance) -> str:
    """For the command line: name what makes the instance infeasible (or say it is feasible)."""
    from ..errors import InfeasibleError
    from ..infeasibility import explain_infeasibility

    prob = inst.problem()
    lines = []
    try:
        prob.check_forced()
    except InfeasibleError as e:
        lines.append(str(e))
    lines.append(str(explain_infeasibility(prob.formulation().model)))
    return "\n".join(lines)


def generate(gpus: int, seed: int, **kw: Any) -> SiaInstance:
    return generate_instance(gpus, seed, **kw)


def bench_specs() -> tuple[Any, ...]:
    """Sia's benchmark spec (:data:`schedopt.sia.bench.SIA_SPEC`: the goodput matrix, the placement and the
    published code's cvxpy routes timed apart), found by the harness through ``PROBLEM_IO.bench_specs``."""
    from .bench import SIA_SPEC

    return (SIA_SPEC,)
