"""Synergy in closed loop: average JCT of queue order x allocation method at several loads on Synergy's default
128-GPU cluster (16 x 8 GPUs, 24 CPUs, 500 GB), and the simulation speed of a 1,000-job TUNE trace.

    PYTHONPATH=$PWD python tools/sim_synergy_loop.py jct --jobs 500 --loads 3 5 7 --queues fifo srtf las \
        --out benchmarks/sim_synergy_jct.csv
    PYTHONPATH=$PWD python tools/sim_synergy_loop.py speed --jobs 1000 --load 4 --out benchmarks/sim_synergy_speed.csv
    PYTHONPATH=$PWD python tools/sim_synergy_loop.py deploy --out benchmarks/sim_synergy_deploy.csv

Nothing here reads ../shared: the workloads are the published simulator's synthetic Philly-derived generator
(:func:`schedopt.sim.synergy.synergy_trace`) and the shipped replay traces (:func:`load_synergy_trace`), the
profiles the ones shipped in :mod:`schedopt.synergy`. ``deploy`` joins the published simulator's numbers from
``benchmarks/sim_synergy_deploy_published.csv`` (made by ``tools/synergy_published_replay.py``).
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
import time
from pathlib import Path

from schedopt.sim.synergy import (
    METHODS,
    QUEUES,
    REPLAY_TRACES,
    load_synergy_trace,
    simulate_synergy,
    synergy_servers,
    synergy_trace,
)


def _write(rows: list[dict], out: str | None) -> None:
    if not rows:
        return
    w = csv.DictWriter(sys.stdout, fieldnames=list(rows[0]))
    w.writeheader()
    w.writerows(rows)
    if out:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        with open(out, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]), lineterminator="\n")
            w.writeheader()
            w.writerows(rows)


def jct(args: argparse.Namespace) -> None:
    servers = synergy_servers(args.preset)
    rows = []
    for load in args.loads:
        split = dict(zip(("image", "language", "speech"), args.split)) if args.split else None
        trace = synergy_trace(args.jobs, args.seed, jobs_per_hour=load, class_split=split)
        for q in args.queues:
            base = None
            for m in args.methods:
                t0, c0 = time.perf_counter(), time.process_time()
                res = simulate_synergy(trace, servers, queue=q, method=m)
                wall, cpu = time.perf_counter() - t0, time.process_time() - c0
                s = res.summary()
                if m == "proportional":
                    base = s["avg_jct_s"]
                rows.append({
                    "preset": args.preset, "gpus": sum(v.gpus for v in servers), "jobs": args.jobs,
                    "seed": args.seed, "split": "/".join(f"{x:g}" for x in (args.split or (20, 70, 10))),
                    "jobs_per_hour": load, "queue": q, "method": m,
                    "finished": s["finished"], "avg_jct_h": round(s["avg_jct_s"] / 3600.0, 3),
                    "makespan_h": round(s["makespan_s"] / 3600.0, 3),
                    "speedup_vs_proportional": round(base / s["avg_jct_s"], 3) if base else "",
                    "rounds": len(res.rounds), "wall_s": round(wall, 1), "cpu_s": round(cpu, 1),
                })
                print(rows[-1], file=sys.stderr, flush=True)
    _write(rows, args.out)


def speed(args: argparse.Namespace) -> None:
    trace = synergy_trace(args.jobs, args.seed, jobs_per_hour=args.load)
    t0, c0 = time.perf_counter(), time.process_time()
    res = simulate_synergy(trace, synergy_servers(args.preset), queue=args.queue, method=args.method)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    s = res.summary()
    _write([{"preset": args.preset, "jobs": args.jobs, "seed": args.seed, "jobs_per_hour": args.load,
             "queue": args.queue, "method": args.method, "finished": s["finished"], "rounds": len(res.rounds),
             "max_active": max(r.active for r in res.rounds), "avg_jct_h": round(s["avg_jct_s"] / 3600.0, 3),
             "wall_s": round(wall, 1), "cpu_s": round(cpu, 1),
             "policy_cpu_s": round(sum(r.policy_cpu_seconds for r in res.rounds), 1),
             "load_avg_1min": round(os.getloadavg()[0], 2)}], args.out)


def deploy(args: argparse.Namespace) -> None:
    """The shipped replay traces, each on the cluster it was run on, next to the published simulator's numbers."""
    published = {}
    if args.published and Path(args.published).is_file():
        with open(args.published) as f:
            published = {(r["trace"], r["queue"], r["method"]): r for r in csv.DictReader(f)}
    rows = []
    for name in args.traces:
        trace, preset = load_synergy_trace(name)
        servers = synergy_servers(preset)
        for q in args.queues:
            base = None
            runs = [(m, True) for m in args.methods]
            if "tune" in args.methods:  # and the published TUNE (no promotion of spare CPUs and memory)
                runs.insert(runs.index(("tune", True)) + 1, ("tune", False))
            for m, promote in runs:
                t0, c0 = time.perf_counter(), time.process_time()
                res = simulate_synergy(trace, servers, queue=q, method=m, promote=promote)
                wall, cpu = time.perf_counter() - t0, time.process_time() - c0
                s = res.summary()
                if m == "proportional":
                    base = s
                pub = published.get((name, q, m), {})
                rows.append({
                    "trace": name, "preset": preset, "gpus": sum(v.gpus for v in servers), "jobs": s["jobs"],
                    "queue": q, "method": m, "promote": promote if m == "tune" else "", "finished": s["finished"],
                    "avg_jct_h": round(s["avg_jct_s"] / 3600.0, 3), "makespan_h": round(s["makespan_s"] / 3600.0, 3),
                    "jct_speedup_vs_proportional": round(base["avg_jct_s"] / s["avg_jct_s"], 3) if base else "",
                    "makespan_speedup_vs_proportional": round(base["makespan_s"] / s["makespan_s"], 3) if base else "",
                    "published_avg_jct_h": pub.get("avg_jct_h", ""), "published_makespan_h": pub.get("makespan_h", ""),
                    "rounds": len(res.rounds), "wall_s": round(wall, 1), "cpu_s": round(cpu, 1),
                })
                print(rows[-1], file=sys.stderr, flush=True)
    _write(rows, args.out)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("jct", help="average JCT per load x queue x method")
    a.add_argument("--jobs", type=int, default=500)
    a.add_argument("--loads", type=float, nargs="+", default=[3.0, 5.0, 7.0], help="jobs per hour")
    a.add_argument("--queues", nargs="+", default=["fifo", "srtf", "las"], choices=QUEUES)
    a.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    a.add_argument("--seed", type=int, default=0)
    a.add_argument("--preset", default="default")
    a.add_argument("--split", type=float, nargs=3, help="image language speech shares (default 20 70 10)")
    a.add_argument("--out")
    a.set_defaults(fn=jct)
    b = sub.add_parser("speed", help="wall and CPU time of one run")
    b.add_argument("--jobs", type=int, default=1000)
    b.add_argument("--load", type=float, default=4.0, help="jobs per hour")
    b.add_argument("--queue", default="fifo", choices=QUEUES)
    b.add_argument("--method", default="tune", choices=METHODS)
    b.add_argument("--seed", type=int, default=0)
    b.add_argument("--preset", default="default")
    b.add_argument("--out")
    b.set_defaults(fn=speed)
    d = sub.add_parser("deploy", help="the published replay traces (static, dynamic, test) on their clusters")
    d.add_argument("--traces", nargs="+", default=list(REPLAY_TRACES), choices=REPLAY_TRACES)
    d.add_argument("--queues", nargs="+", default=["fifo", "srtf", "las"], choices=QUEUES)
    d.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    d.add_argument("--published", default="benchmarks/sim_synergy_deploy_published.csv",
                   help="the published simulator's numbers (tools/synergy_published_replay.py)")
    d.add_argument("--out")
    d.set_defaults(fn=deploy)
    args = p.parse_args(argv)
    args.fn(args)


if __name__ == "__main__":
    main()
