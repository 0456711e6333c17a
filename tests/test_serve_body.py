"""The service's JSON routes (schedopt.serve.body): with orjson installed, a request body is read by orjson and its
document taken only when it is the one Python's ``json`` gives; every other body goes Python's way, so a refusal
names the field and the position exactly as without orjson. Both routes are run here on the same bodies (valid and
malformed) and must give equal documents of equal types, or the same InputError; answers written by orjson read
back as Python's ``json`` writes them."""

from __future__ import annotations

import itertools
import json
import math
import random
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from schedopt.errors import InputError
from schedopt.live.plan import Action, JobPlan, Plan
from schedopt.serve import body
from schedopt.serve.body import encode_json, orjson_enabled, parse_json, use_orjson

orjson = pytest.importorskip("orjson")


@pytest.fixture
def stdlib_only() -> Iterator[None]:
    was = orjson_enabled()
    use_orjson(False)
    try:
        yield
    finally:
        use_orjson(was)


def _read(raw: bytes, fast: bool) -> Any:
    was = orjson_enabled()
    use_orjson(fast)
    try:
        return parse_json(raw)
    except InputError as exc:
        return ("refused", exc.field, repr(exc.value), exc.message)
    finally:
        use_orjson(was)


def _types(v: Any) -> Any:
    """``v`` with every scalar as (type, value): 1 and 1.0 differ, -0.0 and 0.0 too."""
    if isinstance(v, dict):
        return {k: _types(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_types(x) for x in v]
    return type(v).__name__, repr(v)


def _same(raw: bytes) -> Any:
    fast, slow = _read(raw, True), _read(raw, False)
    assert _types(fast) == _types(slow), raw[:200]
    return fast


BODIES = [
    b'{"now": 60.0, "seq": 3, "since": 12884901889, "known_round": 2}',
    b'{"now": 60, "events": [{"type": "JobProgressBatch", "time": 60.0, "job_id": ["a:1", "b"],'
    b' "progress": [0.5, null], "measurements": {"row": [0], "gpu_type": ["t4"], "nodes": [1], "gpus": [2],'
    b' "local_batch": [64], "step_time": [0.25]}}]}',
    b'{"a": "x:y", "b:c": [1, 2.5, -0.0, -0, 1e5, 1E-7, 123456789012345678]}',
    b'{"big": 99999999999999999999999}',  # beyond 64 bits: Python's int (orjson reads a float)
    b'{"big": -9223372036854775809}', b'{"big": 18446744073709551615}', b'{"f": 1e19}', b'{"f": -1e300}',
    b'{"tiny": 1e-400, "neg": -1e-400}',
    b'{"s": "caf\\u00e9", "t": "\\ud800"}',  # escapes: Python's json reads a lone surrogate, orjson does not
    b'{"nested": ' + b"[" * 300 + b"]" * 300 + b"}",  # deeper than orjson's route takes: Python's json reads it
    b'{"deep": ' + b'{"a": ' * 150 + b"1" + b"}" * 150 + b"}",
    b'  {"ws": [ 1 , 2 ]\t}\n',
    b'{"empty": {}, "list": [], "null": null, "t": true, "f": false}',
]

MALFORMED = [
    b"", b"  \n", b"[1, 2]", b'"text"', b"3", b"null", b'{"now": 1, "now": 2}', b'{"a": {"b": 1, "b": 2}}',
    b'{"a": [{"x": 1}, {"x": 2, "x": 3}]}', b'{"k:": 1, "k:": 2}', b'{"a": "p:q", "a": "r:s"}',
    b'{"a": 1, "b": {"c": "u:v", "c": 1}}', b'{"now": NaN}', b'{"now": Infinity}', b'{"now": -Infinity}',
    b'{"x": [1, NaN]}', b'{"x": 1e400}', b'{"x": {"y": [-1e999]}}', b'{"now": "caf\xe9"}', bytes(range(256)),
    b"[" * 20_000 + b"]" * 20_000, b'{"a": 1} x', b'{"a": 1', b'{"a": tru}', b'{"a": 1.}', b'\xef\xbb\xbf{"a": 1}',
    b'{"a": "x\ty"}', b'{"a\\u003a": 1, "b": 1, "b": 2}', b'{"n": ' + b"9" * 5000 + b"}",
]


@pytest.mark.parametrize("raw", BODIES + MALFORMED,
                         ids=[f"valid{k}" for k in range(len(BODIES))] + [f"bad{k}" for k in range(len(MALFORMED))])
def test_both_routes_read_a_body_alike(raw: bytes) -> None:
    _same(raw)


def test_orjson_is_used_when_installed_and_refusals_are_pythons() -> None:
    assert orjson_enabled()
    dup = _read(b'{"now": 1, "now": 2}', True)
    assert dup[:2] == ("refused", "body") and dup[3].endswith("duplicate key in a JSON object")
    assert _read(b'{"x": [1, NaN]}', True)[1] == "body.x[1]"
    refused = _read(b'{"a": 1', True)
    assert refused[1] == "body" and refused[3].startswith("is not JSON: Expecting") and "line 1 column 8" in refused[3]
    assert _read(b'{"big": 99999999999999999999999}', True) == {"big": 99999999999999999999999}
    # a duplicate pair whose key or value holds a colon is still counted as a pair (the colons of strings aside)
    assert _read(b'{"a:b": "c:d", "a:b": "e"}', True)[3].endswith("duplicate key in a JSON object")


def test_random_documents_read_alike() -> None:
    rng = random.Random(38)
    scalars: list[Any] = [0, -1, 2**40, 2**63 - 1, 2**63, -(2**63), -(2**63) - 1, 2**64, 0.1, -2.5e-8, 1e300, True,
                          False, None, "", "a", "k:v", "::", "\u00e9", "x\"y", "back\\slash"]

    def value(depth: int) -> Any:
        r = rng.random()
        if depth > 3 or r < 0.5:
            return rng.choice(scalars) if rng.random() < 0.7 else rng.uniform(-1e6, 1e6)
        if r < 0.75:
            return [value(depth + 1) for _ in range(rng.randint(0, 6))]
        return {rng.choice(["a", "b", "c:d", "e", str(k)]): value(depth + 1) for k in range(rng.randint(0, 5))}

    for _ in range(150):
        doc = {"root": value(0)}
        for ascii_only, compact in itertools.product((True, False), (True, False)):
            raw = json.dumps(doc, ensure_ascii=ascii_only, separators=(",", ":") if compact else None).encode()
            assert _same(raw) == json.loads(raw)
        dup = json.dumps(doc).encode()[:-1] + b', "root": 1}'  # the same key again at the top
        assert _same(dup)[3].endswith("duplicate key in a JSON object")


def test_stdlib_route_alone(stdlib_only: None) -> None:
    assert not orjson_enabled()
    assert parse_json(b'{"a": [1, 2.0]}') == {"a": [1, 2.0]}
    with pytest.raises(InputError, match="duplicate key"):
        parse_json(b'{"a": 1, "a": 2}')
    assert encode_json({"a": [1, 2.5]}, finite=True) == b'{"a":[1,2.5]}'


def test_the_environment_turns_orjson_off() -> None:
    code = "from schedopt.serve.body import orjson_enabled; print(orjson_enabled())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**_env(), "SCHEDOPT_JSON": "stdlib"})
    assert out.stdout.strip() == "False"


def _env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if k != "SCHEDOPT_JSON"}


def _plan() -> Plan:
    jobs = {"a": JobPlan("a", Action.START, {"n-1": (0, 1)}, "t4", 2, 256, 128, 0, 30.0),
            "b": JobPlan("b", Action.QUEUE, {})}
    return Plan(120.0, 2, "sia", jobs, 0.01, 0.02, {"note": float("nan"), "n": 3})


def test_answers_written_by_orjson_read_as_pythons() -> None:
    plan = _plan()
    doc = {"status": "ok", "plan": plan.to_dict(), "x": [1, 2**70], 3: "int key", "t": (1, 2)}
    fast = encode_json(doc, finite=True)
    was = orjson_enabled()
    use_orjson(False)
    try:
        slow = encode_json(doc, finite=True)
    finally:
        use_orjson(was)
    assert json.loads(fast) == json.loads(slow)
    assert json.loads(fast)["plan"]["info"]["note"] == "nan"  # the plan's notes are written as text
    with pytest.raises(ValueError):
        encode_json({"x": math.nan})  # not vouched for: Python's json, which refuses NaN
    bad = JobPlan("c", Action.START, {"n": (0,)}, "t4", 1, 1, 1, 0, math.inf)
    with pytest.raises(ValueError, match="restart_seconds"):
        bad.to_dict()
    with pytest.raises(ValueError, match="policy_seconds"):
        Plan(1.0, 0, "sia", {}, math.nan).to_dict()


def test_the_two_proofs_of_orjsons_document() -> None:
    """A compact body is proved by writing it back; any other by the walk of its containers; each refuses what
    Python's json reads otherwise."""
    doc: dict[str, Any] = {"ids": [f"j:{k}" for k in range(1000)], "x": list(range(1000)), "f": [0.25, -1.5, 123.456]}
    compact = json.dumps(doc, separators=(",", ":")).encode()
    spaced = json.dumps(doc).encode()
    assert body._written_back(orjson.loads(compact), compact) and not body._written_back(orjson.loads(spaced), spaced)
    assert body._orjson_fits(orjson.loads(spaced), spaced)
    doc["f"].append(1e-7)  # Python writes 1e-07, orjson 1e-7: not written back alike, the walk proves it
    compact = json.dumps(doc, separators=(",", ":")).encode()
    assert not body._written_back(orjson.loads(compact), compact) and body._orjson_fits(orjson.loads(compact), compact)
    for raw in (b'{"a":1,"a":1}', b'{"big":99999999999999999999999}', b'{"a":[1,{"b":2,"b":2}]}'):
        assert not body._written_back(orjson.loads(raw), raw) and not body._orjson_fits(orjson.loads(raw), raw), raw


def _beyond_64_bits_as_floats(v: Any) -> Any:
    """``v`` with every integer orjson reads as a float (beyond 64 bits) as that float."""
    if isinstance(v, dict):
        return {k: _beyond_64_bits_as_floats(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_beyond_64_bits_as_floats(x) for x in v]
    if type(v) is int and not -(2**63) <= v < 2**64:
        return float(v)
    return v


def _read_compact(raw: bytes) -> Any:
    try:
        return parse_json(raw, compact=True)
    except InputError as exc:
        return ("refused", exc.field, repr(exc.value), exc.message)


def test_a_body_declared_compact_reads_as_pythons() -> None:
    """A body declared compact (``Schedopt-Body: compact``) is read without writing it back: every body of this
    module, valid or malformed, compact or not, and random documents (with keys twice) read as Python's json reads
    them -- the same document of the same types, or the same refusal -- but for what the declaration vouches for:
    an integer beyond 64 bits is read as its float (the same number)."""
    rng = random.Random(7)
    raws = list(BODIES + MALFORMED)
    for _ in range(100):
        doc = {"root": [{rng.choice("abc:"): rng.choice([1, 2.5, "x:y", [1, {"k": 2}], {}, 2**64])
                         for _ in range(rng.randint(0, 4))} for _ in range(rng.randint(0, 3))]}
        for sep in ((",", ":"), None):
            raw = json.dumps(doc, separators=sep).encode()
            raws += [raw, raw[:-1] + b', "root": 1}', raw.replace(b'"root"', b'"r", "r": 1, "root"', 1)]
    differ = 0
    for raw in raws:
        python = _read(raw, False)
        compact = _read_compact(raw)
        if _types(compact) != _types(python):
            assert _types(compact) == _types(_beyond_64_bits_as_floats(python)), raw[:200]
            differ += 1
    assert 0 < differ < len(raws) // 4  # (the bodies with such integers)
    # the stdlib route ignores the declaration: Python's json reads every body
    was = orjson_enabled()
    use_orjson(False)
    try:
        assert parse_json(b'{"big": 99999999999999999999999}', compact=True) == {"big": 99999999999999999999999}
    finally:
        use_orjson(was)


def test_a_declared_body_is_counted_not_written_back() -> None:
    """The proof of a declared body: as many colons in the text as pairs in the objects reached; a key twice, a
    colon in a string or an object not reached (in a list whose first item is not a container) says no, and the
    body is read by the proof of an undeclared one."""
    ok = b'{"now":1,"events":[{"type":"t","x":[1,2],"m":{"row":[0],"g":["a"]}},{"k":{}}],"e":{}}'
    assert body._pairs_counted(orjson.loads(ok), ok)
    spaced = b'{ "now" : 1 , "x" : [ {"a" : 1} ] }'
    assert body._pairs_counted(orjson.loads(spaced), spaced)  # whitespace is no matter
    for raw in (b'{"a":1,"a":2}', b'{"a":{"b":1,"b":1}}', b'{"a":[{"x":1},{"x":2,"x":3}]}', b'{"a":"p:q"}',
                b'{"a:b":1}', b'{"a":[1,{"b":2}]}', b'{"a":[1,[{"b":2}]]}'):
        assert not body._pairs_counted(orjson.loads(raw), raw), raw
    assert parse_json(b'{"a":[1,{"b":2}]}', compact=True) == {"a": [1, {"b": 2}]}  # the walk proves it then
    refused = _read_compact(b'{"now":1,"now":2}')
    assert refused[:2] == ("refused", "body") and refused[3].endswith("duplicate key in a JSON object")


def test_every_action_is_written_as_its_string_by_both_writers() -> None:
    """Action.value is read in C (a property of ``_value_``, not Enum's Python descriptor): every member still
    has its string as value, is found by it and by name, pickles as itself; an answer's entries left as JobPlan
    objects are written (orjson, and Python's json) as the bytes of their to_dict documents."""
    import pickle

    entries = [JobPlan(f"j{k}", a, {"n-1": (0, 1)} if k % 2 else {}, "t4", 2, 256, 128, 0, 30.0 if k % 3 else None)
               for k, a in enumerate(Action)]
    assert [a.value for a in Action] == ["start", "keep", "resize", "move", "preempt", "queue", "reject"]
    assert all(type(a.value) is str and Action(a.value) is a and Action[a.name] is a
               and pickle.loads(pickle.dumps(a)) is a for a in Action) and len(Action) == 7
    plan = Plan(120.0, 2, "sia", {p.job_id: p for p in entries})
    want = json.dumps(plan.to_dict(), separators=(",", ":"), allow_nan=False).encode()
    was = orjson_enabled()
    try:
        for fast in (True, False):
            use_orjson(fast)
            assert encode_json(plan.entries_document(), finite=True) == want, fast
    finally:
        use_orjson(was)
