"""Versioned instance files: one JSON envelope for every problem.

An instance file is::

    {"schema": "schedopt.instance", "version": 1, "problem": "sia",
     "generator": {...settings that produced it, or null...}, "data": {...problem-specific...}}

Each problem package registers a :class:`ProblemIO` (``to_data`` / ``from_data`` and, for the command line,
``solve`` and ``explain``). ``load`` validates the envelope and hands ``data`` to the problem's ``from_data``, which
raises :class:`~schedopt.errors.InputError` naming the field path (``data.jobs[3].min_gpus``) and the value.
``save`` then ``load`` round-trips exactly.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .errors import InputError
from .problem import ProblemIO, problem_of, problems, register_problem

__all__ = ["SCHEMA", "VERSION", "ProblemIO", "dumps", "load", "loads", "problems", "register_problem", "save"]

SCHEMA = "schedopt.instance"
VERSION = 1


def _io_for_instance(instance: Any) -> ProblemIO:
    return problem_of(instance)


def dumps(instance: Any, generator: dict | None = None) -> str:
    io = _io_for_instance(instance)
    doc = {"schema": SCHEMA, "version": VERSION, "problem": io.name, "generator": generator, "data": io.to_data(instance)}
    return json.dumps(doc, indent=1, sort_keys=False, allow_nan=False)


def save(instance: Any, path: str | Path, generator: dict | None = None) -> None:
    """Write ``instance`` as a versioned JSON file."""
    Path(path).write_text(dumps(instance, generator) + "\n")


def loads(text: str) -> Any:
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError("file", f"line {exc.lineno} column {exc.colno}", f"is not valid JSON: {exc.msg}") from exc
    return from_document(doc)


def from_document(doc: Any) -> Any:
    if not isinstance(doc, dict):
        raise InputError("file", type(doc).__name__, "must hold a JSON object")
    if doc.get("schema") != SCHEMA:
        raise InputError("schema", doc.get("schema"), f"must be {SCHEMA!r}")
    if doc.get("version") != VERSION:
        raise InputError("version", doc.get("version"), f"unsupported; this schedopt reads version {VERSION}")
    probs = problems()
    name = doc.get("problem")
    if name not in probs:
        raise InputError("problem", name, f"must be one of {sorted(probs)}")
    if not isinstance(doc.get("data"), dict):
        raise InputError("data", type(doc.get("data")).__name__, "must be a JSON object")
    return probs[name].from_data(doc["data"])


def load(path: str | Path) -> Any:
    """Read and validate a versioned instance file; returns the problem's instance object."""
    p = Path(path)
    if not p.exists():
        raise InputError("path", str(path), "does not exist")
    return loads(p.read_text())


def problem_of_file(path: str | Path) -> str:
    doc = json.loads(Path(path).read_text())
    return str(doc.get("problem"))


# --- helpers that problem readers share ------------------------------------------------------------------------
def field(data: dict, key: str, path: str, kind: type | tuple[type, ...], default: Any = ...) -> Any:
    """Read ``data[key]`` checking its JSON type; errors name ``path.key`` and the value."""
    if key not in data:
        if default is ...:
            raise InputError(f"{path}.{key}", None, "is missing")
        return default
    v = data[key]
    if kind is float and isinstance(v, int) and not isinstance(v, bool):
        return float(v)
    if isinstance(v, bool) and kind in (int, float):
        raise InputError(f"{path}.{key}", v, f"must be {kind.__name__}")
    if not isinstance(v, kind):
        names = kind.__name__ if isinstance(kind, type) else "/".join(k.__name__ for k in kind)
        raise InputError(f"{path}.{key}", v, f"must be {names}")
    return v
