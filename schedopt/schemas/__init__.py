"""JSON Schemas of schedopt's file formats: ``instance`` (instance files), ``cli`` (``--json`` output),
``sim_record`` (one line of a simulation record, :mod:`schedopt.sim.records`) and ``service`` (the documents of
``schedopt serve``; its OpenAPI document is ``openapi.json`` beside them)."""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

__all__ = ["NAMES", "load"]

#: The shipped JSON Schemas: instance files, ``--json`` output, simulation records, the decision service.
NAMES = ("instance", "cli", "sim_record", "service")


def load(name: str) -> dict[str, Any]:
    """The JSON Schema ``name`` (one of :data:`NAMES`) as a dict."""
    from ..errors import InputError

    if name not in NAMES:
        raise InputError("name", name, f"must be one of {list(NAMES)}")
    return json.loads(resources.files(__package__).joinpath(f"{name}.schema.json").read_text())
