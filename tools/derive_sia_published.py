"""Derive ``schedopt/sim/data/sia_published.json``: a run of the published Sia simulator, job by job, for
:mod:`schedopt.sim.published` (``schedopt reproduce sia``'s per-application comparison; issue 43).

Inputs: ``benchmarks/sia_published_saturn1.csv`` (job, JCT of ``siasosp23/artifacts@aaf7a0de`` sia-simulator on
saturn/workload-1 with ``run_experiment.sh``'s Sia flags, MILP solver CBC -> HiGHS at the same 1e-4 gap, run outside
the repository on 2026-11-26; its first line says so) and the workload itself
(``../shared/data/sia-artifacts/sia-simulator/workloads/saturn/workload-1.csv``: each job's application). Nothing
in the package reads either at run time.

Usage (repository root): ``python tools/derive_sia_published.py [--check]`` (``--check``: compare with the file in
the package instead of writing it; exit 1 when they differ).
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUN = ROOT / "benchmarks" / "sia_published_saturn1.csv"
WORKLOAD = ROOT / ".." / "shared" / "data" / "sia-artifacts" / "sia-simulator" / "workloads" / "saturn" / "workload-1.csv"
OUT = ROOT / "schedopt" / "sim" / "data" / "sia_published.json"


def derive() -> dict[str, object]:
    lines = RUN.read_text().splitlines()
    source = lines[0].lstrip("# ").strip()
    jct = {r["job"]: float(r["jct_s"]) for r in csv.DictReader(lines[1:])}
    with open(WORKLOAD, newline="") as f:
        app = {r["name"]: r["application"] for r in csv.DictReader(f)}
    missing = sorted(set(jct) - set(app))
    if missing:
        raise SystemExit(f"jobs of the run not in the workload: {missing[:5]}")
    jobs = {j: [app[j], jct[j]] for j in sorted(jct, key=lambda j: (app[j], int(j.rsplit("-", 1)[1])))}
    return {"workloads": {"saturn/1": {"source": source, "workload_jobs": len(app), "jobs": jobs}}}


def _one_per_line(d: dict[str, object]) -> str:
    """JSON with one job per line (a readable diff)."""
    out = ['{"workloads": {']
    wls = d["workloads"]
    assert isinstance(wls, dict)
    for k, (name, w) in enumerate(wls.items()):
        head = {x: y for x, y in w.items() if x != "jobs"}
        out.append(f" {json.dumps(name)}: {json.dumps(head)[:-1]}, \"jobs\": {{")
        jobs = list(w["jobs"].items())
        out += [f"  {json.dumps(j)}: {json.dumps(v)}{',' if i + 1 < len(jobs) else ''}" for i, (j, v) in enumerate(jobs)]
        out.append(" }}" + ("," if k + 1 < len(wls) else ""))
    out.append("}}")
    return "\n".join(out) + "\n"


def main(argv: list[str]) -> int:
    text = _one_per_line(derive())
    if json.loads(text) != derive():
        raise SystemExit("the writer lost something")
    if "--check" in argv:
        same = OUT.is_file() and OUT.read_text() == text
        print("up to date" if same else f"{OUT} differs from what the inputs give")
        return 0 if same else 1
    OUT.write_text(text)
    print(f"wrote {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
