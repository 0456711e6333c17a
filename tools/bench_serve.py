"""Decision latency through ``schedopt serve`` beside the in-process session (issue 38): p50 / p99 at 64, 512 and
2,048 GPUs with twice as many jobs, for sia, gavel and tiresias. Not a timed test: a measurement, written to
``benchmarks/serve_latency.csv``.

The state: the ``sia-<GPUs>`` cluster preset and ``2 x GPUs`` jobs (saturn/1's jobs, cycled and renamed, all
submitted at t = 0: tools/bench_live.py's ``workload``, and its in-process timing), driven by :class:`schedopt.live.ReplayExecutor`: once in
process, once through a real service process on 127.0.0.1 (:class:`schedopt.testing.serve.ServiceReplay`: the
same executor, every decision asked of the service with the round's events in the same request). Both runs make
the same decisions (tests/test_serve.py checks it); ``--warmup`` rounds first, then ``--rounds`` timed.

Columns per (policy, GPUs): the in-process ``Session.decide`` wall and CPU time; the service's round trip (wall,
client side: the request, the events applied, the decision, the answer read; the state is saved after the
answer, and the next request is sent once that save is done, as a minute between rounds would allow); the service's CPU
per request (user + sys of the service process, read from /proc in 10 ms ticks: the mean and the median over the
rounds; it holds part of the state's save, which starts once the answer is written); ``overhead`` = round trip -
in-process wall of the same round (p50 / p99 of the differences: two runs, so the machine's noise twice);
``http`` = round trip - the decision's own wall time inside the service (the answer's ``seconds``) on the same
request: what the service adds (HTTP, JSON both ways, the round's events applied); ``save_ms``: the mean time of one atomic save of the state file
(the service's own metric). The machine is shared: wall times are noisy; the CPU columns less so.

    python tools/bench_serve.py                                   # every size and policy (minutes)
    python tools/bench_serve.py --gpus 64 --policy tiresias --rounds 20
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from bench_live import build_state, time_decide, workload  # beside this file: the in-process side

from schedopt.live import ClusterState, Plan, Session
from schedopt.live.client import ServiceSession
from schedopt.sim import cluster_preset, make_policy
from schedopt.testing.serve import ServiceProcess, ServiceReplay

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "serve_latency.csv"
FIELDS = ("policy", "gpus", "jobs", "rounds", "inproc_wall_p50_ms", "inproc_wall_p99_ms", "inproc_cpu_p50_ms",
          "inproc_cpu_p99_ms", "service_wall_p50_ms", "service_wall_p99_ms", "service_cpu_mean_ms", "service_cpu_p50_ms", "overhead_p50_ms",
          "overhead_p99_ms", "http_p50_ms", "http_p99_ms", "save_ms", "plan_kb", "note")


def _cpu_of(pid: int) -> float:
    """User + sys CPU seconds of process ``pid`` (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _timed(decide: Callable[[float], Plan], out: list[tuple[float, float]], cpu: Callable[[], float],
           before: Callable[[], object]) -> Callable[[float], Plan]:
    def run(now: float) -> Plan:
        before()
        c0, w0 = cpu(), time.perf_counter()
        p = decide(now)
        out.append((time.perf_counter() - w0, cpu() - c0))
        return p

    return run


def _pct(xs: list[float], q: float) -> float:
    return round(float(np.percentile(np.array(xs) * 1e3, q)), 2)


def measure(policy: str, gpus: int, rounds: int, warmup: int, workdir: Path, label: str = "") -> dict[str, Any]:
    wl = workload(2 * gpus)
    # in process: tools/bench_live.py's state and timing
    s, ex = build_state(policy, gpus, warmup=warmup)
    inproc = [(t.wall, t.cpu) for t in time_decide(ex, rounds)]
    # through the service
    init = workdir / "init.json"
    init.write_text(json.dumps({"schema": "schedopt.serve.init", "version": 1, "policy": policy,
                                "cluster": ClusterState.from_cluster(cluster_preset(f"sia-{gpus}")).to_dict(),
                                "round_duration": s.round_duration}))
    service: list[tuple[float, float]] = []
    sp = ServiceProcess(workdir, workdir / "state.json", init, extra=("--max-body", str(256 * 2**20)))
    with sp:
        with sp.client(timeout=600.0) as c:
            remote = ServiceSession(c)
            sx = ServiceReplay(remote, wl, Session(cluster_preset(f"sia-{gpus}"), make_policy(policy)))
            sx.run(warmup)
            assert sp.proc is not None
            pid = sp.proc.pid
            remote_decide = remote.decide
            # before each request the service is let finish saving the last round (GET /v1/state waits for it):
            # rounds are a minute apart on a cluster, not the replay's few milliseconds
            remote.decide = _timed(remote_decide, service, lambda: _cpu_of(pid), c.state)  # type: ignore[method-assign]
            sx.run(rounds)
            metrics = c.metrics()
            plan_kb = len(json.dumps(remote.answers[-1]["plan"])) / 1024
            inside = [a["seconds"] for a in remote.answers[-len(service):]]
    same = [a.to_dict()["jobs"] for a in ex.plans] == [b.to_dict()["jobs"] for b in sx.plans]
    m = {k: float(v) for k, v in re.findall(r"^schedopt_state_save_seconds_(sum|count) (\S+)$", metrics, re.M)}
    over = [w_s - w_i for (w_s, _), (w_i, _) in zip(service, inproc)]
    http = [w_s - d for (w_s, _), d in zip(service, inside)]
    return {"policy": policy, "gpus": gpus, "jobs": 2 * gpus, "rounds": len(service),
            "inproc_wall_p50_ms": _pct([w for w, _ in inproc], 50), "inproc_wall_p99_ms": _pct([w for w, _ in inproc], 99),
            "inproc_cpu_p50_ms": _pct([c for _, c in inproc], 50), "inproc_cpu_p99_ms": _pct([c for _, c in inproc], 99),
            "service_wall_p50_ms": _pct([w for w, _ in service], 50),
            "service_wall_p99_ms": _pct([w for w, _ in service], 99),
            "service_cpu_mean_ms": round(1e3 * float(np.mean([c for _, c in service])), 2),
            "service_cpu_p50_ms": _pct([c for _, c in service], 50),
            "overhead_p50_ms": _pct(over, 50), "overhead_p99_ms": _pct(over, 99),
            "http_p50_ms": _pct(http, 50), "http_p99_ms": _pct(http, 99),
            "save_ms": round(1e3 * m["sum"] / max(m["count"], 1), 2), "plan_kb": round(plan_kb, 1),
            "note": f"{label + '; ' if label else ''}warmup {warmup}; same decisions both ways: {same}; shared 2-core machine (load "
                    f"{Path('/proc/loadavg').read_text().split()[0]}); service CPU at 10 ms ticks"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gpus", type=int, nargs="*", default=[64, 512, 2048])
    ap.add_argument("--policy", nargs="*", default=["sia", "gavel", "tiresias"])
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--append", action="store_true", help="add the rows to --out instead of replacing it")
    ap.add_argument("--label", default="", help="put first in each row's note (e.g. which version of the code ran)")
    a = ap.parse_args()
    rows = []
    for g in a.gpus:
        for p in a.policy:
            with tempfile.TemporaryDirectory() as tmp:
                r = measure(p, g, a.rounds, a.warmup, Path(tmp), a.label)
            print(", ".join(f"{k}={r[k]}" for k in FIELDS), flush=True)
            rows.append(r)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    old = list(csv.DictReader(a.out.open())) if a.append and a.out.exists() else []
    with a.out.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS)
        w.writeheader()
        w.writerows([*old, *rows])
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
