"""Gandiva's mechanisms on the schedopt.sim engine: all on vs all off, and each mechanism off in turn.

    PYTHONPATH=$PWD python tools/sim_gandiva_ablation.py --seeds 0-2 -o benchmarks/sim_gandiva_ablation.csv

One synthetic trace per seed (schedopt.sim.gandiva.gandiva_trace: Poisson arrivals, Philly sizes and durations
scaled by --duration-scale, Gavel-derived job types, 20% elastic) on --cluster (default gandiva-100: 13 x 4 P100 +
12 x 4 P40; gandiva-100-homogeneous: 25 x 4 of one type); 60 s rounds (= Gandiva's time slice). Prints the mean
over seeds and writes every row to the CSV (GPU-hours count a packed GPU's time once, split between its jobs).
"""

from __future__ import annotations

import argparse
import csv
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any


def _seeds(text: str) -> list[int]:
    out: list[int] = []
    for part in text.split(","):
        a, _, b = part.partition("-")
        out += list(range(int(a), int(b or a) + 1))
    return out


def _one(args: tuple[int, dict[str, Any]]) -> list[dict[str, Any]]:
    from schedopt.sim.gandiva import ablation, gandiva_preset, gandiva_trace

    seed, p = args
    t0 = time.perf_counter()
    cl = gandiva_preset(p["cluster"])
    tr = gandiva_trace(p["jobs"], seed, cl, arrival_rate=1.0 / p["interarrival"], duration_scale=p["duration_scale"],
                       elastic_fraction=p["elastic"], high_priority_fraction=p["high_priority"],
                       max_duration=p["max_duration_h"] * 3600.0 if p["max_duration_h"] else None)
    rows = ablation(tr, cl, suspend_resume_seconds=p["suspend_resume"], migration_seconds=p["migration_cost"])
    for r in rows:
        r["seed"] = seed
        r["cluster"] = p["cluster"]
        r["wall_s"] = round(time.perf_counter() - t0, 1)
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="0-2")
    ap.add_argument("--cluster", default="gandiva-100", help="a preset of schedopt.sim.gandiva.CLUSTER_PRESETS")
    ap.add_argument("--jobs", type=int, default=400)
    ap.add_argument("--interarrival", type=float, default=150.0, help="mean seconds between arrivals")
    ap.add_argument("--duration-scale", type=float, default=0.05)
    ap.add_argument("--max-duration-h", type=float, default=None, help="clip job durations (hours)")
    ap.add_argument("--elastic", type=float, default=0.2)
    ap.add_argument("--high-priority", type=float, default=0.0)
    ap.add_argument("--suspend-resume", type=float, default=2.0)
    ap.add_argument("--migration-cost", type=float, default=10.0)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("-o", "--output", default="benchmarks/sim_gandiva_ablation.csv")
    a = ap.parse_args(argv)
    p = {"cluster": a.cluster, "jobs": a.jobs, "interarrival": a.interarrival, "duration_scale": a.duration_scale, "elastic": a.elastic,
         "high_priority": a.high_priority, "max_duration_h": a.max_duration_h, "suspend_resume": a.suspend_resume, "migration_cost": a.migration_cost}
    tasks = [(s, p) for s in _seeds(a.seeds)]
    if a.workers > 1:
        with ProcessPoolExecutor(a.workers) as ex:
            per_seed = list(ex.map(_one, tasks))
    else:
        per_seed = [_one(t) for t in tasks]
    rows = [r for rs in per_seed for r in rs]
    out = Path(a.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    keys = ["seed", "config", "avg_jct_s", "makespan_s", "jct_vs_off_pct", "makespan_vs_off_pct", "finished", "jobs",
            "migrations", "packs", "unpacks", "grows", "suspends", "resumes", "gpu_hours", "type_moves", "cluster",
            "wall_s"]
    with out.open("w", newline="") as f:
        w = csv.DictWriter(f, keys, extrasaction="ignore", lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    configs = list(dict.fromkeys(r["config"] for r in rows))
    print(f"trace: {a.jobs} jobs, mean inter-arrival {a.interarrival:g} s, duration scale {a.duration_scale:g}, "
          f"max duration {a.max_duration_h} h, seeds {a.seeds}; {a.cluster}; suspend-resume {a.suspend_resume:g} s, migration {a.migration_cost:g} s")
    print(f"{'config':<16}{'avg JCT h':>10}{'vs off':>9}{'makespan h':>12}{'vs off':>9}"
          f"{'migr':>7}{'type':>6}{'packs':>7}{'unpack':>7}{'grows':>7}{'resumes':>9}{'GPU-h':>8}")
    for c in configs:
        rs = [r for r in rows if r["config"] == c]
        m = {k: statistics.fmean(r[k] for r in rs) for k in keys[2:6] + keys[8:16]}
        print(f"{c:<16}{m['avg_jct_s'] / 3600:>10.2f}{m['jct_vs_off_pct']:>+8.1f}%{m['makespan_s'] / 3600:>12.2f}"
              f"{m['makespan_vs_off_pct']:>+8.1f}%{m['migrations']:>7.0f}{m['type_moves']:>6.0f}{m['packs']:>7.0f}"
              f"{m['unpacks']:>7.0f}{m['grows']:>7.0f}{m['resumes']:>9.0f}{m['gpu_hours']:>8.0f}")
    print(f"(mean over {len(per_seed)} seeds; per-seed rows in {out})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
