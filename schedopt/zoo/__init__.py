"""Goodput models fitted to public profiles (Sia SOSP'23 artifact, Pollux OSDI'21 data) and trace tables.

Data files (written offline by ``tools/fit_zoo.py``; nothing here reads the raw artifacts):

* ``pollux_models.json`` -- per model: :class:`~schedopt.goodput.ThroughputParams` for each GPU type, init /
  max batch, per-type local-batch limits, gradient statistics per profiled batch size, fit report, 1-GPU seed
  profiles and a few sample profile rows.
* ``traces.json`` -- model mix, requested GPU counts, Philly job-size / duration / age quantiles.
"""

from __future__ import annotations

import copy
import json
from functools import cache
from importlib import resources
from typing import Any

from schedopt.errors import InputError
from schedopt.goodput import JobGoodputModel

__all__ = ["fit_report", "gpu_types", "list_models", "load_model", "model_data", "source", "trace_stats"]


@cache
def _load(name: str) -> dict[str, Any]:
    return json.loads(resources.files(__name__).joinpath(name).read_text())


def _models() -> dict[str, Any]:
    return _load("pollux_models.json")["models"]


def list_models() -> list[str]:
    """Names of the models in the zoo (sorted)."""
    return sorted(_models())


def gpu_types() -> dict[str, str]:
    """Friendly GPU-type key (``t4``, ``v100``, ``a100``, ``rtx6000``, ``rtx2080ti``) -> human name."""
    return dict(_load("pollux_models.json")["gpu_types"])


def source() -> dict[str, Any]:
    """Repository / commit / files the zoo was derived from, and how each figure was derived."""
    doc = _load("pollux_models.json")
    return copy.deepcopy({"source": doc["source"], "derivation": doc["derivation"]})


def model_data(name: str) -> dict[str, Any]:
    """The raw JSON record of one model (a copy), including ``seed_1gpu`` and ``check_rows``."""
    models = _models()
    if not isinstance(name, str) or name not in models:
        raise InputError("name", name, f"unknown model; have {sorted(models)}")
    return copy.deepcopy(models[name])


def load_model(name: str) -> JobGoodputModel:
    """The :class:`~schedopt.goodput.JobGoodputModel` of ``name`` with every GPU type it was profiled on."""
    return JobGoodputModel.from_dict(model_data(name))


def fit_report() -> list[dict[str, Any]]:
    """One row per (model, gpu_type): ``model, gpu_type, n_rows, rms_log_error, max_rel_error`` (+ extents)."""
    return copy.deepcopy(_load("pollux_models.json")["fit_report"])


def trace_stats() -> dict[str, Any]:
    """Tables from the public workload traces (see ``traces.json``'s ``source``)."""
    return copy.deepcopy(_load("traces.json"))
