"""Workloads (job arrival lists) and cluster presets for :mod:`schedopt.sim`.

The public format of the Pollux and Sia artifacts: CSV with ``name,time,application,num_replicas,batch_size``
(``time`` in seconds since the trace start; ``num_replicas`` / ``batch_size`` are the submitter's request, which
rigid policies use). Shipped sets (sources in ``data/workloads/sources.json``): ``pollux`` (workload-1..8, load
1.0), ``saturn`` (1..10), ``philly`` (1..8), ``newtrace`` (1), ``saturn-32x`` (1). Name one as
``"<set>/<k>"`` (``"saturn/1"``) or pass a path.
"""

from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from ..errors import InputError
from ..sia import Cluster, GpuType
from .jobs import applications

__all__ = ["CLUSTERS", "Workload", "WorkloadJob", "cluster_preset", "list_workloads", "load_workload", "read_workload"]

_COLUMNS = ("name", "time", "application", "num_replicas", "batch_size")


@dataclass(frozen=True)
class WorkloadJob:
    """One submitted job."""

    name: str
    time: float
    application: str
    num_replicas: int
    batch_size: int


@dataclass(frozen=True)
class Workload:
    """An arrival list (jobs sorted by time, then by their order in the file)."""

    name: str
    jobs: tuple[WorkloadJob, ...]

    def __len__(self) -> int:
        return len(self.jobs)

    def to_csv(self) -> str:
        out = io.StringIO()
        w = csv.writer(out, lineterminator="\n")
        w.writerow(_COLUMNS)
        for j in self.jobs:
            w.writerow([j.name, repr(j.time), j.application, j.num_replicas, j.batch_size])
        return out.getvalue()


def _num(field: str, v: str, kind: type) -> float:
    try:
        x = float(v)
    except (TypeError, ValueError):
        raise InputError(field, v, "must be a number") from None
    if not math.isfinite(x) or x < 0:
        raise InputError(field, v, "must be a finite number >= 0")
    if kind is int:
        if x != int(x) or x < 1:
            raise InputError(field, v, "must be a positive integer")
        return int(x)
    return x


def read_workload(text: str, name: str = "workload") -> Workload:
    """Parse the CSV text of a workload (checked: columns, numbers, known applications, unique names)."""
    rows = list(csv.DictReader(io.StringIO(text)))
    if not rows:
        raise InputError(f"{name}", text[:40], "has no job rows")
    missing = [c for c in _COLUMNS if c not in rows[0]]
    if missing:
        raise InputError(f"{name}.columns", sorted(rows[0]), f"missing {', '.join(missing)}")
    apps = applications()
    jobs, seen = [], set()
    for k, r in enumerate(rows):
        p = f"{name}.jobs[{k}]"
        if r["application"] not in apps:
            raise InputError(f"{p}.application", r["application"], f"unknown; have {sorted(apps)}")
        if not r["name"] or r["name"] in seen:
            raise InputError(f"{p}.name", r["name"], "must be a non-empty unique name")
        seen.add(r["name"])
        jobs.append(WorkloadJob(r["name"], float(_num(f"{p}.time", r["time"], float)), r["application"],
                                int(_num(f"{p}.num_replicas", r["num_replicas"], int)),
                                int(_num(f"{p}.batch_size", r["batch_size"], int))))
    order = sorted(range(len(jobs)), key=lambda i: (jobs[i].time, i))
    return Workload(name, tuple(jobs[i] for i in order))


def _data() -> object:
    return resources.files("schedopt.sim").joinpath("data/workloads")


def list_workloads() -> dict[str, str]:
    """Shipped workload names (``"<set>/<k>"``) -> source."""
    src = json.loads(_data().joinpath("sources.json").read_text())  # type: ignore[attr-defined]
    out = {}
    for s, d in src.items():
        for fn in d["files"]:
            out[f"{s}/{fn.removeprefix('workload-').removesuffix('.csv')}"] = d["source"]
    return dict(sorted(out.items()))


def load_workload(name_or_path: str | Path) -> Workload:
    """A shipped workload (``"saturn/1"``, ``"pollux@1.5/3"``) or a CSV file path; ``"<set>@<load>/<k>"`` at another
    load and ``"FILE:load=X[:seed=K]"`` are made by :mod:`schedopt.traces.named`."""
    key = str(name_or_path)
    known = list_workloads()
    if key in known:
        s, k = key.split("/")
        text = _data().joinpath(s, f"workload-{k}.csv").read_text()  # type: ignore[attr-defined]
        return read_workload(text, key)
    p = Path(key)
    if p.is_file():
        return read_workload(p.read_text(), p.stem)
    # --- traces (issue 28): "<set>@<load>/<k>" at any load, "FILE:load=X[:seed=K...]" (schedopt/traces/named.py) ---
    from ..traces.named import resolve_workload

    made = resolve_workload(key)
    if made is not None:
        return made
    # --- end traces ---
    raise InputError("workload", key, f"is neither a file nor a shipped workload ({', '.join(list(known)[:4])}, ...)")


#: named clusters: Pollux's 16 x 4 T4; Sia's heterogeneous 64 GPUs (6 x 4 T4, 2 x 8 A100, 3 x 8 RTX 2080Ti) and its
#: k-times scaled versions (``sia-<64 k>``).
CLUSTERS = {
    "pollux": Cluster((GpuType("t4", 4, 16),)),
    "sia-64": Cluster((GpuType("t4", 4, 6), GpuType("a100", 8, 2), GpuType("rtx2080ti", 8, 3))),
}
_DEFAULT_JOB_MODEL = {"pollux": "pollux"}


def cluster_preset(name: str) -> Cluster:
    """``"pollux"``, ``"sia-64"`` or ``"sia-<64 k>"`` (e.g. ``"sia-2048"``: node counts times k)."""
    if name in CLUSTERS:
        return CLUSTERS[name]
    if name.startswith("sia-") and name[4:].isdigit():
        g = int(name[4:])
        if g >= 64 and g % 64 == 0:
            k = g // 64
            return Cluster(tuple(GpuType(t.name, t.gpus_per_node, t.nodes * k) for t in CLUSTERS["sia-64"].gpu_types))
    raise InputError("cluster", name, "must be 'pollux', 'sia-64' or 'sia-<multiple of 64>'")


def default_job_model(cluster_name: str) -> str:
    """The job model that goes with a cluster preset: ``pollux`` for Pollux's cluster, ``sia`` otherwise."""
    return _DEFAULT_JOB_MODEL.get(cluster_name, "sia")
