"""Rounds at 100,000 GPUs (issue 42 item 3): the Sia round and the simulator's per-round path per cluster size.

    nice -n 10 python tools/bench_scale.py --sizes 16384,65536,131072 --repeat 5 --out benchmarks/scale_rounds.csv
    nice -n 10 python tools/bench_scale.py --sim-sizes 2048,16384 --out benchmarks/scale_rounds.csv

Per size ``G`` (GPUs, ``G`` jobs: the shape of ``schedopt.sia.generate_instance``, whose 8,192-job cap for fuzzing is
lifted here for the benchmark's own instances): CPU seconds (``time.process_time``: the machine is shared) of
generating the instance, building the model, solving it with ``mckp`` to a certified ``mip_rel_gap`` 1e-4 (median of
``--repeat`` solves, each of a fresh copy; the gap is the solver's proven one: its bound is the Lagrangian function
evaluated over every column), placing the allocation on nodes; POP beside it (``--pop-k`` parts solved one after
the other by ``mckp`` in this process, so that its CPU seconds are all counted; its loss against mckp's proven
bound) and HiGHS (one thread, ``--highs-limit`` seconds, up to ``--highs-up-to`` GPUs: what it achieved, its
objective's gap against mckp's bound); peak resident memory after mckp's solves and place, and after HiGHS. With
``--sim-sizes``: one simulated round of ``schedopt.sim`` (``sia`` on ``sia-<G>``, ``G`` jobs of ``saturn/1``'s
applications arriving at 0, the oracle estimator), CPU seconds per round (median over ``--rounds`` rounds, the first
round apart: it starts every job). Appends rows to ``--out``.
"""

from __future__ import annotations

import argparse
import csv
import json
import resource
import statistics
import subprocess
import sys
import time
import warnings
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

#: HiGHS's child process is killed after this many times its time limit of wall time (plus 60 s for the build)
HIGHS_WALL_FACTOR = 3


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def sia_round(gpus: int, seed: int, repeat: int, highs: bool, highs_limit: float = 60.0,
              pop_k: int = 0) -> dict[str, Any]:
    import schedopt
    import schedopt.sia.generate as gen
    from schedopt.pop import pop_solve
    from schedopt.sia.problem import SiaSolution

    gen.MAX_JOBS = max(gen.MAX_JOBS, gpus)  # the fuzz-safety cap of the generator, lifted for this instance only
    c0 = time.process_time()
    inst = gen.generate_instance(gpus, seed, jobs=gpus)
    c1 = time.process_time()
    prob = inst.problem()
    form = prob.formulation()
    c2 = time.process_time()
    model = form.model
    times, res = [], None
    for _ in range(repeat):
        m = model.copy()
        m.meta.update(model.meta)
        s = time.process_time()
        res = schedopt.solve(m, "mckp", mip_rel_gap=1e-4)
        times.append(time.process_time() - s)
    assert res is not None
    sol = SiaSolution.decode(prob, form, res)
    s = time.process_time()
    pl = sol.place()
    place_s = time.process_time() - s
    row: dict[str, Any] = {
        "part": "sia-round", "gpus": gpus, "jobs": len(inst.jobs), "columns": model.num_cols, "rows": model.num_rows,
        "generate_cpu_s": round(c1 - c0, 3), "build_cpu_s": round(c2 - c1, 3),
        "solve_cpu_s_median": round(statistics.median(times), 3), "solve_cpu_s_runs": " ".join(f"{x:.3f}" for x in times),
        "termination": str(res.termination.reason.name), "gap": f"{res.gap:.2e}", "place_cpu_s": round(place_s, 3),
        "placed": len(pl.assignments), "pop": "", "highs": "", "peak_rss_mb": round(_rss_mb(), 1),
        "peak_rss_mb_highs": ""}
    sign = 1.0 if model.maximize else -1.0

    def vs_bound(obj: float) -> str:  # relative distance of an objective from mckp's proven bound (>= 0)
        return f"{sign * (res.bound - obj) / max(abs(res.bound), 1e-10):.1e}"

    if pop_k:
        s = time.process_time()
        p = pop_solve(model.copy(), pop_k, executor="serial", mip_rel_gap=1e-4, reference=None)
        row["pop"] = (f"k={pop_k}: {time.process_time() - s:.2f} s CPU, "
                      + (f"{vs_bound(p.objective)} from the bound" if p.feasible else "infeasible union"))
    if highs:
        row["highs"], row["peak_rss_mb_highs"] = highs_child(gpus, seed, highs_limit, vs_bound)
    return row


def highs_child(gpus: int, seed: int, limit: float, vs_bound: Callable[[float], str]) -> tuple[str, float | str]:
    """HiGHS on the same instance in a child process (it rebuilds it from the seed), killed after ``HIGHS_WALL_FACTOR``
    times its time limit of wall time: HiGHS 1.12 did not check its limit before the root node on these models (a
    10 s limit at 16,384 GPUs ran 236-267 s of wall time, 70 s of CPU, before its first LP iteration)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    cmd = [sys.executable, __file__, "--highs-child", f"{gpus},{seed},{limit}"]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=HIGHS_WALL_FACTOR * limit + 60)
        ans = json.loads(out.stdout.strip().splitlines()[-1])
    except subprocess.TimeoutExpired:
        ans = None
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    if ans is None:
        return (f"killed after {HIGHS_WALL_FACTOR * limit + 60:.0f} s of wall time ({cpu:.0f} s CPU, its build "
                f"included) before it returned from its {limit:g} s limit: no answer"), ""
    got = f", {vs_bound(ans['objective'])} from mckp's bound" if ans["objective"] is not None else ", no incumbent"
    return f"{ans['cpu']:.1f} s CPU, {ans['termination']}{got}", round(ans["peak_rss_mb"], 1)


def highs_run(spec: str) -> int:
    """The child of :func:`highs_child`: build the instance, solve it with HiGHS, print one JSON line."""
    import schedopt
    import schedopt.sia.generate as gen

    g, sd, lim = spec.split(",")
    gpus = int(g)
    gen.MAX_JOBS = max(gen.MAX_JOBS, gpus)
    model = gen.generate_instance(gpus, int(sd), jobs=gpus).problem().formulation().model
    s = time.process_time()
    h = schedopt.solve(model, "highs", time_limit=float(lim), mip_rel_gap=1e-4, threads=1)
    print(json.dumps({"cpu": time.process_time() - s, "termination": str(h.termination),
                      "objective": h.objective if h.has_solution else None, "peak_rss_mb": _rss_mb()}))
    return 0


def sim_round(gpus: int, rounds: int) -> dict[str, Any]:
    from schedopt import sim
    from schedopt.sim.workloads import Workload, WorkloadJob

    base = sim.load_workload("saturn/1").jobs
    jobs = tuple(WorkloadJob(f"j{k}", 0.0, base[k % len(base)].application, base[k % len(base)].num_replicas,
                             base[k % len(base)].batch_size) for k in range(gpus))
    marks: list[float] = []
    warnings.simplefilter("ignore", RuntimeWarning)  # the run stops at its cap on purpose

    def observe(done: int, t: float, fin: int, total: int) -> None:
        marks.append(time.process_time())

    start = time.process_time()
    sim.simulate(sim.cluster_preset(f"sia-{gpus}"), Workload(f"scale-{gpus}", jobs), sim.get_policy("sia"),
                 job_model="sia", estimator="oracle", max_time=60.0 * (rounds + 1) - 1, observer=observe,
                 progress=False)
    per = [b - a for a, b in zip([start, *marks], marks, strict=False)]
    return {"part": "sim-round", "gpus": gpus, "jobs": gpus, "first_round_cpu_s": round(per[0], 3),
            "round_cpu_s_median": round(statistics.median(per[1:]) if len(per) > 1 else per[0], 3),
            "round_cpu_s_runs": " ".join(f"{x:.3f}" for x in per), "peak_rss_mb": round(_rss_mb(), 1)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="", help="Sia round sizes, comma-separated GPUs (= jobs)")
    ap.add_argument("--sim-sizes", default="", help="simulated round sizes, comma-separated GPUs (= jobs)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--highs-up-to", type=int, default=131072, help="HiGHS beside mckp up to this many GPUs")
    ap.add_argument("--highs-limit", type=float, default=60.0, help="HiGHS's time limit, seconds")
    ap.add_argument("--pop-k", type=int, default=8, help="POP's parts (0: no POP)")
    ap.add_argument("--out", default="benchmarks/scale_rounds.csv")
    ap.add_argument("--highs-child", default="", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.highs_child:
        return highs_run(a.highs_child)
    rows = [sia_round(int(g), a.seed, a.repeat, int(g) <= a.highs_up_to, a.highs_limit, a.pop_k)
            for g in a.sizes.split(",") if g]
    rows += [sim_round(int(g), a.rounds) for g in a.sim_sizes.split(",") if g]
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    cols = ["date", "part", "gpus", "jobs", "columns", "rows", "generate_cpu_s", "build_cpu_s", "solve_cpu_s_median",
            "solve_cpu_s_runs", "termination", "gap", "place_cpu_s", "placed", "pop", "highs", "first_round_cpu_s",
            "round_cpu_s_median", "round_cpu_s_runs", "peak_rss_mb", "peak_rss_mb_highs"]
    new = not out.exists()
    with out.open("a", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols)
        if new:
            w.writeheader()
        for r in rows:
            w.writerow({"date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M"), **r})
            print(r, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
