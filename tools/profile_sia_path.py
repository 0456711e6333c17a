"""Time the Sia path phase by phase on generated instances (medians over repetitions, one process, one core).

    python tools/profile_sia_path.py --sizes 512,2048 --repeat 10 [--backend mckp] [--gap 1e-4] [--profile place]

Phases: ``problem`` (SiaProblem construction and the pair table, goodput-model evaluation included; ``goodput`` is
that evaluation alone), ``build`` (the LinearModel), ``solve`` (schedopt.solve), ``decode`` (the allocation from the
solution), ``place`` (schedopt.sia.place from empty). ``ours`` is the total without the solve. ``--profile PHASE``
runs cProfile over that phase at the largest size and prints the top functions.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import statistics
import time

import schedopt
from schedopt.sia import SiaSolution, generate_instance, place

PHASES = ("problem", "goodput", "build", "solve", "decode", "place", "ours", "total")


def run_once(inst, backend: str, gap: float) -> dict[str, float]:
    t0 = time.perf_counter()
    prob = inst.problem()
    pt = prob.valid_pairs()
    t1 = time.perf_counter()
    m = prob.build()
    t2 = time.perf_counter()
    res = schedopt.solve(m, backend, mip_rel_gap=gap)
    t3 = time.perf_counter()
    sol = SiaSolution(problem=prob, model=m, result=res, backend=backend)
    alloc = sol.allocation
    t4 = time.perf_counter()
    pl = place(inst.cluster, alloc, rigid=[j.id for j in inst.jobs if j.kind == "rigid"])
    t5 = time.perf_counter()
    assert pl.unplaced == ()
    return {"problem": t1 - t0, "goodput": pt.goodput_seconds, "build": t2 - t1, "solve": t3 - t2,
            "decode": t4 - t3, "place": t5 - t4, "ours": (t5 - t0) - (t3 - t2), "total": t5 - t0}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="512,2048")
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--backend", default="mckp")
    ap.add_argument("--gap", type=float, default=1e-4)
    ap.add_argument("--profile", choices=("problem", "build", "place"), default=None)
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    for gpus in sizes:
        inst = generate_instance(gpus, args.seed)
        run_once(inst, args.backend, args.gap)  # warm up (imports, caches of the zoo models)
        runs = [run_once(inst, args.backend, args.gap) for _ in range(args.repeat)]
        med = {k: statistics.median(r[k] for r in runs) * 1e3 for k in PHASES}
        print(f"{gpus:6d} GPUs {len(inst.jobs):5d} jobs  " + "  ".join(f"{k}={med[k]:.2f}ms" for k in PHASES))
    if args.profile:
        inst = generate_instance(sizes[-1], args.seed)
        prob = inst.problem()
        m = prob.build()
        alloc = SiaSolution(problem=prob, model=m, result=schedopt.solve(m, args.backend, mip_rel_gap=args.gap),
                            backend=args.backend).allocation
        work = {
            "problem": lambda: inst.problem().valid_pairs(),
            "build": lambda: prob.build(),
            "place": lambda: place(inst.cluster, alloc, rigid=[j.id for j in inst.jobs if j.kind == "rigid"]),
        }[args.profile]
        pr = cProfile.Profile()
        pr.enable()
        for _ in range(args.repeat):
            work()
        pr.disable()
        pstats.Stats(pr).sort_stats("tottime").print_stats(20)


if __name__ == "__main__":
    main()
