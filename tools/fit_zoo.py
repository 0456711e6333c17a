#!/usr/bin/env python
"""Fit the goodput-model zoo from the public Sia / Pollux artifacts (offline; the only reader of ../shared).

Usage::

    python tools/fit_zoo.py [--data ../shared/data] [--out schedopt/zoo]

Both defaults are relative to the repository root; paths given on the command line, to the current directory. The
fit uses ``schedopt.goodput`` as installed (``pip install -e .``, or ``PYTHONPATH=.`` to use this checkout's).

Writes ``<out>/pollux_models.json`` (per-model throughput parameters for every GPU type, batch limits,
gradient statistics, fit report, 1-GPU seed profiles, sample rows for the tests) and ``<out>/traces.json``
(model mix, requested GPU counts, Philly job-size / duration / age tables).  Every figure's origin is written
into the JSON (``source`` and ``derivation`` fields) and documented in ``formulations/goodput.md``.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from schedopt.goodput import JobGoodputModel, ThroughputParams, fit_throughput, prediction_errors

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"  # ../shared/data from the repo root

SIA_REPO = "siasosp23/artifacts"
SIA_COMMIT = "aaf7a0de7b6cb5eab06ea020467ede5d2fd18e70"
POLLUX_REPO = "petuum/adaptdl (branch osdi21-artifact)"
POLLUX_COMMIT = "c793c7089bd307462686339d29707925c461f9a9"

MODELS = ["bert", "cifar10", "deepspeech2", "imagenet", "ncf", "yolov3"]
#: artifact suffix -> (friendly key, human name)
GPU_SUFFIX = {
    "aws": ("t4", "NVIDIA T4 16GB (AWS g4dn.12xlarge, 4 GPUs/node)"),
    "azure": ("v100", "NVIDIA V100 (Azure ND40rs_v2, 8 GPUs/node)"),
    "dgx-ext": ("a100", "NVIDIA A100 40GB (DGX-A100, 8 GPUs/node)"),
    "quad": ("rtx6000", "NVIDIA Quadro RTX 6000 24GB (4 GPUs/node)"),
    "rtx": ("rtx2080ti", "NVIDIA RTX 2080Ti 11GB (8 GPUs/node)"),
}
#: gpu_type column of adaptdl/.../torch/{seed,profiles}/*.csv -> friendly key
SEED_TYPE = {"t4": "t4", "v100": "v100", "dgx": "a100", "quad": "rtx6000", "rtx": "rtx2080ti"}
N_CHECK_ROWS = 12  # sample rows per (model, type) shipped for the tests
QUANTILES = [0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99]


def sig(x: float, digits: int = 8) -> float:
    return float(f"{x:.{digits}g}")


def read_csv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def load_rows(tdir: Path, suffix: str) -> np.ndarray:
    """Union of placements-<suffix>.csv and scalability-<suffix>.csv as (nodes, replicas, b, step, sync)."""
    rows = set()
    for r in read_csv(tdir / f"placements-{suffix}.csv"):
        pl = r["placement"]
        rows.add((len(pl), sum(int(c) for c in pl), int(r["local_bsz"]), float(r["step_time"]), float(r["sync_time"])))
    for r in read_csv(tdir / f"scalability-{suffix}.csv"):
        rows.add((int(r["num_nodes"]), int(r["num_replicas"]), int(r["local_bsz"]), float(r["step_time"]),
                  float(r["sync_time"])))
    return np.array(sorted(rows), dtype=float)


def grad_stats(tdir: Path) -> tuple[list[float], list[float], list[float], int, dict[str, Any]]:
    """Per profiled global batch B: median grad_sqr / grad_var over the early epochs.

    Early epochs = epochs 2 .. max(2, ceil(n_epochs / 4)) (epoch 1 is a warm-up outlier, often 10-1000x
    larger); rows with grad_sqr <= 0 are dropped.
    """
    out = []
    n_epochs = 0
    for f in tdir.glob("validation-*.csv"):
        B = int(f.stem.split("-")[1])
        rows = read_csv(f)
        n_epochs = max(n_epochs, len(rows))
        hi = max(2, math.ceil(len(rows) / 4))
        early = [r for r in rows[1:hi] if float(r["grad_sqr"]) > 0] or [r for r in rows if float(r["grad_sqr"]) > 0]
        out.append((B, float(np.median([float(r["grad_sqr"]) for r in early])),
                    float(np.median([float(r["grad_var"]) for r in early]))))
    out.sort()
    return [o[0] for o in out], [sig(o[1]) for o in out], [sig(o[2]) for o in out], n_epochs, {}


def seed_profiles(adir: Path, model: str) -> tuple[dict[str, list[list[float]]], dict[str, list[float]]]:
    seed: dict[str, list[list[float]]] = {}
    for r in read_csv(adir / "seed" / f"{model}.csv"):
        if r["placement"] != "1":
            continue
        seed.setdefault(SEED_TYPE[r["gpu_type"]], []).append([int(r["local_bsz"]), sig(float(r["step_time"]), 6)])
    prof = {SEED_TYPE[r["gpu_type"]]: [int(r["local_bsz"]), sig(float(r["step_time"]), 6)]
            for r in read_csv(adir / "profiles" / f"{model}.csv")}
    return {k: sorted(v) for k, v in sorted(seed.items())}, dict(sorted(prof.items()))


def fit_models(data: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    traces = data / "sia-artifacts" / "sia-simulator" / "traces"
    adir = data / "sia-artifacts" / "adaptdl" / "adaptdl" / "adaptdl" / "torch"
    models: dict[str, Any] = {}
    report: list[dict[str, Any]] = []
    for m in MODELS:
        tdir = traces / m
        gb, gs, gv, n_epochs, _ = grad_stats(tdir)
        params: dict[str, ThroughputParams] = {}
        limits: dict[str, tuple[int, int]] = {}
        check: dict[str, list[list[float]]] = {}
        for suffix, (key, _) in GPU_SUFFIX.items():
            if not (tdir / f"placements-{suffix}.csv").exists():
                continue
            rows = load_rows(tdir, suffix)
            n, r, b, step, sync = rows.T
            t0 = time.time()
            p = fit_throughput(n, r, b, step, sync)
            p = ThroughputParams(**{k: sig(v) for k, v in p.to_dict().items()})
            rms, mx = prediction_errors(p, n, r, b, step)
            params[key] = p
            limits[key] = (int(b.min()), int(b.max()))
            rng = np.random.default_rng(len(rows))
            idx = np.sort(rng.choice(len(rows), size=min(N_CHECK_ROWS, len(rows)), replace=False))
            check[key] = [[int(x[0]), int(x[1]), int(x[2]), sig(x[3], 8)] for x in rows[idx]]
            report.append({"model": m, "gpu_type": key, "n_rows": len(rows), "rms_log_error": sig(rms, 4),
                           "max_rel_error": sig(mx, 4), "max_nodes": int(n.max()), "max_replicas": int(r.max())})
            print(f"{m:12s} {key:10s} rows={len(rows):5d} rms_log={rms:.4f} max_rel={mx:.3f} "
                  f"gamma={p.gamma:.2f} ({time.time() - t0:.1f}s)", flush=True)
        seed, prof = seed_profiles(adir, m)
        jm = JobGoodputModel(m, params, gb[0], gb[-1], limits, tuple(gb), tuple(gs), tuple(gv), n_epochs)
        d = jm.to_dict()
        d["seed_1gpu"] = seed
        d["profile_max_local_bsz"] = prof
        d["check_rows"] = check
        models[m] = d
    return models, report


def quantiles(x: np.ndarray) -> dict[str, float]:
    return {f"{q:g}": sig(float(np.quantile(x, q)), 6) for q in QUANTILES}


def freq(values: list[Any]) -> dict[str, float]:
    c = Counter(values)
    tot = sum(c.values())
    keys = sorted(c, key=lambda k: (float(k) if str(k).replace(".", "").isdigit() else math.inf, str(k)))
    return {str(k): sig(c[k] / tot, 6) for k in keys}


def workload_stats(files: list[Path]) -> dict[str, Any]:
    apps, reps, bsz, per_hour = [], [], [], []
    for f in files:
        rows = read_csv(f)
        apps += [r["application"] for r in rows]
        reps += [int(r["num_replicas"]) for r in rows]
        bsz += [f'{r["application"]}:{int(float(r["batch_size"]))}' for r in rows]
        times = np.array([float(r["time"]) for r in rows])
        per_hour.append(len(rows) / max(times.max() / 3600.0, 1e-9))
    return {
        "n_files": len(files),
        "n_jobs": len(apps),
        "model_mix": freq(apps),
        "num_replicas": freq(reps),
        "jobs_per_hour_mean": sig(float(np.mean(per_hour)), 4),
    }


def equilibrium_age_quantiles(dur: np.ndarray) -> dict[str, float]:
    """Quantiles of the age (attained service) of a job in progress at a random time, for Poisson arrivals
    with i.i.d. durations D: density P(D > a) / E[D], CDF F(a) = E[min(D, a)] / E[D]."""
    d = np.sort(dur)
    grid = np.unique(np.concatenate([d, np.geomspace(max(d.min(), 1.0), d.max(), 400)]))
    cum = np.concatenate([[0.0], np.cumsum(d)])
    k = np.searchsorted(d, grid, side="right")  # durations <= a
    e_min = (cum[k] + grid * (len(d) - k)) / len(d)
    cdf = e_min / d.mean()
    return {f"{q:g}": sig(float(np.interp(q, cdf, grid)), 6) for q in QUANTILES}


def trace_tables(data: Path) -> dict[str, Any]:
    sia = data / "sia-artifacts"
    wl = sia / "sia-simulator" / "workloads"
    out: dict[str, Any] = {
        "source": {
            "repository": SIA_REPO,
            "commit": SIA_COMMIT,
            "files": {
                "saturn": "sia-simulator/workloads/saturn/workload-{1..10}.csv",
                "philly": "sia-simulator/workloads/philly/workload-{1..8}.csv",
                "newtrace": "sia-simulator/workloads/newtrace/workload-{1..10}.csv",
                "pollux_philly": "adaptdl/benchmark/workloads/workload-{1..8}.csv (Pollux's tuned requests)",
                "philly_jobs": "sia-simulator/traces/philly.csv (Microsoft Philly trace, preprocessed by Pollux)",
            },
        },
        "workloads": {
            "saturn": workload_stats(sorted((wl / "saturn").glob("workload-*.csv"))),
            "philly": workload_stats(sorted((wl / "philly").glob("workload-*.csv"))),
            "newtrace": workload_stats(sorted((wl / "newtrace").glob("workload-*.csv"))),
            "pollux_philly": workload_stats(sorted((sia / "adaptdl" / "benchmark" / "workloads").glob("*.csv"))),
        },
    }
    rows = read_csv(sia / "sia-simulator" / "traces" / "philly.csv")
    gpus = np.array([int(float(r["num_gpus"])) for r in rows])
    dur = np.array([float(r["duration"]) for r in rows])
    ok = (dur > 0) & (gpus > 0)
    gpus, dur = gpus[ok], dur[ok]
    by_size = {}
    for lo, hi, name in [(1, 1, "1"), (2, 4, "2-4"), (5, 8, "5-8"), (9, 10**9, ">8")]:
        sel = (gpus >= lo) & (gpus <= hi)
        if sel.any():
            by_size[name] = {"fraction": sig(float(sel.mean()), 6), "duration_s": quantiles(dur[sel])}
    out["philly_jobs"] = {
        "n_jobs": int(ok.sum()),
        "note": "rows with duration > 0 and num_gpus > 0; durations in seconds",
        "num_gpus": freq(gpus.tolist()),
        "duration_s": quantiles(dur),
        "duration_s_mean": sig(float(dur.mean()), 6),
        "gpu_time_s": quantiles(dur * gpus),
        "by_num_gpus": by_size,
        "age_in_progress_s": equilibrium_age_quantiles(dur),
        "age_note": "age (attained service) of a job running at a random instant, Poisson arrivals, "
                    "i.i.d. durations: CDF F(a) = E[min(D, a)] / E[D]",
    }
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DATA, help="shared data folder (default: %(default)s)")
    ap.add_argument("--out", type=Path, default=ROOT / "schedopt" / "zoo")
    args = ap.parse_args(argv)
    if not (args.data / "sia-artifacts").is_dir():
        ap.error(f"{args.data} holds no sia-artifacts/: pass the shared data folder as --data")
    models, report = fit_models(args.data)
    gpu_types = {key: human for key, human in GPU_SUFFIX.values()}
    doc = {
        "source": {
            "repository": SIA_REPO,
            "commit": SIA_COMMIT,
            "upstream": {"repository": POLLUX_REPO, "commit": POLLUX_COMMIT},
            "files": "sia-simulator/traces/<model>/{placements,scalability}-<suffix>.csv, validation-<B>.csv; "
                     "adaptdl/adaptdl/adaptdl/torch/{seed,profiles}/<model>.csv",
        },
        "gpu_types": gpu_types,
        "gpu_suffix": {s: k for s, (k, _) in GPU_SUFFIX.items()},
        "derivation": {
            "params": "schedopt.goodput.fit_throughput on the union of placements-<suffix>.csv and "
                      "scalability-<suffix>.csv (duplicates removed); parameters rounded to 8 significant digits; "
                      "fit_report errors are of the rounded parameters over all rows",
            "init_batch": "smallest B with a validation-<B>.csv (Pollux's M0; equals the simulator's init batch)",
            "max_batch": "largest B with a validation-<B>.csv (the simulator's max batch)",
            "local_bsz_limits": "min / max local_bsz in the type's profile rows (the max equals the 1-GPU "
                                "max in adaptdl/.../profiles/<model>.csv)",
            "grad_stats": "per profiled B: median grad_sqr / grad_var over epochs 2..max(2, ceil(epochs/4)) "
                          "of validation-<B>.csv (epoch 1 is a warm-up outlier); rows with grad_sqr <= 0 dropped",
            "max_epochs": "number of rows (epochs) in validation-<B>.csv",
            "seed_1gpu": "[local_bsz, step_time] rows from adaptdl/.../torch/seed/<model>.csv (placement 1)",
            "profile_max_local_bsz": "[local_bsz, step_time] from adaptdl/.../torch/profiles/<model>.csv",
            "check_rows": f"{N_CHECK_ROWS} random profile rows per type: [nodes, replicas, local_bsz, step_time]",
        },
        "fit_report": report,
        "models": models,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "pollux_models.json").write_text(json.dumps(doc, separators=(",", ":")) + "\n")
    (args.out / "traces.json").write_text(json.dumps(trace_tables(args.data), indent=1) + "\n")
    for f in ("pollux_models.json", "traces.json"):
        print(f, (args.out / f).stat().st_size, "bytes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
