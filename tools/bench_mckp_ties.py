"""The default backend against HiGHS on Sia instances with ties (issue 26): generated instances (sizes, seeds) and
simulation snapshots (``tools/sia_snapshots.py``), each in the exact mode and the preset mode
(``sia.published_settings()``: coefficients rounded to 0.01, many tied optima), with and without ``lambda_a``.

    python tools/bench_mckp_ties.py --sizes 64,256,1024,2048 --seeds 0,1,2 \\
        [--snapshots /tmp/sia2048_snapshots.pkl] [--backends mckp,highs] [--time-limit 120] \\
        [--out benchmarks/mckp_ties.csv]

Each row: instance, mode, backend, wall and CPU seconds of ``schedopt.solve`` (medians of ``--repeat`` runs, each
on a fresh copy of the model, backends warmed up first), termination and objective; the summary prints, per
(family, mode), the worst and median ratio of mckp's time to the best backend's, wall and CPU. Run from the repository root (``PYTHONPATH=$PWD``).
"""

from __future__ import annotations

import argparse
import csv
import pickle
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import scipy

import schedopt
from schedopt.backends import get_backend
from schedopt.sia import generate_instance, published_settings

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sia_snapshots import snapshot_problem

MODES = (("exact", False), ("preset", False), ("preset", True))


def instances(sizes: list[int], seeds: list[int], snapshots: str | None) -> list[tuple[str, str, str, Any]]:
    """(family, name, mode, model builder) for every instance and mode."""
    out: list[tuple[str, str, str, Any]] = []
    for g in sizes:
        for s in seeds:
            for mode, la in MODES:
                label = mode + ("+lambda_a" if la else "")

                def build(g: int = g, s: int = s, mode: str = mode, la: bool = la) -> schedopt.LinearModel:
                    st = published_settings(change_penalty=0.01 if la else 0.0) if mode == "preset" else None
                    return generate_instance(g, s, settings=st).problem().build()

                out.append((f"generated-{g}", f"gen{g}-s{s}", label, build))
    if snapshots:
        doc = pickle.loads(Path(snapshots).read_bytes())
        for snap in doc["snaps"]:
            for mode, la in MODES:
                label = mode + ("+lambda_a" if la else "")

                def build2(snap: dict = snap, mode: str = mode, la: bool = la) -> schedopt.LinearModel:
                    return snapshot_problem(snap, doc["cluster"], mode, la).build()

                out.append((f"snapshot-{doc['cluster']}", f"{doc['workload']}@r{snap['round']}", label, build2))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="64,256,1024,2048")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--snapshots", default=None)
    ap.add_argument("--backends", default="mckp,highs")
    ap.add_argument("--gap", type=float, default=1e-4)
    ap.add_argument("--time-limit", type=float, default=120.0)
    ap.add_argument("--out", default=None)
    ap.add_argument("--label", default="")
    ap.add_argument("--repeat", type=int, default=3, help="runs per (instance, backend): medians")
    a = ap.parse_args()
    backends = a.backends.split(",")
    for b in backends:
        get_backend(b).warm_up()
    sizes = [int(x) for x in a.sizes.split(",") if x]
    seeds = [int(x) for x in a.seeds.split(",")]
    rows = []
    env = f"python {platform.python_version()}, numpy {np.__version__}, scipy {scipy.__version__}"
    for fam, name, mode, build in instances(sizes, seeds, a.snapshots):
        m = build()
        for b in backends:
            walls, cpus = [], []
            for _ in range(a.repeat):
                t0, c0 = time.perf_counter(), time.process_time()
                r = schedopt.solve(m.copy(), b, mip_rel_gap=a.gap, time_limit=a.time_limit)
                walls.append(time.perf_counter() - t0)
                cpus.append(time.process_time() - c0)
            wall, cpu = statistics.median(walls), statistics.median(cpus)
            row = {"label": a.label, "family": fam, "instance": name, "mode": mode, "backend": b,
                   "columns": m.num_cols, "wall_s": round(wall, 4), "cpu_s": round(cpu, 4),
                   "termination": r.termination.reason.name, "objective": r.objective_or_nan,
                   "route": str(r.stats.get("fallback", "")), "env": env}
            rows.append(row)
            print(f"{fam:22s} {name:24s} {mode:16s} {b:6s} {wall:8.3f} s wall {cpu:8.3f} s CPU  "
                  f"{row['termination']:10s} {row['objective']:.6f} {row['route']}", flush=True)
    if a.out:
        path = Path(a.out)
        new = not path.exists()
        with path.open("a", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            if new:
                w.writeheader()
            w.writerows(rows)
    # summary: mckp / best backend per instance
    for key in ("wall_s", "cpu_s"):
        by: dict[tuple[str, str, str], dict[str, float]] = {}
        for r in rows:
            by.setdefault((r["family"], r["mode"], r["instance"]), {})[r["backend"]] = r[key]
        if "mckp" in backends and len(backends) > 1:
            groups: dict[tuple[str, str], list[tuple[float, float, float]]] = {}
            for (fam, mode, _), t in by.items():
                groups.setdefault((fam, mode), []).append((t["mckp"] / min(t.values()), t["mckp"], min(t.values())))
            print(f"\nmckp / best backend ({key}, medians of {a.repeat} runs), per family and mode: worst (times), "
                  "median ratio")
            for (fam, mode), rs in sorted(groups.items()):
                w = max(rs)
                print(f"{fam:22s} {mode:16s} worst {w[0]:6.2f} ({w[1]:.3f} vs {w[2]:.3f} s)  "
                      f"median {statistics.median(x[0] for x in rs):6.2f}  ({len(rs)})")


if __name__ == "__main__":
    main()
