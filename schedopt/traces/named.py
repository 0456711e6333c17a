"""Workload names beyond the shipped files: ``<set>@<load>/<k>`` at any load and ``FILE:load=X[:seed=k...]``.

Called by :func:`schedopt.sim.load_workload` for a name that is neither a shipped workload nor a file.

* ``pollux@<load>/<k>``: generated from the shipped Philly trace (Pollux's preprocessed ``philly.csv``) by Pollux's
  rule, seed ``k``, ``round(160 * load)`` jobs over 8 h.
  The shipped ``pollux@0.5/k``, ``pollux@1.5/k``, ``pollux@2.0/k`` (and ``pollux/k`` = ``pollux@1.0/k``) are the
  artifact's own files and win over generation; a generated one is a fresh draw by the same rule, not the artifact's
  (its seeds are not published).
* Any other shipped set (``saturn``, ``newtrace``, and ``philly``: Sia's Philly set is Pollux's with ncf turned into
  cifar10 and imagenet re-configured, made by no rule its artifact publishes) whose source trace is not shipped: ``<set>@<load>/<k>`` is
  :func:`~schedopt.traces.resample_workload` of ``<set>/<k>`` (seed ``k``); ``saturn@{0.5,1.5,2.0,2.5}/k`` are shipped
  (Sia's Fig. 7 ``rate_{10,30,40,50}`` sets) and win.
* ``trace:FILE:as-is[:format=F][:rule=R]`` (``trace:philly:as-is``: the shipped trace): the trace replayed as it
  happened (:func:`schedopt.traces.replay.resolve_as_is`).
* ``FILE:load=X[:seed=K][:format=F][:rule=R][:jobs=N][:window_h=H][:start_h=S]``: a workload CSV is resampled; any other
  trace is read by :func:`~schedopt.traces.read_trace` and turned into a workload by
  :func:`~schedopt.traces.generate` (rule ``pollux`` unless given).
"""

from __future__ import annotations

import re
from functools import lru_cache
from importlib import resources
from pathlib import Path

from ..errors import InputError
from ..sim.workloads import Workload
from .generate import check_params, generate, resample_workload
from .readers import detect_format, read_trace
from .trace import Trace

__all__ = ["SOURCE_TRACES", "resolve_workload", "shipped_trace"]

#: shipped sets that can be regenerated from a shipped trace: set -> (trace, rule)
SOURCE_TRACES = {"pollux": ("philly", "pollux")}
_NAMED = re.compile(r"(?P<set>[A-Za-z0-9_.-]+)@(?P<load>[0-9]*\.?[0-9]+)/(?P<k>[0-9]+)")
_OPTS = {"load": float, "seed": int, "format": str, "rule": str, "jobs": int, "window_h": float, "start_h": float}


@lru_cache(maxsize=2)
def shipped_trace(name: str = "philly") -> Trace:
    """A trace shipped in the package: ``philly`` (Pollux's preprocessed Philly trace, 82,247 jobs)."""
    if name != "philly":
        raise InputError("trace", name, "the package ships only 'philly'")
    path = resources.files("schedopt.traces").joinpath("data/philly.csv.gz")
    return read_trace(str(path), "philly-csv", name="philly")


def _float(field: str, v: str) -> float:
    try:
        return float(v)
    except ValueError:
        raise InputError(field, v, "must be a number") from None


def resolve_workload(key: str) -> Workload | None:
    """The workload ``key`` names (see the module doc), or None when it is not of these forms."""
    from ..sim.workloads import list_workloads, load_workload

    if key.startswith("trace:"):  # a trace replayed as it happened (schedopt.traces.replay)
        from .replay import resolve_as_is

        return resolve_as_is(key, shipped_trace)
    m = _NAMED.fullmatch(key)
    if m:
        s, load, k = m["set"], _float("workload.load", m["load"]), int(m["k"])
        base = f"{s}/{k}"
        if load == 1.0 and base in list_workloads():
            return Workload(key, load_workload(base).jobs)
        if s in SOURCE_TRACES:
            source, rule = SOURCE_TRACES[s]
            check_params(160, load, 8.0, rule, k)  # before the shipped trace is read (82,247 rows)
            return generate(shipped_trace(source), jobs=160, load=load, window_h=8.0, seed=k, rule=rule,
                            name=key).workload
        if base in list_workloads():
            return resample_workload(load_workload(base), load=load, seed=k, name=key)
        raise InputError("workload", key, f"names no shipped set {s!r} with a workload {k} (see list_workloads())")
    path, sep, rest = key.partition(":")
    if not sep or not Path(path).exists():
        return None
    opts: dict[str, object] = {}
    for part in rest.split(":"):
        name, eq, val = part.partition("=")
        if not eq or name not in _OPTS:
            raise InputError("workload", key, f"options look like load=1.5:seed=2; known: {', '.join(_OPTS)}")
        try:
            opts[name] = _OPTS[name](val)
        except ValueError:
            raise InputError(f"workload.{name}", val, f"must be a {_OPTS[name].__name__}") from None
    load = float(opts.pop("load", 1.0))  # type: ignore[arg-type]
    seed = int(opts.pop("seed", 0))  # type: ignore[call-overload]
    fmt = str(opts.pop("format", "")) or detect_format(path)
    label = f"{Path(path).stem}@{load:g}"
    if fmt == "workload" and "rule" not in opts:
        if opts:
            raise InputError("workload", key, f"{sorted(opts)} do not apply to a workload CSV (resampled)")
        return resample_workload(load_workload(path), load=load, seed=seed, name=label)
    trace = read_trace(path, fmt)
    return generate(trace, load=load, seed=seed, name=label, **opts).workload  # type: ignore[arg-type]
