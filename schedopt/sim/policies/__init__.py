"""Scheduling policies for :mod:`schedopt.sim` (interface in :mod:`schedopt.sim.policies.base`).

:func:`get_policy` builds one by name: ``fifo``, ``tiresias``, ``sia`` here; ``pollux``, ``pollux-exact``,
``pollux-unaware`` and ``gavel`` from their modules, imported only when asked for.
"""

from __future__ import annotations

import importlib
import inspect
from typing import Any

from ...errors import InputError
from .base import Decision, JobView, Policy, RoundState

__all__ = ["POLICIES", "Decision", "JobView", "Policy", "RoundState", "get_policy"]

#: policy name -> (module, class) or (module, class, {default constructor parameters})
POLICIES: dict[str, tuple[Any, ...]] = {
    "fifo": ("fifo", "FifoPolicy"),
    "tiresias": ("tiresias", "TiresiasPolicy"),
    "sia": ("sia", "SiaPolicy"),
    "pollux": ("pollux", "PolluxPolicy"),
    "pollux-exact": ("pollux", "PolluxExactPolicy"),
    "pollux-unaware": ("pollux_unaware", "PolluxUnawarePolicy"),
    "gavel": ("gavel", "GavelPolicy"),
    # --- issue 29: fairness baselines (3-tuples: default constructor parameters) ---
    "gavel:ftf": ("gavel", "GavelPolicy", {"objective": "ftf"}),
    "gavel:makespan": ("gavel", "GavelPolicy", {"objective": "makespan"}),
    "optimus": ("optimus", "OptimusPolicy"),
    # --- end issue 29 ---
}


def get_policy(name: str, **params: Any) -> Policy:
    """A fresh policy object (policies keep state between rounds: use one per simulation). ``seed`` is passed only
    to policies whose constructor takes it."""
    if name not in POLICIES:
        raise InputError("policy", name, f"unknown; have {', '.join(POLICIES)}")
    mod, cls_name, *defaults = POLICIES[name]
    params = {**(defaults[0] if defaults else {}), **params}
    try:
        module = importlib.import_module(f"{__name__}.{mod}")
    except ModuleNotFoundError as exc:
        raise InputError("policy", name, f"is not available in this installation ({exc})") from None
    cls = getattr(module, cls_name)
    sig = inspect.signature(cls)
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in sig.parameters.values())
    if not takes_any:
        if "seed" in params and "seed" not in sig.parameters:
            params = {k: v for k, v in params.items() if k != "seed"}
        bad = [k for k in params if k not in sig.parameters]
        if bad:
            raise InputError(f"policy[{name}].{bad[0]}", params[bad[0]], f"is not a parameter of {cls_name}")
    return cls(**params)  # type: ignore[no-any-return]
