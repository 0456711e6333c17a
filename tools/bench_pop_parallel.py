"""When does parallel POP pay off? Time :func:`schedopt.pop.pop_solve` on generated Sia instances of growing size,
serial vs a 2-worker process pool vs a 2-worker Dask ``LocalCluster``.

Usage (from the repo root)::

    python tools/bench_pop_parallel.py [--sizes 64,256,1024,4096,16384] [--k 4] [--repeats 3] [--seed 0] [--backend mckp]

Each engine is started once and kept warm (its start-up cost is printed apart); every cell is the best of
``--repeats`` wall-clock runs of ``pop_solve(model, k, reference=None)`` (no reference solve, so only the
partition, the parallel part solves and the reconciliation are timed). The answers of the three engines are
checked to agree within the parts' relative MIP gap, 1e-6 (POP is seeded; the mckp backend itself was seen to differ
by ~1e-7 between two calls in one process). The table ends with the crossover: the smallest size from which a parallel
engine is at least 10% faster than serial at that and every larger size measured, or "never".
Needs ``dask[distributed]`` for the Dask column (skipped with a note without it).
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import sys
import time
from typing import Any

from schedopt.pop import pop_solve
from schedopt.sia import generate_instance


def _best(model: Any, k: int, executor: Any, repeats: int, backend: str) -> tuple[float, float]:
    best = float("inf")
    obj = float("nan")
    for _ in range(repeats):
        t = time.perf_counter()
        r = pop_solve(model, k, executor=executor, reference=None, backend=backend)
        best = min(best, time.perf_counter() - t)
        obj = r.objective_value
    return best, obj


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="64,256,1024,4096,16384", help="GPU counts (comma-separated)")
    ap.add_argument("--k", type=int, default=4, help="POP parts")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--backend", default="mckp", help="the parts' backend (mckp: POP's default; highs, cpsat, ...)")
    a = ap.parse_args(argv)
    sizes = [int(s) for s in a.sizes.split(",")]

    t = time.perf_counter()
    pool = cf.ProcessPoolExecutor(max_workers=a.workers)
    list(pool.map(abs, range(a.workers)))  # start the workers
    print(f"process pool ({a.workers} workers) start-up: {time.perf_counter() - t:.2f} s")
    client = cluster = None
    try:
        from distributed import Client, LocalCluster

        t = time.perf_counter()
        cluster = LocalCluster(n_workers=a.workers, threads_per_worker=1, processes=True, dashboard_address=None)
        client = Client(cluster)
        print(f"dask LocalCluster ({a.workers} workers) start-up: {time.perf_counter() - t:.2f} s")
    except ImportError:
        print("dask[distributed] not installed: no Dask column")
    engines: list[tuple[str, Any]] = [("serial", "serial"), (f"processes:{a.workers}", pool)]
    if client is not None:
        engines.append(("dask", client))

    print(f"\nPOP k={a.k}, parts on {a.backend}, best of {a.repeats}, wall seconds (reference=None)")
    print(f"{'GPUs':>6} {'jobs':>6} {'columns':>8} " + " ".join(f"{n:>13}" for n, _ in engines))
    wins: dict[str, int | None] = {n: None for n, _ in engines[1:]}
    try:
        for g in sizes:
            inst = generate_instance(g, a.seed)
            model = inst.problem().build()
            times = []
            objs = []
            for _name, ex in engines:
                pop_solve(model, a.k, executor=ex, reference=None, backend=a.backend)  # warm the workers' imports
                s, o = _best(model, a.k, ex, a.repeats, a.backend)
                times.append(s)
                objs.append(o)
            spread = (max(objs) - min(objs)) / max(1.0, abs(objs[0]))
            if spread > 1e-6:  # the parts are solved to a relative gap of 1e-6: beyond it the engine changed the answer
                print(f"  ! engines disagree at {g} GPUs: {objs}", file=sys.stderr)
                return 1
            print(f"{g:>6} {len(inst.problem().job_ids):>6} {model.num_cols:>8} "
                  + " ".join(f"{s:>13.3f}" for s in times), flush=True)
            for (name, _), s in zip(engines[1:], times[1:], strict=True):
                if s < 0.9 * times[0]:
                    wins[name] = g if wins[name] is None else wins[name]
                else:
                    wins[name] = None
    finally:
        pool.shutdown()
        if client is not None:
            client.close()
            cluster.close()
    for name, g in wins.items():
        print(f"crossover {name}: " + (f"at least 10% faster than serial from {g} GPUs on" if g else "never 10% faster than serial"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
