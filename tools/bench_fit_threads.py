"""Goodput fit time with OpenBLAS's default thread pool against one BLAS thread, alternating, in one run.

    python tools/bench_fit_threads.py [--rounds 7]

``schedopt.goodput.fit_throughput`` runs its L-BFGS-B fits under ``threadpool_limits(1, "blas")``; this script
times the same fit with ``blas_threads=None`` (the pool at its default size) and 1, and prints medians and the ratio.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from threadpoolctl import threadpool_info

from schedopt.goodput import fit_throughput


def rows() -> tuple[np.ndarray, ...]:
    """Six measured-shape rows (1-8 GPUs, 1-2 nodes, two batch sizes) of a synthetic job."""
    n = np.array([1, 1, 1, 2, 2, 1])
    r = np.array([1, 2, 4, 8, 8, 1])
    b = np.array([32, 32, 32, 32, 64, 64])
    step = 0.1 + 0.002 * b + 0.01 * r
    sync = 0.01 * (r > 1) * r
    return n, r, b, step, sync


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=7)
    a = ap.parse_args()
    pool = max((i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"), default=1)
    data = rows()
    times: dict[str, list[float]] = {"default": [], "one": []}
    for _ in range(a.rounds):
        for label in ("default", "one"):
            t = time.process_time()
            fit_throughput(*data, blas_threads=None if label == "default" else 1)
            times[label].append(time.process_time() - t)
    d, o = statistics.median(times["default"]), statistics.median(times["one"])
    print(f"BLAS pool {pool} threads; CPU seconds per fit, median of {a.rounds}: default pool {d:.3f}, "
          f"one thread {o:.3f}, ratio {d / o:.1f}x")


if __name__ == "__main__":
    main()
