"""The benchmark record: one flat row per run, written as CSV or JSON Lines and read back with the same types.

Every field is a plain scalar (str, int, float, bool, or ``None``), so a CSV row and a JSON line hold the same
thing. Times are seconds, memory is MiB. ``termination`` is a :class:`schedopt.TerminationReason` value, or
``"guard"`` (the harness killed the run at its wall-clock guard: never an incumbent) or ``"error"`` (the run
raised; ``error`` says what). ``outcome`` says it in words ("time limit with incumbent", "guard: no incumbent").
"""

from __future__ import annotations

import csv
import dataclasses
import json
import math
import os
import platform
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from ..errors import InputError

__all__ = ["PHASES", "Record", "machine_info", "read_records", "write_records"]

#: the timed phases of the whole path, in order (``t_<phase>`` fields); their sum is ``t_path``
PHASES = ("goodput", "build", "handoff", "solve", "decode", "place")


@dataclass
class Record:
    """One benchmark run."""

    # --- identity
    sweep: str = ""  #: id of the sweep (one call of ``run``); ratios are only taken within one sweep
    spec: str = ""
    problem: str = ""
    instance_id: str = ""
    instance_hash: str = ""  #: sha256 (first 16 hex digits) of the instance's JSON document (or its arrays)
    seed: int = 0  #: the instance generator's seed
    load: str = ""
    repeat: int = 0
    # --- sizes
    gpus: int = 0
    jobs: int | None = None
    variables: int | None = None
    integer_variables: int | None = None
    constraints: int | None = None
    nonzeros: int | None = None
    # --- backend and parameters
    backend: str = ""  #: the sweep entry: a backend, a problem's method, or method@backend
    method: str = ""  #: the problem's method that ran (ProblemIO routes; refused upfront when it uses no backend given)
    route: str = ""  #: "schedopt" (LinearModel + schedopt.solve), "cvxpy", "problemio", ...
    backend_version: str = ""
    threads: int = 1
    solver_seed: int = 0
    time_limit: float | None = None
    mip_rel_gap: float | None = None
    guard_seconds: float | None = None
    # --- outcome
    termination: str = ""
    limit: str = ""  #: "time", "iteration", ..., "guard", or ""
    has_incumbent: bool = False
    outcome: str = ""
    sense: str = ""
    objective: float | None = None
    bound: float | None = None
    gap: float | None = None
    lp_bound: float | None = None  #: optimum of the LP relaxation (HiGHS), for every integer model
    lp_gap: float | None = None  #: ``|objective - lp_bound| / max(|objective|, 1e-10)``
    # --- times (seconds)
    t_generate: float | None = None
    t_goodput: float | None = None
    t_build: float | None = None
    t_handoff: float | None = None
    t_solve: float | None = None
    t_decode: float | None = None
    t_place: float | None = None
    t_path: float | None = None  #: goodput + build + handoff + solve + decode + place: the whole path
    t_lp: float | None = None  #: the LP relaxation solve (not part of the path)
    t_warmup: float | None = None  #: imports and a tiny warm-up solve in the run's process (not part of the path)
    t_wall: float | None = None  #: wall clock of the whole run as seen by the harness (process start to end)
    # --- memory (MiB)
    peak_rss_mb: float | None = None  #: peak resident set of the run's process (getrusage ru_maxrss)
    base_rss_mb: float | None = None  #: resident set after imports and warm-up, before the instance is generated
    # --- machine
    machine_cpu: str = ""
    machine_cores: int | None = None
    machine_platform: str = ""
    python: str = ""
    packages: str = ""  #: "name=version;..." of schedopt and the solvers / modelling packages installed
    timestamp: str = ""
    error: str = ""
    #: JSON text of anything else a run reports (solver statistics, checker results), and how its process started:
    #: ``start`` ("fork" or "exec") and, in a warm sweep, ``warm_run`` (which run of its kept process it was)
    extra: str = ""

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @property
    def phases(self) -> dict[str, float | None]:
        return {p: getattr(self, f"t_{p}") for p in PHASES}


_FIELDS = {f.name: f for f in fields(Record)}
COLUMNS: tuple[str, ...] = tuple(_FIELDS)


def _kind(name: str) -> str:
    t = str(_FIELDS[name].type)
    for k in ("bool", "int", "float"):
        if t.startswith(k):
            return k
    return "str"


def _coerce(name: str, value: Any, where: str) -> Any:
    """A value read from CSV (text) or JSON into the field's type; ``""`` / ``None`` -> None for optional fields."""
    kind = _kind(name)
    optional = "None" in str(_FIELDS[name].type)
    if value is None or (isinstance(value, str) and value == "" and kind != "str"):
        if optional:
            return None
        default = _FIELDS[name].default
        return default
    try:
        if kind == "bool":
            if isinstance(value, bool):
                return value
            s = str(value).strip().lower()
            if s in ("true", "1", "yes"):
                return True
            if s in ("false", "0", "no"):
                return False
            raise ValueError(value)
        if kind == "int":
            if isinstance(value, bool):
                raise ValueError(value)
            f = float(value)
            if not f.is_integer():
                raise ValueError(value)
            return int(f)
        if kind == "float":
            if isinstance(value, bool):
                raise ValueError(value)
            return float(value)  # "inf", "nan" and numbers
        return str(value)
    except (TypeError, ValueError) as exc:
        raise InputError(f"{where}.{name}", value, f"must be {kind}") from exc


def _to_row(rec: Record) -> dict[str, Any]:
    return rec.as_dict()


def _json_value(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    return v


def record_from_dict(d: dict[str, Any], where: str = "record") -> Record:
    unknown = sorted(set(d) - set(_FIELDS))
    if unknown:
        raise InputError(f"{where}.{unknown[0]}", d[unknown[0]], f"is no record column (columns: {', '.join(COLUMNS)})")
    return Record(**{k: _coerce(k, v, where) for k, v in d.items()})


def write_records(records: Iterable[Record], path: str | os.PathLike[str]) -> Path:
    """Write ``records`` to ``path``: CSV for ``.csv``, JSON Lines for ``.jsonl`` / ``.json`` / ``.ndjson``."""
    p = Path(path)
    recs = list(records)
    suffix = p.suffix.lower()
    if suffix not in (".csv", ".jsonl", ".ndjson", ".json"):
        raise InputError("path", str(path), "must end in .csv or .jsonl (the table format is chosen by the suffix)")
    if p.parent and not p.parent.exists():
        p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(p.name + ".tmp")
    with open(tmp, "w", newline="", encoding="utf-8") as fh:
        if suffix == ".csv":
            w = csv.DictWriter(fh, fieldnames=list(COLUMNS))
            w.writeheader()
            for r in recs:
                w.writerow({k: ("" if v is None else v) for k, v in _to_row(r).items()})
        else:
            for r in recs:
                fh.write(json.dumps({k: _json_value(v) for k, v in _to_row(r).items()}, allow_nan=False) + "\n")
    os.replace(tmp, p)
    return p


def read_records(path: str | os.PathLike[str]) -> list[Record]:
    """Read a table written by :func:`write_records` (CSV or JSON Lines, by suffix)."""
    p = Path(path)
    if not p.exists():
        raise InputError("path", str(path), "does not exist")
    suffix = p.suffix.lower()
    out: list[Record] = []
    with open(p, newline="", encoding="utf-8") as fh:
        if suffix == ".csv":
            reader = csv.DictReader(fh)
            missing = [c for c in ("backend", "termination", "gpus") if c not in (reader.fieldnames or [])]
            if missing:
                raise InputError(f"{p.name}.columns", reader.fieldnames, f"lacks {', '.join(missing)}: not a bench table")
            for i, row in enumerate(reader):
                out.append(record_from_dict(dict(row), f"{p.name}[row {i + 2}]"))
        elif suffix in (".jsonl", ".ndjson", ".json"):
            for i, line in enumerate(fh):
                if not line.strip():
                    continue
                try:
                    d = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise InputError(f"{p.name}[line {i + 1}]", line[:60], f"is not JSON: {exc.msg}") from exc
                if not isinstance(d, dict):
                    raise InputError(f"{p.name}[line {i + 1}]", d, "must be a JSON object")
                out.append(record_from_dict(d, f"{p.name}[line {i + 1}]"))
        else:
            raise InputError("path", str(path), "must end in .csv or .jsonl")
    return out


# ------------------------------------------------------------------------------------------------ machine info
_PACKAGES = ("schedopt", "numpy", "scipy", "highspy", "ortools", "pyomo", "cvxpy", "cvxopt", "cylp", "swiglpk")


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine_info() -> dict[str, Any]:
    """CPU, cores, platform, Python and the versions of schedopt and the solver packages installed."""
    from importlib import metadata

    vers = []
    for name in _PACKAGES:
        try:
            vers.append(f"{name}={metadata.version(name)}")
        except metadata.PackageNotFoundError:
            continue
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        cores = os.cpu_count() or 0
    return {
        "machine_cpu": _cpu_name(),
        "machine_cores": cores,
        "machine_platform": platform.platform(terse=True),
        "python": sys.version.split()[0],
        "packages": ";".join(vers),
    }


def as_records(records_or_path: Sequence[Record] | str | os.PathLike[str]) -> list[Record]:
    if isinstance(records_or_path, (str, os.PathLike)):
        return read_records(records_or_path)
    return list(records_or_path)
