"""One typed, validated parameters object from SolveOptions (and the command line) to the backend's solver call."""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np
import pytest

import schedopt
from schedopt import backends
from schedopt.backends import register_backend
from schedopt.backends.highs import HighsBackend
from schedopt.errors import InputError
from schedopt.params import NO_LIMIT_SECONDS, SolveParams
from schedopt.problem import Formulation, SolveOptions, Structure
from schedopt.results import SolveResult
from schedopt.sia import default_backend_for


def knapsack() -> schedopt.LinearModel:
    """max 3a + 4b + 5c, 2a + 3b + 4c <= 5, binaries: optimum 7 (a and b fill the 5 exactly)."""
    m = schedopt.LinearModel("knap", sense="maximize")
    x = m.add_variables("x", 3, kind="binary")
    m.add_constraints("cap", np.array([[2.0, 3.0, 4.0]]), upper=5.0)
    m.set_objective(np.array([3.0, 4.0, 5.0]))
    assert x.size == 3
    return m


class RecordingHighs(HighsBackend):
    """HiGHS itself (a real solve), keeping the parameters object each solve was handed."""

    name = "highs-recording"

    def __init__(self) -> None:
        self.seen: list[SolveParams] = []

    def solve(self, model: schedopt.LinearModel, params: SolveParams) -> SolveResult:
        self.seen.append(params)
        return super().solve(model, params)


@pytest.fixture(scope="module")
def recording() -> Iterator[RecordingHighs]:
    b = RecordingHighs()
    register_backend(b, replace=True)
    yield b
    backends._REGISTRY.pop(b.name, None)  # no public unregister: later tests see only the real backends


@pytest.mark.parametrize(("field", "value"), [
    ("time_limit", -1.0), ("time_limit", math.nan), ("time_limit", "5"), ("mip_rel_gap", 1.0), ("mip_rel_gap", True),
    ("threads", -1), ("threads", 2.0), ("seed", -1), ("seed", 2**31), ("verbose", "yes"), ("options", [1]),
])
def test_solve_options_are_validated_when_built_naming_the_field(field: str, value: object) -> None:
    with pytest.raises(InputError) as err:
        SolveOptions(**{field: value})  # type: ignore[arg-type]
    assert err.value.field == field


def test_the_backend_receives_the_options_typed_parameters(recording: RecordingHighs) -> None:
    # threads stays 1: HiGHS refuses a thread count other than the one its first solve in the process used
    opts = SolveOptions(backend="highs-recording", time_limit=7.5, mip_rel_gap=0.01, threads=1, seed=3,
                        options={"presolve": "off"})
    res = schedopt.solve(knapsack(), options=opts)
    assert res.objective == 7.0 and res.backend == "highs-recording"
    got = recording.seen[-1]
    assert isinstance(got, SolveParams)
    assert (got.time_limit, got.mip_rel_gap, got.threads, got.seed) == (7.5, 0.01, 1, 3)
    assert got.solver_options == {"presolve": "off"} and got.sub_solve is schedopt.solve
    assert res.params == {"time_limit": 7.5, "mip_rel_gap": 0.01, "threads": 1, "seed": 3, "presolve": "off"}


def test_keywords_build_the_same_parameters(recording: RecordingHighs) -> None:
    schedopt.solve(knapsack(), "highs-recording", time_limit=7.5, mip_rel_gap=0.01, seed=3)
    by_keywords = recording.seen[-1]
    schedopt.solve(knapsack(), "highs-recording", options=SolveOptions(time_limit=7.5, mip_rel_gap=0.01, seed=3))
    assert recording.seen[-1] == by_keywords


def test_options_and_keywords_together_are_refused() -> None:
    with pytest.raises(InputError, match="not both") as err:
        schedopt.solve(knapsack(), options=SolveOptions(), time_limit=3.0)
    assert err.value.field == "options" and err.value.value == ["time_limit"]


def test_an_unknown_backend_option_is_named_before_the_solve() -> None:
    with pytest.raises(InputError, match="did you mean presolve") as err:
        schedopt.solve(knapsack(), options=SolveOptions(backend="highs", options={"presolv": "off"}))
    assert err.value.field == "options.presolv"


def test_no_limit_is_stored_as_none() -> None:
    assert SolveParams(time_limit=math.inf).time_limit is None
    assert SolveParams(time_limit=NO_LIMIT_SECONDS).time_limit is None
    assert SolveOptions(time_limit=2).params.time_limit == 2.0


def test_one_function_decides_the_default_backend() -> None:
    m = knapsack()
    assert schedopt.default_backend(Structure.MCKP) == "mckp"
    assert schedopt.default_backend(Structure.GENERAL) == "highs"
    f = Formulation(model=m, inverse=None, structure=Structure.MCKP)
    assert default_backend_for(f) == schedopt.default_backend(f) == "mckp"
    assert schedopt.solve(f).backend == "mckp"
    assert schedopt.solve(f, options=SolveOptions()).backend == "mckp"
