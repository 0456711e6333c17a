"""Per-application JCT against a run of the published Sia simulator (run outside the repository).

Usage (repository root)::

    python tools/sia_published_compare.py PUBLISHED_LOG OURS_JOBS_CSV

``PUBLISHED_LOG``: the stdout of ``siasosp23/artifacts`` ``sia-simulator/multi_simulator.py`` on one workload (its
last ``Completed jobs: {...}`` line is read: job -> JCT of every job finished so far, so a partial run compares the
jobs it finished); ``OURS_JOBS_CSV``: ``tools/sim_measured.py --jobs-out`` (workload, variant, job, application,
jct_s). Prints, per variant and application, the mean JCT of the jobs both runs finished and the relative gap.
"""

from __future__ import annotations

import ast
import csv
import sys
from collections import defaultdict


def published_jcts(log_path: str) -> dict[str, float]:
    last = None
    with open(log_path, errors="replace") as f:
        lines = f.read().splitlines()
    for k, ln in enumerate(lines):
        if ln.startswith("Completed jobs:") and k + 1 < len(lines):
            last = lines[k + 1]
    return {} if last is None else {str(a): float(b) for a, b in ast.literal_eval(last).items()}


def main(argv: list[str]) -> int:
    pub = published_jcts(argv[0])
    ours: dict[str, dict[str, tuple[str, float]]] = defaultdict(dict)
    with open(argv[1], newline="") as f:
        for r in csv.DictReader(f):
            if r["jct_s"]:
                ours[r["variant"]][r["job"]] = (r["application"], float(r["jct_s"]))
    print(f"published run: {len(pub)} jobs finished")
    print("variant,application,jobs,ours_mean_s,published_mean_s,gap_pct")
    for variant, jobs in ours.items():
        by: dict[str, list[tuple[float, float]]] = defaultdict(list)
        for j, (app, jct) in jobs.items():
            if j in pub:
                by[app].append((jct, pub[j]))
                by["all"].append((jct, pub[j]))
        for app in sorted(by):
            v = by[app]
            a = sum(x for x, _ in v) / len(v)
            b = sum(y for _, y in v) / len(v)
            print(f"{variant},{app},{len(v)},{a:.0f},{b:.0f},{100 * (a / b - 1):+.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
