"""The simulator's round at 2,048 GPUs (issue 38: ``Session.decide`` p99 under 100 ms) cut per-job Python; each
fast path here is compared, value for value, with the general route it stands for, on random inputs."""

from __future__ import annotations

import random

import numpy as np
import pytest

from schedopt.sia import Config, Job
from schedopt.sia.pairs import NO_LIMIT, RIGID, job_arrays

_TYPES = ("t4", "v100", "a100")


def _random_job(rng: random.Random, i: int) -> Job:
    kind = rng.choice(("adaptive", "adaptive", "strong", "rigid"))
    cur = rng.choice((None, Config(1, rng.choice((1, 2, 4)), rng.choice(_TYPES)), Config(2, 16, "a100")))
    common = {"current": cur, "age_s": rng.choice((0.0, rng.uniform(0, 1e5), 7)),
              "restarts": rng.randrange(0, 5), "restart_cost_s": rng.choice((0.0, 30.0, 250.0)),
              "preemptible": rng.random() < 0.7 or cur is None,
              "attained_gpu_seconds": rng.uniform(0, 1e6),
              "allowed_types": rng.choice((None, None, ("a100",), ("t4", "v100")))}
    if kind == "rigid":
        return Job(id=f"j{i}", kind="rigid", rigid_gpus=rng.choice((1, 2, 3, 8)), batch_size=64.0, **common)
    unit = rng.choice((1, 1, 2))
    mx = rng.choice((None, 8, 64))
    return Job(id=f"j{i}", kind=kind, min_gpus=rng.choice((1, 2)), max_gpus=mx, scale_unit=unit,
               max_profiled_gpus=rng.choice((0, 1, 4)), batch_size=128.0 if kind == "strong" else None, **common)


def _job_arrays_by_rows(jobs: list[Job], type_names: tuple[str, ...], current: np.ndarray) -> dict[str, np.ndarray]:
    """job_arrays as it was: one tuple per job, one array of them."""
    code = {"adaptive": 0, "strong": 1, "rigid": 2}
    J = len(jobs)
    ints = np.array([(code[j.kind], j.min_gpus, -1 if j.max_gpus is None else j.max_gpus, j.scale_unit,
                      j.max_profiled_gpus, j.rigid_gpus or 0, j.restarts,
                      (not j.preemptible) and j.current is not None) for j in jobs], dtype=np.int64).reshape(J, 8)
    floats = np.array([(j.age_s, j.restart_cost_s, j.attained_gpu_seconds) for j in jobs],
                      dtype=np.float64).reshape(J, 3)
    allowed = np.ones((J, len(type_names)), dtype=bool)
    for i, j in enumerate(jobs):
        if j.allowed_types is not None:
            allowed[i] = False
            allowed[i, [type_names.index(t) for t in j.allowed_types]] = True
    kind, mn, mx, unit, prof, rigid = (ints[:, k].copy() for k in range(6))
    u = np.where(kind == RIGID, rigid, -(-mn // unit) * unit)
    return {"kind": kind, "min": mn, "max": np.where(mx < 0, NO_LIMIT, mx), "unit": unit,
            "growth": np.maximum(2 * prof, u), "rigid": rigid, "allowed": allowed, "current": current,
            "forced": ints[:, 7].astype(bool), "age": floats[:, 0].copy(), "restarts": ints[:, 6].astype(np.float64),
            "rcost": floats[:, 1].copy(), "attained": floats[:, 2].copy()}


@pytest.mark.parametrize("seed", range(6))
def test_job_arrays_by_columns_equal_the_rows(seed: int) -> None:
    rng = random.Random(seed)
    jobs = [_random_job(rng, i) for i in range(rng.choice((0, 1, 7, 200)))]
    current = np.array([rng.randrange(-2, 30) for _ in jobs], dtype=np.int64)
    got = job_arrays(jobs, _TYPES, current)
    want = _job_arrays_by_rows(jobs, _TYPES, current)
    for name, arr in want.items():
        a = getattr(got, name)
        assert a.dtype == arr.dtype and a.shape == arr.shape and np.array_equal(a, arr), name
    if jobs:  # the hand-checked corner: a job not preemptible in a configuration is forced, one queued is not
        assert got.forced.tolist() == [(not j.preemptible) and j.current is not None for j in jobs]
