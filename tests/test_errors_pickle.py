"""Every schedopt error survives pickling with its message and fields (a worker's error reaches the parent whole)."""

from __future__ import annotations

import pickle

import pytest

from schedopt.backends.isolate import ChildProcessDied
from schedopt.errors import (
    BackendCapabilityError,
    BackendUnavailableError,
    InfeasibleError,
    InputError,
    SchedoptError,
    SolveFailedError,
)
from schedopt.sim.records import RecordError


def _cases() -> list[SchedoptError]:
    return [
        InputError("jobs[3].gpus", -2, "must be >= 1"),
        BackendUnavailableError("gurobi", "gurobipy is not installed"),
        BackendCapabilityError("cpsat", "continuous variables"),
        SolveFailedError("no answer", None),
        InfeasibleError("infeasible", None, None),
        SchedoptError("plain"),
    ]


@pytest.mark.parametrize("err", _cases(), ids=lambda e: type(e).__name__)
def test_round_trip_keeps_type_message_and_fields(err: SchedoptError) -> None:
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is type(err)
    assert str(back) == str(err)
    assert back.__dict__ == err.__dict__


def test_input_error_fields_after_pickling() -> None:
    back = pickle.loads(pickle.dumps(InputError("load", "x", "must be a number")))
    assert (back.field, back.value, back.message) == ("load", "x", "must be a number")
    assert str(back) == "load='x': must be a number"
    with pytest.raises(InputError, match="load='x'"):
        raise back


def test_subclasses_elsewhere_pickle_too() -> None:
    for err in (RecordError("/tmp/x.jsonl", "cut short"), ChildProcessDied("highs died")):
        back = pickle.loads(pickle.dumps(err))
        assert type(back) is type(err) and str(back) == str(err)
