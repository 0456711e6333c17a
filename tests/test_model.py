"""LinearModel building, validation and array assembly."""

import numpy as np
import pytest
import scipy.sparse as sp

import schedopt
from schedopt.errors import InputError


def knapsack() -> schedopt.LinearModel:
    m = schedopt.LinearModel("knapsack", sense="maximize")
    m.add_variables("x", 3, kind="binary", labels=["a", "b", "c"])
    m.add_constraints("weight", {"x": [[2, 3, 4]]}, upper=5, labels=["w"])
    m.set_objective({"x": [3, 4, 5]})
    return m


def test_blocks_and_families_assemble():
    m = schedopt.LinearModel("t")
    x = m.add_variables("x", (2, 3), upper=4, kind="integer", labels=(["j0", "j1"], ["c0", "c1", "c2"]))
    y = m.add_variables("y", 2, lower=-1, upper=1)
    assert x.indices.tolist() == [[0, 1, 2], [3, 4, 5]]
    assert y.start == 6 and y.stop == 8
    m.add_constraints("rowsum", {"x": sp.kron(sp.eye(2), np.ones((1, 3)))}, upper=[2, 3], labels=["j0", "j1"])
    m.add_constraints("link", {"x": np.ones((1, 6)), "y": [[1, -1]]}, lower=0)
    m.set_objective({"x": np.arange(6).reshape(2, 3), "y": [1, 1]}, constant=2.5)
    arr = m.to_arrays()
    assert arr.A.shape == (3, 8)
    assert arr.A.toarray()[2].tolist() == [1, 1, 1, 1, 1, 1, 1, -1]
    assert arr.integrality.tolist() == [1] * 6 + [0, 0]
    assert arr.c.tolist() == [0, 1, 2, 3, 4, 5, 1, 1]
    assert m.column_names()[4] == "x(j1,c1)"
    assert m.row_names() == ["rowsum(j0)", "rowsum(j1)", "link(0)"]
    assert m.evaluate(np.ones(8)) == pytest.approx(15 + 2 + 2.5)


def test_violations_checker():
    m = knapsack()
    assert m.violations(np.array([1, 1, 0])) == {}
    v = m.violations(np.array([1, 1, 1]))
    assert v == {"weight": pytest.approx(4.0)}
    assert "integrality" in m.violations(np.array([0.5, 0, 0]))


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda m: m.add_variables("x", 2, lower=[0, np.nan]), "variables[x].lower"),
        (lambda m: m.add_variables("x", 2, lower=3, upper=1), "variables[x].lower"),
        (lambda m: m.add_variables("x", 2, lower=[0, 0, 0]), "variables[x].lower"),
        (lambda m: m.add_variables("1x", 2), "variables.name"),
        (lambda m: m.add_variables("x", 2, kind="boolean"), "variables[x].kind"),
        (lambda m: m.add_variables("x", 2, kind="integer", lower=0.2, upper=0.8), "variables[x] (integer).lower"),
    ],
)
def test_variable_errors_name_the_field(call, field):
    m = schedopt.LinearModel()
    with pytest.raises(InputError) as ei:
        call(m)
    assert ei.value.field == field
    assert field in str(ei.value)


def test_constraint_errors_name_the_field():
    m = schedopt.LinearModel()
    m.add_variables("x", 2)
    with pytest.raises(InputError, match=r"constraints\[c\].coeffs\[x\]"):
        m.add_constraints("c", {"x": np.ones((1, 3))}, upper=1)
    with pytest.raises(InputError, match=r"constraints\[c\].coeffs.*names no variable block"):
        m.add_constraints("c", {"y": np.ones((1, 2))}, upper=1)
    with pytest.raises(InputError, match=r"constraints\[c\].lower"):
        m.add_constraints("c", np.ones((1, 2)), lower=2, upper=1)
    with pytest.raises(InputError, match=r"constraints\[c\].upper"):
        m.add_constraints("c", np.ones((2, 2)), upper=[1, np.nan])
    with pytest.raises(InputError, match=r"constraints\[c\].coeffs"):
        m.add_constraints("c", np.array([[1.0, np.nan]]), upper=1)
    m.add_constraints("c", np.ones((1, 2)), upper=1)
    with pytest.raises(InputError, match="already used"):
        m.add_constraints("c", np.ones((1, 2)), upper=1)
    with pytest.raises(InputError, match="sense"):
        schedopt.LinearModel(sense="max")


def test_from_arrays_shape_errors():
    with pytest.raises(InputError, match="A"):
        schedopt.LinearModel.from_arrays(c=[1, 2], A=[[1, 2, 3]], row_upper=[1])
    with pytest.raises(InputError, match="integrality"):
        schedopt.LinearModel.from_arrays(c=[1, 2], integrality=[0, 2])
    with pytest.raises(InputError, match="col.lower"):
        schedopt.LinearModel.from_arrays(c=[1, 2], col_lower=[3, 0], col_upper=[1, 1])


def test_without_families_and_relax():
    m = knapsack()
    m.add_constraints("extra", {"x": [[1, 1, 1]]}, upper=1)
    assert list(m.without_families(["weight"]).families) == ["extra"]
    assert m.without_families(["weight"]).families["extra"].start == 0
    assert not m.relax().to_arrays().is_mip
    assert m.to_arrays().is_mip


def test_import_schedopt_imports_no_solver():
    import subprocess
    import sys

    code = (
        "import sys, schedopt; m = schedopt.LinearModel(); m.add_variables('x', 2);"
        "schedopt.available_backends();"
        "bad = [k for k in sys.modules if k.split('.')[0] in ('highspy', 'ortools', 'pyomo', 'swiglpk', 'cvxpy')];"
        "print(bad); sys.exit(1 if bad else 0)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


# ------------------------------------------------------------------ issue 20: what some backend cannot take
@pytest.mark.parametrize(("kwargs", "field", "message"), [
    ({"row_lower": [np.inf]}, "constraints[rows].lower", "can never hold"),
    ({"row_upper": [-np.inf]}, "constraints[rows].upper", "can never hold"),
    ({"col_lower": np.inf, "col_upper": np.inf}, "col.lower", "can never hold"),
    ({"row_lower": [5.0], "row_upper": [4.0]}, "constraints[rows].lower", "greater than"),
    ({"A": None, "row_upper": [7.0]}, None, None),  # no rows: fine
    ({"A": [[None, 1, 1]]}, "A", "must be numeric"),
    ({"A": "abc"}, "A", "must be numeric"),
    ({"A": 5}, "A", "2-D"),
    ({"A": []}, "A", "2-D"),
    ({"A": [[1], [2, 3]]}, "A", "numeric array"),
    ({"A": [[1e20, 1, 1]]}, "constraints[rows].coeffs", "magnitude"),
    ({"c": ["1", "2", "3"]}, "c", "must be numeric"),
    ({"c": [1.0, 2.0]}, "A", "needs 2 columns"),
    ({"integrality": [1, 2]}, "integrality", "per column"),
    ({"constant": None}, "objective.constant", "finite real"),
    ({"name": []}, "name", "must be a string"),
])
def test_from_arrays_refuses_what_some_backend_cannot_take(kwargs, field, message):
    kw = {"c": [3.0, 4.0, 5.0], "A": [[2.0, 3.0, 4.0]], "row_upper": [7.0], "col_upper": 1.0, "integrality": 1,
          "sense": "maximize", **kwargs}
    if field is None:
        assert schedopt.LinearModel.from_arrays(**kw).num_rows == 0
        return
    with pytest.raises(InputError, match=message) as info:
        schedopt.LinearModel.from_arrays(**kw)
    assert info.value.field == field


def test_tiny_coefficients_are_dropped_and_counted():
    m = schedopt.LinearModel("m")
    m.add_variables("x", 3, upper=1)
    m.add_constraints("c", {"x": [[1e-14, 1.0, 1e-13]]}, upper=1)  # 1e-13 itself is kept
    m.set_objective({"x": [1e-200, 1.0, 0.0]})
    arr = m.to_arrays()
    assert arr.A.toarray().tolist() == [[0.0, 1.0, 1e-13]] and arr.c.tolist() == [0.0, 1.0, 0.0]
    assert m.dropped_coefficients == 2


@pytest.mark.parametrize(("shape", "message"), [(None, "non-negative integer"), ("abc", "non-negative integer"),
                                                 (float("nan"), "non-negative integer"), (1.5, "non-negative integer"),
                                                 (-1, "non-negative"), (10**18, "more than"), ((2**40, 2**40), "more than")])
def test_add_variables_refuses_bad_shapes(shape, message):
    with pytest.raises(InputError, match=message) as info:
        schedopt.LinearModel("m").add_variables("x", shape)
    assert info.value.field == "variables[x].shape"


def test_add_variables_refuses_string_and_repeated_labels():
    m = schedopt.LinearModel("m")
    with pytest.raises(InputError, match="not a string"):
        m.add_variables("x", 3, labels="abc")
    with pytest.raises(InputError, match="labels repeat") as info:
        m.add_variables("x", 3, labels=["a", "a", "b"])
    assert info.value.value == "a"
    with pytest.raises(InputError, match="labels repeat"):
        m.add_variables("y", (2, 2), labels=[["a", "b"], ["c", "c"]])
    assert m.add_variables("x", 3, labels=["a", "b", "c"]).labels == (("a", "b", "c"),)


# ------------------------------------------------------------------ issue 25: the solver side's last fuzz cases
@pytest.mark.parametrize("labels", [5, 2.5, True, "ab", b"ab", {"a": 1, "b": 2}, object()])
def test_regression_add_constraints_scalar_labels_raised_typeerror(labels) -> None:
    """A scalar (or a string, a mapping) as ``labels`` raised a raw TypeError inside; now an InputError naming it."""
    m = schedopt.LinearModel("m")
    m.add_variables("x", 2)
    with pytest.raises(InputError, match="sequence of labels") as err:
        m.add_constraints("c", {"x": [[1.0, 1.0], [1.0, -1.0]]}, upper=1.0, labels=labels)
    assert err.value.field == "constraints[c].labels"
    assert "c" not in m.families and m.num_rows == 0  # nothing half-added
    fam = m.add_constraints("c", {"x": [[1.0, 1.0], [1.0, -1.0]]}, upper=1.0, labels=np.array(["a", "b"]))
    assert fam.label_of(1) == "c[b]"


def test_regression_constraint_family_named_like_a_variable_block_failed_on_export() -> None:
    """A family named like a block was accepted, then pyomo refused the model on export: names are unique across
    blocks and families, checked when added (either order)."""
    m = schedopt.LinearModel("m")
    m.add_variables("x", 2)
    with pytest.raises(InputError, match="variable block") as err:
        m.add_constraints("x", {"x": [[1.0, 1.0]]}, upper=1.0)
    assert (err.value.field, err.value.value) == ("constraints.name", "x")
    m.add_constraints("cap", {"x": [[1.0, 1.0]]}, upper=1.0)
    with pytest.raises(InputError, match="constraint family") as err:
        m.add_variables("cap", 1)
    assert (err.value.field, err.value.value) == ("variables.name", "cap")
    pm = m.to_pyomo()  # the export that used to fail
    assert {c.name for c in pm.component_objects()} >= {"x", "cap"}
