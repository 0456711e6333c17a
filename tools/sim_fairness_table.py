"""The fairness comparison of issue 29: average / p99 JCT, makespan, GPU-hours, worst rho, unfair fraction and
Jain's index of rho per (policy, workload) on Sia's 64-GPU cluster, with a rho CDF.

    python tools/sim_fairness_table.py --workloads saturn/1,saturn/2 --policies tiresias,gavel,gavel:ftf,sia \\
        --out runs/fairness

Each simulation's records go to ``<out>/<policy>__<workload>.jsonl`` the moment it finishes; a rerun skips the ones
already there (resumable). Then ``<out>/fairness.md`` (the table, one row per policy: means over the workloads, and
one row per run) and ``<out>/rho_cdf.png``. Options: --cluster (default sia-64), --estimator (default bootstrap),
--rule (isolation rule, default sia). Run from the repository root (``PYTHONPATH=$PWD`` for a worktree).
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import numpy as np

from schedopt.sim import cluster_preset, get_policy, load_workload, simulate
from schedopt.sim.fairness import finish_time_fairness
from schedopt.sim.metrics import SimResult, read_jsonl
from schedopt.sim.workloads import default_job_model


def _safe(s: str) -> str:
    return "".join(c if c.isalnum() or c in "._-" else "-" for c in s)


def run(policy: str, workload: str, cluster: str, estimator: str, out: Path) -> SimResult:
    path = out / f"{_safe(policy)}__{_safe(workload)}.jsonl"
    if path.exists():
        return read_jsonl(path.read_text())
    t = time.time()
    r = simulate(cluster_preset(cluster), load_workload(workload), get_policy(policy),
                 job_model=default_job_model(cluster), estimator=estimator)
    path.write_text(r.to_jsonl())
    print(f"{policy} on {workload}: {time.time() - t:.0f} s", flush=True)
    return r


def row(r: SimResult, rule: str) -> dict[str, float | str]:
    s = r.summary()
    f = finish_time_fairness(r, rule)
    return {"policy": str(r.meta["policy"]), "workload": str(r.meta["workload"]), "avg_h": s["avg_jct_s"] / 3600,
            "p99_h": s["p99_jct_s"] / 3600, "makespan_h": s["makespan_s"] / 3600, "gpu_h": s["gpu_hours"],
            "worst_rho": f.worst, "unfair": f.unfair_fraction, "jain": f.jain,
            "finished": f"{s['finished']}/{s['jobs']}"}


def table(rows: list[dict], title: str) -> str:
    head = ["policy", "workload", "avg JCT (h)", "p99 JCT (h)", "makespan (h)", "GPU-h", "worst rho",
            "unfair (rho > 1)", "Jain(rho)"]
    lines = [f"### {title}", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        lines.append("| " + " | ".join([r["policy"], r["workload"], f"{r['avg_h']:.3f}", f"{r['p99_h']:.2f}",
                                        f"{r['makespan_h']:.2f}", f"{r['gpu_h']:.0f}", f"{r['worst_rho']:.2f}",
                                        f"{100 * r['unfair']:.1f} %", f"{r['jain']:.3f}"]) + " |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workloads", default="saturn/1")
    ap.add_argument("--policies", default="tiresias,gavel,gavel:ftf,sia,pollux-unaware")
    ap.add_argument("--cluster", default="sia-64")
    ap.add_argument("--estimator", default="bootstrap", choices=("bootstrap", "oracle"))
    ap.add_argument("--rule", default="sia", choices=("sia", "gavel"))
    ap.add_argument("--out", default="runs/fairness")
    a = ap.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    results = [run(p, w, a.cluster, a.estimator, out) for w in a.workloads.split(",") for p in a.policies.split(",")]
    rows = [row(r, a.rule) for r in results]
    means = []
    for p in a.policies.split(","):
        mine = [r for r in rows if r["policy"] == p]
        if mine:
            m = {k: float(np.mean([r[k] for r in mine])) for k in ("avg_h", "p99_h", "makespan_h", "gpu_h", "unfair", "jain")}
            m["worst_rho"] = max(r["worst_rho"] for r in mine if not math.isnan(r["worst_rho"]))
            means.append({"policy": p, "workload": f"mean of {len(mine)}", **m})
    text = table(means, f"means over the workloads ({a.rule} isolation; worst rho: the largest)") + "\n\n" + \
        table(rows, "per run") + "\n"
    (out / "fairness.md").write_text(text)
    from schedopt.sim.plots import rho_cdf

    rho_cdf(results, out / "rho_cdf.png", rule=a.rule)
    print(text)


if __name__ == "__main__":
    main()
