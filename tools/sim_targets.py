"""Measure the simulator targets of issue 14, one command each; results to benchmarks/sim_*.csv.

    python tools/sim_targets.py pollux   # Pollux's setup: 16 x 4 T4, 60 s, workloads 1-8 at load 1.0
    python tools/sim_targets.py sia64    # Sia's 64-GPU heterogeneous cluster, Saturn 1-10 and Philly 1-8
    python tools/sim_targets.py speed    # whole-simulation wall time: saturn/1 (64 GPUs), newtrace/1 (64 GPUs),
                                         # saturn-32x/1 (2,048 GPUs), sia policy on mckp and on highs

Options: --policies a,b (default: every available policy of the target), --workers N (simulations at once,
default 1: timings), --workloads (override), --params '{"pollux": {"generations": 30}}' (policy parameters),
--out PATH (default benchmarks/sim_<target>.csv). Pollux / Gavel policies are used when their modules are present.
Run from the repository root (``PYTHONPATH=$PWD`` for a worktree).

Resumable sweeps (pollux, sia64): --resume appends one row to --out as each simulation finishes and skips the
(policy, workload, params) rows already there, so an interrupted sweep keeps what it did and a rerun finishes it:

    python tools/sim_targets.py sia64 --resume --workers 2    # the 18-workload sweep, resumable
"""

from __future__ import annotations

import argparse
import csv
import json
import platform
import sys
import time
from pathlib import Path

from schedopt import sim
from schedopt.errors import InputError
from schedopt.sim.policies import get_policy

ROOT = Path(__file__).resolve().parents[1]

# published means (seconds): petuum/adaptdl@osdi21-artifact simulator/results-jobload/<policy>-1.0/summary.json
POLLUX_PUBLISHED = {"pollux": 2751.1, "tiresias": 4038.2, "optimus": 5681.9}


def available(names: list[str]) -> list[str]:
    out = []
    for n in names:
        try:
            get_policy(n)
            out.append(n)
        except InputError as exc:  # a policy module not present on this branch
            print(f"skipping policy {n}: {exc}", file=sys.stderr)
    return out


def write(path: Path, rows: list[dict]) -> None:
    cols = list(rows[0])
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, cols, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    print(f"wrote {path}")


def env() -> str:
    import numpy
    import scipy

    return f"python {platform.python_version()}, numpy {numpy.__version__}, scipy {scipy.__version__}, {platform.machine()}"


def row_of(p: str, r: sim.SimResult, cluster: str, params: dict) -> dict:
    s = r.summary()
    # wall times on a shared machine: see policy_cpu_ms_* for the simulating process's CPU time
    return {"policy": p, "workload": r.meta.workload, "cluster": cluster,
            "params": json.dumps(params, sort_keys=True), "estimator": r.meta.estimator, "jobs": s["jobs"],
            "finished": s["finished"], "avg_jct_s": round(s["avg_jct_s"], 1),
            "p99_jct_s": round(s["p99_jct_s"], 1), "makespan_s": round(s["makespan_s"], 1),
            "gpu_hours": round(s["gpu_hours"], 2), "avg_restarts": round(s["avg_restarts"], 3),
            "policy_ms_median": round(s["policy_s_median"] * 1e3, 2),
            "policy_ms_p95": round(s["policy_s_p95"] * 1e3, 2),
            "policy_cpu_ms_median": round(s["policy_cpu_s_median"] * 1e3, 2),
            "policy_cpu_ms_p95": round(s["policy_cpu_s_p95"] * 1e3, 2)}


def sweep(policies: list[str], workloads: list[str], cluster: str, workers: int, params: dict) -> list[dict]:
    rows = []
    for p in policies:
        t0 = time.perf_counter()
        res = sim.simulate_many([p], workloads, cluster=cluster, workers=workers,
                                policy_params=params.get(p, {}), progress=True)
        wall = time.perf_counter() - t0
        rows += [row_of(p, r, cluster, params.get(p, {})) for r in res]
        print(f"{p}: {len(res)} simulations in {wall:.0f} s", file=sys.stderr)
    return rows


def sweep_resumable(policies: list[str], workloads: list[str], cluster: str, workers: int, params: dict,
                    path: Path) -> list[dict]:
    """Run the (policy, workload) simulations missing from ``path``, appending a row as each one finishes (CSV with
    a header; one process writes it); returns every row of ``path`` for these policies and workloads."""
    import concurrent.futures as cf

    from schedopt.sim.sweep import SimTask, run_task

    def key(p: str, w: str, prm: dict | str) -> tuple[str, str, str]:
        return p, w, prm if isinstance(prm, str) else json.dumps(prm, sort_keys=True)

    have: list[dict] = []
    if path.exists() and path.stat().st_size:
        with path.open(newline="") as f:
            have = list(csv.DictReader(f))
    done = {key(r["policy"], r["workload"], r.get("params", "{}")) for r in have}
    todo = [SimTask(policy=p, workload=w, cluster=cluster, policy_params=dict(params.get(p, {})))
            for w in workloads for p in policies if key(p, w, params.get(p, {})) not in done]
    print(f"{len(done)} rows already in {path}; {len(todo)} simulations to run", file=sys.stderr)
    header = list(have[0]) if have else None

    def append(row: dict) -> None:
        nonlocal header
        new = header is None
        if new:
            header = list(row)
        with path.open("a", newline="") as f:
            w = csv.DictWriter(f, header, extrasaction="ignore", lineterminator="\n")
            if new:
                w.writeheader()
            w.writerow(row)
        have.append({k: str(v) for k, v in row.items()})
        print(f"{row['policy']} {row['workload']}: avg JCT {row['avg_jct_s']} s -> {path}", file=sys.stderr, flush=True)

    path.parent.mkdir(parents=True, exist_ok=True)
    if workers <= 1:
        for t in todo:
            append(row_of(t.policy, run_task(t), cluster, dict(t.policy_params)))
    else:
        with cf.ProcessPoolExecutor(max_workers=workers) as pool:
            futs = {pool.submit(run_task, t): t for t in todo}
            for f in cf.as_completed(futs):
                t = futs[f]
                append(row_of(t.policy, f.result(), cluster, dict(t.policy_params)))
    want = {key(p, w, params.get(p, {})) for p in policies for w in workloads}
    out = [dict(r) for r in have if key(r["policy"], r["workload"], r.get("params", "{}")) in want]
    for r in out:
        r["avg_jct_s"] = float(r["avg_jct_s"])
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("target", choices=["pollux", "sia64", "speed"])
    ap.add_argument("--policies", default=None)
    ap.add_argument("--workloads", default=None)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--data", default="../shared/data", help="the public data (for the published numbers)")
    ap.add_argument("--params", default="{}", help='JSON: policy -> parameters, e.g. {"pollux": {"generations": 30}}')
    ap.add_argument("--out", default=None, help="CSV path (default benchmarks/sim_<target>.csv)")
    ap.add_argument("--resume", action="store_true", help="append a row per finished simulation, skip rows present")
    ap.add_argument("--backends", default="mckp,highs", help="speed: the sia policy's backends (default mckp,highs)")
    ap.add_argument("--estimator", default="bootstrap", choices=["bootstrap", "oracle"],
                    help="speed: the goodput estimate the policy sees (default bootstrap, the simulator's default)")
    a = ap.parse_args()
    out = ROOT / "benchmarks"
    params = json.loads(a.params)
    if not isinstance(params, dict) or not all(isinstance(v, dict) for v in params.values()):
        raise SystemExit("--params must be a JSON object of policy -> {parameter: value}")
    if a.target == "pollux":
        pols = available(a.policies.split(",") if a.policies else ["pollux", "tiresias", "fifo"])
        wls = a.workloads.split(",") if a.workloads else [f"pollux/{k}" for k in range(1, 9)]
        path = Path(a.out) if a.out else out / "sim_pollux.csv"
        rows = sweep_resumable(pols, wls, "pollux", a.workers, params, path) if a.resume else \
            sweep(pols, wls, "pollux", a.workers, params)
        pub = {}
        for p in ("pollux", "tiresias", "optimus"):
            f = Path(a.data) / "pollux" / "results-jobload" / f"{p}-1.0" / "summary.json"
            if f.exists():
                pub[p] = json.loads(f.read_text())["avgs"]
        for r in rows:
            r["published_avg_jct_s"] = round(pub.get(r["policy"], {}).get(f"workload-{r['workload'].split('/')[1]}", float("nan")), 1)
        if not a.resume:
            write(path, rows)
        for p in pols:
            xs = [r["avg_jct_s"] for r in rows if r["policy"] == p]
            if not xs:
                continue
            ref = POLLUX_PUBLISHED.get(p)
            print(f"{p}: mean of per-workload average JCT {sum(xs) / len(xs):.1f} s"
                  + (f" (published {ref} s, {100 * (sum(xs) / len(xs) / ref - 1):+.1f} %)" if ref else ""))
    elif a.target == "sia64":
        pols = available(a.policies.split(",") if a.policies else
                         ["sia", "pollux", "pollux-unaware", "gavel", "tiresias", "fifo"])
        wls = a.workloads.split(",") if a.workloads else [f"saturn/{k}" for k in range(1, 11)] + [f"philly/{k}" for k in range(1, 9)]
        path = Path(a.out) if a.out else out / "sim_sia64.csv"
        if a.resume:
            rows = sweep_resumable(pols, wls, "sia-64", a.workers, params, path)
        else:
            rows = sweep(pols, wls, "sia-64", a.workers, params)
            write(path, rows)
        for trace in ("saturn", "philly"):
            for p in pols:
                xs = [r["avg_jct_s"] for r in rows if r["policy"] == p and r["workload"].startswith(trace)]
                if xs:
                    print(f"{trace} {p}: mean avg JCT {sum(xs) / len(xs) / 3600:.3f} h over {len(xs)} workloads")
    else:
        runs = [("saturn/1", "sia-64"), ("newtrace/1", "sia-64"), ("saturn-32x/1", "sia-2048")]
        if a.workloads:
            runs = [tuple(x.split("@")) for x in a.workloads.split(",")]  # type: ignore[misc]
        rows = []
        for wl, cl in runs:
            for backend in a.backends.split(","):
                t0, c0 = time.perf_counter(), time.process_time()
                r = sim.simulate(sim.cluster_preset(cl), sim.load_workload(wl), get_policy("sia", backend=backend),
                                 job_model="sia", estimator=a.estimator, progress=True)
                wall, cpu = time.perf_counter() - t0, time.process_time() - c0
                s = r.summary()
                rows.append({"workload": wl, "cluster": cl, "gpus": r.meta.gpus, "jobs": s["jobs"], "backend": backend,
                             "estimator": a.estimator,
                             "wall_s": round(wall, 1), "cpu_s": round(cpu, 1), "rounds": s["rounds"],
                             "policy_cpu_ms_median": round(s["policy_cpu_s_median"] * 1e3, 2),
                             "policy_cpu_ms_p95": round(s["policy_cpu_s_p95"] * 1e3, 2),
                             "policy_ms_median": round(s["policy_s_median"] * 1e3, 2),
                             "policy_ms_p95": round(s["policy_s_p95"] * 1e3, 2),
                             "policy_ms_max": round(s["policy_s_max"] * 1e3, 1),
                             "policy_s_total": round(s["policy_s_total"], 1),
                             "avg_jct_s": round(s["avg_jct_s"], 1), "finished": s["finished"], "env": env()})
                print(rows[-1], flush=True)
                write(Path(a.out) if a.out else out / "sim_speed.csv", rows)


if __name__ == "__main__":
    main()
