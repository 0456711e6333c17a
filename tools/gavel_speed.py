"""CPU seconds of ``schedopt.gavel.solve_spec`` per objective on generated instances (median of --repeat runs).

    PYTHONPATH=$PWD python tools/gavel_speed.py --sizes 512,2048 --backend highs --repeat 3
"""

from __future__ import annotations

import argparse
import statistics
import time

from schedopt.gavel import OBJECTIVES, generate, solve_spec
from schedopt.problem import SolveOptions


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="512,2048")
    ap.add_argument("--backend", default="highs")
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    print("| GPUs | jobs | objective | CPU s (median) | wall s (median) | LPs |")
    print("|---|---|---|---|---|---|")
    for g in (int(x) for x in a.sizes.split(",")):
        for o in OBJECTIVES:
            spec = generate(g, 0, objective=o)
            cpu, wall = [], []
            for _ in range(a.repeat):
                c, w = time.process_time(), time.perf_counter()
                ans = solve_spec(spec, SolveOptions(backend=a.backend))
                cpu.append(time.process_time() - c)
                wall.append(time.perf_counter() - w)
            ans.raise_for_status()
            lps = ans.iterations or (2 if o == "max_min" and spec.efficient else 1)
            print(f"| {g} | {spec.num_jobs} | {o} | {statistics.median(cpu):.3f} | {statistics.median(wall):.3f} | {lps} |")


if __name__ == "__main__":
    main()
