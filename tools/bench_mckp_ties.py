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
import json
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


def parse_backends(text: str) -> dict[str, tuple[str, dict[str, Any]]]:
    """``"mckp,highs,old=mckp:{...}"`` -> {name: (backend, options)} (entries split at ';' when one is in the text)."""
    out: dict[str, tuple[str, dict[str, Any]]] = {}
    for item in (text.split(";") if ";" in text else text.split(",")):
        item = item.strip()
        if not item:
            continue
        if "=" in item:
            name, rest = item.split("=", 1)
            backend, _, opts = rest.partition(":")
            out[name] = (backend, json.loads(opts) if opts else {})
        else:
            out[item] = (item, {})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="64,256,1024,2048")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--snapshots", default=None)
    ap.add_argument("--backends", default="mckp,highs",
                    help="comma-separated backends; a variant as NAME=BACKEND:JSON-OPTIONS, e.g. "
                         "'old=mckp:{\"dual_method\": \"kelley\"}' (split at ';' when given)")
    ap.add_argument("--gap", type=float, default=1e-4)
    ap.add_argument("--time-limit", type=float, default=120.0)
    ap.add_argument("--out", default=None)
    ap.add_argument("--label", default="")
    ap.add_argument("--repeat", type=int, default=3, help="runs per (instance, backend): medians")
    ap.add_argument("--table", default=None, metavar="CSV",
                    help="print the README table from this CSV (labels --before and --after) and exit")
    ap.add_argument("--before", default="before")
    ap.add_argument("--after", default="after")
    a = ap.parse_args()
    if a.table:
        with open(a.table, newline="") as f:
            table_rows = list(csv.DictReader(f))
        print(markdown(table_rows, a.before, a.after))
        return
    specs = parse_backends(a.backends)
    backends = list(specs)
    for b, _ in specs.values():
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
                r = schedopt.solve(m.copy(), specs[b][0], mip_rel_gap=a.gap, time_limit=a.time_limit, **specs[b][1])
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
    print()
    print(summary(rows, {n: b for n, (b, _) in specs.items()}, a.repeat))


def summary(rows: list[dict[str, Any]], kinds: dict[str, str], repeat: int | str) -> str:
    """Per (label, mckp variant, family, mode): the worst and median ratio of its time to the best other backend's
    (wall and CPU), and how many of its answers were not OPTIMAL."""
    lines = []
    others = [n for n, b in kinds.items() if b != "mckp"]
    for key in ("cpu_s", "wall_s"):
        by: dict[tuple[str, str, str, str], dict[str, float]] = {}
        for r in rows:
            by.setdefault((r["label"], r["family"], r["mode"], r["instance"]), {})[r["backend"]] = float(r[key])
        groups: dict[tuple[str, str, str, str], list[tuple[float, float, float]]] = {}
        for (label, fam, mode, _), t in by.items():
            best = min((t[o] for o in others if o in t), default=float("nan"))
            for name, b in kinds.items():
                if b == "mckp" and name in t:
                    groups.setdefault((label, name, fam, mode), []).append((t[name] / best, t[name], best))
        lines.append(f"mckp / best other backend ({key}, medians of {repeat} runs): worst (times), median ratio")
        for (label, name, fam, mode), rs in sorted(groups.items()):
            w = max(rs)
            lines.append(f"{label:8s} {name:10s} {fam:22s} {mode:16s} worst {w[0]:6.2f} ({w[1]:.3f} vs {w[2]:.3f} s)  "
                         f"median {statistics.median(x[0] for x in rs):6.2f}  ({len(rs)})")
    return "\n".join(lines)


def markdown(rows: list[dict[str, Any]], before: str, after: str) -> str:
    """The README table: per family and mode, mckp's median CPU before and after, the best other backend's (per
    instance, by CPU), and the worst ratio of mckp's time to that backend's (CPU and wall) before and after, with
    mckp's answers that were not OPTIMAL."""
    by: dict[tuple[str, str, str, str], dict[str, dict[str, Any]]] = {}
    for r in rows:
        by.setdefault((r["family"], r["mode"], r["instance"], r["label"]), {})[r["backend"]] = r
    fams = sorted({(r["family"], r["mode"]) for r in rows},
                  key=lambda k: (k[0].startswith("snapshot"), int(k[0].split("-")[-1]) if k[0][-1].isdigit() else 0,
                                 ["exact", "preset", "preset+lambda_a"].index(k[1])))
    out = ["| family | mode | instances | mckp CPU before | mckp CPU after | best other CPU | worst mckp / best other "
           "before (CPU; wall) | worst after (CPU; wall) | not optimal after |", "|---|---|---|---|---|---|---|---|---|"]
    for fam, mode in fams:
        cells: dict[str, list[tuple[float, float, float, float, str]]] = {before: [], after: []}
        for (f, m, _i, label), t in by.items():
            if (f, m) != (fam, mode) or label not in cells or "mckp" not in t or all(n.startswith("mckp") for n in t):
                continue
            mk = t["mckp"]
            hi = min((r for n, r in t.items() if not n.startswith("mckp")), key=lambda r: float(r["cpu_s"]))
            cells[label].append((float(mk["cpu_s"]), float(hi["cpu_s"]), float(mk["wall_s"]), float(hi["wall_s"]),
                                 str(mk["termination"])))
        b, a = cells[before], cells[after]
        if not a:
            continue

        def ms(x: float) -> str:
            return f"{x * 1e3:.0f} ms" if x < 10 else f"{x:.1f} s"

        def worst(c: list[tuple[float, float, float, float, str]]) -> str:
            if not c:
                return "-"
            return f"{max(x[0] / x[1] for x in c):.2f}x; {max(x[2] / x[3] for x in c):.2f}x"

        med = statistics.median
        out.append(f"| {fam} | {mode} | {len(a)} | {ms(med(x[0] for x in b)) if b else '-'} | "
                   f"{ms(med(x[0] for x in a))} | {ms(med(x[1] for x in a))} | {worst(b)} | {worst(a)} | "
                   f"{sum(x[4] != 'OPTIMAL' for x in a)} |")
    return "\n".join(out)


if __name__ == "__main__":
    main()
