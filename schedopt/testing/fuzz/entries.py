"""The public entry points fuzzed: constructors, solve parameters, generators and the command line."""

from __future__ import annotations

import contextlib
import copy
import functools
import math
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from .catalog import MISSING
from .runner import CliExit, EntryPoint


# ------------------------------------------------------------------ the catalog of entry points
def _knapsack() -> Any:
    """max 3a + 4b + 5c, 2a + 3b + 4c <= 7, binary: optimum 9 (b = c = 1), checked by hand."""
    from ...model import LinearModel

    m = LinearModel("knapsack", sense="maximize")
    m.add_variables("x", 3, kind="binary")
    m.add_constraints("weight", {"x": [[2, 3, 4]]}, upper=7)
    m.set_objective({"x": [3, 4, 5]})
    return m


#: The optimum of the fuzz survey's knapsack model (checked after every bad input).
KNAPSACK_OPTIMUM = 9.0


def _solve_honest(res: Any, optimum: float = KNAPSACK_OPTIMUM, tol: float = 1e-6) -> str | None:
    """Why a result of the knapsack (a maximisation of optimum 9, x = (0, 1, 1)) lies, or None."""
    from ...results import TerminationReason

    why = lies(_knapsack(), res, None, tol)
    if why:
        return why
    reason = res.termination.reason
    if reason == TerminationReason.OPTIMAL and abs(res.objective - optimum) > tol:
        return f"OPTIMAL with objective {res.objective} (optimum {optimum})"
    if math.isfinite(res.bound) and res.bound < optimum - tol:
        return f"{reason.name} with bound {res.bound}, below the optimum {optimum} (a maximisation)"
    if reason in (TerminationReason.INFEASIBLE, TerminationReason.UNBOUNDED):
        return f"{reason.name} on a feasible bounded model (optimum {optimum})"
    return None


def lies(model: Any, res: Any, reference: Any = None, tol: float = 1e-6) -> str | None:
    """Why ``res`` (a result on ``model``) claims more than it holds, or None: a held solution that violates the
    model or whose objective differs from its value; INFEASIBLE, or a bound beaten, when ``reference`` (another
    backend's result on the same model) holds a solution that the model itself accepts; an OPTIMAL objective that
    differs from the reference's OPTIMAL one."""
    from ...results import TerminationReason as R

    reason = res.termination.reason
    if reason in (R.OPTIMAL, R.FEASIBLE):
        x = np.asarray(res.x, dtype=float)
        bad = model.violations(x, tol=tol * max(1.0, float(np.max(np.abs(x), initial=0.0))))
        if bad or not np.all(np.isfinite(x)):
            return f"{reason.name} with a solution that violates {bad or 'finiteness'}"
        if abs(model.evaluate(x) - res.objective) > tol * max(1.0, abs(res.objective)):
            return f"{reason.name} objective {res.objective} but the solution's value is {model.evaluate(x)}"
    if reference is None or reference.termination.reason not in (R.OPTIMAL, R.FEASIBLE):
        return None
    xr = np.asarray(reference.x, dtype=float)
    if model.violations(xr, tol=tol) or not np.all(np.isfinite(xr)):
        return None
    vr = model.evaluate(xr)
    if reason == R.INFEASIBLE:
        return f"INFEASIBLE, but {reference.backend} found a solution of value {vr} that satisfies the model"
    better = (lambda a, b: a > b) if model.maximize else (lambda a, b: a < b)
    if math.isfinite(res.bound) and better(vr, res.bound) and abs(vr - res.bound) > tol * max(1.0, abs(vr)):
        return f"{reason.name} with bound {res.bound}, beaten by a solution of value {vr} ({reference.backend})"
    if reason == R.OPTIMAL and reference.termination.reason == R.OPTIMAL \
            and abs(res.objective - reference.objective) > 1e-6 * max(1.0, abs(vr)):
        return f"OPTIMAL {res.objective}, but {reference.backend} proves {reference.objective}"
    return None


def _linear_model_entries() -> list[EntryPoint]:
    from ... import solve
    from ...model import LinearModel

    def path(m: LinearModel) -> Any:
        return solve(m, "highs", time_limit=2.0)

    def add_variables(**kw: Any) -> Any:
        m = LinearModel("m", sense="maximize")
        block = m.add_variables(**kw)
        m.add_constraints("c", {block.name: np.ones((1, block.size))}, upper=5)
        m.set_objective({block.name: np.ones(block.size)})
        return path(m)

    def add_constraints(**kw: Any) -> Any:
        m = LinearModel("m", sense="maximize")
        m.add_variables("x", 3, upper=10)
        m.add_constraints(**kw)
        m.set_objective({"x": [1, 1, 1]})
        return path(m)

    def set_objective(**kw: Any) -> Any:
        m = LinearModel("m")
        m.add_variables("x", 3, upper=10)
        m.add_constraints("c", {"x": [[1, 1, 1]]}, lower=1)
        m.set_objective(**kw)
        return path(m)

    def checked(backend: str, reference: str) -> Callable[..., Any]:
        def call(**kw: Any) -> Any:
            m = LinearModel.from_arrays(**kw)
            res = solve(m, backend, time_limit=2.0)
            try:
                ref = solve(m, reference, time_limit=2.0)
            except Exception:
                ref = None
            return m, res, ref

        return call

    def prep_coeffs(f: str, v: Any, kw: dict[str, Any]) -> Any:
        return {"x": v} if f == "coeffs" else v

    arrays_valid = lambda: {  # noqa: E731 - max 3a + 4b + 5c, 2a + 3b + 4c <= 7, integer in [0, 1]: optimum 9
        "c": [3.0, 4.0, 5.0], "A": [[2.0, 3.0, 4.0]], "row_lower": [-np.inf], "row_upper": [7.0], "col_lower": 0.0,
        "col_upper": 1.0, "integrality": [1, 1, 1], "sense": "maximize", "constant": 0.0, "name": "k"}
    arrays_fields = {"c": "vector3", "A": "matrix1x3?", "row_lower": "lower", "row_upper": "upper",
                     "col_lower": "lower", "col_upper": "upper", "integrality": "vector3", "sense": "choice",
                     "constant": "real", "name": "model_name"}

    def arrays_accept(out: Any) -> str | None:
        return lies(*out)

    def prep_rows(f: str, v: Any, kw: dict[str, Any]) -> Any:
        # row bounds are one per row (1 row): a list of 3 is a shape error, a scalar broadcasts
        if f in ("row_lower", "row_upper") and isinstance(v, list) and len(v) == 3:
            return v[:1]
        return v

    return [
        EntryPoint("LinearModel.add_variables", add_variables,
                   lambda: {"name": "x", "shape": 3, "lower": 0.0, "upper": 10.0, "kind": "integer",
                            "labels": ["a", "b", "c"]},
                   {"name": "name", "shape": "shape", "lower": "lower", "upper": "upper", "kind": "choice",
                    "labels": "labels3"}),
        EntryPoint("LinearModel.add_constraints", add_constraints,
                   lambda: {"name": "c", "coeffs": {"x": [[1.0, 2.0, 3.0]]}, "lower": 0.0, "upper": 7.0,
                            "labels": ["r"]},
                   {"name": "name", "coeffs": "matrix1x3", "lower": "lower", "upper": "upper"},
                   prepare=prep_coeffs),
        EntryPoint("LinearModel.set_objective", set_objective,
                   lambda: {"coeffs": {"x": [1.0, 2.0, 3.0]}, "sense": "minimize", "constant": 0.0},
                   {"coeffs": "vector3", "sense": "choice?", "constant": "real"}, prepare=prep_coeffs),
        EntryPoint("LinearModel.from_arrays+highs", checked("highs", "scipy"), arrays_valid, arrays_fields, accept=arrays_accept,
                   prepare=prep_rows),
        EntryPoint("LinearModel.from_arrays+scipy", checked("scipy", "highs"), arrays_valid,
                   {k: arrays_fields[k] for k in ("A", "row_lower", "row_upper", "col_lower", "col_upper")},
                   accept=arrays_accept, prepare=prep_rows),
    ]


def _solve_entries() -> list[EntryPoint]:
    from ... import solve
    from ...backends import available_backends

    out = []
    for backend in available_backends():
        if backend == "mckp":
            continue  # the knapsack has no one-configuration-per-job structure; mckp is fuzzed through Sia below

        def call(backend: str = backend, **kw: Any) -> Any:
            return solve(_knapsack(), backend, **kw)

        fields = {"time_limit": "time_limit", "mip_rel_gap": "gap", "threads": "threads", "seed": "seed"}
        from ...backends import get_backend

        if get_backend(backend).capabilities.warm_start:
            fields["warm_start"] = "warm_start3"
        out.append(EntryPoint(f"solve[{backend}]", call, lambda: {"time_limit": 5.0}, fields, accept=_solve_honest))
    out.append(EntryPoint("solve(backend=)", lambda **kw: solve(_knapsack(), **kw),
                          lambda: {"backend": "highs", "time_limit": 5.0}, {"backend": "backend"},
                          accept=_solve_honest))
    return out


def _sia_entries() -> list[EntryPoint]:
    from ... import sia, solve

    def goodput(job: Any, config: Any) -> float:
        return float(config.n_gpus) ** 0.5

    def problem(cluster: Any = None, jobs: Any = MISSING, **kw: Any) -> Any:  # jobs=None is a bad value to try
        cluster = cluster if cluster is not None else sia.Cluster((sia.GpuType("t4", 4, 2), sia.GpuType("a100", 8, 1)))
        jobs = jobs if jobs is not MISSING else [sia.Job("j0"), sia.Job("j1", max_profiled_gpus=4)]
        kw.setdefault("goodput", goodput)
        p = sia.SiaProblem(cluster, jobs, **kw)
        return solve(p.build(), "highs", time_limit=2.0)

    def gpu_type(**kw: Any) -> Any:
        return problem(cluster=sia.Cluster((sia.GpuType(**kw),)))

    def job(**kw: Any) -> Any:
        return problem(jobs=[sia.Job(**kw), sia.Job("other")])

    def config(**kw: Any) -> Any:
        return problem(jobs=[sia.Job("j0", current=sia.Config(**kw), max_profiled_gpus=4), sia.Job("other")])

    def prep_problem(f: str, v: Any, kw: dict[str, Any]) -> Any:
        tables = {"nan-table": np.nan, "inf-table": np.inf, "neg-table": -1.0}
        if f == "goodput" and isinstance(v, str) and v in tables:
            return lambda job, config: tables[v]
        if f == "jobs" and v == "dup":
            return [sia.Job("a"), sia.Job("a")]
        return v

    def generate(**kw: Any) -> Any:
        return sia.generate_instance(**kw).problem().build()

    model = functools.cache(lambda: sia.generate_instance(64, 0).problem().build())

    def mckp(**kw: Any) -> Any:
        return solve(model(), "mckp", **kw)

    return [
        EntryPoint("sia.GpuType", gpu_type, lambda: {"name": "t4", "gpus_per_node": 4, "nodes": 2},
                   {"name": "name", "gpus_per_node": "count", "nodes": "nonneg_int"}),  # 0 nodes: a type with none up
        EntryPoint("sia.Job", job, lambda: {"id": "j0", "kind": "adaptive", "max_profiled_gpus": 2},
                   {"id": "name", "kind": "choice", "min_gpus": "demand", "max_gpus": "cap?", "scale_unit": "count",
                    "max_profiled_gpus": "nonneg_int", "allowed_types": "names", "age_s": "nonneg_float",
                    "restarts": "nonneg_int", "restart_cost_s": "nonneg_float", "preemptible": "bool",
                    "rigid_gpus": "cap?", "batch_size": "pos_float?"}),
        EntryPoint("sia.Config", config, lambda: {"n_nodes": 1, "n_gpus": 2, "gpu_type": "t4"},
                   {"n_nodes": "count", "n_gpus": "count", "gpu_type": "known_name"}),
        EntryPoint("sia.SiaProblem", problem, lambda: {"p": -0.5, "lam": 1.1},
                   {"p": "real", "lam": "nonneg_float", "max_gpus_per_job": "cap?", "goodput": "goodput",
                    "jobs": "items"}, prepare=prep_problem),
        EntryPoint("sia.cluster", lambda **kw: sia.cluster(**kw), lambda: {"gpus": 64}, {"gpus": "count"}),
        EntryPoint("sia.generate_instance", generate, lambda: {"gpus": 64, "seed": 0},
                   {"gpus": "count", "seed": "seed", "jobs": "count?", "load": "choice", "p": "real",
                    "lam": "nonneg_float"}),
        EntryPoint("solve[mckp]", mckp, lambda: {"time_limit": 2.0},
                   {"time_limit": "time_limit", "mip_rel_gap": "gap", "threads": "threads", "seed": "seed"}),
    ]


def _synergy_entries() -> list[EntryPoint]:
    from ... import synergy

    cached = functools.cache(lambda: synergy.generate_instance(16, 0))

    def base() -> Any:
        return copy.deepcopy(cached())

    def server(**kw: Any) -> Any:
        inst = base()
        return synergy.synergy_tune([synergy.Server(**kw), *inst.servers[1:]], inst.jobs)

    def job(**kw: Any) -> Any:
        inst = base()
        jobs = [synergy.SynergyJob(**kw), *inst.jobs[1:]]
        synergy.build_p1(jobs, 16, 48.0, 1000.0)
        return synergy.synergy_tune(inst.servers, jobs)

    def job_valid() -> dict[str, Any]:
        j = base().jobs[0]
        return {"id": j.id, "gpus": j.gpus, "cpu_grid": j.cpu_grid.copy(), "mem_grid": j.mem_grid.copy(),
                "throughput": j.throughput.copy()}

    def generate(**kw: Any) -> Any:
        inst = synergy.generate_instance(**kw)
        return synergy.proportional(inst.servers, inst.jobs)

    return [
        EntryPoint("synergy.Server", server, lambda: {"gpus": 8, "cpus": 24.0, "mem_gb": 500.0},
                   {"gpus": "count", "cpus": "pos_float", "mem_gb": "pos_float"}),
        EntryPoint("synergy.SynergyJob", job, job_valid,
                   {"id": "name", "gpus": "count", "cpu_grid": "grid9", "mem_grid": "grid5",
                    "throughput": "grid9x5"}),
        EntryPoint("synergy.generate_instance", generate, lambda: {"gpus": 16, "seed": 0},
                   {"gpus": "count", "seed": "seed", "load": "pos_float", "source": "choice",
                    "gpus_per_server": "count", "cpus_per_server": "pos_float", "mem_per_server": "pos_float"}),
        EntryPoint("synergy.default_cluster", lambda **kw: synergy.default_cluster(**kw), lambda: {"gpus": 16},
                   {"gpus": "count", "gpus_per_server": "count", "cpus_per_server": "pos_float",
                    "mem_per_server": "pos_float"}),
    ]


def _heterps_entries() -> list[EntryPoint]:
    import dataclasses

    from ... import heterps

    @functools.cache
    def base() -> Any:  # frozen
        return heterps.generate("ctrdnn", 0, cpus=8, gpus=2)

    def run(p: Any) -> Any:
        return heterps.solve_greedy(p)

    def resource(**kw: Any) -> Any:
        p = base()
        return run(dataclasses.replace(p, types=(heterps.ResourceType(**kw), p.types[1])))

    def layer(**kw: Any) -> Any:
        p = base()
        return run(dataclasses.replace(p, layers=(heterps.Layer(**kw), *p.layers[1:])))

    def layer_valid() -> dict[str, Any]:
        lay = base().layers[0]
        return {f.name: copy.deepcopy(getattr(lay, f.name)) for f in dataclasses.fields(lay) if f.init}

    def problem(**kw: Any) -> Any:
        p = base()
        fields = {f.name: getattr(p, f.name) for f in dataclasses.fields(p) if f.init}
        return run(heterps.HeterPSProblem(**{**fields, **kw}))

    def prep_problem(f: str, v: Any, kw: dict[str, Any]) -> Any:
        if f == "layers" and v == "dup":
            lay = base().layers[0]
            return (lay, lay)
        return v

    def generate(**kw: Any) -> Any:
        return run(heterps.generate(**kw))

    def exact(**kw: Any) -> Any:
        return heterps.solve_exact(heterps.generate("ctrdnn", 0, **kw), time_limit=2.0)

    return [
        EntryPoint("heterps.ResourceType", resource, lambda: {"name": "CPU", "price_per_hour": 0.04, "limit": 8},
                   {"name": "known_name", "price_per_hour": "nonneg_float", "limit": "count"}),
        EntryPoint("heterps.Layer", layer, layer_valid,
                   {"name": "name", "kind": "name", "oct": "per_type", "odt": "per_type", "alpha": "fraction",
                    "beta": "fraction", "input_size": "nonneg_float", "weight_size": "nonneg_float"}),
        EntryPoint("heterps.HeterPSProblem", problem, dict,
                   {"batch_size": "pos_float", "base_batch": "pos_float", "samples": "pos_float",
                    "epochs": "pos_float", "throughput_limit": "nonneg_float", "layers": "items"},
                   prepare=prep_problem),
        EntryPoint("heterps.generate", generate, lambda: {"model": "ctrdnn", "seed": 0, "cpus": 8, "gpus": 2},
                   {"model": "known_name", "seed": "seed", "cpus": "count", "gpus": "count",
                    "limit_fraction": "fraction", "batch_size": "count", "samples": "pos_float", "epochs": "pos_float"}),
        EntryPoint("heterps.solve_exact(generate())", exact, lambda: {"cpus": 8, "gpus": 2},
                   {"cpus": "count", "gpus": "count"}),
    ]


def _hived_entries() -> list[EntryPoint]:
    from importlib import resources

    from ... import hived

    @functools.cache
    def config() -> dict[str, Any]:
        import yaml

        return yaml.safe_load((resources.files("schedopt.hived") / "examples" / "example.yaml").read_text())

    def example() -> tuple[Any, Any]:
        return hived.load_hived_config(copy.deepcopy(config()))

    def request(**kw: Any) -> Any:
        cluster, vcs = example()
        return hived.BuddyAllocator(cluster, vcs).allocate(hived.Request(**kw))

    def request_valid() -> dict[str, Any]:
        _, vcs = example()
        vc = vcs[0]
        return {"vc": vc.name, "chain": "V100-RACK", "gpus_per_pod": 1, "pods": 1, "priority": "guaranteed"}

    def vc(**kw: Any) -> Any:
        cluster, vcs = example()
        return hived.BuddyAllocator(cluster, [hived.VirtualCluster(**kw), *vcs[1:]]).virtual_free

    def vc_valid() -> dict[str, Any]:
        v = example()[1][0]
        return {"name": v.name, "cells": dict(v.cells), "weight": v.weight}

    def generate(**kw: Any) -> Any:
        cluster = hived.generate_cluster(**kw)
        return hived.BuddyAllocator(cluster, hived.generate_vcs(cluster, 2, 0))

    return [
        EntryPoint("hived.Request", request, request_valid,
                   {"vc": "known_name", "chain": "known_name", "gpus_per_pod": "demand", "pods": "demand",
                    "priority": "priority", "name": "name?"}),
        EntryPoint("hived.VirtualCluster", vc, vc_valid, {"name": "name", "cells": "cells", "weight": "pos_float"}),
        EntryPoint("hived.generate_cluster", generate, lambda: {"gpus": 64},
                   {"gpus": "count", "gpu_types": "free_names", "nodes_per_rack": "count", "sockets_per_node": "count",
                    "pcie_per_socket": "count", "gpus_per_pcie": "count"}),
    ]


def _gandiva_entries() -> list[EntryPoint]:
    from ... import gandiva

    def node(**kw: Any) -> Any:
        state = gandiva.ClusterState([gandiva.Node(**kw), gandiva.Node("other", 4)])
        a = gandiva.allocate(state, gandiva.GandivaJob("j", 1))
        return a, gandiva.check_state(state)

    def job(**kw: Any) -> Any:
        state = gandiva.ClusterState(gandiva.uniform_cluster(2, 4))
        j = gandiva.GandivaJob(**kw)
        a = gandiva.allocate(state, j)
        return a, gandiva.check_state(state)

    def state_ok(out: Any) -> str | None:
        _, problems = out
        return f"the state checker then reports {problems[:2]}" if problems else None

    def cluster_state(**kw: Any) -> Any:
        state = gandiva.ClusterState(**kw)
        return gandiva.allocate(state, gandiva.GandivaJob("j", 1))

    def prep_state(f: str, v: Any, kw: dict[str, Any]) -> Any:
        return [gandiva.Node("a", 4), gandiva.Node("a", 4)] if v == "dup" else v

    def uniform(**kw: Any) -> Any:
        return gandiva.ClusterState(gandiva.uniform_cluster(**kw)).free_counts()

    def trace(**kw: Any) -> Any:
        jobs = gandiva.generate_trace(**kw)
        state = gandiva.ClusterState(gandiva.uniform_cluster(4, 4))
        return gandiva.pack_greedy(state, jobs[:4])

    def profiles(**kw: Any) -> Any:
        p = gandiva.Profiles(**kw)
        jobs = gandiva.generate_trace(4, 0, profiles=p)
        return gandiva.pack_greedy(gandiva.ClusterState(gandiva.uniform_cluster(2, 4)), jobs)

    def profiles_valid() -> dict[str, Any]:
        p = gandiva.load_profiles()
        return {"types": tuple(p.types), "solo_throughput": np.array(p.solo_throughput),
                "utilization": np.array(p.utilization), "memory": np.array(p.memory), "factor": np.array(p.factor)}

    return [
        EntryPoint("gandiva.Node", node, lambda: {"name": "n0", "gpus": 4, "gpu_memory": 1.0},
                   {"name": "name", "gpus": "count", "gpu_memory": "pos_float"}, accept=state_ok),
        EntryPoint("gandiva.GandivaJob", job, lambda: {"id": "j", "gpus": 2},
                   {"id": "name", "gpus": "demand", "utilization": "fraction", "memory": "fraction",
                    "throughput": "pos_float", "duration": "pos_float", "arrival": "nonneg_float", "elastic": "bool",
                    "max_gpus": "cap?"}, accept=state_ok),
        EntryPoint("gandiva.ClusterState", cluster_state, lambda: {"nodes": gandiva.uniform_cluster(2, 4)},
                   {"nodes": "items"}, prepare=prep_state),
        EntryPoint("gandiva.uniform_cluster", uniform, lambda: {"n_nodes": 2, "gpus_per_node": 4},
                   {"n_nodes": "count", "gpus_per_node": "count", "gpu_memory": "pos_float"}),
        EntryPoint("gandiva.generate_trace", trace, lambda: {"n_jobs": 8, "seed": 0},
                   {"n_jobs": "nonneg_int", "seed": "seed", "arrival_rate": "pos_float", "duration_scale": "pos_float",
                    "max_gpus": "cap?", "elastic_fraction": "fraction"}),
        EntryPoint("gandiva.Profiles", profiles, profiles_valid,
                   {"types": "names", "solo_throughput": "grid5", "utilization": "grid5", "memory": "grid5",
                    "factor": "grid9x5"}),
    ]


def _goodput_entries() -> list[EntryPoint]:
    import dataclasses

    from ... import goodput, zoo

    def load(**kw: Any) -> Any:
        m = zoo.load_model(**kw)
        return m.goodput("t4", nodes=np.array([1]), replicas=np.array([2]))

    def params(**kw: Any) -> Any:
        m = zoo.load_model("cifar10")
        m = dataclasses.replace(m, params={**m.params, "t4": goodput.ThroughputParams(**kw)})
        return m.goodput("t4", nodes=np.array([1, 2]), replicas=np.array([2, 8]))

    def params_valid() -> dict[str, Any]:
        p = zoo.load_model("cifar10").params["t4"]
        return {f.name: getattr(p, f.name) for f in dataclasses.fields(p)}

    return [
        EntryPoint("zoo.load_model", load, lambda: {"name": "cifar10"}, {"name": "known_name"}),
        EntryPoint("goodput.ThroughputParams", params, params_valid,
                   {k: "nonneg_float" for k in ("alpha_c", "beta_c", "alpha_n", "beta_n", "alpha_r", "beta_r")}
                   | {"gamma": "pos_float"}),
    ]


def _cli_entries() -> list[EntryPoint]:
    from ... import cli, instances, sia

    @functools.cache
    def tmp() -> Path:  # made on first use, removed at exit
        import atexit
        import shutil

        d = Path(tempfile.mkdtemp(prefix="schedopt-fuzz-"))
        atexit.register(shutil.rmtree, d, True)
        instances.save(sia.generate_instance(64, 0), d / "sia64.json")
        return d

    def run(*argv: str) -> str:
        import io

        out, err = io.StringIO(), io.StringIO()
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = cli.main(list(argv))
        except SystemExit as exc:  # argparse's usage error
            code = exc.code if isinstance(exc.code, int) else 2
        if code:
            raise CliExit(f"exit {code}: {err.getvalue().strip()[-200:]}")
        return out.getvalue()

    def options(kw: dict[str, Any]) -> list[str]:
        return [a for k, v in kw.items() for a in (f"--{k.replace('_', '-')}", str(v))]

    def generate(problem: Any = "sia", **kw: Any) -> Any:
        return run("generate", str(problem), *options(kw), "-o", str(tmp() / "out.json"))

    def solve(**kw: Any) -> Any:
        return run("solve", str(tmp() / "sia64.json"), *options(kw))

    def demo(**kw: Any) -> Any:
        return run("demo", *options(kw))

    return [
        EntryPoint("cli generate", generate, lambda: {"problem": "sia", "gpus": 64, "seed": 0},
                   {"problem": "known_name", "gpus": "count", "seed": "seed"}),
        EntryPoint("cli solve", solve, lambda: {"backend": "highs", "time_limit": 10},
                   {"backend": "backend", "time_limit": "time_limit"}),
        EntryPoint("cli demo", demo, lambda: {"gpus": 64, "seed": 0, "time_limit": 10},
                   {"gpus": "count", "seed": "seed", "backend": "backend", "time_limit": "time_limit"}),
    ]



def entry_points() -> list[EntryPoint]:
    """Every fuzzed entry point."""
    out: list[EntryPoint] = []
    from .sim import sim_entries

    for make in (_linear_model_entries, _solve_entries, _sia_entries, _synergy_entries, _heterps_entries,
                 _hived_entries, _gandiva_entries, _goodput_entries, _cli_entries, sim_entries):
        out += make()
    return out
