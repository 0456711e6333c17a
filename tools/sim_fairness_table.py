"""The fairness comparison of issue 29: average / p99 JCT, makespan, GPU-hours, worst rho, unfair fraction and
Jain's index of rho per (policy, workload) on Sia's 64-GPU cluster, with a rho CDF.

    python tools/sim_fairness_table.py --workloads "saturn/1,saturn/2,saturn/3;philly/1" \\
        --policies sia,pollux-unaware,gavel,gavel:ftf,tiresias --out runs/fairness

Each simulation's records go to ``<out>/<policy>__<workload>.jsonl`` the moment it finishes; a rerun skips the ones
already there (resumable; ``--only-done`` tables what is there and runs nothing). Then ``<out>/fairness.md`` (one
row per workload group and policy: means over the group, worst rho the largest; Sia's isolation rule, and Gavel's
in the last column) and ``<out>/rho_cdf.png`` (Sia's rule). Options: --cluster (default sia-64), --estimator
(default bootstrap). Run from the repository root (``PYTHONPATH=$PWD`` for a worktree).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from schedopt.sim import cluster_preset, get_policy, load_workload, simulate
from schedopt.sim.fairness import finish_time_fairness
from schedopt.sim.metrics import SimResult, read_jsonl
from schedopt.sim.workloads import default_job_model


def _safe(s: str) -> str:
    return "".join(c if c.isalnum() or c in "._-" else "-" for c in s)


def run(policy: str, workload: str, cluster: str, estimator: str, out: Path, job_model: str | None = None) -> SimResult:
    path = out / f"{_safe(policy)}__{_safe(workload)}.jsonl"
    if path.exists():
        return read_jsonl(path.read_text())
    t = time.time()
    r = simulate(cluster_preset(cluster), load_workload(workload), get_policy(policy),
                 job_model=job_model or default_job_model(cluster), estimator=estimator)
    path.write_text(r.to_jsonl())
    print(f"{policy} on {workload}: {time.time() - t:.0f} s", flush=True)
    return r


def group_row(name: str, policy: str, rs: list[SimResult], expected: int) -> str:
    """One table row: means over the group's runs (worst rho: the largest), Sia's rule, then Gavel's."""
    S = [r.summary() for r in rs]
    G = [finish_time_fairness(r, "gavel") for r in rs]

    def m(k: str) -> float:
        return float(np.mean([s[k] for s in S]))

    n = f" ({len(rs)} of {expected})" if len(rs) < expected else ""
    return (f"| {name}{n} | {policy} | {m('avg_jct_s') / 3600:.3f} | {m('p99_jct_s') / 3600:.2f} | "
            f"{m('makespan_s') / 3600:.2f} | {m('gpu_hours'):.0f} | {max(s['worst_rho'] for s in S):.2f} | "
            f"{100 * m('unfair_fraction'):.1f} % | {m('jain_rho'):.3f} | "
            f"{max(g.worst for g in G):.2f} / {100 * float(np.mean([g.unfair_fraction for g in G])):.1f} % |")


HEAD = ("| workloads | policy | avg JCT (h) | p99 JCT (h) | makespan (h) | GPU-h | worst rho | unfair (rho > 1) | "
        "Jain(rho) | worst rho / unfair, Gavel's rule |\n|---|---|---|---|---|---|---|---|---|---|")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workloads", default="saturn/1",
                    help="comma-separated; groups separated by ';' get a row each (saturn/1,saturn/2;philly/1)")
    ap.add_argument("--policies", default="sia,pollux-unaware,gavel,gavel:ftf,tiresias")
    ap.add_argument("--cluster", default="sia-64")
    ap.add_argument("--estimator", default="bootstrap", choices=("bootstrap", "oracle"))
    ap.add_argument("--job-model", default="sia",
                    help="the README table's runs use the fitted 'sia' model (measured before 'sia-measured' became "
                         "the preset's default); 'default' takes the preset's")
    ap.add_argument("--only-done", action="store_true", help="table the runs already on disk, run nothing")
    ap.add_argument("--out", default="runs/fairness")
    a = ap.parse_args()
    jm = None if a.job_model == "default" else a.job_model
    out = Path(a.out) if a.job_model == "sia" else Path(a.out) / a.job_model  # records of other models apart
    out.mkdir(parents=True, exist_ok=True)
    groups = [[w for w in g.split(",") if w] for g in a.workloads.split(";") if g]
    pols = [p for p in a.policies.split(",") if p]
    runs: dict[tuple[str, str], SimResult] = {}
    for g in groups:
        for w in g:
            for p in pols:
                path = out / f"{_safe(p)}__{_safe(w)}.jsonl"
                if a.only_done and not path.exists():
                    continue
                runs[p, w] = run(p, w, a.cluster, a.estimator, out, jm)
    lines = [HEAD]
    for g in groups:
        name = g[0] if len(g) == 1 else f"{g[0]} .. {g[-1]}"
        for p in pols:
            rs = [runs[p, w] for w in g if (p, w) in runs]
            if rs:
                lines.append(group_row(name, p, rs, len(g)))
    text = "\n".join(lines) + "\n"
    (out / "fairness.md").write_text(text)
    from schedopt.sim.plots import rho_cdf

    rho_cdf(list(runs.values()), out / "rho_cdf.png")
    print(text)


if __name__ == "__main__":
    main()
