"""Decision latency through ``schedopt serve`` beside the in-process session (issue 38): p50 / p99 at 64, 512 and
2,048 GPUs with twice as many jobs, for sia, gavel and tiresias. Not a timed test: a measurement, written to
``benchmarks/serve_latency.csv``.

The state: the ``sia-<GPUs>`` cluster preset and ``2 x GPUs`` jobs (saturn/1's jobs, cycled and renamed, all
submitted at t = 0: tools/bench_live.py's ``workload``, and its in-process timing), driven by
:class:`schedopt.live.ReplayExecutor`: once in process, once through a real service process on 127.0.0.1
(:class:`schedopt.testing.serve.ServiceReplay`: the same executor, every decision asked of the service with the
round's events in the same request). Both runs make the same decisions (the tool checks it; tests/test_serve.py
too); ``--warmup`` rounds first, then ``--rounds`` timed.

Columns per (policy, GPUs), all CPU times are user + sys:

* in process: the decision's CPU and wall time (``Session.decide``), and ``inproc_round_cpu``: the round's events
  applied (``Session.apply``, one progress report per running job) plus the decision: the same work the service
  does for a round, without HTTP, JSON or saving;
* the service's CPU for one decision request (``service_cpu``): its ``process_cpu_seconds_total`` (the metrics
  page, ns resolution) read just before and just after the request, less what one read of the metrics page costs
  (the median of 20 reads in a row, measured first): the body read and checked, the events applied, the decision,
  its journal record synced, the answer written;
* ``decision_cpu_in_service``: the session's decision inside the service, on its thread (the answer's
  ``cpu_seconds``), and ``overhead_cpu`` = service CPU - that, request by request (p50 / p99 / mean; the mean
  holds the snapshots): what the service adds to a round, the events applied included;
  ``overhead_vs_inproc`` = service CPU - the in-process decision of the same round, and
  ``overhead_vs_inproc_round`` = service CPU - in-process events applied + decision (two runs: the noise of both;
  the only overhead an older service without ``cpu_seconds`` gives);
* ``events_cpu_in_service``: the round's events applied inside the service (``Session.apply`` on its thread, the
  answer's ``events_cpu_seconds``), and ``overhead_net_cpu`` = service CPU - events applied - decision, request by
  request, all three read in the same request: what the service adds that an in-process caller does not do (the body
  read and parsed, the events checked, the journal, the answer), without subtracting two runs;
* ``snapshot_ms`` (wall) and ``snapshots``: the writes of the whole state file (every ``--snapshot-every``
  decisions, after the answer; not in the request) and ``snapshot_per_round_ms``, their total over the timed
  rounds: what they add to a round on average;
* ``plan_kb``: the last plan's document; ``answer_kb``: the answer to a decision request as sent (p50; the client
  asks for the plan as its changes from the one it holds, ``since``; a ``--baseline`` service is asked as its
  checkout reads: progress in columns and plans as deltas when it has them, else event by event for the whole
  plan, said in the row's note);
* the round trip's wall time (client side) and ``http`` = round trip - the decision's own wall time inside the
  service (the answer's ``seconds``). Before each request the service is let finish a snapshot it is writing
  (rounds are a minute apart on a cluster). The machine is shared: wall times are noisy; the CPU columns less so.

``--baseline DIR``: each row measured with the service of the checkout ``DIR`` too, both services up at once and
their timed rounds alternating (round k: the baseline's first, round k + 1: this one's first), each against the same
in-process run. (Measured one after the other, the second side read 1-4 ms higher with identical code; alternated,
an A/A run -- ``DIR`` a checkout of this same commit -- reads alike on both sides within the noise.)

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
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import numpy as np
from bench_live import build_state, time_decide, workload  # beside this file: the in-process side

from schedopt.live import ClusterState, Plan, Session
from schedopt.live.client import ServiceClient, ServiceSession
from schedopt.sim import cluster_preset, make_policy
from schedopt.testing.serve import ServiceProcess, ServiceReplay

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "serve_latency.csv"
FIELDS = ("policy", "gpus", "jobs", "rounds", "inproc_cpu_p50_ms", "inproc_cpu_p99_ms", "inproc_round_cpu_p50_ms",
          "service_cpu_p50_ms", "service_cpu_p99_ms", "service_cpu_mean_ms", "decision_cpu_in_service_p50_ms",
          "overhead_cpu_p50_ms", "overhead_cpu_p99_ms", "overhead_cpu_mean_ms", "overhead_vs_inproc_p50_ms",
          "overhead_vs_inproc_round_p50_ms", "events_cpu_in_service_p50_ms", "overhead_net_cpu_p50_ms",
          "overhead_net_cpu_p99_ms", "snapshot_ms", "snapshots",
          "snapshot_per_round_ms", "journal_ms", "inproc_wall_p50_ms", "service_wall_p50_ms", "service_wall_p99_ms",
          "http_p50_ms", "http_p99_ms", "plan_kb", "answer_kb", "note")


def _metric(text: str, name: str) -> float:
    m = re.search(rf"^{name} (\S+)$", text, re.M)
    assert m is not None, name
    return float(m.group(1))


class ServiceCpu:
    """The service's CPU seconds: its ``process_cpu_seconds_total`` (ns resolution), less what the metrics reads
    cost (measured by :meth:`calibrate`); a service without that metric (an older version, ``--code``) by
    /proc/<pid>/stat (10 ms ticks: only the mean over rounds says something there)."""

    def __init__(self, client: ServiceClient, pid: int) -> None:
        self.client = client
        self.pid = pid
        self.per_read = 0.0
        self.reads = 0
        self.precise = "process_cpu_seconds_total" in client.metrics()
        self.offset = self._unsaved()

    def _metrics(self) -> str:
        self.reads += 1
        return self.client.metrics()

    def read(self) -> float:
        """The CPU seconds so far, less the cost of the metrics reads made by this object."""
        if self.precise:
            v = _metric(self._metrics(), "process_cpu_seconds_total")
        else:
            fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
            v = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        return v - self.reads * self.per_read

    def calibrate(self, n: int = 20) -> None:
        if self.precise:
            xs = [_metric(self.client.metrics(), "process_cpu_seconds_total") for _ in range(n + 1)]
            self.per_read = float(np.median(np.diff(xs)))

    def _unsaved(self) -> float:
        text = self._metrics()
        if "schedopt_state_saving" in text:
            return _metric(text, "schedopt_state_saving")
        # an older service saves after every decision (and once at start): decisions not saved yet
        ok = re.search(r'^schedopt_decisions_total\{status="ok"\} (\S+)$', text, re.M)
        return (float(ok.group(1)) if ok else 0.0) - _metric(text, "schedopt_state_save_seconds_count")

    def settled(self) -> None:
        """Return once the service has saved what it decided (a snapshot being written, or an older service's
        save after every decision)."""
        while self._unsaved() > self.offset:
            time.sleep(0.002)


def _commit(code: Path) -> str:
    """The commit of the checkout ``code`` (its short hash; a tree that is no git checkout: its folder's name), so
    that a record names what was measured, not where it lay on the measuring machine."""
    import subprocess

    got = subprocess.run(["git", "-C", str(code), "rev-parse", "--short=7", "HEAD"], capture_output=True, text=True)
    return got.stdout.strip() if got.returncode == 0 and got.stdout.strip() else code.name


def _protocol(code: Path | None) -> tuple[bool, bool]:
    """Whether the service of the checkout ``code`` (None: this one) reads progress reports in columns and answers
    plans as deltas (``since``): a baseline that does is asked so, as this one is; an older one event by event,
    for the whole plan."""
    if code is None:
        return True, True
    plan = code / "schedopt" / "live" / "plan.py"
    return (code / "schedopt" / "serve" / "columns.py").exists(), plan.exists() and "def plan_delta" in plan.read_text()


def _pct(xs: list[float], q: float) -> float:
    return round(float(np.percentile(np.array(xs) * 1e3, q)), 2)


class _Side:
    """One service measured (``code``: the checkout it runs, None this one): started, warmed up and calibrated on
    entering, then one timed round a :meth:`step`; :meth:`row` its columns. Several sides are up at once so that
    their timed rounds alternate (the first side measured was the faster one: a side measured after another read
    1-4 ms higher with identical code)."""

    def __init__(self, policy: str, gpus: int, workdir: Path, init: Path, snapshot_every: int,
                 code: Path | None) -> None:
        self.policy, self.gpus, self.code, self.snapshot_every = policy, gpus, code, snapshot_every
        extra: tuple[str, ...] = ("--max-body", str(256 * 2**20))
        if code is None or "--snapshot-every" in (code / "schedopt" / "serve" / "cli.py").read_text():
            extra += ("--snapshot-every", str(snapshot_every))
        workdir.mkdir(parents=True, exist_ok=True)
        self.sp = ServiceProcess(workdir, workdir / "state.json", init, extra=extra, code=code)
        self.service: list[tuple[float, float]] = []
        self.stack = ExitStack()
        #: the labels of the sides this one's rounds alternated with (None: measured alone)
        self.alternated: str | None = None

    def start(self, warmup: int) -> _Side:
        stack = self.stack
        stack.enter_context(self.sp)
        c = stack.enter_context(self.sp.client(timeout=600.0))
        self.probe = stack.enter_context(self.sp.client(timeout=600.0))
        # an older service (--baseline): what it reads (progress in columns, plans as deltas) or event by event,
        # the whole plan every time
        self.columns, self.delta = _protocol(self.code)
        self.remote = ServiceSession(c, columns=2 if self.columns else 0, delta=self.delta)
        self.sx = ServiceReplay(self.remote, workload(2 * self.gpus),
                                Session(cluster_preset(f"sia-{self.gpus}"), make_policy(self.policy)))
        self.sx.run(warmup)
        return self

    def calibrate(self) -> None:
        assert self.sp.proc is not None
        self.cpu = cpu = ServiceCpu(self.probe, self.sp.proc.pid)
        cpu.settled()
        cpu.calibrate()
        self.saves0 = _metric(self.probe.metrics(), "schedopt_state_save_seconds_sum")
        self.count0 = _metric(self.probe.metrics(), "schedopt_state_save_seconds_count")
        remote_decide = self.remote.decide

        def timed(now: float) -> Plan:
            c0 = cpu.read()
            w0 = time.perf_counter()
            p = remote_decide(now)
            w = time.perf_counter() - w0
            cpu.settled()  # the round's save too (a snapshot; an older service's save after every answer)
            self.service.append((w, cpu.read() - c0))
            return p

        self.remote.decide = timed  # type: ignore[method-assign]

    def step(self) -> None:
        assert self.sx.step() is not None, "the replay ended before the timed rounds"

    def row(self, ex: Any, inproc: list[tuple[float, float]], inproc_round: list[float], label: str,
            warmup: int) -> dict[str, Any]:
        """The row of this side against the in-process run ``ex`` (its decisions' wall and CPU, ``inproc``; its
        rounds' events applied and decided, ``inproc_round``)."""
        cpu, remote, service, sx = self.cpu, self.remote, self.service, self.sx
        cpu.settled()
        metrics = self.probe.metrics()
        assert remote.plan is not None
        plan_kb = len(json.dumps(remote.plan.to_dict())) / 1024
        answer_kb = float(np.median([len(json.dumps(a)) for a in remote.answers[-len(service):]])) / 1024
        inside = [a["seconds"] for a in remote.answers[-len(service):]]
        same = [a.to_dict()["jobs"] for a in ex.plans] == [b.to_dict()["jobs"] for b in sx.plans]
        saves = _metric(metrics, "schedopt_state_save_seconds_sum") - self.saves0
        n_saves = _metric(metrics, "schedopt_state_save_seconds_count") - self.count0
        journal = (_metric(metrics, "schedopt_journal_append_seconds_sum") / max(
            _metric(metrics, "schedopt_journal_append_seconds_count"), 1) if "schedopt_journal" in metrics else 0.0)
        s_cpu = [c for _, c in service]
        inside_cpu = [a.get("cpu_seconds") for a in remote.answers[-len(service):]]
        same_request = all(c is not None for c in inside_cpu)
        over_inproc = [c_s - c_i for c_s, (_, c_i) in zip(s_cpu, inproc)]
        over_round = [c_s - c_r for c_s, c_r in zip(s_cpu, inproc_round)]
        over = [c_s - c for c_s, c in zip(s_cpu, inside_cpu)] if same_request else over_inproc
        events_cpu = [a.get("events_cpu_seconds") for a in remote.answers[-len(service):]]
        net_known = same_request and all(c is not None for c in events_cpu)
        net = [o - e for o, e in zip(over, events_cpu)] if net_known else []
        http = [w_s - d for (w_s, _), d in zip(service, inside)]
        code, columns, delta = self.code, self.columns, self.delta
        return {"policy": self.policy, "gpus": self.gpus, "jobs": 2 * self.gpus, "rounds": len(service),
                "inproc_cpu_p50_ms": _pct([c for _, c in inproc], 50),
                "inproc_cpu_p99_ms": _pct([c for _, c in inproc], 99),
                "inproc_round_cpu_p50_ms": _pct(inproc_round, 50),
                "service_cpu_p50_ms": _pct(s_cpu, 50), "service_cpu_p99_ms": _pct(s_cpu, 99),
                "service_cpu_mean_ms": round(1e3 * float(np.mean(s_cpu)), 2),
                "decision_cpu_in_service_p50_ms": _pct(inside_cpu, 50) if same_request else "",
                "overhead_cpu_p50_ms": _pct(over, 50), "overhead_cpu_p99_ms": _pct(over, 99),
                "overhead_cpu_mean_ms": round(1e3 * float(np.mean(over)), 2),
                "overhead_vs_inproc_p50_ms": _pct(over_inproc, 50),
                "overhead_vs_inproc_round_p50_ms": _pct(over_round, 50),
                "events_cpu_in_service_p50_ms": _pct(events_cpu, 50) if net_known else "",
                "overhead_net_cpu_p50_ms": _pct(net, 50) if net_known else "",
                "overhead_net_cpu_p99_ms": _pct(net, 99) if net_known else "",
                "snapshot_ms": round(1e3 * saves / max(n_saves, 1), 2), "snapshots": int(n_saves),
                "snapshot_per_round_ms": round(1e3 * saves / len(service), 2), "journal_ms": round(1e3 * journal, 2),
                "inproc_wall_p50_ms": _pct([w for w, _ in inproc], 50),
                "service_wall_p50_ms": _pct([w for w, _ in service], 50),
                "service_wall_p99_ms": _pct([w for w, _ in service], 99),
                "http_p50_ms": _pct(http, 50), "http_p99_ms": _pct(http, 99), "plan_kb": round(plan_kb, 1),
                "answer_kb": round(answer_kb, 1),
                "note": f"{label + '; ' if label else ''}warmup {warmup}; same decisions both ways: {same}; "
                        + f"snapshot every {self.snapshot_every}; "
                        + ("" if code is None else f"service from a checkout of {_commit(code)}; ")
                        + ("" if columns else "events one by one; ") + ("" if delta else "whole plans; ")
                        + ("" if cpu.precise else "service CPU in 10 ms ticks; ")
                        + ("" if same_request else "overhead against the in-process decision (no cpu_seconds); ")
                        + ("" if self.alternated is None else f"rounds alternated with {self.alternated}; ")
                        + f"shared 2-core machine (load {Path('/proc/loadavg').read_text().split()[0]})"}


def measure(policy: str, gpus: int, rounds: int, warmup: int, workdir: Path, label: str = "",
            snapshot_every: int = 10, code: Path | None = None,
            others: tuple[tuple[Path | None, str], ...] = ()) -> list[dict[str, Any]]:
    """The rows of ``code``'s service (None: this checkout's; note ``label``) and of each of ``others`` (a checkout
    and its label), all up at once, their timed rounds alternating (round k: the sides in order, round k + 1 in
    reverse), each against the same in-process run."""
    # in process: tools/bench_live.py's state and timing, the round's events applied timed beside it
    s, ex = build_state(policy, gpus, warmup=warmup)
    applied = [0.0]
    real_apply, real_decide = s.apply, s.decide

    def apply(event: Any) -> None:
        c0 = time.process_time()
        real_apply(event)
        applied[0] += time.process_time() - c0

    round_apply: list[float] = []

    def decide(now: float) -> Plan:
        round_apply.append(applied[0])
        applied[0] = 0.0
        return real_decide(now)

    s.apply = apply  # type: ignore[method-assign]
    inproc = [(t.wall, t.cpu) for t in time_decide(ex, rounds, decide)]
    s.apply = real_apply  # type: ignore[method-assign]
    inproc_round = [a + c for a, (_, c) in zip(round_apply, inproc)]
    # through the services
    init = workdir / "init.json"
    init.write_text(json.dumps({"schema": "schedopt.serve.init", "version": 1, "policy": policy,
                                "cluster": ClusterState.from_cluster(cluster_preset(f"sia-{gpus}")).to_dict(),
                                "round_duration": s.round_duration}))
    wanted = ((code, label), *others)
    sides = [_Side(policy, gpus, workdir / f"side{k}", init, snapshot_every, c) for k, (c, _) in enumerate(wanted)]
    with ExitStack() as stack:
        for side in sides:
            stack.callback(side.stack.close)
            side.start(warmup)
        for side in sides:
            side.calibrate()
        for k in range(rounds):
            for side in (sides if k % 2 == 0 else sides[::-1]):
                side.step()
        if len(sides) > 1:
            for side, (_, lab) in zip(sides, wanted):
                side.alternated = ", ".join(f"'{o}'" for _, o in wanted if o != lab) or "another side"
        return [side.row(ex, inproc, inproc_round, lab, warmup) for side, (_, lab) in zip(sides, wanted)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gpus", type=int, nargs="*", default=[64, 512, 2048])
    ap.add_argument("--policy", nargs="*", default=["sia", "gavel", "tiresias"])
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--append", action="store_true", help="add the rows to --out instead of replacing it")
    ap.add_argument("--label", default="", help="put first in each row's note (e.g. which version of the code ran)")
    ap.add_argument("--snapshot-every", type=int, default=10, help="the service's --snapshot-every (default 10)")
    ap.add_argument("--baseline", type=Path, default=None,
                    help="another schedopt checkout (e.g. `git archive REV | tar -x -C DIR`): each row measured with "
                         "its service too, both up at once, their timed rounds alternating (labels: --baseline-label, "
                         "then --label or 'after')")
    ap.add_argument("--baseline-label", default="before", help="the note of the baseline's rows")
    a = ap.parse_args()
    rows = []
    for g in a.gpus:
        for p in a.policy:
            sides = [(a.baseline, a.baseline_label), (None, a.label or "after")] if a.baseline else [(None, a.label)]
            with tempfile.TemporaryDirectory() as tmp:
                got = measure(p, g, a.rounds, a.warmup, Path(tmp), sides[0][1], a.snapshot_every, sides[0][0],
                              tuple(sides[1:]))
            for r in got:
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
