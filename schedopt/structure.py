"""``Structure``: the tag of a model's structure that solvers may exploit (its own module, so the model and the
problem contract both use it without importing each other)."""

from __future__ import annotations

import enum

__all__ = ["Structure"]


class Structure(enum.StrEnum):
    """The structure tag of a formulation: solvers may exploit it (``mckp`` is the default backend for MCKP)."""

    GENERAL = "general"
    #: one binary per (item, choice) pair, at most/exactly one choice per item, knapsack rows on resources
    MCKP = "mckp"
