"""Validation of one Sia round's inputs, before anything is evaluated or built.

Each check raises :class:`~schedopt.errors.InputError` naming the field path (``jobs[3].current``,
``available[a100]``, ``goodput[j4]``) and the value.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..errors import InputError
from .configs import ConfigTable, generate_configs, shape_error
from .settings import SiaSettings
from .spec import Cluster, Config, Job, JobId

__all__ = ["check_available", "check_goodput_input", "check_jobs", "check_rigid"]

#: ``current`` index of a preemptible job running in a configuration the (capped) table does not hold
OUTSIDE_TABLE = -2


def check_available(cluster: Cluster, available: Any) -> np.ndarray:
    """Free GPUs per type (array in type order); None: all."""
    total = cluster.total_gpus
    if available is None:
        return total.copy()
    names = cluster.type_names
    if isinstance(available, Mapping):
        out = total.copy()
        for k, v in available.items():
            if k not in names:
                raise InputError(f"available[{k}]", v, f"names no GPU type of the cluster ({', '.join(names)})")
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
                raise InputError(f"available[{k}]", v, "must be a non-negative integer")
            t = names.index(k)
            if not 0 <= v <= total[t]:
                raise InputError(f"available[{k}]", v, f"must be in 0..{int(total[t])} (the type's GPUs)")
            out[t] = int(v)
    else:
        arr = np.asarray(available)
        if arr.shape != total.shape or arr.dtype.kind not in "iu":
            raise InputError("available", available, f"must give {len(names)} integers (one per GPU type) or a mapping")
        out = arr.astype(np.int64)
    bad = np.flatnonzero((out < 0) | (out > total))
    if bad.size:
        k = int(bad[0])
        raise InputError(f"available[{names[k]}]", int(out[k]), f"must be in 0..{int(total[k])} (the type's GPUs)")
    return out


def check_jobs(
    cluster: Cluster, configs: ConfigTable, jobs: Sequence[Job], settings: SiaSettings, cap: int | None
) -> tuple[dict[JobId, int], np.ndarray]:
    """One pass over the jobs: types, duplicate ids, allowed types, current configurations, rigid counts (checked
    once per distinct (count, types)). Returns (job id -> position, current configuration's table position per job:
    -1 not running, ``OUTSIDE_TABLE`` running in a legal shape the caps removed)."""
    seen: dict[JobId, int] = {}
    tnames = cluster.type_names
    tset = set(tnames)
    find, rigid_only = configs.find, configs.rigid_only
    found: dict[int, tuple[Config, int, bool]] = {}  # id of a current Config -> (it, its position, rigid-only)
    cur = [-1] * len(jobs)
    rigid_seen: set[tuple[Any, Any]] = set()
    for i, j in enumerate(jobs):
        if not isinstance(j, Job):
            raise InputError(f"jobs[{i}]", j, "must be a Job")
        jid = j.id
        if jid in seen:
            raise InputError(f"jobs[{i}].id", jid, f"duplicates jobs[{seen[jid]}].id")
        seen[jid] = i
        at = j.allowed_types
        if at is not None:
            for k, t in enumerate(at):
                if t not in tset:
                    raise InputError(f"jobs[{i}].allowed_types[{k}]", t, f"is not a GPU type of the cluster ({', '.join(tnames)})")
        c = j.current
        if c is not None:
            hit = found.get(id(c))  # (jobs in one configuration share its object: found once per call)
            if hit is None or hit[0] is not c:
                f = find(c)
                hit = found[id(c)] = (c, f, f >= 0 and bool(rigid_only[f]))
            f = hit[1]
            if hit[2] and j.kind != "rigid":
                f = -1
            if f < 0:
                why = shape_error(cluster, c, rigid_shape=j.kind == "rigid" and settings.rigid_any_count)
                forced = not j.preemptible
                if why is not None or forced:
                    raise InputError(
                        f"jobs[{i}].current", c.label,
                        "is not a configuration of this cluster (power-of-two GPUs on one node or whole nodes"
                        + (f", at most {cap} GPUs" if cap else "")
                        + (", within the node caps" if settings.max_physical_nodes is not None else "") + ")"
                        + (" and the job is non-preemptible" if why is None and forced else ""),
                    )
                f = OUTSIDE_TABLE
            cur[i] = f
        if j.kind == "rigid":
            key = (j.rigid_gpus, at)  # the rigid check depends on these two only
            if key not in rigid_seen:
                check_rigid(cluster, configs, i, j, settings, cap)
                rigid_seen.add(key)
    return seen, np.array(cur, dtype=np.int64)


def check_rigid(cluster: Cluster, configs: ConfigTable, i: int, j: Job, settings: SiaSettings, cap: int | None) -> None:
    """A rigid job's GPU count must fit one configuration of each allowed type it names (of some type if it names
    none)."""
    assert j.rigid_gpus is not None
    types = j.allowed_types if j.allowed_types is not None else cluster.type_names
    ok = []
    for t in types:
        k = cluster.type_index(t)
        hit = bool(np.any((configs.type_index == k) & (configs.n_gpus == j.rigid_gpus)))
        if not hit and j.allowed_types is not None:
            gt = cluster.gpu_types[k]
            rule = (f"at most the type's {gt.total_gpus} GPUs" if settings.rigid_any_count else
                    f"a power of two <= {gt.max_partial} or a multiple of {gt.gpus_per_node} on at most {gt.nodes} "
                    "whole nodes" + (f" and <= max_gpus_per_job={cap}" if cap else ""))
            raise InputError(f"jobs[{i}].rigid_gpus", j.rigid_gpus,
                             f"cannot run on allowed type {t!r} ({gt.nodes} nodes x {gt.gpus_per_node} GPUs): a rigid "
                             f"count must be {rule}")
        ok.append(hit)
    if not any(ok):
        rule = ("no GPU type has that many GPUs" if settings.rigid_any_count else
                "fits no GPU type as one configuration (a power of two on one node, or a multiple of the per-node GPU "
                "count on whole nodes; SiaSettings(rigid_any_count=True) allows whole nodes plus a remainder)")
        raise InputError(f"jobs[{i}].rigid_gpus", j.rigid_gpus, rule)


def check_goodput_input(cluster: Cluster, configs: ConfigTable, jobs: Sequence[Job], goodput: Any,
                        standard_width: int) -> None:
    """The goodput input: a mapping with a model per job (each with a ``goodput`` method), a callable, or a
    (jobs x configs) array over ``configs`` or over the uncapped standard table (``standard_width`` columns)."""
    g = goodput
    if isinstance(g, Mapping):
        checked: set[int] = set()  # ids of model objects already checked (the mapping keeps them alive)
        for i, j in enumerate(jobs):
            if j.id not in g:
                raise InputError(f"goodput[{j.id}]", None, f"no goodput model for jobs[{i}]")
            mdl = g[j.id]
            if id(mdl) in checked:
                continue
            if not callable(getattr(mdl, "goodput", None)):
                raise InputError(f"goodput[{j.id}]", type(mdl).__name__, "needs a goodput(gpu_type, nodes, replicas) method")
            checked.add(id(mdl))
        return
    if callable(g):
        return
    try:
        arr = np.asarray(g, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InputError("goodput", type(g).__name__, "must be an array, a callable or a mapping of models") from exc
    if arr.ndim != 2 or arr.shape[0] != len(jobs) or arr.shape[1] not in (len(configs), standard_width):
        raise InputError("goodput", arr.shape, f"must be (jobs x configs) = ({len(jobs)}, {len(configs)})")


def standard_width(cluster: Cluster) -> int:
    """Columns of the uncapped standard table (the other width a goodput array may have)."""
    return len(generate_configs(cluster))
