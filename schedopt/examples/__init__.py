"""Example files shipped inside the package, found through :mod:`importlib.resources`, so they work from any folder.

* ``path(name)``: the file (``schedopt.examples.path("hived.yaml")``);
* ``names()``: every example's name;
* on the command line, ``example:NAME`` stands for the file wherever an instance path is read
  (``schedopt explain example:heterps_unreachable.json``).

The bad instances (``heterps_unreachable.json``, ``hived_bad_node.json``) are written by ``tools/make_examples.py``.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from ..errors import InputError

__all__ = ["PREFIX", "names", "path", "resolve"]

#: what marks an example name where a path is expected
PREFIX = "example:"

#: name -> (package, file inside it)
_FILES: dict[str, tuple[str, str]] = {
    "hived.yaml": ("schedopt.hived", "examples/example.yaml"),
    "heterps_unreachable.json": (__name__, "heterps_unreachable.json"),
    "hived_bad_node.json": (__name__, "hived_bad_node.json"),
}


def names() -> list[str]:
    """Every shipped example's name."""
    return sorted(_FILES)


def path(name: str) -> Path:
    """The shipped example ``name`` as a file path (an :class:`InputError` naming ``name`` lists the known ones)."""
    if name not in _FILES:
        raise InputError("example", name, f"is not a shipped example; known: {', '.join(names())}")
    package, rel = _FILES[name]
    p = Path(str(resources.files(package).joinpath(rel)))
    if not p.is_file():  # pragma: no cover - a broken installation
        raise InputError("example", name, f"is missing from the installed package ({p})")
    return p


def resolve(path_or_example: str) -> str:
    """``example:NAME`` as the example's path; any other string as it is."""
    if path_or_example.startswith(PREFIX):
        return str(path(path_or_example[len(PREFIX):]))
    return path_or_example
