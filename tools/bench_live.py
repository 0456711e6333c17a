"""Decision latency of schedopt.live: p50 / p99 of ``Session.decide`` at 64, 512 and 2,048 GPUs with twice as many
jobs, for sia, gavel and tiresias (issue 38). Not a timed test: a measurement, written to
``benchmarks/live_latency.csv``.

The state: the ``sia-<GPUs>`` cluster preset and ``2 x GPUs`` jobs (saturn/1's jobs, cycled, all submitted at t = 0)
driven by :class:`schedopt.live.ReplayExecutor` (the simulator's job model reports progress and measurements as
jobs would); ``--warmup`` rounds first (the first placements), then ``--rounds`` decisions timed. Latency is the
CPU time (user + sys of this process: ``time.process_time``) of one ``decide`` call, and its wall time beside it
(the machine is shared: wall is the noisier one). The executor's own work is not timed.

Extend it: :func:`build_state` gives (session, executor) for a policy and size; :func:`time_decide` times the
decisions of any callable with the same signature as ``Session.decide`` (e.g. a client of ``schedopt serve``:
``route="service"``), so a new column is one more call of :func:`measure` with another ``decide``.

    python tools/bench_live.py                       # every size and policy
    python tools/bench_live.py --gpus 64 --policy sia --rounds 5

Before / after a change of Sia's placer: ``--baseline-placer FILE`` (an older ``schedopt/sia/placement.py``, e.g.
``git show <rev>:schedopt/sia/placement.py > /tmp/old_placement.py``) measures every size and policy twice in
alternation, with that file's ``place`` as the placer and with the current one (``placer: ...`` in the note);
``--append`` adds the rows to the CSV instead of replacing it.
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from schedopt.live import Plan, ReplayExecutor, Session
from schedopt.sim import Workload, WorkloadJob, cluster_preset, load_workload, make_policy

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "live_latency.csv"
FIELDS = ("policy", "gpus", "jobs", "route", "rounds", "cpu_p50_ms", "cpu_p99_ms", "wall_p50_ms", "wall_p99_ms",
          "cpu_max_ms", "note")


def workload(jobs: int) -> Workload:
    """``jobs`` of saturn/1's jobs (cycled, renamed), all submitted at t = 0."""
    base = load_workload("saturn/1").jobs
    return Workload(f"live-bench-{jobs}", tuple(
        WorkloadJob(f"{base[k % len(base)].name}-{k}", 0.0, base[k % len(base)].application,
                    base[k % len(base)].num_replicas, base[k % len(base)].batch_size) for k in range(jobs)))


def build_state(policy: str, gpus: int, *, jobs_per_gpu: int = 2, warmup: int = 3) -> tuple[Session, ReplayExecutor]:
    """A session on ``sia-<gpus>`` with ``jobs_per_gpu x gpus`` jobs, after ``warmup`` rounds of the replay."""
    s = Session(cluster_preset(f"sia-{gpus}"), make_policy(policy))
    ex = ReplayExecutor(s, workload(jobs_per_gpu * gpus))
    ex.run(warmup)
    return s, ex


@dataclass(frozen=True)
class Timing:
    cpu: float
    wall: float


def time_decide(ex: ReplayExecutor, rounds: int,
                decide: Callable[[float], Plan] | None = None) -> list[Timing]:
    """Play ``rounds`` more rounds of ``ex``, timing each decision (``decide``: the route; default the session's
    own ``decide``, in process)."""
    s = ex.session
    real = s.decide
    route = decide or real
    out: list[Timing] = []

    def timed(now: float) -> Plan:
        c0, w0 = time.process_time(), time.perf_counter()
        p = route(now)
        out.append(Timing(time.process_time() - c0, time.perf_counter() - w0))
        return p

    s.decide = timed  # type: ignore[method-assign]
    try:
        ex.run(rounds)
    finally:
        s.decide = real  # type: ignore[method-assign]
    return out


def load_placer(path: Path) -> Callable[..., object]:
    """``place`` of an older copy of ``schedopt/sia/placement.py`` (loaded as a module of the package, so its
    relative imports resolve to the current ones)."""
    name = "schedopt.sia._baseline_placement"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot load {path}")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod.place


def measure(policy: str, gpus: int, rounds: int, warmup: int, route: str = "in-process",
            placer: tuple[str, Callable[..., object]] | None = None) -> dict[str, object]:
    """One row; ``placer``: (label, place function) used as Sia's placer in the simulator's placer role (what the
    session's ``sia`` placer calls) for the whole replay, warmup included."""
    import schedopt.sim.roles as roles

    real = roles.place
    if placer is not None:
        roles.place = placer[1]  # type: ignore[assignment]
    try:
        _, ex = build_state(policy, gpus, warmup=warmup)
        ts = time_decide(ex, rounds)
    finally:
        roles.place = real
    cpu = np.array([t.cpu for t in ts]) * 1e3
    wall = np.array([t.wall for t in ts]) * 1e3
    return {"policy": policy, "gpus": gpus, "jobs": 2 * gpus, "route": route, "rounds": len(ts),
            "cpu_p50_ms": round(float(np.percentile(cpu, 50)), 2), "cpu_p99_ms": round(float(np.percentile(cpu, 99)), 2),
            "wall_p50_ms": round(float(np.percentile(wall, 50)), 2),
            "wall_p99_ms": round(float(np.percentile(wall, 99)), 2), "cpu_max_ms": round(float(cpu.max()), 2),
            "note": (f"placer: {placer[0]}; " if placer is not None else "")
            + f"warmup {warmup} rounds; shared 2-core machine (load {open('/proc/loadavg').read().split()[0]})"}


def write(rows: Iterable[dict[str, object]], path: Path = OUT, *, append: bool = False) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    header = not (append and path.exists())
    with path.open("a" if append else "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS)
        if header:
            w.writeheader()
        for r in rows:
            w.writerow(r)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gpus", type=int, nargs="*", default=[64, 512, 2048])
    ap.add_argument("--policy", nargs="*", default=["sia", "gavel", "tiresias"])
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--append", action="store_true", help="add the rows to --out instead of replacing it")
    ap.add_argument("--baseline-placer", type=Path, default=None,
                    help="an older schedopt/sia/placement.py: every row twice, baseline and current, alternating")
    a = ap.parse_args()
    placers: list[tuple[str, Callable[..., object]] | None] = [None]
    if a.baseline_placer is not None:
        placers = [(f"baseline {a.baseline_placer.name}", load_placer(a.baseline_placer)),
                   ("current", __import__("schedopt.sia.placement", fromlist=["place"]).place)]
    rows = []
    for g in a.gpus:
        for p in a.policy:
            for pl in placers:
                r = measure(p, g, a.rounds, a.warmup, placer=pl)
                print(", ".join(f"{k}={r[k]}" for k in FIELDS[:-1]), flush=True)
                rows.append(r)
    write(rows, a.out, append=a.append)
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
