"""Realistic resource-sensitivity matrices and instances.

* :func:`memory_throughput` -- Synergy's analytic memory model (optimistic profiling): with a MinIO-style cache
  every epoch has the same hit rate, so memory need not be profiled.
* :func:`binary_search_cpu_profile` -- Synergy's CPU profiling by binary search over the CPU grid, reporting the
  points it measured.
* :func:`optimistic_profile` -- both together: a W matrix from a CPU-rate curve and a few data-pipeline figures.
* :func:`load_profiles` -- the shipped matrices of the Synergy simulator (``profiles.json``, see its ``source``).
* :func:`generate_instance` -- Synergy's default cluster (8 GPUs, 24 CPUs, 500 GB per server) and a job mix.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from functools import cache
from importlib import resources
from typing import Any

import numpy as np

from ..errors import InputError
from .spec import MAX_GPUS, Server, SynergyInstance, SynergyJob, check_number

__all__ = [
    "GPU_DEMAND",
    "binary_search_cpu_profile",
    "default_cluster",
    "generate_instance",
    "load_profiles",
    "memory_throughput",
    "optimistic_profile",
    "profile_job",
]

#: GPU demand distribution of generated jobs (share of jobs asking for 1, 2, 4, 8 GPUs)
GPU_DEMAND: dict[int, float] = {1: 0.6, 2: 0.15, 4: 0.15, 8: 0.1}
#: the largest cluster :func:`generate_instance` fills with jobs (8x the paper's largest simulated cluster): drawing
#: and validating a job costs about 0.3 ms and an allocation of them more, so 362,880 GPUs did not answer in 5 s
#: (issue 20's long fuzz run) and 16,384 GPUs took 7 s with a proportional allocation; 4,096 GPUs take about 2 s
MAX_GENERATED_GPUS = 4096


def memory_throughput(
    cpu_rate: Any,
    mem_gb: Any,
    *,
    dataset_gb: float,
    storage_mbps: float,
    sample_mb: float,
    base_mem_gb: float = 0.0,
    thrash_factor: float = 0.1,
) -> np.ndarray:
    """Per-GPU samples/s with CPU-bound rate ``cpu_rate`` (shape A) and ``mem_gb`` GB (shape B): an (A, B) array.

    The cache holds ``max(0, mem - base_mem_gb)`` GB of the ``dataset_gb`` per-GPU dataset; with a MinIO cache
    the hit rate is the same every epoch, ``h = min(1, cache / dataset)``. Misses are read from storage at
    ``storage_mbps``: the I/O-bound rate is ``storage_mbps / ((1 - h) * sample_mb)`` (unbounded when h = 1).
    Throughput is the smaller of the two rates; below ``base_mem_gb`` the process thrashes and runs at
    ``thrash_factor`` of its CPU-bound rate (the 0.1 of Synergy's 20.8 GB column).
    """
    for nm, v in (("dataset_gb", dataset_gb), ("storage_mbps", storage_mbps), ("sample_mb", sample_mb)):
        if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
            raise InputError(nm, v, "must be a positive number")
    r = np.asarray(cpu_rate, dtype=np.float64)[:, None]
    m = np.asarray(mem_gb, dtype=np.float64)[None, :]
    cache_gb = np.maximum(m - base_mem_gb, 0.0)
    h = np.minimum(cache_gb / dataset_gb, 1.0)
    with np.errstate(divide="ignore"):
        io = np.where(h >= 1.0, np.inf, storage_mbps / ((1.0 - h) * sample_mb))
    out = np.minimum(r, io)
    return np.where(m < base_mem_gb, thrash_factor * r, out) * np.ones_like(out)


def binary_search_cpu_profile(
    measure: Callable[[float], float], cpu_grid: Sequence[float], *, threshold: float = 0.1
) -> tuple[np.ndarray, list[float]]:
    """Profile throughput over ``cpu_grid`` by Synergy's binary search; return (estimates per grid point, CPUs measured).

    Measures the largest and smallest CPU counts, then bisects the grid indices: at the midpoint, if the gain of
    the largest count over it (``W(max) / W(mid) - 1``) is below ``threshold`` the curve has saturated by mid and
    the lower half is searched, else the upper half. Unmeasured points are interpolated linearly (in CPUs) between
    measured ones. ``len(points)`` is the profiling cost (vs ``len(cpu_grid)`` for exhaustive profiling).
    """
    grid = np.asarray(cpu_grid, dtype=np.float64)
    if grid.ndim != 1 or grid.size == 0 or (np.diff(grid) <= 0).any():
        raise InputError("cpu_grid", list(cpu_grid), "must be a non-empty strictly increasing sequence")
    if not (isinstance(threshold, (int, float)) and threshold >= 0):
        raise InputError("threshold", threshold, "must be a non-negative number")
    seen: dict[int, float] = {}

    def at(i: int) -> float:
        if i not in seen:
            v = float(measure(float(grid[i])))
            if not (math.isfinite(v) and v > 0):
                raise InputError(f"measure({grid[i]:g})", v, "must return a positive finite throughput")
            seen[i] = v
        return seen[i]

    lo, hi = 0, grid.size - 1
    top = at(hi)
    at(lo)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if top / at(mid) - 1.0 < threshold:
            hi = mid
        else:
            lo = mid
    idx = np.array(sorted(seen))
    est = np.interp(grid, grid[idx], np.array([seen[i] for i in idx]))
    return est, [float(grid[i]) for i in idx]


def optimistic_profile(
    cpu_rate: Callable[[float], float],
    cpu_grid: Sequence[float],
    mem_grid: Sequence[float],
    proportional: tuple[float, float],
    *,
    dataset_gb: float,
    storage_mbps: float,
    sample_mb: float,
    base_mem_gb: float = 0.0,
    threshold: float = 0.1,
) -> tuple[np.ndarray, list[float]]:
    """A normalised W matrix by optimistic profiling: CPUs by binary search (at full memory, i.e. CPU-bound),
    memory by :func:`memory_throughput`; normalised to 1.0 at the ``proportional`` (CPUs, GB) per GPU point
    (bilinear when off the grid). Returns (W, CPU counts measured)."""
    est, points = binary_search_cpu_profile(cpu_rate, cpu_grid, threshold=threshold)
    raw = memory_throughput(
        est, mem_grid, dataset_gb=dataset_gb, storage_mbps=storage_mbps, sample_mb=sample_mb, base_mem_gb=base_mem_gb
    )
    from .spec import proportional_throughput

    tmp = SynergyJob("_", 1, np.asarray(cpu_grid, float), np.asarray(mem_grid, float), raw)
    ref, _ = proportional_throughput(tmp, proportional)
    if not ref > 0:
        raise InputError("proportional", proportional, "throughput there is zero; cannot normalise")
    return raw / ref, points


#: data-pipeline figures per model class for synthetic jobs: (GPU-bound samples/s, samples/s per CPU core,
#: dataset GB per GPU, sample MB, resident GB); storage bandwidth per GPU comes from the cluster
_CLASS_PARAMS: dict[str, tuple[tuple[float, float], tuple[float, float], tuple[float, float], float, float]] = {
    "image": ((400.0, 1200.0), (100.0, 200.0), (100.0, 160.0), 0.11, 30.0),
    "speech": ((500.0, 1200.0), (80.0, 160.0), (120.0, 200.0), 0.25, 30.0),
    "language": ((200.0, 600.0), (800.0, 1600.0), (5.0, 15.0), 0.01, 10.0),
}


def profile_job(
    job_id: str,
    gpus: int,
    kind: str,
    rng: np.random.Generator,
    *,
    cpu_grid: Sequence[float] = (1, 2, 3, 4, 5, 6, 9, 12, 24),
    mem_grid: Sequence[float] = (20.83, 62.5, 125.0, 187.5, 250.0),
    proportional: tuple[float, float] = (3.0, 62.5),
    storage_mbps: float = 62.5,
    threshold: float = 0.1,
) -> tuple[SynergyJob, list[float]]:
    """A synthetic job of class ``kind`` (image / speech / language) profiled optimistically.

    True CPU-bound rate: ``min(gpu_rate, per_core * c)`` (a preprocessing pipeline feeding the GPU). Returns the
    job and the CPU counts the binary search measured.
    """
    if kind not in _CLASS_PARAMS:
        raise InputError("kind", kind, f"must be one of {sorted(_CLASS_PARAMS)}")
    gr, pc, ds, smb, base = _CLASS_PARAMS[kind]
    gpu_rate = float(rng.uniform(*gr))
    per_core = float(rng.uniform(*pc))
    dataset = float(rng.uniform(*ds))
    W, pts = optimistic_profile(
        lambda c: min(gpu_rate, per_core * c),
        cpu_grid,
        mem_grid,
        proportional,
        dataset_gb=dataset,
        storage_mbps=storage_mbps,
        sample_mb=smb,
        base_mem_gb=base,
        threshold=threshold,
    )
    job = SynergyJob(job_id, int(gpus), np.asarray(cpu_grid, float), np.asarray(mem_grid, float), np.round(W, 6))
    return job, pts


@cache
def _profiles_text() -> str:
    return resources.files(__package__).joinpath("profiles.json").read_text()


def load_profiles() -> dict[str, Any]:
    """The shipped Synergy matrices: ``{"cpu_grid", "mem_grid", "models": {name: {"class", "tput", ...}}, "source"}``."""
    return json.loads(_profiles_text())


def default_cluster(gpus: int = 128, *, gpus_per_server: int = 8, cpus_per_server: float = 24.0, mem_per_server: float = 500.0) -> list[Server]:
    """Synergy's default cluster: ``gpus / 8`` servers of 8 GPUs, 24 CPUs, 500 GB (default: 16 servers)."""
    if isinstance(gpus, bool) or not isinstance(gpus, (int, np.integer)) or gpus <= 0:
        raise InputError("gpus", gpus, "must be a positive integer")
    if gpus > MAX_GPUS:
        raise InputError("gpus", gpus, f"must be <= MAX_GPUS = {MAX_GPUS}")
    if isinstance(gpus_per_server, bool) or not isinstance(gpus_per_server, (int, np.integer)) or gpus_per_server <= 0:
        raise InputError("gpus_per_server", gpus_per_server, "must be a positive integer")
    if gpus_per_server > gpus:
        raise InputError("gpus_per_server", gpus_per_server, f"must be <= gpus={gpus}")
    check_number("cpus_per_server", cpus_per_server)
    check_number("mem_per_server", mem_per_server)
    if gpus % gpus_per_server:
        raise InputError("gpus", gpus, f"must be a multiple of gpus_per_server={gpus_per_server}")
    return [Server(gpus_per_server, float(cpus_per_server), float(mem_per_server)) for _ in range(gpus // gpus_per_server)]


def generate_instance(
    gpus: int = 128,
    seed: int = 0,
    *,
    source: str = "profiles",
    load: float = 1.0,
    class_split: dict[str, float] | None = None,
    gpu_demand: dict[int, float] | None = None,
    zoo_only: bool = True,
    weighted: bool = False,
    gpus_per_server: int = 8,
    cpus_per_server: float = 24.0,
    mem_per_server: float = 500.0,
) -> Any:
    """A :class:`~schedopt.synergy.io.SynergyInstance` on :func:`default_cluster`.

    Jobs are drawn until they ask for ``load x gpus`` GPUs: model class by ``class_split`` (Synergy's default
    image / language / speech = 20 / 70 / 10 %), GPU count by ``gpu_demand`` (default :data:`GPU_DEMAND`, capped
    to the GPUs left). ``source="profiles"``: the job's matrix is the shipped Synergy matrix of a model of that
    class (the simulator's model zoo unless ``zoo_only=False``); ``source="synthetic"``: :func:`profile_job`
    (optimistic profiling; ``instance.profiling`` then records the CPU points each job's search measured).
    """
    servers = default_cluster(gpus, gpus_per_server=gpus_per_server, cpus_per_server=cpus_per_server, mem_per_server=mem_per_server)
    if gpus > MAX_GENERATED_GPUS:
        raise InputError("gpus", gpus, f"must be <= MAX_GENERATED_GPUS = {MAX_GENERATED_GPUS} (the jobs are drawn one "
                         "by one; build larger instances from your own jobs)")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0):
        raise InputError("seed", seed, "must be a non-negative integer (or None: fresh entropy)")
    if source not in ("profiles", "synthetic"):
        raise InputError("source", source, "must be 'profiles' or 'synthetic'")
    if isinstance(load, bool) or not (isinstance(load, (int, float, np.integer, np.floating)) and 0 < load <= 1):
        raise InputError("load", load, "must be in (0, 1]")
    split = class_split or {"image": 0.2, "language": 0.7, "speech": 0.1}
    demand = gpu_demand or GPU_DEMAND
    rng = np.random.default_rng(seed)
    prof = load_profiles()
    by_class: dict[str, list[str]] = {}
    for name, e in prof["models"].items():
        if e["in_model_zoo"] or not zoo_only:
            by_class.setdefault(e["class"], []).append(name)
    classes = list(split)
    for c in classes:
        if c not in by_class:
            raise InputError(f"class_split.{c}", split[c], f"no shipped model of class {c!r}")
    cp = np.array([split[c] for c in classes], dtype=float)
    sizes = np.array(sorted(demand), dtype=np.int64)
    sp_ = np.array([demand[int(s)] for s in sizes], dtype=float)
    share = (cpus_per_server / gpus_per_server, mem_per_server / gpus_per_server)
    target = math.floor(load * gpus)
    jobs: list[SynergyJob] = []
    profiling: dict[str, list[float]] = {}
    used = 0
    while used < target:
        cls = classes[int(rng.choice(len(classes), p=cp / cp.sum()))]
        g = int(rng.choice(sizes, p=sp_ / sp_.sum()))
        g = min(g, target - used)
        jid = f"j{len(jobs)}"
        if source == "profiles":
            name = by_class[cls][int(rng.integers(len(by_class[cls])))]
            e = prof["models"][name]
            jobs.append(SynergyJob(f"{jid}-{name}", g, np.array(prof["cpu_grid"]), np.array(prof["mem_grid"]), np.array(e["tput"])))
        else:
            job, pts = profile_job(f"{jid}-{cls}", g, cls, rng, proportional=share)
            jobs.append(job)
            profiling[job.id] = pts
        used += g
    return SynergyInstance(servers=servers, jobs=jobs, weighted=weighted, profiling=profiling)
