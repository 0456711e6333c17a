"""JSON Schemas of schedopt's file formats: ``instance`` (instance files) and ``cli`` (``--json`` output)."""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

__all__ = ["NAMES", "load"]

NAMES = ("instance", "cli")


def load(name: str) -> dict[str, Any]:
    """The JSON Schema ``name`` (``"instance"`` or ``"cli"``) as a dict."""
    from ..errors import InputError

    if name not in NAMES:
        raise InputError("name", name, f"must be one of {list(NAMES)}")
    return json.loads(resources.files(__package__).joinpath(f"{name}.schema.json").read_text())
