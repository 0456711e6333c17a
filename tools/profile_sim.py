"""Where a simulation's time goes, phase by phase and round by round (issue 26), wall and CPU side by side.

    python tools/profile_sim.py --policy sia --workload saturn/1 --cluster sia-64
    python tools/profile_sim.py --policy pollux --workload saturn/1 --cluster sia-64 --params '{"generations": 30}'
    python tools/profile_sim.py --policy sia --workload saturn/1 --cluster sia-64 --cprofile /tmp/sia.prof

Phases (exclusive time: a phase's time excludes the phases nested in it):

* ``view``: the engine's per-job :class:`~schedopt.sim.policies.base.JobView` (without the estimator);
* ``estimator``: :func:`schedopt.sim.jobs.goodput_estimate` (the online estimator's refits);
* ``policy view``: the policy's own view of the round (``SiaPolicy.problem``'s job list and goodput rows,
  ``PolluxPolicy.objective``);
* ``model build``: building the optimization model (``schedopt.sia.build.build_formulation``, or for the Sia round
  its array form, ``schedopt.sia.direct.formulation``; Gavel's LP,
  Pollux-exact's model);
* ``solve``: :func:`schedopt.solve` (backend included); ``solve: structure``: mckp's structure analysis inside it
  (for the Sia round, ``schedopt.sia.direct.prepare`` builds it from the families just before);
* ``search``: Pollux's genetic search (``_Search.run``);
* ``decode``: the allocation from the solution (``SiaSolution.decode``);
* ``policy (other)``: the rest of ``decide``;
* ``placement``: the engine's placement of the decision (``_from_allocation`` / ``_from_nodes``);
* ``advance``: the engine advancing jobs (``JobState.advance``);
* ``engine (other)``: the rest of the round (round wall minus the phases above);
* ``policy (total)``: the policy's phases summed per round (its median is the policy's time per round).

The phases are measured by wrapping those functions in this process (the package is not changed); CPU is
``time.process_time`` (every thread of the process: a solve's worker thread included). A round runs from its first job view
to the next round's (the first round from the call to ``simulate``); it is printed apart (first-solve costs). Each phase: total seconds, median and p95 per round in milliseconds, wall beside CPU.
``--csv PATH`` appends one row per phase; ``--cprofile PATH`` also writes a cProfile of the whole run (slower).
Run from the repository root (``PYTHONPATH=$PWD`` for a worktree).
"""

from __future__ import annotations

import argparse
import cProfile
import csv
import functools
import json
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import scipy

PHASES = ("view", "estimator", "policy view", "model build", "solve: structure", "solve", "search", "decode",
          "policy (other)", "placement", "advance", "engine (other)")


class Recorder:
    """Exclusive wall and CPU time per phase, accumulated for the current round."""

    def __init__(self) -> None:
        self.stack: list[list[Any]] = []  # [phase, wall0, cpu0, child wall, child cpu]
        self.acc: dict[str, list[float]] = {}
        self.rounds: list[dict[str, tuple[float, float]]] = []
        self.round_start: tuple[float, float] | None = None
        self.decided = False

    def wrap(self, phase: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        rec = self

        @functools.wraps(fn)
        def inner(*a: Any, **k: Any) -> Any:
            rec.stack.append([phase, time.perf_counter(), time.process_time(), 0.0, 0.0])
            try:
                return fn(*a, **k)
            finally:
                ph, w0, c0, cw, cc = rec.stack.pop()
                dw, dc = time.perf_counter() - w0, time.process_time() - c0
                slot = rec.acc.setdefault(ph, [0.0, 0.0])
                slot[0] += dw - cw
                slot[1] += dc - cc
                if rec.stack:
                    rec.stack[-1][3] += dw
                    rec.stack[-1][4] += dc

        inner.__wrapped_phase__ = phase  # type: ignore[attr-defined]
        return inner

    def view_called(self) -> None:
        """Called at each job view: the first view after a ``decide`` opens the next round."""
        if self.decided:
            now = (time.perf_counter(), time.process_time())
            self.close(now)
            self.round_start = now
            self.decided = False

    def close(self, now: tuple[float, float]) -> None:
        assert self.round_start is not None
        wall, cpu = now[0] - self.round_start[0], now[1] - self.round_start[1]
        row = {k: (v[0], v[1]) for k, v in self.acc.items()}
        row["engine (other)"] = (wall - sum(v[0] for v in row.values()), cpu - sum(v[1] for v in row.values()))
        row["round"] = (wall, cpu)
        self.rounds.append(row)
        self.acc = {}


def patch(rec: Recorder, policy: Any) -> list[tuple[Any, str, Any]]:
    """Wrap the phase functions; returns what to restore."""
    import schedopt.backends.mckp as bm
    import schedopt.sia.build as sb
    import schedopt.sia.direct as sd
    import schedopt.sia.problem as sp_
    import schedopt.sim.engine as eng
    from schedopt.sim.jobs import JobState

    undo: list[tuple[Any, str, Any]] = []

    def put(obj: Any, name: str, phase: str) -> None:
        if not hasattr(obj, name):
            return
        orig = getattr(obj, name)
        if getattr(orig, "__wrapped_phase__", None):
            return
        undo.append((obj, name, orig))
        setattr(obj, name, rec.wrap(phase, orig))

    view = rec.wrap("view", eng.job_view)

    def first_view(*a: Any, **k: Any) -> Any:
        rec.view_called()
        return view(*a, **k)

    first_view.__wrapped_phase__ = "view"  # type: ignore[attr-defined]
    undo.append((eng, "job_view", eng.job_view))
    eng.job_view = first_view
    put(eng, "goodput_estimate", "estimator")
    put(eng, "_from_allocation", "placement")
    put(eng, "_from_nodes", "placement")
    put(JobState, "advance", "advance")
    put(sb, "build_formulation", "model build")
    put(sd, "formulation", "model build")  # the Sia round's direct route: the array form from the pair table
    put(bm, "analyze", "solve: structure")
    put(sd, "prepare", "solve: structure")  # ... and its mckp structure, built from the families
    put(sp_.SiaSolution, "decode", "decode")
    ss = sys.modules["schedopt.solve"]  # the module (the package's `solve` attribute is the function)
    orig_solve = ss.solve
    put(ss, "solve", "solve")
    for mod in list(sys.modules.values()):  # modules that imported solve by name
        if mod is not None and getattr(mod, "__name__", "").startswith("schedopt.") and getattr(mod, "solve", None) is orig_solve:
            put(mod, "solve", "solve")
    import schedopt

    if getattr(schedopt, "solve", None) is orig_solve:
        put(schedopt, "solve", "solve")
    cls = type(policy)
    put(cls, "problem", "policy view")  # SiaPolicy
    put(cls, "objective", "policy view")  # PolluxPolicy and subclasses
    put(cls, "build", "model build")  # PolluxExactPolicy
    pm = sys.modules.get("schedopt.sim.policies.pollux")
    if pm is not None:
        put(pm._Search, "run", "search")
    gm = sys.modules.get("schedopt.sim.policies.gavel")
    if gm is not None:
        put(gm, "build_gavel_lp", "model build")
    orig_decide = policy.decide
    wrapped = rec.wrap("policy (other)", orig_decide)

    def decide(state: Any) -> Any:
        rec.decided = True
        return wrapped(state)

    policy.decide = decide
    return undo


#: the phases inside a policy's ``decide`` (summed per round as ``policy (total)``, whose median is the issue's
#: "policy median per round")
POLICY_PHASES = ("policy view", "model build", "solve: structure", "solve", "search", "decode", "policy (other)")


def summarize(rec: Recorder, first: bool = False) -> list[dict[str, Any]]:
    rows = rec.rounds[:1] if first else rec.rounds[1:] or rec.rounds
    out = []
    for ph in (*PHASES, "policy (total)", "round"):
        if ph == "policy (total)":
            w = np.array([sum(r.get(p, (0.0, 0.0))[0] for p in POLICY_PHASES) for r in rows])
            c = np.array([sum(r.get(p, (0.0, 0.0))[1] for p in POLICY_PHASES) for r in rows])
        else:
            w = np.array([r.get(ph, (0.0, 0.0))[0] for r in rows])
            c = np.array([r.get(ph, (0.0, 0.0))[1] for r in rows])
        if not w.any() and ph not in ("round",):
            continue
        out.append({"phase": ph, "wall_s": float(w.sum()), "cpu_s": float(c.sum()),
                    "wall_ms_median": float(np.median(w) * 1e3), "cpu_ms_median": float(np.median(c) * 1e3),
                    "wall_ms_p95": float(np.percentile(w, 95) * 1e3), "cpu_ms_p95": float(np.percentile(c, 95) * 1e3)})
    return out


def table(rows: list[dict[str, Any]], title: str) -> str:
    head = f"{'phase':<18}{'wall s':>9}{'CPU s':>9}{'wall ms/rd':>12}{'CPU ms/rd':>11}{'wall p95':>10}{'CPU p95':>9}"
    lines = [title, head, "-" * len(head)]
    for r in rows:
        lines.append(f"{r['phase']:<18}{r['wall_s']:9.3f}{r['cpu_s']:9.3f}{r['wall_ms_median']:12.2f}"
                     f"{r['cpu_ms_median']:11.2f}{r['wall_ms_p95']:10.2f}{r['cpu_ms_p95']:9.2f}")
    return "\n".join(lines)


def run(policy_name: str, workload: str, cluster: str, params: dict[str, Any], estimator: str, job_model: str,
        max_time: float | None, prof: cProfile.Profile | None = None) -> tuple[Recorder, Any, float, float]:
    from schedopt import sim
    from schedopt.sim.policies import get_policy

    cl, wl = sim.cluster_preset(cluster), sim.load_workload(workload)
    pol = get_policy(policy_name, **params)
    rec = Recorder()
    undo = patch(rec, pol)
    try:
        t0, c0 = time.perf_counter(), time.process_time()
        rec.round_start = (t0, c0)
        if prof is not None:
            prof.enable()
        res = sim.simulate(cl, wl, pol, job_model=job_model, estimator=estimator, max_time=max_time, progress=False)
        if prof is not None:
            prof.disable()
        now = (time.perf_counter(), time.process_time())
        if rec.round_start is not None:
            rec.close(now)
        wall, cpu = now[0] - t0, now[1] - c0
    finally:
        for obj, name, orig in reversed(undo):
            setattr(obj, name, orig)
    return rec, res, wall, cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--policy", default="sia")
    ap.add_argument("--workload", default="saturn/1")
    ap.add_argument("--cluster", default="sia-64")
    ap.add_argument("--params", default="{}", help="policy parameters as JSON")
    ap.add_argument("--estimator", default="bootstrap")
    ap.add_argument("--job-model", default="sia")
    ap.add_argument("--max-time", type=float, default=None, help="stop the simulation there (seconds)")
    ap.add_argument("--csv", default=None, help="append one row per phase to this CSV")
    ap.add_argument("--label", default="", help="a label for the CSV rows (e.g. before / after)")
    ap.add_argument("--cprofile", default=None, help="also write a cProfile of the run to this path")
    a = ap.parse_args()
    params = json.loads(a.params)
    prof = cProfile.Profile() if a.cprofile else None
    rec, res, wall, cpu = run(a.policy, a.workload, a.cluster, params, a.estimator, a.job_model, a.max_time, prof)
    s = res.summary()
    print(f"{a.policy} on {a.workload} @ {a.cluster} (estimator {a.estimator}, params {params}): {len(rec.rounds)} "
          f"rounds, wall {wall:.2f} s, CPU {cpu:.2f} s; avg JCT {s['avg_jct_s']:.1f} s, {s['finished']}/{s['jobs']} "
          "finished")
    print(table(summarize(rec, first=True), "first round"))
    steady = summarize(rec)
    print(table(steady, f"rounds 2-{len(rec.rounds)} (totals, median and p95 per round)"))
    if prof is not None:
        prof.dump_stats(a.cprofile)
        print(f"cProfile written to {a.cprofile} (python -m pstats {a.cprofile})")
    if a.csv:
        path = Path(a.csv)
        new = not path.exists()
        env = f"python {platform.python_version()}, numpy {np.__version__}, scipy {scipy.__version__}"
        with path.open("a", newline="") as f:
            w = csv.writer(f)
            if new:
                w.writerow(["label", "policy", "workload", "cluster", "estimator", "params", "rounds", "sim_wall_s",
                            "sim_cpu_s", "avg_jct_s", "phase", "wall_s", "cpu_s", "wall_ms_median", "cpu_ms_median",
                            "wall_ms_p95", "cpu_ms_p95", "env"])
            for r in steady:
                w.writerow([a.label, a.policy, a.workload, a.cluster, a.estimator, json.dumps(params), len(rec.rounds),
                            round(wall, 2), round(cpu, 2), round(s["avg_jct_s"], 1), r["phase"],
                            *(round(r[k], 4) for k in ("wall_s", "cpu_s", "wall_ms_median", "cpu_ms_median",
                                                       "wall_ms_p95", "cpu_ms_p95")), env])


if __name__ == "__main__":
    main()
