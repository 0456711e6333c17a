"""The knobs of the published Sia code, each a named parameter (defaults: the paper's exact model).

The published scheduler (``siasosp23/artifacts``: ``sia-simulator/sia.py`` and ``simulator_config.py``, and the
physical scheduler's ``adaptdl/sched/adaptdl_sched/policy/mip.py``) differs from the paper's model in five places;
:class:`SiaSettings` names each one, and :func:`published_settings` sets them all the way that code does. What
each knob changes in the model is listed in ``formulations/sia.md`` (section *Knobs of the published code*).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from ..errors import InputError

__all__ = ["PUBLISHED_MAX_PHYSICAL_NODES", "SiaSettings", "published_settings"]

ChangeForm = Literal["linear", "auxiliary"]

#: ``simulator_config.cluster_max_physical_nnodes`` of the published code, keyed by our GPU type names
#: (aws g4dn.12xlarge = t4, dgx-ext = a100, rtx = rtx2080ti, quad = rtx6000, azure ND40rs_v2 = v100)
PUBLISHED_MAX_PHYSICAL_NODES: Mapping[str, int] = {"t4": 16, "a100": 2, "rtx2080ti": 3, "rtx6000": 1, "v100": 5}


def _opt_num(name: str, v: Any, *, integer: bool = False, low: float = 0.0) -> Any:
    if v is None:
        return None
    ok = isinstance(v, (int, np.integer)) if integer else isinstance(v, (int, float, np.integer, np.floating))
    if not ok or isinstance(v, bool) or not math.isfinite(float(v)) or v < low:
        kind = "an integer" if integer else "a finite number"
        raise InputError(f"settings.{name}", v, f"must be {kind} >= {low} or None")
    return int(v) if integer else float(v)


@dataclass(frozen=True)
class SiaSettings:
    """How a Sia round is modelled beyond the paper's exact objective.

    * ``coef_decimals`` / ``coef_clip``: round each objective coefficient ``U^p`` to that many decimals, then clip
      it at ``coef_clip`` (published: ``min(round(G^p, 2), 3000)``, ``sia.py`` ``__power_up_speedup_matrix``).
      None: exact coefficients.
    * ``max_physical_nodes``: per GPU type, the most nodes a configuration may span (published:
      ``cluster_max_physical_nnodes``, applied in ``populate_valid_configs``); types not named are uncapped.
      An int caps every type. Rigid configurations (below) are exempt, as in the published code.
    * ``rigid_any_count``: a rigid job may take any GPU count a type can host, as ``ceil(g / R)`` nodes: whole
      nodes plus a remainder (published: ``rigid_X`` is one variable per GPU type, ``num_nodes =
      ceil(replicas / R)``). False: only configuration shapes (power of two on one node, or whole nodes).
    * ``rigid_restart_by_attained``: a rigid job's restart factor stays 1 while its attained GPU-seconds are below
      the restart cost (published ``_compute_rigid_job_goodput_single``); False: compare its age (the paper, and
      the published rule for adaptive jobs).
    * ``max_gpus_per_job``: the configuration tables' GPU cap (published: ``CONFIGS_4GPU`` / ``CONFIGS_8GPU`` end
      at 64 GPUs); the same knob as :class:`~schedopt.sia.SiaProblem`'s ``max_gpus_per_job`` (give it once).
    * ``change_penalty`` (lambda_a): a penalty per changed entry of a job's allocation vector relative to its
      current configuration (published physical scheduler: 0.01, ``mip.py`` ``t_job >= |x - prev|``); moving a
      job costs 2 lambda_a, stopping it 1 lambda_a. 0: off. ``change_form`` picks the model: ``"linear"``
      (the exact linear equivalent on binaries: coefficients and a constant, the MCKP structure survives) or
      ``"auxiliary"`` (the published continuous auxiliaries ``t`` and their two row families; general MIP).
    """

    coef_decimals: int | None = None
    coef_clip: float | None = None
    max_physical_nodes: Mapping[str, int] | int | None = None
    rigid_any_count: bool = False
    rigid_restart_by_attained: bool = False
    change_penalty: float = 0.0
    change_form: ChangeForm = "linear"
    max_gpus_per_job: int | None = None

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "coef_decimals", _opt_num("coef_decimals", self.coef_decimals, integer=True))
        clip = _opt_num("coef_clip", self.coef_clip)
        if clip is not None and clip <= 0:
            raise InputError("settings.coef_clip", clip, "must be > 0 or None")
        set_(self, "coef_clip", clip)
        mpn = self.max_physical_nodes
        if isinstance(mpn, Mapping):
            out = {}
            for k, v in mpn.items():
                if not isinstance(k, str):
                    raise InputError("settings.max_physical_nodes", k, "keys must be GPU type names")
                out[k] = _opt_num(f"max_physical_nodes[{k}]", v, integer=True, low=1)
            set_(self, "max_physical_nodes", out)
        elif mpn is not None:
            set_(self, "max_physical_nodes", _opt_num("max_physical_nodes", mpn, integer=True, low=1))
        for name in ("rigid_any_count", "rigid_restart_by_attained"):
            if not isinstance(getattr(self, name), (bool, np.bool_)):
                raise InputError(f"settings.{name}", getattr(self, name), "must be a bool")
            set_(self, name, bool(getattr(self, name)))
        set_(self, "change_penalty", _opt_num("change_penalty", self.change_penalty) or 0.0)
        set_(self, "max_gpus_per_job", _opt_num("max_gpus_per_job", self.max_gpus_per_job, integer=True, low=1))
        if self.change_form not in ("linear", "auxiliary"):
            raise InputError("settings.change_form", self.change_form, "must be 'linear' or 'auxiliary'")

    @property
    def is_exact(self) -> bool:
        """True when every knob is off (the paper's exact model)."""
        return self == SiaSettings()

    def node_cap(self, gpu_type: str) -> int | None:
        """The node cap of one GPU type (None: uncapped)."""
        m = self.max_physical_nodes
        if m is None or isinstance(m, int):
            return m
        return m.get(gpu_type)

    def round_coefficients(self, up: np.ndarray) -> np.ndarray:
        """``min(round(up, coef_decimals), coef_clip)`` with each knob applied only when set."""
        out = up
        if self.coef_decimals is not None:
            out = np.round(out, self.coef_decimals)
        if self.coef_clip is not None:
            out = np.minimum(out, self.coef_clip)
        return out

    def to_dict(self) -> dict[str, Any]:
        m = self.max_physical_nodes
        return {
            "coef_decimals": self.coef_decimals,
            "coef_clip": self.coef_clip,
            "max_physical_nodes": dict(m) if isinstance(m, Mapping) else m,
            "rigid_any_count": self.rigid_any_count,
            "rigid_restart_by_attained": self.rigid_restart_by_attained,
            "change_penalty": self.change_penalty,
            "change_form": self.change_form,
            "max_gpus_per_job": self.max_gpus_per_job,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any] | None) -> SiaSettings:
        if d is None:
            return cls()
        if not isinstance(d, Mapping):
            raise InputError("settings", d, "must be an object or null")
        names = set(cls().to_dict())
        for k in d:
            if k not in names:
                raise InputError(f"settings.{k}", d[k], f"is not a Sia setting ({', '.join(sorted(names))})")
        return cls(**dict(d))


def published_settings(
    max_physical_nodes: Mapping[str, int] | int | None = None,
    *,
    change_penalty: float = 0.01,
    change_form: ChangeForm = "linear",
) -> SiaSettings:
    """Every knob set the way the published code sets it: coefficients ``min(round(U^p, 2), 3000)``, the node
    caps of ``simulator_config.cluster_max_physical_nnodes`` (``max_physical_nodes`` overrides them), configurations
    of at most 64 GPUs, rigid jobs
    of any GPU count, the rigid restart factor by attained GPU-seconds, and the physical scheduler's
    ``lambda_a = 0.01`` (pass ``change_penalty=0`` for the simulator, which builds the term's weight but never adds
    it to the objective)."""
    return SiaSettings(
        coef_decimals=2,
        coef_clip=3000.0,
        max_physical_nodes=dict(PUBLISHED_MAX_PHYSICAL_NODES) if max_physical_nodes is None else max_physical_nodes,
        rigid_any_count=True,
        rigid_restart_by_attained=True,
        change_penalty=change_penalty,
        change_form=change_form,
        max_gpus_per_job=64,
    )
