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

Before / after a change anywhere in the package: ``--baseline-src DIR`` (an older source tree, e.g.
``git archive <rev> | tar -x -C /tmp/before``) measures every size and policy in fresh processes of this script,
``--repeat`` each with ``PYTHONPATH`` at that tree and at this one, alternating; the rounds of each side's processes
are pooled into one row per side:

    python tools/bench_live.py --gpus 2048 --policy sia --baseline-src /tmp/before --repeat 3 --append
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
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
            placer: tuple[str, Callable[..., object]] | None = None, keep: Path | None = None) -> dict[str, object]:
    """One row; ``placer``: (label, place function) used as Sia's placer in the simulator's placer role (what the
    session's ``sia`` placer calls) for the whole replay, warmup included; ``keep``: a JSON file the per-round
    CPU and wall seconds are written to."""
    import schedopt.sim.roles as roles

    real = roles.place
    if placer is not None:
        roles.place = placer[1]  # type: ignore[assignment]
    try:
        _, ex = build_state(policy, gpus, warmup=warmup)
        ts = time_decide(ex, rounds)
    finally:
        roles.place = real
    if keep is not None:
        keep.write_text(json.dumps({"cpu": [t.cpu for t in ts], "wall": [t.wall for t in ts]}))
    return row(policy, gpus, route, ts, f"warmup {warmup} rounds"
               + (f"; placer: {placer[0]}" if placer is not None else ""))


def row(policy: str, gpus: int, route: str, ts: list[Timing], note: str) -> dict[str, object]:
    """A CSV row of the decisions timed in ``ts``."""
    cpu = np.array([t.cpu for t in ts]) * 1e3
    wall = np.array([t.wall for t in ts]) * 1e3
    return {"policy": policy, "gpus": gpus, "jobs": 2 * gpus, "route": route, "rounds": len(ts),
            "cpu_p50_ms": round(float(np.percentile(cpu, 50)), 2), "cpu_p99_ms": round(float(np.percentile(cpu, 99)), 2),
            "wall_p50_ms": round(float(np.percentile(wall, 50)), 2),
            "wall_p99_ms": round(float(np.percentile(wall, 99)), 2), "cpu_max_ms": round(float(cpu.max()), 2),
            "note": f"{note}; shared 2-core machine (load {open('/proc/loadavg').read().split()[0]})"}


def alternate(policy: str, gpus: int, rounds: int, warmup: int, baseline: Path, repeat: int) -> list[dict[str, object]]:
    """Two rows, baseline and current: ``repeat`` fresh processes each (this script with ``PYTHONPATH`` at the
    baseline tree or at this one), alternating (baseline first in odd repeats, current first in even ones), every
    process's timed rounds pooled."""
    sides = {"baseline": baseline.resolve(), "current": ROOT}
    got: dict[str, list[Timing]] = {k: [] for k in sides}
    with tempfile.TemporaryDirectory() as tmp:
        for k in range(repeat):
            for side in (("baseline", "current") if k % 2 == 0 else ("current", "baseline")):
                out = Path(tmp) / f"{side}-{k}.json"
                env = {**os.environ, "PYTHONPATH": str(sides[side])}
                subprocess.run([sys.executable, str(Path(__file__).resolve()), "--gpus", str(gpus), "--policy", policy,
                                "--rounds", str(rounds), "--warmup", str(warmup), "--out", str(Path(tmp) / "x.csv"),
                                "--rounds-out", str(out)], env=env, check=True, stdout=subprocess.DEVNULL)
                d = json.loads(out.read_text())
                got[side] += [Timing(c, w) for c, w in zip(d["cpu"], d["wall"], strict=True)]
                print(f"{policy} {gpus} {side} run {k}: cpu p50 {1e3 * float(np.median(d['cpu'])):.1f} ms "
                      f"max {1e3 * max(d['cpu']):.1f} ms", flush=True)
    return [row(policy, gpus, "in-process", got[side],
                f"{side} ({'tree ' + str(baseline) if side == 'baseline' else 'this tree'}): {repeat} processes "
                f"alternating with the other, {rounds} rounds each pooled, warmup {warmup} rounds") for side in sides]


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
    ap.add_argument("--baseline-src", type=Path, default=None,
                    help="an older source tree (git archive REV | tar -x -C DIR): every row measured in fresh "
                         "processes, baseline and current alternating, --repeat times each; rounds pooled")
    ap.add_argument("--repeat", type=int, default=3, help="processes per side with --baseline-src")
    ap.add_argument("--rounds-out", type=Path, default=None, help=argparse.SUPPRESS)  # a child's per-round times
    a = ap.parse_args()
    if a.baseline_src is not None:
        rows = [r for g in a.gpus for p in a.policy
                for r in alternate(p, g, a.rounds, a.warmup, a.baseline_src, a.repeat)]
        write(rows, a.out, append=a.append)
        print(f"wrote {a.out}")
        return
    placers: list[tuple[str, Callable[..., object]] | None] = [None]
    if a.baseline_placer is not None:
        placers = [(f"baseline {a.baseline_placer.name}", load_placer(a.baseline_placer)),
                   ("current", __import__("schedopt.sia.placement", fromlist=["place"]).place)]
    rows = []
    for g in a.gpus:
        for p in a.policy:
            for pl in placers:
                r = measure(p, g, a.rounds, a.warmup, placer=pl, keep=a.rounds_out)
                print(", ".join(f"{k}={r[k]}" for k in FIELDS[:-1]), flush=True)
                rows.append(r)
    write(rows, a.out, append=a.append)
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
