"""Replay random allocate / release steps through the published HiveD algorithm and through schedopt.hived, and
compare the bind / wait verdicts.

    # once, outside the repository: Go 1.19 (apt-get install golang-go) and microsoft/hivedscheduler in a GOPATH
    mkdir -p $GOPATH/src/github.com/microsoft && git clone https://github.com/microsoft/hivedscheduler \\
        $GOPATH/src/github.com/microsoft/hivedscheduler
    cp tools/hived_compare/zz_compare_driver_test.go $GOPATH/src/github.com/microsoft/hivedscheduler/pkg/algorithm/
    (cd $GOPATH/src/github.com/microsoft/hivedscheduler && GO111MODULE=off go test -c -o /tmp/algo.test ./pkg/algorithm/)
    # then
    python tools/hived_compare/compare.py /tmp/algo.test --cases 100 --steps 14 --seed 1 [--bad] \\
        --pkg-dir $GOPATH/src/github.com/microsoft/hivedscheduler/pkg/algorithm

The driver (``zz_compare_driver_test.go``, our code) calls ``NewHivedAlgorithm``, marks every node healthy, then
for each step ``Schedule`` (Preempting phase, all nodes suggested), deletes the victims' pods when it asks for a
preemption and schedules again, and binds every pod of the group with ``AddAllocatedPod``; a release deletes the
group's pods. Configurations: 1-2 chains of racks / nodes / (sockets) / GPUs with explicit node names, VCs built
valid, some cells pinned; steps: guaranteed (priorities 0, 1, 5, sometimes lazy, sometimes naming a pinned cell) and
opportunistic requests of 1..node GPUs x 1..3 pods, and releases. Prints the agreement and every disagreement.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from schedopt.hived import (
    BuddyAllocator,
    CellType,
    PhysicalCellSpec,
    PhysicalCluster,
    Request,
    VirtualCluster,
    check_vc_assignment,
)
from schedopt.hived.config import dump_hived_config


def random_config(rng: np.random.Generator) -> tuple[PhysicalCluster, list[VirtualCluster]]:
    types: list[CellType] = []
    specs: list[PhysicalCellSpec] = []
    pins = 0
    for c in range(int(rng.integers(1, 3))):
        t = f"T{c}"
        socket = bool(rng.integers(0, 2))
        per = int(rng.choice([2, 4])) if socket else int(rng.choice([2, 4, 8]))
        if socket:
            types += [CellType(f"{t}-SOCKET", t, per), CellType(f"{t}-NODE", f"{t}-SOCKET", 2, is_node_level=True)]
        else:
            types.append(CellType(f"{t}-NODE", t, per, is_node_level=True))
        n_nodes = int(rng.integers(2, 5))
        types.append(CellType(f"{t}-RACK", f"{t}-NODE", n_nodes))
        for r in range(int(rng.integers(1, 3))):
            kids = []
            for n in range(n_nodes):
                pid = None
                if rng.random() < 0.15:
                    pid, pins = f"PIN{pins}", pins + 1
                kids.append(PhysicalCellSpec(address=f"{t.lower()}-r{r}-n{n}", pinned_id=pid))
            specs.append(PhysicalCellSpec(f"{t}-RACK", f"{t.lower()}-rack{r}", None, kids))
    cl = PhysicalCluster(types, specs)
    n_vcs = int(rng.integers(1, 4))
    cells: list[dict[Any, int]] = [{} for _ in range(n_vcs)]
    pinned: list[list[str]] = [[] for _ in range(n_vcs)]
    for pid in sorted(cl.pinned):
        pinned[int(rng.integers(0, n_vcs))].append(pid)
    for cname, ch in cl.chains.items():
        left = cl.num_cells(cname, ch.levels)
        for k in range(ch.levels, 0, -1):
            if k < ch.levels:
                left *= ch.child_count[k + 1]
            take = int(rng.binomial(left, 0.5 if k > 1 else 0.7))
            for v, part in enumerate(rng.multinomial(take, np.ones(n_vcs) / n_vcs)):
                if part:
                    cells[v][(cname, k)] = int(part)
            left -= take
    vcs = [VirtualCluster(f"vc{v}", cells[v], pinned[v]) for v in range(n_vcs)]
    if not check_vc_assignment(cl, vcs, "counting").valid:  # pinned cells took room: draw again
        return random_config(rng)
    return cl, vcs


def random_ops(rng: np.random.Generator, cl: PhysicalCluster, vcs: list[VirtualCluster], steps: int) -> list[dict[str, Any]]:
    ops: list[dict[str, Any]] = []
    live: list[str] = []
    for i in range(steps):
        if live and rng.random() < 0.3:
            name = live.pop(int(rng.integers(0, len(live))))
            ops.append({"op": "release", "name": name})
            continue
        v = vcs[int(rng.integers(0, len(vcs)))]
        prio = int(rng.choice([-1, 0, 0, 1, 5]))
        pin = ""
        if prio >= 0 and v.pinned and rng.random() < 0.4:
            pin = str(rng.choice(list(v.pinned)))
            chain = cl.chain_names[int(cl.chain_index[cl.pinned[pin]])]
        else:
            mine = sorted({cl.resolve_cell(k, "k")[0] for k, n in v.cells.items() if n})
            if prio >= 0 and not mine:
                prio = -1
            chain = str(rng.choice(mine if prio >= 0 else cl.chain_names))
        ch = cl.chains[chain]
        g = int(rng.integers(1, ch.gpus[ch.node_level] + 1))
        name = f"j{i}"
        ops.append({"op": "allocate", "name": name, "vc": v.name, "leaf_type": ch.leaf_type, "chain": chain, "gpus": g,
                    "pods": int(rng.integers(1, 4)), "priority": prio, "pinned": pin, "lazy": bool(rng.random() < 0.3)})
        live.append(name)
    return ops


def run_schedopt(cl: PhysicalCluster, vcs: list[VirtualCluster], ops: list[dict[str, Any]],
                 bad_nodes: list[str] = (), packing: str = "best_fit",  # type: ignore[assignment]
                 buddy: str = "healthy_first") -> list[dict[str, Any]]:
    al = BuddyAllocator(cl, vcs, packing=packing, buddy=buddy)
    for b in bad_nodes:
        al.mark_bad(b)
    handles: dict[str, int] = {}
    names: dict[int, str] = {}
    out = []
    for op in ops:
        if op["op"] == "release":
            h = handles.pop(op["name"], None)
            if h is not None and h in al.jobs:
                al.release(h)
            continue
        a = al.allocate(Request(op["vc"], op["leaf_type"], op["gpus"], op["pods"], op["priority"], op["name"],
                                op["pinned"] or None, op["lazy"]))
        if a.ok:
            handles[op["name"]] = a.handle  # type: ignore[assignment]
            names[a.handle] = op["name"]  # type: ignore[index]
        out.append({"name": op["name"], "verdict": "bind" if a.ok else "wait", "reason": str(a.reason),
                    "preempted": sorted(names[h] for h in a.preempted),
                    "pods": [[p.node, list(p.gpus)] for p in a.pods]})
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("driver", help="the compiled Go test binary (go test -c) holding TestCompareDriver")
    ap.add_argument("--cases", type=int, default=60)
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--packing", default="best_fit", choices=["best_fit", "hived"], help="schedopt's packing in a VC")
    ap.add_argument("--buddy", default="healthy_first", choices=["healthy_first", "hived"],
                    help="schedopt's buddy free lists next to failed nodes")
    ap.add_argument("--show", type=int, nargs="*", default=[], help="print these configurations step by step")
    ap.add_argument("--bad", action="store_true", help="mark one random node bad in half of the configurations")
    ap.add_argument("--pkg-dir", default=None, help="hivedscheduler's pkg/algorithm directory (for its own tests' paths)")
    args = ap.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    tmp = Path(tempfile.mkdtemp(prefix="hived_cmp_"))
    cases, ours = [], []
    for i in range(args.cases):
        cl, vcs = random_config(rng)
        path = tmp / f"c{i}.yaml"
        dump_hived_config(cl, vcs, path)
        ops = random_ops(rng, cl, vcs, args.steps)
        names = sorted(cl.node_names)
        bad = [str(rng.choice(names))] if args.bad and rng.random() < 0.5 else []
        cases.append({"config": str(path), "bad_nodes": bad, "ops": ops})
        ours.append(run_schedopt(cl, vcs, ops, bad, args.packing, args.buddy))
    (tmp / "in.json").write_text(json.dumps(cases))
    env = dict(os.environ, HIVED_CMP_IN=str(tmp / "in.json"), HIVED_CMP_OUT=str(tmp / "out.json"))
    # the package's test init parses klog's flags, so the binary takes no -test.* flags: every test of the package
    # runs (from its directory when --pkg-dir is given); ours writes HIVED_CMP_OUT
    subprocess.run([args.driver], env=env, cwd=args.pkg_dir, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if not (tmp / "out.json").exists():
        raise SystemExit(f"the driver wrote no verdicts (inputs in {tmp})")
    theirs = json.loads((tmp / "out.json").read_text())
    total = agree = same_victims = 0
    kinds: dict[str, int] = {}
    first: dict[str, int] = {}  # the first disagreement of each configuration (later ones follow from it)
    for i, (o, t) in enumerate(zip(ours, theirs)):
        seen_first = False
        for a, b in zip(o, t):
            total += 1
            if a["verdict"] == b["verdict"]:
                agree += 1
                same_victims += sorted(a["preempted"]) == sorted(b["preempted"] or [])
                continue
            key = f"schedopt {a['verdict']} ({a['reason']}) / hived {b['verdict']} ({b['reason'][:60]})"
            kinds[key] = kinds.get(key, 0) + 1
            if not seen_first:
                first[key] = first.get(key, 0) + 1
                seen_first = True
            print(f"case {i} {a['name']}: {key}", file=sys.stderr)
        if len(o) != len(t):
            print(f"case {i}: {len(o)} vs {len(t)} steps (hived: {t[-1] if t else None})", file=sys.stderr)
    print(f"{agree}/{total} bind/wait verdicts agree ({args.cases} configurations, seed {args.seed}, "
          f"packing {args.packing}, buddy {args.buddy}{', bad nodes' if args.bad else ''}); "
          f"{same_victims} of the agreeing steps preempt the same jobs; inputs in {tmp}")
    for k, n in sorted(kinds.items(), key=lambda kv: -kv[1]):
        print(f"  {n:4d}  {k}")
    if first:
        print(f"first disagreement of each of the {sum(first.values())} configurations with one:")
        for k, n in sorted(first.items(), key=lambda kv: -kv[1]):
            print(f"  {n:4d}  {k}")
    for i in args.show:
        print(f"case {i}: bad nodes {cases[i]['bad_nodes']}\n{Path(cases[i]['config']).read_text()}")
        steps = iter(zip(ours[i], theirs[i]))
        for op in cases[i]["ops"]:
            if op["op"] == "release":
                print(f"  release {op['name']}")
                continue
            a, b = next(steps)
            print(f"  {op['name']} {op['vc']} {op['gpus']}x{op['pods']} prio {op['priority']} pin {op['pinned'] or '-'} "
                  f"lazy {op['lazy']}\n    schedopt {a['verdict']} {a['pods']} preempted {a['preempted']}\n"
                  f"    hived    {b['verdict']} {b['pods']} preempted {b['preempted']} {b['reason'][:80]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
