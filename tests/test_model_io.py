"""Models that travel: MPS / LP files read back with their names, linopy there and back, equal optima."""

from __future__ import annotations

import numpy as np
import pytest

import schedopt
from schedopt import TerminationReason
from schedopt.errors import InputError


def assignment() -> schedopt.LinearModel:
    """3 jobs x 3 machines, cost [[4,1,3],[2,0,5],[3,2,2]] + 10: of the 6 permutations (j0->m1, j1->m0, j2->m2)
    costs 1 + 2 + 2 = 5, the unique minimum; with the constant 15."""
    m = schedopt.LinearModel("assignment")
    m.add_variables("x", (3, 3), kind="binary", labels=(["j0", "j1", "j2"], ["m0", "m1", "m2"]))
    m.add_constraints("one_machine_per_job", {"x": np.kron(np.eye(3), np.ones((1, 3)))}, lower=1, upper=1,
                      labels=["j0", "j1", "j2"])
    m.add_constraints("one_job_per_machine", {"x": np.kron(np.ones((1, 3)), np.eye(3))}, lower=1, upper=1,
                      labels=["m0", "m1", "m2"])
    m.set_objective({"x": [[4, 1, 3], [2, 0, 5], [3, 2, 2]]}, constant=10.0)
    return m


def mixed() -> schedopt.LinearModel:
    """max 5x + 4y + z, 6x + 4y + z <= 24, 1 <= x + 2y <= 6, x, y integer, z in [0, 1.5] continuous. Without z the
    integer optimum is x = 4, y = 0 (20, the rows 24 and 4); z then has no room in row 1. x = 3, y = 1 leaves
    24 - 22 = 2 >= 1.5: 15 + 4 + 1.5 = 20.5; x = 3, y = 0: 18 + 6 >= 1.5 -> 15 + 1.5 = 16.5. Optimum 20.5."""
    m = schedopt.LinearModel("mixed", sense="maximize")
    m.add_variables("n", 2, kind="integer", labels=["x", "y"])
    m.add_variables("z", 1, upper=1.5)
    m.add_constraints("cap", {"n": [[6, 4], [1, 2]], "z": [[1], [0]]}, lower=[-np.inf, 1], upper=[24, 6],
                      labels=["wood", "labour"])
    m.set_objective({"n": [5, 4], "z": [1]})
    return m


@pytest.mark.parametrize("suffix", [".mps", ".lp"])
@pytest.mark.parametrize(("make", "optimum"), [(assignment, 15.0), (mixed, 20.5)])
def test_read_back_keeps_names_and_optimum(tmp_path, suffix, make, optimum):
    m = make()
    path = tmp_path / f"m{suffix}"
    (m.write_mps if suffix == ".mps" else m.write_lp)(str(path))
    r = (schedopt.LinearModel.read_mps if suffix == ".mps" else schedopt.LinearModel.read_lp)(str(path))
    assert r.column_names() == m.column_names()
    assert r.row_names() == m.row_names()
    assert list(r.blocks) == list(m.blocks) and list(r.families) == list(m.families)
    assert r.blocks[next(iter(m.blocks))].shape == m.blocks[next(iter(m.blocks))].shape
    assert r.sense == m.sense
    a, b = schedopt.solve(m, "highs"), schedopt.solve(r, "highs")
    assert a.objective == pytest.approx(optimum) and b.objective == pytest.approx(optimum)
    np.testing.assert_allclose(b.x, a.x)


def test_read_rejects_a_missing_file(tmp_path):
    with pytest.raises(InputError, match="path"):
        schedopt.LinearModel.read_mps(str(tmp_path / "nope.mps"))


def test_foreign_names_become_one_labelled_block(tmp_path):
    p = tmp_path / "f.lp"
    p.write_text("Maximize\n obj: 3 a + 2 b\nSubject To\n c1: a + b <= 4\n c2: a + 3 b <= 6\nBounds\n a <= 3\nEnd\n")
    m = schedopt.LinearModel.read_lp(str(p))
    assert list(m.blocks) == ["x"] and m.blocks["x"].labels == (("a", "b"),)
    assert list(m.families) == ["rows"] and m.families["rows"].labels == ("c1", "c2")
    # a = 3, b = 1: 9 + 2 = 11 (the rows allow b <= 1 at a = 3; at a = 2, b <= 4/3: 6 + 8/3 < 11)
    assert schedopt.solve(m, "highs").objective == pytest.approx(11.0)


linopy = pytest.importorskip("linopy", reason="linopy is an optional extra (pip install -e '.[linopy]')")


@pytest.mark.parametrize(("make", "optimum"), [(assignment, 15.0), (mixed, 20.5)])
def test_linopy_round_trip_equal_optima(make, optimum):
    m = make()
    lm = m.to_linopy()
    assert set(lm.variables) >= set(m.blocks)
    status, cond = lm.solve(solver_name="highs", output_flag=False)
    assert status == "ok" and cond == "optimal"
    # linopy's objective has no constant: it rides on a fixed variable, so the values agree
    assert float(lm.objective.value) == pytest.approx(optimum)
    back = schedopt.LinearModel.from_linopy(lm, name=m.name)
    assert list(back.blocks) == list(m.blocks)
    assert back.column_names() == m.column_names()
    res = schedopt.solve(back, "highs")
    assert res.termination.reason is TerminationReason.OPTIMAL and res.objective == pytest.approx(optimum)
    assert back.constant == m.constant


def test_linopy_labels_are_coordinates():
    lm = assignment().to_linopy()
    assert list(lm.variables["x"].indexes["x_0"]) == ["j0", "j1", "j2"]
    assert list(lm.constraints["one_machine_per_job"].indexes["one_machine_per_job_row"]) == ["j0", "j1", "j2"]


# ------------------------------------------------------------------ instance loaders (issue 20)
SIA_FILE = "instances/sia/" + sorted(__import__("os").listdir("instances/sia"))[0]


@pytest.mark.parametrize(("content", "message"), [
    (None, "is a directory"),
    (b"", "is empty"),
    (b"  \n", "is empty"),
    ('{"schema": "caf\u00e9"}'.encode("latin-1"), r"is not UTF-8 text \(byte 15"),
    (bytes(range(256)), "is not UTF-8"),
    (b'{"schema": "schedopt.instance", "vers', "is not valid JSON"),
])
def test_instances_load_names_the_path_of_a_bad_file(tmp_path, content, message):
    from schedopt import instances

    path = tmp_path if content is None else tmp_path / "bad.json"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(InputError, match=message) as info:
        instances.load(path)
    assert str(path) in (info.value.field, info.value.value)


def test_instances_json_duplicate_keys_are_refused_naming_the_key(tmp_path):
    import json

    from schedopt import instances

    text = open(SIA_FILE).read()
    doc = json.loads(text)
    first_job_key = next(iter(doc["data"]))
    dup = text.replace(f'"{first_job_key}":', f'"{first_job_key}": null, "{first_job_key}":', 1)
    (tmp_path / "dup.json").write_text(dup)
    with pytest.raises(InputError, match="repeats this key") as info:
        instances.load(tmp_path / "dup.json")
    assert info.value.value == first_job_key
    assert instances.loads(text) is not None  # the untouched file loads


def test_instances_envelope_refuses_unknown_keys():
    import json

    from schedopt import instances

    doc = json.loads(open(SIA_FILE).read())
    doc["generater"] = None
    with pytest.raises(InputError, match="not a key of the instance envelope") as info:
        instances.from_document(doc)
    assert info.value.field == "generater"
