"""Whole-trace replays as it happened: CPU time and peak memory per policy (issue 42 item 2).

    nice -n 10 python tools/bench_replay.py --policy fifo --out benchmarks/replay_philly.csv

Replays the Philly trace shipped with the package (82,247 jobs; :func:`schedopt.traces.replay.replay`) on its
derived cluster (peak concurrent demand) under one policy per process, and appends a row to ``--out``: CPU seconds
(``time.process_time`` of the replay alone, and of the whole process), peak resident memory (``ru_maxrss``), the
rounds, the jobs kept and finished, and the report's JCT, queueing delay, utilization and fairness; the per-virtual-
cluster queueing delays go to ``<out stem>_<policy>_vc.csv``. CPU time, not wall: the machine is shared.
"""

from __future__ import annotations

import argparse
import csv
import json
import resource
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--policy", required=True)
    ap.add_argument("--trace", default="philly", help="'philly' (shipped) or a trace path")
    ap.add_argument("--out", default="benchmarks/replay_philly.csv")
    ap.add_argument("--log-every", type=int, default=5000, help="a progress line on stderr every N rounds")
    ap.add_argument("--records", default=None, metavar="PATH",
                    help="stream the run's record there (default: a temporary file, removed after the row is written)")
    ap.add_argument("--max-jobs", type=int, default=None, help="only the first N jobs (a quick check)")
    ap.add_argument("--days", default=None, metavar="A,B",
                    help="only the jobs submitted in days [A, B) after the trace's first submission, on the whole "
                         "trace's derived cluster (a window of the trace)")
    a = ap.parse_args(argv)
    from schedopt.traces import read_trace
    from schedopt.traces.named import shipped_trace
    from schedopt.traces.replay import replay, trace_cluster
    from schedopt.traces.trace import Trace

    t = shipped_trace("philly") if a.trace == "philly" else read_trace(a.trace)
    cluster = None
    if a.max_jobs:
        t = Trace(t.name, t.format, t.source, t.jobs[:a.max_jobs], t.skipped, t.day_offset_s, t.capacity)
    if a.days:
        lo, hi = (float(x) for x in a.days.split(","))
        t0 = t.start_s
        cluster = trace_cluster(t)[0]
        t = Trace(f"{t.name}[days {lo:g}-{hi:g}]", t.format, t.source,
                  tuple(j for j in t.jobs if t0 + lo * 86400 <= j.submit_s < t0 + hi * 86400), (), t.day_offset_s,
                  t.capacity)
    c0, w0 = time.process_time(), time.perf_counter()
    every = max(1, a.log_every)

    def observe(rounds: int, sim_t: float, done: int, total: int) -> None:
        if rounds % every == 0:
            print(f"progress rounds={rounds} sim_days={sim_t / 86400:.2f} finished={done}/{total} "
                  f"cpu_s={time.process_time() - c0:.1f} rss_mb={resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f}",
                  file=sys.stderr, flush=True)

    tmp = None
    if a.records is None:
        tmp = tempfile.TemporaryDirectory(prefix="bench_replay-")
    path = Path(a.records) if a.records else Path(tmp.name if tmp else ".") / "replay.jsonl"
    res = replay(t, a.policy, cluster=cluster, progress=False, observer=observe, records=path)
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # before the record is read back
    info = res.meta.details["as_is"]
    rep = info["report"]
    job_rounds = rounds = finished = 0
    with path.open() as f:  # one line at a time: the record is as long as the trace
        for line in f:
            if line.startswith('{"round"'):
                rounds += 1
                job_rounds += json.loads(line)["round"]["active"]
            elif line.startswith('{"job"'):
                finished += json.loads(line)["job"]["finish"] is not None
    if tmp is not None:
        tmp.cleanup()
    row = {"date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M"), "trace": t.name, "jobs": len(t.jobs),
           "kept": info["kept"], "policy": a.policy, "job_rounds": job_rounds, "gpus": res.meta.gpus, "cluster_rule": info["cluster_rule"],
           "replay_cpu_s": round(cpu, 2), "process_cpu_s": round(time.process_time(), 2), "wall_s": round(wall, 1),
           "peak_rss_mb": round(peak, 1), "rounds": rounds, "finished": finished,
           "avg_jct_h": round(rep["jct_s"]["mean"] / 3600, 3),"avg_queueing_delay_h": round(rep["queueing_delay_s"]["mean"] / 3600, 3),
           "p95_queueing_delay_h": round(rep["queueing_delay_s"]["p95"] / 3600, 3),
           "utilization": round(rep["utilization"], 4), "jain_vc_slowdown": round(rep["jain_vc_slowdown"], 4),
           "worst_slowdown": round(rep["worst_slowdown"], 1), "median_jct_h": round(rep["jct_s"]["median"] / 3600, 3)}
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    old: list[dict[str, str]] = []
    if out.exists():  # a file of fewer columns (an older version of this tool) gets the new ones, empty in old rows
        with out.open(newline="") as f:
            rd = csv.DictReader(f)
            if list(rd.fieldnames or []) != list(row):
                old = list(rd)
    with out.open("w" if old or not out.exists() else "a", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(row), restval="")
        if old or f.tell() == 0:
            w.writeheader()
            w.writerows({k: r.get(k, "") for k in row} for r in old)
        w.writerow(row)
    tag = a.policy.replace(":", "-") + (f"_days{a.days.replace(',', '-')}" if a.days else "")
    with out.with_name(f"{out.stem}_{tag}_vc.csv").open("w", newline="") as f:
        w2 = csv.writer(f)
        w2.writerow(["vc", "jobs", "mean_delay_h", "median_delay_h", "p95_delay_h", "mean_jct_h", "mean_slowdown"])
        for vc, d in rep["per_vc"].items():
            w2.writerow([vc, d["jobs"], round(d["queueing_delay_s"]["mean"] / 3600, 4),
                         round(d["queueing_delay_s"]["median"] / 3600, 4), round(d["queueing_delay_s"]["p95"] / 3600, 4),
                         round(d["jct_s"]["mean"] / 3600, 4), round(d["slowdown"]["mean"], 3)])
    print(json.dumps(row))
    return 0


if __name__ == "__main__":
    sys.exit(main())
