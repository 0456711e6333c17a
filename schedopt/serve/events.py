"""A batch of progress events read in one pass: the service's hot path (a cluster of 2,048 GPUs reports 4,096
``JobProgress`` events a round).

:func:`fast_progress` builds a :class:`~schedopt.live.JobProgress` from its document with the checks of
:func:`schedopt.live.event_from_dict` and the event's own (the same ranges, in plain comparisons, without the
per-field calls of the general route) and returns None for anything it does not accept outright: any other event,
any field outside the plain forms, any value a check would refuse. The caller then reads that document by the
general route, which accepts or refuses it with its own error naming the field: every error message stays the
general route's, and whatever the fast route accepts, the general route accepts as the same event
(tests/test_serve_events.py checks both on valid documents and on every field's bad values).
"""

from __future__ import annotations

import math
import re
from typing import Any

from ..live.state import JobProgress, Measurement

__all__ = ["BAD_NAME", "fast_progress", "measurement_of"]

#: the characters a name may not hold (:mod:`schedopt.live.state`'s rule)
BAD_NAME = re.compile(r"[ @,\[\]()]")
_PROGRESS_KEYS = frozenset({"type", "time", "job_id", "progress", "epoch", "local_batch", "accumulation",
                            "attained_gpu_seconds", "measurements", "grad_sqr", "grad_var"})
_MEASUREMENT_KEYS = frozenset({"gpu_type", "nodes", "gpus", "local_batch", "step_time", "sync_time"})
_INT_MAX = 2**20


def _name(v: Any) -> bool:
    return type(v) is str and 0 < len(v) <= 253 and BAD_NAME.search(v) is None


def _number(v: Any) -> bool:
    """A finite number (JSON's int or float; not a bool)."""
    t = type(v)
    return (t is float and math.isfinite(v)) or (t is int and -(2**1023) < v < 2**1023)


def _nonneg(v: Any) -> float | None:
    """``v`` as a float when it is a finite number >= 0 (the general route's ``_num(low=0)``), else None."""
    if _number(v) and v >= 0:
        return float(v)
    return None


def _integer(v: Any, low: int, high: int) -> bool:
    return type(v) is int and low <= v <= high


def _new(cls: type[Any], **fields: Any) -> Any:
    """An instance of the frozen dataclass ``cls`` with ``fields`` (already checked), without its checks again."""
    obj = object.__new__(cls)
    for k, v in fields.items():
        object.__setattr__(obj, k, v)
    return obj


def measurement_of(d: Any) -> Measurement | None:
    """The :class:`~schedopt.live.Measurement` of the document ``d`` when every check passes, else None (read it
    by :meth:`schedopt.live.Measurement.from_dict` then)."""
    if type(d) is not dict or not _MEASUREMENT_KEYS.issuperset(d):
        return None
    try:
        gpu_type, nodes, gpus, local_batch, step_time = (d["gpu_type"], d["nodes"], d["gpus"], d["local_batch"],
                                                         d["step_time"])
    except KeyError:
        return None
    sync = _nonneg(d.get("sync_time", 0.0))
    step = _nonneg(step_time)
    if (sync is None or step is None or not 0.0 < step or not sync < step or not _name(gpu_type)
            or not _integer(nodes, 1, _INT_MAX) or not _integer(gpus, nodes, _INT_MAX)
            or not _integer(local_batch, 1, 2**31)):
        return None
    return _new(Measurement, gpu_type=gpu_type, nodes=nodes, gpus=gpus, local_batch=local_batch, step_time=step,
                sync_time=sync)


def fast_progress(d: Any) -> JobProgress | None:
    """The :class:`~schedopt.live.JobProgress` of the document ``d`` when it is one in plain form and every check
    passes; None otherwise (read ``d`` by :func:`schedopt.live.event_from_dict` then)."""
    if type(d) is not dict or d.get("type") != "JobProgress" or not _PROGRESS_KEYS.issuperset(d):
        return None
    time, job_id = d.get("time"), d.get("job_id")
    t = _nonneg(time)
    if t is None or not _name(job_id):
        return None
    progress, epoch = d.get("progress"), d.get("epoch")
    if progress is not None:
        progress = _nonneg(progress)
        if progress is None or not progress < 1.0:
            return None
    if epoch is not None and not _integer(epoch, 0, _INT_MAX):
        return None
    local_batch, accumulation = d.get("local_batch"), d.get("accumulation")
    if (local_batch is None) != (accumulation is None):
        return None
    if local_batch is not None and not (_integer(local_batch, 1, 2**31) and _integer(accumulation, 0, _INT_MAX)):
        return None
    attained = d.get("attained_gpu_seconds")
    if attained is not None and (attained := _nonneg(attained)) is None:
        return None
    grad_sqr, grad_var = d.get("grad_sqr"), d.get("grad_var")
    if (grad_sqr is None) != (grad_var is None):
        return None
    if grad_sqr is not None:
        grad_sqr, grad_var = _nonneg(grad_sqr), _nonneg(grad_var)
        if grad_sqr is None or grad_var is None:
            return None
    docs = d.get("measurements", [])
    if type(docs) is not list:
        return None
    measurements = []
    for m in docs:
        got = measurement_of(m)
        if got is None:
            return None
        measurements.append(got)
    return _new(JobProgress, time=t, job_id=job_id, progress=progress, epoch=epoch,
                measurements=tuple(measurements), local_batch=local_batch, accumulation=accumulation,
                attained_gpu_seconds=attained, grad_sqr=grad_sqr, grad_var=grad_var)
