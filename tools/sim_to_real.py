"""The gap from simulation to a real run (issue 39): one workload, policies sia and tiresias, run by the simulator
and by the scheduling loop on a real Slurm controller and a real Ray cluster started on this machine; per job and
on average |realized JCT / simulated JCT - 1|, with the named causes measured from the run's own records.

    python tools/sim_to_real.py --jobs 20 --time-scale 15 --engines ray -o benchmarks/sim_to_real.csv
    python tools/sim_to_real.py --jobs 20 --time-scale 5 --engines slurm --policies sia --append \
        -o benchmarks/sim_to_real.csv
    python tools/sim_to_real.py --jobs 20 --restart-sweep 31,35,40,45,60,100,180 \
        -o benchmarks/sim_to_real_restart_sweep.csv

Writes the per-job table (``-o``) and a summary beside it (``*_summary.csv``): per engine and policy the mean and
p90 of the error, and the causes: the engine's restart latency beyond the job model's checkpoint-restore delay
(mean per start and its total share of the JCT), the loop's own delay behind each round's boundary, the
trainer's clock granularity (its tick in simulated seconds: the rounding of the time scale) and the restarts in
each run. The run folders (records.jsonl per run) go to ``--runs`` (default: a temporary folder).

The start latency is split (wall seconds, mean per start): the loop's (from the round's decision to the start
command: reading the engine, deciding, stopping jobs, the commands before it), the engine's (from the command to
the program's process, or to its first step on a worker of Ray's pool) and the program's (its own start-up in a
new process). ``latency_only_mean_abs_rel_error``: the simulator against itself with its restart delay lengthened
by the run's mean latency past it -- the part of the error that much start latency makes by itself, decisions
diverging included. ``--restart-sweep`` gives that for a range of delays.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from schedopt.live.driver import read_live_records
from schedopt.live.engines import replay, short_workload
from schedopt.live.trainer import TICK_SECONDS
from schedopt.sia import Cluster, GpuType
from schedopt.sim import get_policy, simulate
from schedopt.sim.jobs import job_model

NODES = "t4:4x4"


def _p90(xs: list[float]) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(0.9 * len(s)))] if s else float("nan")


def causes(run: Path, scale: float, jm_name: str) -> dict[str, Any]:
    """From a run's records: each start's latency beyond the job model's restart delay (from the loop's start
    command to the program's first step, less the delay the simulator charges), and the loop's delay behind each
    round's boundary (simulated seconds)."""
    jm = job_model(jm_name)
    _, live = read_live_records(run / "records.jsonl")
    cmd: dict[tuple[str, int], dict[str, Any]] = {}
    got: dict[str, float] = {}
    for d in live:
        e = d.get("engine")
        if e and e["did"] == "start":
            cmd[(e["job"], e["attempt"])] = e
    lat = []
    parts: dict[str, list[float]] = {"loop": [], "engine": [], "program": []}
    # a program that dated its process from /proc/stat's btime (whole seconds) dated it up to 1 s early: add
    # what btime lacks on this boot (the runs are analysed on the machine that ran them)
    up = float(Path("/proc/uptime").read_text().split()[0])
    btime = next(float(x.split()[1]) for x in Path("/proc/stat").read_text().splitlines() if x.startswith("btime"))
    late = time.time() - up - btime
    for ev in sorted(run.glob("jobs/*/events.jsonl")):
        spec = json.loads((ev.parent / "spec.json").read_text())
        restart = jm.restart(spec["application"])
        for s in (json.loads(x) for x in ev.read_text().splitlines()):
            c = cmd.get((ev.parent.name, s.get("attempt", -1)))
            if s["event"] != "start" or c is None:
                continue
            took = s["sim_time"] + s["restart_paid"] - c["sim_time"]
            lat.append(took - restart)
            got[ev.parent.name] = got.get(ev.parent.name, 0.0) + max(0.0, took - restart)
            # wall seconds from the round's decision to the first step: the loop (deciding, stopping, the
            # commands before this one), the engine (from the command to the program's process, or to the first
            # step on a worker of Ray's pool), the program (its own start-up in a new process: imports, reading
            # its GPUs)
            if "commanded_sim" in c and s.get("process_start_wall") and s.get("ready_wall"):
                decided = spec["epoch_wall"] + c["sim_time"] / scale
                commanded = spec["epoch_wall"] + c["commanded_sim"] / scale
                proc = s["process_start_wall"] + (0.0 if s.get("process_clock") == "uptime" else late)
                parts["loop"].append(commanded - decided)
                if proc >= commanded:  # a new process (Slurm's batch script)
                    parts["engine"].append(proc - commanded)
                    parts["program"].append(s["ready_wall"] - proc)
                else:  # a worker of Ray's pool, the program loaded already: all of it is the engine's
                    parts["engine"].append(s["ready_wall"] - commanded)
                    parts["program"].append(0.0)
    delays = [d["decision"]["loop_delay_s"] * scale for d in live if "decision" in d]
    return {"start_excess_s": lat, "job_excess_s": got, "loop_delay_s": delays, "start_parts_wall_s": parts}


def restart_sweep(wl: Any, cluster: Cluster, policies: list[str], delays: list[float], out: Path) -> int:
    """Per policy and restart delay: mean and p90 of |JCT with that delay / JCT with the job model's - 1|."""
    jm = job_model("pollux")
    rows = []
    for pol in policies:
        base = simulate(cluster, wl, get_policy(pol), job_model=jm)
        bj = base.jcts()
        for d in delays:
            s = simulate(cluster, wl, get_policy(pol), job_model=dataclasses.replace(jm, default_restart=d))
            e = [abs(s.jcts()[k] / bj[k] - 1) for k in bj]
            rows.append({"policy": pol, "restart_s": d, "excess_s": d - jm.default_restart,
                         "mean_abs_rel_error": f"{statistics.fmean(e):.4g}", "p90_abs_rel_error": f"{_p90(e):.4g}",
                         "restarts": sum(j.restarts for j in s.jobs),
                         "base_restarts": sum(j.restarts for j in base.jobs)})
            print(json.dumps(rows[-1]), flush=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jobs", type=int, default=24)
    ap.add_argument("--time-scale", type=float, default=30.0)
    ap.add_argument("--policies", default="sia,tiresias")
    ap.add_argument("--engines", default="slurm,ray")
    ap.add_argument("-o", "--output", default="benchmarks/sim_to_real.csv")
    ap.add_argument("--runs", default=None)
    ap.add_argument("--analyze", action="store_true", help="no replay: the tables of the runs in --runs "
                    "(each folder's run.json holds its wall time, the driver's CPU and the load)")
    ap.add_argument("--append", action="store_true", help="add the rows to the tables at -o (a run per engine "
                    "and time scale)")
    ap.add_argument("--restart-sweep", default="", metavar="S,S,...",
                    help="no replay: the simulator against itself with these restart delays (s) in place of the job "
                    "model's, per policy (what a start latency past the delay does to each job's JCT); writes -o")
    args = ap.parse_args()
    wl = short_workload(args.jobs)
    cluster = Cluster((GpuType("t4", 4, 4),))
    if args.restart_sweep:
        return restart_sweep(wl, cluster, args.policies.split(","), [float(x) for x in args.restart_sweep.split(",")],
                             Path(args.output))
    runs = Path(args.runs or tempfile.mkdtemp(prefix="sim-to-real-"))
    rows: list[dict[str, Any]] = []
    summary: list[dict[str, Any]] = []
    for pol in args.policies.split(","):
        sim = simulate(cluster, wl, get_policy(pol), job_model="pollux")
        sj = sim.jcts()
        srs = {j.id: j.restarts for j in sim.jobs}
        for eng in args.engines.split(","):
            run = runs / f"{eng}-{pol}"
            if not args.analyze:
                load0 = os.getloadavg()[1]
                t0, c0 = time.time(), time.process_time()
                replay(wl, engine=eng, policy=pol, time_scale=args.time_scale, run_dir=run, local=NODES,
                       max_wall=3600)
                (run / "run.json").write_text(json.dumps({
                    "wall_s": round(time.time() - t0, 1), "driver_cpu_s": round(time.process_time() - c0, 2),
                    "load_avg_5min": f"{load0:.1f}-{os.getloadavg()[1]:.1f}"}))
            res, _ = read_live_records(run / "records.jsonl")
            info = json.loads((run / "run.json").read_text())
            why = causes(run, args.time_scale, "pollux")
            errs = []
            for j in res.jobs:
                real = j.jct
                err = abs(real / sj[j.id] - 1) if real is not None else float("nan")
                errs.append(err)
                rows.append({"time_scale": args.time_scale, "engine": eng, "policy": pol, "job": j.id, "arrival": j.arrival, "sim_jct_s": sj[j.id],
                             "real_jct_s": real, "abs_rel_error": err, "sim_restarts": srs[j.id],
                             "real_restarts": j.restarts,
                             "engine_excess_s": round(why["job_excess_s"].get(j.id, 0.0), 1)})
            live = res.meta.details["live"]
            lat = why["start_excess_s"]
            # the latency alone: the simulator again, its restart delay lengthened by the engine's mean excess
            # per start (the error this much start latency makes in the simulator itself)
            jm = job_model("pollux")
            slow = simulate(cluster, wl, get_policy(pol), job_model=dataclasses.replace(
                jm, default_restart=jm.default_restart + max(0.0, statistics.fmean(lat) if lat else 0.0)))
            lat_only = [abs(slow.jcts()[k] / sj[k] - 1) for k in sj]
            summary.append({
                "engine": eng, "policy": pol, "jobs": len(res.jobs),
                "finished": sum(1 for j in res.jobs if j.finish is not None), "time_scale": args.time_scale,
                "mean_abs_rel_error": statistics.fmean(errs), "p90_abs_rel_error": _p90(errs),
                "sim_avg_jct_s": statistics.fmean(sj.values()),
                "real_avg_jct_s": statistics.fmean(j.jct for j in res.jobs if j.jct is not None),
                "starts": live["starts"], "sim_restarts": sum(srs.values()),
                "real_restarts": sum(j.restarts for j in res.jobs),
                "start_excess_mean_s": statistics.fmean(lat) if lat else 0.0,
                "latency_only_mean_abs_rel_error": statistics.fmean(lat_only),
                "engine_excess_share": sum(why["job_excess_s"].values()) / sum(
                    j.jct for j in res.jobs if j.jct is not None),
                "loop_delay_mean_s": statistics.fmean(why["loop_delay_s"]) if why["loop_delay_s"] else 0.0,
                "loop_delay_p90_s": _p90(why["loop_delay_s"]),
                **{f"start_{k}_wall_s": statistics.fmean(v) if v else float("nan")
                   for k, v in why["start_parts_wall_s"].items()},
                "tick_sim_s": TICK_SECONDS * args.time_scale, "mismatches": live["mismatches"],
                "refusals": live["refusals"], **info, "runs": str(run)})
            print(json.dumps(summary[-1]), flush=True)
    out = Path(args.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    for path, table in ((out, rows), (out.with_name(out.stem + "_summary.csv"), summary)):
        more = args.append and path.exists()
        if more:
            with open(path) as f:
                have = next(csv.reader(f))
            if have != list(table[0]):
                raise SystemExit(f"{path} has other columns ({have}): write a new table")
        with open(path, "a" if more else "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(table[0]))
            if not more:
                w.writeheader()
            for r in table:
                w.writerow({k: (f"{v:.4g}" if isinstance(v, float) else v) for k, v in r.items()})
    print(f"wrote {out} and its summary; runs in {runs}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
