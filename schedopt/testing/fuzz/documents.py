"""Loaders: instance documents mutated leaf by leaf, and bad files."""

from __future__ import annotations

import copy
import json
import math
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from .catalog import MISSING, Bad, bads
from .runner import Case, EntryPoint, Outcome, run_case


def _leaves(obj: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Any]]:
    """(path, value) of every leaf and container of a JSON document; lists only through their first element."""
    yield path, obj
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _leaves(v, (*path, k))
    elif isinstance(obj, list) and obj:
        yield from _leaves(obj[0], (*path, 0))


def _path_text(path: tuple[Any, ...]) -> str:
    return "data" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path)


def _set(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    doc = copy.deepcopy(doc)
    if not path:
        return value
    parent = doc
    for p in path[:-1]:
        parent = parent[p]
    if value is MISSING:
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    return doc


_JSON_SCALAR_TYPES = bads(("null", None, False), ("'abc'", "abc"), ("[]", []), ("{}", {}))
# null, or the other empty container, may mean "none" in a container's place; a string never does
_JSON_CONTAINER_TYPES = bads(("null", None, False), ("'abc'", "abc"), ("[]", [], False), ("{}", {}, False))
_JSON_NUMBERS = bads(("NaN", math.nan), ("Infinity", math.inf), ("-1", -1, False), ("0", 0, False),
                      ("1e300", 1e300, False), ("10**30", 10**30, False), ("1.5", 1.5, False))
_JSON_KEYS = bads(("unknown key", "unknown key"), ("missing key", MISSING, False))


def document_cases(data: dict[str, Any], family: str) -> list[Case]:
    """Mutations of an instance's ``data``: ``types`` (a leaf replaced by another JSON type), ``numbers`` (a number
    replaced by NaN, inf, negative, zero, huge, fractional) or ``keys`` (an unknown key added to an object, a key
    removed). The case's field is the path written ``data.jobs[0].gpus``; its value is applied by
    :func:`apply_document_case`."""
    out = []
    for path, v in _leaves(data):
        where = _path_text(path)
        if family == "types" and path and v is not None:
            bads = _JSON_CONTAINER_TYPES if isinstance(v, (dict, list)) else _JSON_SCALAR_TYPES
            out += [Case(where, b) for b in bads if type(b.value) is not type(v)]
        elif family == "numbers" and isinstance(v, (int, float)) and not isinstance(v, bool):
            out += [Case(where, b) for b in _JSON_NUMBERS if b.value != v]
        elif family == "keys" and isinstance(v, dict):
            out.append(Case(where, _JSON_KEYS[0]))
            out += [Case(f"{where}.{k}", _JSON_KEYS[1]) for k in v]
    return out


def apply_document_case(data: dict[str, Any], case: Case) -> dict[str, Any]:
    """A copy of ``data`` with the case's bad value put at its field (or an unknown key added beside it)."""
    path = _parse_path(case.field)
    if case.bad.label == "unknown key":
        parent = data
        for p in path:
            parent = parent[p]
        return _set(data, (*path, "no_such_key"), 1)
    return _set(data, path, case.bad.fresh())


def _parse_path(text: str) -> tuple[Any, ...]:
    out: list[Any] = []
    for part in text.removeprefix("data").replace("[", ".[").split("."):
        if not part:
            continue
        out.append(int(part[1:-1]) if part.startswith("[") else part)
    return tuple(out)


#: the instance each problem's loader is fuzzed on: (generator parameters) -- small, so a build takes milliseconds
DOCUMENT_SOURCES: dict[str, dict[str, Any]] = {
    "sia": {"gpus": 64, "seed": 0},
    "synergy": {"gpus": 16, "seed": 0},
    "heterps": {"gpus": 8, "seed": 0},
    "hived": {"gpus": 16, "seed": 0},
    "gandiva": {"gpus": 8, "seed": 0},
}


def document_entry(problem: str) -> tuple[EntryPoint, dict[str, Any]]:
    """The loader of ``problem``'s instance documents as an entry point: ``call(data=...)`` reads the document
    through ``schedopt.instances.from_document``, then builds the model where the problem has one (or sizes
    it)."""
    from ...instances import SCHEMA, VERSION, from_document
    from ...problem import get_problem

    io = get_problem(problem)
    assert io.generate is not None
    data = io.to_data(io.generate(**DOCUMENT_SOURCES[problem]))
    data = json.loads(json.dumps(data))

    def call(data: Any) -> Any:
        spec = from_document({"schema": SCHEMA, "version": VERSION, "problem": problem, "data": data})
        if io.build is not None:
            return io.build(spec)
        return io.size(spec) if io.size is not None else spec

    return EntryPoint(f"instances.from_document[{problem}]", call, lambda: {"data": copy.deepcopy(data)},
                      {"data": "document"}, prepare=None), data


def run_document_case(problem: str, case: Case, timeout: float = 5.0) -> Outcome:
    """Run one bad-document case against the problem's document entry point; its outcome."""
    entry, data = document_entry(problem)
    mutated = apply_document_case(data, case)
    e = EntryPoint(entry.name, entry.call, lambda: {"data": mutated}, entry.fields)
    out = run_case(e, None, timeout)
    status = out.status
    if status == "ok" and case.bad.reject:
        status = "silent"
    return Outcome(status, entry.name, case, out.detail or ("accepted" if status == "silent" else ""), out.seconds)


#: file-level inputs every loader must answer with a named error: (label, how to make it in a directory)
FILE_CASES: dict[str, Callable[[Path], Path]] = {
    "missing file": lambda d: d / "no-such-file.json",
    "a directory": lambda d: d,
    "empty file": lambda d: _write(d / "empty.json", b""),
    "truncated": lambda d: _write(d / "cut.json", b'{"schema": "schedopt.instance", "vers'),
    "not UTF-8": lambda d: _write(d / "latin1.json", '{"schema": "caf\u00e9"}'.encode("latin-1")),
    "binary": lambda d: _write(d / "bin.json", bytes(range(256))),
    "a JSON list": lambda d: _write(d / "list.json", b"[1, 2]"),
    "duplicate keys": lambda d: _write(d / "dup.json", b'{"schema": "schedopt.instance", "schema": "x", "version": 1}'),
}

#: Bad HiveD YAML files by name: each writes the file under a folder and returns its path.
YAML_CASES: dict[str, Callable[[Path], Path]] = {
    "missing file": lambda d: d / "no-such-file.yaml",
    "a directory": lambda d: d,
    "empty file": lambda d: _write(d / "empty.yaml", b""),
    "truncated": lambda d: _write(d / "cut.yaml", b"physicalCluster:\n  cellTypes: {a: [1,"),
    "not UTF-8": lambda d: _write(d / "latin1.yaml", "physicalCluster: caf\u00e9\n".encode("latin-1")),
    "a YAML list": lambda d: _write(d / "list.yaml", b"- 1\n- 2\n"),
    "duplicate keys": "duplicate-keys",  # type: ignore[dict-item]  # built from the shipped example below
    "huge childCellNumber": "huge-children",  # type: ignore[dict-item]
}


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def _hived_example_text() -> str:
    from importlib import resources

    return (resources.files("schedopt.hived") / "examples" / "example.yaml").read_text()


def run_file_case(loader: str, label: str, timeout: float = 5.0) -> Outcome:
    """``loader``: ``instances.load`` or ``hived.load_hived_config``; ``label``: a key of FILE_CASES / YAML_CASES.
    Every one of these files is bad: the loader must raise a named error."""
    from ... import hived, instances

    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        if loader == "instances.load":
            path = FILE_CASES[label](d)
            fn: Callable[[Path], Any] = instances.load
        else:
            maker = YAML_CASES[label]
            if maker == "duplicate-keys":
                text = _hived_example_text()
                head, _, rest = text.partition("physicalCluster:")
                path = _write(d / "dup.yaml", (head + "virtualClusters: {}\nphysicalCluster:" + rest).encode()
                              if "virtualClusters:" in text else text.encode() + b"\nphysicalCluster: {}\n")
            elif maker == "huge-children":
                text = _hived_example_text()
                import re

                path = _write(d / "huge.yaml", re.sub(r"childCellNumber: *\d+", "childCellNumber: 1000000000000",
                                                      text, count=1).encode())
            else:
                path = maker(d)
            fn = hived.load_hived_config
        entry = EntryPoint(loader, lambda: fn(path), dict, {})
        out = run_case(entry, None, timeout)
    case = Case("path", Bad(label, None))
    status = "silent" if out.status == "ok" else out.status
    return Outcome(status, loader, case, out.detail or ("loaded" if status == "silent" else ""), out.seconds)


