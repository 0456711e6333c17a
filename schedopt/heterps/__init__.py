"""HeterPS (Liu et al., FGCS 2023): schedule DNN layers onto resource types (CPU, GPU, ...) and size each stage to
minimize monetary cost under a throughput floor and per-type unit limits.

* Spec: :class:`Layer`, :class:`ResourceType`, :class:`HeterPSProblem` (validated).
* Cost model / independent checker: :func:`evaluate` -> :class:`Evaluation`.
* Exact: :func:`solve_exact` (``method="dp"`` or ``"milp"`` with any backend; :func:`build` gives the MILP as a
  :class:`~schedopt.problem.Formulation` with its typed inverse map :class:`MilpOptions`).
* Answers: :class:`HeterPSPlan` (a :class:`~schedopt.problem.Answer`); checker :func:`check_plan` / :func:`assert_plan`.
* The paper's provisioning: :func:`k1_lower_bound`, :func:`balance_units`, :func:`provision_paper`; exact per-plan
  provisioning :func:`provision`.
* Baselines: :func:`solve_rl` (numpy LSTM + REINFORCE), :func:`solve_greedy`, :func:`solve_genetic`,
  :func:`solve_bruteforce`.
* Instances: :func:`generate` (``ctrdnn``, ``matchnet``, ``2emb``, ``nce``); :func:`frontier`, :func:`plot_frontier`.

Formulation, proofs and deviations: ``formulations/heterps.md``.
"""

from . import io
from .core import (
    HeterPSPlan,
    balance_units,
    k1_lower_bound,
    kmin,
    max_throughput,
    plan_max_throughput,
    provision,
    provision_paper,
)
from .cost import Evaluation, assert_plan, check_plan, evaluate, stages_of
from .exact import (
    HeterPSInfeasibleError,
    MilpOptions,
    build,
    build_milp,
    candidate_levels,
    decode_step,
    diagnose_infeasibility,
    set_dinkelbach_objective,
    solve_exact,
)
from .frontier import Frontier, frontier, plot_frontier
from .generators import MODELS, generate
from .heuristics import solve_bruteforce, solve_genetic, solve_greedy
from .io import PROBLEM_IO
from .rl import LSTMPolicy, layer_features, solve_rl
from .spec import CPU_PRICE, GPU_PRICE, HeterPSProblem, Layer, ResourceType

__all__ = [
    "CPU_PRICE",
    "GPU_PRICE",
    "MODELS",
    "PROBLEM_IO",
    "Evaluation",
    "Frontier",
    "HeterPSInfeasibleError",
    "HeterPSPlan",
    "HeterPSProblem",
    "LSTMPolicy",
    "Layer",
    "MilpOptions",
    "ResourceType",
    "assert_plan",
    "balance_units",
    "build",
    "build_milp",
    "candidate_levels",
    "check_plan",
    "decode_step",
    "diagnose_infeasibility",
    "evaluate",
    "frontier",
    "generate",
    "io",
    "k1_lower_bound",
    "kmin",
    "layer_features",
    "max_throughput",
    "plan_max_throughput",
    "plot_frontier",
    "provision",
    "provision_paper",
    "set_dinkelbach_objective",
    "solve_bruteforce",
    "solve_exact",
    "solve_genetic",
    "solve_greedy",
    "solve_rl",
    "stages_of",
]
