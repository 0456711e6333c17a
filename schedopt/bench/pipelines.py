"""What one benchmark run does, in the process that runs it: two named pipelines.

* :func:`run_problemio` — a registered problem through its typed :class:`~schedopt.problem.ProblemIO`:
  ``generate(gpus, seed)`` then ``solve(instance, SolveOptions) -> Answer``. The record's outcome is the answer's
  termination, objective, bound and gap; its phases are the answer's timings (the rest of the solve call's wall time
  is counted as decode); model sizes come from ``answer.result.model`` when a model was solved, and its LP bound
  when the problem's answer is that one model's solution (``io.build`` is not None; HeterPS's Dinkelbach loop and
  its DP are not).
* :func:`run_model_pipeline` — a :class:`~schedopt.bench.ModelPipeline`: generate, prepare (``goodput``), build,
  :func:`schedopt.solve` or a baseline route, decode, place, each timed apart, then the model's sizes and LP bound.

Both send progress through a :class:`Run` (``phase`` names the phase under way, ``put`` reports record fields as
they are known, so a run killed by the guard still has its earlier fields).
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..errors import SchedoptError, SolveFailedError
from ..params import SolveParams
from ..problem import SolveOptions, get_problem
from ..results import SolveResult, Termination, TerminationReason
from .registry import BenchSpec, ModelPipeline, ProblemIOPipeline, resolve, split_entry

__all__ = ["Run", "execute", "instance_hash", "lp_bound", "model_sizes", "outcome", "reset_peak_rss", "rss_mb",
           "run_model_pipeline", "run_problemio", "set_peak_rss_source", "warm_up"]


@dataclass
class Run:
    """One run's task and its reporting channel: ``send(kind, payload)`` goes to the parent (``"ready"``,
    ``"phase"``, ``"update"``); ``fields`` collects what :meth:`put` reported."""

    task: dict[str, Any]
    send: Callable[[str, Any], None] = lambda kind, payload: None
    fields: dict[str, Any] = field(default_factory=dict)

    @property
    def spec(self) -> BenchSpec:
        return self.task["spec"]

    @property
    def entry(self) -> str:
        return self.task["backend"]

    @property
    def params(self) -> dict[str, Any]:
        return dict(self.task["params"])

    @property
    def threads(self) -> int:
        return int(self.params.get("threads", 1))

    def put(self, **kw: Any) -> None:
        self.fields.update(kw)
        self.send("update", kw)

    def phase(self, name: str) -> None:
        self.send("phase", name)

    def gen_kwargs(self) -> dict[str, Any]:
        kw = dict(self.spec.gen_params)
        if self.task.get("load"):
            kw["load"] = self.task["load"]
        return kw

    def solve_params(self) -> SolveParams:
        """The sweep's solver parameters, typed and validated once by :func:`~schedopt.bench.run` before any run
        (what every route of this run is given)."""
        given = self.task.get("solve_params")
        if isinstance(given, SolveParams):
            return given
        p = self.params
        return SolveParams(time_limit=p.get("time_limit"), mip_rel_gap=p.get("mip_rel_gap"), threads=self.threads,
                           seed=int(p.get("solver_seed", 0)))


# ------------------------------------------------------------------------------------------------ measurements
_PEAK_SOURCE = ["maxrss"]  #: where rss_mb reads the peak: "maxrss" (a one-run process), "hwm" or "none" (a warm one)


def set_peak_rss_source(source: str) -> None:
    """How :func:`rss_mb` reads the peak: ``"maxrss"`` (``ru_maxrss``: the process's life, a one-run process),
    ``"hwm"`` (``VmHWM``, reset at the run's start by a serving worker), ``"none"`` (unknown: NaN)."""
    _PEAK_SOURCE[0] = source


def reset_peak_rss() -> bool:
    """Reset this process's resident-memory high-water mark (Linux 4.0+: ``/proc/self/clear_refs``) and make
    :func:`rss_mb` read it (``"hwm"``); where it cannot be reset, :func:`rss_mb` gives NaN (``"none"``) rather than
    a peak that is not the run's. Returns whether it was reset."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        ok = True
    except OSError:
        ok = False
    set_peak_rss_source("hwm" if ok else "none")
    return ok


def rss_mb() -> float:
    """Peak resident memory of this process (MiB); in a serving worker, since the run's start."""
    import resource

    src = _PEAK_SOURCE[0]
    if src == "hwm":
        try:
            with open("/proc/self/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        return int(line.split()[1]) / 1024.0  # kB
        except OSError:
            pass
        return math.nan
    if src == "none":
        return math.nan
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # KiB on Linux


def _tiny_model() -> Any:
    from ..model import LinearModel

    m = LinearModel("warmup", sense="maximize")
    m.add_variables("x", 3, kind="binary")
    m.add_constraints("w", {"x": [[2, 3, 4]]}, upper=5)
    m.set_objective({"x": [3, 4, 5]})
    return m


def warm_up(spec: BenchSpec, backend: str | None) -> None:
    """Import and exercise the backend once so the measured phases carry no first-call costs."""
    from ..backends import get_backend
    from ..solve import solve

    solve(_tiny_model(), "highs")  # the LP-bound solver
    if backend is None:
        return
    if isinstance(spec.pipeline, ModelPipeline) and backend in spec.pipeline.baselines:
        from .baselines import BASELINES

        if backend in BASELINES:
            import cvxpy as cp

            x = cp.Variable(3, boolean=True)
            cp.Problem(cp.Maximize(x @ [3, 4, 5]), [x @ [2, 3, 4] <= 5]).solve(solver=BASELINES[backend][0])
        return
    try:
        solve(_tiny_model(), backend)
    except SchedoptError:
        pass  # a structure-specific backend may refuse the tiny model; warm_up() below loads what it uses
    get_backend(backend).warm_up()


def _problem_package(spec: BenchSpec) -> None:
    import importlib

    try:
        importlib.import_module(f"schedopt.{spec.problem}")
    except ModuleNotFoundError as exc:
        if exc.name != f"schedopt.{spec.problem}":
            raise


def instance_hash(instance: Any, problem: str = "") -> str:
    """sha256 (first 16 hex digits) of the instance's JSON document, or of a LinearModel's arrays."""
    import hashlib

    import numpy as np

    from ..model import LinearModel

    h = hashlib.sha256()
    if isinstance(instance, LinearModel):
        a = instance.to_arrays()
        for arr in (a.c, a.A.data, a.A.indices, a.A.indptr, a.row_lower, a.row_upper, a.col_lower, a.col_upper,
                    a.integrality):
            h.update(np.ascontiguousarray(arr).tobytes())
        h.update(str((a.maximize, a.constant)).encode())
        return h.hexdigest()[:16]
    from ..problem import problems

    io = problems().get(problem)
    if io is not None and isinstance(instance, io.cls):
        h.update(json.dumps(io.to_data(instance), sort_keys=True, allow_nan=False).encode())
    else:  # not a registered instance type: hash its pickle
        import pickle

        h.update(pickle.dumps(instance))
    return h.hexdigest()[:16]


def model_sizes(model: Any) -> dict[str, Any]:
    """The model's size as a benchmark record stores it: variables, integer variables, constraints, nonzeros, sense."""
    a = model.to_arrays()
    return {"variables": a.num_cols, "integer_variables": int(a.integrality.sum()), "constraints": a.num_rows,
            "nonzeros": int(a.A.nnz), "sense": model.sense}


def lp_bound(model: Any, threads: int) -> dict[str, Any]:
    """The LP relaxation's optimum (HiGHS), timed apart; only for integer models."""
    from ..solve import solve

    if not model.to_arrays().is_mip:
        return {}
    t = time.perf_counter()
    lr = solve(model.relax(), "highs", threads=threads)
    out: dict[str, Any] = {"t_lp": time.perf_counter() - t}
    if lr.termination.reason is TerminationReason.OPTIMAL:
        out["lp_bound"] = lr.objective
    return out


def _num(v: Any) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def outcome(termination: Termination, has_solution: bool, objective: float, bound: float, gap: float,
            backend_version: str = "") -> dict[str, Any]:
    """The record's outcome fields from a termination (never a parsed string): finite numbers or None."""
    r = termination.reason
    lim = termination.limit.value if termination.limit is not None else ""
    if r is TerminationReason.OPTIMAL:
        words = "optimal"
    elif r is TerminationReason.FEASIBLE:
        words = f"{lim or 'a'} limit with incumbent"
    elif r is TerminationReason.NO_SOLUTION_FOUND:
        words = f"{lim or 'a'} limit, no incumbent"
    else:
        words = r.value.replace("_", " ")
    return {
        "termination": r.value,
        "limit": lim,
        "has_incumbent": bool(has_solution),
        "outcome": words,
        "objective": _num(objective) if has_solution else None,
        "bound": _num(bound),
        "gap": _num(gap) if has_solution else None,
        "backend_version": backend_version,
    }


def result_outcome(res: SolveResult) -> dict[str, Any]:
    return outcome(res.termination, res.has_solution, res.objective_or_nan, res.bound, res.gap, res.backend_version)


# ------------------------------------------------------------------------------------------------ the pipelines
def _start(run: Run, backend: str | None) -> None:
    t0 = time.perf_counter()
    _problem_package(run.spec)
    warm_up(run.spec, backend)
    run.put(t_warmup=time.perf_counter() - t0, base_rss_mb=rss_mb())
    run.send("ready", None)


def run_problemio(run: Run) -> dict[str, Any]:
    """A registered problem through its typed ProblemIO (see the module docstring)."""
    pipe = run.spec.pipeline
    assert isinstance(pipe, ProblemIOPipeline)
    io = get_problem(pipe.problem)
    method, backend = split_entry(run.entry, io.methods)
    method = method or (io.methods[0] if io.methods else None)  # the method that runs, named in the record
    _start(run, backend)
    assert io.generate is not None and io.solve is not None
    run.phase("generate")
    t = time.perf_counter()
    inst = io.generate(run.task["gpus"], run.task["seed"], **run.gen_kwargs())
    run.put(t_generate=time.perf_counter() - t)
    if io.size is not None:
        gpus, jobs = io.size(inst)
        run.put(gpus=int(gpus), jobs=int(jobs))
    run.phase("solve")
    run.put(method=method or "")
    sp = run.solve_params()
    opts = SolveOptions(backend=backend, method=method, time_limit=sp.time_limit, mip_rel_gap=sp.mip_rel_gap,
                        threads=sp.threads, seed=sp.seed)
    t = time.perf_counter()
    try:
        answer = io.solve(inst, opts)
    except SolveFailedError as exc:  # a problem that raises for a solve that ended without an answer
        res = exc.result
        if not isinstance(res, SolveResult):
            raise
        wall = time.perf_counter() - t
        run.put(t_solve=res.timings.solve, t_path=wall, route="problemio", error=f"{type(exc).__name__}: {exc}",
                **result_outcome(res))
    else:
        wall = time.perf_counter() - t
        tm = answer.timings
        build = 0.0 if math.isnan(tm.build) else tm.build
        rest = max(wall - build - tm.handoff - tm.solve - tm.decode, 0.0)
        res = answer.result
        version = res.backend_version if res is not None else ""
        run.put(t_build=build, t_handoff=tm.handoff, t_solve=tm.solve, t_decode=tm.decode + rest, t_path=wall,
                extra=json.dumps({"decode_includes_rest_of_problem_solve_s": rest}),
                method=answer.method or method or "", route="problemio",
                **outcome(answer.termination, answer.has_solution, answer.objective_value, answer.bound, answer.gap,
                          version))
    model = res.model if res is not None else None
    if model is not None:
        run.put(**model_sizes(model))
        if io.build is not None:  # the answer is that one model's solution: its LP relaxation bounds the objective
            run.phase("lp_bound")
            run.put(**lp_bound(model, run.threads))
    run.put(instance_hash=instance_hash(inst, run.spec.problem))
    return run.fields


def run_model_pipeline(run: Run) -> dict[str, Any]:
    """A :class:`ModelPipeline` run (see the module docstring)."""
    from ..solve import solve

    spec, backend = run.spec, run.entry
    pipe = spec.pipeline
    assert isinstance(pipe, ModelPipeline)
    _start(run, backend)
    gen = resolve(spec.generate)
    assert gen is not None
    run.phase("generate")
    t = time.perf_counter()
    inst = gen(run.task["gpus"], run.task["seed"], **run.gen_kwargs())
    run.put(t_generate=time.perf_counter() - t)
    jobs_fn, gpus_fn = resolve(pipe.jobs), resolve(pipe.gpus)
    if jobs_fn is not None:
        run.put(jobs=int(jobs_fn(inst)))
    if gpus_fn is not None:
        run.put(gpus=int(gpus_fn(inst)))
    prepare, build = resolve(pipe.prepare), resolve(pipe.build)
    decode, place = resolve(pipe.decode), resolve(pipe.place)
    assert build is not None
    run.phase("goodput")
    t = time.perf_counter()
    state = prepare(inst) if prepare is not None else inst
    run.put(t_goodput=time.perf_counter() - t if prepare is not None else 0.0)
    solve_params = run.solve_params()
    if backend in pipe.baselines:
        route = resolve(pipe.baselines[backend])
        assert route is not None
        model = build(state)  # the reference LinearModel (not timed): decoding, sizes and the LP bound use it
        run.phase("solve")
        res, ph = route(state, model, solve_params)
        run.put(t_build=ph.get("build", 0.0), t_handoff=ph.get("handoff", 0.0), t_solve=ph.get("solve", 0.0),
                route="cvxpy" if backend.startswith("cvxpy") else backend)
        t_dec = ph.get("decode", 0.0)
    else:
        run.phase("build")
        t = time.perf_counter()
        model = build(state)
        run.put(t_build=time.perf_counter() - t)
        run.phase("solve")
        t = time.perf_counter()
        res = solve(model, backend, options=solve_params)
        wall = time.perf_counter() - t
        run.put(t_solve=res.timings.solve, t_handoff=max(wall - res.timings.solve - res.timings.decode, 0.0),
                route="schedopt")
        t_dec = res.timings.decode
    run.put(**result_outcome(res))
    decoded = None
    if res.has_solution and decode is not None:
        run.phase("decode")
        t = time.perf_counter()
        decoded = decode(state, res)
        t_dec += time.perf_counter() - t
    run.put(t_decode=t_dec)
    t_pl = 0.0
    if decoded is not None and place is not None:
        run.phase("place")
        t = time.perf_counter()
        place(state, decoded)
        t_pl = time.perf_counter() - t
    run.put(t_place=t_pl)
    f = run.fields
    run.put(t_path=sum(f.get(f"t_{p}") or 0.0 for p in ("goodput", "build", "handoff", "solve", "decode", "place")))
    run.phase("lp_bound")
    run.put(**model_sizes(model))
    run.put(**lp_bound(model, run.threads))
    run.put(instance_hash=instance_hash(inst, spec.problem))
    return run.fields


def execute(task: dict[str, Any], send: Callable[[str, Any], None] = lambda kind, payload: None) -> dict[str, Any]:
    """Run one task in this process through its spec's pipeline; returns the record's fields."""
    run = Run(task, send)
    if isinstance(task["spec"].pipeline, ProblemIOPipeline):
        return run_problemio(run)
    return run_model_pipeline(run)
