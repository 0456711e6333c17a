"""Benchmark specs: which problem, how instances are generated, at which sizes and seeds, with which backends and
parameters, and how one run goes through its phases.

A :class:`BenchSpec` runs in a fresh process per run (see :mod:`schedopt.bench.runner`), so its hooks must be
picklable: module-level functions, or ``"module:function"`` strings resolved in the child.

Two kinds of pipeline:

* :class:`ModelPipeline` — the problem builds a :class:`~schedopt.LinearModel`: ``prepare(instance)`` (e.g. Sia's
  goodput matrix), ``build(state) -> LinearModel``, then :func:`schedopt.solve` (or a baseline route such as
  cvxpy), ``decode(state, result)`` and ``place(state, decoded)``; every phase is timed apart and the LP relaxation
  bound is computed for every integer model.
* :class:`ProblemIOPipeline` — any registered problem through its :class:`~schedopt.instances.ProblemIO`
  (``generate`` then ``solve(instance, backend, time_limit)``): generation and the solve call are timed, and the
  model's phases are read from the returned result where it carries a ``SolveResult`` / ``LinearModel``.

``specs()`` returns the registered specs plus one ``ProblemIOPipeline`` spec for every registered problem that has
``generate`` and ``solve`` and no spec of its own, so problems join the harness as their packages land.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import InputError

__all__ = [
    "DEFAULT_SIZES",
    "LARGE_SIZES",
    "BenchSpec",
    "ModelPipeline",
    "ProblemIOPipeline",
    "get_spec",
    "register_spec",
    "resolve",
    "specs",
]

#: GPU counts swept by default, and the large sizes run on request (``sizes="large"`` or ``"all"``)
DEFAULT_SIZES: tuple[int, ...] = (64, 128, 256, 512, 1024, 2048)
LARGE_SIZES: tuple[int, ...] = (4096, 8192, 16384)

Hook = Callable[..., Any] | str | None


def resolve(hook: Hook) -> Callable[..., Any] | None:
    """A hook as a callable: ``"package.module:function"`` strings are imported."""
    if hook is None or callable(hook):
        return hook
    if isinstance(hook, str) and ":" in hook:
        mod, _, attr = hook.partition(":")
        obj: Any = importlib.import_module(mod)
        for part in attr.split("."):
            obj = getattr(obj, part)
        return obj
    raise InputError("hook", hook, "must be a callable or a 'module:function' string")


@dataclass(frozen=True)
class ModelPipeline:
    """How a run of a LinearModel-based problem goes.

    * ``prepare(instance) -> state`` (timed as ``goodput``; default: the instance itself),
    * ``build(state) -> LinearModel`` (timed as ``build``),
    * ``decode(state, result) -> decoded`` (timed with the backend's own decode as ``decode``; default: none),
    * ``place(state, decoded)`` (timed as ``place``; default: none),
    * ``jobs(instance) -> int`` and ``gpus(instance) -> int`` for the record (default: ``len(instance.jobs)`` /
      ``instance.cluster.num_gpus`` when present),
    * ``baselines``: backend name -> ``"module:function"`` of a baseline route ``fn(state, model, params) ->
      (SolveResult, phase_times)`` that replaces ``build`` + :func:`schedopt.solve` by its own modelling layer
      (see :mod:`schedopt.bench.baselines`).
    """

    build: Hook
    prepare: Hook = None
    decode: Hook = None
    place: Hook = None
    jobs: Hook = None
    gpus: Hook = None
    baselines: Mapping[str, Hook] = field(default_factory=dict)


@dataclass(frozen=True)
class ProblemIOPipeline:
    """Run a registered problem through its ``ProblemIO.generate`` / ``ProblemIO.solve``."""

    problem: str


@dataclass(frozen=True)
class BenchSpec:
    """One benchmark: a problem, its instance generator and the sweep's axes and parameters.

    ``generate(gpus, seed, **gen_params)`` makes an instance; ``loads`` is swept as ``gen_params["load"]`` when not
    empty. ``params`` are the solve parameters (``mip_rel_gap``, ``time_limit``, ``solver_seed``). ``reference`` is
    the backend the report's ratios are taken against.
    """

    name: str
    problem: str
    generate: Hook
    pipeline: ModelPipeline | ProblemIOPipeline
    sizes: tuple[int, ...] = DEFAULT_SIZES
    large_sizes: tuple[int, ...] = LARGE_SIZES
    seeds: tuple[int, ...] = (0,)
    loads: tuple[str, ...] = ()
    backends: tuple[str, ...] = ("highs",)
    params: Mapping[str, Any] = field(default_factory=dict)
    gen_params: Mapping[str, Any] = field(default_factory=dict)
    reference: str = "highs"
    description: str = ""

    def available_backends(self, names: Sequence[str] | None = None) -> tuple[list[str], dict[str, str]]:
        """(backends of ``names`` — default the spec's — that can run here, {skipped backend: why})."""
        from .. import available_backends

        installed = available_backends()
        base = dict(self.pipeline.baselines) if isinstance(self.pipeline, ModelPipeline) else {}
        ok, skipped = [], {}
        for b in names if names is not None else self.backends:
            if b in base:
                why = _baseline_unavailable(b)
                if why:
                    skipped[b] = why
                else:
                    ok.append(b)
            elif b in installed:
                ok.append(b)
            else:
                from ..backends import _REGISTRY

                skipped[b] = "not installed" if b in _REGISTRY else "unknown backend"
        return ok, skipped


def _baseline_unavailable(name: str) -> str:
    from .baselines import BASELINES, baseline_unavailable

    return baseline_unavailable(name) if name in BASELINES else ""  # a custom route hook: assumed runnable


_SPECS: dict[str, BenchSpec] = {}


def register_spec(spec: BenchSpec, *, replace: bool = True) -> BenchSpec:
    """Register ``spec`` under ``spec.name`` (replacing an earlier one unless ``replace=False``)."""
    if not isinstance(spec, BenchSpec):
        raise InputError("spec", type(spec).__name__, "must be a BenchSpec")
    if not replace and spec.name in _SPECS:
        raise InputError("spec.name", spec.name, "is already registered")
    _SPECS[spec.name] = spec
    return spec


def _problemio_specs() -> dict[str, BenchSpec]:
    from ..instances import problems

    out = {}
    taken = {s.problem for s in _SPECS.values()} | set(_SPECS)
    for name, io in problems().items():
        if name in taken or io.generate is None or io.solve is None:
            continue
        out[name] = BenchSpec(
            name=name,
            problem=name,
            generate=None,
            pipeline=ProblemIOPipeline(name),
            backends=("highs", "scipy"),
            params={"mip_rel_gap": 1e-4},
            description=f"{name} through its ProblemIO (generate + solve)",
        )
    return out


def specs() -> dict[str, BenchSpec]:
    """Every benchmark spec: the registered ones and one per registered problem without its own spec."""
    out = dict(_SPECS)
    try:
        out.update(_problemio_specs())
    except Exception:  # a half-written problem package must not hide the registered specs
        pass
    return out


def get_spec(spec_or_name: BenchSpec | str) -> BenchSpec:
    if isinstance(spec_or_name, BenchSpec):
        return spec_or_name
    all_specs = specs()
    if spec_or_name not in all_specs:
        raise InputError("problem", spec_or_name, f"has no benchmark spec (known: {', '.join(sorted(all_specs))})")
    return all_specs[spec_or_name]


def model_identity(instance: Any) -> Any:
    """A ``build`` hook for specs whose generator already returns a LinearModel."""
    return instance


# ---------------------------------------------------------------------------------------------------------- Sia
def sia_generate(gpus: int, seed: int, load: str = "normal", **kw: Any) -> Any:
    """``schedopt.sia.generate_instance``: ``gpus // 2`` jobs under normal load, ``gpus`` under heavy."""
    from ..sia import generate_instance

    return generate_instance(gpus, seed, load=load, **kw)


def sia_prepare(instance: Any) -> Any:
    """The goodput matrix: the problem's valid (job, configuration) pairs with their goodput and utility."""
    problem = instance.problem()
    problem.valid_pairs()
    return problem


def sia_build(problem: Any) -> Any:
    problem.check_forced()
    return problem.build()


def sia_decode(problem: Any, result: Any) -> Any:
    """job id -> Config (or None): the allocation read from the solution's columns."""
    from ..sia.problem import SiaSolution

    return SiaSolution(problem=problem, model=result.model, result=result, backend=result.backend).allocation


def sia_place(problem: Any, allocation: Any) -> Any:
    from ..sia import place

    return place(problem.cluster, allocation)


def sia_jobs(instance: Any) -> int:
    return len(instance.jobs)


def sia_gpus(instance: Any) -> int:
    return int(instance.cluster.num_gpus)


SIA_SPEC = BenchSpec(
    name="sia",
    problem="sia",
    generate="schedopt.bench.registry:sia_generate",
    pipeline=ModelPipeline(
        prepare="schedopt.bench.registry:sia_prepare",
        build="schedopt.bench.registry:sia_build",
        decode="schedopt.bench.registry:sia_decode",
        place="schedopt.bench.registry:sia_place",
        jobs="schedopt.bench.registry:sia_jobs",
        gpus="schedopt.bench.registry:sia_gpus",
        baselines={
            "cvxpy-glpk": "schedopt.bench.baselines:sia_cvxpy_glpk",
            "cvxpy-cbc": "schedopt.bench.baselines:sia_cvxpy_cbc",
            "cvxpy-glpk-dense": "schedopt.bench.baselines:sia_cvxpy_glpk_dense",
            "cvxpy-cbc-dense": "schedopt.bench.baselines:sia_cvxpy_cbc_dense",
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

register_spec(SIA_SPEC)
