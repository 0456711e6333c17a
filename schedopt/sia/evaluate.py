"""Goodput evaluation: the raw goodput of given (job, configuration) pairs from any goodput input.

The input is a (jobs x configs) array (over the problem's table or over the uncapped standard table), a callable
``(job, config) -> goodput`` (called once per pair), or a mapping job id -> model evaluated vectorised: once per
(distinct model, mode, GPU type) over the union of the configurations its jobs need. Strong-scaling and rigid jobs
use the model's ``throughput(gpu_type, nodes, replicas, batch)`` at ``job.batch_size`` (default ``init_batch``)
when it has one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..errors import InputError
from ..goodput import JobGoodputModel
from .configs import ConfigTable, generate_configs
from .spec import Cluster, Job

__all__ = ["goodput_of_pairs"]


def goodput_of_pairs(cluster: Cluster, configs: ConfigTable, jobs: Sequence[Job], goodput: Any,
                     jj: np.ndarray, cc: np.ndarray) -> np.ndarray:
    """Raw goodput of the pairs (``jobs[jj[k]]``, ``configs[cc[k]]``)."""
    if isinstance(goodput, Mapping):
        return _from_models(cluster, configs, jobs, goodput, jj, cc)
    if callable(goodput):
        return _from_callable(configs, jobs, goodput, jj, cc)
    arr = np.asarray(goodput, dtype=np.float64)
    if arr.shape[1] == len(configs):
        return arr[jj, cc]
    # given over the uncapped standard table: map this table's columns onto it by (type, nodes, GPUs)
    full = generate_configs(cluster)
    pos = {k: i for i, k in enumerate(zip(full.type_index.tolist(), full.n_nodes.tolist(), full.n_gpus.tolist()))}
    col = np.array([pos.get(k, -1) for k in zip(configs.type_index.tolist(), configs.n_nodes.tolist(),
                                                configs.n_gpus.tolist())], dtype=np.int64)
    out = np.zeros(jj.shape[0], dtype=np.float64)
    have = col[cc] >= 0  # a rigid shape has no column there: goodput 0 (cannot run)
    out[have] = arr[jj[have], col[cc[have]]]
    return out


def _from_callable(configs: ConfigTable, jobs: Sequence[Job], goodput: Any, jj: np.ndarray,
                   cc: np.ndarray) -> np.ndarray:
    """The callable's value per pair; each must be a real number (not a bool, a string or None)."""
    confs = configs.configs
    out = np.empty(jj.shape[0], dtype=np.float64)
    for k, (a, b) in enumerate(zip(jj.tolist(), cc.tolist())):
        v = goodput(jobs[a], confs[b])
        if isinstance(v, np.ndarray) and v.ndim == 0 and v.dtype.kind in "iuf":
            v = v.item()
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)):
            raise InputError(f"goodput[{jobs[a].id}, {confs[b].label}]", v, "the goodput callable must return a number")
        try:
            out[k] = v
        except OverflowError:
            raise InputError(f"goodput[{jobs[a].id}, {confs[b].label}]", v, "must be a finite number") from None
    return out


def _from_models(cluster: Cluster, cfg: ConfigTable, jobs: Sequence[Job], models: Mapping[Any, Any],
                 jj: np.ndarray, cc: np.ndarray) -> np.ndarray:
    T = len(cluster.type_names)
    keys: dict[tuple, int] = {}
    kinfo: list[tuple[Any, str, float | None]] = []
    jkey = np.empty(len(jobs), dtype=np.int64)
    has_xput: dict[int, bool] = {}  # per model object: does it have a throughput method
    for i, j in enumerate(jobs):  # one pass over jobs
        mdl = models[j.id]
        mode, batch = "goodput", None
        if j.kind != "adaptive":
            h = has_xput.get(id(mdl))
            if h is None:
                h = has_xput[id(mdl)] = callable(getattr(mdl, "throughput", None))
            if h:
                mode = "throughput"
                batch = j.batch_size if j.batch_size is not None else float(mdl.init_batch)
        key = (id(mdl), mode, batch)
        k = keys.get(key)
        if k is None:
            k = keys[key] = len(kinfo)
            kinfo.append((mdl, mode, batch))
        jkey[i] = k
    out = np.zeros(jj.shape[0], dtype=np.float64)
    if not jj.size:
        return out
    group = jkey[jj] * T + cfg.type_index[cc]
    order = np.argsort(group, kind="stable")
    gs = group[order]
    cuts = np.flatnonzero(np.diff(gs)) + 1
    for sel in np.split(order, cuts):
        k, t = divmod(int(group[sel[0]]), T)
        mdl, mode, batch = kinfo[k]
        tname = cluster.type_names[t]
        types = getattr(mdl, "gpu_types", None)
        if types is not None and tname not in types:
            continue  # the model has no estimate on this type: the pairs are dropped (goodput 0)
        ucfg, inv = np.unique(cc[sel], return_inverse=True)
        nodes, reps = cfg.n_nodes[ucfg], cfg.n_gpus[ucfg]
        if type(mdl) is JobGoodputModel:  # table points are valid by construction: the model's unchecked path
            nf, rf = nodes.astype(np.float64), reps.astype(np.float64)
            if mode == "throughput":
                vals = mdl.throughput_values(tname, nf, rf, float(batch))  # type: ignore[arg-type]
            else:
                vals = mdl.goodput_values(tname, nf, rf)
        elif mode == "throughput":
            vals = np.asarray(mdl.throughput(tname, nodes, reps, batch), dtype=np.float64)
        else:
            res = mdl.goodput(tname, nodes, reps)
            vals = np.asarray(getattr(res, "goodput", res), dtype=np.float64)
        out[sel] = vals.reshape(-1)[inv]
    return out
