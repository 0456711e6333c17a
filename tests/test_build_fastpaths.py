"""The build's direct paths (issue 26) give the arrays of the general paths, bit for bit, and keep every check.

* ``LinearModel``: a clean canonical float64 / int32 CSR family is taken with one construction (or, handed over by a
  builder, without a copy); plain scalar bounds are checked as scalars; families are stacked by concatenation.
* The Sia builder: its model equals one built independently (dense matrices through the general path).
* ``generate_configs`` shares one immutable table between equal inputs.
* ``solution_violation`` computes the row magnitudes only when a raw violation exceeds the tolerance.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from schedopt.backends import get_backend
from schedopt.backends.base import Backend
from schedopt.errors import InputError
from schedopt.model import LinearModel, stack_csr
from schedopt.results import solution_violation
from schedopt.sia import Cluster, Config, GpuType, Job, SiaProblem, generate_configs
from schedopt.sia.build import objective_coefficients
from schedopt.sia.configs import _build_table
from schedopt.sia.strategies import problems


def same_arrays(a: LinearModel, b: LinearModel) -> None:
    """Every array of the two models identical: values bit for bit (``tobytes``, so -0.0 differs from 0.0),
    dtypes, shapes; and every name, label and position."""
    x, y = a.to_arrays(), b.to_arrays()
    for f in dataclasses.fields(x):
        u, v = getattr(x, f.name), getattr(y, f.name)
        if sp.issparse(u):
            assert type(u) is type(v) and u.shape == v.shape
            for k in ("data", "indices", "indptr"):
                p, q = getattr(u, k), getattr(v, k)
                assert p.dtype == q.dtype and p.tobytes() == q.tobytes(), f"A.{k}"
        elif isinstance(u, np.ndarray):
            assert u.dtype == v.dtype and u.shape == v.shape and u.tobytes() == v.tobytes(), f.name
        else:
            assert u == v, f.name
    assert [(k.name, k.shape, k.start, k.kind, k.labels) for k in a.blocks.values()] == \
        [(k.name, k.shape, k.start, k.kind, k.labels) for k in b.blocks.values()]
    assert list(a.families.values()) == list(b.families.values())
    assert a.dropped_coefficients == b.dropped_coefficients
    assert (a.num_rows, a.num_cols) == (b.num_rows, b.num_cols)


def _model(n: int = 6) -> LinearModel:
    m = LinearModel("t")
    m.add_variables("x", n, kind="binary")
    return m


# ---------------------------------------------------------------- constraint families


def _random_csr(rng: np.random.Generator, rows: int, cols: int, density: float = 0.4) -> sp.csr_matrix:
    D = rng.integers(-5, 6, size=(rows, cols)) * (rng.random((rows, cols)) < density) * rng.uniform(0.5, 2.0)
    return sp.csr_matrix(D)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), rows=st.integers(0, 6), cols=st.integers(0, 8), extra=st.integers(0, 3))
def test_a_clean_csr_family_is_the_general_paths_family(seed: int, rows: int, cols: int, extra: int) -> None:
    """The direct path (canonical float64 / int32 csr_matrix, possibly narrower than the model) against the
    general path, reached by the same matrix as a csr_array and with int64 indices."""
    rng = np.random.default_rng(seed)
    A = _random_csr(rng, rows, cols)
    assert A.indices.dtype == np.int32 and A.has_canonical_format
    lo = rng.uniform(-3, 0, rows)
    wide = A.copy()
    wide.indices, wide.indptr = A.indices.astype(np.int64), A.indptr.astype(np.int64)
    models = []
    for coeffs in (A, sp.csr_array(A), wide):
        m = _model(cols + extra)
        m.add_constraints("f", coeffs, lower=lo, upper=np.inf, labels=[f"r{i}" for i in range(rows)])
        models.append(m)
    same_arrays(models[0], models[1])
    same_arrays(models[0], models[2])
    assert np.shares_memory(models[0]._rows[0].data, A.data) is False  # a copy: the caller's matrix stays its own


def test_the_model_never_aliases_a_users_matrix() -> None:
    A = sp.csr_matrix(np.array([[1.0, 2.0, 0.0]]))
    m = _model(3)
    m.add_constraints("f", A, upper=3)
    A.data[:] = 99.0
    assert m.to_arrays().A.toarray().tolist() == [[1.0, 2.0, 0.0]]


def test_a_handed_over_matrix_is_kept_without_a_copy_and_a_dirty_one_is_cleaned_as_before() -> None:
    m = _model(3)
    A = sp.csr_matrix((np.array([1.0, 2.0]), np.array([0, 2], np.int32), np.array([0, 2], np.int32)), shape=(1, 3))
    m._add_constraints_owned("f", A, upper=3.0)
    assert m._rows[0] is A and m._owned is None
    # a narrower one is widened to the model's columns, as add_constraints stores every family
    N = sp.csr_matrix((np.array([5.0]), np.array([1], np.int32), np.array([0, 1], np.int32)), shape=(1, 2))
    m._add_constraints_owned("n", N, upper=5.0)
    assert m._rows[1].shape == (1, 3) and m._rows[1] is not N
    m = _model(3)
    m._add_constraints_owned("f", A, upper=3.0)
    # a tiny coefficient: not the direct path, so dropped (and counted) exactly as add_constraints does
    B = sp.csr_matrix((np.array([1e-15, 2.0]), np.array([0, 2], np.int32), np.array([0, 2], np.int32)), shape=(1, 3))
    m._add_constraints_owned("g", B, upper=3.0)
    ref = _model(3)
    ref.add_constraints("f", sp.csr_array(A), upper=3.0)
    ref.add_constraints("g", sp.csr_array(B), upper=3.0)
    same_arrays(m, ref)
    assert m.dropped_coefficients == 1 and m._rows[1] is not B


@pytest.mark.parametrize("bad, message", [(np.nan, "NaN or inf"), (np.inf, "NaN or inf"), (1e21, "magnitude")])
def test_bad_coefficients_in_a_canonical_csr_still_raise_naming_the_family(bad: float, message: str) -> None:
    A = sp.csr_matrix((np.array([1.0, bad]), np.array([0, 1], np.int32), np.array([0, 2], np.int32)), shape=(1, 3))
    assert A.has_canonical_format and A.dtype == np.float64
    for add in ("add_constraints", "_add_constraints_owned"):
        m = _model(3)
        with pytest.raises(InputError, match=message) as err:
            getattr(m, add)("cap", A, upper=1.0)
        assert err.value.field == "constraints[cap].coeffs"
        assert "cap" not in m.families


def test_a_non_canonical_csr_is_summed_and_sorted_as_before() -> None:
    # duplicates and unsorted columns in one row: the general path's sum_duplicates
    A = sp.csr_matrix((np.array([1.0, 2.0, 3.0]), np.array([2, 0, 2], np.int32), np.array([0, 3], np.int32)),
                      shape=(1, 3))
    assert not A.has_canonical_format
    m = _model(3)
    m.add_constraints("f", A, upper=9.0)
    out = m.to_arrays().A
    assert out.indices.tolist() == [0, 2] and out.data.tolist() == [2.0, 4.0]


def test_too_many_columns_and_a_wrong_row_count_still_raise() -> None:
    A = sp.csr_matrix(np.ones((2, 4)))
    m = _model(3)
    with pytest.raises(InputError, match="at most 3 columns") as err:
        m.add_constraints("f", A)
    assert err.value.field == "constraints[f].coeffs"
    with pytest.raises(InputError, match="row count differs from 1"):
        m._coeff_matrix("f", sp.csr_matrix(np.ones((2, 3))), 1)


# ---------------------------------------------------------------- bounds


_SCALARS = [0, 1, -1, 2, 0.5, 0.7, -0.0, 3.25, 1e19, -1e19, np.inf, -np.inf]


@pytest.mark.parametrize("kind", ["binary", "integer", "continuous"])
def test_scalar_variable_bounds_are_the_array_paths_bounds_bit_for_bit(kind: str) -> None:
    """Every pair of plain scalars: the same bounds as the same values given as arrays (including -0.0 from the
    integer rounding of a 0 lower bound), or the same InputError (field and message)."""
    for lo in _SCALARS:
        for up in _SCALARS:
            got: list[object] = []
            for lower, upper in ((lo, up), (np.full(4, float(lo)), np.full(4, float(up))),
                                 ([float(lo)] * 4, [float(up)] * 4)):
                m = LinearModel("t")
                try:
                    m.add_variables("x", 4, kind=kind, lower=lower, upper=upper)
                except InputError as exc:
                    got.append((exc.field, str(exc)))
                else:
                    got.append((m._col_lower[0].tobytes(), m._col_upper[0].tobytes(), m._col_lower[0].dtype))
            assert got[0] == got[1] == got[2], (kind, lo, up)


def test_a_binary_blocks_bounds_keep_their_signed_zero() -> None:
    m = LinearModel("t")
    m.add_variables("x", 3, kind="binary")
    assert np.signbit(m._col_lower[0]).all()  # ceil(0 - 1e-9) = -0.0, as the array path has always given
    assert m._col_upper[0].tolist() == [1.0, 1.0, 1.0]


@pytest.mark.parametrize("lo, up, field", [(np.inf, 1.0, "constraints[f].lower"), (0.0, -np.inf, "constraints[f].upper"),
                                           (2.0, 1.0, "constraints[f].lower"), (1e20, np.inf, "constraints[f].lower"),
                                           (np.nan, 1.0, "constraints[f].lower")])
def test_bad_scalar_row_bounds_still_raise_naming_the_field(lo: float, up: float, field: str) -> None:
    m = _model(2)
    with pytest.raises(InputError) as err:
        m.add_constraints("f", sp.csr_matrix(np.ones((2, 2))), lower=lo, upper=up)
    assert err.value.field == field
    # with no rows there is no entry to be wrong: accepted, as before
    m.add_constraints("g", sp.csr_matrix((0, 2)), lower=lo, upper=up)
    assert m.families["g"].size == 0


@settings(max_examples=40, deadline=None)
@given(lo=st.sampled_from(_SCALARS), up=st.sampled_from(_SCALARS), rows=st.integers(0, 4))
def test_scalar_row_bounds_are_the_array_paths_bounds(lo: float, up: float, rows: int) -> None:
    got: list[object] = []
    for lower, upper in ((lo, up), ([float(lo)] * rows, [float(up)] * rows)):
        m = _model(2)
        try:
            m.add_constraints("f", sp.csr_matrix(np.ones((rows, 2))), lower=lower, upper=upper)
        except InputError as exc:
            got.append((exc.field, str(exc)))
        else:
            a = m.to_arrays()
            got.append((a.row_lower.tobytes(), a.row_upper.tobytes()))
    assert got[0] == got[1]


# ---------------------------------------------------------------- stacking


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), shapes=st.lists(st.integers(0, 5), min_size=1, max_size=5),
       cols=st.integers(0, 7))
def test_stacking_is_vstack(seed: int, shapes: list[int], cols: int) -> None:
    rng = np.random.default_rng(seed)
    mats = [_random_csr(rng, r, cols) for r in shapes]
    want = sp.vstack(mats, format="csr")
    got = stack_csr(mats, cols)
    assert type(got) is type(want) and got.shape == want.shape
    for k in ("data", "indices", "indptr"):
        assert getattr(got, k).dtype == getattr(want, k).dtype
        assert getattr(got, k).tobytes() == getattr(want, k).tobytes()
    # int64 blocks go through vstack itself
    wide = [M.copy() for M in mats]
    for M in wide:
        M.indices, M.indptr = M.indices.astype(np.int64), M.indptr.astype(np.int64)
    assert (stack_csr(wide, cols) != sp.vstack(wide, format="csr")).nnz == 0


# ---------------------------------------------------------------- the Sia model


def reference_model(prob: SiaProblem) -> LinearModel:
    """The Sia model built independently of the builder's matrices: dense rows from the pair table, lists for
    every bound and coefficient (the general paths)."""
    form = prob.formulation()
    pt, cfg = prob.valid_pairs(), prob.configs
    P, J, T = len(pt), len(prob.jobs), len(prob.cluster.type_names)
    coef, const, sense = objective_coefficients(prob)
    m = LinearModel("sia", sense=sense)
    m.add_variables("x", P, kind="binary", lower=[0.0] * P, upper=[np.inf] * P,
                    labels=list(form.model.blocks["x"].labels[0]))
    one = (pt.job[None, :] == np.arange(J)[:, None]).astype(float)
    m.add_constraints("one_config_per_job", one.tolist() if J else np.zeros((0, P)), upper=[1.0] * J,
                      labels=list(pt.job_ids))
    tix = cfg.type_index[pt.config]
    cap = np.where(tix[None, :] == np.arange(T)[:, None], cfg.n_gpus[pt.config][None, :], 0).astype(float)
    m.add_constraints("gpu_capacity", cap.tolist(), upper=prob.available.tolist(), labels=prob.cluster.type_names)
    V, vu, vl = prob.virtual_rows()
    m.add_constraints("virtual_node_capacity", V.toarray() if V.shape[0] else np.zeros((0, P)),
                      upper=vu.tolist(), labels=vl)
    forced = np.flatnonzero(pt.forced)
    F = np.zeros((forced.size, P))
    F[np.arange(forced.size), forced] = 1.0
    m.add_constraints("forced_config", F if forced.size else np.zeros((0, P)), lower=[1.0] * forced.size,
                      labels=[pt.job_ids[i] for i in pt.job[forced].tolist()])
    m.set_objective({"x": coef.tolist()}, constant=const)
    return m


def _check_sia(prob: SiaProblem) -> None:
    built = prob.formulation().model
    same_arrays(built, reference_model(prob))
    fams = [built.family_rows(f)[0] for f in built.families]
    want = sp.vstack(fams, format="csr")
    got = built.to_arrays().A
    for k in ("data", "indices", "indptr"):
        assert getattr(got, k).dtype == getattr(want, k).dtype
        assert getattr(got, k).tobytes() == getattr(want, k).tobytes()


@settings(max_examples=40, deadline=None)
@given(prob=problems(max_jobs=6))
def test_the_sia_model_is_the_independently_built_model(prob: SiaProblem) -> None:
    _check_sia(prob)


def test_the_sia_model_with_forced_jobs_and_split_nodes_is_the_independently_built_model() -> None:
    cl = Cluster((GpuType("t4", 4, 3), GpuType("v6", 6, 2)))
    table = generate_configs(cl, 64)
    jobs = [Job("a", max_profiled_gpus=4, current=Config(1, 2, "t4"), preemptible=False, age_s=100.0),
            Job("b", max_profiled_gpus=8, current=Config(1, 4, "v6"), age_s=5000.0, restarts=2),
            Job("c", kind="rigid", rigid_gpus=2, age_s=10.0),
            Job("d", max_profiled_gpus=2)]
    G = np.random.default_rng(3).uniform(1.0, 9.0, size=(len(jobs), len(table)))
    prob = SiaProblem(cl, jobs, G, max_gpus_per_job=64)
    m = prob.formulation().model
    assert m.families["forced_config"].size == 1 and m.families["virtual_node_capacity"].size > 0
    _check_sia(prob)


# ---------------------------------------------------------------- configuration tables


def test_equal_inputs_share_one_table_equal_to_a_fresh_build() -> None:
    cl = Cluster((GpuType("t4", 4, 6), GpuType("a100", 8, 2)))
    same = Cluster((GpuType("t4", 4, 6), GpuType("a100", 8, 2)))
    a = generate_configs(cl, 64, rigid_counts=[3, 3, 5])
    assert generate_configs(same, 64, rigid_counts=(5, 3)) is a
    assert a == _build_table(cl, 64, {"t4": None, "a100": None}, [3, 5])
    assert generate_configs(cl, 8) is not a and len(generate_configs(cl, 8)) < len(a)
    assert generate_configs(cl, 64, max_nodes=1) is not a
    assert not a.labels.flags.writeable and not a.n_gpus.flags.writeable


@pytest.mark.parametrize("kw, field", [({"max_gpus_per_job": 0}, "max_gpus_per_job"),
                                       ({"max_nodes": {"t4": -1}}, "max_nodes[t4]"),
                                       ({"max_nodes": True}, "max_nodes")])
def test_bad_table_inputs_still_raise_after_a_table_is_kept(kw: dict[str, object], field: str) -> None:
    cl = Cluster((GpuType("t4", 4, 6),))
    generate_configs(cl)
    with pytest.raises(InputError) as err:
        generate_configs(cl, **kw)  # type: ignore[arg-type]
    assert err.value.field == field
    with pytest.raises(InputError, match="must be a Cluster"):
        generate_configs("sia-64")  # type: ignore[arg-type]


# ---------------------------------------------------------------- the solution check


def _violation_reference(arrays: object, x: np.ndarray, tol: float) -> str | None:
    """The row part of solution_violation as it was: the magnitudes always computed."""
    A = arrays.A  # type: ignore[attr-defined]
    act = A @ x
    mag = np.maximum(1.0, abs(A) @ np.abs(x))
    over = np.maximum(arrays.row_lower - act, act - arrays.row_upper) / mag  # type: ignore[attr-defined]
    i = int(np.argmax(over))
    if over[i] > tol:
        return (f"row {i} has activity {act[i]:.10g} outside [{arrays.row_lower[i]:.10g}, "  # type: ignore[attr-defined]
                f"{arrays.row_upper[i]:.10g}] (by {over[i] * mag[i]:.3g}, {over[i]:.3g} of its magnitude)")  # type: ignore[attr-defined]
    return None


@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), tol=st.sampled_from([0.0, 1e-6, 1e-3, 0.5, -1e-6, -1.0]))
def test_the_solution_check_gives_the_verdict_of_the_full_computation(seed: int, tol: float) -> None:
    rng = np.random.default_rng(seed)
    rows, cols = int(rng.integers(1, 5)), int(rng.integers(1, 6))
    m = LinearModel("t")
    m.add_variables("x", cols, lower=-10, upper=10)
    A = rng.integers(-3, 4, size=(rows, cols)).astype(float)
    x = rng.integers(-2, 3, size=cols).astype(float) + rng.choice([0.0, 1e-7, 1e-4, 0.3], size=cols)
    act = A @ x
    # negative: a violated row, by amounts spread over the tolerances' scales
    slack = np.where(rng.random(rows) < 0.6, -(10.0 ** rng.uniform(-8, 0.5, rows)), rng.choice([0.0, 1e-7, 1.0], rows))
    m.add_constraints("r", A, lower=act - 100.0, upper=act + slack)
    arr = m.to_arrays()
    want = _violation_reference(arr, x, tol)
    got = solution_violation(arr, x, tol)
    if want is not None:
        assert got == want
    else:  # no row violation: the same column checks follow, so the answer is the one with rows skipped
        assert got is None or not got.startswith("row ")


@pytest.mark.parametrize("by, tol, violated", [(1.5e-6, 1e-6, True), (0.9e-6, 1e-6, False), (1e-9, 0.0, True),
                                               (0.0, 0.0, False), (0.0, -1e-9, True)])
def test_a_row_just_past_the_tolerance_is_reported(by: float, tol: float, violated: bool) -> None:
    """One row of magnitude 1 (|A| @ |x| = 0.5 < 1): exceeded by ``by``, hand-checked against ``tol``."""
    m = LinearModel("t")
    m.add_variables("x", 1, lower=-1, upper=1)
    m.add_constraints("r", [[1.0]], upper=0.5 - by)
    got = solution_violation(m.to_arrays(), np.array([0.5]), tol)
    assert (got is not None and got.startswith("row 0 has activity 0.5 outside")) is violated, got


def test_a_stale_canonical_flag_on_a_users_matrix_is_not_trusted() -> None:
    """The caller asked scipy (which cached True), then reversed a row's indices in place: the model still sorts."""
    A = sp.csr_matrix((np.array([1.0, 2.0]), np.array([0, 2], np.int32), np.array([0, 2], np.int32)), shape=(1, 3))
    assert A.has_canonical_format
    A.indices[:] = [2, 0]
    m = _model(3)
    m.add_constraints("f", A, upper=9.0)
    out = m.to_arrays().A
    assert out.indices.tolist() == [0, 2] and out.data.tolist() == [2.0, 1.0]


# ---------------------------------------------------------------- backend options


class _ListsOnDemand(Backend):
    """A backend whose option list is costly to build: counts how often it is built."""

    name = "lists-on-demand"

    def __init__(self) -> None:
        self.built = 0

    def known_options(self) -> frozenset[str]:
        self.built += 1
        return frozenset({"presolve", "threads"})


def test_no_options_need_no_option_list_and_unknown_ones_still_raise() -> None:
    b = _ListsOnDemand()
    b.check_options({})
    assert b.built == 0
    b.check_options({"presolve": "on"})
    with pytest.raises(InputError, match="did you mean presolve") as err:
        b.check_options({"presolv": "on"})
    assert err.value.field == "options.presolv" and b.built == 2
    with pytest.raises(InputError) as err:
        get_backend("mckp").check_options({"no_such_option": 1})
    assert err.value.field == "options.no_such_option"
