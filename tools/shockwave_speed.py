"""Before/after of the ``shockwave`` policy's speed, decision for decision (issue 26 item 6).

    python tools/shockwave_speed.py --base /tmp/wt-shock-base [--workload saturn/1] [--cluster sia-64] \\
        [--max-time 20000] [--repeat 1] [--params '{}'] [--save DIR]
    python tools/shockwave_speed.py --only-after --params '{"keep_nodes": false}' --save DIR

Runs the same simulation in fresh child processes, alternating the ``--base`` checkout (a git worktree of the
commit to compare with, e.g. ``git worktree add /tmp/wt-shock-base 854f561``) and this one, ``--repeat`` times
each. Per run: the process CPU (user + system of the child), the wall clock, the policy's CPU summed over the rounds
(``RoundRecord.policy_cpu_seconds``), the average JCT; medians over the repeats, CPU beside wall. Then it checks
that the two checkouts decided the same: every round's ``Decision.nodes`` (job -> node -> GPUs) and every job's
record (start, finish, restarts) must be identical, and prints the first difference if not. The job model is the
one of the fairness runs (``sia``). Rounds whose plan hit the solver's (wall-clock) time limit are counted: their
decision depends on how far the solver got in 15 s of wall time, on either checkout.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from statistics import median

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, sys, time
from schedopt import sim
wl, cl, cap, params, out = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4]), sys.argv[5]
pol = sim.get_policy("shockwave", **params)
decisions = []
orig = pol.decide
def decide(state):
    d = orig(state)
    decisions.append([state.round_index, sorted((j, sorted(n.items())) for j, n in d.nodes.items())])
    return d
pol.decide = decide
r = sim.simulate(sim.cluster_preset(cl), sim.load_workload(wl), pol, job_model="sia",
                 max_time=float(cap) if cap else None, progress=False)
s = r.summary()
jobs = sorted([j.id, j.start, j.finish, j.restarts] for j in r.jobs)
lim = [bool(rr.answer and (rr.answer.get("termination") or {}).get("limit")) for rr in r.rounds]
limited = sum(lim)
json.dump({"avg_jct_s": s["avg_jct_s"], "finished": s["finished"], "rounds": s["rounds"],
           "policy_cpu_s": sum(rr.policy_cpu_seconds for rr in r.rounds),
           "policy_cpu_unlimited_s": sum(rr.policy_cpu_seconds for rr, x in zip(r.rounds, lim) if not x),
           "policy_wall_s": sum(rr.policy_seconds for rr in r.rounds), "time_limited_rounds": limited,
           "decisions": decisions, "jobs": jobs}, open(out, "w"))
"""


def run_child(root: Path, workload: str, cluster: str, cap: str, params: str) -> dict:
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as tf:
        out = tf.name
    env = {**os.environ, "PYTHONPATH": str(root)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-W", "ignore", "-c", CHILD, workload, cluster, cap, params, out],
                       cwd=root, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        raise SystemExit(f"run in {root} failed:\n{p.stderr[-3000:]}")
    res = json.loads(Path(out).read_text())
    Path(out).unlink()
    res["cpu_s"] = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    res["wall_s"] = wall
    res["load_avg_1m"] = os.getloadavg()[0]
    return res


def first_difference(a: dict, b: dict) -> str | None:
    for da, db in zip(a["decisions"], b["decisions"], strict=False):
        if da != db:
            return f"round {da[0]}: before {da[1]} / after {db[1]}"
    if len(a["decisions"]) != len(b["decisions"]):
        return f"{len(a['decisions'])} rounds before, {len(b['decisions'])} after"
    for ja, jb in zip(a["jobs"], b["jobs"], strict=True):
        if ja != jb:
            return f"job {ja} before / {jb} after"
    return None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", default=None, help="the checkout to compare with (a git worktree)")
    ap.add_argument("--workload", default="saturn/1")
    ap.add_argument("--cluster", default="sia-64")
    ap.add_argument("--max-time", default="", help="cap the simulated time (seconds); empty: the whole workload")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--params", default="{}", help="the policy's options as JSON")
    ap.add_argument("--only-after", action="store_true", help="run this checkout alone (no comparison)")
    ap.add_argument("--save", default=None, help="a directory for each run's decisions and job records (JSON)")
    a = ap.parse_args()
    runs: dict[str, list[dict]] = {"before": [], "after": []}
    sides = (("after", ROOT),) if a.only_after else (("before", Path(a.base).resolve()), ("after", ROOT))
    for k in range(a.repeat):
        for label, root in sides:
            r = run_child(root, a.workload, a.cluster, a.max_time, a.params)
            runs[label].append(r)
            if a.save:
                Path(a.save).mkdir(parents=True, exist_ok=True)
                (Path(a.save) / f"{label}-{k}.json").write_text(json.dumps(r))
            print(f"{label}: cpu {r['cpu_s']:.1f} s, wall {r['wall_s']:.1f} s, policy cpu {r['policy_cpu_s']:.1f} s "
                  f"(wall {r['policy_wall_s']:.1f} s; cpu {r['policy_cpu_unlimited_s']:.1f} s in the rounds without a "
                  f"time limit hit), avg JCT {r['avg_jct_s']:.1f} s, {r['rounds']} rounds, "
                  f"{r['time_limited_rounds']} time-limited, load {r['load_avg_1m']:.1f}", flush=True)
    if a.only_after:
        return
    fields = ("cpu_s", "wall_s", "policy_cpu_s", "policy_wall_s", "policy_cpu_unlimited_s")
    med = {k: {f: median(r[f] for r in v) for f in fields} for k, v in runs.items()}
    b, f = med["before"], med["after"]
    print(f"{a.workload} @ {a.cluster}, cap {a.max_time or 'none'}, {a.repeat} run(s) each, medians:")
    print(f"  policy CPU {b['policy_cpu_s']:.1f} -> {f['policy_cpu_s']:.1f} s ({b['policy_cpu_s'] / f['policy_cpu_s']:.2f}x)"
          f", policy wall {b['policy_wall_s']:.1f} -> {f['policy_wall_s']:.1f} s")
    print(f"  policy CPU in the rounds without a time limit hit {b['policy_cpu_unlimited_s']:.1f} -> "
          f"{f['policy_cpu_unlimited_s']:.1f} s ({b['policy_cpu_unlimited_s'] / f['policy_cpu_unlimited_s']:.2f}x; "
          "a limited round's CPU is what the load left the solver in its 15 s of wall time)")
    print(f"  process CPU {b['cpu_s']:.1f} -> {f['cpu_s']:.1f} s ({b['cpu_s'] / f['cpu_s']:.2f}x), wall "
          f"{b['wall_s']:.1f} -> {f['wall_s']:.1f} s")
    diffs = [first_difference(x, y) for x in runs["before"] for y in runs["after"]]
    same = [d is None for d in diffs]
    print(f"  decisions and job records identical: {sum(same)} of {len(same)} before/after pairs; avg JCT "
          f"{runs['before'][0]['avg_jct_s']:.3f} / {runs['after'][0]['avg_jct_s']:.3f} s")
    for d in diffs:
        if d is not None:
            print("  first difference:", d)
            break


if __name__ == "__main__":
    main()
