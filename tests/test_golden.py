"""Golden instances (``instances/golden/*.json``: the model's arrays, the optimum and LP bound derived by hand,
and a line saying how) replayed against every installed backend, the way python-mip's tests replay theirs."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import schedopt
from schedopt import TerminationReason
from schedopt.errors import BackendCapabilityError
from schedopt.problem import Structure

GOLDEN = Path(__file__).resolve().parent.parent / "instances" / "golden"
FILES = sorted(GOLDEN.glob("*.json"))


def _inf(values: list[Any], sign: float) -> np.ndarray:
    return np.array([sign * math.inf if v is None else float(v) for v in values])


def load_golden(path: Path) -> tuple[schedopt.LinearModel, dict[str, Any]]:
    """The model of a golden file (``null`` bounds are infinite) and the file's content."""
    d = json.loads(path.read_text())
    m = schedopt.LinearModel.from_arrays(
        c=d["c"], A=np.array(d["A"], dtype=float), row_lower=_inf(d["row_lower"], -1), row_upper=_inf(d["row_upper"], 1),
        col_lower=_inf(d["col_lower"], -1), col_upper=_inf(d["col_upper"], 1), integrality=d["integrality"],
        sense=d["sense"], constant=d["constant"], name=d["name"],
    )
    m.structure = Structure(d["structure"])
    return m, d


def test_golden_files_are_well_formed() -> None:
    assert len(FILES) >= 6
    for f in FILES:
        m, d = load_golden(f)
        assert d["format"] == "schedopt-golden/1" and d["name"] == f.stem
        assert len(d["derivation"]) > 40, f"{f.name}: say how the optimum was derived"
        e = d["expected"]
        if e["x"] is not None:  # the stored solution is feasible and has the stored optimum
            assert m.violations(np.array(e["x"], dtype=float)) == {}, f.name
            assert m.evaluate(np.array(e["x"], dtype=float)) == pytest.approx(e["objective"], abs=1e-9), f.name


@pytest.mark.parametrize("path", FILES, ids=[f.stem for f in FILES])
def test_golden_instance(path: Path, any_backend: str) -> None:
    m, d = load_golden(path)
    e = d["expected"]
    try:
        res = schedopt.solve(m, any_backend, time_limit=20, mip_rel_gap=1e-9)
    except BackendCapabilityError as exc:
        pytest.skip(str(exc))
    want = TerminationReason(e["reason"])
    if want is TerminationReason.INFEASIBLE:
        # a solver may not tell infeasible from unbounded; it must not claim a solution
        assert res.termination.reason in (TerminationReason.INFEASIBLE, TerminationReason.INFEASIBLE_OR_UNBOUNDED)
        assert not res.has_solution
        return
    assert res.termination.reason is want, res.summary()
    assert res.objective == pytest.approx(e["objective"], abs=1e-6)
    assert m.violations(res.x) == {}
    # the bound is proven and never beaten: between the optimum and the LP bound
    lo, hi = sorted((e["objective"], e["lp_bound"]))
    assert lo - 1e-6 <= res.bound <= hi + 1e-6, res.summary()
    assert res.gap <= 1e-6


@pytest.mark.parametrize("path", FILES, ids=[f.stem for f in FILES])
def test_golden_lp_bound(path: Path, any_backend: str) -> None:
    m, d = load_golden(path)
    e = d["expected"]
    info = schedopt.available_backends()[any_backend]
    if not info.capabilities.lp or info.capabilities.integer_only:
        pytest.skip(f"{any_backend} solves no LP")
    res = schedopt.solve(m.relax(), any_backend, time_limit=20)
    if e["lp_bound"] is None:
        assert res.termination.reason in (TerminationReason.INFEASIBLE, TerminationReason.INFEASIBLE_OR_UNBOUNDED)
        return
    assert res.termination.reason is TerminationReason.OPTIMAL, res.summary()
    assert res.objective == pytest.approx(e["lp_bound"], abs=1e-7)
