"""Mean JCT per application: the fitted (``sia``) against the measured (``sia-measured``) job model, and Sia's flat
30 s restart penalty against the published optimizer's per-application ones (``SiaPolicy(restart_cost_s=None)``).

Usage (repository root)::

    python tools/sim_measured.py [--workloads saturn/1] [--workers 2] [--out benchmarks/sim_measured.csv]

Each variant is one :func:`schedopt.sim.simulate_many` task (policy ``sia``, Sia's 64-GPU cluster, the bootstrap
estimator). Prints one row per (workload, variant, application) and the published simulator's numbers where known
(``PUBLISHED``: saturn/1 average 2,091 s and yolov3 jobs 14,000-14,600 s, issue #31, the published simulator run
outside the repository).
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import csv
import dataclasses
import sys
import time
from collections import defaultdict
from pathlib import Path

from schedopt import sim
from schedopt.sim.jobs import SIA_MEASURED

#: (label, job model, restart_cost_s of the sia policy)
VARIANTS = (
    ("fitted, S=30", "sia", 30.0),
    ("fitted, S per app", "sia", None),
    ("measured, S=30", "sia-measured", 30.0),
    ("measured, S per app", "sia-measured", None),
)
#: the ``sia-measured`` job model with deepspeech2's policy estimate the oracle (the zoo's fitted truth) instead of
#: the bootstrap refit: the experiment that names deepspeech2's gap to the published run (formulations/sim.md)
DS2_ORACLE = dataclasses.replace(SIA_MEASURED, name="sia-measured:oracle=deepspeech2",
                                 oracle_apps=frozenset({"deepspeech2"}))
VARIANTS += (("measured, S per app, deepspeech2 oracle estimate", DS2_ORACLE, None),)
PUBLISHED = {("saturn/1", "all"): 2091.0, ("saturn/1", "yolov3"): 14300.0}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workloads", default="saturn/1")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--variants", default=None, help="comma-separated indices into VARIANTS (default: all)")
    ap.add_argument("--out", default=None)
    ap.add_argument("--jobs-out", default=None, help="also write every job's JCT (workload, variant, job, app, jct)")
    a = ap.parse_args(argv)
    wls = a.workloads.split(",")
    vs = [VARIANTS[int(k)] for k in a.variants.split(",")] if a.variants else list(VARIANTS)
    tasks = [sim.SimTask("sia", w, job_model=jm, policy_params={"restart_cost_s": s}) for w in wls for _, jm, s in vs]
    t0 = time.time()
    with cf.ProcessPoolExecutor(max_workers=a.workers) as pool:  # per-task job models and policy parameters
        res = list(pool.map(sim.run_task, tasks))
    rows = []
    k = 0
    for w in wls:
        for label, jm, s in vs:
            r = res[k]
            k += 1
            by: dict[str, list[float]] = defaultdict(list)
            for j in r.jobs:
                if j.jct is not None:
                    by[j.application].append(j.jct)
                    by["all"].append(j.jct)
            for app in sorted(by):
                v = by[app]
                pub = PUBLISHED.get((w, app))
                jname = jm if isinstance(jm, str) else jm.name
                rows.append({"workload": w, "variant": label, "job_model": jname, "restart_cost_s": s, "application": app,
                             "jobs": len(v), "mean_jct_s": round(sum(v) / len(v), 1),
                             "published_s": pub if pub is not None else ""})
    if a.jobs_out:
        with Path(a.jobs_out).open("w", newline="") as f:
            jw = csv.writer(f)
            jw.writerow(["workload", "variant", "job", "application", "jct_s"])
            k = 0
            for wl in wls:
                for label, _, _ in vs:
                    for j in res[k].jobs:
                        jw.writerow([wl, label, j.id, j.application, "" if j.jct is None else round(j.jct, 1)])
                    k += 1
    w = csv.DictWriter(sys.stdout, fieldnames=list(rows[0]))
    w.writeheader()
    w.writerows(rows)
    print(f"# {len(tasks)} simulations in {time.time() - t0:.0f} s wall", file=sys.stderr)
    if a.out:
        with Path(a.out).open("w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
