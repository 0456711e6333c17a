"""Loading the objects installed packages declare as entry points (``schedopt.problems``, ``schedopt.sim_systems``,
``schedopt.policies``, ...), with one rule: a plug-in that cannot be loaded (its module missing, an import that
fails, a name that is not there) is a :class:`PluginError` naming the plug-in, its group, its target and the
distribution that declares it -- never a bare ``ModuleNotFoundError`` from deep inside the first command that
happens to need the registry."""

from __future__ import annotations

from importlib import metadata
from typing import Any

from .errors import InputError

__all__ = ["PluginError", "distribution_of", "load_entry_point"]


class PluginError(InputError):
    """An installed plug-in (an entry point) that cannot be loaded; ``field`` is ``"plug-in"``, ``value`` the
    plug-in's ``group:name``."""

    def __init__(self, group: str, name: str, message: str) -> None:
        super().__init__("plug-in", f"{group}:{name}", message)


def distribution_of(ep: metadata.EntryPoint) -> str:
    """`` of the installed package 'NAME'`` for the distribution that declares ``ep`` ("" when unknown)."""
    dist = getattr(ep, "dist", None)
    name = getattr(dist, "name", None) if dist is not None else None
    return f" of the installed package {name!r}" if name else ""


def load_entry_point(ep: metadata.EntryPoint) -> Any:
    """``ep.load()``; any failure is a :class:`PluginError` naming the plug-in (the original error chained)."""
    try:
        return ep.load()
    except Exception as exc:
        raise PluginError(ep.group, ep.name, f"the plug-in {ep.name!r}{distribution_of(ep)} ({ep.value}) cannot be "
                          f"loaded: {type(exc).__name__}: {exc}; fix or uninstall that package") from exc
