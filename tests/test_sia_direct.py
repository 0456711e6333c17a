"""The Sia round straight to mckp (``schedopt.sia.direct``): the model's array form, the row classification and the
presolved structure built from the pair table are, field for field, what the built model, ``schedopt.mckp.detect``
and ``schedopt.mckp.analyze`` give; a solve by either route gives the same result (solution vector, objective,
bound, termination, the solver's figures); the model itself is built on demand and is then the model
``build_formulation`` builds."""

from __future__ import annotations

import copy
import dataclasses
import math
import pickle
from typing import Any

import numpy as np
import pytest

import schedopt
from schedopt.mckp.structure import MckpStructure, _row_label, analyze, detect
from schedopt.sia import (
    Cluster,
    Config,
    GpuType,
    Job,
    SiaBuildCache,
    SiaProblem,
    SiaSettings,
    SiaSolution,
    direct,
    generate_configs,
)
from schedopt.sia.build import build_formulation
from schedopt.sia.generate import generate_instance

#: clusters with power-of-two nodes, nodes of 6 and 12 GPUs (virtual-node rows), and one small node (GPU rows
#: that are at-most-one rows themselves, single-column GPU rows)
CLUSTERS = (
    Cluster((GpuType("t4", 4, 3), GpuType("a100", 8, 2), GpuType("v6", 6, 2))),
    Cluster((GpuType("k80", 12, 2), GpuType("p100", 2, 3))),
    Cluster((GpuType("a10", 8, 1),)),
    Cluster((GpuType("t4", 4, 2), GpuType("p100", 2, 2))),
)


def _round(rng: np.random.Generator, cluster: Cluster, settings: SiaSettings | None = None,
           cache: SiaBuildCache | None = None) -> SiaProblem:
    """A random round: new and running jobs (some non-preemptible), rigid jobs, goodput with zeros (configurations
    a job cannot run in), some GPUs taken."""
    cfg = generate_configs(cluster, 64)
    n = int(rng.integers(0, 9))
    jobs, free = [], cluster.total_gpus.copy()
    for k in range(n):
        prof = int(rng.choice([0, 1, 2, 4, 8, 16]))
        current = None
        if prof and rng.random() < 0.6:
            ok = np.flatnonzero((cfg.n_gpus <= max(2 * prof, 1)) & (cfg.n_gpus <= free[cfg.type_index]))
            if ok.size:
                current = cfg[int(rng.choice(ok))]
                free[cluster.type_index(current.gpu_type)] -= current.n_gpus
        common: dict[str, Any] = {"current": current, "age_s": float(rng.uniform(0, 3000)),
                                  "restarts": int(rng.integers(0, 3)), "restart_cost_s": 30.0,
                                  "preemptible": current is None or rng.random() < 0.8}
        if rng.random() < 0.15:
            g = int(rng.choice([1, 2, 4, 8]))
            if current is not None and current.n_gpus != g:
                common["current"], common["preemptible"] = None, True
            jobs.append(Job(id=f"r{k}", kind="rigid", rigid_gpus=g, **common))
        else:
            jobs.append(Job(id=k if rng.random() < 0.3 else f"j{k}", max_gpus=64, max_profiled_gpus=prof, **common))
    gp = rng.uniform(0.2, 12.0, size=(n, len(cfg)))
    gp[rng.random(gp.shape) < 0.3] = 0.0
    for i, j in enumerate(jobs):
        if j.current is not None:
            gp[i, cfg.index(j.current)] = 1.0
    taken = rng.integers(0, 2, size=len(cluster.type_names)) * rng.integers(0, 3, size=len(cluster.type_names))
    avail = np.maximum(cluster.total_gpus - taken, 0)
    return SiaProblem(cluster, jobs, gp, max_gpus_per_job=64, available=avail, settings=settings, build_cache=cache)


def _rounds(count: int, seed: int) -> list[SiaProblem]:
    """Random rounds on the four clusters, with the settings that change the model (change penalty, the
    published coefficient rounding), and generated 64- and 128-GPU rounds (normal and heavy load)."""
    rng = np.random.default_rng(seed)
    variants = (None, SiaSettings(change_penalty=0.25), SiaSettings(coef_decimals=2, coef_clip=3000.0))
    out = [_round(rng, CLUSTERS[k % 4], variants[(k // 4) % 3]) for k in range(count)]
    for k in range(max(count // 8, 1)):
        s = variants[k % 3]
        out.append(generate_instance(64 * (1 + k % 2), seed=seed + k, load=("normal", "heavy")[k % 2],
                                     settings=s).problem())
    return out


def _same_array(a: Any, b: Any, what: str) -> None:
    if isinstance(a, np.ndarray):
        assert isinstance(b, np.ndarray) and a.dtype == b.dtype and a.shape == b.shape, what
        assert np.array_equal(a, b), what
        if a.dtype.kind == "f":
            assert np.array_equal(np.signbit(a), np.signbit(b)), f"{what}: signed zeros"
    else:
        assert a == b, (what, a, b)


def _same_arrays(x: Any, y: Any) -> None:
    for f in dataclasses.fields(x):
        u, v = getattr(x, f.name), getattr(y, f.name)
        if f.name == "A":
            assert type(u) is type(v) and u.shape == v.shape and set(vars(u)) == set(vars(v))
            for k in ("data", "indices", "indptr"):
                _same_array(getattr(u, k), getattr(v, k), f"A.{k}")
        else:
            _same_array(u, v, f.name)


def _same_structure(st: MckpStructure, ref: MckpStructure) -> None:
    for f in dataclasses.fields(MckpStructure):
        if f.name not in ("stats", "aggregated"):
            _same_array(getattr(st, f.name), getattr(ref, f.name), f.name)
    strip = {"detect_seconds"}
    assert {k: v for k, v in st.stats.items() if k not in strip} == {k: v for k, v in ref.stats.items()
                                                                     if k not in strip}


def test_the_direct_route_is_the_model_route_field_by_field() -> None:
    """On random rounds (new, running, forced and rigid jobs; virtual-node rows; change penalty; rounded
    coefficients; some GPUs taken; no jobs): the arrays, the classification and the presolved structure."""
    direct_rounds = fallback = 0
    for prob in _rounds(72, seed=11):
        ref = build_formulation(copy.deepcopy(prob)).model
        form = direct.formulation(prob)
        m = form.model
        if not isinstance(m, direct.DirectModel):  # change_form="auxiliary" only: none here
            pytest.fail("the round took the model route")
        _same_arrays(m.to_arrays(), ref.to_arrays())
        assert (m.name, m.structure, m.sense, m.num_cols, m.num_rows) == (
            ref.name, ref.structure, ref.sense, ref.num_cols, ref.num_rows)
        rows = m.__dict__["_direct"][2]
        names = direct._Labels(prob, rows)
        assert [names.row(r) for r in range(ref.num_rows)] == [_row_label(ref, r) for r in range(ref.num_rows)]
        got = direct.classify(prob, rows, m.to_arrays())
        st = direct.structure(m)
        try:
            d, want = detect(ref), analyze(ref)
        except schedopt.errors.StructureError:
            assert st is None
            fallback += 1
            continue
        if got is None or st is None:
            fallback += 1
            continue
        direct_rounds += 1
        for f in dataclasses.fields(d):
            _same_array(getattr(got, f.name), getattr(d, f.name), f.name) if f.name not in ("lower", "upper") \
                else np.testing.assert_array_equal(getattr(got, f.name), getattr(d, f.name))
        _same_structure(st, want)
        assert not m.built
    assert direct_rounds > 50


def test_the_gpu_rows_fast_path_is_the_general_one() -> None:
    """Without virtual-node rows the structure is built in one pass (``_gpu_rows_structure``); it is, field for
    field, what the classification and ``presolve_arrays`` give (forced jobs, single-column and never-binding GPU
    rows, change penalty, rounded coefficients), and declines where they do."""
    from schedopt.mckp.structure import presolve_arrays

    both = 0
    for prob in _rounds(96, seed=23):
        m = direct.formulation(prob).model
        assert isinstance(m, direct.DirectModel)
        rows = m.__dict__["_direct"][2]
        if rows.virtual.shape[0]:
            continue
        fast = direct._gpu_rows_structure(prob, rows, m.to_arrays())
        d = direct.classify(prob, rows, m.to_arrays())
        general = None if d is None else presolve_arrays(m.to_arrays(), d, direct._Labels(prob, rows).row)
        if general is not None and general.infeasible is not None:
            general = None
        assert (fast is None) == (general is None)
        if fast is not None and general is not None:
            both += 1
            _same_structure(fast, general)
    assert both > 40


def _same_result(a: schedopt.SolveResult, b: schedopt.SolveResult) -> None:
    assert (a.termination, a.backend, a.has_solution) == (b.termination, b.backend, b.has_solution)
    if a.has_solution:
        assert np.array_equal(a.x, b.x) and a.objective == b.objective
    assert a.bound == b.bound or (math.isnan(a.bound) and math.isnan(b.bound))
    timing = {"phase_seconds", "detect_seconds", "kick_budget_seconds", "race_started", "race_status"}
    assert {k: v for k, v in a.stats.items() if k not in timing} == {k: v for k, v in b.stats.items()
                                                                     if k not in timing}


@pytest.mark.parametrize("params", [{"mip_rel_gap": 1e-4}, {"mip_rel_gap": 1e-9, "time_limit": 30.0},
                                    {"time_limit": 1e-9}])
def test_a_solve_by_the_direct_route_is_a_solve_of_the_built_model(params: dict[str, Any]) -> None:
    """The same solution vector, objective, bound, termination and figures (the default backend, mckp, on the
    directly built structure; and on the model ``build_formulation`` builds), also when the time is up at once."""
    for prob in _rounds(24, seed=5):
        q = copy.deepcopy(prob)
        fref = build_formulation(q)
        ref = schedopt.solve(fref, **params)
        sol = prob.solve(**params)
        assert sol.backend == "mckp"
        assert sol.result is not None
        _same_result(sol.result, ref)
        if sol.has_solution:
            assert sol.allocation == SiaSolution.decode(q, fref, ref).allocation
        assert isinstance(sol.model, direct.DirectModel) and not sol.model.built


def test_other_backends_and_the_model_on_demand() -> None:
    """HiGHS solves the direct formulation as the built one; the model is built when asked (blocks, labels, an
    export), is then the model build_formulation builds, keeps the arrays it gave, and pickles as a LinearModel."""
    prob = generate_instance(64, seed=3).problem()
    ref = build_formulation(copy.deepcopy(prob)).model
    sol = prob.solve("highs")
    _same_result(sol.result, schedopt.solve(ref, "highs"))  # type: ignore[arg-type]
    m = sol.model
    assert isinstance(m, direct.DirectModel)
    arrays = m.to_arrays()
    assert m.column_names() == ref.column_names() and m.row_names() == ref.row_names()
    assert m.built and m.to_arrays() is arrays
    assert list(m.families) == list(ref.families) and list(m.blocks) == list(ref.blocks)
    assert schedopt.export.to_highs(m, names=True).getLp().col_names_ == \
        schedopt.export.to_highs(ref, names=True).getLp().col_names_
    back = pickle.loads(pickle.dumps(m))
    assert type(back) is schedopt.LinearModel and back.column_names() == ref.column_names()
    _same_arrays(back.to_arrays(), ref.to_arrays())
    # a change builds the model first, then applies to it
    other = direct.formulation(generate_instance(64, seed=4).problem()).model
    assert isinstance(other, direct.DirectModel) and not other.built
    other.meta["note"] = 1  # (a read of an attribute the unbuilt model lacks builds it)
    assert other.built and other.meta == {"note": 1}
    third = direct.formulation(generate_instance(64, seed=5).problem()).model
    third.build_seconds = 1.0
    assert isinstance(third, direct.DirectModel) and third.built and third.num_cols == len(third.column_names())


def test_the_auxiliary_change_form_and_special_gpu_rows_take_the_model_route() -> None:
    """``change_form="auxiliary"`` (a general model) is built as before; a round whose single-column GPU row fixes
    its column, and one whose GPU row is itself an at-most-one row, are left to detect, with the same answers."""
    inst = generate_instance(64, seed=1, settings=SiaSettings(change_penalty=0.5, change_form="auxiliary"))
    m = inst.problem().formulation().model
    assert not isinstance(m, direct.DirectModel) and "t" in m.blocks
    cl = CLUSTERS[2]
    cfg = generate_configs(cl, 64)
    jobs = [Job(id="a", kind="rigid", rigid_gpus=8), Job(id="b", max_gpus=8, max_profiled_gpus=4)]
    gp = np.zeros((2, len(cfg)))
    gp[0, cfg.index(Config(1, 8, "a10"))] = 2.0  # b runs nowhere: a's is the GPU row's one column, and 8 > 4
    prob = SiaProblem(cl, jobs, gp, max_gpus_per_job=64, available={"a10": 4})
    f = prob.formulation()
    assert isinstance(f.model, direct.DirectModel) and not f.model.built
    assert direct.structure(f.model) is None and not direct.prepare(f.model)
    sol = prob.solve()
    ref = schedopt.solve(build_formulation(SiaProblem(cl, jobs, gp, max_gpus_per_job=64, available={"a10": 4})))
    _same_result(sol.result, ref)  # type: ignore[arg-type]
    assert sol.allocation == {"a": None, "b": None}
    # two rigid 8-GPU jobs on one 8-GPU node: the GPU row [8, 8] <= 8 is an at-most-one row (detect makes it a group)
    jobs = [Job(id="a", kind="rigid", rigid_gpus=8), Job(id="b", kind="rigid", rigid_gpus=8)]
    gp = np.zeros((2, len(cfg)))
    gp[:, cfg.index(Config(1, 8, "a10"))] = (2.0, 3.0)
    prob = SiaProblem(cl, jobs, gp, max_gpus_per_job=64)
    f = prob.formulation()
    assert isinstance(f.model, direct.DirectModel)
    assert direct.classify(prob, f.model.__dict__["_direct"][2], f.model.to_arrays()) is None
    sol = prob.solve()
    ref = schedopt.solve(build_formulation(SiaProblem(cl, jobs, gp, max_gpus_per_job=64)))
    _same_result(sol.result, ref)  # type: ignore[arg-type]
    assert analyze(f.model).gub_rows.tolist() == [2]  # the GPU row (after the two jobs' rows) is the group
    assert list(sol.allocation.values()).count(Config(1, 8, "a10")) == 1


def test_the_race_backend_solves_the_direct_model() -> None:
    """The mckp backend's race (HiGHS on the whole model, in its thread) takes the direct model as it is: HiGHS
    reads its array form; the answer is the built model's."""
    prob = generate_instance(128, seed=0, load="heavy").problem()
    kw: dict[str, Any] = {"mip_rel_gap": 1e-9, "race_delay": 0.0, "search_nodes": 0, "residual_table": False}
    ref = schedopt.solve(build_formulation(copy.deepcopy(prob)), **kw)
    sol = prob.solve(**kw)
    assert sol.result is not None and sol.result.stats["race_started"]
    # (which side proves it first is the machine's business: the proven optimum is the same within the gap)
    assert sol.termination.reason is ref.termination.reason is schedopt.TerminationReason.OPTIMAL
    assert math.isclose(sol.result.objective, ref.objective, rel_tol=1e-8)


# -- the default route without a matrix (issue 42, the everyday run) --------------------------------------------------


def test_the_default_route_makes_no_matrix_and_answers_as_the_matrix() -> None:
    """Where the structure comes from the pair table (``direct.structure``), a default solve (mckp) reads no
    constraint matrix: the array form's ``A`` is never made, yet the answer is the built model's (the existing
    comparisons above). The families' arrays give, float for float, what the matrix gives: the stacked CSR arrays,
    ``A @ x`` and ``abs(A) @ |x|`` for points with negative, fractional and signed-zero entries, and the same
    violation report (:func:`schedopt.results.solution_violation`) as the built model's arrays."""
    from schedopt.results import solution_violation

    rng = np.random.default_rng(8)
    unmade = 0
    for prob in _rounds(40, seed=31):
        form = direct.formulation(prob)
        m = form.model
        assert isinstance(m, direct.DirectModel)
        arr = m.to_arrays()
        assert isinstance(arr, direct.DirectArrays) and "A" not in vars(arr)
        ready = direct.structure(m) is not None
        sol = prob.solve()
        if ready:
            assert "A" not in vars(sol.model.to_arrays()) and not sol.model.built  # type: ignore[union-attr]
            unmade += 1
        ref = build_formulation(copy.deepcopy(prob)).model.to_arrays()
        assert arr.num_rows == ref.num_rows
        data, indices, indptr = arr.csr_arrays()
        for got, want in ((data, ref.A.data), (indices, ref.A.indices), (indptr, ref.A.indptr)):
            _same_array(got, want, "csr_arrays")
        # the matrix, once read, is the model's (and stays the one handed out)
        _same_arrays(arr, ref)
        assert arr.A is arr.A and "A" in vars(arr)
        P = arr.num_cols
        for _ in range(3):
            x = rng.choice([0.0, 1.0, -0.0, 0.5, -1.0, 1.0 + 1e-7, 3.0], size=P)
            _same_array(arr.row_activity(x), ref.A @ x, "A @ x")
            _same_array(arr.row_magnitude(np.abs(x)), abs(ref.A) @ np.abs(x), "|A| @ |x|")
            assert solution_violation(arr, x) == solution_violation(ref, x)
        if P:  # every column on: a violation (or none) named the same way
            assert solution_violation(arr, np.ones(P)) == solution_violation(ref, np.ones(P))
    assert unmade > 25


def test_the_array_form_copies_and_pickles_as_plain_arrays() -> None:
    """A copy, a pickle and a ``dataclasses.replace`` of the lazy array form are the model's arrays (a copy and a
    pickle a plain :class:`~schedopt.model.ModelArrays`, its matrix made)."""
    prob = generate_instance(64, seed=2).problem()
    arr = direct.formulation(prob).model.to_arrays()
    ref = build_formulation(copy.deepcopy(prob)).model.to_arrays()
    for other in (copy.copy(arr), copy.deepcopy(arr), pickle.loads(pickle.dumps(arr))):
        assert type(other) is schedopt.model.ModelArrays
        _same_arrays(other, ref)
    changed = dataclasses.replace(arr, constant=arr.constant + 1.0)
    assert changed.constant == ref.constant + 1.0 and changed.num_rows == ref.num_rows
    _same_arrays(dataclasses.replace(changed, constant=ref.constant), ref)


def test_the_virtual_rows_are_scipys_construction() -> None:
    """``virtual_rows``' matrix (from :func:`~schedopt.sia.build.virtual_parts`' arrays, without scipy's
    construction) is, array for array and dtype for dtype, ``scipy.sparse.csr_matrix((data, (rows, cols)))`` of
    the same entries, canonical, on clusters whose nodes split into virtual nodes (6 and 12 GPUs) and whose don't."""
    import scipy.sparse as sp

    from schedopt.sia.build import virtual_parts

    seen = 0
    for prob in _rounds(16, seed=41):
        A, up, labels = prob.virtual_rows()
        data, indices, indptr, up2, labels2 = virtual_parts(prob)
        rows = np.repeat(np.arange(up2.size), np.diff(indptr))
        ref = sp.csr_matrix((data, (rows, indices.astype(np.int64))), shape=(up2.size, len(prob.valid_pairs())))
        assert A.shape == ref.shape and labels == labels2 and np.array_equal(up, up2)
        for k in ("data", "indices", "indptr"):
            _same_array(getattr(A, k), getattr(ref, k), k)
        A.check_format(full_check=True)
        assert A.has_canonical_format
        seen += A.shape[0] > 0
    assert seen >= 4


def test_an_everyday_simulation_imports_no_scipy_sparse() -> None:
    """In a fresh process, ``import schedopt.sim`` and a short Sia simulation on sia-64 (four saturn/1 jobs, the
    cluster's measured job model, the default backend mckp) import no ``scipy.sparse`` (about 0.1-0.2 s of CPU),
    and the decisions are made (every job finishes); a model built afterwards imports it as usual."""
    import subprocess
    import sys
    from pathlib import Path

    code = "\n".join((
        "import sys",
        "import schedopt.sim",
        "print('after import', 'scipy.sparse' in sys.modules)",
        "from schedopt.sim import Workload, cluster_preset, load_workload, simulate",
        "from schedopt.sim.policies.sia import SiaPolicy",
        "w = Workload('w', load_workload('saturn/1').jobs[:4])",
        "r = simulate(cluster_preset('sia-64'), w, SiaPolicy(), job_model='sia-measured')",
        "print('finished', sum(j.finish is not None for j in r.jobs), 'of', len(r.jobs))",
        "print('after simulate', 'scipy.sparse' in sys.modules)",
        "from schedopt.sia.generate import generate_instance",
        "m = generate_instance(64, seed=0).problem().build()",
        "print('after build', 'scipy.sparse' in sys.modules, m.to_arrays().A.format)",
    ))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True,
                         cwd=Path(__file__).resolve().parents[1]).stdout
    assert "after import False" in out
    assert "finished 4 of 4" in out
    assert "after simulate False" in out
    assert "after build True csr" in out
