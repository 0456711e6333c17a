"""Time the ``mckp`` backend on the Sia instances of issue 11 (and HiGHS once, up to 16384 GPUs).

    python tools/bench_mckp.py [--quick] [--repeat 3] [--seeds 0,1,2,3,4] [--no-local-search]

Prints, per instance: model build time, ``mckp`` wall time to ``mip_rel_gap`` 1e-4 and 1e-6 (median of
``--repeat`` runs, each from a fresh copy of the model so no cached structure is reused), termination, gap and the
residual backend; HiGHS once with a 60 s limit. Instances: 2048 GPUs (1024 jobs) with the job-limited default
configuration set (``max_gpus_per_job=None``, uncapped) and capped at 16 GPUs; 16384 GPUs with 20,000 jobs;
65536 GPUs with 80,000 jobs.
"""

from __future__ import annotations

import argparse
import statistics
import time

import schedopt
from schedopt.sia import generate_instance

CASES: list[tuple[str, int, int | None, int | None, bool]] = [
    # (name, gpus, jobs, max_gpus_per_job, run highs)
    ("2048 uncapped", 2048, None, None, True),
    ("2048 capped16", 2048, None, 16, True),
    ("16384 / 20000 jobs", 16384, 20000, None, True),
    ("65536 / 80000 jobs", 65536, 80000, None, False),
]


def _fresh(model: schedopt.LinearModel) -> schedopt.LinearModel:
    m = model.copy()
    m.meta.update(model.meta)
    return m


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="2048-GPU instances only")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--seeds", type=str, default=None, help="comma-separated seeds (overrides --seed)")
    ap.add_argument("--no-highs", action="store_true")
    ap.add_argument("--no-local-search", action="store_true", help="mckp option local_search=False (A/B)")
    a = ap.parse_args()
    seeds = [int(x) for x in a.seeds.split(",")] if a.seeds else [a.seed]
    extra = {"local_search": False} if a.no_local_search else {}
    for (name, gpus, jobs, cap, highs), seed in ((c, s) for c in CASES for s in seeds):
        if a.quick and gpus > 2048:
            continue
        t0 = time.perf_counter()
        inst = generate_instance(gpus, seed, jobs=jobs, max_gpus_per_job=cap)
        t1 = time.perf_counter()
        model = inst.problem().build()
        t2 = time.perf_counter()
        print(f"== {name}, seed {seed}: {len(inst.jobs)} jobs, {model.num_cols} columns, {model.num_rows} rows; "
              f"generate {t1 - t0:.2f} s, build {t2 - t1:.3f} s (build_seconds {model.build_seconds:.3f})", flush=True)
        schedopt.solve(_fresh(model), "mckp", exact=False)  # warm-up: imports
        for gap in (1e-4, 1e-6):
            times, last = [], None
            for _ in range(a.repeat):
                m = _fresh(model)
                s = time.perf_counter()
                last = schedopt.solve(m, "mckp", mip_rel_gap=gap, time_limit=60, **extra)
                times.append(time.perf_counter() - s)
            assert last is not None
            ph = {k: round(v * 1e3, 1) for k, v in last.stats.get("phase_seconds", {}).items()}
            print(f"  mckp gap {gap:g}: median {statistics.median(times) * 1e3:8.1f} ms  "
                  f"(runs {', '.join(f'{x * 1e3:.0f}' for x in times)} ms)  {last.termination}  "
                  f"gap {last.gap:.2e}  obj {last.objective:.6f}  classes {last.stats.get('classes')}  "
                  f"residual {last.stats.get('residual_columns')} cols via {last.stats.get('residual_backend')}  "
                  f"phases ms {ph}", flush=True)
        if highs and not a.no_highs:
            s = time.perf_counter()
            h = schedopt.solve(_fresh(model), "highs", time_limit=60, mip_rel_gap=1e-6)
            dt = time.perf_counter() - s
            obj = f"{h.objective:.6f}" if h.has_solution else "-"
            print(f"  highs (60 s limit, gap 1e-6): {dt:8.2f} s  {h.termination}  obj {obj}", flush=True)


if __name__ == "__main__":
    main()
