"""Issue 26's `sia` target, A/B: saturn/1 with the `sia` policy on Sia's 64 GPUs, one `simulate` call per fresh
process (the import not counted, the process's first fit and solve counted), CPU seconds beside wall, checkouts run
alternately so that both see the same machine load; the medians and each run's hash of every job record.

    python tools/bench_sia_target.py --checkout before=/path/to/old --checkout after=. --runs 5 \\
        --job-models sia,sia-measured --out benchmarks/sia_target.csv

Each checkout is put first on ``PYTHONPATH`` of its child processes, so the same tool measures any commit (a
``git worktree`` of it). The hash (of ``repr(result.jobs)``) says whether two checkouts made the same decisions.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

CHILD = r"""
import hashlib, json, subprocess, sys, time
from schedopt import sim
from schedopt.sim.policies import get_policy
jm = sys.argv[1]
cl, wl = sim.cluster_preset("sia-64"), sim.load_workload("saturn/1")
pol = get_policy("sia")
t0, c0 = time.perf_counter(), time.process_time()
res = sim.simulate(cl, wl, pol, job_model=jm, progress=False)
wall, cpu = time.perf_counter() - t0, time.process_time() - c0
jcts = [j.jct for j in res.jobs if getattr(j, "jct", None) is not None]
print(json.dumps({"wall_s": wall, "cpu_s": cpu, "rounds": len(res.rounds), "finished": len(jcts),
                  "avg_jct_s": sum(jcts) / max(len(jcts), 1),
                  "jobs_hash": hashlib.sha1(repr(res.jobs).encode()).hexdigest()[:12]}))
"""


def _commit(path: Path) -> str:
    try:
        return subprocess.run(["git", "-C", str(path), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "?"


def _load() -> float:
    try:
        return os.getloadavg()[0]
    except OSError:
        return float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkout", action="append", required=True, help="label=path (repeat; run in this order)")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--job-models", default="sia,sia-measured")
    ap.add_argument("--out", default=None, help="append one row per run to this CSV")
    a = ap.parse_args()
    checkouts = []
    for spec in a.checkout:
        label, _, path = spec.partition("=")
        if not label or not path:
            ap.error(f"--checkout {spec!r}: give label=path")
        p = Path(path).resolve()
        if not (p / "schedopt" / "__init__.py").is_file():
            ap.error(f"--checkout {spec!r}: {p} holds no schedopt package")
        checkouts.append((label, p, _commit(p)))
    models = [m for m in a.job_models.split(",") if m]
    env_note = f"python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} cores"
    rows: list[dict[str, Any]] = []
    for run in range(a.runs):
        for jm in models:
            for label, path, commit in checkouts:
                env = dict(os.environ, PYTHONPATH=str(path) + os.pathsep + os.environ.get("PYTHONPATH", ""))
                load = _load()
                out = subprocess.run([sys.executable, "-c", CHILD, jm], env=env, capture_output=True, text=True,
                                     cwd=str(path))
                if out.returncode != 0:
                    sys.exit(f"{label} ({path}) {jm}: the simulation failed:\n{out.stderr[-2000:]}")
                rec = json.loads(out.stdout.strip().splitlines()[-1])
                row = {"label": label, "commit": commit, "job_model": jm, "run": run, "load": round(load, 2),
                       **{k: (round(v, 3) if isinstance(v, float) else v) for k, v in rec.items()}, "env": env_note}
                rows.append(row)
                print(f"run {run} {jm:13s} {label:8s} {commit}: cpu {rec['cpu_s']:.2f} s, wall {rec['wall_s']:.2f} s,"
                      f" load {load:.1f}, avg JCT {rec['avg_jct_s']:.1f} s, jobs {rec['jobs_hash']}", flush=True)
    print("\nmedians (CPU s; wall s)")
    for jm in models:
        meds = {}
        for label, _, commit in checkouts:
            rs = [r for r in rows if r["label"] == label and r["job_model"] == jm]
            meds[label] = statistics.median(float(r["cpu_s"]) for r in rs)
            hashes = sorted({str(r["jobs_hash"]) for r in rs})
            cpus = ", ".join(f"{float(r['cpu_s']):.2f}" for r in rs)
            wall = statistics.median(float(r["wall_s"]) for r in rs)
            print(f"  {jm:13s} {label:8s} {commit}: {meds[label]:.2f}; {wall:.2f}  (cpu {cpus}; jobs {', '.join(hashes)})")
        if len(checkouts) == 2:
            (l0, _, _), (l1, _, _) = checkouts
            print(f"  {jm:13s} {l0} / {l1}: {meds[l0] / meds[l1]:.2f}x")
    if a.out:
        out_path = Path(a.out)
        new = not out_path.exists()
        with out_path.open("a", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=list(rows[0]))
            if new:
                w.writeheader()
            w.writerows(rows)


if __name__ == "__main__":
    main()
