"""Sia's benchmark spec: the whole path timed phase by phase (goodput matrix, build, hand-off, solve, decode,
placement) and the published code's cvxpy routes as baselines.

The harness (:mod:`schedopt.bench`) finds this spec through ``schedopt.sia.PROBLEM_IO.bench_specs``
(:func:`schedopt.bench.registry.package_specs`). Each hook is
a module-level function, sent by reference to the process that runs a benchmark run.
"""

from __future__ import annotations

from typing import Any

from ..bench.baselines import sia_cvxpy_cbc, sia_cvxpy_cbc_dense, sia_cvxpy_glpk, sia_cvxpy_glpk_dense
from ..bench.registry import BenchSpec, ModelPipeline

__all__ = ["SIA_SPEC", "sia_build", "sia_decode", "sia_generate", "sia_gpus", "sia_jobs", "sia_place", "sia_prepare"]


def sia_generate(gpus: int, seed: int, load: str = "normal", **kw: Any) -> Any:
    """``schedopt.sia.generate_instance``: ``gpus // 2`` jobs under normal load, ``gpus`` under heavy."""
    from .generate import generate_instance

    return generate_instance(gpus, seed, load=load, **kw)


def sia_prepare(instance: Any) -> Any:
    """The goodput matrix: the problem's valid (job, configuration) pairs with their goodput and utility."""
    problem = instance.problem()
    problem.valid_pairs()
    return problem


def sia_build(problem: Any) -> Any:
    """The benchmark's build phase: check the forced jobs, then build the model."""
    problem.check_forced()
    return problem.build()


def sia_decode(problem: Any, result: Any) -> Any:
    """job id -> Config (or None): the allocation read from the solution's columns."""
    from .problem import SiaSolution

    return SiaSolution(problem=problem, model=result.model, result=result, backend=result.backend).allocation


def sia_place(problem: Any, allocation: Any) -> Any:
    """The benchmark's placement phase: place the allocation on the cluster (rigid jobs kept whole)."""
    from .placement import place

    return place(problem.cluster, allocation, rigid=[j.id for j in problem.jobs if getattr(j, "kind", None) == "rigid"])


def sia_jobs(instance: Any) -> int:
    """The benchmark's jobs column: the instance's jobs."""
    return len(instance.jobs)


def sia_gpus(instance: Any) -> int:
    """The benchmark's size column: the cluster's GPUs."""
    return int(instance.cluster.num_gpus)


#: Sia's benchmark spec: the goodput matrix, the model, the placement and the cvxpy baselines timed apart.
SIA_SPEC = BenchSpec(
    name="sia",
    problem="sia",
    generate=sia_generate,
    pipeline=ModelPipeline(
        prepare=sia_prepare,
        build=sia_build,
        decode=sia_decode,
        place=sia_place,
        jobs=sia_jobs,
        gpus=sia_gpus,
        baselines={
            "cvxpy-glpk": sia_cvxpy_glpk,
            "cvxpy-cbc": sia_cvxpy_cbc,
            "cvxpy-glpk-dense": sia_cvxpy_glpk_dense,
            "cvxpy-cbc-dense": sia_cvxpy_cbc_dense,
        },
    ),
    loads=("normal", "heavy"),
    backends=("highs", "mckp", "cpsat", "glpk", "scipy", "cvxpy-glpk", "cvxpy-cbc", "pyomo"),
    params={"mip_rel_gap": 1e-4},
    reference="highs",
    description=(
        "Sia's configuration ILP: goodput matrix, build, solve to a 0.01% gap, decode, placement; the cvxpy routes "
        "are the published code's (a jobs x configs integer matrix in cvxpy, GLPK_MI or CBC); pyomo builds the same "
        "model through LinearModel.to_pyomo and solves it with HiGHS"
    ),
)
