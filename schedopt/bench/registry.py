"""Benchmark specs: which problem, how instances are generated, at which sizes and seeds, with which backends and
parameters, and how one run goes through its phases.

A :class:`BenchSpec` runs in a process of its own per run (see :mod:`schedopt.bench.runner`), so its hooks must be
picklable: module-level functions (or ``"module:function"`` strings resolved in the child).

Two kinds of pipeline:

* :class:`ModelPipeline` — the problem builds a :class:`~schedopt.LinearModel`: ``prepare(instance)`` (e.g. Sia's
  goodput matrix), ``build(state) -> LinearModel``, then :func:`schedopt.solve` (or a baseline route such as
  cvxpy), ``decode(state, result)`` and ``place(state, decoded)``; every phase is timed apart and the LP relaxation
  bound is computed for every integer model.
* :class:`ProblemIOPipeline` — any registered problem through its typed :class:`~schedopt.problem.ProblemIO`
  (``generate`` then ``solve(instance, SolveOptions) -> Answer``): generation and the solve call are timed, the
  record's phases are the answer's timings, and the model's sizes and LP bound are read from ``answer.result``.

``specs()`` returns the problem packages' own specs (:func:`package_specs`: Sia's lives in
:mod:`schedopt.sia.bench`), the registered ones, and one ``ProblemIOPipeline`` spec for every registered problem
that has ``generate`` and ``solve`` and no spec of its own, so problems join the harness as their packages land.
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
    "SPEC_PROVIDERS",
    "BenchSpec",
    "ModelPipeline",
    "ProblemIOPipeline",
    "get_spec",
    "package_specs",
    "register_spec",
    "resolve",
    "specs",
    "split_entry",
]

#: GPU counts swept by default, and the large sizes run on request (``sizes="large"`` or ``"all"``)
DEFAULT_SIZES: tuple[int, ...] = (64, 128, 256, 512, 1024, 2048)
#: GPU counts of the large sweep (``sizes="large"`` or ``"all"``).
LARGE_SIZES: tuple[int, ...] = (4096, 8192, 16384)

Hook = Callable[..., Any] | str | None


def split_entry(entry: str, methods: Sequence[str] = ()) -> tuple[str | None, str | None]:
    """A sweep entry as (method, backend): ``method@backend``, a method of the problem, or a backend."""
    if "@" in entry:
        method, _, backend = entry.partition("@")
        return method or None, backend or None
    if entry in methods:
        return entry, None
    return None, entry


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
        """(entries of ``names`` — default the spec's — that can run here, {skipped entry: why}).

        An entry is a solver backend, a baseline route of a :class:`ModelPipeline`, or, for a
        :class:`ProblemIOPipeline`, a method of the problem or ``method@backend``. A name that is none of these
        raises :class:`~schedopt.errors.InputError` naming it and the known ones; a known backend or route that is
        not installed here is skipped (the caller decides whether that is an error)."""
        from ..backends import available_backends

        info = available_backends(include_missing=True)
        base = dict(self.pipeline.baselines) if isinstance(self.pipeline, ModelPipeline) else {}
        methods: tuple[str, ...] = ()
        uses_backend: tuple[str, ...] | None = None
        if isinstance(self.pipeline, ProblemIOPipeline):
            from ..problem import get_problem

            io = get_problem(self.pipeline.problem)
            methods, uses_backend = io.methods, io.backend_methods
        ok, skipped = [], {}
        for i, entry in enumerate(names if names is not None else self.backends):
            method, backend = split_entry(entry, methods)
            if method and method not in methods:
                raise InputError(f"backends[{i}]", entry, f"names no method of {self.problem} "
                                 f"(methods: {', '.join(methods) or 'none'})")
            run_method = method or (methods[0] if methods else None)
            if backend and uses_backend is not None and run_method not in uses_backend:
                # refused rather than run and recorded under a backend that never ran
                raise InputError(f"backends[{i}]", entry, f"{self.problem}'s method {run_method!r}"
                                 f"{'' if method else ' (its default)'} uses no solver backend; the methods that "
                                 f"do: {', '.join(uses_backend) or 'none'} (write METHOD@{backend}), or name the "
                                 f"method alone ({run_method})")
            if backend is not None and backend in base:
                why = _baseline_unavailable(backend)
            elif backend and backend not in info:
                known = sorted(info) + sorted(base) + list(methods)
                raise InputError(f"backends[{i}]", entry, f"is no known backend (known: {', '.join(known)})")
            else:
                why = "" if not backend or info[backend].available else (info[backend].reason or "not installed")
            if why:
                skipped[entry] = why
            else:
                ok.append(entry)
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


#: ProblemIO specs' sweep defaults, where the generic ones (``highs`` and ``scipy`` on the problem's default method,
#: sizes :data:`DEFAULT_SIZES`) do not fit: each entry of ``backends`` is a problem method, a backend, or
#: ``method@backend``.
PROBLEMIO_DEFAULTS: dict[str, dict[str, Any]] = {
    "heterps": {"backends": ("dp", "milp@highs", "greedy"), "sizes": (8, 16, 32, 64)},
    "gandiva": {"backends": ("exact@highs", "greedy"), "sizes": (16, 64, 256, 1024)},
    "synergy": {"backends": ("tune", "opt@highs", "opt@scipy")},
    "hived": {"backends": ("exact@highs", "counting")},
}


def _problemio_specs() -> dict[str, BenchSpec]:
    from ..problem import problems

    out = {}
    taken = {s.problem for s in _SPECS.values()} | set(_SPECS)
    for name, io in problems().items():
        if name in taken or io.generate is None or io.solve is None:
            continue
        d = PROBLEMIO_DEFAULTS.get(name, {})
        out[name] = BenchSpec(
            name=name,
            problem=name,
            generate=None,
            pipeline=ProblemIOPipeline(name),
            sizes=tuple(d.get("sizes", DEFAULT_SIZES)),
            backends=tuple(d.get("backends", ("highs", "scipy"))),
            params={"mip_rel_gap": 1e-4},
            description=f"{name} through its ProblemIO (generate + solve)",
        )
    return out


def specs() -> dict[str, BenchSpec]:
    """Every benchmark spec: the problem packages' own (:func:`package_specs`), the registered ones, and one per
    registered problem without a spec of its own (through its ProblemIO)."""
    out = {s.name: s for s in package_specs()}
    out.update(_SPECS)
    taken = {s.problem for s in out.values()} | set(out)
    out.update({k: v for k, v in _problemio_specs().items() if k not in taken})
    return out


def get_spec(spec_or_name: BenchSpec | str) -> BenchSpec:
    """The benchmark spec ``spec_or_name`` names (a spec passes through); an unknown name is an ``InputError``
    listing the known ones."""
    if isinstance(spec_or_name, BenchSpec):
        return spec_or_name
    all_specs = specs()
    if spec_or_name not in all_specs:
        raise InputError("problem", spec_or_name, f"has no benchmark spec (known: {', '.join(sorted(all_specs))})")
    return all_specs[spec_or_name]


def model_identity(instance: Any) -> Any:
    """A ``build`` hook for specs whose generator already returns a LinearModel."""
    return instance


# --------------------------------------------------------------------------------- problem packages' own specs
#: Extra ``"module:ATTRIBUTE"`` names of :class:`BenchSpec` objects (empty: the packages' own specs come through
#: their ``ProblemIO.bench_specs`` hook, which is how a package should declare one).
SPEC_PROVIDERS: tuple[str, ...] = ()


def package_specs() -> list[BenchSpec]:
    """The benchmark specs problem packages ship through ``ProblemIO.bench_specs`` (Sia's times the goodput matrix,
    the placement and the published code's cvxpy routes apart), richer than their generic ProblemIO route; then
    any named in :data:`SPEC_PROVIDERS`. The harness reaches them through the problem registry: this module
    imports no problem package (the packages' spec modules import it)."""
    from ..problem import problems

    out: list[BenchSpec] = []
    for io in problems().values():
        for spec in io.bench_specs() if io.bench_specs is not None else ():
            if not isinstance(spec, BenchSpec):
                raise InputError(f"{io.name}.bench_specs()", type(spec).__name__, "must return BenchSpec objects")
            out.append(spec)
    for provider in SPEC_PROVIDERS:
        named = resolve(provider)
        if not isinstance(named, BenchSpec):
            raise InputError("SPEC_PROVIDERS", provider, "must name a BenchSpec")
        out.append(named)
    return out


#: the old names of Sia's hooks here, and where each is on Sia's spec now
_DEPRECATED_SIA = {"sia_generate": "generate", "sia_prepare": "pipeline.prepare", "sia_build": "pipeline.build",
                   "sia_decode": "pipeline.decode", "sia_place": "pipeline.place", "sia_jobs": "pipeline.jobs",
                   "sia_gpus": "pipeline.gpus", "SIA_SPEC": ""}


def __getattr__(name: str) -> Any:
    if name in _DEPRECATED_SIA:
        import warnings

        warnings.warn(f"schedopt.bench.registry.{name} moved to schedopt.sia.bench.{name}", DeprecationWarning,
                      stacklevel=2)
        obj: Any = next(s for s in package_specs() if s.name == "sia")  # found through the registry, not imported
        for part in filter(None, _DEPRECATED_SIA[name].split(".")):
            obj = getattr(obj, part)
        return obj
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
