"""Before/after timing of the Sia whole path and of large mckp solves, two source trees side by side in one run.

    python tools/ab_sia_path.py OLD_TREE NEW_TREE [--rounds 5] [--sizes 2048,16384,65536]

Each round runs one fresh process per tree (alternating, so both see the same machine load) that generates the
instance (not timed), then times ``inst.problem()`` -> build -> ``schedopt.solve`` (mckp, gap 1e-4) -> allocation ->
``place`` at each size, in wall and CPU seconds. Prints medians per tree and the new/old ratio. A tree is a checkout
of this repository (for example ``git worktree add ../old <commit>``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

CHILD = r"""
import json, sys, time
import schedopt
from schedopt.sia import generate_instance, place
out = {}
for n in [int(s) for s in sys.argv[1].split(",")]:
    inst = generate_instance(n, seed=0)
    w0, c0 = time.perf_counter(), time.process_time()
    prob = inst.problem()
    m = prob.build()
    res = schedopt.solve(m, "mckp", mip_rel_gap=1e-4, time_limit=120)
    w1, c1 = time.perf_counter(), time.process_time()
    out[n] = {"wall": w1 - w0, "cpu": c1 - c0, "objective": res.objective, "status": str(res.termination.reason)}
    if n <= 4096:
        w2, c2 = time.perf_counter(), time.process_time()
        s = prob.solve("mckp", mip_rel_gap=1e-4, time_limit=120)
        place(inst.cluster, s.allocation, rigid=[j.id for j in inst.jobs if j.kind == "rigid"])
        out[n]["whole_wall"] = time.perf_counter() - w2
        out[n]["whole_cpu"] = time.process_time() - c2
print(json.dumps(out))
"""


def run(tree: str, sizes: str) -> dict[str, dict[str, float]]:
    env = dict(os.environ, PYTHONPATH=os.path.abspath(tree))
    p = subprocess.run([sys.executable, "-c", CHILD, sizes], env=env, capture_output=True, text=True, check=True,
                       cwd=os.path.abspath(tree))
    return json.loads(p.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--sizes", default="2048,16384,65536")
    a = ap.parse_args()
    got: dict[str, list[dict]] = {"old": [], "new": []}
    for _ in range(a.rounds):
        for name, tree in (("old", a.old), ("new", a.new)):
            got[name].append(run(tree, a.sizes))
    print(f"{'size':>6} {'measure':<11} {'old':>9} {'new':>9} {'new/old':>8}")
    for n in a.sizes.split(","):
        for key in ("whole_wall", "whole_cpu", "wall", "cpu"):
            if key not in got["old"][0][n]:
                continue
            o = statistics.median(r[n][key] for r in got["old"])
            w = statistics.median(r[n][key] for r in got["new"])
            print(f"{n:>6} {key:<11} {o * 1e3:8.1f}m {w * 1e3:8.1f}m {w / o:8.2f}")
        objs = {name: got[name][0][n]["objective"] for name in got}
        print(f"{n:>6} objective   {objs['old']:.6f} {objs['new']:.6f}")


if __name__ == "__main__":
    main()
