"""The ``hived`` problem in the instance envelope: cluster + VCs (+ bad nodes, + an optional request sequence).

``data`` = ``{"config": <hivedscheduler physicalCluster/virtualClusters document>, "bad_nodes": [...],
"ops": [{"op": "allocate", "name", "vc", "chain", "gpus_per_pod", "pods", "priority"} | {"op": "release", "name"}]}``.
``solve`` runs the exact validity check (and replays the ops through the buddy allocator); ``explain`` says which
chain / level / VC breaks.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..errors import InputError
from ..instances import ProblemIO
from ..instances import field as dfield
from .allocator import BuddyAllocator, Request
from .cells import PhysicalCluster, generate_cluster
from .check import check_vc_assignment
from .config import dump_hived_config, load_hived_config
from .vc import VirtualCluster, generate_vcs

__all__ = ["HivedInstance", "Release", "explain_instance", "from_data", "generate_instance", "solve_instance", "to_data"]


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
    ops: list[dict[str, Any]] = []
    for op in inst.ops:
        if isinstance(op, Release):
            ops.append({"op": "release", "name": op.name})
        else:
            ops.append({"op": "allocate", "name": op.name, "vc": op.vc, "chain": op.chain,
                        "gpus_per_pod": op.gpus_per_pod, "pods": op.pods, "priority": op.priority})
    return {"config": dump_hived_config(inst.cluster, inst.vcs), "bad_nodes": list(inst.bad_nodes), "ops": ops}


def from_data(data: dict[str, Any]) -> HivedInstance:
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
            if isinstance(pr, str) and pr not in ("guaranteed", "opportunistic"):
                raise InputError(f"{path}.priority", pr, "must be 'guaranteed', 'opportunistic' or an integer")
            if name in names:
                raise InputError(f"{path}.name", name, "is used by an earlier allocate")
            names.add(name)
            ops.append(Request(vc, chain, g, p, pr, name))
        else:
            raise InputError(f"{path}.op", kind, "must be 'allocate' or 'release'")
    return HivedInstance(cluster, vcs, ops, list(bad))


def solve_instance(inst: HivedInstance, backend: str | None = None, time_limit: float | None = None) -> tuple[Any, list[dict], dict]:
    rep = check_vc_assignment(inst.cluster, inst.vcs, "exact", backend or "highs", bad_nodes=inst.bad_nodes,
                              time_limit=time_limit)
    rows: list[dict] = []
    for vc, cells in rep.mapping.items():
        for a in cells:
            c = inst.cluster.by_address[a]
            rows.append({"vc": vc, "chain": inst.cluster.chain_names[int(inst.cluster.chain_index[c])],
                         "level": int(inst.cluster.level[c]), "cell": a})
    allocs = []
    if inst.ops:
        al = BuddyAllocator(inst.cluster, inst.vcs)
        for b in inst.bad_nodes:
            al.mark_bad(b)
        handles: dict[str, int] = {}
        for op in inst.ops:
            if isinstance(op, Release):
                if op.name in handles:
                    al.release(handles.pop(op.name))
                continue
            a = al.allocate(op)
            allocs.append(a)
            if a.ok:
                handles[op.name or ""] = a.handle  # type: ignore[assignment]
            rows.append({"job": op.name, "vc": op.vc, "ok": a.ok, "reason": a.reason,
                         "placement": "; ".join(f"{p.node}:{','.join(map(str, p.gpus))}" for p in a.pods)})
    res = rep.results[-1] if rep.results else None
    summary = {
        "termination": "valid" if rep.valid else ("invalid" if rep.valid is False else "undecided"),
        "valid": rep.valid, "chain": rep.chain, "level": rep.level, "vc": rep.vc, "cause": rep.cause,
        "message": rep.message, "solves": len(rep.results), "seconds": rep.seconds,
        "solver_termination": str(res.termination) if res is not None else "",
    }
    return (rep, allocs), rows, summary


def explain_instance(inst: HivedInstance) -> str:
    c = check_vc_assignment(inst.cluster, inst.vcs, "counting", bad_nodes=inst.bad_nodes)
    e = check_vc_assignment(inst.cluster, inst.vcs, "exact", bad_nodes=inst.bad_nodes)
    lines = [f"counting: {c}", f"exact:    {e}"]
    for chain, left in c.left.items():
        ch = inst.cluster.chains[chain]
        lines.append(f"  chain {chain}: " + ", ".join(f"{ch.types[k]} left {left[k]}" for k in range(ch.levels, 0, -1)))
    return "\n".join(lines)


def generate_instance(gpus: int = 2048, seed: int = 0, n_vcs: int = 4, fill: float = 0.9, **kw: Any) -> HivedInstance:
    cluster = generate_cluster(gpus, **kw)
    return HivedInstance(cluster, generate_vcs(cluster, n_vcs, seed, fill))


PROBLEM_IO = ProblemIO(name="hived", cls=HivedInstance, to_data=to_data, from_data=from_data, solve=solve_instance,
                           explain=explain_instance, generate=generate_instance)
