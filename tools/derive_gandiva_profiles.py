#!/usr/bin/env python
"""Derive Gandiva job profiles from the public Gavel data (offline; the only Gandiva code that reads the shared data).

Usage::

    python tools/derive_gandiva_profiles.py [--data ../shared/data/gavel] [--out schedopt/gandiva/profiles.json]

Both defaults are relative to the repository root; paths given on the command line, to the current directory.

Source: stanford-futuredata/gavel @ c4fa40097339e9608ab71fd64c8bdea96a5e4a4c (MIT licence):
``scheduler/simulation_throughputs.json`` (measured throughputs of 26 job types alone and co-located in pairs on
one GPU) and ``scheduler/philly_job_distribution.pickle`` (decoded to ``philly_job_distribution.csv``: 33,192
``(duration_seconds, num_gpus)`` pairs from the Microsoft Philly trace).

What is derived (every figure is written into the JSON with its derivation):

* ``solo_throughput[i]``: steps/s of type ``i`` alone on one V100 (Gavel's ``"null"`` entry, scale factor 1).
* ``factor[i][j]``: throughput of ``i`` co-located with ``j`` on one V100 divided by ``i``'s solo throughput
  (Gandiva's pairwise interference factor; 0 where Gavel measured the pair as 0, i.e. the pair did not run).
* ``utilization[i]``: Gavel has no nvidia-smi utilization, so a proxy: the mean slowdown type ``i`` inflicts on the
  partners it ran with, ``1 - mean_j factor[j][i]`` over pairs that ran, clipped to [0.05, 1].
* ``memory[i]`` (fraction of one GPU's memory): Gavel has no memory figures either. Every pair that ran fitted in
  memory, so ``m_i + m_j <= 1`` holds for them (hard); the pairs measured as 0 are read as out-of-memory where
  possible (an LP minimises the total shortfall ``sum max(0, 1 - m_i - m_j)`` over them); ties are broken towards
  the largest footprints consistent with that (a second LP maximises ``sum m`` keeping the first optimum), i.e. the
  most conservative memory estimate the measurements allow.
* ``philly``: the job-size distribution (probability of 1/2/4/8 GPUs) and, per size, 41 quantiles of
  ``log10(duration_seconds)`` (0, 2.5, ..., 100th percentile) for inverse-CDF sampling.
"""

from __future__ import annotations

import argparse
import ast
import csv
import json
from pathlib import Path

import numpy as np
from scipy.optimize import linprog

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "gavel"  # ../shared/data/gavel from the repo root
COMMIT = "c4fa40097339e9608ab71fd64c8bdea96a5e4a4c"


def derive(data: Path) -> dict:
    tputs = json.loads((data / "simulation_throughputs.json").read_text())["v100"]
    keys = [k for k in tputs if ast.literal_eval(k)[1] == 1]
    names = [ast.literal_eval(k)[0] for k in keys]
    n = len(keys)
    solo = np.array([float(tputs[k]["null"]) for k in keys])
    F = np.zeros((n, n))
    for i, a in enumerate(keys):
        for j, b in enumerate(keys):
            F[i, j] = float(tputs[a][b][0]) / solo[i]
    F = np.clip(F, 0.0, 1.0)
    ran = (F > 0) & (F.T > 0)

    # utilization proxy: mean slowdown inflicted on partners that ran
    inflicted = np.array([1.0 - F[ran[:, i], i].mean() for i in range(n)])
    util = np.clip(inflicted, 0.05, 1.0)

    # memory fit: two LPs over m (n) and shortfall s (one per zero pair)
    iu, ju = np.triu_indices(n)
    ok = ran[iu, ju]
    oi, oj = iu[ok], ju[ok]
    zi, zj = iu[~ok], ju[~ok]
    nz = zi.size
    A_ok = np.zeros((oi.size, n + nz))
    np.add.at(A_ok, (np.arange(oi.size), oi), 1.0)
    np.add.at(A_ok, (np.arange(oi.size), oj), 1.0)
    A_z = np.zeros((nz, n + nz))  # -(m_i + m_j) - s <= -1
    np.add.at(A_z, (np.arange(nz), zi), -1.0)
    np.add.at(A_z, (np.arange(nz), zj), -1.0)
    A_z[np.arange(nz), n + np.arange(nz)] = -1.0
    A = np.vstack([A_ok, A_z])
    b = np.concatenate([np.ones(oi.size), -np.ones(nz)])
    bounds = [(0.02, 1.0)] * n + [(0.0, None)] * nz
    c1 = np.concatenate([np.zeros(n), np.ones(nz)])
    r1 = linprog(c1, A_ub=A, b_ub=b, bounds=bounds, method="highs")
    assert r1.status == 0, r1.message
    c2 = np.concatenate([-np.ones(n), np.zeros(nz)])
    A2 = np.vstack([A, c1[None, :]])
    b2 = np.concatenate([b, [r1.fun + 1e-7]])
    r2 = linprog(c2, A_ub=A2, b_ub=b2, bounds=bounds, method="highs")
    assert r2.status == 0, r2.message
    mem = np.round(r2.x[:n], 4)
    explained = int(np.sum(mem[zi] + mem[zj] > 1.0 + 1e-9))

    # Philly sizes and durations
    rows = list(csv.DictReader((data / "philly_job_distribution.csv").open()))
    dur = np.array([float(r["duration_seconds"]) for r in rows])
    size = np.array([int(r["num_gpus"]) for r in rows])
    sizes = sorted(set(size.tolist()))
    pct = np.linspace(0, 100, 41)
    philly = {
        "sizes": sizes,
        "probability": [round(float(np.mean(size == s)), 6) for s in sizes],
        "counts": [int(np.sum(size == s)) for s in sizes],
        "percentiles": pct.tolist(),
        "log10_duration_quantiles": {
            str(s): np.round(np.percentile(np.log10(dur[size == s]), pct), 5).tolist() for s in sizes
        },
    }
    return {
        "source": {
            "repository": "stanford-futuredata/gavel",
            "commit": COMMIT,
            "licence": "MIT",
            "files": ["scheduler/simulation_throughputs.json (worker type v100, scale factor 1)",
                      "scheduler/philly_job_distribution.pickle (as philly_job_distribution.csv)"],
            "script": "tools/derive_gandiva_profiles.py",
        },
        "derivation": {
            "solo_throughput": "Gavel 'null' entry, steps/s on one V100",
            "factor": "factor[i][j] = throughput of i co-located with j / solo throughput of i (0: the pair did not run)",
            "utilization": "proxy: 1 - mean_j factor[j][i] over partners that ran, clipped to [0.05, 1]",
            "memory": (
                "fraction of one GPU's memory; m_i + m_j <= 1 for every pair that ran (hard); "
                "min total shortfall of zero-throughput pairs, then max sum m (LPs)"
            ),
            "memory_zero_pairs_explained": f"{explained} of {nz}",
            "memory_note": (
                "the measurements bound every footprint by 0.5 (each type but one ran paired with itself) and explain "
                "none of the zero-throughput pairs by memory; those pairs are kept apart by their factor 0"
            ),
        },
        "types": names,
        "solo_throughput": np.round(solo, 6).tolist(),
        "utilization": np.round(util, 4).tolist(),
        "memory": mem.tolist(),
        "factor": np.round(F, 4).tolist(),
        "philly": philly,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DATA, help="Gavel data folder (default: %(default)s)")
    ap.add_argument("--out", type=Path, default=ROOT / "schedopt" / "gandiva" / "profiles.json")
    args = ap.parse_args()
    if not (args.data / "simulation_throughputs.json").is_file():
        ap.error(f"{args.data} holds no simulation_throughputs.json: pass the Gavel data folder as --data")
    prof = derive(args.data)
    Path(args.out).write_text(json.dumps(prof, indent=1) + "\n")
    print(f"wrote {args.out}: {len(prof['types'])} types, memory zero pairs explained "
          f"{prof['derivation']['memory_zero_pairs_explained']}")


if __name__ == "__main__":
    main()
