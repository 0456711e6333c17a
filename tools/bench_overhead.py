"""The benchmark harness's fixed cost per run (issue 26): a sweep's process CPU (this process and its run
processes) minus the sum of the runs' measured paths (``t_path``), per run, fresh processes against ``warm=True``.

    python tools/bench_overhead.py --seeds 10 --backend mckp

Run from the repository root (``PYTHONPATH=$PWD`` for a worktree). Prints one line per mode.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys


def one(warm: bool, seeds: int, backend: str, gpus: int) -> None:
    from schedopt import bench

    recs = bench.run("sia", sizes=[gpus], seeds=list(range(seeds)), loads=["normal"], backends=[backend],
                     progress=False, warm=warm)
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime
    path = sum(r.t_path or 0.0 for r in recs)
    later = [r.t_wall - (r.t_path or 0.0) for r in recs[1:]]
    print(f"{'warm ' if warm else 'fresh'}: {len(recs)} runs, process CPU {cpu:.2f} s, sum t_path {path:.3f} s, "
          f"fixed cost {(cpu - path) / len(recs):.3f} s CPU per run; wall minus t_path after the first run: median "
          f"{sorted(later)[len(later) // 2] if later else float('nan'):.3f} s; objectives "
          f"{[round(r.objective, 6) for r in recs if r.objective is not None]}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--backend", default="mckp")
    ap.add_argument("--gpus", type=int, default=64)
    ap.add_argument("--mode", choices=("both", "fresh", "warm"), default="both")
    a = ap.parse_args()
    if a.mode == "both":  # each mode in its own process, so the CPU counts are apart
        for mode in ("fresh", "warm"):
            subprocess.run([sys.executable, __file__, "--seeds", str(a.seeds), "--backend", a.backend, "--gpus",
                            str(a.gpus), "--mode", mode], check=True)
        return
    one(a.mode == "warm", a.seeds, a.backend, a.gpus)


if __name__ == "__main__":
    main()
