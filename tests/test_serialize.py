"""Answers, instances and configurations travel as JSON (strict: no NaN / Infinity) and answers as pandas frames."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest

import schedopt
from schedopt.problem import SolveOptions, get_problem, problems, to_jsonable
from schedopt.sia import Config, SiaSettings

pd = pytest.importorskip("pandas")

KINDS = sorted(n for n, io in problems().items() if io.generate is not None and io.solve is not None)


def _strict(obj: object) -> object:
    """``json.dumps`` refusing NaN / Infinity, then parsed back."""
    return json.loads(json.dumps(obj, allow_nan=False))


def test_every_shipped_problem_is_covered():
    assert {"gandiva", "heterps", "hived", "sia", "synergy"} <= set(KINDS)


@pytest.mark.parametrize("kind", KINDS)
def test_instance_answer_and_frame_serialize(kind):
    io = get_problem(kind)
    inst = io.generate(64, 0)
    # the instance: strict JSON, and back to an equal instance
    data = _strict(io.to_data(inst))
    again = io.from_data(data)
    assert _strict(io.to_data(again)) == data
    # the answer: strict JSON with the termination as enum values and numbers or null
    ans = io.solve(inst, SolveOptions(time_limit=10))
    d = _strict(ans.to_dict())
    assert d["termination"]["reason"] == ans.termination.reason.value
    assert d["termination"]["limit"] == (ans.termination.limit.value if ans.termination.limit else None)
    assert ans.has_solution
    if np.isfinite(ans.objective):
        assert d["objective"] == pytest.approx(ans.objective)
    else:  # a feasibility problem (HiveD) has no objective value: null, never NaN
        assert d["objective"] is None
    assert _strict(to_jsonable(ans)) == d  # to_jsonable goes through to_dict
    # the frame: one row per rows() entry, the same columns, "-" turned into a missing value
    rows = ans.rows()
    df = ans.to_dataframe()
    assert isinstance(df, pd.DataFrame) and len(df) == len(rows) > 0
    assert list(df.columns) == list(rows[0])
    for k, r in enumerate(rows):
        for col, v in r.items():
            if isinstance(v, str) and v == "-":
                assert pd.isna(df[col].iloc[k])
            elif isinstance(v, (int, float, str)):
                assert df[col].iloc[k] == v


def test_sia_frame_matches_the_allocation_by_hand():
    io = get_problem("sia")
    inst = io.generate(64, 0)
    ans = io.solve(inst, SolveOptions())
    df = ans.to_dataframe()
    alloc = ans.allocation
    # per job: GPUs and type as the allocation says; unallocated jobs have 0 GPUs and a missing config
    for job_id, cfg in alloc.items():
        row = df[df["job"] == str(job_id)].iloc[0]
        if cfg is None:
            assert row["gpus"] == 0 and pd.isna(row["config"]) and pd.isna(row["type"])
        else:
            assert (row["gpus"], row["type"], row["config"]) == (cfg.n_gpus, cfg.gpu_type, cfg.label)
    # per GPU type, the frame's GPUs fit the cluster (6 t4 nodes x 4 GPUs, 2 a100 x 8, 3 rtx2080ti x 8: 64)
    caps = {t.name: t.gpus_per_node * t.nodes for t in inst.cluster.gpu_types}
    assert sum(caps.values()) == 64
    used = df.groupby("type")["gpus"].sum().to_dict()
    assert set(used) <= set(caps) and all(used[t] <= caps[t] for t in used)
    assert int(df["gpus"].sum()) == sum(c.n_gpus for c in alloc.values() if c is not None)
    # the frame has the sia columns as typed data: GPUs are integers
    assert df["gpus"].dtype.kind == "i"


def test_heterps_frame_stages_tile_the_layers():
    io = get_problem("heterps")
    inst = io.generate(64, 0)
    ans = io.solve(inst, SolveOptions())
    df = ans.to_dataframe()
    assert list(df.columns) == ["stage", "first", "stop", "type", "units"]
    assert df["stage"].tolist() == list(range(len(df)))
    # stages are contiguous layer ranges covering every layer exactly once
    assert df["first"].iloc[0] == 0 and df["stop"].iloc[-1] == len(inst.layers)
    assert (df["first"].iloc[1:].to_numpy() == df["stop"].iloc[:-1].to_numpy()).all()
    assert (df["units"] >= 1).all()


def test_to_dataframe_names_pandas_when_it_is_missing(monkeypatch):
    io = get_problem("heterps")
    ans = io.solve(io.generate(64, 0), SolveOptions())
    monkeypatch.setitem(sys.modules, "pandas", None)  # what an environment without pandas looks like to import
    with pytest.raises(ImportError, match=r"HeterPSPlan.to_dataframe\(\) needs pandas.*pip install pandas"):
        ans.to_dataframe()


def test_an_answer_without_rows_gives_an_empty_frame():
    ans = schedopt.problem.Answer(termination=schedopt.problem.heuristic_termination("nothing"))
    df = ans.to_dataframe()
    assert df.shape == (0, 0)
    d = _strict(ans.to_dict())
    # nothing proven: no bound, no gap (inf and nan become null), the objective of a FEASIBLE answer held as null
    assert d["bound"] is None and d["gap"] is None and d["termination"]["reason"] == "feasible"
    assert d["termination"]["limit"] == "heuristic"


def test_configs_and_settings_serialize():
    assert _strict(to_jsonable(Config(2, 16, "a100"))) == {"n_nodes": 2, "n_gpus": 16, "gpu_type": "a100"}
    s = SiaSettings(max_physical_nodes={"a100": 2}, coef_decimals=3)
    d = _strict(to_jsonable(s))
    assert d["max_physical_nodes"] == {"a100": 2} and d["coef_decimals"] == 3 and d["coef_clip"] is None
    assert SiaSettings.from_dict(d) == s


def test_to_jsonable_makes_numpy_and_non_finite_values_strict_json():
    v = {"a": np.float64(np.nan), "b": np.array([1, 2]), "c": (np.inf, np.int32(3)), 4: {"x"}}
    assert _strict(to_jsonable(v)) == {"a": None, "b": [1, 2], "c": [None, 3], "4": ["x"]}


def _knapsack_result() -> schedopt.SolveResult:
    # max x + 2y  s.t.  x + y <= 1, binaries: y = 1, objective 2 (by hand)
    m = schedopt.LinearModel.from_arrays(c=[1.0, 2.0], A=[[1.0, 1.0]], row_upper=[1.0], col_upper=[1, 1],
                                         integrality=1, sense="maximize")
    return schedopt.solve(m, "highs")


def test_a_solve_result_serializes_to_strict_json():
    r = _knapsack_result()
    assert r.objective == pytest.approx(2.0)
    d = _strict(to_jsonable(r))
    assert d["termination"] == {"reason": "optimal", "limit": None, "detail": r.termination.detail}
    assert d["backend"] == "highs" and d["bound"] == pytest.approx(2.0)


def test_a_solve_result_keeps_its_objective_and_solution_in_json():
    d = _strict(to_jsonable(_knapsack_result()))
    assert d["objective"] == pytest.approx(2.0) and d["x"] == [0.0, 1.0]
