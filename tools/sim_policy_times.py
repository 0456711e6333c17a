"""How long a whole simulation takes under each policy: wall and CPU seconds of a fresh process (issue 26's table).

    python tools/sim_policy_times.py --policies sia,pollux,gavel,tiresias,fifo --runs saturn/1@sia-64 \\
        [--runs saturn-32x/1@sia-2048:3600] [--label after] [--out benchmarks/sim_policy_times.csv] [--resume]

Each (policy, workload, cluster) runs in a fresh Python process, so the import and the first solve are counted, as
a user waiting for ``schedopt simulate`` pays them. CPU seconds are the child's user + system time (every thread);
wall beside them, with the 1-minute load average at the start, since a loaded machine stretches the wall clock. A
run spec ``WORKLOAD@CLUSTER:SECONDS`` caps the simulated time (``max_time``): the row says so and how many jobs
finished, so a capped run is never read as a whole one. Rows are appended one per finished run (``--resume`` skips
the (label, policy, workload, cluster, cap) already in the file). The job model is the cluster's default.

The row labelled ``published-sia-simulator`` is the published Sia simulator on the same workload, run once outside
the repository with its own code (siasosp23/artifacts@aaf7a0de ``sia-simulator``, ``python multi_simulator.py
<saturn workload-1> --policy=sia --policy_p_val=-0.5 --mip_lambda_a=0.01 --mip_lambda_n=1.1 --interval=60
--project_throughput --share_max_replicas``, the flags of its ``run_experiment.sh``; its MILP solver CBC replaced
by HiGHS through cvxpy, CBC not being installable here) under ``/usr/bin/time -v`` at ``nice 10`` on the shared
machine (load average 10-14): user 866.75 s + system 1.91 s, 57:50.7 wall, mean JCT 2,140.9 s (as in the run
behind ``benchmarks/sia_published_saturn1.csv``).
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIELDS = ["date", "label", "policy", "workload", "cluster", "max_time_s", "wall_s", "cpu_s", "rounds", "jobs",
          "finished", "avg_jct_s", "policy_cpu_ms_median", "policy_ms_median", "load_avg_1m"]

CHILD = """
import json, sys
from schedopt import sim
wl, cl, pol, cap, jm = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]
if not jm:  # the preset's default (imported only then: older versions, measured beside, lack it)
    from schedopt.sim.workloads import default_job_model
    jm = default_job_model(cl)
r = sim.simulate(sim.cluster_preset(cl), sim.load_workload(wl), sim.get_policy(pol),
                 job_model=jm, max_time=float(cap) if cap else None, progress=False)
s = r.summary()
print(json.dumps({"rounds": s["rounds"], "jobs": s["jobs"], "finished": s["finished"], "avg_jct_s": s["avg_jct_s"],
                  "policy_cpu_ms_median": 1e3 * s["policy_cpu_s_median"],
                  "policy_ms_median": 1e3 * s["policy_s_median"]}))
"""


def run_one(policy: str, workload: str, cluster: str, cap: str, job_model: str = "sia") -> dict[str, object]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", CHILD, workload, cluster, policy, cap,
                          "" if job_model == "default" else job_model], capture_output=True,
                         text=True, cwd=ROOT, check=False)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode != 0:
        raise SystemExit(f"{policy} on {workload}@{cluster} failed:\n{out.stderr[-2000:]}")
    res = json.loads(out.stdout.strip().splitlines()[-1])
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"date": dt.date.today().isoformat(), "policy": policy, "workload": workload, "cluster": cluster,
            "max_time_s": cap, "wall_s": round(wall, 1), "cpu_s": round(cpu, 1), "rounds": res["rounds"],
            "jobs": res["jobs"], "finished": res["finished"], "avg_jct_s": round(res["avg_jct_s"], 1),
            "policy_cpu_ms_median": round(res["policy_cpu_ms_median"], 2),
            "policy_ms_median": round(res["policy_ms_median"], 2), "load_avg_1m": round(load, 2)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--policies", default="sia,pollux,gavel,tiresias,fifo")
    ap.add_argument("--runs", action="append", default=None,
                    help="WORKLOAD@CLUSTER[:MAX_SECONDS], repeatable (default saturn/1@sia-64)")
    ap.add_argument("--label", default="")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "sim_policy_times.csv"))
    ap.add_argument("--resume", action="store_true")
    ap.add_argument("--job-model", default="sia",
                    help="the README table's rows use the fitted 'sia' model (measured before 'sia-measured' became "
                         "the Sia presets' default); 'default' takes the preset's")
    a = ap.parse_args()
    out = Path(a.out)
    done: set[tuple[str, ...]] = set()
    if a.resume and out.exists():
        with out.open(newline="") as f:
            done = {(r["label"], r["policy"], r["workload"], r["cluster"], r["max_time_s"]) for r in csv.DictReader(f)}
    for spec in a.runs or ["saturn/1@sia-64"]:
        wl, rest = spec.split("@", 1)
        cl, _, cap = rest.partition(":")
        for pol in a.policies.split(","):
            if (a.label, pol, wl, cl, cap) in done:
                continue
            row = {"label": a.label, **run_one(pol, wl, cl, cap, a.job_model)}
            new = not out.exists()
            with out.open("a", newline="") as f:
                w = csv.DictWriter(f, fieldnames=FIELDS)
                if new:
                    w.writeheader()
                w.writerow(row)
            print(row, flush=True)


if __name__ == "__main__":
    main()
