"""The ``hived`` problem in the instance envelope: cluster + VCs (+ bad nodes, + an optional request sequence).

``data`` = ``{"config": <hivedscheduler physicalCluster/virtualClusters document>, "bad_nodes": [...],
"ops": [{"op": "allocate", "name", "vc", "chain", "gpus_per_pod", "pods", "priority", "pinned_cell",
"lazy_preemption"} | {"op": "release", "name"}]}``.

``PROBLEM_IO`` (a typed :class:`~schedopt.problem.ProblemIO`): ``solve(spec, SolveOptions) -> HivedAnswer`` runs the
validity check (``method`` ``"exact"``, the default, or ``"counting"``) and replays the ops through the allocator;
``build`` / ``decode`` give the exact mapping model as a :class:`~schedopt.problem.Formulation`; ``check`` re-checks
an answer without the model; ``explain`` says which chain / level / VC breaks.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field
from typing import Any

from ..errors import InputError
from ..instances import field as dfield
from ..problem import Answer, Formulation, ProblemIO, SolveOptions, Violation
from ..results import SolveResult, Termination, TerminationReason, Timings
from .allocator import Allocation, BuddyAllocator, Request
from .cells import PhysicalCluster, generate_cluster
from .check import METHODS, CheckReport, check_vc_assignment
from .config import dump_hived_config, load_hived_config
from .exact import MappingInverse, build_exact_model, check_mapping, decode_mapping
from .priority import priority_value
from .vc import VirtualCluster, generate_vcs

__all__ = ["PROBLEM_IO", "HivedAnswer", "HivedInstance", "Release", "build_instance", "check_answer", "decode_instance",
           "explain_instance", "from_data", "generate_instance", "instance_size", "solve", "solve_instance", "to_data"]


@dataclass(frozen=True)
class Release:
    """Release the job allocated earlier under ``name``."""

    name: str


@dataclass
class HivedInstance:
    cluster: PhysicalCluster
    vcs: list[VirtualCluster]
    ops: list[Request | Release] = field(default_factory=list)
    bad_nodes: list[str] = field(default_factory=list)


def to_data(inst: HivedInstance) -> dict[str, Any]:
    """The JSON ``data`` object of an instance (the inverse of :func:`from_data`)."""
    ops: list[dict[str, Any]] = []
    for op in inst.ops:
        if isinstance(op, Release):
            ops.append({"op": "release", "name": op.name})
        else:
            d = {"op": "allocate", "name": op.name, "vc": op.vc, "chain": op.chain,
                 "gpus_per_pod": op.gpus_per_pod, "pods": op.pods, "priority": op.priority}
            if op.pinned_cell is not None:
                d["pinned_cell"] = op.pinned_cell
            if op.lazy_preemption:
                d["lazy_preemption"] = True
            ops.append(d)
    return {"config": dump_hived_config(inst.cluster, inst.vcs), "bad_nodes": list(inst.bad_nodes), "ops": ops}


DATA_KEYS = ("config", "bad_nodes", "ops")
OP_KEYS = ("op", "name", "vc", "chain", "gpus_per_pod", "pods", "priority", "pinned_cell", "lazy_preemption")


def _no_unknown_keys(d: dict[str, Any], allowed: tuple[str, ...], path: str) -> None:
    for k in d:
        if k not in allowed:
            raise InputError(f"{path}.{k}", d[k], f"is no known key (expected one of {list(allowed)})")


def from_data(data: dict[str, Any]) -> HivedInstance:
    """The :class:`~schedopt.hived.HivedInstance` of a JSON ``data`` object (its config, bad nodes and operations)."""
    if not isinstance(data, dict):
        raise InputError("data", data, "must be an object")
    _no_unknown_keys(data, DATA_KEYS, "data")
    cfg = dfield(data, "config", "data", dict)
    try:
        cluster, vcs = load_hived_config(cfg)
    except InputError as exc:
        raise InputError(f"data.config.{exc.field}", exc.value, exc.message) from exc
    bad = dfield(data, "bad_nodes", "data", list, [])
    for i, b in enumerate(bad):
        if not isinstance(b, str) or b not in cluster.node_names:
            raise InputError(f"data.bad_nodes[{i}]", b, "names no node")
    ops: list[Request | Release] = []
    names: set[str] = set()
    for i, op in enumerate(dfield(data, "ops", "data", list, [])):
        path = f"data.ops[{i}]"
        if not isinstance(op, dict):
            raise InputError(path, op, "must be an object")
        _no_unknown_keys(op, OP_KEYS, path)
        kind = dfield(op, "op", path, str)
        name = dfield(op, "name", path, str)
        if kind == "release":
            if name not in names:
                raise InputError(f"{path}.name", name, "releases no earlier allocate")
            ops.append(Release(name))
        elif kind == "allocate":
            vc = dfield(op, "vc", path, str)
            if vc not in {v.name for v in vcs}:
                raise InputError(f"{path}.vc", vc, "names no VC")
            chain = dfield(op, "chain", path, str)
            if chain not in cluster.chains and not cluster.chains_with_leaf(chain):
                raise InputError(f"{path}.chain", chain, "names no chain and no leaf type")
            g = dfield(op, "gpus_per_pod", path, int)
            p = dfield(op, "pods", path, int, 1)
            if g < 1:
                raise InputError(f"{path}.gpus_per_pod", g, "must be positive")
            if p < 1:
                raise InputError(f"{path}.pods", p, "must be positive")
            pr = dfield(op, "priority", path, (str, int), "guaranteed")
            priority_value(pr, f"{path}.priority")
            pin = dfield(op, "pinned_cell", path, str, None) if op.get("pinned_cell") is not None else None
            if pin is not None and pin not in next(v for v in vcs if v.name == vc).pinned:
                raise InputError(f"{path}.pinned_cell", pin, f"is no pinned cell of VC {vc!r}")
            lazy = dfield(op, "lazy_preemption", path, bool, False)
            if name in names:
                raise InputError(f"{path}.name", name, "is used by an earlier allocate")
            names.add(name)
            ops.append(Request(vc, chain, g, p, pr, name, pin, lazy))
        else:
            raise InputError(f"{path}.op", kind, "must be 'allocate' or 'release'")
    return HivedInstance(cluster, vcs, ops, list(bad))


@dataclass(kw_only=True, eq=False)
class HivedAnswer(Answer):
    """The answer for a HiveD instance: the validity verdict (its termination is the answer's: OPTIMAL when the
    assignment is proven valid, INFEASIBLE when proven invalid) and the replay of the instance's ops."""

    check: CheckReport
    allocations: list[Allocation] = field(default_factory=list)

    @property
    def valid(self) -> bool | None:
        return self.check.valid

    def rows(self) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = list(self.check.rows())
        for a in self.allocations:
            rows.append({"job": a.request.name, "vc": a.request.vc, "ok": a.ok, "reason": str(a.reason),
                         "placement": "; ".join(f"{p.node}:{','.join(map(str, p.gpus))}" for p in a.pods)})
        return rows

    def to_dict(self) -> dict[str, Any]:
        d = super().to_dict()
        c = self.check
        d.update({"valid": c.valid, "chain": c.chain, "level": c.level, "vc": c.vc, "cause": c.cause or None,
                  "message": c.message, "solves": len(c.results), "mapping": {k: list(v) for k, v in c.mapping.items()},
                  "allocations": [{"job": a.request.name, "ok": a.ok, "reason": str(a.reason) or None,
                                   "handle": a.handle, "preempted": list(a.preempted),
                                   "lazy_preempted": list(a.lazy_preempted),
                                   "pods": [{"node": p.node, "gpus": list(p.gpus), "cell": p.cell} for p in a.pods]}
                                  for a in self.allocations]})
        return d


def replay(inst: HivedInstance) -> list[Allocation]:
    """Run the instance's ops through a :class:`BuddyAllocator` (bad nodes marked first)."""
    if not inst.ops:
        return []
    al = BuddyAllocator(inst.cluster, inst.vcs)
    for b in inst.bad_nodes:
        al.mark_bad(b)
    handles: dict[str, int] = {}
    out: list[Allocation] = []
    for op in inst.ops:
        if isinstance(op, Release):
            h = handles.pop(op.name, None)
            if h is not None and h in al.jobs:
                al.release(h)
            continue
        a = al.allocate(op)
        out.append(a)
        if a.ok:
            handles[op.name or ""] = a.handle  # type: ignore[assignment]
    return out


def solve(inst: HivedInstance, options: SolveOptions | None = None) -> HivedAnswer:
    """The validity check (``options.method``: ``"exact"``, the default, or ``"counting"``) and the ops' replay."""
    options = options or SolveOptions()
    method = options.method or "exact"
    if method not in METHODS:
        raise InputError("method", method, f"must be one of {list(METHODS)}")
    if method == "counting" and options.backend is not None:
        raise InputError("backend", options.backend, "the counting rule uses no solver backend (only 'exact' does)")
    rep = check_vc_assignment(inst.cluster, inst.vcs, method, options.backend or "highs", bad_nodes=inst.bad_nodes,
                              time_limit=options.time_limit)
    t0 = time.perf_counter()
    allocs = replay(inst)
    timings = Timings(build=rep.timings.build, solve=rep.timings.solve, decode=rep.timings.decode + time.perf_counter() - t0)
    return HivedAnswer(termination=rep.termination, backend=rep.backend, method=method, timings=timings,
                       result=rep.result, check=rep, allocations=allocs)


def build_instance(inst: HivedInstance) -> Formulation[MappingInverse]:
    """The exact mapping model of the whole instance (all chains, bad nodes removed)."""
    return build_exact_model(inst.cluster, inst.vcs, bad_nodes=inst.bad_nodes)


def decode_instance(inst: HivedInstance, form: Formulation[MappingInverse], result: SolveResult) -> HivedAnswer:
    """The answer of one solve of :func:`build_instance`'s model: valid with the verified mapping, or invalid
    (without the fault location, which :func:`solve` finds with further solves), or the solver's termination."""
    r = result.termination.reason
    mapping: dict[str, list[str]] = {}
    if r in (TerminationReason.OPTIMAL, TerminationReason.FEASIBLE):
        cells = decode_mapping(form, result, inst.cluster)
        problems = check_mapping(inst.cluster, inst.vcs, cells, bad_nodes=inst.bad_nodes)
        if problems:
            term = Termination(TerminationReason.ERROR, None, f"solver mapping failed verification: {problems[0]}")
        else:
            term = Termination(TerminationReason.OPTIMAL, None, "a mapping was found and verified without the model")
            mapping = {v: [inst.cluster.address[c] for c in cs] for v, cs in cells.items() if cs}
    elif r in (TerminationReason.INFEASIBLE, TerminationReason.INFEASIBLE_OR_UNBOUNDED):
        term = Termination(TerminationReason.INFEASIBLE, None, "no mapping of the VC cells onto disjoint physical cells")
    else:
        term = result.termination
    rep = CheckReport(termination=term, method="exact", backend=result.backend, mapping=mapping, results=[result],
                      result=result, message=term.detail, timings=result.timings)
    return HivedAnswer(termination=term, backend=result.backend, method="exact", timings=result.timings,
                       result=result, check=rep, allocations=replay(inst))


def check_answer(inst: HivedInstance, answer: Answer) -> list[Violation]:
    """Re-check an answer without any model: its mapping (disjoint cells, quotas, pinned cells, bad hardware) and
    its replay (pods and GPUs as requested, one node per pod, no GPU held by two running jobs)."""
    if not isinstance(answer, HivedAnswer):
        return [Violation("answer", f"is a {type(answer).__name__}, not a HivedAnswer")]
    out: list[Violation] = []
    cl = inst.cluster
    if answer.check.valid and answer.check.method == "exact":
        cells = {v: [cl.by_address[a] for a in addrs] for v, addrs in answer.check.mapping.items()}
        out += check_mapping(cl, inst.vcs, cells, bad_nodes=inst.bad_nodes)
    gpus_of_node = {name: {g for nc in cells for g in (cl.gpus_of(nc))} for name, cells in cl.node_names.items()}
    live: dict[int, set[tuple[str, int]]] = {}
    by_name: dict[str, int] = {}
    allocs = iter(answer.allocations)
    for i, op in enumerate(inst.ops):
        if isinstance(op, Release):
            h = by_name.pop(op.name, None)
            live.pop(h, None)  # type: ignore[arg-type]
            continue
        a = next(allocs, None)
        path = f"ops[{i}]"
        if a is None:
            out.append(Violation(path, "no allocation in the answer"))
            break
        for h in a.preempted:
            live.pop(h, None)
        if not a.ok:
            continue
        if len(a.pods) != op.pods:
            out.append(Violation(path, f"{len(a.pods)} pods placed, {op.pods} requested"))
        held: set[tuple[str, int]] = set()
        for p in a.pods:
            if len(p.gpus) != op.gpus_per_pod or len(set(p.gpus)) != len(p.gpus):
                out.append(Violation(f"{path}.pods", f"{p.gpus} is not {op.gpus_per_pod} distinct GPUs"))
            for g in p.gpus:
                if (p.node, g) not in gpus_of_node.get(p.node, set()):
                    out.append(Violation(f"{path}.pods", f"GPU {g} of node {p.node!r} does not exist"))
                held.add((p.node, g))
        for h, gs in live.items():
            if gs & held:
                out.append(Violation(path, f"shares GPUs {sorted(gs & held)[:3]} with running job {h}"))
        live[a.handle] = held  # type: ignore[index]
        by_name[op.name or ""] = a.handle  # type: ignore[assignment]
    return out


def instance_size(inst: HivedInstance) -> tuple[int, int]:
    """(GPUs, allocate ops)."""
    return inst.cluster.num_gpus, sum(1 for op in inst.ops if not isinstance(op, Release))


def solve_instance(inst: HivedInstance, backend: str | None = None,
                   time_limit: float | None = None) -> tuple[Any, list[dict], dict]:
    """Deprecated: use :func:`solve` (``PROBLEM_IO.solve``), which returns a :class:`HivedAnswer`.
    Returns ``((report, allocations), rows, summary)`` as before."""
    warnings.warn("hived.io.solve_instance is deprecated; use schedopt.hived.io.solve(spec, SolveOptions) -> HivedAnswer",
                  DeprecationWarning, stacklevel=2)
    ans = solve(inst, SolveOptions(backend=backend, time_limit=time_limit))
    rep = ans.check
    rows = ans.rows()
    for r in rows:
        if "cell" in r:
            c = inst.cluster.by_address[r["cell"]]
            r.update({"chain": inst.cluster.chain_names[int(inst.cluster.chain_index[c])], "level": int(inst.cluster.level[c])})
    res = rep.results[-1] if rep.results else None
    summary = {
        "termination": "valid" if rep.valid else ("invalid" if rep.valid is False else "undecided"),
        "valid": rep.valid, "chain": rep.chain, "level": rep.level, "vc": rep.vc, "cause": rep.cause,
        "message": rep.message, "solves": len(rep.results), "seconds": rep.seconds,
        "solver_termination": str(res.termination) if res is not None else "",
    }
    return (rep, ans.allocations), rows, summary


def explain_instance(inst: HivedInstance) -> str:
    """The VC assignment checked both ways (counting and exact), with what each chain has left per level."""
    c = check_vc_assignment(inst.cluster, inst.vcs, "counting", bad_nodes=inst.bad_nodes)
    e = check_vc_assignment(inst.cluster, inst.vcs, "exact", bad_nodes=inst.bad_nodes)
    lines = [f"counting: {c}", f"exact:    {e}"]
    for chain, left in c.left.items():
        ch = inst.cluster.chains[chain]
        lines.append(f"  chain {chain}: " + ", ".join(f"{ch.types[k]} left {left[k]}" for k in range(ch.levels, 0, -1)))
    return "\n".join(lines)


def generate_instance(gpus: int = 2048, seed: int = 0, n_vcs: int = 4, fill: float = 0.9, **kw: Any) -> HivedInstance:
    """A seeded instance: a generated cluster of ``gpus`` GPUs and ``n_vcs`` virtual clusters filling ``fill`` of it."""
    cluster = generate_cluster(gpus, **kw)
    return HivedInstance(cluster, generate_vcs(cluster, n_vcs, seed, fill))


#: HiveD's registration: file format, generator, builder, decoder and checker.
PROBLEM_IO = ProblemIO(name="hived", cls=HivedInstance, to_data=to_data, from_data=from_data, solve=solve,
                       explain=explain_instance, generate=generate_instance, build=build_instance,
                       decode=decode_instance, check=check_answer, size=instance_size, methods=("exact", "counting"),
                       backend_methods=("exact",))
