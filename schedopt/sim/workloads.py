"""Workloads (job arrival lists) and cluster presets for :mod:`schedopt.sim`.

The public format of the Pollux and Sia artifacts: CSV with ``name,time,application,num_replicas,batch_size``
(``time`` in seconds since the trace start; ``num_replicas`` / ``batch_size`` are the submitter's request, which
rigid policies use). Shipped sets (sources in ``data/workloads/sources.json``): ``pollux`` (workload-1..8, load
1.0), ``saturn`` (1..10), ``philly`` (1..8), ``newtrace`` (1), ``saturn-32x`` (1). Name one as
``"<set>/<k>"`` (``"saturn/1"``) or pass a path.
"""

from __future__ import annotations

import codecs
import csv
import io
import json
import math
import numbers
import warnings
from collections.abc import Callable, Mapping, Set
from dataclasses import dataclass
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..sia import Cluster, GpuType
from .jobs import applications
from .limits import MAX_ARRIVAL_SECONDS, MAX_BATCH_SIZE, MAX_REPLICAS, MAX_WORKLOAD_JOBS

__all__ = ["CLUSTERS", "GPT_REQUEST", "UnsortedWorkloadWarning", "Workload", "WorkloadJob", "cluster_preset", "decode_workload_bytes",
           "list_workloads", "load_workload", "read_workload", "with_gpt_jobs"]

_COLUMNS = ("name", "time", "application", "num_replicas", "batch_size")


class UnsortedWorkloadWarning(UserWarning):
    """A :class:`Workload` was given its jobs out of arrival order: they were sorted (stable) for the engine."""


def _name(v: Any, field: str) -> str:
    if not isinstance(v, str) or not v.strip():
        raise InputError(field, v, "must be a non-empty text")
    return v


def _time(v: Any, field: str) -> float:
    if type(v) is float and 0.0 <= v <= MAX_ARRIVAL_SECONDS:  # the common case, without the ABC checks below
        return v
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        raise InputError(field, v, "must be a number of seconds")
    try:
        x = float(v)
    except OverflowError:
        raise InputError(field, v, "must be a finite number of seconds") from None
    if not math.isfinite(x) or x < 0:
        raise InputError(field, v, "must be a finite number of seconds >= 0")
    if x > MAX_ARRIVAL_SECONDS:
        raise InputError(field, v, f"must be <= MAX_ARRIVAL_SECONDS = {MAX_ARRIVAL_SECONDS:g} s (ten years)")
    return x


def _count(v: Any, field: str, hi: int, what: str) -> int:
    if type(v) is int and 1 <= v <= hi:  # the common case, without the ABC checks below
        return v
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        raise InputError(field, v, f"must be a positive integer ({what})")
    if isinstance(v, numbers.Integral):
        k = int(v)
    else:
        x = float(v)
        if not math.isfinite(x) or x != int(x):
            raise InputError(field, v, f"must be a positive integer ({what})")
        k = int(x)
    if not 1 <= k <= hi:
        raise InputError(field, v, f"must be an integer in 1..{hi} ({what})")
    return k


@dataclass(frozen=True)
class WorkloadJob:
    """One submitted job, checked when made: ``name`` and ``application`` non-empty texts; ``time`` (arrival, s) a
    finite number in [0, MAX_ARRIVAL_SECONDS]; ``num_replicas`` (GPUs asked for) an integer in 1..MAX_REPLICAS;
    ``batch_size`` an integer in 1..MAX_BATCH_SIZE (integral floats and numpy numbers are normalized). Whether the
    application is known is checked where the job model is (:func:`~schedopt.sim.simulate`,
    :func:`read_workload`): a custom :class:`~schedopt.sim.JobModel` may bring its own."""

    name: str
    time: float
    application: str
    num_replicas: int
    batch_size: int

    def __post_init__(self) -> None:
        who = f"WorkloadJob({self.name!r})" if isinstance(self.name, str) else "WorkloadJob"
        _name(self.name, f"{who}.name")
        object.__setattr__(self, "time", _time(self.time, f"{who}.time"))
        _name(self.application, f"{who}.application")
        object.__setattr__(self, "num_replicas", _count(self.num_replicas, f"{who}.num_replicas", MAX_REPLICAS, "GPUs"))
        object.__setattr__(self, "batch_size", _count(self.batch_size, f"{who}.batch_size", MAX_BATCH_SIZE,
                                                      "global batch size"))


@dataclass(frozen=True)
class Workload:
    """An arrival list, checked when made (from a file or in Python): ``name`` a non-empty text; ``jobs`` a sequence
    of at most MAX_WORKLOAD_JOBS :class:`WorkloadJob` with unique names, stored as a tuple sorted by arrival time
    (stable: ties keep their order). Jobs given out of order are sorted with an :class:`UnsortedWorkloadWarning`,
    never run in the given order (the engine admits jobs in list order, so a job arriving at t = 0 listed after one
    arriving at t = 3600 would otherwise start late)."""

    name: str
    jobs: tuple[WorkloadJob, ...]

    def __post_init__(self) -> None:
        _name(self.name, "Workload.name")
        jobs = self.jobs
        if isinstance(jobs, (str, bytes, WorkloadJob, Mapping, Set)) or not hasattr(jobs, "__iter__"):
            raise InputError(f"Workload({self.name!r}).jobs", type(jobs).__name__,
                             "must be a sequence of schedopt.sim.WorkloadJob")
        jobs = tuple(jobs)
        if len(jobs) > MAX_WORKLOAD_JOBS:
            raise InputError(f"Workload({self.name!r}).jobs", len(jobs), f"must hold at most {MAX_WORKLOAD_JOBS:,} jobs")
        seen: dict[str, int] = {}
        for k, j in enumerate(jobs):
            if not isinstance(j, WorkloadJob):
                raise InputError(f"Workload({self.name!r}).jobs[{k}]", type(j).__name__, "must be a schedopt.sim.WorkloadJob")
            if j.name in seen:
                raise InputError(f"Workload({self.name!r}).jobs[{k}].name", j.name,
                                 f"is the name of jobs[{seen[j.name]}] too: job names must be unique")
            seen[j.name] = k
        if any(jobs[k].time > jobs[k + 1].time for k in range(len(jobs) - 1)):
            k = next(k for k in range(len(jobs) - 1) if jobs[k].time > jobs[k + 1].time)
            warnings.warn(f"Workload {self.name!r}: jobs are not sorted by arrival (jobs[{k}] {jobs[k].name!r} at "
                          f"{jobs[k].time:g} s before jobs[{k + 1}] {jobs[k + 1].name!r} at {jobs[k + 1].time:g} s); "
                          "sorted them by arrival time", UnsortedWorkloadWarning, stacklevel=3)
            order = sorted(range(len(jobs)), key=lambda i: (jobs[i].time, i))
            jobs = tuple(jobs[i] for i in order)
        object.__setattr__(self, "jobs", jobs)

    def __len__(self) -> int:
        return len(self.jobs)

    def to_csv(self) -> str:
        out = io.StringIO()
        w = csv.writer(out, lineterminator="\n")
        w.writerow(_COLUMNS)
        for j in self.jobs:
            w.writerow([j.name, repr(j.time), j.application, j.num_replicas, j.batch_size])
        return out.getvalue()


_BOMS = ((codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"), (codecs.BOM_UTF8, "utf-8-sig"),
         (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))


def decode_workload_bytes(data: bytes, source: str = "workload") -> str:
    """The text of a workload file in any common encoding: a byte-order mark names it (UTF-8, UTF-16 or UTF-32,
    either order); else UTF-8; else Latin-1 (every byte is a character) -- except data holding NUL bytes, which no
    text CSV holds (UTF-16 without a mark, a binary file): an :class:`InputError` naming ``source``."""
    for bom, enc in _BOMS:
        if data.startswith(bom):
            try:
                return data.decode(enc)
            except UnicodeDecodeError as exc:
                raise InputError(source, data[:20], f"starts with a {enc} byte-order mark but is not {enc}: {exc.reason} "
                                 f"at byte {exc.start}") from None
    if b"\x00" in data:
        raise InputError(source, data[:20], "holds NUL bytes: not a text CSV (UTF-16 without a byte-order mark, or a "
                         "binary file); save it as UTF-8")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("latin-1")


def _cell(v: str | None, field: str, kind: str) -> Any:
    if v is None:
        raise InputError(field, None, "is missing (the row has fewer fields than the header)")
    t = v.strip()
    if kind == "text":
        if not t:
            raise InputError(field, v, "must be a non-empty text")
        return t
    if kind != "time" and t.isdigit() and t.isascii() and len(t) < 12:  # the common case: a plain integer
        x: float = int(t)
    else:
        try:
            x = float(t)
        except ValueError:
            raise InputError(field, v, "must be a number") from None
    if kind == "time":
        return _time(x, field)
    return _count(x, field, MAX_REPLICAS if kind == "replicas" else MAX_BATCH_SIZE,
                  "GPUs" if kind == "replicas" else "global batch size")


def read_workload(text: str | bytes, name: str = "workload", *, source: str | None = None) -> Workload:
    """Parse the CSV text (or bytes, any encoding: :func:`decode_workload_bytes`) of a workload: any line ending
    (``\\n``, ``\\r\\n``, ``\\r``), the columns ``name,time,application,num_replicas,batch_size`` (others are
    ignored), every row checked (numbers and their bounds, known applications, unique names). A bad row is an
    :class:`InputError` naming the source (``source``, default ``name``), the row's line and the column:
    ``saturn.csv:7.time``. Rows out of arrival order are sorted, as the published artifacts' readers do."""
    src = source or name
    if isinstance(text, (bytes, bytearray)):
        text = decode_workload_bytes(bytes(text), src)
    if not isinstance(text, str):
        raise InputError(src, type(text).__name__, "must be the CSV text of a workload")
    text = text.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    if "\x00" in text:
        raise InputError(src, text[:20], "holds NUL characters: not a text CSV")
    try:
        reader = csv.DictReader(io.StringIO(text))
        header = [h.strip() if isinstance(h, str) else h for h in (reader.fieldnames or [])]
        reader.fieldnames = header
        rows = [(reader.line_num, r) for r in reader]
    except csv.Error as exc:
        raise InputError(src, text[:40], f"is not a readable CSV: {exc}") from None
    if not header:
        raise InputError(src, text[:40], "is empty: expected a header line name,time,application,num_replicas,batch_size")
    missing = [c for c in _COLUMNS if c not in header]
    if missing:
        raise InputError(f"{src}.columns", header, f"missing {', '.join(missing)}")
    rows = [(ln, r) for ln, r in rows if any((v or "").strip() for k, v in r.items() if k is not None)]
    if not rows:
        raise InputError(src, text[:40], "has no job rows")
    apps = applications()
    jobs: list[WorkloadJob] = []
    seen: dict[str, int] = {}
    for line, r in rows:
        p = f"{src}:{line}"
        if r.get(None):
            raise InputError(f"{p}", r[None], f"has more fields than the header's {len(header)}")
        jname = _cell(r["name"], f"{p}.name", "text")
        app = _cell(r["application"], f"{p}.application", "text")
        if app not in apps:
            raise InputError(f"{p}.application", app, f"unknown; have {sorted(apps)}")
        if jname in seen:
            raise InputError(f"{p}.name", jname, f"is used by line {seen[jname]} too: job names must be unique")
        seen[jname] = line
        jobs.append(WorkloadJob(jname, _cell(r["time"], f"{p}.time", "time"), app,
                                _cell(r["num_replicas"], f"{p}.num_replicas", "replicas"),
                                _cell(r["batch_size"], f"{p}.batch_size", "batch")))
    order = sorted(range(len(jobs)), key=lambda i: (jobs[i].time, i))
    return Workload(name, tuple(jobs[i] for i in order))


def _data() -> Traversable:
    return resources.files("schedopt.sim").joinpath("data/workloads")


def list_workloads() -> dict[str, str]:
    """Shipped workload names (``"<set>/<k>"``) -> source."""
    src = json.loads(_data().joinpath("sources.json").read_text())
    out = {}
    for s, d in src.items():
        for fn in d["files"]:
            out[f"{s}/{fn.removeprefix('workload-').removesuffix('.csv')}"] = d["source"]
    return dict(sorted(out.items()))


def load_workload(name_or_path: str | Path) -> Workload:
    """A shipped workload (``"saturn/1"``, ``"pollux@1.5/3"``) or a CSV file path; ``"<set>@<load>/<k>"`` at another
    load and ``"FILE:load=X[:seed=K]"`` are made by :mod:`schedopt.traces.named`; ``"<workload>+gpt=<f>[:seed=K]"``
    by :func:`with_gpt_jobs`."""
    if not isinstance(name_or_path, (str, Path)) or not str(name_or_path).strip():
        raise InputError("workload", name_or_path, "must name a shipped workload ('saturn/1') or a CSV file")
    key = str(name_or_path)
    if "\x00" in key:
        raise InputError("workload", key, "must not hold NUL characters")
    known = list_workloads()
    if key in known:
        s, k = key.split("/")
        text = _data().joinpath(s, f"workload-{k}.csv").read_text()
        return read_workload(text, key)
    p = Path(key)
    if p.is_file():
        try:
            data = p.read_bytes()
        except OSError as exc:
            raise InputError("workload", key, f"cannot be read: {exc.strerror or exc}") from None
        return read_workload(data, p.stem or "workload", source=str(p))
    if p.exists():
        raise InputError("workload", key, "is not a regular file (a folder?)")
    if "+gpt=" in key:  # sia-eval: "<workload>+gpt=<fraction>[:seed=<k>]", the name with_gpt_jobs gives
        base, _, rest = key.rpartition("+gpt=")
        frac, _, seed = rest.partition(":seed=")
        try:
            frac_f, seed_i = float(frac), int(seed or "0")
        except ValueError:
            raise InputError("workload", key, "'<workload>+gpt=<fraction>[:seed=<k>]' needs a number and an integer "
                             "seed") from None
        return with_gpt_jobs(load_workload(base), frac_f, seed=seed_i)
    # workload sources of installed packages (entry-point group "schedopt.workloads"; schedopt.traces gives
    # "<set>@<load>/<k>" at any load and "FILE:load=X[:seed=K...]"): each resolver returns a Workload or None
    for resolve in workload_resolvers():
        made = resolve(key)
        if made is not None:
            return made
    raise InputError("workload", key, f"is neither a file nor a shipped workload ({', '.join(list(known)[:4])}, ...)")


def workload_resolvers() -> list[Callable[[str], Workload | None]]:
    """The resolvers of workload names registered through the entry-point group ``schedopt.workloads`` (``name =
    "module:function"``, ``function(key) -> Workload | None``), in name order: how a package beside the simulator
    (``schedopt.traces``, or a user's) adds named workloads without the simulator importing it."""
    from importlib import metadata

    eps = sorted(metadata.entry_points(group="schedopt.workloads"), key=lambda e: e.name)
    return [ep.load() for ep in eps]


#: named clusters: Pollux's 16 x 4 T4; Sia's heterogeneous 64 GPUs (6 x 4 T4, 2 x 8 A100, 3 x 8 RTX 2080Ti) and its
#: k-times scaled versions (``sia-<64 k>``).
CLUSTERS = {
    "pollux": Cluster((GpuType("t4", 4, 16),)),
    "sia-64": Cluster((GpuType("t4", 4, 6), GpuType("a100", 8, 2), GpuType("rtx2080ti", 8, 3))),
    # sia-eval: Sia's A100 and RTX 2080Ti nodes, the GPU types the artifact profiled its pipeline-parallel GPT on
    "sia-gpt": Cluster((GpuType("a100", 8, 2), GpuType("rtx2080ti", 8, 3))),
}
_DEFAULT_JOB_MODEL = {"pollux": "pollux"}


def cluster_preset(name: str) -> Cluster:
    """``"pollux"``, ``"sia-64"``, ``"sia-gpt"`` (sia-64 without its T4 nodes) or ``"sia-<64 k>"`` (e.g.
    ``"sia-2048"``: node counts times k)."""
    if not isinstance(name, str):
        raise InputError("cluster", name, "must be a cluster preset name ('pollux', 'sia-64', 'sia-<multiple of 64>')")
    if name in CLUSTERS:
        return CLUSTERS[name]
    if name.startswith("sia-") and name[4:].isdigit() and name[4:].isascii() and len(name) < 16:
        g = int(name[4:])
        if g >= 64 and g % 64 == 0:
            k = g // 64
            return Cluster(tuple(GpuType(t.name, t.gpus_per_node, t.nodes * k) for t in CLUSTERS["sia-64"].gpu_types))
    import difflib

    known = [*CLUSTERS, "sia-128", "sia-256", "sia-512", "sia-1024", "sia-2048"]
    close = difflib.get_close_matches(name, known, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    raise InputError("cluster", name, f"is no cluster preset of the elastic engine; have {', '.join(repr(c) for c in CLUSTERS)} and "
                                      f"'sia-<multiple of 64>' (sia-128, ..., sia-2048){hint}")


def default_job_model(cluster_name: str) -> str:
    """The job model that goes with a cluster preset: ``pollux`` for Pollux's cluster, ``sia-measured`` for Sia's
    (``sia-64``, ``sia-gpt``, ``sia-<64 k>``: the artifact's measured step times, the fit only beyond them; issue 31
    item 0), ``sia`` (the fitted model) for any other cluster."""
    if cluster_name in _DEFAULT_JOB_MODEL:
        return _DEFAULT_JOB_MODEL[cluster_name]
    if isinstance(cluster_name, str) and cluster_name.startswith("sia-"):
        try:
            cluster_preset(cluster_name)
        except InputError:
            return "sia"
        return "sia-measured"
    return "sia"


# -- sia-eval: a workload with pipeline-model-parallel GPT jobs (issue 31 item 2) --
#: Requested GPUs and batch of a GPT job in :func:`with_gpt_jobs`: 8 GPUs (4 pipelines on the A100, 1 on the RTX
#: 2080Ti: a count both depths divide) at 4 pipelines x 48 samples.
GPT_REQUEST = (8, 192)


def with_gpt_jobs(workload: Workload | str, fraction: float = 0.1, *, seed: int = 0,
                  application: str = "gpt_pmp") -> Workload:
    """``workload`` with ``round(fraction * jobs)`` of its jobs, drawn without replacement by
    ``numpy.random.default_rng(seed)``, turned into ``application`` jobs (named ``<application>-<name>``, same arrival) asking for
    :data:`GPT_REQUEST`. The Sia artifact ships the GPT traces (``traces/gpt_pmp``) but no workload with GPT jobs,
    so this seeded mix stands in for one; named ``<workload>+gpt=<fraction>:seed=<seed>``."""
    import numpy as np

    w = load_workload(workload) if isinstance(workload, str) else workload
    if not isinstance(fraction, (int, float)) or isinstance(fraction, bool) or not 0.0 <= float(fraction) <= 1.0:
        raise InputError("fraction", fraction, "must be a fraction in [0, 1]")
    if application not in applications():
        raise InputError("application", application, f"unknown; have {sorted(applications())}")
    k = round(float(fraction) * len(w.jobs))
    pick = {int(i) for i in np.random.default_rng(int(seed)).permutation(len(w.jobs))[:k]}
    g, b = GPT_REQUEST
    jobs = tuple(WorkloadJob(f"{application}-{j.name}", j.time, application, g, b) if i in pick else j
                 for i, j in enumerate(w.jobs))
    return Workload(f"{w.name}+gpt={float(fraction):g}:seed={int(seed)}", jobs)
