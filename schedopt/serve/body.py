"""Reading a request's JSON body strictly: a size limit, UTF-8, one object, no duplicate keys, no NaN or Infinity,
no number Python cannot hold; every refusal an :class:`~schedopt.errors.InputError` naming the field (a JSON path
``body.events[2].gpus``) and the value, or a :class:`TooLarge`.

Two routes read a body to the same document. With ``orjson`` installed (optional: the ``serve`` extra; a Rust
parser, about 4x faster than Python's ``json`` on a 1 MB batch of 4,096 progress reports), it reads the body
first, and its document is taken when it is surely the one Python's ``json`` would give (:func:`_orjson_fits`):
every container seen, no key given twice (the pairs counted against the colons of the text), no integer read as a
float (orjson reads one beyond 64 bits so), no ``\\u`` escape, nested less than :data:`ORJSON_DEPTH` deep.
When orjson writes its document back as the body, byte for byte (compact JSON, as
:class:`~schedopt.live.client.ServiceClient` sends it), that alone says so. A body the client declares compact
(the ``Schedopt-Body: compact`` header; :func:`parse_json`'s ``compact``) is taken once its key-value pairs count
up to the colons of its text, without writing it back. Anything else -- a body orjson refuses (NaN, Infinity, a number too large for a float, bad UTF-8, a lone
surrogate, a syntax error) or one it may read otherwise -- is read again by Python's ``json`` with the checks of
this module, whose refusal names the field and the position exactly as without orjson: orjson's own messages are
never shown. ``SCHEDOPT_JSON=stdlib`` in the environment, or :func:`use_orjson` (False), keeps to Python's
``json`` (the tests run both routes).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import AsyncIterator
from types import ModuleType
from typing import Any

from ..errors import InputError, SchedoptError
from ..live.plan import JobPlan

__all__ = ["ORJSON_DEPTH", "TooLarge", "check_finite", "encode_json", "orjson_enabled", "parse_json", "read_limited",
           "use_orjson"]

_orjson: ModuleType | None
try:
    import orjson as _orjson
except ImportError:  # optional: Python's json reads and writes every document then
    _orjson = None
_ORJSON = _orjson
if os.environ.get("SCHEDOPT_JSON", "").strip().lower() == "stdlib":
    _orjson = None

#: containers nested deeper than this (orjson reads up to 1,024 levels, Python's json about 1,000 under the default
#: recursion limit) are read by Python's json, which refuses them as it did without orjson
ORJSON_DEPTH = 200


class TooLarge(SchedoptError):
    """The body is over the service's limit (answered 413)."""

    def __init__(self, limit: int, seen: int) -> None:
        self.field = "body"
        self.value = seen
        self.limit = limit
        super().__init__(f"body: {seen} bytes or more, over the limit of {limit} bytes")


async def read_limited(chunks: AsyncIterator[bytes], content_length: str | None, limit: int) -> bytes:
    """The whole body, refused with :class:`TooLarge` as soon as it passes ``limit`` bytes (a declared
    ``Content-Length`` over the limit is refused before anything is read)."""
    if content_length is not None:
        try:
            declared = int(content_length)
        except ValueError:
            raise InputError("Content-Length", content_length, "must be an integer") from None
        if declared > limit:
            raise TooLarge(limit, declared)
    parts: list[bytes] = []
    seen = 0
    async for chunk in chunks:
        parts.append(chunk)
        seen += len(chunk)
        if seen > limit:
            raise TooLarge(limit, seen)
    return parts[0] if len(parts) == 1 else b"".join(parts)  # (one copy of a large body, not two)


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)  # in C; a key given twice leaves fewer entries than pairs, then found in Python
    if len(out) != len(pairs):
        seen: set[str] = set()
        for k, _ in pairs:
            if k in seen:
                raise InputError("body", k, "duplicate key in a JSON object")
            seen.add(k)
    return out


class _NonFinite:
    """Hooks of :func:`json.loads` that note a non-finite number as it is read (NaN, Infinity, -Infinity, or a
    literal too large for a float, read as infinite): only then is the document walked to name its path (a walk
    costs ~25 ms on a 1 MB batch of 4,096 events; the hooks ~2 ms)."""

    def __init__(self) -> None:
        self.seen = False

    def constant(self, name: str) -> float:
        self.seen = True
        return float(name)

    def number(self, literal: str) -> float:
        v = float(literal)
        if v - v != 0.0:  # inf - inf is nan
            self.seen = True
        return v


def _path(path: tuple[str | int, ...]) -> str:
    return "body" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path)


def check_finite(obj: Any, path: tuple[str | int, ...] = ()) -> None:
    """Refuse a non-finite number anywhere in ``obj``, naming its path (JSON has no NaN; Python's parser reads one)."""
    todo: list[tuple[Any, tuple[str | int, ...]]] = [(obj, path)]
    while todo:
        v, p = todo.pop()
        if isinstance(v, float) and not math.isfinite(v):
            raise InputError(_path(p), v, "must be a finite number (JSON has no NaN or Infinity)")
        if isinstance(v, dict):
            todo.extend((x, (*p, k)) for k, x in v.items())
        elif isinstance(v, list):
            todo.extend((x, (*p, i)) for i, x in enumerate(v))


def use_orjson(on: bool) -> bool:
    """Read and write JSON with orjson (``on``, when it is installed) or with Python's ``json`` only; whether orjson
    is used now. The two give the same documents and the same refusals (the module's docstring)."""
    global _orjson
    _orjson = _ORJSON if on else None
    return _orjson is not None


def orjson_enabled() -> bool:
    """Whether bodies are read and answers written with orjson (installed, and not turned off)."""
    return _orjson is not None


_INT_RANGE = float(2**63)  # orjson reads an integer beyond 64 bits as a float; no float of this size is taken


def _orjson_fits(doc: Any, raw: bytes) -> bool:
    """Whether orjson's document ``doc`` of the text ``raw`` (without ``\\u`` escapes) is Python's: no key given
    twice (every key-value pair of the text is one colon outside a string: the pairs held by the document's objects
    plus the colons inside its strings must be every colon of the text; a pair dropped as a duplicate takes its
    colon with it), no float of 2**63 or more in size (an integer orjson read as a float), nested at most
    :data:`ORJSON_DEPTH` deep. Walks the containers only: a list of numbers or strings is looked at in C."""
    pairs = 0
    colons = 0
    todo: list[tuple[Any, int]] = [(doc, 0)]
    while todo:
        v, depth = todo.pop()
        if depth > ORJSON_DEPTH:
            return False
        if type(v) is dict:
            pairs += len(v)
            colons += "".join(v).count(":")
            values = list(v.values())
        else:
            values = v
        kinds = set(map(type, values))
        if str in kinds:
            colons += ("".join(values) if len(kinds) == 1 else "".join(x for x in values if type(x) is str)).count(":")
        if float in kinds:
            floats = values if kinds <= {float, int} else [x for x in values if type(x) is float]
            if max(floats) >= _INT_RANGE or min(floats) <= -_INT_RANGE:
                return False
        if dict in kinds or list in kinds:
            todo.extend((x, depth + 1) for x in values if type(x) is dict or type(x) is list)
    return pairs == raw.count(b":") - colons


def _written_back(doc: dict[str, Any], raw: bytes) -> bool:
    """Whether orjson writes ``doc`` back as ``raw`` byte for byte (compact JSON, as the client sends it): then the
    text holds exactly the document's pairs (no key twice), every integer literal is one orjson read as an integer
    (one it read as a float is written with a fraction or an exponent), and Python's json reads the same document
    (~0.5 ms for 300 KB, where :func:`_orjson_fits` walks it in ~1.2 ms)."""
    assert _orjson is not None
    try:
        return bool(_orjson.dumps(doc) == raw.strip(b" \t\n\r"))
    except Exception:  # nested deeper than its writer goes: the walk says
        return False


def _pairs_counted(doc: dict[str, Any], raw: bytes) -> bool:
    """Whether orjson's document ``doc`` of the text ``raw`` holds every key-value pair of the text: the pairs of
    the objects reached from ``doc`` (through objects, and lists whose first item is a list or an object) are as
    many as the colons of the text. Every pair of the text is one colon outside a string, and a key given twice
    leaves one pair fewer in the document, so the text has at least as many colons as the document has pairs, and
    at least as many as the objects reached hold; equal counts say that no key is given twice, no string holds a
    colon, and every object not reached is empty. When they differ (a key twice, a colon in a string, an object
    not reached), False: the body is read by the proof of :func:`parse_json`. ~0.1 ms for 300 KB (a count of one
    byte, a walk of the few objects), where writing the document back takes ~0.5 ms."""
    pairs = 0
    todo: list[Any] = [doc]
    while todo:
        v = todo.pop()
        if type(v) is dict:
            pairs += len(v)
            todo.extend(x for x in v.values() if type(x) is dict or type(x) is list)
        elif v and (type(v[0]) is dict or type(v[0]) is list):
            todo.extend(x for x in v if type(x) is dict or type(x) is list)
    return pairs == raw.count(b":")


def parse_json(raw: bytes, compact: bool = False) -> dict[str, Any]:
    """The body as a JSON object; anything else an InputError naming ``body`` (or the path of a bad number).

    ``compact``: the client declared the body compact JSON it wrote itself, its integers within 64 bits (the
    ``Schedopt-Body: compact`` header): then orjson's document is taken once no key is given twice
    (:func:`_pairs_counted`), without writing it back. What that does not prove is what the declaration says:
    an integer beyond 64 bits (orjson reads it as a float; Python's ``json`` as an integer) and nesting deeper
    than Python's ``json`` reads. A client whose declaration is false gets no other document for it: every field
    of a request is typed and bounded, so such a float is refused where an integer belongs, naming the field, and
    is the float Python's integer becomes where a number belongs; a list nested where a value belongs is refused,
    naming the field. Anything orjson refuses, or whose pairs do not count up, is read by the proof below, as
    without the declaration."""
    if _orjson is not None:
        try:
            fast = _orjson.loads(raw)
        except Exception:  # refused (or nested too deeply for it): Python's json says what is wrong
            fast = None
        if type(fast) is dict and ((compact and _pairs_counted(fast, raw)) or _written_back(fast, raw) or (
                b"\\u" not in raw and _orjson_fits(fast, raw))):
            return fast
    if not raw.strip():
        raise InputError("body", "", "must be a JSON object, got an empty body")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError("body", raw[max(0, exc.start - 10): exc.start + 10], f"is not UTF-8: {exc.reason}") from None
    nonfinite = _NonFinite()
    try:
        doc = json.loads(text, object_pairs_hook=_pairs, parse_constant=nonfinite.constant,
                         parse_float=nonfinite.number)
    except json.JSONDecodeError as exc:
        raise InputError("body", text[max(0, exc.pos - 20): exc.pos + 20], f"is not JSON: {exc.msg} at line "
                         f"{exc.lineno} column {exc.colno}") from None
    except RecursionError:
        raise InputError("body", text[:40], "is nested too deeply") from None
    except ValueError as exc:  # an integer of more digits than Python converts (sys.get_int_max_str_digits)
        raise InputError("body", text[:40], f"is not usable JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise InputError("body", doc, f"must be a JSON object, got {type(doc).__name__}")
    if nonfinite.seen:
        check_finite(doc)
    return doc


def encode_json(doc: Any, finite: bool = False) -> bytes:
    """``doc`` as compact JSON bytes (a non-finite number is a ValueError: JSON has none). ``finite``: the caller
    has checked that every float of ``doc`` is finite where it was made (the answer to a decision request), and
    orjson, when used, writes it (it would write a NaN as null, unseen); otherwise, and for whatever orjson does not
    write as Python's json does (an integer beyond 64 bits, a key that is not a string, a type of its own), Python's
    json writes it. A plan's job entry left as its :class:`~schedopt.live.plan.JobPlan`
    (:meth:`schedopt.live.Plan.entries_document`) is written as :meth:`~schedopt.live.plan.JobPlan.to_dict`'s
    document by both (orjson writes a dataclass as its fields, in order)."""
    if finite and _orjson is not None:
        try:
            out: bytes = _orjson.dumps(doc)
            return out
        except TypeError:
            pass
    return json.dumps(doc, allow_nan=False, separators=(",", ":"), default=_entry).encode("utf-8")


def _entry(obj: Any) -> Any:
    """A plan's job entry left as its object (:meth:`schedopt.live.Plan.entries_document`) as its document."""
    if isinstance(obj, JobPlan):
        return obj.to_dict()
    raise TypeError(f"Object of type {type(obj).__name__} is not JSON serializable")
