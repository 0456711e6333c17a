"""Scheduling policies for :mod:`schedopt.sim` (interface in :mod:`schedopt.sim.policies.base`).

The built-in policies of the elastic engine are registered in :mod:`schedopt.sim.registry` from :data:`POLICIES`
(imported only when asked for); :func:`get_policy` builds one by name, spec (``sia:backend=highs``) or ``module:Class``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import cast

from ..registry import OptionValue, make, register_policy
from .base import Decision, JobView, Policy, RoundState

__all__ = ["POLICIES", "Decision", "JobView", "Policy", "RoundState", "get_policy", "make_policy"]

#: the built-in policies: name -> (module, class) or (module, class, default options)
POLICIES: dict[str, tuple[str, str] | tuple[str, str, dict[str, OptionValue]]] = {
    "fifo": ("fifo", "FifoPolicy"),
    "tiresias": ("tiresias", "TiresiasPolicy"),
    "sia": ("sia", "SiaPolicy"),
    # issue 43: the published Sia policy's options (``sia.PUBLISHED``: the batch capped at the workload's request)
    "sia:published": ("sia", "SiaPolicy", {"batch_cap": "request"}),
    "pollux": ("pollux", "PolluxPolicy"),
    "pollux-exact": ("pollux", "PolluxExactPolicy"),
    "pollux-unaware": ("pollux_unaware", "PolluxUnawarePolicy"),
    "gavel": ("gavel", "GavelPolicy"),
    # --- issue 29: fairness baselines ---
    "gavel:ftf": ("gavel", "GavelPolicy", {"objective": "ftf"}),
    "gavel:makespan": ("gavel", "GavelPolicy", {"objective": "makespan"}),
    "optimus": ("optimus", "OptimusPolicy"),
    "shockwave": ("shockwave", "ShockwavePolicy"),
    # --- end issue 29 ---
}

for _name, _entry in POLICIES.items():
    register_policy(_name, f"{__name__}.{_entry[0]}:{_entry[1]}", defaults=_entry[2] if len(_entry) > 2 else None,
                    replace=True)


def make_policy(spec: str | Policy, params: Mapping[str, object] | None = None, *, seed: int | None = None) -> Policy:
    """A fresh policy from a spec (``sia:backend=highs``, ``gavel:ftf``, ``mymod:MyPolicy:k=3``) or a copy of a policy
    object; ``params`` are more options (checked like the spec's); ``seed`` goes to factories that take one."""
    pol = make("policy", spec, params, seed=seed, check=lambda o: callable(getattr(o, "decide", None)),
               needs="decide(state) -> Decision")
    return cast(Policy, pol)  # checked: it has decide()


def get_policy(name: str, **params: object) -> Policy:
    """A fresh policy object (policies keep state between rounds: use one per simulation) from a registered name or
    spec (``sia``, ``sia:backend=highs``, ``gavel:ftf``, ``mymod:MyPolicy:k=3``). ``params`` are checked against the
    policy's declared parameters (an unknown one is refused, naming the closest known one) and converted to their
    types; ``seed`` is passed only to policies whose constructor takes it.

    Examples
    --------
    >>> from schedopt import sim
    >>> p = sim.get_policy("gavel:ftf")
    >>> p.name
    'gavel:ftf'
    """
    seed = params.pop("seed", None)
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        from ...errors import InputError

        raise InputError("seed", seed, "must be an integer")
    return make_policy(name, params, seed=seed)
