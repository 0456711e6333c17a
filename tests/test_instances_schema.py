"""The instance format's JSON Schema (schedopt/schemas/instance.schema.json) against every shipped instance, freshly
generated instances of every problem, and instances broken on purpose.

jsonschema is a test dependency: the schema is published for other tools, so an independent, standard validator
is what must accept our files.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import jsonschema
import pytest

from schedopt import instances, schemas

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = schemas.load("instance")
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)
SHIPPED = sorted(p for p in (ROOT / "instances").rglob("*.json") if "golden" not in p.parts)


def test_the_schema_is_valid_draft_2020_12():
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    jsonschema.Draft202012Validator.check_schema(schemas.load("cli"))
    assert set(SCHEMA["$defs"]) == set(instances.problems()), "one data schema per registered problem"


def test_every_problem_ships_instances():
    assert {p.parent.name for p in SHIPPED} >= {"sia", "synergy", "heterps", "hived", "gandiva"}


@pytest.mark.parametrize("path", SHIPPED, ids=[f"{p.parent.name}/{p.stem}" for p in SHIPPED])
def test_every_shipped_instance_matches_the_schema_and_loads(path: Path):
    doc = json.loads(path.read_text())
    VALIDATOR.validate(doc)
    instances.load(path)  # and the loader, which checks more, accepts it too


@pytest.mark.parametrize(
    ("problem", "params"),
    [("heterps", {"model": "nce"}), ("gandiva", {"operation": "pack"}), ("gandiva", {"operation": "defragment"}),
     ("gandiva", {"operation": "allocate"}), ("synergy", {}), ("hived", {}), ("sia", {})],
)
def test_generated_instances_match_the_schema(problem: str, params: dict):
    io = instances.problems()[problem]
    VALIDATOR.validate(json.loads(instances.dumps(io.generate(64, 0, **params))))


@pytest.mark.parametrize(
    ("path", "mutate", "where"),
    [
        ("heterps/nce.json", lambda d: d["data"]["types"][0].pop("limit"), ["data", "types", 0]),
        ("heterps/nce.json", lambda d: d["data"]["layers"][0].__setitem__("alpha", 1.5), ["data", "layers", 0, "alpha"]),
        ("gandiva/pack_16.json", lambda d: d["data"].__setitem__("operation", "melt"), ["data", "operation"]),
        ("gandiva/pack_16.json", lambda d: d["data"]["nodes"][0].__setitem__("gpus", 0), ["data", "nodes", 0, "gpus"]),
        ("sia/sia_64_seed0.json", lambda d: d["data"].pop("cluster"), ["data"]),
        ("hived/example.json", lambda d: d["data"]["ops"][0].__setitem__("op", "explode"), ["data", "ops", 0]),
        ("heterps/nce.json", lambda d: d.__setitem__("version", 2), ["version"]),
        ("heterps/nce.json", lambda d: d.__setitem__("problem", "tetris"), ["problem"]),
    ],
)
def test_broken_instances_are_rejected_where_they_break(path: str, mutate, where: list):
    doc = copy.deepcopy(json.loads((ROOT / "instances" / path).read_text()))
    mutate(doc)
    errors = list(VALIDATOR.iter_errors(doc))
    assert errors, "the schema accepted a broken instance"
    paths = [list(e.absolute_path) for e in errors]
    assert any(p[: len(where)] == where for p in paths), paths
