"""The HeterPS cost model, written straight from the paper's formulas (the independent checker every test uses).

A plan assigns one resource type per layer; maximal runs of consecutive layers on one type are the stages. Stage i's
OCT_i / ODT_i are the sums of its layers' times on its type, alpha_i / beta_i their OCT- / ODT-weighted means. With
k_i units and batch B::

    CT_i = OCT_i * (B / B0) * (1 - alpha_i + alpha_i / k_i)      DT_i = ODT_i * (B / B0) * (1 - beta_i + beta_i / k_i)
    ET_i = max(CT_i, DT_i)      throughput = min_i B / ET_i      time = epochs * samples / throughput (hours)
    cost = time * sum_t price_t * k_t

This module deliberately does not use the solvers' array code (``HeterPSProblem.arrays``): it loops over the layers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import InputError
from ..problem import Violation, assert_valid
from .spec import HeterPSProblem

__all__ = ["FEAS_RTOL", "Evaluation", "assert_plan", "check_plan", "evaluate", "stages_of"]

#: relative tolerance of the throughput floor check
FEAS_RTOL = 1e-9


@dataclass(frozen=True)
class Evaluation:
    """What a plan costs: ``throughput`` (samples/s), ``time_hours``, ``cost`` ($), ``feasible`` and, when not,
    ``violations`` naming the constraint (``throughput_limit`` or ``type_limit[<type>]``) with the amount."""

    throughput: float
    time_hours: float
    cost: float
    feasible: bool
    violations: dict[str, float] = field(default_factory=dict)
    units: dict[str, int] = field(default_factory=dict)  #: units of each type over all stages
    stage_throughputs: tuple[float, ...] = ()


def stages_of(plan: Sequence[str]) -> list[tuple[int, int, str]]:
    """Maximal runs of one type: ``[(first_layer, stop_layer, type), ...]`` (stop exclusive)."""
    out: list[tuple[int, int, str]] = []
    start = 0
    for i in range(1, len(plan) + 1):
        if i == len(plan) or plan[i] != plan[start]:
            out.append((start, i, plan[start]))
            start = i
    return out


def evaluate(problem: HeterPSProblem, plan: Sequence[str], k: Sequence[int]) -> Evaluation:
    """Cost model of ``plan`` (one type name per layer) with ``k`` units per stage (one count per stage, in order)."""
    problem.type_index(plan)  # validates the plan
    stages = stages_of(list(plan))
    if isinstance(k, (str, bytes)) or not isinstance(k, Sequence):
        raise InputError("k", k, "must be a sequence of unit counts, one per stage")
    if len(k) != len(stages):
        raise InputError("k", list(k), f"needs one unit count per stage ({len(stages)} stages: {stages})")
    for i, ki in enumerate(k):
        if isinstance(ki, bool) or not isinstance(ki, (int, np.integer)) or ki < 1:
            raise InputError(f"k[{i}]", ki, "must be an integer >= 1")
    scale = problem.batch_size / problem.base_batch
    stage_tp: list[float] = []
    units = {t.name: 0 for t in problem.types}
    for (a, b, t), ki in zip(stages, k):
        layers = problem.layers[a:b]
        oct_i = sum(layer.oct[t] for layer in layers)
        odt_i = sum(layer.odt[t] for layer in layers)
        alpha_i = sum(layer.alpha * layer.oct[t] for layer in layers) / oct_i
        beta_i = sum(layer.beta * layer.odt[t] for layer in layers) / odt_i if odt_i > 0 else 0.0
        ct = oct_i * scale * (1 - alpha_i + alpha_i / ki)
        dt = odt_i * scale * (1 - beta_i + beta_i / ki)
        stage_tp.append(problem.batch_size / max(ct, dt))
        units[t] += int(ki)
    throughput = min(stage_tp)
    time_hours = problem.epochs * problem.samples / throughput / 3600.0
    cost = time_hours * sum(tp.price_per_hour * units[tp.name] for tp in problem.types)
    viol: dict[str, float] = {}
    if throughput < problem.throughput_limit * (1 - FEAS_RTOL):
        viol["throughput_limit"] = problem.throughput_limit - throughput
    for tp in problem.types:
        if units[tp.name] > tp.limit:
            viol[f"type_limit[{tp.name}]"] = float(units[tp.name] - tp.limit)
    return Evaluation(throughput, time_hours, cost, not viol, viol, units, tuple(stage_tp))


def check_plan(problem: HeterPSProblem, answer: Any) -> list[Violation]:
    """The independent checker of a HeterPS answer (anything with ``plan``, ``k``, ``throughput`` and ``cost``, such
    as :class:`~schedopt.heterps.HeterPSPlan`): the plan names a known type per layer, ``k`` has one count per stage,
    the throughput floor and the type limits hold, and the reported throughput and cost equal their recomputation by
    :func:`evaluate`. An answer that holds no solution has nothing to check (an empty list)."""
    if not getattr(answer, "has_solution", True):
        return []
    plan, k = tuple(answer.plan), tuple(answer.k)
    if len(plan) != problem.num_layers:
        return [Violation("plan", f"has {len(plan)} entries for {problem.num_layers} layers")]
    try:
        ev = evaluate(problem, plan, k)
    except InputError as exc:
        return [Violation(exc.field, f"{exc.value!r}: {exc.message}")]
    bad = [Violation(name, f"violated by {amount:.6g}") for name, amount in ev.violations.items()]
    for name, got, want in (("throughput", answer.throughput, ev.throughput), ("cost", answer.cost, ev.cost)):
        if not np.isclose(got, want, rtol=1e-9, atol=0.0):
            bad.append(Violation(name, f"reported {got!r} but the plan gives {want!r}"))
    return bad


def assert_plan(problem: HeterPSProblem, answer: Any) -> None:
    """Raise :class:`~schedopt.problem.ViolationError` when :func:`check_plan` finds anything."""
    assert_valid(check_plan(problem, answer), "heterps plan")
