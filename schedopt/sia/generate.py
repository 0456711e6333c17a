"""Seeded Sia instances: the 64-GPU heterogeneous cluster scaled up, and jobs drawn from the public trace tables.

``cluster(gpus)``: the Sia paper's 64-GPU heterogeneous shape — 6 nodes x 4 T4, 2 nodes x 8 A100, 3 nodes x 8
RTX 2080Ti — with every node count multiplied by ``k = gpus / 64`` (``gpus`` a multiple of 64; 16384 allowed).

``generate_instance(gpus, seed, jobs=None, load="normal")``: ``gpus // 2`` jobs under ``"normal"`` load (2048 GPUs
-> 1024 jobs) and ``gpus`` jobs under ``"heavy"``; ``jobs`` overrides the count. Deterministic per seed (one
``numpy.random.Generator``). Generator choices (documented in ``formulations/sia.md``):

* model per job from the Saturn trace's model mix (``schedopt.zoo.trace_stats()``), goodput from
  ``schedopt.zoo.load_model`` (one shared model object per name);
* kinds: 85 % adaptive, 10 % strong-scaling, 5 % rigid (``rigid_gpus`` in {1, 2, 4, 8});
* 5 % hybrid-parallel (``scale_unit = min_gpus = 2``); BERT and DeepSpeech2 jobs are treated as memory-limited and
  may not use the 11 GB RTX 2080Ti;
* attained GPU-seconds (only with settings whose ``rigid_restart_by_attained`` reads them; else 0, which keeps the
  canonical instance files): 0 for new jobs, else age x U(0.2, 1) x max(profiled GPUs, 1) (drawn last);
* 30 % new jobs (``max_profiled_gpus = 0``, age < 5 min); the others have run at 1..16 GPUs, their ages drawn from
  the Philly in-progress age quantiles, restarts ~ Poisson(1), restart cost uniform in [30, 120] s;
* running jobs get a current configuration (at most the GPUs they have run at) while it fits the free GPUs of its
  type, up to 80 % (normal) / 95 % (heavy) of each type; 5 % of running jobs are non-preemptible.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import InputError
from .configs import generate_configs
from .problem import SiaProblem
from .settings import SiaSettings
from .spec import MAX_GPUS, Cluster, Config, GpuType, Job

__all__ = ["BASE_SHAPE", "DEFAULT_MIX", "MAX_JOBS", "MEMORY_LIMITED", "SiaInstance", "cluster", "generate_instance"]

#: (name, gpus per node, nodes) of the 64-GPU heterogeneous cluster
BASE_SHAPE: tuple[tuple[str, int, int], ...] = (("t4", 4, 6), ("a100", 8, 2), ("rtx2080ti", 8, 3))
#: the most jobs generate_instance draws: drawing and validating a job costs 100-300 us and building its model more,
#: so 2**20 jobs ran for minutes (issue 20's fuzzer: 362,880 GPUs, i.e. 181,440 default jobs, took 34 s); 8,192 jobs
#: draw and build in about 1.5 s (a 16,384-GPU cluster's default), far above the bench's sizes
MAX_JOBS = 2**13
#: models that the generator keeps off the 11 GB RTX 2080Ti
MEMORY_LIMITED = {"bert": ("t4", "a100"), "deepspeech2": ("t4", "a100")}
#: Saturn model mix (fallback when the zoo has no trace table)
DEFAULT_MIX = {"bert": 0.04375, "cifar10": 0.82125, "deepspeech2": 0.0625, "imagenet": 0.02875, "yolov3": 0.04375}


@dataclass(frozen=True, eq=False)
class SiaInstance:
    """Everything one Sia round needs (what the JSON reader and writer round-trip).

    ``goodput`` is a (jobs x configs) array over ``generate_configs(cluster, max_gpus_per_job)`` or a mapping job
    id -> goodput model (``schedopt.goodput.JobGoodputModel``). ``available``: free GPUs per type (None: all).
    """

    cluster: Cluster
    jobs: tuple[Job, ...]
    goodput: Any
    p: float = -0.5
    lam: float = 1.1
    max_gpus_per_job: int | None = None
    available: Mapping[str, int] | None = None
    settings: SiaSettings | None = None
    #: where running jobs are now (job id -> [(node, GPU indices)]): ``solve`` keeps unchanged jobs there
    placement: Mapping[Any, list[tuple[str, tuple[int, ...]]]] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "jobs", tuple(self.jobs))
        if self.settings is not None and not isinstance(self.settings, SiaSettings):
            raise InputError("settings", type(self.settings).__name__, "must be a SiaSettings or None")
        if self.available is not None:
            object.__setattr__(self, "available", dict(self.available))

    def problem(self) -> SiaProblem:
        """A fresh :class:`SiaProblem` of this instance (validated)."""
        return SiaProblem(self.cluster, self.jobs, self.goodput, p=self.p, lam=self.lam,
                          max_gpus_per_job=self.max_gpus_per_job, available=self.available, settings=self.settings)


    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SiaInstance):
            return NotImplemented
        same = (self.cluster == other.cluster and self.jobs == other.jobs and self.p == other.p
                and self.lam == other.lam and self.max_gpus_per_job == other.max_gpus_per_job
                and self.available == other.available and (self.settings or SiaSettings()) == (other.settings or SiaSettings())
                and dict(self.placement or {}) == dict(other.placement or {}))
        if not same:
            return False
        a, b = self.goodput, other.goodput
        if isinstance(a, Mapping) and isinstance(b, Mapping):
            return dict(a) == dict(b)
        if isinstance(a, Mapping) or isinstance(b, Mapping) or callable(a) or callable(b):
            return a is b
        return bool(np.array_equal(np.asarray(a, float), np.asarray(b, float), equal_nan=True))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"SiaInstance({len(self.jobs)} jobs, {self.cluster.num_gpus} GPUs, p={self.p}, lam={self.lam})"


def cluster(gpus: int = 64) -> Cluster:
    """The 64-GPU heterogeneous shape scaled by ``gpus / 64``."""
    if not isinstance(gpus, (int, np.integer)) or isinstance(gpus, bool) or gpus < 64 or gpus % 64:
        raise InputError("gpus", gpus, "must be a positive multiple of 64")
    if gpus > MAX_GPUS:
        raise InputError("gpus", gpus, f"must be <= MAX_GPUS = {MAX_GPUS}")
    k = int(gpus) // 64
    return Cluster(tuple(GpuType(n, r, nodes * k) for n, r, nodes in BASE_SHAPE))


def _trace() -> tuple[dict[str, float], np.ndarray, np.ndarray]:
    """Model mix and the (quantile, age) table, from the zoo when present."""
    qs = np.array([0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99])
    ages = np.array([1018.47, 2673.03, 19007.3, 91297.2, 300596.0, 797982.0, 1311610.0, 2311370.0])
    mix = dict(DEFAULT_MIX)
    try:
        from .. import zoo

        st = zoo.trace_stats()
        mix = dict(st["workloads"]["saturn"]["model_mix"])
        tab = st["philly_jobs"]["age_in_progress_s"]
        qs = np.array([float(q) for q in tab])
        ages = np.array([float(v) for v in tab.values()])
    except (ImportError, KeyError):  # pragma: no cover - the zoo ships with the package
        pass
    return mix, qs, ages


def _models(names: list[str]) -> dict[str, Any]:
    from .. import zoo

    return {n: zoo.load_model(n) for n in names}


def generate_instance(
    gpus: int,
    seed: int,
    jobs: int | None = None,
    load: str = "normal",
    *,
    p: float = -0.5,
    lam: float = 1.1,
    max_gpus_per_job: int | None = None,
    settings: SiaSettings | None = None,
) -> SiaInstance:
    """A seeded instance on ``cluster(gpus)`` (see the module docstring for every choice); ``settings`` (e.g.
    :func:`~schedopt.sia.published_settings`) travel with the instance, and current configurations are drawn from
    the configurations they allow. The same seed gives the same jobs whatever the settings (except where a current
    configuration is cut by a cap)."""
    cl = cluster(gpus)
    if load not in ("normal", "heavy"):
        raise InputError("load", load, "must be 'normal' or 'heavy'")
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool) or seed < 0:
        raise InputError("seed", seed, "must be a non-negative integer")
    n = (gpus // 2 if load == "normal" else gpus) if jobs is None else jobs
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 1:
        raise InputError("jobs", jobs, "must be a positive integer")
    if n > MAX_JOBS:
        if jobs is None:
            raise InputError("gpus", gpus, f"draws {n} jobs at {load} load, "
                             f"more than MAX_JOBS = {MAX_JOBS}: pass jobs=<= {MAX_JOBS}")
        raise InputError("jobs", jobs, f"must be <= MAX_JOBS = {MAX_JOBS}")
    rng = np.random.default_rng(seed)
    mix, qs, ages = _trace()
    names = sorted(mix)
    prob = np.array([mix[k] for k in names])
    prob = prob / prob.sum()
    models = _models(names)
    st = settings or SiaSettings()
    table = generate_configs(cl, max_gpus_per_job if max_gpus_per_job is not None else st.max_gpus_per_job,
                             max_nodes=st.max_physical_nodes)
    tnames = cl.type_names
    model_of = rng.choice(len(names), size=n, p=prob)
    kind_u = rng.random(n)
    kinds = np.where(kind_u < 0.85, "adaptive", np.where(kind_u < 0.95, "strong", "rigid"))
    rigid = rng.choice([1, 2, 4, 8], size=n, p=[0.4, 0.3, 0.2, 0.1])
    hybrid = rng.random(n) < 0.05
    new = rng.random(n) < 0.30
    profiled = rng.choice([1, 2, 4, 8, 16], size=n, p=[0.35, 0.25, 0.2, 0.15, 0.05])
    age_new = rng.uniform(0, 300, size=n)
    age_old = np.interp(rng.uniform(qs[0], qs[-1], size=n), qs, np.log(ages))
    restarts = rng.poisson(1.0, size=n)
    rcost = np.round(rng.uniform(30, 120, size=n), 1)
    running = (~new) & (rng.random(n) < 0.7)
    nonpre = rng.random(n) < 0.05
    type_pick = rng.random(n)
    order = rng.permutation(n)
    fill = 0.80 if load == "normal" else 0.95
    room = np.floor(cl.total_gpus * fill).astype(np.int64)
    current: dict[int, Config] = {}
    # a current configuration has at most 16 GPUs (the largest rigid or profiled count): scanning only those rows
    # (in table order, so the draws are unchanged) keeps this loop linear in the jobs; the whole table grows with the
    # cluster (11,272 rows at 65,536 GPUs: the loop took 16 s there, issue 20's fuzzer timed out at 362,880 GPUs)
    rows = np.flatnonzero(table.n_gpus <= 16)
    r_type, r_gpus = table.type_index[rows], table.n_gpus[rows]
    for i in order.tolist():  # current configurations, greedily while they fit (one pass over jobs)
        if not running[i]:
            continue
        mname = names[model_of[i]]
        allowed = MEMORY_LIMITED.get(mname, tnames)
        unit = 2 if hybrid[i] and kinds[i] != "rigid" else 1
        cap = int(rigid[i]) if kinds[i] == "rigid" else int(profiled[i])
        ok = np.isin(r_type, [tnames.index(t) for t in allowed]) & (r_gpus % unit == 0)
        ok &= (r_gpus == cap) if kinds[i] == "rigid" else (r_gpus <= cap) & (r_gpus >= unit)
        cand = np.flatnonzero(ok & (r_gpus <= room[r_type]))
        if cand.size == 0:
            continue
        c = int(rows[cand[min(int(type_pick[i] * cand.size), cand.size - 1)]])
        room[table.type_index[c]] -= table.n_gpus[c]
        current[i] = table[c]
    # service attained so far (read only by the published rigid restart rule): drawn after every other choice, so
    # the jobs of a seed are those of earlier versions
    share = rng.uniform(0.2, 1.0, size=n)
    out: list[Job] = []
    goodput: dict[str, Any] = {}
    for i in range(n):
        mname = names[model_of[i]]
        jid = f"j{i}"
        kind = str(kinds[i])
        unit = 2 if hybrid[i] and kind != "rigid" else 1
        prof = 0 if new[i] else int(profiled[i])
        cur = current.get(i)
        out.append(
            Job(
                id=jid,
                kind=kind,
                min_gpus=unit,
                scale_unit=unit,
                max_profiled_gpus=max(prof, cur.n_gpus if cur else 0),
                allowed_types=list(MEMORY_LIMITED[mname]) if mname in MEMORY_LIMITED else None,
                current=cur,
                age_s=round(float(age_new[i] if new[i] else np.exp(age_old[i])), 1),
                restarts=0 if new[i] else int(restarts[i]),
                restart_cost_s=float(rcost[i]),
                preemptible=not (cur is not None and nonpre[i]),
                rigid_gpus=int(rigid[i]) if kind == "rigid" else None,
                attained_gpu_seconds=0.0 if new[i] or not st.rigid_restart_by_attained
                else round(float(np.exp(age_old[i]) * share[i] * max(prof, 1)), 1),
            )
        )
        goodput[jid] = models[mname]
    return SiaInstance(cl, tuple(out), goodput, p=p, lam=lam, max_gpus_per_job=max_gpus_per_job,
                       settings=None if settings is None or settings.is_exact else settings)
