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
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

from .errors import InputError
from .problem import ProblemIO, problem_of, problems, register_problem

__all__ = ["ENVELOPE_KEYS", "SCHEMA", "VERSION", "ProblemIO", "dumps", "load", "loads", "parse_json", "problems",
           "read_text", "register_problem", "save"]

#: The ``schema`` field of every instance file.
SCHEMA = "schedopt.instance"
#: The instance file format's version.
VERSION = 1


def _io_for_instance(instance: Any) -> ProblemIO:
    return problem_of(instance)


def dumps(instance: Any, generator: dict | None = None) -> str:
    """The versioned JSON document of ``instance`` (``schema``, ``version``, ``problem``, ``generator``, ``data``)."""
    io = _io_for_instance(instance)
    doc = {"schema": SCHEMA, "version": VERSION, "problem": io.name, "generator": generator, "data": io.to_data(instance)}
    return json.dumps(doc, indent=1, sort_keys=False, allow_nan=False)


def save(instance: Any, path: str | Path, generator: dict | None = None) -> None:
    """Write ``instance`` as a versioned JSON file."""
    Path(path).write_text(dumps(instance, generator) + "\n")


#: the keys of the envelope; any other is refused (a misspelt key must not be ignored)
ENVELOPE_KEYS = ("schema", "version", "problem", "generator", "data")


class _DuplicateKey(Exception):
    def __init__(self, key: str) -> None:
        self.key = key


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise _DuplicateKey(k)
        out[k] = v
    return out


def parse_json(text: str, source: str = "file") -> Any:
    """``json.loads`` that refuses duplicate keys (the later one would silently win) and names ``source`` (a file
    path, or ``"file"``) in every error."""
    try:
        return json.loads(text, object_pairs_hook=_no_duplicates)
    except _DuplicateKey as exc:
        raise InputError(source, exc.key, "a JSON object repeats this key (the later value would silently win)") from None
    except json.JSONDecodeError as exc:
        raise InputError(source, f"line {exc.lineno} column {exc.colno}", f"is not valid JSON: {exc.msg}") from None
    except RecursionError:
        raise InputError(source, "nesting", "is nested too deeply to be an instance") from None


def read_text(path: str | Path) -> tuple[Path, str]:
    """The UTF-8 text of the file at ``path``; a missing path, a directory, an unreadable, empty or non-UTF-8 file is
    an :class:`InputError` naming the path."""
    if not isinstance(path, (str, Path)):
        raise InputError("path", path, "must be a file path (str or pathlib.Path)")
    p = Path(path)
    if not p.exists():
        raise InputError("path", str(path), "does not exist")
    if p.is_dir():
        raise InputError("path", str(path), "is a directory, not an instance file")
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise InputError("path", str(path), f"cannot be read: {exc.strerror or exc}") from None
    if not raw.strip():
        raise InputError("path", str(path), "is empty (an instance file holds one JSON object)")
    try:
        return p, raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError("path", str(path), f"is not UTF-8 text (byte {exc.start}: {exc.reason})") from None


def loads(text: str, source: str = "file") -> Any:
    """Parse and validate the text of an instance file (duplicate keys refused); ``source`` names it in errors."""
    if not isinstance(text, str):
        raise InputError(source, type(text).__name__, "must be JSON text (str)")
    return from_document(parse_json(text, source))


def from_document(doc: Any) -> Any:
    if not isinstance(doc, dict):
        raise InputError("file", type(doc).__name__, "must hold a JSON object")
    unknown = [k for k in doc if k not in ENVELOPE_KEYS]
    if unknown:
        raise InputError(str(unknown[0]), doc[unknown[0]], f"is not a key of the instance envelope {list(ENVELOPE_KEYS)}")
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
    p, text = read_text(path)
    return loads(text, str(p))


def problem_of_file(path: str | Path) -> str:
    p, text = read_text(path)
    doc = parse_json(text, str(p))
    return str(doc.get("problem")) if isinstance(doc, dict) else "None"


# --- helpers that problem readers share ------------------------------------------------------------------------
def check_keys(data: Mapping[str, Any], allowed: Collection[str], path: str) -> None:
    """Reject a key of ``data`` outside ``allowed`` (a misspelled field), naming ``path.key``."""
    for key in data:
        if key not in allowed:
            raise InputError(f"{path}.{key}", data[key], f"is not a known field ({', '.join(sorted(allowed))})")


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
